"""Faithfulness section: exact PGI² of every method's ranking of every explained row, per σ.

The greedy PG² ranking adds the feature that raises PG² most at each step: a reference (a heuristic,
not a bound: an explainer can beat it on a row), not a contestant; random rankings are the floor.
``raw["pgi2"][sigma][key]`` holds the per-row PGI² (shape (rows,)) of each ranking, keyed by method
key (``"shap"``, ``"local_mdi"``, ``"acme"``, global rankings ``"dt_sampler"`` / ``"mcr"``) plus
``"greedy"`` (the greedy reference) and ``"random"`` (the floor), ``raw["pg2 all"][sigma]`` the per-row PG²
with every feature perturbed; ``raw["rows"]`` the explained row positions in memory (on a row engine, Dask or
Spark, the per-row values are those of every complete test row, in the engine's row order, scored there and
brought back: the verdict resamples them); ``raw["labels"]`` each key's display label.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .. import explainers, figures
from .. import pgi2_of_rankings as faith
from ..render import fmt
from ..section import Table
from . import new, register, skipped_by_user

#: the key of the greedy PG² ranking in ``raw["pgi2"]`` (the greedy reference) and of the random baseline
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
    methods, rows, on = explained.raw["methods"], explained.raw["rows"], explained.raw.get("explained")
    n_rows = 0 if on is None else on.n
    if n_rows == 0:
        section.status, section.reason = "not applicable", "no explained rows"
        return section
    rankings, labels = _rankings(methods, on)
    rankings[FLOOR] = on.random_rankings(ctx.seed_int("faithfulness"))
    sigmas = list(options.sigma)
    sampled_from, n_samples = planned_sampling(ctx)
    scores = faith.pgi2_scores(ctx, on.X, {labels[k]: v for k, v in rankings.items()}, sigmas, options.sigma_ref,
                               (labels[FLOOR], labels.get(CEILING)), options.binary_sigma, on.values, sampled_from,
                               n_samples)
    table = scores.table
    section.raw.update({"pgi2": {s: {key: scores.per_row[(labels[key], s)] for key in rankings} for s in sigmas},
                        "pg2 all": scores.every, "labels": labels,
                        "rows": rows if on.positions is not None else np.arange(0)})
    best = faith.winners(table, exclude=(labels[FLOOR], labels.get(CEILING)))
    section.data = {"rows": n_rows, "sigmas": sigmas, "pgi2": table, "winners": best, "unit": squared_unit(ctx),
                    "greedy reference": labels.get(CEILING), "win rate": scores.win_rate.to_dict(),
                    "sigma_ref": options.sigma_ref, "method": method_text(ctx, sampled_from, n_samples),
                    "mean PG² all features": scores.scale}
    _tables(section, table, [labels[k] for k in rankings], sigmas, n_rows, options.sigma_ref,
            None if on.positions is not None else on.engine.describe())
    if ctx.categorical.any():
        _categorical(ctx, section, sigmas)
    _monte_carlo(ctx, section, rows, options)
    return section


#: the label of the background's share of categories the model has no category for (an unseen category)
OTHER_CATEGORY = "other (unknown to the model)"


def _categorical(ctx, section, sigmas) -> None:
    """How the categorical features were perturbed: ρ per σ and the background's category frequencies
    (``data["categorical perturbation"]``), and the table of them."""
    background = "training" if ctx.X_train is not None else "test"
    rho = {s: ctx.rho_at(s) for s in sigmas}
    frequencies, noise = {}, ctx.perturbation(sigmas[0])
    for j in np.flatnonzero(ctx.categorical):
        _, q = noise.category_law(int(j), int(ctx.forest.n_categories[j]))
        labels = list(ctx.categories(j)) + ([OTHER_CATEGORY] if q[-1] > 0 else [])
        frequencies[ctx.feature_names[j]] = dict(zip(labels, q.tolist()))
    section.data["categorical perturbation"] = {
        "features": ctx.categorical_names, "rho": rho, "rho set": ctx.rho is not None,
        "frequencies from": f"the {background} data", "frequencies": frequencies}
    shown = pd.DataFrame({f"ρ at σ = {s:g}": [f"{r:.3g}"] * len(frequencies) for s, r in rho.items()},
                         index=pd.Index(list(frequencies), name="feature"))
    shown[f"category frequencies q ({background} data)"] = [
        ", ".join(f"{label}: {share:.3g}" for label, share in q.items()) for q in frequencies.values()]
    how = ("set by the rho option" if ctx.rho is not None else
           "the default 2Φ(−1/(2σ)): the chance that noise of that σ added to a category code changes the category")
    section.tables.append(Table(
        "Perturbation of the categorical features: a perturbed categorical feature keeps its category with "
        f"probability 1 − ρ and is otherwise redrawn from its category frequencies q in the {background} data, "
        f"independently of the other features (the numeric features get Gaussian noise of σ"
        f"{', the two-valued ones a flip' if ctx.flipped_features.any() else ''}); ρ is {how}.", shown))


def squared_unit(ctx) -> str:
    """The unit of PG² and PGI²: the square of the explained output's unit."""
    if ctx.forest.output_space == "probability":
        return "probability²"
    if ctx.forest.output_space == "margin":
        return "log-odds²" if ctx.task == "classification" else "(link-scale output)²"
    return "(target unit)²"


def planned_sampling(ctx) -> tuple[int | None, int]:
    """The run-time plan's choice for the PGI² sets: (the set size from which they are sampled, or None when
    every set is exact; Monte Carlo samples per sampled set)."""
    plan = ctx.plan
    if plan is None or plan.sampled_from is None:
        return None, 0
    return plan.sampled_from, plan.n_samples


def method_text(ctx, sampled_from: int | None, n_samples: int) -> str:
    """How PGI² and PG² were computed, in words (the run-time plan's choice)."""
    if sampled_from is None:
        return "exact (closed form) for every perturbed set"
    return (f"exact for the perturbed sets of fewer than {sampled_from} of the {ctx.n_features} features; the larger "
            f"sets (the dearest for the exact method) by seeded Monte Carlo, {n_samples} samples each through the "
            f"model's own predictor (about {_rtol(n_samples):.0%} relative standard error per set), as the run-time "
            "plan chose to keep within its cost target (see the reproducibility appendix; --cost-target)")


def _rtol(n_samples: int) -> float:
    from ..plan import GAP_CV2

    return float(np.sqrt(GAP_CV2 / n_samples))


def _rankings(methods, on) -> tuple[dict, dict]:
    """Per-row rankings by method key (the greedy PG² one under :data:`CEILING`), global importances
    applied to every row, and each key's display label."""
    rankings, labels = {}, {FLOOR: "random"}
    for m in methods.values():
        if m.status != "ok":
            continue
        key = CEILING if explainers.get(m.key).reference else m.key
        if m.ranking is not None:
            rankings[key], labels[key] = m.ranking, (f"{m.label} (reference)" if key == CEILING else m.label)
        elif m.importance is not None:
            order = np.argsort(-m.importance.to_numpy(dtype=float), kind="stable")
            rankings[key] = on.tile(order)
            labels[key] = f"{m.label} (global)"
    return rankings, labels


def _tables(section, table, shown_methods, sigmas, n_rows, sigma_ref, every_row_on: str | None) -> None:
    wide = table.pivot(index="method", columns="sigma", values="mean").loc[shown_methods]
    sd = table.pivot(index="method", columns="sigma", values="sd").loc[shown_methods]
    unit = section.data["unit"]
    scale = section.data.get("mean PG² all features")
    share = None if scale is None else wide / pd.Series(scale)
    shown = pd.DataFrame({f"σ = {s:g}": [f"{fmt(a)} ± {fmt(b)}" + ("" if share is None else f" ({c:.0%})")
                                         for a, b, c in zip(wide[s], sd[s], wide[s] if share is None else share[s])]
                          for s in sigmas}, index=pd.Index(wide.index, name="method"))
    shown[f"win rate at σ = {sigma_ref:g}"] = [section.data["win rate"].get(m, np.nan) for m in shown.index]
    where = f" (every complete test row, computed on {every_row_on})" if every_row_on else ""
    exact = section.data["method"].startswith("exact (closed form)")
    what = "Exact PGI²" if exact else "PGI² (the largest perturbed sets by Monte Carlo, see the text)"
    section.tables.append(Table(
        f"{what} of each method's per-row ranking, in {unit} (the explained output's unit squared): mean ± "
        f"standard deviation over {n_rows} test rows{where}, per noise level σ (in training standard deviations)"
        + ("" if share is None else "; in parentheses, the dimensionless share: mean PGI² / mean PG² with every "
           "feature perturbed at that σ (100%: as much output change as perturbing all features at once; above 100% "
           "where perturbing the top-ranked features alone moves the output more than perturbing all, whose effects "
           "partly cancel: PG² is not monotone in the perturbed set)")
        + ". The greedy PG² ranking is a reference (a heuristic, not a bound) and random rankings the floor; "
        "win rate: share of rows where the "
        "method's ranking scores highest among the explainers (greedy reference and floor excluded).", shown))
    section.figures.append(figures.pgi2_by_sigma(
        f"{what} per method and σ, in {unit}: mean over the explained rows ± one standard error (log scale); "
        "dashed: the random floor, the greedy PG² reference and global rankings applied to every row. What it shows: "
        "how much the model output moves when each method's top-ranked features are perturbed first — higher is a "
        "more faithful ranking; a method near the random floor ranks features no better than chance.", table,
        sigmas))


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
