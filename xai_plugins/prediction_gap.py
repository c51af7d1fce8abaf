"""Squared prediction gap PG², its ranking metric PGI², and the greedy PG² ranking.

Definitions (Gajewski et al., "exact faithfulness for tree models", eq. 2-3):

    PG²(x, S)   = E[(f(x') - f(x))²],  x'_j = x_j + e_j for j in S (independent noise), x'_j = x_j otherwise
    PGI²(x, π)  = (1/d) Σ_{k=1..d} PG²(x, {π(1), ..., π(k)})
    greedy π    : π(k) = argmax_j PG²(x, {π(1), ..., π(k-1), j})   (ties -> lowest feature index)

The exact value is computed in closed form by the C core on the ensemble's output in the
Forest's ``output_space``: the regression output, the margin (log-odds / softmax logits) of
boosted classifiers, or the class probabilities of random forests — outputs that are sums of
leaf values. PG² of a logistic/softmax *probability* has no leaf-pair form, so for boosted
classifiers the exact value is on the margin; use ``method="monte_carlo"`` with your own
predictor for probabilities.
"""

from __future__ import annotations

import functools
import math
import numbers
import time
import weakref
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import qmc

from . import _native
from ._validation import check_n_samples, check_random_state, feature_index, resolve_output
from .engines import engine_for
from .errors import InputError, InputTypeError
from .exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean
from .forest import Forest, import_model, tree_levels
from .perturbation import Perturbation, cdf_table, check_noise_scale, make_perturbation

METHODS = ("exact", "monte_carlo", "qmc", "auto")
#: The cost model of ``method="auto"``, in CPU seconds of one thread, calibrated on a 2-core x86-64
#: machine with ``benchmarks/bench_pg2_auto_cost.py`` (XGBoost 100 and 500 trees of depth 6, |S| = 2,
#: 4 and all): the exact method's setup per tree and row (walks, boxes, tables), one leaf-pair term
#: of its sum, the share of the pairs that the default pruning keeps (about half on the California
#: models), and one tree of one Monte Carlo sample through the model's own predictor.
AUTO_SECONDS_PER_TREE = 3.0e-6
AUTO_SECONDS_PER_PAIR = 0.9e-9
AUTO_PRUNED_SHARE = 0.5
AUTO_SECONDS_PER_TREE_SAMPLE = 1.0e-8
#: Monte Carlo pilot of ``method="auto"``: samples per row, on at most this many rows.
AUTO_PILOT_SAMPLES, AUTO_PILOT_ROWS = 256, 8
#: The Monte Carlo of ``method="auto"`` draws at least max(AUTO_MIN_SAMPLES, 1/rtol²) samples per row
#: (the squared gap's coefficient of variation is √2 when f(x') − f(x) is a centred Gaussian, and
#: larger with the mass at 0 that trees give, so fewer samples would rarely show rtol); this bounds
#: its cost from below, and when the exact method costs no more than that bound no pilot runs.
AUTO_MIN_SAMPLES = 1000
#: ``method="auto"`` keeps a sampled row only when its relative standard error is within this many
#: times rtol (and informative); other rows are computed exactly.
AUTO_ACCEPT = 2.0
#: A sampled PG²'s standard error is informative only when at least this many of its sampled gaps
#: are nonzero and not all of them are equal (``PG2Estimate.informative``).
MIN_INFORMATIVE_GAPS = 10
#: A progress bar is shown (``verbose=True``) on calls estimated to take longer than this (seconds).
PROGRESS_AFTER = 5.0
#: Relative error bound of the exact method's certified pruning (``prune=True``): leaves whose
#: pairs cannot move any PG² by more than this share of it are left out of the leaf-pair sums
#: (the bound and its proof: ``prune_leaves`` in ``csrc/pg2.c``); below float64 accumulation error
#: over the ~10⁸ terms of a large model. ``prune=False`` sums every leaf pair.
PRUNE_RTOL = 1e-13
#: How many perturbed-feature sets a model's :class:`SplitBoundaries` remembers the CDF-table columns of.
COLUMN_SETS_KEPT = 1024


@dataclass
class PG2Estimate:
    """PG² per row, as returned by :func:`xai_plugins.pg2`.

    Holds the estimate of PG²(x, S) = E[(f(x′) − f(x))²] for every explained row, its standard
    error and how it was computed. ``np.asarray(estimate)`` is ``value``.

    Parameters
    ----------
    value : ndarray of shape (n,) or (n, k)
        PG² of each row; (n, k) for a model with k outputs.
    stderr : ndarray, same shape as ``value``
        Standard error of each value (zeros when exact).
    method : str
        The method actually used: "exact", "monte_carlo" or "qmc" (``method="auto"`` records the
        one it ran).
    n_samples : int
        Perturbed samples per row (0 when exact).
    seconds : float
        Wall-clock seconds of the computation.
    pair_terms : int, default 0
        For the exact method, the number of leaf-pair terms evaluated.
    reason : str, default ''
        With ``method="auto"``, why it chose ``method`` (the cost model's two estimates); ""
        otherwise.
    informative : ndarray of bool or None, default None
        Same shape as ``value``: False where a sampled value's standard error says nothing about
        its error (fewer than ``MIN_INFORMATIVE_GAPS`` = 10 nonzero sampled gaps, or all of them
        equal: a 0 ± 0 from samples that never left x's leaves); True for exact values (filled in
        when ``method == "exact"`` and None is given); None when not recorded (dask Monte Carlo).

    Attributes
    ----------
    value : ndarray of shape (n,) or (n, k)
        PG² per row (and output).
    stderr : ndarray
        Standard errors (zeros when exact).
    method : str
        Method used.
    n_samples : int
        Samples per row (0 when exact).
    seconds : float
        Wall-clock seconds.
    pair_terms : int
        Leaf-pair terms evaluated by the exact method.
    reason : str
        Why ``method="auto"`` chose ``method``.
    informative : ndarray of bool or None
        Where a standard error is informative.

    See Also
    --------
    xai_plugins.pg2 : Computes it.
    xai_plugins.GreedyRanking : The result of the greedy PG² ranking.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> est = xp.pg2(model, X[:20], S=[2, 8], sigma=0.3)
    >>> est.method, est.value.shape, est.n_samples
    ('exact', (20,), 0)
    >>> bool(np.all(est.stderr == 0)), bool(est.informative.all())
    (True, True)
    >>> bool(np.array_equal(np.asarray(est), est.value))
    True
    """

    value: np.ndarray
    stderr: np.ndarray
    method: str
    n_samples: int
    seconds: float
    pair_terms: int = 0
    #: why ``method="auto"`` chose ``method`` (the cost model's two estimates); "" otherwise
    reason: str = ""
    informative: np.ndarray | None = None

    def __post_init__(self):
        if self.informative is None and self.method == "exact":
            self.informative = np.ones(np.shape(self.value), dtype=bool)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)

    def __repr__(self):
        shaky = 0 if self.informative is None else int(np.sum(~np.asarray(self.informative)))
        return (f"PG2Estimate(method={self.method!r}, n_rows={len(self.value)}, "
                f"mean={np.mean(self.value):.6g}, seconds={self.seconds:.3g}"
                + (f", uninformative stderr on {shaky} values" if shaky else "") + ")")


@dataclass
class GreedyRanking:
    """Greedy PG² ranking of ``n`` rows, as returned by :func:`xai_plugins.greedy_pg2_ranking`.

    ``np.asarray(result)`` is ``ranking``; ``len(result)`` is the number of rows.

    Parameters
    ----------
    ranking : ndarray of int of shape (n, d)
        Feature indices in the model's feature order, most important first.
    pg2_path : ndarray of shape (n, d)
        ``pg2_path[i, k] = PG²(x_i, ranking[i, :k+1])`` (PG² is not monotone in S, so the path
        need not rise).

    Attributes
    ----------
    ranking : ndarray of int of shape (n, d)
        Per-row feature order, most important first.
    pg2_path : ndarray of shape (n, d)
        PG² of each prefix of the ranking.

    See Also
    --------
    xai_plugins.greedy_pg2_ranking : Computes it.
    xai_plugins.pgi2 : Scores a ranking by exact PGI².

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> result = xp.greedy_pg2_ranking(model, X[:5], sigma=0.3)
    >>> result.ranking.shape, result.pg2_path.shape, len(result)
    ((5, 10), (5, 10), 5)
    >>> bool(np.array_equal(np.asarray(result), result.ranking))
    True
    """

    ranking: np.ndarray
    pg2_path: np.ndarray

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.ranking, dtype=dtype)

    def __len__(self):
        return len(self.ranking)


@dataclass(frozen=True, eq=False)
class SplitBoundaries:
    """PG²'s view of a Forest's splits: the CDF tables are read at the split boundaries.

    Per feature j, ``boundaries[j]`` are the sorted distinct real numbers b such that the model
    sends a real x left iff x < b (up to a null set); ``threshold_rank`` (n_nodes,) is each node's
    1-based rank among its feature's boundaries; ``cdf_offset`` (d + 1,) the layout of the per-row
    CDF tables (feature j owns ``cdf_offset[j] .. cdf_offset[j+1]``: 0, one entry per boundary, 1);
    ``column_boundary`` (cdf_offset[-1],) holds, for each column of the CDF half of a table, the
    boundary it is read at (each feature's ``boundaries[j]`` between -inf and +inf) and
    ``column_feature`` the feature owning it; ``c_forest`` the C struct carrying the ranks.
    A categorical feature (``n_categories[j]`` = K > 0) has no boundaries: its K + 2 table entries
    hold the probabilities of its atoms (see ``csrc/xai.h``). ``reads`` = (split rule, float32 input,
    zero threshold): how the model reads and compares a value (:meth:`goes_left`).
    """

    boundaries: list
    threshold_rank: np.ndarray
    cdf_offset: np.ndarray
    c_forest: _native.CForest
    column_boundary: np.ndarray
    column_feature: np.ndarray
    n_categories: np.ndarray
    reads: tuple = ("le", False, 0.0)
    _columns: dict = field(default_factory=dict, repr=False)

    def goes_left(self, values: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
        """(len(values), len(boundaries)) whether the model sends each real value left of each boundary
        (of :attr:`boundaries`, or ±inf): value < boundary as the model reads the value (LightGBM's zero
        rounding, the float32 cast: a float32 is never a boundary then), and value == boundary
        goes left under the ``x <= t`` rule."""
        rule, float32, zero = self.reads
        v = np.where(np.abs(values) <= zero, 0.0, np.asarray(values, dtype=np.float64))
        if float32:
            with np.errstate(over="ignore"):
                v = v.astype(np.float32).astype(np.float64)
        v, b = v[:, None], np.asarray(boundaries, dtype=np.float64)[None, :]
        return (v < b) | ((v == b) & (rule == "le") & (not float32))

    @functools.cached_property
    def categorical(self) -> np.ndarray:
        """Indices of the categorical features (empty for a numeric model)."""
        return np.flatnonzero(self.n_categories)

    def columns_of(self, features) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The table columns of a set of features (indices): their indices in both halves of the
        table (CDF half first), the feature and the boundary each is read at, and whether it holds
        P(x_j + e < b) (True, the CDF half) or P(x_j + e > b); remembered per set (up to
        :data:`COLUMN_SETS_KEPT` sets)."""
        key = np.asarray(features, dtype=np.int64).tobytes()
        found = self._columns.get(key)
        if found is None:
            perturbed = np.zeros(len(self.cdf_offset) - 1, dtype=bool)
            perturbed[np.asarray(features, dtype=np.int64)] = True
            cols = np.flatnonzero(perturbed[self.column_feature])
            twice = np.concatenate((cols, cols))
            below = np.arange(len(twice)) < len(cols)
            if len(self._columns) >= COLUMN_SETS_KEPT:
                self._columns.clear()
            found = (np.where(below, twice, twice + len(self.column_feature)), self.column_feature[twice],
                     self.column_boundary[twice], np.where(below, 1.0, -1.0))
            self._columns[key] = found
        return found


_BOUNDARIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def split_boundaries(forest: Forest) -> SplitBoundaries:
    """The :class:`SplitBoundaries` of a Forest, computed once and cached with it."""
    cached = _BOUNDARIES.get(forest)
    if cached is not None:
        return cached
    categories = forest.n_categories if forest.n_categories is not None else np.zeros(forest.n_features, np.int32)
    internal = (forest.left_child >= 0) & (categories[forest.feature] == 0)     # the numeric splits
    # each distinct threshold's boundary once (a model has far fewer than it has splits)
    t, of_split = np.unique(forest.threshold[internal], return_inverse=True)
    if forest.input_float32:
        # the model compares float32(x): left iff float32(x) <= a, where a is the largest
        # float32 obeying the rule against t; float32(x) <= a iff x < midpoint(a, next float32)
        # (float32's infinities stand for 2^128 in the midpoint: float32(x) is inf iff |x| >= 2^128 - 2^103)
        with np.errstate(over="ignore"):
            a = t.astype(np.float32)
            obeys = (lambda v: v < t) if forest.split_rule == "lt" else (lambda v: v <= t)
            a = np.where(obeys(a.astype(np.float64)), a, np.nextafter(a, np.float32(-np.inf)))
            up = np.nextafter(a, np.float32(np.inf))
            a = np.where(obeys(up.astype(np.float64)), up, a)
            lo, hi = a.astype(np.float64), np.nextafter(a, np.float32(np.inf)).astype(np.float64)
        b = np.where(lo == np.inf, np.inf, (np.where(lo == -np.inf, -2.0**128, lo) +
                                            np.where((hi == np.inf) & (lo < np.inf), 2.0**128, hi)) / 2.0)
        b = np.where(obeys(lo), b, -np.inf)           # no float32 obeys the rule: every x goes right
    else:
        b = t
    b = b[of_split]
    rank = np.zeros(forest.n_nodes, dtype=np.int32)
    boundaries, offsets = [], [0]
    feat = forest.feature[internal]
    idx = np.flatnonzero(internal)
    for j in range(forest.n_features):
        of_j = feat == j
        values = np.unique(b[of_j])
        boundaries.append(values)
        offsets.append(offsets[-1] + (len(values) if categories[j] == 0 else int(categories[j])) + 2)
        rank[idx[of_j]] = np.searchsorted(values, b[of_j]) + 1
    rank.flags.writeable = False
    counts = np.array([len(v) for v in boundaries], dtype=np.int32)
    column_boundary = np.concatenate([np.concatenate(([-np.inf], v, [np.inf])) if k == 0 else np.full(k + 2, np.nan)
                                      for v, k in zip(boundaries, categories)])
    column_feature = np.repeat(np.arange(forest.n_features), np.diff(offsets))
    cached = SplitBoundaries(boundaries, rank, np.asarray(offsets, dtype=np.int64),
                             _native.CForest(forest, threshold_rank=rank, rank_count=counts), column_boundary,
                             column_feature, categories,
                             (forest.split_rule, bool(forest.input_float32), float(forest.zero_threshold)))
    _BOUNDARIES[forest] = cached
    _native.release_free_memory()       # the temporaries above, before PG²'s C workspace (1,000 x depth 10: 24 MB)
    return cached


def _squeeze(forest: Forest, values: np.ndarray) -> np.ndarray:
    return values[..., 0] if forest.n_outputs == 1 else values


def _prepare(model, X):
    """The imported model and ``X`` as rows in its feature order (DataFrames aligned by name)."""
    forest = import_model(model)
    X, names = forest.rows(X)
    return forest, X, names


def _set_masks(S, n_rows: int, n_features: int, names=None) -> np.ndarray:
    """(n_rows, n_features) uint8 masks of the perturbed sets.

    ``S`` is one set for every row — feature indices (model order) and/or feature names, or a
    boolean mask (d,) — or one set per row: a boolean (n, d) mask, an (n, k) integer array, or a
    list of n index/name lists.
    """
    if isinstance(S, (list, tuple)) and all(type(f) is int or isinstance(f, (str, numbers.Integral)) for f in S):
        return _mask_of(S, n_rows, n_features, names)   # one set, indices and names mixed freely
    if isinstance(S, (str, numbers.Integral)) and not isinstance(S, (bool, np.bool_)):
        return _mask_of([S], n_rows, n_features, names)
    if isinstance(S, (list, tuple)) and S and all(isinstance(row, (list, tuple, np.ndarray)) for row in S) \
            and not all(np.asarray(row).dtype == bool for row in S):
        if len(S) != n_rows:
            raise InputError(f"per-row S must list one feature set per row: {n_rows} rows, got {len(S)} sets")
        return np.concatenate([_mask_of(list(row), 1, n_features, names) for row in S], axis=0)
    arr = np.asarray(S)
    if arr.dtype == bool:
        if arr.shape == (n_features,):
            arr = np.broadcast_to(arr, (n_rows, n_features))
        if arr.shape != (n_rows, n_features):
            raise InputError(f"a boolean S must have shape ({n_features},) or ({n_rows}, {n_features}); "
                             f"got {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.uint8)
    if arr.ndim == 2:
        if len(arr) != n_rows:
            raise InputError(f"per-row S must list one feature set per row: {n_rows} rows, got {len(arr)} sets")
        return np.concatenate([_mask_of(list(row), 1, n_features, names) for row in arr], axis=0)
    if arr.ndim > 2:
        raise InputError("S must be a feature list, a boolean mask (d,) or (n, d), an (n, k) index array "
                         f"or one list per row; got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "f":
        raise InputTypeError(f"S must hold integer feature indices, feature names or be a boolean mask; "
                             f"got dtype {arr.dtype}")
    return _mask_of([f.item() if hasattr(f, "item") else f for f in arr.ravel()], n_rows, n_features, names)


def _mask_of(features, n_rows: int, n_features: int, names) -> np.ndarray:
    """(n_rows, n_features) uint8 mask of one set of features (indices or names)."""
    idx = [feature_index(f, names, n_features) for f in features]
    if len(set(idx)) != len(idx):
        raise InputError(f"S holds duplicated features: {list(features)}")
    mask = np.zeros((n_rows, n_features), dtype=np.uint8)
    mask[:, idx] = 1
    return mask


def _check_perturbed_finite(X, mask, missing=float("nan"), categories=None):
    """InputError when a numeric perturbed feature is missing in some row (NaN, or the model's
    ``missing`` sentinel, which rows enter as NaN); a categorical one (``categories`` > 0) may be: its
    missing value is an atom of its law."""
    nan = np.isnan(X)
    if not nan.any():
        return
    bad = nan & (mask != 0)          # (n, d), mask (n, d) or (1, d): pgi2 / greedy perturb every feature
    if categories is not None:
        bad &= categories == 0
    if bad.any():
        r, c = np.argwhere(bad)[0]
        what = "NaN" if np.isnan(missing) else f"a missing value (NaN or the model's missing= sentinel {missing!r})"
        raise InputError(f"X has {what} in perturbed feature {c} (row {r}); perturbing a missing value is undefined")


def pg2(model, X, S, sigma=0.3, *, perturbation=None, background=None, method="exact", n_samples=10_000,
        rtol=0.01, random_state=None, prune=True, verbose=True, n_jobs=None, rho=None) -> PG2Estimate:
    r"""Squared prediction gap PG² of every row of ``X`` when the features ``S`` are perturbed.

    For each row x (Gajewski et al., eq. 2):

    .. math::

        \mathrm{PG}^2(x, S) = \mathbb{E}\left[(f(x') - f(x))^2\right],

    where x'_j = x_j + ε_j for j in S and x'_j = x_j otherwise, with independent noise ε_j (Gaussian of
    standard deviation ``sigma``, or ``perturbation``) and f the model's output in its Forest's
    ``output_space``: the regression output, the margin (log-odds / softmax logits) of boosted classifiers,
    the class probabilities of random forests.
    The exact value is computed in closed form by the C core over the ensemble's leaf pairs.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        An XGBoost, LightGBM, CatBoost or scikit-learn tree model (or Pipeline) that
        :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows: an array, read in the model's column order, or a DataFrame whose columns are
        aligned by name to the model's features. A row engine's collection (a dask array /
        DataFrame, a Spark DataFrame) gives a lazy result.
    S : sequence of int or str, array of bool, or one set per row
        The perturbed features, in the model's feature order: indices and/or feature names shared
        by all rows, a boolean mask (d,), or one set per row: a boolean (n, d) mask, an (n, k)
        index array, or a list of n index/name lists.
    sigma : float or array-like of shape (d,), default 0.3
        Standard deviation of the Gaussian noise, finite and > 0, scalar or per feature; with
        ``background`` it is in units of each feature's standard deviation there.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        A continuous distribution (one for all features, or one per feature) replacing the
        Gaussian (``sigma`` is then ignored), or the result of
        :func:`xai_plugins.binary_perturbation`.
    background : array-like or DataFrame or None, default None
        Background data: ``sigma`` becomes relative to its per-feature standard deviations, and
        categorical features are redrawn from its category frequencies.
    method : {"exact", "monte_carlo", "qmc", "auto"}, default "exact"
        "exact": closed form in C. "monte_carlo": ``n_samples`` perturbed copies per row through
        the model's own predictor. "qmc": scrambled Halton points mapped through the inverse CDF,
        8 independent scramblings for the standard error. "auto": the cheaper of the exact
        algorithm and a Monte Carlo estimate whose relative standard error is ``rtol``, by a cost
        model (its sample count from a pilot of 256 samples on up to 8 rows); the estimate's
        ``method`` and ``reason`` say which ran and why.
    n_samples : int, default 10000
        Perturbed samples per row for "monte_carlo" and "qmc" (an integer >= 2).
    rtol : float, default 0.01
        Relative standard error that ``method="auto"``'s Monte Carlo must reach.
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
        Seed of the sampled methods. Row i draws its noise from its own generator (the i-th child
        of ``SeedSequence(random_state)``), so a seeded estimate of a row does not depend on the
        other rows or on how a dask ``X`` is chunked. None draws fresh entropy.
    prune : bool, default True
        The exact method leaves out the leaf pairs that provably cannot change any value by more
        than ``PRUNE_RTOL`` = 1e-13 of it (relative); False sums every pair.
    verbose : bool, default True
        Show a progress bar when the exact call is estimated to take over 5 seconds.
    n_jobs : int or None, default None
        Threads of the C core (scikit-learn convention: None = 1 or the ``joblib.parallel_config``
        in force, -1 = every core); results do not depend on it.
    rho : float, array-like of shape (d,) or None, default None
        For categorical features: the probability that x'_j is redrawn from the category
        frequencies (scalar or per feature); default ``P(|e_j| > 1/2)`` of the feature's noise,
        2Φ(−1/(2σ)) for Gaussian noise.

    Returns
    -------
    PG2Estimate
        ``value`` (n,) or (n, k) for k outputs, ``stderr``, ``method``, ``n_samples``,
        ``seconds``, ``pair_terms``, ``reason`` and ``informative``. On a lazy row engine, a lazy
        estimate whose ``compute()`` equals the in-memory result bitwise.

    Raises
    ------
    InputError
        Unknown ``method``, ``n_samples`` < 2, ``sigma`` <= 0 or not finite, NaN (or the model's
        ``missing=`` sentinel) in a perturbed numeric feature, empty data or wrong sizes.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    InputTypeError
        Data or arguments of the wrong type (text columns, complex data, ``n_jobs="x"``).
    InputIndexError
        A feature index in ``S`` out of range.
    UnsupportedModelError
        A model type, objective or split kind that cannot be imported.
    NotFittedError
        An unfitted model.

    Warns
    -----
    NoiseScaleWarning
        When a Gaussian σ is at least 100 times the range of a perturbed feature's split
        thresholds and the rows' values: PG² then no longer depends on σ.

    See Also
    --------
    xai_plugins.pgi2 : Mean PG² over the prefixes of a ranking.
    xai_plugins.greedy_pg2_ranking : The feature order that greedily maximises PG².
    xai_plugins.binary_perturbation : Flip noise for 0/1 features.
    xai_plugins.PG2Estimate : The result.

    Notes
    -----
    The exact value is a sum over pairs of leaves of every two trees; with ``prune=True`` a proven
    bound drops the pairs of the least weighty leaves while keeping every value within 1e-13
    (relative) of the all-pairs sum. For boosted classifiers PG² is exact on the margin;
    probabilities have no leaf-pair form (use ``method="monte_carlo"``). A collection of a row
    engine (a dask array / DataFrame ``X``...) is computed block by block by the same code
    (``pg2_block`` on each block; see ``xai_plugins.engines``), and the lazy estimate's
    ``compute()`` equals this result bitwise.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> est = xp.pg2(model, X[:20], S=[2, 8], sigma=0.3)
    >>> est.method, est.value.shape
    ('exact', (20,))
    >>> float(xp.pg2(model, X[:1], S=[]).value[0])      # perturbing nothing changes nothing
    0.0

    A seeded Monte Carlo estimate agrees within its standard error:

    >>> mc = xp.pg2(model, X[:20], [2, 8], sigma=0.3, method="monte_carlo",
    ...             n_samples=2000, random_state=0)
    >>> mc.method, mc.stderr.shape
    ('monte_carlo', (20,))
    >>> bool(np.all(np.abs(mc.value - est.value) <= 5 * mc.stderr + 1e-9))
    True

    ``method="auto"`` says which method it ran and why:

    >>> auto = xp.pg2(model, X[:20], [2, 8], method="auto", rtol=0.01)
    >>> auto.method in ("exact", "monte_carlo"), auto.reason.startswith("auto")
    (True, True)
    """
    engine = engine_for(X, S)
    if engine.lazy:
        return _pg2_on(engine, model, X, S, sigma, perturbation, background, method, n_samples, rtol, random_state,
                       prune, n_jobs, rho)
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    forest, X, names = _prepare(model, X)
    masks = _set_masks(S, len(X), forest.n_features, names)
    _check_perturbed_finite(X, masks, forest.missing_value, forest.n_categories)
    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels,
                              numeric_labels=forest.numeric_labels, rho=rho)
    start = time.perf_counter()
    reason = ""
    if method == "auto":
        method, n_samples, reason = auto_method(forest, X, masks, noise, rtol, random_state)
    if method == "exact":
        values, terms = _exact_pg2(forest, X, masks, noise, prune, verbose, n_jobs)
        values = _squeeze(forest, values)
        return PG2Estimate(values, np.zeros_like(values), "exact", 0, time.perf_counter() - start, terms, reason)
    n_samples = check_n_samples(n_samples)
    check_noise_scale(split_boundaries(forest), noise, np.flatnonzero(masks.any(axis=0)), X)
    mean, stderr, nonzero = _sampled_pg2(forest, X, masks, noise, int(n_samples), method, row_seed(random_state))
    informative = _informative(stderr, nonzero, masks)
    terms = 0
    if reason:      # auto: a row whose samples have not shown the asked accuracy is computed exactly
        redone, terms = exact_where_unshown(forest, X, masks, noise, mean, stderr, informative, rtol, prune=prune,
                                            verbose=verbose, n_jobs=n_jobs)
        if redone:
            reason += (f"; {redone} of {len(X)} rows computed exactly (their samples did not show a "
                       f"relative standard error within {AUTO_ACCEPT:g} x rtol)")
    return PG2Estimate(_squeeze(forest, mean), _squeeze(forest, stderr), method, int(n_samples),
                       time.perf_counter() - start, terms, reason, _squeeze(forest, informative))


def _exact_pg2(forest, X, masks, noise, prune, verbose, n_jobs) -> tuple[np.ndarray, int]:
    """Exact PG² (n, outputs) of the rows of ``X`` under their ``masks``, and the leaf-pair terms summed."""
    splits = split_boundaries(forest)
    table = cdf_table(splits, X, noise, np.flatnonzero(masks.any(axis=0)))
    seconds = exact_seconds(forest, masks.sum(axis=1).mean()) * len(X) if verbose and len(X) > 1 else 0.0
    values, terms = _batched(len(X), seconds, verbose, "exact PG²", lambda a, b: _native.pg2(
        splits.c_forest, splits.cdf_offset, X[a:b], masks[a:b, None, :], table[a:b], n_jobs=n_jobs,
        prune_rtol=PRUNE_RTOL if prune else 0.0))
    return values[:, 0, :], terms


def exact_where_unshown(forest, X, masks, noise, mean, stderr, informative, rtol, *, prune=True, verbose=False,
                        n_jobs=None) -> tuple[int, int]:
    """``method="auto"``'s guarantee on sampled rows: a row whose samples have not shown a relative
    standard error within :data:`AUTO_ACCEPT` × ``rtol``, or whose standard error is not informative
    (see :func:`_informative`), is computed exactly; ``mean`` / ``stderr`` / ``informative`` are
    updated in place. Returns (rows computed exactly, leaf-pair terms summed)."""
    redo = ~np.all(informative & (stderr <= AUTO_ACCEPT * rtol * mean), axis=1)
    if not redo.any():
        return 0, 0
    mean[redo], terms = _exact_pg2(forest, X[redo], masks[redo], noise, prune, verbose, n_jobs)
    stderr[redo], informative[redo] = 0.0, True
    return int(redo.sum()), terms


def _informative(stderr: np.ndarray, nonzero: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Where a sampled PG²'s standard error is informative (see :attr:`PG2Estimate.informative`):
    at least :data:`MIN_INFORMATIVE_GAPS` nonzero gaps, not all equal; rows perturbing nothing are
    exactly 0."""
    perturbs_nothing = np.count_nonzero(masks, axis=1) == 0
    return ((nonzero >= MIN_INFORMATIVE_GAPS) & (stderr > 0)) | perturbs_nothing[:, None]


_DEPTHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def leaf_depths(forest: Forest) -> np.ndarray:
    """(n_trees, max depth + 1): the number of leaves of each tree at each depth; computed once
    per Forest."""
    cached = _DEPTHS.get(forest)
    if cached is None:
        tree, depth = _walk_depths(forest)
        cached = np.zeros((forest.n_trees, int(depth.max(initial=0)) + 1))
        np.add.at(cached, (tree, depth), 1.0)
        _DEPTHS[forest] = cached
    return cached


def _walk_depths(forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """(tree, depth) of every leaf (:func:`~xai_plugins.forest.tree_levels`)."""
    leaves = [(tree[~inner], np.full(int((~inner).sum()), depth))
              for depth, (_, tree, inner) in enumerate(tree_levels(forest.left_child, forest.right_child,
                                                                    forest.tree_offset))]
    return np.concatenate([t for t, _ in leaves]), np.concatenate([d for _, d in leaves])


def exact_seconds(forest: Forest, n_perturbed: float) -> float:
    """Estimated CPU seconds of one exact PG² evaluation of a row with ``n_perturbed`` features in
    S: :data:`AUTO_SECONDS_PER_TREE` per tree, plus the leaf pairs. A leaf at depth D is reachable
    with about 2^(-D (1 - |S|/d)) (each split on a feature outside S halves the chance), which gives
    N_t leaves per tree and Σ_{t<u, same output} N_t N_u leaf pairs, of which
    :data:`AUTO_PRUNED_SHARE` are kept, at :data:`AUTO_SECONDS_PER_PAIR` per output a leaf holds
    (a random forest's class-probability leaves hold every class)."""
    counts = leaf_depths(forest)
    outside = 1.0 - min(max(n_perturbed, 0.0), forest.n_features) / forest.n_features
    per_tree = counts @ np.exp2(-np.arange(counts.shape[1]) * outside)
    if forest.n_outputs == 1:
        pairs = float(per_tree.sum() ** 2 - per_tree @ per_tree) / 2.0
    else:
        target = np.asarray(forest.tree_target)
        per_output = np.bincount(target, weights=per_tree, minlength=forest.n_outputs)
        square = np.bincount(target, weights=per_tree ** 2, minlength=forest.n_outputs)
        pairs = float(np.sum(per_output ** 2 - square) / 2.0)
    per_pair = forest.leaf_width * AUTO_PRUNED_SHARE * AUTO_SECONDS_PER_PAIR
    return forest.n_trees * AUTO_SECONDS_PER_TREE + pairs * per_pair


def auto_method(forest: Forest, X, masks, noise, rtol, random_state) -> tuple[str, int, str]:
    """``(method, n_samples, reason)`` for ``method="auto"``: the cheaper of the exact method
    (:func:`exact_seconds`) and Monte Carlo at :data:`AUTO_SECONDS_PER_TREE_SAMPLE` per tree and
    sample. Monte Carlo needs n = (sd/mean)² / rtol² samples for a relative standard error rtol, at
    least max(:data:`AUTO_MIN_SAMPLES`, 1/rtol²); when the exact method costs no more than that
    floor plus the pilot, it runs without one. Otherwise sd/mean of the squared gap comes from a
    pilot of :data:`AUTO_PILOT_SAMPLES` samples on up to :data:`AUTO_PILOT_ROWS` rows (the 90th
    percentile over them; a pilot row with fewer than :data:`MIN_INFORMATIVE_GAPS` nonzero gaps
    counts as needing at least 1/p − 1 for p = (nonzero + 3) / samples), drawn from
    ``random_state`` as :func:`row_seed` says."""
    if not (isinstance(rtol, numbers.Real) and 0 < float(rtol) < 1):
        raise InputError(f"rtol must be a relative accuracy in (0, 1); got {rtol!r}")
    rtol = float(rtol)
    n = len(X)
    exact = exact_seconds(forest, float(np.count_nonzero(masks)) / n if n else 0.0)
    per_sample = forest.n_trees * AUTO_SECONDS_PER_TREE_SAMPLE
    floor = max(AUTO_MIN_SAMPLES, math.ceil(1.0 / rtol ** 2))
    pilot_rows = min(n, AUTO_PILOT_ROWS)
    pilot_seconds = pilot_rows * AUTO_PILOT_SAMPLES * per_sample
    head = f"auto (rtol={rtol:g}): exact ≈ {exact * 1e3:.3g} ms per row"
    if n == 0 or exact * n <= pilot_seconds + n * floor * per_sample:
        return "exact", 0, (f"{head} vs Monte Carlo ≥ {floor * per_sample * 1e3:.3g} ms per row (at least {floor} "
                            f"samples) plus a pilot; ran exact without a pilot")
    pilot = slice(0, pilot_rows)
    mean, stderr, nonzero = _sampled_pg2(forest, X[pilot], masks[pilot], noise, AUTO_PILOT_SAMPLES, "monte_carlo",
                                         row_seed(random_state))
    spread = np.where(mean > 0, stderr ** 2 * AUTO_PILOT_SAMPLES / np.where(mean > 0, mean, 1.0) ** 2, 0.0)
    unseen = AUTO_PILOT_SAMPLES / (nonzero + 3.0) - 1.0        # CV² >= 1/p - 1 when only a share p is nonzero
    shaky = ~_informative(stderr, nonzero, masks[pilot])
    per_row = np.where(shaky, np.maximum(spread, unseen), spread).max(axis=1)
    n_samples = int(np.clip(np.ceil(np.percentile(per_row, 90) / rtol ** 2), floor, 10**7))
    sampled = n_samples * per_sample
    method = "exact" if exact <= sampled else "monte_carlo"
    return method, n_samples, (f"{head} vs Monte Carlo ≈ {sampled * 1e3:.3g} ms per row ({n_samples} samples for a "
                               f"{rtol:.0%} relative standard error, from a pilot); ran {method}")


def _batched(n_rows: int, seconds: float, verbose: bool, what: str, call) -> tuple:
    """call(a, b) over the rows a..b in one go, or in about 50 batches under a tqdm bar when the
    call is estimated to take over :data:`PROGRESS_AFTER` seconds. call returns a tuple of per-row
    arrays and counts; the batches' arrays are concatenated and their counts added."""
    if not verbose or seconds <= PROGRESS_AFTER or n_rows < 2:
        return call(0, n_rows)
    from ._extras import tqdm

    step = max(1, -(-n_rows // 50))
    parts = []
    with tqdm(total=n_rows, desc=what, unit="row") as bar:
        for a in range(0, n_rows, step):
            parts.append(call(a, min(a + step, n_rows)))
            bar.update(min(step, n_rows - a))
    return tuple(np.concatenate(p) if isinstance(p[0], np.ndarray) else sum(p) for p in zip(*parts))


def row_seed(random_state) -> np.random.SeedSequence:
    """The root SeedSequence of a Monte Carlo run: from an int seed or a SeedSequence directly,
    from fresh entropy for None, and from 128 bits drawn from a Generator / RandomState.

    Row i (its index in ``X``) draws from ``default_rng(SeedSequence(root.entropy,
    spawn_key=root.spawn_key + (i,)))`` -- the i-th child of ``root.spawn`` -- so each row's
    stream is independent of the other rows and of how the rows are split into blocks.
    """
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, (bool, np.bool_))):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    rng = check_random_state(random_state)
    return np.random.SeedSequence([int(v) for v in rng.integers(0, 2**32, size=4, dtype=np.uint64)])


def _row_rng(root: np.random.SeedSequence, i: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (i,),
                                                        pool_size=root.pool_size))


def _sampled_pg2(forest, X, masks, noise, n_samples, method, root, batch_rows=200_000, row_offset=0):
    """Monte Carlo / randomised QMC estimate of PG² through the model's own predictor: ``(mean,
    stderr, nonzero)`` per row and output, ``nonzero`` the count of sampled gaps that are not 0; row
    i draws from its own generator (:func:`row_seed`), row index ``row_offset + i``. The perturbed
    copies of consecutive rows go to the predictor together, about ``batch_rows`` at a time (one call
    per row would pay the predictor's fixed cost per row)."""
    if forest.predict_fn is None:
        raise InputError("this Forest carries no model predictor; Monte Carlo sampling needs the fitted model")
    n, d = X.shape
    k = forest.n_outputs
    mean = np.zeros((n, k))
    stderr = np.zeros((n, k))
    nonzero = np.zeros((n, k), dtype=np.int64)
    base = np.asarray(forest.predict_fn(X)).reshape(n, k)
    replicates = 8 if method == "qmc" else 1
    categories = split_boundaries(forest).n_categories
    per_rep = max(n_samples // replicates, 1)
    pending: list = []          # (row, its perturbed copies) not yet sent to the predictor

    def flush():
        rows = np.concatenate([xp for _, xp in pending])
        predicted = np.concatenate([np.asarray(forest.predict_fn(rows[a:a + batch_rows])).reshape(-1, k)
                                    for a in range(0, len(rows), batch_rows)])
        at = 0
        for i, xp in pending:
            gaps = (predicted[at:at + len(xp)] - base[i]) ** 2
            at += len(xp)
            nonzero[i] = np.count_nonzero(gaps, axis=0)
            if method == "monte_carlo":
                mean[i] = gaps.mean(axis=0)
                stderr[i] = gaps.std(axis=0, ddof=1) / np.sqrt(len(gaps))
            else:
                rep_means = gaps.reshape(replicates, per_rep, k).mean(axis=1)
                mean[i] = rep_means.mean(axis=0)
                stderr[i] = rep_means.std(axis=0, ddof=1) / np.sqrt(replicates)
        pending.clear()

    for i in range(n):
        feats = np.flatnonzero(masks[i])
        if len(feats) == 0:
            continue
        rng = _row_rng(root, row_offset + i)
        if method == "monte_carlo":
            values = np.column_stack([noise.draw(j, X[i, j], n_samples, rng, categories[j]) for j in feats])
        else:
            blocks = []
            for _ in range(replicates):
                u = qmc.Halton(d=len(feats), scramble=True, seed=rng).random(per_rep)
                u = np.clip(u, 1e-16, 1 - 1e-16)
                blocks.append(np.column_stack([noise.perturbed(j, X[i, j], u[:, c], categories[j])
                                               for c, j in enumerate(feats)]))
            values = np.vstack(blocks)
        xp = np.repeat(X[i:i + 1], len(values), axis=0)
        xp[:, feats] = values
        if pending and sum(len(p) for _, p in pending) + len(xp) > batch_rows:
            flush()
        pending.append((i, xp))
    if pending:
        flush()
    return mean, stderr, nonzero


def _check_ranking(ranking, n_rows: int, n_features: int, names=None) -> np.ndarray:
    """(m, n, d) int64 rankings from a (d,), (n, d) or (m, n, d) array of feature orders (indices
    in the model's feature order, or feature names)."""
    r = np.asarray(getattr(ranking, "ranking", ranking))
    if r.dtype.kind in "OUS":
        lookup = np.vectorize(lambda f: feature_index(f, names, n_features), otypes=[np.int64])
        r = lookup(r) if r.size else r.astype(np.int64)
    if r.ndim == 1:
        r = np.broadcast_to(r, (n_rows, len(r)))
    if r.ndim == 2:
        r = r[None]
    if r.ndim != 3 or r.shape[1:] != (n_rows, n_features) or r.shape[0] < 1:
        raise InputError(f"ranking must have shape ({n_features},), ({n_rows}, {n_features}) or "
                         f"(m, {n_rows}, {n_features}); got {np.shape(r)}")
    if not np.issubdtype(r.dtype, np.integer):
        raise InputTypeError(f"ranking must hold integer feature indices or feature names; got dtype {r.dtype}")
    if not np.all(np.sort(r, axis=2) == np.arange(n_features)):
        raise InputError("every ranking row must be a permutation of 0..d-1")
    return r.astype(np.int64)


def pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, prune=True, verbose=True,
         n_jobs=None, rho=None, sampled_from=None, n_samples=2000, random_state=None) -> np.ndarray:
    r"""Exact PGI² of a feature ranking of every row of ``X``.

    PGI² (Gajewski et al., eq. 3) is the mean squared prediction gap over the prefixes of the
    ranking π, most important feature first:

    .. math::

        \mathrm{PGI}^2(x, \pi) = \frac{1}{d} \sum_{k=1}^{d} \mathrm{PG}^2(x, \{\pi(1), \dots, \pi(k)\}).

    A ranking whose top features move the prediction the most scores highest.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows (a DataFrame is aligned by column name to the model's features). A row engine's
        collection (dask...) gives a lazy result.
    ranking : array-like of shape (d,), (n, d) or (m, n, d), or GreedyRanking
        Feature indices (or feature names) in the model's feature order, most important first:
        one ranking for every row (d,), one per row (n, d), or m stacked rankings of the same rows
        (m, n, d) to score several explanations at once. Each ranking row must be a permutation
        of 0..d-1. A row engine's ranking gives a lazy result.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian, as for :func:`xai_plugins.pg2`.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations), as for :func:`xai_plugins.pg2`.
    prune : bool, default True
        Certified pruning of the leaf-pair sums, as for :func:`xai_plugins.pg2`.
    verbose : bool, default True
        Progress bar on long calls, as for :func:`xai_plugins.pg2`.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).
    rho : float, array-like or None, default None
        Categorical features' redraw probability, as for :func:`xai_plugins.pg2`.
    sampled_from : int or None, default None
        In memory only: the prefix sets of at least this many features (the dearest for the exact
        method, whose reachable leaf pairs grow with the set) are estimated by Monte Carlo with
        ``n_samples`` draws through the model's own predictor instead, the others computed
        exactly; None: every set exact.
    n_samples : int, default 2000
        Monte Carlo draws per sampled set (an integer >= 2).
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
        Seed of the sampled sets: row i's sets draw from the i-th child of
        ``SeedSequence(random_state)``, each set from its own child of that.

    Returns
    -------
    ndarray of shape (n,) or (n, k)
        PGI² of each row: (n,) for single-output models, (n, k) otherwise. A stacked ranking
        (m, n, d) adds a leading axis of length m. Lazy on a row engine.

    Raises
    ------
    InputError
        A ranking of the wrong shape or whose rows are not permutations of 0..d-1, NaN (or the
        model's ``missing=`` sentinel) in a numeric feature of ``X`` (every feature is perturbed; a
        categorical one's missing value is an atom of its law, as in :func:`xai_plugins.pg2`),
        ``n_samples`` < 2, ``sampled_from`` on a row engine, or bad noise settings.
    InputTypeError
        A ranking that does not hold integer indices or feature names, a non-integer
        ``sampled_from``.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pg2 : PG² of one feature set.
    xai_plugins.greedy_pg2_ranking : A ranking with high PGI².
    xai_plugins.mean_pgi2 : Correctly rounded mean PGI² over the rows.
    xai_plugins.faithfulness : PGI² of the ranking by ``|attribution|`` of any explanation.

    Notes
    -----
    With a stacked ranking, a prefix set that several rankings of a row share (the full set
    always, often the first few) is computed once. An engine's ``X`` and/or ``ranking`` (dask...)
    gives a lazy result (``pgi2_block`` on each block).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> ranking = xp.greedy_pg2_ranking(model, X[:20], sigma=0.3).ranking
    >>> scores = xp.pgi2(model, X[:20], ranking, sigma=0.3)
    >>> scores.shape
    (20,)

    PGI² is the mean PG² over the ranking's prefixes:

    >>> prefixes = [xp.pg2(model, X[:1], ranking[0, :k + 1], sigma=0.3).value[0] for k in range(10)]
    >>> bool(np.isclose(np.mean(prefixes), scores[0]))
    True

    Two rankings of the same rows at once (shared prefixes computed once):

    >>> both = xp.pgi2(model, X[:20], np.stack([ranking, ranking[:, ::-1]]), sigma=0.3)
    >>> both.shape, bool(np.allclose(both[0], scores))
    ((2, 20), True)
    >>> bool(both[0].mean() > both[1].mean())      # the greedy order beats its reverse
    True
    """
    engine = engine_for(X, getattr(ranking, "ranking", ranking))
    if engine.lazy:
        if sampled_from is not None:
            raise InputError("pgi2(sampled_from=...) runs in memory only; on a row engine every set is exact "
                             "(leave sampled_from=None)")
        return _pgi2_on(engine, model, X, ranking, sigma, perturbation, background, prune, n_jobs, rho)
    forest, X, names = _prepare(model, X)
    d = forest.n_features
    _check_perturbed_finite(X, np.ones((1, d), dtype=np.uint8), forest.missing_value, forest.n_categories)
    r = _check_ranking(ranking, len(X), d, names)
    stacked = np.ndim(getattr(ranking, "ranking", ranking)) == 3
    m, n = r.shape[:2]
    position = np.empty_like(r)
    np.put_along_axis(position, r, np.broadcast_to(np.arange(d), r.shape), axis=2)
    # sets[i, a * d + k, j] = 1 iff feature j is among the first k+1 of ranking a of row i
    sets = (position[:, :, None, :] <= np.arange(d)[None, None, :, None]).astype(np.uint8)
    sets = sets.transpose(1, 0, 2, 3).reshape(n, m * d, d)
    if m == 1:      # one ranking: its d prefix sets are distinct, nothing to share
        mask, where = np.ascontiguousarray(sets), None
    else:
        mask, where = _shared_sets(sets)
    noise = make_perturbation(d, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels,
                              numeric_labels=forest.numeric_labels, rho=rho)
    sampled = None
    if sampled_from is not None:
        if isinstance(sampled_from, (bool, np.bool_)) or not isinstance(sampled_from, numbers.Integral):
            raise InputTypeError(f"sampled_from must be an int (a set size) or None; got {sampled_from!r}")
        n_samples = check_n_samples(n_samples)
        every = mask
        sampled = mask.sum(axis=2) >= max(int(sampled_from), 1)         # (n, u): the sets Monte Carlo estimates
        mask = np.where(sampled[:, :, None], 0, mask).astype(np.uint8)   # exact: an empty set costs nothing
    splits = split_boundaries(forest)
    table = cdf_table(splits, X, noise, range(d))
    exact_sizes = range(1, d + 1 if sampled is None else min(d + 1, max(int(sampled_from), 1)))
    seconds = m * n * sum(exact_seconds(forest, k) for k in exact_sizes) if verbose and n > 1 else 0.0
    values, _ = _batched(n, seconds, verbose, "PGI²", lambda a, b: _native.pg2(
        splits.c_forest, splits.cdf_offset, X[a:b], mask[a:b], table[a:b], n_jobs=n_jobs,
        prune_rtol=PRUNE_RTOL if prune else 0.0))
    if sampled is not None and sampled.any():
        _sample_sets(forest, X, sets_of=every, sampled=sampled, values=values,
                     noise=noise, n_samples=int(n_samples), root=row_seed(random_state))
    per_set = values if where is None else np.take_along_axis(values, where[:, :, None], axis=1)  # (n, m*d, k)
    scores = per_set.reshape(n, m, d, -1).mean(axis=2).transpose(1, 0, 2)   # (m, n, outputs)
    out = _squeeze(forest, scores)
    return out if stacked else out[0]


def _sample_sets(forest, X, *, sets_of, sampled, values, noise, n_samples, root) -> None:
    """Monte Carlo PG² of the ``sampled`` (n, u) sets among ``sets_of`` (n, u, d), written into ``values``
    (n, u, outputs): row i's sets draw from ``root``'s child i, set j from that child's child j."""
    for i in np.flatnonzero(sampled.any(axis=1)):
        which = np.flatnonzero(sampled[i])
        child = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (int(i),),
                                       pool_size=root.pool_size)
        mean, _, _ = _sampled_pg2(forest, np.repeat(X[i:i + 1], len(which), axis=0),
                                  np.ascontiguousarray(sets_of[i, which]), noise, n_samples, "monte_carlo", child)
        values[i, which] = mean


def _shared_sets(sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the distinct sets among ``sets`` (n, s, d) padded with empty sets (PG² = 0), and
    where each of the s sets is among them: ``(mask (n, u, d), where (n, s))``."""
    n, s, d = sets.shape
    unique, where = [], np.empty((n, s), dtype=np.int64)
    for i in range(n):
        u, inverse = np.unique(sets[i], axis=0, return_inverse=True)
        where[i] = inverse.reshape(-1)
        unique.append(u)
    mask = np.zeros((n, max(len(u) for u in unique), d), dtype=np.uint8)
    for i, u in enumerate(unique):
        mask[i, :len(u)] = u
    return mask, where


def greedy_pg2_ranking(model, X, sigma=0.3, *, perturbation=None, background=None, output=None, prune=True,
                       verbose=True, n_jobs=None, rho=None) -> GreedyRanking:
    r"""Greedy PG² ranking of the features of every row of ``X``, most important first.

    Step k adds the feature that most increases the squared prediction gap of the features chosen
    so far:

    .. math::

        \pi(k) = \operatorname*{arg\,max}_{j} \mathrm{PG}^2(x, \{\pi(1), \dots, \pi(k-1)\} \cup \{j\}),

    with PG² summed over the model's outputs (or taken for ``output`` only). Ties go to the
    lowest feature index (features the model never reaches tie at the end in index order).

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows (a DataFrame is aligned by column name to the model's features). A row engine's
        collection (dask...) gives a lazy result.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian, as for :func:`xai_plugins.pg2`.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations), as for :func:`xai_plugins.pg2`.
    output : int, str or None, default None
        Rank on this output only (an index or name: a class label, an output name); None sums PG²
        over the outputs.
    prune : bool, default True
        As for :func:`xai_plugins.pg2`. With pruning, each step first screens its candidates with
        a looser certified bound and evaluates again only those that could still be the best, so
        the ranking is the one the all-pairs sums give.
    verbose : bool, default True
        Progress bar on long calls, as for :func:`xai_plugins.pg2`.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).
    rho : float, array-like or None, default None
        Categorical features' redraw probability, as for :func:`xai_plugins.pg2`.

    Returns
    -------
    GreedyRanking
        ``.ranking`` (n, d): feature indices in the model's feature order, most important first;
        ``.pg2_path`` (n, d): ``pg2_path[i, k] = PG²(x_i, π_i(1..k+1))``. An engine's ``X``
        (dask...) gives a lazy GreedyRanking (``greedy_block`` on each block).

    Raises
    ------
    InputError
        NaN (or the model's ``missing=`` sentinel) in a numeric feature of ``X`` (every feature is
        perturbed; a categorical one's missing value is an atom of its law, as in :func:`pg2`), empty
        data or bad noise settings.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    InputIndexError
        An ``output`` index out of range.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.GreedyRanking : The result.
    xai_plugins.pgi2 : Scores the ranking.
    xai_plugins.shap.PG2Explainer : The greedy PG² gains as a ``shap.Explanation``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> result = xp.greedy_pg2_ranking(model, X[:5], sigma=0.3)
    >>> result.ranking.shape, result.pg2_path.shape
    ((5, 10), (5, 10))
    >>> bool(np.all(np.sort(result.ranking, axis=1) == np.arange(10)))   # a permutation per row
    True
    >>> first_two = result.ranking[0, :2]
    >>> bool(np.isclose(result.pg2_path[0, 1], xp.pg2(model, X[:1], first_two, sigma=0.3).value[0]))
    True
    """
    engine = engine_for(X)
    if engine.lazy:
        return _greedy_on(engine, model, X, sigma, perturbation, background, output, prune, n_jobs, rho)
    forest, X, _ = _prepare(model, X)
    _check_perturbed_finite(X, np.ones((1, forest.n_features), dtype=np.uint8), forest.missing_value,
                            forest.n_categories)
    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels,
                              numeric_labels=forest.numeric_labels, rho=rho)
    splits = split_boundaries(forest)
    table = cdf_table(splits, X, noise, range(forest.n_features))
    c = None if output is None else resolve_output(forest.output_names, output)
    weight = np.ones(forest.n_outputs)
    if c is not None:
        weight = np.zeros(forest.n_outputs)
        weight[c] = 1.0
    d = forest.n_features
    seconds = (len(X) * sum((d - k + 1) * exact_seconds(forest, k) for k in range(1, d + 1))
               if verbose and len(X) > 1 else 0.0)
    ranking, path = _batched(len(X), seconds, verbose, "greedy PG² ranking", lambda a, b: _native.greedy_pg2(
        splits.c_forest, splits.cdf_offset, X[a:b], table[a:b], weight, n_jobs=n_jobs,
        prune_rtol=PRUNE_RTOL if prune else 0.0))
    return GreedyRanking(ranking.astype(np.int64), path)


# --------------------------------------------------------------------------------------------
# block functions and the row engines (xai_plugins.engines): the same per-row work on any engine
# --------------------------------------------------------------------------------------------

def binary_perturbation(model, background, sigma=0.3, *, perturbation=None, rho=None, features=None) -> Perturbation:
    """Noise in which every 0/1 feature is perturbed by flipping it, for PG² and its relatives.

    The noise of :func:`xai_plugins.pg2` (``sigma`` in the background's standard deviations, or
    ``perturbation``; categorical features as always) in which each numeric feature whose
    ``background`` holds exactly two values {a, b} (a 0/1 indicator) is perturbed by the flip law
    instead of additive noise: x′_j keeps x_j with probability 1 − ρ_j, else is a or b with their
    frequencies in ``background``. PG² stays exact under it (each table entry is a sum over the
    two atoms, read as the model reads them).

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    background : array-like of shape (N, d) or DataFrame
        Background data (required): the two values of a binary feature and their frequencies come
        from it, and ``sigma`` is in its standard deviations.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale of the other features, in the background's standard deviations.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) of the other features instead of the Gaussian.
    rho : float, array-like of shape (d,) or None, default None
        ρ_j, scalar or per feature; default that of categorical features, ``P(|e_j| > 1/2)`` for the
        feature's noise in the units given (0.096 for σ = 0.3).
    features : int, str, sequence of them, or None, default None
        Names or indices of the features given the flip law, each of which must hold two values in
        ``background``; default every numeric feature that does.

    Returns
    -------
    Perturbation
        Pass it as ``perturbation=`` to :func:`xai_plugins.pg2`, :func:`xai_plugins.pgi2`,
        :func:`xai_plugins.greedy_pg2_ranking`, the explainers, on any row engine; its ``binary``
        maps each flipped feature to its two values and their frequencies.

    Raises
    ------
    InputError
        ``background`` is None, or a feature named in ``features`` does not hold exactly two
        values in it (or is categorical).
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pg2 : Takes the result as ``perturbation=``.

    Notes
    -----
    Explained rows must hold a or b in the flipped features.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)       # column 1 (sex) holds two values
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> noise = xp.binary_perturbation(model, X, sigma=0.3)
    >>> sorted(noise.binary)
    [1]
    >>> xp.pg2(model, X[:5], S=[1, 2], perturbation=noise).value.shape
    (5,)
    """
    forest = import_model(model)
    if background is None:
        raise InputError("binary_perturbation needs background data: the two values of a binary feature and their "
                         "frequencies come from it")
    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels, rho=rho)
    numeric = ~forest.categorical
    named = features is not None
    chosen = np.flatnonzero(numeric) if not named else np.array(sorted(
        {feature_index(f, forest.feature_names, forest.n_features)
         for f in ([features] if isinstance(features, (str, numbers.Integral)) else features)}), dtype=np.int64)
    binary = {}
    background = noise.background
    assert background is not None           # make_perturbation keeps the background it was given
    for j in chosen.tolist():
        column = background[:, j]
        values, counts = np.unique(column[~np.isnan(column)], return_counts=True)
        if len(values) == 2 and numeric[j]:
            binary[j] = (values, counts / counts.sum())
        elif named:
            raise InputError(f"feature {j} ({(forest.feature_names or [j] * forest.n_features)[j]}) is not binary: its "
                             f"background holds {len(values)} distinct values{'' if numeric[j] else ' (categorical)'}; "
                             "the flip law needs exactly two (leave it out of features=)")
    return Perturbation(noise.sigma, noise.dists, rho=noise.rho, background=background,
                        sigma_units=noise.sigma_units, binary=binary)


def noise_args(forest: Forest, sigma, perturbation, background, rho=None) -> dict:
    """Validate the noise on the driver; return it as ``dict(sigma=, perturbation=)`` keyword
    arguments of the block functions that give the same Perturbation without the background data
    (sigma already in absolute units), so nothing row-sized is shipped. A model with categorical
    features gets the Perturbation itself, its categories' laws (ρ, background frequencies) worked
    out here once."""
    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels,
                              numeric_labels=forest.numeric_labels, rho=rho)
    categories = forest.n_categories if forest.n_categories is not None else np.zeros(forest.n_features, np.int32)
    if categories.any() or noise.binary:
        shipped = Perturbation(noise.sigma, noise.dists, rho=noise.rho, sigma_units=noise.sigma_units,
                               binary=noise.binary)
        for j in np.flatnonzero(categories):
            shipped._laws[(int(j), int(categories[j]))] = noise.category_law(int(j), int(categories[j]))
        return dict(sigma=0.3, perturbation=shipped)
    if noise.dists is not None:
        return dict(sigma=0.3, perturbation=noise.dists)
    return dict(sigma=noise.sigma, perturbation=None)


def pg2_block(forest, start, X, *masks, S=None, method, n_samples, root, n_jobs, sigma, perturbation, prune,
              auto_rtol=None) -> np.ndarray:
    """PG² of a block of rows (first row ``start``): columns value (k), stderr (k), informative
    (k, 0/1) and the block's leaf-pair terms (in its first row). ``masks``: the block's per-row sets
    (else ``S``, shared). Sampled rows draw from :func:`row_seed` ``root``'s child ``start + i``;
    ``auto_rtol``: they are held to ``method="auto"``'s guarantee (:func:`exact_where_unshown`)."""
    S = masks[0].astype(bool) if masks else S
    k = forest.n_outputs
    if method == "exact":
        est = pg2(forest, X, S, sigma, perturbation=perturbation, method="exact", prune=prune, verbose=False,
                  n_jobs=n_jobs)
        value, stderr = est.value.reshape(len(X), k), est.stderr.reshape(len(X), k)
        informative, terms = np.ones((len(X), k), dtype=bool), est.pair_terms
    else:
        forest = import_model(forest)
        X, names = forest.rows(X)
        m = _set_masks(S, len(X), forest.n_features, names)
        _check_perturbed_finite(X, m, forest.missing_value, forest.n_categories)
        noise = make_perturbation(forest.n_features, sigma, perturbation, None, names=forest.feature_names)
        value, stderr, nonzero = _sampled_pg2(forest, X, m, noise, n_samples, method, root, row_offset=start)
        informative, terms = _informative(stderr, nonzero, m), 0
        if auto_rtol is not None:
            terms = exact_where_unshown(forest, X, m, noise, value, stderr, informative, auto_rtol, prune=prune,
                                        n_jobs=n_jobs)[1]
    col = np.zeros((len(X), 1))
    col[0, 0] = terms
    return np.concatenate([value, stderr, informative.astype(np.float64), col], axis=1)


def _per_row_sets(S) -> bool:
    """Whether an in-memory ``S`` holds one set per row."""
    if isinstance(S, (list, tuple)) and S and all(isinstance(r, (list, tuple, np.ndarray)) for r in S):
        return True
    return np.ndim(S) == 2 if not isinstance(S, (list, tuple)) or S else False


def _block_masks(S, *, d, names) -> np.ndarray:
    """One block of per-row sets as a boolean (b, d) mask."""
    return _set_masks(S, len(S), d, names).astype(bool)


def _int_sum(column) -> list:
    return [int(np.asarray(column).sum())]


def _first(total):
    return total[0]


def _pg2_on(engine, model, X, S, sigma, perturbation, background, method, n_samples, rtol, random_state, prune,
            n_jobs, rho=None):
    """:func:`pg2` on a lazy engine: :func:`pg2_block` mapped over the rows; ``method="auto"``
    decides from the first :data:`AUTO_PILOT_ROWS` rows."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    forest = import_model(model)
    rows, names = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    d, k = forest.n_features, forest.n_outputs
    noise = noise_args(forest, sigma, perturbation, background, rho)
    per_row, shared_S = [], None
    if engine.handles(S):
        per_row = [engine.by_rows(S, rows, "S", transform=functools.partial(_block_masks, d=d, names=names),
                                  width=d, dtype=bool)]
    elif _per_row_sets(S):
        per_row = [engine.by_rows(_set_masks(S, engine.n_rows(rows), d, names).astype(bool), rows, "S")]
    else:
        shared_S = _set_masks(S, 1, d, names)[0].astype(bool)
    reason = ""
    if method == "auto":
        head = engine.head(rows, AUTO_PILOT_ROWS)
        head_mask = (np.broadcast_to(shared_S, head.shape) if shared_S is not None
                     else engine.head(per_row[0], len(head))).astype(np.uint8)
        method, n_samples, reason = auto_method(forest, head, head_mask, make_perturbation(d, **noise), rtol,
                                                row_seed(random_state))
    root = None
    if method == "exact":
        shipped = engine.ship_forest(forest)
    else:
        n_samples = check_n_samples(n_samples)
        root = row_seed(random_state)
        shipped = engine.ship_forest(forest, with_model=True)
    out = engine.map_rows(pg2_block, rows, shipped, per_row, 3 * k + 1, S=shared_S, method=method,
                          n_samples=int(n_samples), root=root, n_jobs=n_jobs, prune=prune,
                          auto_rtol=rtol if reason and method != "exact" else None, **noise)
    shape = () if k == 1 else (k,)
    value, stderr = engine.columns(out, 0, k, shape=shape), engine.columns(out, k, 2 * k, shape=shape)
    informative = engine.columns(out, 2 * k, 3 * k, shape=shape, dtype=bool)
    terms = engine.reduce(_int_sum, [engine.columns(out, 3 * k, 3 * k + 1, shape=())], finish=_first,
                          dtype=np.int64)
    if reason and method != "exact":
        reason += (f"; rows whose samples do not show a relative standard error within {AUTO_ACCEPT:g} x rtol "
                   "are computed exactly")
    return engine.result(PG2Estimate, timed="seconds", value=value, stderr=stderr, method=method,
                         n_samples=0 if method == "exact" else int(n_samples), seconds=float("nan"),
                         pair_terms=terms, reason=reason, informative=informative)


def pgi2_block(forest, start, X, *rankings, ranking=None, stacked, n_jobs, sigma, perturbation, prune) -> np.ndarray:
    """PGI² of a block of rows: ``rankings`` the block's per-row rankings ((b, d), or (b, m, d) when
    ``stacked``), else ``ranking`` shared; (b, m * k) columns."""
    r = rankings[0] if rankings else ranking
    if stacked:
        r = np.moveaxis(r, 1, 0)                     # (b, m, d) -> (m, b, d)
    out = np.asarray(pgi2(forest, X, r, sigma, perturbation=perturbation, prune=prune, verbose=False,
                          n_jobs=n_jobs))
    if stacked:
        out = np.moveaxis(out, 0, 1)                 # (m, b[, k]) -> (b, m[, k])
    return out.reshape(len(X), -1)


def _pgi2_on(engine, model, X, ranking, sigma, perturbation, background, prune, n_jobs, rho=None):
    """:func:`pgi2` on a lazy engine (``X`` and/or ``ranking`` its collections)."""
    forest = import_model(model)
    d, k = forest.n_features, forest.n_outputs
    ranking = getattr(ranking, "ranking", ranking)
    ndim = len(ranking.shape) if hasattr(ranking, "shape") else np.ndim(ranking)
    if ndim not in (1, 2, 3):
        raise InputError(f"ranking must have shape ({d},), (n, {d}) or (m, n, {d}); got {ndim} dimensions")
    rows, names = engine.rows(X, forest.feature_names, d, forest.rows, like=(ranking, 1 if ndim == 3 else 0),
                              forest=forest)
    noise = noise_args(forest, sigma, perturbation, background, rho)
    m, per_row, shared = (ranking.shape[0] if ndim == 3 else 0), [], None
    if ndim == 1 and not engine.handles(ranking):
        shared = _check_ranking(ranking, 1, d, names)[0, 0]
    else:
        per_row = [engine.by_rows(ranking, rows, "ranking (axis 1)" if m else "ranking", axis=1 if m else 0)]
    out = engine.map_rows(pgi2_block, rows, engine.ship_forest(forest), per_row, max(m, 1) * k, ranking=shared,
                          stacked=bool(m), n_jobs=n_jobs, prune=prune, **noise)
    if m:
        return engine.columns(out, 0, m * k, shape=(m,) if k == 1 else (m, k), rows_axis=1)
    return engine.columns(out, 0, k, shape=() if k == 1 else (k,))


def greedy_block(forest, start, X, *, output, n_jobs, sigma, perturbation, prune) -> np.ndarray:
    """Greedy PG² ranking of a block of rows: (b, 2d) columns ranking, then the PG² path."""
    res = greedy_pg2_ranking(forest, X, sigma, perturbation=perturbation, output=output, prune=prune,
                             verbose=False, n_jobs=n_jobs)
    return np.concatenate([res.ranking.astype(np.float64), res.pg2_path.reshape(len(X), -1)], axis=1)


def _greedy_on(engine, model, X, sigma, perturbation, background, output, prune, n_jobs, rho=None):
    """:func:`greedy_pg2_ranking` on a lazy engine."""
    forest = import_model(model)
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    d = forest.n_features
    resolve_output(forest.output_names, output)      # validate on the driver
    noise = noise_args(forest, sigma, perturbation, background, rho)
    out = engine.map_rows(greedy_block, rows, engine.ship_forest(forest), [], 2 * d, output=output, n_jobs=n_jobs,
                          prune=prune, **noise)
    return engine.result(GreedyRanking, ranking=engine.columns(out, 0, d, dtype=np.int64),
                         pg2_path=engine.columns(out, d, 2 * d))


def _sum_block(values) -> list:
    v = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    return exact_column_sums(v) + [len(v)]


def _mean_finish(total, k):
    values = exact_mean(total[:-1], total[-1] << SUM_SCALE_BITS)
    return values[0] if k == 1 else values


def mean_pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, n_jobs=None):
    r"""Mean PGI² of a ranking over the rows of ``X``, correctly rounded.

    .. math::

        \frac{1}{n} \sum_{i=1}^{n} \mathrm{PGI}^2(x_i, \pi_i)

    computed with an exact sum and one rounding, so it is the same float in memory and on any row
    engine, for any blocking. On a lazy engine (dask, Spark) it is reduced per block without
    collecting rows.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d), DataFrame or a row engine's collection
        The rows (a DataFrame is aligned by column name to the model's features).
    ranking : array-like of shape (d,) or (n, d), or GreedyRanking
        As in :func:`xai_plugins.pgi2`, not stacked: one ranking per row.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations).
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Returns
    -------
    float or ndarray of shape (k,)
        In memory: a float (or a (k,) array for k outputs); on a lazy engine (dask...) a lazy
        scalar (or (k,) array).

    Raises
    ------
    InputError
        A stacked (m, n, d) ranking, or any input :func:`xai_plugins.pgi2` refuses.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pgi2 : PGI² per row.
    xai_plugins.distributed.random_rankings : Random rankings, the baseline PGI² is compared with.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> ranking = xp.greedy_pg2_ranking(model, X[:20], sigma=0.3)
    >>> mean = xp.mean_pgi2(model, X[:20], ranking, sigma=0.3)
    >>> isinstance(mean, float)
    True
    >>> bool(np.isclose(mean, xp.pgi2(model, X[:20], ranking, sigma=0.3).mean()))
    True
    """
    forest = import_model(model)
    k = forest.n_outputs
    r = getattr(ranking, "ranking", ranking)
    if (len(r.shape) if hasattr(r, "shape") else np.ndim(r)) == 3:
        raise InputError("mean_pgi2 takes one ranking per row, not a stack")
    scores = pgi2(forest, X, ranking, sigma, perturbation=perturbation, background=background, n_jobs=n_jobs)
    engine = engine_for(X, r)
    if not engine.lazy:
        return _mean_finish(_sum_block(scores), k)
    return engine.reduce(_sum_block, [scores], finish=functools.partial(_mean_finish, k=k),
                         shape=() if k == 1 else (k,))
