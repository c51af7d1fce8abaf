"""PG² (:func:`pg2`), declared once as a row method (:data:`PG2`): exact, Monte Carlo, QMC or
``auto`` on every row, in memory or block by block on a row engine."""

from __future__ import annotations

import functools
import time

import numpy as np

from .._validation import check_n_samples, resolve_output
from ..engines import engine_for
from ..engines.method import Output, Plan, RowMethod, Total
from ..engines.runner import run
from ..errors import InputError
from ..forest import import_model
from ..perturbation import check_noise_scale
from ._auto import AUTO_ACCEPT, AUTO_PILOT_ROWS, auto_method
from ._boundaries import split_boundaries
from ._exact import _exact_pg2, exact_where_unshown
from ._noise import _noise, _portable
from ._results import PG2Estimate
from ._sampling import _informative, _sampled_pg2, row_seed
from ._sets import _block_masks, _check_perturbed_finite, _one_set, _per_row_sets, _set_masks, _squeeze

__all__ = ["pg2"]

METHODS = ("exact", "monte_carlo", "qmc", "auto")


def pg2(model, X, S, sigma=0.3, *, perturbation=None, background=None, method="exact", n_samples=10_000,
        rtol=0.01, random_state=None, prune=True, verbose=True, n_jobs=None, rho=None, output=None) -> PG2Estimate:
    r"""Squared prediction gap PG² of every row of ``X`` when the features ``S`` are perturbed.

    For each row x (Gajewski et al., eq. 2):

    .. math::

        \mathrm{PG}^2(x, S) = \mathbb{E}\left[(f(x') - f(x))^2\right],

    where x'_j = x_j + ε_j for j in S and x'_j = x_j otherwise, with independent noise ε_j (Gaussian of
    standard deviation ``sigma``, or ``perturbation``) and f the model's output in its Forest's
    ``output_space``: the regression output, the margin (log-odds / softmax logits) of boosted classifiers,
    the class probabilities of random forests.
    The exact value is computed in closed form by the C core over the ensemble's leaf pairs.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        An XGBoost, LightGBM, CatBoost or scikit-learn tree model (or Pipeline) that
        :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    X : array-like of shape (n, d) or DataFrame
        The rows: an array, read in the model's column order, or a DataFrame whose columns are
        aligned by name to the model's features. A row engine's collection (a dask array /
        DataFrame, a Spark DataFrame) gives a lazy result.
    S : sequence of int or str, array of bool, or one set per row
        The perturbed features, in the model's feature order: indices and/or feature names shared
        by all rows, a boolean mask (d,), or one set per row: a boolean (n, d) mask, an (n, k)
        index array, or a list of n index/name lists.
    sigma : float or array-like of shape (d,), default 0.3
        Standard deviation of the Gaussian noise, finite and > 0, scalar or per feature; with
        ``background`` it is in units of each feature's standard deviation there.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        A continuous distribution (one for all features, or one per feature) replacing the
        Gaussian (``sigma`` is then ignored), or the result of
        :func:`xai_plugins.binary_perturbation`.
    background : array-like or DataFrame or None, default None
        Background data: ``sigma`` becomes relative to its per-feature standard deviations, and
        categorical features are redrawn from its category frequencies.
    method : {"exact", "monte_carlo", "qmc", "auto"}, default "exact"
        "exact": closed form in C. "monte_carlo": ``n_samples`` perturbed copies per row through
        the model's own predictor. "qmc": scrambled Halton points mapped through the inverse CDF,
        8 independent scramblings for the standard error. "auto": the cheaper of the exact
        algorithm and a Monte Carlo estimate whose relative standard error is ``rtol``, by a cost
        model (its sample count from a pilot of 256 samples on up to 8 rows); the estimate's
        ``method`` and ``reason`` say which ran and why.
    n_samples : int, default 10000
        Perturbed samples per row for "monte_carlo" and "qmc" (an integer >= 2).
    rtol : float, default 0.01
        Relative standard error that ``method="auto"``'s Monte Carlo must reach.
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
        Seed of the sampled methods. Row i draws its noise from its own generator (the i-th child
        of ``SeedSequence(random_state)``), so a seeded estimate of a row does not depend on the
        other rows or on how a dask ``X`` is chunked. None draws fresh entropy.
    prune : bool, default True
        The exact method leaves out the leaf pairs that provably cannot change any value by more
        than ``PRUNE_RTOL`` = 1e-13 of it (relative); False sums every pair.
    verbose : bool, default True
        Show a progress bar when the exact call is estimated to take over 5 seconds.
    n_jobs : int or None, default None
        Threads of the C core (scikit-learn convention: None = 1 or the ``joblib.parallel_config``
        in force, -1 = every core); results do not depend on it.
    rho : float, array-like of shape (d,) or None, default None
        For categorical features: the probability that x'_j is redrawn from the category
        frequencies (scalar or per feature); default ``P(|e_j| > 1/2)`` of the feature's noise,
        2Φ(−1/(2σ)) for Gaussian noise.
    output : int, str or None, default None
        PG² of this output only (an index or name: a class label, an output name), for which the
        exact sums pair up that output's trees and leaf values alone; None: every output.

    Returns
    -------
    PG2Estimate
        ``value`` (n,) or (n, k) for k outputs (without ``output``), ``stderr``, ``method``, ``n_samples``,
        ``seconds``, ``pair_terms``, ``reason`` and ``informative``. On a lazy row engine, a lazy
        estimate whose ``compute()`` equals the in-memory result bitwise.

    Raises
    ------
    InputError
        Unknown ``method``, ``n_samples`` < 2, ``sigma`` <= 0 or not finite, NaN (or the model's
        ``missing=`` sentinel) in a perturbed numeric feature, empty data or wrong sizes.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    InputTypeError
        Data or arguments of the wrong type (text columns, complex data, ``n_jobs="x"``).
    InputIndexError
        A feature index in ``S`` out of range.
    UnsupportedModelError
        A model type, objective or split kind that cannot be imported.
    NotFittedError
        An unfitted model.

    Warns
    -----
    NoiseScaleWarning
        When a Gaussian σ is at least 100 times the range of a perturbed feature's split
        thresholds and the rows' values: PG² then no longer depends on σ.

    See Also
    --------
    xai_plugins.pgi2 : Mean PG² over the prefixes of a ranking.
    xai_plugins.greedy_pg2_ranking : The feature order that greedily maximises PG².
    xai_plugins.binary_perturbation : Flip noise for 0/1 features.
    xai_plugins.PG2Estimate : The result.

    Notes
    -----
    The exact value is a sum over pairs of leaves of every two trees; with ``prune=True`` a proven
    bound drops the pairs of the least weighty leaves while keeping every value within 1e-13
    (relative) of the all-pairs sum. For boosted classifiers PG² is exact on the margin;
    probabilities have no leaf-pair form (use ``method="monte_carlo"``). A collection of a row
    engine (a dask array / DataFrame ``X``...) is computed block by block by the same code
    (the row method ``PG2`` on each block; see ``xai_plugins.engines``), and the lazy estimate's
    ``compute()`` equals this result bitwise.

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
    >>> est.method, est.value.shape
    ('exact', (20,))
    >>> float(xp.pg2(model, X[:1], S=[]).value[0])      # perturbing nothing changes nothing
    0.0

    A seeded Monte Carlo estimate agrees within its standard error:

    >>> mc = xp.pg2(model, X[:20], [2, 8], sigma=0.3, method="monte_carlo",
    ...             n_samples=2000, random_state=0)
    >>> mc.method, mc.stderr.shape
    ('monte_carlo', (20,))
    >>> bool(np.all(np.abs(mc.value - est.value) <= 5 * mc.stderr + 1e-9))
    True

    ``method="auto"`` says which method it ran and why:

    >>> auto = xp.pg2(model, X[:20], [2, 8], method="auto", rtol=0.01)
    >>> auto.method in ("exact", "monte_carlo"), auto.reason.startswith("auto")
    (True, True)
    """
    return run(PG2, engine_for(X, S), model, X, S, sigma, perturbation, background, method, n_samples, rtol,
               random_state, prune, verbose, n_jobs, rho, output)


def _prepare(engine, model, X, S, sigma, perturbation, background, method, n_samples, rtol, random_state, prune,
             verbose, n_jobs, rho, output=None) -> Plan:
    """Validated once on the driver: the method, the sets (shared, or per row), the noise;
    ``method="auto"`` decides on the rows the driver holds (the first :data:`AUTO_PILOT_ROWS` pilot
    rows; on a row engine, its cost estimate reads those rows' sets)."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    forest = import_model(model)
    c = None if output is None else resolve_output(forest.output_names, output)
    rows, names = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    d, k = forest.n_features, forest.n_outputs if c is None else 1
    per_row: tuple = ()
    shared_S = None
    if engine.handles(S):
        per_row = (engine.by_rows(S, rows, "S", transform=functools.partial(_block_masks, d=d, names=names),
                                  width=d, dtype=bool),)
    elif _per_row_sets(S):
        per_row = (engine.by_rows(_set_masks(S, engine.n_rows(rows), d, names), rows, "S"),)
    else:
        shared_S = _one_set(S, d, names)
    noise = _noise(forest, sigma, perturbation, background, rho)
    started, reason = time.perf_counter(), ""
    if method == "auto":
        head = engine.held(rows, AUTO_PILOT_ROWS)
        head_mask = (np.broadcast_to(shared_S, head.shape) if shared_S is not None
                     else engine.held(per_row[0], len(head))).astype(np.uint8)
        method, n_samples, reason = auto_method(forest, head, head_mask, _portable(forest, noise), rtol, random_state,
                                                c)
    root = None
    if method != "exact":
        n_samples = check_n_samples(n_samples)
        held = engine.held(rows, 0)          # in memory, every row: the noise scale checked there
        if len(held):
            masks = np.broadcast_to(shared_S, held.shape) if shared_S is not None else engine.held(per_row[0], 0)
            _check_perturbed_finite(held, masks, forest.missing_value, forest.n_categories)
            check_noise_scale(split_boundaries(forest), noise, np.flatnonzero(np.asarray(masks).any(axis=0)), held)
        root = row_seed(random_state)
        reason += (f"; rows whose samples do not show a relative standard error within {AUTO_ACCEPT:g} x rtol "
                   "are computed exactly") if reason else ""
    return Plan(rows, _outputs(k),
                shipped=forest, ship="forest" if method == "exact" else "forest+model", per_row=per_row,
                shared=dict(S=shared_S, method=method, n_samples=int(n_samples), root=root, n_jobs=n_jobs,
                            noise=_portable(forest, noise), prune=prune,
                            auto_rtol=rtol if reason and method != "exact" else None, output=c),
                progress=verbose, state=(method, 0 if method == "exact" else int(n_samples), reason, started))


@functools.lru_cache(maxsize=None)
def _outputs(k: int) -> tuple:
    """PG²'s outputs for a model of ``k`` outputs: value, stderr, informative per row, the leaf-pair terms summed."""
    shape = () if k == 1 else (k,)
    return Output("value", shape), Output("stderr", shape), Output("informative", shape, bool), Total("pair_terms")


def _block(forest, start, X, *masks, S=None, method, n_samples, root, n_jobs, noise, prune, auto_rtol=None,
           output=None, progress=False) -> dict:
    """PG² of a block of rows (first row ``start``): value, stderr and informative per row, and the
    block's leaf-pair terms. ``masks``: the block's per-row sets (else ``S``, shared). Sampled rows
    draw from :func:`row_seed` ``root``'s child ``start + i``; ``auto_rtol``: they are held to
    ``method="auto"``'s guarantee (:func:`exact_where_unshown`); ``output``: that output's alone (an index)."""
    if masks:
        m = np.ascontiguousarray(masks[0], dtype=np.uint8)
    else:               # the shared set on every row (read only: the C core reads it)
        m = S[None, :] if len(X) == 1 else np.repeat(S[None, :], len(X), axis=0)
    _check_perturbed_finite(X, m, forest.missing_value, forest.n_categories)
    k = forest.n_outputs if output is None else 1
    if method == "exact":
        value, terms = _exact_pg2(forest, X, m, noise, prune, progress, n_jobs, output)
        stderr, informative = np.zeros_like(value), np.ones(value.shape, dtype=bool)
    else:
        value, stderr, nonzero = _sampled_pg2(forest, X, m, noise, n_samples, method, root, row_offset=start)
        if output is not None:
            value, stderr, nonzero = value[:, [output]], stderr[:, [output]], nonzero[:, [output]]
        informative, terms = _informative(stderr, nonzero, m), 0
        if auto_rtol is not None:
            terms = exact_where_unshown(forest, X, m, noise, value, stderr, informative, auto_rtol, prune=prune,
                                        verbose=progress, n_jobs=n_jobs, output=output)[1]
    return {"value": _squeeze(k, value), "stderr": _squeeze(k, stderr), "informative": _squeeze(k, informative),
            "pair_terms": terms}


def _finish(plan: Plan, cols: dict, engine) -> PG2Estimate:
    method, n_samples, reason, started = plan.state
    return engine.result(PG2Estimate, timed="seconds", value=cols["value"], stderr=cols["stderr"], method=method,
                         n_samples=n_samples, seconds=time.perf_counter() - started, pair_terms=cols["pair_terms"],
                         reason=reason, informative=cols["informative"])


#: PG² as a row method
PG2 = RowMethod("pg2", _prepare, _block, _finish)
