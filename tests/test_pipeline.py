"""scikit-learn Pipelines explained in their input columns (xai_plugins.forest.pipeline).

Oracles: the pipeline's own ``predict`` (parity, including rows on and next to every compiled
threshold), the PG² of the same fitted trees fed the transformed columns with the noise scaled
by the transform (the compilation itself), and Monte Carlo through the pipeline's own predict.
"""

import warnings

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)

import xai_plugins as xp
from xai_plugins.errors import UnsupportedModelError
from xai_plugins.forest import import_model

COLUMNS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def data():
    """Four columns on very different scales; column d has missing values."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 4)) * [1, 100, 0.01, 5] + [0, 1000, 0, 3], columns=COLUMNS)
    y = X.a + np.sin(X.b / 100) + 50 * X.c + 0.1 * rng.normal(size=400)
    X.iloc[rng.integers(0, 400, 40), 3] = np.nan
    return X, y.to_numpy()


def _front():
    """A ColumnTransformer of every supported per-column transformer (imputer first on d)."""
    return ColumnTransformer([("s", StandardScaler(), ["a", "c"]),
                              ("m", make_pipeline(SimpleImputer(strategy="median"), MinMaxScaler()), ["d"])],
                             remainder=RobustScaler())


MODELS = {
    "gb": lambda: GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0),
    "rf": lambda: RandomForestRegressor(n_estimators=15, max_depth=6, random_state=0),
    "hgb": lambda: HistGradientBoostingRegressor(max_iter=20, random_state=0),
    "xgb": lambda: xgb.XGBRegressor(n_estimators=20, max_depth=4, random_state=0),
    "lgbm": lambda: lgb.LGBMRegressor(n_estimators=20, verbose=-1, random_state=0),
}


def _on_thresholds(forest, X, rng, n=300):
    """Rows of X with one feature moved onto a compiled threshold or to the float just below it."""
    inner = np.flatnonzero((forest.left_child >= 0) & np.isfinite(forest.threshold))
    rows = X.iloc[rng.integers(0, len(X), n)].reset_index(drop=True)
    for i, node in enumerate(rng.choice(inner, n)):
        t = forest.threshold[node]
        rows.iloc[i, forest.feature[node]] = t if i % 2 else np.nextafter(t, -np.inf)
    return rows


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_predict_parity_in_input_columns(kind, data):
    X, y = data
    pipe = Pipeline([("front", _front()), ("model", MODELS[kind]())]).fit(X, y)
    forest = import_model(pipe)
    assert forest.feature_names == COLUMNS and forest.n_features == 4
    rows = pd.concat([X, _on_thresholds(forest, X, np.random.default_rng(1))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = pipe.predict(rows)
    tol = 1e-5 if kind == "xgb" else 1e-12          # XGBoost sums its leaves in float32
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0, atol=tol * max(1, np.abs(expected).max()))


def test_columns_aligned_by_name(data):
    X, y = data
    pipe = Pipeline([("front", _front()), ("model", MODELS["gb"]())]).fit(X, y)
    shuffled = X[["d", "b", "a", "c"]].iloc[:20]
    a = xp.pg2(pipe, X.iloc[:20], ["a", "b"], sigma=0.5).value
    b = xp.pg2(pipe, shuffled, ["a", "b"], sigma=0.5).value
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["gb", "lgbm"])
def test_pg2_equals_the_trees_on_transformed_columns(kind, data):
    """PG² of the pipeline (noise sigma on the inputs) = PG² of its trees on the scaled columns
    with the noise sigma / scale: the compilation changes nothing but the coordinates."""
    X, y = data
    X = X.fillna(0.0)
    scaler = StandardScaler()
    pipe = Pipeline([("scale", scaler), ("model", MODELS[kind]())]).fit(X, y)
    sigma = np.array([0.5, 40.0, 0.004, 2.0])
    rows = X.iloc[:25]
    ours = xp.pg2(pipe, rows, ["a", "b", "d"], sigma=sigma).value
    Z = scaler.transform(rows)
    inner = xp.pg2(pipe[-1], Z, [0, 1, 3], sigma=sigma / scaler.scale_).value
    np.testing.assert_allclose(ours, inner, rtol=1e-10, atol=0)
    assert np.all(ours > 0)


def test_pg2_agrees_with_monte_carlo_through_the_pipeline(data):
    X, y = data
    pipe = Pipeline([("front", _front()), ("model", MODELS["hgb"]())]).fit(X, y)
    rows = X.iloc[:6].fillna({"d": 3.0})
    exact = xp.pg2(pipe, rows, ["a", "b", "d"], sigma=[0.5, 60.0, 0.01, 3.0]).value
    rng = np.random.default_rng(5)
    for i in range(len(rows)):
        x = rows.iloc[[i] * 20000].reset_index(drop=True)
        noisy = x.copy()
        for col, s in zip(["a", "b", "d"], [0.5, 60.0, 3.0]):
            noisy[col] = noisy[col] + rng.normal(0, s, len(noisy))
        gaps = (pipe.predict(noisy) - pipe.predict(x)) ** 2
        assert abs(gaps.mean() - exact[i]) <= 4 * gaps.std() / np.sqrt(len(gaps)) + 1e-12


def test_missing_inputs_go_where_the_imputer_sends_them(data):
    X, y = data
    pipe = Pipeline([("impute", SimpleImputer(strategy="constant", fill_value=-7.0)),
                     ("model", MODELS["gb"]())]).fit(X, y)
    rows = X.iloc[:50].copy()
    rows.iloc[::3, 1] = np.nan
    np.testing.assert_allclose(import_model(pipe).predict(rows)[:, 0], pipe.predict(rows), rtol=0, atol=1e-12)


def test_classifier_pipeline_margin(data):
    X, y = data
    pipe = Pipeline([("scale", MaxAbsScaler()), ("model", GradientBoostingClassifier(n_estimators=10))])
    pipe.fit(X.fillna(0), y > np.median(y))
    forest = import_model(pipe)
    np.testing.assert_allclose(forest.predict(X.fillna(0))[:, 0], pipe.decision_function(X.fillna(0)),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("step, named", [
    (PCA(n_components=2), "PCA"),
    (PolynomialFeatures(2), "PolynomialFeatures"),
    (FunctionTransformer(np.log1p), "FunctionTransformer"),
    (SimpleImputer(add_indicator=True), "add_indicator"),
])
def test_unsupported_steps_are_refused_by_name(step, named, data):
    X, y = data
    X = X.fillna(0).abs()
    pipe = Pipeline([("front", step), ("model", MODELS["gb"]())]).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=named):
        import_model(pipe)


@pytest.fixture(scope="module")
def text_data():
    """A numeric column, a four-city text column with missing values, and a two-level text column."""
    rng = np.random.default_rng(3)
    n = 500
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(["paris", "rome", "oslo", "lima"], n),
                      "sex": rng.choice(["f", "m"], n)})
    X.loc[rng.integers(0, n, 30), "city"] = np.nan
    effect = X.city.map({"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0}).fillna(5.0)
    y = X.age / 10 + effect + 2.0 * (X.sex == "f") + 0.1 * rng.normal(size=n)
    return X, y.to_numpy()


ENCODERS = {
    "onehot": lambda: OneHotEncoder(handle_unknown="ignore"),
    "onehot-drop-first": lambda: OneHotEncoder(drop="first", handle_unknown="ignore"),
    "ordinal": lambda: OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-2),
}


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
@pytest.mark.parametrize("kind", ["gb", "rf", "lgbm"])
def test_encoded_text_columns_become_categorical_features(encoder, kind, text_data):
    """One input column per encoded text column (a set-membership split per indicator or code
    split), routed as the pipeline routes it: known, unseen and missing categories."""
    X, y = text_data
    front = ColumnTransformer([("enc", ENCODERS[encoder](), ["city", "sex"]), ("s", StandardScaler(), ["age"])])
    pipe = Pipeline([("front", front), ("model", MODELS[kind]())]).fit(X, y)
    forest = import_model(pipe)
    assert forest.feature_names == ["age", "city", "sex"]
    assert forest.n_categories.tolist() == [0, 4, 2]
    rows = X.copy()
    rows.loc[:40, "city"] = "berlin"                               # unseen in training
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)              # the encoder warns about the unseen city
        expected = pipe.predict(rows)
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def test_categorical_pg2_agrees_with_monte_carlo_through_the_pipeline(text_data):
    """Exact PG² perturbing a text column (kept with probability 1 - rho, else a category drawn from
    the background's frequencies) and a numeric one, against Monte Carlo through pipe.predict on
    raw labels drawn by the same law, written here."""
    X, y = text_data
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore"), ["city", "sex"])],
                              remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", MODELS["gb"]())]).fit(X, y)
    rows = X.dropna().iloc[:4]
    rho, sigma = 0.4, 5.0
    exact = xp.pg2(pipe, rows, ["city", "age"], sigma=[sigma, 1.0, 1.0], rho=rho, background=None).value
    labels = np.array(["lima", "oslo", "paris", "rome"], dtype=object)   # the encoder's sorted categories
    rng = np.random.default_rng(11)
    n = 40000
    for i in range(len(rows)):
        x = rows.iloc[[i] * n].reset_index(drop=True)
        noisy = x.copy()
        noisy["age"] = noisy["age"] + rng.normal(0, sigma, n)
        redraw = rng.random(n) < rho
        noisy.loc[redraw, "city"] = labels[rng.integers(0, 4, redraw.sum())]   # uniform without background
        gaps = (pipe.predict(noisy) - pipe.predict(x)) ** 2
        assert abs(gaps.mean() - exact[i]) <= 4 * gaps.std() / np.sqrt(n) + 1e-12


def test_a_background_frame_with_text_columns_gives_the_category_frequencies(text_data):
    """background= as raw labels (what the user has) equals background= as the model's codes."""
    X, y = text_data
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore"), ["city", "sex"])],
                              remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", MODELS["gb"]())]).fit(X, y)
    forest = import_model(pipe)
    codes = forest.rows(X)[0]
    rows = X.iloc[:5]
    by_labels = xp.pg2(pipe, rows, ["city", "age"], sigma=0.5, background=X).value
    by_codes = xp.pg2(pipe, rows, ["city", "age"], sigma=0.5, background=codes).value
    np.testing.assert_array_equal(by_labels, by_codes)
    uniform = xp.pg2(pipe, rows, ["city", "age"], sigma=[0.5 * X.age.std(ddof=0), 1, 1]).value
    assert not np.allclose(by_labels, uniform)        # the frequencies, not the uniform law, were used
