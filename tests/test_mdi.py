"""Local MDI against an independent numpy traversal (sklearn's decision_path) and the
paper's identities (mean of local MDI = global MDI)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier

import xai_plugins as xp
from xai_plugins.errors import FeatureMismatchError, InputError, UnsupportedModelError, XaiWarning


def decision_path_mdi(model, X):
    """For each tree, i(parent) - i(child followed) along sklearn's own decision_path, averaged."""
    estimators = np.ravel(getattr(model, "estimators_", [model]))
    out = np.zeros(X.shape)
    for est in estimators:
        tree = est.tree_
        path = est.decision_path(X.astype(np.float32)).toarray().astype(bool)
        for i in range(len(X)):
            nodes = np.flatnonzero(path[i])  # increasing ids: parents before children in sklearn
            for parent, child in zip(nodes[:-1], nodes[1:]):
                out[i, tree.feature[parent]] += tree.impurity[parent] - tree.impurity[child]
    return out / len(estimators)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:300], y[:300]


@pytest.mark.parametrize("make", [
    lambda: RandomForestClassifier(n_estimators=8, criterion="entropy", random_state=0),
    lambda: ExtraTreesClassifier(n_estimators=8, criterion="gini", random_state=0),
    lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
])
def test_local_mdi_matches_decision_path(cancer, make):
    X, y = cancer
    model = make().fit(X, y)
    np.testing.assert_allclose(xp.local_mdi(model, X[:60]), decision_path_mdi(model, X[:60]), rtol=1e-12, atol=1e-15)


def test_local_mdi_regression_and_gradient_boosting(diabetes):
    X, y = diabetes
    for model in (RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0).fit(X, y),
                  GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)):
        np.testing.assert_allclose(xp.local_mdi(model, X[:40]), decision_path_mdi(model, X[:40]),
                                   rtol=1e-12, atol=1e-9)


def _unnormalised_mean(model):
    return np.mean([e.tree_.compute_feature_importances(normalize=False) for e in model.estimators_], axis=0)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_mean_of_local_mdi_is_global_mdi_without_bootstrap(cancer, criterion):
    X, y = cancer
    model = RandomForestClassifier(n_estimators=10, bootstrap=False, max_features=0.5, criterion=criterion,
                                   random_state=0).fit(X, y)
    expected = _unnormalised_mean(model)
    np.testing.assert_allclose(xp.global_mdi(model, X), expected, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(xp.local_mdi(model, X).mean(axis=0), expected, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(xp.global_mdi(model), expected, rtol=1e-12, atol=1e-16)
    # fully grown, no bootstrap: also sklearn's normalised importances
    total = expected.sum()
    np.testing.assert_allclose(xp.global_mdi(model, X) / total, model.feature_importances_, rtol=1e-10)


def test_bootstrap_needs_in_bag_weights(cancer):
    X, y = cancer
    model = RandomForestClassifier(n_estimators=10, bootstrap=True, random_state=0).fit(X, y)
    expected = _unnormalised_mean(model)
    with pytest.warns(XaiWarning, match="in_bag=True"):
        plain = xp.global_mdi(model, X)
    assert np.max(np.abs(plain - expected)) > 1e-4 * expected.max()  # the plain mean is off
    np.testing.assert_allclose(xp.global_mdi(model, X, in_bag=True), expected, rtol=1e-12, atol=1e-16)


def test_regression_identity_and_sample_weight(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=6, bootstrap=False, max_features=0.6, random_state=0).fit(X, y)
    np.testing.assert_allclose(xp.global_mdi(model, X), _unnormalised_mean(model), rtol=1e-12)
    w = np.arange(len(X)) % 3
    manual = (w[:, None] * xp.local_mdi(model, X)).sum(0) / w.sum()
    np.testing.assert_allclose(xp.global_mdi(model, X, sample_weight=w), manual, rtol=1e-14)


def test_models_without_impurity_are_refused(diabetes):
    xgb = pytest.importorskip("xgboost")
    X, y = diabetes
    model = xgb.XGBRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="node impurities"):
        xp.local_mdi(model, X)


def test_bad_input(cancer):
    X, y = cancer
    model = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(InputError, match="columns"):
        xp.local_mdi(model, X[:, :5])
    with pytest.raises(InputError, match="infinite"):
        xp.local_mdi(model, np.full((2, X.shape[1]), np.inf))
    with pytest.raises(InputError, match="sample_weight"):
        xp.global_mdi(model, X, sample_weight=-np.ones(len(X)), in_bag=False)
    with pytest.raises(InputError, match="need the data"):
        xp.global_mdi(model, in_bag=True)
    with pytest.raises(InputError, match="sample_weight cannot be combined"):
        xp.global_mdi(model, X, sample_weight=np.ones(len(X)), in_bag=True)


# ----------------------------------------------------------------------------- in_bag checks

@pytest.fixture(scope="module")
def bootstrap_forest(cancer):
    X, y = cancer
    return RandomForestClassifier(n_estimators=6, max_depth=6, random_state=0).fit(X, y), X, y


def test_in_bag_refuses_a_subset_of_the_training_rows(bootstrap_forest):
    model, X, _ = bootstrap_forest
    with pytest.raises(InputError, match="exact X the forest was fitted on"):
        xp.global_mdi(model, X[:250], in_bag=True)


def test_in_bag_refuses_permuted_training_rows(bootstrap_forest):
    model, X, _ = bootstrap_forest
    perm = np.random.default_rng(0).permutation(len(X))
    with pytest.raises(InputError, match="same row order"):
        xp.global_mdi(model, X[perm], in_bag=True)


def test_in_bag_with_the_training_data_is_the_trees_mdi(bootstrap_forest):
    model, X, _ = bootstrap_forest
    np.testing.assert_allclose(xp.global_mdi(model, X, in_bag=True), xp.global_mdi(model), rtol=1e-12, atol=1e-16)


def test_in_bag_weighted_fit_is_checked(cancer):
    # the trees' leaf weights no longer equal plain in-bag counts (scikit-learn < 1.8 draws
    # unweighted and multiplies; balanced_subsample multiplies class weights in every version)
    X, y = cancer
    model = RandomForestClassifier(n_estimators=4, max_depth=4, class_weight="balanced_subsample",
                                   random_state=0).fit(X, y)
    with pytest.raises(InputError, match="sample_weight or class_weight"):
        xp.global_mdi(model, X, in_bag=True)


def test_in_bag_without_bootstrap_checks_rows_and_is_the_plain_mean(cancer):
    X, y = cancer
    model = ExtraTreesClassifier(n_estimators=4, max_depth=6, random_state=0).fit(X, y)   # bootstrap=False
    perm = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_allclose(xp.global_mdi(model, X[perm], in_bag=True), xp.global_mdi(model, X),
                               rtol=1e-12, atol=1e-16)
    with pytest.raises(InputError):
        xp.global_mdi(model, X[:200], in_bag=True)


def test_in_bag_refuses_models_without_bootstrap_draws(cancer):
    X, y = cancer
    for model in (DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y),
                  GradientBoostingClassifier(n_estimators=3, max_depth=2, subsample=0.5, random_state=0).fit(X, y)):
        with pytest.raises(UnsupportedModelError, match="RandomForest"):
            xp.global_mdi(model, X, in_bag=True)


def test_bootstrap_forest_without_in_bag_warns(bootstrap_forest):
    model, X, _ = bootstrap_forest
    with pytest.warns(XaiWarning, match="bootstrap"):
        xp.global_mdi(model, X[:50])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xp.global_mdi(model)                          # trees only: no warning
        xp.global_mdi(model, X, in_bag=True)


def test_no_warning_without_bootstrap(cancer):
    X, y = cancer
    model = RandomForestClassifier(n_estimators=3, max_depth=4, bootstrap=False, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xp.global_mdi(model, X)


# ----------------------------------------------------------------------------- DataFrame columns

@pytest.fixture(scope="module")
def frame_forest(cancer):
    pd = pytest.importorskip("pandas")
    X, y = cancer
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    return RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0).fit(df, y), df


def test_dataframe_columns_are_aligned_by_name(frame_forest):
    model, df = frame_forest
    reordered = df[df.columns[::-1]]
    expected = xp.local_mdi(model, df.to_numpy()[:40])
    np.testing.assert_array_equal(xp.local_mdi(model, reordered.iloc[:40]), expected)
    np.testing.assert_array_equal(xp.global_mdi(model, reordered, in_bag=True), xp.global_mdi(model, df, in_bag=True))


def test_dataframe_with_missing_or_unexpected_column_is_refused(frame_forest):
    model, df = frame_forest
    with pytest.raises(FeatureMismatchError, match="f3"):
        xp.local_mdi(model, df.drop(columns="f3"))
    with pytest.raises(FeatureMismatchError, match="extra"):
        xp.local_mdi(model, df.rename(columns={"f7": "extra"}))
    with pytest.raises(FeatureMismatchError, match="f3"):
        xp.global_mdi(model, df.drop(columns="f3"))


def ordered_mdi(paths, impurities, features, X, weight):
    """Local MDI with every term added as the C core documents it: per row, trees in order, root
    to leaf, w(i, t) * (i(node) - i(child)). ``paths(t, i)``: the node ids on row i's path in tree t."""
    out = np.zeros(X.shape)
    for i in range(len(X)):
        for t in range(len(impurities)):
            if weight[i, t] == 0.0:
                continue
            nodes = paths(t, i)
            for parent, child in zip(nodes[:-1], nodes[1:]):
                out[i, features[t][parent]] += weight[i, t] * (impurities[t][parent] - impurities[t][child])
    return out


def python_walk(forest, t, x):
    """Node ids (local to tree t) on the path of row x, routed in Python: float32 input when the
    forest says so, NaN by missing_left, `<` or `<=` by the split rule."""
    a = forest.tree_offset[t]
    node, nodes = 0, [0]
    while forest.left_child[a + node] >= 0:
        v = x[forest.feature[a + node]]
        v = float(np.float32(v)) if forest.input_float32 else v
        thr = forest.threshold[a + node]
        if np.isnan(v):
            left = bool(forest.missing_left[a + node])
        else:
            left = v < thr if forest.split_rule == "lt" else v <= thr
        node = forest.left_child[a + node] if left else forest.right_child[a + node]
        nodes.append(node)
    return nodes


@pytest.fixture(scope="module")
def wide_nan_forest():
    """A forest on 1,500 features (so that the C core's row blocks are a few hundred rows) with NaN
    in training (missing values sent both ways) and in the explained rows."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 1500))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + rng.normal(0, 0.1, 300)
    X[rng.random(X.shape) < 0.1] = np.nan
    model = RandomForestRegressor(n_estimators=6, max_features=0.02, random_state=0).fit(X, y)
    rows = rng.normal(size=(701, 1500))
    rows[rng.random(rows.shape) < 0.2] = np.nan
    rows[:300] = X
    return model, rows


def test_local_mdi_is_the_documented_sum_to_the_bit(wide_nan_forest):
    """Every row equals, bit for bit, its terms added in tree order, root to leaf, along sklearn's
    own decision_path, over several row blocks, for any thread count and with per-tree weights
    (zeros included)."""
    from xai_plugins import _native

    model, rows = wide_nan_forest
    trees = [est.tree_ for est in model.estimators_]
    dense = [est.decision_path(rows.astype(np.float32)).toarray().astype(bool) for est in model.estimators_]
    paths = lambda t, i: np.flatnonzero(dense[t][i])  # noqa: E731 - increasing ids: parents first in sklearn
    args = (paths, [tr.impurity for tr in trees], [tr.feature for tr in trees], rows)
    plain = ordered_mdi(*args, np.full((len(rows), len(trees)), 1.0 / len(trees)))
    for n_jobs in (1, 2, 3):
        np.testing.assert_array_equal(xp.local_mdi(model, rows, n_jobs=n_jobs), plain)
    weight = np.random.default_rng(1).integers(0, 3, (len(rows), len(trees))) / 7.0
    forest = xp.import_model(model)
    np.testing.assert_array_equal(_native.local_mdi(forest, rows, tree_weight=weight, n_jobs=2),
                                  ordered_mdi(*args, weight))


def test_walk_layout_is_pre_order_with_the_impurity_decreases(cancer):
    """The cached walk layout: one record per node, each tree in depth-first pre-order (left child
    next), the split feature and NaN direction, the right child, i(parent) - i(node)."""
    from xai_plugins import _native

    X, y = cancer
    model = RandomForestClassifier(n_estimators=3, max_depth=6, random_state=0).fit(X, y)
    forest = xp.import_model(model)
    layout = _native.mdi_layout(forest)
    assert _native.mdi_layout(forest) is layout and layout.nbytes == 24 * forest.n_nodes
    records = layout.view(np.dtype([("threshold", "<f8"), ("gain", "<f8"), ("split", "<i4"), ("right", "<i4")]))
    for t, est in enumerate(model.estimators_):
        tree = est.tree_
        nodes = records[forest.tree_offset[t]:forest.tree_offset[t + 1]]
        order, stack, parent = [], [(0, -1)], {}
        while stack:                    # pre-order of sklearn's tree, written independently
            node, up = stack.pop()
            order.append(node)
            parent[node] = up
            if tree.children_left[node] >= 0:
                stack += [(tree.children_right[node], node), (tree.children_left[node], node)]
        new = {old: k for k, old in enumerate(order)}
        for k, old in enumerate(order):
            up = parent[old]
            assert nodes["gain"][k] == (0.0 if up < 0 else tree.impurity[up] - tree.impurity[old])
            if tree.children_left[old] < 0:
                assert nodes["split"][k] == -1
                continue
            assert nodes["threshold"][k] == tree.threshold[old]
            assert nodes["split"][k] == 2 * tree.feature[old] + int(tree.missing_go_to_left[old])
            assert new[tree.children_left[old]] == k + 1 and new[tree.children_right[old]] == nodes["right"][k]


def test_relabelled_nodes_and_the_strict_split_rule(diabetes):
    """Node ids in any order (as XGBoost reuses slots) give the same bits; the `<` rule with inputs
    on the thresholds routes as a Python walk does."""
    import dataclasses

    X, y = diabetes
    model = RandomForestRegressor(n_estimators=4, max_depth=7, random_state=0).fit(X, y)
    forest = xp.import_model(model)
    rng = np.random.default_rng(3)
    arrays = {k: [] for k in ("left_child", "right_child", "feature", "threshold", "missing_left", "value",
                              "impurity", "weight")}
    for t in range(forest.n_trees):
        a, b = forest.tree_offset[t], forest.tree_offset[t + 1]
        perm = np.concatenate([[0], 1 + rng.permutation(b - a - 1)])     # old local id -> new, root kept
        inverse = np.argsort(perm)
        for name in ("left_child", "right_child"):
            old = getattr(forest, name)[a:b][inverse]
            arrays[name].append(np.where(old >= 0, perm[np.maximum(old, 0)], -1).astype(np.int32))
        for name in ("feature", "threshold", "missing_left", "value", "impurity", "weight"):
            arrays[name].append(getattr(forest, name)[a:b][inverse])
    shuffled = dataclasses.replace(forest, **{k: np.concatenate(v) for k, v in arrays.items()})
    rows = X[:150].copy()
    np.testing.assert_array_equal(xp.local_mdi(shuffled, rows), xp.local_mdi(forest, rows))
    strict = dataclasses.replace(shuffled, split_rule="lt", input_float32=False)
    internal = strict.left_child >= 0
    rows[::2, strict.feature[internal][:75]] = strict.threshold[internal][:75]     # ties with thresholds
    paths = lambda t, i: python_walk(strict, t, rows[i])  # noqa: E731
    per_tree = lambda name: [getattr(strict, name)[strict.tree_offset[t]:strict.tree_offset[t + 1]]  # noqa: E731
                             for t in range(strict.n_trees)]
    expected = ordered_mdi(paths, per_tree("impurity"), per_tree("feature"), rows,
                           np.full((len(rows), strict.n_trees), 1.0 / strict.n_trees))
    np.testing.assert_array_equal(xp.local_mdi(strict, rows), expected)
