"""Data section: the per-feature distribution of the test data and its missing values (numeric features:
mean, sd and quantiles; categorical features: the rows in each category)."""

from __future__ import annotations

import numpy as np

from ...perturbation import category_atoms
from .. import describe
from ..section import Table, new, register

__all__: list = []


@register("data", "Data summary", position=60, stage=20)
def build(ctx, results, options):
    """Per-feature distribution tables (numeric; categorical) and counts of rows, features and missing values."""
    section = new("data")
    summary = describe.data_summary(ctx)
    section.data = {"missing values": int(ctx.X_test.isna().to_numpy().sum()), "rows": len(ctx.X_test),
                    "features": ctx.n_features, "binary features": [n for n, b in zip(ctx.feature_names,
                                                                                       ctx.binary_features) if b],
                    "categorical features": ctx.categorical_names}
    section.data.update(_input_ranges(ctx))
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


def _input_ranges(ctx) -> dict:
    """The inputs the model was fitted and validated on (read by the deployer extract): per numeric feature its
    [min, max] over the training data (the test data when none was given), and per categorical feature the
    categories of the test data."""
    X = ctx.X_test if ctx.X_train is None else ctx.X_train
    numeric = X.loc[:, ~ctx.categorical]
    ranges = {str(name): [numeric[name].min(), numeric[name].max()] for name in numeric.columns}
    categories = {}
    for j in np.flatnonzero(ctx.categorical):
        seen = set(category_atoms(ctx.X_test.iloc[:, j].to_numpy(dtype=float), int(ctx.forest.n_categories[j])))
        categories[str(ctx.feature_names[j])] = [label for atom, label in enumerate(ctx.categories(j)) if atom in seen]
    return {"input ranges": ranges, "input ranges from": "test data" if ctx.X_train is None else "training data",
            "validated categories": categories}
