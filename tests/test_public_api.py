"""The public API, written once: what the documentation's API reference lists, module by module.

Each module's ``__all__`` must name exactly these objects (``xai_plugins``: its ``__all__`` less
``__version__``); ``tests/test_docstring_examples.py`` runs the docstring examples of every one.
"""

import importlib

import pytest

#: module -> the public names it documents (the API reference), in reading order
PUBLIC_API = {
    "xai_plugins": ["Forest", "import_model", "clear_model_cache", "pg2", "pgi2", "greedy_pg2_ranking", "mean_pgi2",
                    "binary_perturbation", "PG2Estimate", "GreedyRanking", "local_mdi", "global_mdi", "faithfulness",
                    "XaiError", "UnsupportedModelError"],
    "xai_plugins.shap": ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "label_plot", "NotAdditive"],
    "xai_plugins.interpret": ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "AttributionExplanation"],
    "xai_plugins.acme": ["AcME", "AcMEGlobal", "AcMELocal", "Grid"],
    "xai_plugins.mcr": ["fit_rashomon_forest", "model_class_reliance", "MCRResult"],
    "xai_plugins.dt_sampler": ["DTSampler", "SampledTree", "BinaryTest", "TimeBudgetWarning", "UnsatisfiableError",
                               "encode_trees", "wilson_interval"],
    "xai_plugins.report": ["audit", "Audit", "AuditOptions"],
    "xai_plugins.errors": ["XaiError", "InputError", "FeatureMismatchError", "ExplanationMismatchError",
                           "ModelStructureError", "InputTypeError", "UnsupportedModelError", "InputIndexError",
                           "NotFittedError", "ModelGoneError", "NativeMemoryError", "OutputPathError",
                           "NotAdditiveError", "MissingExtraError", "XaiWarning", "NoiseScaleWarning"],
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


def _documented() -> dict:
    """module -> the names the API reference page (docs/api/index.rst) lists in its autosummary blocks."""
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "docs" / "api" / "index.rst"
    listed, module, in_summary = {}, None, False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::", 1)[1].strip()
        elif line.startswith(".. autosummary::"):
            in_summary = True
        elif in_summary and line.startswith("   ") and not line.strip().startswith(":"):
            listed.setdefault(module, []).append(line.strip())
        elif in_summary and line.strip() and not line.startswith("   "):
            in_summary = False
    return listed


def test_the_api_page_lists_exactly_the_public_api():
    """Every public name is on docs/api/index.rst (under its module; a name ``xai_plugins`` re-exports may
    stand under the module defining it), and the page lists nothing else."""
    on_page = set()
    for module, names in _documented().items():
        for name in names:
            prefix, _, leaf = name.rpartition(".")
            on_page.add((f"{module}.{prefix}" if prefix else module, leaf))
    public = {(module, name) for module, names in PUBLIC_API.items() for name in names}
    missing = [(m, n) for m, n in sorted(public - on_page)
               if not (m == "xai_plugins" and any(name == n for _, name in on_page))]
    assert not missing, f"public names not on docs/api/index.rst: {missing}"
    extra = [(m, n) for m, n in sorted(on_page - public) if n not in PUBLIC_API["xai_plugins"]]
    assert not extra, f"docs/api/index.rst lists names that are not public: {extra}"


def test_every_method_module_documents_its_public_names():
    """A module of the methods layer (``.ci/check_layers``) defines ``__all__``, and each name there is in
    the API reference: under the module itself, or re-exported by ``xai_plugins`` / ``xai_plugins.distributed``."""
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / ".ci" / "check_layers"
    loader = importlib.machinery.SourceFileLoader("check_layers_for_api", str(script))
    layers = importlib.util.module_from_spec(importlib.util.spec_from_loader("check_layers_for_api", loader))
    loader.exec_module(layers)
    documented = set(PUBLIC_API["xai_plugins"]) | set(PUBLIC_API["xai_plugins.distributed"])
    for module_name, layer in layers.LAYERS.items():
        if layer != layers.METHODS:
            continue
        module = importlib.import_module(module_name)
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{module_name} defines no __all__"
        missing = [n for n in exported if n not in documented and n not in PUBLIC_API.get(module_name, ())]
        assert not missing, f"{module_name}.__all__ names {missing}, which the API reference (PUBLIC_API) lacks"
