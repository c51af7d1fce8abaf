"""cffi out-of-line API build of the C core: ``xai_plugins._core``.

The cdef is the block of ``xai.h`` between the ``cffi-cdef-begin`` / ``cffi-cdef-end`` markers,
so the header stays the single description of the tree layout and the API.
"""

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
SOURCES = ["forest.c", "pg2.c", "local_mdi.c"]


def cdef_block(header: str) -> str:
    """The declarations between the cffi markers of the header."""
    start = header.index("/* cffi-cdef-begin */") + len("/* cffi-cdef-begin */")
    end = header.index("/* cffi-cdef-end */")
    return header[start:end]


ffibuilder = FFI()
ffibuilder.cdef(cdef_block((HERE / "xai.h").read_text()))
ffibuilder.set_source(
    "xai_plugins._core",
    '#include "xai.h"',
    sources=[str(Path("csrc") / name) for name in SOURCES],
    include_dirs=["csrc"],
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
