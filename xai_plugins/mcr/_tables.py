"""Per-node and per-tree tables of a forest over its training rows, read from the imported Forest."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .. import _native
from ..errors import InputError
from ._surrogates import SurrogateSplits

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the training leaves of every tree (int32, T x n) are kept across features when they fit in this
#: many bytes; otherwise they are recomputed for every feature, a block of trees at a time
LEAF_CACHE_BYTES = 256 * 2**20


class ForestTables:
    """A forest's node arrays and predictions, and its trees' training leaves.

    ``left``, ``right`` (children local to their tree), ``feature`` and ``threshold`` are the
    :class:`~xai_plugins.forest.Forest`'s arrays over all nodes (global ids; ``offsets[t]`` is
    tree t's first node, ``tree_of`` the tree of every node); ``node_pred`` is each node's class
    probabilities (classifiers) or value. The scikit-learn ``Tree`` objects ``trees`` must number
    their nodes like the Forest (checked).
    """

    def __init__(self, forest, estimators, X32, is_classifier: bool):
        self.trees = [est.tree_ for est in estimators]
        counts = np.diff(forest.tree_offset)
        if not np.array_equal(counts, [tree.node_count for tree in self.trees]):
            raise RuntimeError("internal error: the imported forest and the model's trees differ in size")
        self.forest, self.X32 = forest, X32
        self.X64 = np.ascontiguousarray(X32, dtype=np.float64)  # the C core's input (float32 values)
        self.n, self.T = X32.shape[0], len(self.trees)
        self.offsets = forest.tree_offset[:-1]
        self.tree_of = np.repeat(np.arange(self.T), counts)
        self.left, self.right = forest.left_child, forest.right_child
        self.feature, self.threshold = forest.feature, forest.threshold
        self.internal = self.left >= 0
        value = forest.value
        self.node_pred = (value / value.sum(axis=1, keepdims=True) if is_classifier
                          else np.ascontiguousarray(value[:, 0]))
        self._leaf_cache = [None] * self.T if self.T * self.n * 4 <= LEAF_CACHE_BYTES else None

    def leaves(self, t: int, X64=None) -> np.ndarray:
        """Global ids (int32) of the leaves the rows of ``X64`` (float64, C order; default the training
        rows) reach in tree ``t``, walked from the root by the C core (as scikit-learn's ``apply``)."""
        X64 = self.X64 if X64 is None else X64
        return _native.RerouteLayout(self.forest, t, np.arange(self.forest.n_features)).route(X64, None)[0]

    def training_leaves(self, part, pmap) -> dict:
        """``{t: global training leaves (int32)}`` for the trees ``part``: the cached ones, else
        computed (in parallel when ``pmap``, an :class:`~._parallel.OrderedMap`, is given)."""
        if self._leaf_cache is not None:
            return {t: self._leaf_cache[t] for t in part}
        return dict(zip(part, (pmap or map)(self.leaves, part)))

    @property
    def caches_leaves(self) -> bool:
        """Whether every tree's training leaves are kept (``LEAF_CACHE_BYTES``)."""
        return self._leaf_cache is not None

    def uses(self, feature, cols) -> np.ndarray:
        """Bool per tree: some internal node splits on a feature in ``cols`` (``feature`` per global
        node, e.g. ``self.feature`` or a transformed copy)."""
        return np.bincount(self.tree_of[self.internal & self.among(feature, cols)], minlength=self.T) > 0

    def among(self, feature, cols) -> np.ndarray:
        """Bool per entry of ``feature`` (feature ids): it is one of ``cols`` (one lookup per entry)."""
        table = np.zeros(self.forest.n_features, dtype=bool)
        table[cols] = True
        return table[feature]

    def permuted(self, cols, seed) -> np.ndarray:
        """The columns ``cols`` of the training rows jointly shuffled by the permutation drawn from
        ``seed``: float64 (n, len(cols)), C order (the new values the C core routes)."""
        perm = np.random.default_rng(seed).permutation(self.n)
        return np.ascontiguousarray(self.X64[:, cols][perm])

    def survey(self, loss, pmap, wanted=None) -> "TrainingSurvey":
        """One parallel pass over the trees on their training rows: checks that the forest was
        grown on these rows, fills the training-leaf cache and collects a :class:`TrainingSurvey`,
        whose surrogate splits serve the feature sets within ``wanted`` (bool per feature; None:
        every feature)."""
        tree_loss = np.empty(self.T)
        forest_sum = np.zeros((self.n, self.node_pred.shape[1]) if self.node_pred.ndim == 2 else self.n)
        digests, splits = [], []
        for t, (pred, loss_t, digest, (node, feat, thr, flip)) in enumerate(
                pmap(lambda t: self._survey_tree(t, loss, wanted), range(self.T))):
            forest_sum += pred
            tree_loss[t] = loss_t
            digests.append(digest)
            splits.append((node + self.offsets[t], feat, thr, flip))
        node, feature, threshold, flipped = (np.concatenate(a) for a in zip(*splits))
        surrogates = SurrogateSplits(node, feature, threshold, flipped, wanted)
        return TrainingSurvey(tree_loss, forest_sum, digests, surrogates)

    def _survey_tree(self, t, loss, wanted):
        """Tree t on the training rows: (predictions, summed loss, digest of the predictions,
        surrogate splits with local node ids)."""
        tree, n = self.trees[t], self.n
        g = self.leaves(t)
        leaf = g - self.offsets[t]
        counts = np.bincount(leaf, minlength=tree.node_count)
        is_leaf = tree.children_left < 0
        if tree.n_node_samples[0] != n or not np.array_equal(counts[is_leaf], tree.n_node_samples[is_leaf]):
            raise InputError(f"the forest was not fitted on this X: tree {t} was grown on "
                             f"{tree.n_node_samples[0]} rows and its leaves' row counts disagree with the "
                             f"{n} rows given (MCR needs the exact training data of a bootstrap=False forest)")
        if self._leaf_cache is not None:
            self._leaf_cache[t] = g
        pred = np.take(self.node_pred, g, axis=0)
        digest = hashlib.blake2b(np.ascontiguousarray(pred).tobytes(), digest_size=16).hexdigest()
        return pred, loss.tree_sum(g), digest, _native.surrogates(self.forest, t, self.X32, leaf, wanted)


@dataclass(frozen=True)
class TrainingSurvey:
    """The trees on their training rows: ``tree_loss`` (T,) each tree's summed loss,
    ``forest_sum`` the sum of the trees' predictions (T times the forest's), ``digests`` a hash of
    each tree's predictions (equal digests: predictively equivalent trees), ``surrogates`` every
    internal node's exact surrogate splits."""

    tree_loss: np.ndarray
    forest_sum: np.ndarray
    digests: list
    surrogates: SurrogateSplits
