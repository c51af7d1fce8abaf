"""Exact surrogate splits and the S+ / S- transforms of RF-MCR (eq. 5 and 11).

At an internal node another feature g is an exact surrogate when some threshold on g reproduces
the node's partition of the training rows that reach it, in either orientation, under
scikit-learn's ``float32(x) <= t`` rule. S+ replaces a node's feature by a surrogate from the
permuted set X1; S- replaces an X1 feature by a surrogate outside X1. Every training row reaches
the same leaf in the transformed tree, so the transformed trees predict the training data exactly
as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native


def tree_surrogates(tree, X32, leaf):
    """Exact surrogate splits of every internal node of the scikit-learn ``tree``, whose training
    rows ``X32`` reach the (local) leaves ``leaf``: arrays (node, feature, threshold, flipped),
    sorted by node then feature. ``flipped`` means the surrogate sends the node's left rows to
    ``x > threshold``; the threshold is the midpoint between the two children's rows on g."""
    left, right, feat = tree.children_left, tree.children_right, tree.feature
    n_nodes, d = tree.node_count, X32.shape[1]
    order = np.argsort(leaf.astype(np.uint16) if n_nodes <= 2**16 else leaf, kind="stable")  # radix sort
    sleaf = leaf[order]
    starts = np.flatnonzero(np.r_[True, sleaf[1:] != sleaf[:-1]])
    xs = X32[order]
    lo = np.empty((n_nodes, d), dtype=np.float32)   # per node: the box of the training rows reaching it
    hi = np.empty((n_nodes, d), dtype=np.float32)
    lo[sleaf[starts]] = np.minimum.reduceat(xs, starts, axis=0)
    hi[sleaf[starts]] = np.maximum.reduceat(xs, starts, axis=0)
    levels, frontier = [], np.array([0])
    while frontier.size:
        inner = frontier[left[frontier] >= 0]
        if inner.size:
            levels.append(inner)
        frontier = np.concatenate([left[inner], right[inner]])
    for inner in reversed(levels):  # children before parents
        lo[inner] = np.minimum(lo[left[inner]], lo[right[inner]])
        hi[inner] = np.maximum(hi[left[inner]], hi[right[inner]])
    inner = np.flatnonzero(left >= 0)
    L, R = left[inner], right[inner]
    hi_l, lo_l, hi_r, lo_r = hi[L], lo[L], hi[R], lo[R]
    free = np.ones((inner.size, d), dtype=bool)
    free[np.arange(inner.size), feat[inner]] = False
    # rows of one child all <= rows of the other on g: a threshold between them separates the
    # children (left child below: not flipped); both cannot hold for non-empty children
    flipped = (hi_r < lo_l) & free
    i, g = np.nonzero(((hi_l < lo_r) & free) | flipped)      # sorted by node, then feature
    flip = flipped[i, g]
    below, above = np.where(flip, hi_r[i, g], hi_l[i, g]), np.where(flip, lo_l[i, g], lo_r[i, g])
    thr = (below.astype(np.float64) + above.astype(np.float64)) / 2.0
    return inner[i], g, thr, flip


class VariantNodes:
    """A Forest with other node arrays: ``left_child``, ``right_child``, ``feature`` and
    ``threshold`` are given (global ids, children local to their tree, as in the Forest); every other
    field is the Forest's. The C core reads it as it reads a Forest (``_native.reroute``)."""

    def __init__(self, forest, left_child, right_child, feature, threshold):
        self._forest = forest
        self.left_child, self.right_child, self.feature, self.threshold = left_child, right_child, feature, threshold

    def __getattr__(self, name):
        return getattr(self._forest, name)


@dataclass(frozen=True)
class TransformedForest:
    """S+ or S- of every tree of a forest for one feature set X1.

    ``nodes``: the Forest, or a :class:`VariantNodes` with the transformed splits where
    ``changed``; ``changed`` (T,): S± changed some node of the tree; ``uses`` (T,): the transformed
    tree splits on X1; ``below`` (n_nodes,): the node was changed or lies under a changed node. A row
    whose original leaf is not ``below`` reaches the same leaf in the transformed tree.
    """

    nodes: object
    changed: np.ndarray
    uses: np.ndarray
    below: np.ndarray

    def leaves(self, t: int, X64, start, cols) -> np.ndarray:
        """Global leaves (int32) of transformed tree ``t`` for the rows of ``X64`` (float64, C order),
        which differ from the training rows only in the features ``cols`` and whose training rows
        reach the global leaves ``start`` (the same in the transformed tree): routed by the C core,
        a row inside its training leaf's box in ``cols`` keeps that leaf. ``cols`` = every feature
        routes any rows exactly from any start leaves."""
        return _native.reroute(self.nodes, t, X64, cols, start)[0]


@dataclass(frozen=True)
class SurrogateSplits:
    """The exact surrogate splits of every internal node of a forest, sorted by (node, feature):
    global ``node`` id, surrogate ``feature``, ``threshold`` and ``flipped`` (see
    :func:`tree_surrogates`)."""

    node: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    flipped: np.ndarray

    def transform(self, tables, cols, plus: bool) -> TransformedForest:
        """S+ (``plus``) or S- of every tree of ``tables`` (a :class:`ForestTables`) for the
        feature set ``cols``: each node takes its first eligible surrogate (lowest feature id)."""
        node_in = np.isin(tables.feature[self.node], cols)
        sur_in = np.isin(self.feature, cols)
        cand = (sur_in & ~node_in) if plus else (~sur_in & node_in)
        nodes, first = np.unique(self.node[cand], return_index=True)   # sorted, so grouped by tree
        pick = np.flatnonzero(cand)[first]
        feat = tables.feature.copy()
        feat[nodes] = self.feature[pick]
        changed = np.bincount(tables.tree_of[nodes], minlength=tables.T) > 0
        nodes_view = tables.forest
        if nodes.size:
            thr, left, right = tables.threshold.copy(), tables.left.copy(), tables.right.copy()
            thr[nodes] = self.threshold[pick]
            # a flipped surrogate sends the node's left rows to x > threshold: swap the children
            swap = nodes[self.flipped[pick]]
            left[swap], right[swap] = tables.right[swap], tables.left[swap]
            nodes_view = VariantNodes(tables.forest, left, right, feat, thr)
        return TransformedForest(nodes_view, changed, tables.uses(feat, cols), _below(tables, nodes))


def _below(tables, nodes):
    """Bool per global node: it is one of ``nodes`` or lies under one."""
    below = np.zeros(len(tables.left), dtype=bool)
    below[nodes] = True
    for inner in tables.levels:   # parents before children
        off = tables.offsets[tables.tree_of[inner]]
        below[tables.left[inner] + off] |= below[inner]
        below[tables.right[inner] + off] |= below[inner]
    return below
