"""DTSampler: feature importance as emergence probability over uniformly sampled accurate trees."""

from __future__ import annotations

import math
import numbers
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.base import BaseEstimator, clone

from .._validation import check_is_fitted, check_random_state, model_rows
from .binarize import DEFAULT_QUANTILES, apply_tests, fit_tests
from .encoding import CARDINALITY_ENCODINGS, encode_trees
from .samplers import UnsatisfiableError, enumerate_projected, is_satisfiable, unigen_samples
from .tree import SampledTree
from ..errors import InputError, InputTypeError

SAMPLERS = ("unigen", "exact")
LEAF_LABELS = ("majority", "sampled")


def wilson_interval(p, n: int, confidence: float = 0.95):
    """Wilson score interval for a proportion ``p`` estimated from ``n`` independent trees.

    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``z`` the normal quantile.
    It is also valid (conservative) for a mean of per-tree shares in [0, 1], whose variance
    is at most ``p(1-p)``.
    """
    p = np.asarray(p, dtype=float)
    z = stats.norm.ppf(0.5 + confidence / 2)
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    # the interval contains p by construction; clip the rounding error at p = 0 and p = 1
    return np.clip(np.minimum(centre - half, p), 0, 1), np.clip(np.maximum(centre + half, p), 0, 1)


class DTSampler(BaseEstimator):
    """DT-Sampler (Tsuda lab): sample small accurate decision trees uniformly, count feature use.

    The space is every binary decision tree with ``n_branch_nodes`` branch nodes over binary
    tests of the features (no test repeated on a root-to-leaf path) whose leaves, labelled
    with the majority class of the training rows reaching them, classify at least
    ``T = ceil(min_accuracy * n_rows)`` training rows correctly.  A distinct tree is its shape
    plus the test at each branch node (``leaf_labels="sampled"``: plus its leaf classes, any
    labelling reaching T).  The space is a CNF (see :mod:`.encoding`); ``sampler="unigen"``
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

    Binary classification only (the paper's setting): a target with more than two classes
    raises ``ValueError``; fit one sampler per class on a one-vs-rest target instead.

    Other fitted attributes: ``trees_`` (list of :class:`SampledTree`: ``rules()``,
    ``predict(X)``, ``accuracy``), ``tests_`` (the binary tests), ``classes_``,
    ``min_correct_`` (T), ``model_count_`` (number of distinct accurate trees: exact, or
    ApproxMC's estimate for UniGen), ``cnf_stats_`` (variables, clauses, sampling-set
    size), ``seconds_per_sample_`` and ``fit_time_``.
    """

    def __init__(self, n_branch_nodes: int = 5, min_accuracy: float = 0.9, n_samples: int = 500,
                 sampler: str = "unigen", random_state=None, quantiles=DEFAULT_QUANTILES,
                 thresholds: dict | None = None, leaf_labels: str = "majority",
                 cardinality: str = "mtotalizer", confidence: float = 0.95,
                 time_budget: float | None = 600.0, progress: bool = True):
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

    def _check_params(self) -> None:
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        if not is_int(self.n_branch_nodes) or self.n_branch_nodes < 1:
            raise InputError(f"n_branch_nodes must be an integer >= 1; got {self.n_branch_nodes!r}")
        if not is_int(self.n_samples) or self.n_samples < 1:
            raise InputError(f"n_samples must be an integer >= 1; got {self.n_samples!r}")
        if not (isinstance(self.min_accuracy, numbers.Real) and 0 <= self.min_accuracy <= 1):
            raise InputError(f"min_accuracy must be a number in [0, 1]; got {self.min_accuracy!r}")
        if self.sampler not in SAMPLERS:
            raise InputError(f"sampler must be one of {SAMPLERS}; got {self.sampler!r}")
        if self.leaf_labels not in LEAF_LABELS:
            raise InputError(f"leaf_labels must be one of {LEAF_LABELS}; got {self.leaf_labels!r}")
        if self.cardinality not in CARDINALITY_ENCODINGS:
            raise InputError(f"cardinality must be one of {sorted(CARDINALITY_ENCODINGS)}; got {self.cardinality!r}")
        if not 0 < self.confidence < 1:
            raise InputError(f"confidence must lie strictly between 0 and 1; got {self.confidence!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise InputError(f"time_budget must be a positive number of seconds or None; got {self.time_budget!r}")

    def fit(self, X, y) -> "DTSampler":
        """Binarise ``X``, encode the accurate trees, draw them and compute emergence probabilities.

        Raises :class:`UnsatisfiableError` when no tree reaches ``min_accuracy``; warns
        (:class:`TimeBudgetWarning`) when the run is estimated to exceed ``time_budget``.
        """
        self._check_params()
        start = time.perf_counter()
        Xa, names = model_rows(X, None, None)
        self._named_columns = hasattr(X, "columns")     # predict aligns DataFrames by name only then
        y_index = self._encode_target(y, len(Xa))
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = Xa.shape[1]
        self.tests_ = fit_tests(Xa, names, self.quantiles, self.thresholds)
        Xb = apply_tests(self.tests_, Xa)
        n_rows, n_tests = Xb.shape
        self.min_correct_ = math.ceil(round(self.min_accuracy * n_rows, 9))
        encoding = encode_trees(Xb, y_index, self.n_branch_nodes, self.min_correct_,
                                leaf_labels=self.leaf_labels == "sampled", cardinality=self.cardinality)
        self.cnf_stats_ = {"n_vars": encoding.n_vars, "n_clauses": len(encoding.clauses),
                           "sampling_set_size": len(encoding.sampling_set)}
        if not is_satisfiable(encoding.clauses):
            raise UnsatisfiableError(
                f"no decision tree with {self.n_branch_nodes} branch nodes over {n_tests} binary tests "
                f"classifies at least {self.min_correct_} of the {n_rows} training rows correctly "
                f"(min_accuracy={self.min_accuracy}): lower min_accuracy or change n_branch_nodes")
        if self.sampler == "unigen":
            models, self.model_count_, self.seconds_per_sample_ = unigen_samples(
                encoding.clauses, encoding.sampling_set, self.n_samples, check_random_state(self.random_state),
                time_budget=self.time_budget, progress=self.progress)
        else:
            models = enumerate_projected(encoding.clauses, encoding.sampling_set,
                                         time_budget=self.time_budget, progress=self.progress)
            self.model_count_ = len(models)
            self.seconds_per_sample_ = (time.perf_counter() - start) / len(models)
        default_class = int(np.argmax(np.bincount(y_index, minlength=2)))
        self.trees_ = [SampledTree(encoding.decode(m), self.tests_, self.classes_, Xb, y_index, default_class)
                       for m in models]
        self._summarise()
        self.fit_time_ = time.perf_counter() - start
        return self

    def _encode_target(self, y, n_rows: int) -> np.ndarray:
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

    def _summarise(self) -> None:
        """Emergence probability and tree fraction per binary test and per original feature."""
        n_trees, N = len(self.trees_), self.n_branch_nodes
        n_tests = len(self.tests_)
        counts = np.array([np.bincount(t.test, minlength=n_tests) for t in self.trees_])   # (trees, tests)
        owner = np.array([t.feature for t in self.tests_])
        per_feature = np.stack([counts[:, owner == f].sum(axis=1) for f in range(self.n_features_in_)], axis=1)
        test_names = [t.name for t in self.tests_]

        def table(hits, index):
            p = hits.mean(axis=0)
            if self.sampler == "exact":
                low, high = p, p
            else:
                low, high = wilson_interval(p, n_trees, self.confidence)
            return pd.DataFrame({"probability": p, "ci_low": low, "ci_high": high},
                                index=pd.Index(index, name="feature"))

        self.test_emergence_probability_ = table(counts / N, test_names)
        self.test_tree_fraction_ = table(counts > 0, test_names)
        for frame in (self.test_emergence_probability_, self.test_tree_fraction_):
            frame.insert(0, "original_feature", self.feature_names_in_[owner])
        self.emergence_probability_ = table(per_feature / N, list(self.feature_names_in_))
        self.tree_fraction_ = table(per_feature > 0, list(self.feature_names_in_))
        self.uniform_probability_ = pd.Series(np.bincount(owner, minlength=self.n_features_in_) / n_tests,
                                              index=self.emergence_probability_.index, name="uniform")

    def predict(self, X) -> np.ndarray:
        """Majority vote of the sampled trees (ties go to ``classes_[1]``)."""
        check_is_fitted(self)
        names = list(self.feature_names_in_) if self._named_columns else None
        Xa, _ = model_rows(X, names, self.n_features_in_)
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
        import matplotlib.pyplot as plt

        check_is_fitted(self)
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.35 * self.n_features_in_ + 1.5))
        table = self.emergence_probability_.assign(uniform=self.uniform_probability_)
        table = table.sort_values("probability")
        y = np.arange(len(table))
        err = np.vstack([table["probability"] - table["ci_low"], table["ci_high"] - table["probability"]])
        ax.barh(y, table["probability"], xerr=err, color="tab:blue", alpha=0.8, capsize=2,
                label=f"emergence ({self.confidence:.0%} interval)")
        ax.scatter(table["uniform"], y, marker="|", s=200, color="tab:red", label="min_accuracy = 0")
        ax.set_yticks(y, [str(v) for v in table.index])
        ax.set_xlabel("share of branch nodes testing the feature")
        ax.set_title(f"DT-Sampler: {len(self.trees_)} trees, {self.n_branch_nodes} branch nodes, "
                     f"accuracy >= {self.min_accuracy:g}", fontsize="medium")
        ax.legend(loc="lower right", fontsize="small")
        return ax

    def plot_path(self, ax=None):
        """Emergence probability of each feature against ``min_accuracy`` (after :meth:`emergence_path`),
        with interval bands.  Returns the Axes."""
        import matplotlib.pyplot as plt

        if not hasattr(self, "path_"):
            raise AttributeError("no path yet: call emergence_path(X, y, min_accuracies) first")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        for name, frame in self.path_.groupby("feature", sort=False):
            line, = ax.plot(frame["min_accuracy"], frame["probability"], marker="o", label=str(name))
            ax.fill_between(frame["min_accuracy"], frame["ci_low"], frame["ci_high"],
                            color=line.get_color(), alpha=0.15)
        ax.set_xlabel("min_accuracy")
        ax.set_ylabel("emergence probability")
        ax.legend(fontsize="small", ncol=2)
        return ax
