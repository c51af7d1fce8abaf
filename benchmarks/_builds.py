"""Running a benchmark's worker mode against another build (e.g. the previous main) in a subprocess, and
the resident-memory peak of one call in a worker."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path


def in_subprocess(script: str, build: Path, *args: str) -> dict:
    """Run ``script``'s worker mode with ``build``'s xai_plugins first on the path; its last printed
    line is a JSON object, returned."""
    env = dict(os.environ, PYTHONPATH=str(build))
    done = subprocess.run([sys.executable, script, *args], env=env, cwd=build, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise RuntimeError(f"worker in {build} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def resident(field: str = "VmRSS") -> int:
    """This process's resident memory (``VmRSS``) or its peak since the last :func:`reset_peak` (``VmHWM``),
    in bytes, from ``/proc/self/status``."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))


def reset_peak() -> bool:
    """Restart the peak resident memory (``VmHWM``) at the current one (Linux ``clear_refs``); False where
    it cannot (then :func:`peak_growth` reads ``getrusage``'s peak, which also counts what ran before)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_growth(before: int, exact: bool) -> int:
    """Peak resident memory since ``before`` was read (and the peak reset, when ``exact``), minus ``before``."""
    peak = resident("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return peak - before
