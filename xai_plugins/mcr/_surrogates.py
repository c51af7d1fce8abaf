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

__all__: list[str] = []      # internal module: the public names are in the API reference


@dataclass(frozen=True)
class TransformedForest:
    """S+ or S- of every tree of a forest for one feature set X1: the same trees (shape, leaves),
    other splits.

    ``forest``: the Forest; ``feature``, ``threshold`` (over all nodes) and ``flipped`` (None, or
    bool over all nodes: the node sends ``x <= threshold`` to its right child) the transformed
    splits; ``changed`` (T,): S± changed some node of the tree; ``uses`` (T,): the transformed tree
    splits on X1; ``below`` (n_nodes,): the node was changed or lies under a changed node. A row
    whose original leaf is not ``below`` reaches the same leaf in the transformed tree.
    """

    forest: object
    feature: np.ndarray
    threshold: np.ndarray
    flipped: np.ndarray | None
    changed: np.ndarray
    uses: np.ndarray
    below: np.ndarray

    @property
    def splits(self) -> tuple:
        """``(feature, threshold, flipped)``: this version of the trees for
        :class:`~xai_plugins._native.RerouteLayout`."""
        return self.feature, self.threshold, self.flipped

    def leaves(self, t: int, X64, start, cols, new_values=None) -> np.ndarray:
        """Global leaves (int32) of transformed tree ``t`` for the rows of ``X64`` (float64, C order)
        whose features ``cols`` take ``new_values`` (default: X64's own) and whose old values reach
        the global leaves ``start`` (the same in the transformed tree), routed by the C core.
        ``cols`` = every feature routes any rows exactly from any start leaves."""
        return _native.RerouteLayout(self.forest, t, cols, self.splits).route(X64, start, new_values)[0]


@dataclass(frozen=True)
class SurrogateSplits:
    """The exact surrogate splits of every internal node of a forest, sorted by (node, feature):
    global ``node`` id, surrogate ``feature``, ``threshold`` and ``flipped`` (see
    ``_native.surrogates``); ``wanted`` (bool per feature, or None: all): only the splits on a wanted
    feature or by one were kept, which serve the feature sets within ``wanted``."""

    node: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    flipped: np.ndarray
    wanted: np.ndarray | None = None

    def transform(self, tables, cols, plus: bool) -> TransformedForest:
        """S+ (``plus``) or S- of every tree of ``tables`` (a :class:`ForestTables`) for the
        feature set ``cols``: each node takes its first eligible surrogate (lowest feature id)."""
        if self.wanted is not None and not np.all(self.wanted[cols]):
            raise RuntimeError(f"internal error: surrogate splits kept for the features {np.flatnonzero(self.wanted)} "
                               f"cannot transform for {list(cols)}")
        node_in, sur_in = tables.among(tables.feature, cols)[self.node], tables.among(self.feature, cols)
        cand = (sur_in & ~node_in) if plus else (~sur_in & node_in)
        nodes, first = np.unique(self.node[cand], return_index=True)   # sorted, so grouped by tree
        pick = np.flatnonzero(cand)[first]
        feat, thr, flipped = tables.feature, tables.threshold, None
        if nodes.size:
            feat, thr = feat.copy(), thr.copy()
            feat[nodes], thr[nodes] = self.feature[pick], self.threshold[pick]
            flipped = np.zeros(len(feat), dtype=bool)
            flipped[nodes] = self.flipped[pick]
        changed = np.bincount(tables.tree_of[nodes], minlength=tables.T) > 0
        return TransformedForest(tables.forest, feat, thr, flipped, changed, tables.uses(feat, cols),
                                 _native.mark_below(tables.forest, nodes))
