"""Agreement section: how similarly the explainers rank the features.

Kendall τ-b (:func:`scipy.stats.kendalltau`, ties allowed) and top-k overlap |A ∩ B| / k between
every pair of methods: on the global importances, and row by row on the per-row scores (then
averaged over the explained rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

#: entries of the (rows, d, d) sign arrays :func:`row_taus` builds at once
_TAU_BLOCK = 1 << 22


def _tau(a, b) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return np.nan
    return float(kendalltau(a, b).statistic)


def row_taus(A, B) -> np.ndarray:
    """Kendall τ-b between ``A[i]`` and ``B[i]`` for each row i of two (n, d) arrays (what
    :func:`scipy.stats.kendalltau` gives row by row, ties allowed): Σ_{j<l} s^A_{jl} s^B_{jl} / √(Σ|s^A| Σ|s^B|)
    with s_{jl} = sign(x_j − x_l), i.e. (concordant − discordant) pairs over the pairs untied in each. NaN for a
    row where either scores every feature alike (no order) or holds a NaN."""
    A, B = np.atleast_2d(np.asarray(A, dtype=float)), np.atleast_2d(np.asarray(B, dtype=float))
    n, d = A.shape
    out = np.full(n, np.nan)
    step = max(1, _TAU_BLOCK // max(d * d, 1))
    upper = np.triu(np.ones((d, d), dtype=bool), k=1)
    for lo in range(0, n, step):
        a, b = A[lo:lo + step], B[lo:lo + step]
        sa = np.sign(a[:, :, None] - a[:, None, :])[:, upper]
        sb = np.sign(b[:, :, None] - b[:, None, :])[:, upper]
        untied = np.abs(sa).sum(axis=1) * np.abs(sb).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:lo + step] = np.where(untied > 0, (sa * sb).sum(axis=1) / np.sqrt(untied), np.nan)
    return np.clip(out, -1.0, 1.0)


def top_k(scores, k: int) -> set:
    """Indices of the ``k`` largest scores (ties: lower index first)."""
    return set(np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k].tolist())


def _overlap(a, b, k: int) -> float:
    return len(top_k(a, k) & top_k(b, k)) / k


def _matrix(methods: list, pair_value) -> pd.DataFrame:
    out = pd.DataFrame(np.eye(len(methods)), index=methods, columns=methods)
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            out.loc[a, b] = out.loc[b, a] = pair_value(a, b)
    return out


def global_agreement(importances: dict, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kendall τ and top-``k`` overlap matrices between global importance vectors
    (``{method: Series}``). τ is NaN when a method gives every feature the same importance."""
    methods = list(importances)
    vec = {m: importances[m].to_numpy(dtype=float) for m in methods}
    return (_matrix(methods, lambda a, b: _tau(vec[a], vec[b])),
            _matrix(methods, lambda a, b: _overlap(vec[a], vec[b], k)))


def local_agreement(scores: dict, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Row-averaged Kendall τ and top-``k`` overlap between per-row scores (``{method: (n, d)}``);
    rows where a method's scores are all equal are left out of that pair's τ mean."""
    methods = list(scores)

    def mean_tau(a, b):
        taus = row_taus(scores[a], scores[b])
        return float(np.nanmean(taus)) if np.isfinite(taus).any() else np.nan

    def mean_overlap(a, b):
        return float(np.mean([_overlap(x, y, k) for x, y in zip(scores[a], scores[b])]))

    return _matrix(methods, mean_tau), _matrix(methods, mean_overlap)


def per_row_tau(scores: dict) -> np.ndarray:
    """Per explained row, the mean Kendall τ-b over every pair of methods (``{method: (n, d)}``);
    NaN for a row where no pair has a defined τ."""
    methods = list(scores)
    taus = np.array([row_taus(scores[a], scores[b]) for j, a in enumerate(methods) for b in methods[j + 1:]])
    n = len(next(iter(scores.values())))
    if not taus.size:
        return np.full(n, np.nan)
    defined = np.isfinite(taus).any(axis=0)
    out = np.full(n, np.nan)
    out[defined] = np.nanmean(taus[:, defined], axis=0)
    return out


def mean_off_diagonal(matrix: pd.DataFrame) -> float:
    """Average over distinct method pairs (NaN entries ignored)."""
    values = matrix.to_numpy(dtype=float)
    upper = values[np.triu_indices(len(values), k=1)]
    return float(np.nanmean(upper)) if np.isfinite(upper).any() else np.nan
