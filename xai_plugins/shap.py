"""Our explainers as ``shap.Explainer`` subclasses returning ``shap.Explanation`` objects.

``shap.plots.bar``, ``beeswarm``, ``heatmap``, ``scatter`` and ``violin`` draw them like shap's own
explanations; shap writes "SHAP value" on their axes whatever the values are, and
:func:`label_plot` (after plotting with ``show=False``) writes what they are instead ("PG² gain",
"local MDI", "AcME importance"). None of these scores adds up to the model output, so
``base_values`` is a :class:`NotAdditive` marker, kept through shap's slicing, and the additive
plots (``shap.plots.waterfall``, ``force``) raise :class:`~xai_plugins.errors.NotAdditiveError`
saying so::

    import shap
    from xai_plugins.shap import PG2Explainer, label_plot
    explanation = PG2Explainer(model, sigma=0.3, background=X_train)(X_test[:100])
    shap.plots.beeswarm(explanation, show=False); label_plot(explanation)   # greedy PG² gains
    explanation.ranking, explanation.pgi2     # per-row greedy order and its exact PGI²

Values have shape (n, d, k) whenever the explained model output has k > 1 columns — class
probabilities of forests (binary included), per-class margins of boosted multi-class models,
``predict_proba`` of any classifier for AcME — and (n, d) for a single output (regression, the one
margin of a boosted binary classifier) and for local MDI, which has no per-class value. Slice one
class for plots (``explanation[..., 1]``). Feature columns are always in the model's feature
order; a DataFrame in another column order is aligned by name. Attributes set on an Explanation
(``ranking``, ``pgi2``) are not carried through shap's slicing: read them on the object the
explainer returned.

A categorical feature (a LightGBM ``category`` column, a Pipeline's one-hot or ordinal encoded
text column) is one feature with one value, named by its input column (``race``, not its one-hot
columns); ``data`` then holds its labels (text) in an object array. ``shap.plots.beeswarm`` colours
a feature by its values only when they are numbers: a text feature's dots are drawn grey.

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
from .errors import NotAdditiveError
from .forest import import_model
from .mdi import require_impurities

#: shap's axis labels of the values, longest first (replaced by :func:`label_plot`)
SHAP_LABELS = ("SHAP value (impact on model output)", "SHAP value")


class NotAdditive:
    """``base_values`` of our Explanations: the scores are importances, not contributions that add
    up from a base value to the model output. shap's slicing keeps it (it has no length), its
    ``label`` says what the values are, and any use as a number — ``float()`` in
    ``shap.plots.waterfall``, arithmetic in ``force`` — raises :class:`~xai_plugins.errors.NotAdditiveError`."""

    shape: tuple = ()
    ndim = 0

    def __init__(self, label: str):
        self.label = label

    def __repr__(self) -> str:
        return f"NotAdditive({self.label!r})"

    def _refuse(self, *args):
        raise NotAdditiveError(
            f"these values ({self.label}) are importances that do not add up to the model output: there is no base "
            "value, so additive plots (shap.plots.waterfall, shap.plots.force) cannot draw them. Use shap.plots.bar, "
            "beeswarm, heatmap, scatter or violin (then xai_plugins.shap.label_plot to name the values).")

    __float__ = __int__ = __index__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse


def label_plot(explanation, figure=None) -> None:
    """Write what ``explanation``'s values are (e.g. "PG² gain") in place of shap's "SHAP value" on
    every axis label of ``figure`` (default: matplotlib's current figure), after a shap plot drawn
    with ``show=False``. An Explanation of shap's own explainers is left as it is."""
    import matplotlib.pyplot as plt

    label = getattr(explanation.base_values, "label", None) if isinstance(explanation.base_values, NotAdditive) \
        else None
    if label is None:
        return
    for ax in (figure or plt.gcf()).axes:
        for get, put in ((ax.get_xlabel, ax.set_xlabel), (ax.get_ylabel, ax.set_ylabel)):
            text = get()
            for shap_label in SHAP_LABELS:
                text = text.replace(shap_label, label)
            if text != get():
                put(text)


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
            values=result.values, base_values=NotAdditive(result.value_label), data=result.display_data,
            feature_names=result.feature_names, output_names=result.output_names,
            compute_time=time.perf_counter() - start)
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
