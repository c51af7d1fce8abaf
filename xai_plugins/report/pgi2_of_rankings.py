"""Faithfulness section: exact PGI² of every method's per-row ranking, and exact vs Monte Carlo PG².

PGI²(x, π) is computed exactly (:func:`xai_plugins.pgi2`) for each method's ranking of each
explained row, at every σ, next to a random-ranking baseline (the floor) and the greedy PG² ranking
(a reference: a heuristic, not a bound). Higher PGI² = perturbing the features a method ranks first
moves the prediction more = a more faithful ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engines import engine_for
from ..engines.base import pack
from ..engines.method import Output, Plan, RowMethod
from ..engines.runner import outputs
from ..exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean
from ..prediction_gap import pg2, pgi2

__all__: list[str] = []      # internal module: the public names are in the API reference

MC_SAMPLES = (100, 1_000, 10_000)


def _column(ctx, values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values if values.ndim == 1 else values[:, ctx.output]


@dataclass
class Scores:
    """What :func:`pgi2_scores` gives: the long ``table`` (method, sigma, mean, sd, median, rows; see
    :func:`score_table`), the ``win_rate`` per method at σ_ref, the per-row PGI² ``per_row``
    ``{(method, σ): (n_rows,)}``, the per-row PG² with every feature perturbed ``every`` ``{σ: (n_rows,)}``
    and its correctly rounded mean ``scale`` ``{σ: float}`` (the unit of the dimensionless shares); per-row
    values in the order of the rows."""

    table: pd.DataFrame
    win_rate: pd.Series
    per_row: dict
    every: dict
    scale: dict


def pgi2_scores(ctx, X, rankings: dict, sigmas, sigma_ref, exclude=("random",), binary_sigma=None, compute=None,
                sampled_from=None, n_samples=2000) -> Scores:
    """Exact PGI² of each ranking (``{method: (n_rows, d) int}``, a row engine's collections like the
    rows ``X``) and PG² with every feature perturbed, at each σ (``binary_sigma``: σ of the 0/1 columns,
    see :meth:`~.context.AuditContext.sigma_vector`), scored by the engine in one pass over the rows and
    brought back: one float per row, ranking and σ, which the verdict's bootstrap intervals resample
    (``compute``: the engine's compute, bound to its client). Every statistic is then computed from
    those values the same way on every engine (see :class:`Scores`); the methods in ``exclude`` are left
    out of the win rates. ``sampled_from`` / ``n_samples``: the prefix sets of at least ``sampled_from``
    features by Monte Carlo (see :func:`~xai_plugins.prediction_gap.pgi2`), each σ from its own seeded
    stream."""
    engine = engine_for(X, *rankings.values())
    methods, d = list(rankings), ctx.n_features
    # (m, n, d): one call per σ, shared prefixes computed once
    stacked = _side_by_side(engine, X, None, [rankings[m] for m in methods], (len(methods), d), np.int64, rows_axis=1)
    columns, keys, every = [], [], np.arange(d)
    for j, sigma in enumerate(sigmas):
        sampling = {} if sampled_from is None else dict(sampled_from=sampled_from, n_samples=n_samples,
                                                        random_state=ctx.seed(f"faithfulness Monte Carlo {j}"))
        scores = pgi2(ctx.forest, X, stacked, **ctx.noise(sigma, binary_sigma), verbose=ctx.progress,
                      output=ctx.output, **sampling)
        columns.append(engine.by_rows(scores, X, "the PGI² scores", axis=1))
        keys += [(m, sigma) for m in methods]
    for j, sigma in enumerate(sigmas):
        sampling = ({} if sampled_from is None or sampled_from > d else
                    dict(method="monte_carlo", n_samples=n_samples))
        scale = pg2(ctx.forest, X, every, **ctx.noise(sigma, binary_sigma), verbose=False, output=ctx.output,
                    random_state=ctx.seed(f"faithfulness all features {j}"), **sampling).value
        columns.append(engine.by_rows(scale, X, "the PG² of every feature"))
    (values,) = (compute or engine.compute)(_side_by_side(engine, X, None, columns, (len(keys) + len(sigmas),)))
    values = np.asarray(values, dtype=np.float64)
    n, means = len(values), column_means(column_sums(values))
    scored = values[:, :len(keys)]
    wins = [j for j, (m, s) in enumerate(keys) if s == sigma_ref and m not in exclude]
    table = score_table(keys, means, column_sds(squared_deviation_sums(scored, means[:len(keys)]), n),
                        np.median(scored, axis=0), n, methods, sigmas)
    win_rate = (pd.Series(column_means(share_sums(scored, wins)), index=[keys[j][0] for j in wins]) if wins
                else pd.Series(dtype=float))
    return Scores(table, win_rate, {key: scored[:, j] for j, key in enumerate(keys)},
                  {s: values[:, len(keys) + j] for j, s in enumerate(sigmas)},
                  {s: float(means[len(keys) + j]) for j, s in enumerate(sigmas)})


def _side_by_side(engine, X, output, per_row, shape, dtype=np.float64, rows_axis=0):
    """The per-row collections ``per_row`` (blocked like the rows ``X``) side by side, as one per-row
    collection of trailing ``shape`` (``output``: the explained output of a multi-output model's
    collections, their last axis; None for a single-output model)."""
    plan = Plan(X, (Output("out", shape, dtype, rows_axis),), shipped=(output, shape, dtype), ship="value",
                per_row=tuple(per_row))
    return outputs(_SIDE_BY_SIDE, engine, plan)["out"]


def _side_block(shipped, start, X, *blocks) -> dict:
    output, shape, dtype = shipped
    packed = pack(*(b if output is None else b[..., output] for b in blocks))
    return {"out": packed.reshape((len(X), *shape)).astype(dtype, copy=False)}


def _no_plan(*args, **kwargs):
    raise TypeError("given its plan (runner.outputs), not prepared")


#: per-row collections side by side, as a row method
_SIDE_BY_SIDE = RowMethod("side-by-side", _no_plan, _side_block, lambda plan, cols, engine: cols)


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
    noise = ctx.noise(sigma, binary_sigma)
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
