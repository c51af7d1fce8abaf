r"""AcME's baselines and perturbation grid (paper §4.1; ``variant="reference"``: the released code).

Feature :math:`j` is perturbed to the quantiles :math:`x_{j,q}` of its background distribution
(a categorical feature: to each of its distinct levels); the baseline is the column mean (the mode
for a categorical feature).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._validation import feature_index
from ..forest.layout import category_values

__all__: list[str] = []      # internal module: the public names are in the API reference


@dataclass(frozen=True)
class Grid:
    """The perturbation grid of every feature, stored flat (CSR style).

    Feature ``j`` owns the grid points ``offsets[j]:offsets[j + 1]`` (``R = offsets[-1]`` in all):
    a numeric feature the quantiles of its background distribution, a categorical feature each of
    its distinct levels. Built by :class:`AcME` (``AcME.grid_``).

    Parameters
    ----------
    feature_names : list
        The d feature names, in column order.
    categorical : ndarray of bool of shape (d,)
        Which features use their distinct levels.
    offsets : ndarray of int of shape (d + 1,)
        Feature ``j`` owns the grid points ``offsets[j]:offsets[j + 1]``.
    values : ndarray of shape (R,)
        The values substituted for feature ``j``.
    levels : ndarray of shape (R,)
        Their quantile levels in [0, 1] (evenly spaced levels for a categorical feature's
        distinct levels).
    labels : list or None, default None
        Per feature its category labels (a model's categorical feature: ``values`` are codes,
        position in the labels) or None.

    Attributes
    ----------
    feature : ndarray of int of shape (R,)
        The owning feature of each point.
    sizes : ndarray of int of shape (d,)
        Number of grid points per feature.
    display_values : ndarray of shape (R,)
        ``values`` as the user writes them: a labelled feature's codes as its labels.
    feature_names, categorical, offsets, values, levels, labels
        As given.

    See Also
    --------
    xai_plugins.acme.AcME : Builds it.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.acme import AcME
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> grid = AcME(model, X, n_quantiles=5).grid_
    >>> grid.sizes.tolist()
    [5, 5, 5, 5, 5, 5, 5, 5, 5, 5]
    >>> grid.segment("bmi"), grid.index("bmi")
    (slice(10, 15, None), 2)
    >>> grid.levels[grid.segment("bmi")].tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """

    feature_names: list
    categorical: np.ndarray
    offsets: np.ndarray
    values: np.ndarray
    levels: np.ndarray
    labels: list | None = None

    @property
    def display_values(self) -> np.ndarray:
        """``values`` as the user writes them: a labelled feature's codes as its labels (object array)."""
        if self.labels is None:
            return self.values
        return np.concatenate([self.display(self.values[self.segment(j)], j) for j in range(len(self.feature_names))])

    def display(self, values, feature) -> np.ndarray:
        """``values`` of one feature (name or index) as the user writes them (labels for codes)."""
        j = self.index(feature)
        values = np.asarray(values, dtype=np.float64)
        if self.labels is None or self.labels[j] is None:
            return values
        return category_values(values[:, None], [self.labels[j]])[:, 0]

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

    def perturb(self, rows) -> np.ndarray:
        """Stack ``rows`` (b, d) then, for each row, its grid perturbations :math:`Z_j`: ((1 + R) b, d)."""
        b, R = rows.shape[0], self.values.size
        Z = np.repeat(rows, R, axis=0)
        Z[np.arange(b * R), np.tile(self.feature, b)] = np.tile(self.values, b)
        return np.concatenate([rows, Z])

    def row_levels(self, rows, background) -> np.ndarray:
        """Quantile level of each row's own value per feature within ``background``, (n, d);
        a categorical feature: its level's grid label."""
        levels = np.empty(rows.shape)
        for j in range(rows.shape[1]):
            if self.categorical[j]:
                seg = self.segment(j)
                levels[:, j] = self.levels[seg][np.searchsorted(self.values[seg], rows[:, j])]
            else:
                levels[:, j] = stats.percentileofscore(background[:, j], rows[:, j]) / 100.0
        return levels


def categorical_mask(categorical_features, feature_names) -> np.ndarray:
    """Bool (d,): the features named (or indexed) in ``categorical_features`` (one or a list)."""
    mask = np.zeros(len(feature_names), dtype=bool)
    if isinstance(categorical_features, (str, numbers.Integral)):
        categorical_features = [categorical_features]
    for feature in categorical_features if categorical_features is not None else ():
        mask[feature_index(feature, feature_names, mask.size)] = True
    return mask


def global_baseline(X, categorical) -> np.ndarray:
    """:math:`x^b`: the column means; the mode (smallest level on ties) for categorical columns."""
    baseline = X.mean(axis=0)
    for j in np.flatnonzero(categorical):
        levels, counts = np.unique(X[:, j], return_counts=True)
        baseline[j] = levels[np.argmax(counts)]
    return baseline


def build_grid(X, feature_names, categorical, baseline, n_quantiles: int, robust: bool, variant: str,
               labels: list | None = None) -> Grid:
    """The grid of the background ``X``: ``n_quantiles`` levels evenly spaced in [0, 1] ([0.05, 0.95]
    when ``robust``) per numeric feature (``variant="reference"``: ``max(n_quantiles - 1, 2)``
    levels plus the ``baseline``'s own), the distinct levels of each categorical feature (codes of a
    model's categorical feature, whose ``labels`` the grid keeps)."""
    lo, hi = (0.05, 0.95) if robust else (0.0, 1.0)
    if variant == "paper":
        shared_levels = np.linspace(lo, hi, n_quantiles)
    else:
        shared_levels = np.linspace(lo, hi, max(n_quantiles - 1, 2))
    numeric = np.flatnonzero(~categorical)
    shared_values = np.quantile(X[:, numeric], shared_levels, axis=0)     # (Q, numeric) in one call
    values, levels = [None] * X.shape[1], [None] * X.shape[1]
    for i, j in enumerate(numeric):
        v, q = shared_values[:, i], shared_levels
        if variant == "reference":        # the baseline's own level joins the grid
            own = stats.percentileofscore(X[:, j], baseline[j]) / 100.0
            at = np.searchsorted(q, own)
            q, v = np.insert(q, at, own), np.insert(v, at, np.quantile(X[:, j], own))
        values[j], levels[j] = v, q
    for j in np.flatnonzero(categorical):
        values[j] = np.unique(X[:, j])
        levels[j] = np.linspace(0.0, 1.0, values[j].size)
    sizes = [v.size for v in values]
    return Grid(feature_names=list(feature_names), categorical=categorical,
                offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp),
                values=np.concatenate(values), levels=np.concatenate(levels), labels=labels)
