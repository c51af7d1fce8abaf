"""cffi out-of-line API build of the C core: ``xai_plugins._core``.

The cdef is the block of ``xai.h`` between the ``cffi-cdef-begin`` / ``cffi-cdef-end`` markers,
so the header stays the single description of the tree layout and the API.
"""

import os
import sys
import sysconfig
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
SOURCES = ["forest.c", "pg2.c", "pg2_grid.c", "local_mdi.c", "reroute.c", "surrogates.c", "treeshap.c"]


def cdef_block(header: str) -> str:
    """The declarations between the cffi markers of the header."""
    start = header.index("/* cffi-cdef-begin */") + len("/* cffi-cdef-begin */")
    end = header.index("/* cffi-cdef-end */")
    return header[start:end]


def uses_msvc() -> bool:
    """True where setuptools compiles with MSVC: Windows Pythons, except MinGW builds."""
    return sys.platform == "win32" and not sysconfig.get_platform().startswith("mingw")


def build_options() -> dict:
    """Compiler and linker options for this platform: C11 and optimisation in the compiler's own
    spelling; libm only where it is a library of its own (not on Windows, where the C runtime has
    it); with XAI_SANITIZE=1 (gcc/clang, see .ci/sanitize) AddressSanitizer + UBSan, never for a release."""
    if uses_msvc():
        return dict(extra_compile_args=["/std:c11", "/O2", "/W3"], extra_link_args=[], libraries=[])
    sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"] \
        if os.environ.get("XAI_SANITIZE") == "1" else []
    # -Wno-unused-parameter: cffi's generated wrappers have unused parameters
    return dict(extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"] + sanitize,
                extra_link_args=sanitize, libraries=[] if sys.platform == "win32" else ["m"])


def make_builder(root: Path = Path(".")) -> FFI:
    """The cffi builder; sources are named relative to ``root`` (setuptools wants relative paths)."""
    builder = FFI()
    builder.cdef(cdef_block((HERE / "xai.h").read_text()))
    builder.set_source(
        "xai_plugins._core",
        '#include "xai.h"',
        sources=[str(root / "csrc" / name) for name in SOURCES],
        include_dirs=[str(root / "csrc")],
        **build_options(),
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":  # python csrc/build_ffi.py OUTDIR: build xai_plugins/_core into OUTDIR
    make_builder(HERE.parent).compile(tmpdir=sys.argv[1] if len(sys.argv) > 1 else ".", verbose=False)
