"""xai_plugins: audit tree-model explanations.

Exact squared prediction gap (PG², PGI², greedy PG² ranking) and local MDI computed by a
small C core over an imported tree ensemble, plus AcME, RF-MCR and DT-Sampler, all usable
from SHAP (``xai_plugins.shap``) and InterpretML (``xai_plugins.interpret``), and a per-model
audit report (``xai_plugins.report``).

Heavy submodules are imported on first use so that ``import xai_plugins`` stays fast.
"""

from importlib import import_module

__version__ = "0.1.0"  # the one place the version is written: pyproject.toml reads it from here

# public name -> submodule that defines it
_LAZY = {
    "Forest": "forest",
    "import_model": "forest",
    "load_model": "forest.files",
    "pg2": "prediction_gap",
    "pgi2": "prediction_gap",
    "greedy_pg2_ranking": "prediction_gap",
    "PG2Estimate": "prediction_gap",
    "local_mdi": "mdi",
    "global_mdi": "mdi",
    "UnsupportedModelError": "errors",
    "XaiError": "errors",
    "GreedyRanking": "prediction_gap",
    "clear_model_cache": "forest",
    "faithfulness": "ranking_faithfulness",
    "mean_pgi2": "prediction_gap",
    "binary_perturbation": "prediction_gap",
    "tree_shap": "treeshap",
    "TreeSHAPValues": "treeshap",
    "which_shap": "shap_variants",
    "WhichSHAP": "shap_variants",
    "reason_codes": "reasons",
    "ReasonCodes": "reasons",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xai_plugins' has no attribute {name!r}")


def __dir__():
    return __all__
