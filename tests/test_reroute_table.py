"""Leaf tables of the C core's re-routing (``RerouteLayout.table``): a row's leaves as one changed
feature's value runs over the real line, looked up instead of walked. Every leaf must be the one a
plain walk from the root finds, checked against an independent Python walk on random trees whose
thresholds sit on the data's values, both split rules, float32 inputs, LightGBM's zero threshold,
flipped splits, NaN in the row and NaN / inf as the new value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xai_plugins import _native
from xai_plugins._native import ffi, lib
from xai_plugins.errors import InputError
from xai_plugins.forest.layout import Forest

GRID = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 1e-30])


def random_tree(rng, n_features: int, depth: int) -> dict:
    """Node arrays of a random binary tree (pre-order ids) with thresholds on GRID."""
    left, right, feature, threshold, missing = [], [], [], [], []

    def grow(level):
        node = len(left)
        for a in (left, right, feature, threshold, missing):
            a.append(-1 if a is left or a is right else 0)
        if level < depth and (level < 2 or rng.random() < 0.8):
            feature[node] = int(rng.integers(n_features))
            threshold[node] = float(rng.choice(GRID))
            missing[node] = int(rng.integers(2))
            left[node] = grow(level + 1)
            right[node] = grow(level + 1)
        return node

    grow(0)
    n = len(left)
    return dict(left_child=left, right_child=right, feature=feature, threshold=threshold, missing_left=missing,
                value=np.arange(n, dtype=float), tree_offset=[0, n], tree_target=[0], base_score=[0.0])


def make_forest(tree: dict, n_features: int, rule: str, float32: bool, zero: float) -> Forest:
    return Forest(**tree, n_features=n_features, split_rule=rule, input_float32=float32, aggregate="sum",
                  task="regression", output_space="raw", model_type="manual", zero_threshold=zero)


def walk(forest: Forest, splits, x: np.ndarray) -> int:
    """The leaf a plain walk from the root finds (the oracle): IEEE comparisons, NaN where missing_left
    says, a flipped node swapping its children."""
    feature, threshold, flipped = splits
    node = 0
    while forest.left_child[node] >= 0:
        v = x[feature[node]]
        if forest.zero_threshold > 0 and abs(v) <= forest.zero_threshold:
            v = 0.0
        if forest.input_float32:
            v = float(np.float32(v))
        below = v < threshold[node] if forest.split_rule == "lt" else v <= threshold[node]
        left = bool(below) or (np.isnan(v) and bool(forest.missing_left[node]))
        if flipped is not None and flipped[node]:
            left = not left
        node = forest.left_child[node] if left else forest.right_child[node]
    return node


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rule=st.sampled_from(["le", "lt"]), float32=st.booleans(),
       zero=st.sampled_from([0.0, 1e-20]), version=st.booleans())
def test_table_leaves_are_those_of_a_walk(seed, rule, float32, zero, version):
    rng = np.random.default_rng(seed)
    d, n = 3, 120
    forest = make_forest(random_tree(rng, d, int(rng.integers(1, 7))), d, rule, float32, zero)
    splits = (forest.feature, forest.threshold, None)
    if version:   # a version of the tree with other splits, some flipped (RF-MCR's S+ / S- trees)
        inner = forest.left_child >= 0
        splits = (np.where(inner & (rng.random(forest.n_nodes) < 0.4), rng.integers(d, size=forest.n_nodes),
                           forest.feature).astype(np.int32),
                  np.where(inner & (rng.random(forest.n_nodes) < 0.4), rng.choice(GRID, forest.n_nodes),
                           forest.threshold),
                  rng.random(forest.n_nodes) < 0.5)
    X = rng.choice(np.concatenate([GRID, [np.nan, 0.25, -2.0]]), size=(n, d))
    j = int(rng.integers(d))
    layout = _native.RerouteLayout(forest, 0, [j], None if not version else splits)
    table = layout.table(X)
    start = np.array([walk(forest, splits, x) for x in X], dtype=np.int32)
    for special in (False, True):
        new = rng.choice(np.concatenate([GRID, GRID + 1e-9, GRID - 1e-9, [-1e-31, 3.0, -3.0]]
                                        + ([[np.nan, np.inf, -np.inf]] if special else [])), size=(n, 1))
        Xp = X.copy()
        Xp[:, j] = new[:, 0]
        expected = np.array([walk(forest, splits, x) for x in Xp], dtype=np.int32)
        leaf, moved = layout.route(X, start, new, table=table)
        np.testing.assert_array_equal(leaf, expected)
        np.testing.assert_array_equal(moved, np.flatnonzero(expected != start))
        plain, plain_moved = layout.route(X, start, new)
        np.testing.assert_array_equal(leaf, plain)
        np.testing.assert_array_equal(moved, plain_moved)
        np.testing.assert_array_equal(layout.route(X, None, new, table=table)[0], expected)


def test_table_of_a_scikit_learn_tree_matches_apply():
    """A fully grown scikit-learn tree (float32 inputs): leaves looked up for permuted rows are those
    of ``apply``, node values included, and so are those walked without the table (2,000 rows: the
    walks' blocks of 1,024 rows and a last, partial lockstep group)."""
    from sklearn.tree import DecisionTreeRegressor

    from xai_plugins.forest.cache import import_model

    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(2000, 4)), 2)
    X[:, 3] = X[:, 0]
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2]
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    forest = import_model(model)
    node_value = np.ascontiguousarray(forest.value)
    for j in range(4):
        layout = _native.RerouteLayout(forest, 0, [j])
        table = layout.table(X)
        start = model.apply(X.astype(np.float32)).astype(np.int32)
        for seed in range(3):
            Xp = X.copy()
            Xp[:, j] = X[np.random.default_rng(seed).permutation(len(X)), j]
            leaf, moved, delta = layout.route(X, start, np.ascontiguousarray(Xp[:, [j]]), node_value, table=table)
            np.testing.assert_array_equal(leaf, model.apply(Xp.astype(np.float32)))
            np.testing.assert_array_equal(moved, np.flatnonzero(leaf != start))
            np.testing.assert_array_equal(delta, node_value[leaf[moved]] - node_value[start[moved]])
            for start_leaf in (start, None):
                np.testing.assert_array_equal(layout.route(X, start_leaf, np.ascontiguousarray(Xp[:, [j]]))[0], leaf)


def test_table_refuses_several_features_other_rows_and_other_layouts(stump_forest):
    forest = stump_forest(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[0, 0, 0], n_features=2)
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    with pytest.raises(InputError, match="one changed feature"):
        _native.RerouteLayout(forest, 0, [0, 1]).table(X)
    with pytest.raises(InputError, match="C-ordered float64"):
        _native.RerouteLayout(forest, 0, [0]).table(X.astype(np.float32))
    layout, other = _native.RerouteLayout(forest, 0, [0]), _native.RerouteLayout(forest, 0, [0])
    table = layout.table(X)
    with pytest.raises(InputError, match="rows it was built on"):
        layout.route(X[:2].copy(), None, table=table)
    with pytest.raises(InputError, match="rows it was built on"):
        other.route(X, None, table=table)
    # the C core refuses them too
    args = ffi.new("xai_reroute_args *", dict(X=ffi.cast("double *", X.ctypes.data), n_rows=2,
                                             new_values=ffi.cast("double *", X.ctypes.data),
                                             leaf=ffi.cast("int32_t *", np.empty(3, np.int32).ctypes.data),
                                             table=table.ptr))
    assert lib.xai_reroute(_native.c_forest(forest).ptr, layout._layout, args) == lib.XAI_E_INDEX
    args.n_rows = 3
    assert lib.xai_reroute(_native.c_forest(forest).ptr, other._layout, args) == lib.XAI_E_INDEX
    out = ffi.new("xai_reroute_table **")
    two = _native.RerouteLayout(forest, 0, [0, 1])
    c = _native.c_forest(forest).ptr
    assert lib.xai_reroute_table_build(c, two._layout, ffi.cast("double *", X.ctypes.data), 3, 0, out) \
        == lib.XAI_E_UNSUPPORTED
    assert lib.xai_reroute_table_build(ffi.NULL, layout._layout, ffi.NULL, 3, 0, out) == lib.XAI_E_SIZE
    assert lib.xai_reroute_table_build(c, layout._layout, ffi.NULL, -1, 0, out) == lib.XAI_E_SIZE
    assert lib.xai_reroute_table_build(c, layout._layout, ffi.cast("double *", X.ctypes.data), 3, -1, out) \
        == lib.XAI_E_SIZE
    lib.xai_reroute_table_free(ffi.NULL)


def test_empty_rows_give_an_empty_table(stump_forest):
    forest = stump_forest()
    layout = _native.RerouteLayout(forest, 0, [0])
    X = np.empty((0, 1))
    leaf, moved = layout.route(X, np.empty(0, np.int32), np.empty((0, 1)), table=layout.table(X))
    assert leaf.shape == (0,) and moved.shape == (0,)


def test_a_table_over_its_entry_budget_is_declined(stump_forest):
    """Every row of a stump on the changed feature reaches both leaves: two entries per row. A budget of
    one declines the table (None, no error); two builds it."""
    forest = stump_forest()
    layout = _native.RerouteLayout(forest, 0, [0])
    X = np.linspace(-1, 2, 50)[:, None]
    assert layout.table(X, max_per_row=1) is None
    table = layout.table(X, max_per_row=2)
    new = X[::-1].copy()
    np.testing.assert_array_equal(layout.route(X, None, new, table=table)[0], layout.route(X, None, new)[0])



def test_mark_below_against_parent_walks():
    """``mark_below``: a node is marked when it or one of its ancestors is among the given nodes, in
    every tree (checked by climbing each node's parents)."""
    from sklearn.ensemble import RandomForestRegressor

    from xai_plugins.forest.cache import import_model

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(400, 3)), rng.normal(size=400)
    forest = import_model(RandomForestRegressor(4, max_depth=7, random_state=0).fit(X, y))
    parent = np.full(forest.n_nodes, -1)
    for t in range(forest.n_trees):
        base = forest.tree_offset[t]
        for k in range(forest.tree_offset[t + 1] - base):
            if forest.left_child[base + k] >= 0:
                parent[base + forest.left_child[base + k]] = parent[base + forest.right_child[base + k]] = base + k
    nodes = rng.choice(forest.n_nodes, size=12, replace=False)
    expected = np.zeros(forest.n_nodes, dtype=bool)
    for g in range(forest.n_nodes):
        a = g
        while a >= 0 and not expected[g]:
            expected[g] = a in nodes
            a = parent[a]
    np.testing.assert_array_equal(_native.mark_below(forest, nodes), expected)
    assert expected.sum() > len(nodes)
    assert lib.xai_mark_below(ffi.NULL, ffi.NULL) == lib.XAI_E_SIZE
