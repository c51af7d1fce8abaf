"""Faithfulness of any feature attribution, scored by exact PGI².

A ranking π of a row's features is faithful when perturbing its top features moves the
prediction the most. PGI² (Gajewski et al., eq. 3) measures that exactly on a tree ensemble:

    PGI²(x, π) = (1/d) Σ_{k=1..d} E[(f(x') − f(x))²],  x' = x with π(1..k) perturbed by noise.

:func:`faithfulness` ranks each row's features by |attribution| (largest first, ties to the
lowest feature index) and returns that ranking's exact PGI², so explanations from any tool —
shap's own ``TreeExplainer`` included — can be compared: higher is more faithful.
"""

from __future__ import annotations

import functools

import numpy as np

from ._validation import default_feature_names, feature_order, resolve_output
from .engines import engine_for
from .engines.method import Output, Plan, RowMethod
from .engines.runner import run
from .errors import ExplanationMismatchError, InputError
from .forest import import_model
from .forest.link import default_link, probabilities
from .prediction_gap._noise import _noise, _portable
from .prediction_gap._pgi2 import _scores

__all__ = ["faithfulness", "random_rankings"]


def rank_by_magnitude(values) -> np.ndarray:
    """Feature order per row by decreasing |value| (stable: ties keep the lower index first),
    along axis 1 of an (n, d) or (n, d, k) array."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim not in (2, 3):
        raise InputError(f"attribution values must be (n, d) or (n, d, k); got shape {values.shape}")
    return np.argsort(-np.abs(values), axis=1, kind="stable")


#: Rows on which :func:`faithfulness` checks that additive attributions add up to the model's output.
ADDITIVITY_ROWS = 8
#: Relative tolerance of that check, against |f(x)| + |base| + Σ|values| (the scale of the float32
#: sums XGBoost and shap's TreeSHAP make; TreeSHAP's own errors are ~1e-6 of it).
ADDITIVITY_RTOL = 1e-4


def faithfulness(model, explanation, sigma=0.3, *, X=None, output=None, perturbation=None, background=None,
                 n_jobs=None) -> np.ndarray:
    r"""Faithfulness of any feature attribution: exact PGI² of its ranking by magnitude.

    Each row's features are ranked by ``|attribution|`` (largest first, ties to the lowest feature
    index) and that ranking π is scored by its exact PGI² (Gajewski et al., eq. 3):

    .. math::

        \mathrm{PGI}^2(x, \pi) = \frac{1}{d} \sum_{k=1}^{d} \mathbb{E}\left[(f(x') - f(x))^2\right],
        \quad x' = x \text{ with } \pi(1..k) \text{ perturbed by noise,}

    so explanations from any tool (shap's own ``TreeExplainer`` included) can be compared:
    higher is more faithful.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        The explained model (one :func:`xai_plugins.import_model` supports).
    explanation : shap.Explanation, Attribution or array-like of shape (n, d) or (n, d, k)
        A ``shap.Explanation`` (its ``data`` are the rows unless ``X`` is given), an
        ``xai_plugins.attributions.Attribution``, or an (n, d[, k]) array of attributions with
        ``X``. Values of a row engine (dask...) give a lazy result.
    sigma : float or array-like of shape (d,), default 0.3
        Noise scale, as in :func:`xai_plugins.pg2`.
    X : array-like of shape (n, d), DataFrame or None, default None
        The explained rows (required when ``explanation`` carries no data).
    output : int, str or None, default None
        A class label / output name or index: score that output alone, (n,). In memory only.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) instead of the Gaussian, as in :func:`xai_plugins.pg2`.
    background : array-like or DataFrame or None, default None
        Background data (``sigma`` in its standard deviations), as in :func:`xai_plugins.pg2`.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Returns
    -------
    ndarray of shape (n,) or (n, k)
        (n,) for a single-output model; (n, k) for k outputs: column c scores the explanation of
        output c when the explanation has k outputs, else the one ranking on output c; (n,) with
        ``output``. For boosted classifiers the model output is the margin, which is also what
        shap's ``TreeExplainer`` explains by default. Lazy on a row engine.

    Raises
    ------
    ExplanationMismatchError
        An additive explanation (one with ``base_values``, as TreeSHAP's) that does not add up to
        this model's output (the margin, or for boosted classifiers its probability) on its first
        8 rows within a relative 1e-4: it explains another model or output.
    InputError
        An explanation without data and no ``X``, row counts or outputs that do not match, values
        that are not (n, d) or (n, d, k), NaN values (they have no rank).
    FeatureMismatchError
        Feature names that cannot be matched to the model's features.

    See Also
    --------
    xai_plugins.pgi2 : PGI² of given rankings.
    xai_plugins.greedy_pg2_ranking : A ranking with high PGI², the reference.
    xai_plugins.distributed.random_rankings : Random rankings, the baseline.

    Notes
    -----
    Feature columns are matched to the model's features by name (the explanation's
    ``feature_names``, else a DataFrame ``X``'s columns) and positionally otherwise. Attribution
    values and/or ``X`` of a row engine (dask...) give a lazy result (the row method ``FAITHFULNESS``
    on each block; the additivity check reads the rows the driver holds: in memory only).

    Examples
    --------
    >>> import shap
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> tree_shap = shap.TreeExplainer(model)(X[:20])
    >>> scores = xp.faithfulness(model, tree_shap, sigma=0.3)
    >>> scores.shape
    (20,)

    Plain arrays are scored as given (here local MDI of the same rows):

    >>> xp.faithfulness(model, xp.local_mdi(model, X[:20]), X=X[:20], sigma=0.3).shape
    (20,)

    SHAP values of another model are refused, not scored:

    >>> other = RandomForestRegressor(n_estimators=5, max_depth=2, random_state=1).fit(X, y)
    >>> xp.faithfulness(other, tree_shap)
    Traceback (most recent call last):
    ...
    xai_plugins.errors.ExplanationMismatchError: the explanation does not add up to this model's output: ...
    """
    return run(FAITHFULNESS, engine_for(X, getattr(explanation, "values", explanation)), model, explanation, sigma,
               X, output, perturbation, background, n_jobs)


def _check_no_nan(values: np.ndarray) -> None:
    """Refuse NaN attribution values: a ranking by |value| is undefined for them (argsort would silently put
    them last, and the ranking's PGI² would be scored as if they were the least important)."""
    nan = np.isnan(values)
    if nan.any():
        row, feature = np.argwhere(nan)[0][:2]
        raise InputError(f"the explanation has {int(nan.sum())} NaN attribution value(s) (the first: row {row}, "
                         f"feature {feature}): a ranking by |value| is undefined for them. Explain those rows again "
                         "(a NaN attribution usually comes from a failed explainer or NaN inputs), or leave them out")


def _check_additive(forest, values, base, X) -> None:
    """Refuse additive attributions (``base`` not None) whose sum plus base is not this model's
    output on the first :data:`ADDITIVITY_ROWS` rows (see :func:`faithfulness`)."""
    if base is None:
        return
    try:
        b = np.asarray(base, dtype=np.float64)
    except TypeError:       # not numbers (the non-additive scores of xai_plugins.shap carry a marker): no base value
        return
    m = min(len(values), ADDITIVITY_ROWS)
    if m == 0:
        return
    k = forest.n_outputs
    rows = X.iloc[:m] if hasattr(X, "iloc") else np.asarray(X)[:m]
    total = values[:m].sum(axis=1).reshape(m, -1)
    b = np.broadcast_to(b if b.ndim == 0 else b.reshape(len(values), -1)[:m], total.shape)
    explained = total + b
    scale = np.abs(values[:m]).sum(axis=1).reshape(m, -1) + np.abs(b)
    worst = np.inf
    for _, out in _model_outputs(forest, rows):
        for o in ([out] if explained.shape[1] == k else [out[:, [j]] for j in range(k)]):
            gap = np.abs(explained - o)
            if np.all(gap <= ADDITIVITY_RTOL * (scale + np.abs(o)) + 1e-12):
                return
            worst = min(worst, float(gap.max()))
    raise ExplanationMismatchError(
        f"the explanation does not add up to this model's output: its values plus base_values differ from the "
        f"model's {forest.output_space} output by {worst:.6g} or more on the first {m} rows, so it explains "
        "another model (or another output). Explain this model (e.g. shap.TreeExplainer(model)(X)), or pass the "
        "values without base_values to score a ranking computed elsewhere")


def _model_outputs(forest, rows) -> list:
    """(name, (m, k) output) pairs an additive explanation of this model may add up to: the output
    the PG² is computed on, and for boosted classifiers also its probability."""
    out = np.asarray(forest.predict(rows), dtype=np.float64)
    outputs = [(forest.output_space, out)]
    if forest.task == "classification" and forest.output_space == "margin":
        outputs.append(("probability", probabilities(default_link(out.shape[1]), out)))
    return outputs


# --------------------------------------------------------------------------------------------
# faithfulness and random rankings as row methods (xai_plugins.engines.runner runs them on any engine)
# --------------------------------------------------------------------------------------------

def _prepare(engine, model, explanation, sigma, X, output, perturbation, background, n_jobs) -> Plan:
    """Validated once on the driver: the values' shape and NaNs (in memory), the explained rows, the
    feature order (matched by name), the outputs, additivity on the first rows the driver holds, the noise."""
    forest = import_model(model)
    values = getattr(explanation, "values", explanation)
    if not engine.handles(values):
        values = np.asarray(values, dtype=np.float64)
        _check_no_nan(values)
    if X is None:
        X = getattr(explanation, "data", None)
        if X is None:
            raise InputError("the explanation carries no data; pass the explained rows as X=")
    if not engine.handles(X) and not engine.handles(values) and (np.ndim(X) != 2 or len(X) != len(values)):
        raise InputError(f"X has shape {np.shape(X)} but the explanation has {len(values)} rows")
    if len(values.shape) not in (2, 3):
        raise InputError(f"attribution values must be (n, d) or (n, d, k); got shape {tuple(values.shape)}")
    names = getattr(explanation, "feature_names", None)
    if names is None:
        names = getattr(X, "columns", None)
    if names is not None and forest.feature_names is not None:
        order = feature_order([str(c) for c in names], forest.feature_names, "the explanation")
        if order is not None:
            values = values[:, order]
            if not hasattr(X, "columns"):       # a DataFrame is aligned by name
                X = X[:, order] if engine.handles(X) else np.asarray(X)[:, order]
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, like=(values, 0), forest=forest)
    values = engine.by_rows(values, rows, "the explanation")
    if values.shape[1] != forest.n_features:
        raise InputError(f"the explanation has {values.shape[1]} features but the model has {forest.n_features}")
    k = forest.n_outputs
    if len(values.shape) == 3 and values.shape[2] != k:
        raise InputError(f"the explanation has {values.shape[2]} outputs but the model has {k}")
    _check_additive(forest, engine.held(values, 0), getattr(explanation, "base_values", None), X)
    c = None if output is None else resolve_output(forest.output_names, output)
    noise = _portable(forest, _noise(forest, sigma, perturbation, background))
    shape = () if c is not None or (len(values.shape) == 2 and k == 1) else (k,)
    return Plan(rows, (Output("pgi2", shape),), shipped=forest, per_row=(values,),
                shared=dict(output=c, noise=noise, n_jobs=n_jobs))


def _block(forest, start, X, values, *, output, noise, n_jobs) -> dict:
    """PGI² of the rankings by magnitude of a block of rows' attribution values."""
    ranking = rank_by_magnitude(values)
    score = functools.partial(_scores, forest, start, X, names=None, noise=noise, prune=True, n_jobs=n_jobs,
                              sampled_from=None, n_samples=0, root=None)
    if ranking.ndim == 2:
        scores = score(ranking, ranking=None, stacked=False)[:, 0]
    elif output is not None:
        scores = score(ranking[:, :, output], ranking=None, stacked=False)[:, 0]
    else:       # each output's PGI² under its own ranking; the k rankings' shared prefix sets computed once
        k = ranking.shape[2]
        scores = np.reshape(score(np.moveaxis(ranking, 2, 1), ranking=None, stacked=True), (len(X), k, k))
        return {"pgi2": np.stack([scores[:, c, c] for c in range(k)], axis=1)}
    return {"pgi2": scores if output is None or scores.ndim == 1 else scores[:, output]}


def _finish(plan: Plan, cols: dict, engine) -> np.ndarray:
    return cols["pgi2"]


#: faithfulness as a row method
FAITHFULNESS = RowMethod("faithfulness", _prepare, _block, _finish)


def _random_block(seed, start, X, *, d) -> dict:
    """Rows ``start..start+b`` of ``argsort(default_rng(seed).random((n, d)), axis=1)``: the
    generator is advanced past the rows before the block (one 64-bit draw per double)."""
    bits = np.random.PCG64(seed)
    bits.advance(int(start) * d)
    return {"ranking": np.argsort(np.random.Generator(bits).random((len(X), d)), axis=1)}


def random_rankings(X, random_state=None):
    """One uniformly random feature order per row of ``X``: the baseline rankings of PGI².

    Row i gets ``argsort`` of the i-th row of ``np.random.default_rng(random_state).random((n, d))``,
    so any blocking gives the in-memory draw bitwise (lazily on a lazy engine).

    Parameters
    ----------
    X : array-like of shape (n, d) or a row engine's rows
        The rows (only their number and width are used); in memory or on a row engine (dask...).
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
        An int, a SeedSequence, a Generator (one integer drawn from it) or None (fresh entropy).

    Returns
    -------
    ndarray of int of shape (n, d)
        One permutation of 0..d-1 per row (lazy on a lazy engine).

    See Also
    --------
    xai_plugins.pgi2 : Scores the rankings.
    xai_plugins.mean_pgi2 : Their mean PGI².

    Examples
    --------
    >>> import numpy as np
    >>> from xai_plugins.distributed import random_rankings
    >>> r = random_rankings(np.zeros((3, 4)), random_state=0)
    >>> r.shape
    (3, 4)
    >>> bool(np.all(np.sort(r, axis=1) == np.arange(4)))
    True
    >>> bool(np.array_equal(r, np.argsort(np.random.default_rng(0).random((3, 4)), axis=1)))
    True
    """
    seed = random_state
    if not (seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence))):
        seed = int(np.random.default_rng(seed).integers(2 ** 63))
    if seed is None:
        seed = np.random.SeedSequence()
    return run(RANDOM_RANKINGS, engine_for(X), X, seed)


def _prepare_random(engine, X, seed) -> Plan:
    d = X.shape[1]
    rows, _ = engine.rows(X, None, d, lambda x: (np.asarray(x, dtype=np.float64), default_feature_names(d)))
    return Plan(rows, (Output("ranking", (d,), np.int64),), shipped=seed, ship="value", shared=dict(d=d))


def _finish_random(plan: Plan, cols: dict, engine) -> np.ndarray:
    return cols["ranking"]


#: random rankings as a row method
RANDOM_RANKINGS = RowMethod("random-rankings", _prepare_random, _random_block, _finish_random)
