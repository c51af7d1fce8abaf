"""DT-Sampler: how often near-uniformly sampled small trees that mimic the model test each feature."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .. import figures
from . import Explainer, MethodResult, NotApplicable, name_list, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: DT-Sampler: ApproxMC's model count with the first tree's UniGen call, then each further sampled tree, on the
#: default 60 rows × 8 features × 3 branch nodes; the breast-cancer demo's CPU time (1.0 s and 0.11 s)
DT_COUNT_SECONDS, DT_TREE_SECONDS = 1.0, 0.11


@register
class DTSamplerExplainer(Explainer):
    """DT-Sampler's emergence probabilities (classification only), a global importance."""

    key, label = "dt_sampler", "DT-Sampler"
    explains = "the model's predicted classes"
    caption = "emergence probability in small trees fitted to the predicted classes"
    figure_kind = "global"

    def cost(self, ctx, options, costs):
        """The model count and the sampled trees (classification only), scaled by the rows and features, and its
        figure."""
        if ctx.task != "classification":
            return []
        size = options.dt_sampler_rows / 60.0 * min(options.dt_sampler_features, ctx.n_features) / 8.0
        return [(DT_COUNT_SECONDS + options.dt_sampler_samples * DT_TREE_SECONDS) * size + costs.figure]

    def ranks(self, ctx, options):
        """On a classifier."""
        return ctx.task == "classification"

    def run(self, ctx, rows, options):
        """Small trees on ``dt_sampler_rows`` rows of the training data (else the test data)."""
        return sample_trees(ctx, n_rows=options.dt_sampler_rows, n_features=options.dt_sampler_features,
                            n_branch_nodes=3, n_samples=options.dt_sampler_samples, time_budget=options.time_budget)

    def limitation(self, ctx, result, options, name):
        """The rows and features DT-Sampler saw."""
        return (f"DT-Sampler explains the model's predicted classes on {result.params['rows']} rows, restricted to the "
                f"{result.params['features']} features the model splits on most among those that vary on them "
                f"({name_list(result.extras['features'])}); other features get importance 0.")


#: the accuracies DT-Sampler's trees must reach, tried in turn until one admits a tree. It stops at 75 %: a tree
#: that reproduces fewer than 3 in 4 of the model's predictions does not summarise it, and so loose a constraint
#: admits so many trees that sampling them uniformly took minutes (the issue-22 wine forest: 277 s at 70 %,
#: while 90 %, 85 %, 80 % and 75 % are each refuted in under 3 s)
ACCURACY_LADDER = (0.9, 0.85, 0.8, 0.75)


def sample_trees(ctx, *, n_rows: int, n_features: int, n_branch_nodes: int, n_samples: int,
                   time_budget: float) -> MethodResult:
    """DT-Sampler on the model's own predicted classes of ``n_rows`` rows, restricted to the
    ``n_features`` features the model splits on most among those that vary on these rows
    (classification only)."""
    from ...dt_sampler import DTSampler
    from ...dt_sampler.samplers import UnsatisfiableError

    if ctx.task != "classification":
        raise NotApplicable("DT-Sampler samples small classification trees; this is a regression model")
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    rows = np.sort(ctx.rng("dt_sampler rows").permutation(len(source))[:n_rows])
    X = source.iloc[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        labels = np.asarray(ctx.model.predict(ctx.model_input(X.to_numpy()))) == ctx.positive_class
    if labels.all() or not labels.any():
        raise NotApplicable(f"the model predicts one class on all {len(rows)} sampled rows")
    split_counts = np.bincount(ctx.forest.feature[ctx.forest.left_child >= 0], minlength=ctx.n_features)
    # a feature constant on the sampled rows admits no test (its emergence is 0): choose among the others
    varies = np.ptp(X.to_numpy(dtype=float), axis=0) > 0
    if not varies.any():
        raise NotApplicable(f"every feature is constant on the {len(rows)} sampled rows")
    candidates = np.flatnonzero(varies)
    keep = np.sort(candidates[np.argsort(-split_counts[candidates], kind="stable")[:n_features]])
    columns = [ctx.feature_names[j] for j in keep]
    categorical = [ctx.feature_names[j] for j in keep if ctx.categorical[j]] or None   # tested one level at a time
    last_error = None
    for min_accuracy in ACCURACY_LADDER:
        sampler = DTSampler(n_branch_nodes=n_branch_nodes, min_accuracy=min_accuracy, n_samples=n_samples,
                            random_state=ctx.seed_int("dt_sampler"), time_budget=time_budget, progress=False,
                            categorical_features=categorical)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sampler.fit(X[columns], labels.astype(int))
            break
        except UnsatisfiableError as exc:
            last_error = exc
    else:
        raise NotApplicable(f"no tree with {n_branch_nodes} branch nodes reproduces at least "
                            f"{ACCURACY_LADDER[-1]:.0%} of the model's predicted classes on the {len(rows)} sampled "
                            f"rows, so small trees do not summarise this model ({last_error})")
    probability = sampler.emergence_probability_["probability"]
    importance = pd.Series(0.0, index=ctx.feature_names)
    importance[columns] = probability.to_numpy()
    result = MethodResult("dt_sampler", importance=importance,
                          params={"rows": len(rows), "features": len(columns), "branch nodes": n_branch_nodes,
                                  "trees sampled": len(sampler.trees_), "accuracy of every tree at least":
                                  sampler.min_accuracy})
    if not varies.all():
        result.params["constant on the sampled rows (emergence 0)"] = ", ".join(
            ctx.feature_names[j] for j in np.flatnonzero(~varies))
    result.extras["features"] = columns

    def draw(ax):
        sampler.plot(ax=ax)
        figures.legend_outside(ax, {"min_accuracy = 0": "level with no accuracy constraint"})

    result.figures.append(figures.drawn(
        f"DT-Sampler emergence probability: share of branch nodes testing each feature among "
        f"{len(sampler.trees_)} near-uniformly sampled trees with {n_branch_nodes} branch nodes that reproduce "
        f"the model's predicted class on at least {sampler.min_accuracy:.0%} of {len(rows)} rows (bars: 95% "
        f"intervals over the sampled trees; ticks: the level with no accuracy constraint).", draw,
        width=6.5, height=0.3 * len(columns) + 1.3))
    return result
