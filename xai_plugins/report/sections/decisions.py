"""Per-decision explanations (optional section ``decisions``): which SHAP to show, scored by exact PGI², and the
certified reason codes of the explained rows.

"Which SHAP?" computes every SHAP attribution available for the model on the explained rows
(:func:`xai_plugins.which_shap`: the package's path-dependent and interventional TreeSHAP, shap's, the library's
native contributions) and scores each by the exact PGI² of its rankings; the reason codes
(:func:`xai_plugins.reason_codes`) give each explained row its top reasons by the most faithful attribution
(never a protected attribute), with the share of rows whose reasons are certified at each threshold.
"""

from __future__ import annotations

import numpy as np

from ...reasons import reason_codes
from ...shap_variants import which_shap
from ..section import Table, new, register, skipped, skipped_by_user

__all__: list[str] = []      # internal module: the public names are in the API reference

#: explained rows the section scores at most (each attribution's PGI² is d exact PG² per row)
MAX_ROWS = 50
#: reasons per row
REASONS = 4


@register("decisions", "Per-decision explanations", reads=("explanations",), seconds=1.0, position=105, stage=75,
          optional=True)
def build(ctx, results, options):
    """Which SHAP (every attribution scored by exact PGI²) and the reason codes' certification on the explained
    rows (at most :data:`MAX_ROWS`, in memory)."""
    if (skipped_now := skipped_by_user("decisions", options)) is not None:
        return skipped_now
    section = new("decisions")
    explained = results["explanations"].result
    positions = np.asarray(explained.rows)[:MAX_ROWS]
    if not len(positions):
        return skipped(section, "no explained rows")
    rows = ctx.X_test.to_numpy(dtype=float)[positions]
    output = None if ctx.forest.n_outputs == 1 else ctx.output
    background = ctx.background[np.sort(ctx.rng("decisions background").permutation(len(ctx.background))[:100])]
    found = which_shap(ctx.model, ctx.model_input(rows), background=background, sigma=options.sigma_ref,
                       output=output)
    table = found.faithfulness.rename(columns={"PGI²": "mean PGI²", "low": "95% CI low", "high": "95% CI high"})
    section.tables.append(Table(
        f"Which SHAP? Every SHAP attribution available for this model on {len(rows)} explained rows, scored by the "
        f"exact PGI² of its rankings at σ = {options.sigma_ref:g} (higher: the model moves more when the features "
        "it ranks first are perturbed), with a 95 % interval over the rows.", table))
    agreement = found.agreement[["a", "b", "Kendall τ", "top-3 shared", "max |Δ|", "why"]]
    if len(agreement):
        section.tables.append(Table("How the attributions agree (mean Kendall τ of their rankings per row, share of "
                                    "the top 3 they share, largest difference of their values) and why they differ.",
                                    agreement, index=False))
    best = str(table.index[0])
    protected = [c for c in (options.protected or ()) if c in ctx.feature_names]
    codes = reason_codes(ctx.forest, rows, min(REASONS, ctx.n_features), explanation=found.values[best],
                         sigma=options.sigma_ref, output=output, protected=protected)
    summary = codes.summary()
    section.tables.append(Table(
        f"Reason codes: the top {min(REASONS, ctx.n_features)} reasons of each explained row by {best} (never a "
        f"protected attribute{': ' + ', '.join(protected) if protected else ''}), certified when their PG² reaches "
        "the threshold's share of the PG² of the best set of as many features found by greedy PG².",
        summary.assign(share=summary["share"].round(3)), index=False))
    section.data = {"which shap": {name: {k: float(v) for k, v in row.items()} for name, row in table.iterrows()},
                    "skipped": dict(found.skipped), "reasons by": best,
                    "certified share": {f"{t:g}": float(s) for t, s in zip(summary["threshold"], summary["share"])},
                    "rows": int(len(rows))}
    return section
