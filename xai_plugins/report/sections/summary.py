"""Summary section: the key findings on one page, and every failure the audit met.

``data["problems"]`` lists each section or method that failed or warns (the CLI prints them to
stderr, and ``--strict`` turns a failure into exit status 1); ``data["findings"]`` the findings.
Means over rows carry a 95 % bootstrap confidence interval over those rows. Every qualitative word
("strong", "faithful", ...) is the verdict's (:data:`..criteria.WORDS` of the criterion's status), so
the summary cannot contradict it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..options import flag
from ..render import fmt
from ..section import Table, new, register
from ..verdict import bootstrap_ci

__all__: list = []


@register("summary", "Summary of key findings",
          reads=("model", "data", "calibration", "drift", "explanations", "faithfulness", "agreement", "mcr",
                 "fairness", "limitations", "verdict"), position=30, stage=120)
def build(ctx, results, options):
    """Findings from the other sections, and the failures and warnings among them."""
    section = new("summary")
    methods = results["explanations"].result.methods
    problems = collect_problems(results, methods)
    seed = ctx.seed_int("summary")
    verdict = results["verdict"].result.verdict if "verdict" in results and results["verdict"].result else None
    criteria = [] if verdict is None else verdict.criteria
    rows = _method_rows(methods) + _agreement_rows(results["agreement"], seed, criteria) + \
        _faithfulness_rows(results["faithfulness"], seed, criteria) + _mcr_rows(results["mcr"]) + \
        _performance_rows(results["model"])
    section.data = {"findings": rows, "problems": problems, "explained output": ctx.output_label}
    if ctx.task == "classification" and len(ctx.classes) > 2:
        handle = flag("positive_class") if options.command_line is not None else "positive_class="
        chosen = "chosen" if options.positive_class is not None else "by default the most frequent test class"
        section.data["classes"] = (f"{len(ctx.classes)} classes; the detailed pages explain class "
                                   f"{ctx.positive_class} ({chosen}; choose another with {handle}); the performance "
                                   "and explanations sections summarise every class")
    if any(p["status"] == "failed" for p in problems):
        section.status = "warn"
        section.reason = "; ".join(p["what"] for p in problems if p["status"] == "failed") + " failed"
    section.tables.append(Table(f"Key findings. Explained output: {ctx.output_label}.", pd.DataFrame(rows),
                                index=False))
    return section


def collect_problems(results, methods) -> list:
    """``{"what", "status", "reason"}`` of every section and method that failed or warns."""
    out = [{"what": f"section “{s.title}”", "status": s.status, "reason": s.reason}
           for s in results.values() if s.status in ("failed", "warn")]
    out += [{"what": f"method {m.label}", "status": m.status, "reason": m.reason}
            for m in methods.values() if m.status == "failed"]
    return out


def mean_with_ci(values, seed) -> str:
    """“mean (95% CI [low, high], n rows)” of per-row values."""
    values = np.asarray(values, dtype=float)
    ci = bootstrap_ci(values, random_state=seed)
    return f"{fmt(float(np.mean(values)))} ({ci}, {len(values)} rows)"


def _method_rows(methods) -> list:
    rows = []
    for m in methods.values():
        if m.status == "ok" and m.importance is not None:
            top = m.importance.sort_values(ascending=False, kind="stable").head(3).index.tolist()
            rows.append({"finding": f"Top features: {m.label}", "result": ", ".join(map(str, top))})
        elif m.status != "skipped":
            rows.append({"finding": f"Top features: {m.label}", "result": f"{m.status}: {m.reason}"})
    return rows


def verdict_word(criteria, kind: str) -> str:
    """"word (status, by the verdict's criterion: value and interval)" of each criterion of ``kind``, the
    qualitative word being the verdict's own; "not judged by the verdict" when there is none."""
    said = [f"{c.word} ({c.status} in the verdict" + ("" if c.shown["value"] is None else
                                                     f": {c.shown['value']}"
                                                     + ("" if c.ci is None else f", {c.ci.text(c.limits)}"))
            + ")" for c in criteria if c.kind == kind]
    return "; ".join(said) or "not judged by the verdict"


def _agreement_rows(section, seed, criteria) -> list:
    found = section.result
    if found is None or found.global_tau is None:
        return []
    judged = [c for c in criteria if c.kind == "agreement"]
    basis = ("" if not judged or judged[0].value is None else
             " — the verdict judges the mean per-row τ where per-row scores exist, else the global τ")
    text = (f"{verdict_word(criteria, 'agreement')}{basis}. Mean pairwise Kendall τ of the global importances "
            f"{fmt(found.mean_global_tau)} and mean top-{found.k} overlap {fmt(found.mean_global_overlap)} "
            f"({len(found.methods)} methods, {found.n_features} features)")
    per_row = found.per_row_tau
    if per_row is not None and np.isfinite(per_row).sum() >= 2:
        text += f"; per row: mean pairwise τ {mean_with_ci(per_row[np.isfinite(per_row)], seed)}"
    return [{"finding": "Do the methods agree?", "result": text}]


def _faithfulness_rows(section, seed, criteria) -> list:
    found = section.result
    if found is None or not found.winners:
        return []
    table = found.table.set_index(["method", "sigma"])["mean"]
    per_row, labels = found.pgi2, found.labels
    by_label = {label: key for key, label in labels.items()}

    def shown(label, sigma):
        """The mean PGI² of ``label`` at ``sigma``, with its interval when the per-row values are here."""
        key = by_label.get(label)
        if key is not None and key in per_row.get(sigma, {}):
            return mean_with_ci(per_row[sigma][key], seed)
        return fmt(table[(label, sigma)])

    unit = found.unit
    judged = [c for c in criteria if c.kind == "faithfulness"]
    rows = [{"finding": f"Are the explainers faithful? (verdict, σ = {found.sigma_ref:g})",
             "result": "; ".join(f"{c.name.removeprefix('Faithfulness of ')}: {verdict_word([c], 'faithfulness')}"
                                 for c in judged) or "not judged by the verdict"}]
    for sigma, method in found.winners.items():
        reference = found.reference
        text = f"{method}: mean PGI² {shown(method, sigma)}; random floor {shown('random', sigma)}"
        if reference:
            text += f"; greedy PG² reference {shown(reference, sigma)}"
        if unit:
            text += f" (all in {unit})"
        rows.append({"finding": f"Highest mean PGI² among the explainers at σ = {sigma:g} (the greedy PG² ranking "
                                "is a reference, not a contestant)", "result": text})
    return rows


def _mcr_rows(section) -> list:
    if section.status == "ok":
        table = section.result.table
        result = "; ".join(f"{f} [{fmt(table.loc[f, 'mcr_minus'])}, {fmt(table.loc[f, 'mcr_plus'])}]"
                           for f in section.result.widest)
    elif section.status == "skipped":
        result = f"not computed ({section.reason})"
    else:
        result = f"{section.status}: {section.reason}"
    return [{"finding": "Features with the widest model class reliance ranges", "result": result}]


def _performance_rows(section) -> list:
    frame = None if section.result is None else section.result.performance
    if frame is None or frame.empty:
        return []
    first = frame.index[0]
    result = fmt(frame.loc[first, "test"])
    if "training" in frame.columns:
        result += f" (training: {fmt(frame.loc[first, 'training'])})"
    return [{"finding": f"Test {first}", "result": result}]
