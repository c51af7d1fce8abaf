"""RF-MCR: the paper's XOR ground truth, surrogate and equivalence guarantees, reproducibility and
input checks."""

import copy
import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402

from xai_plugins.forest import import_model  # noqa: E402
from xai_plugins.mcr import MCRResult, _tables, fit_rashomon_forest, model_class_reliance  # noqa: E402
from xai_plugins.mcr._loss import make_loss  # noqa: E402
from xai_plugins.mcr._parallel import OrderedMap  # noqa: E402
from xai_plugins.mcr._rashomon import RashomonSwaps, neighbourhoods  # noqa: E402
from xai_plugins.mcr._tables import ForestTables  # noqa: E402


def mcr(model, X, y, **kw):
    kw.setdefault("progress", False)
    return model_class_reliance(model, X, y, **kw)


@pytest.fixture(scope="module")
def xor():
    """The paper's synthetic network: Y = A xor B, C an exact copy of B, 1,000 rows."""
    rng = np.random.default_rng(0)
    A, B = rng.integers(0, 2, 1000), rng.integers(0, 2, 1000)
    X = pd.DataFrame({"A": A, "B": B, "C": B.copy()}).astype(float)
    return X, A ^ B


@pytest.fixture(scope="module")
def correlated():
    """Regression with two noisy copies of one signal, a weaker signal and noise (600 rows)."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=600)
    X = np.c_[z + 0.3 * rng.normal(size=600), z + 0.3 * rng.normal(size=600), rng.normal(size=600),
              rng.normal(size=600)]
    y = 2 * z + X[:, 2] + 0.3 * rng.normal(size=600)
    return X, y


TRUE_XOR = {"A": (0.5, 0.5), "B": (0.0, 0.5), "C": (0.0, 0.5)}


@pytest.mark.parametrize("kind", ["rashomon", "extra_trees"])
def test_xor_recovers_true_mcr(xor, kind):
    X, y = xor
    if kind == "rashomon":
        model = fit_rashomon_forest(X, y, n_estimators=60, random_state=0)
    else:
        model = ExtraTreesClassifier(60, bootstrap=False, max_features=1, random_state=0).fit(X, y)
    res = mcr(model, X, y, n_permutations=10, random_state=0)
    assert isinstance(res, MCRResult)
    for name, (lo, hi) in TRUE_XOR.items():
        assert abs(res.table.loc[name, "mcr_minus"] - lo) < 0.03, (name, res.table.loc[name])
        assert abs(res.table.loc[name, "mcr_plus"] - hi) < 0.03, (name, res.table.loc[name])
    assert res.table["within_rashomon"].all()
    assert res.n_groups == 1  # every fully grown tree fits the XOR data exactly


def test_one_tree_surrogate(xor):
    X, y = xor
    for seed in range(50):
        model = RandomForestClassifier(1, bootstrap=False, max_features=None, random_state=seed).fit(X, y)
        used = set(model.estimators_[0].tree_.feature[model.estimators_[0].tree_.feature >= 0])
        if used == {0, 1}:  # splits on A and B, never on C
            break
    else:
        pytest.fail("no seed gave a tree splitting on B only")
    t = mcr(model, X, y).table
    assert t.loc["B", "model_reliance"] > 0.4
    assert t.loc["B", "mcr_minus"] == 0.0
    assert t.loc["C", "model_reliance"] == 0.0
    assert t.loc["C", "mcr_plus"] >= t.loc["B", "model_reliance"]


def test_duplicate_column_and_noise():
    rng = np.random.default_rng(2)
    x0, noise = rng.normal(size=500), rng.normal(size=500)
    X = np.c_[x0, x0, noise]
    y = (x0 > 0).astype(int)
    model = fit_rashomon_forest(X, y, n_estimators=30, random_state=0)
    t = mcr(model, X, y).table
    assert t.loc["x0", "mcr_minus"] == 0.0 and t.loc["x1", "mcr_minus"] == 0.0
    assert t.loc["x0", "mcr_plus"] > 0.3 and t.loc["x1", "mcr_plus"] > 0.3
    assert t.loc["x2", "mcr_plus"] <= 0.02

    Xr = np.c_[x0, x0, noise]
    yr = 2 * x0 + 0.1 * rng.normal(size=500)
    reg = fit_rashomon_forest(Xr, yr, task="regression", n_estimators=20, random_state=0, min_samples_leaf=5)
    t = mcr(reg, Xr, yr, features=[0, 1]).table
    assert (t["mcr_minus"] == 0.0).all() and (t["mcr_plus"] > 1.0).all()


@pytest.mark.parametrize("model_cls", [RandomForestRegressor, ExtraTreesRegressor])
def test_bounds_order_and_boundary_forests_predict_like_reference(correlated, model_cls):
    X, y = correlated
    model = model_cls(25, bootstrap=False, max_features=0.5, min_samples_leaf=3, random_state=0).fit(X, y)
    t = mcr(model, X, y, n_permutations=3).table
    assert (t["mcr_minus"] <= t["model_reliance"]).all() and (t["model_reliance"] <= t["mcr_plus"]).all()
    assert (t["deviation_minus"] <= 1e-12).all() and (t["deviation_plus"] <= 1e-12).all()
    assert t["within_rashomon"].all()
    np.testing.assert_allclose(t["loss_plus_forest"], t["reference_loss"], rtol=1e-12)
    ref = np.mean((model.predict(X) - y) ** 2)
    np.testing.assert_allclose(t["reference_loss"], ref, rtol=1e-9)
    # the copies of z share information: their ranges are wide, the noise feature's is tiny
    assert t.loc["x0", "mcr_plus"] > t.loc["x0", "mcr_minus"]
    assert t.loc["x3", "mcr_plus"] < 0.1 * t.loc["x0", "mcr_plus"]


def sklearn_tree(tables, splits, t):
    """Oracle: a copy of tree t's scikit-learn ``Tree`` carrying the splits ``(feature, threshold,
    flipped)`` (over all nodes; a flipped node's children swapped), for scikit-learn's own ``apply``."""
    feature, threshold, flipped = splits
    tree = copy.deepcopy(tables.trees[t])
    a = tables.offsets[t]
    b = a + tree.node_count
    inner = tree.children_left >= 0
    tree.feature[inner] = feature[a:b][inner]
    tree.threshold[inner] = threshold[a:b][inner]
    if flipped is not None:
        swap = inner & flipped[a:b]
        left, right = tree.children_left.copy(), tree.children_right.copy()
        tree.children_left[swap], tree.children_right[swap] = right[swap], left[swap]
    return tree


def permuted_rows(tables, cols, seed):
    """The training rows (float32) with the columns ``cols`` shuffled as RF-MCR shuffles them."""
    Xp = tables.X32.copy()
    Xp[:, cols] = tables.permuted(cols, seed)
    return Xp


def sklearn_layouts(tables, walked=None):
    """Oracle for ``_native.RerouteLayout``: the tree, or a version of it, routed by scikit-learn's
    ``apply`` on a copy of the tree carrying its splits (the trees routed are appended to
    ``walked``)."""
    class SklearnLayout:
        def __init__(self, forest, t, cols, splits=None):
            self.tree = sklearn_tree(tables, splits or (tables.feature, tables.threshold, None), t)
            self.cols, self.offset = list(cols), tables.offsets[t]
            self.changed, self.n_nodes = np.asarray(cols), tables.trees[t].node_count
            if walked is not None:
                walked.append(t)

        def table(self, X, max_per_row=0):
            return len(X)   # the oracle walks every row: its table only stands for the rows' count

        def route(self, X, start, new_values=None, node_value=None, table=None):
            assert table is None or table == len(X)
            rows = X.copy()
            if new_values is not None:
                rows[:, self.cols] = new_values
            leaf = (self.tree.apply(rows.astype(np.float32)) + self.offset).astype(np.int32)
            moved = np.flatnonzero(leaf != start) if start is not None else np.empty(0, dtype=np.int64)
            if node_value is None:
                return leaf, moved
            return leaf, moved, node_value[leaf[moved]] - node_value[start[moved]]

    return SklearnLayout


def test_transformed_trees_keep_training_leaves(correlated):
    """S+ and S- change splits, never the leaf a training row reaches."""
    X, y = correlated
    model = RandomForestRegressor(10, bootstrap=False, max_features=0.5, min_samples_leaf=2,
                                  random_state=0).fit(X, y)
    untouched = copy.deepcopy(model.estimators_)
    X32 = X.astype(np.float32)
    tables = ForestTables(import_model(model), model.estimators_, X32, is_classifier=False)
    loss = make_loss("squared_error", tables.node_pred, y)
    surrogates = tables.survey(loss, OrderedMap(None, 1)).surrogates
    n_changed = 0
    for j in range(X.shape[1]):
        Xp = permuted_rows(tables, [j], 0)
        for plus in (True, False):
            variant = surrogates.transform(tables, [j], plus)
            n_changed += variant.changed.sum()
            for t in np.flatnonzero(variant.changed):
                tree = sklearn_tree(tables, variant.splits, t)
                np.testing.assert_array_equal(tree.apply(X32), tables.trees[t].apply(X32))
                assert not np.array_equal(tree.feature, tables.trees[t].feature)
                # on permuted data only rows passing a changed node may move
                orig = tables.trees[t].apply(Xp)
                same = ~variant.below[orig + tables.offsets[t]]
                np.testing.assert_array_equal(tree.apply(Xp)[same], orig[same])
            if not plus:  # S- removes the feature wherever a surrogate exists
                assert all(variant.uses <= tables.uses(tables.feature, [j]))
    assert n_changed > 0
    # the transforms work on copies: the model's own trees still predict as before
    np.testing.assert_array_equal(model.predict(X), np.mean([e.predict(X) for e in model.estimators_], axis=0))
    assert [e.tree_.feature.tolist() for e in model.estimators_] == [e.tree_.feature.tolist() for e in untouched]


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_transformed_trees_routed_by_the_c_core_as_by_scikit_learn(correlated, task):
    """The C core routes S+ / S- trees (from the training leaves, on permuted rows, and on any rows
    when every feature counts as changed) to exactly the leaves scikit-learn's ``apply`` finds in
    copies of the trees carrying the same splits; flipped surrogates included."""
    X, yr = correlated
    clf = task == "classification"
    y = (yr > 0).astype(int) if clf else yr
    model = fit_rashomon_forest(X, y, task=task, n_estimators=8, random_state=0, min_samples_leaf=2)
    X32 = X.astype(np.float32)
    tables = ForestTables(import_model(model), model.estimators_, X32, is_classifier=clf)
    loss = make_loss("zero_one" if clf else "squared_error", tables.node_pred, y, y if clf else None,
                     model.classes_ if clf else None)
    surrogates = tables.survey(loss, OrderedMap(None, 1)).surrogates
    assert surrogates.flipped.any() and not surrogates.flipped.all()
    every = np.arange(X.shape[1])
    other = np.random.default_rng(3).normal(size=X.shape).astype(np.float32).astype(np.float64)
    checked = 0
    for cols in ([0], [1], [2], [0, 1]):
        for plus in (True, False):
            variant = surrogates.transform(tables, cols, plus)
            for t in range(tables.T):
                tree, off = sklearn_tree(tables, variant.splits, t), tables.offsets[t]
                L = tables.training_leaves([t], None)[t]
                np.testing.assert_array_equal(variant.leaves(t, tables.X64, L, every), L)
                for seed in (0, 1):
                    np.testing.assert_array_equal(variant.leaves(t, tables.X64, L, cols, tables.permuted(cols, seed)),
                                                  tree.apply(permuted_rows(tables, cols, seed)) + off)
                np.testing.assert_array_equal(variant.leaves(t, other, L, every),
                                              tree.apply(other.astype(np.float32)) + off)
                checked += variant.changed[t]
    assert checked > 10


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_s_plus_rows_routed_from_the_original_trees_new_leaf(correlated, task):
    """Pass 1 routes an S+ tree's permuted rows from the leaf the original tree gives them (S+ only
    turns splits on other features into splits on X1, so the X1 box of that leaf decides): the
    leaves are those of scikit-learn's ``apply`` on the S+ tree, and some rows keep that leaf
    without a walk."""
    from xai_plugins import _native

    X, yr = correlated
    clf = task == "classification"
    y = (yr > 0).astype(int) if clf else yr
    model = fit_rashomon_forest(X, y, task=task, n_estimators=8, random_state=0, min_samples_leaf=2)
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=clf)
    loss = make_loss("zero_one" if clf else "squared_error", tables.node_pred, y, y if clf else None,
                     model.classes_ if clf else None)
    surrogates = tables.survey(loss, OrderedMap(None, 1)).surrogates
    kept = checked = 0
    for cols in ([0], [1], [2], [0, 1]):
        plus = surrogates.transform(tables, cols, True)
        for t in np.flatnonzero(plus.changed):
            tree, off = sklearn_tree(tables, plus.splits, t), tables.offsets[t]
            L = tables.training_leaves([t], None)[t]
            for seed in (0, 1):
                nv = tables.permuted(cols, seed)
                g_o = _native.RerouteLayout(tables.forest, t, cols).route(tables.X64, L, nv)[0]
                g = _native.RerouteLayout(tables.forest, t, cols, plus.splits).route(tables.X64, g_o, nv)[0]
                np.testing.assert_array_equal(g, tree.apply(permuted_rows(tables, cols, seed)) + off)
                kept += np.count_nonzero(g == g_o)
                checked += 1
    assert checked > 10 and kept > 0


def test_boundary_forests_from_pass_one_leaves_bitwise_as_routed_again(correlated, monkeypatch):
    """Pass 2 takes the swapped-in trees' leaves on the permuted rows from pass 1 when they fit in
    ``KEPT_LEAVES_BYTES``, and routes those trees again otherwise: the same table to the bit, for
    several tolerances (which swap different trees in) and both orientations."""
    from xai_plugins.mcr import _passes

    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=24, random_state=0, min_samples_leaf=2)
    kw = dict(n_permutations=3, groups={"copies": [0, 1]}, features=None)
    monkeypatch.setattr(_passes, "LARGE_TREE_NODES", 0)   # every tree counts as large
    known = []   # per pass-2 sum over permuted rows: whether pass 1's leaves were handed over
    weighted_sums = _passes.Reference.weighted_sums

    def spy(self, *args):
        if len(args) == 6:   # (variant, trees, cols, permuted arrays, weights, known leaves)
            known.append(all(t in args[5] for t in args[1]))
        return weighted_sums(self, *args)

    monkeypatch.setattr(_passes.Reference, "weighted_sums", spy)
    kept = {eps: mcr(model, X, y, epsilon=eps, **kw).table for eps in (0.0, 0.05, 0.3)}
    assert known and all(known)
    known.clear()
    monkeypatch.setattr(_passes, "KEPT_LEAVES_BYTES", 0)
    for eps, table in kept.items():
        pd.testing.assert_frame_equal(table, mcr(model, X, y, epsilon=eps, **kw).table, check_exact=True)
    assert known and not any(known)


def test_results_bitwise_as_with_scikit_learn_routing(correlated, monkeypatch):
    """End to end: every figure of the table is bitwise the one obtained when every tree and its
    transformed versions are routed by scikit-learn's ``apply`` on tree copies (the previous
    implementation's route)."""
    from xai_plugins import _native

    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=30, random_state=0, min_samples_leaf=2)
    kw = dict(n_permutations=3, groups={"copies": [0, 1]}, features=None)
    new = {eps: mcr(model, X, y, epsilon=eps, **kw).table for eps in (0.0, 0.2)}
    X32 = X.astype(np.float32)
    tables = ForestTables(import_model(model), model.estimators_, X32, is_classifier=False)
    walked = []
    monkeypatch.setattr(_native, "RerouteLayout", sklearn_layouts(tables, walked))
    for eps, table in new.items():
        pd.testing.assert_frame_equal(table, mcr(model, X, y, epsilon=eps, **kw).table, check_exact=True)
    assert walked and (new[0.2]["mcr_plus"] > new[0.2]["model_reliance"]).any()


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("lookup", [False, True], ids=["walked", "leaf-tables"])
def test_fully_grown_trees_with_a_duplicated_feature_bitwise_as_routed_by_scikit_learn(monkeypatch, task, lookup):
    """Fully grown trees on a feature and its exact copy (the friedman benchmark workload in small, and
    a classifier on it), more than TREE_BLOCK trees: S- then replaces every split on the permuted
    feature, and those trees are not walked at all (rows keep their training leaf); the original
    trees and their S+ / S- versions are walked by the C core, or (``lookup``: every tree counted as
    large and enough permutations) routed through leaf tables. Every figure is bitwise the one
    obtained when scikit-learn's ``apply`` routes every tree and every transformed tree."""
    from sklearn.datasets import make_friedman1

    from xai_plugins import _native
    from xai_plugins.mcr import _passes

    X, y = make_friedman1(n_samples=700, n_features=5, random_state=0)
    X = np.c_[X, X[:, 0]]
    if task == "classification":
        y = (y > np.median(y)).astype(int)
    model = fit_rashomon_forest(X, y, task=task, n_estimators=20, random_state=0)
    kw = dict(n_permutations=6 if lookup else 2, features=[0, 5, 2], groups={"pair": [1, 3]})
    built = []
    if lookup:
        monkeypatch.setattr(_passes, "LARGE_TREE_NODES", 0)
        table = _native.RerouteLayout.table
        monkeypatch.setattr(_native.RerouteLayout, "table", lambda self, *a: built.append(table(self, *a)) or built[-1])
    new = mcr(model, X, y, **kw).table
    assert (sum(t is not None for t in built) > 20) == lookup
    clf = task == "classification"
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=clf)
    loss = make_loss("zero_one" if clf else "squared_error", tables.node_pred, y, y if clf else None,
                     model.classes_ if clf else None)
    survey = tables.survey(loss, map)
    minus = survey.surrogates.transform(tables, [0], plus=False)
    assert (minus.changed & ~minus.uses).sum() > 6        # the trees left without a walk
    walked = []
    monkeypatch.setattr(_native, "RerouteLayout", sklearn_layouts(tables, walked))
    pd.testing.assert_frame_equal(new, mcr(model, X, y, **kw).table, check_exact=True)
    assert walked


def test_walks_on_thresholds_nan_and_inf_as_scikit_learn():
    """The C core's walks of a tree and of its S+ / S- versions (flipped surrogates included), on
    integer data whose rows then take values exactly on the thresholds of the changed features, NaN
    and inf: every leaf is the one scikit-learn's ``apply`` finds on a tree copy, from the training
    leaves or from the root, and one layout serves several row sets."""
    from xai_plugins import _native

    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, size=(400, 4)).astype(float)
    X = np.c_[X, X[:, 0]]
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(size=400)
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=6, random_state=0, max_features=0.6)
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=False)
    survey = tables.survey(make_loss("squared_error", tables.node_pred, y), map)
    checked = 0
    for cols in ([0], [4], [0, 1]):
        on_thresholds = np.unique(tables.threshold[tables.internal & np.isin(tables.feature, cols)])
        for splits, changed in [((tables.feature, tables.threshold, None), np.ones(tables.T, dtype=bool))] + [
                (v.splits, v.changed) for v in (survey.surrogates.transform(tables, cols, p) for p in (True, False))]:
            for t in np.flatnonzero(changed):
                layout = _native.RerouteLayout(tables.forest, t, cols, splits)
                oracle = sklearn_layouts(tables)(tables.forest, t, cols, splits)
                L = tables.training_leaves([t], None)[t]
                values = rng.choice(np.r_[on_thresholds, np.nan, np.inf], size=(tables.n, len(cols)))
                for new_values in (tables.permuted(cols, 1), np.ascontiguousarray(values)):
                    leaf, moved = layout.route(tables.X64, L, new_values)
                    expected, expected_moved = oracle.route(tables.X64, L, new_values)
                    np.testing.assert_array_equal(leaf, expected)
                    np.testing.assert_array_equal(moved, expected_moved)
                    leaf, moved = layout.route(tables.X64, None, new_values)   # every row from the root
                    np.testing.assert_array_equal(leaf, expected)
                    assert len(moved) == 0
                checked += splits[2] is not None and splits[2].any()
    assert checked > 6


def test_tables_read_from_the_forest_match_the_trees(xor):
    """Node arrays come from the imported Forest; they must be the scikit-learn trees' own."""
    X, y = xor
    model = RandomForestClassifier(8, bootstrap=False, max_features=1, min_samples_leaf=30, random_state=0).fit(X, y)
    tables = ForestTables(import_model(model), model.estimators_, X.to_numpy(np.float32), is_classifier=True)
    internal = np.concatenate([e.tree_.children_left >= 0 for e in model.estimators_])
    for name, attr in (("left", "children_left"), ("right", "children_right"), ("feature", "feature"),
                       ("threshold", "threshold")):
        own = np.concatenate([getattr(e.tree_, attr) for e in model.estimators_])
        np.testing.assert_array_equal(getattr(tables, name)[internal], own[internal])
    np.testing.assert_array_equal(tables.internal, internal)
    proba = np.concatenate([e.tree_.value[:, 0, :] for e in model.estimators_])
    np.testing.assert_allclose(tables.node_pred, proba / proba.sum(axis=1, keepdims=True), rtol=1e-15)
    for t, est in enumerate(model.estimators_):  # leaves' predictions are the tree's predict_proba
        np.testing.assert_array_equal(tables.leaves(t), est.apply(X.to_numpy(np.float32)) + tables.offsets[t])
        np.testing.assert_allclose(tables.node_pred[tables.leaves(t)], est.predict_proba(X.to_numpy()), rtol=1e-12)


@pytest.mark.parametrize("name", ["zero_one", "log_loss", "squared_error", "absolute_error"])
def test_losses_match_scikit_learn_metrics(correlated, name):
    from sklearn.metrics import log_loss, mean_absolute_error, mean_squared_error, zero_one_loss

    X, yr = correlated
    clf = name in ("zero_one", "log_loss")
    y = np.digitize(yr, [-1.0, 1.0]) if clf else yr
    cls = RandomForestClassifier if clf else RandomForestRegressor
    model = cls(6, bootstrap=False, max_features=0.5, min_samples_leaf=15, random_state=0).fit(X, y)
    X32 = X.astype(np.float32)
    tables = ForestTables(import_model(model), model.estimators_, X32, is_classifier=clf)
    loss = make_loss(name, tables.node_pred, y, y if clf else None, model.classes_ if clf else None)
    metric = {"zero_one": lambda t, p: zero_one_loss(t, p.argmax(axis=1)),
              "log_loss": lambda t, p: log_loss(t, np.clip(p, 1e-15, None), labels=[0, 1, 2]),
              "squared_error": mean_squared_error, "absolute_error": mean_absolute_error}[name]
    P = model.predict_proba(X) if clf else model.predict(X)
    if name != "log_loss":   # scikit-learn renormalises clipped probabilities; equal when none is 0
        np.testing.assert_allclose(loss.forest_mean(P), metric(y, P), rtol=1e-12)
    rows = np.arange(0, len(y), 3)
    for t, est in enumerate(model.estimators_):
        Pt = est.predict_proba(X[rows]) if clf else est.predict(X[rows])
        leaves = tables.leaves(t)[rows]
        np.testing.assert_allclose(loss.tree_sum(leaves, rows), metric(y[rows], Pt) * len(rows), rtol=1e-10)


def test_equivalence_classes_and_neighbourhoods_against_brute_force(correlated):
    X, y = correlated
    model = RandomForestRegressor(12, bootstrap=False, max_features=1, max_depth=2, random_state=0).fit(X, y)
    X32 = X.astype(np.float32)
    tables = ForestTables(import_model(model), model.estimators_, X32, is_classifier=False)
    survey = tables.survey(make_loss("squared_error", tables.node_pred, y), OrderedMap(None, 1))
    P = np.array([e.predict(X) for e in model.estimators_])
    mse = ((P[:, None, :] - P[None, :, :]) ** 2).mean(axis=2)
    swap = RashomonSwaps(survey.digests)
    same = (P[:, None, :] == P[None, :, :]).all(axis=2)
    np.testing.assert_array_equal(swap.group[:, None] == swap.group[None, :], same)
    eps = float(np.median(mse))
    near = neighbourhoods(tables, eps, False, OrderedMap(None, 1))
    np.testing.assert_array_equal(near, mse <= eps + 1e-12)
    score = np.random.default_rng(0).normal(size=len(P))
    best = RashomonSwaps(survey.digests, near).best(score)
    np.testing.assert_array_equal(best, [np.flatnonzero(row)[np.argmax(score[row])] for row in near])
    best = swap.best(score)
    np.testing.assert_array_equal(best, [np.flatnonzero(row)[np.argmax(score[row])] for row in same])


def test_without_the_leaf_cache_results_are_the_same(correlated, monkeypatch):
    """Training leaves recomputed a block at a time (forests too big to cache) give the same table."""
    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=40, random_state=0, min_samples_leaf=3)
    cached = mcr(model, X, y, n_permutations=2, epsilon=0.3, n_jobs=2).table
    monkeypatch.setattr(_tables, "LEAF_CACHE_BYTES", 0)
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=False)
    assert not tables.caches_leaves
    pd.testing.assert_frame_equal(mcr(model, X, y, n_permutations=2, epsilon=0.3, n_jobs=2).table, cached)


def test_groups_and_ratio(xor):
    X, y = xor
    model = fit_rashomon_forest(X, y, n_estimators=20, random_state=0)
    res = mcr(model, X, y, groups={"B+C": ["B", "C"]}, features=["A"])
    assert list(res.table.index) == ["B+C", "A"]
    # no surrogate for {B, C} outside the group: MCR- of the pair equals its MCR+ (0.5)
    assert abs(res.table.loc["B+C", "mcr_minus"] - 0.5) < 0.03
    assert res.groups == {"B+C": ["B", "C"]}
    ratio = mcr(model, X, y, features=["A"], reliance="ratio").table  # zero training loss: infinite ratio
    assert np.isinf(ratio.loc["A", "model_reliance"])


def test_epsilon_rashomon_and_losses(correlated):
    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=25, random_state=0, min_samples_leaf=4)
    t0 = mcr(model, X, y, n_permutations=2).table
    te = mcr(model, X, y, n_permutations=2, epsilon=0.6).table  # ≈ median MSE between two trees
    assert (te["mcr_plus"] >= te["model_reliance"]).all() and (te["mcr_minus"] <= te["model_reliance"]).all()
    assert (te["mcr_plus"] - te["mcr_minus"]).sum() >= (t0["mcr_plus"] - t0["mcr_minus"]).sum()
    assert (te["deviation_plus"] > 0).any()
    # a per-row callable loss gives exactly the built-in one
    tc = mcr(model, X, y, n_permutations=2, loss=lambda yt, yp: (yt - yp) ** 2).table
    pd.testing.assert_series_equal(tc["mcr_plus"], t0["mcr_plus"])
    ta = mcr(model, X, y, n_permutations=2, loss="absolute_error", reliance="ratio").table
    assert (ta["model_reliance"] >= 1 - 1e-12).all()


def test_log_loss_classifier(xor):
    X, y = xor
    model = ExtraTreesClassifier(10, bootstrap=False, max_features=1, min_samples_leaf=20,
                                 random_state=0).fit(X, y)
    t = mcr(model, X, y, loss="log_loss", n_permutations=2).table
    assert (t["mcr_minus"] <= t["model_reliance"]).all() and (t["model_reliance"] <= t["mcr_plus"]).all()
    p = np.clip(model.predict_proba(X)[np.arange(len(y)), y], 1e-15, None)
    np.testing.assert_allclose(t["reference_loss"], -np.log(p).mean(), rtol=1e-9)


def test_reproducible_and_independent_of_n_jobs(correlated):
    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=20, random_state=0, min_samples_leaf=3)
    a = mcr(model, X, y, n_permutations=3, random_state=5, n_jobs=1).table
    b = mcr(model, X, y, n_permutations=3, random_state=5, n_jobs=2).table
    c = mcr(model, X, y, n_permutations=3, random_state=5).table
    d = mcr(model, X, y, n_permutations=3, random_state=6).table
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    assert not np.allclose(a["model_reliance"], d["model_reliance"])


def test_plot_and_json(xor):
    X, y = xor
    res = mcr(fit_rashomon_forest(X, y, n_estimators=5, random_state=0), X, y, n_permutations=2)
    import matplotlib.axes

    ax = res.plot()
    assert isinstance(ax, matplotlib.axes.Axes) and len(ax.patches) == 3
    assert res.plot(ax=ax) is ax
    d = json.loads(json.dumps(res.to_dict()))
    assert [f["name"] for f in d["features"]] == ["A", "B", "C"]
    assert {"mcr_minus", "model_reliance", "mcr_plus"} <= set(d["features"][0])


def test_bad_inputs(xor):
    X, y = xor
    Xa = X.to_numpy()
    model = fit_rashomon_forest(Xa, y, n_estimators=5, random_state=0)
    boot = RandomForestClassifier(5, random_state=0).fit(Xa, y)
    with pytest.raises(ValueError, match="bootstrap=True.*fit_rashomon_forest"):
        mcr(boot, Xa, y)
    with pytest.raises(TypeError, match="boosting"):
        mcr(GradientBoostingClassifier(n_estimators=2).fit(Xa, y), Xa, y)
    with pytest.raises(TypeError, match="unsupported model"):
        mcr(LinearRegression().fit(Xa, y), Xa, y)
    with pytest.raises(NotFittedError):
        mcr(RandomForestClassifier(bootstrap=False), Xa, y)
    with pytest.raises(ValueError, match="not fitted on this X"):
        mcr(model, Xa[:-5], y[:-5])
    other = Xa.copy()
    other[:, 0] = 1 - other[:, 0]
    other[:10, 1] = 1 - other[:10, 1]
    with pytest.raises(ValueError, match="not fitted on this X"):
        mcr(model, other, y)
    with pytest.raises(IndexError, match="out of range"):
        mcr(model, Xa, y, features=[3])
    with pytest.raises(ValueError, match="unknown feature"):
        mcr(model, Xa, y, features=["nope"])
    with pytest.raises(ValueError, match="n_permutations"):
        mcr(model, Xa, y, n_permutations=0)
    with pytest.raises(TypeError, match="n_permutations"):
        mcr(model, Xa, y, n_permutations=2.5)
    nan = Xa.copy()
    nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        mcr(model, nan, y)
    with pytest.raises(ValueError, match="columns"):
        mcr(model, Xa[:, :2], y)
    with pytest.raises(ValueError, match="999 values but the data has 1000 rows"):
        mcr(model, Xa, y[:-1])
    with pytest.raises(ValueError, match="labels"):
        mcr(model, Xa, y + 5)
    with pytest.raises(ValueError, match="epsilon"):
        mcr(model, Xa, y, epsilon=-0.1)
    with pytest.raises(ValueError, match="loss"):
        mcr(model, Xa, y, loss="squared_error")
    with pytest.raises(ValueError, match="reliance"):
        mcr(model, Xa, y, reliance="log")
    with pytest.raises(ValueError, match="empty"):
        mcr(model, Xa, y, groups={"g": []})
    with pytest.raises(ValueError, match="bootstrap=False"):
        fit_rashomon_forest(Xa, y, bootstrap=True)
    with pytest.raises(ValueError, match="task"):
        fit_rashomon_forest(Xa, y, task="ranking")


def test_a_feature_no_tree_uses_has_zero_reliance():
    """A constant column is never split on: its reliance range is [0, 0] (this used to crash)."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=200), np.ones(200), rng.normal(size=200)])
    y = 2 * X[:, 0] + 0.1 * rng.normal(size=200)
    model = RandomForestRegressor(n_estimators=10, bootstrap=False, max_depth=4, random_state=0).fit(X, y)
    table = mcr(model, X, y, n_permutations=2, progress=False).table
    assert (table.loc["x1", ["mcr_minus", "model_reliance", "mcr_plus"]] == 0.0).all()
    assert table.loc["x0", "mcr_plus"] > 0.0


def test_surrogate_splits_against_brute_force(correlated):
    """Every (node, feature) whose training rows in the two children are separated on the feature,
    found row by row from scikit-learn's ``decision_path``; sorted by node then feature. With wanted
    features, exactly those of a node splitting on one of them, or by one of them."""
    from xai_plugins import _native

    X, y = correlated
    X32 = X.astype(np.float32)
    model = RandomForestRegressor(3, bootstrap=False, max_features=0.5, min_samples_leaf=3, random_state=0).fit(X, y)
    forest = import_model(model)
    for t, est in enumerate(model.estimators_):
        tree = est.tree_
        paths = est.decision_path(X32).toarray().astype(bool)
        expected = []
        for node in np.flatnonzero(tree.children_left >= 0):
            a, b = paths[:, tree.children_left[node]], paths[:, tree.children_right[node]]
            for g in range(X.shape[1]):
                if g == tree.feature[node]:
                    continue
                for flipped, (lo_rows, hi_rows) in ((False, (a, b)), (True, (b, a))):
                    top, bottom = X32[lo_rows, g].max(), X32[hi_rows, g].min()
                    if top < bottom:
                        expected.append((node, g, (float(top) + float(bottom)) / 2, flipped))
        got = list(zip(*(arr.tolist() for arr in _native.surrogates(forest, t, X32, tree.apply(X32)))))
        assert got == expected and any(e[3] for e in expected)
        for wanted in ([1], [0, 2]):
            mask = np.isin(np.arange(X.shape[1]), wanted)
            got = list(zip(*(arr.tolist() for arr in _native.surrogates(forest, t, X32, tree.apply(X32), mask))))
            kept = [e for e in expected if tree.feature[e[0]] in wanted or e[1] in wanted]
            assert got == kept and 0 < len(kept) < len(expected)


def test_reliance_of_a_feature_alone_is_bitwise_that_among_all(correlated):
    """RF-MCR keeps only the surrogate splits the requested features need: one feature's row is the
    same to the bit whether it is asked alone or with every feature, and a transform for a feature
    whose surrogates were not kept is refused."""
    X, y = correlated
    model = fit_rashomon_forest(X, y, task="regression", n_estimators=12, random_state=0, min_samples_leaf=2)
    every = model_class_reliance(model, X, y, n_permutations=3, random_state=0, epsilon=0.05).table
    for j in (0, 2):
        alone = model_class_reliance(model, X, y, features=[j], n_permutations=3, random_state=0, epsilon=0.05).table
        pd.testing.assert_frame_equal(alone, every.iloc[[j]])
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=False)
    survey = tables.survey(make_loss("squared_error", tables.node_pred, y), OrderedMap(None, 1),
                           np.isin(np.arange(X.shape[1]), [0]))
    survey.surrogates.transform(tables, [0], True)
    with pytest.raises(RuntimeError, match="surrogate splits kept"):
        survey.surrogates.transform(tables, [0, 1], False)
