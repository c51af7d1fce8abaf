"""The fitted model's own predictor, held weakly (the import cache must not keep models alive)."""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from .._validation import model_feature_names
from ..errors import ModelGoneError


class ModelPredictor:
    """The fitted model's own predictor in a Forest's output space: ``predictor(X) -> (n, k)``.

    Holds the model weakly (the import cache must not keep models alive), so it raises
    :class:`~xai_plugins.errors.ModelGoneError` once the model has been garbage-collected.
    ``predict(model, X)`` is called with rows in the model's feature order; models fitted on a
    DataFrame get one with their own column names.
    """

    def __init__(self, model, predict: Callable):
        self._model = weakref.ref(model)
        self._predict = predict
        self._names = model_feature_names(model) if getattr(model, "feature_names_in_", None) is not None else None

    def __call__(self, X) -> np.ndarray:
        model = self._model()
        if model is None:
            raise ModelGoneError("the model this Forest was imported from no longer exists; keep a reference "
                                 "to the fitted model (Monte Carlo estimates call its own predictor)")
        X = np.asarray(X, dtype=np.float64)
        if self._names is not None:
            import pandas as pd

            X = pd.DataFrame(X, columns=self._names)
        return np.asarray(self._predict(model, X), dtype=np.float64).reshape(len(X), -1)
