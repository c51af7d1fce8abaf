"""Champion/challenger section: how a challenger model compares with the audited model (the champion) on the same
test rows, and the promotion verdict — may the challenger replace the champion?

Every difference is the challenger's value minus the champion's, with a *paired* bootstrap interval: one resample
draws the test rows once for both models, so what the two models share cancels. On the test rows:

* **performance** (R² or balanced accuracy, as the model section), **calibration** (Brier score of the explained
  class) and, per protected attribute, the **disparity** between its groups (classification: demographic-parity
  difference max_g P(ŷ = c | g) − min_g P(ŷ = c | g) of the explained class c; regression: the gap between the
  groups' mean predictions, in standard deviations of the champion's predictions);

on the explained rows, with the noise of the audit at σ_ref (both models perturbed alike, exactly):

* **reliance per feature**: its share of the output's movement, s_j = mean PG²(x, {j}) / mean PG²(x, all features)
  (a ratio of exact means, free of the output's unit, so that a margin and a probability compare), for each model,
  and its shift s_j(challenger) − s_j(champion); the same for the champion's top-k prefix sets. Where RF-MCR ran,
  the challenger's permutation reliance on the training rows is set against the champion's Rashomon range
  [MCR−, MCR+]: a shift beyond it is more than equally good models of the champion's class would show;
* **faithfulness** of each explainer on each model, F = (PGI²(method) − PGI²(random)) / (PGI²(best found) −
  PGI²(random)) as in the faithfulness section (the same random orders for both models), and the **agreement**
  between the two models' rankings of each row (Kendall τ, top-k overlap).

The promotion verdict is the worst of its criteria (performance not worse beyond ``promotion_margin``, no
disparity worse beyond ``promotion_fairness_margin``, each judged explainer not less faithful beyond
``promotion_faithfulness_margin``, no shift of reliance onto a protected attribute or a proxy of one beyond
``promotion_reliance_margin`` — or beyond the Rashomon range where RF-MCR ran); a criterion not assessed makes it at
best "warn". ``xai-audit --fail-on promotion:LEVEL`` gates on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ...prediction_gap import pg2
from .. import figures
from .. import pgi2_of_rankings as faith
from ..context import CHALLENGER
from ..criteria import (
    FAIL,
    PASS,
    PROMOTION,
    WARN,
    Criterion,
    Kind,
    Threshold,
    named,
    not_assessed,
    rule,
    scarce_evidence,
    shown,
)
from ..explainers import REGISTRY as EXPLAINERS
from ..render import fmt
from ..runners import run_all
from ..section import Table, new, register
from ..verdict import CI_LEVEL, Judgement, bootstrap_ci, grade
from .fairness import groups as fair
from .faithfulness import FLOOR, best_found, rankings_of
from .faithfulness import normalised as normalised_f
from .model import SCORES, TASK_SCORES

__all__: list = []

NAME = "comparison"
PERFORMANCE, FAIRNESS, EXPLANATIONS, RELIANCE = (f"promotion: {k}" for k in
                                                 ("performance", "fairness", "explanations", "reliance"))
THRESHOLDS = (
    Threshold("promotion_margin", 0.02, "promotion: loss of the test score (R² or balanced accuracy) the challenger "
              "may show against the champion", "two points of R² or balanced accuracy is within what a retrained "
              "model moves by from one training sample to another", PERFORMANCE, 0.0, 1.0, "a score difference in "
              "[0, 1]"),
    Threshold("promotion_fairness_margin", 0.02, "promotion: increase of a disparity between the groups of a "
              "protected attribute the challenger may show", "a fifth of the 0.1 limit of the fairness section: a "
              "challenger may not consume a noticeable part of the allowed disparity", FAIRNESS, 0.0, 1.0,
              "a difference of rates (or of standardised gaps) in [0, 1]"),
    Threshold("promotion_faithfulness_margin", 0.1, "promotion: loss of faithfulness F the challenger's "
              "explanations may show", "a tenth of the scale from random (0) to the best ranking found (1), under "
              "the 0.25 steps between the faithfulness grades", EXPLANATIONS, 0.0, 1.0, "a difference of F in [0, 1]"),
    Threshold("promotion_reliance_margin", 0.05, "promotion: shift of a protected attribute's or proxy's share of "
              "the output's movement the challenger may show", "five points of the output's movement moving onto a "
              "protected attribute or a proxy of one is a change a reviewer must see explained", RELIANCE, 0.0, 1.0,
              "a difference of shares in [0, 1]"),
)


def _not_worse_rule(name: str, what: str, better: str):
    def text(t: dict) -> str:
        side = "≥ −" if better == "higher" else "≤ "
        other = "< −" if better == "higher" else "> "
        return (f"Δ = challenger − champion {what}: pass if its {CI_LEVEL:.0%} paired-bootstrap CI lies {side}"
                f"{named(name, t)}, fail if it lies {other}{named(name, t)}, else warn")
    return text


def _reliance_rule(t: dict) -> str:
    return (f"Δ = challenger − champion share of the output's movement, per protected attribute or proxy among the "
            f"inputs: pass if every {CI_LEVEL:.0%} paired-bootstrap CI lies within "
            f"±{named('promotion_reliance_margin', t)}, fail if one lies beyond it (and, where RF-MCR ran, the "
            "challenger's reliance is outside the champion's Rashomon range), else warn")


KINDS = (Kind(PERFORMANCE, PROMOTION, {PASS: "not worse", WARN: "possibly worse", FAIL: "worse"},
              _not_worse_rule("promotion_margin", "test score", "higher")),
         Kind(FAIRNESS, PROMOTION, {PASS: "not less fair", WARN: "possibly less fair", FAIL: "less fair"},
              _not_worse_rule("promotion_fairness_margin", "disparity", "lower")),
         Kind(EXPLANATIONS, PROMOTION, {PASS: "as faithful", WARN: "possibly less faithful", FAIL: "less faithful"},
              _not_worse_rule("promotion_faithfulness_margin", "faithfulness F", "higher")),
         Kind(RELIANCE, PROMOTION, {PASS: "no shift", WARN: "possible shift", FAIL: "unexplained shift"},
              _reliance_rule))


@dataclass
class Comparison:
    """What the comparison section found: the ``promotion`` verdict (a :class:`~xai_plugins.report.verdict.Judgement`
    of its criteria), the ``deltas`` table (performance, calibration, disparities), the per-feature ``reliance``
    table, the ``faithfulness`` and ``agreement`` tables, and one sentence per finding (``findings``)."""

    promotion: Judgement
    deltas: pd.DataFrame
    reliance: pd.DataFrame
    faithfulness: pd.DataFrame
    agreement: pd.DataFrame
    findings: list = field(default_factory=list)


@register(NAME, "Champion and challenger", reads=("model", "explanations", "faithfulness", "fairness", "mcr"),
          result=Comparison, thresholds=THRESHOLDS, kinds=KINDS, position=125, stage=100)
def build(ctx, results, options):
    """The comparison of the challenger held by the context with the audited model, and the promotion verdict."""
    section = new(NAME)
    if CHALLENGER not in ctx.models:
        section.status = "skipped"
        section.reason = "no challenger model given (audit(..., challenger=model); xai-audit --challenger FILE)"
        return section
    explained = results["explanations"].result
    if ctx.cluster is not None:
        section.status, section.reason = "not applicable", "the comparison runs on test data held in memory"
        return section
    if explained is None or explained.explained is None or not explained.explained.n:
        section.status = "not applicable"
        section.reason = "the explainers did not run (the comparison scores both models' explanations)"
        return section
    other = ctx.view(CHALLENGER)
    t = options.limits
    deltas, criteria = _scores(ctx, other, t)
    disparity_rows, fairness = _disparities(ctx, other, options, t)
    deltas = pd.DataFrame(deltas + disparity_rows).set_index("quantity")
    on = explained.explained
    reliance, shares, shifts = _reliance(ctx, other, on.X, results, options)
    prefixes = _prefixes(ctx, other, on.X, shares, options)
    scored, agreement, faithful = _explanations(ctx, other, on, results, options, t)
    criteria += fairness + faithful + _reliance_criteria(reliance, shifts, results, options, t)
    promotion = Judgement.from_criteria(PROMOTION, criteria)
    findings = _findings(deltas, reliance, scored, agreement, promotion)
    section.result = Comparison(promotion, deltas, reliance, scored, agreement, findings)
    section.data = {"champion": type(ctx.model).__name__, "challenger": type(other.model).__name__,
                    "explained output": {"champion": ctx.output_label, "challenger": other.output_label},
                    "test rows": len(ctx.X_test), "explained rows": int(on.n), "sigma": options.sigma_ref,
                    "promotion": promotion.to_dict(), "criteria": [c.to_dict() for c in criteria],
                    "deltas": deltas, "reliance": reliance, "prefix sets": prefixes, "faithfulness": scored,
                    "agreement": agreement, "findings": findings}
    section.raw = {"criteria": criteria}
    section.tables = [
        Table(f"Performance, calibration and disparities on the same {len(ctx.X_test)} test rows: Δ = challenger − "
              f"champion, with a {CI_LEVEL:.0%} paired-bootstrap interval (the same resamples for both models).",
              _shown(deltas)),
        Table(f"Reliance per feature at σ = {options.sigma_ref:g} on the {on.n} explained rows: each feature's share "
              "of the output's movement, mean PG²(x, {j}) / mean PG²(x, all features), exact for both models; Δ with a "
              "paired interval." + (" Beyond Rashomon: the challenger's permutation reliance lies outside the "
                                    "champion's range [MCR−, MCR+]." if "beyond Rashomon" in reliance else ""),
              _shown(reliance.drop(columns=[c for c in reliance if c.endswith("low") or c.endswith("high")
                                             and not c.startswith("Δ")]))),
        Table("The champion's top-k prefix sets (its features by decreasing share): each model's share of the output's "
              "movement when the first k are perturbed together.", _shown(prefixes)),
        Table(f"Faithfulness F of each explainer on each model (σ = {options.sigma_ref:g}, the same explained rows and "
              "random orders), Δ with a paired interval.", _shown(scored)),
        Table(f"Agreement between the two models' rankings of each explained row, per explainer: mean Kendall τ and "
              f"top-{min(options.top_k, ctx.n_features)} overlap, with {CI_LEVEL:.0%} bootstrap intervals.",
              _shown(agreement))]
    section.figures = [_figure(reliance)]
    return section


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its numbers as the report prints them."""
    return frame.apply(lambda column: column.map(lambda v: fmt(v, 3) if isinstance(v, (float, np.floating)) else v))


def _delta_row(quantity: str, champion: float, challenger: float, ci) -> dict:
    return {"quantity": quantity, "champion": champion, "challenger": challenger, "Δ": challenger - champion,
            "Δ low": ci.low, "Δ high": ci.high}


def _predictions(view) -> np.ndarray:
    return np.asarray(view.model.predict(view.model_input(view.X_test.to_numpy())))


def _scores(ctx, other, t) -> tuple[list, list]:
    """The performance and calibration rows of the deltas table, and the performance criterion."""
    name = "Performance of the challenger"
    if ctx.y_test is None:
        return [], [not_assessed(name, PERFORMANCE, "no test target was given", rule(PERFORMANCE, t))]
    scarce = scarce_evidence(ctx.y_test, t["min_test_rows"], ctx.task == "classification")
    if scarce:
        return [], [not_assessed(name, PERFORMANCE, f"too little evidence: {scarce}", rule(PERFORMANCE, t))]
    metric = TASK_SCORES[ctx.task][0]
    score = SCORES[metric][0]
    y, a, b = ctx.y_test, _predictions(ctx), _predictions(other)
    if metric != "R²":
        codes = np.unique(np.concatenate([np.asarray(v).astype(str) for v in (y, a, b)]), return_inverse=True)[1]
        y, a, b = (codes[k * len(y):(k + 1) * len(y)].astype(float) for k in range(3))
    y, a, b = (np.asarray(v, dtype=float) for v in (y, a, b))
    ci = bootstrap_ci((y, a, b), lambda y, a, b, axis=-1: score(y, b, axis=axis) - score(y, a, axis=axis),
                      random_state=ctx.rng("comparison: performance"))
    rows = [_delta_row(f"test {metric}", float(score(y, a)), float(score(y, b)), ci)]
    margin = t["promotion_margin"]
    delta = rows[0]["Δ"]
    status = grade(delta, ci, -margin, -margin, lower_is_better=False)
    criterion = Criterion(name, status, delta, ci, rule(PERFORMANCE, t),
                          f"Test {metric} {shown(rows[0]['challenger'])} for the challenger against "
                          f"{shown(rows[0]['champion'])} for the champion on the same {len(y)} test rows: Δ = "
                          f"{shown(delta, (-margin,))} ({ci.text((-margin,))}).", PERFORMANCE,
                          {FAIL: "The challenger predicts worse than the champion beyond the margin: it should not "
                                 "replace it.",
                           WARN: "The challenger may predict worse than the champion: the test rows do not settle "
                                 "it."}.get(status, ""), (-margin,))
    if ctx.task == "classification":
        column = ctx.classes.index(ctx.positive_class)
        hit = (np.asarray(ctx.y_test) == ctx.positive_class).astype(float)
        pa, pb = (np.asarray(v.model.predict_proba(v.model_input(v.X_test.to_numpy())))[:, column]
                  for v in (ctx, other))
        brier = lambda h, p, axis=-1: np.mean((p - h) ** 2, axis=axis)  # noqa: E731
        ci = bootstrap_ci((hit, pa, pb), lambda h, a, b, axis=-1: brier(h, b, axis) - brier(h, a, axis),
                          random_state=ctx.rng("comparison: calibration"))
        rows.append(_delta_row(f"Brier score of class {ctx.positive_class} (lower is better)", float(brier(hit, pa)),
                               float(brier(hit, pb)), ci))
    return rows, [criterion]


def _group_gap(values, codes, axis=-1):
    """max − min over the groups (integer ``codes``) of the groups' mean ``values``, along ``axis`` (vectorised for
    the bootstrap; a group absent from a resample is left out)."""
    codes = np.rint(codes).astype(int)
    means = []
    for g in np.unique(codes):
        inside = codes == g
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(np.sum(values * inside, axis=axis) / np.sum(inside, axis=axis))
    means = np.stack(means)
    return np.nanmax(means, axis=0) - np.nanmin(means, axis=0)


def _disparities(ctx, other, options, t) -> tuple[list, list]:
    """The disparity rows of the deltas table and a fairness criterion per protected attribute."""
    if not options.protected:
        return [], []
    a, b = _predictions(ctx), _predictions(other)
    if ctx.task == "classification":
        what = f"demographic-parity difference of class {ctx.positive_class}"
        a, b = (np.asarray(v) == ctx.positive_class for v in (a, b))
    else:
        what = "mean-prediction gap (standard deviations of the champion's predictions)"
        scale = float(np.std(a)) or 1.0
        a, b = np.asarray(a, dtype=float) / scale, np.asarray(b, dtype=float) / scale
    a, b = a.astype(float), b.astype(float)
    rows, criteria, margin = [], [], t["promotion_fairness_margin"]
    for attribute in options.protected:
        name = f"Fairness of the challenger ({attribute})"
        values = ctx.protected[attribute].reset_index(drop=True)
        try:
            labels = fair.make_grouping(values, attribute).labels(values)
        except Exception as exc:  # noqa: BLE001 - said in the criterion
            criteria.append(not_assessed(name, FAIRNESS, str(exc), rule(FAIRNESS, t)))
            continue
        codes = pd.factorize(labels)[0].astype(float)
        if len(np.unique(codes)) < 2:
            criteria.append(not_assessed(name, FAIRNESS, "every test row is in one group", rule(FAIRNESS, t)))
            continue
        ci = bootstrap_ci((codes, a, b), lambda c, a, b, axis=-1: _group_gap(b, c, axis) - _group_gap(a, c, axis),
                          random_state=ctx.rng(f"comparison: fairness {attribute}"))
        row = _delta_row(f"{attribute}: {what}", float(_group_gap(a, codes)), float(_group_gap(b, codes)), ci)
        rows.append(row)
        status = grade(row["Δ"], ci, margin, margin, lower_is_better=True)
        criteria.append(Criterion(
            name, status, row["Δ"], ci, rule(FAIRNESS, t),
            f"{what[0].upper() + what[1:]} between the groups of {attribute}: {shown(row['challenger'])} for the "
            f"challenger against {shown(row['champion'])} for the champion, Δ = {shown(row['Δ'], (margin,))} "
            f"({ci.text((margin,))}).", FAIRNESS,
            {FAIL: f"The challenger treats the groups of {attribute} less evenly than the champion beyond the "
                   "margin.",
             WARN: f"The challenger may treat the groups of {attribute} less evenly than the champion."
             }.get(status, ""), (margin,)))
    return rows, criteria


def _movement(view, X, sets, sigma, binary_sigma) -> np.ndarray:
    """Exact PG² of the explained output of ``view``'s model, (rows of ``X``, sets of ``sets``)."""
    noise = view.noise(sigma, binary_sigma)
    out = [np.asarray(pg2(view.forest, X, list(s), **noise, verbose=False, output=view.output).value, dtype=float)
           for s in sets]
    return np.column_stack(out)


def _share_ci(part, whole, rng):
    """The share mean(part) / mean(whole) with its bootstrap interval."""
    return float(np.mean(part) / np.mean(whole)), bootstrap_ci(
        (part, whole), lambda p, w, axis=-1: np.mean(p, axis=axis) / np.mean(w, axis=axis), random_state=rng)


def _reliance(ctx, other, X, results, options) -> tuple[pd.DataFrame, np.ndarray, dict]:
    """The per-feature reliance table (each model's share with its interval, the shift with its paired interval and,
    where RF-MCR ran, the challenger's reliance against the champion's Rashomon range), the champion's shares and
    each feature's shift interval."""
    d, sigma = ctx.n_features, options.sigma_ref
    sets = [[j] for j in range(d)] + [list(range(d))]
    a, b = (_movement(v, X, sets, sigma, options.binary_sigma) for v in (ctx, other))
    rows, shifts = [], {}
    for j, feature in enumerate(ctx.feature_names):
        rng = ctx.rng(f"comparison: reliance {feature}")
        sa, ca = _share_ci(a[:, j], a[:, -1], rng)
        sb, cb = _share_ci(b[:, j], b[:, -1], rng)
        shift = bootstrap_ci((a[:, j], a[:, -1], b[:, j], b[:, -1]),
                             lambda pa, wa, pb, wb, axis=-1: (np.mean(pb, axis=axis) / np.mean(wb, axis=axis)
                                                              - np.mean(pa, axis=axis) / np.mean(wa, axis=axis)),
                             random_state=rng)
        shifts[feature] = shift
        rows.append({"feature": feature, "champion": sa, "champion low": ca.low, "champion high": ca.high,
                     "challenger": sb, "challenger low": cb.low, "challenger high": cb.high, "Δ": sb - sa,
                     "Δ low": shift.low, "Δ high": shift.high})
    table = pd.DataFrame(rows).set_index("feature")
    rashomon = _rashomon(ctx, other, results, options)
    if rashomon is not None:
        table = table.join(rashomon)
    return table, table["champion"].to_numpy(), shifts


def _rashomon(ctx, other, results, options) -> pd.DataFrame | None:
    """Per feature, the challenger's permutation reliance on the training rows (the champion's RF-MCR loss and
    reliance), the champion's range [MCR−, MCR+] and whether the challenger's lies outside it; None where RF-MCR did
    not run."""
    mcr = results["mcr"]
    method = results["explanations"].result.methods.get("mcr")
    if mcr.result is None or method is None or "result" not in method.extras or ctx.X_train is None:
        return None
    found = method.extras["result"]
    loss = {"zero_one": lambda y, p: float(np.mean(np.asarray(y) != np.asarray(p))),
            "squared_error": lambda y, p: float(np.mean((np.asarray(y, float) - np.asarray(p, float)) ** 2))
            }.get(str(found.loss))
    if loss is None:
        return None

    def predict(frame):
        return other.model.predict(other.model_input(frame.to_numpy()))

    X = ctx.X_train.reset_index(drop=True)
    base = loss(ctx.y_train, predict(X))
    table = mcr.result.table
    rows = {}
    for feature in ctx.feature_names:
        change = fair.permutation_reliance(loss, predict, X, ctx.y_train, [feature], options.mcr_permutations,
                                           ctx.seed_int(f"comparison: permutation {feature}"))
        reliance = change if found.reliance != "ratio" else (base + change) / base if base > 0 else np.inf
        low, high = table.loc[feature, "mcr_minus"], table.loc[feature, "mcr_plus"]
        rows[feature] = {"challenger reliance": reliance, "champion MCR−": low, "champion MCR+": high,
                         "beyond Rashomon": "yes" if not low <= reliance <= high else "no"}
    return pd.DataFrame.from_dict(rows, orient="index")


def _prefixes(ctx, other, X, shares, options) -> pd.DataFrame:
    """Each model's share of the output's movement when the champion's first k features (by share) are perturbed."""
    order = np.argsort(-shares, kind="stable")
    k_max = min(options.top_k, ctx.n_features)
    sets = [order[:k].tolist() for k in range(1, k_max + 1)] + [list(range(ctx.n_features))]
    a, b = (_movement(v, X, sets, options.sigma_ref, options.binary_sigma) for v in (ctx, other))
    return pd.DataFrame([{"k": k, "features": ", ".join(ctx.feature_names[j] for j in sets[k - 1]),
                          "champion": float(np.mean(a[:, k - 1]) / np.mean(a[:, -1])),
                          "challenger": float(np.mean(b[:, k - 1]) / np.mean(b[:, -1]))}
                         for k in range(1, k_max + 1)]).set_index("k")


def _per_row_pgi2(view, on, methods, options) -> dict:
    """{key: (rows,) PGI² at σ_ref} of every ranking of ``methods`` on the rows ``on``, the random orders of the
    faithfulness section included (:data:`FLOOR`), the greedy PG² reference under :data:`GREEDY`."""
    rankings, labels = rankings_of(methods, on)
    rankings[FLOOR] = on.random_rankings(view.seed_int("faithfulness"))
    scores = faith.pgi2_scores(view, on.X, rankings, [options.sigma_ref], options.sigma_ref,
                               binary_sigma=options.binary_sigma)
    return {key: scores.per_row[(key, options.sigma_ref)] for key in rankings}


def _explanations(ctx, other, on, results, options, t) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """The faithfulness table (F per explainer and model, Δ with a paired interval), the agreement table (Kendall τ
    and top-k overlap of the two models' per-row rankings) and the explanation criteria of the promotion verdict."""
    champion = results["explanations"].result.methods
    keys = [k for k, m in champion.items() if m.status == "ok" and EXPLAINERS[k].per_row]
    rows = dataclasses.replace(on, local_X=on.local_X[:0], local_labels=[])
    challenger = run_all(other, rows, options.replace(explainers=tuple(keys), shown_explainer=None))
    faithful = results["faithfulness"].result
    pgi2_a = (faithful.pgi2[options.sigma_ref] if faithful is not None and options.sigma_ref in faithful.pgi2
              else _per_row_pgi2(ctx, on, champion, options))
    pgi2_b = _per_row_pgi2(other, on, challenger, options)
    common = set(pgi2_a) & set(pgi2_b)       # the best ranking found among the same rankings on both models
    pgi2_a, pgi2_b = ({k: v for k, v in per_row.items() if k in common} for per_row in (pgi2_a, pgi2_b))
    judged = [k for k in keys if not EXPLAINERS[k].reference and challenger[k].status == "ok"
              and options.shown_explainer in (None, k) and k in pgi2_a and k in pgi2_b]
    best_a, best_b = best_found(pgi2_a), best_found(pgi2_b)
    scored, criteria, margin = [], [], t["promotion_faithfulness_margin"]
    for key in judged:
        label = EXPLAINERS[key].label
        arrays = (pgi2_a[key], pgi2_a[FLOOR], best_a, pgi2_b[key], pgi2_b[FLOOR], best_b)
        ci = bootstrap_ci(arrays, lambda ma, ra, ba, mb, rb, bb, axis=-1: (normalised_f(mb, rb, bb, axis)
                                                                             - normalised_f(ma, ra, ba, axis)),
                          random_state=ctx.rng(f"comparison: faithfulness {key}"))
        fa, fb = float(normalised_f(*arrays[:3])), float(normalised_f(*arrays[3:]))
        scored.append({"explainer": label, "champion F": fa, "challenger F": fb, "Δ": fb - fa, "Δ low": ci.low,
                       "Δ high": ci.high})
        name = f"Faithfulness of {label} on the challenger"
        if not (np.isfinite(fa) and np.isfinite(fb)):
            criteria.append(not_assessed(name, EXPLANATIONS, "no evaluated ranking scores above random rankings on "
                                         "one of the models", rule(EXPLANATIONS, t)))
            continue
        status = grade(fb - fa, ci, -margin, -margin, lower_is_better=False)
        criteria.append(Criterion(
            name, status, fb - fa, ci, rule(EXPLANATIONS, t),
            f"{label}'s rankings recover F = {shown(fb)} on the challenger against {shown(fa)} on the champion "
            f"(σ = {options.sigma_ref:g}, {on.n} explained rows): Δ = {shown(fb - fa, (-margin,))} "
            f"({ci.text((-margin,))}).", EXPLANATIONS,
            {FAIL: f"{label}'s explanations of the challenger are less faithful than of the champion beyond the "
                   "margin.",
             WARN: f"{label}'s explanations of the challenger may be less faithful than of the champion."
             }.get(status, ""), (-margin,)))
    if not judged and options.shown_explainer is not None:
        criteria.append(not_assessed(f"Faithfulness of {EXPLAINERS[options.shown_explainer].label} on the challenger",
                                     EXPLANATIONS, "it did not rank the explained rows of both models",
                                     rule(EXPLANATIONS, t)))
    agreement = _agreement(ctx, champion, challenger, [k for k in keys if challenger[k].status == "ok"], options)
    columns = ["explainer", "champion F", "challenger F", "Δ", "Δ low", "Δ high"]
    return pd.DataFrame(scored, columns=columns).set_index("explainer"), agreement, criteria


def _agreement(ctx, champion, challenger, keys, options) -> pd.DataFrame:
    """Mean Kendall τ and top-k overlap between the two models' per-row rankings, per explainer."""
    k = min(options.top_k, ctx.n_features)
    rows = []
    for key in keys:
        a, b = (np.asarray(m[key].ranking) for m in (champion, challenger))
        place_a, place_b = np.argsort(a, axis=1), np.argsort(b, axis=1)     # each feature's place in the ranking
        tau = np.array([stats.kendalltau(pa, pb).statistic for pa, pb in zip(place_a, place_b)])
        overlap = np.array([len(set(ra[:k]) & set(rb[:k])) / k for ra, rb in zip(a, b)])
        tau = np.nan_to_num(tau, nan=1.0)               # a one-feature ranking: the same order
        ct, co = (bootstrap_ci(v, random_state=ctx.rng(f"comparison: agreement {key} {i}"))
                  for i, v in enumerate((tau, overlap)))
        rows.append({"explainer": EXPLAINERS[key].label, "Kendall τ": float(tau.mean()), "τ low": ct.low,
                     "τ high": ct.high, f"top-{k} overlap": float(overlap.mean()), "overlap low": co.low,
                     "overlap high": co.high})
    columns = ["explainer", "Kendall τ", "τ low", "τ high", f"top-{k} overlap", "overlap low", "overlap high"]
    return pd.DataFrame(rows, columns=columns).set_index("explainer")


def _reliance_criteria(reliance, shifts, results, options, t) -> list:
    """The criterion on shifts of reliance onto the protected attributes among the inputs and their proxies."""
    if not options.protected:
        return []
    name = "Reliance on protected attributes and their proxies"
    fairness = results["fairness"].result
    watched = [f for f in dict.fromkeys([*options.protected, *(p for a in options.protected
                                                               for p in (fairness.proxies.get(a, []) if fairness
                                                                         else []))])
               if f in reliance.index]
    if not watched:
        return [Criterion(name, PASS, None, None, rule(RELIANCE, t), "No protected attribute or proxy of one is a "
                          "model input: no reliance on them can shift.", RELIANCE, "")]
    margin = t["promotion_reliance_margin"]
    beyond = "beyond Rashomon" in reliance
    statuses = {}
    for feature in watched:
        low, high = reliance.loc[feature, ["Δ low", "Δ high"]].to_numpy(dtype=float)
        status = (WARN if not np.isfinite([low, high]).all() else PASS if -margin <= low and high <= margin
                  else FAIL if low > margin or high < -margin else WARN)
        if status == FAIL and beyond and reliance.loc[feature, "beyond Rashomon"] == "no":
            status = WARN                    # within what equally good models of the champion's class would show
        statuses[feature] = status
    worst = max(statuses, key=lambda f: ({PASS: 0, WARN: 1, FAIL: 2}[statuses[f]], abs(reliance.loc[f, "Δ"])))
    row = reliance.loc[worst]

    def told(f) -> str:
        side = "outside" if beyond and reliance.loc[f, "beyond Rashomon"] == "yes" else "inside"
        where = f", challenger reliance {side} the champion's Rashomon range" if beyond else ""
        return (f"{f}: Δ = {shown(reliance.loc[f, 'Δ'], (-margin, margin))} "
                f"({shifts[f].text((-margin, margin))}){where}")

    said = "; ".join(told(f) for f in watched)
    status = statuses[worst]
    return [Criterion(name, status, float(row["Δ"]), shifts[worst], rule(RELIANCE, t),
                      f"Shift of the share of the output's movement onto the protected attributes among the inputs and "
                      f"their proxies ({', '.join(watched)}): {said}.", RELIANCE,
                      {FAIL: f"The challenger relies on {worst} (a protected attribute or a proxy of one) "
                             "differently beyond the margin: the shift must be explained before promotion.",
                       WARN: f"The challenger's reliance on {worst} may have shifted."}.get(status, ""),
                      (-margin, margin))]


def _findings(deltas, reliance, scored, agreement, promotion) -> list:
    """One sentence per finding, worst first: the promotion verdict, each delta whose interval excludes zero, the
    largest reliance shifts, each explainer's change of faithfulness and the models' agreement."""
    out = [promotion.headline]
    for quantity, row in deltas.iterrows():
        if np.isfinite([row["Δ low"], row["Δ high"]]).all() and not row["Δ low"] <= 0 <= row["Δ high"]:
            out.append(f"{quantity}: {fmt(row['champion'], 3)} → {fmt(row['challenger'], 3)} (Δ {fmt(row['Δ'], 3)}, "
                       f"interval [{fmt(row['Δ low'], 3)}, {fmt(row['Δ high'], 3)}] excludes 0).")
    moved = reliance[(reliance["Δ low"] > 0) | (reliance["Δ high"] < 0)]
    for feature, row in moved.reindex(moved["Δ"].abs().sort_values(ascending=False).index).head(5).iterrows():
        out.append(f"Reliance on {feature} {'rises' if row['Δ'] > 0 else 'falls'} from {fmt(100 * row['champion'], 3)}%"
                   f" to {fmt(100 * row['challenger'], 3)}% of the output's movement.")
    for explainer, row in scored.iterrows():
        out.append(f"{explainer}: faithfulness F {fmt(row['champion F'], 3)} on the champion, "
                   f"{fmt(row['challenger F'], 3)} on the challenger.")
    for explainer, row in agreement.iterrows():
        out.append(f"{explainer}: the two models' per-row rankings agree with mean Kendall τ "
                   f"{fmt(row['Kendall τ'], 3)}.")
    return out


def _figure(reliance: pd.DataFrame, top: int = 12) -> figures.Figure:
    """Each model's share of the output's movement per feature (the features with the largest shares of either
    model), with the intervals."""
    shown_rows = reliance.loc[reliance[["champion", "challenger"]].max(axis=1).sort_values(ascending=False)
                              .head(top).index[::-1]]

    def draw(ax):
        y = np.arange(len(shown_rows))
        for offset, model, colour in ((0.2, "champion", "#1f4e79"), (-0.2, "challenger", "#c55a11")):
            value = shown_rows[model].to_numpy(dtype=float)
            err = np.abs(np.vstack([value - shown_rows[f"{model} low"], shown_rows[f"{model} high"] - value]))
            ax.barh(y + offset, value, height=0.4, xerr=np.nan_to_num(err), color=colour, label=model,
                    error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_yticks(y, [str(f) for f in shown_rows.index])
        ax.set_xlabel("share of the output's movement, PG²({j}) / PG²(all)")
        ax.tick_params(axis="y", length=0)
        figures.legend_outside(ax, below=True)

    return figures.drawn("Reliance per feature of the champion and the challenger: each feature's share of the "
                         "output's movement when it alone is perturbed, with 95% bootstrap intervals.", draw,
                         width=6.0, height=0.3 * len(shown_rows) + 1.4)
