"""Drift section: per feature, how far the test data's distribution moved from the training data's, and the drift
criterion of the model-fitness verdict (the section's typed result, :class:`~..criteria.Evidence`).

Per feature:

- the **population stability index** PSI = Σ_b (a_b − e_b) · ln(a_b / e_b) over bins b, with e_b the share of
  training rows and a_b the share of test rows in bin b; the bins are cut at the training data's deciles
  (:data:`N_BINS` bins, fewer where deciles coincide, e.g. 0/1 columns) and missing values form a bin of their
  own, so a change in the missing rate counts as drift; a share of 0 is raised to :data:`SHARE_FLOOR` so that
  the logarithm stays finite (the customary correction);
- the **two-sample Kolmogorov–Smirnov test** (:func:`scipy.stats.ks_2samp`, observed values only) with its
  p-value, Bonferroni-corrected over the features (a p-value times the number of features, at most 1).

A **categorical feature** (category codes) has its categories as the PSI's bins (unseen categories one bin,
missing values one more, :func:`category_shares`) and the **χ² test of homogeneity** of its observed categories
in the two samples (:func:`chi2_test`, :func:`scipy.stats.chi2_contingency`) in place of the KS test, with the
same Bonferroni correction over all the features.

The rule (:func:`drift_criterion`, thresholds ``drift_warn`` / ``drift_fail`` / ``drift_alpha`` of
:data:`~..criteria.THRESHOLDS`): PSI below 0.1 is the customary "no significant shift", 0.1 to 0.25 "moderate",
0.25 and above "major". A PSI is judged only where the KS test confirms the shift, because two samples of one
distribution give PSI ≈ (B − 1)(1/n_train + 1/n_test) over B bins (:func:`psi_noise`) — about 0.1 for a
few hundred rows — so on small data sets PSI alone flags random splits. A feature drifts *majorly* when its
PSI ≥ ``drift_fail`` and its corrected KS p-value < ``drift_alpha``, *moderately* when its PSI ≥ ``drift_warn``
and the test rejects; a PSI ≥ ``drift_fail`` that the test does not confirm is "unconfirmed" (too few rows to
tell). The criterion fails on a major drift, warns on a moderate or unconfirmed one, and passes otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ...errors import InputError
from ...perturbation import category_atoms
from .. import criteria, figures
from .. import verdict as vd
from ..criteria import Evidence, Kind, Threshold, named
from ..section import Table, new, register

__all__: list = []

NAME = "drift"
#: the thresholds of the drift criterion
THRESHOLDS = (
    Threshold("drift_warn", 0.1, "drift: PSI of a feature at or above which a confirmed shift warns",
              "the customary population-stability-index limit of \"no significant shift\" (credit scoring practice)",
              NAME, 0.0, float("inf"), "a PSI ≥ 0"),
    Threshold("drift_fail", 0.25, "drift: PSI of a feature at or above which a confirmed shift fails",
              "the customary limit of a \"major shift\" that calls for investigation or redevelopment", NAME, 0.0,
              float("inf"), "a PSI ≥ 0", at_least="drift_warn"),
    Threshold("drift_alpha", 0.05, "drift: Bonferroni-corrected two-sample KS p-value (χ² test of homogeneity for a "
              "categorical feature) below which a shift is confirmed",
              "the conventional 5% level, corrected for testing every feature", NAME, 0.0, 1.0,
              "a significance level, both ends excluded", open=True),
)


def _rule(t: dict) -> str:
    return (f"per feature, PSI over the training deciles (missing values a bin of their own) and a two-sample KS "
            f"test (a categorical feature: PSI over its categories and a χ² test of homogeneity), "
            f"Bonferroni-corrected over the features: fail when a feature's PSI ≥ "
            f"{named('drift_fail', t)} and its p-value < {named('drift_alpha', t)}; warn when a PSI ≥ "
            f"{named('drift_warn', t)} is so confirmed, or a PSI ≥ drift_fail is not (too few rows to tell); "
            "else pass")


DRIFT = Kind(NAME, criteria.MODEL_FITNESS, {"pass": "no confirmed drift", "warn": "moderate or unconfirmed drift",
                                            "fail": "major drift"}, _rule)


#: bins of the PSI: the training data's deciles
N_BINS = 10
#: the smallest share a bin counts with in the PSI (an empty bin would make ln(a / e) infinite)
SHARE_FLOOR = 1e-4
#: per-feature drift labels, by :func:`feature_status`
NONE, MODERATE, MAJOR, UNCONFIRMED = "none", "moderate", "major", "unconfirmed"
#: the criterion status a feature's drift label leads to
STATUS_OF_LABEL = {NONE: vd.PASS, MODERATE: vd.WARN, UNCONFIRMED: vd.WARN, MAJOR: vd.FAIL}
SEVERITY = [vd.PASS, vd.WARN, vd.FAIL]


def bin_edges(train, n_bins: int = N_BINS) -> np.ndarray:
    """Inner bin edges of one feature: the distinct quantiles of its observed training values at 1/n_bins, ...,
    (n_bins − 1)/n_bins (training values themselves: the inverse of the empirical CDF), below the largest value.
    The bins are (−inf, q_1], (q_1, q_2], ..., (q_k, +inf), each holding training rows (a 0/1 column: two)."""
    values = np.asarray(train, dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return np.empty(0)
    edges = np.unique(np.quantile(values, np.arange(1, n_bins) / n_bins, method="inverted_cdf"))
    return edges[edges < values.max()]


def bin_shares(values, edges) -> np.ndarray:
    """Shares of ``values`` in the bins of ``edges`` (see :func:`bin_edges`), then the share of missing (NaN)
    values: an array of len(edges) + 2 summing to 1."""
    values = np.asarray(values, dtype=float)
    missing = np.isnan(values)
    counts = np.bincount(np.searchsorted(edges, values[~missing], side="left"), minlength=len(edges) + 1)
    return np.append(counts, missing.sum()) / max(len(values), 1)


def category_shares(values, n_categories: int) -> np.ndarray:
    """Shares of the values of a categorical feature in its K = ``n_categories`` codes, then in "unseen" (any
    other number) and in "missing" (NaN): an array of K + 2 summing to 1."""
    atoms = category_atoms(np.asarray(values, dtype=float), n_categories)
    return np.bincount(atoms, minlength=n_categories + 2) / max(len(atoms), 1)


def chi2_test(train, test, n_categories: int) -> tuple[float, float]:
    """The χ² test of homogeneity of a categorical feature's observed categories (unseen ones pooled, missing
    values left out) in the training and test samples: (statistic, p-value) of
    :func:`scipy.stats.chi2_contingency` on the 2 × categories table of counts, categories absent from both
    left out, without continuity correction; (0, 1) when fewer than two categories are observed (nothing can
    differ), (NaN, NaN) when a sample has no observed value."""
    counts = np.array([np.bincount(category_atoms(np.asarray(v, dtype=float), n_categories),
                                   minlength=n_categories + 2)[:-1] for v in (train, test)])
    if not counts.sum(axis=1).all():
        return np.nan, np.nan
    counts = counts[:, counts.sum(axis=0) > 0]
    if counts.shape[1] < 2:
        return 0.0, 1.0
    result = stats.chi2_contingency(counts, correction=False)
    return float(result.statistic), float(result.pvalue)


def psi(expected, actual, floor: float = SHARE_FLOOR) -> float:
    """Population stability index Σ (a − e) · ln(a / e) of the bin shares ``actual`` (test) against ``expected``
    (training), each share raised to at least ``floor``."""
    e = np.maximum(np.asarray(expected, dtype=float), floor)
    a = np.maximum(np.asarray(actual, dtype=float), floor)
    return float(np.sum((a - e) * np.log(a / e)))


def psi_noise(n_bins: int, n_train: int, n_test: int) -> float:
    """The PSI two samples of one distribution give on average, to first order: (B − 1)(1/n_train + 1/n_test) for
    B bins (the PSI is then a symmetrised χ² statistic divided by the sample size)."""
    return (n_bins - 1) * (1 / max(n_train, 1) + 1 / max(n_test, 1))


def feature_status(psi_value: float, p_adjusted: float, thresholds=None) -> str:
    """The drift label of one feature (module docstring): "major", "moderate", "unconfirmed" or "none"."""
    t = vd.limits(thresholds)
    confirmed = bool(p_adjusted < t["drift_alpha"])
    if psi_value >= t["drift_fail"]:
        return MAJOR if confirmed else UNCONFIRMED
    return MODERATE if psi_value >= t["drift_warn"] and confirmed else NONE


def drift_table(X_train: pd.DataFrame, X_test: pd.DataFrame, thresholds=None, n_bins: int = N_BINS,
                categorical=None) -> pd.DataFrame:
    """Per feature (the columns of ``X_test``, also in ``X_train``): PSI, its bins, the test ("KS", or "χ²" for
    a categorical feature), its statistic, p-value and Bonferroni-corrected p-value, the missing shares, and the
    drift label (:func:`feature_status`); sorted by decreasing PSI. ``categorical``: {column: number of category
    codes} of the categorical features (their codes in the frames), binned by category."""
    missing = [c for c in X_test.columns if c not in X_train.columns]
    if missing:
        raise InputError(f"X_train lacks the test column(s) {missing[:10]}: drift compares the same features")
    categorical = dict(categorical or {})
    rows = {}
    for name in X_test.columns:
        train, test = X_train[name].to_numpy(dtype=float), X_test[name].to_numpy(dtype=float)
        if name in categorical:
            k = int(categorical[name])
            expected, actual = category_shares(train, k), category_shares(test, k)
            bins, test_name = int(np.count_nonzero(expected[:-1] + actual[:-1])), "χ²"
            statistic, p_value = chi2_test(train, test, k)
        else:
            edges = bin_edges(train, n_bins)
            expected, actual, bins, test_name = bin_shares(train, edges), bin_shares(test, edges), len(edges) + 1, "KS"
            statistic, p_value = _ks(train, test)
        rows[name] = {"PSI": psi(expected, actual), "bins": bins, "test": test_name, "statistic": statistic,
                      "p-value": p_value, "training missing": float(np.isnan(train).mean()),
                      "test missing": float(np.isnan(test).mean())}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "feature"
    table["p-value (Bonferroni)"] = np.minimum(table["p-value"] * len(table), 1.0)
    table["drift"] = [feature_status(v, p, thresholds) for v, p in
                      zip(table["PSI"], table["p-value (Bonferroni)"].fillna(1.0))]
    return table.sort_values("PSI", ascending=False, kind="stable")


def _ks(train: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """The two-sample KS test on the observed values: (statistic, p-value), NaN when a sample has none."""
    observed_train, observed_test = train[~np.isnan(train)], test[~np.isnan(test)]
    if not (len(observed_train) and len(observed_test)):
        return np.nan, np.nan
    ks = stats.ks_2samp(observed_train, observed_test)
    return float(ks.statistic), float(ks.pvalue)


def drift_criterion(table: pd.DataFrame, n_train: int, n_test: int, thresholds=None) -> vd.Criterion:
    """The drift criterion of the model-fitness verdict from a :func:`drift_table`: the worst feature's status
    (module docstring); its value is the largest PSI (no interval: the KS test carries the sampling error)."""
    name, kind, t = "Drift between training and test data", "drift", vd.limits(thresholds)
    text = vd.rule(kind, t)
    if not len(table):
        return vd.not_assessed(name, kind, "no feature to compare", text)
    by_label = {label: list(table.index[table["drift"] == label].astype(str)) for label in (MAJOR, MODERATE,
                                                                                             UNCONFIRMED)}
    status = max((STATUS_OF_LABEL[label] for label in table["drift"]), key=SEVERITY.index)
    top = table.index[0]
    bins = int(table["bins"].max())
    found = "; ".join(f"{label}: {', '.join(names[:6])}" + (f" and {len(names) - 6} more" if len(names) > 6 else "")
                      for label, names in by_label.items() if names)
    p_value = table["p-value (Bonferroni)"].iloc[0]
    bounds = (t["drift_warn"], t["drift_fail"])
    explanation = (f"Largest PSI: {top} ({vd.shown(table['PSI'].iloc[0], bounds, '.3f')}, {table['test'].iloc[0]} "
                   f"p-value {vd.shown(p_value, (t['drift_alpha'],), '.2g')} after Bonferroni "
                   f"correction over {len(table)} features); drift by feature — "
                   f"{found or 'none above the thresholds'}. Two samples of one distribution give PSI ≈ "
                   f"{psi_noise(bins, n_train, n_test):.3f} on average here ({bins} bins, {n_train} training and "
                   f"{n_test} test rows).")
    named = ", ".join(by_label[MAJOR][:6])
    implication = {vd.FAIL: f"The test data differ from the training data on {named}: the performance and the "
                            "explanations measured here may not hold for the data the model was trained on, nor the "
                            "other way round; find out why before relying on the model.",
                   vd.WARN: "Some features' distributions shifted between training and test data (or could not be "
                            "confirmed stable): check that the test data represent the intended use."}.get(status, "")
    return vd.Criterion(name, status, float(table["PSI"].iloc[0]), None, text, explanation, kind, implication,
                        bounds)


#: features drawn in the figure (the table lists every feature)
FIGURE_FEATURES = 15


@register(NAME, "Drift between training and test data", result=Evidence, thresholds=THRESHOLDS, kinds=(DRIFT,),
          seconds=0.3, position=70, stage=40)
def build(ctx, results, options):
    """PSI and KS (categorical: χ²) test per feature when training data is given; "not applicable" (and the
    criterion not assessed) without it."""
    section = new(NAME)
    t = options.limits
    if ctx.X_train is None:
        section.status, section.reason = "not applicable", "no training data was given to compare the test data with"
        section.result = Evidence(vd.not_assessed(section.title, NAME, section.reason, vd.rule(NAME, t)))
        return section
    categorical = {name: int(ctx.forest.n_categories[j]) for j, name in enumerate(ctx.feature_names)
                   if ctx.categorical[j]}
    table = drift_table(ctx.X_train, ctx.X_test, t, categorical=categorical)
    n_train, n_test = len(ctx.X_train), len(ctx.X_test)
    criterion = drift_criterion(table, n_train, n_test, t)
    counts = table["drift"].value_counts()
    on_sample = "" if ctx.cluster is None else f" (a random sample of {n_test} of the {ctx.cluster.n_rows} test rows)"
    section.data = {"table": table, "training rows": n_train, "test rows": n_test, "on sample": on_sample,
                    "categorical features": list(categorical),
                    "features by drift": {label: int(counts.get(label, 0)) for label in
                                          (MAJOR, MODERATE, UNCONFIRMED, NONE)},
                    "PSI of two samples of one distribution": psi_noise(int(table["bins"].max()), n_train,
                                                                              n_test),
                    "status": criterion.status, "word": criterion.word}
    section.result = Evidence(criterion)
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

