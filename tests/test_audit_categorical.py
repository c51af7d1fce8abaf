"""The audit on models with categorical features: a LightGBM model on a pandas category column and a
scikit-learn Pipeline that one-hot encodes text columns. Every section runs; the numbers that are new
(category counts, PSI and χ² over categories, ρ and the category frequencies, PG² with categorical
features perturbed) are checked against direct computations with pandas / numpy / scipy and Monte Carlo
through the model's own ``predict`` on the raw labelled rows."""

import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
from sklearn.metrics import r2_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from xai_plugins.report import audit
from xai_plugins.report.sections import drift as drift_module

lgb = pytest.importorskip("lightgbm")
jsonschema = pytest.importorskip("jsonschema")

RHO = 0.4
CITIES = ["paris", "rome", "oslo", "lima"]


def _text_frame(n, seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(CITIES, n, p=[0.4, 0.3, 0.2, 0.1]),
                      "income": rng.normal(3, 1, n)})
    y = X.age / 10 + X.city.map({"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0}) + X.income \
        + 0.2 * rng.normal(size=n)
    return X, y.to_numpy()


@pytest.fixture(scope="module")
def pipeline_case():
    """A one-hot Pipeline regressor; the test rows are shifted towards "lima" (drift over categories)."""
    X_train, y_train = _text_frame(300, 0)
    X_test, y_test = _text_frame(120, 1)
    X_test.loc[X_test.index[:30], "city"] = "lima"
    front = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["city"]),
                               ("num", StandardScaler(), ["age", "income"])])
    pipe = Pipeline([("front", front), ("gb", GradientBoostingRegressor(n_estimators=20, max_depth=3,
                                                                        random_state=0))]).fit(X_train, y_train)
    result = audit(pipe, X_test, y_test, X_train=X_train, y_train=y_train, max_rows=6, max_shap_rows=40,
                   mc_pairs=1, rho=RHO, protected=("city",), progress=False)
    return pipe, X_train, y_train, X_test, y_test, result


@pytest.fixture(scope="module")
def lightgbm_case():
    """A LightGBM classifier on a pandas category column, every explainer asked for."""
    rng = np.random.default_rng(2)
    n = 360
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "color": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    y = ((X["a"] + 1.5 * (X["color"] == "red") + 0.5 * rng.normal(size=n)) > 0.5).astype(int).to_numpy()
    model = lgb.LGBMClassifier(n_estimators=15, num_leaves=6, min_child_samples=5, verbose=-1).fit(X[:240], y[:240])
    result = audit(model, X[240:], y[240:], X_train=X[:240], y_train=y[:240], max_rows=6, max_shap_rows=40,
                   mc_pairs=1, dt_sampler_samples=5, dt_sampler_rows=40, protected=("color",), progress=False)
    return model, X[:240], X[240:], y[240:], result


@pytest.mark.parametrize("case", ["pipeline_case", "lightgbm_case"])
def test_every_section_runs_on_a_categorical_model(case, request):
    result = request.getfixturevalue(case)[-1]
    statuses = {k: s.status for k, s in result.sections.items()}
    assert "failed" not in statuses.values(), {k: s.reason for k, s in result.sections.items()}
    for key in ("model", "data", "drift", "explanations", "faithfulness", "agreement", "verdict"):
        assert statuses[key] in ("ok", "warn"), (key, result.sections[key].reason)
    assert {m.key: m.status for m in result.methods.values()}["shap"] == "ok"


@pytest.mark.parametrize("case, absent", [("pipeline_case", {"mcr", "dt_sampler"}),
                                          ("lightgbm_case", {"mcr", "local_mdi"})])
def test_a_method_that_does_not_apply_is_not_counted_as_failing(case, absent, request):
    """Methods that do not apply (MCR to boosting, DT-Sampler to regression, local MDI to LightGBM, which stores
    no impurities) are "not applicable" with the reason, not problems of the audit, and not criteria of the
    explanation-reliability verdict; every other method ran."""
    result = request.getfixturevalue(case)[-1]
    statuses = {k: m.status for k, m in result.methods.items()}
    assert {k for k, s in statuses.items() if s == "not applicable"} == absent, statuses
    assert set(statuses.values()) <= {"ok", "not applicable"}
    labels = [result.methods[k].label for k in absent]
    assert not any(label in p["what"] for p in result.problems for label in labels)
    criteria = [c.name for c in result.verdict.explanation_reliability.criteria]
    assert not any(label in name for name in criteria for label in labels)


def test_performance_is_the_models_own_on_the_raw_rows(pipeline_case):
    """The model section feeds the pipeline its labels: R² equals sklearn's on the pipeline's own predictions."""
    pipe, _, _, X_test, y_test, result = pipeline_case
    table = result.sections["model"].data["performance"]
    assert table["test"]["R²"] == pytest.approx(r2_score(y_test, pipe.predict(X_test)), rel=1e-12)


def test_the_data_summary_counts_rows_per_category(pipeline_case):
    _, X_train, _, X_test, _, result = pipeline_case
    section = result.sections["data"]
    assert section.data["categorical features"] == ["city"]
    numeric, counts = section.tables
    assert "city" not in numeric.frame.index and {"age", "income"} <= set(numeric.frame.index)
    frame = counts.frame.set_index(["feature", "category"]).loc["city"]
    for label in CITIES:
        assert frame.loc[label, "test rows"] == (X_test.city == label).sum()
        assert frame.loc[label, "training rows"] == (X_train.city == label).sum()
        assert frame.loc[label, "test share"] == pytest.approx((X_test.city == label).mean(), rel=1e-12)


def test_drift_on_a_category_is_psi_over_categories_and_a_chi_square_test(pipeline_case):
    """PSI over the four cities and χ² of the 2 × 4 table of counts, by hand; Bonferroni over the 3 features."""
    _, X_train, _, X_test, _, result = pipeline_case
    table = result.sections["drift"].data["table"]
    e = X_train.city.value_counts(normalize=True).reindex(CITIES).to_numpy()
    a = X_test.city.value_counts(normalize=True).reindex(CITIES, fill_value=0).to_numpy()
    a, e = np.maximum(a, 1e-4), np.maximum(e, 1e-4)
    assert table.loc["city", "PSI"] == pytest.approx(np.sum((a - e) * np.log(a / e)), rel=1e-10)
    counts = pd.crosstab(np.r_[np.zeros(len(X_train)), np.ones(len(X_test))],
                         np.r_[X_train.city.to_numpy(), X_test.city.to_numpy()])
    chi2, p_value, _, _ = stats.chi2_contingency(counts.to_numpy(), correction=False)
    assert table.loc["city", "test"] == "χ²" and table.loc["city", "bins"] == 4
    assert table.loc["city", "statistic"] == pytest.approx(chi2, rel=1e-10)
    assert table.loc["city", "p-value (Bonferroni)"] == pytest.approx(min(1.0, 3 * p_value), rel=1e-10)
    assert table.loc["age", "test"] == "KS"
    assert table.loc["city", "drift"] == drift_module.feature_status(table.loc["city", "PSI"], min(1.0, 3 * p_value))


def test_chi_square_pools_unseen_categories_and_leaves_missing_out():
    train = np.array([0, 0, 1, 1, 2, np.nan])
    test = np.array([0, 1, 1, 7, -1, np.nan, np.nan])     # 7 and -1: unseen, one pooled category
    chi2, p_value = drift_module.chi2_test(train, test, 3)
    expected = stats.chi2_contingency(np.array([[2, 2, 1, 0], [1, 2, 0, 2]]), correction=False)
    assert (chi2, p_value) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-12)
    shares = drift_module.category_shares(test, 3)
    np.testing.assert_allclose(shares, np.array([1, 2, 0, 2, 2]) / 7, rtol=1e-15)
    assert drift_module.chi2_test(np.zeros(5), np.zeros(4), 2) == (0.0, 1.0)


def test_faithfulness_names_rho_and_the_training_frequencies(pipeline_case, lightgbm_case):
    _, X_train, _, _, _, result = pipeline_case
    said = result.sections["faithfulness"].data["categorical perturbation"]
    assert said["rho"] == {s: RHO for s in (0.1, 0.3, 1.0)} and said["rho set"]
    expected = X_train.city.value_counts(normalize=True)
    assert said["frequencies"]["city"] == pytest.approx({c: expected[c] for c in CITIES}, rel=1e-12)
    assert result.parameters["rho"] == RHO
    default = lightgbm_case[-1]
    rho = default.parameters["ρ of the categorical features per σ"]
    assert rho == pytest.approx({s: 2 * stats.norm.cdf(-0.5 / s) for s in (0.1, 0.3, 1.0)}, rel=1e-12)
    (setting,) = [v for k, v in default.sections["reproducibility"].data["settings"].items() if "(rho=)" in k]
    assert setting == "default 2Φ(−1/(2σ)): " + ", ".join(f"{2 * stats.norm.cdf(-0.5 / s):.3g} at σ = {s:g}"
                                                          for s in (0.1, 0.3, 1.0))


def test_pg2_with_every_feature_perturbed_matches_monte_carlo_through_the_pipeline(pipeline_case):
    """The audit's PG² with every feature perturbed at σ (the PGI² share's scale) against Monte Carlo through
    ``pipe.predict`` on labelled rows: numeric features + Gaussian noise of σ training standard deviations,
    the city kept with probability 1 − ρ, else drawn from the training frequencies."""
    pipe, X_train, _, X_test, _, result = pipeline_case
    faith = result.sections["faithfulness"]
    rows = faith.result.rows[:2]
    rng = np.random.default_rng(5)
    n = 40_000
    frequencies = X_train.city.value_counts(normalize=True)
    for sigma in (0.3, 1.0):
        for i, row in enumerate(rows):
            x = X_test.iloc[[row]]
            noisy = pd.concat([x] * n, ignore_index=True)
            for column in ("age", "income"):
                noisy[column] += rng.normal(0, sigma * X_train[column].std(ddof=0), n)
            redraw = rng.random(n) < RHO
            noisy.loc[redraw, "city"] = rng.choice(frequencies.index.to_numpy(), redraw.sum(), p=frequencies.to_numpy())
            gaps = (pipe.predict(noisy) - pipe.predict(x)[0]) ** 2
            exact = faith.result.pg2_all[sigma][i]
            assert abs(gaps.mean() - exact) <= 4 * gaps.std() / np.sqrt(n), (sigma, row)


def test_the_greedy_reference_perturbs_the_category_with_rho_and_the_training_frequencies(pipeline_case):
    """The audit's greedy PG² rankings are those of the public API on the raw rows with the same ρ and background."""
    import xai_plugins as xp

    pipe, X_train, _, X_test, _, result = pipeline_case
    rows = result.sections["explanations"].result.rows
    expected = xp.greedy_pg2_ranking(pipe, X_test.iloc[rows], sigma=0.3, background=X_train, rho=RHO, verbose=False)
    np.testing.assert_array_equal(np.asarray(result.methods["pg2"].ranking), expected.ranking)


def test_fairness_groups_come_from_the_category_labels(pipeline_case, lightgbm_case):
    for case, labels in ((pipeline_case, CITIES), (lightgbm_case, ["red", "green", "blue"])):
        attribute = case[-1].sections["fairness"].data["attributes"]
        (name,) = attribute
        assert set(attribute[name]["group sizes"]) == set(labels)


def test_audit_json_of_a_categorical_model_validates(pipeline_case, lightgbm_case):
    schema = json.loads(resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text("utf-8"))
    for case in (pipeline_case, lightgbm_case):
        document = json.loads(case[-1].to_json())
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(document)) == []
        assert document["parameters"]["categorical features"] in (["city"], ["color"])


def test_a_bad_rho_is_refused_by_name(pipeline_case):
    from xai_plugins.errors import XaiError

    pipe, X_train, y_train, X_test, y_test, _ = pipeline_case
    with pytest.raises(XaiError, match="rho is a probability"):
        audit(pipe, X_test, y_test, rho=1.5)


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    """A one-hot Pipeline of a bootstrap-free RandomForest classifier pickled with joblib, and raw CSVs with
    text columns."""
    import joblib

    folder = tmp_path_factory.mktemp("categorical_cli")
    rng = np.random.default_rng(4)
    n = 200
    X = pd.DataFrame({"age": rng.integers(18, 70, n).astype(float), "priors": rng.poisson(2, n).astype(float),
                      "race": rng.choice(["African-American", "Caucasian", "Hispanic"], n),
                      "charge": rng.choice(["F", "M"], n)})
    y = ((X.priors > 2) ^ (X.charge == "F") ^ (rng.random(n) < 0.2)).astype(int)
    front = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["race", "charge"]),
                               ("num", StandardScaler(), ["age", "priors"])])
    pipe = Pipeline([("front", front), ("rf", RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False,
                                                               random_state=0))])
    pipe.fit(X[:140], y[:140])
    joblib.dump(pipe, folder / "pipeline.joblib")
    X.assign(y=y)[140:].to_csv(folder / "raw.csv", index=False)
    X.assign(y=y)[:140].to_csv(folder / "train.csv", index=False)
    return folder


def _cli(folder, *extra):
    from xai_plugins import cli

    code = cli.main(["--model", str(folder / "pipeline.joblib"), "--trust-pickle", "--data", str(folder / "raw.csv"),
                     "--target", "y", "--quiet", "--no-pdf", "--max-rows", "5", "--mc-pairs", "1",
                     "--max-shap-rows", "30", *extra])
    return code


def test_xai_audit_on_a_pipeline_and_a_raw_csv_speaks_of_the_input_columns(csv_files):
    out = csv_files / "few"
    assert _cli(csv_files, "--out", str(out), "--sections", "explanations", "faithfulness",
                "--explainers", "shap", "pg2", "--rho", "0.25") == 0
    document = json.loads((out / "pipeline.json").read_text("utf-8"))
    text = json.dumps(document, ensure_ascii=False)
    assert "cat__" not in text and "num__" not in text
    assert document["parameters"]["categorical features"] == ["race", "charge"]
    assert document["parameters"]["ρ of the categorical features per σ"] == {"0.1": 0.25, "0.3": 0.25, "1.0": 0.25}
    assert document["sections"]["faithfulness"]["data"]["categorical perturbation"]["rho set"] is True
    shap = document["methods"]["shap"]
    assert shap["status"] == "ok" and set(shap["importance"]) == {"age", "priors", "race", "charge"}


def test_xai_audit_with_every_section_on_a_categorical_pipeline(csv_files):
    out = csv_files / "all"
    assert _cli(csv_files, "--out", str(out), "--train", str(csv_files / "train.csv"), "--protected", "race",
                "--dt-sampler-samples", "4", "--dt-sampler-rows", "30") == 0
    document = json.loads((out / "pipeline.json").read_text("utf-8"))
    statuses = {k: s["status"] for k, s in document["sections"].items()}
    assert "failed" not in statuses.values(), statuses
    methods = document["methods"]
    assert {k: m["status"] for k, m in methods.items()} == dict.fromkeys(methods, "ok")
    for key in ("mcr", "dt_sampler", "acme", "local_mdi"):       # in the input columns
        assert set(methods[key]["importance"]) == {"age", "priors", "race", "charge"}, key
    groups = document["sections"]["fairness"]["data"]["attributes"]["race"]["group sizes"]
    assert set(groups) == {"African-American", "Caucasian", "Hispanic"}
    raw = pd.read_csv(csv_files / "raw.csv")
    assert groups == raw.race.value_counts().to_dict()
    drift = document["sections"]["drift"]["tables"][0]
    rows = {r[0]: dict(zip(drift["columns"], r)) for r in drift["rows"]}
    assert rows["race"]["test"] == "χ²" and rows["age"]["test"] == "KS"
    schema = json.loads(resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text("utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(document)) == []
