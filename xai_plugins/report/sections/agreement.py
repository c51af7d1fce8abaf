"""Agreement section: how similarly the explainers rank the features (Kendall τ-b, top-k overlap).

``data`` carries the τ and overlap matrices and the number of rows and features they were computed
over (``rows``: the per-row agreement's rows; ``features``: d, the length of every ranking).
"""

from __future__ import annotations

from .. import agreement as agree
from .. import figures
from ..section import Table
from . import new, register, skipped_by_user


@register("agreement", "Agreement between methods")
def build(ctx, results, options):
    """Global and per-row agreement matrices between every pair of methods."""
    if (skipped := skipped_by_user("agreement", options)) is not None:
        return skipped
    section = new("agreement")
    methods = results["explanations"].raw.get("methods", {})
    n_rows = results["explanations"].raw.get("agreement_rows", 0)
    k = min(options.top_k, ctx.n_features)
    global_imp = {m.label: m.importance for m in methods.values() if m.status == "ok" and m.importance is not None}
    local = {m.label: m.local_scores for m in methods.values() if m.status == "ok" and m.local_scores is not None}
    if len(global_imp) < 2:
        section.status, section.reason = "not applicable", "fewer than two methods produced importances"
        return section
    tau, overlap = agree.global_agreement(global_imp, k)
    section.data = {"k": k, "features": ctx.n_features, "methods": list(global_imp), "global tau": tau,
                    "global overlap": overlap, "mean global tau": agree.mean_off_diagonal(tau),
                    "mean global overlap": agree.mean_off_diagonal(overlap), "rows": 0}
    section.figures.append(figures.heatmaps(
        f"Agreement of the global importances over {ctx.n_features} features: Kendall τ-b (left) and top-{k} "
        "overlap (right).", {"Kendall τ (global)": tau, f"top-{k} overlap (global)": overlap}))
    section.tables.append(Table(f"Kendall τ-b between the global importances of every pair of methods, over "
                                f"{ctx.n_features} features (1: same order, 0: unrelated, −1: reversed).", tau))
    section.tables.append(Table(f"Top-{k} overlap between the global importances: share of the {k} most "
                                "important features two methods have in common.", overlap))
    if len(local) >= 2:
        ltau, loverlap = agree.local_agreement(local, k)
        section.data.update({"local tau": ltau, "local overlap": loverlap, "rows": n_rows,
                             "mean local tau": agree.mean_off_diagonal(ltau),
                             "mean local overlap": agree.mean_off_diagonal(loverlap)})
        section.raw["per-row tau"] = agree.per_row_tau(local)
        section.figures.append(figures.heatmaps(
            f"Agreement of the per-row explanations, averaged over {n_rows} test rows and {ctx.n_features} "
            f"features: Kendall τ-b (left) and top-{k} overlap (right).",
            {"Kendall τ (per row)": ltau, f"top-{k} overlap (per row)": loverlap}))
    return section
