"""Local MDI: per row, the impurity decrease along its decision paths, averaged over trees."""

from __future__ import annotations

from ...forest import UnsupportedModelError
from ...mdi import local_mdi, require_impurities
from ..context import detached
from . import Explainer, NotApplicable, by_magnitude, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: local MDI seconds per (row, tree, depth)
MDI_SECONDS = 2.0e-8


@register
class LocalMDI(Explainer):
    """Local MDI of every test row in memory (its mean is the global importance), of the explained rows'
    paths for the per-row sections; not applicable to models without stored node impurities."""

    key, label = "local_mdi", "local MDI"
    explains = ("the impurity decrease of each feature's splits along the row's path (Gini or entropy for a "
                "classifier, variance for a regressor), averaged over trees: how the trees were fitted, not {output}")
    every_row = True            # local MDI follows a missing value's default direction
    caption = ("mean impurity decrease of the feature's splits along the rows' paths (a property of the fitted "
               "trees, not of the explained output)")

    def cost(self, ctx, options, costs):
        """Local MDI of every explained row (per row, tree and depth)."""
        return [costs.rows * ctx.forest.n_trees * costs.mean_depth * MDI_SECONDS]

    def ranks(self, ctx, options):
        """Where the model stores node impurities."""
        return ctx.forest.impurity is not None

    def prepare(self, ctx, options):
        """The Forest with node impurities (:class:`NotApplicable` when the model stores none)."""
        try:
            return detached(require_impurities(ctx.model))
        except UnsupportedModelError as exc:
            raise NotApplicable(str(exc)) from exc

    def block(self, state, X):
        """Local MDI of the rows and their ranking by magnitude."""
        values = local_mdi(state, X)
        return {"importance": values, **by_magnitude(values)}

    def limitation(self, ctx, result, options, name):
        """What local MDI describes."""
        return ("Local MDI is the impurity decrease along the row's own decision path, averaged over trees, using the "
                "node impurities stored at training time; it describes how the model was fitted, not how the "
                "prediction responds to the feature.")
