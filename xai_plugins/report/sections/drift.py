"""Drift section: per feature, how far the test data's distribution moved from the training data's
(population stability index and two-sample KS test; for a categorical feature, PSI over its categories and a χ²
test of homogeneity; see :mod:`xai_plugins.report.drift`).

``raw["criterion"]`` holds the drift criterion of the model-fitness verdict (the verdict section reads it).
"""

from __future__ import annotations

from .. import drift, figures
from .. import verdict as vd
from ..section import Table
from . import new, register

NAME = "drift"
#: features drawn in the figure (the table lists every feature)
FIGURE_FEATURES = 15


@register(NAME, "Drift between training and test data")
def build(ctx, results, options):
    """PSI and KS (categorical: χ²) test per feature when training data is given; "not applicable" (and the
    criterion not assessed) without it."""
    section = new(NAME)
    t = options.limits
    if ctx.X_train is None:
        section.status, section.reason = "not applicable", "no training data was given to compare the test data with"
        section.raw["criterion"] = vd.not_assessed(section.title, NAME, section.reason, vd.rule(NAME, t))
        return section
    categorical = {name: int(ctx.forest.n_categories[j]) for j, name in enumerate(ctx.feature_names)
                   if ctx.categorical[j]}
    table = drift.drift_table(ctx.X_train, ctx.X_test, t, categorical=categorical)
    n_train, n_test = len(ctx.X_train), len(ctx.X_test)
    criterion = drift.drift_criterion(table, n_train, n_test, t)
    counts = table["drift"].value_counts()
    on_sample = "" if ctx.cluster is None else f" (a random sample of {n_test} of the {ctx.cluster.n_rows} test rows)"
    section.data = {"table": table, "training rows": n_train, "test rows": n_test, "on sample": on_sample,
                    "categorical features": list(categorical),
                    "features by drift": {label: int(counts.get(label, 0)) for label in
                                          (drift.MAJOR, drift.MODERATE, drift.UNCONFIRMED, drift.NONE)},
                    "PSI of two samples of one distribution": drift.psi_noise(int(table["bins"].max()), n_train,
                                                                              n_test),
                    "status": criterion.status, "word": criterion.word}
    section.raw["criterion"] = criterion
    most = "" if len(table) <= FIGURE_FEATURES else f" of the {FIGURE_FEATURES} features with the largest PSI"
    section.figures.append(figures.drift_bars(
        f"Population stability index{most}, training → test data, coloured by drift (a PSI counts only where the "
        "Bonferroni-corrected KS test, or χ² test for a categorical feature, confirms the shift); dashed line: "
        f"{t['drift_warn']:g} (drift_warn), solid line: "
        f"{t['drift_fail']:g} (drift_fail).", table["PSI"], table["drift"],
        {f"drift_warn {t['drift_warn']:g}": t["drift_warn"], f"drift_fail {t['drift_fail']:g}": t["drift_fail"]},
        FIGURE_FEATURES))
    over = (f"; for the categorical feature(s) {', '.join(map(str, categorical))}, PSI over the categories and the χ² "
            "test of homogeneity of the training and test category counts" if categorical else "")
    section.tables.append(Table("Drift per feature, by decreasing PSI: PSI over the training deciles (bins; missing "
                                "values a bin of their own) and the two-sample KS test" + over + ", the test's "
                                "statistic and p-value (raw and Bonferroni-corrected over all features), the shares of "
                                "missing values and the drift label.", table.drop(columns=["p-value"])))
    return section

