"""No verdict that misleads: too little evidence is "not assessed" with its reason on the first page, an explainer
that could not run names the criterion it leaves open, a ratio of negligible reliances does not fail the Rashomon
criterion, and every number printed beside a rule reads on the side of the threshold it was judged on."""

import re
import types

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor

from xai_plugins.errors import InputError
from xai_plugins.report import audit
from xai_plugins.report import verdict as v
from xai_plugins.report.render import environment
from xai_plugins.report.sections import agreement as agree_section
from xai_plugins.report.sections import fairness as fairness_section
from xai_plugins.report.sections import mcr as mcr_section
from xai_plugins.report.sections import model as model_section
from xai_plugins.report.sections.fairness import groups as fair

#: the cheapest audit that still builds every model-fitness criterion
CHEAP = dict(sections=(), explainers=("shap",), progress=False, random_state=0)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X[:400], y[:400])
    return model, X, y


def _criterion(result, name):
    return next(c for c in result.verdict.criteria if c.name == name)


# ---------------------------------------------------------------- item 5: degenerate test sets
@pytest.mark.parametrize("rows, reason", [(slice(400, 401), "one class only"), ("positives", "one class only"),
                                          (slice(400, 415), "fewer than two classes")])
def test_too_few_test_rows_or_classes_are_not_assessed_with_the_reason_on_the_first_page(cancer, rows, reason):
    model, X, y = cancer
    index = y.index[400:][y[400:] == 1][:40] if rows == "positives" else y.index[rows]
    if reason == "fewer than two classes":
        index = np.r_[y.index[400:][y[400:] == 1][:30], y.index[400:][y[400:] == 0][:3]]
    result = audit(model, X.loc[index], y.loc[index], X_train=X[:400], y_train=y[:400], **CHEAP)
    for name in ("Predictive adequacy", "Calibration of the predicted probabilities"):
        criterion = _criterion(result, name)
        assert criterion.status == v.NOT_ASSESSED, criterion.explanation
        assert reason in criterion.explanation and "min_test_rows" in criterion.explanation
        assert criterion.implication in result.verdict.model_fitness.implications       # what page 1 shows
        assert reason in criterion.implication
    assert "min_test_rows" in _criterion(result, "Predictive adequacy").threshold_text
    assert "Result: not assessed" in result.to_html()


def test_a_missing_test_roc_auc_is_said_not_left_out(cancer):
    model, X, y = cancer
    index = y.index[400:][y[400:] == 1][:40]
    result = audit(model, X.loc[index], y.loc[index], X_train=X[:400], y_train=y[:400], **CHEAP)
    performance = result.sections["model"].data["performance"]
    assert np.isnan(performance.loc["ROC AUC (class 1)", "test"])
    assert "ROC AUC is not computed" in result.sections["model"].data["performance note"]


def test_a_regressor_needs_min_test_rows():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    few = audit(model, X[300:305], y[300:305], X_train=X[:300], y_train=y[:300], **CHEAP)
    assert _criterion(few, "Predictive adequacy").status == v.NOT_ASSESSED
    assert "only 5 test rows" in _criterion(few, "Predictive adequacy").explanation
    enough = audit(model, X[300:305], y[300:305], X_train=X[:300], y_train=y[:300], thresholds={"min_test_rows": 5},
                   **CHEAP)
    assert _criterion(enough, "Predictive adequacy").status != v.NOT_ASSESSED


def test_scarce_evidence_rule():
    assert v.scarce_evidence(["a"] * 10 + ["b"] * 10, 10, True) == ""
    assert v.scarce_evidence(["a"] * 10 + ["b"] * 10 + ["c"], 10, True) == ""       # a rare third class still counts
    assert "a: 10, b: 9" in v.scarce_evidence(["a"] * 10 + ["b"] * 9, 10, True)
    assert "one class only (a: 30 test rows)" in v.scarce_evidence(["a"] * 30, 10, True)
    assert "one class only (a: 1 test row)" in v.scarce_evidence(["a"], 10, True)
    assert v.scarce_evidence(np.arange(10.0), 10, False) == ""
    assert "only 1 test row," in v.scarce_evidence([1.0], 10, False)
    with pytest.raises(InputError, match=r"min_test_rows must lie in \[2, inf\]"):
        v.limits({"min_test_rows": 1})


# ---------------------------------------------------------------- item 6: an explainer that could not run
def _categorical_hgb():
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "sex": pd.Categorical(rng.choice(["Male", "Female"], n)),
                      "hours": rng.normal(40, 5, n)})
    y = (((X.age > 40) ^ (X.sex == "Male")) | (rng.random(n) < 0.1)).astype(int)
    model = HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype", random_state=0)
    return model.fit(X[:200], y[:200]), X, y


def _categorical_audit(model, X, y):
    return audit(model, X[200:], y[200:], X_train=X[:200], y_train=y[:200], explainers=("shap", "pg2", "acme"),
                 sections=("explanations", "faithfulness"), max_rows=6, mc_pairs=0, sigma=[0.3], progress=False)


def test_shap_on_hist_gradient_boosting_categories_is_computed_and_assessed():
    """shap's own TreeExplainer cannot read these category splits; the audit's TreeSHAP (the C core) can."""
    result = _categorical_audit(*_categorical_hgb())
    assert result.methods["shap"].status == "ok"
    assert _criterion(result, "Faithfulness of SHAP").status != v.NOT_ASSESSED


def test_a_failed_explainer_leaves_its_faithfulness_not_assessed_and_named(monkeypatch):
    from xai_plugins.report.explainers import REGISTRY

    def fails(state, X):
        raise ValueError("the explainer cannot read this model")

    monkeypatch.setattr(REGISTRY["shap"], "block", fails)
    result = _categorical_audit(*_categorical_hgb())
    assert result.methods["shap"].status == "failed"
    said = "the explainer cannot read this model"
    assert said in result.methods["shap"].reason
    criterion = _criterion(result, "Faithfulness of SHAP")
    assert criterion.status == v.NOT_ASSESSED and said in criterion.explanation
    reliability = result.verdict.explanation_reliability
    assert "Faithfulness of SHAP" in reliability.headline and criterion.implication in reliability.implications
    assert _criterion(result, "Faithfulness of AcME").status != v.NOT_ASSESSED


# ---------------------------------------------------------------- item 7: a ratio of negligible reliances
#: the breast-cancer demo's MCR ranges (misclassification-rate increases) and its training majority-class error
FEATURES, RELIANCE, LOWER, UPPER = ["worst concave points", "worst radius"], [0.01407, 0.002513], [0.0, 0.0], \
    [0.01256, 0.01156]


def test_negligible_mcr_ranges_pass_the_rashomon_criterion_whatever_their_ratio():
    ratio_only = mcr_section.rashomon_sensitivity(FEATURES, RELIANCE, LOWER, UPPER)
    assert ratio_only.status == v.FAIL                       # R = 0.89 judged alone
    criterion = mcr_section.rashomon_sensitivity(FEATURES, RELIANCE, LOWER, UPPER,
                                                 baseline=(0.37, "misclassification rate"))
    assert criterion.status == v.PASS
    assert "range, 0.01256, is below the floor 0.0185 " in criterion.explanation
    assert "R is not judged" in criterion.explanation
    assert "rashomon_floor" in criterion.threshold_text
    wide = mcr_section.rashomon_sensitivity(FEATURES, RELIANCE, LOWER, UPPER, baseline=(0.1, "misclassification rate"))
    assert wide.status == v.FAIL and "at or above the floor 0.005" in wide.explanation
    with pytest.raises(InputError, match="rashomon_floor"):
        v.limits({"rashomon_floor": -0.1})


def test_the_constant_prediction_loss_is_the_majority_error_or_the_variance():
    from xai_plugins.report.sections.mcr import CONSTANT_LOSS

    zero_one, _ = CONSTANT_LOSS["zero_one"]
    squared, _ = CONSTANT_LOSS["squared_error"]
    assert zero_one(np.array([0, 0, 1, 1, 1])) == pytest.approx(0.4)
    assert squared(np.array([1.0, 3.0])) == pytest.approx(1.0)


# ---------------------------------------------------------------- item 8: numbers read as bugs
def test_printed_numbers_read_on_the_side_of_their_threshold():
    tau = pd.DataFrame([[1.0, 0.29996], [0.29996, 1.0]], index=["A", "B"], columns=["A", "B"])
    agreement = agree_section.explainer_agreement(global_tau=tau)
    assert agreement.status == v.FAIL and ": 0.29996." in agreement.explanation     # not "0.30" beside "fail < 0.3"
    disparity = fairness_section.Disparity("sex", "demographic parity difference", 0.10004, 0.0993, 0.2, 0.1)
    assert "0.10004 (95% interval [0.0993, 0.2])" in str(disparity)
    assert v.shown(0.2000559, (0.2,)) == "0.2001"
    assert v.shown(0.19996, (0.2,)) == "0.19996"
    assert v.shown(0.2, (0.2,)) == "0.2" and v.shown(0.123456) == "0.123"
    interval = v.ConfidenceInterval(0.0263, 0.2000559, 0.95, "BCa", 50)
    assert str(interval) == "95% CI [0.0263, 0.2]" and interval.text((0.2,)) == "95% CI [0.0263, 0.2001]"


def test_the_verdict_table_prints_the_interval_on_its_side_of_the_rule():
    """L's interval [0.0263, 0.2000559] warns under "pass if it lies ≤ 0.2": printed, its upper bound is above 0.2."""
    test = model_section.HoldoutScore("R²", 0.9, v.ConfidenceInterval(0.7999441, 0.9737, 0.95, "BCa", 50), 0.0)
    adequacy = model_section.predictive_adequacy(test, 1.0, thresholds={"adequacy_warn": 0.2})
    assert adequacy.status == v.WARN and "95% CI [0.0263, 0.2001]" in adequacy.explanation
    verdict = v.Verdict.from_criteria([adequacy], {"adequacy_warn": 0.2})
    html = environment().get_template("sections/verdict.html").render(
        sec=types.SimpleNamespace(data=verdict.to_dict()),
        audit=types.SimpleNamespace(options=types.SimpleNamespace(command_line=None)))
    assert "95% [0.0263, 0.2001]" in html and "0.2]" not in html


def test_mutual_information_of_a_two_valued_column_with_its_groups_is_the_entropy():
    rng = np.random.default_rng(3)
    sex = rng.choice([-0.04464, 0.05068], 309, p=[0.55, 0.45])          # the diabetes data's standardised codes
    X = pd.DataFrame({"sex": sex, "bmi": rng.normal(size=309)})
    groups = fair.make_grouping(X["sex"], "sex").labels(X["sex"])
    proxy = fair.proxy_check(X, groups, {"sex": "the attribute itself"}, random_state=0)
    share = proxy.table["share of the attribute's entropy"]
    p = np.unique(sex, return_counts=True)[1] / len(sex)
    assert proxy.table.loc["sex", "mutual information (bits)"] == pytest.approx(-(p * np.log2(p)).sum(), abs=1e-12)
    assert (share <= 1).all() and share["sex"] == pytest.approx(1.0, abs=1e-12)


def test_no_threshold_rationale_quotes_a_demo():
    assert not [t.name for t in v.THRESHOLDS.values() if re.search(r"\bdemo\b|diabetes", t.rationale)]


def test_a_fairness_warning_says_exactly_why():
    criterion = fairness_section.fairness_criterion(["sex"], crossed="sex: it is a model input")
    assert criterion.status == v.WARN
    assert criterion.implication == "Review the fairness section before use — sex: it is a model input."
    disparity = fairness_section.Disparity("sex", "demographic parity difference", 0.12, 0.05, 0.2, 0.1)
    few = "race has fewer than two groups of at least 30 test rows"
    warned = fairness_section.fairness_criterion(["sex"], [disparity], insufficient=[few])
    assert "possible disparity: sex: demographic parity difference 0.12" in warned.implication
    assert "too little evidence: race has fewer than two groups" in warned.implication


def test_the_diabetes_demo_groups_sex_by_its_codes():
    from xai_plugins.cli import demo_models

    _, _, _, X_test, _, X_train, _ = demo_models()[0]
    assert set(X_train["sex"]) == set(X_test["sex"]) == {1.0, 2.0}
    assert set(fair.make_grouping(X_test["sex"], "sex").labels(X_test["sex"])) == {"1", "2"}
