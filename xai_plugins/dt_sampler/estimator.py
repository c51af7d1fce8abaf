"""DTSampler: feature importance as emergence probability over uniformly sampled accurate trees."""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from .._categories import category_codes
from .._validation import check_is_fitted, check_random_state, feature_index, model_rows
from ..errors import InputError, InputTypeError
from .binarize import DEFAULT_QUANTILES, apply_tests, fit_tests
from .emergence import emergence
from .encoding import CARDINALITY_ENCODINGS
from .plots import plot_emergence, plot_emergence_path
from .samplers import UnsatisfiableError
from .space import draw_trees

__all__: list[str] = []      # internal module: the public names are in the API reference

SAMPLERS = ("unigen", "exact")
LEAF_LABELS = ("majority", "sampled")


class DTSampler(BaseEstimator):
    """DT-Sampler (Tsuda lab): sample small accurate decision trees uniformly, count feature use.

    A scikit-learn estimator. The space is every binary decision tree with ``n_branch_nodes`` branch nodes over binary
    tests of the features (no test repeated on a root-to-leaf path) whose leaves, labelled
    with the majority class of the training rows reaching them, classify at least
    ``T = ceil(min_accuracy * n_rows)`` training rows correctly.  A distinct tree is its shape
    plus the test at each branch node (``leaf_labels="sampled"``: plus its leaf classes, any
    labelling reaching T).  The space is a CNF (see :func:`encode_trees`); ``sampler="unigen"``
    draws ``n_samples`` almost-uniform independent trees with UniGen3, ``sampler="exact"``
    enumerates the whole space (exact probabilities, for small spaces; ``n_samples`` unused).

    Importance of feature f (each has one or more binary tests):

    - ``emergence_probability_``: share of branch nodes that test f, over the sampled trees
      (the authors' code), ``sum_t #{nodes of t testing f} / (n_trees N)``;
    - ``tree_fraction_``: share of trees that test f at least once (the paper's wording).

    Both are DataFrames indexed by the original feature names (column order of ``X``) with
    columns ``probability, ci_low, ci_high`` (Wilson intervals over the trees at level
    ``confidence``; equal to ``probability`` for ``sampler="exact"``).  With
    ``min_accuracy=0`` every binary test has emergence exactly ``1 / n_tests`` (symmetry):
    ``uniform_probability_`` holds that reference per feature.  Per binary test:
    ``test_emergence_probability_`` and ``test_tree_fraction_``.

    Categorical features are tested one level against the rest (``city = paris``; one test for a
    two-level feature), so a feature's emergence sums over its levels' tests: a DataFrame's text,
    object and text ``category`` columns are categorical (``predict`` reads the same labels; an
    unseen label fails every test of its feature), and so are the numerically coded columns named
    in ``categorical_features``. ``categories_`` holds each feature's levels (None: numeric).

    Binary classification only (the paper's setting): a target with more than two classes
    raises ``ValueError``; fit one sampler per class on a one-vs-rest target instead.

    Parameters
    ----------
    n_branch_nodes : int, default 5
        N >= 1, branch nodes of every tree (the tree has N + 1 leaves).
    min_accuracy : float, default 0.9
        In [0, 1]: a tree must classify at least ``T = ceil(min_accuracy * n_rows)`` training
        rows correctly.
    n_samples : int, default 500
        Trees drawn by ``sampler="unigen"`` (>= 1; unused by "exact").
    sampler : {"unigen", "exact"}, default "unigen"
        "unigen": ``n_samples`` almost-uniform independent trees with UniGen3; "exact": the
        whole space enumerated (exact probabilities, for small spaces).
    random_state : int, numpy.random.Generator or None, default None
        Seed of UniGen's draws.
    quantiles : sequence of float, default (0.25, 0.5, 0.75)
        Cut points of each numeric column that is not 0/1 (binary tests ``x > t`` at these
        quantiles of the column), strictly between 0 and 1.
    thresholds : dict or None, default None
        ``{feature name: [t, ...]}``: cut points of those features instead of the quantiles
        (each must split the training rows).
    leaf_labels : {"majority", "sampled"}, default "majority"
        "majority": leaves are labelled with the majority class of the training rows reaching
        them, and a distinct tree is its shape plus its tests; "sampled": the leaf classes are
        sampled too (any labelling reaching T).
    cardinality : str, default "mtotalizer"
        The ``pysat.card`` encoding of the accuracy constraint: "seqcounter", "totalizer",
        "kmtotalizer", "mtotalizer", "cardnetwrk" or "sortnetwrk".
    confidence : float, default 0.95
        Level of the Wilson intervals, strictly between 0 and 1.
    time_budget : float or None, default 600.0
        Seconds the run may take: a run estimated to take longer warns (``TimeBudgetWarning``);
        None: no check.
    progress : bool, default True
        Show a progress bar on runs longer than 2 seconds.
    categorical_features : int, str, sequence of them, or None, default None
        Numerically coded columns to treat as categorical (text columns already are).

    Attributes
    ----------
    emergence_probability_ : pandas.DataFrame
        Share of branch nodes testing each feature, with its Wilson interval.
    tree_fraction_ : pandas.DataFrame
        Share of trees testing each feature, with its Wilson interval.
    uniform_probability_ : pandas.Series
        The ``min_accuracy = 0`` level of each feature.
    test_emergence_probability_, test_tree_fraction_ : pandas.DataFrame
        The same per binary test.
    categories_ : list or None
        Each feature's levels (None: numeric).
    trees_ : list of SampledTree
        The sampled trees (``rules()``, ``predict(X)``, ``accuracy``).
    tests_ : list of BinaryTest
        The binary tests.
    classes_ : ndarray of shape (2,)
        The two classes.
    min_correct_ : int
        T.
    model_count_ : int
        Number of distinct accurate trees: exact, or ApproxMC's estimate for UniGen.
    cnf_stats_ : dict
        Variables, clauses, sampling-set size.
    seconds_per_sample_, fit_time_ : float
        Seconds per sampled tree and of the whole fit.
    feature_names_in_, n_features_in_
        As in scikit-learn.

    Raises
    ------
    UnsatisfiableError
        From ``fit``: no tree reaches ``min_accuracy``.
    InputError
        From ``fit``: unusable parameters, a target that is not binary, constant columns.

    See Also
    --------
    xai_plugins.dt_sampler.SampledTree : One sampled tree.
    xai_plugins.dt_sampler.wilson_interval : The intervals.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from xai_plugins.dt_sampler import DTSampler
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> X, y = X.iloc[:60, :4], y[:60]                 # 60 rows, 4 features: a small space
    >>> dts = DTSampler(n_branch_nodes=2, min_accuracy=0.8, sampler="exact", progress=False).fit(X, y)
    >>> dts.emergence_probability_.columns.tolist()
    ['probability', 'ci_low', 'ci_high']
    >>> len(dts.trees_) == dts.model_count_, dts.min_correct_      # every accurate tree, T = 48
    (True, 48)
    >>> round(float(dts.emergence_probability_["probability"].sum()), 6)   # shares of branch nodes
    1.0
    >>> sampled = DTSampler(n_branch_nodes=2, min_accuracy=0.8, n_samples=10, random_state=0,
    ...                     progress=False).fit(X, y)
    >>> len(sampled.trees_), sampled.predict(X).shape
    (10, (60,))
    """

    def __init__(self, n_branch_nodes: int = 5, min_accuracy: float = 0.9, n_samples: int = 500,
                 sampler: str = "unigen", random_state=None, quantiles=DEFAULT_QUANTILES,
                 thresholds: dict | None = None, leaf_labels: str = "majority",
                 cardinality: str = "mtotalizer", confidence: float = 0.95,
                 time_budget: float | None = 600.0, progress: bool = True, categorical_features=None):
        self.n_branch_nodes = n_branch_nodes
        self.min_accuracy = min_accuracy
        self.n_samples = n_samples
        self.sampler = sampler
        self.random_state = random_state
        self.quantiles = quantiles
        self.thresholds = thresholds
        self.leaf_labels = leaf_labels
        self.cardinality = cardinality
        self.confidence = confidence
        self.time_budget = time_budget
        self.progress = progress
        self.categorical_features = categorical_features

    def fit(self, X, y) -> "DTSampler":
        """Binarise ``X``, encode the accurate trees, draw them and compute emergence probabilities.

        Raises :class:`UnsatisfiableError` when no tree reaches ``min_accuracy``; warns
        (:class:`TimeBudgetWarning`) when the run is estimated to exceed ``time_budget``.
        """
        _check_params(self)
        start = time.perf_counter()
        self.categories_ = _text_categories(X)
        Xa, names = model_rows(self._codes(X, None), None, None)
        self._named_columns = hasattr(X, "columns")     # predict aligns DataFrames by name only then
        y_index = self._encode_target(y, len(Xa))
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = Xa.shape[1]
        levels = [None if known is None else dict(enumerate(known)) for known in self.categories_] \
            if self.categories_ is not None else [None] * Xa.shape[1]
        for j in {feature_index(f, names, len(names)) for f in _as_list(self.categorical_features)}:
            if levels[j] is None:           # numerically coded: each value its own level
                values = np.unique(Xa[:, j])
                levels[j] = {float(v): f"{v:g}" for v in values}
                self.categories_ = self.categories_ or [None] * Xa.shape[1]
                self.categories_[j] = [float(v) for v in values]
        self.tests_ = fit_tests(Xa, names, self.quantiles, self.thresholds, levels)
        Xb = apply_tests(self.tests_, Xa)
        draw = draw_trees(Xb, y_index, self.classes_, self.tests_, self.n_branch_nodes, self.min_accuracy,
                          leaf_labels=self.leaf_labels, cardinality=self.cardinality, sampler=self.sampler,
                          n_samples=self.n_samples, rng=check_random_state(self.random_state),
                          time_budget=self.time_budget, progress=self.progress)
        self.trees_, self.min_correct_, self.model_count_ = draw.trees, draw.min_correct, draw.model_count
        self.cnf_stats_, self.seconds_per_sample_ = draw.cnf_stats, draw.seconds_per_sample
        tables = emergence(self.trees_, self.tests_, self.feature_names_in_, self.n_branch_nodes, self.confidence,
                           exact=self.sampler == "exact")
        self.emergence_probability_, self.tree_fraction_ = tables.probability, tables.tree_fraction
        self.test_emergence_probability_, self.test_tree_fraction_ = tables.test_probability, tables.test_tree_fraction
        self.uniform_probability_ = tables.uniform
        self.fit_time_ = time.perf_counter() - start
        return self

    def _codes(self, X, names):
        """``X`` with its text categorical columns read as the codes of ``categories_``."""
        if self.categories_ is None or not hasattr(X, "columns"):
            return X
        return category_codes(X, names or [str(c) for c in X.columns], self.categories_)

    def _encode_target(self, y, n_rows: int) -> np.ndarray:
        """Each row's class index in ``classes_`` (set here), checking ``y`` is one of two classes."""
        if y is None:
            raise InputTypeError("y is None; DTSampler needs the binary class of each training row")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != n_rows:
            raise InputError(f"y must be 1-D with one label per row of X ({n_rows}); got shape {y.shape}")
        if pd.isna(y).any():
            raise InputError("y contains missing values (NaN/None); every training row needs a class")
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise InputError(
                f"DTSampler supports binary classification only (the DT-Sampler paper's setting); y has "
                f"{len(self.classes_)} class(es) {self.classes_.tolist()[:10]}. For more classes fit one "
                "sampler per class on a one-vs-rest target (y == c)")
        return y_index

    def predict(self, X) -> np.ndarray:
        """Majority vote of the sampled trees (ties go to ``classes_[1]``)."""
        check_is_fitted(self)
        names = list(self.feature_names_in_) if self._named_columns else None
        Xa, _ = model_rows(self._codes(X, names), names, self.n_features_in_)
        votes = np.mean([t.predict(Xa) == self.classes_[1] for t in self.trees_], axis=0)
        return np.where(votes >= 0.5, self.classes_[1], self.classes_[0])

    def emergence_path(self, X, y, min_accuracies) -> pd.DataFrame:
        """Refit at each ``min_accuracy`` (same other parameters) and collect emergence probabilities.

        Returns a long DataFrame (``min_accuracy, feature, probability, ci_low, ci_high``), also
        kept as ``path_`` for :meth:`plot_path`.  Unreachable thresholds are skipped with a warning.
        """
        frames, skipped = [], []
        for level in min_accuracies:
            try:
                fitted = clone(self).set_params(min_accuracy=float(level)).fit(X, y)
            except UnsatisfiableError:
                skipped.append(level)
                continue
            frame = fitted.emergence_probability_.reset_index()
            frame.insert(0, "min_accuracy", float(level))
            frames.append(frame)
        if skipped:
            warnings.warn(f"no tree reaches min_accuracy {skipped}; those levels are left out of the path",
                          UserWarning, stacklevel=2)
        if not frames:
            raise UnsatisfiableError(f"no tree reaches any of the min_accuracy levels {list(min_accuracies)}")
        self.path_ = pd.concat(frames, ignore_index=True)
        return self.path_

    def plot(self, ax=None):
        """Horizontal bars of ``emergence_probability_`` with their intervals; ticks mark the
        ``min_accuracy = 0`` (uniform) level of each feature.  Returns the Axes."""
        check_is_fitted(self)
        return plot_emergence(self.emergence_probability_, self.uniform_probability_, len(self.trees_),
                              self.n_branch_nodes, self.min_accuracy, self.confidence, ax)

    def plot_path(self, ax=None):
        """Emergence probability of each feature against ``min_accuracy`` (after :meth:`emergence_path`),
        with interval bands.  Returns the Axes."""
        if not hasattr(self, "path_"):
            raise AttributeError("no path yet: call emergence_path(X, y, min_accuracies) first")
        return plot_emergence_path(self.path_, ax)


def _as_list(features) -> list:
    """``categorical_features`` as a list (one name or index, a list, or None)."""
    if features is None:
        return []
    return [features] if isinstance(features, (str, numbers.Integral)) else list(features)


def _text_categories(X) -> list | None:
    """Per column of a DataFrame ``X``, the sorted labels of a text or object column or the categories
    of a ``category`` column of text, None for a numeric one (a ``category`` of numbers is its values,
    as everywhere in the package: name it in ``categorical_features``); None when there is none."""
    if not hasattr(X, "columns"):
        return None
    out = []
    for name in X.columns:
        column = X[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            numeric = pd.api.types.is_numeric_dtype(column.cat.categories.dtype)
            out.append(None if numeric else list(column.cat.categories))
        elif pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
            out.append(None)
        else:
            out.append(sorted(column.dropna().astype(str).unique()))
    return out if any(known is not None for known in out) else None


def _check_params(est) -> None:
    """Clear errors for unusable DTSampler parameters."""
    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    if not is_int(est.n_branch_nodes) or est.n_branch_nodes < 1:
        raise InputError(f"n_branch_nodes must be an integer >= 1; got {est.n_branch_nodes!r}")
    if not is_int(est.n_samples) or est.n_samples < 1:
        raise InputError(f"n_samples must be an integer >= 1; got {est.n_samples!r}")
    if not (isinstance(est.min_accuracy, numbers.Real) and 0 <= est.min_accuracy <= 1):
        raise InputError(f"min_accuracy must be a number in [0, 1]; got {est.min_accuracy!r}")
    if est.sampler not in SAMPLERS:
        raise InputError(f"sampler must be one of {SAMPLERS}; got {est.sampler!r}")
    if est.leaf_labels not in LEAF_LABELS:
        raise InputError(f"leaf_labels must be one of {LEAF_LABELS}; got {est.leaf_labels!r}")
    if est.cardinality not in CARDINALITY_ENCODINGS:
        raise InputError(f"cardinality must be one of {sorted(CARDINALITY_ENCODINGS)}; got {est.cardinality!r}")
    if not 0 < est.confidence < 1:
        raise InputError(f"confidence must lie strictly between 0 and 1; got {est.confidence!r}")
    if est.time_budget is not None and not est.time_budget > 0:
        raise InputError(f"time_budget must be a positive number of seconds or None; got {est.time_budget!r}")
