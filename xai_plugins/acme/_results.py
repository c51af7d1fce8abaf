r"""AcME explanations (global and local) and their plots."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import resolve_output
from ..errors import InputError, InputIndexError
from ._grid import Grid

__all__: list[str] = []      # internal module: the public names are in the API reference


def _importance_frame(names, values, output_names) -> pd.DataFrame:
    """Importances (d,) or (d, k) as a DataFrame sorted by their total, one column per output."""
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
    """One row of points per feature (most important on top), coloured by quantile level; the points
    of a labelled categorical feature carry their category's label."""
    import matplotlib.pyplot as plt

    order = np.argsort(importance, kind="stable")
    position = np.empty(order.size)
    position[order] = np.arange(order.size)
    points = ax.scatter(x, position[grid.feature], c=grid.levels, cmap="coolwarm", vmin=0.0, vmax=1.0,
                        s=18, zorder=2)
    if grid.labels is not None:
        for j in np.flatnonzero(grid.categorical):
            seg = grid.segment(j)
            if grid.labels[j] is None:
                continue
            for k, label in enumerate(grid.display_values[seg]):     # alternate above / below: labels overlap less
                ax.annotate(str(label), (x[seg][k], position[j]), xytext=(0, 7 if k % 2 == 0 else -12),
                            textcoords="offset points", ha="center", fontsize=7, zorder=4)
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
class _Explanation:
    """What AcME's global and local explanations share: the ``grid``, the names of the outputs
    (None for a single-output model, whose arrays then lack their last axis), the ``variant``.
    Subclasses add ``values``, the importances, with the outputs on the last axis."""

    grid: Grid
    output_names: list | None
    variant: str

    @property
    def feature_names(self) -> list:
        """Feature names, in column order."""
        return self.grid.feature_names

    @property
    def total(self) -> np.ndarray:
        """Importances summed over outputs (no output axis)."""
        return self.values if self.output_names is None else self.values.sum(axis=-1)

    def _plot_kind(self, kind, output, detailed: str):
        """``kind`` checked: the ``detailed`` plot by default for a single output or a chosen
        ``output``, else "bar"."""
        kind = kind or (detailed if self.output_names is None or output is not None else "bar")
        if kind not in ("bar", detailed):
            raise InputError(f"kind must be {detailed!r} or 'bar'; got {kind!r}")
        return kind

    def _output(self, output):
        """(index of ``output`` or None for a single-output model, the title suffix naming its class)."""
        c = resolve_output(self.output_names, output)
        return c, ("" if c is None else f" (class {self.output_names[c]})")


@dataclass(frozen=True)
class AcMEGlobal(_Explanation):
    r"""Global AcME explanation (paper §4.1, §4.3), as returned by ``AcME.explain_global``.

    Arrays have ``d`` features, ``R`` grid points in all, ``k`` outputs; the last axis is absent
    for a single-output model. The importance of feature j is the mean absolute standardized
    effect over its :math:`Q_j` grid points, :math:`I_j = \frac{1}{Q_j} \sum_q |\Delta_{j,q}|`.

    Parameters
    ----------
    grid : Grid
        The perturbation grid (the flat layout of ``predictions`` and ``effects``).
    output_names : list or None
        Names of the k outputs (class labels); None for a single-output model.
    variant : {"paper", "reference"}
        The AcME variant that computed it.
    baseline : ndarray of shape (d,)
        :math:`x^b`.
    baseline_prediction : float or ndarray of shape (k,)
        :math:`f(x^b)`.
    predictions : ndarray of shape (R,) or (R, k)
        :math:`f(z_{j,q})` on the flat ``grid``.
    effects : ndarray of shape (R,) or (R, k)
        Standardized effects :math:`\Delta_{j,q}`.
    values : ndarray of shape (d,) or (d, k)
        Importances :math:`I_j` (per class for classification).

    Attributes
    ----------
    values : ndarray of shape (d,) or (d, k)
        Importances :math:`I_j` (per class for classification).
    importances : pandas.DataFrame
        Importances sorted in decreasing order: column ``importance`` (the total), plus one per
        class.
    total, feature_names
        ``total`` (d,): ``values`` summed over outputs; ``feature_names``: the feature names, in
        column order.
    baseline, baseline_prediction, predictions, effects, grid, output_names, variant
        As given.

    See Also
    --------
    xai_plugins.acme.AcME : Computes it.
    xai_plugins.acme.AcMELocal : The local explanation.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.acme import AcME
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> g = AcME(model, X, n_quantiles=5).explain_global()
    >>> g.values.shape, g.effects.shape, g.predictions.shape      # d = 10 features, R = 50 points
    ((10,), (50,), (50,))
    >>> g.quantile_table().columns.tolist()
    ['feature', 'level', 'value', 'prediction', 'effect']
    >>> g.variable_quantile_matrix("bmi").shape                  # Z_j: the baseline, bmi on its grid
    (5, 10)
    """

    baseline: np.ndarray
    baseline_prediction: np.ndarray
    predictions: np.ndarray
    effects: np.ndarray
    values: np.ndarray

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
                              "level": self.grid.levels, "value": self.grid.display_values})
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
        kind = self._plot_kind(kind, output, "summary")
        ax = _new_ax(ax, len(self.feature_names))
        if kind == "bar":
            return _bar(ax, self.feature_names, self.values, self.output_names, "AcME global importance")
        c, suffix = self._output(output)
        effects = self.effects if c is None else self.effects[:, c]
        values = self.values if c is None else self.values[:, c]
        return _strip(ax, self.grid, effects, values, None, 0.0, "standardized effect", "AcME global" + suffix)


@dataclass(frozen=True)
class AcMELocal(_Explanation):
    r"""Local AcME explanations of ``n`` rows (paper §4.2): what-if predictions per grid point.

    As returned by ``AcME.explain_local``. Arrays have ``n`` rows, ``d`` features, ``R`` grid
    points, ``k`` outputs; the last axis is absent for a single-output model.

    Parameters
    ----------
    grid : Grid
        The perturbation grid (the flat layout of ``predictions`` and ``effects``).
    output_names : list or None
        Names of the k outputs (class labels); None for a single-output model.
    variant : {"paper", "reference"}
        The AcME variant that computed it.
    X : ndarray of shape (n, d)
        The rows.
    row_levels : ndarray of shape (n, d)
        Quantile level of each row's own value.
    row_predictions : ndarray of shape (n,) or (n, k)
        :math:`f(x)`.
    predictions : ndarray of shape (n, R) or (n, R, k)
        :math:`f` of the row with feature ``j`` set to each grid value of ``grid``.
    effects : ndarray of shape (n, R) or (n, R, k)
        Standardized effects (``"paper"``) or :math:`f(z) - f(x)` (``"reference"``).
    values : ndarray of shape (n, d) or (n, d, k)
        Local importances (``variant="paper"``: mean :math:`|\Delta_{j,q}|` with :math:`x^b` =
        the row; ``"reference"``: mean :math:`|f(z) - f(x)|`).

    Attributes
    ----------
    values : ndarray of shape (n, d) or (n, d, k)
        Local importances.
    importances : pandas.DataFrame
        Total local importances, one row per explained row, one column per feature.
    total, feature_names
        ``total`` (n, d): ``values`` summed over outputs; ``feature_names``: the feature names, in
        column order.
    X, row_levels, row_predictions, predictions, effects, grid, output_names, variant
        As given.

    See Also
    --------
    xai_plugins.acme.AcME : Computes it.
    xai_plugins.acme.AcMEGlobal : The global explanation.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.acme import AcME
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> local = AcME(model, X, n_quantiles=5).explain_local(X.iloc[:3])
    >>> local.values.shape, local.predictions.shape, local.importances.shape
    ((3, 10), (3, 50), (3, 10))
    >>> local.what_if(row=0, feature="bmi").columns.tolist()      # the row, bmi on its grid
    ['feature', 'level', 'value', 'prediction']
    """

    X: np.ndarray
    row_levels: np.ndarray
    row_predictions: np.ndarray
    predictions: np.ndarray
    effects: np.ndarray
    values: np.ndarray

    @property
    def importances(self) -> pd.DataFrame:
        """Total local importances as a DataFrame, one row per explained row, one column per feature."""
        return pd.DataFrame(self.total, columns=self.feature_names)

    def what_if(self, row: int = 0, feature=None) -> pd.DataFrame:
        """Grid table of one row: feature, level, value, prediction(s); one feature when given."""
        table = pd.DataFrame({"feature": np.array(self.feature_names, dtype=object)[self.grid.feature],
                              "level": self.grid.levels, "value": self.grid.display_values})
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
        kind = self._plot_kind(kind, output, "whatif")
        ax = _new_ax(ax, len(self.feature_names))
        if kind == "bar":
            return _bar(ax, self.feature_names, self.values[row], self.output_names,
                        f"AcME local importance, row {row}")
        c, suffix = self._output(output)
        take = (lambda a: a) if c is None else (lambda a: a[..., c])
        fx = float(take(self.row_predictions[row]))
        title = f"AcME what-if, row {row}" + suffix
        return _strip(ax, self.grid, take(self.predictions[row]), take(self.values[row]),
                      (np.full(self.X.shape[1], fx), self.row_levels[row]), fx, "prediction", title)
