"""Fairness section: each protected attribute's groups, disparities, explanations, reliance and proxies.

For every name in ``options.protected`` (a column of the data that need not be a model feature,
held in ``ctx.protected``) the section shows, with the computations of :mod:`..fairness`: the
groups and their sizes; predictive performance per group and the disparity metrics (fairlearn);
the mean |importance| per feature and group of every per-row explanation method, as a grouped bar
chart; when the attribute (or an encoding of it) is a model input, the model's reliance on it and,
from the MCR section, its range over the Rashomon set; and the features that predict it (proxies).
The section warns when a threshold of :data:`.groups.THRESHOLDS` is crossed, quoting it, and gives the fairness
criterion of the model-fitness verdict (:func:`fairness_criterion`, from its typed result :class:`Fairness`).
``data["attributes"][name]`` holds every number; ``raw["attributes"]`` the per-attribute findings and
``blocks`` (tables and figures in display order) its partial shows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import matplotlib
import numpy as np
import pandas as pd

from ....errors import InputError
from ... import criteria, explainers, figures
from ... import verdict as vd
from ...criteria import FAIL, NOT_ASSESSED, PASS, WARN, Criterion, Kind, named, not_assessed, rule, shown
from ...render import fmt
from ...section import Table, new, register
from . import groups as fair

__all__: list = []


def _rule(t: dict) -> str:
    return (f"per protected attribute, over groups of ≥ {t['min_group_rows']:g} test rows (min_group_rows; "
            f"smaller groups are insufficient evidence): fail when a disparity's {vd.CI_LEVEL:.0%} interval lies "
            f"wholly above its limit (demographic parity {named('demographic_parity', t)}, equalized odds "
            f"{named('equalized_odds', t)}, mean prediction gap {named('mean_prediction_gap', t)} sd); "
            "warn when a disparity's value crosses its limit without that certainty, or an "
            "importance-profile, proxy or error-ratio limit is crossed, or a protected attribute is used by "
            "the model; else pass")


FAIRNESS = Kind("fairness", criteria.MODEL_FITNESS, {"pass": "no disparity found", "warn": "possible disparity",
                                                     "fail": "disparity"}, _rule)


@dataclass
class Fairness:
    """What other sections read of the fairness section: the judged ``disparities`` (:class:`Disparity`), the
    ``other_findings`` crossing a limit (text) and, per attribute with too few rows per group, why it is
    ``insufficient`` evidence."""

    disparities: list = field(default_factory=list)
    other_findings: str = ""
    insufficient: list = field(default_factory=list)
    #: per attribute, the model features that encode it or share the most information with it (its proxies)
    proxies: dict = field(default_factory=dict)

#: features shown per panel of the grouped bar chart, fewer when there are many groups (at most
#: ``MAX_BARS`` bars per panel, at least 3 features)
TOP_FEATURES = 10
MAX_BARS = 30
#: permutations of the model's own reliance on the attribute's columns (test data)
N_PERMUTATIONS = 5
#: share of a protected attribute's entropy from which a feature sharing information with it is one of its proxies
PROXY_SHARE = 0.1


@register("fairness", "Fairness towards protected attributes", reads=("explanations", "mcr"), result=Fairness,
          thresholds=fair.SETTABLE, kinds=(FAIRNESS,), position=120, stage=90)
def build(ctx, results, options):
    """Assess every protected attribute; "warn" when a disparity, importance difference, reliance
    or proxy threshold is crossed, "not applicable" when no attribute has two groups."""
    section = new("fairness")
    if not options.protected:
        section.status = "skipped"
        section.reason = "no protected attribute named (name the columns with the protected attributes option)"
        return section
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        predictions = np.asarray(ctx.model.predict(ctx.model_input(ctx.X_test.to_numpy())))
    assessed = [_assess(ctx, results, options, name, predictions) for name in options.protected]
    section.data = {"attributes": {a["name"]: a["data"] for a in assessed},
                    "thresholds": fair.thresholds(options.limits), "min group rows": options.limits["min_group_rows"]}
    section.raw = {"attributes": assessed}
    section.result = Fairness([d for a in assessed for d in a["disparities"]],
                              "; ".join(f"{a['name']}: {w}" for a in assessed for w in a["warnings"]),
                              [a["insufficient"] for a in assessed if a["insufficient"]],
                              {a["name"]: a["proxy features"] for a in assessed})
    blocks = [b for a in assessed for b in a["blocks"]]
    section.tables = [b for b in blocks if isinstance(b, Table)]
    section.figures = [b for b in blocks if isinstance(b, figures.Figure)]
    warned = [f"{a['name']}: {w}" for a in assessed
              for w in a["disparity warnings"] + a["warnings"] + [a["not assessed"], a["insufficient"]] if w]
    if all(a["not assessed"] for a in assessed):
        section.status = "not applicable"
        section.reason = "; ".join(f"{a['name']}: {a['not assessed']}" for a in assessed)
    elif warned:
        section.status, section.reason = "warn", "; ".join(warned)
    return section


def _assess(ctx, results, options, name, predictions) -> dict:
    """Tables, figures, findings (plain text) and warnings of one protected attribute."""
    values = ctx.protected[name].reset_index(drop=True)
    out = new_attribute(name, options.limits)
    try:
        grouping = fair.make_grouping(values, name)
    except InputError as exc:
        out["not assessed"] = f"not assessed: {exc}"
        out["findings"].append(out["not assessed"])
        return out
    labels = grouping.labels(values)
    sizes = labels.value_counts().sort_index()
    out["data"] = {"groups": f"{name} grouped by {grouping.description}", "group sizes": sizes.to_dict()}
    if len(sizes) < 2:
        out["not assessed"] = (f"not assessed: every test row is in the one group {sizes.index[0]!r}, so there is "
                               "nothing to compare")
        out["findings"].append(out["not assessed"])
        return out
    if ctx.cluster is not None:
        out["findings"].append(f"Audit on {ctx.cluster.where}: this section uses the in-memory random sample of "
                               f"{len(ctx.X_test)} test rows.")
    seed = ctx.seed_int(f"fairness:{name}")
    _performance(ctx, out, labels, predictions, seed)
    _importances(ctx, results, out, labels)
    # encodings and proxies are read on the training rows when they carry the attribute (more rows)
    train = ctx.protected_train is not None and name in ctx.protected_train.columns and ctx.X_train is not None
    X = (ctx.X_train if train else ctx.X_test).reset_index(drop=True)
    source = grouping.labels((ctx.protected_train if train else ctx.protected)[name].reset_index(drop=True))
    encodings = fair.encoding_columns(X, name, source)
    _reliance(ctx, results, out, encodings, seed)
    _proxies(out, X, source, "training" if train else "test", encodings, seed)
    return out


def new_attribute(name, limits=None) -> dict:
    """The empty assessment of protected attribute ``name`` that the helpers below fill, under the verdict's
    threshold values ``limits`` ({name: value}; default: the defaults)."""
    limits = vd.limits(limits)
    return {"name": name, "blocks": [], "findings": [], "warnings": [], "not assessed": "",
            "data": {"groups": "", "group sizes": {}}, "limits": fair.thresholds(limits),
            "min rows": limits["min_group_rows"], "disparities": [], "disparity warnings": [], "insufficient": "",
            "proxy features": []}


def _performance(ctx, out, labels, predictions, seed) -> None:
    """Per-group metrics and disparities. Groups with fewer than ``min_group_rows`` test rows are
    insufficient evidence: the disparities judged (``out["disparities"]``, for the verdict) are those
    between the larger groups, and with fewer than two larger groups none is judged
    (``out["insufficient"]``); the disparities over every group are shown too."""
    limits, min_rows = out["limits"], out["min rows"]
    perf = fair.performance_by_group(ctx.y_test, predictions, labels, ctx.task, ctx.positive_class, random_state=seed,
                                     limits=limits, min_rows=min_rows)
    large = perf.by_group.index[perf.by_group["rows"] >= min_rows].tolist()
    judged, scope = perf, ""
    shown = perf.disparities.assign(groups="all")
    if len(large) < 2:
        judged = None
        sizes = ", ".join(f"{g}: {n}" for g, n in perf.by_group["rows"].items())
        out["insufficient"] = (f"{out['name']} has fewer than two groups of at least {min_rows:g} test rows "
                               f"(min_group_rows; {sizes}), so its disparities are not judged")
        out["findings"].append(f"Insufficient evidence: {out['insufficient']}.")
    elif len(large) < len(perf.by_group):
        keep = labels.isin(large).to_numpy()
        judged = fair.performance_by_group(None if ctx.y_test is None else np.asarray(ctx.y_test)[keep],
                                           predictions[keep], labels[keep].reset_index(drop=True), ctx.task,
                                           ctx.positive_class, random_state=seed, limits=limits, min_rows=min_rows)
        scope = f" (groups of ≥ {min_rows:g} test rows)"
        shown = pd.concat([shown, judged.disparities.assign(groups=f"≥ {min_rows:g} rows")])
        out["data"][f"disparities (groups of ≥ {min_rows:g} rows)"] = judged.disparities
    out["data"].update({"by group": perf.by_group, "disparities": perf.disparities})
    what = (f"positive class {ctx.positive_class} against the rest" if ctx.task == "classification"
            else "regression output")
    out["blocks"].append(Table(f"{out['name']}: group sizes and predictive performance per group on the test data "
                               f"({what}; fairlearn MetricFrame).", perf.by_group))
    shown["95% interval"] = [f"[{against(a, limit)}, {against(b, limit)}]" if np.isfinite(a) else "–"
                             for a, b, limit in zip(shown["ci_low"], shown["ci_high"], shown["threshold"])]
    shown["value"] = [against(v, limit) for v, limit in zip(shown["value"], shown["threshold"])]
    shown = shown.rename(columns={"threshold": "limit"})[
        (["groups"] if judged is not perf else []) + ["value", "95% interval", "limit"]]
    basis = (f"; the verdict judges the groups of at least {min_rows:g} rows." if judged is not perf and judged
             is not None else f"; not judged: fewer than two groups of at least {min_rows:g} rows." if judged is None
             else ".")
    out["blocks"].append(Table(
        f"{out['name']}: disparities between groups (largest minus smallest group value; 95% percentile-bootstrap "
        "interval over the test rows where given). A disparity fails when its whole interval lies above its limit "
        "and warns when its value does but its interval reaches the limit" + basis, shown))
    if judged is None:
        return
    for metric, row in judged.disparities.iterrows():
        if np.isfinite(row["threshold"]):
            out["disparities"].append(Disparity(str(out["name"]), str(metric), float(row["value"]),
                                                   float(row["ci_low"]), float(row["ci_high"]),
                                                   float(row["threshold"])))
    _disparity_findings(ctx, out, perf, judged, scope)


def _disparity_findings(ctx, out, perf, judged, scope) -> None:
    """The disparities in words, with their limits and verdicts."""
    limits = out["limits"]
    d = judged.disparities
    for disparity in out["disparities"]:
        if disparity.status in (vd.FAIL, vd.WARN):
            certain = "with its whole interval" if disparity.status == vd.FAIL else "(not certain: warn)"
            out["disparity warnings"].append(f"{disparity.metric}{scope} {against(disparity.value, disparity.limit)} "
                                             f"is above {fmt(disparity.limit)} {certain}")
    if ctx.task == "classification":
        out["findings"].append(
            f"Share of rows predicted as class {ctx.positive_class}: " + ", ".join(
                f"{g}: {fmt(r, 3)}" for g, r in perf.by_group["selection rate"].items()) +
            f"; the demographic-parity difference{scope} is "
            f"{against(d.loc['demographic parity difference', 'value'], limits['demographic parity difference'])} "
            f"(limit {fmt(limits['demographic parity difference'])}).")
        if "equalized odds difference" in d.index:
            out["findings"].append(
                f"The largest gap between groups{scope} in the true-positive or false-positive rate "
                f"(equalized-odds difference) is "
                f"{against(d.loc['equalized odds difference', 'value'], limits['equalized odds difference'])} (limit "
                f"{fmt(limits['equalized odds difference'])}).")
    else:
        gap, ratio = "mean prediction gap (sd of predictions)", "MAE ratio (worst / best group)"
        out["findings"].append(
            "Mean prediction per group: " + ", ".join(
                f"{g}: {fmt(v)}" for g, v in perf.by_group["mean prediction"].items()) +
            f"; the gap{scope} is {against(d.loc[gap, 'value'], limits[gap])} standard deviations of the predictions "
            f"(limit {fmt(limits[gap])}).")
        if ratio in d.index:
            out["findings"].append(
                f"The worst-served group's mean absolute error{scope} is "
                f"{against(d.loc[ratio, 'value'], limits[ratio])} times the best-served group's (warning above "
                f"{fmt(limits[ratio])}).")
    if ctx.y_test is None:
        out["findings"].append("Error rates per group need the test target, which was not given.")
    out["findings"].extend(note[0].upper() + note[1:] + ("; the verdict leaves them out." if judged is not perf
                                                         else ".") for note in perf.notes)


def against(value, limit, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits, more where fewer would print it on the other side of
    ``limit`` (or on it): the number beside a limit reads as it was judged (:func:`..verdict.shown`)."""
    return vd.shown(value, (limit,) if np.isfinite(limit) else (), f".{digits}g")


def importance_order() -> list:
    """The per-row explainers' keys in the order their importances are shown: registry order, those
    whose importances may be negative (greedy PG² gains) last."""
    per_row = [key for key, e in explainers.REGISTRY.items() if e.per_row]
    return sorted(per_row, key=lambda key: explainers.get(key).signed)


def _importances(ctx, results, out, labels) -> None:
    limits = out["limits"]
    explanations = results.get("explanations")
    explained = explanations.result if explanations is not None and explanations.result is not None else None
    importances = {} if explained is None else explained.importances
    rows = np.asarray([] if explained is None else explained.rows, dtype=int)
    per_row = {explainers.get(k).label: np.asarray(importances[k], dtype=float) for k in importance_order()
               if k in importances and np.shape(importances[k]) == (len(rows), ctx.n_features)}
    if not per_row or len(rows) == 0:
        out["findings"].append("Per-group explanation importances: not computed (no per-row explanation ran).")
        return
    row_groups = labels.iloc[rows].reset_index(drop=True)
    means, summary = fair.importance_by_group(per_row, ctx.feature_names, row_groups,
                                              limits["importance profile distance"])
    counts = row_groups.value_counts().sort_index()
    out["data"].update({"explained rows per group": counts.to_dict(), "importance by group": means,
                        "importance profiles": summary})
    out["blocks"].append(_grouped_bars(out["name"],
        f"{out['name']}: mean |importance| of the "
        f"{_shown_features(ctx.n_features, len(counts))} features most important "
        f"overall, per group, over the {len(rows)} explained test rows ("
        + ", ".join(f"{g}: {n} rows" for g, n in counts.items()) + "). Each panel is one method in its own units"
        + "".join(f"; {e.label}: {e.caption}" for e in map(explainers.get, importance_order())
                  if e.signed and e.label in means) + ".", means))
    shown = summary.drop(columns=["threshold", "exceeded"]).rename(
        columns={"importance profile distance": "profile distance (0 same, 1 disjoint)"})
    out["blocks"].append(Table(
        f"{out['name']}: do the methods see different features as important for different groups? Profile distance: "
        "total-variation distance between two groups' importance shares (largest over pairs of groups with at "
        f"least {fair.MIN_EXPLAINED_ROWS} explained rows); warning above "
        f"{fmt(limits['importance profile distance'])}.", shown))
    top = pd.DataFrame({method: {g: ", ".join(map(str, table[g].sort_values(ascending=False, kind="stable")
                                                   .head(3).index)) for g in table.columns}
                        for method, table in means.items()})
    top.index.name = "group"
    out["blocks"].append(Table(f"{out['name']}: the three features with the largest mean |importance| in each group, "
                               "by method.", top))
    for method, row in summary.iterrows():
        if row["exceeded"]:
            out["warnings"].append(f"the {method} importance profiles of {row['groups compared']} differ by "
                                   f"{against(row['importance profile distance'], row['threshold'])} (above "
                                   f"{fmt(row['threshold'])})")
    distances = summary["importance profile distance"].dropna()
    if len(distances):
        out["findings"].append(
            "Explanations per group: the largest difference between two groups' importance profiles is "
            f"{against(distances.max(), limits['importance profile distance'])} ({distances.idxmax()}; 0 = the same "
            "features matter in the same proportions, "
            f"1 = entirely different features; warning above {fmt(limits['importance profile distance'])}).")
    else:
        out["findings"].append(f"Explanations per group: no two groups have {fair.MIN_EXPLAINED_ROWS} explained "
                               "rows each, so their importance profiles are shown but not compared.")


def _shown_features(n_features: int, n_groups: int) -> int:
    """Features per panel of the grouped bar chart."""
    return min(TOP_FEATURES, n_features, max(3, MAX_BARS // n_groups))


def _grouped_bars(attribute, caption, means: dict):
    """One horizontal grouped bar chart per method: features (rows, most important on top) × groups
    (bars, first group on top), the legend above the panels."""
    methods = list(means)
    groups = list(means[methods[0]].columns)
    ncols = min(2, len(methods))
    nrows = int(np.ceil(len(methods) / ncols))
    n_feat = _shown_features(len(means[methods[0]]), len(groups))
    panel = 0.07 * n_feat * max(len(groups), 2) + 0.7
    legend = 0.5
    colours = matplotlib.colormaps["tab10"].colors
    with matplotlib.rc_context(figures.STYLE):
        fig, axes = figures.new_figure(3.3 * ncols, panel * nrows + legend, nrows, ncols)
        for ax, method in zip(axes.flat, methods):
            table = means[method]
            top = table.mean(axis=1).sort_values(ascending=False, kind="stable").head(n_feat).index[::-1]
            y = np.arange(len(top))
            width = 0.8 / len(groups)
            for k, g in enumerate(groups):
                ax.barh(y + ((len(groups) - 1) / 2 - k) * width, table.loc[top, g].to_numpy(), height=width,
                        color=colours[k % len(colours)], label=str(g))
            ax.set_yticks(y, [str(n) for n in top])
            ax.set_title(method)
            ax.set_xlabel("mean |importance|")
            ax.tick_params(axis="y", length=0)
        for ax in list(axes.flat)[len(methods):]:
            ax.axis("off")
        handles, names = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, names, loc="upper center", ncols=min(len(groups), 6), frameon=False,
                   title=f"groups of {attribute}", bbox_to_anchor=(0.5, 1.0))
        fig.tight_layout(rect=(0, 0, 1, 1 - legend / (panel * nrows + legend)))
        return figures.Figure(caption, figures.to_data_uri(fig))


def _reliance(ctx, results, out, encodings, seed) -> None:
    name = out["name"]
    out["data"]["model features encoding it"] = dict(encodings)
    if not encodings:
        out["findings"].append(f"{name} is not a model input and no model feature is a function of it: the model "
                               "can use it only through correlated features (see the proxy check).")
        return
    direct = [c for c, how in encodings.items() if how != "determined by it"]
    others = [f"{c} ({how})" for c, how in encodings.items() if how == "determined by it"]
    listed = ", ".join(map(str, direct + others))
    parts = []
    if direct:
        parts.append("is a model input" + (f" ({', '.join(map(str, direct))})" if direct != [name] else ""))
    if others:
        parts.append(f"is encoded by the model input{'s' if len(others) > 1 else ''} {', '.join(others)}")
    what = " and ".join(parts)
    out["warnings"].append(f"it {what}")
    rows = {}
    if ctx.y_test is not None:
        loss, unit = ((lambda y, p: float(np.mean(np.asarray(y) != np.asarray(p))), "misclassification rate")
                      if ctx.task == "classification" else
                      (lambda y, p: float(np.mean((np.asarray(y, dtype=float) - np.asarray(p, dtype=float)) ** 2)),
                       "mean squared error"))

        def predict(X):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return ctx.model.predict(ctx.model_input(X.to_numpy()))

        joint = fair.permutation_reliance(loss, predict, ctx.X_test.reset_index(drop=True), ctx.y_test,
                                          list(encodings), N_PERMUTATIONS, seed)
        together = " together" if len(encodings) > 1 else ""
        rows[f"{', '.join(map(str, encodings))} (scrambled{together}, test data)"] = {"this model's reliance": joint}
        out["findings"].append(
            f"{name} {what}. Scrambling {'this column' if len(encodings) == 1 else 'these columns'}"
            f" ({listed}) across the test rows changes the {unit} by {fmt(joint)} (mean of {N_PERMUTATIONS} "
            "permutations; a value near 0 or below means the model's test error does not depend on it).")
    mcr = results.get("mcr")
    table = mcr.result.table if mcr is not None and mcr.status == "ok" else None
    if table is not None and all(c in table.index for c in encodings):
        unit = mcr.result.unit
        for c in encodings:
            rows[f"{c} (training data, Rashomon set)"] = {
                "lowest reliance (MCR−)": table.loc[c, "mcr_minus"],
                "this model's reliance": table.loc[c, "model_reliance"],
                "highest reliance (MCR+)": table.loc[c, "mcr_plus"]}
            out["findings"].append(
                f"Over the Rashomon set of equally accurate forests, the reliance on {c} ranges from "
                f"{fmt(table.loc[c, 'mcr_minus'])} to {fmt(table.loc[c, 'mcr_plus'])} ({unit}). A lowest value near 0 "
                "means an equally accurate model need not use it (other features can stand in); a high highest "
                "value means some equally accurate model leans on it heavily.")
    else:
        why = ("the Rashomon-set analysis did not run" if mcr is None else
               {"skipped": "the Rashomon-set analysis was not computed", "not applicable":
                "the Rashomon-set analysis does not apply to this model", "failed": "the Rashomon-set analysis failed"}
               .get(mcr.status, "the Rashomon-set analysis covers other columns") + (f": {mcr.reason}" if mcr.reason
                                                                                     else ""))
        out["findings"].append(f"How much an equally accurate model could rely on {name}: not assessed ({why}).")
    if rows:
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "columns"
        out["data"]["reliance"] = frame
        out["blocks"].append(Table(f"{name}: the model's reliance on the columns that encode it (increase of the "
                                   "loss when they are scrambled) and, where available, its range over the "
                                   "Rashomon set.", frame))


def _proxies(out, X, labels, where, encodings, seed) -> None:
    limits = out["limits"]
    name = out["name"]
    try:
        proxy = fair.proxy_check(X, labels, encodings, seed)
    except InputError as exc:
        out["findings"].append(f"Proxy check: not assessed ({exc}).")
        return
    shares = proxy.table["share of the attribute's entropy"]
    out["proxy features"] = list(dict.fromkeys([*encodings, *(c for c in proxy.top() if shares[c] >= PROXY_SHARE)]))
    out["data"]["proxies"] = {"data": where, "rows": proxy.rows, "folds": proxy.folds, "auc": proxy.auc,
                              "table": proxy.table, "top": proxy.top(), "note": proxy.note}
    out["blocks"].append(Table(
        f"{name}: the model features sharing the most information with it ({proxy.rows} complete {where} rows). "
        "Share of its entropy: mutual information divided by the attribute's entropy (1: the feature determines "
        "the group).", proxy.table.head(8).replace({"encodes the attribute": {"": "–"}})))
    indirect = proxy.auc.get("features other than its encodings", proxy.auc.get("all features") if not encodings
                             else None)
    strongest = ", ".join(f"{c} ({fmt(100 * shares[c], 2)}% of its entropy)" for c in proxy.top())
    text = (f"Proxy check: the features that carry the most information about {name} are {strongest}"
            + ("; every one of them carries little of it." if shares[proxy.top()].max() < PROXY_SHARE else "."))
    if proxy.auc:
        text += (" A small random-forest classifier predicts the group with a cross-validated ROC AUC of "
                 + "; ".join(f"{against(v, limits['proxy AUC'], 3)} from {k}" for k, v in proxy.auc.items())
                 + f" ({proxy.folds}-fold; 0.5 = no better than chance; warning above "
                   f"{fmt(limits['proxy AUC'])}).")
    else:
        text += f" {proxy.note[0].upper() + proxy.note[1:]}."
    out["findings"].append(text)
    if indirect is not None and indirect > limits["proxy AUC"]:
        out["warnings"].append(f"the model features predict it indirectly (AUC "
                               f"{against(indirect, limits['proxy AUC'], 3)} above "
                               f"{fmt(limits['proxy AUC'])}; strongest: {', '.join(proxy.top())})")


@dataclass(frozen=True)
class Disparity:
    """A disparity between the groups of a protected ``attribute``: ``metric``, ``value`` with its interval
    [``low``, ``high``] (NaN when there is none), and the ``limit`` above which it is a finding."""

    attribute: str
    metric: str
    value: float
    low: float
    high: float
    limit: float

    @property
    def status(self) -> str:
        """"fail" when the whole interval lies above the limit (the data show the disparity), "warn" when the
        value does but the interval reaches the limit (or there is no interval), "pass" when the value is
        at or below the limit; "not assessed" for a value that is not finite."""
        if not np.isfinite(self.value):
            return NOT_ASSESSED
        if self.value <= self.limit:
            return PASS
        return FAIL if np.isfinite(self.low) and self.low > self.limit else WARN

    def __str__(self) -> str:
        """"attribute: metric value [low, high] vs limit", each number printed on its side of the limit."""
        limit = (self.limit,)
        interval = (f" (95% interval [{shown(self.low, limit)}, {shown(self.high, limit)}])"
                    if np.isfinite([self.low, self.high]).all() else "")
        return f"{self.attribute}: {self.metric} {shown(self.value, limit)}{interval}, limit {self.limit:g}"


def fairness_criterion(attributes, disparities=(), crossed: str = "", insufficient=(), not_assessed_reason: str = "",
             thresholds=None) -> Criterion:
    """Fairness criterion of the protected ``attributes``: "fail" when a :class:`Disparity` of ``disparities``
    fails (its whole interval above its limit), "warn" when one warns, when the fairness section reports
    other findings (``crossed``: importance profiles, proxies, error ratios, a protected attribute used as a
    model input) or when an attribute had too few rows per group to be judged (``insufficient``: one text
    per such attribute), else "pass"; "not assessed" with ``not_assessed_reason``."""
    name, kind = "Fairness", "fairness"
    text_rule = rule(kind, thresholds)
    names = f"Protected attribute{'s' * (len(attributes) > 1)} {', '.join(map(str, attributes))}"
    if not_assessed_reason:
        return not_assessed(name, kind, not_assessed_reason, text_rule)
    by_status = {s: [d for d in disparities if d.status == s] for s in (FAIL, WARN)}
    status = FAIL if by_status[FAIL] else WARN if by_status[WARN] or crossed or insufficient else PASS
    within = [d for d in disparities if d.status == PASS]
    parts = [f"{s} — " + "; ".join(map(str, by_status[s])) for s in (FAIL, WARN) if by_status[s]]
    parts += [f"within limits — {'; '.join(map(str, within))}"] * bool(within)
    parts += [f"other findings: {crossed}"] * bool(crossed)
    parts += [f"insufficient evidence: {'; '.join(insufficient)}"] * bool(insufficient)
    text = f"{names}: " + (". ".join(parts) if parts else "no fairness threshold crossed") + "."
    implication = ""
    if by_status[FAIL]:
        implication = ("The model's predictions differ between groups of "
                       + ", ".join(dict.fromkeys(d.attribute for d in by_status[FAIL]))
                       + " beyond the limit with 95% confidence: it should not be used for decisions about these "
                         "groups without a documented justification.")
    elif status == WARN:
        reasons = ([f"possible disparity: {d}" for d in by_status[WARN]] + [crossed] * bool(crossed)
                   + [f"too little evidence: {text}" for text in insufficient])
        implication = f"Review the fairness section before use — {'; '.join(reasons)}."
    return Criterion(name, status, None, None, text_rule, text, kind, implication)
