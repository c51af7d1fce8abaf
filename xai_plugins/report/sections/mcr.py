"""Rashomon set and model class reliance (RF-MCR) section.

``data["table"]`` holds, per feature, the audited model's reliance and the range [MCR−, MCR+] over
the Rashomon set (columns ``mcr_minus``, ``model_reliance``, ``mcr_plus``, ``width``).
"""

from __future__ import annotations

from .. import figures
from ..section import SKIPPED, Table
from . import new, register

#: readable column names of the MCR table (the reliance is a loss ratio or difference, see ``params``)
COLUMNS = {"mcr_minus": "lowest reliance (MCR−)", "model_reliance": "this model's reliance",
           "mcr_plus": "highest reliance (MCR+)", "width": "range width"}


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
    section.data = {"table": table, "widest": widest.index.tolist(), "params": result.params}
    res = result.extras["result"]

    def draw(ax):
        res.plot(ax=ax)
        ax.set_xlabel(result.params["reliance"])
        figures.legend_outside(ax, {"MCR range": "range over the Rashomon set", "reference MR": "this model"},
                               title=f"Model class reliance, Rashomon tolerance ε = {res.epsilon:g}")

    section.figures.append(figures.drawn(
        "Model class reliance: the range of each feature's reliance over the Rashomon set of near-optimal forests "
        f"(bar) and the audited model's own reliance (diamond); reliance: {result.params['reliance']}.",
        draw, width=6.0, height=0.3 * len(table) + 1.2))
    section.tables.append(Table(f"Model reliance and its range over the Rashomon set, by decreasing reliance "
                                f"({result.params['reliance']}).", table.rename(columns=COLUMNS)))
    return section



def reliance_unit(params: dict) -> str:
    """What the reliance numbers of an MCR section measure, in words (from its ``data["params"]``)."""
    return str(params.get("reliance", "model reliance"))
