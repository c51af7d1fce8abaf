"""The importer: a fitted tree ensemble -> :class:`Forest`, the flat structure every primitive works on.

- :mod:`.layout`: the :class:`Forest` (mirrors ``csrc/xai.h``) and the level walk / preorder helpers;
- :mod:`.predictor`: :class:`ModelPredictor`, the model's own predictor held weakly;
- :mod:`.link`: a classifier's margin -> its probabilities (the links the libraries apply);
- :mod:`.registry`: the one registry of model libraries (:class:`LibraryImporter`, :func:`register`,
  :func:`library_of`, :func:`model_feature_names`, :func:`model_missing_value`);
- :mod:`.cache`: :func:`import_model` (one import per model and fitted state), :func:`clear_model_cache`;
- one module per library, each registering its importer when imported: :mod:`.sklearn`,
  :mod:`.xgboost`, :mod:`.lightgbm`, :mod:`.catboost`, and :mod:`.pipeline` for scikit-learn Pipelines. Every
  public module of this package that is none of the above is imported here, so a new library is one new module.

Nothing above this package knows which library a model came from: it asks the registry.

Supported: XGBoost (``Booster``, ``XGBRegressor``, ``XGBClassifier``, gbtree), scikit-learn
(``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``,
``HistGradientBoosting*``), LightGBM (``Booster``, ``LGBMRegressor``, ``LGBMClassifier``), CatBoost
(symmetric trees; categorical features through one-hot splits and per-feature CTRs), and scikit-learn
``Pipeline`` s of per-column scalers, imputers and
encoders in front of any of these (:mod:`.pipeline`).
"""

import importlib
import pkgutil

from ..errors import UnsupportedModelError
from .cache import clear_model_cache, import_model
from .layout import Forest, tree_levels
from .lightgbm import LIGHTGBM_ZERO_THRESHOLD
from .pipeline import explained_model
from .predictor import ModelPredictor
from .registry import (
    BOOSTER_MUTATORS,
    LibraryImporter,
    importer_for,
    library_of,
    model_feature_names,
    model_missing_value,
    register,
    supported_models,
)

_CORE = {"cache", "files", "layout", "link", "parity", "predictor", "registry"}
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name not in _CORE:
        importlib.import_module(f"{__name__}.{_module.name}")      # registers its library's importer


def __getattr__(name: str) -> str:
    if name == "SUPPORTED_MODELS":      # the registered libraries' models, for messages
        return supported_models()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: internal: the package re-exports Forest, import_model and clear_model_cache for users; the rest is the
#: contributors' interface (CONTRIBUTING.md, "A new model library")
__all__: list[str] = []
