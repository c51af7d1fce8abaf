"""The greedy PG² ranking (:func:`greedy_pg2_ranking`), declared once as a row method (:data:`GREEDY`)."""

from __future__ import annotations

import numpy as np

from .. import _native
from .._validation import resolve_output
from ..engines import engine_for
from ..engines.method import Output, Plan, RowMethod
from ..engines.runner import run
from ..forest import import_model
from ..perturbation import cdf_table
from ._auto import counted_seconds, exact_by_size, importance_order, memoised
from ._boundaries import split_boundaries
from ._exact import PRUNE_RTOL, _batched
from ._noise import _noise, _portable
from ._output_view import exact_view
from ._results import GreedyRanking
from ._sets import _check_perturbed_finite

__all__ = ["greedy_pg2_ranking"]


def greedy_pg2_ranking(model, X, sigma=0.3, *, perturbation=None, background=None, output=None, prune=True,
                       verbose=True, n_jobs=None, rho=None, path=True) -> GreedyRanking:
    r"""Greedy PG² ranking of the features of every row of ``X``, most important first.

    Step k adds the feature that most increases the squared prediction gap of the features chosen
    so far:

    .. math::

        \pi(k) = \operatorname*{arg\,max}_{j} \mathrm{PG}^2(x, \{\pi(1), \dots, \pi(k-1)\} \cup \{j\}),

    with PG² summed over the model's outputs (or taken for ``output`` only). Ties go to the
    lowest feature index (features the model never reaches tie at the end in index order).

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows (a DataFrame is aligned by column name to the model's features). A row engine's
        collection (dask...) gives a lazy result.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian, as for :func:`xai_plugins.pg2`.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations), as for :func:`xai_plugins.pg2`.
    output : int, str or None, default None
        Rank on this output only (an index or name: a class label, an output name); None sums PG²
        over the outputs.
    prune : bool, default True
        As for :func:`xai_plugins.pg2`. Either way each step first screens its candidates with a
        looser certified bound and evaluates again only those that could still be the best, so
        the ranking and its path are those of evaluating every candidate of every step in full
        (with pruning: to ``PRUNE_RTOL``; without: every leaf pair).
    verbose : bool, default True
        Progress bar on long calls, as for :func:`xai_plugins.pg2`.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).
    rho : float, array-like or None, default None
        Categorical features' redraw probability, as for :func:`xai_plugins.pg2`.
    path : bool, default True
        Compute ``pg2_path``. False gives the same ranking for less work: a step whose screening
        leaves one candidate does not evaluate it exactly, and the last step (one feature left)
        evaluates nothing; ``pg2_path`` is then NaN.

    Returns
    -------
    GreedyRanking
        ``.ranking`` (n, d): feature indices in the model's feature order, most important first;
        ``.pg2_path`` (n, d): ``pg2_path[i, k] = PG²(x_i, π_i(1..k+1))`` (NaN with ``path=False``). An engine's ``X``
        (dask...) gives a lazy GreedyRanking (the row method ``GREEDY`` on each block).

    Raises
    ------
    InputError
        NaN (or the model's ``missing=`` sentinel) in a numeric feature of ``X`` (every feature is
        perturbed; a categorical one's missing value is an atom of its law, as in :func:`pg2`), empty
        data or bad noise settings.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    InputIndexError
        An ``output`` index out of range.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.GreedyRanking : The result.
    xai_plugins.pgi2 : Scores the ranking.
    xai_plugins.shap.PG2Explainer : The greedy PG² gains as a ``shap.Explanation``.

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
    >>> result.ranking.shape, result.pg2_path.shape
    ((5, 10), (5, 10))
    >>> bool(np.all(np.sort(result.ranking, axis=1) == np.arange(10)))   # a permutation per row
    True
    >>> first_two = result.ranking[0, :2]
    >>> bool(np.isclose(result.pg2_path[0, 1], xp.pg2(model, X[:1], first_two, sigma=0.3).value[0]))
    True
    """
    return run(GREEDY, engine_for(X), model, X, sigma, perturbation, background, output, prune, verbose, n_jobs, rho,
               path)


def _prepare(engine, model, X, sigma, perturbation, background, output, prune, verbose, n_jobs, rho,
             path=True) -> Plan:
    """Validated once on the driver: the output whose PG² is maximised (its weight), the noise."""
    forest = import_model(model)
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    c = None if output is None else resolve_output(forest.output_names, output)
    noise = _noise(forest, sigma, perturbation, background, rho)
    d = forest.n_features
    return Plan(rows, (Output("ranking", (d,), np.int64), Output("pg2_path", (d,))), shipped=forest,
                shared=dict(output=c, noise=_portable(forest, noise), prune=prune, n_jobs=n_jobs, path=path),
                progress=verbose)


def greedy_objective(forest, output) -> tuple:
    """(the :class:`~._output_view.ExactView` the ranking sums over, the weights of its outputs in the C core's
    objective sum_o weight[o] PG²_o): PG² of ``output`` (an index), or summed over every output (None), each output
    asked for adding that of the view's output it equals."""
    view = exact_view(forest, output)
    return view, np.bincount(view.take, minlength=view.forest.n_outputs).astype(np.float64)


def _block(forest, start, X, *, output, noise, prune, n_jobs, path=True, progress=False) -> dict:
    """The greedy ranking and its PG² path (NaN when not asked for) of a block of rows, maximising PG² of
    ``output`` (an index) or summed over the outputs (None)."""
    d = forest.n_features
    _check_perturbed_finite(X, np.ones((1, d), dtype=np.uint8), forest.missing_value, forest.n_categories)
    view, weight = greedy_objective(forest, output)
    splits = split_boundaries(view.forest)
    table = cdf_table(splits, X, noise, range(d))
    seconds = _cost(view.forest, len(X)) if progress and len(X) > 1 else 0.0

    def call(a, b):
        ranking, objective = _native.greedy_pg2(splits.c_forest, splits.cdf_offset, X[a:b], table[a:b], weight,
                                                n_jobs=n_jobs, prune_rtol=PRUNE_RTOL if prune else 0.0, path=path)
        return ranking, np.full((b - a, d), np.nan) if objective is None else objective

    ranking, objective = _batched(len(X), seconds, progress, "greedy PG² ranking", call)
    return {"ranking": ranking.astype(np.int64), "pg2_path": objective}


#: what screening a candidate costs against evaluating it exactly when the leaves each bound keeps are not counted
#: (the pruning bound at 1e-3 keeps about half of the leaf pairs, measured on California XGBoost 500 × 6 with
#: ``bench_greedy.py``)
SCREEN_SHARE = 0.55
#: the certified bound with which each step screens its candidates (``SCREEN_RTOL`` in ``csrc/pg2.c``)
SCREEN_RTOL = 1e-3


def _cost(forest, n_rows: int, rows=None, noise=None) -> float:
    """Estimated CPU seconds of the greedy ranking of ``n_rows`` rows: at step k < d, its d - k + 1 candidate sets
    screened at :data:`SCREEN_RTOL`, and the chosen set's exact PG² (the path) at every step. With ``rows`` and
    ``noise``, on each row the greedy's path is taken to be :func:`~._auto.importance_order` (which is its first
    step) and each of those sets is priced by the leaves and leaf pairs the C core keeps under that noise
    (:func:`~._auto.counted_seconds`, the mean over the rows); otherwise by :func:`~._auto.exact_by_size` from the
    leaf depths, the most split features first, a screen at :data:`SCREEN_SHARE` of an exact PG²."""
    d = forest.n_features
    if rows is None or noise is None:
        exact = exact_by_size(forest, rows, order="importance")
        return n_rows * sum((d - k + 1) * SCREEN_SHARE * exact[k] + exact[k] for k in range(1, d + 1))
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    return n_rows * memoised(forest, rows, noise, ("greedy",), lambda: _path_seconds(forest, rows, noise))


def _path_seconds(forest, rows: np.ndarray, noise) -> float:
    """Mean over ``rows`` of the counted seconds of the greedy's screens and path along
    :func:`~._auto.importance_order` (see :func:`_cost`)."""
    n, d = rows.shape
    order = importance_order(forest, rows, noise)
    path = np.zeros((n, d, d), dtype=bool)
    screened = np.zeros((n, d * (d + 1) // 2 - 1, d), dtype=bool)
    for i in range(n):
        at = 0
        for k in range(d):
            path[i, k, order[i, :k + 1]] = True
            if k == d - 1:
                break                                  # the last step has one candidate, evaluated once (the path)
            for j in order[i, k:]:
                screened[i, at, order[i, :k]] = True
                screened[i, at, j] = True
                at += 1
    seconds = counted_seconds(forest, rows, path, noise, PRUNE_RTOL).sum(axis=1)
    if d > 1:                                          # one feature: nothing to screen
        seconds += counted_seconds(forest, rows, screened, noise, SCREEN_RTOL).sum(axis=1)
    return float(seconds.mean())


def _finish(plan: Plan, cols: dict, engine) -> GreedyRanking:
    return engine.result(GreedyRanking, ranking=cols["ranking"], pg2_path=cols["pg2_path"])


#: the greedy PG² ranking as a row method
GREEDY = RowMethod("greedy-pg2", _prepare, _block, _finish, _cost)
