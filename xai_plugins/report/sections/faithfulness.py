"""Faithfulness section: exact PGI² of every method's ranking of every explained row, per σ.

The greedy PG² ranking maximises PG² step by step, the very quantity PGI² averages: it is the
ceiling the other methods are judged against, not a contestant, and random rankings are the floor.
``raw["pgi2"][sigma][key]`` holds the per-row PGI² (shape (rows,)) of each ranking, keyed by method
key (``"shap"``, ``"local_mdi"``, ``"acme"``, global rankings ``"dt_sampler"`` / ``"mcr"``) plus
``"greedy"`` (the ceiling) and ``"random"`` (the floor); ``raw["rows"]`` the explained row positions;
``raw["labels"]`` each key's display label. On a Dask cluster the per-row values stay on the cluster
and ``raw["pgi2"]`` is empty.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .. import figures
from .. import pgi2_of_rankings as faith
from ..render import fmt
from ..section import Table
from . import new, register, skipped_by_user

#: the key of the greedy PG² ranking in ``raw["pgi2"]`` (the ceiling) and of the random baseline
CEILING, FLOOR = "greedy", "random"


@register("faithfulness", "Faithfulness")
def build(ctx, results, options):
    """Exact PGI² per method, σ and row; the exact-vs-Monte-Carlo comparison."""
    if (skipped := skipped_by_user("faithfulness", options)) is not None:
        return skipped
    section = new("faithfulness")
    explained = results["explanations"]
    if explained.status == "failed":
        section.status, section.reason = "not applicable", "the explainers did not run (see the explanations section)"
        return section
    methods, rows = explained.raw["methods"], explained.raw["rows"]
    cl = ctx.cluster
    n_rows = len(rows) if cl is None else cl.n_complete
    if n_rows == 0:
        section.status, section.reason = "not applicable", "no explained rows"
        return section
    rankings, labels = _rankings(methods, n_rows, cl)
    sigmas = list(options.sigma)
    seed = ctx.seed_int("faithfulness")
    if cl is None:
        rankings[FLOOR] = faith.random_rankings(ctx, n_rows, seed)
        table, per_row = faith.pgi2_scores(ctx, rows, rankings, sigmas, labels, options.binary_sigma)
        win_rate = faith.win_rates(per_row, options.sigma_ref, exclude=(labels[FLOOR], labels.get(CEILING)))
        section.raw["pgi2"] = {s: {key: per_row[(labels[key], s)] for key in rankings} for s in sigmas}
    else:
        from ...distributed import random_rankings
        from .. import cluster

        rankings[FLOOR] = random_rankings(cl.X, seed)
        table, win_rate = cluster.pgi2_scores(ctx, cl, {labels[k]: v for k, v in rankings.items()}, sigmas,
                                              options.sigma_ref, exclude=(labels[FLOOR], labels.get(CEILING)))
        section.raw["pgi2"] = {}
    section.raw.update({"rows": rows if cl is None else np.arange(0), "labels": labels})
    best = faith.winners(table, exclude=(labels[FLOOR], labels.get(CEILING)))
    section.data = {"rows": n_rows, "sigmas": sigmas, "pgi2": table, "winners": best,
                    "ceiling": labels.get(CEILING), "win rate": win_rate.to_dict(), "sigma_ref": options.sigma_ref}
    _tables(section, table, [labels[k] for k in rankings], sigmas, n_rows, options.sigma_ref, cl)
    _monte_carlo(ctx, section, rows, options)
    return section


def _rankings(methods, n_rows, cl) -> tuple[dict, dict]:
    """Per-row rankings by method key (the greedy PG² one under :data:`CEILING`), global importances
    applied to every row, and each key's display label."""
    rankings, labels = {}, {FLOOR: "random"}
    for m in methods.values():
        if m.status != "ok":
            continue
        key = CEILING if m.key == "pg2" else m.key
        if m.ranking is not None:
            rankings[key], labels[key] = m.ranking, (f"{m.label} (ceiling)" if key == CEILING else m.label)
        elif m.importance is not None:
            order = np.argsort(-m.importance.to_numpy(dtype=float), kind="stable")
            rankings[key] = np.tile(order, (n_rows, 1)) if cl is None else cl.tile(order)
            labels[key] = f"{m.label} (global)"
    return rankings, labels


def _tables(section, table, shown_methods, sigmas, n_rows, sigma_ref, cl) -> None:
    wide = table.pivot(index="method", columns="sigma", values="mean").loc[shown_methods]
    sd = table.pivot(index="method", columns="sigma", values="sd").loc[shown_methods]
    shown = pd.DataFrame({f"σ = {s:g}": [f"{fmt(a)} ± {fmt(b)}" for a, b in zip(wide[s], sd[s])] for s in sigmas},
                         index=pd.Index(wide.index, name="method"))
    shown[f"win rate at σ = {sigma_ref:g}"] = [section.data["win rate"].get(m, np.nan) for m in shown.index]
    where = "" if cl is None else " (every complete test row, computed on the Dask cluster)"
    section.tables.append(Table(
        f"Exact PGI² of each method's per-row ranking: mean ± standard deviation over {n_rows} test rows{where}, "
        f"per noise level σ (in training standard deviations). The greedy PG² ranking is the ceiling (it "
        f"maximises the score it is judged by) and random rankings the floor; win rate: share of rows where the "
        f"method's ranking scores highest among the explainers (ceiling and floor excluded).", shown))
    section.figures.append(figures.pgi2_by_sigma(
        "Exact PGI² per method and σ: mean over the explained rows ± one standard error (log scale); dashed: the "
        "random floor, the greedy ceiling and global rankings applied to every row.", table, sigmas))


def _monte_carlo(ctx, section, rows, options) -> None:
    """Exact PG² against Monte Carlo at fixed sample counts (seeded: the same on every machine); the
    equal-time comparison, which depends on the machine's speed, only with a ``time_budget``."""
    if options.mc_pairs == 0 or len(rows) == 0:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the model's predictor called on arrays by Monte Carlo
        conv, equal = faith.monte_carlo_convergence(ctx, rows, options.sigma_ref, options.mc_pairs,
                                                    ctx.seed_int("monte carlo"), options.binary_sigma,
                                                    equal_time=options.machine_dependent)
    section.data["monte carlo"] = conv.drop(columns=["seconds", "exact_seconds"])
    section.raw.update({"monte carlo": conv, "equal time": equal})
    drawn_from = ("" if ctx.cluster is None
                  else f" (rows drawn from the in-memory sample of {len(ctx.X_test)} test rows)")
    section.figures.append(figures.convergence(
        f"Monte Carlo estimates of PG² against the exact value for {options.mc_pairs} random (row, feature set) "
        f"pairs{drawn_from} at σ = {options.sigma_ref:g}: relative error against the number of samples (one line "
        "per pair).", conv, equal.dropna() if equal is not None else None))
    if equal is not None:
        shown = equal[["row", "|S|", "exact", "exact_seconds", "n_samples", "mc", "relative_error"]].rename(
            columns={"row": "test row (position)", "|S|": "features perturbed", "exact": "exact PG²",
                     "exact_seconds": "exact time (s)", "n_samples": "MC samples in that time",
                     "mc": "MC estimate", "relative_error": "MC relative error"})
        section.data["equal time"] = "shown (machine-dependent: the sample counts follow this machine's speed)"
        section.tables.append(Table("Exact PG² against Monte Carlo at equal time: the number of model-predictor "
                                    "samples that fit in the exact computation's time on this machine, and the "
                                    "error they leave.", shown, index=False))
