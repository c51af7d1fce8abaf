"""Model section: what the model is, its target and its predictive performance on the test data."""

from __future__ import annotations

from .. import describe
from ..section import Table
from . import new, register


@register("model", "Model and predictive performance")
def build(ctx, results, options):
    """Model facts, target distribution and the performance table(s)."""
    section = new("model")
    cl = ctx.cluster
    section.data = {"card": describe.model_card(ctx), "target": describe.target_summary(ctx),
                    "performance note": "" if ctx.y_test is not None else "not computed (no test target given)"}
    if cl is not None:
        section.data["card"]["test rows"] = cl.n_rows
    if ctx.y_test is None:
        return section
    try:
        performance = describe.performance(ctx)
    except Exception as exc:  # noqa: BLE001 - e.g. the model's own predict refusing missing values
        section.data["performance note"] = f"not computed ({type(exc).__name__}: {exc})"
        section.status, section.reason = "warn", section.data["performance note"]
        return section
    on_sample = "" if cl is None else f" On a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows."
    overall = {"regression": "", "classification": " (overall, every class counted)"}[ctx.task]
    section.tables.append(Table(f"Predictive performance on the test and training data{overall}.{on_sample}",
                                performance))
    section.data["performance"] = performance
    if performance.filter(like="ROC AUC", axis=0).isna().to_numpy().any():
        section.data["performance note"] = describe.NO_ROC_AUC
    if ctx.task == "classification" and len(ctx.classes) > 2:
        table, shown = describe.per_class(ctx)
        section.data.update({"per class": table, "classes shown": shown})
        section.tables.append(Table(f"Test performance per class, {shown}, by decreasing number of test rows. "
                                    f"The detailed pages explain class {ctx.positive_class}.{on_sample}", table))
    return section
