"""The library registry of xai_plugins.forest: a new library is one module registering a LibraryImporter
(shown with a tiny fake library), and every question about a model's library goes through it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins.errors import InputTypeError, UnsupportedModelError
from xai_plugins.forest import (
    Forest,
    LibraryImporter,
    ModelPredictor,
    import_model,
    library_of,
    model_feature_names,
    model_missing_value,
    register,
    supported_models,
)
from xai_plugins.forest.cache import generation
from xai_plugins.forest.registry import unregister

xgb = pytest.importorskip("xgboost")


class StumpModel:
    """A one-split model of a made-up library: ``left`` where x[feature] <= threshold or is missing
    (NaN or the ``missing`` sentinel), else ``right``."""

    missing = -1.0

    def __init__(self, names, feature, threshold, left, right):
        self.names, self.feature, self.threshold, self.left, self.right = names, feature, threshold, left, right

    def predict(self, X):
        col = np.asarray(X, dtype=np.float64)[:, self.feature]
        return np.where(np.isnan(col) | (col == self.missing) | (col <= self.threshold), self.left, self.right)

    def relabel(self, left, right):
        """Changes the fitted model in place (the importer asks the cache to watch it)."""
        self.left, self.right = left, right


class StumpImporter(LibraryImporter):
    """The made-up library's importer: what a new library module of xai_plugins/forest/ holds."""

    name = "stumps"
    supported = "stumps StumpModel"
    mutators = ("relabel",)

    def owns(self, cls):
        return issubclass(cls, StumpModel)

    def to_forest(self, model):
        return Forest(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[model.feature, 0, 0],
                      threshold=[model.threshold, 0, 0], missing_left=[1, 0, 0], value=[0.0, model.left, model.right],
                      tree_offset=[0, 3], tree_target=[0], base_score=[0.0], n_features=len(model.names),
                      split_rule="le", input_float32=False, aggregate="sum", task="regression", output_space="raw",
                      model_type="stumps.StumpModel", feature_names=model_feature_names(model),
                      predict_fn=self.predictor(model), missing_value=self.missing_value(model))

    def feature_names(self, model):
        return model.names

    def missing_value(self, model):
        return model.missing

    def fingerprint(self, model):
        return (), (generation(model), model.threshold)

    def predictor(self, model):
        return ModelPredictor(model, lambda m, X: m.predict(X))

    def mutable_class(self):
        return StumpModel


@pytest.fixture
def stumps():
    """The fake library registered for one test."""
    register(StumpImporter())
    yield
    unregister("stumps")


def _rows(rng, n=40):
    X = rng.normal(size=(n, 3))
    X[::7, 1] = np.nan
    X[3::7, 1] = StumpModel.missing
    return X


def test_a_registered_library_is_imported_and_explained(stumps):
    rng = np.random.default_rng(0)
    model = StumpModel(["a", "b", "c"], feature=1, threshold=0.25, left=-2.0, right=3.0)
    X = _rows(rng)
    assert library_of(model) == "stumps" and "stumps StumpModel" in supported_models()
    assert model_feature_names(model) == ["a", "b", "c"] and model_missing_value(model) == -1.0
    forest = import_model(model)
    np.testing.assert_array_equal(forest.predict(X)[:, 0], model.predict(X))
    # columns aligned by the names the importer reads, the sentinel read as missing
    frame = pd.DataFrame(X, columns=["a", "b", "c"])[["c", "a", "b"]]
    np.testing.assert_array_equal(forest.predict(frame)[:, 0], model.predict(X))
    sigma = 0.4
    observed = ~np.isnan(X[:, 1]) & (X[:, 1] != StumpModel.missing)
    got = xp.pg2(model, X[observed], ["b"], sigma=sigma).value
    x = X[observed, 1]
    crosses = np.where(x <= 0.25, norm.sf((0.25 - x) / sigma), norm.cdf((0.25 - x) / sigma))
    np.testing.assert_allclose(got, 25.0 * crosses, rtol=1e-12, atol=1e-15)
    # Monte Carlo goes through the predictor the importer gives
    mc = xp.pg2(model, X[observed][:4], ["b"], sigma=sigma, method="monte_carlo", n_samples=40_000,
                random_state=1)
    np.testing.assert_allclose(mc.value, got[:4], atol=5 * np.max(mc.stderr) + 1e-12)


def test_the_cache_uses_the_registered_fingerprint_and_mutators(stumps):
    rng = np.random.default_rng(1)
    model = StumpModel(["a", "b", "c"], feature=0, threshold=0.0, left=1.0, right=2.0)
    X = _rows(rng)
    first = import_model(model)
    assert import_model(model) is first
    model.relabel(5.0, -5.0)                          # watched mutator: a new generation
    second = import_model(model)
    assert second is not first
    np.testing.assert_array_equal(second.predict(X)[:, 0], model.predict(X))
    model.threshold = 0.5                             # a fingerprint value
    third = import_model(model)
    assert third is not second
    np.testing.assert_array_equal(third.predict(X)[:, 0], model.predict(X))
    unregister("stumps")
    with pytest.raises(UnsupportedModelError, match="supported: .*scikit-learn"):
        import_model(StumpModel(["a"], 0, 0.0, 1.0, 2.0))
    assert library_of(model) is None and model_missing_value(model) != model_missing_value(model)   # NaN


class MyXGBRegressor(xgb.XGBRegressor):
    """A user's subclass, defined outside xgboost."""


class MyForest(RandomForestRegressor):
    """A user's subclass, defined outside scikit-learn."""


def test_subclasses_of_supported_models_belong_to_their_library(named_frame):
    X, y, _, _ = named_frame
    rows = X.to_numpy().copy()
    rows[::5, 2] = -999.0
    model = MyXGBRegressor(n_estimators=8, max_depth=3, missing=-999.0).fit(rows, y)
    assert library_of(model) == "xgboost" and model_missing_value(model) == -999.0
    np.testing.assert_allclose(import_model(model).predict(rows)[:, 0], model.predict(rows, output_margin=True),
                               rtol=1e-5, atol=1e-5)
    forest = MyForest(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    assert library_of(forest) == "sklearn" and model_feature_names(forest) == list(X.columns)
    np.testing.assert_allclose(import_model(forest).predict(X)[:, 0], forest.predict(X), rtol=1e-12)


def test_register_refuses_what_is_not_an_importer():
    with pytest.raises(InputTypeError, match="LibraryImporter"):
        register(StumpImporter)                       # the class, not an instance
    with pytest.raises(InputTypeError, match="name"):
        register(LibraryImporter())
