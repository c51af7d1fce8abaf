"""Optional dependencies: the core imports without them; a feature whose extra is missing names it."""

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

from xai_plugins._extras import require

#: the optional modules of each extra (everything the lean core must not need)
OPTIONAL = ("weasyprint", "jinja2", "pysat", "pyunigen", "interpret")


@pytest.fixture
def hide(monkeypatch):
    """``hide(missing, *packages)``: importing ``missing`` (or any of its submodules) fails, and the
    xai_plugins ``packages`` are dropped from ``sys.modules`` so that importing them runs their
    import-time code again; pytest restores the modules and their parents' attributes afterwards."""

    def apply(missing, *packages):
        for name in [n for n in sys.modules if n.startswith(missing + ".")] + [missing]:
            monkeypatch.setitem(sys.modules, name, None)
        for name in [n for n in sys.modules if n in packages or n.startswith(tuple(p + "." for p in packages))]:
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:  # a successful re-import would rebind the parent's attribute
                monkeypatch.setattr(sys.modules[parent], child, sys.modules[name], raising=False)
            monkeypatch.delitem(sys.modules, name)

    return apply


def test_require_returns_the_module():
    assert require("json", "report", "JSON") is json


def test_require_names_the_extra_and_the_install_command(hide):
    hide("weasyprint")
    with pytest.raises(ImportError, match=r"The PDF needs the 'report' extra: pip install 'xai_plugins\[report\]'") \
            as info:
        require("weasyprint.urls", "report", "The PDF")
    assert isinstance(info.value.__cause__, ImportError)


def test_a_binding_whose_system_library_is_missing_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "needs_pango.py").write_text("raise OSError(\"cannot load library 'libpango-1.0-0'\")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"needs the 'report' extra.*OSError: cannot load library 'libpango"):
        require("needs_pango", "report", "The PDF")


@pytest.mark.parametrize("missing, module, extra", [
    ("weasyprint", "xai_plugins.report", "report"),
    ("jinja2", "xai_plugins.report", "report"),
    ("pysat", "xai_plugins.dt_sampler", "dt-sampler"),
    ("interpret", "xai_plugins.interpret", "interpret"),
])
def test_importing_a_feature_without_its_extra_names_the_extra(hide, missing, module, extra):
    hide(missing, module)
    with pytest.raises(ImportError, match=rf"needs the '{extra}' extra: pip install 'xai_plugins\[{extra}\]'"):
        importlib.import_module(module)


@pytest.mark.parametrize("missing", ["weasyprint", "jinja2"])
def test_xai_audit_without_the_report_extra_names_it(hide, capsys, missing):
    """One stderr line naming the extra (exit status 2), not a traceback, even for --help."""
    hide(missing, "xai_plugins.report", "xai_plugins.cli")
    from xai_plugins.cli import main

    assert main(["--help"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("xai-audit: error: ") and "pip install 'xai_plugins[report]'" in captured.err


def test_dt_sampler_without_pyunigen_names_the_extra(hide):
    hide("pyunigen")
    from xai_plugins.dt_sampler import DTSampler

    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0]] * 3)
    y = X[:, 0].astype(int)
    with pytest.raises(ImportError, match=r"UniGen3 sampler needs the 'dt-sampler' extra"):
        DTSampler(n_branch_nodes=1, min_accuracy=0.9, n_samples=2, sampler="unigen", progress=False,
                  random_state=0).fit(X, y)


def test_the_core_imports_and_runs_without_any_extra():
    """PG², local MDI, AcME, MCR and the shap explainers in a fresh interpreter where every optional
    module is unimportable."""
    code = f"""
import sys
for name in {OPTIONAL!r}:
    sys.modules[name] = None
import numpy as np
from sklearn.ensemble import RandomForestRegressor
import xai_plugins as xp
from xai_plugins.acme import AcME
from xai_plugins.mcr import model_class_reliance
from xai_plugins.shap import AcMEExplainer, LocalMDIExplainer, PG2Explainer
X = np.random.default_rng(0).normal(size=(40, 3)); y = X[:, 0] - X[:, 1]
rf = RandomForestRegressor(n_estimators=3, max_depth=3, bootstrap=False, random_state=0).fit(X, y)
xp.pg2(rf, X[:2], [0], sigma=0.5); xp.local_mdi(rf, X[:2]); PG2Explainer(rf, sigma=0.5)(X[:2])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {OPTIONAL!r} and sys.modules[m] is not None)
assert not loaded, loaded
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
