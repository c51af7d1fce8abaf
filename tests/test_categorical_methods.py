"""The other methods on models with categorical features: local MDI, the SHAP and
InterpretML explainers, AcME, MCR and DT-Sampler on a one-hot Pipeline and a LightGBM category model.

Oracles: scikit-learn's own trees (``decision_path`` and ``compute_feature_importances`` of the
fitted trees on the transformed columns), the models' own ``predict`` on raw rows (text labels), and
the user's own DataFrame values.
"""

import warnings

import lightgbm as lgb
import matplotlib
import numpy as np
import pandas as pd
import pytest
import shap
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from xai_plugins import local_mdi
from xai_plugins.acme import AcME
from xai_plugins.errors import NotAdditiveError
from xai_plugins.shap import AcMEExplainer, LocalMDIExplainer, PG2Explainer

matplotlib.use("Agg")
CITIES = ["paris", "rome", "oslo", "lima"]


@pytest.fixture(scope="module")
def text_data():
    """A numeric column, a four-city text column and a two-level text column (no missing value)."""
    rng = np.random.default_rng(5)
    n = 400
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(CITIES, n), "sex": rng.choice(["f", "m"], n)})
    effect = X.city.map({"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0})
    y = X.age / 10 + effect + 2.0 * (X.sex == "f") + 0.1 * rng.normal(size=n)
    return X, y.to_numpy()


@pytest.fixture(scope="module")
def onehot_forest(text_data):
    """Pipeline(one-hot city and sex, age passed through; a random forest without bootstrap)."""
    X, y = text_data
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore"), ["city", "sex"])],
                              remainder="passthrough")
    model = RandomForestRegressor(n_estimators=12, max_depth=6, max_features=0.6, bootstrap=False, random_state=0)
    return Pipeline([("front", front), ("model", model)]).fit(X, y)


@pytest.fixture(scope="module")
def lgb_category(text_data):
    """A LightGBM regressor fitted on pandas ``category`` columns."""
    X, y = text_data
    frame = X.astype({"city": "category", "sex": "category"})
    model = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1.0, verbose=-1, random_state=0)
    return model.fit(frame, y), frame


def _input_column(pipe):
    """Per transformed column, the input column it comes from (the oracle's own reading of the encoder)."""
    front = pipe.named_steps["front"]
    source = []
    for name, transformer, columns in front.transformers_:
        if name == "remainder":
            source += list(columns)
        elif transformer != "drop":
            source += [col for col, cats in zip(columns, transformer.categories_) for _ in cats]
    return np.array(source)


def _sum_by_input(values, source, names):
    return np.column_stack([values[..., source == name].sum(axis=-1) for name in names])


def test_local_mdi_of_a_one_hot_pipeline_is_the_trees_own_summed_per_input_column(onehot_forest, text_data):
    """Per row: the impurity decreases along the row's path in each fitted tree (sklearn's
    decision_path on the transformed row), summed over each input column's one-hot columns; over the
    training rows their mean is the trees' own unnormalised MDI (every tree saw every row once)."""
    X, _ = text_data
    pipe = onehot_forest
    source = _input_column(pipe)
    Z = pipe.named_steps["front"].transform(X)
    trees = pipe.named_steps["model"].estimators_
    want = np.zeros((len(X), Z.shape[1]))
    for est in trees:
        tree = est.tree_
        path = est.decision_path(Z.astype(np.float32)).tocsr()
        for i in range(len(X)):
            nodes = path.indices[path.indptr[i]:path.indptr[i + 1]]
            for parent, child in zip(nodes[:-1], nodes[1:]):
                want[i, tree.feature[parent]] += (tree.impurity[parent] - tree.impurity[child]) / len(trees)
    got = local_mdi(pipe, X)
    names = ["age", "city", "sex"]
    np.testing.assert_allclose(got, _sum_by_input(want, source, names), rtol=1e-12, atol=1e-12)
    global_mdi = np.mean([est.tree_.compute_feature_importances(normalize=False) for est in trees], axis=0)
    np.testing.assert_allclose(got.mean(axis=0), _sum_by_input(global_mdi[None], source, names)[0], rtol=1e-10)


def test_local_mdi_routes_unseen_categories_as_the_pipeline(onehot_forest, text_data):
    """An unseen city (all its one-hot columns 0) follows the same path as in the pipeline."""
    X, _ = text_data
    rows = X.iloc[:20].copy()
    rows.loc[rows.index[:10], "city"] = "berlin"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)         # the encoder warns about the unseen city
        Z = onehot_forest.named_steps["front"].transform(rows)
    trees = onehot_forest.named_steps["model"].estimators_
    source = _input_column(onehot_forest)
    want = np.zeros((len(rows), Z.shape[1]))
    for est in trees:
        path = est.decision_path(Z.astype(np.float32)).tocsr()
        imp, feat = est.tree_.impurity, est.tree_.feature
        for i in range(len(rows)):
            nodes = path.indices[path.indptr[i]:path.indptr[i + 1]]
            for parent, child in zip(nodes[:-1], nodes[1:]):
                want[i, feat[parent]] += (imp[parent] - imp[child]) / len(trees)
    np.testing.assert_allclose(local_mdi(onehot_forest, rows), _sum_by_input(want, source, ["age", "city", "sex"]),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", ["pipeline", "lightgbm"])
def test_shap_explanations_speak_of_input_columns_and_hold_the_users_labels(which, onehot_forest, lgb_category,
                                                                            text_data):
    """One value per input column; ``data`` the user's own values (text labels); bar and beeswarm
    draw (a text feature grey), waterfall refuses the non-additive values by name."""
    X, _ = text_data
    model, frame = (onehot_forest, X) if which == "pipeline" else lgb_category
    explainers = [PG2Explainer(model, 0.3, background=frame), AcMEExplainer(model, frame, n_quantiles=5)]
    if which == "pipeline":
        explainers.append(LocalMDIExplainer(model))
    rows = frame.iloc[:30]
    for explainer in explainers:
        explanation = explainer(rows)
        assert explanation.feature_names == ["age", "city", "sex"]
        assert explanation.values.shape == (30, 3)
        assert explanation.data[:, 1].tolist() == rows["city"].astype(str).tolist()
        assert explanation.data[:, 2].tolist() == rows["sex"].astype(str).tolist()
        np.testing.assert_array_equal(explanation.data[:, 0].astype(float), rows["age"].to_numpy())
        shap.plots.bar(explanation, show=False)
        shap.plots.beeswarm(explanation, show=False)
        with pytest.raises(NotAdditiveError):
            shap.plots.waterfall(explanation[0], show=False)


def test_interpret_explanations_show_categories_as_bars(onehot_forest, text_data):
    """InterpretML: categorical features are "nominal", drawn as one bar per category (its labels)."""
    pytest.importorskip("interpret")
    import xai_plugins.interpret as xi

    X, _ = text_data
    for explainer in (xi.PG2Explainer(onehot_forest, X, max_global_rows=80), xi.LocalMDIExplainer(onehot_forest, X),
                      xi.AcMEExplainer(onehot_forest, X, n_quantiles=5)):
        overall = explainer.explain_global()
        assert overall.feature_types == ["continuous", "nominal", "nominal"]
        city = overall.visualize(1)
        assert sorted(city.data[0].x) == sorted(CITIES)
        local = explainer.explain_local(X.iloc[:3])
        assert list(local.data(0)["values"][1:]) == X.iloc[0][["city", "sex"]].tolist()
        assert local.visualize(0) is not None


@pytest.mark.parametrize("which", ["pipeline", "lightgbm"])
def test_acme_grid_is_each_category_and_its_what_if_is_the_models_own_predict(which, onehot_forest, lgb_category,
                                                                              text_data):
    """A categorical feature's grid is each category of the background (not quantiles), shown as
    labels; a row's what-if prediction at a category is the model's own predict of the raw row with
    that label."""
    X, _ = text_data
    model, frame = (onehot_forest, X) if which == "pipeline" else lgb_category
    acme = AcME(model, frame, n_quantiles=5)
    assert acme.grid_.categorical.tolist() == [False, True, True]
    local = acme.explain_local(frame.iloc[:4])
    for row in range(4):
        table = local.what_if(row, "city")
        assert sorted(table["value"]) == sorted(CITIES)
        raw = pd.concat([frame.iloc[[row]]] * len(table), ignore_index=True)
        raw["city"] = pd.Series(list(table["value"]), dtype=frame["city"].dtype)
        np.testing.assert_allclose(table["prediction"], model.predict(raw), rtol=1e-12)
    ax = local.plot(0)
    shown = {text.get_text() for text in ax.texts}
    assert set(CITIES) | {"f", "m"} <= shown


def test_mcr_of_a_one_hot_pipeline_permutes_each_input_column_as_a_whole(onehot_forest, text_data):
    """RF-MCR on Pipeline(one-hot + forest): the model reliance of ``city`` is the mean loss increase
    of the pipeline's own predict on the raw rows with the ``city`` column permuted (the same seeded
    permutations), i.e. all its one-hot columns moving together; the range holds it."""
    from xai_plugins._validation import check_random_state
    from xai_plugins.mcr import model_class_reliance

    X, y = text_data
    result = model_class_reliance(onehot_forest, X, y, features=["city", "age"], n_permutations=3, random_state=4,
                                  progress=False)
    assert list(result.table.index) == ["city", "age"]
    base = np.mean((onehot_forest.predict(X) - y) ** 2)
    for name in ("city", "age"):
        gaps = []
        for seed in check_random_state(4).integers(0, 2**63 - 1, size=3):
            permuted = X.copy()
            permuted[name] = X[name].to_numpy()[np.random.default_rng(seed).permutation(len(X))]
            gaps.append(np.mean((onehot_forest.predict(permuted) - y) ** 2) - base)
        row = result.table.loc[name]
        assert row["model_reliance"] == pytest.approx(np.mean(gaps), rel=1e-9)
        assert row["mcr_minus"] <= row["model_reliance"] <= row["mcr_plus"]
    assert len(result.groups["city"]) == 4


def test_mcr_refuses_a_pipeline_of_a_boosting_model_by_name(text_data):
    from sklearn.ensemble import GradientBoostingRegressor

    from xai_plugins.errors import UnsupportedModelError
    from xai_plugins.mcr import model_class_reliance

    X, y = text_data
    front = ColumnTransformer([("enc", OneHotEncoder(), ["city", "sex"])], remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", GradientBoostingRegressor(n_estimators=5))]).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="GradientBoostingRegressor is a boosting model"):
        model_class_reliance(pipe, X, y, progress=False)


def test_dt_sampler_tests_a_text_column_one_level_against_the_rest():
    """A target that is "city = paris" is found by the one tree of one branch node reaching
    accuracy 1 (exact enumeration); at min_accuracy 0 each of the city's four one-vs-rest tests is
    as likely as any other test (symmetry); predict reads labels, an unseen one failing every test."""
    from xai_plugins.dt_sampler import DTSampler

    rng = np.random.default_rng(0)
    n = 120
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(CITIES, n), "sex": rng.choice(["f", "m"], n)})
    y = (X.city == "paris").astype(int)
    fitted = DTSampler(n_branch_nodes=1, min_accuracy=1.0, sampler="exact", progress=False).fit(X, y)
    assert fitted.emergence_probability_.probability.to_dict() == {"age": 0.0, "city": 1.0, "sex": 0.0}
    assert [t.name for t in fitted.tests_ if t.feature_name != "age"] == \
        ["city = lima", "city = oslo", "city = paris", "city = rome", "sex = f"]
    np.testing.assert_array_equal(fitted.predict(X), y)
    unseen = X.iloc[:3].assign(city="berlin")
    np.testing.assert_array_equal(fitted.predict(unseen), 0)
    uniform = DTSampler(n_branch_nodes=2, min_accuracy=0.0, sampler="exact", progress=False).fit(X, y)
    n_tests = len(uniform.tests_)
    assert uniform.emergence_probability_.loc["city", "probability"] == pytest.approx(4 / n_tests, abs=1e-12)
    coded = X.assign(city=X.city.map(dict(zip(CITIES, [3, 7, 9, 1]))))
    by_codes = DTSampler(n_branch_nodes=1, min_accuracy=1.0, sampler="exact", progress=False,
                         categorical_features="city").fit(coded, y)
    assert by_codes.emergence_probability_.loc["city", "probability"] == 1.0
