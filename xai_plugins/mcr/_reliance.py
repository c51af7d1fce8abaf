"""RF-MCR entry points: fit the reference forest, and compute every feature's MCR range."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._validation import (
    check_is_fitted,
    check_matrix,
    check_random_state,
    check_target,
    feature_index,
    model_rows,
)
from ..errors import InputError, InputTypeError, UnsupportedModelError
from ..forest import explained_model, import_model, model_feature_names
from ._loss import check_loss, make_loss, model_reliance
from ._parallel import tree_threads
from ._passes import Reference, boundary_forest, permutation_pass
from ._rashomon import RashomonSwaps, neighbourhoods
from ._result import MCRResult
from ._tables import ForestTables

__all__: list[str] = []      # internal module: the public names are in the API reference


def fit_rashomon_forest(X, y, task: str = "classification", n_estimators: int = 500, random_state=0,
                        n_jobs=None, **params):
    """Fit the reference forest RF-MCR needs: a random forest with ``bootstrap=False``.

    Every tree is grown on all training rows (the paper's "modified random forest", §4.3), so
    that its partitions, surrogates and training predictions can be recomputed from the data.
    Randomness comes only from the features considered at each split (``max_features``; default
    ``"sqrt"`` for classification and ``1/3`` for regression, as in Breiman's forests).

    Parameters
    ----------
    X : array-like of shape (n, d) or DataFrame
        The training rows (a DataFrame keeps its column names).
    y : array-like of shape (n,)
        The training targets.
    task : {"classification", "regression"}, default "classification"
        Fit a ``RandomForestClassifier`` or a ``RandomForestRegressor``.
    n_estimators : int, default 500
        Number of trees.
    random_state : int, numpy.random.RandomState or None, default 0
        Seed of the forest.
    n_jobs : int or None, default None
        Threads of the fit (scikit-learn convention).
    **params
        Extra keyword arguments of ``RandomForestClassifier`` / ``RandomForestRegressor``
        (``bootstrap=True`` is refused).

    Returns
    -------
    sklearn.ensemble.RandomForestClassifier or sklearn.ensemble.RandomForestRegressor
        The fitted bootstrap-free forest.

    Raises
    ------
    InputError
        An unknown ``task``, or ``bootstrap=True``.

    See Also
    --------
    xai_plugins.mcr.model_class_reliance : Its MCR ranges.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from xai_plugins.mcr import fit_rashomon_forest
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = fit_rashomon_forest(X, y, task="regression", n_estimators=5, max_depth=3)
    >>> type(forest).__name__, forest.bootstrap, forest.max_features
    ('RandomForestRegressor', False, 0.3333333333333333)
    """
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    if task not in ("classification", "regression"):
        raise InputError(f"task must be 'classification' or 'regression', got {task!r}")
    if params.pop("bootstrap", False):
        raise InputError("RF-MCR needs bootstrap=False: every tree must see all training rows")
    cls = RandomForestClassifier if task == "classification" else RandomForestRegressor
    params.setdefault("max_features", "sqrt" if task == "classification" else 1.0 / 3.0)
    model = cls(n_estimators=n_estimators, bootstrap=False, random_state=random_state, n_jobs=n_jobs,
                **params)
    arr = check_matrix(X, name="X")
    return model.fit(X if hasattr(X, "columns") else arr, y)


def model_class_reliance(model, X, y, features=None, groups=None, n_permutations: int = 10,
                         epsilon: float = 0.0, random_state=0, loss: str | Callable = None,
                         reliance: str = "difference", n_jobs=None, progress: bool = True) -> MCRResult:
    r"""Model class reliance ranges [MCR-, MCR+] of every feature (or group) of a random forest.

    RF-MCR (Smith, Mansilla & Goulding, NeurIPS 2020). Model reliance of a model f on a variable
    :math:`X_1` (a feature or a group), with :math:`X_2` the other inputs and :math:`\Phi` an
    unconditional permutation of :math:`X_1`:

    .. math::

        \mathrm{MR}_{X_1}(f) = \mathbb{E}\,L(f, \langle X_1^\Phi, X_2, Y\rangle)
                               - \mathbb{E}\,L(f, \langle X_1, X_2, Y\rangle)

    (eq. 1, ``reliance="difference"``; the ratio for ``"ratio"``). Over the ε-Rashomon set
    :math:`R_\varepsilon(F)` of the reference forest F,
    :math:`\mathrm{MCR}^{\pm}_{X_1}(F) = \max / \min_{F' \in R_\varepsilon(F)} \mathrm{MR}_{X_1}(F')`
    (eq. 2-4), estimated from the trees of F itself: surrogate splits (S±) and swaps of
    predictively equivalent trees (T±) give boundary forests F±_T that predict the training data
    like F.

    Parameters
    ----------
    model : fitted RandomForestClassifier or RandomForestRegressor, or Pipeline
        A scikit-learn random forest grown with ``bootstrap=False`` (see
        :func:`fit_rashomon_forest`), fitted on exactly ``X, y`` (checked against the trees'
        node counts); or a scikit-learn ``Pipeline`` of per-column transformers and encoders in
        front of such a forest (fitted on exactly ``X, y``, the pipeline's raw input).
    X : array-like of shape (n, d) or DataFrame
        The training rows (no NaN).
    y : array-like of shape (n,)
        The training targets (labels the forest was fitted on).
    features : sequence of int or str, or None, default None
        The features to assess (indices or names); default every feature.
    groups : dict or None, default None
        ``{"name": [cols]}``: each set is permuted jointly and reported as one row.
    n_permutations : int, default 10
        Seeded shuffles of each feature (>= 1).
    epsilon : float, default 0.0
        The Rashomon tolerance ε >= 0: trees whose training predictions differ from a tree's on
        at most a share ε of the rows (classification, predicted labels) or have MSE <= ε
        (regression) may be swapped for it; 0: only trees that predict the training data
        identically.
    random_state : int, numpy.random.Generator or None, default 0
        Seed of the permutations.
    loss : str, callable or None, default None
        ``"zero_one"`` (default, accuracy drop) or ``"log_loss"`` for classifiers,
        ``"squared_error"`` (default) or ``"absolute_error"`` for regressors, or a callable
        ``loss(y_true, y_pred) -> per-row losses`` (y_pred: class probabilities (n, C) or values
        (n,)).
    reliance : {"difference", "ratio"}, default "difference"
        ``"difference"`` (paper, eq. 1) or ``"ratio"`` (Fisher et al.).
    n_jobs : int or None, default None
        Threads over the trees; results do not depend on ``n_jobs``.
    progress : bool, default True
        Show a progress bar over the features.

    Returns
    -------
    MCRResult
        The table of ranges per feature (or group) and the settings.

    Raises
    ------
    UnsupportedModelError
        A boosting model or another unsupported model type.
    InputError
        A forest grown with ``bootstrap=True`` or with several outputs, labels in ``y`` the forest
        was not fitted on, bad settings (``n_permutations`` < 1, ``epsilon`` < 0, unknown
        ``reliance``), empty groups, or Pipeline input columns that reach no column of its model.
    InputTypeError
        A non-integer ``n_permutations``, ``groups`` that is not a dict.
    NotFittedError
        An unfitted model.

    See Also
    --------
    xai_plugins.mcr.fit_rashomon_forest : Fits the reference forest.
    xai_plugins.mcr.MCRResult : The result.

    Notes
    -----
    The reported bounds are the extreme reliances over the Rashomon members examined:
    ``mcr_minus = min(MR(F-_T), MR(F))`` and ``mcr_plus = max(MR(F+_T), MR(F))``; the boundary
    forests' own reliances are in the table too. A Pipeline is assessed in its input columns: each
    input column is permuted as a whole, a one-hot encoded one with all its one-hot columns moving
    together (the forest's columns coming from one input column form a group), so that the table
    speaks of ``city``, not of ``city_paris``; ``features`` and ``groups`` name input columns.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from xai_plugins.mcr import fit_rashomon_forest, model_class_reliance
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = fit_rashomon_forest(X, y, task="regression", n_estimators=5, max_depth=3,
    ...                              random_state=0)
    >>> result = model_class_reliance(forest, X, y, n_permutations=2, progress=False)
    >>> result.table.shape, result.loss, result.reliance
    ((10, 11), 'squared_error', 'difference')
    >>> t = result.table
    >>> bool(((t.mcr_minus <= t.model_reliance) & (t.model_reliance <= t.mcr_plus)).all())
    True
    >>> bool(t.within_rashomon.all())
    True
    """
    inner, to_inner, sources = explained_model(model)
    if sources is not None:
        return _pipeline_reliance(model, inner, to_inner(X), sources, y, features, groups,
                                  n_permutations=n_permutations, epsilon=epsilon, random_state=random_state,
                                  loss=loss, reliance=reliance, n_jobs=n_jobs, progress=progress)
    import pandas as pd

    from .._extras import tqdm

    estimators, is_clf = _check_model(model)
    _check_settings(n_permutations, epsilon, reliance)
    loss = check_loss(loss, "classification" if is_clf else "regression")
    Xc, names = model_rows(X, model_feature_names(model), int(model.n_features_in_), allow_nan=False)
    X32 = np.ascontiguousarray(Xc, dtype=np.float32)   # scikit-learn trees compare float32(x) <= t
    units = _units(features, groups, names)
    y, y_index = _check_target(model, y, X32.shape[0], is_clf)
    seeds = check_random_state(random_state).integers(0, 2**63 - 1, size=n_permutations)

    tables = ForestTables(import_model(model), estimators, X32, is_clf)
    loss_fn = make_loss(loss, tables.node_pred, y, y_index, model.classes_ if is_clf else None)
    with tree_threads(n_jobs) as pmap:
        wanted = tables.among(np.arange(tables.forest.n_features), [c for _, cols in units for c in cols])
        survey = tables.survey(loss_fn, pmap, wanted)   # only the surrogate splits the units need
        fit = survey.forest_sum / tables.T
        ref = Reference(tables, loss_fn, survey.tree_loss, survey.forest_sum, fit, loss_fn.forest_mean(fit), pmap)
        swap = RashomonSwaps(survey.digests, neighbourhoods(tables, epsilon, is_clf, pmap) if epsilon > 0 else None)
        rows = [_feature_row(ref, survey.surrogates, swap, cols, seeds, epsilon, reliance)
                for _, cols in tqdm(units, desc="RF-MCR", unit="feature", disable=not progress)]
    table = pd.DataFrame(rows, index=pd.Index([u[0] for u in units], name="feature"))
    loss_name = getattr(loss, "__name__", "callable") if callable(loss) else loss
    return MCRResult(table=table, loss=loss_name, reliance=reliance, epsilon=float(epsilon),
                     n_permutations=int(n_permutations), n_trees=len(estimators),
                     n_groups=swap.n_groups, groups={u[0]: [names[c] for c in u[1]] for u in units if len(u[1]) > 1})


def _pipeline_reliance(pipeline, inner, Xt, sources, y, features, groups, **options) -> MCRResult:
    """:func:`model_class_reliance` of a Pipeline: its forest on the transformed rows ``Xt``, each
    input column (or group of input columns) permuted as the group of forest columns it became."""
    names = model_feature_names(pipeline) or [f"x{j}" for j in range(int(sources.max()) + 1)]
    units = _units(features, groups, names)
    if hasattr(Xt, "toarray"):           # a sparse one-hot block
        Xt = Xt.toarray()
    where = {name: np.flatnonzero(np.isin(sources, cols)).tolist() for name, cols in units}
    empty = [name for name, cols in where.items() if not cols]
    if empty:
        raise InputError(f"input column(s) {empty} of the Pipeline reach no column of its model (dropped by a "
                         "transformer): their reliance is 0 by construction; leave them out of features=")
    return model_class_reliance(inner, np.asarray(Xt, dtype=np.float64), y, groups=where, **options)


def _feature_row(ref: Reference, surrogates, swap, cols, seeds, epsilon, reliance) -> dict:
    """One row of the result table for the feature set ``cols``: both passes, then the bounds."""
    variants = {"plus": surrogates.transform(ref.tables, cols, plus=True),
                "minus": surrogates.transform(ref.tables, cols, plus=False)}
    first = permutation_pass(ref, cols, seeds, variants)
    T, K = ref.tables.T, len(seeds)
    ref_perm = sum(ref.loss.forest_mean(r / T) - ref.fit_loss for r in first.forest_sums["reference"])
    out = {"mcr_minus": np.nan, "model_reliance": float(model_reliance(ref_perm / K, ref.fit_loss, reliance)),
           "mcr_plus": np.nan}
    for v, sign in (("minus", -1.0), ("plus", 1.0)):
        bound = boundary_forest(ref, cols, seeds, variants[v], first.tree_delta[v], first.forest_sums[v],
                                first.leaves[v], swap, sign, epsilon, reliance)
        out[f"mr_{v}_forest"], out[f"loss_{v}_forest"], out[f"deviation_{v}"] = \
            bound["mr"], bound["loss"], bound["deviation"]
    if reliance == "difference":  # incremental sums leave rounding noise around exact zeros
        for key in ("model_reliance", "mr_minus_forest", "mr_plus_forest"):
            out[key] = 0.0 if abs(out[key]) < 1e-12 else out[key]
    out["mcr_minus"] = min(out["mr_minus_forest"], out["model_reliance"])
    out["mcr_plus"] = max(out["mr_plus_forest"], out["model_reliance"])
    out["reference_loss"] = ref.fit_loss
    tol = epsilon + 1e-12
    out["within_rashomon"] = bool(out["loss_minus_forest"] <= ref.fit_loss + tol
                                  and out["loss_plus_forest"] <= ref.fit_loss + tol
                                  and (epsilon > 0 or max(out["deviation_minus"], out["deviation_plus"]) <= 1e-9))
    return out


def _check_settings(n_permutations, epsilon, reliance) -> None:
    """Clear errors for an unusable ``n_permutations``, ``epsilon`` or ``reliance``."""
    if isinstance(n_permutations, (bool, np.bool_)) or not isinstance(n_permutations, (int, np.integer)):
        raise InputTypeError(f"n_permutations must be an int, got {type(n_permutations).__name__}")
    if n_permutations < 1:
        raise InputError(f"n_permutations must be >= 1, got {n_permutations}")
    if not np.isfinite(epsilon) or epsilon < 0:
        raise InputError(f"epsilon must be a finite number >= 0, got {epsilon}")
    if reliance not in ("difference", "ratio"):
        raise InputError(f"reliance must be 'difference' or 'ratio', got {reliance!r}")


def _check_target(model, y, n: int, is_clf: bool):
    """``(y, y_index)``: the targets as a flat array (float64 for regression) and, for a classifier,
    each row's class index in ``model.classes_`` (None for a regressor)."""
    y = check_target(y, list(model.classes_) if is_clf else None, n_rows=n, what="y")
    if not is_clf:
        return y, None
    classes = model.classes_
    y_index = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    if not np.array_equal(classes[y_index], y):
        raise InputError("y contains labels the forest was not fitted on; pass its training targets")
    return y, y_index


def _check_model(model):
    """Return (estimators, is_classifier) for a supported fitted forest or raise a clear error."""
    from sklearn import ensemble

    name = type(model).__name__
    boosting = ("GradientBoosting", "HistGradientBoosting", "XGB", "LGBM", "Booster", "AdaBoost", "CatBoost")
    if any(b in name for b in boosting):
        raise UnsupportedModelError(f"{name} is a boosting model, which RF-MCR does not support: the method swaps "
                        "predictively equivalent trees of an averaging forest. Use "
                        "fit_rashomon_forest() or a RandomForest*/ExtraTrees* model with bootstrap=False")
    forests = (ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
               ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor)
    if not isinstance(model, forests):
        raise UnsupportedModelError(f"unsupported model {name}; RF-MCR needs a fitted RandomForestClassifier/Regressor "
                        "or ExtraTreesClassifier/Regressor grown with bootstrap=False (see fit_rashomon_forest)")
    check_is_fitted(model)
    if model.bootstrap:
        raise InputError(f"{name} was grown with bootstrap=True: each tree saw a different resample, so its "
                         "surrogate splits and training predictions cannot be recomputed and predictively "
                         "equivalent trees cannot be matched. Refit with bootstrap=False (randomness from "
                         "max_features), e.g. with xai_plugins.mcr.fit_rashomon_forest")
    if model.n_outputs_ != 1:
        raise InputError(f"{name} with {model.n_outputs_} outputs is not supported; fit one output")
    return model.estimators_, hasattr(model, "classes_")


def _units(features, groups, names):
    """List of (name, column indices) to permute: the groups, then single features."""
    d = len(names)

    def col(c):
        return feature_index(c, names, d)

    units = []
    if groups is not None:
        if not isinstance(groups, dict):
            raise InputTypeError("groups must be a dict {name: [columns...]}")
        for gname, cols in groups.items():
            cols = [cols] if isinstance(cols, (str, int, np.integer)) else list(cols)
            if not cols:
                raise InputError(f"group {gname!r} is empty")
            units.append((str(gname), sorted({col(c) for c in cols})))
    if features is not None or groups is None:
        feats = range(d) if features is None else ([features] if isinstance(features, (str, int, np.integer))
                                                   else list(features))
        units.extend((names[j], [j]) for j in (col(c) for c in feats))
    if not units:
        raise InputError("no features or groups to evaluate")
    return units
