"""Data section: the per-feature distribution of the test data and its missing values."""

from __future__ import annotations

from .. import describe
from ..section import Table
from . import new, register


@register("data", "Data summary")
def build(ctx, results, options):
    """Per-feature distribution table and counts of rows, features and missing values."""
    section = new("data")
    summary = describe.data_summary(ctx)
    section.data = {"missing values": int(summary["missing"].sum()), "rows": len(ctx.X_test),
                    "features": ctx.n_features, "binary features": [n for n, b in zip(ctx.feature_names,
                                                                                       ctx.binary_features) if b]}
    caption = "Per-feature distribution of the test data (missing: count of missing values)."
    cl = ctx.cluster
    if cl is not None:
        summary["missing"] = cl.missing
        section.data.update({"missing values": int(cl.missing.sum()), "rows": cl.n_rows})
        caption = (f"Per-feature distribution of a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows "
                   f"(missing: count of missing values over all {cl.n_rows} rows, computed on {cl.where}).")
    section.tables.append(Table(caption, summary))
    return section
