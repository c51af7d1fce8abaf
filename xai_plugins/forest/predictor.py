"""The fitted model's own predictor, held weakly (the import cache must not keep models alive)."""

from __future__ import annotations

import functools
import sys
import weakref
from typing import Any, Callable

import numpy as np

from ..errors import ModelGoneError
from .registry import model_feature_names

__all__: list[str] = []      # internal module: the public names are in the API reference


class ModelPredictor:
    """The fitted model's own predictor in a Forest's output space: ``predictor(X) -> (n, k)``.

    Holds the model weakly (the import cache must not keep models alive), so it raises
    :class:`~xai_plugins.errors.ModelGoneError` once the model has been garbage-collected.
    ``predict(model, X)`` is called with rows in the model's feature order; models fitted on a
    DataFrame get one with their own column names.
    """

    def __init__(self, model: Any, predict: Callable[[Any, Any], Any]) -> None:
        self._model = weakref.ref(model)
        self._predict = predict
        self._names = model_feature_names(model) if getattr(model, "feature_names_in_", None) is not None else None

    def __call__(self, X: Any) -> np.ndarray:
        model = self._model()
        if model is None:
            raise ModelGoneError("the model this Forest was imported from no longer exists; keep a reference "
                                 "to the fitted model (Monte Carlo estimates call its own predictor)")
        return self.apply(model, X)

    def __getstate__(self) -> dict:
        """Pickled without a weakly held model (a weak reference does not pickle; the copy then raises
        ModelGoneError when called); a predictor made to hold its model strongly keeps it."""
        state = dict(self.__dict__)
        if isinstance(state["_model"], weakref.ref):
            state["_model"] = _no_model
        return state

    def apply(self, model: Any, X: Any) -> np.ndarray:
        """The predictor on the fitted ``model`` given explicitly (this predictor's model, or a copy
        of it: a Pipeline's final step read from the Pipeline it belongs to); a scipy sparse ``X`` (what a
        Pipeline's encoders may give its model) is passed on as it is (:func:`model_input`)."""
        X = model_input(X, np.float64)
        if self._names is not None and not _is_sparse(X):
            import pandas as pd

            X = pd.DataFrame(X, columns=self._names)
        return np.asarray(self._predict(model, X), dtype=np.float64).reshape(X.shape[0], -1)


def _no_model() -> None:
    return None


def _is_sparse(X: Any) -> bool:
    """Whether ``X`` is a scipy sparse matrix or array (never imports scipy)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def model_input(X: Any, dtype: Any) -> Any:
    """Rows for a model's own predict, as ``dtype``: a numpy array, or a scipy sparse matrix kept sparse (a
    model that reads its absent entries as missing values, XGBoost, must get them so)."""
    return X.astype(dtype) if _is_sparse(X) else np.asarray(X, dtype=dtype)


def labelled_rows(X: Any, labels: dict) -> Any:
    """Rows with the categorical columns' codes (``labels``: column position -> its labels, a label's
    position being its code) replaced by their labels, NaN kept, an unseen category's code by a label no
    encoder knows (text, or for numeric labels a number beyond them): what the model's own predict reads.
    Labels with a ``labels_of(codes)`` method give their own. A DataFrame stays one (a copy); an array
    becomes an object array."""
    if not labels:
        return X
    import pandas as pd

    frame = isinstance(X, pd.DataFrame)
    out: Any = X.copy() if frame else np.array(X, dtype=object)
    for j, known in labels.items():
        codes = np.asarray(out.iloc[:, j] if frame else out[:, j], dtype=np.float64)
        if hasattr(known, "labels_of"):             # labels of its own making (CatBoost's hashed categories)
            values = known.labels_of(codes)
        else:
            known = np.asarray(known, dtype=object)
            numeric = all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in known)
            inside = np.isfinite(codes) & (codes >= 0) & (codes < len(known))
            unseen = float(np.abs(known.astype(np.float64)).max() + 1) if numeric and len(known) \
                else "<unseen category>"
            values = np.full(len(codes), unseen, dtype=object)
            values[inside] = known[codes[inside].astype(np.int64)]
            values[np.isnan(codes)] = np.nan
            if numeric:
                values = values.astype(np.float64)
        if frame:
            out[out.columns[j]] = values
        else:
            out[:, j] = values
    return out


def labelled(method: Callable[[Any, Any], Any], labels: Any) -> Callable[[Any, Any], Any]:
    """``method(model, X)`` on rows whose categorical columns hold codes, turned into their labels first
    (:func:`labelled_rows`); ``labels``: per column its labels or None (a list), or column -> labels (a dict).
    ``method`` itself when no column is categorical. Picklable when ``method`` is."""
    known = labels if isinstance(labels, dict) else {j: k for j, k in enumerate(labels or ()) if k is not None}
    return functools.partial(_labelled, method=method, labels=known) if known else method


def _labelled(model: Any, X: Any, method: Callable[[Any, Any], Any], labels: dict) -> Any:
    return method(model, labelled_rows(X, labels))


def probability_predictor(model: Any, forest: Any) -> tuple[str, ModelPredictor] | None:
    """The usual :meth:`~xai_plugins.forest.registry.LibraryImporter.probability` of a classifier whose
    ``forest`` gives its margin: the logistic (one output) or softmax link, and ``predict_proba`` on the
    Forest's rows (codes turned into the ``forest``'s category labels); None for any other model."""
    from .link import default_link

    if forest.task != "classification" or forest.output_space != "margin" or \
            not callable(getattr(model, "predict_proba", None)):
        return None
    return default_link(forest.n_outputs), ModelPredictor(model, labelled(predict_proba, forest.category_labels))


# the model's own output methods as picklable functions of (model, X), for ModelPredictor

def predict(model: Any, X: Any) -> Any:
    """``model.predict(X)``."""
    return model.predict(X)


def predict_proba(model: Any, X: Any) -> Any:
    """``model.predict_proba(X)``."""
    return model.predict_proba(X)


def decision_function(model: Any, X: Any) -> Any:
    """``model.decision_function(X)``."""
    return model.decision_function(X)
