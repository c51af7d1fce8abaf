"""The vectorised importers against the libraries themselves: predict parity on random rows, rows
exactly on every threshold and NaN rows, and structural invariants checked against what each
library reports about its own trees (leaf counts, node counts, depths, thresholds). LightGBM models
built from hand-written model strings cover thresholds LightGBM's ``dump_model()`` cannot express
(±inf, beyond 1e300) and trees deeper than Python's recursion limit."""

import numpy as np
import pytest
from sklearn import ensemble, tree

from xai_plugins import _native
from xai_plugins.forest import import_model

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def lightgbm_booster(trees: list[dict], n_features: int, objective: str = "regression"):
    """A LightGBM Booster from hand-written trees in LightGBM's own model-string fields
    (split_feature, threshold, decision_type, left_child, right_child, leaf_value; child ~j is leaf j).
    Thresholds are written as Python's repr (``inf``, ``-inf``, 17 significant digits)."""
    head = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
            f"max_feature_idx={n_features - 1}", f"objective={objective}",
            "feature_names=" + " ".join(f"f{j}" for j in range(n_features)),
            "feature_infos=" + " ".join("none" for _ in range(n_features)), ""]
    body = []
    for t, spec in enumerate(trees):
        body += [f"Tree={t}", f"num_leaves={len(spec['leaf_value'])}", "num_cat=0"]
        body += [f"{key}=" + " ".join(repr(float(v)) if key in ("threshold", "leaf_value") else str(int(v))
                                      for v in spec[key])
                 for key in ("split_feature", "threshold", "decision_type", "left_child", "right_child",
                             "leaf_value")]
        body += ["shrinkage=1", "", ""]
    return lgb.Booster(model_str="\n".join(head + body + ["end of trees", ""]))


def chain_tree(thresholds, decision_types, features=None) -> dict:
    """A chain: internal node i sends x <= threshold[i] to leaf i and the rest on to node i + 1; the last
    node's right child is the last leaf. Leaf j has value j + 1 (every route ends in a distinct value)."""
    n = len(thresholds)
    return dict(split_feature=features if features is not None else [0] * n, threshold=thresholds,
                decision_type=decision_types, left_child=[~i for i in range(n)],
                right_child=list(range(1, n)) + [~n], leaf_value=[j + 1.0 for j in range(n + 1)])


HUGE = (1e301, -1e301, 1e300, np.finfo(float).max, -np.finfo(float).max, 0.0, 0.5, -0.5, np.nan)


def assert_lightgbm_parity(forest, booster, X):
    """Forest.predict equals LightGBM's raw score on X; rows with ±inf (which the public API refuses
    as input) go through the C predictor the public one calls."""
    theirs = booster.predict(X, raw_score=True)
    finite = ~np.isinf(X).any(axis=1)
    if finite.any():
        np.testing.assert_array_equal(forest.predict(X[finite])[:, 0], theirs[finite])
    if not finite.all():
        np.testing.assert_array_equal(_native.predict(forest, np.ascontiguousarray(X[~finite]))[:, 0],
                                      theirs[~finite])


@pytest.mark.parametrize("decision_type", [0, 2, 8, 10])   # missing None / NaN, default right / left
def test_lightgbm_infinite_and_huge_thresholds_route_as_lightgbm(decision_type):
    thresholds = [1e301, np.inf, -np.inf, -1e301, np.finfo(float).max, 0.5]
    order = [1, 0, 4, 5, 3, 2]                 # each threshold once as the first test of the chain
    trees = [chain_tree([thresholds[(k + s) % len(order)] for k in order], [decision_type] * len(order))
             for s in range(len(order))]
    booster = lightgbm_booster(trees, 1)
    X = np.array([[v] for v in HUGE + (np.inf, -np.inf)])
    assert_lightgbm_parity(import_model(booster), booster, X)


def test_trained_lightgbm_with_an_infinite_threshold():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=400)
    text = lgb.train({"verbose": -1, "num_leaves": 6}, lgb.Dataset(X, y), 5).model_to_string()
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("threshold="))
    values = lines[first].split("=")[1].split()
    lines[first] = "threshold=" + " ".join(["inf"] + values[1:])         # the first tree's root
    lines = [line for line in lines if not line.startswith("tree_sizes=")]   # sizes no longer match
    booster = lgb.Booster(model_str="\n".join(lines) + "\n")
    feature = int(next(line for line in lines if line.startswith("split_feature=")).split("=")[1].split()[0])
    Z = np.zeros((len(HUGE) + 2, 3))
    Z[:, feature] = HUGE + (np.inf, -np.inf)
    assert_lightgbm_parity(import_model(booster), booster, Z)


def test_lightgbm_tree_deeper_than_the_recursion_limit():
    n = 1500
    booster = lightgbm_booster([chain_tree([float(i) for i in range(n)], [2] * n)], 2)
    forest = import_model(booster)
    assert forest.max_depth == n
    X = np.array([[v, 0.0] for v in (-1.0, 0.0, 0.5, 700.0, 1498.5, 1499.0, 1e9, np.inf, np.nan)])
    assert_lightgbm_parity(forest, booster, X)


# ----------------------------------------------------------------------------- varied trained models

def _data(classes=0, n=1500, d=6, seed=0, nan=True):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 1)       # repeated values: many rows on thresholds
    score = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3]
    if nan:
        X[rng.random(X.shape) < 0.03] = np.nan
    if classes:
        return X, np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, score + 0.1 * rng.normal(size=n)


def _fit(make, classes=0, nan=True):
    X, y = _data(classes, nan=nan)
    return make().fit(X, y), X


MODELS = {
    "rf": lambda: _fit(lambda: ensemble.RandomForestRegressor(12, max_depth=12, random_state=0)),
    "et_clf": lambda: _fit(lambda: ensemble.ExtraTreesClassifier(8, random_state=0), classes=3),
    "dt": lambda: _fit(lambda: tree.DecisionTreeRegressor(random_state=0)),
    "gb_clf": lambda: _fit(lambda: ensemble.GradientBoostingClassifier(n_estimators=10, random_state=0),
                           classes=3, nan=False),
    "hgb": lambda: _fit(lambda: ensemble.HistGradientBoostingRegressor(max_iter=15, random_state=0)),
    "xgb_hist": lambda: _fit(lambda: xgb.XGBRegressor(n_estimators=40, max_depth=6)),
    "xgb_exact_pruned": lambda: _fit(lambda: xgb.XGBRegressor(n_estimators=30, max_depth=6, tree_method="exact",
                                                              gamma=0.5)),
    "xgb_lossguide": lambda: _fit(lambda: xgb.XGBRegressor(n_estimators=20, grow_policy="lossguide",
                                                           max_leaves=25, max_depth=0)),
    "xgb_multiclass": lambda: _fit(lambda: xgb.XGBClassifier(n_estimators=15, max_depth=4), classes=3),
    "lgb": lambda: _fit(lambda: lgb.LGBMRegressor(n_estimators=40, num_leaves=40, verbose=-1)),
    "lgb_multiclass": lambda: _fit(lambda: lgb.LGBMClassifier(n_estimators=10, verbose=-1), classes=3),
    "lgb_rf": lambda: _fit(lambda: lgb.LGBMRegressor(boosting_type="rf", n_estimators=8, subsample=0.7,
                                                     subsample_freq=1, verbose=-1)),
    "lgb_no_missing": lambda: _fit(lambda: lgb.LGBMRegressor(n_estimators=20, use_missing=False, verbose=-1)),
}


def _rows(forest, X, rng):
    """Random training rows, rows with each feature set to each of its thresholds, NaN rows (when the
    model was trained with NaN)."""
    rows = [X[rng.choice(len(X), 200)]]
    internal = forest.left_child >= 0
    for j in range(forest.n_features):
        t = np.unique(forest.threshold[internal & (forest.feature == j)])
        t = t[np.isfinite(t)]
        if len(t):
            Z = X[rng.choice(len(X), len(t))].copy()
            Z[:, j] = t
            rows.append(Z)
    if np.isnan(X).any():
        rows.append(np.where(rng.random((50, X.shape[1])) < 0.5, np.nan, X[rng.choice(len(X), 50)]))
    return np.concatenate(rows)


def _library_trees(model) -> list[tuple[int, int, int]]:
    """(nodes, leaves, depth) of every tree the model predicts with, as the library reports them."""
    if hasattr(model, "estimators_"):
        trees = [e.tree_ for e in np.ravel(model.estimators_)]
        return [(t.node_count, t.n_leaves, t.max_depth) for t in trees]
    if hasattr(model, "tree_"):
        return [(model.tree_.node_count, model.tree_.n_leaves, model.tree_.max_depth)]
    if hasattr(model, "_predictors"):
        out = []
        for predictor in (p for row in model._predictors for p in row):
            nodes = predictor.nodes
            out.append((len(nodes), int(nodes["is_leaf"].sum()), int(nodes["depth"].max())))
        return out
    if hasattr(model, "get_booster"):
        frame = model.get_booster().trees_to_dataframe()
        out = []
        for _, nodes in frame.groupby("Tree", sort=True):
            children = {node: (int(yes.split("-")[1]), int(no.split("-")[1]))
                        for node, yes, no in zip(nodes["Node"], nodes["Yes"], nodes["No"]) if isinstance(yes, str)}
            level, depth = [0], -1
            while level:
                level, depth = [c for node in level for c in children.get(node, ())], depth + 1
            out.append((len(nodes), int((nodes["Feature"] == "Leaf").sum()), depth))
        return out
    booster = model.booster_
    frame = booster.trees_to_dataframe()
    return [(len(nodes), int(nodes["split_feature"].isna().sum()), int(nodes["node_depth"].max()) - 1)
            for _, nodes in frame.groupby("tree_index", sort=True)]


def _walk(forest, t):
    """(nodes reached from the root, depth) of tree t, by recursion-free preorder traversal;
    asserts the preorder numbering the importers promise for XGBoost and LightGBM."""
    left, right = forest.left_child[forest.tree_offset[t]:], forest.right_child[forest.tree_offset[t]:]
    stack, order, best = [(0, 0)], [], 0
    while stack:
        k, d = stack.pop()
        order.append(k)
        best = max(best, d)
        if left[k] >= 0:
            stack += [(right[k], d + 1), (left[k], d + 1)]
    return order, best


@pytest.mark.parametrize("name", list(MODELS))
def test_importers_match_the_library(name):
    model, X = MODELS[name]()
    forest = import_model(model)
    rng = np.random.default_rng(1)
    Z = _rows(forest, X, rng)
    ours, theirs = forest.predict(Z), forest.predict_fn(Z)
    rtol = 1e-5 if name.startswith("xgb") else 1e-12      # XGBoost sums in float32
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * np.abs(theirs).max())

    library = _library_trees(model)
    assert forest.n_trees == len(library)
    sizes = np.diff(forest.tree_offset)
    depths = []
    for t in range(forest.n_trees):
        order, depth = _walk(forest, t)
        assert sorted(order) == list(range(sizes[t]))      # every node reached once
        if name.startswith(("xgb", "lgb")):
            assert order == list(range(sizes[t]))          # numbered in preorder
        depths.append(depth)
        leaves = forest.left_child[forest.tree_offset[t]:forest.tree_offset[t + 1]] < 0
        assert (sizes[t], int(leaves.sum()), depth) == library[t]
    assert forest.max_depth == max(depths)
