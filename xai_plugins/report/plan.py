"""The audit's run-time plan, made before anything runs: each section's cost estimated from the model, the
data sizes and the options, and the choices that keep the whole audit's estimate within a cost target at the
accuracy the verdict needs.

The estimates reuse the cost model of ``pg2(method="auto")`` (:func:`~xai_plugins.prediction_gap.exact_seconds`:
per reachable leaf and leaf pair; ``sample_seconds``: a Monte Carlo sample by the tree levels it passes through in
the model's own predictor, per library), and
count what does not grow with the model: each section's tables and bootstraps (the ``seconds`` its unit declares), its
figures (:data:`FIGURE_SECONDS`, :data:`PYPLOT_FIGURE_SECONDS`) and DT-Sampler's model count and sampled trees.
Everything here is a function of the model, the data sizes and the options, never of the clock: the same
inputs give the same plan, hence the same numbers, on any machine (only the opt-in ``time_budget`` makes the
row count machine-dependent).

The choices, in order, while the estimated seconds of the whole audit (before rendering) exceed ``cost_target``:

1. the faithfulness section estimates the prefix sets of k features or more by seeded Monte Carlo at the planned
   accuracy (:data:`PLAN_RTOL`), the smaller ones exactly (``pgi2(sampled_from=k)``), k the size, among those whose
   exact sets are estimated dearer than a Monte Carlo, that makes the whole estimate least (every ranking's sets of
   k features or more are sampled, a random ranking's cheap ones too);
2. fewer explained rows, never fewer than :func:`rows_needed`: the rows a bootstrap interval of the normalised
   faithfulness needs to be narrower than the gap between its pass and fail thresholds.

What the plan cannot cut (the sections' fixed costs, DT-Sampler) stays: an estimate above the target at the
rows the verdict needs is shown as it is.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import XaiError
from ..prediction_gap._auto import AUTO_MIN_SAMPLES, exact_by_size, leaf_depths, sample_seconds
from ..prediction_gap._exact import PRUNE_RTOL
from ..prediction_gap._greedy import GREEDY
from ..prediction_gap._output_view import exact_view
from .context import CHALLENGER
from .explainers import REGISTRY as EXPLAINER_REGISTRY
from .explainers import Costs
from .pgi2_of_rankings import MC_SAMPLES
from .section import FIXED_SECONDS, REGISTRY, compute_order
from .verdict import CI_LEVEL

__all__: list[str] = []      # internal module: the public names are in the API reference

#: relative standard error of one Monte Carlo PG² of the faithfulness section (per row and prefix set): the
#: verdict reads means over rows of PGI² (an average of d prefix sets), whose spread across rows is far larger
PLAN_RTOL = 0.03
#: coefficient of variation² of a sampled squared gap (2 for a centred Gaussian gap; trees give more)
GAP_CV2 = 2.0
#: the standard deviation over rows of the per-row normalised faithfulness assumed when counting the rows the
#: verdict needs (per-row scores lie in [0, 1] for a ranking between the random floor and the best one found)
ROW_SD = 0.3
#: the explained-like rows on which the plan counts the leaves and leaf pairs each set keeps (a count walks the trees
#: as the exact sum does, without its leaf-pair loop): the cost of a deep forest's sets varies 15× from row to row
#: and 6 rows take its plan 1.4 s (one-off timings on the COMPAS Pipeline forest of ``bench_audit.py``)
PLAN_COUNT_ROWS = 6
#: the model section's bootstrap interval of the test score (2,000 resamples), per test row, by task (R², balanced
#: accuracy): a one-off timing of ``holdout_score`` on 1,000–4,128 rows (85 and 30 ns per resampled row)
SCORE_BOOTSTRAP_SECONDS_PER_ROW = {"regression": 1.7e-4, "classification": 6.0e-5}
#: the share of an explainer's prefix sets that no other explainer's ranking of the row has (the distinct sets the
#: PGI² computes): 0.49–0.90, 0.67 on average, over the six audits of ``bench_audit.py`` (a one-off count over their
#: rankings; fewer shared sets with more features)
DISTINCT_SHARE = 0.65
#: one figure drawn on its own canvas and embedded as a PNG, and one drawn through pyplot by shap or AcME (a
#: waterfall, a what-if: more text, laid out twice); the demo audits' CPU time per figure (``bench_audit.py``, quiet)
FIGURE_SECONDS, PYPLOT_FIGURE_SECONDS = 0.15, 0.8
#: the fairness section per protected attribute: its figures and tables, and per row of the data its proxy check
#: reads (a small random forest cross-validated on the attribute) and its permutation reliance; fitted on the COMPAS
#: audit of ``bench_audit.py`` (2 attributes, 4,937 training rows: 7.5 s)
FAIRNESS_SECONDS, FAIRNESS_SECONDS_PER_ROW = 1.0, 5.0e-4
#: the decisions section: the SHAP attributions it scores on each row (the package's two, shap's, the library's own,
#: and the best of them for the reason codes, whose certificate is a greedy ranking)
DECISIONS_ATTRIBUTIONS = 5
#: the comparison section's bootstraps (its deltas, per-feature shares, faithfulness and agreement intervals)
COMPARISON_SECONDS = 1.0


@dataclass(frozen=True)
class SectionPlan:
    """One section's plan: ``method`` (how its PG² work runs, in words), ``rows`` it covers, Monte Carlo
    ``samples`` per estimate (0: none), estimated ``seconds`` and a ``note`` on what was chosen and why."""

    name: str
    method: str
    rows: int
    samples: int
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class AuditPlan:
    """The plan of one audit: ``sections`` (name → :class:`SectionPlan`, in compute order), the explained
    ``rows``, ``sampled_from`` (the prefix-set size from which faithfulness samples; None: all exact),
    ``n_samples`` (per sampled set), the ``target`` (estimated seconds of the PG² work) and ``rows_needed``."""

    sections: dict
    rows: int
    sampled_from: int | None
    n_samples: int
    target: float
    rows_needed: int
    #: with ``max_minutes``: how many times the plan's estimate this machine took for one explained row's PG² work
    #: (the estimates stay the plan's; the target is the cap divided by it); 1 otherwise
    speed: float = 1.0

    @property
    def seconds(self) -> float:
        """Estimated seconds of the whole audit (before rendering)."""
        return float(sum(s.seconds for s in self.sections.values()))

    def estimate(self, name: str) -> float:
        """Estimated seconds of section ``name`` (0 for a section the plan does not know)."""
        return self.sections[name].seconds if name in self.sections else 0.0

    def table(self) -> pd.DataFrame:
        """The plan as the report shows it: one row per section."""
        return pd.DataFrame([{"section": s.name, "method": s.method, "rows": s.rows, "Monte Carlo samples": s.samples,
                              "estimated seconds": round(s.seconds, 1), "why": s.note}
                             for s in self.sections.values()])

    def to_dict(self) -> dict:
        """JSON-ready plan (see ``audit.schema.json``)."""
        return {"rows": self.rows, "sampled from set size": self.sampled_from, "samples per sampled set":
                self.n_samples, "target seconds": self.target, "rows needed": self.rows_needed,
                "estimated seconds": round(self.seconds, 2), "measured speed": self.speed,
                "sections": [{"section": s.name, "method": s.method, "rows": s.rows, "samples": s.samples,
                              "estimated seconds": round(s.seconds, 3), "note": s.note}
                             for s in self.sections.values()]}

    def describe(self) -> str:
        """One line per section with its estimate, for the progress display."""
        return "\n".join(f"  {s.name:<16} {s.method:<44} ≈ {s.seconds:7.1f} s" for s in self.sections.values())


def rows_needed(limits: dict, max_rows: int) -> int:
    """Rows for which a bootstrap interval of the mean normalised faithfulness (per-row spread
    :data:`ROW_SD`) at the verdict's level is narrower than the gap between ``faithfulness_pass`` and
    ``faithfulness_fail`` (half-width = half the gap), capped at ``max_rows``."""
    from scipy.stats import norm

    half_width = max((limits["faithfulness_pass"] - limits["faithfulness_fail"]) / 2.0, 1e-3)
    z = float(norm.ppf(0.5 + CI_LEVEL / 2.0))
    return int(min(max_rows, max(2, math.ceil((z * ROW_SD / half_width) ** 2))))


def samples_for(rtol: float) -> int:
    """Monte Carlo samples for a relative standard error ``rtol`` of a squared gap of CV² :data:`GAP_CV2`,
    at least ``AUTO_MIN_SAMPLES``."""
    return int(max(AUTO_MIN_SAMPLES, math.ceil(GAP_CV2 / rtol ** 2)))


@dataclass(frozen=True)
class _PG2Costs:
    """Per explained row: the greedy ranking, and summed over the σ priced the PGI² of every ranking and PG² of every
    feature."""

    greedy: float
    pgi2: float
    every: float


def _pg2_costs(forest, d: int, m: float, sampled_from: int | None, per_set: float, rows=None,
               output: int | None = None, noises: tuple = (None,), greedy_noise=None, random: int = 1) -> _PG2Costs:
    """PG² costs per row (see :class:`_PG2Costs`) with ``m`` rankings (in distinct rankings: see :func:`_rankings`),
    ``random`` of them random and the others an explainer's, whose prefixes put the most important features first;
    sets of ``sampled_from`` features or more at ``per_set`` seconds (Monte Carlo), the others exact. A prefix set
    of size k < d is one per ranking, the full set shared. ``rows``: rows like the explained ones, on which the
    leaves each set reaches are counted (:func:`~xai_plugins.prediction_gap._auto.exact_by_size`: a random order for
    a random ranking, the features by PG² alone for an explainer's); ``output``: the explained one, whose trees and
    leaf values the sums pair up alone (None: every output). ``noises``: the perturbations (one per σ) the PGI² and
    PG² of every feature are summed over, each set priced by the leaves the exact sum keeps under it (None: by the
    leaves it can reach, whatever the noise); ``greedy_noise``: the greedy ranking's."""
    explained = exact_view(forest, output).forest
    cut = d + 1 if sampled_from is None else sampled_from
    pgi2 = every = 0.0
    for noise in noises:
        ranked, shuffled = (exact_by_size(explained, rows, order=order, noise=noise, prune_rtol=PRUNE_RTOL,
                                          max_rows=PLAN_COUNT_ROWS) for order in ("importance", "random"))
        pgi2 += sum((m - random) * (ranked[k] if k < cut else per_set) + random * (shuffled[k] if k < cut else per_set)
                    for k in range(1, d))
        every += ranked[d] if d < cut else per_set
    assert GREEDY.cost is not None          # the greedy ranking's row method declares its cost
    greedy = GREEDY.cost(explained, 1, None if rows is None else rows[:PLAN_COUNT_ROWS], greedy_noise)
    return _PG2Costs(greedy, pgi2 + every, every)


def pg2_work(forest, rows: int, m: int, n_sigma: int, greedy: bool = True, sampled_from: int | None = None,
             per_set: float = 0.0) -> float:
    """Estimated seconds of the audit's PG² work on ``rows`` explained rows: the greedy ranking (when ``greedy``)
    and, at each of ``n_sigma`` noise levels, the PGI² of ``m`` rankings and the PG² of every feature (sets of
    ``sampled_from`` features or more by Monte Carlo at ``per_set`` seconds each)."""
    c = _pg2_costs(forest, forest.n_features, m, sampled_from, per_set)
    return rows * ((c.greedy if greedy else 0.0) + n_sigma * c.pgi2)


def plan_audit(ctx, options, speed: float = 1.0, spent: float = 0.0) -> AuditPlan:
    """The :class:`AuditPlan` of an audit of ``ctx`` with ``options`` (deterministic: the model, the data sizes
    and the options only). With ``options.max_minutes``, the target is what is left of the cap after ``spent``
    seconds, divided by ``speed`` (:func:`measured_speed`: this machine's time over the plan's estimate)."""
    forest, d = ctx.forest, ctx.n_features
    target = float(options.cost_target)
    if options.max_minutes is not None:
        target = max(60.0 * options.max_minutes - spent, 0.0) / speed
    faithful_on = "faithfulness" in options.sections
    n_complete = len(ctx.complete_rows) if ctx.cluster is None else ctx.cluster.n_complete
    max_rows = min(options.max_rows, n_complete) if ctx.cluster is None else n_complete
    needed = rows_needed(options.limits, max_rows)
    per_sample = sample_seconds(forest, ctx.model)
    n_samples = samples_for(PLAN_RTOL)
    per_set = n_samples * per_sample
    like = explained_like(ctx)
    exact = np.max([exact_by_size(exact_view(forest, ctx.output).forest, like, order="importance", noise=noise,
                                  prune_rtol=PRUNE_RTOL, max_rows=PLAN_COUNT_ROWS)
                    for noise in _noises(ctx, options, options.sigma)], axis=0)
    dearer = [k for k in range(1, d + 1) if exact[k] > per_set]
    can_sample = ctx.cluster is None and forest.predict_fn is not None and bool(dearer) and faithful_on

    def plan(rows: int, sampled_from: int | None, why: str = "") -> dict:
        return _sections(ctx, options, rows, sampled_from, per_sample, per_set, why, like)

    def total(rows: int, sampled_from: int | None) -> float:
        return sum(section.seconds for section in plan(rows, sampled_from).values())

    rows, sampled_from, why = max_rows, None, "the whole audit's estimate within the target"
    if ctx.cluster is not None:
        why = "row engine: every complete test row, exact"
    elif total(rows, None) > target:
        why = f"the whole audit ≈ {total(rows, None):.0f} s over the {target:.3g} s target"
        if options.max_minutes is not None:
            why += (f" (the {options.max_minutes:g} min cap: this machine takes {speed:.2g}× the plan's estimates, "
                    f"{spent:.0f} s spent measuring it)")
        cheapest = min(dearer, key=lambda k: (total(rows, k), -k)) if can_sample else None
        if cheapest is not None and total(rows, cheapest) < total(rows, None):
            sampled_from = cheapest
            why += (f": prefix sets of ≥ {sampled_from} features by Monte Carlo ({n_samples} samples each, "
                    f"{PLAN_RTOL:.0%} relative standard error)")
        if total(rows, sampled_from) > target:
            fits = _most_rows(lambda r: total(r, sampled_from) <= target, max_rows)
            rows = max(needed, fits)
            why += f"; {rows} explained rows (the target allows {fits}, the verdict needs {needed})"
    return AuditPlan(plan(rows, sampled_from, why), rows, sampled_from, n_samples if sampled_from is not None else 0,
                     target, needed, speed)


def measured_speed(ctx, options) -> float:
    """This machine's CPU time for one explained row's PG² work (its greedy ranking when the greedy reference runs,
    and the PGI² of every ranking at every σ when the faithfulness section runs) over the plan's estimate of it; 1
    when the audit has no PG² work. The row is the first the plan would explain; its results are not kept."""
    from ..prediction_gap import greedy_pg2_ranking, pgi2
    from .sections.explanations import consumers

    greedy = any(EXPLAINER_REGISTRY[k].reference for k in options.explainers)
    faithful = "faithfulness" in options.sections and bool(consumers() & set(options.sections))
    if not (greedy or faithful) or not len(ctx.complete_rows):
        return 1.0
    d = ctx.n_features
    row = ctx.X_test.to_numpy()[ctx.sample_rows(1)]
    noise = ctx.noise(options.sigma_ref, options.binary_sigma)
    costs = _pg2_costs(ctx.forest, d, 1, None, 0.0, explained_like(ctx), ctx.output,         # one greedy ranking
                       _noises(ctx, options, options.sigma), _noises(ctx, options, [options.sigma_ref])[0], random=0)
    started = time.process_time()
    ranking = (greedy_pg2_ranking(ctx.forest, row, **noise, output=ctx.output,
                                  verbose=False).ranking
               if greedy
               else np.arange(d)[None, :])
    if faithful:
        for sigma in options.sigma:
            pgi2(ctx.forest, row, ranking, **ctx.noise(sigma, options.binary_sigma), verbose=False, output=ctx.output)
    estimate = (costs.greedy if greedy else 0.0) + (costs.pgi2 if faithful else 0.0)
    return float(np.clip((time.process_time() - started) / max(estimate, 1e-9), 0.05, 100.0))


def _noises(ctx, options, sigmas) -> tuple:
    """The perturbations at each of ``sigmas`` the plan prices the exact sums under; None, and the sets priced by
    the leaves they can reach, on a row engine (whose rows the plan does not hold) and where no perturbation can be
    made (a background feature constant: the sections that need one say so themselves)."""
    if ctx.cluster is not None:
        return (None,) * len(sigmas)
    try:
        return tuple(ctx.perturbation(s, options.binary_sigma) for s in sigmas)
    except XaiError:
        return (None,) * len(sigmas)


def explained_like(ctx) -> np.ndarray | None:
    """Up to 8 complete test rows, the first the audit explains: the reachable leaves of the plan's sets are counted
    on them (None without a complete row)."""
    sample = ctx.sample_rows(8)
    return ctx.X_test.to_numpy(dtype=float)[sample] if len(sample) else None


def _rankings(ctx, options) -> float:
    """The explainers' rankings whose PGI² the faithfulness section computes on an explained row, counted in distinct
    rankings: the first explainer expected to rank this model (:meth:`~.explainers.Explainer.ranks`) one, each
    other :data:`DISTINCT_SHARE` of one (a prefix set that several rankings share is computed once)."""
    ranking = sum(bool(EXPLAINER_REGISTRY[k].ranks(ctx, options)) for k in options.explainers)
    return 0.0 if ranking == 0 else 1.0 + DISTINCT_SHARE * (ranking - 1)


def _most_rows(fits, max_rows: int) -> int:
    """The largest row count in [0, max_rows] for which ``fits(rows)`` (true up to some count, false beyond)."""
    lo, hi = 0, max_rows
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _n_rows(ctx) -> int:
    return len(ctx.X_test) + (0 if ctx.X_train is None else len(ctx.X_train))


def _sections(ctx, options, rows: int, sampled_from: int | None, per_sample: float, per_set: float,
              why: str, like) -> dict:
    """Every section's :class:`SectionPlan` with ``rows`` explained rows and the prefix sets of ``sampled_from``
    features or more by Monte Carlo (``per_set`` seconds each); ``like``: :func:`explained_like`, drawn once per
    plan."""
    from .sections.explanations import consumers

    forest, d = ctx.forest, ctx.n_features
    m = _rankings(ctx, options) + 1                                     # the methods' rankings and the random one
    explained_on = bool(consumers() & set(options.sections))
    reference = _noises(ctx, options, [options.sigma_ref])
    costs = _pg2_costs(forest, d, m, sampled_from, per_set, like, ctx.output, _noises(ctx, options, options.sigma),
                       reference[0])
    order = compute_order()        # each section's own seconds: its tables and bootstraps, as its unit declares
    own = {name: 0.0 if REGISTRY[name].optional and name not in options.sections else REGISTRY[name].seconds
           for name in order}                        # an optional section left out is not built
    if ctx.task != "classification":                    # no calibration section (a regression model)
        own["calibration"] = FIXED_SECONDS
    figures = {"calibration": ctx.task == "classification", "drift": ctx.X_train is not None,
               "agreement": 2 * ("agreement" in options.sections), "mcr": "mcr" in options.sections}
    sections = {name: SectionPlan(name, "-", 0, 0, own[name] + FIGURE_SECONDS * figures.get(name, 0))
                for name in order}
    scored = 0 if ctx.y_test is None else len(ctx.X_test)                  # the test score's bootstrap interval
    sections["model"] = SectionPlan("model", "predictions", len(ctx.X_test), 0,         # the score, then the table
                                    own["model"] + 2 * _n_rows(ctx) * per_sample
                                    + scored * SCORE_BOOTSTRAP_SECONDS_PER_ROW[ctx.task])
    if options.protected:
        proxy_rows = len(ctx.X_train if ctx.X_train is not None else ctx.X_test)
        sections["fairness"] = SectionPlan("fairness", "proxy checks, reliance", proxy_rows, 0, own["fairness"] + len(
            options.protected) * (FAIRNESS_SECONDS + FAIRNESS_SECONDS_PER_ROW * proxy_rows))
    if explained_on:
        sections["explanations"] = _explanations(ctx, options, rows, costs.greedy, per_sample, why)
    if "faithfulness" in options.sections and explained_on:
        method = ("exact" if sampled_from is None
                  else f"exact below {sampled_from} features, Monte Carlo from {sampled_from}")
        comparison = options.mc_pairs * (2 * exact_by_size(forest, like, noise=reference[0], prune_rtol=PRUNE_RTOL,
                                                           max_rows=PLAN_COUNT_ROWS)[max(1, d // 4)]
                                         + sum(MC_SAMPLES) * per_sample)
        sections["faithfulness"] = SectionPlan(
            "faithfulness", f"PGI² {method}", rows, 0 if sampled_from is None else samples_for(PLAN_RTOL),
            own["faithfulness"] + FIGURE_SECONDS * (1 + (options.mc_pairs > 0)) + rows * costs.pgi2
            + comparison, why)
    if "decisions" in options.sections and explained_on:
        from .sections.decisions import MAX_ROWS as decided

        scored = min(rows, decided)
        one_ranking = _pg2_costs(forest, d, 1, None, 0.0, like, ctx.output, reference, reference[0], random=0)
        sections["decisions"] = SectionPlan(
            "decisions", "SHAP variants' PGI², reason codes' greedy", scored, 0,
            own["decisions"] + scored * (DECISIONS_ATTRIBUTIONS * one_ranking.pgi2 + one_ranking.greedy), why)
    if CHALLENGER in ctx.models and explained_on:
        sections["comparison"] = _comparison(ctx, options, rows, why, like)
    return sections


def _comparison(ctx, options, rows: int, why: str, like) -> SectionPlan:
    """The champion/challenger comparison's estimate: the challenger's explainers on the explained rows and their
    PGI² at one σ, each model's PG² of every feature alone, of the champion's top-k prefix sets and of every
    feature, and the challenger's permutation reliance on the training rows (where RF-MCR runs)."""
    other, d = ctx.view(CHALLENGER), ctx.n_features
    m = _rankings(other, options) + 1
    per_sample = sample_seconds(other.forest, other.model)
    reference = _noises(other, options, [options.sigma_ref])
    costs = _pg2_costs(other.forest, d, m, None, 0.0, like, other.output, reference, reference[0])
    seconds = _explanations(other, options, rows, costs.greedy, per_sample, why).seconds + rows * costs.pgi2
    k = min(options.top_k, d)
    for view in (ctx, other):
        exact = exact_by_size(exact_view(view.forest, view.output).forest, like)
        seconds += rows * (d * exact[1] + sum(exact[1:k + 1]) + 2 * exact[d])
    if "mcr" in options.explainers and ctx.X_train is not None:
        seconds += options.mcr_permutations * (d + 1) * len(ctx.X_train) * per_sample
    return SectionPlan("comparison", "challenger: greedy PG² exact, PGI² at σ_ref", rows, 0,
                       REGISTRY["comparison"].seconds + COMPARISON_SECONDS + FIGURE_SECONDS + seconds, why)


def _explanations(ctx, options, rows: int, greedy_per_row: float, per_sample: float, why: str) -> SectionPlan:
    """The explainers' estimate: each explainer's own (:meth:`~.explainers.Explainer.cost`: greedy PG², TreeSHAP,
    local MDI, AcME, MCR, DT-Sampler...), their global importance panels and local figures."""
    depths = leaf_depths(ctx.forest)
    leaves = float(depths.sum())
    mean_depth = float(np.sum(depths @ np.arange(depths.shape[1]))) / max(leaves, 1.0)
    costs = Costs(rows, per_sample, greedy_per_row, leaves, mean_depth, _n_rows(ctx), FIGURE_SECONDS,
                  PYPLOT_FIGURE_SECONDS)
    on = set(options.explainers)
    seconds = REGISTRY["explanations"].seconds + FIGURE_SECONDS * math.ceil(len(on) / 2)     # importance panels
    for key in (k for k in EXPLAINER_REGISTRY if k in on):
        for term in EXPLAINER_REGISTRY[key].cost(ctx, options, costs):
            seconds += term
    return SectionPlan("explanations", "greedy PG² exact" if "pg2" in on else "-", rows, 0, seconds, why)
