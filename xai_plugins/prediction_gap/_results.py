"""The result types of PG² and of the greedy PG² ranking."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__: list[str] = []


@dataclass
class PG2Estimate:
    """PG² per row, as returned by :func:`xai_plugins.pg2`.

    Holds the estimate of PG²(x, S) = E[(f(x′) − f(x))²] for every explained row, its standard
    error and how it was computed. ``np.asarray(estimate)`` is ``value``.

    Parameters
    ----------
    value : ndarray of shape (n,) or (n, k)
        PG² of each row; (n, k) for a model with k outputs.
    stderr : ndarray, same shape as ``value``
        Standard error of each value (zeros when exact).
    method : str
        The method actually used: "exact", "monte_carlo" or "qmc" (``method="auto"`` records the
        one it ran).
    n_samples : int
        Perturbed samples per row (0 when exact).
    seconds : float
        Wall-clock seconds of the computation.
    pair_terms : int, default 0
        For the exact method, the number of leaf-pair terms evaluated.
    reason : str, default ''
        With ``method="auto"``, why it chose ``method`` (the cost model's two estimates); ""
        otherwise.
    informative : ndarray of bool or None, default None
        Same shape as ``value``: False where a sampled value's standard error says nothing about
        its error (fewer than ``MIN_INFORMATIVE_GAPS`` = 10 nonzero sampled gaps, or all of them
        equal: a 0 ± 0 from samples that never left x's leaves); True for exact values (filled in
        when ``method == "exact"`` and None is given); None when not recorded (dask Monte Carlo).

    Attributes
    ----------
    value : ndarray of shape (n,) or (n, k)
        PG² per row (and output).
    stderr : ndarray
        Standard errors (zeros when exact).
    method : str
        Method used.
    n_samples : int
        Samples per row (0 when exact).
    seconds : float
        Wall-clock seconds.
    pair_terms : int
        Leaf-pair terms evaluated by the exact method.
    reason : str
        Why ``method="auto"`` chose ``method``.
    informative : ndarray of bool or None
        Where a standard error is informative.

    See Also
    --------
    xai_plugins.pg2 : Computes it.
    xai_plugins.GreedyRanking : The result of the greedy PG² ranking.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> est = xp.pg2(model, X[:20], S=[2, 8], sigma=0.3)
    >>> est.method, est.value.shape, est.n_samples
    ('exact', (20,), 0)
    >>> bool(np.all(est.stderr == 0)), bool(est.informative.all())
    (True, True)
    >>> bool(np.array_equal(np.asarray(est), est.value))
    True
    """

    value: np.ndarray
    stderr: np.ndarray
    method: str
    n_samples: int
    seconds: float
    pair_terms: int = 0
    #: why ``method="auto"`` chose ``method`` (the cost model's two estimates); "" otherwise
    reason: str = ""
    informative: np.ndarray | None = None

    def __post_init__(self):
        if self.informative is None and self.method == "exact":
            self.informative = np.ones(np.shape(self.value), dtype=bool)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)

    def __repr__(self):
        shaky = 0 if self.informative is None else int(np.sum(~np.asarray(self.informative)))
        return (f"PG2Estimate(method={self.method!r}, n_rows={len(self.value)}, "
                f"mean={np.mean(self.value):.6g}, seconds={self.seconds:.3g}"
                + (f", uninformative stderr on {shaky} values" if shaky else "") + ")")



@dataclass
class GreedyRanking:
    """Greedy PG² ranking of ``n`` rows, as returned by :func:`xai_plugins.greedy_pg2_ranking`.

    ``np.asarray(result)`` is ``ranking``; ``len(result)`` is the number of rows.

    Parameters
    ----------
    ranking : ndarray of int of shape (n, d)
        Feature indices in the model's feature order, most important first.
    pg2_path : ndarray of shape (n, d)
        ``pg2_path[i, k] = PG²(x_i, ranking[i, :k+1])`` (PG² is not monotone in S, so the path
        need not rise); NaN where the ranking alone was asked for (``path=False``).

    Attributes
    ----------
    ranking : ndarray of int of shape (n, d)
        Per-row feature order, most important first.
    pg2_path : ndarray of shape (n, d)
        PG² of each prefix of the ranking (NaN with ``path=False``).

    See Also
    --------
    xai_plugins.greedy_pg2_ranking : Computes it.
    xai_plugins.pgi2 : Scores a ranking by exact PGI².

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> result = xp.greedy_pg2_ranking(model, X[:5], sigma=0.3)
    >>> result.ranking.shape, result.pg2_path.shape, len(result)
    ((5, 10), (5, 10), 5)
    >>> bool(np.array_equal(np.asarray(result), result.ranking))
    True
    """

    ranking: np.ndarray
    pg2_path: np.ndarray

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.ranking, dtype=dtype)

    def __len__(self):
        return len(self.ranking)


