"""ONNX-ML tree ensembles imported as a Forest (xai_plugins/forest/onnx.py), checked against onnxruntime.

Oracles: onnxruntime itself (its scores before the post-transform, on random rows, rows on every threshold and
one ulp either side, rows with NaN), a float32 / float64 sum of the Forest's leaves in onnxruntime's order (the
routing is then bit-identical), the original Python model's exact PG², and a Monte Carlo PG² through
onnxruntime's session.
"""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

import xai_plugins as xp  # noqa: E402
from xai_plugins.errors import InputError, UnsupportedModelError  # noqa: E402
from xai_plugins.forest import _onnx_trees, import_model  # noqa: E402
from xai_plugins.forest.onnx import OnnxModel  # noqa: E402
from xai_plugins.forest.parity import certify  # noqa: E402

D = 4
RNG = np.random.default_rng(0)
X_FIT = RNG.normal(size=(300, D)).astype(np.float32)
Y_FIT = X_FIT[:, 0] + X_FIT[:, 1] ** 2 + 0.3 * X_FIT[:, 2] * X_FIT[:, 3]
X_INT = np.round(Y_FIT * 2)                       # integer targets: fully grown forests get float32-exact leaves
X_EVAL = RNG.normal(size=(200, D))
S = [0, 2]


def _skl(model):
    return skl2onnx.to_onnx(model, X_FIT[:1])


def _onnxmltools(model, double=False):
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import DoubleTensorType, FloatTensorType

    convert = convert_xgboost if type(model).__module__.startswith("xgboost") else convert_lightgbm
    kind = DoubleTensorType if double else FloatTensorType
    return convert(model, initial_types=[("input", kind([None, D]))])


def _fitted(name):
    """(original model, its OnnxModel) for ``name``."""
    y2, y3 = (Y_FIT > 1).astype(int), np.digitize(Y_FIT, [0.5, 1.5])
    if name.startswith(("xgb", "lgb")):
        lib = pytest.importorskip("xgboost" if name.startswith("xgb") else "lightgbm")
        pytest.importorskip("onnxmltools")
        kw = dict(n_estimators=6, max_depth=3) if name.startswith("xgb") else dict(n_estimators=6, num_leaves=8,
                                                                                       verbose=-1)
        kind = {"xgb": ("XGBRegressor", "XGBClassifier"), "lgb": ("LGBMRegressor", "LGBMClassifier")}[name[:3]]
        target = {"reg": Y_FIT, "clf2": y2, "clf3": y3}[name[4:].removesuffix("_dbl")]
        cls = getattr(lib, kind[0] if "reg" in name else kind[1])
        X = X_FIT.copy()
        X[::7, 1] = np.nan                                  # missing values: the models learn where NaN goes
        model = cls(**kw).fit(X, target)
        return model, OnnxModel(_onnxmltools(model, double=name.endswith("_dbl")))
    model = {"rf_reg": lambda: RandomForestRegressor(4, random_state=0).fit(X_FIT, X_INT),
             "rf_reg2": lambda: RandomForestRegressor(4, random_state=0).fit(X_FIT, np.c_[X_INT, -2 * X_INT]),
             "rf_str": lambda: RandomForestClassifier(4, random_state=0).fit(X_FIT, np.array(["lo", "mid", "hi"])[y3]),
             "rf_clf2": lambda: RandomForestClassifier(4, random_state=0).fit(X_FIT, y2),
             "rf_clf3": lambda: RandomForestClassifier(4, random_state=0).fit(X_FIT, y3),
             "gb_reg": lambda: GradientBoostingRegressor(n_estimators=6, max_depth=3, random_state=0).fit(X_FIT, Y_FIT),
             "gb_clf2": lambda: GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0).fit(X_FIT, y2),
             "hgb_reg": lambda: HistGradientBoostingRegressor(max_iter=6, random_state=0).fit(X_FIT, Y_FIT),
             "pipe": lambda: make_pipeline(StandardScaler(), RandomForestRegressor(4, max_depth=6, random_state=0))
             .fit(X_FIT, Y_FIT)}[name]()
    try:
        return model, OnnxModel(_skl(model))
    except Exception as error:  # noqa: BLE001 - skl2onnx 1.20 cannot convert HistGradientBoosting (numpy types)
        if name != "hgb_reg":
            raise
        pytest.skip(f"skl2onnx cannot convert {type(model).__name__}: {str(error)[:80]}")


SKLEARN = ["rf_reg", "rf_reg2", "rf_clf2", "rf_clf3", "rf_str", "gb_reg", "gb_clf2", "hgb_reg", "pipe"]
BOOSTERS = ["xgb_reg", "xgb_clf2", "xgb_clf3", "lgb_reg", "lgb_clf2", "lgb_clf3", "xgb_reg_dbl", "lgb_reg_dbl"]


@functools.lru_cache(maxsize=None)
def fitted(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _fitted(name)


# --- oracles -----------------------------------------------------------------------------------------------

def _leaf_sum(forest, X, dtype):
    """The Forest's outputs summed tree by tree in ``dtype`` (onnxruntime's order and type), base added last,
    from a Python walk of its arrays (numeric splits)."""
    rows = forest.rows(X)[0]
    if forest.input_float32:
        rows = rows.astype(np.float32).astype(np.float64)
    total = np.zeros((len(rows), forest.n_outputs), dtype=dtype)
    n = np.arange(len(rows))
    for t in range(forest.n_trees):
        base, node = forest.tree_offset[t], np.zeros(len(rows), dtype=np.int64)
        while True:
            g = base + node
            inner = forest.left_child[g] >= 0
            if not inner.any():
                break
            x, thr = rows[n, forest.feature[g]], forest.threshold[g]
            with np.errstate(invalid="ignore"):
                below = x <= thr if forest.split_rule == "le" else x < thr
                left = np.where(np.isnan(x), forest.missing_left[g] == 1, below)
            node = np.where(inner, np.where(left, forest.left_child[g], forest.right_child[g]), node)
        total = (total + forest.value[base + node].astype(dtype)).astype(dtype)
    if forest.aggregate == "mean":
        total = (total / dtype(forest.n_trees)).astype(dtype)
    return (total + forest.base_score.astype(dtype)).astype(dtype)


def _graph_thresholds(model):
    node = model._plan.node
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "TreeEnsemble":
        return np.asarray(attrs["nodes_featureids"]), numpy_helper.to_array(attrs["nodes_splits"]).astype(np.float64)
    values = attrs.get("nodes_values_as_tensor")
    values = numpy_helper.to_array(values) if values is not None else np.asarray(attrs["nodes_values"])
    inner = np.array([m != b"LEAF" for m in attrs["nodes_modes"]])
    return np.asarray(attrs["nodes_featureids"])[inner], values[inner].astype(np.float64)


def threshold_rows(model, forest, limit=400):
    """Rows with one column set exactly on a threshold of the graph or of the Forest, and one float32 (and
    float64) ulp either side."""
    features, values = _graph_thresholds(model)
    features = np.array([model._plan.columns[int(j)][0] for j in features], dtype=np.int64)
    inner = forest.left_child >= 0
    features = np.concatenate((features, forest.feature[inner]))
    values = np.concatenate((values, forest.threshold[inner]))
    keep = np.isfinite(values)
    pick = RNG.choice(np.flatnonzero(keep), size=min(limit, keep.sum()), replace=False)
    rows = []
    for i, (j, t) in enumerate(zip(features[pick], values[pick])):
        t32 = np.float32(t)
        for v in (t, t32, np.nextafter(t32, np.float32(-np.inf)), np.nextafter(t32, np.float32(np.inf)),
                  np.nextafter(t, -np.inf), np.nextafter(t, np.inf)):
            row = X_EVAL[i % len(X_EVAL)].copy()
            row[int(j)] = v
            rows.append(row)
    return np.array(rows)


def nan_rows():
    X = X_EVAL.copy()
    X[RNG.random(X.shape) < 0.25] = np.nan
    return X


def parity(forest, X) -> float:
    """max |Forest - onnxruntime's scores before the post-transform| over ``X``."""
    return float(np.max(np.abs(forest.predict(X) - forest.predict_fn(X)), initial=0.0))


def _check_parity(model, forest, X):
    """Forest vs onnxruntime on ``X``: the float32 sum of the Forest's leaves equals onnxruntime's scores to the
    bit (same routing); the Forest's float64 prediction within float32 rounding of them. Returns max |Δ|."""
    ort = forest.predict_fn(X)
    dtype = np.float32 if _onnx_trees._ensemble_dtype(model._plan) == np.float32 else np.float64
    legacy = model._plan.node.op_type != "TreeEnsemble"             # legacy operators output float32
    emulated = _leaf_sum(forest, X, dtype).astype(np.float32 if legacy else dtype).astype(np.float64)
    direct = slice(1, None) if (model._plan.labels is not None and forest.n_outputs == 2 and
                                model._plan.transform == "NONE" and len(model._plan.labels) == 2) else slice(None)
    np.testing.assert_array_equal(emulated[:, direct], ort[:, direct])
    scale = np.abs(forest.value).max(axis=0).sum() * forest.n_trees + np.abs(forest.base_score).max() + 1
    gap = parity(forest, X)
    assert gap <= 8 * np.finfo(np.float32).eps * scale
    return gap


@pytest.mark.parametrize("name", SKLEARN + BOOSTERS)
def test_parity_with_onnxruntime(name):
    """Random rows, rows on every threshold and one ulp either side, rows with NaN: the Forest routes each
    row as onnxruntime does (bit-identical float32 sums) and predicts its scores within float32 rounding."""
    _, model = fitted(name)
    forest = import_model(model)
    for X in (X_EVAL, threshold_rows(model, forest), nan_rows()):
        _check_parity(model, forest, X)


#: original model -> rtol of its exact PG² against the ONNX model's: 1e-12 where the converted graph is the same
#: function (scikit-learn forests with float32-exact leaves: skl2onnx moves each threshold to the float32 that
#: routes float32(x) as scikit-learn does; XGBoost: float32 thresholds and leaves already). Otherwise the ONNX
#: model stores float32 leaves (GradientBoosting: learning_rate * value; LightGBM: float64 leaves and thresholds
#: rounded to float32) or scales in float32 (skl2onnx's Scaler for StandardScaler), or takes a double input that
#: onnxruntime compares in double to float32 thresholds where XGBoost compares float32(x) (``_dbl``): a slightly
#: different model
PG2_RTOL = {**dict.fromkeys(["rf_reg", "rf_reg2", "rf_str", "rf_clf2", "rf_clf3", "xgb_reg", "xgb_clf2", "xgb_clf3"],
                            1e-12),
            **dict.fromkeys(["gb_reg", "gb_clf2", "hgb_reg", "pipe"], 1e-5),
            **dict.fromkeys(["lgb_reg", "lgb_clf2", "lgb_clf3", "lgb_reg_dbl"], 1e-4), "xgb_reg_dbl": 1e-5}


@pytest.mark.parametrize("name", SKLEARN + BOOSTERS)
def test_pg2_matches_original_model(name):
    """Exact PG² of the ONNX model equals the original Python model's (rtol 1e-12 where the graph is the same
    function, see PG2_RTOL), output by output."""
    original, model = fitted(name)
    X = X_EVAL[:30]
    ours, theirs = xp.pg2(model, X, S, verbose=False).value, xp.pg2(original, X, S, verbose=False).value
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=PG2_RTOL[name], atol=1e-300)
    if PG2_RTOL[name] > 1e-12:
        assert not np.array_equal(ours, theirs)            # the float32 rounding the tolerance allows is real


@pytest.mark.parametrize("name", ["gb_reg", "xgb_clf3", "lgb_clf2", "pipe"])
def test_pg2_within_monte_carlo_of_onnxruntime(name):
    """Exact PG² within 4 standard errors of a Monte Carlo estimate (4000 draws per row) through onnxruntime's
    session itself."""
    _, model = fitted(name)
    forest = import_model(model)
    X, n = X_EVAL[:5], 4000
    exact = xp.pg2(model, X, S, sigma=0.3, verbose=False).value.reshape(len(X), -1)
    rng = np.random.default_rng(1)
    session = model._session("margin")
    for i, x in enumerate(X):
        rows = np.repeat(x[None, :], n + 1, axis=0)
        rows[1:, S] += rng.normal(scale=0.3, size=(n, len(S)))
        out = session.run(None, model._feed(rows))[model._plan.score_output].astype(np.float64).reshape(n + 1, -1)
        out = out[:, 1:] if forest.n_outputs == 1 and out.shape[1] == 2 else out
        gaps = (out[1:] - out[0]) ** 2
        mean, se = gaps.mean(axis=0), gaps.std(axis=0, ddof=1) / np.sqrt(n)
        # (+ 1e-4 of the largest PG²: an output that a rare switch moves, unseen in n draws, has se 0)
        assert np.all(np.abs(exact[i] - mean) <= 4 * se + 1e-4 * exact.max()), (exact[i], mean, se)


# --- double precision and TreeEnsemble (ai.onnx.ml opset 5), converted here from the legacy graphs ----------

def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _model(node, dtype, ml_opset, width=D, outputs=("Y",)):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", elem, [None, width])],
                              [helper.make_empty_tensor_value_info(o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml",
                                                                                                     ml_opset)])


def to_double(proto, nudge=1e-9):
    """The regressor of ``proto`` with a double input and double tensors (thresholds moved off the float32
    grid by ``nudge``, relative): ai.onnx.ml opset 3."""
    node = next(n for n in proto.graph.node if n.op_type == "TreeEnsembleRegressor")
    attrs = _attrs(node)
    for name in ("nodes_values", "target_weights", "base_values"):
        if name in attrs:
            value = np.asarray(attrs.pop(name), dtype=np.float64)
            attrs[name + "_as_tensor"] = numpy_helper.from_array(value * (1 + nudge) if name == "nodes_values"
                                                                 else value + nudge)
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
    return _model(node, np.float64, 3)


def to_v5(proto, dtype):
    """The regressor of ``proto`` as one TreeEnsemble node (opset 5; base values dropped) over ``dtype``."""
    a = _attrs(next(n for n in proto.graph.node if n.op_type == "TreeEnsembleRegressor"))
    leaf = np.array([m == b"LEAF" for m in a["nodes_modes"]])
    key = {(t, n): i for i, (t, n) in enumerate(zip(a["nodes_treeids"], a["nodes_nodeids"]))}
    inner_at = {i: k for k, i in enumerate(np.flatnonzero(~leaf))}
    leaf_at = {i: k for k, i in enumerate(np.flatnonzero(leaf))}
    weights = np.zeros(len(leaf_at))
    for t, n, w in zip(a["target_treeids"], a["target_nodeids"], a["target_weights"]):
        weights[leaf_at[key[(t, n)]]] += w
    inner = np.flatnonzero(~leaf)
    true = [key[(a["nodes_treeids"][i], a["nodes_truenodeids"][i])] for i in inner]
    false = [key[(a["nodes_treeids"][i], a["nodes_falsenodeids"][i])] for i in inner]
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    _, roots = np.unique(a["nodes_treeids"], return_index=True)
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1, aggregate_function=1, post_transform=0,
        tree_roots=[inner_at[int(r)] for r in sorted(roots)],
        nodes_featureids=[a["nodes_featureids"][i] for i in inner],
        nodes_modes=numpy_helper.from_array(np.array([modes.index(a["nodes_modes"][i].decode()) for i in inner],
                                                     dtype=np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([a["nodes_values"][i] for i in inner], dtype=dtype)),
        nodes_truenodeids=[leaf_at[c] if leaf[c] else inner_at[c] for c in true],
        nodes_trueleafs=[int(leaf[c]) for c in true],
        nodes_falsenodeids=[leaf_at[c] if leaf[c] else inner_at[c] for c in false],
        nodes_falseleafs=[int(leaf[c]) for c in false],
        nodes_missing_value_tracks_true=[a.get("nodes_missing_value_tracks_true", [0] * len(leaf))[i] for i in inner],
        leaf_targetids=[0] * len(weights), leaf_weights=numpy_helper.from_array(weights.astype(dtype)))
    return _model(node, dtype, 5)


@pytest.mark.parametrize("name", ["rf_reg", "xgb_reg", "lgb_reg"])
@pytest.mark.parametrize("kind", ["double", "v5_float", "v5_double"])
def test_double_tensors_and_tree_ensemble_v5(name, kind):
    """Double tensors (``*_as_tensor``, thresholds off the float32 grid) and TreeEnsemble opset 5 over float and
    double: the Forest compares in the graph's type, so the sums in that type match onnxruntime to the bit
    (double: up to the float32 output of the legacy operator)."""
    _, model = fitted(name)
    proto = {"double": lambda: to_double(model.proto),
             "v5_float": lambda: to_v5(model.proto, np.float32),
             "v5_double": lambda: to_v5(model.proto, np.float64)}[kind]()
    converted = OnnxModel(proto)
    forest = import_model(converted)
    assert forest.input_float32 == (kind == "v5_float")
    for X in (X_EVAL, threshold_rows(converted, forest), nan_rows()):
        _check_parity(converted, forest, X)
    if kind == "v5_double":              # double sums, double output: the Forest's float64 sum is onnxruntime's
        assert parity(forest, X_EVAL) <= 4 * np.finfo(np.float64).eps * np.abs(forest.value).sum()


# --- hand-built graphs: every node mode, NaN tracking, the operators in front, refusals ---------------------

MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def stump(mode, t=0.5, track=0, dtype=np.float32, width=1, **extra):
    """One split on column 0 (true: 1.0, false: 2.0) of a TreeEnsembleRegressor over ``width`` columns."""
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1, nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0], nodes_modes=[mode, "LEAF", "LEAF"],
        nodes_values=[t, 0.0, 0.0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        nodes_missing_value_tracks_true=[track, 0, 0], target_treeids=[0, 0], target_nodeids=[1, 2],
        target_ids=[0, 0], target_weights=[1.0, 2.0], **extra)
    return _model(node, dtype, 1, width=width)


def stump_v5(mode, values, track=0, dtype=np.float32):
    """One TreeEnsemble (opset 5) split on column 0 (true: 1.0, false: 2.0); ``values``: its threshold, or the
    set of BRANCH_MEMBER."""
    member = mode == 6
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1, aggregate_function=1, post_transform=0,
        tree_roots=[0], nodes_featureids=[0], nodes_modes=numpy_helper.from_array(np.array([mode], dtype=np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.0 if member else values], dtype=dtype)),
        nodes_truenodeids=[0], nodes_trueleafs=[1], nodes_falsenodeids=[1], nodes_falseleafs=[1],
        nodes_missing_value_tracks_true=[track], leaf_targetids=[0, 0],
        leaf_weights=numpy_helper.from_array(np.array([1.0, 2.0], dtype=dtype)),
        **({"membership_values": numpy_helper.from_array(np.array(values + [np.nan], dtype=dtype))} if member else {}))
    return _model(node, dtype, 5, width=1)


def _around(t):
    t32 = np.float32(t)
    values = [t, t32, np.nextafter(t32, np.float32(-1e9)), np.nextafter(t32, np.float32(1e9)),
              np.nextafter(t, -np.inf), np.nextafter(t, np.inf), -3.0, 0.0, 3.0, np.nan]
    return np.array(values, dtype=np.float64).reshape(-1, 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("track", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_node_mode(mode, track, dtype):
    """Each comparison, NaN tracked or not, in float and double graphs: the Forest's routes are onnxruntime's on
    the threshold, one ulp either side and NaN (EQ / NEQ as two thresholds)."""
    model = OnnxModel(stump(mode, 0.1, track, dtype))
    forest = import_model(model)
    X = _around(0.1)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))
    assert forest.input_float32 == (dtype == np.float32)
    assert forest.n_leaves == (3 if mode in ("BRANCH_EQ", "BRANCH_NEQ") else 2)
    assert sorted(set(forest.predict(X)[:, 0])) == [1.0, 2.0]          # both sides are reached


@pytest.mark.parametrize("mode", range(6))
def test_every_node_mode_tree_ensemble_v5(mode):
    model = OnnxModel(stump_v5(mode, 0.1, track=1))
    forest = import_model(model)
    X = _around(0.1)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))


@pytest.mark.parametrize("track", [0, 1])
def test_branch_member_is_a_categorical_split(track):
    """BRANCH_MEMBER (opset 5): a set split of category codes; an unseen code goes false, NaN as tracked."""
    model = OnnxModel(stump_v5(6, [1.0, 3.0], track=track))
    forest = import_model(model)
    assert forest.categorical.tolist() == [True] and forest.n_categories.tolist() == [4]
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [7.0], [-1.0], [np.nan]])
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))
    np.testing.assert_array_equal(forest.predict(X)[:, 0], [2, 1, 2, 1, 2, 2, 2, 1 if track else 2])


def _front_model(*nodes, inputs=(("X", TensorProto.DOUBLE, 2),), classifier=False):
    """Nodes in front of a two-column tree ensemble (LEQ on column 0, GT on column 1) reading tensor "Z"."""
    ensemble = helper.make_node(
        "TreeEnsembleRegressor", ["Z"], ["Y"], domain="ai.onnx.ml", n_targets=1, nodes_treeids=[0] * 5,
        nodes_nodeids=list(range(5)), nodes_featureids=[0, 1, 0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "BRANCH_GT", "LEAF", "LEAF", "LEAF"], nodes_values=[0.3, -0.2, 0, 0, 0],
        nodes_truenodeids=[1, 2, 0, 0, 0], nodes_falsenodeids=[4, 3, 0, 0, 0],
        nodes_missing_value_tracks_true=[1, 0, 0, 0, 0], target_treeids=[0] * 3, target_nodeids=[2, 3, 4],
        target_ids=[0] * 3, target_weights=[1.0, 2.0, 4.0], base_values=[0.5])
    graph = helper.make_graph(list(nodes) + [ensemble], "g",
                              [helper.make_tensor_value_info(n, t, [None, w]) for n, t, w in inputs],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])])
    return OnnxModel(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                             helper.make_opsetid("ai.onnx.ml", 1)]))


def _rows_around_forest(forest, n_random=200):
    X = RNG.normal(size=(n_random, forest.n_features))
    inner = forest.left_child >= 0
    extra = []
    for j, t in zip(forest.feature[inner], forest.threshold[inner]):
        for v in (t, np.nextafter(np.float32(t), np.float32(-np.inf)), np.nextafter(np.float32(t), np.float32(np.inf)),
                  np.nextafter(t, -np.inf), np.nextafter(t, np.inf), np.nan):
            row = X[len(extra) % n_random].copy()
            row[j] = v
            extra.append(row)
    return np.vstack((X, extra))


def test_imputer_cast_scaler_compiled_into_input_columns():
    """Cast double -> float, Imputer (NaN -> fill), Scaler with a negative scale: the thresholds move to the input
    columns (the negative scale swaps the sides), NaN goes where the fill value goes; routes identical."""
    model = _front_model(
        helper.make_node("Cast", ["X"], ["C"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Imputer", ["C"], ["I"], domain="ai.onnx.ml", imputed_value_floats=[0.25, 5.0],
                         replaced_value_float=float("nan"), name="imputer"),
        helper.make_node("Scaler", ["I"], ["Z"], domain="ai.onnx.ml", offset=[0.1, 1.0], scale=[3.0, -0.7],
                         name="scaler"))
    forest = import_model(model)
    assert forest.input_float32 and forest.n_features == 2
    X = _rows_around_forest(forest)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))
    assert len(np.unique(forest.predict(X))) == 3


def test_scaler_on_a_double_input_compares_the_double():
    """A Scaler on a double input computes in double and rounds to float32: the routing depends on the double
    itself (the Forest compares float64), switch points found exactly."""
    model = _front_model(helper.make_node("Scaler", ["X"], ["Z"], domain="ai.onnx.ml", offset=[0.1, -0.3],
                                          scale=[1.7, 0.9], name="scaler"))
    forest = import_model(model)
    assert not forest.input_float32
    X = _rows_around_forest(forest)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))
    assert not np.array_equal(forest.threshold, np.float32(forest.threshold))     # off the float32 grid


def test_named_columns_through_concat_name_the_features():
    """One float input per column, joined by Concat: the features are named after the inputs."""
    model = _front_model(helper.make_node("Concat", ["a", "b"], ["Z"], axis=1, name="concat"),
                         inputs=(("a", TensorProto.FLOAT, 1), ("b", TensorProto.FLOAT, 1)))
    forest = import_model(model)
    assert model.feature_names == ["a", "b"] == forest.feature_names
    X = _rows_around_forest(forest)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))
    assert xp.pg2(model, X[:3], ["b"], verbose=False).value.shape == (3,)


@pytest.mark.parametrize("op, domain", [("Abs", ""), ("Normalizer", "ai.onnx.ml")])
def test_operator_in_front_refused_by_name(op, domain):
    with pytest.raises(UnsupportedModelError, match=f"operator {op} \\(odd_step\\) in front of the tree ensemble is "
                                                    "not supported"):
        import_model(_front_model(helper.make_node(op, ["X"], ["Z"], domain=domain, name="odd_step")))


def test_operator_behind_refused_by_name():
    proto = stump("BRANCH_LEQ")
    proto.graph.node.append(helper.make_node("Abs", ["Y"], ["W"], name="after"))
    with pytest.raises(UnsupportedModelError, match=r"operator Abs \(after\) beside or behind the tree ensemble"):
        OnnxModel(proto)


@pytest.mark.parametrize("extra, match", [
    (dict(post_transform="PROBIT"), "PROBIT"), (dict(aggregate_function="MIN"), "MIN"),
    (dict(aggregate_function="MAX"), "MAX")])
def test_unsupported_attributes_refused(extra, match):
    with pytest.raises(UnsupportedModelError, match=match):
        import_model(OnnxModel(stump("BRANCH_LEQ", **extra)))


def test_imputer_of_a_value_and_member_set_of_non_codes_refused():
    with pytest.raises(UnsupportedModelError, match=r"Imputer \(imp\).*not monotone"):
        import_model(_front_model(helper.make_node("Imputer", ["X"], ["Z"], domain="ai.onnx.ml", name="imp",
                                                   imputed_value_floats=[0.0], replaced_value_float=-1.0)))
    with pytest.raises(UnsupportedModelError, match="BRANCH_MEMBER"):
        import_model(OnnxModel(stump_v5(6, [0.5, 2.0])))


def test_average_aggregate_is_the_mean():
    model = OnnxModel(stump("BRANCH_LEQ", aggregate_function="AVERAGE", base_values=[0.25]))
    forest = import_model(model)
    assert forest.aggregate == "mean"
    X = _around(0.5)
    np.testing.assert_array_equal(forest.predict(X), forest.predict_fn(X))


# --- a corrupted import is caught; the model object --------------------------------------------------------

def test_corrupted_threshold_is_caught_by_parity(monkeypatch):
    """One threshold moved by one float32 ulp: parity on the rows around the thresholds sees it, and so does
    the parity certificate, whose own rows lie on and beside every threshold."""
    _, good = fitted("xgb_reg")
    model = OnnxModel(good.proto)
    numeric = _onnx_trees._numeric

    def corrupt(*args, **kwargs):
        low, threshold, nan_low = numeric(*args, **kwargs)
        threshold = threshold.copy()
        threshold[0] = np.nextafter(np.float32(threshold[0]), np.float32(np.inf))
        return low, threshold, nan_low

    monkeypatch.setattr(_onnx_trees, "_numeric", corrupt)
    forest = import_model(model)
    X = threshold_rows(model, forest, limit=10_000)
    assert parity(forest, X) > 1e-3
    assert parity(import_model(good), X) < 1e-5
    certificate = certify(model, X_EVAL[:50])
    assert not certificate.passed and certificate.runtime.startswith("onnxruntime")
    assert certify(good, X_EVAL[:50]).passed


@pytest.mark.parametrize("name", ["gb_clf2", "xgb_clf2", "xgb_clf3", "lgb_clf2", "lgb_clf3", "rf_clf3"])
def test_classifiers_pass_the_certificate_on_the_margin_and_the_probabilities(name):
    """onnxruntime's probability output against the link of the post_transform (LOGISTIC / SOFTMAX) applied to
    the Forest's margin; with NONE the Forest's output is the probabilities (the margin comparison)."""
    _, model = fitted(name)
    certificate = certify(model, X_EVAL[:50])
    assert certificate.passed and certificate.output_passed, str(certificate)
    link = {"LOGISTIC": "logistic link", "SOFTMAX": "softmax link", "NONE": "margin comparison"}
    assert link[model._plan.transform] in certificate.output_runtime


# --- encoded categorical inputs: OneHotEncoder / LabelEncoder in front of the ensemble ----------------------

ENCODED = {"rf": lambda: RandomForestClassifier(4, random_state=0),
           "gb": lambda: GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0),
           "dt": lambda: DecisionTreeClassifier(random_state=0),
           "gb_reg": lambda: GradientBoostingRegressor(n_estimators=6, max_depth=3, random_state=0)}
#: exact PG² of the ONNX model against the Pipeline's: fully grown trees have float32-exact leaves (class
#: fractions 0 / 1), GradientBoosting's leaves are stored in float32 (as PG2_RTOL)
ENCODED_RTOL = {"rf": 1e-12, "dt": 1e-12, "gb": 1e-5, "gb_reg": 1e-5}


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(list("xyzw"), n),
                         "d": rng.choice(["p", "q"], n)})


@functools.lru_cache(maxsize=None)
def encoded(kind, encoder="onehot", columns=("c", "d")):
    """(the scikit-learn Pipeline, its OnnxModel by skl2onnx): ``encoder`` on the string ``columns``, the
    numbers passed through, in front of model ``kind``."""
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    frame = _frame()
    y = frame["a"] + (frame["c"] == "x") - 0.8 * (frame["d"] == "q") + 0.3 * frame["b"]
    frame = frame[["a", "b", *columns]]
    y = y if kind == "gb_reg" else (y > 0.2).astype(int)
    step = OneHotEncoder(handle_unknown="ignore", sparse_output=False) if encoder == "onehot" else \
        OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
    pipe = make_pipeline(make_column_transformer((step, list(columns)), ("passthrough", ["a", "b"])),
                         ENCODED[kind]()).fit(frame, y)
    types = [(c, StringTensorType([None, 1]) if c in ("c", "d") else FloatTensorType([None, 1])) for c in frame]
    options = {id(pipe[-1]): {"zipmap": False}} if kind != "gb_reg" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pipe, OnnxModel(skl2onnx.to_onnx(pipe, initial_types=types, options=options))


def _encoded_rows(forest, frame):
    """Random rows, rows with categories no encoder saw (and a missing one), and rows on and one float32 / float64
    ulp either side of every numeric threshold."""
    rows = frame.iloc[:120].copy()
    unseen = frame.iloc[:30].copy()
    unseen.loc[unseen.index[::2], "c"] = "never"
    if "d" in unseen:
        unseen.loc[unseen.index[1::3], "d"] = "other"
    unseen.loc[unseen.index[::5], "c"] = None
    extra = []
    numeric = (forest.left_child >= 0) & (forest.n_categories[np.maximum(forest.feature, 0)] == 0)
    for j, t in zip(forest.feature[numeric], forest.threshold[numeric]):
        for v in (t, np.nextafter(np.float32(t), np.float32(-np.inf)), np.nextafter(np.float32(t), np.float32(np.inf)),
                  np.nextafter(t, -np.inf), np.nextafter(t, np.inf)):
            row = frame.iloc[len(extra) % len(frame)].copy()
            row.iloc[int(j)] = float(v)
            extra.append(row)
    return pd.concat([rows, unseen, pd.DataFrame(extra)], ignore_index=True)


def _onnxruntime_scores(model, forest, rows):
    """onnxruntime's scores before the post-transform on the frame ``rows`` (strings fed as they are), in the
    Forest's outputs."""
    scores = model.decision_function(rows)
    return scores[:, -forest.n_outputs:] if scores.shape[1] == 2 and forest.n_outputs == 1 else scores


@pytest.mark.parametrize("kind", list(ENCODED))
def test_one_hot_encoded_columns_are_categorical_features_of_the_input(kind):
    """Each encoded string input is one categorical feature (codes: positions in cats_strings, its labels read
    from a DataFrame); splits on its dummy columns are set splits; an unseen category is the all-zero row."""
    pipe, model = encoded(kind)
    forest = import_model(model)
    assert forest.feature_names == ["a", "b", "c", "d"]
    assert forest.n_categories.tolist() == [0, 0, 4, 2]
    assert forest.category_labels[2] == tuple(pipe[0].named_transformers_["onehotencoder"].categories_[0])
    rows = _encoded_rows(forest, _frame())
    ours = forest.predict(rows)
    np.testing.assert_allclose(ours, _onnxruntime_scores(model, forest, rows), rtol=0, atol=4e-6)
    assert np.array_equal(ours, import_model(pipe).predict(rows)) or kind in ("gb", "gb_reg")
    certificate = certify(model, rows)
    assert certificate.passed and certificate.threshold_rows > 0, str(certificate)


@pytest.mark.parametrize("kind", list(ENCODED))
def test_one_hot_encoded_pg2_equals_the_pipelines(kind):
    """Exact PG² on a set holding the categorical column equals the scikit-learn Pipeline's (read in its input
    columns too)."""
    pipe, model = encoded(kind)
    rows = _frame(40, seed=3)
    for S in (["c"], ["c", "a"], ["d", "b", "c"]):
        ours = xp.pg2(model, rows, S, sigma=0.5, verbose=False).value
        theirs = xp.pg2(pipe, rows, S, sigma=0.5, verbose=False).value
        np.testing.assert_allclose(ours, theirs, rtol=ENCODED_RTOL[kind], atol=1e-300)


def test_one_string_column_through_gather_and_the_model_file_audit(tmp_path):
    """skl2onnx selects a single encoded column with a Gather; the .onnx file is audited by xai-audit."""
    from xai_plugins.cli import main

    pipe, model = encoded("rf", columns=("c",))
    forest = import_model(model)
    assert forest.n_categories.tolist() == [0, 0, 4] and forest.feature_names == ["a", "b", "c"]
    rows = _encoded_rows(forest, _frame()[["a", "b", "c"]])
    np.testing.assert_allclose(forest.predict(rows), _onnxruntime_scores(model, forest, rows), rtol=0, atol=4e-6)
    onnx.save(model.proto, str(tmp_path / "model.onnx"))
    frame = _frame(80, seed=5)[["a", "b", "c"]].assign(y=lambda f: pipe.predict(f))
    frame.to_csv(tmp_path / "test.csv", index=False)
    code = main(["--model", str(tmp_path / "model.onnx"), "--data", str(tmp_path / "test.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), "--sections", "faithfulness", "--explainers", "pg2", "--no-pdf",
                 "--quiet", "--max-rows", "20"])
    assert code == 0
    assert (tmp_path / "out" / "model.json").is_file()


@pytest.mark.parametrize("kind", ["rf", "gb"])
def test_ordinal_encoder_is_a_label_encoder_read_as_one_categorical_feature(kind):
    """skl2onnx writes an OrdinalEncoder as ai.onnx.ml LabelEncoder nodes (keys_strings -> values_int64s,
    default_int64 the unknown value): one categorical feature per input, unseen categories at the default."""
    pipe, model = encoded(kind, encoder="ordinal")
    assert "LabelEncoder" in [n.op_type for n in model.proto.graph.node]
    forest = import_model(model)
    assert forest.n_categories.tolist() == [0, 0, 4, 2]
    rows = _encoded_rows(forest, _frame())
    np.testing.assert_allclose(forest.predict(rows), _onnxruntime_scores(model, forest, rows), rtol=0, atol=4e-6)
    assert certify(model, rows).passed
    rows = _frame(40, seed=3)
    np.testing.assert_allclose(xp.pg2(model, rows, ["c", "a"], sigma=0.5, verbose=False).value,
                               xp.pg2(pipe, rows, ["c", "a"], sigma=0.5, verbose=False).value,
                               rtol=ENCODED_RTOL[kind], atol=1e-300)


def test_one_hot_encoded_int64_input_reads_its_integers_as_labels():
    """An int64 input one-hot encoded (cats_int64s, behind skl2onnx's Cast to int64): its integers are the labels,
    an unseen integer the all-zero row; exact PG² as the Pipeline's; the certificate passes (the Pipeline's too)."""
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.normal(size=300), "k": rng.choice([3, 7, 11], 300)})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["k"]),
                                                 ("passthrough", ["a"])),
                         RandomForestClassifier(4, random_state=0)).fit(frame, frame["a"] + (frame["k"] == 7) > 0.3)
    model = OnnxModel(skl2onnx.to_onnx(pipe, initial_types=[("a", FloatTensorType([None, 1])),
                                                            ("k", Int64TensorType([None, 1]))],
                                       options={id(pipe[-1]): {"zipmap": False}}))
    forest = import_model(model)
    assert forest.category_labels[1] == (3, 7, 11)
    rows = frame.copy()
    rows.loc[::4, "k"] = 5
    np.testing.assert_array_equal(forest.predict(rows), model.decision_function(rows))
    assert certify(model, rows[:100]).passed and certify(pipe, rows[:100]).passed
    np.testing.assert_allclose(xp.pg2(model, rows[:20], ["k", "a"], sigma=0.5, verbose=False).value,
                               xp.pg2(pipe, rows[:20], ["k", "a"], sigma=0.5, verbose=False).value, rtol=1e-12)


def test_an_encoder_that_refuses_unseen_categories_refuses_them_as_onnxruntime_does():
    """OneHotEncoder zeros=0 (handle_unknown="error"): onnxruntime fails on an unseen category, so does the
    Forest's reading of the rows; known categories are read as usual."""
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    frame = _frame()
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(sparse_output=False), ["c"]), ("passthrough", ["a"])),
                         RandomForestClassifier(3, random_state=0)).fit(frame[["a", "c"]], frame["c"] == "x")
    model = OnnxModel(skl2onnx.to_onnx(pipe, initial_types=[("a", FloatTensorType([None, 1])),
                                                            ("c", StringTensorType([None, 1]))],
                                       options={id(pipe[-1]): {"zipmap": False}}))
    forest = import_model(model)
    assert forest.predict(frame[["a", "c"]]).shape == (len(frame), 2)
    unseen = frame[["a", "c"]].iloc[:3].assign(c="never")
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error type
        model.decision_function(unseen)
    with pytest.raises(InputError, match="zeros=0"):
        forest.predict(unseen)


@pytest.mark.parametrize("attrs, match", [
    (dict(keys_floats=[0.5, 1.5], values_int64s=[0, 1]), "LabelEncoder"),
    (dict(keys_strings=["a", "b"], values_strings=["u", "v"]), "LabelEncoder")])
def test_unsupported_encoders_are_refused_by_name(attrs, match):
    encoder = helper.make_node("LabelEncoder", ["S"], ["E"], domain="ai.onnx.ml", **attrs)
    cast = helper.make_node("Cast", ["E"], ["C"], to=TensorProto.DOUBLE)
    joined = helper.make_node("Concat", ["C", "X"], ["Z"], axis=1)
    with pytest.raises(UnsupportedModelError, match=match):
        _front_model(encoder, cast, joined, inputs=(("S", TensorProto.STRING, 1), ("X", TensorProto.DOUBLE, 1)))


@pytest.mark.parametrize("front, match", [
    ([helper.make_node("Scaler", ["X"], ["X1"], domain="ai.onnx.ml", offset=[0.0], scale=[2.0]),
      helper.make_node("Cast", ["X1"], ["X2"], to=TensorProto.INT64),
      helper.make_node("OneHotEncoder", ["X2"], ["E"], domain="ai.onnx.ml", cats_int64s=[0, 1])], "transformed column"),
    ([helper.make_node("OneHotEncoder", ["S"], ["E"], domain="ai.onnx.ml", cats_strings=["a"]),
      helper.make_node("Scaler", ["E"], ["X1"], domain="ai.onnx.ml", offset=[0.0], scale=[2.0])], "Scaler"),
    ([helper.make_node("OneHotEncoder", ["W"], ["E"], domain="ai.onnx.ml", cats_strings=["a"])], "2 columns at once")])
def test_encoders_of_transformed_columns_or_transformed_after_are_refused_by_name(front, match):
    """Only an input column itself is encoded, and only Cast / Reshape / Concat follow an encoder."""
    joined = helper.make_node("Concat", [front[-1].output[0], "X"], ["Z"], axis=1)
    with pytest.raises(UnsupportedModelError, match=match):
        _front_model(*front, joined, inputs=(("S", TensorProto.STRING, 1), ("X", TensorProto.DOUBLE, 1),
                                             ("W", TensorProto.STRING, 2)))


def test_model_object(tmp_path):
    """Loaded from a path, bytes or a ModelProto; weakly referenced; predict / predict_proba through onnxruntime."""
    import weakref

    from xai_plugins.errors import ModelGoneError

    original, model = fitted("rf_clf3")
    path = tmp_path / "model.onnx"
    path.write_bytes(model.proto.SerializeToString())
    for loaded in (OnnxModel.load(path), OnnxModel(str(path)), OnnxModel(path.read_bytes())):
        assert loaded.n_features_in_ == D and loaded.classes_.tolist() == [0, 1, 2]
    assert repr(model).startswith("OnnxModel(TreeEnsembleClassifier (ai.onnx.ml opset 1), 4 features, classes [0, 1")
    np.testing.assert_array_equal(model.predict(X_EVAL), original.predict(X_EVAL.astype(np.float32)))
    np.testing.assert_allclose(model.predict_proba(X_EVAL), original.predict_proba(X_EVAL.astype(np.float32)),
                               atol=1e-6)
    import pickle

    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X_EVAL), model.predict(X_EVAL))
    temporary = OnnxModel(model.proto)
    forest = import_model(temporary)
    ref = weakref.ref(temporary)
    del temporary
    assert ref() is None
    with pytest.raises(ModelGoneError):
        forest.predict_fn(X_EVAL[:2])
    assert xp.forest.library_of(model) == "onnx"


def test_onnx_header_tells_onnx_files_apart(tmp_path):
    """The first bytes of converted models say ONNX; those of the other model formats do not."""
    import pickle

    from xai_plugins.forest.onnx import onnx_header

    for name in ("rf_reg", "xgb_clf2", "lgb_reg"):
        assert onnx_header(fitted(name)[1].proto.SerializeToString()[:16])
    assert onnx_header(stump("BRANCH_LT").SerializeToString()[:16])
    others = [pickle.dumps(fitted("rf_reg")[0]), b'{"learner": {}}', b"CBM1....", b"PK\x03\x04", b"tree\nversion=v4",
              b"{U\x07learner"]
    assert not any(onnx_header(head[:16]) for head in others)


def _classifier_stump(weights, class_ids, labels, transform, base=()):
    """One split (x <= 0.5) whose leaves 1 and 2 carry ``weights`` [leaf][k] for ``class_ids``."""
    kw = {"classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s": labels}
    node = helper.make_node(
        "TreeEnsembleClassifier", ["X"], ["label", "scores"], domain="ai.onnx.ml", nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_values=[0.5, 0, 0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        class_treeids=[0] * 2 * len(class_ids), class_nodeids=[1] * len(class_ids) + [2] * len(class_ids),
        class_ids=list(class_ids) * 2, class_weights=[w for leaf in weights for w in leaf], post_transform=transform,
        **({"base_values": list(base)} if base else {}), **kw)
    return OnnxModel(_model(node, np.float32, 1, width=1, outputs=("label", "scores")))


@pytest.mark.parametrize("weights, ids, labels, transform, base, space, n_out", [
    ([[0.25], [0.75]], [0], [0, 1], "NONE", (), "probability", 2),                # all >= 0: [1 - s, s]
    ([[-1.5], [2.0]], [0], [0, 1], "NONE", (), "margin", 2),                      # mixed: [-s, s]
    ([[-1.5], [2.0]], [0], ["no", "yes"], "LOGISTIC", (0.25,), "margin", 1),      # one margin
    ([[0.1, 0.9], [0.6, 0.4]], [0, 1], [3, 7], "NONE", (), "probability", 2),     # binary as two classes
    ([[1.0, 0.0, -2.0], [0.0, 3.0, 1.0]], [0, 1, 2], ["a", "b", "c"], "SOFTMAX_ZERO", (0.5, 0.0, -1.0), "margin", 3),
    ([[1.0, 0.5, -2.0], [0.0, 3.0, 1.0]], [0, 1, 2], [0, 1, 2], "SOFTMAX", (), "margin", 3),
])
def test_classifier_conventions(weights, ids, labels, transform, base, space, n_out):
    """onnxruntime's binary and multiclass conventions: the Forest's outputs are its scores before the
    post-transform, column for column; the classes are the graph's labels."""
    model = _classifier_stump(weights, ids, labels, transform, base)
    forest = import_model(model)
    assert (forest.output_space, forest.n_outputs) == (space, n_out)
    assert model.classes_.tolist() == labels
    X = _around(0.5)
    np.testing.assert_allclose(forest.predict(X), forest.predict_fn(X), rtol=0, atol=1e-7)
    assert model.predict(X).shape == (len(X),)
