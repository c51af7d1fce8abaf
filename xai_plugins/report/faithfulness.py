"""Faithfulness section: exact PGI² of every method's per-row ranking, and exact vs Monte Carlo PG².

PGI²(x, π) is computed exactly (:func:`xai_plugins.pgi2`) for each method's ranking of each
explained row, at every σ, next to a random-ranking baseline. Higher PGI² = perturbing the
features a method ranks first moves the prediction more = a more faithful ranking.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..prediction_gap import pg2, pgi2

MC_SAMPLES = (100, 1_000, 10_000)


def _column(ctx, values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values if values.ndim == 1 else values[:, ctx.output]


def random_rankings(ctx, n_rows: int) -> np.ndarray:
    """One uniformly random feature order per row (seeded by the audit's random state)."""
    rng = np.random.default_rng(ctx.random_state)
    return np.argsort(rng.random((n_rows, ctx.n_features)), axis=1)


def pgi2_scores(ctx, rows: np.ndarray, rankings: dict, sigmas) -> tuple[pd.DataFrame, dict]:
    """Exact PGI² of each ranking (``{method: (n_rows, d) int}``) at each σ.

    Returns a long table (method, sigma, mean, sd, median, rows) and the per-row values
    ``{(method, sigma): (n_rows,)}``.
    """
    X = ctx.X_test.to_numpy()[rows]
    methods = list(rankings)
    stacked = np.stack([rankings[m] for m in methods])   # one call per σ: shared prefixes computed once
    per_row = {}
    for sigma in sigmas:
        scores = pgi2(ctx.forest, X, stacked, sigma=sigma, background=ctx.background)
        for method, values in zip(methods, scores):
            per_row[(method, sigma)] = _column(ctx, values)
    records = [{"method": method, "sigma": sigma, "mean": v.mean(), "sd": v.std(ddof=1) if len(v) > 1 else 0.0,
                "median": float(np.median(v)), "rows": len(v)}
               for method in methods for sigma in sigmas for v in [per_row[(method, sigma)]]]
    return pd.DataFrame.from_records(records), per_row


def winners(table: pd.DataFrame) -> dict:
    """Per σ, the method (random baseline excluded) with the highest mean PGI²."""
    ranked = table[table["method"] != "random"]
    return {sigma: group.loc[group["mean"].idxmax(), "method"] for sigma, group in ranked.groupby("sigma")}


def win_rates(per_row: dict, sigma) -> pd.Series:
    """Share of rows on which each method has the highest PGI² at ``sigma`` (random excluded; ties shared)."""
    methods = [m for (m, s) in per_row if s == sigma and m != "random"]
    values = np.column_stack([per_row[(m, sigma)] for m in methods])
    best = np.isclose(values, values.max(axis=1, keepdims=True), rtol=1e-12, atol=0)
    return pd.Series((best / best.sum(axis=1, keepdims=True)).mean(axis=0), index=methods)


def monte_carlo_convergence(ctx, rows: np.ndarray, sigma: float, n_pairs: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exact PG² against Monte Carlo for ``n_pairs`` random (row, S) pairs at ``sigma``.

    Returns the convergence table (pair, row, |S|, n_samples, exact, mc, stderr, relative_error,
    seconds, exact_seconds) and the equal-time table: Monte Carlo with as many samples as fit in
    the exact method's time on the same pair.
    """
    rng = np.random.default_rng(ctx.random_state)
    X = ctx.X_test.to_numpy()
    noise = dict(sigma=sigma, background=ctx.background)
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
        n_equal = int(exact.seconds / per_sample[-1])
        if n_equal >= 2:
            mc = pg2(ctx.forest, x, S, method="monte_carlo", n_samples=n_equal, random_state=rng, **noise)
            value = float(_column(ctx, mc.value)[0])
            equal.append({"pair": pair, "row": row, "|S|": size, "exact": truth, "exact_seconds": exact.seconds,
                          "n_samples": n_equal, "mc": value, "relative_error": _relative(value, truth)})
        else:
            equal.append({"pair": pair, "row": row, "|S|": size, "exact": truth, "exact_seconds": exact.seconds,
                          "n_samples": n_equal, "mc": np.nan, "relative_error": np.nan})
    return pd.DataFrame.from_records(records), pd.DataFrame.from_records(equal)


def _relative(value: float, truth: float) -> float:
    return abs(value - truth) / abs(truth) if truth != 0 else abs(value - truth)
