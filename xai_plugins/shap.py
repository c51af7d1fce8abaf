"""Our explainers as ``shap.Explainer`` subclasses returning ``shap.Explanation`` objects.

``shap.plots.bar``, ``beeswarm``, ``heatmap`` and ``scatter`` draw them like shap's own
explanations. None of these scores adds up to the model output, so ``base_values`` is None and
``shap.plots.waterfall`` (which needs additivity) refuses them::

    import shap
    from xai_plugins.shap import PG2Explainer
    explanation = PG2Explainer(model, sigma=0.3, background=X_train)(X_test[:100])
    shap.plots.beeswarm(explanation)          # greedy PG² gains
    explanation.ranking, explanation.pgi2     # per-row greedy order and its exact PGI²

Values have shape (n, d, k) whenever the explained model output has k > 1 columns — class
probabilities of forests (binary included), per-class margins of boosted multi-class models,
``predict_proba`` of any classifier for AcME — and (n, d) for a single output (regression, the one
margin of a boosted binary classifier) and for local MDI, which has no per-class value. Slice one
class for plots (``explanation[..., 1]``). Feature columns are always in the model's feature
order; a DataFrame in another column order is aligned by name. Attributes set on an Explanation
(``ranking``, ``pgi2``) are not carried through shap's slicing: read them on the object the
explainer returned.

A dask array / DataFrame ``X`` is explained block by block on the active dask scheduler (a
``distributed.Client``, threads, ...; see :mod:`xai_plugins.distributed`) and the Explanation is
returned **computed**, with numpy ``values``/``data`` (bitwise the in-memory explanation of the
same rows): ``shap.Explanation`` and its plots need in-memory arrays, so a lazy one would be
computed by the first plot anyway. For results that stay lazy, call ``xp.greedy_pg2_ranking``,
``xp.local_mdi`` or ``AcME.explain_local`` on the dask data directly.
"""

from __future__ import annotations

import time
from functools import partial

import shap as _shap

from .attributions import acme_attribution, background_data, local_mdi_attribution, pg2_attribution
from .forest import import_model
from .mdi import require_impurities


class _AttributionExplainer(_shap.Explainer):
    """Common ``__call__``: ``attribute(X)`` gives an :class:`Attribution`, wrapped as a ``shap.Explanation``."""

    def __init__(self, model, attribute):
        super().__init__(model)
        self._attribute = attribute

    def __call__(self, X) -> _shap.Explanation:
        """Explain the rows of ``X`` (array or DataFrame; a dask one is computed on the active dask
        scheduler, see the module docstring)."""
        start = time.perf_counter()
        result = self._attribute(X)
        explanation = _shap.Explanation(
            values=result.values, base_values=None, data=result.data, feature_names=result.feature_names,
            output_names=result.output_names, compute_time=time.perf_counter() - start)
        for name, value in result.extras.items():
            setattr(explanation, name, value)
        return explanation


class PG2Explainer(_AttributionExplainer):
    """Greedy PG² attributions of a tree ensemble (see :mod:`xai_plugins.attributions`).

    Each value is the growth of the exact squared prediction gap E[(f(x')−f(x))²] when the
    feature joins the row's greedy PG² order; a row's values sum to PG²(x, all features).
    The returned Explanation also has ``.ranking`` (n, d[, k]) — feature indices, most important
    first — and ``.pgi2`` (n[, k]), the exact PGI² of that ranking.

    ``sigma`` is the noise scale (scalar or per feature; in feature standard deviations when
    ``background`` data are given), ``perturbation`` any frozen scipy continuous distribution
    (or one per feature) instead of Gaussian noise.
    """

    def __init__(self, model, sigma=0.3, *, background=None, perturbation=None, n_jobs=None):
        self.forest = import_model(model)  # once per explainer; unsupported or unfitted models fail here
        self.sigma, self.perturbation, self.n_jobs = sigma, perturbation, n_jobs
        self.background = background_data(background)
        super().__init__(model, partial(pg2_attribution, self.forest, sigma=sigma, perturbation=perturbation,
                                        background=self.background, n_jobs=n_jobs))


class LocalMDIExplainer(_AttributionExplainer):
    """Local MDI attributions (n, d) of a scikit-learn tree model: per row, the impurity
    decreases i(t) − i(child followed) along its path, summed per split feature and averaged
    over trees (Sutera et al., Definition 1). Their mean over the training rows is the global MDI.
    """

    def __init__(self, model, *, n_jobs=None):
        self.forest = require_impurities(model)  # models without stored impurities fail here
        self.n_jobs = n_jobs
        super().__init__(model, partial(local_mdi_attribution, self.forest, n_jobs=n_jobs))


class AcMEExplainer(_AttributionExplainer):
    """AcME local importances of any model (n, d), or (n, d, k) per class for classification.

    ``task=None`` infers it from the model: a classifier (or a model with ``predict_proba``) is
    explained per class probability, output names = its ``classes_`` (so ``explanation[..., 1]``
    is class 1, binary models included); anything else through ``predict``.
    ``X_background`` (data, or a shap masker holding data) defines the quantile grid; the other
    keyword arguments go to :class:`~xai_plugins.acme.AcME`. The fitted AcME object is ``.acme``
    (its ``explain_global()`` and what-if plots stay available).
    """

    def __init__(self, model, X_background, n_quantiles: int = 50, task: str | None = None, **acme_options):
        from .acme import AcME

        self.acme = AcME(model, background_data(X_background), n_quantiles=n_quantiles, task=task, **acme_options)
        super().__init__(model, partial(acme_attribution, self.acme))
