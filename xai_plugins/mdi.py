"""Local and global Mean Decrease of Impurity (Sutera et al., "From global to local MDI").

Local MDI of feature j at a sample x (Definition 1, averaged over the T trees):

    LMDI_j(x) = (1/T) Σ_t Σ_{nodes n on x's path in t, split on j} i(n) - i(child of n that x follows)

with the raw node impurities the trees were grown with (scikit-learn ``tree_.impurity``: Gini,
entropy in bits, variance / Friedman MSE). Its mean over the training set is the forest's
global MDI before normalisation (eq. 8-9): the mean over trees of
``tree_.compute_feature_importances(normalize=False)`` -- when every tree saw every training row
once. A bootstrap forest grew each tree on its own resample: its MDI is the mean of local MDI
weighted, per tree, by the in-bag counts (``global_mdi(model, X_train, in_bag=True)``), or,
without data, :func:`global_mdi` ``(model)``.

Only models that store node impurities are supported: scikit-learn decision trees, random
forests, extra trees and gradient boosting. XGBoost, LightGBM and HistGradientBoosting store
no impurity and are refused with :class:`~xai_plugins.errors.UnsupportedModelError` rather than
recomputed from data, so that the numbers always describe the trees the model actually grew.

``X`` follows the package's column convention (:mod:`xai_plugins._validation`): a DataFrame is
aligned to the model's feature names by column name, an array is read positionally.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _native
from .engines import engine_for
from .engines.method import Output, Plan, RowMethod, Sum
from .engines.runner import run
from .errors import InputError, UnsupportedModelError, XaiWarning
from .exact_sum import exact_column_sums, exact_mean
from .forest import Forest, import_model, library_of

__all__ = ["global_mdi", "local_mdi"]

#: scikit-learn ensembles whose bootstrap draws :func:`in_bag_counts` can replay
_IN_BAG_MODELS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")

_IN_BAG_HOW = ("pass the exact X the forest was fitted on, in the same row order, to a forest whose trees were "
               "grown on the bootstrap counts alone (sample_weight or class_weight multiplied into the counts fail "
               "this check: a fit without bootstrap, class_weight='balanced_subsample', scikit-learn < 1.8); or "
               "use global_mdi(model) (X=None) for the MDI from the trees alone")


def require_impurities(model) -> Forest:
    """The imported model, or UnsupportedModelError when it stores no node impurities."""
    forest = import_model(model)
    if forest.impurity is None:
        raise UnsupportedModelError(
            f"local MDI needs node impurities, which {forest.model_type} does not store; supported: "
            "scikit-learn DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*")
    return forest


def local_mdi(model, X, *, n_jobs=None) -> np.ndarray:
    r"""Local Mean Decrease of Impurity (local MDI) of every row of ``X``.

    Local MDI of feature j at a sample x (Sutera et al., "From global to local MDI",
    Definition 1), averaged over the T trees:

    .. math::

        \mathrm{LMDI}_j(x) = \frac{1}{T} \sum_{t=1}^{T}
            \sum_{\substack{n \in \mathrm{path}_t(x) \\ n \text{ splits on } j}}
            \left[ i(n) - i(c_t(n, x)) \right],

    where i(n) is the raw impurity the tree was grown with (scikit-learn ``tree_.impurity``:
    Gini, entropy in bits, variance / Friedman MSE) and c_t(n, x) the child of n that x follows.
    Its mean over the training set of a forest grown without bootstrap is the forest's
    unnormalised global MDI.

    Parameters
    ----------
    model : fitted scikit-learn tree model or Forest
        A model that stores node impurities: scikit-learn decision trees, random forests, extra
        trees and gradient boosting (or a scikit-learn Pipeline in front of one).
    X : array-like of shape (n, d) or DataFrame
        The rows (a DataFrame is aligned by column name to the model's features, an array is read
        positionally). NaN follows each node's missing-value direction. A row engine's collection
        (dask...) gives a lazy (n, d) result (the row method ``LOCAL_MDI`` on each block).
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Returns
    -------
    ndarray of shape (n, d)
        Local MDI of each row, columns in the model's feature order (one value per feature: a
        node has one impurity, so there is no per-class local MDI).

    Raises
    ------
    UnsupportedModelError
        A model that stores no node impurities (XGBoost, LightGBM, HistGradientBoosting):
        refused rather than recomputed from data, so that the numbers always describe the trees
        the model actually grew.
    FeatureMismatchError
        DataFrame columns that cannot be aligned to the model's features.
    InputTypeError
        Data or ``n_jobs`` of the wrong type.

    See Also
    --------
    xai_plugins.global_mdi : The forest's MDI, or the mean of local MDI over rows.
    xai_plugins.shap.LocalMDIExplainer : Local MDI as a ``shap.Explanation``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, bootstrap=False,
    ...                               random_state=0).fit(X, y)
    >>> lmdi = xp.local_mdi(model, X)
    >>> lmdi.shape
    (442, 10)
    >>> bool(np.allclose(lmdi.mean(axis=0), xp.global_mdi(model)))   # no bootstrap: the MDI
    True
    """
    return run(LOCAL_MDI, engine_for(X), model, X, n_jobs)


def _is_in_bag_model(model) -> bool:
    """Whether ``model`` is a scikit-learn forest whose bootstrap draws can be replayed."""
    return library_of(model) == "sklearn" and type(model).__name__ in _IN_BAG_MODELS


def _require_in_bag_model(model) -> None:
    """UnsupportedModelError unless ``in_bag=True`` can replay the bootstrap draws of ``model``."""
    if not _is_in_bag_model(model):
        raise UnsupportedModelError(
            f"in_bag=True replays the bootstrap draws of a fitted scikit-learn {', '.join(_IN_BAG_MODELS)}; "
            f"{type(model).__name__} has none to replay (pass the scikit-learn model itself, not an imported "
            "Forest). Use global_mdi(model) for the MDI from the trees alone, or in_bag=False for the mean "
            "of local MDI over X")


def in_bag_counts(model, n_samples: int) -> np.ndarray:
    """(n_samples, n_trees) how often each training row was drawn into each tree's bootstrap
    sample (all ones for a forest grown without bootstrap).

    Only for scikit-learn RandomForest* / ExtraTrees*; uses the model's ``estimators_samples_``
    (its own replay of the draws) where scikit-learn has it. ``n_samples`` must be the number of
    training rows (:class:`~xai_plugins.errors.InputError` when the model knows it and it differs).
    """
    _require_in_bag_model(model)
    n_samples = int(n_samples)
    n_train = getattr(model, "_n_samples", None)     # set by fit, used by estimators_samples_
    if isinstance(n_train, (int, np.integer)) and n_samples != n_train:
        raise InputError(f"X has {n_samples} rows but the forest was fitted on {n_train}; " + _IN_BAG_HOW)
    counts = np.empty((n_samples, len(model.estimators_)))
    if hasattr(type(model), "estimators_samples_"):
        for t, drawn in enumerate(model.estimators_samples_):
            if len(drawn) and drawn.max() >= n_samples:
                raise InputError(f"X has {n_samples} rows but the forest drew row {int(drawn.max())}; "
                                 + _IN_BAG_HOW)
            counts[:, t] = np.bincount(drawn, minlength=n_samples)
        return counts
    if not getattr(model, "bootstrap", False):       # scikit-learn without estimators_samples_
        counts[:] = 1.0
        return counts
    from sklearn.utils import check_random_state

    m = model.max_samples
    n_boot = n_samples if m is None else m if isinstance(m, (int, np.integer)) else max(round(n_samples * m), 1)
    for t, est in enumerate(model.estimators_):
        drawn = check_random_state(est.random_state).randint(0, n_samples, n_boot)
        counts[:, t] = np.bincount(drawn, minlength=n_samples)
    return counts


def _check_in_bag_fit(model, X: np.ndarray, counts: np.ndarray) -> None:
    """Refuse ``X`` unless, in every tree, the in-bag counts of the rows reaching each leaf add
    up to the leaf's weighted sample count -- which holds for the training data in its original
    row order and fails almost surely for a subset, permuted rows or a weighted fit."""
    X32 = X.astype(np.float32)
    for t, est in enumerate(model.estimators_):
        tree = est.tree_
        try:
            leaves = est.apply(X32)
        except ValueError as exc:   # e.g. NaN for trees grown without missing values
            raise InputError(f"X does not fit the trees grown with in_bag ({exc}); " + _IN_BAG_HOW) from exc
        got = np.bincount(leaves, weights=counts[:, t], minlength=tree.node_count)
        want = tree.weighted_n_node_samples
        is_leaf = tree.children_left < 0
        bad = np.flatnonzero(is_leaf & ~np.isclose(got, want, rtol=1e-9, atol=1e-9))
        if bad.size:
            total = counts[:, t].sum()
            if not np.isclose(total, want[0], rtol=1e-9, atol=1e-9):
                why = (f"tree {t} was grown on {want[0]:g} weighted samples but the replayed draw of "
                       f"{len(X)} rows holds {total:g}")
            else:
                why = (f"in tree {t}, {bad.size} leaves receive different in-bag counts from X than the "
                       f"tree was grown with (leaf {bad[0]}: {got[bad[0]]:g} vs {want[bad[0]]:g})")
            raise InputError(f"X is not the training data of this forest with in_bag=True: {why}; " + _IN_BAG_HOW)


def _resampling(model) -> str | None:
    """The resampling each tree of ``model`` was grown on ("bootstrap", "subsample"), or None when
    every tree saw every training row (then the mean of local MDI over them is the model's MDI)."""
    if _is_in_bag_model(model) and getattr(model, "bootstrap", False):
        return "bootstrap"
    name = type(model).__name__
    if library_of(model) == "sklearn" and name.startswith("GradientBoosting") \
            and getattr(model, "subsample", 1.0) < 1.0:
        return "subsample"
    return None


def _warn_if_resampled(model, stacklevel: int) -> None:
    """An :class:`~xai_plugins.errors.XaiWarning` (at ``stacklevel``) when the trees of ``model``
    were grown on resamples, so that the mean of local MDI over data is not the model's MDI."""
    resampling = _resampling(model)
    if resampling == "bootstrap":
        warnings.warn("the mean of local MDI over X is not the forest's MDI for a bootstrap forest (each tree "
                      "was grown on its own bootstrap sample): pass in_bag=True with the exact training data, "
                      "or X=None for the MDI from the trees alone (local_mdi(model, X).mean(axis=0) averages "
                      "over X without this warning)", XaiWarning, stacklevel=stacklevel)
    elif resampling == "subsample":
        warnings.warn("the mean of local MDI over X is not the model's MDI for gradient boosting with "
                      "subsample < 1 (each tree was grown on its own subsample): pass X=None for the MDI from "
                      "the trees alone (local_mdi(model, X).mean(axis=0) averages over X without this "
                      "warning)", XaiWarning, stacklevel=stacklevel)


def global_mdi(model, X=None, sample_weight=None, *, in_bag=False, n_jobs=None) -> np.ndarray:
    r"""Global Mean Decrease of Impurity (MDI), unnormalised, in the model's feature order.

    Without data, the forest's MDI from the trees alone (Sutera et al., eq. 8-9): the mean over
    the T trees of the weighted impurity decreases of their splits, per split feature,

    .. math::

        \mathrm{MDI}_j = \frac{1}{T} \sum_{t=1}^{T} \sum_{n \in t \text{ splits on } j}
            \frac{w(n)}{w(\mathrm{root})} \left( i(n) - \frac{w(l)}{w(n)} i(l)
            - \frac{w(r)}{w(n)} i(r) \right),

    (what ``compute_feature_importances(normalize=False)`` gives, l and r the children of n);
    with data, the (weighted) mean of :func:`xai_plugins.local_mdi` over its rows.

    Parameters
    ----------
    model : fitted scikit-learn tree model or Forest
        A model that stores node impurities (scikit-learn decision trees, random forests, extra
        trees, gradient boosting).
    X : array-like of shape (n, d), DataFrame or None, default None
        None: the MDI from the trees alone. Given: the (``sample_weight``-weighted) mean of
        :func:`xai_plugins.local_mdi` over its rows; with the training data of a forest grown
        without bootstrap this equals the above. For a bootstrap forest (or gradient boosting
        with ``subsample < 1``) it is not the forest's MDI and an ``XaiWarning`` says so
        (``local_mdi(model, X).mean(axis=0)`` gives the same mean without the warning). A dask
        ``X`` gives a lazy reduction on its row engine.
    sample_weight : array-like of shape (n,) or None, default None
        Weights of the rows of ``X``: finite, non-negative, not all zero (needs ``X``; not with
        ``in_bag``).
    in_bag : bool, default False
        scikit-learn RandomForest* / ExtraTrees* only, ``X`` the exact training data in its
        original row order: each tree averages only over its own bootstrap sample, weighted by
        in-bag counts, which restores the identity with the trees-only MDI. ``X`` is checked
        against the trees (every leaf must receive the in-bag weight it was grown with) and
        refused otherwise. A bootstrap forest fitted with ``sample_weight`` or ``class_weight``
        ("balanced" or a dict) is accepted and right: scikit-learn ≥ 1.8 draws the bootstrap
        sample with those weights and grows each tree on the counts alone, so the check passes; a
        forest without bootstrap fitted with ``sample_weight``,
        ``class_weight="balanced_subsample"`` and older scikit-learn (weights multiplied into the
        counts) fail the check. For a forest grown without bootstrap every count is one:
        ``in_bag=True`` gives the plain mean, after the same check (which then accepts the
        training rows in any order). Not supported on a row engine.
    n_jobs : int or None, default None
        Threads of the C core (None = 1 or the ``joblib.parallel_config`` in force, -1 = all).

    Returns
    -------
    ndarray of shape (d,)
        The unnormalised global MDI per feature (lazy for a dask ``X``).

    Raises
    ------
    InputError
        ``sample_weight`` or ``in_bag`` without ``X``; ``sample_weight`` with ``in_bag``; bad
        ``sample_weight``; with ``in_bag=True``, an ``X`` that is not the forest's training data.
    UnsupportedModelError
        A model without node impurities, or ``in_bag=True`` on a model other than a fitted
        scikit-learn RandomForest* / ExtraTrees*.

    Warns
    -----
    XaiWarning
        When ``X`` is given for a bootstrap forest (or gradient boosting with ``subsample < 1``)
        without ``in_bag``: the mean of local MDI over ``X`` is not the model's MDI.

    See Also
    --------
    xai_plugins.local_mdi : Per-row local MDI.

    Notes
    -----
    The mean over ``X`` is correctly rounded (exact sums, one rounding), so it does not depend on
    the row order or, for a dask ``X`` (a lazy reduction on a row engine), on the chunking.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> mdi = xp.global_mdi(model)                       # from the trees alone
    >>> mdi.shape
    (10,)
    >>> expected = np.mean([t.tree_.compute_feature_importances(normalize=False)
    ...                     for t in model.estimators_], axis=0)
    >>> bool(np.allclose(mdi, expected))
    True
    >>> bool(np.allclose(xp.global_mdi(model, X, in_bag=True), mdi))   # the bootstrap replayed
    True
    """
    forest = require_impurities(model)
    if X is None:
        if sample_weight is not None or in_bag:
            raise InputError("sample_weight and in_bag need the data X; global_mdi(model) without them "
                             "gives the MDI from the trees alone")
        return _mdi_from_trees(forest)
    engine = engine_for(X, sample_weight)
    if in_bag:
        return _in_bag_mdi(model, forest, engine, X, sample_weight, n_jobs)
    return run(GLOBAL_MDI, engine, model, forest, X, sample_weight, n_jobs)


def _in_bag_mdi(model, forest, engine, X, sample_weight, n_jobs) -> np.ndarray:
    """:func:`global_mdi` ``(in_bag=True)``: local MDI weighted per tree by the bootstrap's in-bag
    counts, replayed over the training rows in order (all of them held on the driver)."""
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, _rows_with_nan(forest), forest=forest)
    X = engine.held(rows, 0)
    if len(X) != engine.n_rows(rows):
        raise InputError("in_bag=True is not supported on a cluster engine's input: it replays the bootstrap "
                         "draws over the exact training rows in order; compute it in memory, or use "
                         "global_mdi(model) for the MDI from the trees alone")
    if sample_weight is not None:
        raise InputError("sample_weight cannot be combined with in_bag=True: the in-bag counts are the weights")
    _require_in_bag_model(model)
    counts = in_bag_counts(model, len(X))
    _check_in_bag_fit(model, X, counts)
    row_weight = counts / counts.sum(axis=0, keepdims=True) / forest.n_trees  # per tree: mean over its sample
    return _native.local_mdi(forest, X, tree_weight=np.ascontiguousarray(row_weight), n_jobs=n_jobs).sum(axis=0)


def _mdi_from_trees(forest: Forest) -> np.ndarray:
    """(d,) unnormalised MDI from the trees alone: the mean over trees of the weighted impurity
    decreases of their splits, per split feature."""
    if forest.weight is None or forest.impurity is None:
        raise UnsupportedModelError("global MDI without data needs per-node sample weights, which "
                                    f"{forest.model_type} does not store")
    mdi = np.zeros(forest.n_features)
    for t in range(forest.n_trees):
        a, b = forest.tree_offset[t], forest.tree_offset[t + 1]
        left, right = forest.left_child[a:b], forest.right_child[a:b]
        impurity, node_weight = forest.impurity[a:b], forest.weight[a:b]
        split = np.flatnonzero(left >= 0)
        decrease = (node_weight[split] * impurity[split] - node_weight[left[split]] * impurity[left[split]]
                    - node_weight[right[split]] * impurity[right[split]]) / node_weight[0]
        mdi += np.bincount(forest.feature[a:b][split], weights=decrease, minlength=forest.n_features)
    return mdi / forest.n_trees


# --------------------------------------------------------------------------------------------
# local and global MDI as row methods (xai_plugins.engines.runner runs them on any engine)
# --------------------------------------------------------------------------------------------

def _rows_with_nan(forest):
    """The in-memory reading of ``X``: missing values are allowed (a row goes where the model sends them)."""
    return lambda X: forest.rows(X, allow_nan=True)


def _prepare_local(engine, model, X, n_jobs) -> Plan:
    forest = require_impurities(model)
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, _rows_with_nan(forest), forest=forest)
    return Plan(rows, (Output("local_mdi", (forest.n_features,)),), shipped=forest, shared=dict(n_jobs=n_jobs))


def _local_block(forest, start, X, *, n_jobs) -> dict:
    """Local MDI (b, d) of a block of rows."""
    return {"local_mdi": _native.local_mdi(forest, X, n_jobs=n_jobs)}


def _local_finish(plan: Plan, cols: dict, engine) -> np.ndarray:
    return cols["local_mdi"]


#: local MDI as a row method: (n, d)
LOCAL_MDI = RowMethod("local-mdi", _prepare_local, _local_block, _local_finish)


def _prepare_global(engine, model, forest, X, sample_weight, n_jobs) -> Plan:
    """The rows and their weights (validated here when in memory, in their blocks otherwise)."""
    rows, _ = engine.rows(X, forest.feature_names, forest.n_features, _rows_with_nan(forest), forest=forest)
    per_row: tuple = ()
    if sample_weight is not None:
        w = sample_weight
        if not engine.handles(w):
            try:
                w = np.asarray(w, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InputError(f"sample_weight must be numeric ({exc})") from exc
            if w.ndim != 1 or np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
                raise InputError(f"sample_weight must be (n,) (one per row of X), finite, non-negative, and not "
                                 f"all zero; got shape {w.shape}")
        w = engine.by_rows(w, rows, "sample_weight")
        if len(w.shape) != 1:
            raise InputError(f"sample_weight must be (n,) (one per row of X); got {len(w.shape)} dimensions")
        per_row = (w,)
    _warn_if_resampled(model, stacklevel=5)   # the caller of xai_plugins.global_mdi
    d = forest.n_features
    return Plan(rows, (Output("weighted", (d,)), Output("weight"),
                       Sum("mdi", _global_sums, _global_mdi_finish, of=("weighted", "weight"), shape=(d,))),
                shipped=forest, per_row=per_row, shared=dict(n_jobs=n_jobs))


def _global_block(forest, start, X, *w, n_jobs) -> dict:
    """The weighted local MDI of a block of rows and their weights (no ``w``: weight 1 per row)."""
    lm = _native.local_mdi(forest, X, n_jobs=n_jobs)
    weight = np.ones(len(X)) if not w else np.asarray(w[0], dtype=np.float64)
    if np.any(weight < 0) or not np.all(np.isfinite(weight)):
        raise InputError("sample_weight must be finite and non-negative")
    return {"weighted": weight[:, None] * lm, "weight": weight}


def _global_sums(weighted, weight) -> list:
    """Exact sums of a block for :func:`global_mdi`: the weighted local MDI column sums, then the weight sum."""
    return exact_column_sums(weighted) + exact_column_sums(np.reshape(weight, (-1, 1)))


def _global_mdi_finish(total) -> np.ndarray:
    return exact_mean(total[:-1], total[-1])


def _global_finish(plan: Plan, cols: dict, engine) -> np.ndarray:
    return cols["mdi"]


#: global MDI over data as a row method: an exact weighted mean of local MDI, rounded once
GLOBAL_MDI = RowMethod("global-mdi", _prepare_global, _global_block, _global_finish)
