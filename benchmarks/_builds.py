"""Running a benchmark's worker mode against another build (e.g. the previous main) in a subprocess."""

from __future__ import annotations

import json
import os
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
