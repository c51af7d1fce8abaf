"""Two verdicts (model fitness, explanation reliability) with what each implies; one
source for the qualitative words; F measured against the best ranking found (F <= 1); fairness that can
fail, an equalized-odds interval and small groups as insufficient evidence; units and a dimensionless
share for PGI²; settable, named thresholds with their rationale."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

from xai_plugins.cli import main
from xai_plugins.errors import InputError
from xai_plugins.report import audit
from xai_plugins.report import verdict as v
from xai_plugins.report.sections import agreement as agree_section
from xai_plugins.report.sections import fairness as fairness_section
from xai_plugins.report.sections import faithfulness as faith_section


def _crit(status, name, kind):
    return v.Criterion(name, status, 0.5, None, "rule", "text", kind, f"{name} implies {status}")


# ---------------------------------------------------------------- 1. two verdicts
def test_the_model_and_its_explanations_get_separate_verdicts():
    """Explainers that disagree (fail) must not make the model fail: its fitness passes on its own criteria."""
    verdict = v.Verdict.from_criteria([_crit("pass", "Predictive adequacy", "predictive adequacy"),
                                       _crit("pass", "Fairness", "fairness"),
                                       _crit("fail", "Agreement between explainers", "agreement"),
                                       _crit("pass", "Faithfulness of SHAP", "faithfulness")])
    assert verdict.model_fitness.status == "pass"
    assert verdict.explanation_reliability.status == "fail"
    assert [c.name for c in verdict.model_fitness.criteria] == ["Predictive adequacy", "Fairness"]
    assert verdict.explanation_reliability.implications == ["Agreement between explainers implies fail"]
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["model fitness"]["status"] == "pass" and data["explanation reliability"]["status"] == "fail"
    assert "overall" not in data


def test_new_kinds_of_criteria_join_a_verdict_or_are_refused():
    fitness = v.Verdict.from_criteria([_crit("fail", "Calibration", "calibration"),
                                       _crit("pass", "Predictive adequacy", "predictive adequacy")]).model_fitness
    assert fitness.status == "fail" and len(fitness.criteria) == 2
    with pytest.raises(InputError, match="join neither verdict"):
        v.Verdict.from_criteria([_crit("pass", "Mystery", "mystery")])


def test_a_failing_faithfulness_says_the_method_must_not_justify_decisions():
    rng = np.random.default_rng(0)
    random = rng.uniform(1, 2, 80)
    greedy = random + 2
    shap = random + 0.05 * rng.random(80)                    # barely above random: F ~ 0.01
    crit = faith_section.explainer_faithfulness("SHAP", {"SHAP": shap, "random": random, "greedy": greedy}, 0.3,
                                                random_state=0)
    assert crit.status == "fail"
    assert "Explanations by SHAP should not be used to justify individual decisions" in crit.implication


# ---------------------------------------------------------------- 3. F against the best ranking found
def test_F_is_at_most_one_when_an_explainer_beats_the_greedy_ranking():
    """Greedy is a heuristic: a method scoring above it on most rows gets F <= 1, measured against the
    best ranking found on each row (oracle: the row-wise maximum computed here)."""
    rng = np.random.default_rng(1)
    random = rng.uniform(1, 2, 60)
    greedy = random + 1.0
    mcr = random + np.where(rng.random(60) < 0.8, 1.2, 0.8)    # beats greedy on about 80% of the rows
    per_row = {"MCR": mcr, "random": random, "greedy": greedy}
    crit = faith_section.explainer_faithfulness("MCR", per_row, 0.3, random_state=0)
    best = np.maximum(mcr, greedy)
    assert crit.value == pytest.approx((mcr.mean() - random.mean()) / (best.mean() - random.mean()), rel=1e-12)
    assert crit.value <= 1 and crit.ci.high <= 1 + 1e-12
    assert (mcr.mean() - random.mean()) / (greedy.mean() - random.mean()) > 1      # the greedy ratio would exceed 1
    assert "best ranking found" in crit.threshold_text and "ceiling" not in crit.threshold_text + crit.explanation


# ---------------------------------------------------------------- 6. thresholds
def test_thresholds_are_named_settable_and_checked():
    assert {"faithfulness_pass", "agreement_pass", "adequacy_warn", "demographic_parity",
            "min_group_rows"} <= set(v.THRESHOLDS)
    assert all(t.rationale for t in v.THRESHOLDS.values())
    rng = np.random.default_rng(5)
    base = rng.random((60, 8))
    scores = {"A": base, "B": base + rng.normal(0, 0.15, base.shape)}
    default = agree_section.explainer_agreement(scores, random_state=0)
    strict = agree_section.explainer_agreement(scores, thresholds={"agreement_pass": 0.99, "agreement_fail": 0.98},
                                               random_state=0)
    assert default.status == "pass" and strict.status == "fail"
    assert "0.99 (agreement_pass)" in strict.threshold_text
    with pytest.raises(InputError, match="unknown threshold"):
        v.limits({"agreement": 0.5})
    with pytest.raises(InputError, match="must be at least"):
        v.limits({"faithfulness_pass": 0.1})


# ---------------------------------------------------------------- 4. fairness
def _groups_frame(n_small=3):
    rng = np.random.default_rng(3)
    g = pd.Series(["a"] * 300 + ["b"] * 300 + ["c"] * n_small)
    y = rng.integers(0, 2, len(g))
    # group a is predicted positive 70% of the time, group b 30%: a disparity of about 0.4
    p = np.r_[rng.random(300) < 0.7, rng.random(300) < 0.3, np.ones(n_small, bool)].astype(int)
    return g, y, p


def test_a_disparity_whose_interval_lies_above_the_limit_fails():
    from types import SimpleNamespace

    from xai_plugins.report.sections.fairness import _performance, new_attribute

    g, y, p = _groups_frame()
    out = new_attribute("g")
    _performance(SimpleNamespace(y_test=y, task="classification", positive_class=1), out, g, p, seed=0)
    dp = [d for d in out["disparities"] if d.metric == "demographic parity difference"][0]
    rates = [p[(g == k).to_numpy()].mean() for k in "ab"]        # group c (3 rows) is left out
    assert dp.value == pytest.approx(abs(rates[0] - rates[1]))
    assert dp.low > 0.1 and dp.status == "fail"
    crit = fairness_section.fairness_criterion(["g"], out["disparities"])
    assert crit.status == "fail" and "should not be used for decisions" in crit.implication


def test_equalized_odds_has_a_bootstrap_interval():
    from xai_plugins.report.sections.fairness.groups import performance_by_group

    g, y, p = _groups_frame(0)
    table = performance_by_group(y, p, g, "classification", positive_class=1, random_state=0).disparities
    row = table.loc["equalized odds difference"]
    assert np.isfinite([row["ci_low"], row["ci_high"]]).all()
    assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["ci_high"] - row["ci_low"] < 0.3

    # oracle: the same resamples computed one by one with plain per-group rates
    t, q = y == 1, p == 1
    idx = np.random.default_rng(0).integers(0, len(t), size=(100, len(t)))
    values = []
    for rows in idx:
        tt, qq, gg = t[rows], q[rows], g.to_numpy()[rows]
        tpr = [np.mean(qq[(gg == k) & tt]) for k in "ab"]
        fpr = [np.mean(qq[(gg == k) & ~tt]) for k in "ab"]
        values.append(max(abs(tpr[0] - tpr[1]), abs(fpr[0] - fpr[1])))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])), rel=1e-9)


def test_groups_below_the_minimum_size_are_insufficient_evidence():
    from types import SimpleNamespace

    from xai_plugins.report.sections.fairness import _performance, new_attribute

    rng = np.random.default_rng(4)
    g = pd.Series(["a"] * 300 + ["b"] * 3)
    y, p = rng.integers(0, 2, 303), np.r_[rng.random(300) < 0.5, [1, 1, 1]].astype(int)
    out = new_attribute("g")
    _performance(SimpleNamespace(y_test=y, task="classification", positive_class=1), out, g, p, seed=0)
    assert out["disparities"] == [] and "fewer than two groups of at least 30 test rows" in out["insufficient"]
    crit = fairness_section.fairness_criterion(["g"], out["disparities"], insufficient=[out["insufficient"]])
    assert crit.status == "warn" and "insufficient evidence" in crit.explanation
    # the minimum is a threshold: lowered to 3, the small group is judged again
    out = new_attribute("g", {"min_group_rows": 3})
    _performance(SimpleNamespace(y_test=y, task="classification", positive_class=1), out, g, p, seed=0)
    assert out["disparities"] and not out["insufficient"]


# ---------------------------------------------------------------- 2, 5, 6 through an audit
@pytest.fixture(scope="module")
def small():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    return X.iloc[:300], y.iloc[:300], X.iloc[300:400], y.iloc[300:400]


@pytest.fixture(scope="module")
def boosted(small):
    X_train, y_train, X_test, y_test = small
    model = GradientBoostingClassifier(n_estimators=15, max_depth=2, random_state=0).fit(X_train, y_train)
    return audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sigma=[0.1, 0.3], random_state=0,
                 max_rows=10, max_shap_rows=40, explainers=["shap", "pg2", "local_mdi"],
                 sections=["explanations", "faithfulness", "agreement"], mc_pairs=0,
                 thresholds={"faithfulness_pass": 0.6}, progress=False)


def test_summary_words_are_the_verdicts(boosted):
    findings = {row["finding"]: row["result"] for row in boosted.sections["summary"].data["findings"]}
    agreement = boosted.verdict.criterion("agreement")[0]
    assert findings["Do the methods agree?"].startswith(f"{v.WORDS['agreement'][agreement.status]} "
                                                        f"({agreement.status} in the verdict")
    faithful = [r for k, r in findings.items() if k.startswith("Are the explainers faithful?")][0]
    for c in boosted.verdict.criterion("faithfulness"):
        method = c.name.removeprefix("Faithfulness of ")
        assert f"{method}: {v.WORDS['faithfulness'][c.status]} ({c.status} in the verdict" in faithful
    html = boosted.to_html()
    assert f"The verdict rates this agreement <strong>{agreement.word}</strong>" in html


def test_pgi2_has_its_unit_and_a_dimensionless_share(boosted):
    section = boosted.sections["faithfulness"]
    assert section.data["unit"] == "log-odds²"                 # a boosted classifier is explained on its margin
    caption = section.tables[0].caption
    assert "in log-odds² (the explained output's unit squared)" in caption and "dimensionless share" in caption
    assert "in log-odds²" in section.figures[0].caption and "What it shows" in section.figures[0].caption
    table = section.data["pgi2"].set_index(["method", "sigma"])["mean"]
    scale = section.data["mean PG² all features"]
    assert scale[0.3] == pytest.approx(float(np.mean(section.result.pg2_all[0.3])), rel=1e-12) and scale[0.3] > 0
    shown = section.tables[0].frame.loc["SHAP", "σ = 0.3"]
    assert shown.endswith(f"({table[('SHAP', 0.3)] / scale[0.3]:.0%})")


def test_thresholds_reach_the_verdict_text_and_the_appendix(boosted):
    crit = boosted.verdict.criterion("faithfulness")[0]
    assert "0.6 (faithfulness_pass)" in crit.threshold_text
    assert boosted.parameters["thresholds"] == {"faithfulness_pass": 0.6}
    data = boosted.to_dict()["verdict"]
    entry = data["thresholds"]["faithfulness_pass"]
    assert entry["value"] == 0.6 and entry["default"] == 0.5 and "half" in entry["rationale"]
    assert "thresholds=" in json.dumps(boosted.options.describe())


def test_cli_threshold_flag(tmp_path, capsys, small):
    X_train, y_train, X_test, y_test = small
    with pytest.raises(SystemExit):
        main(["--threshold", "agreement_pass"])         # no value: argparse refuses it
    assert "NAME=VALUE" in capsys.readouterr().err
    model = RandomForestClassifier(5, max_depth=2, random_state=0).fit(X_train, y_train)
    import joblib

    joblib.dump(model, tmp_path / "m.joblib")
    X_test.assign(y=y_test).to_csv(tmp_path / "test.csv", index=False)
    status = main(["--model", str(tmp_path / "m.joblib"), "--trust-pickle", "--data", str(tmp_path / "test.csv"),
                   "--target", "y", "--out", str(tmp_path / "out"), "--threshold", "agreements=0.5", "--no-pdf"])
    assert status == 2 and "unknown threshold(s) ['agreements']" in capsys.readouterr().err


# ---------------------------------------------------------------- the attribution shown
@pytest.fixture(scope="module")
def forest_audits():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    model = RandomForestClassifier(n_estimators=15, max_depth=4, random_state=0).fit(X[:300], y[:300])
    common = dict(explainers=("shap", "pg2", "local_mdi"), sections=("explanations", "faithfulness", "agreement"),
                  max_rows=25, sigma=(0.3, 1.0), mc_pairs=0, n_local=0)
    return {shown: audit(model, X[300:420], y[300:420], X_train=X[:300], shown_explainer=shown, **common)
            for shown in (None, "local_mdi")}


def test_the_verdict_judges_only_the_attribution_shown(forest_audits):
    every, shown = forest_audits[None], forest_audits["local_mdi"]
    names = lambda a: [c.name for c in a.verdict.criterion("faithfulness")]  # noqa: E731
    assert names(every) == ["Faithfulness of SHAP", "Faithfulness of local MDI"]
    assert names(shown) == ["Faithfulness of local MDI"]
    judged = shown.verdict.criterion("faithfulness")[0]
    same = every.verdict.criterion("faithfulness")[1]
    # F is still measured against the best ranking found among every evaluated ranking, SHAP's included
    assert judged.value == same.value and judged.status == same.status
    assert "local MDI is the explainer whose attributions are shown" in judged.explanation
    assert "SHAP scored in the faithfulness section, not judged" in judged.explanation
    # the faithfulness section still scores both explainers
    assert {"SHAP", "local MDI"} <= set(shown.sections["faithfulness"].result.labels.values())
    # stability: D over the shown explainer only, so never above D over every explainer
    d_every, d_shown = (a.verdict.criterion("stability")[0].value for a in (every, shown))
    assert d_shown <= d_every


def test_the_shown_explainer_must_be_one_that_runs():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    for bad in ("pg2", "acme"):
        with pytest.raises(InputError, match="shown_explainer must be one of the explainers run"):
            audit(model, X, y, explainers=("shap", "pg2"), shown_explainer=bad)


def test_the_cli_takes_the_shown_explainer():
    from xai_plugins.cli import audit_options, build_parser

    argv = ["--shown-explainer", "local_mdi", "--explainers", "shap", "local_mdi"]
    assert audit_options(build_parser().parse_args(argv), argv).shown_explainer == "local_mdi"
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--shown-explainer", "nope"])
    assert exc.value.code == 2
