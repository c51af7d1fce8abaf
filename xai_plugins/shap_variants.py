"""Which SHAP? Every SHAP attribution available for a model, computed on the same rows and scored by one exact
faithfulness metric (PGI² of its ranking by magnitude), with their agreement and why they differ.

The candidates: the package's path-dependent and interventional TreeSHAP (:func:`xai_plugins.tree_shap`),
shap's ``TreeExplainer`` (path-dependent), and the library's native contributions (XGBoost ``pred_contribs``,
LightGBM ``pred_contrib``, CatBoost ``ShapValues``); a candidate that cannot be computed for the model (no
covers, no background, shap reading another model than the Forest's input columns) is listed with the reason.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from ._validation import resolve_output
from .forest import import_model, library_of
from .ranking_faithfulness import faithfulness
from .treeshap import tree_shap

__all__: list[str] = []      # internal module: public as xai_plugins.which_shap and WhichSHAP

#: the z of a two-sided 95 % normal interval
_Z95 = 1.959963984540054
#: why two candidates' values differ, by (candidate, candidate)
_WHY = {
    ("path-dependent TreeSHAP", "interventional TreeSHAP"):
        "they play different games: path-dependent TreeSHAP weighs the branches of an unknown feature by the "
        "training rows that took them (the node covers), interventional TreeSHAP draws it from the background, "
        "breaking its dependence on the other features, so correlated features share credit differently",
    ("path-dependent TreeSHAP", "shap TreeExplainer"):
        "the same game and algorithm: what differs is rounding (shap reads XGBoost's leaves and covers in float32)",
    ("path-dependent TreeSHAP", "xgboost pred_contribs"):
        "the same game (covers: XGBoost's hessian sums), computed by XGBoost in float32",
    ("path-dependent TreeSHAP", "lightgbm pred_contrib"):
        "the same game (covers: LightGBM's training-row counts); LightGBM computes it in float64",
    ("path-dependent TreeSHAP", "catboost ShapValues"):
        "the same game (covers: CatBoost's leaf weights), computed by CatBoost",
}


@dataclass(frozen=True)
class WhichSHAP:
    """The outcome of :func:`which_shap`.

    Parameters
    ----------
    values : dict of str to ndarray of shape (n, d)
        Each computed attribution's values for the chosen output.
    faithfulness : DataFrame
        Per attribution: the mean exact PGI² of its rankings over the rows with a 95 % normal interval
        (``low``, ``high``), and its rank (1: the most faithful).
    agreement : DataFrame
        Per pair of attributions: the mean Kendall τ of their rankings per row, the share of the top 3 they
        share, the largest absolute difference of their values, and why they differ.
    skipped : dict of str to str
        The candidates not computed, and why.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = X[:, 0] * X[:, 1] + X[:, 2]
    >>> model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    >>> found = xp.which_shap(model, X[:30], background=X[100:150])
    >>> found.faithfulness.columns.tolist()
    ['PGI²', 'low', 'high', 'rank']
    >>> sorted(found.values)
    ['interventional TreeSHAP', 'path-dependent TreeSHAP', 'shap TreeExplainer']
    """

    values: dict
    faithfulness: pd.DataFrame
    agreement: pd.DataFrame
    skipped: dict = field(default_factory=dict)


def which_shap(model, X, *, background=None, sigma=0.3, output=None, n_jobs=None) -> WhichSHAP:
    """Every SHAP attribution available for ``model`` on the rows ``X``, scored by exact PGI².

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        Any model :func:`xai_plugins.import_model` reads.
    X : array-like of shape (n, d) or DataFrame
        The rows (n >= 2; a DataFrame is aligned by column name to the model's features).
    background : array-like of shape (m, d), DataFrame or None, default None
        Background rows for interventional TreeSHAP (left out without them).
    sigma : float or array-like of shape (d,), default 0.3
        Noise scale of PGI², as in :func:`xai_plugins.pg2`.
    output : int, str or None, default None
        The output to explain for a model with several (a class label or index); None for one output.
    n_jobs : int or None, default None
        Threads of the C core.

    Returns
    -------
    WhichSHAP
        ``values``, ``faithfulness`` (sorted, most faithful first), ``agreement`` and ``skipped``.

    Raises
    ------
    InputError
        Fewer than two rows, or several outputs and no ``output``.

    Examples
    --------
    >>> import numpy as np
    >>> import xgboost
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(400, 4)); y = X[:, 0] + X[:, 1] * X[:, 2]
    >>> model = xgboost.XGBRegressor(n_estimators=30, max_depth=3).fit(X, y)
    >>> found = xp.which_shap(model, X[:40])
    >>> sorted(found.values)
    ['path-dependent TreeSHAP', 'shap TreeExplainer', 'xgboost pred_contribs']
    >>> bool(found.agreement["max |Δ|"].max() < 1e-4)
    True
    """
    from .errors import InputError

    forest = import_model(model)
    rows = forest.rows(X)[0]
    if len(rows) < 2:
        raise InputError("which_shap compares attributions over rows: give at least two")
    k = resolve_output(forest.output_names, output)
    column = 0 if k is None else k
    values: dict[str, np.ndarray] = {}
    skipped: dict[str, str] = {}
    for name, compute in _candidates(model, forest, X, rows, background, n_jobs).items():
        try:
            out = np.asarray(compute(), dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - a candidate another library cannot compute is reported, not fatal
            skipped[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            continue
        values[name] = out[:, :, column] if out.ndim == 3 else out
    scores = {name: faithfulness(forest, v, sigma, X=rows, output=k, n_jobs=n_jobs) for name, v in values.items()}
    table = pd.DataFrame({name: _mean_interval(s) for name, s in scores.items()}, index=["PGI²", "low", "high"]).T
    table = table.sort_values("PGI²", ascending=False)
    table["rank"] = np.arange(1, len(table) + 1)
    return WhichSHAP(values, table, _agreement(values), skipped)


def _candidates(model, forest, X, rows, background, n_jobs) -> dict[str, Callable[[], Any]]:
    """name -> a function computing that attribution as (n, d) or (n, d, k)."""
    def ours(method, **kw):
        return lambda: tree_shap(forest, rows, method=method, n_jobs=n_jobs, **kw).values

    out: dict[str, Callable[[], Any]] = {"path-dependent TreeSHAP": ours("path_dependent")}
    if background is not None:
        out["interventional TreeSHAP"] = ours("interventional", background=background)
    library = library_of(model)
    if library == "sklearn-pipeline" or library is None:
        return out                    # shap and the libraries read the final model's encoded columns, not X's
    out["shap TreeExplainer"] = lambda: _shap_values(model, X, forest)
    native = {"xgboost": _xgboost_contribs, "lightgbm": _lightgbm_contribs, "catboost": _catboost_shap}.get(library)
    if native is not None:
        out[f"{library} {dict(xgboost='pred_contribs', lightgbm='pred_contrib', catboost='ShapValues')[library]}"] = \
            lambda: native(model, X, forest)
    return out


def _by_output(contribs: np.ndarray, forest) -> np.ndarray:
    """A library's (n, k * (d + 1)) or (n, k, d + 1) contributions (bias last) as (n, d) or (n, d, k)."""
    n, d, k = contribs.shape[0], forest.n_features, forest.n_outputs
    values = np.asarray(contribs, dtype=np.float64).reshape(n, k, d + 1)[:, :, :d]
    return values[:, 0, :] if k == 1 else np.moveaxis(values, 1, 2)


def _shap_values(model, X, forest) -> np.ndarray:
    import shap

    values = np.asarray(shap.TreeExplainer(model).shap_values(X, check_additivity=False))
    if values.ndim == 3 and values.shape[1] != forest.n_features:       # (k, n, d), older shap
        values = np.moveaxis(values, 0, 2)
    return values


def _xgboost_contribs(model, X, forest) -> np.ndarray:
    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    matrix = xgboost.DMatrix(X, enable_categorical=True) if isinstance(X, pd.DataFrame) else xgboost.DMatrix(X)
    return _by_output(booster.predict(matrix, pred_contribs=True), forest)


def _lightgbm_contribs(model, X, forest) -> np.ndarray:
    return _by_output(model.predict(X, pred_contrib=True), forest)


def _catboost_shap(model, X, forest) -> np.ndarray:
    import catboost

    return _by_output(model.get_feature_importance(catboost.Pool(X), type="ShapValues"), forest)


def _mean_interval(scores: np.ndarray) -> list[float]:
    scores = np.asarray(scores, dtype=np.float64)
    mean, half = scores.mean(), _Z95 * scores.std(ddof=1) / math.sqrt(len(scores))
    return [float(mean), float(mean - half), float(mean + half)]


def _ranking(values: np.ndarray) -> np.ndarray:
    return np.argsort(-np.abs(values), axis=1, kind="stable")


def _agreement(values: dict) -> pd.DataFrame:
    from scipy.stats import kendalltau

    rows = []
    for a, b in itertools.combinations(values, 2):
        va, vb = values[a], values[b]
        taus = [kendalltau(np.abs(x), np.abs(y)).statistic for x, y in zip(va, vb)]
        top = min(3, va.shape[1])
        shared = np.mean([len(set(x[:top]) & set(y[:top])) / top for x, y in zip(_ranking(va), _ranking(vb))])
        why = _WHY.get((a, b)) or _WHY.get((b, a)) or "different algorithms or covers"
        rows.append({"a": a, "b": b, "Kendall τ": float(np.nanmean(taus)) if not np.all(np.isnan(taus)) else 1.0,
                     "top-3 shared": float(shared), "max |Δ|": float(np.abs(va - vb).max()), "why": why})
    return pd.DataFrame(rows, columns=["a", "b", "Kendall τ", "top-3 shared", "max |Δ|", "why"])
