"""Which trees of the reference forest may replace which (predictive equivalence, §4.2-4.3).

Ψ(f) = {f' in F : f'(x) = f(x) for all training rows x}: trees with equal training predictions
(equal digests) form one equivalence class. The ε-Rashomon relaxation (§4.3) admits the trees
whose training predictions differ from f's on at most a share ε of the rows (classification,
predicted labels) or have mean squared difference <= ε (regression).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []      # internal module: the public names are in the API reference


class RashomonSwaps:
    """The trees each tree may be swapped for: its equivalence class, or with ``neighbours``
    ((T, T) bool, see :func:`neighbourhoods`) its ε-neighbourhood."""

    def __init__(self, digests, neighbours=None):
        _, group = np.unique(np.array(digests), return_inverse=True)
        self.group = group.ravel()
        self.n_groups = int(self.group.max()) + 1
        self.neighbours = neighbours

    def best(self, score) -> np.ndarray:
        """For every tree, the index of the highest-``score`` tree it may be swapped for (the first
        on ties)."""
        if self.neighbours is not None:
            return np.where(self.neighbours, score[None, :], -np.inf).argmax(axis=1)
        group = self.group
        order = np.lexsort((np.arange(len(score)), -score, group))
        g_sorted = group[order]
        first = np.r_[True, g_sorted[1:] != g_sorted[:-1]]
        best_of_group = np.empty(group.max() + 1, dtype=np.int64)
        best_of_group[g_sorted[first]] = order[first]
        return best_of_group[group]


def neighbourhoods(tables, epsilon: float, is_classifier: bool, pmap) -> np.ndarray:
    """(T, T) bool: pairs of trees of ``tables`` whose training predictions are within ``epsilon``
    (share of differing predicted labels, or mean squared difference); blocks of trees at a time."""
    T, n = tables.T, tables.n
    block = max(1, min(T, 2**26 // (8 * n)))
    starts = list(range(0, T, block))
    near = np.zeros((T, T), dtype=bool)

    def preds(a):
        trees = range(a, min(T, a + block))
        leaves = tables.training_leaves(trees, pmap)
        out = [tables.node_pred[leaves[t]] for t in trees]
        return np.array([p.argmax(axis=1) for p in out] if is_classifier else out)

    for i, a in enumerate(starts):
        Pa = preds(a)
        for b in starts[i:]:
            Pb = Pa if b == a else preds(b)
            if is_classifier:
                agree = sum((Pa == c).astype(np.float32) @ (Pb == c).T.astype(np.float32)
                            for c in range(tables.node_pred.shape[1]))
                dist = 1.0 - agree / n
            else:
                sa, sb = (Pa * Pa).sum(1), (Pb * Pb).sum(1)
                dist = np.maximum(sa[:, None] + sb[None, :] - 2.0 * Pa @ Pb.T, 0.0) / n
            ok = dist <= epsilon + 1e-12
            near[a:a + len(Pa), b:b + len(Pb)] = ok
            near[b:b + len(Pb), a:a + len(Pa)] = ok.T
    np.fill_diagonal(near, True)
    return near
