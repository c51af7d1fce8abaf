"""Local and global Mean Decrease of Impurity (Sutera et al., "From global to local MDI").

Local MDI of feature j at a sample x (Definition 1, averaged over the T trees):

    LMDI_j(x) = (1/T) Σ_t Σ_{nodes n on x's path in t, split on j} i(n) - i(child of n that x follows)

with the raw node impurities the trees were grown with (scikit-learn ``tree_.impurity``: Gini,
entropy in bits, variance / Friedman MSE). Its mean over the training set is the forest's
global MDI before normalisation (eq. 8-9): the mean over trees of
``tree_.compute_feature_importances(normalize=False)``.

Only models that store node impurities are supported: scikit-learn decision trees, random
forests, extra trees and gradient boosting. XGBoost, LightGBM and HistGradientBoosting store
no impurity and are refused with :class:`~xai_plugins.forest.UnsupportedModelError` rather than
recomputed from data, so that the numbers always describe the trees the model actually grew.
"""

from __future__ import annotations

import numpy as np

from . import _native
from ._validation import check_matrix
from .forest import Forest, UnsupportedModelError, import_model


def impurity_forest(model) -> Forest:
    """The imported model, or UnsupportedModelError when it stores no node impurities."""
    forest = import_model(model)
    if forest.impurity is None:
        raise UnsupportedModelError(
            f"local MDI needs node impurities, which {forest.model_type} does not store; supported: "
            "scikit-learn DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*")
    return forest


def local_mdi(model, X, *, n_jobs=None) -> np.ndarray:
    """(n, d) local MDI of every row of ``X`` (NaN follows each node's missing-value direction)."""
    forest = impurity_forest(model)
    X = check_matrix(X, n_features=forest.n_features, allow_nan=True)
    return _native.local_mdi(forest, X, n_jobs=n_jobs)


def in_bag_counts(model, n_samples: int) -> np.ndarray:
    """(n_samples, n_trees) how often each training row was drawn into each tree's bootstrap
    sample (all ones for forests grown without bootstrap).

    Replays scikit-learn's draw for an unweighted fit: ``n_boot`` indices from
    ``RandomState(tree.random_state).randint(0, n_samples, n_boot)``.
    """
    from sklearn.utils import check_random_state

    if not getattr(model, "bootstrap", False):
        return np.ones((n_samples, len(model.estimators_)))
    m = model.max_samples
    n_boot = n_samples if m is None else m if isinstance(m, (int, np.integer)) else max(round(n_samples * m), 1)
    counts = np.empty((n_samples, len(model.estimators_)))
    for t, est in enumerate(model.estimators_):
        drawn = check_random_state(est.random_state).randint(0, n_samples, n_boot)
        counts[:, t] = np.bincount(drawn, minlength=n_samples)
    return counts


def global_mdi(model, X=None, sample_weight=None, *, in_bag=False, n_jobs=None) -> np.ndarray:
    """(d,) global MDI, unnormalised.

    - ``X`` None: from the trees alone, the mean over trees of
      Σ_n w(n)/w(root) (i(n) - w(left)/w(n) i(left) - w(right)/w(n) i(right)) per split feature
      (what ``compute_feature_importances(normalize=False)`` gives);
    - ``X`` given: the (``sample_weight``-weighted) mean of :func:`local_mdi` over its rows; with
      the training data of a forest grown without bootstrap this equals the above;
    - ``in_bag=True`` (``X`` must be the training data of a bootstrap forest): each tree averages
      only over its own bootstrap sample, weighted by in-bag counts, which restores the identity.
    """
    forest = impurity_forest(model)
    if X is None:
        if sample_weight is not None or in_bag:
            raise ValueError("sample_weight and in_bag need the data X")
        return _tree_mdi(forest)
    X = check_matrix(X, n_features=forest.n_features, allow_nan=True)
    n = len(X)
    if in_bag:
        counts = in_bag_counts(model, n)
        weight = counts / counts.sum(axis=0, keepdims=True) / forest.n_trees  # per tree: mean over its sample
        return _native.local_mdi(forest, X, tree_weight=np.ascontiguousarray(weight), n_jobs=n_jobs).sum(axis=0)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
        raise ValueError("sample_weight must be (n_rows,), finite, non-negative, and not all zero")
    return (w[:, None] * _native.local_mdi(forest, X, n_jobs=n_jobs)).sum(axis=0) / w.sum()


def _tree_mdi(forest: Forest) -> np.ndarray:
    if forest.weight is None:
        raise UnsupportedModelError("global MDI without data needs per-node sample weights")
    out = np.zeros(forest.n_features)
    for t in range(forest.n_trees):
        a, b = forest.tree_offset[t], forest.tree_offset[t + 1]
        left, right = forest.left_child[a:b], forest.right_child[a:b]
        imp, w = forest.impurity[a:b], forest.weight[a:b]
        internal = np.flatnonzero(left >= 0)
        decrease = (w[internal] * imp[internal] - w[left[internal]] * imp[left[internal]]
                    - w[right[internal]] * imp[right[internal]]) / w[0]
        out += np.bincount(forest.feature[a:b][internal], weights=decrease, minlength=forest.n_features)
    return out / forest.n_trees
