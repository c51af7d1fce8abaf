"""Faithfulness section: exact PGI² of every method's per-row ranking, and exact vs Monte Carlo PG².

PGI²(x, π) is computed exactly (:func:`xai_plugins.pgi2`) for each method's ranking of each
explained row, at every σ, next to a random-ranking baseline (the floor) and the greedy PG² ranking
(a reference: a heuristic, not a bound). Higher PGI² = perturbing the features a method ranks first
moves the prediction more = a more faithful ranking.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean
from ..prediction_gap import pg2, pgi2

MC_SAMPLES = (100, 1_000, 10_000)


def _column(ctx, values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values if values.ndim == 1 else values[:, ctx.output]


def random_rankings(ctx, n_rows: int, seed: int) -> np.ndarray:
    """One uniformly random feature order per row: ``argsort`` of the rows of
    ``default_rng(seed).random((n_rows, d))`` (the same draw as
    :func:`xai_plugins.ranking_faithfulness.random_rankings`)."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_rows, ctx.n_features)), axis=1)


def pgi2_scores(ctx, rows: np.ndarray, rankings: dict, sigmas, labels=None,
                binary_sigma=None) -> tuple[pd.DataFrame, dict]:
    """Exact PGI² of each ranking (``{key: (n_rows, d) int}``) at each σ (``binary_sigma``: σ of the
    0/1 columns, see :meth:`~.context.AuditContext.sigma_vector`).

    Returns a long table (method, sigma, mean, sd, median, rows; see :func:`score_table`; methods
    named by ``labels[key]``, default the key) and the per-row values ``{(method, sigma): (n_rows,)}``.
    """
    X = ctx.X_test.to_numpy()[rows]
    methods = [key if labels is None else labels[key] for key in rankings]
    stacked = np.stack(list(rankings.values()))   # one call per σ: shared prefixes computed once
    per_row = {}
    for sigma in sigmas:
        scores = pgi2(ctx.forest, X, stacked, sigma=ctx.sigma_vector(sigma, binary_sigma), background=ctx.background,
                      verbose=ctx.progress)
        for method, values in zip(methods, scores):
            per_row[(method, sigma)] = _column(ctx, values)
    keys = list(per_row)
    values = np.column_stack([per_row[key] for key in keys])
    means = column_means(column_sums(values))
    sds = column_sds(squared_deviation_sums(values, means), len(values))
    medians = [float(np.median(values[:, j])) for j in range(len(keys))]
    return score_table(keys, means, sds, medians, len(values), methods, sigmas), per_row


def score_table(keys, means, sds, medians, n_rows, methods, sigmas) -> pd.DataFrame:
    """The long table (method, sigma, mean, sd, median, rows) of the per-row PGI² columns ``keys``
    ((method, sigma) pairs): exact statistics, the same floats in memory and on a cluster — the
    mean is the correctly rounded mean (exact sum, one rounding), sd (ddof=1) the square root of the
    correctly rounded mean of the squared deviations from it, the median exact."""
    where = {key: j for j, key in enumerate(keys)}
    records = [{"method": method, "sigma": sigma, "mean": float(means[where[(method, sigma)]]),
                "sd": float(sds[where[(method, sigma)]]), "median": float(medians[where[(method, sigma)]]),
                "rows": int(n_rows)}
               for method in methods for sigma in sigmas]
    return pd.DataFrame.from_records(records)


def column_sums(values) -> list:
    """Exact sums of the columns of ``values`` (rows, columns) and the row count (a block's share
    of :func:`column_means`; blocks add up exactly)."""
    values = np.asarray(values, dtype=np.float64)
    return exact_column_sums(values) + [len(values)]


def column_means(total) -> np.ndarray:
    """Correctly rounded column means from :func:`column_sums` (of one block or of all blocks added)."""
    if len(total) == 1:
        return np.zeros(0)
    return np.asarray(exact_mean(total[:-1], total[-1] << SUM_SCALE_BITS), dtype=np.float64)


def squared_deviation_sums(values, means) -> list:
    """Exact column sums of (value − mean)², each square rounded as numpy rounds it."""
    dev = np.asarray(values, dtype=np.float64) - np.asarray(means, dtype=np.float64)
    return exact_column_sums(dev * dev)


def column_sds(squares, n_rows: int) -> np.ndarray:
    """Standard deviations (ddof=1) from :func:`squared_deviation_sums`; 0 for one row."""
    if n_rows < 2:
        return np.zeros(len(squares))
    return np.sqrt(np.asarray(exact_mean(squares, (n_rows - 1) << SUM_SCALE_BITS), dtype=np.float64))


def share_sums(values, columns) -> list:
    """Per row, a share of 1 split among the ``columns`` holding the row's highest value (ties
    within 1e-12 relative shared); their exact column sums and the row count."""
    w = np.asarray(values, dtype=np.float64)[:, list(columns)]
    best = np.isclose(w, w.max(axis=1, keepdims=True), rtol=1e-12, atol=0)
    return column_sums(best / best.sum(axis=1, keepdims=True))


def winners(table: pd.DataFrame, exclude=("random",)) -> dict:
    """Per σ, the method with the highest mean PGI² (the methods in ``exclude`` — the random floor,
    the greedy PG² reference — left out)."""
    ranked = table[~table["method"].isin(list(exclude))]
    return {sigma: group.loc[group["mean"].idxmax(), "method"] for sigma, group in ranked.groupby("sigma")}


def win_rates(per_row: dict, sigma, exclude=("random",)) -> pd.Series:
    """Share of rows on which each method has the highest PGI² at ``sigma`` (``exclude`` left out;
    ties shared), the correctly rounded mean over rows."""
    methods = [m for (m, s) in per_row if s == sigma and m not in exclude]
    if not methods:
        return pd.Series(dtype=float)
    values = np.column_stack([per_row[(m, sigma)] for m in methods])
    return pd.Series(column_means(share_sums(values, range(len(methods)))), index=methods)


def monte_carlo_convergence(ctx, rows: np.ndarray, sigma: float, n_pairs: int, seed: int, binary_sigma=None,
                            equal_time: bool = False) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Exact PG² against Monte Carlo for ``n_pairs`` random (row, S) pairs at ``sigma``, every draw
    from ``seed``.

    Returns the convergence table (pair, row, |S|, n_samples, exact, mc, stderr, relative_error,
    seconds, exact_seconds; the sample counts are fixed, so every number but the seconds is the same
    on any machine) and, with ``equal_time``, the equal-time table: Monte Carlo with as many samples
    as fit in the exact method's time on the same pair (a machine-dependent count), else None.
    """
    rng = np.random.default_rng(seed)
    X = ctx.X_test.to_numpy()
    noise = dict(sigma=ctx.sigma_vector(sigma, binary_sigma), background=ctx.background)
    records, equal = [], []
    for pair in range(n_pairs):
        row = int(rows[rng.integers(len(rows))])
        size = int(rng.integers(1, max(2, ctx.n_features // 2) + 1))
        S = np.sort(rng.choice(ctx.n_features, size, replace=False))
        x = X[row:row + 1]
        pg2(ctx.forest, x, S, **noise)  # warm-up: keeps one-off import costs out of the timing
        exact = pg2(ctx.forest, x, S, **noise)
        truth = float(_column(ctx, exact.value)[0])
        per_sample = []
        for n in MC_SAMPLES:
            mc = pg2(ctx.forest, x, S, method="monte_carlo", n_samples=n, random_state=rng, **noise)
            value = float(_column(ctx, mc.value)[0])
            per_sample.append(mc.seconds / n)
            records.append({"pair": pair, "row": row, "|S|": size, "n_samples": n, "exact": truth, "mc": value,
                            "stderr": float(_column(ctx, mc.stderr)[0]), "relative_error": _relative(value, truth),
                            "seconds": mc.seconds, "exact_seconds": exact.seconds})
        if not equal_time:
            continue
        n_equal = int(exact.seconds / per_sample[-1])
        if n_equal >= 2:
            mc = pg2(ctx.forest, x, S, method="monte_carlo", n_samples=n_equal, random_state=rng, **noise)
            value = float(_column(ctx, mc.value)[0])
            equal.append({"pair": pair, "row": row, "|S|": size, "exact": truth, "exact_seconds": exact.seconds,
                          "n_samples": n_equal, "mc": value, "relative_error": _relative(value, truth)})
        else:
            equal.append({"pair": pair, "row": row, "|S|": size, "exact": truth, "exact_seconds": exact.seconds,
                          "n_samples": n_equal, "mc": np.nan, "relative_error": np.nan})
    return pd.DataFrame.from_records(records), pd.DataFrame.from_records(equal) if equal_time else None


def _relative(value: float, truth: float) -> float:
    return abs(value - truth) / abs(truth) if truth != 0 else abs(value - truth)
