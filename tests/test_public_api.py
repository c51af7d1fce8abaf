"""The public API, written once: what the documentation's API reference lists, module by module.

The convention, one for the whole package: every module defines ``__all__``; the modules below list
exactly these objects (``xai_plugins``: its ``__all__`` less ``__version__``), every other module is
internal and its ``__all__`` is empty (its names may change without notice, even where other modules
of the package import them). ``tests/test_docstring_examples.py`` runs the docstring examples of every
public object, and ``docs/api/index.rst`` documents each of them.
"""

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import xai_plugins

ROOT = Path(__file__).resolve().parents[1]

#: module -> the public names it documents (the API reference), in reading order
PUBLIC_API = {
    "xai_plugins": ["Forest", "import_model", "load_model", "clear_model_cache", "pg2", "pgi2", "greedy_pg2_ranking",
                    "mean_pgi2", "binary_perturbation", "PG2Estimate", "GreedyRanking", "local_mdi", "global_mdi",
                    "faithfulness", "tree_shap", "TreeSHAPValues", "which_shap", "WhichSHAP", "reason_codes",
                    "ReasonCodes", "XaiError", "UnsupportedModelError"],
    "xai_plugins.shap": ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "TreeSHAPExplainer", "label_plot",
                         "NotAdditive"],
    "xai_plugins.interpret": ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "TreeSHAPExplainer",
                              "AttributionExplanation"],
    "xai_plugins.acme": ["AcME", "AcMEGlobal", "AcMELocal", "Grid"],
    "xai_plugins.mcr": ["fit_rashomon_forest", "model_class_reliance", "MCRResult"],
    "xai_plugins.dt_sampler": ["DTSampler", "SampledTree", "BinaryTest", "TimeBudgetWarning", "UnsatisfiableError",
                               "encode_trees", "wilson_interval"],
    "xai_plugins.report": ["audit", "Audit", "AuditOptions", "diff_audits", "AuditDiff", "Change", "audit_history",
                           "AuditHistory"],
    "xai_plugins.errors": ["XaiError", "InputError", "FeatureMismatchError", "ExplanationMismatchError",
                           "ModelStructureError", "InputTypeError", "UnsupportedModelError", "InputIndexError",
                           "NotFittedError", "ModelGoneError", "NativeMemoryError", "OutputPathError",
                           "NotAdditiveError", "MissingExtraError", "ParityError", "SchemaVersionError", "XaiWarning",
                           "NoiseScaleWarning"],
    "xai_plugins.distributed": ["mean_pgi2", "order_statistics", "random_rankings"],
    "xai_plugins.engines.spark": ["keyed"],
}

@pytest.mark.parametrize("module_name", list(PUBLIC_API))
def test_all_lists_exactly_the_public_api(module_name):
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{module_name} defines no __all__"
    exported = [name for name in exported if name != "__version__"] if module_name == "xai_plugins" else exported
    assert len(set(exported)) == len(exported), f"{module_name}.__all__ repeats a name"
    assert sorted(exported) == sorted(PUBLIC_API[module_name])


@pytest.mark.parametrize("module_name", list(PUBLIC_API))
def test_every_public_name_exists(module_name):
    module = importlib.import_module(module_name)
    missing = [name for name in PUBLIC_API[module_name] if not hasattr(module, name)]
    assert not missing, f"{module_name} lacks {missing}"


def _modules() -> list[str]:
    names = ["xai_plugins"]
    for info in pkgutil.walk_packages(xai_plugins.__path__, "xai_plugins."):
        origin = importlib.util.find_spec(info.name).origin or ""
        if origin.endswith(".py"):          # not the compiled core, not the templates' data package
            names.append(info.name)
    return names


def _declared_all(module_name: str):
    """The ``__all__`` a module's source assigns (None when it assigns none), read without importing it."""
    spec = importlib.util.find_spec(module_name)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return node.value
    return None


def _public_objects() -> set:
    return {id(getattr(importlib.import_module(module), name)) for module, names in PUBLIC_API.items()
            for name in names}


@pytest.mark.parametrize("module_name", _modules())
def test_every_module_says_what_it_exports(module_name):
    """Each module defines ``__all__``; a module the API reference does not document lists in it only objects
    documented elsewhere (``prediction_gap`` lists ``pg2``, documented as ``xai_plugins.pg2``), usually none."""
    value = _declared_all(module_name)
    assert value is not None, f"{module_name} defines no __all__ (internal modules: __all__: list[str] = [])"
    if module_name in PUBLIC_API:
        return
    module = importlib.import_module(module_name)
    public = _public_objects()
    private = [name for name in module.__all__ if id(getattr(module, name)) not in public]
    assert not private, (f"{module_name}.__all__ names {private}, which the API reference does not document: "
                         f"add them to PUBLIC_API and docs/api/index.rst, or leave them out of __all__")


def test_the_api_reference_documents_exactly_the_public_api():
    text = (ROOT / "docs" / "api" / "index.rst").read_text(encoding="utf-8")
    documented, module = set(), None
    for line in text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
        elif m := re.match(r"   ([A-Za-z_][\w.]*)$", line):
            full = f"{module}.{m.group(1)}"
            owner, _, name = full.rpartition(".")
            documented.add((owner, name))
    public = {(module_name, name) for module_name, names in PUBLIC_API.items() for name in names}

    def obj(owner, name):
        return getattr(importlib.import_module(owner), name)

    shown = {id(obj(*where)) for where in documented}      # a re-export (xp.XaiError) is documented where it lives
    assert sorted(w for w in public - documented if id(obj(*w)) not in shown) == [], \
        "public but not in docs/api/index.rst"
    assert sorted(documented - public) == [], "in docs/api/index.rst but not public"
