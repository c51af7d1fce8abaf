"""Explanations section: run every requested explainer on the same rows of the test data.

The per-row methods (TreeSHAP, greedy PG², local MDI, AcME) explain the same ``max_rows`` complete
test rows, a seeded sample that depends only on the data and ``random_state`` — unless the user
opts into a ``time_budget``, which may lower the row count on a slow machine (the report then says
it is machine-dependent). Its typed result (:class:`Explained`) holds what the other sections read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...engines import MEMORY
from ...prediction_gap import greedy_pg2_ranking, pgi2
from .. import explainers, figures, runners
from ..section import REGISTRY, SKIPPED, Table, new, register

__all__: list = []



def consumers() -> set:
    """The optional sections that need the explainers to run: this one and those naming it in their reads (a
    section reading every other, the regulatory mapping, does not need them)."""
    return {name for name, unit in REGISTRY.items() if unit.optional and (name == "explanations"
                                                                          or "explanations" in unit.reads)}


@dataclass
class Explained:
    """What other sections read of the explanations section: ``methods`` (explainer key →
    :class:`~xai_plugins.report.runners.MethodResult`), ``rows`` (explained row positions in memory),
    ``importances`` (explainer key → (rows, features) per-row importance: |SHAP|, |AcME|, |local MDI|, greedy PG²
    gains), ``agreement_rows`` (rows of the per-row agreement) and ``explained`` (the explained rows, in memory or
    on a row engine: :class:`~xai_plugins.report.runners.AuditRows`; None when nothing ran); ``n_explained`` the
    explained rows' count, ``n_complete`` the complete test rows they were drawn from and ``row_count`` how their
    count was set (the facts ``data`` shows too)."""

    methods: dict = field(default_factory=dict)
    rows: np.ndarray = field(default_factory=lambda: np.arange(0))
    importances: dict = field(default_factory=dict)
    agreement_rows: int = 0
    explained: object = None
    n_explained: int = 0
    n_complete: int = 0
    row_count: dict = field(default_factory=dict)


@register("explanations", "Explanations by method", result=Explained, seconds=0.3, position=80, stage=50, optional=True,
          default=True)
def build(ctx, results, options):
    """Run the explainers (when any consumer section is requested) and show their importances."""
    section = new("explanations")
    if not consumers() & set(options.sections):
        section.status, section.reason = "skipped", SKIPPED
        section.result = Explained()
        return section
    if ctx.cluster is not None:
        _run_on_engine(ctx, options, section)
    else:
        _run_in_memory(ctx, options, section)
    methods = section.result.methods
    section.result.n_explained = section.data["explained rows"]
    section.result.n_complete = section.data["complete test rows (sampled from)"]
    section.result.row_count = section.data["row-count calibration"]
    section.result.importances = {key: m.extras.get("per_row", m.local_scores) for key, m in methods.items()
                                  if m.status == "ok" and m.local_scores is not None}
    if "explanations" not in options.sections:
        section.status, section.reason = "skipped", SKIPPED
        return section
    failed = [m for m in methods.values() if m.status == "failed"]
    if failed:
        section.status = "warn"
        section.reason = "; ".join(f"{m.label} failed ({m.reason})" for m in failed)
    _show(ctx, section, options)
    return section


def _run_in_memory(ctx, options, section) -> None:
    rows, calibration = choose_rows(ctx, options)
    local_rows = local_row_positions(ctx, rows, options.n_local)
    explained = runners.AuditRows(MEMORY, ctx.X_test.to_numpy()[rows], rows, np.arange(len(rows)),
                                  ctx.X_test.to_numpy()[np.asarray(local_rows, dtype=np.int64)],
                                  [ctx.row_label(r) for r in local_rows])
    methods = runners.run_all(ctx, explained, options)
    section.result = Explained(methods, rows, {}, len(rows), explained)
    section.raw = {"local labels": explained.local_labels}
    section.data = {"explained rows": len(rows), "rows scope": "test rows drawn at random (seeded)",
                    "complete test rows (sampled from)": len(ctx.complete_rows), "row-count calibration": calibration}


def _run_on_engine(ctx, options, section) -> None:
    cl = ctx.cluster
    explained = runners.engine_rows(ctx, cl, options.n_local)
    agreement_rows = len(explained.agreement)
    methods = runners.run_all(ctx, explained, options)
    section.result = Explained(methods, ctx.sample_rows(len(ctx.X_test)), {}, agreement_rows, explained)
    section.raw = {"local labels": explained.local_labels}
    section.data = {
        "explained rows": cl.n_complete,
        "rows scope": (f"test rows: every complete test row ({cl.n_rows - cl.n_complete} of the {cl.n_rows} have a "
                       f"missing value), computed on {cl.where} (max_rows and time_budget do not apply); the "
                       f"per-row agreement uses a random sample of {agreement_rows} of them"),
        "complete test rows (sampled from)": cl.n_complete,
        "row-count calibration": {"rows": cl.n_complete, "time budget": f"none: every complete test row, on "
                                  f"{cl.where} (max_rows and time_budget ignored)"}}


def choose_rows(ctx, options) -> tuple[np.ndarray, dict]:
    """Explained rows: the run-time plan's count (``max_rows``, or fewer when its estimate of the whole audit
    exceeds ``cost_target``: see :mod:`..plan`) of seeded complete test rows. Only with the opt-in
    ``time_budget``, fewer (never fewer than 10, or all) when a timed probe on two rows estimates the PG²
    work (greedy ranking plus every ranking's exact PGI² at every σ) to exceed it."""
    if options.time_budget is None:
        planned = options.max_rows if ctx.plan is None else ctx.plan.rows
        candidates = ctx.sample_rows(planned)
        return candidates, {"rows": len(candidates), "time budget": "none (the row count depends only on the "
                            "data and the options)",
                            **({} if planned >= options.max_rows else
                               {"run-time plan": f"{planned} of max_rows={options.max_rows} rows: "
                                                 f"{ctx.plan.sections['explanations'].note}"})}
    candidates = ctx.sample_rows(options.max_rows)
    probe = ctx.X_test.to_numpy()[candidates[:2]]
    noise = ctx.noise(options.sigma_ref, options.binary_sigma)
    per_row = 0.0
    try:
        if any(explainers.get(key).reference for key in options.explainers):     # the greedy PG² reference
            t = time.perf_counter()
            ranking = greedy_pg2_ranking(ctx.forest, probe, **noise, output=ctx.output, verbose=ctx.progress).ranking
            per_row += (time.perf_counter() - t) / len(probe)
        else:
            ranking = np.tile(np.arange(ctx.n_features), (len(probe), 1))
        if "faithfulness" in options.sections:  # every method's ranking and the random one, scored together
            rng = ctx.rng("row-count probe")
            stacked = np.stack([ranking] + [np.argsort(rng.random(ranking.shape), axis=1) for _ in options.explainers])
            t = time.perf_counter()
            pgi2(ctx.forest, probe, stacked, **noise, verbose=ctx.progress,
                 output=ctx.output)
            per_row += (time.perf_counter() - t) / len(probe) * len(options.sigma)
    except Exception as exc:  # noqa: BLE001 - the methods themselves will report the problem
        return candidates, {"rows": len(candidates), "probe failed": f"{type(exc).__name__}: {exc}"}
    if per_row == 0:
        return candidates, {"estimated seconds per row": per_row, "rows": len(candidates)}
    n = int(np.clip(int(options.time_budget / per_row), min(10, options.max_rows), options.max_rows))
    return ctx.sample_rows(n), {"estimated seconds per row": per_row, "rows": n,
                                "time budget": f"{options.time_budget:g} s (machine-dependent row count)"}


def local_row_positions(ctx, rows, n_local: int) -> list:
    """Explained rows with the highest and lowest output, alternating, ``n_local`` in all."""
    if n_local <= 0 or len(rows) == 0:
        return []
    order = rows[np.argsort(ctx.score(ctx.X_test.to_numpy()[rows]), kind="stable")]
    return runners.extremes_first(order, n_local)


def explains(ctx, key: str) -> str:
    """What explainer ``key``'s scores explain: the explained output, unless the explainer says otherwise (its
    ``explains``: local MDI the impurity decreases of the fitted trees, DT-Sampler the predicted classes, MCR the
    model's loss)."""
    said = explainers.get(key).explains
    return said.format(output=ctx.output_label) if said else ctx.output_label


def _show(ctx, section, options) -> None:
    methods = section.result.methods
    shown = [m for m in methods.values() if m.status == "ok" and m.importance is not None
             and explainers.get(m.key).in_importance_bars]
    ok = {m.label: m.importance for m in shown}
    section.data.update({"local rows": section.raw["local labels"],
                         "explains": {m.label: explains(ctx, m.key) for m in methods.values() if m.status == "ok"},
                         "methods": {m.label: {"status": m.status, "reason": m.reason, "params": m.params}
                                     for m in methods.values()}})
    if ok:
        section.figures.append(figures.importance_bars(
            f"Global importance of the top features by method (explained output: {ctx.output_label}). "
            + "; ".join(f"{m.label}: {explainers.get(m.key).caption}" for m in shown) + ".", ok))
        table = pd.DataFrame(ok)
        table.index.name = "feature"
        lead = next(iter(ok))
        section.tables.append(Table(f"Global importances of every feature, sorted by {lead}.",
                                    table.sort_values(lead, ascending=False)))
    for m in methods.values():
        per_class = m.extras.get("per class") if explainers.get(m.key).per_class else None
        if per_class is None:
            continue
        top = per_class.mean(axis=1).sort_values(ascending=False).head(12).index
        table = per_class.loc[top]
        table.index.name = "feature"
        section.data[f"{m.label} per class"] = per_class
        caption = explainers.get(m.key).caption
        section.tables.append(Table(f"{caption[0].upper() + caption[1:]} per class (every one of the "
                                    f"{per_class.shape[1]} classes; the 12 features with the highest mean over "
                                    f"classes): the multi-class summary behind the detailed pages, which explain "
                                    f"class {ctx.positive_class}.", table))
    kinds = {kind: [f for m in methods.values() if explainers.get(m.key).figure_kind == kind for f in m.figures]
             for kind in ("global", "local")}
    section.raw["global figures"] = list(section.figures) + kinds["global"]
    section.raw["local figures"] = kinds["local"]
    section.figures = section.raw["global figures"] + section.raw["local figures"]
