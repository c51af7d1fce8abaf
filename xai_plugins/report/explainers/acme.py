"""AcME: accelerated model explanations from a quantile grid of the background data."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...acme import AcME
from .. import figures
from . import Explainer, NotApplicable, by_magnitude, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: AcME: the quantile grid is evaluated on the explained rows and on this many background rows
ACME_BACKGROUND = 100


@register
class AcMEExplainer(Explainer):
    """AcME on the explained output: global importances over the background's quantile grid, local
    importances and what-if curves of the explained rows."""

    key, label, caption = "acme", "AcME", "mean standardised effect"

    def cost(self, ctx, options, costs):
        """The model on the quantile grid of every explained and background row, and the what-if figures."""
        return [(costs.rows + ACME_BACKGROUND) * ctx.n_features * options.acme_quantiles * costs.per_sample,
                options.n_local * costs.pyplot]

    def prepare(self, ctx, options):
        """The AcME explainer of the explained output on the complete background rows."""
        return AcME(None, acme_background(ctx), n_quantiles=options.acme_quantiles,
                    score_function=ctx.portable_scorer(), categorical_features=ctx.categorical_names or None)

    def block(self, state, X):
        """AcME local importances of the rows and their ranking by magnitude."""
        values = state.explain_local(X).values
        return {"importance": np.abs(values), **by_magnitude(values)}

    def finish(self, ctx, result, state, means, local_X, local_labels, options):
        """AcME's own global importance, its settings and the local rows' what-if figures."""
        result.importance = pd.Series(state.explain_global().values, index=ctx.feature_names)
        result.params.update({"quantile grid points": options.acme_quantiles,
                              "background rows": _background_rows(ctx, state.background_)})
        if len(local_X):
            local = state.explain_local(pd.DataFrame(local_X, columns=ctx.feature_names))
            result.figures = [acme_figure(ctx, label, local, i) for i, label in enumerate(local_labels)]


def acme_background(ctx) -> pd.DataFrame:
    """AcME's background: the complete rows of the training data (else of the test data). AcME's
    quantile grid needs values in every column, while tree models (LightGBM, XGBoost, scikit-learn
    ≥ 1.3) accept missing values, so rows with one are left out."""
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    complete = source.dropna()
    if complete.empty:
        raise NotApplicable("every background row has a missing value; AcME's quantile grid needs complete rows")
    return complete


def _background_rows(ctx, background) -> str:
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    left_out = len(source) - len(background)
    return f"{len(background)}" + (f" ({left_out} with missing values left out)" if left_out else "")


def acme_figure(ctx, label: str, local, i: int):
    """The AcME what-if figure of row ``i`` of the in-memory AcMELocal ``local`` (test row ``label``)."""
    return figures.pyplot_drawn(
        f"AcME what-if of test row {label}: {ctx.output_label} when one feature at a time is set "
        f"to each quantile of its background distribution (large marker: the row's own value; dashed: its "
        f"prediction).",
        lambda ax: figures.legend_outside(local.plot(row=i, ax=ax), title=f"AcME what-if, test row {label}",
                                          below=True),
        width=6.0, height=0.16 * min(ctx.n_features, 30) + 1.4)
