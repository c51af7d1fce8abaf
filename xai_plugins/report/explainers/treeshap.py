"""TreeSHAP of the explained output, computed by the package's C core on the model's Forest
(:func:`xai_plugins.tree_shap`): every model the package reads, in its input columns (a categorical input, or a
column a Pipeline one-hot encodes, is one player). Path-dependent where the trees store node covers, else
interventional against a seeded sample of the background rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...treeshap import tree_shap
from .. import figures
from ..context import detached
from . import Explainer, by_magnitude, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: background rows of the interventional TreeSHAP a model without node covers gets
BACKGROUND_ROWS = 100


def _background(ctx):
    """None when the trees store node covers (path-dependent TreeSHAP), else a seeded sample of at most
    :data:`BACKGROUND_ROWS` background rows (interventional TreeSHAP)."""
    forest = ctx.forest
    if forest.weight is not None and np.all(forest.weight[forest.tree_offset[:-1]] > 0):
        return None
    rows = ctx.background
    keep = np.sort(ctx.rng("shap background").permutation(len(rows))[:BACKGROUND_ROWS])
    return rows[keep]


#: TreeSHAP seconds per (row, tree, leaf, depth²)
SHAP_SECONDS = 1.0e-9


@register
class TreeSHAP(Explainer):
    """TreeSHAP of the explained output; global importance: mean |SHAP value| (per class too for a
    multi-class model); local figures: waterfall plots."""

    key, label, caption = "shap", "SHAP", "mean |SHAP value|"
    per_class = True

    def cost(self, ctx, options, costs):
        """TreeSHAP of at least ``max_shap_rows`` rows (per row, tree, leaf and depth²), and its waterfalls."""
        shap_rows = max(options.max_shap_rows, costs.rows)
        return [shap_rows * costs.leaves * ctx.forest.leaf_width * costs.mean_depth ** 2 * SHAP_SECONDS,
                options.n_local * costs.pyplot]

    def prepare(self, ctx, options):
        """The Forest (without its predictor: sent to the engine's workers), the background of interventional
        TreeSHAP (None: path-dependent), the explained output and the class count."""
        return detached(ctx.forest), _background(ctx), ctx.output, len(ctx.classes)

    def block(self, state, X):
        """|TreeSHAP values| of the explained output, their ranking, and per class (k > 2) |values|."""
        forest, background, output, n_classes = state
        values = np.asarray(tree_shap(forest, X, background=background).values, dtype=float)
        out = {}
        if values.ndim == 3:
            if values.shape[2] > 2 and values.shape[2] == n_classes:
                out["per class"] = np.abs(values).reshape(len(X), -1)
            values = values[..., output]
        return {"importance": np.abs(values), **by_magnitude(values), **out}

    def scope(self, ctx, rows, options):
        """Up to ``max_shap_rows`` seeded complete test rows (those explained among them)."""
        return ctx.sample_rows(max(options.max_shap_rows, len(rows)))

    def finish(self, ctx, result, state, means, local_X, local_labels, options):
        """The algorithm's description, the per-class table and the local rows' waterfall plots."""
        background = state[1]
        result.params["algorithm"] = (
            "TreeSHAP (the package's C core, in the model's input columns); absent features follow the training "
            "data's paths through the trees (node covers, no background sample)" if background is None else
            f"interventional TreeSHAP (the package's C core, in the model's input columns): the trees store no "
            f"node covers, so absent features take the values of {len(background)} seeded background rows")
        if "per class" in means:
            result.extras["per class"] = pd.DataFrame(means["per class"].reshape(ctx.n_features, -1),
                                                      index=ctx.feature_names, columns=[str(c) for c in ctx.classes])
        if len(local_X):
            import shap

            found = tree_shap(ctx.forest, np.asarray(local_X, dtype=float), background=state[1])
            values, base = np.asarray(found.values), np.atleast_1d(found.base_values)
            if values.ndim == 3:
                values, base = values[..., ctx.output], base[ctx.output:ctx.output + 1]
            shown = ctx.model_input(local_X)
            data = shown.to_numpy() if hasattr(shown, "to_numpy") else np.asarray(shown)
            explanation = shap.Explanation(values, base_values=np.full(len(values), float(base[0])), data=data,
                                           feature_names=list(ctx.feature_names))
            result.figures = [shap_figure(ctx, label, explanation[i]) for i, label in enumerate(local_labels)]

    def limitation(self, ctx, result, options, name):
        """TreeSHAP's credit sharing and the rows of its global importance."""
        return ("TreeSHAP follows the training data's path through each tree (its cover counts), so correlated "
                f"features share credit as the trees happened to split on them; its global importance is the mean "
                f"over {result.params.get('rows')} test rows ({name('max_shap_rows')} sets the number in memory).")


def shap_figure(ctx, label: str, row_explanation):
    """The SHAP waterfall figure of one test row (``row_explanation``: its shap.Explanation)."""
    return figures.pyplot_drawn(
        f"SHAP waterfall of test row {label}: contributions to {ctx.output_label}, from the mean "
        f"over the training data to this row's value.",
        lambda ax: _waterfall(row_explanation), scale=0.6)


#: the waterfall's height in inches (shap draws 10 bars 6.5 inches high: at the report's scale that is 40 % of
#: a page, so two waterfalls and the figure before them left a page half empty; this keeps its type size)
WATERFALL_HEIGHT = 4.2


def _waterfall(explanation) -> None:
    """shap's waterfall plot on pyplot's current figure (shap sizes the figure itself, with large type),
    made :data:`WATERFALL_HEIGHT` inches high, its x range widened by 8 % on each side so the values
    printed at the ends of the bars are not cut (shap's twin axes for f(x) and E[f(X)] share the main
    axis' limits, so all get the same)."""
    import matplotlib.pyplot as plt
    import shap

    shap.plots.waterfall(explanation, max_display=10, show=False)
    plt.gcf().set_size_inches(plt.gcf().get_size_inches()[0], WATERFALL_HEIGHT)
    axes = plt.gcf().axes
    lo, hi = axes[0].get_xlim()
    pad = 0.08 * (hi - lo)
    for ax in axes:
        if ax.get_xlim() == (lo, hi):
            ax.set_xlim(lo - pad, hi + pad)
