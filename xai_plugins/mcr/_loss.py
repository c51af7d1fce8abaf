"""Losses of RF-MCR and model reliance (eq. 1).

A loss maps the reference rows' targets and predictions (class probabilities (n, C) or values
(n,)) to per-row losses. RF-MCR needs two reductions of it: the summed loss of one tree over some
rows, given the leaves they reach (:meth:`tree_sum`), and the mean loss of forest predictions
(:meth:`forest_mean`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference

#: loss names per task; the first is the default
LOSSES = {"classification": ("zero_one", "log_loss"), "regression": ("squared_error", "absolute_error")}
PROB_FLOOR = 1e-15


def check_loss(loss, task: str):
    """``loss`` itself (the task's default when None) or a clear error for a name the task lacks."""
    loss = LOSSES[task][0] if loss is None else loss
    if not callable(loss) and loss not in LOSSES[task]:
        raise InputError(f"loss {loss!r} is not available for {task}; use one of {LOSSES[task]} or a callable")
    return loss


def model_reliance(delta, base_loss, kind: str):
    """MR from the mean loss increase under permutation and the original loss (arrays or scalars):
    ``delta`` itself (``kind="difference"``, eq. 1) or Fisher's ratio
    ``(base_loss + delta) / base_loss`` (+inf when only ``base_loss`` is 0, 1 when both are)."""
    if kind == "difference":
        return delta
    delta, base_loss = np.asarray(delta, float), np.asarray(base_loss, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(base_loss > 0, (base_loss + delta) / base_loss, np.where(delta > 0, np.inf, 1.0))
    return ratio if ratio.ndim else float(ratio)


class ClassificationLoss:
    """Zero-one, log loss (probabilities floored at ``PROB_FLOOR``) or ``loss(labels, proba)``.

    A tree's loss is read from ``node_table`` (n_nodes, C): the loss of each node's class
    probabilities for each possible label."""

    def __init__(self, loss: str | Callable, node_proba, y_index, classes):
        self.y_index = y_index
        if callable(loss):
            self._rows = lambda label_index, P: np.asarray(loss(classes[label_index], P), float)
        elif loss == "zero_one":
            self._rows = lambda label_index, P: P.argmax(axis=1) != label_index
        else:
            self._rows = lambda label_index, P: -np.log(
                np.clip(P[np.arange(len(label_index)), label_index], PROB_FLOOR, None))
        nodes = len(node_proba)
        self.node_table = np.stack([np.asarray(self._rows(np.full(nodes, c), node_proba), float)
                                    for c in range(node_proba.shape[1])], axis=1)

    def tree_sum(self, leaves, rows=slice(None)) -> float:
        """Summed loss of one tree over ``rows``, which reach the global leaf ids ``leaves``."""
        return float(self.node_table[leaves, self.y_index[rows]].sum())

    def forest_mean(self, P) -> float:
        """Mean loss of the forest probabilities ``P`` (n, C) over all rows (-0.0 read as 0.0)."""
        return float(np.mean(self._rows(self.y_index, P))) + 0.0


class RegressionLoss:
    """Squared error, absolute error or ``loss(y, values)`` of the node values ``node_value``."""

    def __init__(self, loss: str | Callable, node_value, y):
        self.node_value, self.y = node_value, y
        # squared error: one fused sum of products (einsum's own loop: np.dot hands vectors over 10,000
        # rows to OpenBLAS threads, which spin for ~10 ms per call on a busy machine)
        self._dot = isinstance(loss, str) and loss == "squared_error"
        if callable(loss):
            self._rows = lambda y_rows, v: loss(y_rows, v)
        elif loss == "squared_error":
            self._rows = lambda y_rows, v: (v - y_rows) * (v - y_rows)
        else:
            self._rows = lambda y_rows, v: np.abs(v - y_rows)

    def tree_sum(self, leaves, rows=slice(None)) -> float:
        """Summed loss of one tree over ``rows``, which reach the global leaf ids ``leaves``."""
        v, y = np.take(self.node_value, leaves), self.y[rows]
        if self._dot:
            r = v - y
            return float(np.einsum("i,i->", r, r))
        return float(np.sum(self._rows(y, v)))

    def forest_mean(self, P) -> float:
        """Mean loss of the forest predictions ``P`` (n,) over all rows (-0.0 read as 0.0)."""
        return float(np.mean(self._rows(self.y, P))) + 0.0


def make_loss(loss, node_pred, y, y_index=None, classes=None):
    """The loss object of a classifier (``classes`` given; ``node_pred`` class probabilities per
    node, ``y_index`` each row's class index) or of a regressor (``node_pred`` node values)."""
    if classes is not None:
        return ClassificationLoss(loss, node_pred, y_index, classes)
    return RegressionLoss(loss, node_pred, y)
