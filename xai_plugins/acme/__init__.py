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

Modules: ``._grid`` (baselines and the perturbation grid), ``._effects`` (standardized
effects and importances), ``._scoring`` (the model's scoring function), ``._explainer``
(:class:`AcME`, the estimator shell), ``._results`` (:class:`AcMEGlobal`, :class:`AcMELocal`
and their plots).
"""

from ._explainer import AcME
from ._grid import Grid
from ._results import AcMEGlobal, AcMELocal

__all__ = ["AcME", "AcMEGlobal", "AcMELocal", "Grid"]
