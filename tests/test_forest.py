"""Every importer reproduces its model's own output (margin space) through the C predict,
NaN rows included where the model routes missing values; bad models and inputs raise."""

import numpy as np
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import xai_plugins as xp
from xai_plugins.forest import import_model

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def data(diabetes_std):
    X, y = diabetes_std
    y2 = (y > np.median(y)).astype(int)
    y3 = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    Xn = X.copy()
    Xn[np.random.default_rng(0).random(X.shape) < 0.05] = np.nan
    return X, Xn, y, y2, y3


def _margin(model, X):
    if hasattr(model, "get_booster"):
        return model.predict(X, output_margin=True)
    if isinstance(model, xgb.Booster):
        return model.predict(xgb.DMatrix(X), output_margin=True)
    if hasattr(model, "booster_"):
        return model.predict(X, raw_score=True)
    if isinstance(model, (GradientBoostingClassifier, HistGradientBoostingClassifier)):
        return model.decision_function(X)
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    return model.predict(X)


CASES = {
    "dt_reg": (lambda: DecisionTreeRegressor(max_depth=6, random_state=0), "y", True, 1e-12),
    "dt_clf": (lambda: DecisionTreeClassifier(max_depth=6, random_state=0), "y3", True, 1e-12),
    "rf_reg": (lambda: RandomForestRegressor(n_estimators=10, random_state=0), "y", True, 1e-12),
    "rf_clf": (lambda: RandomForestClassifier(n_estimators=10, random_state=0), "y3", True, 1e-12),
    "et_reg": (lambda: ExtraTreesRegressor(n_estimators=10, random_state=0), "y", False, 1e-12),
    "et_clf": (lambda: ExtraTreesClassifier(n_estimators=10, random_state=0), "y2", False, 1e-12),
    "gb_reg": (lambda: GradientBoostingRegressor(n_estimators=20, random_state=0), "y", False, 1e-12),
    "gb_bin": (lambda: GradientBoostingClassifier(n_estimators=20, random_state=0), "y2", False, 1e-12),
    "gb_multi": (lambda: GradientBoostingClassifier(n_estimators=10, random_state=0), "y3", False, 1e-12),
    "hgb_reg": (lambda: HistGradientBoostingRegressor(max_iter=20, random_state=0), "y", True, 1e-12),
    "hgb_clf": (lambda: HistGradientBoostingClassifier(max_iter=20, random_state=0), "y3", True, 1e-12),
    # XGBoost sums leaf values in float32: agree to its own rounding
    "xgb_reg": (lambda: xgb.XGBRegressor(n_estimators=30, max_depth=4, tree_method="hist"), "y", True, 1e-5),
    "xgb_bin": (lambda: xgb.XGBClassifier(n_estimators=30, max_depth=4), "y2", True, 1e-5),
    "xgb_multi": (lambda: xgb.XGBClassifier(n_estimators=10, max_depth=3), "y3", True, 1e-5),
    "lgb_reg": (lambda: lgb.LGBMRegressor(n_estimators=30, verbose=-1), "y", True, 1e-12),
    "lgb_bin": (lambda: lgb.LGBMClassifier(n_estimators=30, verbose=-1), "y2", True, 1e-12),
    "lgb_multi": (lambda: lgb.LGBMClassifier(n_estimators=10, verbose=-1), "y3", True, 1e-12),
}


@pytest.mark.parametrize("name", list(CASES))
def test_predict_parity(data, name):
    X, Xn, y, y2, y3 = data
    make, target, nan_ok, rtol = CASES[name]
    train = Xn if nan_ok else X
    model = make().fit(train, {"y": y, "y2": y2, "y3": y3}[target])
    forest = import_model(model)
    for Z in ([X, Xn] if nan_ok else [X]):
        ours = forest.predict(Z)
        theirs = np.asarray(_margin(model, Z), dtype=np.float64).reshape(len(Z), -1)
        scale = max(1.0, np.abs(theirs).max())
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * scale)


def test_xgboost_booster_and_base_score_string(data):
    X, _, y, _, _ = data
    model = xgb.XGBRegressor(n_estimators=5).fit(X, y)
    booster = model.get_booster()
    forest = import_model(booster)
    np.testing.assert_allclose(forest.base_score, [float(np.float32(y.mean()))], rtol=1e-6)
    np.testing.assert_allclose(forest.predict(X)[:, 0], booster.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=1e-5)
    lgb_booster = lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(X, y).booster_
    np.testing.assert_allclose(import_model(lgb_booster).predict(X)[:, 0], lgb_booster.predict(X, raw_score=True),
                               rtol=1e-12)


def test_unsupported_and_unfitted_models(data):
    X, _, y, _, _ = data
    with pytest.raises(xp.UnsupportedModelError, match="supported:"):
        import_model(LinearRegression().fit(X, y))
    with pytest.raises(xp.UnsupportedModelError):
        import_model("not a model")
    with pytest.raises(NotFittedError):
        import_model(RandomForestRegressor())
    with pytest.raises(NotFittedError):
        xp.pg2(xgb.XGBRegressor(), X[:2], [0])


def test_forest_structure_is_validated_in_c(stump_forest):
    assert stump_forest().predict(np.array([[0.0], [1.0], [np.nan]]))[:, 0].tolist() == [1.0, 2.0, 1.0]
    with pytest.raises(IndexError):
        stump_forest(left_child=[5, -1, -1])           # child outside its tree
    with pytest.raises(ValueError):
        stump_forest(left_child=[1, -1, -1], right_child=[1, -1, -1])  # node 1 has two parents
    with pytest.raises(ValueError):
        stump_forest(threshold=[np.nan, 0, 0])
    with pytest.raises(ValueError):
        stump_forest(value=[0.0, np.inf, 2.0])
    with pytest.raises(IndexError):
        stump_forest(feature=[3, 0, 0])


def _walk(forest, t, row):
    """Local leaf id of ``row`` in tree t of an XGBoost import: go left iff float32(x) < threshold."""
    base, node = forest.tree_offset[t], 0
    while forest.left_child[base + node] >= 0:
        x = np.float32(row[forest.feature[base + node]])
        left = forest.missing_left[base + node] if np.isnan(x) else x < forest.threshold[base + node]
        node = forest.left_child[base + node] if left else forest.right_child[base + node]
    return node


@pytest.mark.parametrize("kind", ["sklearn", "sklearn fully grown", "xgboost"])
def test_reroute_matches_a_full_traversal(data, kind):
    """xai_reroute (RF-MCR's permuted rows) against the model's own leaf assignment: scikit-learn's
    Tree.apply (x <= t on float32; fully grown: the walk layout's right-child links many levels deep,
    442 rows = lockstep groups of 64 and a partial one) and XGBoost's pred_leaf (x < t, NaN to the
    default side)."""
    from xai_plugins import _native

    X, Xn, y, *_ = data
    rng = np.random.default_rng(1)
    if kind.startswith("sklearn"):
        model = RandomForestRegressor(n_estimators=5, max_depth=None if "grown" in kind else 6,
                                      random_state=0).fit(Xn, y)
        def leaves(A):
            return np.stack([e.tree_.apply(A.astype(np.float32)) for e in model.estimators_], axis=1)
    else:  # XGBoost numbers nodes differently: walk the imported arrays in Python (x < t, NaN by default)
        model = xgb.XGBRegressor(n_estimators=5, max_depth=4, tree_method="hist").fit(Xn, y)
        def leaves(A):
            return np.array([[_walk(forest, t, row) for t in range(forest.n_trees)] for row in A])
    forest = import_model(model)
    before = leaves(Xn)
    for changed in ([2], [0, 3, 8]):
        Xp = Xn.copy()
        Xp[:, changed] = Xn[rng.permutation(len(Xn))][:, changed]
        Xp[:5, changed[0]] = Xn[:5, changed[0]]                   # some rows keep their values
        Xp[5, changed[0]] = np.nan                                  # NaN in a changed feature
        after = leaves(Xp)
        for t in range(forest.n_trees):
            start = before[:, t] + forest.tree_offset[t]
            leaf, moved = _native.RerouteLayout(forest, t, changed).route(np.ascontiguousarray(Xp), start)
            np.testing.assert_array_equal(leaf, after[:, t] + forest.tree_offset[t])
            np.testing.assert_array_equal(moved, np.flatnonzero(after[:, t] != before[:, t]))
            # with node values: each moved row's change of node value
            values = rng.normal(size=(forest.n_nodes, 2))
            layout = _native.RerouteLayout(forest, t, changed)
            _, moved, delta = layout.route(np.ascontiguousarray(Xp), start, node_value=values)
            np.testing.assert_array_equal(delta, values[leaf[moved]] - values[start[moved]])
        assert (after != before).any()


def test_reroute_validates_its_arguments(data):
    from xai_plugins import _native

    X, _, y, *_ = data
    forest = import_model(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y))
    start = forest.tree_offset[0] + DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).apply(X)
    with pytest.raises(IndexError):
        _native.RerouteLayout(forest, 1, [0]).route(X, start)                  # no tree 1
    with pytest.raises(IndexError):
        _native.RerouteLayout(forest, 0, [0, 0]).route(X, start)               # feature listed twice
    with pytest.raises(IndexError):
        _native.RerouteLayout(forest, 0, [X.shape[1]]).route(X, start)         # feature out of range
    with pytest.raises(IndexError):
        _native.RerouteLayout(forest, 0, [0]).route(X, np.zeros(len(X), dtype=np.int64))  # node 0 is not a leaf
    with pytest.raises(ValueError):
        _native.RerouteLayout(forest, 0, []).route(X, start)                   # nothing changed
    with pytest.raises(ValueError):
        _native.RerouteLayout(forest, 0, [0]).route(X[:, :3].copy(), start)     # wrong column count
    with pytest.raises(ValueError):
        _native.RerouteLayout(forest, 0, [0]).route(X, start, node_value=np.zeros((3, 1)))


def test_a_stated_max_depth_is_checked_by_the_c_validator(stump_forest):
    """An importer may state the forest's depth (scikit-learn's ``tree_.max_depth``); a tree deeper than
    the stated depth is refused, and a forest without one works it out."""
    from xai_plugins.errors import ModelStructureError

    assert stump_forest().max_depth == 1
    assert stump_forest(max_depth=1).max_depth == 1
    with pytest.raises(ModelStructureError):
        stump_forest(max_depth=0)


def test_scikit_learn_imports_state_the_trees_depth():
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    from xai_plugins.forest.cache import import_model
    from xai_plugins.forest.layout import _max_depth

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    for model in (RandomForestRegressor(5, random_state=0), GradientBoostingRegressor(n_estimators=5, max_depth=4)):
        forest = import_model(model.fit(X, y))
        assert forest.max_depth == _max_depth(forest.left_child, forest.right_child, forest.tree_offset) > 3
