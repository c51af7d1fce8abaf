"""The XGBoost import reads a large booster in slices of boosting rounds (``booster[a:b]``), each exported
and let go before the next: the Forest is the one the whole model's export gives, every array bitwise,
on multi-class, random-forest-mode (``num_parallel_tree`` > 1), early-stopped and ``missing=`` models,
with the slices forced down to one round; a small booster, a categorical one (a slice leaves out the
categories the model stores) and a DART one are read whole."""

import dataclasses

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")
pd = pytest.importorskip("pandas")

from xai_plugins.forest import clear_model_cache, import_model  # noqa: E402
from xai_plugins.forest import xgboost as importer  # noqa: E402

FIRST_TREES, SLICE_BYTES = importer._FIRST_TREES, importer._SLICE_BYTES      # the defaults


def _data(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.sin(3 * np.nan_to_num(X[:, 2]))
    return X, y + 0.1 * rng.standard_normal(n)


def _categorical():
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"x": rng.standard_normal(n),
                          "city": pd.Categorical(rng.choice(["baku", "kyiv", "lima", "oslo", "rome"], n)),
                          "level": pd.Categorical(rng.choice([3, 7, 11], n))})
    y = frame.x + 1.5 * frame.city.isin(["oslo", "kyiv"]) - (frame.level == 7) + 0.1 * rng.standard_normal(n)
    return frame, y.to_numpy()


def _fit(name):
    X, y = _data()
    if name == "multiclass":
        return xgb.XGBClassifier(n_estimators=12, max_depth=3, n_jobs=1).fit(X, np.digitize(y, [-0.5, 0.5]))
    if name == "random_forest":                                         # one round of 9 parallel trees
        return xgb.XGBRFRegressor(n_estimators=9, max_depth=4, n_jobs=1, random_state=0).fit(X, y)
    if name == "boosted_forest":
        return xgb.XGBRegressor(n_estimators=8, num_parallel_tree=4, max_depth=4, subsample=0.8,
                                colsample_bynode=0.8, n_jobs=1, random_state=0).fit(X, y)
    if name == "boosted_forest_multiclass":
        return xgb.XGBClassifier(n_estimators=5, num_parallel_tree=3, max_depth=3, subsample=0.8, n_jobs=1,
                                 random_state=0).fit(X, np.digitize(y, [-0.5, 0.5]))
    if name == "categorical":
        frame, y = _categorical()
        return xgb.XGBRegressor(n_estimators=30, max_depth=3, enable_categorical=True, tree_method="hist",
                                max_cat_to_onehot=1, n_jobs=1).fit(frame, y)
    if name == "categorical_onehot":
        frame, y = _categorical()
        return xgb.XGBRegressor(n_estimators=30, max_depth=3, enable_categorical=True, tree_method="hist",
                                max_cat_to_onehot=8, n_jobs=1).fit(frame, y)
    if name == "early_stopped":
        model = xgb.XGBRegressor(n_estimators=300, learning_rate=0.9, max_depth=4, early_stopping_rounds=3, n_jobs=1)
        model.fit(X[:400], y[:400], eval_set=[(X[400:], y[400:])], verbose=False)
        assert 0 < model.best_iteration + 1 < model.get_booster().num_boosted_rounds()
        return model
    if name == "missing":
        X = np.where(np.isnan(X), -999.0, X)
        return xgb.XGBRegressor(n_estimators=30, max_depth=4, missing=-999.0, n_jobs=1).fit(X, y)
    if name == "binary_booster":
        return xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
                         xgb.DMatrix(X, label=y > 0), num_boost_round=30)
    raise ValueError(name)


MODELS = ["multiclass", "random_forest", "boosted_forest", "boosted_forest_multiclass", "categorical",
          "categorical_onehot", "early_stopped", "missing", "binary_booster"]


def _import(model, monkeypatch, first_trees, slice_bytes):
    """The Forest of ``model`` read with these slice sizes, and how many parts were read."""
    calls = []
    read_part = importer._read_part

    def counting(*args):
        calls.append(args)
        return read_part(*args)

    monkeypatch.setattr(importer, "_FIRST_TREES", first_trees)
    monkeypatch.setattr(importer, "_SLICE_BYTES", slice_bytes)
    monkeypatch.setattr(importer, "_read_part", counting)
    clear_model_cache()
    try:
        return import_model(model), len(calls)
    finally:
        clear_model_cache()


def _assert_same_forest(a, b):
    for spec in dataclasses.fields(a):
        x, y = getattr(a, spec.name), getattr(b, spec.name)
        if spec.name == "predict_fn":
            continue
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), spec.name
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), spec.name
        elif isinstance(x, float) and np.isnan(x):
            assert isinstance(y, float) and np.isnan(y), spec.name
        else:
            assert x == y, spec.name


@pytest.mark.parametrize("name", MODELS)
def test_the_sliced_import_is_the_whole_models(name, monkeypatch):
    model = _fit(name)
    whole, n_whole = _import(model, monkeypatch, 10**9, 10**9)
    one_round, n_rounds = _import(model, monkeypatch, 1, 1)            # every round its own slice
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    rounds = model.best_iteration + 1 if name == "early_stopped" else booster.num_boosted_rounds()
    if name.startswith("categorical"):      # booster[a:b] leaves out the model's categories: read whole
        assert n_whole == n_rounds == 1 and whole.category_labels is not None
    else:
        assert n_whole == 1 and n_rounds == rounds
    _assert_same_forest(whole, one_round)
    some, n_some = _import(model, monkeypatch, 2, 3_000)               # slices of a few rounds, sized by bytes
    assert n_some <= n_rounds
    _assert_same_forest(whole, some)
    if name == "early_stopped":
        assert whole.n_trees == model.best_iteration + 1


def test_a_small_booster_is_read_whole(monkeypatch):
    """30 trees of about 30 nodes: the first slice shows a small model, exported whole."""
    model = _fit("missing")
    whole, _ = _import(model, monkeypatch, 10**9, 10**9)
    default, reads = _import(model, monkeypatch, FIRST_TREES, SLICE_BYTES)
    assert reads == 2                                                  # the first slice, then the whole model
    _assert_same_forest(whole, default)
    _, reads = _import(model, monkeypatch, 30, SLICE_BYTES)
    assert reads == 1                                                  # no more trees than a first slice


def test_dart_is_read_whole_and_refused(monkeypatch):
    X, y = _data()
    model = xgb.XGBRegressor(booster="dart", n_estimators=100, max_depth=2, n_jobs=1).fit(X, y)
    monkeypatch.setattr(importer, "_FIRST_TREES", 1)
    assert importer._slice_plan(model.get_booster(), None) is None
    with pytest.raises(importer.UnsupportedModelError, match="dart"):
        import_model(model)
