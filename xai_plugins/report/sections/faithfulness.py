"""Faithfulness section: exact PGI² of every method's ranking of every explained row, per σ, and the
faithfulness and stability criteria of the explanation-reliability verdict.

The greedy PG² ranking adds the feature that raises PG² most at each step: a reference (a heuristic,
not a bound: an explainer can beat it on a row), not a contestant; random rankings are the floor.
Faithfulness of each explainer is the normalised score
F = (PGI²(method) − PGI²(random)) / (PGI²(best found) − PGI²(random)), 0 for a random ranking and 1 for
the best ranking found on each row among every evaluated ranking (the greedy PG² reference and the
explainers): greedy is a heuristic, not a bound, so it is not the reference by itself, and F ≤ 1 by
construction; its confidence interval is a *paired* bootstrap over rows (the per-row arrays are
resampled together). Stability across σ is the largest change of any explainer's F between noise levels.
The typed result (:class:`Faithfulness`) holds the per-row PGI² the verdict and the summary read.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import InputError
from .. import criteria, explainers, figures
from .. import pgi2_of_rankings as faith
from ..criteria import FAIL, WARN, Criterion, Kind, Threshold, limits, named, not_assessed, rule, shown
from ..render import fmt
from ..section import Table, new, register, skipped_by_user
from ..verdict import CI_LEVEL, N_BOOT, ConfidenceInterval, bootstrap_ci, grade

__all__: list = []

#: the key of the greedy PG² ranking in :attr:`Faithfulness.pgi2` (the greedy reference) and of the random baseline
CEILING, FLOOR = "greedy", "random"
#: the entries of per-row PGI² dictionaries that are not explainers
RANDOM, GREEDY = FLOOR, CEILING
_INF = float("inf")
#: the thresholds of the faithfulness and stability criteria
THRESHOLDS = (
    Threshold("faithfulness_pass", 0.5, "faithfulness: F at or above which it passes",
              "the ranking recovers at least half of what the best ranking found gains over random rankings",
              "faithfulness", -_INF, 1.0, "F ≤ 1 by construction", at_least="faithfulness_fail"),
    Threshold("faithfulness_fail", 0.25, "faithfulness: F below which it fails",
              "below a quarter the ranking is closer to random than to the best ranking found", "faithfulness",
              -_INF, 1.0, "F ≤ 1 by construction"),
    Threshold("stability_warn", 0.2, "stability: largest change D of F between noise levels that passes",
              "a change of 0.2 is less than the gap between the faithfulness grades", "stability", 0.0, _INF,
              "a change D of F ≥ 0"),
    Threshold("stability_fail", 0.5, "stability: change D of F above which it fails",
              "a change of 0.5 moves a method from the best ranking found to half-way to random: its faithfulness "
              "then depends on the noise scale chosen, not on the method", "stability", 0.0, _INF,
              "a change D of F ≥ 0", at_least="stability_warn"),
)


def _faithfulness_rule(t: dict) -> str:
    return (f"F = (PGI² − PGI² random) / (PGI² best ranking found − PGI² random), ≤ 1 by construction: "
            f"pass if its {CI_LEVEL:.0%} paired-bootstrap CI lies ≥ {named('faithfulness_pass', t)}, fail if "
            f"it lies < {named('faithfulness_fail', t)}, else warn")


def _stability_rule(t: dict) -> str:
    return (f"D = largest change of an explainer's F between noise levels: pass if its {CI_LEVEL:.0%} "
            f"paired-bootstrap CI lies ≤ {named('stability_warn', t)}, fail if it lies > "
            f"{named('stability_fail', t)}, else warn")


KINDS = (Kind("faithfulness", criteria.EXPLANATION_RELIABILITY,
              {"pass": "faithful", "warn": "partly faithful", "fail": "unfaithful"}, _faithfulness_rule),
         Kind("stability", criteria.EXPLANATION_RELIABILITY,
              {"pass": "stable", "warn": "somewhat σ-dependent", "fail": "σ-dependent"}, _stability_rule))


@dataclass
class Faithfulness:
    """What other sections read of the faithfulness section: ``pgi2`` = {σ: {key: (rows,) PGI²}}, keyed by
    explainer key plus :data:`CEILING` (the greedy reference) and :data:`FLOOR` (the random floor); ``labels``
    each key's display label; ``rows`` the explained row positions in memory (on a row engine, Dask or Spark, the
    per-row values are those of every complete test row, in the engine's row order, scored there and brought back:
    the verdict resamples them); ``pg2_all`` = {σ: (rows,) PG² with every feature perturbed}; ``table`` the mean
    and sd of PGI² per method and σ, ``winners`` the explainer with the highest mean PGI² per σ, ``unit`` their
    unit, ``sigma_ref`` the σ the verdict judges at and ``reference`` the greedy reference's label."""

    pgi2: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    rows: np.ndarray = field(default_factory=lambda: np.arange(0))
    pg2_all: dict = field(default_factory=dict)
    table: pd.DataFrame | None = None
    winners: dict = field(default_factory=dict)
    unit: str = ""
    sigma_ref: float = float("nan")
    reference: str | None = None


@register("faithfulness", "Faithfulness", reads=("explanations",), result=Faithfulness, thresholds=THRESHOLDS,
          kinds=KINDS, seconds=0.5, position=90, stage=60, optional=True, default=True)
def build(ctx, results, options):
    """Exact PGI² per method, σ and row; the exact-vs-Monte-Carlo comparison."""
    if (skipped := skipped_by_user("faithfulness", options)) is not None:
        return skipped
    section = new("faithfulness")
    explained = results["explanations"]
    if explained.status == "failed":
        section.status, section.reason = "not applicable", "the explainers did not run (see the explanations section)"
        return section
    methods, rows, on = explained.result.methods, explained.result.rows, explained.result.explained
    n_rows = 0 if on is None else on.n
    if n_rows == 0:
        section.status, section.reason = "not applicable", "no explained rows"
        return section
    rankings, labels = rankings_of(methods, on)
    rankings[FLOOR] = on.random_rankings(ctx.seed_int("faithfulness"))
    sigmas = list(options.sigma)
    sampled_from, n_samples = planned_sampling(ctx)
    scores = faith.pgi2_scores(ctx, on.X, {labels[k]: v for k, v in rankings.items()}, sigmas, options.sigma_ref,
                               (labels[FLOOR], labels.get(CEILING)), options.binary_sigma, on.values, sampled_from,
                               n_samples)
    table = scores.table
    section.result = Faithfulness({s: {key: scores.per_row[(labels[key], s)] for key in rankings} for s in sigmas},
                                  labels, rows if on.positions is not None else np.arange(0), scores.every)
    best = faith.winners(table, exclude=(labels[FLOOR], labels.get(CEILING)))
    section.data = {"rows": n_rows, "sigmas": sigmas, "pgi2": table, "winners": best, "unit": squared_unit(ctx),
                    "greedy reference": labels.get(CEILING), "win rate": scores.win_rate.to_dict(),
                    "sigma_ref": options.sigma_ref, "method": method_text(ctx, sampled_from, n_samples),
                    "mean PG² all features": scores.scale}
    section.result.table, section.result.winners, section.result.unit = table, best, section.data["unit"]
    section.result.sigma_ref, section.result.reference = options.sigma_ref, labels.get(CEILING)
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


def rankings_of(methods, on) -> tuple[dict, dict]:
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


def normalised(method, random, best, axis=-1):
    """F of the row means along ``axis``: (mean(method) − mean(random)) / (mean(best) − mean(random)); NaN
    where no ranking beats random on average (a bootstrap resample can draw such rows: F is undefined
    there, and an interval that meets one is undefined too rather than above 1)."""
    base = np.mean(random, axis=axis)
    gap = np.mean(best, axis=axis) - base
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (np.mean(method, axis=axis) - base) / np.where(gap > 0, gap, 1.0), np.nan)


def best_found(per_row: dict) -> np.ndarray:
    """Per row, the highest PGI² among every evaluated ranking of ``per_row`` ({name: (rows,) PGI²}; the
    random rankings left out): the best ranking found, the reference of F. The greedy PG² ranking is a
    heuristic, not a bound, and an explainer may beat it on a row; the best found never is beaten, so
    F ≤ 1 by construction, in every bootstrap resample too."""
    return np.max(np.stack([np.asarray(v, dtype=float) for k, v in per_row.items() if k != RANDOM]), axis=0)


@dataclass(frozen=True)
class FaithfulnessScore:
    """Normalised faithfulness F = (PGI²(method) − PGI²(random)) / (PGI²(best found) − PGI²(random)) of the
    row means, with its paired bootstrap interval. ``gap`` is PGI²(best found) − PGI²(random) (the unit)."""

    value: float
    ci: ConfidenceInterval
    gap: float


def faithfulness_score(method, random, best, *, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                       random_state=None) -> FaithfulnessScore:
    """F of an explainer from per-row PGI² of its rankings, of random rankings and of the best ranking found
    (:func:`best_found`) on the same rows; the interval resamples rows once for all three arrays (paired),
    and each resample's F is the ratio of its resampled means. Raises :class:`InputError` when the best
    ranking found does not beat random on average (F undefined)."""
    arrays = tuple(np.asarray(a, dtype=float).ravel() for a in (method, random, best))
    gap = float(np.mean(arrays[2]) - np.mean(arrays[1]))
    if not gap > 0:
        raise InputError(f"no evaluated ranking scores above random rankings (mean PGI² gap {gap:.3g}); "
                         "the normalised faithfulness is undefined")
    ci = bootstrap_ci(arrays, normalised, n_boot=n_boot, level=level, random_state=random_state)
    return FaithfulnessScore(float(normalised(*arrays)), ci, gap)


def explainer_faithfulness(method: str, per_row: dict, sigma: float, *, thresholds=None, n_boot: int = N_BOOT,
                           level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Faithfulness criterion of ``method`` from ``per_row`` = {name: (rows,) PGI² at ``sigma``} holding
    the method, ``"random"``, ``"greedy"`` and any other evaluated rankings: F against the best ranking found
    among them row by row (:func:`best_found`, :func:`faithfulness_score`), graded by :func:`grade` with the
    thresholds ``faithfulness_pass`` / ``faithfulness_fail``."""
    name, kind, t = f"Faithfulness of {method}", "faithfulness", limits(thresholds)
    text = rule(kind, t)
    missing = [k for k in (method, RANDOM, GREEDY) if k not in per_row]
    if missing:
        return not_assessed(name, kind, f"no per-row PGI² for {', '.join(missing)} at σ = {sigma:g}", text)
    best = best_found(per_row)
    try:
        score = faithfulness_score(per_row[method], per_row[RANDOM], best, n_boot=n_boot, level=level,
                                   random_state=random_state)
    except InputError as exc:
        return not_assessed(name, kind, str(exc), text)
    status = grade(score.value, score.ci, t["faithfulness_pass"], t["faithfulness_fail"])
    greedy_rows = float(np.mean(np.asarray(per_row[GREEDY], dtype=float) >= best))
    implication = {FAIL: f"Explanations by {method} should not be used to justify individual decisions: its "
                         "rankings are closer to random than to the best ranking found.",
                   WARN: f"Explanations by {method} should be used with caution for individual decisions: "
                         "their faithfulness is not established."}.get(status, "")
    bounds = (t["faithfulness_pass"], t["faithfulness_fail"])
    return Criterion(name, status, score.value, score.ci, text,
                     f"At σ = {sigma:g} over {score.ci.rows} rows, {method}'s rankings recover "
                     f"F = {shown(score.value, bounds, '.2f')} ({score.ci.text(bounds)}) of the PGI² gain over random "
                     f"rankings of the best ranking found per row among the {len(per_row) - 1} evaluated rankings "
                     f"(the greedy PG² reference is the best on {greedy_rows:.0%} of the rows).", kind, implication,
                     bounds)


def sigma_stability(pgi2: dict, *, judged=None, thresholds=None, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                    random_state=None) -> Criterion:
    """Stability criterion from ``pgi2`` = {σ: {name: (rows,) PGI²}} (the same rows at every σ, each σ with
    ``"random"`` and ``"greedy"``): D = max over the explainers ``judged`` (default: every one in ``pgi2``) of
    (max_σ F − min_σ F), F against the best ranking found at each σ among every ranking in ``pgi2``
    (:func:`best_found`), graded by the thresholds ``stability_warn`` / ``stability_fail``;
    the interval is a paired bootstrap of D (rows resampled once for every array); the explanation also
    says whether the explainers' order by F changes between σ."""
    name, kind, t = "Stability across σ", "stability", limits(thresholds)
    text_rule = rule(kind, t)
    best = {s: best_found(v) for s, v in pgi2.items() if RANDOM in v and GREEDY in v}
    usable = {s: v for s, v in pgi2.items() if s in best and np.mean(best[s]) - np.mean(v[RANDOM]) > 0}
    sigmas = sorted(usable)
    methods = [m for m in (usable[sigmas[0]] if sigmas else ()) if m not in (RANDOM, GREEDY)
               and all(m in usable[s] for s in sigmas) and (judged is None or m in judged)]
    if len(sigmas) < 2 or not methods:
        return not_assessed(name, kind, "fewer than two noise levels σ with an explainer, random and greedy PGI² "
                            "(and a ranking above random)", text_rule)
    arrays = tuple(np.asarray(a, dtype=float) for s in sigmas for a in
                   [*(usable[s][m] for m in methods), usable[s][RANDOM], best[s]])
    width = len(methods) + 2

    def spread(*values, axis=-1):
        """D of the row means: values are the arrays above, σ-major; F per (σ, method), range over σ."""
        means = np.mean(np.stack(values), axis=axis).reshape(len(sigmas), width, -1)
        floor, gap = means[:, -2], (means[:, -1] - means[:, -2])[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):        # F undefined where no ranking beats random
            scores = np.where(gap > 0, (means[:, :-2] - floor[:, None]) / np.where(gap > 0, gap, 1.0), np.nan)
        return np.max(np.max(scores, axis=0) - np.min(scores, axis=0), axis=0).reshape(np.shape(values[0])[:-1])

    value = float(spread(*arrays))
    ci = bootstrap_ci(arrays, spread, n_boot=n_boot, level=level, random_state=random_state)
    scores = {s: {m: float(normalised(usable[s][m], usable[s][RANDOM], best[s])) for m in methods} for s in sigmas}
    orders = {s: tuple(sorted(methods, key=lambda m: -scores[s][m])) for s in sigmas}
    moved = max(methods, key=lambda m: max(scores[s][m] for s in sigmas) - min(scores[s][m] for s in sigmas))
    order_text = ("The explainers' order by F is the same at every σ." if len(set(orders.values())) == 1 else
                  "The explainers' order by F changes with σ: " + "; ".join(
                      f"σ = {s:g}: {' > '.join(orders[s])}" for s in sigmas) + ".")
    bounds = (t["stability_warn"], t["stability_fail"])
    text = (f"F per σ ({', '.join(f'{s:g}' for s in sigmas)}) of {len(methods)} explainers; largest change "
            f"D = {shown(value, bounds, '.2f')} ({ci.text(bounds)}), for {moved} ("
            + ", ".join(f"{scores[s][moved]:.2f}" for s in sigmas) + "). " + order_text)
    status = grade(value, ci, t["stability_warn"], t["stability_fail"])
    implication = {FAIL: f"The faithfulness of {moved} depends on the noise scale σ chosen: its faithfulness grade "
                         "holds only at the σ it was judged at.",
                   WARN: f"The faithfulness of {moved} varies with the noise scale σ."}.get(status, "")
    return Criterion(name, status, value, ci, text_rule, text, kind, implication, bounds)
