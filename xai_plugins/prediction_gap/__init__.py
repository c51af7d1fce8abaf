"""Squared prediction gap PG², its ranking metric PGI², and the greedy PG² ranking.

Definitions (Gajewski et al., "exact faithfulness for tree models", eq. 2-3):

    PG²(x, S)   = E[(f(x') - f(x))²],  x'_j = x_j + e_j for j in S (independent noise), x'_j = x_j otherwise
    PGI²(x, π)  = (1/d) Σ_{k=1..d} PG²(x, {π(1), ..., π(k)})
    greedy π    : π(k) = argmax_j PG²(x, {π(1), ..., π(k-1), j})   (ties -> lowest feature index)

The exact value is computed in closed form by the C core on the ensemble's output in the
Forest's ``output_space``: the regression output, the margin (log-odds / softmax logits) of
boosted classifiers, or the class probabilities of random forests — outputs that are sums of
leaf values. PG² of a logistic/softmax *probability* has no leaf-pair form, so for boosted
classifiers the exact value is on the margin; use ``method="monte_carlo"`` with your own
predictor for probabilities.
"""

from ._greedy import greedy_pg2_ranking
from ._noise import binary_perturbation
from ._pg2 import pg2
from ._pgi2 import mean_pgi2, pgi2
from ._results import GreedyRanking, PG2Estimate

__all__ = ["GreedyRanking", "PG2Estimate", "binary_perturbation", "greedy_pg2_ranking", "mean_pgi2", "pg2", "pgi2"]
