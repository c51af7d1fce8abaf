"""The scoring function AcME perturbs: a model's ``predict`` / ``predict_proba`` or any score."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import check_is_fitted
from ..errors import InputError, InputTypeError, UnsupportedModelError
from ..forest.layout import category_frame

__all__: list[str] = []      # internal module: the public names are in the API reference

TASKS = ("regression", "classification")


def is_classifier(model) -> bool:
    """scikit-learn's ``is_classifier`` (False for objects that are no estimators)."""
    from sklearn.base import is_classifier as sklearn_is_classifier

    try:
        return bool(sklearn_is_classifier(model))
    except Exception:  # noqa: BLE001 - sklearn >= 1.6 raises on objects without __sklearn_tags__
        return False


def infer_task(model, score_function) -> str:
    """"classification" for a classifier, or (without a score_function) a model with ``predict_proba``."""
    if model is None:
        return "regression"
    if is_classifier(model):
        return "classification"
    if score_function is None and callable(getattr(model, "predict_proba", None)):
        return "classification"
    return "regression"


class Scorer:
    """One call of the scoring function on perturbed rows, as an (m, k) float64 array.

    ``score_function`` when given, else the fitted model's ``predict_proba`` (``task=
    "classification"``) or ``predict``; rows are passed as a DataFrame with ``columns`` when given
    (models fitted with feature names), else as an array. ``labels`` (per feature, or None): the
    category labels of a model's categorical features, whose codes are passed as those labels (a
    pandas ``category`` column: what a Pipeline's encoder or LightGBM's category map reads).
    """

    def __init__(self, model, task: str, score_function=None, columns=None, inferred: bool = False):
        self.model, self.task, self.columns = model, task, columns
        self.labels: list | None = None
        self._fn = self._resolve(model, task, score_function, inferred)

    @staticmethod
    def _resolve(model, task, score_function, inferred):
        """The callable to score rows with, or a clear error when the model lacks it."""
        if score_function is not None:
            if not callable(score_function):
                raise InputTypeError("score_function must be callable: X -> scores of shape (n,) or (n, k)")
            return score_function
        if model is None:
            raise InputTypeError("model is None; pass a fitted model or a score_function")
        method = "predict_proba" if task == "classification" else "predict"
        if not callable(getattr(model, method, None)):
            hint = ("; pass score_function=model.decision_function (or another score), or task='regression' "
                    "to explain the predicted labels" if method == "predict_proba" else
                    "; pass score_function=... for any other score")
            raise UnsupportedModelError(
                f"task={task!r}{' (inferred: the model is a classifier)' if inferred else ''} needs "
                f"model.{method}(), which {type(model).__name__} does not have{hint}")
        check_is_fitted(model)
        return getattr(model, method)

    def __call__(self, Z) -> np.ndarray:
        """Scores of the rows ``Z`` (m, d): (m, k) float64, checked finite."""
        if self.labels is not None:
            names = list(self.columns) if self.columns is not None else list(range(Z.shape[1]))
            given = category_frame(Z, names, self.labels)
        else:
            given = Z if self.columns is None else pd.DataFrame(Z, columns=self.columns)
        out = np.asarray(self._fn(given), dtype=np.float64)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != Z.shape[0]:
            raise InputError(f"the model returned shape {out.shape} for {Z.shape[0]} rows; "
                             "expected (n,) or (n, k)")
        if not np.isfinite(out).all():
            raise InputError("the model returned non-finite predictions on the perturbed rows")
        return out

    def output_names(self, k: int):
        """Names of k scores: None for one, the model's classes for class probabilities, else output0..."""
        if k == 1:
            return None
        classes = getattr(self.model, "classes_", None)
        if self.task == "classification" and classes is not None and len(classes) == k:
            return [str(c) for c in classes]
        return [f"output{i}" for i in range(k)]
