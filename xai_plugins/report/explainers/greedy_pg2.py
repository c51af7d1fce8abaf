"""Greedy PG² ranking: per row, the features in the order that raises PG² most at each step."""

from __future__ import annotations

import numpy as np

from ...attributions import greedy_gains
from ...prediction_gap import greedy_pg2_ranking
from ..context import detached
from . import Explainer, register

__all__: list[str] = []      # internal module: the public names are in the API reference


@register
class GreedyPG2(Explainer):
    """Greedy PG² at the middle σ: per-row gains (the increase of PG² when the feature joins the
    perturbed set) as importances, minus the greedy rank as local scores, the greedy order as the
    ranking — the faithfulness section's reference."""

    key, label = "pg2", "PG² greedy"
    caption = ("mean increase of PG² when the feature joins the perturbed set (negative when adding it lowers PG²: "
               "PG² is not monotone in the perturbed set)")
    reference = signed = True

    def cost(self, ctx, options, costs):
        """The greedy ranking of every explained row, exact."""
        return [costs.rows * costs.greedy_per_row]

    def prepare(self, ctx, options):
        """The Forest, the explained output, the noise in absolute units (its categorical laws included, no
        background shipped) and
        whether to show a progress bar (``ctx.progress``: an in-memory audit's own)."""
        noise = ctx.perturbation(options.sigma_ref, options.binary_sigma)
        output = ctx.output if ctx.forest.n_outputs > 1 else None
        return detached(ctx.forest), output, noise, ctx.progress

    def block(self, state, X):
        """Greedy PG² gains, minus the rank of each feature, and the greedy order."""
        forest, output, noise, verbose = state
        greedy = greedy_pg2_ranking(forest, X, perturbation=noise, output=output, verbose=verbose)
        ranking = greedy.ranking
        position = np.empty_like(ranking)
        np.put_along_axis(position, ranking, np.arange(ranking.shape[1])[None, :], axis=1)
        return {"importance": greedy_gains(ranking, greedy.pg2_path), "scores": -position.astype(float),
                "ranking": ranking}

    def finish(self, ctx, result, state, means, local_X, local_labels, options):
        """The σ of the ranking."""
        result.params["σ (training standard deviations)"] = options.sigma_ref

    def limitation(self, ctx, result, options, name):
        """The greedy ranking is a heuristic computed at one σ."""
        return (f"The greedy PG² ranking is computed at σ = {options.sigma_ref:g} and reused at the other σ; it adds "
                "the feature that raises PG² most at each step, a heuristic, not a bound: an explainer's ranking can "
                "score higher on a row, so faithfulness is judged against the best ranking found among all evaluated "
                "rankings, and greedy is a reference, not a contestant.")
