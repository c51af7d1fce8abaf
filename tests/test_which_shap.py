"""Which SHAP? every attribution available, each scored by exact PGI² (checked here against PGI² of its ranking
computed directly), their agreement, and the candidates a model cannot have, with the reason."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import xai_plugins as xp
from xai_plugins.errors import InputError

xgboost = pytest.importorskip("xgboost")
lightgbm = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(400, 4))
    X[:, 3] = X[:, 0] + 0.3 * rng.normal(size=400)                 # a correlated pair
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.2 * rng.normal(size=400)
    return X, y


def test_every_candidate_is_scored_by_the_pgi2_of_its_ranking(data):
    X, y = data
    model = xgboost.XGBRegressor(n_estimators=40, max_depth=3).fit(X, y)
    found = xp.which_shap(model, X[:30], background=X[200:260], sigma=0.4)
    assert set(found.values) == {"path-dependent TreeSHAP", "interventional TreeSHAP", "shap TreeExplainer",
                                 "xgboost pred_contribs"} and not found.skipped
    for name, values in found.values.items():
        ranking = np.argsort(-np.abs(values), axis=1, kind="stable")
        direct = xp.pgi2(model, X[:30], ranking, 0.4)
        assert found.faithfulness.loc[name, "PGI²"] == pytest.approx(direct.mean(), rel=1e-12)
        low, high = found.faithfulness.loc[name, ["low", "high"]]
        assert low <= direct.mean() <= high
    assert list(found.faithfulness["rank"]) == [1, 2, 3, 4]
    assert found.faithfulness["PGI²"].is_monotonic_decreasing


def test_the_same_game_agrees_and_different_games_are_explained(data):
    X, y = data
    model = lightgbm.LGBMRegressor(n_estimators=30, num_leaves=8, verbose=-1).fit(X, y)
    found = xp.which_shap(model, X[:25], background=X[200:240])
    pairs = found.agreement.set_index(["a", "b"])
    same = pairs.loc[("path-dependent TreeSHAP", "lightgbm pred_contrib")]
    assert same["max |Δ|"] < 1e-9 and same["Kendall τ"] == pytest.approx(1.0) and same["top-3 shared"] == 1.0
    other = pairs.loc[("path-dependent TreeSHAP", "interventional TreeSHAP")]
    assert other["max |Δ|"] > 1e-3 and "background" in other["why"]


def test_one_output_of_a_multiclass_model(data):
    X, y = data
    model = lightgbm.LGBMClassifier(n_estimators=10, num_leaves=6, verbose=-1).fit(X, np.digitize(y, [-1, 1]))
    found = xp.which_shap(model, X[:20], output=2)
    assert all(v.shape == (20, 4) for v in found.values.values())
    ours = xp.tree_shap(model, X[:20]).values[:, :, 2]
    assert np.array_equal(found.values["path-dependent TreeSHAP"], ours)
    with pytest.raises(InputError, match="choose one"):
        xp.which_shap(model, X[:20])


def test_a_pipeline_has_only_the_input_column_attributions():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.normal(size=200), "c": rng.choice(list("pqr"), 200)})
    y = frame["a"] + (frame["c"] == "q")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]), remainder="passthrough"),
                         RandomForestRegressor(n_estimators=5, random_state=0)).fit(frame, y)
    found = xp.which_shap(pipe, frame[:20])
    assert list(found.values) == ["path-dependent TreeSHAP"] and found.agreement.empty


def test_a_candidate_that_cannot_be_computed_is_skipped_with_its_reason(data):
    X, y = data
    forest = xp.import_model(RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y))
    found = xp.which_shap(dataclasses.replace(forest, weight=None), X[:10], background=X[100:120])
    assert "node covers" in found.skipped["path-dependent TreeSHAP"]
    assert list(found.values) == ["interventional TreeSHAP"]
    with pytest.raises(InputError, match="at least two"):
        xp.which_shap(forest, X[:1])
