"""DT-Sampler's feature importances: emergence probability and tree fraction, with Wilson intervals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

__all__: list[str] = []      # internal module: the public names are in the API reference


def wilson_interval(p, n: int, confidence: float = 0.95):
    r"""Wilson score interval for a proportion ``p`` estimated from ``n`` independent trees.

    .. math::

        \frac{p + \frac{z^2}{2n} \mp z \sqrt{\frac{p(1-p)}{n} + \frac{z^2}{4n^2}}}{1 + \frac{z^2}{n}}

    with ``z`` the normal quantile. It is also valid (conservative) for a mean of per-tree
    shares in [0, 1], whose variance is at most ``p(1-p)``. The interval contains ``p`` by
    construction (the rounding error at p = 0 and p = 1 is clipped).

    Parameters
    ----------
    p : float or array-like of float
        The proportion(s), in [0, 1].
    n : int
        The number of trees.
    confidence : float, default 0.95
        The level of the interval.

    Returns
    -------
    low : ndarray
        The interval's lower end, the shape of ``p``, within [0, 1].
    high : ndarray
        Its upper end.

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Gives its emergence probabilities these intervals.

    Examples
    --------
    >>> import numpy as np
    >>> from xai_plugins.dt_sampler import wilson_interval
    >>> low, high = wilson_interval(0.5, n=100)
    >>> round(float(low), 3), round(float(high), 3)
    (0.404, 0.596)
    >>> low, high = wilson_interval([0.0, 1.0], n=10)
    >>> np.round(low, 3).tolist(), np.round(high, 3).tolist()
    ([0.0, 0.722], [0.278, 1.0])
    """
    p = np.asarray(p, dtype=float)
    z = stats.norm.ppf(0.5 + confidence / 2)
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    # the interval contains p by construction; clip the rounding error at p = 0 and p = 1
    return np.clip(np.minimum(centre - half, p), 0, 1), np.clip(np.maximum(centre + half, p), 0, 1)


@dataclass(frozen=True)
class Emergence:
    """Importance tables of a set of sampled trees (DataFrames with columns ``probability, ci_low,
    ci_high``): per original feature ``probability`` (share of branch nodes testing it,
    ``sum_t #{nodes of t testing f} / (n_trees N)``) and ``tree_fraction`` (share of trees testing
    it); the same per binary test (``test_probability``, ``test_tree_fraction``, with column
    ``original_feature``); ``uniform`` the ``min_accuracy = 0`` level of each feature."""

    probability: pd.DataFrame
    tree_fraction: pd.DataFrame
    test_probability: pd.DataFrame
    test_tree_fraction: pd.DataFrame
    uniform: pd.Series


def emergence(trees, tests, feature_names, n_branch_nodes: int, confidence: float, exact: bool) -> Emergence:
    """The :class:`Emergence` tables of ``trees`` (:class:`~.tree.SampledTree`) over the binary
    ``tests``; intervals are Wilson intervals over the trees at level ``confidence``, or equal to
    the probability when the trees are the ``exact`` enumeration of the space."""
    n_trees, n_tests, n_features = len(trees), len(tests), len(feature_names)
    counts = np.array([np.bincount(t.test, minlength=n_tests) for t in trees])   # (trees, tests)
    owner = np.array([t.feature for t in tests])
    per_feature = np.stack([counts[:, owner == f].sum(axis=1) for f in range(n_features)], axis=1)
    test_names = [t.name for t in tests]

    def table(hits, index):
        p = hits.mean(axis=0)
        low, high = (p, p) if exact else wilson_interval(p, n_trees, confidence)
        return pd.DataFrame({"probability": p, "ci_low": low, "ci_high": high},
                            index=pd.Index(index, name="feature"))

    test_probability = table(counts / n_branch_nodes, test_names)
    test_tree_fraction = table(counts > 0, test_names)
    for frame in (test_probability, test_tree_fraction):
        frame.insert(0, "original_feature", np.asarray(feature_names, dtype=object)[owner])
    probability = table(per_feature / n_branch_nodes, list(feature_names))
    return Emergence(probability, table(per_feature > 0, list(feature_names)), test_probability, test_tree_fraction,
                     pd.Series(np.bincount(owner, minlength=n_features) / n_tests, index=probability.index,
                               name="uniform"))
