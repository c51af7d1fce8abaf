"""PGI² of rankings (:func:`pgi2`) and its exact mean over the rows (:func:`mean_pgi2`), declared
once as row methods (:data:`PGI2`, :data:`MEAN_PGI2`)."""

from __future__ import annotations

import functools
import numbers
from typing import cast

import numpy as np

from .. import _native
from .._validation import check_n_samples, resolve_output
from ..engines import engine_for
from ..engines.method import Output, Plan, RowMethod, Sum
from ..engines.runner import run
from ..errors import InputError, InputTypeError
from ..exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean
from ..forest import import_model
from ..perturbation import cdf_table
from ._auto import exact_seconds
from ._boundaries import split_boundaries
from ._exact import PRUNE_RTOL, _batched
from ._noise import _noise, _portable
from ._output_view import exact_view
from ._sampling import _sample_sets, row_seed
from ._sets import _check_perturbed_finite, _check_ranking, _prefix_sets, _squeeze

__all__ = ["mean_pgi2", "pgi2"]


def pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, prune=True, verbose=True,
         n_jobs=None, rho=None, sampled_from=None, n_samples=2000, random_state=None, output=None) -> np.ndarray:
    r"""Exact PGI² of a feature ranking of every row of ``X``.

    PGI² (Gajewski et al., eq. 3) is the mean squared prediction gap over the prefixes of the
    ranking π, most important feature first:

    .. math::

        \mathrm{PGI}^2(x, \pi) = \frac{1}{d} \sum_{k=1}^{d} \mathrm{PG}^2(x, \{\pi(1), \dots, \pi(k)\}).

    A ranking whose top features move the prediction the most scores highest.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows (a DataFrame is aligned by column name to the model's features). A row engine's
        collection (dask...) gives a lazy result.
    ranking : array-like of shape (d,), (n, d) or (m, n, d), or GreedyRanking
        Feature indices (or feature names) in the model's feature order, most important first:
        one ranking for every row (d,), one per row (n, d), or m stacked rankings of the same rows
        (m, n, d) to score several explanations at once. Each ranking row must be a permutation
        of 0..d-1. A row engine's ranking gives a lazy result.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian, as for :func:`xai_plugins.pg2`.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations), as for :func:`xai_plugins.pg2`.
    prune : bool, default True
        Certified pruning of the leaf-pair sums, as for :func:`xai_plugins.pg2`.
    verbose : bool, default True
        Progress bar on long calls, as for :func:`xai_plugins.pg2`.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).
    rho : float, array-like or None, default None
        Categorical features' redraw probability, as for :func:`xai_plugins.pg2`.
    sampled_from : int or None, default None
        In memory only: the prefix sets of at least this many features (the dearest for the exact
        method, whose reachable leaf pairs grow with the set) are estimated by Monte Carlo with
        ``n_samples`` draws through the model's own predictor instead, the others computed
        exactly; None: every set exact.
    n_samples : int, default 2000
        Monte Carlo draws per sampled set (an integer >= 2).
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
        Seed of the sampled sets: row i's sets draw from the i-th child of
        ``SeedSequence(random_state)``, each set from its own child of that.
    output : int, str or None, default None
        PGI² of this output only (an index or name: a class label, an output name), for which the
        exact sums pair up that output's trees and leaf values alone; None: every output.

    Returns
    -------
    ndarray of shape (n,) or (n, k)
        PGI² of each row: (n,) for single-output models and with ``output``, (n, k) otherwise. A stacked ranking
        (m, n, d) adds a leading axis of length m. Lazy on a row engine.

    Raises
    ------
    InputError
        A ranking of the wrong shape or whose rows are not permutations of 0..d-1, NaN (or the
        model's ``missing=`` sentinel) in a numeric feature of ``X`` (every feature is perturbed; a
        categorical one's missing value is an atom of its law, as in :func:`xai_plugins.pg2`),
        ``n_samples`` < 2, ``sampled_from`` on a row engine, or bad noise settings.
    InputTypeError
        A ranking that does not hold integer indices or feature names, a non-integer
        ``sampled_from``.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pg2 : PG² of one feature set.
    xai_plugins.greedy_pg2_ranking : A ranking with high PGI².
    xai_plugins.mean_pgi2 : Correctly rounded mean PGI² over the rows.
    xai_plugins.faithfulness : PGI² of the ranking by ``|attribution|`` of any explanation.

    Notes
    -----
    With a stacked ranking, a prefix set that several rankings of a row share (the full set
    always, often the first few) is computed once. An engine's ``X`` and/or ``ranking`` (dask...)
    gives a lazy result (the row method ``PGI2`` on each block).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> ranking = xp.greedy_pg2_ranking(model, X[:20], sigma=0.3).ranking
    >>> scores = xp.pgi2(model, X[:20], ranking, sigma=0.3)
    >>> scores.shape
    (20,)

    PGI² is the mean PG² over the ranking's prefixes:

    >>> prefixes = [xp.pg2(model, X[:1], ranking[0, :k + 1], sigma=0.3).value[0] for k in range(10)]
    >>> bool(np.isclose(np.mean(prefixes), scores[0]))
    True

    Two rankings of the same rows at once (shared prefixes computed once):

    >>> both = xp.pgi2(model, X[:20], np.stack([ranking, ranking[:, ::-1]]), sigma=0.3)
    >>> both.shape, bool(np.allclose(both[0], scores))
    ((2, 20), True)
    >>> bool(both[0].mean() > both[1].mean())      # the greedy order beats its reverse
    True
    """
    return run(PGI2, engine_for(X, getattr(ranking, "ranking", ranking)), model, X, ranking, sigma, perturbation,
               background, prune, verbose, n_jobs, rho, sampled_from, n_samples, random_state, output)


def _prepare(engine, model, X, ranking, sigma, perturbation, background, prune, verbose, n_jobs, rho, sampled_from,
             n_samples, random_state, output=None) -> Plan:
    """Validated once on the driver: the rankings' shape (one ranking shared by every row is
    checked here; per-row ones in their blocks), the noise, ``sampled_from``, the output."""
    forest = import_model(model)
    c = None if output is None else resolve_output(forest.output_names, output)
    d, k = forest.n_features, forest.n_outputs if c is None else 1
    ranking = getattr(ranking, "ranking", ranking)
    ndim = len(ranking.shape) if hasattr(ranking, "shape") else np.ndim(ranking)
    if ndim not in (1, 2, 3):
        raise InputError(f"ranking must have shape ({d},), (n, {d}) or (m, n, {d}); got {ndim} dimensions")
    stacked = ndim == 3
    rows, names = engine.rows(X, forest.feature_names, d, forest.rows, like=(ranking, 1 if stacked else 0),
                              forest=forest)
    per_row: tuple = ()
    shared = None
    if ndim == 1 and not engine.handles(ranking):
        shared = _check_ranking(ranking, 1, d, names)[0, 0]
    else:
        per_row = (engine.by_rows(ranking, rows, "ranking (axis 1)" if stacked else "ranking",
                                  axis=1 if stacked else 0),)
    noise = _noise(forest, sigma, perturbation, background, rho)
    root = None
    if sampled_from is not None:
        if isinstance(sampled_from, (bool, np.bool_)) or not isinstance(sampled_from, numbers.Integral):
            raise InputTypeError(f"sampled_from must be an int (a set size) or None; got {sampled_from!r}")
        n_samples, root = check_n_samples(n_samples), row_seed(random_state)
    shape = () if k == 1 else (k,)
    m = ranking.shape[0] if stacked else 1
    return Plan(rows, (Output("pgi2", (m, *shape), rows_axis=1) if stacked else Output("pgi2", shape),),
                shipped=forest, ship="forest" if sampled_from is None else "forest+model", per_row=per_row,
                shared=dict(ranking=shared, stacked=stacked, names=names, noise=_portable(forest, noise),
                            prune=prune, n_jobs=n_jobs, sampled_from=sampled_from, n_samples=int(n_samples),
                            root=root, output=c), progress=verbose)


def _scores(forest, start, X, *rankings, ranking, stacked, names, noise, prune, n_jobs, sampled_from, n_samples,
            root, output=None, progress=False) -> np.ndarray:
    """PGI² (b, m[, k]) of a block of rows: each ranking's prefix sets (shared between rankings
    when several), exact, or by Monte Carlo from ``sampled_from`` features on (row i drawing from
    ``root``'s child ``start + i``); of ``output`` alone (an index; k = 1) or of every output (None)."""
    d = forest.n_features
    _check_perturbed_finite(X, np.ones((1, d), dtype=np.uint8), forest.missing_value, forest.n_categories)
    if rankings:
        r = _check_ranking(np.moveaxis(rankings[0], 1, 0) if stacked else rankings[0], len(X), d, names)
    else:               # one ranking of every row, checked on the driver
        r = np.ascontiguousarray(np.broadcast_to(ranking, (1, len(X), d)))
    m, n = r.shape[:2]
    mask, where = _prefix_sets(r)
    sampled = every = None
    if sampled_from is not None:
        every = mask
        sampled = mask.sum(axis=2) >= max(int(sampled_from), 1)         # (n, u): the sets Monte Carlo estimates
        mask = np.where(sampled[:, :, None], 0, mask).astype(np.uint8)   # exact: an empty set costs nothing
    view = exact_view(forest, output)
    k = len(view.take)
    splits = split_boundaries(view.forest)
    table = cdf_table(splits, X, noise, range(d))
    exact_sizes = range(1, d + 1 if sampled is None else min(d + 1, max(int(sampled_from), 1)))
    seconds = m * n * sum(exact_seconds(view.forest, s) for s in exact_sizes) if progress and n > 1 else 0.0
    values, _ = _batched(n, seconds, progress, "PGI²", lambda a, b: _native.pg2(
        splits.c_forest, splits.cdf_offset, X[a:b], mask[a:b], table[a:b], n_jobs=n_jobs,
        prune_rtol=PRUNE_RTOL if prune else 0.0))
    values = values[..., view.take]
    if sampled is not None and sampled.any():
        _sample_sets(forest, X, sets_of=every, sampled=sampled, values=values, noise=noise, n_samples=n_samples,
                     root=root, row_offset=start, output=output)
    per_set = values if where is None else np.take_along_axis(values, where[:, :, None], axis=1)  # (n, m*d, k)
    return _squeeze(k, per_set.reshape(n, m, d, -1).mean(axis=2))


def _block(forest, start, X, *rankings, stacked, **kwargs) -> dict:
    scores = _scores(forest, start, X, *rankings, stacked=stacked, **kwargs)
    return {"pgi2": scores if stacked else scores[:, 0]}


def _finish(plan: Plan, cols: dict, engine) -> np.ndarray:
    return cols["pgi2"]


#: PGI² as a row method: (n,) / (n, k) scores, or (m, n[, k]) for m stacked rankings
PGI2 = RowMethod("pgi2", _prepare, _block, _finish)


def mean_pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, n_jobs=None):
    r"""Mean PGI² of a ranking over the rows of ``X``, correctly rounded.

    .. math::

        \frac{1}{n} \sum_{i=1}^{n} \mathrm{PGI}^2(x_i, \pi_i)

    computed with an exact sum and one rounding, so it is the same float in memory and on any row
    engine, for any blocking. On a lazy engine (dask, Spark) it is reduced per block without
    collecting rows.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d), DataFrame or a row engine's collection
        The rows (a DataFrame is aligned by column name to the model's features).
    ranking : array-like of shape (d,) or (n, d), or GreedyRanking
        As in :func:`xai_plugins.pgi2`, not stacked: one ranking per row.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale, as for :func:`xai_plugins.pg2`.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations).
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Returns
    -------
    float or ndarray of shape (k,)
        In memory: a float (or a (k,) array for k outputs); on a lazy engine (dask...) a lazy
        scalar (or (k,) array).

    Raises
    ------
    InputError
        A stacked (m, n, d) ranking, or any input :func:`xai_plugins.pgi2` refuses.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pgi2 : PGI² per row.
    xai_plugins.distributed.random_rankings : Random rankings, the baseline PGI² is compared with.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> ranking = xp.greedy_pg2_ranking(model, X[:20], sigma=0.3)
    >>> mean = xp.mean_pgi2(model, X[:20], ranking, sigma=0.3)
    >>> isinstance(mean, float)
    True
    >>> bool(np.isclose(mean, xp.pgi2(model, X[:20], ranking, sigma=0.3).mean()))
    True
    """
    return run(MEAN_PGI2, engine_for(X, getattr(ranking, "ranking", ranking)), model, X, ranking, sigma,
               perturbation, background, n_jobs)


def _sum_block(values) -> list:
    v = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    return exact_column_sums(v) + [len(v)]


def _mean_finish(total, k):
    values = exact_mean(total[:-1], total[-1] << SUM_SCALE_BITS)
    return values[0] if k == 1 else values


def _prepare_mean(engine, model, X, ranking, sigma, perturbation, background, n_jobs) -> Plan:
    r = getattr(ranking, "ranking", ranking)
    if (len(r.shape) if hasattr(r, "shape") else np.ndim(r)) == 3:
        raise InputError("mean_pgi2 takes one ranking per row, not a stack")
    plan = _prepare(engine, model, X, ranking, sigma, perturbation, background, True, False, n_jobs, None, None,
                    2000, None)
    k = plan.shipped.n_outputs
    mean = Sum("mean", _sum_block, functools.partial(_mean_finish, k=k), of=("pgi2",), shape=() if k == 1 else (k,))
    plan.outputs = (*cast(tuple, plan.outputs), mean)
    return plan


def _mean(plan: Plan, cols: dict, engine):
    return cols["mean"]


#: the mean PGI² over the rows as a row method: the rows' PGI², summed exactly, rounded once
MEAN_PGI2 = RowMethod("mean-pgi2", _prepare_mean, _block, _mean)
