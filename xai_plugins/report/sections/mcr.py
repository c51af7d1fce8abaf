"""Rashomon set and model class reliance (RF-MCR) section.

``data["table"]`` holds, per feature, the audited model's reliance and the range [MCR−, MCR+] over
the Rashomon set (columns ``mcr_minus``, ``model_reliance``, ``mcr_plus``, ``width``); ``data["constant loss"]``
the training loss of the best constant prediction, in the reliances' unit, and what it is in words (the scale
the verdict's Rashomon floor is a share of).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import figures
from ..section import SKIPPED, Table
from . import new, register

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


@register("mcr", "Rashomon set and model class reliance")
def build(ctx, results, options):
    """Per-feature MCR ranges of the MCR method's result."""
    section = new("mcr")
    result = results["explanations"].raw.get("methods", {}).get("mcr")
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
