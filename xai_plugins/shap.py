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

from .attributions import (
    acme_attribution,
    background_data,
    local_mdi_attribution,
    pg2_attribution,
    treeshap_attribution,
)
from .errors import NotAdditiveError
from .forest import import_model
from .mdi import require_impurities

#: shap's axis labels of the values, longest first (replaced by :func:`label_plot`)
SHAP_LABELS = ("SHAP value (impact on model output)", "SHAP value")


class NotAdditive:
    """The ``base_values`` of our Explanations: a marker that the scores do not add up.

    The scores of :class:`PG2Explainer`, :class:`LocalMDIExplainer` and :class:`AcMEExplainer` are
    importances, not contributions that add up from a base value to the model output. shap's
    slicing keeps the marker (it has no length), its ``label`` says what the values are, and any
    use as a number — ``float()`` in ``shap.plots.waterfall``, arithmetic in ``force`` — raises
    :class:`xai_plugins.errors.NotAdditiveError`.

    Parameters
    ----------
    label : str
        What the values are ("PG² gain", "local MDI", "AcME importance"); :func:`label_plot`
        writes it on shap's axes.

    Attributes
    ----------
    label : str
        What the values are.
    shape : tuple
        ``()``: a scalar for shap's slicing.
    ndim : int
        0.

    See Also
    --------
    xai_plugins.shap.label_plot : Names the values on a shap plot.
    xai_plugins.errors.NotAdditiveError : Raised on any use as a number.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.shap import LocalMDIExplainer, NotAdditive
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explanation = LocalMDIExplainer(model)(X[:5])
    >>> explanation.base_values
    NotAdditive('local MDI')
    >>> explanation[:, 0].base_values.label           # kept through shap's slicing
    'local MDI'
    >>> explanation.base_values + 1.0
    Traceback (most recent call last):
    ...
    xai_plugins.errors.NotAdditiveError: these values (local MDI) are importances that do not add up ...
    """

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
    """Write what an explanation's values are on a shap plot's axes, in place of "SHAP value".

    shap labels every axis "SHAP value" whatever the values are. After a shap plot drawn with
    ``show=False``, this replaces that text by what ``explanation``'s values are (e.g. "PG² gain",
    "local MDI", "AcME importance") on every axis label of ``figure``. An Explanation of shap's own
    explainers is left as it is.

    Parameters
    ----------
    explanation : shap.Explanation
        The explanation plotted, as returned by one of this module's explainers (its
        ``base_values`` is a :class:`NotAdditive` marker carrying the label).
    figure : matplotlib.figure.Figure or None, default None
        The figure to relabel (default: matplotlib's current figure).

    See Also
    --------
    xai_plugins.shap.NotAdditive : The marker that carries the label.

    Examples
    --------
    >>> import shap
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.shap import PG2Explainer, label_plot
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explanation = PG2Explainer(model, sigma=0.3, background=X)(X[:10])
    >>> _ = shap.plots.bar(explanation, show=False)
    >>> plt.gca().get_xlabel()
    'mean(|SHAP value|)'
    >>> label_plot(explanation)
    >>> plt.gca().get_xlabel()
    'mean(|PG² gain|)'
    >>> plt.close("all")
    """
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
        extras = dict(result.extras)
        base = extras.pop("base_values", None)            # additive values (TreeSHAP) carry their own
        explanation = _shap.Explanation(
            values=result.values, base_values=NotAdditive(result.value_label) if base is None else base,
            data=result.display_data,
            feature_names=result.feature_names, output_names=result.output_names,
            compute_time=time.perf_counter() - start)
        for name, value in extras.items():
            setattr(explanation, name, value)
        return explanation


class PG2Explainer(_AttributionExplainer):
    """Greedy PG² attributions of a tree ensemble, as a ``shap.Explainer``.

    Each value is the growth of the exact squared prediction gap E[(f(x′) − f(x))²] when the
    feature joins the row's greedy PG² order (:func:`xai_plugins.greedy_pg2_ranking`); a row's
    values sum to PG²(x, all features). Calling the explainer on rows ``X`` (an array or
    DataFrame; a dask one is computed on the active dask scheduler) returns a
    ``shap.Explanation`` whose ``base_values`` is a :class:`NotAdditive` marker. The returned
    Explanation also has ``.ranking`` (n, d[, k]) — feature indices, most important first — and
    ``.pgi2`` (n[, k]), the exact PGI² of that ranking. Values are (n, d, k) when the model output
    has k > 1 columns (forest class probabilities, boosted multi-class margins), else (n, d).

    Parameters
    ----------
    model : fitted tree ensemble
        A model :func:`xai_plugins.import_model` supports (imported once, here: unsupported or
        unfitted models fail at construction).
    sigma : float or array-like of shape (d,), default 0.3
        The noise scale (scalar or per feature; in feature standard deviations when
        ``background`` data are given).
    background : array-like, DataFrame, shap masker or None, default None
        Background data: ``sigma`` becomes relative to its per-feature standard deviations.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Any frozen scipy continuous distribution (or one per feature) instead of Gaussian noise.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Attributes
    ----------
    forest : Forest
        The imported model.
    sigma, perturbation, background, n_jobs
        The settings given (``background`` as data).

    Raises
    ------
    UnsupportedModelError
        A model that cannot be imported.
    NotFittedError
        An unfitted model.

    See Also
    --------
    xai_plugins.greedy_pg2_ranking : The ranking behind the values.
    xai_plugins.shap.label_plot : Names the values "PG² gain" on shap's plots.
    xai_plugins.interpret.PG2Explainer : The same for InterpretML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> from xai_plugins.shap import PG2Explainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explanation = PG2Explainer(model, sigma=0.3, background=X)(X[:5])
    >>> explanation.values.shape, explanation.ranking.shape, explanation.pgi2.shape
    ((5, 10), (5, 10), (5,))
    >>> total = xp.pg2(model, X[:5], S=list(range(10)), sigma=0.3, background=X).value
    >>> bool(np.allclose(explanation.values.sum(axis=1), total))   # gains add up to PG²(x, all)
    True
    """

    def __init__(self, model, sigma=0.3, *, background=None, perturbation=None, n_jobs=None):
        self.forest = import_model(model)  # once per explainer; unsupported or unfitted models fail here
        self.sigma, self.perturbation, self.n_jobs = sigma, perturbation, n_jobs
        self.background = background_data(background)
        super().__init__(model, partial(pg2_attribution, self.forest, sigma=sigma, perturbation=perturbation,
                                        background=self.background, n_jobs=n_jobs))


class TreeSHAPExplainer(_AttributionExplainer):
    """Exact TreeSHAP of any tree model the package reads, as a ``shap.Explainer`` (the package's C core,
    :func:`xai_plugins.tree_shap`): in the model's input columns (a categorical input, or a column a
    Pipeline one-hot encodes, is one player), for models shap's own ``TreeExplainer`` cannot read too.

    The values are additive: ``base_values`` is the value of the empty coalition, so every shap plot
    (waterfall and force included) works. Path-dependent TreeSHAP (node covers) without a
    ``background``, interventional TreeSHAP with one.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        Any model :func:`xai_plugins.import_model` reads.
    background : array-like, DataFrame or None, default None
        Background rows of interventional TreeSHAP.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Attributes
    ----------
    forest : Forest
        The imported model.

    See Also
    --------
    xai_plugins.tree_shap : The values as arrays.
    xai_plugins.which_shap : Every SHAP variant scored by exact PGI².

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.shap import TreeSHAPExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explanation = TreeSHAPExplainer(model)(X[:5])
    >>> bool(np.allclose(explanation.values.sum(1) + explanation.base_values, model.predict(X[:5])))
    True
    """

    def __init__(self, model, *, background=None, n_jobs=None):
        self.forest = import_model(model)
        super().__init__(model, partial(treeshap_attribution, self.forest, background=background, n_jobs=n_jobs))


class LocalMDIExplainer(_AttributionExplainer):
    """Local MDI attributions of a scikit-learn tree model, as a ``shap.Explainer``.

    Per row, the impurity decreases i(t) − i(child followed) along its path, summed per split
    feature and averaged over trees (Sutera et al., Definition 1): :func:`xai_plugins.local_mdi`.
    Their mean over the training rows is the global MDI. Calling the explainer on rows ``X``
    returns a ``shap.Explanation`` of values (n, d) (a node has one impurity, so there is no
    per-class local MDI).

    Parameters
    ----------
    model : fitted scikit-learn tree model
        A model that stores node impurities (scikit-learn decision trees, random forests, extra
        trees, gradient boosting); models without stored impurities fail at construction.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Attributes
    ----------
    forest : Forest
        The imported model.
    n_jobs : int or None
        The setting given.

    Raises
    ------
    UnsupportedModelError
        A model that stores no node impurities (XGBoost, LightGBM, HistGradientBoosting).

    See Also
    --------
    xai_plugins.local_mdi : The values as an array.
    xai_plugins.global_mdi : Their mean: the forest's MDI.
    xai_plugins.interpret.LocalMDIExplainer : The same for InterpretML.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.shap import LocalMDIExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explanation = LocalMDIExplainer(model)(X[:5])
    >>> explanation.values.shape, explanation.base_values.label
    ((5, 10), 'local MDI')
    """

    def __init__(self, model, *, n_jobs=None):
        self.forest = require_impurities(model)  # models without stored impurities fail here
        self.n_jobs = n_jobs
        super().__init__(model, partial(local_mdi_attribution, self.forest, n_jobs=n_jobs))


class AcMEExplainer(_AttributionExplainer):
    """AcME local importances of any model, as a ``shap.Explainer``.

    Calling the explainer on rows ``X`` returns a ``shap.Explanation`` of AcME local importances
    (n, d), or (n, d, k) per class for classification. ``task=None`` infers the task from the
    model: a classifier (or a model with ``predict_proba``) is explained per class probability,
    output names = its ``classes_`` (so ``explanation[..., 1]`` is class 1, binary models
    included); anything else through ``predict``.

    Parameters
    ----------
    model : fitted model
        Any model with ``predict`` (regression) or ``predict_proba`` (classification).
    X_background : array-like, DataFrame or shap masker holding data
        Defines the quantile grid (and the mean / mode baseline).
    n_quantiles : int, default 50
        Grid points per numeric feature (Q >= 2).
    task : {"regression", "classification"} or None, default None
        None infers it from the model.
    **acme_options
        Other keyword arguments of :class:`xai_plugins.acme.AcME` (``score_function``,
        ``categorical_features``, ``robust``, ``variant``, ``batch_size``).

    Attributes
    ----------
    acme : AcME
        The fitted AcME object (its ``explain_global()`` and what-if plots stay available).

    Raises
    ------
    InputError
        Settings or background data AcME cannot use.

    See Also
    --------
    xai_plugins.acme.AcME : The explainer behind it.
    xai_plugins.interpret.AcMEExplainer : The same for InterpretML.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.shap import AcMEExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explainer = AcMEExplainer(model, X, n_quantiles=5)
    >>> explanation = explainer(X[:5])
    >>> explanation.values.shape, explanation.base_values.label
    ((5, 10), 'AcME importance')
    >>> explainer.acme.explain_global().values.shape
    (10,)
    """

    def __init__(self, model, X_background, n_quantiles: int = 50, task: str | None = None, **acme_options):
        from .acme import AcME

        self.acme = AcME(model, background_data(X_background), n_quantiles=n_quantiles, task=task, **acme_options)
        super().__init__(model, partial(acme_attribution, self.acme))


__all__ = ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "TreeSHAPExplainer", "label_plot", "NotAdditive"]
