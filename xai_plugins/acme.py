r"""AcME: accelerated model-agnostic explanations (Dandolo et al., §4.1–4.3).

Global and local feature importances from quantile perturbations of a baseline point, plus the
paper's what-if plots. Every perturbed row goes to the model in **one** call (global) or one call
per batch of rows (local).

The method
----------
For a baseline :math:`x^b` (the column means, the mode for categorical features, for the global
explanation; the row itself for a local one) and each feature :math:`j`, the variable-quantile
matrix :math:`Z_j` is :math:`x^b` repeated with feature :math:`j` replaced by the quantiles
:math:`x_{j,q}` of its empirical distribution, :math:`q \in \{0, 1/(Q-1), \dots, 1\}`
(``robust=True``: :math:`q` evenly spaced in [0.05, 0.95]; a categorical feature takes each of its
distinct levels instead). With :math:`\hat y_{j,q} = f(z_{j,q})` (paper eq. 2 and 3):

.. math::

    \Delta_{j,q} = \frac{\hat y_{j,q} - f(x^b)}{\sqrt{\operatorname{var}(\hat y_j)}}
                   \,(\max \hat y_j - \min \hat y_j), \qquad
    I_j = \frac{1}{Q_j} \sum_q |\Delta_{j,q}|,

with the population variance over the :math:`Q_j` grid points and :math:`\Delta_{j,q} = 0` when
the prediction curve of feature :math:`j` is constant. For classification the same is done on
each column of ``predict_proba`` (one importance per class; the total is their sum); any numeric
score works through ``score_function``.

``variant="paper"`` (default) versus ``variant="reference"``
------------------------------------------------------------
The authors' released code (github.com/dandolodavid/ACME, ``ACME_function.py``) differs from the
paper in three ways; ``variant="reference"`` reproduces it:

1. grid: ``linspace(lo, hi, Q-1)`` (``[lo, hi]`` when ``Q == 2``) **plus** the baseline's own
   quantile level ``percentileofscore(x_j, x^b_j) / 100`` (scipy's default ``kind="rank"``), so a
   numeric feature has :math:`Q` points (3 when :math:`Q = 2`), one of them off the even spacing;
2. global effects are centred on their own mean and the variance is padded:
   :math:`\Delta_{j,q} = (e_{j,q} - \bar e_j) / \sqrt{\operatorname{var}(e_j) + 10^{-4}}
   \,(\max \hat y_j - \min \hat y_j)` with :math:`e_{j,q} = \hat y_{j,q} - f(x^b)`;
3. local importances are not standardized: for a row :math:`x`, the grid of the global fit plus
   the row's own value (numeric features only, which predicts :math:`f(x)` itself) and
   :math:`I_j(x) = \operatorname{mean}_{z} |f(z) - f(x)|` over those points.

Worked example (``tests/test_acme.py`` checks these numbers): one feature with background values
0, 1, 2, 3, 4, model :math:`f(x) = x^2`, :math:`Q = 3`, baseline the mean 2, :math:`f(x^b) = 4`.
Paper: levels 0, 1/2, 1, grid 0, 2, 4, :math:`\hat y = (0, 4, 16)`, :math:`e = (-4, 0, 12)`,
:math:`\operatorname{sd}(\hat y) = \sqrt{416/9} = 6.799`, range 16, so
:math:`\Delta = (-9.41, 0, 28.24)` and :math:`I = 12.55`; the baseline point has effect 0.
Reference: levels 0, 1 plus the baseline's own level ``percentileofscore([0..4], 2) = 60`` %, grid
0, 2.4, 4, :math:`\hat y = (0, 5.76, 16)`, :math:`e = (-4, 1.76, 12)` centred on
:math:`\bar e = 3.25`, :math:`\operatorname{sd}(e) = 6.617`, so
:math:`\Delta = (-17.54, -3.61, 21.15)` and :math:`I = 14.10`: the baseline point no longer sits
at 0, and because of the :math:`10^{-4}` padding the importances of :math:`2f` are
:math:`2.0000017\,I`, not exactly :math:`2I`.

Categorical features must be numerically coded (as the model sees them); their baseline is the
mode (the smallest level on ties) and their grid is their distinct levels, labelled with evenly
spaced levels in [0, 1] for the colour scale.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._validation import (check_is_fitted, feature_index, is_dask, model_feature_names, model_rows,
                          resolve_output)
from .errors import InputError, InputIndexError, InputTypeError, UnsupportedModelError, XaiWarning

__all__ = ["AcME", "AcMEGlobal", "AcMELocal", "Grid"]

_VARIANTS = ("paper", "reference")
_TASKS = ("regression", "classification")
_REFERENCE_VAR_PAD = 1e-4       # the released code's sqrt(var + 1e-4)
_ROWS_PER_CALL = 1 << 16        # default cap on perturbed rows per local predict call


@dataclass(frozen=True)
class Grid:
    """The perturbation grid of every feature, stored flat (CSR style).

    Feature ``j`` owns the grid points ``offsets[j]:offsets[j + 1]`` (``R = offsets[-1]`` in all):
    ``values`` (R,) are the values substituted for feature ``j``, ``levels`` (R,) their quantile
    levels in [0, 1], ``feature`` (R,) the owning feature of each point, ``categorical`` (d,) which
    features use their distinct levels.
    """

    feature_names: list
    categorical: np.ndarray
    offsets: np.ndarray
    values: np.ndarray
    levels: np.ndarray

    @property
    def feature(self) -> np.ndarray:
        """Owning feature index of each grid point, shape (R,)."""
        return np.repeat(np.arange(len(self.feature_names)), np.diff(self.offsets))

    @property
    def sizes(self) -> np.ndarray:
        """Number of grid points per feature, shape (d,)."""
        return np.diff(self.offsets)

    def index(self, feature) -> int:
        """Column index (in the model's feature order) of a feature given by name or position."""
        return feature_index(feature, self.feature_names, len(self.feature_names))

    def segment(self, feature) -> slice:
        """Slice of the flat grid arrays that belongs to ``feature`` (name or index)."""
        j = self.index(feature)
        return slice(int(self.offsets[j]), int(self.offsets[j + 1]))


def _is_classifier(model) -> bool:
    """scikit-learn's ``is_classifier`` (False for objects that are no estimators)."""
    from sklearn.base import is_classifier

    try:
        return bool(is_classifier(model))
    except Exception:  # noqa: BLE001 - sklearn >= 1.6 raises on objects without __sklearn_tags__
        return False


def _infer_task(model, score_function) -> str:
    """"classification" for a classifier, or (without a score_function) a model with ``predict_proba``."""
    if model is None:
        return "regression"
    if _is_classifier(model):
        return "classification"
    if score_function is None and callable(getattr(model, "predict_proba", None)):
        return "classification"
    return "regression"


def _segment_effects(pred, base, offsets, variant):
    """Standardized effects and importances per grid segment.

    ``pred`` (m, R, k) predictions on the grid, ``base`` (m, k) predictions at the baselines.
    Returns ``effects`` (m, R, k) and ``importances`` (m, d, k) = segment means of ``|effects|``.
    """
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    mean = np.add.reduceat(pred, starts, axis=1) / sizes[:, None]
    dev = pred - np.repeat(mean, sizes, axis=1)
    var = np.add.reduceat(dev * dev, starts, axis=1) / sizes[:, None]
    spread = np.maximum.reduceat(pred, starts, axis=1) - np.minimum.reduceat(pred, starts, axis=1)
    if variant == "paper":
        numerator = pred - base[:, None, :]
        sd = np.sqrt(var)
        scale = np.divide(spread, sd, out=np.zeros_like(sd), where=(sd > 0) & (spread > 0))
    else:
        numerator = dev
        scale = spread / np.sqrt(var + _REFERENCE_VAR_PAD)
    effects = numerator * np.repeat(scale, sizes, axis=1)
    importances = np.add.reduceat(np.abs(effects), starts, axis=1) / sizes[:, None]
    return effects, importances


class AcME:
    """Accelerated model-agnostic explanations (AcME) of a fitted model.

    Parameters
    ----------
    model : fitted estimator with ``predict`` (regression) or ``predict_proba`` (classification);
        may be None when ``score_function`` is given.
    X_background : (N, d) array or DataFrame, numeric, no NaN: the data whose quantiles (and mean
        or mode) define the perturbations. A DataFrame's columns are aligned by name to the
        model's feature names (:func:`~xai_plugins._validation.model_rows`); so are the rows
        given to :meth:`explain_local`.
    n_quantiles : Q >= 2, grid points per numeric feature.
    task : None (default: inferred from the model), "regression" (``model.predict``) or
        "classification" (``model.predict_proba``, one importance per class, outputs named by
        ``model.classes_``). Inferred as "classification" for a scikit-learn classifier
        (``sklearn.base.is_classifier``) or, without ``score_function``, any model with a callable
        ``predict_proba``; "regression" otherwise. ``task="regression"`` on a classifier explains
        its predicted labels and warns (:class:`~xai_plugins.errors.XaiWarning`).
    score_function : optional callable ``X -> scores`` of shape (n,) or (n, k) used instead of the
        model's own method, e.g. ``IsolationForest(...).fit(X).score_samples``.
    categorical_features : names or indices (in the model's feature order) of numerically coded
        categorical features.
    robust : use quantile levels in [0.05, 0.95] instead of [0, 1].
    variant : "paper" (eq. 2 and 3, the default) or "reference" (the authors' released code; see
        the module docstring for the difference).
    batch_size : rows per predict call in :meth:`explain_local` (default: as many as keep one call
        under 65 536 perturbed rows).
    """

    def __init__(self, model, X_background, n_quantiles: int = 50, task: str | None = None, *,
                 score_function=None, categorical_features=None, robust: bool = False,
                 variant: str = "paper", batch_size: int | None = None):
        if not isinstance(n_quantiles, numbers.Integral) or isinstance(n_quantiles, bool) or n_quantiles < 2:
            raise InputError(f"n_quantiles must be an integer >= 2; got {n_quantiles!r}")
        if task is not None and task not in _TASKS:
            raise InputError(f"task must be None (inferred from the model) or one of {_TASKS}; got {task!r}")
        if variant not in _VARIANTS:
            raise InputError(f"variant must be one of {_VARIANTS}; got {variant!r}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)
                                       or batch_size < 1):
            raise InputError(f"batch_size must be a positive integer or None; got {batch_size!r}")
        inferred = task is None
        if inferred:
            task = _infer_task(model, score_function)
        elif task == "regression" and score_function is None and model is not None and (
                _is_classifier(model) or callable(getattr(model, "predict_proba", None))):
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
        self._predict_fn = self._resolve_predict(model, task, score_function, inferred)

        model_names = model_feature_names(model)
        n_features = len(model_names) if model_names is not None else getattr(model, "n_features_in_", None)
        if n_features is None:
            n_features = int(np.shape(X_background)[-1]) if np.ndim(X_background) else 0
        X, self.feature_names_ = model_rows(X_background, model_names, int(n_features), what="X_background",
                                            min_rows=2)
        # rows given later are aligned to these names: the model's, else the background's columns
        self._align_names = model_names if model_names is not None else (
            list(self.feature_names_) if hasattr(X_background, "columns") else None)
        # a DataFrame for models fitted with feature names, or for non-sklearn models given a DataFrame
        use_frame = model_names is not None or (hasattr(X_background, "columns")
                                                and getattr(model, "n_features_in_", None) is None)
        self._columns = pd.Index(self.feature_names_) if use_frame else None
        self.background_ = X
        categorical = self._categorical_mask(categorical_features)
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if constant.size:
            raise InputError(f"X_background has constant column(s) {[self.feature_names_[j] for j in constant]}: "
                             "their quantiles cannot be perturbed; drop them before explaining")
        self.baseline_ = self._global_baseline(X, categorical)
        self.grid_ = self._build_grid(X, categorical)

    # ----------------------------------------------------------------- set-up helpers
    @staticmethod
    def _resolve_predict(model, task, score_function, inferred=False):
        if score_function is not None:
            if not callable(score_function):
                raise InputTypeError("score_function must be callable: X -> scores of shape (n,) or (n, k)")
            return score_function
        if model is None:
            raise InputTypeError("model is None; pass a fitted model or a score_function")
        method = "predict_proba" if task == "classification" else "predict"
        if not callable(getattr(model, method, None)):
            hint = ("; pass score_function=model.decision_function (or another score), or task='regression' "
                    "to explain the predicted labels" if method == "predict_proba" else
                    "; pass score_function=... for any other score")
            raise UnsupportedModelError(
                f"task={task!r}{' (inferred: the model is a classifier)' if inferred else ''} needs "
                f"model.{method}(), which {type(model).__name__} does not have{hint}")
        check_is_fitted(model)
        return getattr(model, method)

    def _categorical_mask(self, categorical_features) -> np.ndarray:
        mask = np.zeros(len(self.feature_names_), dtype=bool)
        if isinstance(categorical_features, (str, numbers.Integral)):
            categorical_features = [categorical_features]
        for feature in categorical_features if categorical_features is not None else ():
            mask[feature_index(feature, self.feature_names_, mask.size)] = True
        return mask

    @staticmethod
    def _global_baseline(X, categorical) -> np.ndarray:
        """Column means; the mode (smallest level on ties) for categorical columns."""
        baseline = X.mean(axis=0)
        for j in np.flatnonzero(categorical):
            levels, counts = np.unique(X[:, j], return_counts=True)
            baseline[j] = levels[np.argmax(counts)]
        return baseline

    def _build_grid(self, X, categorical) -> Grid:
        lo, hi = (0.05, 0.95) if self.robust else (0.0, 1.0)
        if self.variant == "paper":
            shared_levels = np.linspace(lo, hi, self.n_quantiles)
        else:
            shared_levels = np.linspace(lo, hi, max(self.n_quantiles - 1, 2))
        numeric = np.flatnonzero(~categorical)
        shared_values = np.quantile(X[:, numeric], shared_levels, axis=0)     # (Q, numeric) in one call
        values, levels = [None] * X.shape[1], [None] * X.shape[1]
        for i, j in enumerate(numeric):
            v, q = shared_values[:, i], shared_levels
            if self.variant == "reference":        # the baseline's own level joins the grid
                own = stats.percentileofscore(X[:, j], self.baseline_[j]) / 100.0
                at = np.searchsorted(q, own)
                q, v = np.insert(q, at, own), np.insert(v, at, np.quantile(X[:, j], own))
            values[j], levels[j] = v, q
        for j in np.flatnonzero(categorical):
            values[j] = np.unique(X[:, j])
            levels[j] = np.linspace(0.0, 1.0, values[j].size)
        sizes = [v.size for v in values]
        return Grid(feature_names=list(self.feature_names_), categorical=categorical,
                    offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp),
                    values=np.concatenate(values), levels=np.concatenate(levels))

    # ----------------------------------------------------------------- model calls
    def _predict(self, Z) -> np.ndarray:
        """One call of the model's scoring function on ``Z``: an (m, k) float64 array."""
        out = np.asarray(self._predict_fn(Z if self._columns is None else pd.DataFrame(Z, columns=self._columns)),
                         dtype=np.float64)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != Z.shape[0]:
            raise InputError(f"the model returned shape {out.shape} for {Z.shape[0]} rows; "
                             "expected (n,) or (n, k)")
        if not np.isfinite(out).all():
            raise InputError("the model returned non-finite predictions on the perturbed rows")
        return out

    def _output_names(self, k: int):
        if k == 1:
            return None
        classes = getattr(self.model, "classes_", None)
        if self.task == "classification" and classes is not None and len(classes) == k:
            return [str(c) for c in classes]
        return [f"output{i}" for i in range(k)]

    def _perturb(self, rows) -> np.ndarray:
        """Stack ``rows`` (b, d) then, for each row, its grid perturbations: ((1 + R) b, d)."""
        g = self.grid_
        b, R = rows.shape[0], g.values.size
        Z = np.repeat(rows, R, axis=0)
        Z[np.arange(b * R), np.tile(g.feature, b)] = np.tile(g.values, b)
        return np.concatenate([rows, Z])

    def _check_rows(self, X_rows) -> np.ndarray:
        """``X_rows`` (a DataFrame aligned by column name) as (n, d) rows in the model's feature order;
        categorical features must take levels seen in the background."""
        rows, _ = model_rows(X_rows, self._align_names, len(self.feature_names_), what="X_rows")
        for j in np.flatnonzero(self.grid_.categorical):
            known = self.grid_.values[self.grid_.segment(j)]
            unknown = ~np.isin(rows[:, j], known)
            if unknown.any():
                i = int(np.flatnonzero(unknown)[0])
                raise InputError(f"row {i} has level {rows[i, j]!r} of categorical feature "
                                 f"{self.feature_names_[j]!r}, unseen in X_background (levels {known.tolist()})")
        return rows

    def _levels_of(self, rows) -> np.ndarray:
        """Quantile level of each row's own value per feature, (n, d); categorical: its grid label."""
        g = self.grid_
        levels = np.empty(rows.shape)
        for j in range(rows.shape[1]):
            if g.categorical[j]:
                seg = g.segment(j)
                levels[:, j] = g.levels[seg][np.searchsorted(g.values[seg], rows[:, j])]
            else:
                levels[:, j] = stats.percentileofscore(self.background_[:, j], rows[:, j]) / 100.0
        return levels

    # ----------------------------------------------------------------- explanations
    def explain_global(self) -> "AcMEGlobal":
        """Global importances around the mean/mode baseline, from a single model call on R + 1 rows."""
        pred = self._predict(self._perturb(self.baseline_[None, :]))
        base, grid_pred = pred[:1], pred[1:][None]
        effects, importances = _segment_effects(grid_pred, base, self.grid_.offsets, self.variant)
        k = pred.shape[1]
        squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
        return AcMEGlobal(grid=self.grid_, output_names=self._output_names(k), variant=self.variant,
                          baseline=self.baseline_.copy(), baseline_prediction=squeeze(base[0]),
                          predictions=squeeze(grid_pred[0]), effects=squeeze(effects[0]),
                          values=squeeze(importances[0]))

    def explain_local(self, X_rows) -> "AcMELocal":
        """What-if predictions and local importances of each row, one model call per batch of rows.

        A dask array / DataFrame ``X_rows`` gives a lazy ``DaskAcMELocal`` whose ``.compute()`` is
        bitwise this explanation of the same rows, each block explained on a worker (see
        :func:`xai_plugins.distributed.acme_local`)."""
        if is_dask(X_rows):
            from . import distributed

            return distributed.acme_local(self, X_rows)
        rows = self._check_rows(X_rows)
        g = self.grid_
        R, n = g.values.size, rows.shape[0]
        batch = self.batch_size or max(1, _ROWS_PER_CALL // (R + 1))
        row_pred, grid_pred = [], []
        for start in range(0, n, batch):
            block = rows[start:start + batch]
            pred = self._predict(self._perturb(block))
            row_pred.append(pred[:block.shape[0]])
            grid_pred.append(pred[block.shape[0]:].reshape(block.shape[0], R, -1))
        row_pred, grid_pred = np.concatenate(row_pred), np.concatenate(grid_pred)
        if self.variant == "paper":
            effects, importances = _segment_effects(grid_pred, row_pred, g.offsets, "paper")
        else:
            effects = grid_pred - row_pred[:, None, :]
            # the row's own value (numeric features) is one more grid point, with effect 0
            points = g.sizes + ~g.categorical
            importances = np.add.reduceat(np.abs(effects), g.offsets[:-1], axis=1) / points[:, None]
        k = row_pred.shape[1]
        squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
        return AcMELocal(grid=g, output_names=self._output_names(k), variant=self.variant, X=rows,
                         row_levels=self._levels_of(rows), row_predictions=squeeze(row_pred),
                         predictions=squeeze(grid_pred), effects=squeeze(effects), values=squeeze(importances))


# --------------------------------------------------------------------- results
def _importance_frame(names, values, output_names) -> pd.DataFrame:
    if output_names is None:
        frame = pd.DataFrame({"importance": values}, index=names)
    else:
        frame = pd.DataFrame(values, index=names, columns=output_names)
        frame["importance"] = values.sum(axis=1)
    frame.index.name = "feature"
    return frame.sort_values("importance", ascending=False, kind="stable")


def _bar(ax, names, values, output_names, title):
    """Horizontal bars sorted by importance (largest on top), stacked per output when k > 1."""
    values = values[:, None] if values.ndim == 1 else values
    order = np.argsort(values.sum(axis=1), kind="stable")
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for c in range(values.shape[1]):
        label = None if output_names is None else output_names[c]
        ax.barh(y, values[order, c], left=left, label=label)
        left += values[order, c]
    ax.set_yticks(y, [names[j] for j in order])
    ax.set_xlabel("AcME importance")
    ax.set_title(title)
    if output_names is not None:
        ax.legend(title="class")
    return ax


def _strip(ax, grid, x, importance, marker, reference_x, xlabel, title):
    """One row of points per feature (most important on top), coloured by quantile level."""
    import matplotlib.pyplot as plt

    order = np.argsort(importance, kind="stable")
    position = np.empty(order.size)
    position[order] = np.arange(order.size)
    points = ax.scatter(x, position[grid.feature], c=grid.levels, cmap="coolwarm", vmin=0.0, vmax=1.0,
                        s=18, zorder=2)
    if marker is not None:
        mx, mlevels = marker
        ax.scatter(mx, position, c=mlevels, cmap="coolwarm", vmin=0.0, vmax=1.0, s=90,
                   edgecolors="black", zorder=3, label="the row's own value")
        ax.legend(loc="lower right")
    ax.axvline(reference_x, color="black", linestyle="--", linewidth=1, zorder=1)
    ax.set_yticks(np.arange(order.size), [grid.feature_names[j] for j in order])
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    plt.colorbar(points, ax=ax, label="quantile level")
    return ax


def _new_ax(ax, n_features):
    """``ax``, or the Axes of a new figure sized for ``n_features`` rows."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 0.35 * n_features + 1.5))
    return ax


@dataclass(frozen=True)
class AcMEGlobal:
    """Global AcME explanation (paper §4.1, §4.3).

    Arrays (``d`` features, ``R`` grid points in all, ``k`` outputs; the last axis is absent for a
    single-output model):

    - ``values`` (d,) or (d, k): importances :math:`I_j` (per class for classification);
    - ``total`` (d,): ``values`` summed over outputs;
    - ``baseline`` (d,): :math:`x^b`; ``baseline_prediction`` float or (k,): :math:`f(x^b)`;
    - ``predictions`` (R,) or (R, k): :math:`f(z_{j,q})` on the flat ``grid`` (see :class:`Grid`);
    - ``effects`` (R,) or (R, k): standardized effects :math:`\\Delta_{j,q}`.
    """

    grid: Grid
    output_names: list | None
    variant: str
    baseline: np.ndarray
    baseline_prediction: np.ndarray
    predictions: np.ndarray
    effects: np.ndarray
    values: np.ndarray

    @property
    def feature_names(self) -> list:
        """Feature names, in column order."""
        return self.grid.feature_names

    @property
    def total(self) -> np.ndarray:
        """Importance per feature summed over outputs, shape (d,)."""
        return self.values if self.values.ndim == 1 else self.values.sum(axis=1)

    @property
    def importances(self) -> pd.DataFrame:
        """Importances sorted in decreasing order: column ``importance`` (the total), plus one per class."""
        return _importance_frame(self.feature_names, self.values, self.output_names)

    def variable_quantile_matrix(self, feature) -> pd.DataFrame:
        """:math:`Z_j`: the baseline repeated, feature ``j`` replaced by its grid values, (Q_j, d)."""
        seg = self.grid.segment(feature)
        Z = np.tile(self.baseline, (seg.stop - seg.start, 1))
        Z[:, self.grid.index(feature)] = self.grid.values[seg]
        return pd.DataFrame(Z, columns=self.feature_names, index=pd.Index(self.grid.levels[seg], name="level"))

    def quantile_table(self) -> pd.DataFrame:
        """Long table, one row per grid point: feature, level, value, prediction(s), effect(s)."""
        table = pd.DataFrame({"feature": np.array(self.feature_names, dtype=object)[self.grid.feature],
                              "level": self.grid.levels, "value": self.grid.values})
        for label, arr in (("prediction", self.predictions), ("effect", self.effects)):
            if arr.ndim == 1:
                table[label] = arr
            else:
                for c, name in enumerate(self.output_names):
                    table[f"{label}[{name}]"] = arr[:, c]
        return table

    def plot(self, kind: str | None = None, *, output=None, ax=None):
        """Draw the explanation on ``ax`` (a new figure when None) and return the Axes.

        ``kind="summary"``: the paper's detailed plot (standardized effect per grid point on x,
        features sorted by importance on y, colour = quantile level blue→red, dashed line at the
        baseline prediction); needs ``output`` for a multi-output model. ``kind="bar"``: importances,
        stacked per class. Default: "summary" for a single output or when ``output`` is given,
        else "bar".
        """
        kind = kind or ("summary" if self.output_names is None or output is not None else "bar")
        ax = _new_ax(ax, len(self.feature_names))
        if kind == "bar":
            return _bar(ax, self.feature_names, self.values, self.output_names, "AcME global importance")
        if kind != "summary":
            raise InputError(f"kind must be 'summary' or 'bar'; got {kind!r}")
        c = resolve_output(self.output_names, output)
        effects = self.effects if c is None else self.effects[:, c]
        values = self.values if c is None else self.values[:, c]
        title = "AcME global" + ("" if c is None else f" (class {self.output_names[c]})")
        return _strip(ax, self.grid, effects, values, None, 0.0, "standardized effect", title)


@dataclass(frozen=True)
class AcMELocal:
    """Local AcME explanations of ``n`` rows (paper §4.2): what-if predictions per grid point.

    Arrays (``n`` rows, ``d`` features, ``R`` grid points, ``k`` outputs; the last axis is absent
    for a single-output model):

    - ``values`` (n, d) or (n, d, k): local importances (``variant="paper"``: mean
      :math:`|\\Delta_{j,q}|` with :math:`x^b` = the row; ``"reference"``: mean :math:`|f(z) - f(x)|`);
    - ``total`` (n, d): ``values`` summed over outputs;
    - ``X`` (n, d): the rows; ``row_levels`` (n, d): quantile level of each row's own value;
    - ``row_predictions`` (n,) or (n, k): :math:`f(x)`;
    - ``predictions`` (n, R) or (n, R, k): :math:`f` of the row with feature ``j`` set to each grid
      value of ``grid`` (see :class:`Grid`);
    - ``effects`` (n, R) or (n, R, k): standardized effects (``"paper"``) or
      :math:`f(z) - f(x)` (``"reference"``).
    """

    grid: Grid
    output_names: list | None
    variant: str
    X: np.ndarray
    row_levels: np.ndarray
    row_predictions: np.ndarray
    predictions: np.ndarray
    effects: np.ndarray
    values: np.ndarray

    @property
    def feature_names(self) -> list:
        """Feature names, in column order."""
        return self.grid.feature_names

    @property
    def total(self) -> np.ndarray:
        """Local importance per row and feature summed over outputs, shape (n, d)."""
        return self.values if self.values.ndim == 2 else self.values.sum(axis=2)

    @property
    def importances(self) -> pd.DataFrame:
        """Total local importances as a DataFrame, one row per explained row, one column per feature."""
        return pd.DataFrame(self.total, columns=self.feature_names)

    def what_if(self, row: int = 0, feature=None) -> pd.DataFrame:
        """Grid table of one row: feature, level, value, prediction(s); one feature when given."""
        table = pd.DataFrame({"feature": np.array(self.feature_names, dtype=object)[self.grid.feature],
                              "level": self.grid.levels, "value": self.grid.values})
        pred = self.predictions[row]
        if pred.ndim == 1:
            table["prediction"] = pred
        else:
            for c, name in enumerate(self.output_names):
                table[f"prediction[{name}]"] = pred[:, c]
        return table if feature is None else table.iloc[self.grid.segment(feature)].reset_index(drop=True)

    def plot(self, row: int = 0, kind: str | None = None, *, output=None, ax=None):
        """Draw row ``row`` on ``ax`` (a new figure when None) and return the Axes.

        ``kind="whatif"``: the paper's local plot (actual predictions per grid point on x, features
        sorted by local importance on y, colour = quantile level, a larger marker at the row's own
        value, dashed line at :math:`f(x)`); needs ``output`` for a multi-output model.
        ``kind="bar"``: the row's local importances, stacked per class. Default: "whatif" for a
        single output or when ``output`` is given, else "bar".
        """
        if not 0 <= row < self.X.shape[0]:
            raise InputIndexError(f"row {row} out of range for {self.X.shape[0]} explained rows")
        kind = kind or ("whatif" if self.output_names is None or output is not None else "bar")
        ax = _new_ax(ax, len(self.feature_names))
        if kind == "bar":
            return _bar(ax, self.feature_names, self.values[row], self.output_names,
                        f"AcME local importance, row {row}")
        if kind != "whatif":
            raise InputError(f"kind must be 'whatif' or 'bar'; got {kind!r}")
        c = resolve_output(self.output_names, output)
        take = (lambda a: a) if c is None else (lambda a: a[..., c])
        fx = float(take(self.row_predictions[row]))
        title = f"AcME what-if, row {row}" + ("" if c is None else f" (class {self.output_names[c]})")
        return _strip(ax, self.grid, take(self.predictions[row]), take(self.values[row]),
                      (np.full(self.X.shape[1], fx), self.row_levels[row]), fx, "prediction", title)
