"""Exact PG² on models whose kept leaves fill many blocks of the C leaf-pair loop (256 inner leaves
each, csrc/pg2.c): the table rows shared by all outer trees and computed once per block from the
first leaf a tree reaches, an outer tree's leaves against a partial first block, the products of
an outer leaf's fracs continued from the leaf before it (and a leaf with the same fracs reusing its
sum), and blocks in which no leaf constrains one of the perturbed features (the outer leaf's mass
instead of a row). Checked against the grid-integration oracle (tests/oracle.py) on one, two and
three perturbed features, with and without pruning, for scalar leaves, several outputs and vector
leaves, and the greedy ranking against its all-pairs version."""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

import xai_plugins as xp
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2

xgb = pytest.importorskip("xgboost")

CHUNK = 256  # inner leaves per block in csrc/pg2.c


@pytest.fixture(scope="module")
def models(diabetes_std):
    X, y = diabetes_std
    yc = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8)).astype(int)
    return {
        # half the features per tree: many blocks leave some perturbed feature alone
        "xgb 120x6": (xgb.XGBRegressor(n_estimators=120, max_depth=6, colsample_bytree=0.5, tree_method="hist",
                                       random_state=0).fit(X, y), "forest"),
        "xgb 3-class": (xgb.XGBClassifier(n_estimators=30, max_depth=5, colsample_bytree=0.6,
                                          random_state=0).fit(X, yc), "forest"),
        "rf 3-class (vector leaves)": (RandomForestClassifier(n_estimators=40, max_depth=8, max_features=0.5,
                                                              random_state=0).fit(X, yc), "proba"),
    }


def test_models_span_many_blocks(models):
    for name, (model, _) in models.items():
        assert import_model(model).n_leaves > 6 * CHUNK, name


# sex (feature 1) has a single boundary, so three features stay cheap for the grid oracle
@pytest.mark.parametrize("S", [[2], [1, 8], [0, 3], [1, 2, 9]])
@pytest.mark.parametrize("prune", [False, True])
def test_many_blocks_match_grid_integration(diabetes_std, models, oracle_predictor, S, prune):
    X, _ = diabetes_std
    rows = X[[0, 57, 311]]
    for name, (model, kind) in models.items():
        exact = np.asarray(xp.pg2(model, rows, S, sigma=0.4, prune=prune).value).reshape(len(rows), -1)
        predict = oracle_predictor(model, kind)
        for i, x in enumerate(rows):
            ref = grid_pg2(model, predict, x, S, [gaussian(0.4)] * X.shape[1])
            np.testing.assert_allclose(exact[i], ref, rtol=1e-12, atol=1e-12 * max(1, ref.max()),
                                       err_msg=f"{name}, S={S}, prune={prune}, row {i}")


def test_many_blocks_tree_order_does_not_matter(diabetes_std, models):
    """The same forest with its trees reversed puts other leaves side by side in every block and in
    every run of shared fracs: the values agree to rounding, on every feature set size."""
    import dataclasses

    X, _ = diabetes_std
    rows = X[[3, 99]]
    forest = import_model(models["xgb 120x6"][0])
    T = forest.n_trees
    order = np.arange(T)[::-1]
    sizes = np.diff(forest.tree_offset)
    offset = np.concatenate([[0], np.cumsum(sizes[order])])
    nodes = np.concatenate([np.arange(forest.tree_offset[t], forest.tree_offset[t + 1]) for t in order])
    width = forest.value.shape[1] if forest.value.ndim > 1 else 1

    def take(a):
        return None if a is None else np.ascontiguousarray(a[nodes])

    reversed_forest = dataclasses.replace(
        forest, left_child=take(forest.left_child), right_child=take(forest.right_child),
        feature=take(forest.feature), threshold=take(forest.threshold), missing_left=take(forest.missing_left),
        value=take(forest.value).reshape(-1, width) if forest.value.ndim > 1 else take(forest.value),
        impurity=take(forest.impurity), weight=take(forest.weight),
        tree_offset=offset.astype(forest.tree_offset.dtype), tree_target=forest.tree_target[order].copy())
    for S in ([2, 3], [0, 2, 3, 8], list(range(X.shape[1]))):
        a = xp.pg2(forest, rows, S, sigma=0.3, prune=False).value
        b = xp.pg2(reversed_forest, rows, S, sigma=0.3, prune=False).value
        np.testing.assert_allclose(b, a, rtol=1e-12, err_msg=str(S))


def test_many_blocks_greedy_gives_the_all_pairs_ranking(diabetes_std, models):
    X, _ = diabetes_std
    rows = X[::97][:4]
    model = models["xgb 120x6"][0]
    screened = xp.greedy_pg2_ranking(model, rows, 0.3)
    strict = xp.greedy_pg2_ranking(model, rows, 0.3, prune=False)
    np.testing.assert_array_equal(screened.ranking, strict.ranking)
    np.testing.assert_allclose(screened.pg2_path, strict.pg2_path, rtol=1e-12)
    np.testing.assert_allclose(screened.pg2_path[:, -1], xp.pg2(model, rows, list(range(X.shape[1])), 0.3).value,
                               rtol=1e-12)
