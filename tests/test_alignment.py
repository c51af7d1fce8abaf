"""Column alignment by name, and the input contract, of every public entry point.

Models are fitted on a DataFrame with columns a, b, c, d. A DataFrame holding the same columns in
another order must give exactly the numbers of the model-ordered one (and feature names in the
model's order); one with a missing and an unexpected column must be refused with
FeatureMismatchError naming both. Feature sets and rankings may be given by name, per row, or
ragged; bad values raise the package's InputError / InputTypeError (ValueError / TypeError).
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest
import shap
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

import xai_plugins as xp
from xai_plugins import interpret as xi
from xai_plugins import shap as xs
from xai_plugins.acme import AcME
from xai_plugins.attributions import Attribution
from xai_plugins.errors import FeatureMismatchError, InputError, InputTypeError, XaiError, XaiWarning
from xai_plugins.forest import import_model
from xai_plugins.report.context import make_context

NAMES = ["a", "b", "c", "d"]
REVERSED = NAMES[::-1]
SHUFFLED = ["c", "a", "d", "b"]
WEIGHTS = {"a": 1.0, "b": -2.0, "c": 0.5, "d": 3.0}      # a fake attribution, defined per column name
MODELS = ["rf", "xgb", "lgbm", "rf_clf"]
N_ROWS = 6


@pytest.fixture(scope="module")
def data(named_frame):
    X, y, _, labels = named_frame
    return X, y, labels


@pytest.fixture(scope="module")
def models(data, small_model):
    X, y, labels = data
    return {kind: small_model(kind).fit(X, labels if kind == "rf_clf" else y) for kind in MODELS}


def _rows(data):
    return data[0].iloc[:N_ROWS]


def _bad(frame):
    """The same data with column d renamed zz: d is missing, zz unexpected."""
    return frame.rename(columns={"d": "zz"})


def _fake_attribution(X: pd.DataFrame) -> np.ndarray:
    """Per-row scores in the column order of ``X`` (each column's score depends on its name only)."""
    return np.column_stack([WEIGHTS.get(c, 1.0) * X[c].to_numpy() for c in X.columns])


def _output(model):
    return "dog" if hasattr(model, "classes_") else None


def _local_scores(explanation, n):
    return np.array([explanation.data(i)["scores"] for i in range(n)])


# ------------------------------------------------------------------ every entry point
# entry(model, X, background) -> dict of results; keys "names*" hold feature names

def e_pg2_exact(m, X, bg):
    est = xp.pg2(m, X, [0, 2], background=bg)
    return {"value": est.value}


def e_pg2_monte_carlo(m, X, bg):
    est = xp.pg2(m, X, ["a", "c"], sigma=0.5, method="monte_carlo", n_samples=64, random_state=3)
    return {"value": est.value, "stderr": est.stderr}


def e_pgi2(m, X, bg):
    return {"value": xp.pgi2(m, X, [3, 1, 0, 2], background=bg)}


def e_greedy(m, X, bg):
    g = xp.greedy_pg2_ranking(m, X, background=bg)
    return {"ranking": g.ranking, "path": g.pg2_path}


def e_forest_predict(m, X, bg):
    return {"value": import_model(m).predict(X)}


def e_faithfulness_array(m, X, bg):
    return {"value": xp.faithfulness(m, _fake_attribution(X), X=X, background=bg)}


def e_faithfulness_shap(m, X, bg):
    explanation = shap.Explanation(values=_fake_attribution(X), data=X.to_numpy(), feature_names=list(X.columns))
    return {"value": xp.faithfulness(m, explanation, background=bg)}


def e_faithfulness_attribution(m, X, bg):
    attribution = Attribution(_fake_attribution(X), X.to_numpy(), list(X.columns), None, "fake")
    return {"value": xp.faithfulness(m, attribution, background=bg)}


def e_acme(m, X, bg):
    local = AcME(m, bg, n_quantiles=5).explain_local(X)
    return {"value": local.values, "pred": local.row_predictions, "X": local.X,
            "names": list(local.feature_names)}


def e_shap_pg2(m, X, bg):
    ex = xs.PG2Explainer(m, background=bg)(X)
    return {"value": ex.values, "ranking": ex.ranking, "pgi2": ex.pgi2, "data": ex.data,
            "names": list(ex.feature_names)}


def e_shap_acme(m, X, bg):
    ex = xs.AcMEExplainer(m, bg, n_quantiles=5)(X)
    return {"value": ex.values, "data": ex.data, "names": list(ex.feature_names)}


def e_interpret_pg2(m, X, bg):
    explainer = xi.PG2Explainer(m, bg, output=_output(m), max_global_rows=12)
    local, overall = explainer.explain_local(X), explainer.explain_global()
    return {"local": _local_scores(local, len(X)), "global": np.asarray(overall.data()["scores"]),
            "names": list(local.feature_names), "names_global": list(overall.feature_names)}


def e_interpret_acme(m, X, bg):
    explainer = xi.AcMEExplainer(m, bg, n_quantiles=5, output=_output(m))
    local, overall = explainer.explain_local(X), explainer.explain_global()
    return {"local": _local_scores(local, len(X)), "global": np.asarray(overall.data()["scores"]),
            "names": list(local.feature_names), "names_global": list(overall.feature_names)}


def e_report_context(m, X, bg):
    ctx = make_context(m, X, X_train=bg, random_state=0)
    return {"X_test": ctx.X_test.to_numpy(), "X_train": ctx.X_train.to_numpy(), "score": ctx.score(ctx.X_test),
            "names": list(ctx.feature_names), "names_frame": list(ctx.X_test.columns)}


def e_local_mdi(m, X, bg):
    return {"value": xp.local_mdi(m, X)}


def e_global_mdi(m, X, bg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XaiWarning)      # bootstrap forest: mean over X is not its MDI
        return {"value": xp.global_mdi(m, X)}


def e_shap_local_mdi(m, X, bg):
    ex = xs.LocalMDIExplainer(m)(X)
    return {"value": ex.values, "names": list(ex.feature_names)}


def e_interpret_local_mdi(m, X, bg):
    explainer = xi.LocalMDIExplainer(m, bg, max_global_rows=12)
    local, overall = explainer.explain_local(X), explainer.explain_global()
    return {"local": _local_scores(local, len(X)), "global": np.asarray(overall.data()["scores"]),
            "names": list(local.feature_names)}


ENTRIES = {f.__name__[2:]: f for f in (
    e_pg2_exact, e_pg2_monte_carlo, e_pgi2, e_greedy, e_forest_predict, e_faithfulness_array,
    e_faithfulness_shap, e_faithfulness_attribution, e_acme, e_shap_pg2, e_shap_acme, e_interpret_pg2,
    e_interpret_acme, e_report_context, e_local_mdi, e_global_mdi, e_shap_local_mdi, e_interpret_local_mdi)}
SKLEARN_ONLY = {"local_mdi", "global_mdi", "shap_local_mdi", "interpret_local_mdi"}
USES_BACKGROUND = {"pg2_exact", "pgi2", "greedy", "faithfulness_array", "faithfulness_shap",
                   "faithfulness_attribution", "acme", "shap_pg2", "shap_acme", "interpret_pg2", "interpret_acme",
                   "report_context", "interpret_local_mdi"}
CASES = [(m, e) for m in MODELS for e in ENTRIES if not (e in SKLEARN_ONLY and m in ("xgb", "lgbm"))]


def _assert_same(got: dict, want: dict):
    assert got.keys() == want.keys()
    for key, value in want.items():
        if key.startswith("names"):
            assert got[key] == NAMES, key
            assert value == NAMES, key
        else:
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(value), err_msg=key)


@pytest.mark.parametrize("model_name, entry", CASES)
def test_columns_in_another_order_give_the_same_numbers(models, data, model_name, entry):
    model, fn = models[model_name], ENTRIES[entry]
    X, bg = _rows(data), data[0]
    want = fn(model, X, bg)
    assert all(np.all(np.isfinite(np.asarray(v, dtype=float))) for k, v in want.items() if not k.startswith("names"))
    assert any(np.any(np.asarray(v, dtype=float) != 0) for k, v in want.items() if not k.startswith("names"))
    _assert_same(fn(model, X[REVERSED], bg[SHUFFLED]), want)
    _assert_same(fn(model, X[SHUFFLED], bg[REVERSED]), want)


def _assert_mismatch(call):
    with pytest.raises(FeatureMismatchError) as info:
        call()
    assert isinstance(info.value, XaiError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert "'d'" in message and "'zz'" in message, message


@pytest.mark.parametrize("model_name, entry", CASES)
def test_missing_and_unexpected_columns_are_named(models, data, model_name, entry):
    model, fn = models[model_name], ENTRIES[entry]
    X, bg = _rows(data), data[0]
    _assert_mismatch(lambda: fn(model, _bad(X[REVERSED]), bg))
    if entry in USES_BACKGROUND:
        _assert_mismatch(lambda: fn(model, X, _bad(bg[SHUFFLED])))


def test_forest_predict_matches_the_model_on_reordered_columns(models, data):
    X = _rows(data)
    for name in ("rf", "xgb", "lgbm"):
        model = models[name]
        np.testing.assert_allclose(import_model(model).predict(X[REVERSED])[:, 0], model.predict(X), rtol=1e-5,
                                   atol=1e-6)
    clf = models["rf_clf"]
    np.testing.assert_allclose(import_model(clf).predict(X[SHUFFLED]), clf.predict_proba(X), rtol=1e-12)
    assert import_model(clf).output_names == ["cat", "dog", "eel"]


# ------------------------------------------------------------------ training-data entry points

def test_model_class_reliance_aligns_columns(data):
    from xai_plugins.mcr import model_class_reliance

    X, y, _ = data
    X, y = X.iloc[:80], y[:80]
    model = RandomForestRegressor(n_estimators=5, max_depth=3, bootstrap=False, max_features=2,
                                  random_state=0).fit(X, y)
    kw = dict(n_permutations=2, random_state=0, progress=False)
    want = model_class_reliance(model, X, y, **kw).table
    assert list(want.index) == NAMES
    assert (want["model_reliance"] > 0).any()
    got = model_class_reliance(model, X[REVERSED], y, **kw).table
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    by_name = model_class_reliance(model, X[SHUFFLED], y, features=["c", "a"], **kw).table
    by_index = model_class_reliance(model, X, y, features=[2, 0], **kw).table
    pd.testing.assert_frame_equal(by_name, by_index, check_exact=True)
    pd.testing.assert_frame_equal(by_name, want.loc[["c", "a"]], check_exact=True)
    _assert_mismatch(lambda: model_class_reliance(model, _bad(X), y, **kw))
    assert isinstance(_raises(InputTypeError, lambda: model_class_reliance(model, X, y, n_jobs="x", **kw)), TypeError)
    assert isinstance(_raises(InputError, lambda: model_class_reliance(model, X, y, n_jobs=0, **kw)), ValueError)


def test_dt_sampler_predict_aligns_columns(data):
    from xai_plugins.dt_sampler import DTSampler

    X, y, _ = data
    X = X.iloc[:40]
    target = (X.a.to_numpy() > 0) | (X.c.to_numpy() > 0.8)
    sampler = DTSampler(n_branch_nodes=2, min_accuracy=0.8, sampler="exact", quantiles=(0.25, 0.5, 0.75),
                        progress=False).fit(X, target)
    want = sampler.predict(X)
    assert (want == target).mean() >= 0.8
    np.testing.assert_array_equal(sampler.predict(X[REVERSED]), want)
    np.testing.assert_array_equal(sampler.predict(X[SHUFFLED]), want)
    np.testing.assert_array_equal(sampler.predict(X.to_numpy()), want)      # arrays are positional
    _assert_mismatch(lambda: sampler.predict(_bad(X)))


def test_global_mdi_in_bag_with_reordered_training_data(data, models):
    X, _, _ = data
    model = models["rf"]
    trees_only = xp.global_mdi(model)
    np.testing.assert_allclose(xp.global_mdi(model, X[REVERSED], in_bag=True), trees_only, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(xp.global_mdi(model, X[REVERSED], in_bag=True),
                                  xp.global_mdi(model, X, in_bag=True))


# ------------------------------------------------------------------ sets and rankings

@pytest.mark.parametrize("model_name", MODELS)
def test_sets_by_name_equal_sets_by_index(models, data, model_name):
    model, X = models[model_name], _rows(data)
    want = xp.pg2(model, X, [2, 0]).value
    assert np.all(want > 0)
    np.testing.assert_array_equal(xp.pg2(model, X, ["c", "a"]).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X[REVERSED], ["a", "c"]).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X, np.array([True, False, True, False])).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X, "b").value, xp.pg2(model, X, [1]).value)


def test_sets_mixing_names_and_indices(models, data):
    """The documented "indices and/or feature names" in one set (and per row)."""
    model, X = models["rf"], _rows(data)
    want = xp.pg2(model, X, [2, 0]).value
    np.testing.assert_array_equal(xp.pg2(model, X[REVERSED], ["a", 2]).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X, [[0, "c"]] * N_ROWS).value, want)


@pytest.mark.parametrize("model_name", MODELS)
def test_per_row_sets_equal_row_by_row_calls(models, data, model_name):
    model, X = models[model_name], _rows(data)
    square = np.array([[0, 1], [2, 3], [1, 3], [0, 2], [3, 0], [1, 2]])
    ragged = [[0], [1, 2], ["c", "d", "a"], [3], ["b"], [0, 1, 2, 3]]
    for S in (square, ragged):
        together = xp.pg2(model, X[REVERSED], S).value
        one_by_one = np.stack([xp.pg2(model, X.iloc[[i]], list(S[i])).value[0] for i in range(N_ROWS)])
        np.testing.assert_array_equal(together, one_by_one)
        assert together.reshape(N_ROWS, -1).any(axis=1).sum() >= N_ROWS - 1
    masks = np.zeros((N_ROWS, 4), dtype=bool)
    for i, row in enumerate(square):
        masks[i, row] = True
    np.testing.assert_array_equal(xp.pg2(model, X, masks).value, xp.pg2(model, X, square).value)


@pytest.mark.parametrize("model_name", MODELS)
def test_rankings_by_name(models, data, model_name):
    model, X = models[model_name], _rows(data)
    want = xp.pgi2(model, X, [3, 1, 0, 2])
    assert np.all(want > 0)
    np.testing.assert_array_equal(xp.pgi2(model, X, ["d", "b", "a", "c"]), want)
    per_row = np.array([["d", "b", "a", "c"], ["a", "b", "c", "d"]] * 3)
    per_row_idx = np.array([[3, 1, 0, 2], [0, 1, 2, 3]] * 3)
    np.testing.assert_array_equal(xp.pgi2(model, X[REVERSED], per_row), xp.pgi2(model, X, per_row_idx))
    greedy = xp.greedy_pg2_ranking(model, X)
    names = np.array(NAMES, dtype=object)[greedy.ranking]
    np.testing.assert_array_equal(xp.pgi2(model, X, names), xp.pgi2(model, X, greedy.ranking))
    np.testing.assert_array_equal(xp.pgi2(model, X, greedy), xp.pgi2(model, X, greedy.ranking))
    # PGI² is the mean PG² over the prefixes of the ranking
    prefixes = [xp.pg2(model, X, ["d", "b", "a", "c"][:k]).value for k in range(1, 5)]
    np.testing.assert_allclose(want, np.mean(prefixes, axis=0), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("model_name", MODELS)
def test_background_in_another_order_gives_the_same_sigma(models, data, model_name):
    model, X, bg = models[model_name], _rows(data), data[0]
    sigma = 0.3 * np.nanstd(bg.to_numpy(), axis=0)         # model order a, b, c, d
    assert not np.allclose(sigma, sigma[::-1])
    want = xp.pg2(model, X, [0, 1, 3], sigma=sigma).value
    for frame in (bg, bg[REVERSED], bg[SHUFFLED]):
        np.testing.assert_allclose(xp.pg2(model, X, [0, 1, 3], background=frame).value, want, rtol=1e-12)
        np.testing.assert_allclose(xp.pgi2(model, X, [2, 0, 1, 3], background=frame),
                                   xp.pgi2(model, X, [2, 0, 1, 3], sigma=sigma), rtol=1e-12)
    g_rev = xp.greedy_pg2_ranking(model, X, background=bg[REVERSED])
    g = xp.greedy_pg2_ranking(model, X, sigma=sigma)
    np.testing.assert_array_equal(g_rev.ranking, g.ranking)
    np.testing.assert_allclose(g_rev.pg2_path, g.pg2_path, rtol=1e-12)


# ------------------------------------------------------------------ the input contract

def _raises(kind, call, match=None):
    with pytest.raises(kind, match=match) as info:
        call()
    assert isinstance(info.value, XaiError), type(info.value)
    return info.value


def test_complex_data_is_an_input_type_error(models, data):
    model, X = models["rf"], _rows(data)
    complex_array = X.to_numpy().astype(complex)
    complex_frame = X[REVERSED].astype(complex)
    for bad in (complex_array, complex_frame):
        for call in (lambda Z: xp.pg2(model, Z, [0]), lambda Z: xp.pgi2(model, Z, [0, 1, 2, 3]),
                     lambda Z: xp.greedy_pg2_ranking(model, Z), lambda Z: xp.local_mdi(model, Z),
                     lambda Z: import_model(model).predict(Z)):
            exc = _raises(InputTypeError, partial(call, bad), match="complex")
            assert isinstance(exc, TypeError)


def test_n_jobs_convention(models, data):
    model, X = models["rf_clf"], _rows(data)
    want = xp.pg2(model, X, [0, 1]).value
    np.testing.assert_array_equal(xp.pg2(model, X, [0, 1], n_jobs=-1).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X, [0, 1], n_jobs=2).value, want)
    calls = [lambda n: xp.pg2(model, X, [0, 1], n_jobs=n), lambda n: xp.pgi2(model, X, [0, 1, 2, 3], n_jobs=n),
             lambda n: xp.greedy_pg2_ranking(model, X, n_jobs=n), lambda n: xp.local_mdi(model, X, n_jobs=n)]
    for call in calls:
        for bad in ("x", 1.5, True):
            assert isinstance(_raises(InputTypeError, partial(call, bad), match="n_jobs"), TypeError)
        assert isinstance(_raises(InputError, partial(call, 0), match="n_jobs"), ValueError)


def test_bad_values_are_input_errors(models, data):
    model, X = models["xgb"], _rows(data)
    empty = X.iloc[:0]
    with_inf = X.copy()
    with_inf.iloc[2, 1] = np.inf
    nan_in_a = X.copy()
    nan_in_a.loc[nan_in_a.index[1], "a"] = np.nan
    three_columns = X.to_numpy()[:, :3]
    cases = [
        ("empty", lambda: xp.pg2(model, empty, [0])),
        ("empty", lambda: xp.pgi2(model, empty, [0, 1, 2, 3])),
        ("empty", lambda: xp.greedy_pg2_ranking(model, empty)),
        ("infinite", lambda: xp.pg2(model, with_inf, [0])),
        ("infinite", lambda: xp.pgi2(model, with_inf, [0, 1, 2, 3])),
        ("infinite", lambda: import_model(model).predict(with_inf)),
        ("NaN", lambda: xp.pg2(model, nan_in_a[REVERSED], ["a", "b"])),
        ("NaN", lambda: xp.pgi2(model, nan_in_a, [0, 1, 2, 3])),
        ("columns", lambda: xp.pg2(model, three_columns, [0])),
        ("columns", lambda: xp.pgi2(model, three_columns, [0, 1, 2])),
        ("columns", lambda: import_model(model).predict(three_columns)),
    ]
    for match, call in cases:
        assert isinstance(_raises(InputError, call, match=match), ValueError)
    # NaN in a feature that is not perturbed is allowed (it follows the model's missing-value branch)
    value = xp.pg2(model, nan_in_a[REVERSED], ["c", "d"]).value
    assert np.all(np.isfinite(value)) and np.all(value > 0)


@pytest.mark.parametrize("sigma", [0.0, -0.3, [0.3, 0.3, 0.0, 0.3], np.nan])
def test_sigma_must_be_positive(models, data, sigma):
    model, X = models["rf"], _rows(data)
    for call in (lambda: xp.pg2(model, X, [0], sigma=sigma), lambda: xp.pgi2(model, X, [0, 1, 2, 3], sigma=sigma),
                 lambda: xp.greedy_pg2_ranking(model, X, sigma=sigma)):
        assert isinstance(_raises(InputError, call, match="sigma"), ValueError)


def test_unknown_feature_names_and_out_of_range_indices(models, data):
    from xai_plugins.errors import InputIndexError

    model, X = models["lgbm"], _rows(data)
    exc = _raises(InputError, lambda: xp.pg2(model, X, ["a", "zz"]), match="zz")
    assert all(n in str(exc) for n in NAMES)
    assert isinstance(_raises(InputIndexError, lambda: xp.pg2(model, X, [4])), IndexError)
    _raises(InputError, lambda: xp.pgi2(model, X, ["a", "b", "c", "zz"]), match="zz")


def test_boosting_model_without_impurities_is_refused_by_local_mdi(models, data):
    X = _rows(data)
    for name in ("xgb", "lgbm"):
        exc = _raises(xp.UnsupportedModelError, partial(xp.local_mdi, models[name], X[REVERSED]))
        assert isinstance(exc, TypeError)
    gb = GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0).fit(data[0], data[1])
    np.testing.assert_array_equal(xp.local_mdi(gb, X[REVERSED]), xp.local_mdi(gb, X))


def test_lightgbm_names_with_spaces_in_data_and_sets():
    """LightGBM stores the column "b mi" as "b_mi": the data and S may use either spelling."""
    import lightgbm as lgb

    X = pd.DataFrame({"age": np.arange(40.0) % 7, "b mi": np.arange(40.0) % 5})
    model = lgb.LGBMRegressor(n_estimators=3, min_child_samples=2, verbose=-1, n_jobs=1).fit(X, np.arange(40.0))
    want = xp.pg2(model, X.to_numpy()[:3], [1]).value
    np.testing.assert_array_equal(xp.pg2(model, X[["b mi", "age"]][:3], ["b mi"]).value, want)
    np.testing.assert_array_equal(xp.pg2(model, X[:3], ["b_mi"]).value, want)
