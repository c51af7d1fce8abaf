"""Inputs read as the model's own predictor reads them, or refused where it refuses them ("Trust, round four").

Oracles: the libraries' own ``predict`` (``pipe.predict``, ``model.predict``, CatBoost's ``predict``), and Monte
Carlo through them; never a value of the package. Each test names the item it covers.
"""

import warnings

import catboost as cb
import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

import xai_plugins as xp
from xai_plugins.errors import InputError, UnsupportedModelError, XaiError
from xai_plugins.forest import import_model

CITIES = {"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0, "kyiv": 0.5, "bern": -1.0}


@pytest.fixture(scope="module")
def cities():
    """Two text columns (six cities, two sexes) and a numeric column."""
    rng = np.random.default_rng(3)
    n = 400
    X = pd.DataFrame({"city": rng.choice(list(CITIES), n), "sex": rng.choice(["f", "m"], n),
                      "age": rng.normal(40, 10, n).round()})
    y = X.city.map(CITIES) + 2.0 * (X.sex == "f") + X.age / 20 + 0.3 * rng.normal(size=n)
    return X, y.to_numpy()


def _own(pipe, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)       # encoders warn about unseen categories
        return pipe.predict(X)


def _monte_carlo_agrees(model, rows, S, own, n=20000, seed=0, **noise):
    """Exact PG² of ``rows`` against the mean of (own(x') - own(x))² over ``n`` perturbed copies drawn by the
    package's Monte Carlo, which calls the model's own predictor ``own`` (checked to be it)."""
    exact = xp.pg2(model, rows, S, **noise).value
    sampled = xp.pg2(model, rows, S, method="monte_carlo", n_samples=n, random_state=seed, **noise)
    assert np.all(np.abs(sampled.value - exact) <= 4 * sampled.stderr + 1e-12), (exact, sampled.value)
    forest = import_model(model)
    np.testing.assert_allclose(forest.predict_fn(forest.rows(rows)[0])[:, 0], own(rows), rtol=0, atol=1e-5)


# --- item 2: a sparse one-hot matrix in front of XGBoost (its absent zeros are missing values) --------------------

@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("kind", ["xgb", "lgbm", "rf"])
def test_a_sparse_one_hot_matrix_predicts_as_the_pipeline(kind, sparse, cities):
    """OneHotEncoder's default sparse output (and a ColumnTransformer kept sparse below its sparse_threshold):
    XGBoost reads the left-out zeros as missing values, LightGBM and scikit-learn as zeros; the Forest predicts
    as pipe.predict on every row (before: off on every row for XGBoost), and its Monte Carlo, which calls
    pipe.predict, agrees with its exact PG²."""
    X, y = cities
    model = {"xgb": lambda: xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0),
             "lgbm": lambda: lgb.LGBMRegressor(n_estimators=20, min_child_samples=5, verbose=-1, random_state=0),
             "rf": lambda: RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0)}[kind]()
    front = ColumnTransformer([("enc", OneHotEncoder(sparse_output=sparse, handle_unknown="ignore"), ["city", "sex"])])
    for pipe in (make_pipeline(OneHotEncoder(sparse_output=sparse, handle_unknown="ignore"), model),
                 Pipeline([("front", front), ("model", model)])):
        pipe.fit(X[["city", "sex"]], y)
        assert (type(pipe[:-1].transform(X[["city", "sex"]].iloc[:2])).__name__ == "csr_matrix") == sparse
        rows = X[["city", "sex"]].assign(city=X.city.where(X.index % 7 != 0, "tokyo"))    # some unseen
        np.testing.assert_allclose(import_model(pipe).predict(rows)[:, 0], _own(pipe, rows), rtol=0, atol=2e-6)
    _monte_carlo_agrees(pipe, rows.iloc[:3], ["city", "sex"], lambda Z: _own(pipe, Z), rho=0.5)


def test_a_numeric_column_in_a_sparse_matrix_in_front_of_xgboost():
    """A numeric column stacked into a sparse matrix: XGBoost reads its 0 as missing, so where a split of it
    sends 0 elsewhere than missing values, no threshold on the input column can say where the input 0 goes:
    refused, naming the column (checked: pipe.predict routes 0 as missing, not as the number). LightGBM reads
    the same matrix's zeros as zeros: compiled, and 0 predicts as the pipeline does."""
    rng = np.random.default_rng(1)
    n = 600
    X = pd.DataFrame({"c": rng.choice([f"c{k}" for k in range(12)], n), "x": rng.choice([-2.0, 0.0, 1.0, 3.0], n)})
    y = (X.c == "c1") * 2.0 + (X.x == 0) * 3.0 + X.x
    front = ColumnTransformer([("enc", OneHotEncoder(), ["c"])], remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", xgb.XGBRegressor(n_estimators=10, max_depth=3))]).fit(X, y)
    assert pipe[0].sparse_output_
    dense = pipe[0].transform(X).toarray()
    assert not np.allclose(pipe.predict(X), pipe[-1].predict(dense))        # the same numbers, read otherwise
    with pytest.raises(UnsupportedModelError, match=r"input column 'x' .*sparse matrix.*sparse_threshold=0"):
        import_model(pipe)
    pipe.set_params(model=lgb.LGBMRegressor(n_estimators=10, min_child_samples=5, verbose=-1)).fit(X, y)
    assert pipe[0].sparse_output_
    np.testing.assert_allclose(import_model(pipe).predict(X)[:, 0], pipe.predict(X), rtol=0, atol=1e-12)


# --- item 3: CatBoost reads a bool category as "1" / "0" ----------------------------------------------------------

@pytest.mark.parametrize("as_", ["bool", "object", "boolean"])
def test_catboost_bool_categories_are_1_and_0(as_):
    """A bool categorical column (numpy, Python objects or pandas ``boolean``) predicts as CatBoost predicts it
    (CatBoost reads True as the category "1"; before: hashed "True", an unseen category), and a bool column in
    background= gives the frequencies of the categories (before: refused as constant)."""
    rng = np.random.default_rng(0)
    n = 300
    flag = rng.random(n) < 0.4
    X = pd.DataFrame({"flag": np.where(flag, "1", "0"), "a": rng.normal(size=n)})
    y = 3.0 * flag + X.a + 0.1 * rng.normal(size=n)
    model = cb.CatBoostRegressor(iterations=20, depth=3, verbose=0, random_seed=0, cat_features=["flag"]).fit(X, y)
    column = {"bool": flag, "object": flag.astype(object), "boolean": pd.array(flag, dtype="boolean")}[as_]
    rows = X.assign(flag=column)
    own = model.predict(rows, prediction_type="RawFormulaVal")
    np.testing.assert_allclose(own, model.predict(X, prediction_type="RawFormulaVal"), rtol=0, atol=0)
    np.testing.assert_allclose(import_model(model).predict(rows)[:, 0], own, rtol=0, atol=1e-12)
    by_bools = xp.pg2(model, rows.iloc[:4], ["flag", "a"], background=rows, rho=0.5).value
    np.testing.assert_array_equal(by_bools, xp.pg2(model, X.iloc[:4], ["flag", "a"], background=X, rho=0.5).value)
    _monte_carlo_agrees(model, rows.iloc[:2], ["flag"], lambda Z: model.predict(Z, prediction_type="RawFormulaVal"),
                        background=rows, rho=0.5)


# --- item 4: numbers for inputs the model itself refuses -------------------------------------------------------

def test_xgboost_refuses_a_category_it_was_not_trained_on():
    """(a) XGBoost fitted on a pandas category column refuses a label outside its training categories; so
    does the package (before: a number), naming the column and the label. Arrays of codes stay accepted."""
    rng = np.random.default_rng(0)
    n = 300
    labels = rng.choice([3, 7, 11, 20], n)
    X = pd.DataFrame({"c": pd.Categorical(labels), "x": rng.normal(size=n)})
    y = pd.Series(labels).map({3: 1.0, 7: -1.0, 11: 2.0, 20: 0.0}).to_numpy() + X.x
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, enable_categorical=True).fit(X, y)
    unseen = X.iloc[:4].assign(c=pd.Categorical([3, 7, 99, 11]))
    with pytest.raises(Exception, match="Found a category not in the training set"):
        model.predict(unseen)
    with pytest.raises(InputError, match=r"column 'c' holds 99 \(row 2\).*XGBoost refuses it"):
        import_model(model).predict(unseen)
    with pytest.raises(InputError, match="XGBoost refuses it"):
        xp.pg2(model, unseen, ["x"])
    codes = X.assign(c=X.c.cat.codes.astype(float)).to_numpy()
    np.testing.assert_allclose(import_model(model).predict(codes)[:, 0], model.predict(codes), rtol=0, atol=2e-6)


@pytest.mark.parametrize("encoder", [OneHotEncoder(), OneHotEncoder(sparse_output=False, drop="first"),
                                     OrdinalEncoder()])
def test_an_encoder_that_refuses_unknown_labels_is_followed(encoder, cities):
    """(b) handle_unknown='error' (the default of both encoders): pipe.predict refuses an unseen label and a
    missing value it never met; so does the package, with its own error (before: a number), in the Forest,
    in Monte Carlo (which never reaches scikit-learn's bare ValueError) and for codes outside the categories."""
    X, y = cities
    pipe = Pipeline([("front", ColumnTransformer([("enc", encoder, ["city", "sex"])], remainder="passthrough")),
                     ("model", GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0))]).fit(X, y)
    forest = import_model(pipe)
    np.testing.assert_allclose(forest.predict(X)[:, 0], pipe.predict(X), rtol=0, atol=1e-12)
    for bad in ("tokyo", None):
        rows = X.iloc[:3].assign(city=["rome", bad, "oslo"])
        with pytest.raises(ValueError, match="Found unknown categories"):
            pipe.predict(rows)
        with pytest.raises(InputError, match=r"column 'city' holds .* \(row 1\).*'front__enc'.*handle_unknown"):
            forest.predict(rows)
        for method in ("exact", "monte_carlo"):
            with pytest.raises(XaiError, match="handle_unknown='error'"):
                xp.pg2(pipe, rows, ["city"], method=method, n_samples=100)
    codes = forest.rows(X.iloc[:3])[0]
    codes[1, 0] = 6.0                                   # no city of the encoder
    with pytest.raises(InputError, match=r"column 0 \(category codes\) holds 6.0"):
        forest.predict(codes)
    with pytest.raises(InputError, match="handle_unknown='error'"):
        xp.pg2(pipe, X.iloc[:2], ["city"], background=codes, method="monte_carlo", n_samples=100)


@pytest.mark.parametrize("kind", ["lgbm", "xgb"])
def test_integer_labels_of_a_category_column_are_not_read_as_codes(kind, tmp_path):
    """(c) A model fitted on a pandas category column of integer labels, given them back in an int64 column
    (what read_csv gives): the model refuses the frame; the package refused nothing and read the labels as
    codes (other categories). Now refused, saying to convert the column; converted as it says, it predicts
    as the model does."""
    rng = np.random.default_rng(2)
    n = 400
    labels = rng.choice([3, 7, 11, 20], n)
    X = pd.DataFrame({"c": pd.Categorical(labels), "x": rng.normal(size=n)})
    y = pd.Series(labels).map({3: 1.0, 7: -1.0, 11: 2.0, 20: 0.0}).to_numpy() + X.x
    model = (lgb.LGBMRegressor(n_estimators=10, min_child_samples=5, verbose=-1) if kind == "lgbm" else
             xgb.XGBRegressor(n_estimators=10, max_depth=3, enable_categorical=True)).fit(X, y)
    X.to_csv(tmp_path / "test.csv", index=False)
    read = pd.read_csv(tmp_path / "test.csv")
    assert read.c.dtype == np.int64
    with pytest.raises(Exception):                      # noqa: B017 - each library words its refusal its own way
        model.predict(read)
    with pytest.raises(InputError, match=r"column 'c' holds int64 values.*pd.Categorical"):
        import_model(model).predict(read)
    with pytest.raises(InputError, match="category dtype"):
        xp.pg2(model, read, ["x"])
    converted = read.assign(c=pd.Categorical(read.c, categories=[3, 7, 11, 20]))
    np.testing.assert_allclose(import_model(model).predict(converted)[:, 0], model.predict(converted),
                               rtol=0, atol=2e-6)


def test_a_value_float32_cannot_hold_is_refused_as_scikit_learn_refuses_it():
    """(d) scikit-learn's trees cast inputs to float32 and refuse what becomes infinite (1e39); so does the
    package (before: a number), directly and through a Pipeline, whose limit is found on the input column
    exactly: the pipeline takes the largest value the Forest takes and refuses the next float."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 2)) * [1.0, 1e-3], columns=["a", "b"])
    y = X.a + 1000 * X.b
    for model in (RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y),
                  make_pipeline(StandardScaler(), GradientBoostingRegressor(n_estimators=5)).fit(X, y)):
        forest = import_model(model)
        for value in (1e39, -1e39):
            rows = X.iloc[:2].assign(b=[0.0, value])
            with pytest.raises(ValueError, match="too large for dtype\\('float32'\\)"):
                model.predict(rows)
            with pytest.raises(InputError, match=r"'b' \(row 1\).*float32"):
                forest.predict(rows)
        for j, column in enumerate(["a", "b"]):
            for side, outward in ((0, -np.inf), (1, np.inf)):
                limit = forest.input_limits[j, side]
                inside = X.iloc[:1].assign(**{column: limit})
                np.testing.assert_allclose(forest.predict(inside)[:, 0], model.predict(inside), rtol=0, atol=1e-12)
                outside = X.iloc[:1].assign(**{column: np.nextafter(limit, outward)})
                with pytest.raises(ValueError, match="float32"):
                    model.predict(outside)
                with pytest.raises(InputError, match="float32"):
                    forest.predict(outside)


def test_a_missing_value_is_refused_where_the_scikit_learn_model_refuses_it(cities):
    """GradientBoosting refuses NaN, and every scikit-learn tree refuses it in a sparse matrix (found by the
    property test): the package refused nothing and routed NaN by the trees' missing direction. Now refused
    directly, through an OrdinalEncoder that turns an unseen label into NaN, and through a sparse matrix."""
    X, y = cities
    rows = X.iloc[:3].assign(age=[30.0, np.nan, 50.0])
    gb = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X[["age"]], y)
    encoded = Pipeline([("front", ColumnTransformer([("enc", OrdinalEncoder(
        handle_unknown="use_encoded_value", unknown_value=np.nan), ["city"])], remainder="passthrough")),
        ("model", GradientBoostingRegressor(n_estimators=5, random_state=0))]).fit(X[["city", "age"]], y)
    sparse = Pipeline([("front", ColumnTransformer([("enc", OneHotEncoder(), ["city", "sex"])], remainder="passthrough",
                                                   sparse_threshold=1.0)),
                       ("model", RandomForestRegressor(n_estimators=3, random_state=0))]).fit(X, y)
    assert sparse[0].sparse_output_
    unseen = X[["city", "age"]].iloc[:3].assign(city=["rome", "tokyo", "oslo"])
    for model, bad in ((gb, rows[["age"]]), (encoded, unseen), (sparse, rows)):
        with pytest.raises(ValueError, match="Input X contains NaN"):
            model.predict(bad)
        with pytest.raises(InputError, match=r"\(row 1\).*refuses"):
            import_model(model).predict(bad)
        good = bad.iloc[[0, 2]]
        np.testing.assert_allclose(import_model(model).predict(good)[:, 0], model.predict(good), rtol=0, atol=1e-12)


# --- item 10: imputers the compiler cannot follow ------------------------------------------------------------

@pytest.mark.parametrize("imputer, match", [
    (SimpleImputer(missing_values=-1), r"'front__i' \(SimpleImputer\) replaces missing_values=-1"),
    (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder()),
     r"'front__i__simpleimputer' \(SimpleImputer, strategy='most_frequent'\) fills text columns"),
])
def test_imputers_that_cannot_be_compiled_are_refused_by_name(imputer, match):
    """(before: scikit-learn's bare ValueError from inside the compiler)"""
    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"a": rng.integers(-1, 5, n).astype(float), "city": rng.choice(["x", "y", None], n)})
    y = X.a + (X.city == "x")
    column = "a" if isinstance(imputer, SimpleImputer) else "city"
    pipe = Pipeline([("front", ColumnTransformer([("i", imputer, [column])])),
                     ("model", GradientBoostingRegressor(n_estimators=5))]).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=match):
        import_model(pipe)


# --- item 11: a CatBoost category the model never splits on --------------------------------------------------

def test_a_catboost_category_the_model_never_splits_on_is_accepted():
    """Every call with background= was refused ("background features [0] are constant": the model knows
    none of its categories). Such a feature changes no prediction (checked with CatBoost's own predict):
    perturbing it adds nothing."""
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({"noise": rng.choice(["p", "q", "r"], n), "a": rng.normal(size=n), "b": rng.normal(size=n)})
    model = cb.CatBoostRegressor(iterations=10, depth=2, verbose=0, random_seed=0,
                                 cat_features=["noise"]).fit(X, X.a + X.b)
    assert not import_model(model).split_features[0]
    np.testing.assert_array_equal(model.predict(X), model.predict(X.assign(noise="zzz")))
    rows = X.iloc[:4]
    alone = xp.pg2(model, rows, ["a"], background=X).value
    np.testing.assert_array_equal(xp.pg2(model, rows, ["noise", "a"], background=X).value, alone)
    np.testing.assert_array_equal(xp.pg2(model, rows, ["noise"], background=X).value, 0.0)
    assert np.all(xp.greedy_pg2_ranking(model, rows, background=X).ranking[:, -1] == 0)


# --- item 12: one rule for a missing category on a perturbed feature ------------------------------------------

def test_a_missing_category_is_an_atom_of_its_law_in_pg2_pgi2_and_greedy():
    """A missing value of a categorical feature is an atom of its law (kept with probability 1 - rho):
    pg2 accepted it, pgi2 and greedy_pg2_ranking refused it. Now one rule: pgi2 is the mean of pg2 over the
    ranking's prefixes and the greedy path is pg2 of its sets; a missing numeric value is refused by all
    three, naming the feature. The law holds through pipe.predict (Monte Carlo)."""
    rng = np.random.default_rng(3)
    n = 500
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(["paris", "rome", "oslo", "lima"], n)})
    X.loc[rng.integers(0, n, 40), "city"] = np.nan
    y = X.age / 10 + X.city.map(CITIES).fillna(5.0)
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["city"])],
                              remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0))])
    pipe.fit(X, y)                                  # (a random forest takes NaN: the refusals below are the package's)
    rows = X[X.city.isna()].iloc[:3]
    prefixes = [xp.pg2(pipe, rows, ["city"]).value, xp.pg2(pipe, rows, ["city", "age"]).value]
    np.testing.assert_allclose(xp.pgi2(pipe, rows, ["city", "age"]), np.mean(prefixes, axis=0), rtol=1e-12)
    greedy = xp.greedy_pg2_ranking(pipe, rows)
    for i in range(len(rows)):
        for k in (1, 2):
            first = list(greedy.ranking[i, :k])
            assert greedy.pg2_path[i, k - 1] == pytest.approx(xp.pg2(pipe, rows.iloc[[i]], first).value[0], rel=1e-12)
    _monte_carlo_agrees(pipe, rows.iloc[:2], ["city"], pipe.predict, rho=0.5)
    no_age = rows.assign(age=np.nan)
    for call in (lambda: xp.pg2(pipe, no_age, ["age"]), lambda: xp.pgi2(pipe, no_age, ["city", "age"]),
                 lambda: xp.greedy_pg2_ranking(pipe, no_age)):
        with pytest.raises(InputError, match="NaN in perturbed feature 0"):
            call()


def _diabetes_bands(ordered: bool) -> tuple[pd.DataFrame, np.ndarray]:
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True, scaled=False)
    band = pd.cut(X["age"], bins=[0, 30, 40, 50, 60, 70, 100], labels=["<30", "30s", "40s", "50s", "60s", "70+"],
                  ordered=ordered)
    sex = pd.Categorical(X["sex"].map({1: "sex 1", 2: "sex 2"}))
    return X.drop(columns=["age", "sex"]).assign(age_band=band, sex=sex), y.to_numpy()


@pytest.mark.parametrize("ordered", [False, True])
def test_lightgbm_category_columns_are_paired_with_their_own_labels(ordered):
    """LightGBM stores the categories of every pandas category column but splits only the unordered ones as
    categories (an ordered one is read as its codes): pairing the two lists by position put one column's
    labels on another and gave predictions off by 15 on the diabetes target without an error."""
    X, y = _diabetes_bands(ordered)
    model = lgb.LGBMRegressor(n_estimators=60, num_leaves=8, min_child_samples=10, random_state=0, n_jobs=1,
                              verbose=-1).fit(X, y)
    if ordered:
        with pytest.raises(UnsupportedModelError, match="ordered category column"):
            import_model(model)
        return
    forest = import_model(model)
    np.testing.assert_allclose(np.ravel(forest.predict(X)), model.predict(X, raw_score=True), rtol=0, atol=1e-9)


def test_acme_reads_a_pipelines_numeric_labels_as_labels():
    """A Pipeline's encoder looks numbers up in its categories (labels 3, 7, 11 are codes 0, 1, 2): AcME read
    the background with LightGBM's rule (numbers are codes, a column of numbers refused) and refused the
    frame; its what-if grid of that column now holds the labels and its predictions are the pipeline's."""
    from xai_plugins.acme import AcME

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"level": rng.choice([3, 7, 11], 300), "x": rng.normal(size=300)})
    y = np.where(X["level"] == 7, 2.0, 0.0) + X["x"]
    pipe = make_pipeline(ColumnTransformer([("ord", OrdinalEncoder(), ["level"])], remainder="passthrough"),
                         GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0)).fit(X, y)
    local = AcME(pipe, X, n_quantiles=5).explain_local(X.iloc[:1])
    curve = local.what_if(feature="level")
    assert sorted(curve["value"].tolist()) == [3, 7, 11]
    rows = pd.concat([X.iloc[:1]] * 3).assign(level=curve["value"].to_numpy())
    np.testing.assert_allclose(curve["prediction"].to_numpy(), pipe.predict(rows), rtol=0, atol=1e-12)
