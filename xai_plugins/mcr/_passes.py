"""The two passes of RF-MCR over the trees for one feature set X1.

Pass 1 (:func:`permutation_pass`) runs over blocks of trees and, per permutation, re-routes only
the rows whose permuted values leave their training leaf's box (original trees, in the C core) or
that pass a node changed by S+ / S- (transformed trees). It yields every tree's loss increase
under S+ and S- and, per permutation, the reference forest and the forests F±_S on the permuted
rows (O(K·n·C) memory).

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

#: trees per unit of parallel work; partial sums are formed per block and added in block order
TREE_BLOCK = 16
_VARIANTS = ("plus", "minus")


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

    def weighted_sum(self, variant, idx, X64, cols, weights) -> np.ndarray:
        """Sum over the trees ``idx`` of the transformed forest ``variant`` of ``weights[i]`` times
        their predictions on ``X64`` (float64), added in tree order: the training rows with the
        features ``cols`` changed (every feature: any rows)."""
        def predict(t):
            start = self.tables.training_leaves([t], None)[t]
            return np.take(self.tables.node_pred, variant.leaves(t, X64, start, cols), axis=0)

        total = np.zeros_like(self.forest_sum)
        for i, p in enumerate(self.pmap(predict, idx)):
            total += weights[i] * p
        return total


@dataclass
class PermutationPass:
    """Pass 1's results: ``tree_delta[v]`` (T,) each tree's summed loss increase under the
    permutations, averaged over them, after transform ``v`` ("plus" / "minus"); ``forest_sums[v]``
    one array per permutation, T times the predictions on the permuted rows of the reference forest
    (``v = "reference"``) or of F±_S."""

    tree_delta: dict
    forest_sums: dict


def permutation_pass(ref: Reference, cols, seeds, variants: dict) -> PermutationPass:
    """Pass 1 for the feature set ``cols``, ``variants`` the S+ / S- forests
    (:class:`~._surrogates.TransformedForest`) keyed "plus" / "minus"."""
    tables, K = ref.tables, len(seeds)
    run = np.flatnonzero(tables.uses(tables.feature, cols) | variants["plus"].changed | variants["minus"].changed)
    sums = {v: np.zeros(tables.T) for v in _VARIANTS}
    ref_acc = [ref.forest_sum.copy() for _ in range(K)]
    moved = {v: [np.zeros_like(ref.forest_sum) for _ in range(K)] for v in _VARIANTS}
    block = (max(1, len(run)) if tables.caches_leaves
             else max(TREE_BLOCK, 2**22 // tables.n // TREE_BLOCK * TREE_BLOCK))
    for a in range(0, len(run), block):
        part = run[a:a + block]
        train = tables.training_leaves(part, ref.pmap)
        blocks = [part[b:b + TREE_BLOCK] for b in range(0, len(part), TREE_BLOCK)]
        for k, seed in enumerate(seeds):
            job = partial(_block_on_permutation, ref, cols, tables.permuted(cols, seed).astype(np.float64), train,
                          variants)
            # fixed blocks reduced in order: the sums do not depend on the number of threads
            for change, results in ref.pmap(job, blocks):
                ref_acc[k] += change
                for t, d_o, per_variant in results:
                    for v, res in per_variant.items():
                        if res is None:
                            sums[v][t] += d_o
                        else:
                            sums[v][t] += res[0]
                            moved[v][k][res[1]] += res[2]
    forest_sums = {v: [r + d for r, d in zip(ref_acc, moved[v])] for v in _VARIANTS}
    forest_sums["reference"] = ref_acc
    return PermutationPass({v: s / K for v, s in sums.items()}, forest_sums)


def _block_on_permutation(ref: Reference, cols, X64, train, variants, trees):
    """A fixed block of ``trees`` on the permuted rows ``X64`` (float64): the
    block's summed change of the reference forest's predictions (accumulated in C, in tree order)
    and per tree ``(t, loss increase, {variant: None when the transform left the tree unchanged,
    else (loss increase, rows re-routed, their change of prediction)})``."""
    tables, loss = ref.tables, ref.loss
    change = np.zeros_like(ref.forest_sum)
    results = []
    for t in trees:
        L = train[t]
        # C core: a row changes leaf only if a permuted value leaves its training leaf's box
        g_o, rows = _native.reroute(tables.forest, t, X64, cols, L, tables.node_pred, change)
        d_o = loss.tree_sum(g_o[rows], rows) - loss.tree_sum(L[rows], rows)
        per_variant = {}
        for v in _VARIANTS:
            variant = variants[v]
            if not variant.changed[t]:
                per_variant[v] = None
                continue
            r = _rows(variant.below[g_o])
            g = _variant_leaves(variant, t, X64[r], L[r], cols)
            per_variant[v] = (d_o + loss.tree_sum(g, r) - loss.tree_sum(g_o[r], r), r,
                              np.take(tables.node_pred, g, axis=0) - np.take(tables.node_pred, g_o[r], axis=0))
        results.append((t, d_o, per_variant))
    return change, results


def _variant_leaves(variant, t, X64, start, cols):
    """Leaves of the transformed tree ``t`` (see :meth:`~._surrogates.TransformedForest.leaves`) for
    rows that differ from their training rows only in ``cols``: a tree that no longer splits on
    ``cols`` sends every such row to its training leaf ``start`` without a walk."""
    return variant.leaves(t, X64, start, cols) if variant.uses[t] else start


def boundary_forest(ref: Reference, cols, seeds, variant, tree_delta, forest_sums, swap, sign: float,
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
    base_dyn = ref.weighted_sum(variant, dyn, tables.X64, every, coef[dyn])
    fit = (start0 + ref.weighted_sum(variant, fixed, tables.X64, every, coef[fixed]) + base_dyn) / T
    deviation = float(np.max(np.abs(fit - ref.fit)))
    if epsilon == 0 and deviation > 1e-9:
        raise RuntimeError(f"internal error: boundary forest F{'+' if sign > 0 else '-'} deviates from the "
                           f"reference on training data by {deviation:g} although epsilon = 0")
    train = ref.loss.forest_mean(fit)
    perm = 0.0
    for k, seed in enumerate(seeds):
        moved = (ref.weighted_sum(variant, dyn, tables.permuted(cols, seed).astype(np.float64), cols, coef[dyn])
                 if dyn.size else 0.0)
        P = (start[k] + (fit * T - start0 - base_dyn) + moved) / T
        perm += ref.loss.forest_mean(P) - train
    return {"mr": float(model_reliance(perm / K, train, reliance)), "loss": train, "deviation": deviation}


def _rows(mask):
    """Rows flagged in ``mask``: their indices, or all rows (a slice: no copies) when most are."""
    return slice(None) if np.count_nonzero(mask) > 0.6 * len(mask) else np.flatnonzero(mask)
