"""pandas extension dtypes at every public entry point.

A DataFrame with nullable (``Float64``, ``Int64``, ``boolean``), pyarrow or numeric ``category``
columns gives exactly the results of the same data as a float64 frame with NaN where a value is
missing (the oracle: that frame, through the same function, and the model's own predict); text
columns are refused by name.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import xai_plugins as xp
from xai_plugins._validation import model_rows
from xai_plugins.errors import InputError, InputTypeError, XaiError
from xai_plugins.forest import import_model


@pytest.fixture(scope="module")
def frames():
    """(typed, plain, y, model): a frame with one column per extension dtype and no missing value,
    the same data as float64, a regression target and a random forest (bootstrap=False) fitted on it."""
    rng = np.random.default_rng(3)
    n = 120
    plain = pd.DataFrame({"f": rng.normal(size=n).round(2), "i": rng.integers(-3, 4, n).astype(float),
                          "p": rng.normal(size=n).round(2), "c": rng.choice([0.5, 1.5, 4.0], n),
                          "b": rng.integers(0, 2, n).astype(float)})
    typed = pd.DataFrame({"f": plain.f.astype("Float64"), "i": plain.i.astype("Int64"),
                          "p": plain.p.astype("double[pyarrow]"), "c": plain.c.astype("category"),
                          "b": plain.b.astype(bool).astype("boolean")})
    y = plain.f + plain.i * plain.c - plain.b
    model = RandomForestRegressor(n_estimators=5, max_depth=4, bootstrap=False, max_features=0.6,
                                  random_state=0).fit(plain, y)
    return typed, plain, y, model


def test_the_model_accepts_the_typed_frame(frames):
    typed, plain, _, model = frames
    np.testing.assert_array_equal(model.predict(typed), model.predict(plain))


def test_missing_values_become_nan_and_numeric_categories_their_values():
    frame = pd.DataFrame({"f": pd.array([1.5, None, 2.0], dtype="Float64"),
                          "i": pd.array([None, 7, -2], dtype="Int64"),
                          "b": pd.array([True, None, False], dtype="boolean"),
                          "p": pd.array([None, 2.5, 3.0], dtype="double[pyarrow]"),
                          "c": pd.Series([10.0, None, 30.0]).astype("category"),
                          "o": pd.Series([1, None, 2.5], dtype=object)})
    rows, names = model_rows(frame, None, None, allow_nan=True)
    expected = np.array([[1.5, np.nan, 1.0, np.nan, 10.0, 1.0],
                         [np.nan, 7.0, np.nan, 2.5, np.nan, np.nan],
                         [2.0, -2.0, 0.0, 3.0, 30.0, 2.5]])
    np.testing.assert_array_equal(rows, expected)
    assert names == list(frame.columns)
    np.testing.assert_array_equal(model_rows(frame.iloc[2], None, None)[0], expected[2:])   # a row as a Series


def test_pg2_pgi2_greedy_local_mdi_faithfulness_match_the_float_frame(frames):
    typed, plain, _, model = frames
    rows = slice(0, 6)
    np.testing.assert_array_equal(xp.pg2(model, typed[rows], S=["f", "c"], sigma=0.4, background=typed).value,
                                  xp.pg2(model, plain[rows], S=["f", "c"], sigma=0.4, background=plain).value)
    ranking = np.tile(np.arange(5), (6, 1))
    np.testing.assert_array_equal(xp.pgi2(model, typed[rows], ranking, sigma=0.4),
                                  xp.pgi2(model, plain[rows], ranking, sigma=0.4))
    greedy = xp.greedy_pg2_ranking(model, typed[rows], sigma=0.4)
    np.testing.assert_array_equal(greedy.ranking, xp.greedy_pg2_ranking(model, plain[rows], sigma=0.4).ranking)
    np.testing.assert_array_equal(xp.local_mdi(model, typed), xp.local_mdi(model, plain))
    scores = np.abs(xp.local_mdi(model, plain[rows]))
    np.testing.assert_array_equal(xp.faithfulness(model, scores, X=typed[rows], sigma=0.4),
                                  xp.faithfulness(model, scores, X=plain[rows], sigma=0.4))


def test_shap_and_interpret_explainers_and_acme_match_the_float_frame(frames):
    from xai_plugins import interpret as xi
    from xai_plugins import shap as xs
    from xai_plugins.acme import AcME

    typed, plain, _, model = frames
    rows = slice(0, 4)
    for make in (lambda bg: xs.PG2Explainer(model, sigma=0.5, background=bg),
                 lambda bg: xs.LocalMDIExplainer(model),
                 lambda bg: xs.AcMEExplainer(model, bg, n_quantiles=5)):
        np.testing.assert_array_equal(make(typed)(typed[rows]).values, make(plain)(plain[rows]).values)
    for make in (lambda bg: xi.PG2Explainer(model, bg, sigma=0.5), lambda bg: xi.LocalMDIExplainer(model, bg)):
        np.testing.assert_array_equal(make(typed).explain_local(typed[rows]).data(0)["scores"],
                                      make(plain).explain_local(plain[rows]).data(0)["scores"])
    np.testing.assert_array_equal(AcME(model, typed, n_quantiles=5).explain_global().values,
                                  AcME(model, plain, n_quantiles=5).explain_global().values)


def test_mcr_and_dt_sampler_match_the_float_frame(frames):
    from xai_plugins.dt_sampler import DTSampler
    from xai_plugins.mcr import model_class_reliance

    typed, plain, y, model = frames
    kw = dict(n_permutations=2, random_state=0, progress=False)
    pd.testing.assert_frame_equal(model_class_reliance(model, typed, y.astype("Float64"), **kw).table,
                                  model_class_reliance(model, plain, y, **kw).table)
    label = (y > y.median()).astype(int)
    sampler = dict(n_branch_nodes=2, min_accuracy=0.6, n_samples=20, sampler="exact", random_state=0, progress=False)
    typed_fit = DTSampler(**sampler).fit(typed, label.astype("Int64"))
    plain_fit = DTSampler(**sampler).fit(plain, label)
    pd.testing.assert_frame_equal(typed_fit.emergence_probability_, plain_fit.emergence_probability_)


def test_dask_frames_with_extension_dtypes(frames):
    dd = pytest.importorskip("dask.dataframe")
    typed, plain, _, model = frames
    typed = typed.assign(f=typed.f.where(typed.index % 7 != 0))         # pd.NA in a Float64 column
    plain = plain.assign(f=plain.f.where(plain.index % 7 != 0))
    np.testing.assert_array_equal(xp.local_mdi(model, dd.from_pandas(typed, npartitions=3)).compute(),
                                  xp.local_mdi(model, plain))
    np.testing.assert_array_equal(xp.pg2(model, dd.from_pandas(typed, npartitions=3), S=["i"]).compute().value,
                                  xp.pg2(model, plain, S=["i"]).value)


def test_audit_reads_extension_dtypes_and_classifier_labels():
    from xai_plugins.report import audit

    rng = np.random.default_rng(5)
    plain = pd.DataFrame(rng.normal(size=(80, 3)).round(2), columns=["a", "b", "c"])
    label = (plain.a + plain.b > 0).astype(int)
    model = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(plain, label)
    typed = plain.astype({"a": "Float64", "b": "double[pyarrow]"})
    kw = dict(explainers=("pg2", "local_mdi"), sections=("explanations",), max_rows=4, progress=False, random_state=0)
    ours = audit(model, typed, label.astype("Int64"), **kw)
    reference = audit(model, plain, label, **kw)
    assert ours.problems == reference.problems == []
    for key in ("pg2", "local_mdi"):
        pd.testing.assert_series_equal(ours.methods[key].importance, reference.methods[key].importance)


@pytest.mark.parametrize("column", [pd.Series(["a", "b", "a"]), pd.Series(["a", "b", None], dtype="string"),
                                    pd.Series(["x", "y", "x"]).astype("category"),
                                    pd.Series(["x", 1.0, 2.0], dtype=object),
                                    pd.Series(pd.to_datetime(["2020-01-01"] * 3))],
                         ids=["object text", "string", "text category", "mixed object", "datetime"])
def test_non_numeric_columns_are_refused_by_name(column):
    frame = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "bad col": column, "ok2": pd.array([1, 2, None], dtype="Int64")})
    with pytest.raises(InputTypeError, match=r"'bad col'.*encode these columns as the model was trained"):
        model_rows(frame, None, None, allow_nan=True)


def test_text_column_is_named_by_the_api_and_the_cli(tmp_path, capsys):
    from xai_plugins.cli import main

    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "colour"])
    model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, X.a)
    texty = X.assign(colour=np.where(X.colour > 0, "red", "blue"))
    with pytest.raises(InputTypeError, match="'colour'") as caught:
        xp.pg2(model, texty, S=[0])
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(model))
    texty.assign(y=X.a).to_csv(tmp_path / "d.csv", index=False)
    code = main(["--model", str(tmp_path / "m.pkl"), "--trust-pickle", "--data", str(tmp_path / "d.csv"),
                 "--target", "y", "--out", str(tmp_path / "out"), "--quiet", "--no-pdf"])
    message = str(caught.value).split(" has ", 1)[1]          # "X has ..." in the API, "--data has ..." in the CLI
    assert code == 2 and message in capsys.readouterr().err


def test_integers_float64_would_round_are_refused():
    frame = pd.DataFrame({"big": pd.array([2**53 + 1, 3], dtype="Int64"), "x": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"'big'.*2\*\*53"):
        model_rows(frame, None, None)
    np.testing.assert_array_equal(model_rows(pd.DataFrame({"ok": pd.array([2**53, -(2**60)], dtype="Int64")}),
                                             None, None)[0].ravel(), [2.0**53, -(2.0**60)])


def test_unfitted_models_raise_an_xai_error_that_is_sklearns():
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    from xai_plugins.errors import NotFittedError

    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    for model in (RandomForestRegressor(), xgb.XGBRegressor(), lgb.LGBMClassifier()):
        with pytest.raises(XaiError, match=f"{type(model).__name__} is not fitted") as caught:
            import_model(model)
        assert isinstance(caught.value, NotFittedError) and isinstance(caught.value, SklearnNotFittedError)
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, AttributeError)
        assert type(pickle.loads(pickle.dumps(caught.value))) is NotFittedError     # crosses process boundaries


def test_a_category_column_with_every_value_missing_reads_as_nan():
    """A numeric ``category`` column whose values are all missing has no category at all: its
    cells are NaN (it raised a raw IndexError)."""
    from xai_plugins._validation import frame_values

    frame = pd.DataFrame({"a": pd.Series([np.nan, np.nan]).astype("category"), "b": [1.0, 2.0]})
    np.testing.assert_array_equal(frame_values(frame), [[np.nan, 1.0], [np.nan, 2.0]])
