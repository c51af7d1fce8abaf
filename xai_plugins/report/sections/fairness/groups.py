"""Fairness of a model towards protected attributes: groups, disparities, explanations, proxies.

A protected attribute (sex, race, an age band, ...) need not be a model feature: the audit looks
at it beside the model's inputs. For each attribute this module computes

* the **groups**: the attribute's own values when it has at most :data:`MAX_GROUPS` of them,
  otherwise (numeric) its quartile bins on the test data (:func:`make_grouping`);
* **predictive performance per group** and the standard **disparity metrics** through fairlearn's
  :class:`~fairlearn.metrics.MetricFrame` (:func:`performance_by_group`). Classification (the
  positive class against the rest): demographic-parity difference
  max_g P(ŷ = +|g) − min_g P(ŷ = +|g) and equalized-odds difference
  max(max_g TPR_g − min_g TPR_g, max_g FPR_g − min_g FPR_g). Regression: MAE, RMSE and mean
  prediction per group, their between-group gap (max − min) and the worst/best MAE ratio;
* the **mean |importance| per feature and group** of each explanation method
  (:func:`importance_by_group`), and how far apart two groups' importance profiles are
  (total-variation distance ½ Σ_j |p_a,j − p_b,j| of the importances normalised to sum to 1);
* the **model features that encode or predict the attribute** (:func:`encoding_columns`,
  :func:`proxy_check`): mutual information of each feature with the attribute, as a share of the
  attribute's entropy, and the cross-validated ROC AUC of a small random-forest classifier
  predicting the attribute from the features;
* the model's **reliance** on the attribute's encoding columns when the attribute is an input
  (:func:`permutation_reliance`; MR = E L(f, X with the columns scrambled jointly) − E L(f, X)).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...._extras import needs
from ....errors import InputError
from ...criteria import Threshold, limits

__all__: list = []

#: an attribute with at most this many distinct values is used as groups as it is
MAX_GROUPS = 10
#: a numeric attribute with more distinct values is cut into this many quantile bins
N_BINS = 4
#: bootstrap resamples of the test rows for the confidence intervals of the disparity metrics
N_BOOT = 100
_INF = float("inf")
#: the settable thresholds of the fairness section (``thresholds=`` / ``--threshold NAME=VALUE``)
SETTABLE = (
    Threshold("demographic_parity", 0.1, "fairness: demographic-parity difference above which it warns (fails when "
              "the whole interval lies above)", "a gap of 10 percentage points in the share of positive predictions, "
              "the customary limit in fairness practice", "fairness", 0.0, 1.0, "a difference of rates in [0, 1]"),
    Threshold("equalized_odds", 0.1, "fairness: equalized-odds difference above which it warns (fails when the "
              "whole interval lies above)", "a gap of 10 percentage points in the true- or false-positive rate, "
              "the same limit as demographic parity", "fairness", 0.0, 1.0, "a difference of rates in [0, 1]"),
    Threshold("mean_prediction_gap", 0.5, "fairness (regression): mean-prediction gap, in standard deviations of "
              "the predictions, above which it warns (fails when the whole interval lies above)",
              "a medium standardised difference (Cohen's d = 0.5)", "fairness", 0.0, _INF,
              "a gap in standard deviations ≥ 0"),
    Threshold("mae_ratio", 1.25, "fairness (regression): worst / best group MAE above which it warns",
              "the four-fifths rule read for errors (1 / 0.8 = 1.25)", "fairness", 1.0, _INF,
              "a worst / best ratio ≥ 1"),
    Threshold("importance_profile_distance", 0.25, "fairness: total-variation distance between two groups' "
              "importance profiles above which it warns", "a quarter of the importance mass on other features",
              "fairness", 0.0, 1.0, "a total-variation distance in [0, 1]"),
    Threshold("proxy_auc", 0.8, "fairness: ROC AUC of the features predicting the attribute above which it warns",
              "an AUC of 0.8 is conventionally \"good\" discrimination: the features then reveal the attribute",
              "fairness", 0.0, 1.0, "a ROC AUC in [0, 1]"),
    Threshold("min_group_rows", 30, "fairness: fewest test rows a group needs for its disparities to be judged",
              "a rate over fewer than 30 rows has a 95% interval wider than ±0.17 (binomial, p = 0.5), wider than "
              "the disparities judged: such groups are insufficient evidence", "fairness", 2.0, _INF,
              "a row count ≥ 2"),
)
_DEFAULTS = {t.name: t.default for t in SETTABLE}
#: each limit of the fairness section by its name in the report, and its settable threshold of :data:`SETTABLE`
THRESHOLD_NAMES = {
    "demographic parity difference": "demographic_parity",
    "equalized odds difference": "equalized_odds",
    "MAE ratio (worst / best group)": "mae_ratio",
    "mean prediction gap (sd of predictions)": "mean_prediction_gap",
    "importance profile distance": "importance_profile_distance",
    "proxy AUC": "proxy_auc",
}


def thresholds(values=None) -> dict:
    """The fairness limits by their report names ({"demographic parity difference": 0.1, ...}) from the
    verdict's threshold values ``values`` ({name: value}, see :func:`...criteria.limits`; default: defaults)."""
    values = _DEFAULTS if values is None else limits(values)
    return {shown: values[name] for shown, name in THRESHOLD_NAMES.items()}


#: the default limits by report name
THRESHOLDS = thresholds()
#: groups with fewer test rows than this (the default of the ``min_group_rows`` threshold) are insufficient evidence
SMALL_GROUP = int(_DEFAULTS["min_group_rows"])
#: importance profiles are compared only between groups with at least this many explained rows
MIN_EXPLAINED_ROWS = 10
MISSING = "missing"


@dataclass(frozen=True)
class Grouping:
    """How an attribute's values become groups: ``kind`` "values" (each distinct value a group) or
    "quantile bins" (``edges`` from the test data, right-open bins); ``description`` in words."""

    attribute: str
    kind: str
    edges: tuple = ()
    description: str = ""

    def labels(self, values) -> pd.Series:
        """The group label (text) of each value; missing values form the group "missing"."""
        values = pd.Series(values)
        if self.kind == "values":
            out = values.map(_label)
        else:
            bins = np.r_[-np.inf, np.asarray(self.edges[1:-1], dtype=float), np.inf]
            codes = pd.cut(values.astype(float), bins, right=False, labels=False)
            names = _bin_names(self.edges)
            out = pd.Series([names[int(c)] if c == c else MISSING for c in codes], index=values.index)
        return out.where(values.notna(), MISSING).astype(str).rename(self.attribute)


def _label(value) -> str:
    from ...render import fmt

    return fmt(value) if isinstance(value, (int, float, np.number)) and not isinstance(value, bool) else str(value)


def _bin_names(edges) -> list:
    from ...render import fmt

    inner = [fmt(e, 3) for e in edges]
    return ([f"< {inner[1]}"] + [f"[{a}, {b})" for a, b in zip(inner[1:-2], inner[2:-1])] + [f"≥ {inner[-2]}"]
            if len(edges) > 2 else ["all"])


def make_grouping(values: pd.Series, attribute: str) -> Grouping:
    """Groups of a protected attribute from its test-data ``values``: the distinct values when there
    are at most :data:`MAX_GROUPS`; a numeric attribute with more is cut at its quartiles
    (:data:`N_BINS` bins, ties merged); text with more keeps its most frequent values and lumps the
    rest into "other" (see :meth:`Grouping.labels`)."""
    present = pd.Series(values).dropna()
    distinct = present.unique()
    if len(distinct) <= MAX_GROUPS:
        return Grouping(attribute, "values", description=f"its {len(distinct)} distinct values")
    if pd.api.types.is_numeric_dtype(present):
        edges = tuple(np.unique(np.quantile(present.astype(float), np.linspace(0, 1, N_BINS + 1))))
        return Grouping(attribute, "quantile bins", edges,
                        f"{len(edges) - 1} bins cut at the quartiles of its {len(distinct)} test-data values")
    raise InputError(f"protected attribute {attribute!r} has {len(distinct)} distinct non-numeric values; the "
                     f"fairness section compares at most {MAX_GROUPS} groups: merge its categories first")


@dataclass
class GroupPerformance:
    """Per-group metrics (``by_group``: rows = groups, ``count`` first) and the disparity metrics
    (``disparities``: one row per metric with ``value``, bootstrap ``ci_low``/``ci_high`` where
    available, ``threshold`` and ``exceeded``)."""

    by_group: pd.DataFrame
    disparities: pd.DataFrame
    notes: list = field(default_factory=list)


def performance_by_group(y_true, y_pred, groups: pd.Series, task: str, positive_class=None,
                         random_state: int = 0, n_boot: int = N_BOOT, limits: dict | None = None,
                         min_rows: int = SMALL_GROUP) -> GroupPerformance:
    """fairlearn ``MetricFrame`` metrics per group and the disparities between groups.

    Classification: the positive class against the rest (multi-class labels are binarised on
    ``positive_class``; accuracy uses every class): selection rate P(ŷ = +), accuracy, TPR, FPR and
    the actual positive rate; fairlearn's ``demographic_parity_difference`` and
    ``equalized_odds_difference`` and the TPR / FPR gaps. Regression: mean prediction, mean target,
    MAE and RMSE per group; the gaps (max − min between groups), the worst/best MAE ratio and the
    mean-prediction gap in standard deviations of the predictions. Without ``y_true`` (None) only the
    metrics of the predictions. The headline disparities (demographic parity, equalized odds;
    regression: the mean prediction gap) get a 95% percentile-bootstrap interval over the test rows
    (``n_boot`` resamples: fairlearn's for demographic parity and the mean prediction gap,
    :func:`equalized_odds_ci` for equalized odds). ``limits``: {metric: limit} (default
    :data:`THRESHOLDS`); groups under ``min_rows`` test rows get a note."""
    limits = THRESHOLDS if limits is None else limits
    with needs("report", "the fairness section (fairlearn)"):
        from fairlearn.metrics import (
            MetricFrame,
            count,
            demographic_parity_difference,
            equalized_odds_difference,
            false_positive_rate,
            mean_prediction,
            selection_rate,
            true_positive_rate,
        )
    from sklearn.metrics import accuracy_score, mean_absolute_error, root_mean_squared_error

    groups = pd.Series(np.asarray(groups), name="group")
    labelled = y_true is not None
    y_pred = np.asarray(y_pred)
    y_true = np.asarray(y_true) if labelled else y_pred       # the prediction-only metrics ignore y_true

    def frame(metrics, truth, predicted, boot=False):
        extra = {"n_boot": n_boot, "ci_quantiles": [0.025, 0.975], "random_state": random_state} if boot else {}
        return MetricFrame(metrics=metrics, y_true=truth, y_pred=predicted, sensitive_features=groups, **extra)

    if task == "classification":
        t, p = y_true == positive_class, y_pred == positive_class
        headline = frame({"selection rate": selection_rate}, t, p, boot=True)
        parts = [frame({"rows": count}, t, p).by_group, headline.by_group]
        rows = {"demographic parity difference": (demographic_parity_difference(t, p, sensitive_features=groups),
                                                  _ci(headline, "selection rate"))}
        if labelled:
            rates = frame({"true positive rate": true_positive_rate, "false positive rate": false_positive_rate,
                           "positive rate (actual)": lambda a, b: float(np.mean(a))}, t, p)
            parts += [rates.by_group, frame({"accuracy": accuracy_score}, y_true, y_pred).by_group]
            rows["equalized odds difference"] = (equalized_odds_difference(t, p, sensitive_features=groups),
                                                 equalized_odds_ci(t, p, groups, n_boot, random_state))
            rows["true positive rate gap"] = (rates.difference()["true positive rate"], None)
            rows["false positive rate gap"] = (rates.difference()["false positive rate"], None)
    else:
        truth, predicted = y_true.astype(float), y_pred.astype(float)
        headline = frame({"mean prediction": mean_prediction}, truth, predicted, boot=True)
        parts = [frame({"rows": count}, truth, predicted).by_group, headline.by_group]
        spread = float(np.std(predicted, ddof=1)) if len(predicted) > 1 else np.nan
        gap, ci = headline.difference()["mean prediction"], _ci(headline, "mean prediction")
        rows = {"mean prediction gap": (gap, ci),
                "mean prediction gap (sd of predictions)": ((gap / spread, (ci[0] / spread, ci[1] / spread))
                                                            if spread > 0 else (np.nan, None))}
        if labelled:
            errors = frame({"mean target": lambda a, b: float(np.mean(a)), "MAE": mean_absolute_error,
                            "RMSE": root_mean_squared_error}, truth, predicted)
            parts.append(errors.by_group)
            rows["MAE gap"] = (errors.difference()["MAE"], None)
            rows["RMSE gap"] = (errors.difference()["RMSE"], None)
            best = errors.group_min()["MAE"]
            rows["MAE ratio (worst / best group)"] = (errors.group_max()["MAE"] / best if best > 0 else np.nan, None)
    by_group = pd.concat(parts, axis=1)
    by_group["rows"] = by_group["rows"].astype(int)
    by_group.index = by_group.index.astype(str)
    by_group.index.name = "group"
    table = pd.DataFrame([{"metric": k, "value": float(v), "ci_low": np.nan if ci is None else ci[0],
                           "ci_high": np.nan if ci is None else ci[1], "threshold": limits.get(k, np.nan)}
                          for k, (v, ci) in rows.items()]).set_index("metric")
    table["exceeded"] = table["value"] > table["threshold"]
    small = by_group.index[by_group["rows"] < min_rows].tolist()
    notes = [f"groups with fewer than {min_rows:g} test rows ({', '.join(small)}): their metrics are insufficient "
             "evidence"] if small else []
    return GroupPerformance(by_group, table, notes)


def _equalized_odds(t, p, codes, n_groups: int, axis=-1):
    """max(TPR gap, FPR gap) between groups (NaN-skipping: a group without positives has no TPR), of
    rows weighted by ``codes``-grouped counts; vectorised over resamples (``t``, ``p``, ``codes``: (B, n))."""
    def rate(hit, base):
        num = np.stack([np.sum(hit & (codes == g), axis=axis) for g in range(n_groups)])
        den = np.stack([np.sum(base & (codes == g), axis=axis) for g in range(n_groups)])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.maximum(den, 1), np.nan)

    gaps = [np.nanmax(r, axis=0) - np.nanmin(r, axis=0) for r in (rate(t & p, t), rate(~t & p, ~t))]
    return np.fmax(*gaps)


def equalized_odds_ci(t, p, groups, n_boot: int = N_BOOT, random_state: int = 0) -> tuple:
    """95% percentile-bootstrap interval of the equalized-odds difference over the test rows: ``n_boot``
    resamples of (actual positive ``t``, predicted positive ``p``, group) rows drawn together."""
    t, p = np.asarray(t, dtype=bool), np.asarray(p, dtype=bool)
    codes = pd.factorize(pd.Series(np.asarray(groups)))[0]
    idx = np.random.default_rng(random_state).integers(0, len(t), size=(n_boot, len(t)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # a resample with one rate undefined everywhere
        values = _equalized_odds(t[idx], p[idx], codes[idx], int(codes.max()) + 1)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return np.nan, np.nan
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


def _ci(frame, metric) -> tuple:
    low, high = frame.difference_ci()
    return float(low[metric]), float(high[metric])


def importance_by_group(importances: dict, feature_names, groups: pd.Series,
                        limit: float = THRESHOLDS["importance profile distance"]) -> tuple[dict, pd.DataFrame]:
    """Mean |importance| per feature (rows) and group (columns) of each method, from per-row
    importance matrices ``{method: (rows, features)}`` whose rows carry the labels ``groups``;
    and per method the largest total-variation distance between two groups' importance profiles
    (importances normalised to sum to 1), over the groups with at least :data:`MIN_EXPLAINED_ROWS` rows."""
    labels = np.asarray(groups)
    order = sorted(set(labels.tolist()))
    counts = {g: int((labels == g).sum()) for g in order}
    means, rows = {}, []
    for method, values in importances.items():
        values = np.abs(np.asarray(values, dtype=float))
        if values.shape != (len(labels), len(feature_names)):
            raise InputError(f"{method}: importances of shape {values.shape} do not match "
                             f"{len(labels)} rows × {len(feature_names)} features")
        table = pd.DataFrame({g: values[labels == g].mean(axis=0) for g in order}, index=list(feature_names))
        table.index.name = "feature"
        means[method] = table
        compared = [g for g in order if counts[g] >= MIN_EXPLAINED_ROWS and table[g].sum() > 0]
        shares = table[compared] / table[compared].sum()
        distance, pair = np.nan, ""
        for i, a in enumerate(compared):
            for b in compared[i + 1:]:
                d = 0.5 * float(np.abs(shares[a] - shares[b]).sum())
                if not d <= distance:
                    distance, pair = d, f"{a} vs {b}"
        rows.append({"method": method, "importance profile distance": distance, "groups compared": pair})
    summary = pd.DataFrame(rows).set_index("method") if rows else pd.DataFrame()
    if len(summary):
        summary["threshold"] = limit
        summary["exceeded"] = summary["importance profile distance"] > summary["threshold"]
    return means, summary


def encoding_columns(X: pd.DataFrame, attribute: str, groups: pd.Series) -> dict:
    """Model features that encode the attribute, each with how: "the attribute itself" (the column
    named like it), "one-hot column" (``attr_value``, ``attr=value``, ``attr:value``) or
    "determined by it" (any other non-constant column whose value is fixed within each group on
    these rows: a numeric or one-hot encoding under another name)."""
    prefixes = tuple(f"{attribute}{sep}" for sep in ("_", "=", ":"))
    found = {}
    keep = np.asarray(groups) != MISSING
    labels = np.asarray(groups)[keep]
    for c in X.columns:
        column = X.loc[keep, c]
        if str(c) == str(attribute):
            found[c] = "the attribute itself"
        elif str(c).startswith(prefixes):
            found[c] = "one-hot column"
        elif column.nunique(dropna=False) >= 2 and (column.groupby(labels).nunique(dropna=False) <= 1).all():
            found[c] = "determined by it"
    return found


@dataclass
class ProxyResult:
    """Proxy check of one attribute: ``table`` per feature (mutual information in bits, its share of
    the attribute's entropy, whether the feature encodes the attribute), sorted by decreasing share;
    ``auc`` {"all features": AUC, "features other than its encodings": AUC} (cross-validated);
    ``rows``, ``folds``; ``note`` why an AUC is missing."""

    table: pd.DataFrame
    auc: dict
    rows: int
    folds: int
    note: str = ""

    def top(self, n: int = 3) -> list:
        """Names of the ``n`` features, other than the attribute's own column(s), sharing the most
        information with the attribute."""
        own = self.table["encodes the attribute"].isin(("the attribute itself", "one-hot column"))
        return self.table.index[~own.to_numpy()][:n].astype(str).tolist()


def proxy_check(X: pd.DataFrame, groups: pd.Series, encodings: dict, random_state: int = 0) -> ProxyResult:
    """Which features predict the attribute's ``groups``: ``mutual_info_classif`` per feature (rows
    without a missing value or group; a column with at most :data:`MAX_GROUPS` distinct values is discrete,
    its mutual information computed exactly on the rows' joint frequencies; a continuous column's k-nearest-
    neighbour estimate, which can overshoot, is capped at the attribute's entropy, the most any feature can
    share with it), and the ROC AUC (one-vs-rest, macro over groups, for more than two groups)
    of a small random forest (30 trees of depth ≤ 5, single-threaded: it stays fast on a busy machine) in
    stratified k-fold cross-validation (k = 5, or
    the smallest group's size when smaller), from all features and from those that do not encode it
    (``encodings``: :func:`encoding_columns`'s answer)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_selection import mutual_info_classif
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    labels = np.asarray(groups)
    keep = (labels != MISSING) & X.notna().all(axis=1).to_numpy()
    data, target = X.loc[keep], labels[keep]
    values, counts = np.unique(target, return_counts=True)
    if len(values) < 2:
        raise InputError("the proxy check needs at least two groups among the complete rows")
    seeds = np.random.SeedSequence(random_state).generate_state(2)
    discrete = np.array([data[c].nunique() <= MAX_GROUPS for c in data.columns])
    values = np.column_stack([pd.factorize(data[c])[0] if few else data[c].to_numpy(dtype=float)
                              for c, few in zip(data.columns, discrete)])
    p = counts / counts.sum()
    entropy = float(-(p * np.log2(p)).sum())
    mi = np.minimum(mutual_info_classif(values, target, discrete_features=discrete,
                                        random_state=int(seeds[0])) / np.log(2), entropy)
    table = pd.DataFrame({"mutual information (bits)": mi,
                          "share of the attribute's entropy": mi / entropy,
                          "encodes the attribute": [encodings.get(c, "") for c in data.columns]},
                         index=pd.Index(data.columns, name="feature"))
    table = table.sort_values("share of the attribute's entropy", ascending=False, kind="stable")
    folds = int(min(5, counts.min()))
    auc, note = {}, ""
    if folds < 2:
        note = f"no cross-validated AUC: group {values[counts.argmin()]!r} has a single complete row"
    else:
        cv = StratifiedKFold(folds, shuffle=True, random_state=int(seeds[1] % 2**31))
        scoring = "roc_auc" if len(values) == 2 else "roc_auc_ovr"
        sets = {"all features": list(data.columns),
                "features other than its encodings": [c for c in data.columns if c not in set(encodings)]}
        for name, columns in sets.items():
            if name != "all features" and (len(columns) == data.shape[1] or not columns):
                continue
            model = RandomForestClassifier(n_estimators=30, max_depth=5, min_samples_leaf=3,
                                           random_state=int(seeds[1] % 2**31))
            auc[name] = float(np.mean(cross_val_score(model, data[columns].to_numpy(dtype=float), target, cv=cv,
                                                      scoring=scoring)))
    return ProxyResult(table, auc, int(keep.sum()), folds, note)


def permutation_reliance(loss, predict, X: pd.DataFrame, y, columns, n_permutations: int = 5,
                         random_state: int = 0) -> float:
    """Model reliance on ``columns`` scrambled jointly (one row permutation shared by the columns):
    mean over ``n_permutations`` of ``loss(y, predict(X permuted))`` minus ``loss(y, predict(X))``."""
    rng = np.random.default_rng(random_state)
    base = loss(y, predict(X))
    shuffled = X.copy()
    changes = []
    for _ in range(n_permutations):
        order = rng.permutation(len(X))
        shuffled[list(columns)] = X[list(columns)].to_numpy()[order]
        changes.append(loss(y, predict(shuffled)) - base)
    return float(np.mean(changes))
