"""PG²'s view of a Forest's splits (:class:`SplitBoundaries`): where the CDF tables are read."""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field

import numpy as np

from .. import _native
from ..forest import Forest

__all__: list[str] = []

#: How many perturbed-feature sets a model's :class:`SplitBoundaries` remembers the CDF-table columns of.
COLUMN_SETS_KEPT = 1024


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

