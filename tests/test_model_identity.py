"""One model, one Forest: the weakly keyed import cache, refits, garbage-collected models, the
frozen Forest, the exception hierarchy (C errors included), output resolution and random_state."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

import xai_plugins as xp
import xai_plugins.forest.cache as forest_module
from xai_plugins import errors
from xai_plugins._validation import check_random_state, resolve_output
from xai_plugins.forest import clear_model_cache, import_model

NAMES = ["a", "b", "c", "d"]


def _in_cache(forest) -> bool:
    return any(entry[2] is forest for entry in forest_module._CACHE.values())


# ------------------------------------------------------------------ the cache

@pytest.mark.parametrize("kind", ["rf", "xgb", "lgbm", "gb"])
def test_a_model_is_imported_once(small_model, named_frame, kind):
    X, y, _, _ = named_frame
    model = small_model(kind).fit(X, y)
    forest = import_model(model)
    assert import_model(model) is forest
    assert _in_cache(forest)
    assert import_model(forest) is forest
    np.testing.assert_allclose(forest.predict(X)[:, 0], model.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind, how", [("rf", "refit"), ("xgb", "refit"), ("lgbm", "refit"), ("gb", "refit"),
                                       ("gb", "warm_start"), ("rf", "warm_start")])
def test_refit_gives_a_new_forest(small_model, named_frame, kind, how):
    X, y, y2, _ = named_frame
    model = (small_model(kind, warm_start=True) if how == "warm_start" else small_model(kind)).fit(X, y)
    old = import_model(model)
    old_prediction = old.predict(X)
    np.testing.assert_allclose(old_prediction[:, 0], model.predict(X), rtol=1e-5, atol=1e-6)
    old_pg2 = xp.pg2(model, X.iloc[:4], [0, 1]).value
    if how == "refit":
        model.fit(X, y2)
        n_trees = old.n_trees
    else:
        model.set_params(n_estimators=9).fit(X, y)
        n_trees = 9
    new = import_model(model)
    assert new is not old
    assert import_model(model) is new
    assert new.n_trees == n_trees
    np.testing.assert_allclose(new.predict(X)[:, 0], model.predict(X), rtol=1e-5, atol=1e-6)
    assert not np.allclose(new.predict(X), old_prediction)
    # the old Forest is an immutable snapshot of the model as it was
    np.testing.assert_array_equal(old.predict(X), old_prediction)
    # and every entry point sees the refitted model
    assert not np.allclose(xp.pg2(model, X.iloc[:4], [0, 1]).value, old_pg2)
    np.testing.assert_array_equal(xp.pg2(model, X.iloc[:4], [0, 1]).value, xp.pg2(new, X.iloc[:4], [0, 1]).value)


# in-place changes of a booster: each one must reach every entry point (no value from a stale import)

def _stale_check(model, X, own_output, change):
    """Import ``model`` (through pg2), apply ``change()``, then require the cached import to match
    the model's own output after the change and PG² to equal that of a fresh import."""
    rows = X[:5]
    before = xp.pg2(model, rows, [0, 1]).value
    old = import_model(model)
    change()
    want = own_output(X)
    assert not np.allclose(old.predict(X)[:, 0], want, rtol=1e-5, atol=1e-5)   # the change matters
    forest = import_model(model)
    np.testing.assert_allclose(forest.predict(X)[:, 0], want, rtol=1e-5, atol=1e-5)
    after = xp.pg2(model, rows, [0, 1]).value
    clear_model_cache()
    fresh = import_model(model)
    assert fresh is not forest
    np.testing.assert_array_equal(after, xp.pg2(fresh, rows, [0, 1]).value)
    assert not np.allclose(after, before)
    assert import_model(model) is fresh             # an unchanged model stays cached


def _lgbm_pair(small_model, named_frame):
    X, y, y2, _ = named_frame
    X = X.to_numpy()
    return X, small_model("lgbm").fit(X, y).booster_, small_model("lgbm").fit(X, y2).booster_


def test_lightgbm_model_from_string_of_a_same_sized_model(small_model, named_frame):
    X, booster, other = _lgbm_pair(small_model, named_frame)
    assert booster.num_trees() == other.num_trees()
    _stale_check(booster, X, lambda Z: booster.predict(Z, raw_score=True),
                 lambda: booster.model_from_string(other.model_to_string()))


def test_lightgbm_set_leaf_output(small_model, named_frame):
    X, booster, _ = _lgbm_pair(small_model, named_frame)
    _stale_check(booster, X, lambda Z: booster.predict(Z, raw_score=True),
                 lambda: booster.set_leaf_output(0, 0, booster.get_leaf_output(0, 0) + 100.0))


def test_lightgbm_wrapper_sees_its_booster_changed(small_model, named_frame):
    X, y, _, _ = named_frame
    model = small_model("lgbm").fit(X, y)
    booster = model.booster_
    _stale_check(model, X, lambda Z: model.predict(Z, raw_score=True),
                 lambda: booster.set_leaf_output(1, 0, booster.get_leaf_output(1, 0) - 50.0))


def test_xgboost_refresh_updater_on_the_same_booster(named_frame):
    xgb = pytest.importorskip("xgboost")
    X, y, y2, _ = named_frame
    X = X.to_numpy()
    params = {"max_depth": 3, "nthread": 1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(X, y), 6)

    def margin(Z):
        return booster.predict(xgb.DMatrix(Z), output_margin=True)

    def refresh():
        booster.set_param({"process_type": "update", "updater": "refresh", "refresh_leaf": True})
        for i in range(6):
            booster.update(xgb.DMatrix(X, y2), i)
        assert booster.num_boosted_rounds() == 6     # same size: only the leaf values changed

    _stale_check(booster, X, margin, refresh)
    # xgb.train(..., xgb_model=booster) refreshes a copy: a new Booster; the original stays as it was
    cached = import_model(booster)
    copy = xgb.train({**params, "process_type": "update", "updater": "refresh"}, xgb.DMatrix(X, y), 6,
                     xgb_model=booster)
    assert copy is not booster and import_model(booster) is cached
    np.testing.assert_allclose(import_model(copy).predict(X)[:, 0],
                               copy.predict(xgb.DMatrix(X), output_margin=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cached.predict(X)[:, 0], margin(X), rtol=1e-5, atol=1e-5)


def test_xgboost_wrapper_load_model_into_a_fitted_wrapper(small_model, named_frame, tmp_path):
    X, y, y2, _ = named_frame
    model = small_model("xgb").fit(X, y)
    path = tmp_path / "other.json"
    small_model("xgb").fit(X, y2).save_model(path)
    _stale_check(model, X, lambda Z: model.predict(Z, output_margin=True), lambda: model.load_model(path))


def test_booster_methods_are_wrapped_once_and_keep_their_names(small_model, named_frame):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y, _, _ = named_frame
    import_model(small_model("xgb").fit(X, y))
    import_model(small_model("lgbm").fit(X, y))
    forest_module._watch_boosters("xgboost")       # a second install is a no-op
    forest_module._watch_boosters("lightgbm")
    for library, booster_class in (("xgboost", xgb.Booster), ("lightgbm", lgb.Booster)):
        for name in forest_module.BOOSTER_MUTATORS[library]:
            method = booster_class.__dict__[name]
            assert method.__name__ == name and method.__xai_mutator__
            assert not hasattr(method.__wrapped__, "__xai_mutator__")       # one layer only


def test_one_row_calls_still_check_n_jobs(small_model, named_frame):
    X, y, _, _ = named_frame
    model = small_model("xgb").fit(X, y)
    for bad, error in (("2", errors.InputTypeError), (True, errors.InputTypeError), (0, errors.InputError)):
        with pytest.raises(error, match="n_jobs"):
            xp.pg2(model, X.iloc[:1], [0, 1], n_jobs=bad)
    np.testing.assert_array_equal(xp.pg2(model, X.iloc[:1], [0, 1], n_jobs=-1).value,
                                  xp.pg2(model, X.iloc[:1], [0, 1], n_jobs=1).value)


@pytest.mark.parametrize("kind", ["rf", "xgb", "lgbm"])
def test_a_collected_model_leaves_the_cache(small_model, named_frame, kind):
    X, y, _, _ = named_frame
    model = small_model(kind).fit(X, y)
    forest = import_model(model)
    want = model.predict(X)
    own = forest.predict_fn(X.to_numpy())
    np.testing.assert_allclose(own[:, 0], want, rtol=1e-5, atol=1e-6)
    assert _in_cache(forest)
    del model
    gc.collect()
    assert not _in_cache(forest)
    assert all(entry[0]() is not None for entry in forest_module._CACHE.values())   # no dead entries
    with pytest.raises(errors.ModelGoneError) as info:
        forest.predict_fn(X.to_numpy())
    assert isinstance(info.value, ReferenceError) and isinstance(info.value, errors.XaiError)
    # the Forest itself still works: exact PG² and the C predictor need no model
    np.testing.assert_allclose(forest.predict(X)[:, 0], want, rtol=1e-5, atol=1e-6)
    assert np.all(xp.pg2(forest, X.iloc[:3], ["a", "b"]).value > 0)
    with pytest.raises(errors.ModelGoneError):
        xp.pg2(forest, X.iloc[:3], ["a", "b"], method="monte_carlo", n_samples=10, random_state=0)


def test_clear_model_cache(small_model, named_frame):
    X, y, _, _ = named_frame
    model = small_model("rf").fit(X, y)
    first = import_model(model)
    clear_model_cache()
    assert not _in_cache(first)
    second = import_model(model)
    assert second is not first and import_model(model) is second
    np.testing.assert_array_equal(second.predict(X), first.predict(X))


# ------------------------------------------------------------------ the frozen Forest

def test_forest_is_immutable(small_model, named_frame):
    X, y, _, _ = named_frame
    model = small_model("rf").fit(X, y)
    forest = import_model(model)
    with pytest.raises(dataclasses.FrozenInstanceError):
        forest.n_features = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        forest.threshold = np.zeros(forest.n_nodes)
    for name in ("threshold", "left_child", "right_child", "feature", "value", "tree_offset", "base_score",
                 "impurity", "weight", "missing_left"):
        array = getattr(forest, name)
        assert not array.flags.writeable, name
        with pytest.raises(ValueError):
            array[0] = 1
    assert forest.threshold[forest.left_child >= 0][0] == model.estimators_[0].tree_.threshold[0]
    np.testing.assert_allclose(forest.predict(X)[:, 0], model.predict(X), rtol=1e-12)


def test_explainer_on_a_three_output_model_imports_it_once(named_frame, monkeypatch):
    from xai_plugins import interpret as xi
    from xai_plugins import shap as xs

    X, _, _, labels = named_frame
    model = RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, labels)
    clear_model_cache()
    calls = []
    original = forest_module._IMPORTERS["sklearn"]

    def counting(m):
        calls.append(type(m).__name__)
        return original(m)

    monkeypatch.setitem(forest_module._IMPORTERS, "sklearn", counting)
    rows = X.iloc[:4]
    explanation = xs.PG2Explainer(model)(rows)
    assert calls == ["RandomForestClassifier"]
    assert explanation.values.shape == (4, 4, 3)
    # a row's greedy gains add up to PG²(x, all features), per output
    total = xp.pg2(model, rows, NAMES).value
    np.testing.assert_allclose(explanation.values.sum(axis=1), total, rtol=1e-9, atol=1e-12)
    xp.pgi2(model, rows, [0, 1, 2, 3])
    xp.greedy_pg2_ranking(model, rows, output="dog")
    xp.faithfulness(model, explanation)
    xp.local_mdi(model, rows)
    xi.PG2Explainer(model, X.iloc[:20], output="eel").explain_local(rows)
    assert calls == ["RandomForestClassifier"]


# ------------------------------------------------------------------ exception types

def test_c_errors_carry_the_package_exception_types(stump_forest):
    good = stump_forest()
    np.testing.assert_array_equal(good.predict(np.array([[0.0], [1.0], [np.nan]]))[:, 0], [1.0, 2.0, 1.0])
    with pytest.raises(errors.InputIndexError) as info:
        stump_forest(left_child=[5, -1, -1])                          # child outside its tree
    assert isinstance(info.value, IndexError) and isinstance(info.value, errors.XaiError)
    with pytest.raises(errors.InputIndexError):
        stump_forest(feature=[3, 0, 0])                               # feature outside n_features
    with pytest.raises(errors.ModelStructureError) as info:
        stump_forest(right_child=[1, -1, -1])                         # node 1 has two parents
    assert isinstance(info.value, errors.InputError) and isinstance(info.value, ValueError)
    assert isinstance(info.value, errors.XaiError)
    with pytest.raises(errors.InputError) as info:
        stump_forest(threshold=[np.nan, 0, 0])
    assert isinstance(info.value, errors.XaiError)
    assert issubclass(errors.ModelStructureError, errors.InputError)
    assert issubclass(errors.FeatureMismatchError, errors.InputError)


def test_unsupported_model_error(small_model, named_frame):
    from xai_plugins.mcr import model_class_reliance

    X, y, _, _ = named_frame
    assert xp.UnsupportedModelError is errors.UnsupportedModelError
    assert xp.XaiError is errors.XaiError
    assert issubclass(xp.UnsupportedModelError, TypeError) and issubclass(xp.UnsupportedModelError, xp.XaiError)
    gb = small_model("gb").fit(X, y)
    with pytest.raises(xp.UnsupportedModelError, match="boosting"):
        model_class_reliance(gb, X, y, n_permutations=1, progress=False)
    with pytest.raises(xp.UnsupportedModelError):
        import_model("not a model")
    with pytest.raises(TypeError):                  # callers that catch the builtin keep working
        import_model(object())


# ------------------------------------------------------------------ outputs and random_state

def test_resolve_output_accepts_labels_and_indices():
    names = ["cat", "dog", "eel"]
    assert resolve_output(names, "dog") == 1
    assert resolve_output(names, 2) == 2
    assert resolve_output(names, np.int64(0)) == 0
    assert resolve_output(["10", "20", "30"], 20) == 1           # an integer class label
    assert resolve_output(["10", "20", "30"], 1) == 1            # an index
    assert resolve_output(names, None, default=1) == 1
    assert resolve_output(["output"], None) is None
    assert resolve_output(None, 0) is None
    with pytest.raises(errors.InputError) as info:
        resolve_output(names, "fox")
    assert all(n in str(info.value) for n in names + ["fox"])
    with pytest.raises(errors.InputIndexError) as info:
        resolve_output(names, 5)
    assert all(n in str(info.value) for n in names)
    with pytest.raises(errors.InputError, match="choose one"):
        resolve_output(names, None)
    with pytest.raises(errors.InputError, match="single output"):
        resolve_output(["output"], "dog")


def test_outputs_by_label_in_the_entry_points(named_frame):
    from xai_plugins import interpret as xi

    X, _, _, labels = named_frame
    model = RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, labels)
    rows = X.iloc[:5]
    by_label = xp.greedy_pg2_ranking(model, rows, output="eel")
    by_index = xp.greedy_pg2_ranking(model, rows, output=2)
    np.testing.assert_array_equal(by_label.ranking, by_index.ranking)
    np.testing.assert_array_equal(by_label.pg2_path, by_index.pg2_path)
    np.testing.assert_allclose(by_label.pg2_path[:, -1], xp.pg2(model, rows, NAMES).value[:, 2], rtol=1e-12)
    with pytest.raises(errors.InputError) as info:
        xp.greedy_pg2_ranking(model, rows, output="fox")
    assert all(n in str(info.value) for n in ("cat", "dog", "eel"))
    local = xi.PG2Explainer(model, X.iloc[:20], output="dog").explain_local(rows)
    same = xi.PG2Explainer(model, X.iloc[:20], output=1).explain_local(rows)
    np.testing.assert_array_equal([local.data(i)["scores"] for i in range(5)],
                                  [same.data(i)["scores"] for i in range(5)])


def test_random_state_convention(small_model, named_frame):
    X, y, _, _ = named_frame
    model = small_model("xgb").fit(X, y)
    rows = X.iloc[:2]

    def estimate(random_state, n=400):
        return xp.pg2(model, rows, ["a", "b"], method="monte_carlo", n_samples=n, random_state=random_state)

    fresh = [estimate(None).value for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])
    np.testing.assert_array_equal(estimate(5).value, estimate(5).value)
    np.testing.assert_array_equal(estimate(np.random.RandomState(2)).value, estimate(np.random.RandomState(2)).value)
    np.testing.assert_array_equal(estimate(np.random.default_rng(9)).value, estimate(np.random.default_rng(9)).value)
    assert not np.array_equal(estimate(5).value, estimate(6).value)
    # the seeded estimate agrees with the exact value within its standard error
    mc = estimate(11, n=4000)
    exact = xp.pg2(model, rows, ["a", "b"]).value
    assert np.all(np.abs(mc.value - exact) <= 5 * mc.stderr + 1e-12)
    for bad in ("seed", 1.5, True):
        with pytest.raises(errors.InputTypeError) as info:
            estimate(bad)
        assert isinstance(info.value, TypeError)
    with pytest.raises(errors.InputTypeError):
        check_random_state([1, 2])


def test_malformed_trees_fail_with_their_location(stump_forest):
    """A cycle is refused (not walked forever) and the C validator says which tree and node."""
    cycle = dict(left_child=[1, 2, 1, -1, -1], right_child=[4, 3, 3, -1, -1], feature=[0] * 5,
                 threshold=[0.5] * 5, missing_left=[0] * 5, value=[0.0] * 5, tree_offset=[0, 5])
    with pytest.raises(errors.XaiError, match="at tree 0, node"):      # 1 -> 2 -> 1
        stump_forest(**cycle)
    with pytest.raises(errors.InputError, match=r"at tree 0, node 0"):
        stump_forest(threshold=[np.nan, 0, 0])


def test_a_mean_needs_the_same_number_of_trees_per_output(stump_forest):
    """A mean over trees is per output; outputs that get different numbers of trees are refused."""
    two = dict(left_child=[1, -1, -1] * 2, right_child=[2, -1, -1] * 2, feature=[0] * 6, threshold=[0.5, 0, 0] * 2,
               missing_left=[1, 0, 0] * 2, value=[0.0, 1.0, 2.0, 0.0, 3.0, 5.0], tree_offset=[0, 3, 6],
               base_score=[0.0, 0.0], aggregate="mean")
    per_output = stump_forest(tree_target=[0, 1], **two)            # one tree per output: its mean is itself
    np.testing.assert_array_equal(per_output.predict(np.array([[0.0], [1.0]])), [[1.0, 3.0], [2.0, 5.0]])
    with pytest.raises(errors.ModelStructureError):
        stump_forest(tree_target=[0, 0], **two)                     # output 1 gets no tree
