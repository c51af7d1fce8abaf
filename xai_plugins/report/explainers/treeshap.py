"""TreeSHAP (shap's ``TreeExplainer``): per-row |SHAP value| of the explained output."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..._validation import default_feature_names
from ...forest import explained_model, import_model, library_of
from .. import figures
from ..context import Scorer
from . import Explainer, Unsupported, by_magnitude, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the last (model, TreeExplainer) of this process: one explainer per audit, not per block
_TREE_EXPLAINER: list = []


def tree_explainer(model):
    """shap's TreeExplainer of ``model``, built once per model in this process."""
    import shap

    if not _TREE_EXPLAINER or _TREE_EXPLAINER[0] is not model:
        _TREE_EXPLAINER[:] = [model, shap.TreeExplainer(model)]
    return _TREE_EXPLAINER[1]


def tree_shap(model, rows):
    """shap's TreeSHAP explanation of ``model`` on its input ``rows``. A scikit-learn Pipeline's final
    model is explained on the pipeline's transform of the rows and the values of the columns made from
    one input column are added into it (TreeSHAP depends only on which side of each split a value
    falls, so these are the values of the pipeline's compiled Forest; additivity is kept)."""
    import shap

    inner, to_inner, sources = explained_model(model)
    explanation = tree_explainer(inner)(to_inner(rows))
    if sources is None:
        return explanation
    values = np.asarray(explanation.values, dtype=float)
    n_inputs = int(model.n_features_in_)
    summed = np.zeros((values.shape[0], n_inputs) + values.shape[2:])
    np.add.at(summed, (slice(None), sources), values)
    names = list(getattr(rows, "columns", [])) or default_feature_names(n_inputs)
    return shap.Explanation(summed, base_values=explanation.base_values, data=np.asarray(rows), feature_names=names)


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
        """The model, how to feed it rows, the explained output and the class count; :class:`Unsupported` for a
        scikit-learn model with categorical splits (HistGradientBoosting's ``categorical_features``): shap reads
        scikit-learn trees with its own parser, which takes a category set for a numeric threshold (it fails on
        text categories and is silently wrong on category codes). XGBoost, LightGBM and CatBoost categorical
        splits it reads."""
        inner = explained_model(ctx.model)[0]
        if library_of(inner) == "sklearn" and import_model(inner).categorical.any():
            raise Unsupported("shap's TreeExplainer cannot read this model's categorical splits (it reads a "
                              "scikit-learn model's category sets as numeric thresholds)")
        scorer = ctx.scorer()
        return ctx.model, Scorer(None, ctx.output, scorer.columns, scorer.labels), len(ctx.classes)

    def block(self, state, X):
        """|SHAP values| of the explained output, their ranking, and per class (k > 2) |SHAP values|."""
        model, scorer, n_classes = state
        values = np.asarray(tree_shap(model, scorer.native_input(X)).values, dtype=float)
        out = {}
        if values.ndim == 3:
            if values.shape[2] > 2 and values.shape[2] == n_classes:
                out["per class"] = np.abs(values).reshape(len(X), -1)
            values = values[..., scorer.output]
        return {"importance": np.abs(values), **by_magnitude(values), **out}

    def scope(self, ctx, rows, options):
        """Up to ``max_shap_rows`` seeded complete test rows (those explained among them)."""
        return ctx.sample_rows(max(options.max_shap_rows, len(rows)))

    def finish(self, ctx, result, state, means, local_X, local_labels, options):
        """The algorithm's description, the per-class table and the local rows' waterfall plots."""
        result.params["algorithm"] = ("TreeSHAP; absent features follow the training data's paths through the "
                                      "trees (no background sample)")
        if "per class" in means:
            result.extras["per class"] = pd.DataFrame(means["per class"].reshape(ctx.n_features, -1),
                                                      index=ctx.feature_names, columns=[str(c) for c in ctx.classes])
        if len(local_X):
            explanation = tree_shap(ctx.model, ctx.model_input(local_X))
            if explanation.values.ndim == 3:
                explanation = explanation[..., ctx.output]
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
