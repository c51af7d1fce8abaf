"""Categorical features of XGBoost (``enable_categorical``), scikit-learn HistGradientBoosting
(``categorical_features``) and numeric category labels: predict parity with the library's
own predict on random rows, unseen categories, NaN and rows on thresholds; exact PG² against an
independent enumeration and against Monte Carlo through the model's own predict on raw labels."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

from xai_plugins import pg2
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2, xgboost_leaf_sum

xgb = pytest.importorskip("xgboost")

LABELS = np.array([3.0, 7.0, 11.0, 20.0])        # numeric categories that are not the codes 0 .. K-1


def _numeric_category_data(seed=0, n=500):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.choice(LABELS, n), rng.normal(size=n)])
    y = (X[:, 0] == 7.0) * 2.0 - (X[:, 0] == 20.0) + X[:, 1]
    return X, y


def test_numeric_labels_of_an_encoder_are_looked_up_in_arrays_and_frames():
    """A pipeline's OrdinalEncoder reads the number 7 as the category 7 (its code 1), in an array as in
    a DataFrame: the Forest must too (it read numbers as codes, so 7 was an unseen category)."""
    X, y = _numeric_category_data()
    pipe = make_pipeline(make_column_transformer((OrdinalEncoder(handle_unknown="use_encoded_value",
                                                                 unknown_value=-1), [0]), remainder="passthrough"),
                         GradientBoostingRegressor(n_estimators=10, random_state=0)).fit(X, y)
    forest = import_model(pipe)
    rows = X[:50].copy()
    rows[:5, 0] = [5.0, -1.0, 0.0, 1.0, np.nan]                 # unseen labels (0 and 1 are not codes here)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = pipe.predict(rows)
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(forest.predict(pd.DataFrame(rows, columns=["x0", "x1"]))[:, 0], expected,
                               rtol=0, atol=1e-12)
    # the background's category frequencies are read through the same map: an enumeration over the labels
    rho = 0.5
    q = np.array([np.mean(X[:, 0] == c) for c in LABELS])
    for x in rows[5:9]:
        draws = np.repeat(x[None, :], len(LABELS), axis=0)
        draws[:, 0] = LABELS
        gaps = (pipe.predict(draws) - pipe.predict(x[None, :])[0]) ** 2
        want = rho * q @ gaps            # keeping x (prob 1 - rho) adds no gap
        got = pg2(pipe, x[None, :], [0], background=X, rho=rho).value[0]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


# --- HistGradientBoosting categorical_features and XGBoost enable_categorical -------------------------------

TEXT = ["baku", "kyiv", "lima", "oslo", "paris", "rome"]
RHO, SIGMA = 0.35, 0.6
KINDS = ["hgb", "hgb_clf", "xgb", "xgb_onehot"]


def _raw_data(seed=0, n=700):
    """Raw training data: a category with numeric labels (3, 7, ...), a numeric feature, a text category;
    NaN in both categorical columns."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"num_cat": rng.choice(LABELS, n), "x": rng.normal(size=n).round(1),
                          "city": rng.choice(np.array(TEXT, dtype=object), n)})
    frame.loc[rng.random(n) < 0.08, "num_cat"] = np.nan
    frame.loc[rng.random(n) < 0.08, "city"] = None
    y = (2.0 * (frame.num_cat == 7.0) - (frame.num_cat == 20.0) + np.sin(3 * frame.x)
         + 1.5 * frame.city.isin(["oslo", "kyiv"]) - frame.x * (frame.city == "rome") + rng.normal(0, 0.1, n))
    return frame, y.to_numpy()


def _fit(kind, seed=0):
    """(model, its raw training frame, its own margin on raw rows, per categorical column its labels in
    code order)."""
    frame, y = _raw_data(seed)
    if kind.startswith("hgb"):
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        params = dict(max_iter=15, max_leaf_nodes=8, categorical_features=[0, 2], random_state=seed)
        model = HistGradientBoostingClassifier(**params).fit(frame, y > np.median(y)) if kind == "hgb_clf" \
            else HistGradientBoostingRegressor(**params).fit(frame, y)
        return model, frame, (lambda raw: model._raw_predict(raw)[:, 0]), {0: list(LABELS), 2: TEXT}
    # XGBoost reads codes: fitted on pandas category columns, it stores their categories
    typed = frame.assign(num_cat=pd.Categorical(frame.num_cat.astype("Int64"), categories=[3, 7, 11, 20]),
                         city=pd.Categorical(frame.city, categories=TEXT))
    model = xgb.XGBRegressor(n_estimators=20, max_depth=3, enable_categorical=True, tree_method="hist",
                             max_cat_to_onehot=8 if kind == "xgb_onehot" else 1, random_state=seed).fit(typed, y)
    return model, typed, (lambda raw: model.predict(raw, output_margin=True)), {0: [3, 7, 11, 20], 2: TEXT}


def _codes(raw, labels):
    """Raw rows as codes, written here: each label's position, -1 unseen, NaN missing."""
    out = np.empty(raw.shape)
    for j, column in enumerate(raw.columns):
        values = raw[column].astype(object).to_numpy()
        known = labels.get(j)
        out[:, j] = values.astype(np.float64) if known is None else [
            np.nan if pd.isna(v) else float(known.index(v)) if v in known else -1.0 for v in values]
    return out


def _raw(codes, labels, like):
    """Code rows as raw rows with the training frame's dtypes (an unseen code as a label never trained on)."""
    out = {}
    for j, column in enumerate(like.columns):
        known = labels.get(j)
        if known is None:
            out[column] = codes[:, j]
            continue
        unseen = "atlantis" if isinstance(known[0], str) else 999.0
        values = [np.nan if np.isnan(c) else known[int(c)] if 0 <= c < len(known) else unseen for c in codes[:, j]]
        out[column] = pd.Series(values, dtype=like[column].dtype)
    return pd.DataFrame(out)


def _test_rows(kind, model, frame, n=400, seed=1):
    """Raw rows: training rows with NaN, numeric values exactly on the model's thresholds and, for
    HistGradientBoosting, categories unseen in training (XGBoost refuses them in a DataFrame)."""
    rng = np.random.default_rng(seed)
    rows = frame.iloc[rng.integers(0, len(frame), n)].reset_index(drop=True)
    forest = import_model(model)
    thresholds = np.unique(forest.threshold[(forest.feature == 1) & (forest.left_child >= 0)])
    rows.loc[: n // 2 - 1, "x"] = rng.choice(thresholds, n // 2)
    if kind.startswith("hgb"):
        rows.loc[rng.random(n) < 0.1, "num_cat"] = 5.0
        rows.loc[rng.random(n) < 0.1, "city"] = "atlantis"
    return rows


@pytest.mark.parametrize("kind", KINDS)
def test_categorical_predict_parity(kind):
    """Raw rows (NaN, unseen categories, values on thresholds) predict as the library does; XGBoost's
    own routing on codes (unseen codes included: XGBoost sends them left) summed exactly."""
    model, frame, own, labels = _fit(kind)
    forest = import_model(model)
    assert forest.n_categories is not None and forest.n_categories.tolist() == [4, 0, 6]
    rows = _test_rows(kind, model, frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # the encoder warns about unseen categories
        expected = own(rows)
    tol = 1e-12 if kind.startswith("hgb") else 1e-5      # XGBoost sums its margin in float32
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0, atol=tol * max(1, np.abs(expected).max()))
    if kind.startswith("xgb"):
        codes = _codes(rows, labels)
        codes[::7, 0] = -1.0
        codes[3::7, 2] = 9.0
        exact = xgboost_leaf_sum(model, codes)[:, 0]
        np.testing.assert_allclose(forest.predict(codes)[:, 0] - forest.base_score[0], exact, rtol=0, atol=1e-12)


def test_hgb_numeric_categories_in_an_array_are_labels():
    """HistGradientBoosting fitted on an array whose categorical column holds 3, 7, 11, 20: an array's 7
    is the category 7 (unseen numbers and NaN go where the model sends missing values)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y = _numeric_category_data()
    X[::9, 0] = np.nan
    model = HistGradientBoostingRegressor(max_iter=10, categorical_features=[0], random_state=0).fit(X, y)
    rows = X[:60].copy()
    rows[:6, 0] = [0.0, 1.0, 2.0, 5.0, -3.0, 1e9]
    np.testing.assert_allclose(import_model(model).predict(rows)[:, 0], model._raw_predict(rows)[:, 0],
                               rtol=0, atol=1e-12)


def _code_rows(kind, frame, labels, n=5, seed=2):
    """Explained rows as codes: seen, missing and (HistGradientBoosting) unseen categories."""
    rng = np.random.default_rng(seed)
    codes = _codes(frame.iloc[rng.integers(0, len(frame), n)], labels)
    codes[0, 0], codes[1, 2] = np.nan, np.nan
    if kind.startswith("hgb"):
        codes[2, 0], codes[2, 2] = -1.0, -1.0
    return codes


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("S", [[0], [2], [0, 2], [0, 1], [0, 1, 2]])
def test_exact_pg2_matches_enumeration(kind, S):
    """Exact PG² equals the enumeration of every category (kept with probability 1 - rho, else uniform)
    times the numeric cells, through the model's own predict on raw labels (HistGradientBoosting) or its
    own routing summed exactly (XGBoost)."""
    model, frame, own, labels = _fit(kind)
    if kind.startswith("hgb"):
        def predict(Z):
            return own(_raw(Z, labels, frame))[:, None]
    else:
        def predict(Z):
            return xgboost_leaf_sum(model, Z)
    laws = {j: (RHO, np.full(len(known), 1.0 / len(known))) for j, known in labels.items()}
    for x in _code_rows(kind, frame, labels):
        given = _raw(x[None, :], labels, frame) if kind.startswith("hgb") else x[None, :]
        got = pg2(model, given, S, sigma=SIGMA, rho=RHO).value[0]
        want = grid_pg2(model, predict, x, S, {1: gaussian(SIGMA)}, laws)[0]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-13)


@pytest.mark.parametrize("kind", KINDS)
def test_exact_pg2_matches_monte_carlo_through_own_predict(kind):
    """Monte Carlo through the model's own predict on raw rows: every feature perturbed (a category
    kept with probability 1 - rho, else a uniform draw of its labels; Gaussian noise on x)."""
    model, frame, own, labels = _fit(kind)
    rng = np.random.default_rng(3)
    n = 20_000
    for x in _code_rows(kind, frame, labels, n=3, seed=4):
        raw = _raw(np.repeat(x[None, :], n, axis=0), labels, frame)
        noisy = raw.copy()
        noisy["x"] = noisy["x"] + rng.normal(0, SIGMA, n)
        for j, known in labels.items():
            redraw = rng.random(n) < RHO
            column = noisy[frame.columns[j]].to_numpy(dtype=object, copy=True)
            column[redraw] = np.asarray(known, dtype=object)[rng.integers(0, len(known), redraw.sum())]
            noisy[frame.columns[j]] = pd.Series(column, dtype=frame[frame.columns[j]].dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            gaps = (own(noisy) - own(raw.iloc[:1])[0]) ** 2
        exact = pg2(model, raw.iloc[:1] if kind.startswith("hgb") else x[None, :], [0, 1, 2], sigma=SIGMA,
                    rho=RHO).value[0]
        assert abs(gaps.mean() - exact) <= 4 * gaps.std() / np.sqrt(n) + 1e-12, (kind, x, gaps.mean(), exact)


@pytest.mark.parametrize("kind", ["hgb", "xgb"])
def test_an_encoder_in_front_of_a_categorical_model_is_compiled(kind):
    """OrdinalEncoder in front of HistGradientBoosting(categorical_features=...) (scikit-learn's own
    recipe) or XGBoost(enable_categorical=True): the model's category sets composed with the encoder's
    codes route raw rows (unseen, missing) as pipe.predict, and PG² of the text column equals the
    enumeration of its labels through pipe.predict."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    frame, y = _raw_data()
    encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan)
    model = HistGradientBoostingRegressor(max_iter=10, categorical_features=[0, 1], random_state=0) \
        if kind == "hgb" else xgb.XGBRegressor(n_estimators=10, max_depth=3, enable_categorical=True,
                                               feature_types=["c", "c", "q"], max_cat_to_onehot=1)
    pipe = make_pipeline(make_column_transformer((encoder, ["num_cat", "city"]), remainder="passthrough"),
                         model).fit(frame, y)
    forest = import_model(pipe)
    assert forest.n_categories.tolist() == [4, 0, 6]
    rng = np.random.default_rng(1)
    rows = frame.iloc[rng.integers(0, len(frame), 300)].reset_index(drop=True)
    rows.loc[:99, "x"] = rng.choice(forest.threshold[(forest.feature == 1) & (forest.left_child >= 0)], 100)
    rows.loc[rng.random(300) < 0.1, "num_cat"] = 5.0                 # unseen in training
    rows.loc[rng.random(300) < 0.1, "city"] = "atlantis"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = pipe.predict(rows)
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0,
                               atol=(1e-12 if kind == "hgb" else 1e-5) * max(1, np.abs(expected).max()))
    for i in range(3):
        x = rows.iloc[[i] * len(TEXT)].reset_index(drop=True)
        draws = x.assign(city=TEXT)
        gaps = (pipe.predict(draws) - pipe.predict(x.iloc[:1])[0]) ** 2
        got = pg2(pipe, x.iloc[:1], ["city"], rho=RHO).value[0]
        assert got == pytest.approx(RHO * gaps.mean(), rel=1e-9 if kind == "hgb" else 1e-5, abs=1e-12)


def test_a_categorical_model_column_no_encoder_made_is_refused_clearly():
    """A column the model reads as categorical but no encoder of the pipeline made (here passed through):
    refused, naming the input column and what to do."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.preprocessing import StandardScaler

    from xai_plugins.errors import UnsupportedModelError

    frame, y = _raw_data()
    pipe = make_pipeline(make_column_transformer(("passthrough", ["num_cat"]), (StandardScaler(), ["x"])),
                         HistGradientBoostingRegressor(max_iter=5, categorical_features=[0])).fit(frame, y)
    with pytest.raises(UnsupportedModelError, match=r"'num_cat'\) as categorical.*OrdinalEncoder"):
        import_model(pipe)


@pytest.mark.parametrize("kind", ["onehot", "catboost"])
def test_a_category_column_reads_as_its_labels(kind):
    """A pandas ``category`` column (categories in another order than the model's, one never used, an
    unseen label, missing values) is read once per category: the Forest predicts as the library's own
    predict on the same labels in a text column, and exact PG² with the frequencies of a category-typed
    background is the one of the text columns, bit for bit."""
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(11)
    text = pd.DataFrame({"c": rng.choice(["x", "y", "z"], 300), "a": rng.normal(size=300)})
    y = text.a + (text.c == "y") * 2.0 - (text.c == "z")
    if kind == "onehot":
        model = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["c"]),
                                                      remainder="passthrough"),
                              GradientBoostingRegressor(n_estimators=10, random_state=0)).fit(text, y)
    else:
        catboost = pytest.importorskip("catboost")
        model = catboost.CatBoostRegressor(iterations=10, depth=3, cat_features=["c"], max_ctr_complexity=1,
                                           random_seed=0, verbose=0, allow_writing_files=False).fit(text, y)
    rows = pd.DataFrame({"c": ["z", "y", "w", None, "x"], "a": [0.1, -0.3, 0.5, 0.0, 0.2]})
    as_category = rows.assign(c=pd.Categorical(rows.c, categories=["w", "z", "unused", "y", "x"]))
    reference = rows.fillna({"c": "nan"}) if kind == "catboost" else rows      # CatBoost reads a missing label as "nan"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = model.predict(reference)
    forest = import_model(model)
    np.testing.assert_allclose(forest.predict(as_category)[:, 0], expected, rtol=0, atol=1e-12)
    background = text.assign(c=pd.Categorical(text.c, categories=["z", "unused", "x", "y"]))
    got = pg2(model, as_category.iloc[[0, 1, 4]], ["c", "a"], background=background, rho=0.4).value
    want = pg2(model, rows.iloc[[0, 1, 4]], ["c", "a"], background=text, rho=0.4).value
    np.testing.assert_array_equal(got, want)
