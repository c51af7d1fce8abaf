"""Fairness towards protected attributes: groups, fairlearn disparities against direct numpy
computations, per-group importance profiles, encodings and proxies, reliance and the audit section."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from xai_plugins.errors import InputError
from xai_plugins.report import audit
from xai_plugins.report.sections.fairness import groups as fair


def _groups(values, name="g"):
    values = pd.Series(values)
    return fair.make_grouping(values, name).labels(values)


# ----------------------------------------------------------------------------- groups

def test_few_values_are_groups_and_missing_values_their_own_group():
    labels = _groups(["b", "a", None, "a", "b", "b"])
    assert labels.tolist() == ["b", "a", "missing", "a", "b", "b"]


def test_many_numeric_values_are_cut_at_the_quartiles():
    age = pd.Series(np.random.default_rng(1).uniform(18, 90, 401))
    grouping = fair.make_grouping(age, "age")
    assert grouping.kind == "quantile bins"
    np.testing.assert_allclose(grouping.edges, np.quantile(age, [0, 0.25, 0.5, 0.75, 1]))
    labels = grouping.labels(age)
    # bins are right-open at the quartiles: the counts follow from the data directly
    q1, q2, q3 = np.quantile(age, [0.25, 0.5, 0.75])
    expected = [(age < q1).sum(), ((age >= q1) & (age < q2)).sum(), ((age >= q2) & (age < q3)).sum(), (age >= q3).sum()]
    assert sorted(labels.value_counts().tolist()) == sorted(expected)
    assert labels.nunique() == 4


def test_many_text_values_are_refused_with_a_clear_message():
    with pytest.raises(InputError, match="distinct non-numeric values"):
        fair.make_grouping(pd.Series([f"city {i}" for i in range(40)]), "city")


# ----------------------------------------------------------------------------- disparities

@pytest.fixture(scope="module")
def unequal():
    """Three groups whose predictions differ on purpose (group a: positive far more often)."""
    rng = np.random.default_rng(3)
    n = 600
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, n)
    p = np.where(g == "a", rng.random(n) < 0.8, rng.random(n) < 0.3).astype(int)
    return pd.Series(g), y, p


def test_classification_disparities_match_a_direct_computation(unequal):
    g, y, p = unequal
    perf = fair.performance_by_group(y, p, g, "classification", positive_class=1, n_boot=20)
    groups = ["a", "b", "c"]
    rate = {k: p[g == k].mean() for k in groups}
    tpr = {k: p[(g == k) & (y == 1)].mean() for k in groups}
    fpr = {k: p[(g == k) & (y == 0)].mean() for k in groups}
    acc = {k: (p[g == k] == y[g == k]).mean() for k in groups}
    for k in groups:
        assert perf.by_group.loc[k, "rows"] == (g == k).sum()
        assert perf.by_group.loc[k, "selection rate"] == pytest.approx(rate[k])
        assert perf.by_group.loc[k, "true positive rate"] == pytest.approx(tpr[k])
        assert perf.by_group.loc[k, "false positive rate"] == pytest.approx(fpr[k])
        assert perf.by_group.loc[k, "accuracy"] == pytest.approx(acc[k])
    d = perf.disparities["value"]
    spread = lambda v: max(v.values()) - min(v.values())  # noqa: E731
    assert d["demographic parity difference"] == pytest.approx(spread(rate))
    assert d["equalized odds difference"] == pytest.approx(max(spread(tpr), spread(fpr)))
    assert perf.disparities.loc["demographic parity difference", "exceeded"]          # 0.5 gap > 0.1
    low, high = perf.disparities.loc["demographic parity difference", ["ci_low", "ci_high"]]
    assert low <= spread(rate) <= high


def test_multiclass_labels_are_binarised_on_the_positive_class():
    g = pd.Series(["a"] * 4 + ["b"] * 4)
    y = np.array([0, 1, 2, 2, 0, 1, 2, 2])
    p = np.array([2, 2, 2, 1, 0, 0, 1, 2])
    perf = fair.performance_by_group(y, p, g, "classification", positive_class=2, n_boot=10)
    assert perf.by_group["selection rate"].tolist() == [0.75, 0.25]
    assert perf.by_group["accuracy"].tolist() == [0.25, 0.5]              # every class counts
    assert perf.disparities.loc["demographic parity difference", "value"] == pytest.approx(0.5)


def test_regression_gaps_match_a_direct_computation(unequal):
    g, y, p = unequal
    rng = np.random.default_rng(4)
    truth = rng.normal(size=len(g))
    pred = truth + np.where(g == "c", 2.0, 0.3) * rng.normal(size=len(g)) + (g == "a")
    perf = fair.performance_by_group(truth, pred, g, "regression", n_boot=20)
    mae = {k: np.abs(truth[g == k] - pred[g == k]).mean() for k in "abc"}
    mean = {k: pred[g == k].mean() for k in "abc"}
    for k in "abc":
        assert perf.by_group.loc[k, "MAE"] == pytest.approx(mae[k])
        assert perf.by_group.loc[k, "RMSE"] == pytest.approx(np.sqrt(((truth[g == k] - pred[g == k]) ** 2).mean()))
    d = perf.disparities["value"]
    assert d["MAE ratio (worst / best group)"] == pytest.approx(max(mae.values()) / min(mae.values()))
    gap = max(mean.values()) - min(mean.values())
    assert d["mean prediction gap"] == pytest.approx(gap)
    assert d["mean prediction gap (sd of predictions)"] == pytest.approx(gap / np.std(pred, ddof=1))
    assert perf.disparities.loc["MAE ratio (worst / best group)", "exceeded"]        # group c: ~6x the error


def test_without_a_target_only_prediction_metrics_are_computed(unequal):
    g, _, p = unequal
    perf = fair.performance_by_group(None, p, g, "classification", positive_class=1, n_boot=10)
    assert list(perf.disparities.index) == ["demographic parity difference"]
    assert "accuracy" not in perf.by_group


# ----------------------------------------------------------------------------- explanations per group

def test_importance_profiles_per_group():
    groups = pd.Series(["a"] * 12 + ["b"] * 12 + ["c"] * 3)
    values = np.zeros((27, 3))
    values[:12, 0] = -2.0            # group a: only feature 0 (signs do not matter: |importance|)
    values[12:24, 1] = 1.0           # group b: only feature 1
    values[24:, 2] = 5.0             # group c: too few rows to be compared
    means, summary = fair.importance_by_group({"M": values, "same": np.ones((27, 3))}, ["x0", "x1", "x2"], groups)
    assert means["M"].loc["x0", "a"] == 2.0 and means["M"].loc["x1", "b"] == 1.0 and means["M"].loc["x2", "c"] == 5.0
    assert summary.loc["M", "importance profile distance"] == pytest.approx(1.0)   # disjoint profiles
    assert summary.loc["M", "groups compared"] == "a vs b"
    assert summary.loc["M", "exceeded"]
    assert summary.loc["same", "importance profile distance"] == pytest.approx(0.0)
    assert not summary.loc["same", "exceeded"]


# ----------------------------------------------------------------------------- encodings and proxies

@pytest.fixture(scope="module")
def hidden():
    """``race`` is not a model feature but ``zip`` encodes it exactly; ``income`` leans on it weakly."""
    rng = np.random.default_rng(0)
    n = 500
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    X = pd.DataFrame({"x1": rng.normal(size=n), "zip": pd.Series(race).map({"a": 10.0, "b": 20.0, "c": 30.0}),
                      "income": (race == "a") * 0.5 + rng.normal(size=n), "x2": rng.normal(size=n)})
    y = ((X["x1"] + (race == "a") + 0.5 * rng.normal(size=n)) > 0.5).astype(int).to_numpy()
    return X, pd.Series(race, name="race"), y


def test_a_feature_that_determines_the_attribute_is_found_and_named_as_the_top_proxy(hidden):
    X, race, _ = hidden
    labels = _groups(race, "race")
    encodings = fair.encoding_columns(X, "race", labels)
    assert encodings == {"zip": "determined by it"}
    proxy = fair.proxy_check(X, labels, encodings, random_state=0)
    assert proxy.top(1) == ["zip"]
    assert proxy.table.loc["zip", "share of the attribute's entropy"] > 0.95
    assert proxy.table.loc["x2", "share of the attribute's entropy"] < 0.05
    assert proxy.auc["all features"] > 0.95
    assert proxy.auc["features other than its encodings"] < 0.75     # income only: a weak proxy


def test_named_and_one_hot_columns_are_encodings():
    race = pd.Series(["a", "b", "a", "b"])
    X = pd.DataFrame({"race": [0, 1, 0, 1], "sex_f": [1, 0, 0, 1], "race_a": [1, 0, 1, 0], "v": [1.0, 2.0, 3.0, 4.0]})
    found = fair.encoding_columns(X, "race", _groups(race, "race"))
    assert found == {"race": "the attribute itself", "race_a": "one-hot column"}


def test_joint_permutation_keeps_the_columns_together():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    X = pd.DataFrame({"u": x, "v": x, "w": rng.normal(size=200)})
    mse = lambda y, p: float(np.mean((y - p) ** 2))  # noqa: E731
    predict = lambda D: (D["u"] - D["v"]).to_numpy() + D["w"].to_numpy()  # noqa: E731
    y = X["w"].to_numpy()
    # u and v scrambled jointly stay equal: the model's output does not change
    assert fair.permutation_reliance(mse, predict, X, y, ["u", "v"], 3, 0) == 0.0
    assert fair.permutation_reliance(mse, predict, X, y, ["u"], 3, 0) > 1.0
    assert fair.permutation_reliance(mse, predict, X, y, ["w"], 3, 0) > 1.0


# ----------------------------------------------------------------------------- the audit section

FAST = {"explainers": ["shap", "local_mdi", "mcr"], "sections": ["explanations", "mcr"], "max_rows": 40,
        "progress": False}


def _hidden_audit(hidden):
    X, race, y = hidden
    features = X.drop(columns="income")
    model = RandomForestClassifier(30, max_depth=4, bootstrap=False, random_state=0).fit(features[:350], y[:350])
    data = features.assign(race=race)
    return model, features, audit(model, data[350:], y[350:], X_train=data[:350], y_train=y[:350],
                                  protected=["race"], **FAST)


@pytest.fixture(scope="module")
def hidden_audit(hidden):
    return _hidden_audit(hidden)


def test_audit_of_a_protected_column_that_is_not_a_feature(hidden, hidden_audit):
    X, race, y = hidden
    model, features, a = hidden_audit
    section = a.sections["fairness"]
    assert section.status == "warn"
    info = section.data["attributes"]["race"]
    assert info["group sizes"] == race[350:].value_counts().sort_index().to_dict()
    assert info["model features encoding it"] == {"zip": "determined by it"}
    assert info["proxies"]["top"][0] == "zip"
    assert info["proxies"]["data"] == "training"
    pred = model.predict(features[350:])
    rates = pd.Series(pred == 1).groupby(race[350:].to_numpy()).mean()
    assert info["disparities"].loc["demographic parity difference", "value"] == pytest.approx(rates.max() - rates.min())
    # zip is a model feature with an MCR range, reused from the MCR section
    mcr = a.sections["mcr"].data["table"]
    reliance = info["reliance"]
    row = reliance.loc["zip (training data, Rashomon set)"]
    assert row["lowest reliance (MCR−)"] == mcr.loc["zip", "mcr_minus"]
    assert row["highest reliance (MCR+)"] == mcr.loc["zip", "mcr_plus"]
    # per-group importances cover the explained rows, which the explanations section chose
    rows = a.sections["explanations"].result.rows
    assert sum(info["explained rows per group"].values()) == len(rows)
    shap_rows = np.abs(a.sections["explanations"].result.importances["shap"])
    groups = race[350:].to_numpy()[rows]
    np.testing.assert_allclose(info["importance by group"]["SHAP"]["a"], shap_rows[groups == "a"].mean(axis=0))
    html = a.to_html()
    assert "Protected attribute: race" in html and "zip" in html


def test_two_identical_runs_give_the_same_fairness_numbers(hidden, hidden_audit):
    first = json.dumps(hidden_audit[2].to_dict()["sections"]["fairness"]["data"], sort_keys=True)
    second = json.dumps(_hidden_audit(hidden)[2].to_dict()["sections"]["fairness"]["data"], sort_keys=True)
    assert first == second


def test_a_protected_feature_gets_its_mcr_range_on_a_regression():
    rng = np.random.default_rng(2)
    n = 300
    X = pd.DataFrame({"sex": rng.integers(1, 3, n).astype(float), "bmi": rng.normal(size=n), "bp": rng.normal(size=n)})
    y = 3 * X["bmi"] + 2 * (X["sex"] == 2) + rng.normal(size=n)
    model = RandomForestRegressor(30, max_depth=4, bootstrap=False, random_state=0).fit(X[:200], y[:200])
    a = audit(model, X[200:], y[200:], X_train=X[:200], y_train=y[:200], protected=["sex"], **FAST)
    info = a.sections["fairness"].data["attributes"]["sex"]
    assert info["model features encoding it"] == {"sex": "the attribute itself"}
    reliance = info["reliance"]
    assert {"lowest reliance (MCR−)", "highest reliance (MCR+)"} <= set(reliance.columns)
    low, high = reliance.loc["sex (training data, Rashomon set)", ["lowest reliance (MCR−)", "highest reliance (MCR+)"]]
    assert 0 < low <= high                               # the model needs sex: y depends on it
    assert reliance.loc["sex (scrambled, test data)", "this model's reliance"] > 0
    mae = {k: np.abs(y[200:][X["sex"][200:] == k] - model.predict(X[200:])[X["sex"][200:] == k]).mean() for k in (1, 2)}
    by_group = info["by group"]
    assert by_group.loc["1", "MAE"] == pytest.approx(mae[1]) and by_group.loc["2", "MAE"] == pytest.approx(mae[2])


def test_a_missing_protected_column_is_refused_before_any_work(hidden):
    X, _, y = hidden
    model = RandomForestClassifier(5, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(InputError, match="race"):
        audit(model, X, y, protected=["race"], progress=False)


def test_a_single_group_is_not_assessed_rather_than_a_crash(hidden):
    X, _, y = hidden
    model = RandomForestClassifier(5, max_depth=2, random_state=0).fit(X, y)
    data = X.assign(site="north")
    a = audit(model, data, y, protected=["site"], explainers=["shap"], sections=["explanations"], max_rows=20,
              progress=False)
    section = a.sections["fairness"]
    assert section.status == "not applicable"
    assert "not assessed" in section.reason and "north" in section.reason


def test_no_protected_attribute_skips_the_section(hidden):
    X, _, y = hidden
    model = RandomForestClassifier(5, max_depth=2, random_state=0).fit(X, y)
    a = audit(model, X[:60], y[:60], explainers=["shap"], sections=["explanations"], max_rows=10, progress=False)
    assert a.sections["fairness"].status == "skipped"


def test_warnings_judge_the_groups_large_enough_and_show_every_group():
    from types import SimpleNamespace

    from xai_plugins.report.sections.fairness import _performance, new_attribute

    rng = np.random.default_rng(5)
    g = pd.Series(["a"] * 200 + ["b"] * 200 + ["c"] * 3)
    y = rng.integers(0, 2, len(g))
    p = np.r_[rng.random(200) < 0.5, rng.random(200) < 0.45, [1, 1, 1]].astype(int)
    ctx = SimpleNamespace(y_test=y, task="classification", positive_class=1)
    out = new_attribute("g")
    _performance(ctx, out, g, p, seed=0)
    rate = {k: p[(g == k).to_numpy()].mean() for k in "abc"}
    every = out["data"]["disparities"].loc["demographic parity difference", "value"]
    large = out["data"]["disparities (groups of ≥ 30 rows)"].loc["demographic parity difference", "value"]
    assert every == pytest.approx(max(rate.values()) - min(rate.values()))        # group c (3 rows) included
    assert large == pytest.approx(abs(rate["a"] - rate["b"]))
    assert every > 0.4 and large < 0.1          # group c alone would cross the 0.1 threshold
    assert not [w for w in out["disparity warnings"] if w.startswith("demographic parity")]
    assert any("fewer than 30 test rows (c)" in f for f in out["findings"])


def test_an_attribute_that_cannot_be_grouped_is_not_assessed_and_the_others_are(hidden):
    X, race, y = hidden
    model = RandomForestClassifier(5, max_depth=2, random_state=0).fit(X, y)
    data = X.assign(race=race, city=[f"city {i % 40}" for i in range(len(X))])
    a = audit(model, data, y, protected=["city", "race"], explainers=["shap"], sections=["explanations"],
              max_rows=20, progress=False)
    section = a.sections["fairness"]
    assert section.status == "warn"
    assert "city: not assessed" in section.reason and "40 distinct non-numeric values" in section.reason
    assert section.data["attributes"]["race"]["group sizes"] == race.value_counts().sort_index().to_dict()
    assert "Protected attribute: city" in a.to_html()
