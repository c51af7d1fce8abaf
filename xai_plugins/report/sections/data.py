"""Data section: the per-feature distribution of the test data and its missing values (numeric features:
mean, sd and quantiles; categorical features: the rows in each category)."""

from __future__ import annotations

from .. import describe
from ..section import Table
from . import new, register


@register("data", "Data summary")
def build(ctx, results, options):
    """Per-feature distribution tables (numeric; categorical) and counts of rows, features and missing values."""
    section = new("data")
    summary = describe.data_summary(ctx)
    section.data = {"missing values": int(ctx.X_test.isna().to_numpy().sum()), "rows": len(ctx.X_test),
                    "features": ctx.n_features, "binary features": [n for n, b in zip(ctx.feature_names,
                                                                                       ctx.binary_features) if b],
                    "categorical features": ctx.categorical_names}
    caption = "Per-feature distribution of the test data (missing: count of missing values)."
    cl = ctx.cluster
    if cl is not None:
        summary["missing"] = cl.missing[~ctx.categorical]
        section.data.update({"missing values": int(cl.missing.sum()), "rows": cl.n_rows})
        caption = (f"Per-feature distribution of a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows "
                   f"(missing: count of missing values over all {cl.n_rows} rows, computed on {cl.where}).")
    if len(summary):
        numeric = caption.replace("Per-feature distribution", "Distribution of each numeric feature")
        section.tables.append(Table(numeric if ctx.categorical.any() else caption, summary))
    if ctx.categorical.any():
        sample = "" if cl is None else f" (a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows)"
        section.tables.append(Table(
            f"Categorical features: the rows in each category (count and share) in the test data{sample}"
            + ("" if ctx.X_train is None else " and the training data")
            + "; unseen categories (labels the model never saw) and missing values get a row of their own when "
            "present.", describe.category_counts(ctx).reset_index(), index=False))
    return section
