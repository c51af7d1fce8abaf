"""The two passes of RF-MCR over the trees for one feature set X1.

Pass 1 (:func:`permutation_pass`) runs over the trees and, per tree, builds the C core's walk
layout of the original tree and of its S+ / S- versions once, then re-routes for every permutation
only the rows whose permuted values leave their training leaf's box (original trees) or that pass a
node changed by S+ / S- (transformed trees); with one permuted feature, a tree too large for the
cache looks its rows up in a leaf table instead (:func:`_leaf_table`). An S+ tree routes a row from
the leaf the original tree gives the permuted row: S+ only turns splits on other features into
splits on X1, so the row keeps that leaf exactly when its X1 values lie in the leaf's box in the S+
tree, which the C core checks (S- turns X1 splits into splits on others, which a box in X1 does not
check: its rows start from their training leaf). It yields every tree's loss increase under S+ and
S- and, per permutation, the reference forest and the forests F±_S on the permuted rows (O(K·n·C)
memory).

Pass 2 (:func:`boundary_forest`) swaps trees for their best Rashomon replacement (T+ / T-) and
re-evaluates only the trees whose weight changed, or the swapped forest from scratch when that
is cheaper (few equivalence classes).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import _native
from ._loss import model_reliance

__all__: list[str] = []      # internal module: the public names are in the API reference

#: trees per unit of parallel work; partial sums are formed per block and added in block order
TREE_BLOCK = 16
_VARIANTS = ("plus", "minus")
#: more moved rows than this are added to a 2-d sum in the C core (below, numpy's call costs less)
SCATTER_IN_C = 512
#: a tree of at least this many nodes is large: its 16-byte walk records overflow 1 MiB (half this
#: machine's L2 cache), so a walk waits on memory at every step. Only large trees are routed through
#: leaf tables, and only their leaves on the permuted rows are kept from pass 1 for pass 2 (a small
#: tree is walked again for less than the copies cost).
LARGE_TREE_NODES = 1 << 16
#: pass 1 keeps the large trees' leaves on the permuted rows for pass 2 when they take at most this
#: (int32 per tree, permutation and row; 1 GiB: 268 trees × 10 permutations × 100,000 rows)
KEPT_LEAVES_BYTES = 2**30


@dataclass(frozen=True)
class Reference:
    """The reference forest on its training rows, and how to evaluate trees.

    ``tables`` (:class:`~._tables.ForestTables`), ``loss`` (see :mod:`._loss`), ``tree_loss`` (T,)
    each tree's summed training loss, ``forest_sum`` the sum of the trees' training predictions,
    ``fit`` the forest's training predictions (``forest_sum / T``) and ``fit_loss`` their mean
    loss, ``pmap`` the :class:`~._parallel.OrderedMap` running trees in threads."""

    tables: object
    loss: object
    tree_loss: np.ndarray
    forest_sum: np.ndarray
    fit: np.ndarray
    fit_loss: float
    pmap: object

    def weighted_sums(self, variant, idx, cols, new_values, weights, known=None) -> list:
        """For each array of ``new_values`` (float64, one column per feature of ``cols``): the sum
        over the trees ``idx`` of the transformed forest ``variant`` of ``weights[i]`` times their
        predictions on the training rows whose features ``cols`` take those values, added in tree
        order (``cols`` every feature and ``new_values`` [X64]: the training rows themselves, routed
        from the root). Each tree's walk layout is built once for all the arrays; ``known``: {tree:
        its leaves for each array}, taken instead of routing the tree (pass 1's ``leaves``)."""
        def predict(t):
            if known and t in known:
                return [np.take(self.tables.node_pred, leaves, axis=0) for leaves in known[t]]
            start = self.tables.training_leaves([t], None)[t]
            layout = _native.RerouteLayout(self.tables.forest, t, cols, variant.splits)
            table = _leaf_table(layout, self.tables.X64, len(new_values))
            return [np.take(self.tables.node_pred, layout.route(self.tables.X64, start, nv, table=table)[0], axis=0)
                    for nv in new_values]

        totals = [np.zeros_like(self.forest_sum) for _ in new_values]
        for i, per_values in enumerate(self.pmap(predict, idx)):
            for total, p in zip(totals, per_values):
                total += weights[i] * p
        return totals


@dataclass
class PermutationPass:
    """Pass 1's results: ``tree_delta[v]`` (T,) each tree's summed loss increase under the
    permutations, averaged over them, after transform ``v`` ("plus" / "minus"); ``forest_sums[v]``
    one array per permutation, T times the predictions on the permuted rows of the reference forest
    (``v = "reference"``) or of F±_S; ``leaves[v]`` {tree: its leaves after transform ``v`` on each
    permuted array}, for every large tree (``LARGE_TREE_NODES``) that splits on X1 after it, when
    they fit in ``KEPT_LEAVES_BYTES`` (pass 2 routes the few other trees it needs again)."""

    tree_delta: dict
    forest_sums: dict
    leaves: dict


def permutation_pass(ref: Reference, cols, seeds, variants: dict) -> PermutationPass:
    """Pass 1 for the feature set ``cols``, ``variants`` the S+ / S- forests
    (:class:`~._surrogates.TransformedForest`) keyed "plus" / "minus"."""
    tables, K = ref.tables, len(seeds)
    run = np.flatnonzero(tables.uses(tables.feature, cols) | variants["plus"].changed | variants["minus"].changed)
    sums = {v: np.zeros(tables.T) for v in _VARIANTS}
    ref_acc = [ref.forest_sum.copy() for _ in range(K)]
    moved = {v: [np.zeros_like(ref.forest_sum) for _ in range(K)] for v in _VARIANTS}
    new_values = [tables.permuted(cols, seed) for seed in seeds]
    large = np.diff(tables.forest.tree_offset) >= LARGE_TREE_NODES
    keep = large & (sum(np.count_nonzero(large & variants[v].uses) for v in _VARIANTS) * K * tables.n * 4
                    <= KEPT_LEAVES_BYTES)
    leaves: dict = {v: {} for v in _VARIANTS}
    block = (max(1, len(run)) if tables.caches_leaves
             else max(TREE_BLOCK, 2**22 // tables.n // TREE_BLOCK * TREE_BLOCK))
    for a in range(0, len(run), block):
        part = run[a:a + block]
        train = tables.training_leaves(part, ref.pmap)
        job = partial(_tree_on_permutations, ref, cols, new_values, train, variants, keep)
        # every TREE_BLOCK trees' change of the reference forest is summed apart, tree by tree, then
        # added: fixed blocks reduced in order, so the sums do not depend on the number of threads
        change = [np.zeros_like(ref.forest_sum) for _ in range(K)]
        for i, (t, per_permutation) in enumerate(ref.pmap(job, part)):
            for k, (d_o, rows, delta, per_variant, kept) in enumerate(per_permutation):
                _scatter_add(change[k], rows, delta)
                for v, res in per_variant.items():
                    if res is None:
                        sums[v][t] += d_o
                    else:
                        sums[v][t] += res[0]
                        _scatter_add(moved[v][k], res[1], res[2])
                for v, leaves_v in kept.items():
                    leaves[v].setdefault(t, []).append(leaves_v)
            if (i + 1) % TREE_BLOCK == 0 or i + 1 == len(part):
                for k in range(K):
                    ref_acc[k] += change[k]
                    change[k][...] = 0.0
    forest_sums = {v: [r + d for r, d in zip(ref_acc, moved[v])] for v in _VARIANTS}
    forest_sums["reference"] = ref_acc
    return PermutationPass({v: s / K for v, s in sums.items()}, forest_sums, leaves)


def _tree_on_permutations(ref: Reference, cols, new_values, train, variants, keep, t):
    """Tree ``t`` on the training rows whose features ``cols`` take each array of ``new_values``
    (one walk layout per version of the tree, built once for all permutations): ``(t, per
    permutation (loss increase of the original tree, rows it moves, their change of prediction
    (from the C core), {variant: None when the transform left the tree unchanged, else (loss
    increase, rows re-routed, their change of prediction)}, {variant: every row's leaf} when
    ``keep[t]``, for the variants that split on ``cols``))``."""
    tables, loss, pred, X64 = ref.tables, ref.loss, ref.tables.node_pred, ref.tables.X64
    L = train[t]
    layout = _native.RerouteLayout(tables.forest, t, cols)
    # a transformed tree that no longer splits on cols sends every row to its training leaf: no walk
    walked = {v: _native.RerouteLayout(tables.forest, t, cols, variants[v].splits) for v in _VARIANTS
              if variants[v].changed[t] and variants[v].uses[t]}
    table = _leaf_table(layout, X64, len(new_values))
    walked_table = {v: _leaf_table(w, X64, len(new_values)) for v, w in walked.items()}

    def on_leaves(leaves, r, key=None):
        """(summed loss, predictions) of the tree's leaves ``leaves`` reached by the rows ``r``; with a
        ``key``, worked out once while ``r`` is every row (the same figures whoever asks)."""
        if key is None or not isinstance(r, slice):
            return loss.tree_sum(leaves, r), np.take(pred, leaves, axis=0)
        if key not in cache:
            cache[key] = loss.tree_sum(leaves, r), np.take(pred, leaves, axis=0)
        return cache[key]

    cache: dict = {}   # "training": the training leaves (every permutation); "original": this permutation's
    out = []
    for nv in new_values:
        g_o, rows, delta = layout.route(X64, L, nv, pred, table=table)
        d_o = loss.tree_sum(g_o[rows], rows) - loss.tree_sum(L[rows], rows)
        cache.pop("original", None)
        per_variant = {}
        kept = {v: g_o for v in _VARIANTS if keep[t] and variants[v].uses[t]}
        for v in _VARIANTS:
            variant = variants[v]
            if not variant.changed[t]:
                per_variant[v] = None
                continue
            r = _rows(variant.below[g_o])
            if walked_table.get(v) is not None:   # every row looked up: cheaper than selecting them
                g = walked[v].route(X64, None, nv, table=walked_table[v])[0][r]
            elif v in walked:   # S+ from the original tree's new leaf (see the module's docstring)
                g = walked[v].route(X64[r], (g_o if v == "plus" else L)[r], nv[r])[0]
            loss_v, pred_v = on_leaves(g, r) if v in walked else on_leaves(L[r], r, "training")
            loss_o, pred_o = on_leaves(g_o[r], r, "original")
            per_variant[v] = (d_o + loss_v - loss_o, r, pred_v - pred_o)
            if v in kept:   # rows below no changed node keep the original tree's leaf
                kept[v] = g_o.copy()
                kept[v][r] = g
        out.append((d_o, rows, delta, per_variant, kept))
    return t, out


def boundary_forest(ref: Reference, cols, seeds, variant, tree_delta, forest_sums, known, swap, sign: float,
                    epsilon: float, reliance: str) -> dict:
    """Pass 2 for one boundary forest: F+_T (``sign`` +1; ``variant`` the S+ forest, ``tree_delta``
    and ``forest_sums`` its pass-1 results) or F-_T (``sign`` -1, S-). Every tree is swapped for
    the member of its Rashomon set (``swap``, a :class:`~._rashomon.RashomonSwaps`) with the
    largest (+) / smallest (-) reliance. Returns the forest's reliance ``mr``, training loss
    ``loss`` and largest deviation from the reference's training predictions ``deviation``."""
    tables, T, K = ref.tables, ref.tables.T, len(seeds)
    mr = model_reliance(tree_delta / tables.n, ref.tree_loss / tables.n, reliance)
    w = np.bincount(swap.best(sign * mr), minlength=T).astype(np.float64)
    net = w - 1.0                                     # weight change of every tree under T±
    uses = variant.uses
    if np.count_nonzero((net != 0) & uses) <= np.count_nonzero((w > 0) & uses):
        coef, start0, start = net, ref.forest_sum, forest_sums
    else:
        coef, start0, start = w, 0.0, [0.0] * K
    dyn, fixed = np.flatnonzero((coef != 0) & uses), np.flatnonzero((coef != 0) & ~uses)
    every = np.arange(tables.forest.n_features)   # training rows routed in every feature: a real check
    base_dyn, = ref.weighted_sums(variant, dyn, every, [tables.X64], coef[dyn])
    fit = (start0 + ref.weighted_sums(variant, fixed, every, [tables.X64], coef[fixed])[0] + base_dyn) / T
    deviation = float(np.max(np.abs(fit - ref.fit)))
    if epsilon == 0 and deviation > 1e-9:
        raise RuntimeError(f"internal error: boundary forest F{'+' if sign > 0 else '-'} deviates from the "
                           f"reference on training data by {deviation:g} although epsilon = 0")
    train = ref.loss.forest_mean(fit)
    perm = 0.0
    moved = (ref.weighted_sums(variant, dyn, cols, [tables.permuted(cols, seed) for seed in seeds], coef[dyn],
                               known) if dyn.size else [0.0] * K)
    for k in range(K):
        P = (start[k] + (fit * T - start0 - base_dyn) + moved[k]) / T
        perm += ref.loss.forest_mean(P) - train
    return {"mr": float(model_reliance(perm / K, train, reliance)), "loss": train, "deviation": deviation}


def _leaf_table(layout, X64, permutations: int):
    """The leaf table (``RerouteLayout.table``) of the rows X64 when ``layout`` changes one feature and
    routing ``permutations`` of it through the table costs less than walking them; else None (walk).
    Only a tree too large for the cache gains (``LARGE_TREE_NODES``: a walk there waits on memory at
    every step; through a small tree it is a few nanoseconds a row). Measured on fully grown trees
    (``benchmarks/bench_reroute.py``), in walks of the permuted rows: a build costs about 1 + 0.15 E
    for E entries per row and a lookup 0.1 + 0.01 E; a table whose build and K lookups would come to
    more than 0.9 K walks (a margin for the machine's drift) is declined."""
    budget = int((0.8 * permutations - 1) / (0.15 + 0.01 * permutations))
    if len(layout.changed) != 1 or budget <= 0 or layout.n_nodes < LARGE_TREE_NODES:
        return None
    return layout.table(X64, budget)


def _scatter_add(target, rows, values) -> None:
    """``target[rows] += values`` for ``rows`` (distinct) an index array or a slice: the same sums,
    in the C core for many rows of a 2-d target (numpy's fancy-indexed add is slow there)."""
    if isinstance(rows, slice) or target.ndim == 1 or len(rows) <= SCATTER_IN_C:
        target[rows] += values
    else:
        _native.scatter_add(target, rows, values)


def _rows(mask):
    """Rows flagged in ``mask``: their indices, or all rows (a slice: no copies) when most are."""
    return slice(None) if np.count_nonzero(mask) > 0.6 * len(mask) else np.flatnonzero(mask)
