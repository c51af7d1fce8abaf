"""Exact surrogate splits and the S+ / S- transforms of RF-MCR (eq. 5 and 11).

At an internal node another feature g is an exact surrogate when some threshold on g reproduces
the node's partition of the training rows that reach it, in either orientation, under
scikit-learn's ``float32(x) <= t`` rule. S+ replaces a node's feature by a surrogate from the
permuted set X1; S- replaces an X1 feature by a surrogate outside X1. Every training row reaches
the same leaf in the transformed tree, so the transformed trees predict the training data exactly
as before. The C core finds the surrogates (``_native.surrogates``): every node's box of training
rows, children before parents, then the two children's boxes compared feature by feature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native


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
    ``_native.surrogates``)."""

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
