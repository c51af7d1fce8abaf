"""The contract of the C core (csrc/xai.h) seen from Python: ABI version, status texts and their
exceptions, the forest checks of xai_validate at the int32/int64 edges, infinite thresholds, and the
argument checks of xai_reroute. Expected values come from the header text, IEEE comparisons in
numpy and scikit-learn, never from the C code under test."""

from __future__ import annotations

import importlib.util
import re
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from xai_plugins import _native
from xai_plugins.errors import (
    InputError,
    InputIndexError,
    ModelStructureError,
    NativeMemoryError,
    UnsupportedModelError,
    XaiError,
)
from xai_plugins.forest import Forest, import_model

CSRC = Path(__file__).resolve().parent.parent / "csrc"
HEADER = (CSRC / "xai.h").read_text()
ffi, lib = _native.ffi, _native.lib

#: status name -> (exception class, builtin a caller catches), as the README's conventions state
EXCEPTIONS = {
    "XAI_E_SIZE": (InputError, ValueError),
    "XAI_E_INDEX": (InputIndexError, IndexError),
    "XAI_E_STRUCTURE": (ModelStructureError, ValueError),
    "XAI_E_VALUE": (InputError, ValueError),
    "XAI_E_UNSUPPORTED": (UnsupportedModelError, TypeError),
    "XAI_E_NOMEM": (NativeMemoryError, MemoryError),
}


def _statuses() -> dict[str, int]:
    """XAI_OK and the XAI_E_* codes with their values, read from the header's text."""
    return {name: int(value) for name, value in re.findall(r"\b(XAI_(?:OK|E_[A-Z]+))\s*=\s*(\d+)", HEADER)}


def _strerror(code: int) -> str:
    return ffi.string(lib.xai_strerror(code)).decode()


def test_abi_version_is_the_same_in_header_library_and_python():
    header_version = int(re.search(r"#define XAI_ABI_VERSION (\d+)", HEADER).group(1))
    assert lib.xai_abi_version() == header_version == _native.ABI_VERSION


def test_strerror_describes_every_status_and_flags_unknown_codes():
    statuses = _statuses()
    assert set(statuses) == {"XAI_OK", *EXCEPTIONS}
    texts = {name: _strerror(code) for name, code in statuses.items()}
    assert all(texts.values()) and len(set(texts.values())) == len(texts)    # non-empty and distinct
    for name, word in [("XAI_OK", "success"), ("XAI_E_SIZE", "size"), ("XAI_E_INDEX", "out of range"),
                       ("XAI_E_STRUCTURE", "binary trees"), ("XAI_E_VALUE", "NaN"),
                       ("XAI_E_UNSUPPORTED", "not implemented"), ("XAI_E_NOMEM", "memory")]:
        assert word in texts[name], (name, texts[name])
    for code in (-1, max(statuses.values()) + 1, 2**31 - 1):
        assert "unknown" in _strerror(code)


@pytest.mark.parametrize("name", list(EXCEPTIONS))
def test_each_status_raises_its_exception_with_the_c_text(name):
    code = _statuses()[name]
    error, builtin = EXCEPTIONS[name]
    with pytest.raises(error) as caught:
        _native._check(code, "an operation")
    assert isinstance(caught.value, builtin) and isinstance(caught.value, XaiError)
    assert str(caught.value).startswith(f"an operation: {_strerror(code)}")


def test_ok_raises_nothing_and_an_unknown_status_raises_the_base_class():
    _native._check(lib.XAI_OK, "fine")
    with pytest.raises(XaiError, match="unknown"):
        _native._check(999, "odd")


# --- xai_validate at the edges ------------------------------------------------------------------

def test_nan_threshold_is_rejected_with_its_node(stump_forest):
    with pytest.raises(InputError, match=r"NaN.*\(at tree 0, node 0\)"):
        stump_forest(threshold=[np.nan, 0.0, 0.0])


def test_tree_target_near_int32_max_is_out_of_range(stump_forest):
    """target + leaf_width must not wrap around in int32: INT32_MAX + 1 is not <= n_outputs."""
    struct = _native.CForest(stump_forest())        # holds the arrays its pointers read
    s = struct.ptr
    assert lib.xai_validate(s) == lib.XAI_OK
    for bad in (2**31 - 1, -1, 1):
        target = np.array([bad], dtype=np.int32)
        s.tree_target = ffi.cast("int32_t *", target.ctypes.data)
        assert lib.xai_validate(s) == lib.XAI_E_INDEX, bad
        tree = ffi.new("int64_t *")
        assert lib.xai_last_error(tree, ffi.NULL, ffi.NULL) == lib.XAI_E_INDEX and tree[0] == 0


def test_node_count_is_64_bit_and_checked_against_the_offsets(stump_forest):
    """n_nodes has tree_offset's type: a count past 2**32 is stored whole and must match the offsets
    (a 32-bit field would refuse the value or wrap it onto 3)."""
    assert dict(ffi.typeof("xai_forest").fields)["n_nodes"].type is ffi.typeof("int64_t")
    struct = _native.CForest(stump_forest())
    s = struct.ptr
    s.n_nodes = 3 + 2**32
    assert s.n_nodes == 3 + 2**32
    assert lib.xai_validate(s) == lib.XAI_E_SIZE


# --- infinite thresholds: allowed, compared as IEEE 754 -----------------------------------------

def _two_level(threshold_root: float, threshold_right: float, rule: str, stump_forest) -> Forest:
    """x0 <= / < t_root -> leaf 1 else (x1 <= / < t_right -> leaf 3 else leaf 4); NaN goes right."""
    return stump_forest(left_child=[1, -1, 3, -1, -1], right_child=[2, -1, 4, -1, -1], feature=[0, 0, 1, 0, 0],
                        threshold=[threshold_root, 0, threshold_right, 0, 0], missing_left=[0] * 5,
                        value=[0.0, 10.0, 0.0, 30.0, 40.0], tree_offset=[0, 5], n_features=2, split_rule=rule)


def _leaf_oracle(x: np.ndarray, t_root: float, t_right: float, rule: str) -> int:
    """The leaf of _two_level by numpy's IEEE comparison (NaN compares false, so it goes right)."""
    left = np.less if rule == "lt" else np.less_equal
    if left(x[0], t_root):
        return 1
    return 3 if left(x[1], t_right) else 4


VALUES = [-np.inf, -1e308, -1.0, 0.0, 1.0, 1e308, np.inf, np.nan]


@pytest.mark.parametrize("rule", ["le", "lt"])
@pytest.mark.parametrize("t_root,t_right", [(np.inf, -np.inf), (-np.inf, np.inf), (np.inf, 0.5)])
def test_infinite_thresholds_route_as_ieee_comparisons(stump_forest, rule, t_root, t_right):
    forest = _two_level(t_root, t_right, rule, stump_forest)
    X = np.array([[a, b] for a in VALUES for b in VALUES])
    expected = np.array([forest.value[_leaf_oracle(x, t_root, t_right, rule), 0] for x in X])
    np.testing.assert_array_equal(_native.predict(forest, X)[:, 0], expected)
    # reroute: rows start in their leaf for X, then feature 1 (or both) takes the values of another row
    start = np.array([_leaf_oracle(x, t_root, t_right, rule) for x in X], dtype=np.int32)
    rng = np.random.default_rng(0)
    for changed in ([1], [0, 1]):
        Xp = X.copy()
        Xp[:, changed] = X[rng.permutation(len(X))][:, changed]
        after = np.array([_leaf_oracle(x, t_root, t_right, rule) for x in Xp])
        leaf, moved = _native.RerouteLayout(forest, 0, changed).route(np.ascontiguousarray(Xp), start)
        np.testing.assert_array_equal(leaf, after)
        np.testing.assert_array_equal(moved, np.flatnonzero(after != start))


def test_scikit_learn_missing_value_split_has_an_infinite_threshold_and_predicts_exactly():
    """scikit-learn >= 1.3 stores +inf for a split that separates only the NaN rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    X[:50, 0] = np.nan
    y = np.where(np.isnan(X[:, 0]), 5.0, 0.01 * X[:, 1])
    model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    forest = import_model(model)
    assert np.isposinf(forest.threshold[forest.left_child >= 0]).any()
    np.testing.assert_array_equal(_native.predict(forest, X)[:, 0], model.predict(X))


# --- xai_reroute's arguments --------------------------------------------------------------------

@pytest.fixture
def two_trees(stump_forest):
    """Two stumps on feature 0 (<= 0.5), global leaves 1, 2 (tree 0) and 4, 5 (tree 1)."""
    return stump_forest(left_child=[1, -1, -1] * 2, right_child=[2, -1, -1] * 2, feature=[0] * 6,
                        threshold=[0.5, 0, 0] * 2, missing_left=[1, 0, 0] * 2, value=[0.0, 1.0, 2.0] * 2,
                        tree_offset=[0, 3, 6], tree_target=[0, 0], n_features=2)


def test_reroute_checks_tree_leaves_features_and_buffers(two_trees):
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    start = np.array([1, 2, 2])
    leaf, moved = _native.RerouteLayout(two_trees, 0, [0]).route(X, start)
    np.testing.assert_array_equal(leaf, [1, 2, 2])
    assert len(moved) == 0
    for tree in (-1, 2):
        with pytest.raises(InputIndexError):
            _native.RerouteLayout(two_trees, tree, [0]).route(X, start)
    with pytest.raises(InputIndexError, match=r"tree 0, row 2"):
        _native.RerouteLayout(two_trees, 0, [0]).route(X, [1, 2, 4])           # row 2 starts in tree 1's leaf
    with pytest.raises(InputIndexError, match=r"tree 1, row 0"):
        _native.RerouteLayout(two_trees, 1, [0]).route(X, [3, 4, 5])           # node 3 is tree 1's root, not a leaf
    with pytest.raises(InputIndexError):
        _native.RerouteLayout(two_trees, 0, [-1]).route(X, start)
    with pytest.raises(InputError, match="size"):
        _native.RerouteLayout(two_trees, 0, [0, 1, 0]).route(X, start)         # more changed features than features
    with pytest.raises(InputError, match="node_value"):
        _native.RerouteLayout(two_trees, 0, [0]).route(X, start, node_value=np.zeros((3, 1)))


def test_reroute_refuses_null_arguments_in_c(two_trees):
    s = _native.c_forest(two_trees).ptr
    out = ffi.new("xai_reroute_layout **")
    assert lib.xai_reroute_prepare(s, ffi.NULL, out) == lib.XAI_E_SIZE
    spec = ffi.new("xai_reroute_spec *")                           # all pointers NULL
    spec.n_changed = 1
    assert lib.xai_reroute_prepare(s, spec, out) == lib.XAI_E_SIZE
    assert lib.xai_reroute_prepare(ffi.NULL, spec, out) == lib.XAI_E_SIZE
    layout = _native.RerouteLayout(two_trees, 0, [0])._layout
    assert lib.xai_reroute(s, layout, ffi.NULL) == lib.XAI_E_SIZE
    args = ffi.new("xai_reroute_args *")                           # all pointers NULL
    args.n_rows = 1
    assert lib.xai_reroute(s, layout, args) == lib.XAI_E_SIZE
    assert lib.xai_reroute(ffi.NULL, layout, args) == lib.XAI_E_SIZE
    assert lib.xai_reroute(s, ffi.NULL, args) == lib.XAI_E_SIZE
    lib.xai_reroute_free(ffi.NULL)
    assert lib.xai_last_error(ffi.NULL, ffi.NULL, ffi.NULL) == lib.XAI_E_SIZE


def test_pg2_terms_refuses_null_and_bad_arguments_in_c(two_trees):
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    splits = split_boundaries(two_trees)
    s, offsets = splits.c_forest.ptr, ffi.new("int64_t[]", [int(v) for v in splits.cdf_offset])
    d, width = two_trees.n_features, 2 * int(splits.cdf_offset[-1])
    X, mask = ffi.new("double[]", d), ffi.new("uint8_t[]", [1] * d)
    cdf, counts = ffi.new("double[]", width), ffi.new("double[]", 2)
    assert lib.xai_pg2_terms(ffi.NULL, X, 1, mask, 1, cdf, offsets, width, 0.0, counts) == lib.XAI_E_SIZE
    assert lib.xai_pg2_terms(s, X, 1, mask, 1, cdf, offsets, width, 0.0, ffi.NULL) == lib.XAI_E_SIZE
    assert lib.xai_pg2_terms(s, X, 1, ffi.NULL, 1, cdf, offsets, width, 0.0, counts) == lib.XAI_E_SIZE
    assert lib.xai_pg2_terms(s, X, -1, mask, 1, cdf, offsets, width, 0.0, counts) == lib.XAI_E_SIZE
    assert lib.xai_pg2_terms(s, X, 1, mask, 1, cdf, offsets, width, 2.0, counts) == lib.XAI_E_VALUE


# --- the build's per-compiler options -----------------------------------------------------------

@pytest.fixture
def build_ffi(monkeypatch):
    spec = importlib.util.spec_from_file_location("xai_build_ffi", CSRC / "build_ffi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv("XAI_SANITIZE", raising=False)
    return module


@pytest.mark.parametrize("platform,sysconfig_platform,c11,libm", [
    ("linux", "linux-x86_64", "-std=c11", True),
    ("darwin", "macosx-11.0-arm64", "-std=c11", True),
    ("win32", "win-amd64", "/std:c11", False),            # MSVC: its own flag spelling, no libm
    ("win32", "mingw_x86_64", "-std=c11", False),         # MinGW gcc on Windows: gcc flags, no libm
])
def test_build_options_follow_the_compiler(build_ffi, monkeypatch, platform, sysconfig_platform, c11, libm):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(sysconfig, "get_platform", lambda: sysconfig_platform)
    options = build_ffi.build_options()
    assert c11 in options["extra_compile_args"]
    assert all(a[0] == c11[0] for a in options["extra_compile_args"])  # no gcc flag reaches MSVC, nor the reverse
    assert options["libraries"] == (["m"] if libm else [])


def test_scatter_add_adds_row_by_row_and_checks_indices():
    """xai_scatter_add (RF-MCR's sums of moved rows) against numpy's own fancy-indexed add, and its
    refusal of out-of-range rows and NULL buffers."""
    rng = np.random.default_rng(0)
    target = rng.normal(size=(50, 3))
    rows = rng.choice(50, size=20, replace=False)
    values = rng.normal(size=(20, 3))
    expected = target.copy()
    expected[rows] += values
    _native.scatter_add(target, rows, values)
    np.testing.assert_array_equal(target, expected)
    for bad in (-1, 50):
        with pytest.raises(InputIndexError, match="row 1"):
            _native.scatter_add(target, np.array([0, bad]), values[:2])
    with pytest.raises(InputError):
        _native.scatter_add(target, rows, values[:3])
    assert lib.xai_scatter_add(ffi.NULL, 1, 1, ffi.NULL, ffi.NULL, 0) == lib.XAI_E_SIZE


def test_treeshap_checks_its_arguments_and_covers_in_c(two_trees):
    s = _native.c_forest(two_trees).ptr
    X = np.zeros((2, two_trees.n_features))
    out = np.empty((2, two_trees.n_outputs, two_trees.n_features + 1))
    cover = np.ones(two_trees.n_nodes)
    ptr = _native._ptr
    assert lib.xai_treeshap_path(s, ptr("double *", cover), ptr("double *", X), 2, ptr("double *", out)) == lib.XAI_OK
    assert lib.xai_treeshap_path(s, ffi.NULL, ptr("double *", X), 2, ptr("double *", out)) == lib.XAI_E_SIZE
    assert lib.xai_treeshap_path(s, ptr("double *", cover), ptr("double *", X), -1, ptr("double *", out)) \
        == lib.XAI_E_SIZE
    assert lib.xai_treeshap_path(ffi.NULL, ptr("double *", cover), ptr("double *", X), 2, ptr("double *", out)) \
        == lib.XAI_E_SIZE
    for bad in (-1.0, np.inf, np.nan):                       # a cover must be finite and >= 0: the node is named
        wrong = cover.copy()
        wrong[1] = bad
        assert lib.xai_treeshap_path(s, ptr("double *", wrong), ptr("double *", X), 2, ptr("double *", out)) \
            == lib.XAI_E_VALUE
        tree, node = ffi.new("int64_t *"), ffi.new("int64_t *")
        lib.xai_last_error(tree, node, ffi.NULL)
        assert (tree[0], node[0]) == (0, 1)
    with pytest.raises(InputError, match="cover must have one entry per node"):
        _native.treeshap(two_trees, X, cover=cover[:-1])
    assert lib.xai_treeshap_interventional(s, ptr("double *", X), 2, ptr("double *", X), 0, ptr("double *", out)) \
        == lib.XAI_E_SIZE
    assert lib.xai_treeshap_interventional(s, ptr("double *", X), 2, ffi.NULL, 2, ptr("double *", out)) \
        == lib.XAI_E_SIZE
    assert lib.xai_treeshap_interventional(s, ptr("double *", X), 2, ptr("double *", X), 2, ffi.NULL) \
        == lib.XAI_E_SIZE
