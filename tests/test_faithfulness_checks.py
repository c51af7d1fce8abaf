"""xp.faithfulness refuses additive explanations of another model (their values plus base values
are not this model's output) and scores one output with ``output=``."""

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins.errors import ExplanationMismatchError, XaiError

shap = pytest.importorskip("shap")
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def data(diabetes_std):
    X, y = diabetes_std
    return np.ascontiguousarray(X[:200]), y[:200]


def regressors(X, y):
    mine = xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    other = xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y[::-1])
    return mine, other


def test_shap_values_of_another_model_are_refused(data):
    X, y = data
    mine, other = regressors(X, y)
    foreign = shap.TreeExplainer(other)(X[:10])
    with pytest.raises(ExplanationMismatchError, match="another model"):
        xp.faithfulness(mine, foreign)
    assert issubclass(ExplanationMismatchError, XaiError) and issubclass(ExplanationMismatchError, ValueError)
    # the same numbers without base values are a ranking from elsewhere: scored, not checked
    np.testing.assert_allclose(xp.faithfulness(mine, foreign.values, X=X[:10]),
                               xp.pgi2(mine, X[:10], np.argsort(-np.abs(foreign.values), axis=1, kind="stable")))


def test_tree_shap_of_this_xgboost_model_is_accepted(data):
    X, y = data
    mine, _ = regressors(X, y)
    own = shap.TreeExplainer(mine)(X[:10])
    ranking = np.argsort(-np.abs(own.values), axis=1, kind="stable")
    np.testing.assert_allclose(xp.faithfulness(mine, own), xp.pgi2(mine, X[:10], ranking))


def test_per_class_tree_shap_of_a_random_forest_is_accepted_and_output_selects_a_class(data):
    from sklearn.ensemble import RandomForestClassifier

    X, y = data
    yc = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    rf = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, yc)
    own = shap.TreeExplainer(rf)(X[:8])
    assert own.values.shape == (8, X.shape[1], 3)
    all_outputs = xp.faithfulness(rf, own)
    for c in range(3):
        ranking = np.argsort(-np.abs(own.values[:, :, c]), axis=1, kind="stable")
        by_class = xp.pgi2(rf, X[:8], ranking)[:, c]      # PGI² of class c's probability
        np.testing.assert_allclose(xp.faithfulness(rf, own, output=c), by_class)
        np.testing.assert_allclose(all_outputs[:, c], by_class)
    np.testing.assert_array_equal(xp.faithfulness(rf, own, output="2"), xp.faithfulness(rf, own, output=2))
    other = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=1).fit(X, yc[::-1])
    with pytest.raises(ExplanationMismatchError):
        xp.faithfulness(rf, shap.TreeExplainer(other)(X[:8]))
    with pytest.raises(XaiError):
        xp.faithfulness(rf, own, output=5)


def test_tree_shap_of_lightgbm_is_accepted(data):
    X, y = data
    model = lgb.LGBMClassifier(n_estimators=15, num_leaves=6, verbose=-1, random_state=0).fit(X, y > np.median(y))
    own = shap.TreeExplainer(model)(X[:10])
    values = own.values if own.values.ndim == 2 else own.values[:, :, 1]
    ranking = np.argsort(-np.abs(values), axis=1, kind="stable")
    np.testing.assert_allclose(np.ravel(xp.faithfulness(model, own, output=0)), xp.pgi2(model, X[:10], ranking))
