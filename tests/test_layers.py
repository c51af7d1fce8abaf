"""The layering check (.ci/check_layers): the package passes it, and it catches what it must
(an import circle, an import up the layers, also inside a function, a method importing dask, a
module outside the engines branching on the engine or mapping blocks itself)."""

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "check_layers"


@pytest.fixture(scope="module")
def layers():
    loader = importlib.machinery.SourceFileLoader("check_layers", str(SCRIPT))
    spec = importlib.util.spec_from_loader("check_layers", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_package_layering_holds():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no circle" in done.stdout


def _package(tmp_path, files: dict) -> Path:
    root = tmp_path / "xai_plugins"
    for name, text in {"__init__.py": "", "errors.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_circle_found(tmp_path, layers):
    root = _package(tmp_path, {"mdi.py": "from . import prediction_gap\n",
                               "prediction_gap.py": "def f():\n    from .mdi import local_mdi\n"})
    assert layers.check(root) == ["import circle: xai_plugins.mdi -> xai_plugins.prediction_gap"]


def test_import_up_the_layers_found_inside_a_function(tmp_path, layers):
    root = _package(tmp_path, {"forest.py": "def f():\n    from .attributions import Attribution\n",
                               "attributions.py": "from .forest import Forest\n"})
    problems = layers.check(root)
    assert any("xai_plugins.forest (foundation) imports xai_plugins.attributions (adapters)" in p for p in problems)


def test_method_importing_a_cluster_library_found(tmp_path, layers):
    root = _package(tmp_path, {"mdi.py": "def f():\n    import dask.array as da\n",
                               "acme/__init__.py": "", "acme/_x.py": "from pyspark.sql import DataFrame\n",
                               "engines/__init__.py": "", "engines/dask.py": "import dask\n"})
    problems = layers.check(root)
    assert sorted(problems) == [
        "xai_plugins.acme._x (a method) imports pyspark: cluster libraries belong to xai_plugins.engines",
        "xai_plugins.mdi (a method) imports dask: cluster libraries belong to xai_plugins.engines"]


def test_module_without_a_layer_refused(tmp_path, layers):
    root = _package(tmp_path, {"newthing.py": ""})
    with pytest.raises(SystemExit, match="no layer"):
        layers.check(root)


def test_cross_section_raw_read_found(tmp_path, layers):
    builder = ("def build(ctx, results, options):\n"
               "    section = new('b')\n"
               "    section.raw['own'] = 1\n"                                  # its own raw: fine
               "    rows = results['a'].raw['rows']\n"                        # another section's: refused
               "    explained = results.get('a')\n"
               "    return _helper(section, explained)\n\n"
               "def _helper(section, explained):\n"
               "    section.raw['more'] = 2\n"
               "    return explained.raw.get('methods')\n")
    root = _package(tmp_path, {"report/__init__.py": "", "report/sections/__init__.py": "",
                               "report/sections/b.py": builder})
    assert layers.check(root) == [
        "xai_plugins.report.sections.b:10 reads another section's raw (explained.raw): read its typed result instead",
        "xai_plugins.report.sections.b:4 reads another section's raw (results['a'].raw): read its typed result instead"]


def test_engine_branch_or_block_mapping_outside_the_engines_found(tmp_path, layers):
    root = _package(tmp_path, {
        "mdi.py": "def f(engine, X):\n    if engine.lazy:\n        return engine.map_rows(g, X, None, [], 1)\n",
        "report/__init__.py": "", "report/x.py": "def f(rows):\n    return rows.engine.reduce(g, [rows.X])\n",
        "attributions.py": "import functools\nimport numpy as np\n\n"
                           "def f(a, out, engine):\n    engine.columns(out, 0, 1)\n"
                           "    return functools.reduce(max, a), np.add.reduce(a), a.columns\n",
        "engines/__init__.py": "", "engines/memory.py": "def f(engine):\n    return engine.lazy\n"})
    problems = sorted(p.split(" (")[0].split(" branches")[0] for p in layers.check(root))
    assert problems == ["xai_plugins.attributions:5 maps blocks itself", "xai_plugins.mdi:2",
                        "xai_plugins.mdi:3 maps blocks itself", "xai_plugins.report.x:2 maps blocks itself"]
