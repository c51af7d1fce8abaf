"""The AcME estimator shell: settings, background, grid, and the model calls of an explanation."""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np
import pandas as pd

from .._categories import category_codes
from .._validation import model_rows
from ..engines import engine_for
from ..engines.method import Output, Plan, RowMethod
from ..engines.runner import run
from ..errors import InputError, XaiError, XaiWarning
from ..forest import Forest, import_model, library_of, model_feature_names, model_missing_value
from ._effects import local_effects, segment_effects
from ._grid import build_grid, categorical_mask, global_baseline
from ._results import AcMEGlobal, AcMELocal
from ._scoring import TASKS, Scorer, infer_task, is_classifier

__all__: list[str] = []      # internal module: the public names are in the API reference

_VARIANTS = ("paper", "reference")
_ROWS_PER_CALL = 1 << 16        # default cap on perturbed rows per local predict call


class AcME:
    r"""Accelerated model-agnostic explanations (AcME) of a fitted model.

    Global and local feature importances from quantile perturbations of a baseline point
    (Dandolo et al., §4.1–4.3), plus the paper's what-if plots. For a baseline :math:`x^b` (the
    column means, the mode for categorical features, for the global explanation; the row itself
    for a local one) and each feature j, feature j is replaced by the quantiles
    :math:`x_{j,q}` of its background distribution; with :math:`\hat y_{j,q} = f(z_{j,q})`
    (paper eq. 2 and 3):

    .. math::

        \Delta_{j,q} = \frac{\hat y_{j,q} - f(x^b)}{\sqrt{\operatorname{var}(\hat y_j)}}
                       \,(\max \hat y_j - \min \hat y_j), \qquad
        I_j = \frac{1}{Q_j} \sum_q |\Delta_{j,q}|.

    Every perturbed row goes to the model in one call (global) or one call per batch of rows
    (local).

    Parameters
    ----------
    model : fitted estimator or None
        A fitted estimator with ``predict`` (regression) or ``predict_proba`` (classification);
        may be None when ``score_function`` is given.
    X_background : array-like of shape (N, d) or DataFrame
        Numeric, no NaN (nor the model's missing-value sentinel, e.g. XGBoost's
        ``missing=-999``): the data whose quantiles (and mean or mode) define the perturbations.
        A DataFrame's columns are aligned by name to the model's feature names; so are the rows
        given to :meth:`explain_local`.
    n_quantiles : int, default 50
        Q >= 2, grid points per numeric feature.
    task : {"regression", "classification"} or None, default None
        None: inferred from the model. "regression" explains ``model.predict``;
        "classification" ``model.predict_proba``, one importance per class, outputs named by
        ``model.classes_``. Inferred as "classification" for a scikit-learn classifier
        (``sklearn.base.is_classifier``) or, without ``score_function``, any model with a
        callable ``predict_proba``; "regression" otherwise. ``task="regression"`` on a classifier
        explains its predicted labels and warns (``XaiWarning``).
    score_function : callable or None, default None
        A callable ``X -> scores`` of shape (n,) or (n, k) used instead of the model's own
        method, e.g. ``IsolationForest(...).fit(X).score_samples``.
    categorical_features : int, str, sequence of them, or None, default None
        Names or indices (in the model's feature order) of numerically coded categorical
        features. A tree model's own categorical features (LightGBM category columns, a
        Pipeline's encoded text columns) are categorical without being named: their grid is each
        category seen in ``X_background`` (not quantiles), their baseline its most frequent
        category, and ``X_background`` / the explained rows may hold their labels (text), which
        the model is given back as labels.
    robust : bool, default False
        Use quantile levels in [0.05, 0.95] instead of [0, 1].
    variant : {"paper", "reference"}, default "paper"
        "paper" (eq. 2 and 3) or "reference" (the authors' released code; see the
        ``xai_plugins.acme`` module docstring for the difference).
    batch_size : int or None, default None
        Rows per predict call in :meth:`explain_local` (default: as many as keep one call under
        65 536 perturbed rows).

    Attributes
    ----------
    background_ : ndarray of shape (N, d)
        The background rows, in the model's feature order.
    feature_names_ : list of str
        The feature names, in column order.
    baseline_ : ndarray of shape (d,)
        The global baseline :math:`x^b`: column means, the mode (the smallest level on ties) for
        categorical features.
    grid_ : Grid
        The perturbation grid of every feature.
    model, n_quantiles, task, robust, variant, batch_size
        The settings (``task`` as inferred).

    Raises
    ------
    InputError
        ``n_quantiles`` < 2, an unknown ``task`` or ``variant``, a bad ``batch_size``, NaN or
        constant columns in ``X_background``.

    Warns
    -----
    XaiWarning
        ``task="regression"`` on a classifier.

    See Also
    --------
    xai_plugins.acme.AcMEGlobal : What :meth:`explain_global` returns.
    xai_plugins.acme.AcMELocal : What :meth:`explain_local` returns.
    xai_plugins.shap.AcMEExplainer : AcME local importances as a ``shap.Explanation``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.acme import AcME
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> acme = AcME(model, X, n_quantiles=5)
    >>> g = acme.explain_global()
    >>> g.values.shape, list(g.importances.columns)
    ((10,), ['importance'])
    >>> acme.explain_local(X.iloc[:3]).values.shape
    (3, 10)
    """

    def __init__(self, model, X_background, n_quantiles: int = 50, task: str | None = None, *,
                 score_function=None, categorical_features=None, robust: bool = False,
                 variant: str = "paper", batch_size: int | None = None):
        _check_settings(n_quantiles, task, variant, batch_size)
        inferred = task is None
        if inferred:
            task = infer_task(model, score_function)
        elif task == "regression" and score_function is None and model is not None and (
                is_classifier(model) or callable(getattr(model, "predict_proba", None))):
            warnings.warn(f"task='regression' on the classifier {type(model).__name__}: AcME explains its "
                          "predicted labels (model.predict), not its class probabilities; leave task=None "
                          "(or pass task='classification') to explain predict_proba per class",
                          XaiWarning, stacklevel=2)
        self.model = model
        self.n_quantiles = int(n_quantiles)
        self.task = task
        self.robust = bool(robust)
        self.variant = variant
        self.batch_size = batch_size
        scorer = Scorer(model, task, score_function, inferred=inferred)   # checks the model first

        model_names = model_feature_names(model)
        n_features = len(model_names) if model_names is not None else getattr(model, "n_features_in_", None)
        if n_features is None:
            n_features = int(np.shape(X_background)[-1]) if np.ndim(X_background) else 0
        # the model's missing= sentinel (XGBoost) is missing, as NaN is: refused like NaN, never a quantile
        self._missing = model_missing_value(model)
        model_categorical, self._labels, self._numeric_labels = _model_categories(model)
        X, self.feature_names_ = model_rows(self._codes(X_background, model_names), model_names,
                                            int(n_features), what="X_background", min_rows=2, missing=self._missing)
        # rows given later are aligned to these names: the model's, else the background's columns
        self._align_names = model_names if model_names is not None else (
            list(self.feature_names_) if hasattr(X_background, "columns") else None)
        # a DataFrame for models fitted with feature names, or for non-sklearn models given a DataFrame
        use_frame = model_names is not None or (hasattr(X_background, "columns")
                                                and getattr(model, "n_features_in_", None) is None)
        scorer.columns = pd.Index(self.feature_names_) if use_frame else None
        scorer.labels = self._labels
        self._scorer = scorer
        self.background_ = X
        categorical = categorical_mask(categorical_features, self.feature_names_)
        if model_categorical is not None and len(model_categorical) == categorical.size:
            categorical |= model_categorical
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if constant.size:
            raise InputError(f"X_background has constant column(s) {[self.feature_names_[j] for j in constant]}: "
                             "their quantiles cannot be perturbed; drop them before explaining")
        self.baseline_ = global_baseline(X, categorical)
        self.grid_ = build_grid(X, self.feature_names_, categorical, self.baseline_, self.n_quantiles,
                                self.robust, variant, self._labels)

    def _codes(self, X, names):
        """``X`` with the model's labelled categorical columns read as their codes (when it has any)."""
        return X if self._labels is None else category_codes(X, names, self._labels, self._numeric_labels)

    def _check_rows(self, X_rows) -> np.ndarray:
        """``X_rows`` (a DataFrame aligned by column name) as (n, d) rows in the model's feature order;
        categorical features must take levels seen in the background."""
        rows, _ = model_rows(self._codes(X_rows, self._align_names), self._align_names,
                             len(self.feature_names_), what="X_rows", missing=self._missing)
        for j in np.flatnonzero(self.grid_.categorical):
            seg = self.grid_.segment(j)
            unknown = ~np.isin(rows[:, j], self.grid_.values[seg])
            if unknown.any():
                i = int(np.flatnonzero(unknown)[0])
                level = self.grid_.display(rows[i:i + 1, j], j)[0]
                raise InputError(f"row {i} has level {level!r} of categorical feature {self.feature_names_[j]!r}, "
                                 f"unseen in X_background (levels {self.grid_.display_values[seg].tolist()}): "
                                 "explain rows whose categories the background holds")
        return rows

    def explain_global(self) -> AcMEGlobal:
        """Global importances around the mean/mode baseline, from a single model call on R + 1 rows."""
        pred = self._scorer(self.grid_.perturb(self.baseline_[None, :]))
        base, grid_pred = pred[:1], pred[1:][None]
        effects, importances = segment_effects(grid_pred, base, self.grid_.offsets, self.variant)
        k = pred.shape[1]
        squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
        return AcMEGlobal(grid=self.grid_, output_names=self._scorer.output_names(k), variant=self.variant,
                          baseline=self.baseline_.copy(), baseline_prediction=squeeze(base[0]),
                          predictions=squeeze(grid_pred[0]), effects=squeeze(effects[0]),
                          values=squeeze(importances[0]))

    def explain_local(self, X_rows) -> AcMELocal:
        """What-if predictions and local importances of each row, one model call per batch of rows.

        A row engine's ``X_rows`` (a dask array / DataFrame...) gives a lazy AcMELocal whose
        ``.compute()`` is bitwise this explanation of the same rows, each block explained on a
        worker by the row method ``ACME_LOCAL`` (this AcME object, with its model, is shipped once)."""
        return run(ACME_LOCAL, engine_for(X_rows), self, X_rows)

    def _explain_rows(self, rows: np.ndarray) -> dict:
        """The per-row arrays of :meth:`explain_local` of checked ``rows``."""
        g = self.grid_
        R, n = g.values.size, rows.shape[0]
        batch = self.batch_size or max(1, _ROWS_PER_CALL // (R + 1))
        row_pred, grid_pred = [], []
        for start in range(0, n, batch):
            block = rows[start:start + batch]
            pred = self._scorer(g.perturb(block))
            row_pred.append(pred[:block.shape[0]])
            grid_pred.append(pred[block.shape[0]:].reshape(block.shape[0], R, -1))
        row_pred, grid_pred = np.concatenate(row_pred), np.concatenate(grid_pred)
        effects, importances = local_effects(g, row_pred, grid_pred, self.variant)
        k = row_pred.shape[1]
        squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
        return dict(X=rows, row_levels=g.row_levels(rows, self.background_), row_predictions=squeeze(row_pred),
                    predictions=squeeze(grid_pred), effects=squeeze(effects), values=squeeze(importances))


def _model_categories(model) -> tuple[np.ndarray | None, list | None, bool]:
    """The categorical features (bool per feature), category labels (per feature, or None) and whether the
    model looks numbers up in its labels (:attr:`~xai_plugins.Forest.numeric_labels`) of a tree model this
    package imports; (None, None, False) for any other model."""
    if model is None or (library_of(model) is None and not isinstance(model, Forest)):
        return None, None, False
    try:
        forest = import_model(model)
    except XaiError:
        return None, None, False
    return ((forest.categorical if forest.n_categories is not None else None), forest.category_labels,
            forest.numeric_labels)


def _prepare_local(engine, acme, X) -> Plan:
    """The rows, read and checked (category labels as codes, NaN, unseen levels) where they are read: here,
    when the engine hands them to this reading (in memory), else in their blocks."""
    d = len(acme.feature_names_)
    read_here = []

    def read(r):
        read_here.append(True)
        return acme._check_rows(r), list(acme.feature_names_)

    rows, _ = engine.rows(X, acme._align_names, d, read, "X_rows")
    return Plan(rows, functools.partial(_local_outputs, acme), shipped=acme, ship="object",
                shared=dict(read=not read_here))


def _local_outputs(acme) -> tuple:
    """The outputs' shapes: the number of model outputs read from one model call (the global baseline row)."""
    d, R = len(acme.feature_names_), acme.grid_.values.size
    k = acme._scorer(acme.baseline_[None, :]).shape[1]
    per = (k,) if k > 1 else ()          # the per-output axis dropped for one output, as in memory
    return (Output("X", (d,)), Output("row_levels", (d,)), Output("row_predictions", per),
            Output("predictions", (R, *per)), Output("effects", (R, *per)), Output("values", (d, *per)))


def _local_block(acme, start, X, *, read) -> dict:
    """:meth:`AcME.explain_local` of a block of rows (``read``: rows as the engine holds them, read and
    checked here), as named per-row arrays."""
    return acme._explain_rows(acme._check_rows(X) if read else X)


def _local_finish(plan: Plan, cols: dict, engine) -> AcMELocal:
    acme, rp = plan.shipped, cols["row_predictions"]
    k = 1 if len(rp.shape) == 1 else rp.shape[1]
    return engine.result(AcMELocal, grid=acme.grid_, output_names=acme._scorer.output_names(k), variant=acme.variant,
                         **cols)


#: AcME's local explanation as a row method
ACME_LOCAL = RowMethod("acme", _prepare_local, _local_block, _local_finish)


def _check_settings(n_quantiles, task, variant, batch_size) -> None:
    """Clear errors for unusable AcME settings."""
    if not isinstance(n_quantiles, numbers.Integral) or isinstance(n_quantiles, bool) or n_quantiles < 2:
        raise InputError(f"n_quantiles must be an integer >= 2; got {n_quantiles!r}")
    if task is not None and task not in TASKS:
        raise InputError(f"task must be None (inferred from the model) or one of {TASKS}; got {task!r}")
    if variant not in _VARIANTS:
        raise InputError(f"variant must be one of {_VARIANTS}; got {variant!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)
                                   or batch_size < 1):
        raise InputError(f"batch_size must be a positive integer or None; got {batch_size!r}")
