"""Rashomon set and model class reliance (RF-MCR) section.

``data["table"]`` holds, per feature, the audited model's reliance and the range [MCR−, MCR+] over
the Rashomon set (columns ``mcr_minus``, ``model_reliance``, ``mcr_plus``, ``width``); ``data["constant loss"]``
the training loss of the best constant prediction, in the reliances' unit, and what it is in words (the scale
the verdict's Rashomon floor is a share of). The section owns the Rashomon-sensitivity criterion of the
explanation-reliability verdict (:func:`rashomon_sensitivity`); its typed result (:class:`Rashomon`) is what the
verdict and the fairness section read.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .. import criteria, figures
from ..criteria import FAIL, PASS, WARN, Criterion, Kind, Threshold, limits, named, not_assessed, rule, shown
from ..section import SKIPPED, Table, new, register
from ..verdict import grade

__all__: list = []

KIND = "Rashomon sensitivity"
_INF = float("inf")
#: the thresholds of the Rashomon-sensitivity criterion
THRESHOLDS = (
    Threshold("rashomon_warn", 0.2, "Rashomon sensitivity: widest MCR range R (share of the top reliance) that "
              "passes", "up to 0.2, equally accurate models agree on how much every feature matters", KIND, 0.0, _INF,
              "a share R of the top reliance ≥ 0"),
    Threshold("rashomon_fail", 0.5, "Rashomon sensitivity: R above which it fails",
              "above 0.5 some feature's reliance could move by half of the top feature's among equally good "
              "models, so the importance ranking is partly an arbitrary choice", KIND, 0.0, _INF,
              "a share R of the top reliance ≥ 0", at_least="rashomon_warn"),
    Threshold("rashomon_floor", 0.05, "Rashomon sensitivity: widest MCR range, as a share of the training loss of "
              "the best constant prediction, below which the ranges are negligible and the criterion passes",
              "scrambling a feature then changes the loss by less than a twentieth of what an uninformative model "
              "loses (its majority-class error rate, the target's variance): R, a ratio of such changes, is noise "
              "there and must not drive the verdict", KIND, 0.0, _INF, "a share of a loss ≥ 0"),
)


def _rule(t: dict) -> str:
    return ("R = widest MCR range / largest model reliance: pass when the widest range is below "
            f"{named('rashomon_floor', t)} × the training loss of the best constant prediction "
            "(a negligible change in the loss, whatever R); else pass R ≤ "
            f"{named('rashomon_warn', t)}, warn R ≤ {named('rashomon_fail', t)}, fail above")


RASHOMON = Kind(KIND, criteria.EXPLANATION_RELIABILITY, {"pass": "low", "warn": "moderate", "fail": "high"}, _rule)


@dataclasses.dataclass
class Rashomon:
    """What other sections read of the MCR section: per feature, the audited model's reliance and its range over
    the Rashomon set (``table``: columns ``mcr_minus``, ``model_reliance``, ``mcr_plus``, ``width``), what a
    reliance measures (``unit``, in words) and the training loss of the best constant prediction with its name
    (``constant_loss``), and the features of the widest ranges (``widest``)."""

    table: pd.DataFrame
    unit: str
    constant_loss: tuple
    widest: list

#: features drawn in the figure (the table lists every feature)
FIGURE_FEATURES = 15
#: readable column names of the MCR table (the reliance is a loss ratio or difference, see ``params``)
COLUMNS = {"mcr_minus": "lowest reliance (MCR−)", "model_reliance": "this model's reliance",
           "mcr_plus": "highest reliance (MCR+)", "width": "range width"}
#: per loss of the audit's RF-MCR, the loss of the best constant prediction on a training target and its name:
#: the majority class's error rate, the target's variance
CONSTANT_LOSS = {"zero_one": (lambda y: 1 - np.unique(y, return_counts=True)[1].max() / len(y),
                              "misclassification rate"),
                 "squared_error": (lambda y: float(np.var(np.asarray(y, dtype=float))), "mean squared error")}


@register("mcr", "Rashomon set and model class reliance", reads=("explanations",), result=Rashomon,
          thresholds=THRESHOLDS, kinds=(RASHOMON,), seconds=0.3, position=110, stage=80, optional=True, default=True)
def build(ctx, results, options):
    """Per-feature MCR ranges of the MCR method's result."""
    section = new("mcr")
    result = results["explanations"].result.methods.get("mcr")
    if "mcr" not in options.sections or result is None:
        section.status, section.reason = "skipped", SKIPPED
        return section
    if result.status != "ok":
        section.status, section.reason = result.status, result.reason
        return section
    table = result.extras["table"].copy()
    table["width"] = table["mcr_plus"] - table["mcr_minus"]
    table.index.name = "feature"
    table = table.sort_values("model_reliance", ascending=False)
    widest = table.sort_values("width", ascending=False).head(3)
    constant, loss_name = CONSTANT_LOSS[result.extras["result"].loss]
    section.data = {"table": table, "widest": widest.index.tolist(), "params": result.params,
                    "Rashomon set": rashomon_scope(result.extras["result"].epsilon),
                    "constant loss": (float(constant(np.asarray(ctx.y_train))), loss_name)}
    section.result = Rashomon(table, reliance_unit(result.params), section.data["constant loss"],
                              section.data["widest"])
    shown = table.head(FIGURE_FEATURES).index          # the features the model relies on most
    res = dataclasses.replace(result.extras["result"], table=result.extras["result"].table.loc[shown])

    def draw(ax):
        res.plot(ax=ax)
        ax.set_xlabel(result.params["reliance"])
        figures.legend_outside(ax, {"MCR range": "range over the Rashomon set", "reference MR": "this model"},
                               title=f"Model class reliance, Rashomon tolerance ε = {res.epsilon:g}")

    most = "" if len(shown) == len(table) else f" for the {len(shown)} features this model relies on most"
    section.figures.append(figures.drawn(
        f"Model class reliance{most}: the range of each feature's reliance over the Rashomon set of near-optimal "
        f"forests (bar) and the audited model's own reliance (diamond); reliance: {result.params['reliance']}.",
        draw, width=6.0, height=0.24 * len(shown) + 1.2))
    section.tables.append(Table(f"Model reliance and its range over the Rashomon set, by decreasing reliance "
                                f"({result.params['reliance']}).", table.rename(columns=COLUMNS)))
    return section


def rashomon_scope(epsilon: float) -> str:
    """What the Rashomon set of tolerance ``epsilon`` holds, in words; at ε = 0, what its ranges can and cannot
    show (the report adds how the reader sets ε)."""
    if epsilon > 0:
        return (f"Rashomon tolerance ε = {epsilon:g}: the Rashomon set holds the forests whose training predictions "
                f"differ from this model's by at most ε (share of rows with another predicted class, or mean squared "
                "difference).")
    return ("Rashomon tolerance ε = 0 (the default): the Rashomon set holds only the forests whose predictions on "
            "every training row are identical to this model's (trees are swapped only for trees that predict the "
            "training data alike). The ranges therefore show how much the reliance depends on choices the training "
            "data cannot tell apart: the narrowest Rashomon set, a lower bound on the Rashomon effect. A narrow range "
            "(and a passing Rashomon sensitivity) at ε = 0 does not mean that equally accurate models which predict "
            "differently would agree; a tolerance ε > 0 admits them and can widen the ranges.")


def reliance_unit(params: dict) -> str:
    """What the reliance numbers of an MCR section measure, in words (from its ``data["params"]``)."""
    return str(params.get("reliance", "model reliance"))


def rashomon_sensitivity(features, reliance, lower, upper, unit: str = "", thresholds=None,
                         baseline: tuple[float, str] | None = None) -> Criterion:
    """Rashomon criterion from each feature's model reliance MR_j(f) and its MCR range [MCR−_j, MCR+_j]:
    R = max_j (MCR+_j − MCR−_j) / max_j MR_j(f), graded by the thresholds ``rashomon_warn`` /
    ``rashomon_fail``. No interval: the MCR bounds are themselves estimates over the Rashomon set, not row
    means. ``unit`` says in words what a reliance measures (e.g. "increase in log-loss when the feature is
    scrambled"). ``baseline``: (the training loss of the best constant prediction, in the reliances' unit, what
    it is in words); when the widest range is below ``rashomon_floor`` times it, the ranges are negligible
    changes in the loss and the criterion passes whatever R, a ratio of negligible quantities."""
    name, kind, t = "Rashomon sensitivity", "Rashomon sensitivity", limits(thresholds)
    text_rule = rule(kind, t)
    features = [str(f) for f in features]
    reliance, lower, upper = (np.asarray(a, dtype=float) for a in (reliance, lower, upper))
    top = float(np.max(reliance)) if len(reliance) else np.nan
    if not len(features) or not np.isfinite(top) or top <= 0:
        return not_assessed(name, kind, "no feature has a positive model reliance to compare the MCR ranges with",
                            text_rule)
    widths = upper - lower
    widest = int(np.nanargmax(widths))
    value = float(widths[widest] / top)
    bounds = (t["rashomon_warn"], t["rashomon_fail"])
    text = (f"Widest range: {features[widest]}, reliance between {lower[widest]:.4g} and {upper[widest]:.4g} among "
            f"equally accurate models (the audited model: {reliance[widest]:.4g}); the largest reliance of the model "
            f"is {top:.4g} ({features[int(np.argmax(reliance))]}), so R = {shown(value, bounds, '.2f')}."
            + (f" Reliance: {unit}." if unit else ""))
    negligible = False
    if baseline is not None:
        floor = t["rashomon_floor"] * baseline[0]
        negligible = bool(widths[widest] < floor)
        text += (f" The widest range, {shown(widths[widest], (floor,), '.4g')}, is "
                 + ("below" if negligible else "at or above") + f" the floor {shown(floor, (widths[widest],), '.4g')} "
                 f"({t['rashomon_floor']:g} (rashomon_floor) × {baseline[0]:.4g}, the training {baseline[1]} of the "
                 "best constant prediction)" + (": equally accurate models differ only by negligible changes in the "
                                                "loss, so R is not judged." if negligible else "."))
    status = PASS if negligible else grade(value, None, *bounds)
    implication = {FAIL: f"How much the model relies on {features[widest]} is partly an arbitrary choice among "
                         "equally accurate models: its importance should not be read as a property of the data.",
                   WARN: f"Equally accurate models could rely on {features[widest]} noticeably more or less."
                   }.get(status, "")
    return Criterion(name, status, value, None, text_rule, text, kind, implication, () if negligible else bounds)
