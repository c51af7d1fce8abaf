"""TreeSHAP on the package's own Forest: exact Shapley values for every model the package reads, in its input
columns (a categorical input, or an input column a Pipeline encodes into several, is one player).

Two value functions, both exact (``csrc/treeshap.c``):

- **path-dependent** (Lundberg et al. 2020, Algorithm 2): v(S) = E[f(x) | x_S], the expectation taken down
  each tree with the node covers (training rows or hessian sums per node) as weights;
- **interventional**: v(S) = mean over background rows z of f(x_S, z_rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _native
from .engines import engine_for
from .engines.method import Output, Plan, RowMethod
from .engines.runner import run
from .errors import InputError
from .forest import import_model

__all__: list[str] = []      # internal module: public as xai_plugins.tree_shap and TreeSHAPValues

#: the methods of :func:`tree_shap`
METHODS = ("auto", "path_dependent", "interventional")


@dataclass(frozen=True)
class TreeSHAPValues:
    """Exact TreeSHAP values of :func:`tree_shap`.

    Parameters
    ----------
    values : ndarray of shape (n, d) or (n, d, k)
        Per row and feature (and output, for k > 1 outputs) the Shapley value of the model's output in its
        Forest's ``output_space`` (the margin of boosted classifiers).
    base_values : float or ndarray of shape (k,)
        The value of the empty coalition: the cover-weighted expected output (path-dependent) or the mean
        output over the background (interventional); ``values`` summed over features plus it is the output.
    method : str
        "path_dependent" or "interventional".
    feature_names : list of str or None
        The model's features, in the order of ``values``' feature axis.
    output_names : list of str
        The model's outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> model = GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> sv = xp.tree_shap(model, X[:4])
    >>> sv.values.shape, sv.output_names
    ((4, 3), ['margin'])
    >>> bool(np.allclose(sv.values.sum(axis=1) + sv.base_values, model.decision_function(X[:4])))
    True
    """

    values: np.ndarray
    base_values: float | np.ndarray
    method: str
    feature_names: list | None
    output_names: list


def tree_shap(model, X, *, background=None, method="auto", n_jobs=None) -> TreeSHAPValues:
    r"""Exact TreeSHAP values of every row of ``X``, computed by the C core on the model's Forest.

    The Shapley value of feature j for the value function v (Lundberg et al. 2020):

    .. math::

        \phi_j(x) = \sum_{S \subseteq N \setminus \{j\}} \frac{|S|!\,(d - |S| - 1)!}{d!}
                    \left(v(S \cup \{j\}) - v(S)\right),

    with v(S) = E[f(x) | x_S] down each tree weighted by the node covers (path-dependent) or
    v(S) = mean over background rows z of f(x_S, z_{N∖S}) (interventional). The values of a row add up
    to its output less ``base_values`` (to rounding).

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        Any model :func:`xai_plugins.import_model` reads (XGBoost, LightGBM, CatBoost, scikit-learn trees and
        Pipelines, categorical features included).
    X : array-like of shape (n, d) or DataFrame
        The rows to explain (a DataFrame is aligned by column name to the model's features).
    background : array-like of shape (m, d), DataFrame or None, default None
        Background rows of the interventional value function.
    method : {"auto", "path_dependent", "interventional"}, default "auto"
        "auto": interventional with a ``background``, else path-dependent.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = every core);
        results do not depend on it.

    Returns
    -------
    TreeSHAPValues
        ``values`` (n, d) or (n, d, k), ``base_values``, ``method``, ``feature_names``, ``output_names``.
        A row engine's ``X`` (a dask array / DataFrame, a Spark DataFrame) gives a lazy result whose
        ``compute()`` equals the in-memory one bitwise.

    Raises
    ------
    InputError
        An unknown ``method``; "interventional" without a ``background``; "path_dependent" on a model whose
        trees store no node covers.

    See Also
    --------
    xai_plugins.pg2 : How much the output moves when features are perturbed (exact).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    >>> sv = xp.tree_shap(model, X[:5])
    >>> sv.method, sv.values.shape
    ('path_dependent', (5, 10))
    >>> bool(np.allclose(sv.values.sum(axis=1) + sv.base_values, model.predict(X[:5])))
    True
    >>> xp.tree_shap(model, X[:5], background=X[:50]).method
    'interventional'
    """
    return run(TREESHAP, engine_for(X, background), model, X, background, method, n_jobs)


def _prepare(engine, model, X, background, method, n_jobs) -> Plan:
    """Validate on the driver; the base values (the same for every row) computed here once, on a zero row."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    forest = import_model(model)
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    if method == "auto":
        method = "path_dependent" if background is None else "interventional"
    shared: dict = dict(n_jobs=n_jobs, k=forest.n_outputs)
    if method == "interventional":
        if background is None:
            raise InputError("interventional TreeSHAP needs background= rows")
        held = engine.compute(background)[0] if engine.handles(background) else background
        shared["background"] = forest.rows(held, what="background")[0]
    elif forest.weight is None or not np.all(forest.weight[forest.tree_offset[:-1]] > 0):
        raise InputError(f"path-dependent TreeSHAP weighs each tree's branches by their node covers, which "
                         f"this {forest.model_type} does not store (or stores as 0); pass background= rows "
                         f"for interventional TreeSHAP")
    base = _treeshap(forest, np.zeros((1, forest.n_features)), shared.get("background"), 1)[0, :, -1]
    shape = (forest.n_features,) if forest.n_outputs == 1 else (forest.n_features, forest.n_outputs)
    return Plan(rows, (Output("values", shape),), shipped=forest, shared=shared,
                state=(method, float(base[0]) if forest.n_outputs == 1 else base, forest))


def _treeshap(forest, X, background, n_jobs) -> np.ndarray:
    """(n, k, d + 1) values of the C core, the base value last."""
    if background is None:
        return _native.treeshap(forest, X, cover=forest.weight, n_jobs=n_jobs)
    return _native.treeshap(forest, X, background=background, n_jobs=n_jobs)


def _block(forest, start, X, *, n_jobs, k, background=None) -> dict:
    """TreeSHAP values of a block of rows: (b, d) for one output, (b, d, k) otherwise."""
    values = np.moveaxis(_treeshap(forest, X, background, n_jobs)[:, :, :-1], 1, 2)
    return {"values": values[:, :, 0] if k == 1 else values}


def _finish(plan: Plan, cols: dict, engine) -> TreeSHAPValues:
    method, base, forest = plan.state
    return engine.result(TreeSHAPValues, values=cols["values"], base_values=base, method=method,
                         feature_names=forest.feature_names, output_names=list(forest.output_names))


#: TreeSHAP as a row method: the same bits in memory and on any row engine, for any blocking
TREESHAP = RowMethod("treeshap", _prepare, _block, _finish)
