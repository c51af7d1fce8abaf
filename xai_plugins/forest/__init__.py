"""The importer: a fitted tree ensemble -> :class:`Forest`, the flat structure every primitive works on.

- :mod:`.layout`: the :class:`Forest` (mirrors ``csrc/xai.h``) and the level walk / preorder helpers;
- :mod:`.predictor`: :class:`ModelPredictor`, the model's own predictor held weakly;
- :mod:`.sklearn`, :mod:`.xgboost`, :mod:`.lightgbm`: one importer per library;
- :mod:`.cache`: :func:`import_model` (one import per model and fitted state), :func:`clear_model_cache`.

Nothing above this package knows which library a model came from.

Supported: XGBoost (``Booster``, ``XGBRegressor``, ``XGBClassifier``, gbtree), scikit-learn
(``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``,
``HistGradientBoosting*``), LightGBM (``Booster``, ``LGBMRegressor``, ``LGBMClassifier``).
"""

from ..errors import UnsupportedModelError
from .cache import BOOSTER_MUTATORS, clear_model_cache, import_model
from .layout import SUPPORTED_MODELS, Forest, tree_levels
from .lightgbm import LIGHTGBM_ZERO_THRESHOLD
from .predictor import ModelPredictor

__all__ = ["BOOSTER_MUTATORS", "LIGHTGBM_ZERO_THRESHOLD", "SUPPORTED_MODELS", "Forest", "ModelPredictor",
           "UnsupportedModelError", "clear_model_cache", "import_model", "tree_levels"]
