"""Our explainers as InterpretML explainers: ``explain_global`` / ``explain_local`` return
explanations (subclasses of InterpretML's ``FeatureValueExplanation``) whose ``visualize(key)``
is a plotly figure and which ``interpret.show`` / ``interpret.preserve`` accept::

    from interpret import show
    from xai_plugins.interpret import PG2Explainer        # also: interpret.ext.greybox.PG2Explainer
    explainer = PG2Explainer(model, X_train, sigma=0.3)
    show(explainer.explain_global())                      # mean greedy PG² gain per feature
    show(explainer.explain_local(X_test[:5], y_test[:5]))

Registered through the ``interpret_ext_greybox`` (PG², local MDI) and ``interpret_ext_blackbox``
(AcME) entry points. InterpretML's bar charts show one output: for a model with k outputs,
``output`` picks it (name or index); two-class models default to the positive class. A
categorical feature (a LightGBM category column, a Pipeline's encoded text column) is one
"nominal" feature: its values are the user's labels, its global view one bar per category.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from ._extras import needs
from ._validation import check_random_state, resolve_output
from .attributions import (
    Attribution,
    acme_attribution,
    background_data,
    feature_types,
    local_mdi_attribution,
    pg2_attribution,
    treeshap_attribution,
)
from .errors import InputError
from .forest import import_model
from .mdi import require_impurities

with needs("interpret", "The InterpretML explainers"):
    from interpret.api.base import ExplainerMixin
    from interpret.api.templates import FeatureValueExplanation


class AttributionExplanation(FeatureValueExplanation):
    """An InterpretML explanation of xai_plugins scores.

    What the explainers of this module return (a subclass of InterpretML's
    ``FeatureValueExplanation``): ``data(None)`` the overall bar chart, ``data(i)`` one row
    (local) or one feature's dependence curve (global); ``visualize(key)`` is a plotly figure,
    and ``interpret.show`` / ``interpret.preserve`` accept it.

    Parameters
    ----------
    explanation_type : {"global", "local"}
        The kind of explanation.
    internal_obj : dict
        The JSON-ready data behind it: ``{"overall": ..., "specific": [...]}``.
    feature_names : list of str or None, default None
        The feature names.
    feature_types : list of str or None, default None
        InterpretML's type of each feature ("continuous", "nominal").
    name : str or None, default None
        The explanation's name, shown by ``interpret.show``.
    selector : pandas.DataFrame or None, default None
        One row per explanation entry (rows of a local explanation, features of a global one).

    Attributes
    ----------
    explanation_type : str
        "global" or "local".
    feature_names, feature_types, name, selector
        As given.

    See Also
    --------
    xai_plugins.interpret.PG2Explainer : Returns it.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.interpret import AttributionExplanation, LocalMDIExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> local = LocalMDIExplainer(model, X).explain_local(X[:3], y[:3])
    >>> isinstance(local, AttributionExplanation), local.explanation_type
    (True, 'local')
    >>> row = local.data(0)                       # the first row's scores
    >>> len(row["names"]), len(row["scores"])
    (10, 10)
    """


def _pick_output(values: np.ndarray, output_names, output) -> np.ndarray:
    """(n, d) slice of (n, d) or (n, d, k) values for the chosen output (name or index; two-class
    models default to the second, the positive class)."""
    c = resolve_output(output_names, output, default=1 if output_names is not None and len(output_names) == 2
                       else None)
    return values if c is None else values[..., c]


def _local_explanation(result: Attribution, values: np.ndarray, y, name: str) -> AttributionExplanation:
    y = None if y is None else np.asarray(y)
    if y is not None and len(y) != len(values):
        raise InputError(f"y has {len(y)} entries for {len(values)} rows")
    data = result.display_data
    rows = [{
        "type": "univariate", "names": result.feature_names, "scores": values[i], "values": data[i],
        "perf": None, "extra": {"names": [], "scores": [], "values": []},
    } for i in range(len(values))]
    selector = pd.DataFrame({"row": np.arange(len(values))})
    if y is not None:
        selector["actual"] = y
    return AttributionExplanation("local", {"overall": None, "specific": rows},
                                  feature_names=result.feature_names, feature_types=result.feature_types,
                                  name=name, selector=selector)


def _global_explanation(feature_names, feature_types, overall: np.ndarray, curves, name: str) -> AttributionExplanation:
    """``overall`` (d,) importances; ``curves[j]`` = (x values, scores) drawn for feature j, whose
    InterpretML type ("continuous": a line, "nominal": a bar per category) is ``feature_types[j]``."""
    specific = [{"type": "univariate", "names": np.asarray(x), "scores": np.asarray(s)} for x, s in curves]
    selector = pd.DataFrame({"Name": feature_names, "Type": feature_types, "Importance": overall})
    return AttributionExplanation("global", {"overall": {"names": list(feature_names), "scores": list(overall)},
                                             "specific": specific},
                                  feature_names=list(feature_names), feature_types=list(feature_types), name=name,
                                  selector=selector)


class _AttributionExplainer(ExplainerMixin):
    """Local explanations from ``attribute(X) -> Attribution``; global = mean score over at most
    ``max_global_rows`` background rows (sampled with ``random_state``), with each feature's scores
    against its values as the per-feature curve. Scores are importances, not signed contributions:
    local MDI averages to the global MDI, greedy PG² gains sum per row to PG²(x, all features)."""

    available_explanations = ["global", "local"]

    def __init__(self, model, data, attribute, *, output=None, max_global_rows=200, random_state=0):
        self.model = model
        self.data = data
        self.output = output
        self.max_global_rows = max_global_rows
        self.random_state = random_state
        self._attribute = attribute

    def explain_local(self, X, y=None, name=None) -> AttributionExplanation:
        """Scores of each row of ``X`` (``y`` is shown alongside when given)."""
        result = self._attribute(X)
        values = _pick_output(result.values, result.output_names, self.output)
        return _local_explanation(result, values, y, name or type(self).__name__ + " (local)")

    def explain_global(self, name=None) -> AttributionExplanation:
        """Mean score per feature over the background data passed at construction."""
        if self.data is None:
            raise InputError(f"{type(self).__name__} needs background data (data=...) for a global explanation")
        rows = self.data
        n = len(rows)
        if n > self.max_global_rows:
            take = np.sort(check_random_state(self.random_state).choice(n, self.max_global_rows, replace=False))
            rows = rows.iloc[take] if hasattr(rows, "iloc") else np.asarray(rows)[take]
        result = self._attribute(rows)
        values = _pick_output(result.values, result.output_names, self.output)
        curves = []
        data, types = result.display_data, result.feature_types
        for j in range(values.shape[1]):
            if types[j] == "nominal":       # a bar per category seen: its mean score
                codes, first, where = np.unique(result.data[:, j], return_index=True, return_inverse=True)
                sums = np.bincount(where.ravel(), weights=values[:, j], minlength=len(codes))
                curves.append((data[first, j], sums / np.bincount(where.ravel(), minlength=len(codes))))
                continue
            order = np.argsort(result.data[:, j], kind="stable")
            curves.append((data[order, j], values[order, j]))
        return _global_explanation(result.feature_names, result.feature_types, values.mean(axis=0), curves,
                                   name or type(self).__name__ + " (global)")


class PG2Explainer(_AttributionExplainer):
    """Greybox InterpretML explainer: greedy PG² gains of a tree ensemble.

    The values of :class:`xai_plugins.shap.PG2Explainer`: each feature's growth of the exact
    squared prediction gap when it joins the row's greedy PG² order. ``explain_local(X, y=None,
    name=None)`` gives those scores per row (``y`` shown alongside); ``explain_global(name=None)``
    the mean score per feature over ``data`` (at most ``max_global_rows`` rows, sampled with
    ``random_state``), with each feature's scores against its values as its curve. Both return an
    :class:`AttributionExplanation`. Registered as ``interpret.ext.greybox.PG2Explainer``
    (entry point ``interpret_ext_greybox``).

    Parameters
    ----------
    model : fitted tree ensemble
        A model :func:`xai_plugins.import_model` supports.
    data : array-like, DataFrame or None, default None
        The background: it sets σ in feature standard deviations (``sigma_units="std"``) and is
        explained by ``explain_global`` (which needs it).
    sigma : float or array-like of shape (d,), default 0.3
        The noise scale.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Any frozen scipy continuous distribution (or one per feature) instead of Gaussian noise.
    sigma_units : {"std", "raw"}, default "std"
        "std": σ in the standard deviations of ``data`` (when data is given); "raw": σ in feature
        units.
    output : int, str or None, default None
        For a model with k outputs, the output shown (a class name or index); two-class models
        default to the positive class.
    max_global_rows : int, default 200
        Most rows of ``data`` the global explanation averages over.
    random_state : int or None, default 0
        Seed of the sample of ``data`` rows.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Attributes
    ----------
    forest : Forest
        The imported model.
    model, data, output, max_global_rows, random_state
        As given (``data`` as data).

    Raises
    ------
    InputError
        ``sigma_units`` other than "std" or "raw"; ``explain_global`` without ``data``.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.shap.PG2Explainer : The same values as a ``shap.Explanation``.
    xai_plugins.greedy_pg2_ranking : The ranking behind them.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.interpret import PG2Explainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explainer = PG2Explainer(model, X, sigma=0.3)
    >>> overall = explainer.explain_global().data()      # mean greedy PG² gain per feature
    >>> len(overall["names"]), len(overall["scores"])
    (10, 10)
    >>> len(explainer.explain_local(X[:3], y[:3]).data(0)["scores"])
    10
    """

    explainer_type = "specific"

    def __init__(self, model, data=None, sigma=0.3, *, perturbation=None, sigma_units="std", output=None,
                 max_global_rows=200, random_state=0, n_jobs=None):
        self.forest = import_model(model)
        if sigma_units not in ("std", "raw"):
            raise InputError(f"sigma_units must be 'std' or 'raw'; got {sigma_units!r}")
        data = background_data(data)
        background = data if sigma_units == "std" else None
        attribute = partial(pg2_attribution, self.forest, sigma=sigma, perturbation=perturbation,
                            background=background, n_jobs=n_jobs)
        super().__init__(model, data, attribute, output=output, max_global_rows=max_global_rows,
                         random_state=random_state)


class TreeSHAPExplainer(_AttributionExplainer):
    """Greybox InterpretML explainer: exact TreeSHAP of any tree model the package reads.

    ``explain_local(X, y=None, name=None)`` gives :func:`xai_plugins.tree_shap` per row (path-dependent
    without ``background``, interventional with it), in the model's input columns;
    ``explain_global(name=None)`` the mean absolute value over ``data`` (at most ``max_global_rows`` rows,
    sampled with ``random_state``). Both return an :class:`AttributionExplanation`. Registered through the
    ``interpret_ext_greybox`` entry point.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        Any model :func:`xai_plugins.import_model` reads.
    data : array-like, DataFrame or None, default None
        Background rows of the global explanation (which needs them).
    background : array-like, DataFrame or None, default None
        Background rows of interventional TreeSHAP.
    output : int, str or None, default None
        The output shown, for a model with several.
    max_global_rows : int, default 200
        Most rows of ``data`` the global explanation averages over.
    random_state : int or None, default 0
        Seed of the sample of ``data`` rows.
    n_jobs : int or None, default None
        Threads of the C core.

    Attributes
    ----------
    forest : Forest
        The imported model.

    See Also
    --------
    xai_plugins.tree_shap : The values as arrays.
    xai_plugins.shap.TreeSHAPExplainer : The same values as a ``shap.Explanation``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.interpret import TreeSHAPExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> local = TreeSHAPExplainer(model, X).explain_local(X[:3])
    >>> len(local.data(0)["scores"])
    10
    """

    explainer_type = "specific"

    def __init__(self, model, data=None, *, background=None, output=None, max_global_rows=200, random_state=0,
                 n_jobs=None):
        self.forest = import_model(model)
        super().__init__(model, background_data(data), partial(treeshap_attribution, self.forest,
                                                                background=background, n_jobs=n_jobs),
                         output=output, max_global_rows=max_global_rows, random_state=random_state)


class LocalMDIExplainer(_AttributionExplainer):
    """Greybox InterpretML explainer: local MDI of a scikit-learn tree model.

    ``explain_local(X, y=None, name=None)`` gives :func:`xai_plugins.local_mdi` per row;
    ``explain_global(name=None)`` the mean local MDI over ``data`` (= global MDI on the training
    data of a forest grown without bootstrap; at most ``max_global_rows`` rows, sampled with
    ``random_state``). Both return an :class:`AttributionExplanation`. Registered through the
    ``interpret_ext_greybox`` entry point.

    Parameters
    ----------
    model : fitted scikit-learn tree model
        A model that stores node impurities (scikit-learn decision trees, random forests, extra
        trees, gradient boosting).
    data : array-like, DataFrame or None, default None
        Background rows of the global explanation (which needs them).
    max_global_rows : int, default 200
        Most rows of ``data`` the global explanation averages over.
    random_state : int or None, default 0
        Seed of the sample of ``data`` rows.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Attributes
    ----------
    forest : Forest
        The imported model.
    model, data, max_global_rows, random_state
        As given (``data`` as data).

    Raises
    ------
    UnsupportedModelError
        A model that stores no node impurities.
    InputError
        ``explain_global`` without ``data``.

    See Also
    --------
    xai_plugins.local_mdi : The scores as an array.
    xai_plugins.shap.LocalMDIExplainer : The same values as a ``shap.Explanation``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> from xai_plugins.interpret import LocalMDIExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, bootstrap=False,
    ...                               random_state=0).fit(X, y)
    >>> explainer = LocalMDIExplainer(model, X, max_global_rows=len(X))
    >>> scores = explainer.explain_global().data()["scores"]
    >>> bool(np.allclose(scores, xp.global_mdi(model)))     # the global MDI
    True
    """

    explainer_type = "specific"

    def __init__(self, model, data=None, *, max_global_rows=200, random_state=0, n_jobs=None):
        self.forest = require_impurities(model)
        super().__init__(model, background_data(data), partial(local_mdi_attribution, self.forest, n_jobs=n_jobs),
                         max_global_rows=max_global_rows, random_state=random_state)


class AcMEExplainer(_AttributionExplainer):
    """Blackbox InterpretML explainer: AcME importances of any model.

    The global explanation (``explain_global(name=None)``) is AcME's own (quantile grid around the
    mean/mode baseline; the curves are the standardized effects per grid value); local ones
    (``explain_local(X, y=None, name=None)``) are AcME local importances. Both return an
    :class:`AttributionExplanation`. Registered through the ``interpret_ext_blackbox`` entry
    point.

    Parameters
    ----------
    model : fitted model
        Any model with ``predict`` (regression) or ``predict_proba`` (classification).
    data : array-like or DataFrame
        The background data that defines the quantile grid.
    n_quantiles : int, default 50
        Grid points per numeric feature (Q >= 2).
    task : {"regression", "classification"} or None, default None
        None infers it from the model (a classifier is explained per class probability).
    output : int, str or None, default None
        The class shown (index or class label); two-class models default to the positive one.
    **acme_options
        Other keyword arguments of :class:`xai_plugins.acme.AcME`.

    Attributes
    ----------
    acme : AcME
        The fitted AcME object.
    model, data, output
        As given.

    Raises
    ------
    InputError
        Settings or background data AcME cannot use.

    See Also
    --------
    xai_plugins.acme.AcME : The explainer behind it.
    xai_plugins.shap.AcMEExplainer : The same values as a ``shap.Explanation``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.interpret import AcMEExplainer
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> explainer = AcMEExplainer(model, X, n_quantiles=5)
    >>> len(explainer.explain_global().data()["scores"])
    10
    >>> len(explainer.explain_local(X[:2]).data(1)["scores"])
    10
    """

    explainer_type = "blackbox"

    def __init__(self, model, data, n_quantiles: int = 50, task: str | None = None, *, output=None,
                 **acme_options):
        from .acme import AcME

        self.acme = AcME(model, background_data(data), n_quantiles=n_quantiles, task=task, **acme_options)
        super().__init__(model, data, partial(acme_attribution, self.acme), output=output)

    def explain_global(self, name=None) -> AttributionExplanation:
        """AcME global importances, with each feature's standardized effect per grid value."""
        g = self.acme.explain_global()
        importances = _pick_output(np.asarray(g.values)[None], g.output_names, self.output)[0]
        effects = _pick_output(np.asarray(g.effects)[None], g.output_names, self.output)[0]
        shown = g.grid.display_values
        curves = [(shown[g.grid.segment(j)], effects[g.grid.segment(j)]) for j in range(len(g.feature_names))]
        return _global_explanation(g.feature_names, feature_types(g.grid.categorical, len(g.feature_names)),
                                   importances, curves, name or "AcMEExplainer (global)")


__all__ = ["PG2Explainer", "LocalMDIExplainer", "AcMEExplainer", "TreeSHAPExplainer", "AttributionExplanation"]
