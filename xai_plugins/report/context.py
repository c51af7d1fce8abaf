"""What every audit section needs to know about the model and the data, checked once.

:class:`AuditContext` holds the fitted model, its imported :class:`~xai_plugins.forest.Forest`,
the test (and optional training) data as DataFrames with the model's feature names, the task,
the one scalar output every method explains, and the row samples used by the per-row sections.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import FeatureMismatchError, InputError
from ..forest import Forest, import_model


@dataclass
class AuditContext:
    """Validated inputs of one audit.

    ``output`` is the column of the Forest output every method explains: the regression output,
    the probability of ``positive_class`` (random forests), or its margin (boosted classifiers);
    ``output_label`` says which in words. ``background`` (the training data when given, else the
    test data) fixes the noise scale: σ is in units of each feature's standard deviation there.
    """

    model: object
    forest: Forest
    X_test: pd.DataFrame
    y_test: np.ndarray | None
    X_train: pd.DataFrame | None
    y_train: np.ndarray | None
    feature_names: list
    task: str
    output: int
    output_label: str
    positive_class: object
    random_state: int | None

    @property
    def background(self) -> np.ndarray:
        """Rows whose per-feature standard deviation is the unit of σ."""
        return (self.X_train if self.X_train is not None else self.X_test).to_numpy(dtype=float)

    @property
    def n_features(self) -> int:
        """Number of features d."""
        return len(self.feature_names)

    def model_input(self, X) -> object:
        """``X`` in the form the model was fitted on (a DataFrame when it knows feature names)."""
        return self.scorer().model_input(X)

    def scorer(self, predictor=None) -> "Scorer":
        """:meth:`score` as a standalone callable; ``predictor`` replaces the Forest's (e.g. one
        holding the model strongly, which can be sent to dask workers)."""
        columns = self.X_test.columns if getattr(self.model, "feature_names_in_", None) is not None else None
        return Scorer(self.forest.predict_fn if predictor is None else predictor, self.output, columns)

    def score(self, X) -> np.ndarray:
        """The explained output (see class docstring) of the rows ``X``, shape (n,)."""
        return self.scorer()(X)

    def row_label(self, i: int) -> str:
        """How the report names test row ``i`` (by position): its index label in ``X_test``."""
        return str(self.X_test.index[i])

    @property
    def complete_rows(self) -> np.ndarray:
        """Positions of the test rows without missing values (PG² cannot perturb a missing value)."""
        return np.flatnonzero(~self.X_test.isna().any(axis=1).to_numpy())

    def sample_rows(self, n: int) -> np.ndarray:
        """Sorted positions of ``min(n, n_complete)`` complete test rows, the first ones of one seeded
        permutation, so a smaller sample is always a subset of a larger one."""
        complete = self.complete_rows
        order = np.random.default_rng(self.random_state).permutation(len(complete))
        return np.sort(complete[order[:n]])


class Scorer:
    """The explained output of rows: ``predictor(model_input(X))[:, output]`` as float, shape (n,).
    ``columns``: the column names the model was fitted with (None: it takes arrays)."""

    def __init__(self, predictor, output: int, columns=None):
        self.predictor, self.output, self.columns = predictor, output, columns

    def model_input(self, X) -> object:
        """``X`` in the form the model was fitted on (a DataFrame when it knows feature names)."""
        if self.columns is not None:
            return pd.DataFrame(np.asarray(X, dtype=float), columns=self.columns)
        return np.asarray(X, dtype=float)

    def __call__(self, X) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = self.predictor(self.model_input(X))
        return np.asarray(out, dtype=float).reshape(len(X), -1)[:, self.output]


def _frame(forest, X, label: str) -> pd.DataFrame:
    """``X`` as a DataFrame in the model's feature order (aligned by column name), index kept."""
    arr, names = forest.rows(X, what=label, allow_nan=True)
    return pd.DataFrame(arr, columns=names, index=getattr(X, "index", None))


def _target(y, n_rows: int, label: str) -> np.ndarray | None:
    if y is None:
        return None
    y = np.asarray(y).ravel()
    if len(y) != n_rows:
        raise InputError(f"{label} has {len(y)} values but the data has {n_rows} rows")
    return y


def make_context(model, X_test, y_test=None, *, X_train=None, y_train=None, positive_class=None,
                 random_state=None) -> AuditContext:
    """Import the model and check the data against it (numeric; DataFrame columns aligned by name).

    Raises :class:`~xai_plugins.UnsupportedModelError` for a model the importers refuse and
    ``ValueError`` for data that does not fit the model.
    """
    forest = import_model(model)
    if forest.predict_fn is None:
        raise InputError("the imported model carries no predictor; pass the fitted model itself")
    X_test_f = _frame(forest, X_test, "X_test")
    names = list(X_test_f.columns)
    X_train_f = None if X_train is None else _frame(forest, X_train, "X_train")
    if X_train_f is not None and list(X_train_f.columns) != names:
        raise FeatureMismatchError(f"X_train columns {list(X_train_f.columns)} differ from X_test's {names}")
    y_test = _target(y_test, len(X_test_f), "y_test")
    y_train = _target(y_train, 0 if X_train_f is None else len(X_train_f), "y_train")
    if forest.task == "classification":
        classes = list(getattr(model, "classes_", range(max(forest.n_outputs, 2))))
        if positive_class is None:
            positive_class = classes[-1]
        if forest.n_outputs == 1 and positive_class != classes[-1]:
            raise InputError(f"the single margin of a binary boosted model is the log-odds of class {classes[-1]!r}; "
                             f"positive_class must be {classes[-1]!r}")
        if positive_class not in classes:
            raise InputError(f"positive_class {positive_class!r} is not one of the model's classes {classes}")
        position = classes.index(positive_class)
        output = 0 if forest.n_outputs == 1 else position
        if forest.output_space == "probability":
            label = f"the predicted probability of class {positive_class}"
        else:
            label = f"the margin (log-odds) of class {positive_class}"
    else:
        output, label = 0, "the regression output"
    return AuditContext(model, forest, X_test_f, y_test, X_train_f, y_train, names, forest.task, output, label,
                        positive_class, random_state)
