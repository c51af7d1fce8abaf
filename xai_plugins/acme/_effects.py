r"""AcME's standardized effects and importances (paper eq. 2 and 3; the released code's variant).

For the grid predictions :math:`\hat y_{j,q}` of feature :math:`j` and the baseline's prediction
:math:`f(x^b)`: :math:`\Delta_{j,q} = (\hat y_{j,q} - f(x^b)) / \operatorname{sd}(\hat y_j)
\cdot (\max \hat y_j - \min \hat y_j)` and :math:`I_j = \operatorname{mean}_q |\Delta_{j,q}|`.
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []      # internal module: the public names are in the API reference

_REFERENCE_VAR_PAD = 1e-4       # the released code's sqrt(var + 1e-4)


def segment_effects(pred, base, offsets, variant):
    r"""Standardized effects and importances per grid segment.

    ``pred`` (m, R, k) predictions on the grid, ``base`` (m, k) predictions at the baselines.
    Returns ``effects`` (m, R, k) and ``importances`` (m, d, k) = segment means of ``|effects|``.
    ``variant="paper"``: :math:`\Delta` above (0 for a constant segment); ``"reference"``: effects
    centred on their segment mean, over :math:`\sqrt{\operatorname{var} + 10^{-4}}`.
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


def local_effects(grid, row_pred, grid_pred, variant):
    """Effects (n, R, k) and local importances (n, d, k) of rows predicted ``row_pred`` (n, k) whose
    grid perturbations are predicted ``grid_pred`` (n, R, k). ``"paper"``: :func:`segment_effects`
    with the row as baseline; ``"reference"``: :math:`f(z) - f(x)` unstandardized, averaged over the
    grid plus the row's own value (numeric features), whose effect is 0."""
    if variant == "paper":
        return segment_effects(grid_pred, row_pred, grid.offsets, "paper")
    effects = grid_pred - row_pred[:, None, :]
    points = grid.sizes + ~grid.categorical
    return effects, np.add.reduceat(np.abs(effects), grid.offsets[:-1], axis=1) / points[:, None]
