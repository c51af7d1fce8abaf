"""Verdict criteria: thresholds on each side, bootstrap intervals that cover at their level, the paired
faithfulness bootstrap, and the rule of each of the two verdicts."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, r2_score

from xai_plugins.errors import InputError
from xai_plugins.report import verdict as v
from xai_plugins.report.sections import agreement as agree_section
from xai_plugins.report.sections import fairness as fairness_section
from xai_plugins.report.sections import faithfulness as faith_section
from xai_plugins.report.sections import mcr as mcr_section
from xai_plugins.report.sections import model as model_section


def ci(low, high, rows=100):
    return v.ConfidenceInterval(low, high, 0.95, "BCa", rows)


# ---------------------------------------------------------------- grading rule
@pytest.mark.parametrize("interval, expected", [((0.55, 0.9), "pass"), ((0.5, 0.6), "pass"), ((0.45, 0.7), "warn"),
                                                ((0.2, 0.7), "warn"), ((0.1, 0.24), "fail")])
def test_grade_higher_is_better_judges_the_interval(interval, expected):
    assert v.grade(np.mean(interval), ci(*interval), pass_at=0.5, fail_at=0.25) == expected


@pytest.mark.parametrize("interval, expected", [((0.0, 0.2), "pass"), ((0.1, 0.3), "warn"), ((0.45, 0.7), "warn"),
                                                ((0.51, 0.9), "fail")])
def test_grade_lower_is_better_judges_the_interval(interval, expected):
    assert v.grade(np.mean(interval), ci(*interval), pass_at=0.2, fail_at=0.5) == expected


def test_grade_without_interval_judges_the_value():
    assert [v.grade(x, None, 0.5, 0.25) for x in (0.6, 0.3, 0.2)] == ["pass", "warn", "fail"]
    assert v.grade(0.6, ci(np.nan, np.nan), 0.5, 0.25) == "warn"        # no interval from too few rows


# ---------------------------------------------------------------- bootstrap intervals
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_bootstrap_ci_covers_the_true_mean_at_about_its_level(level):
    rng = np.random.default_rng(12345)
    trials, hits = 300, 0
    for _ in range(trials):
        sample = rng.exponential(scale=2.0, size=40)      # skewed, true mean 2
        interval = v.bootstrap_ci(sample, n_boot=999, level=level, random_state=rng)
        hits += 2.0 in interval
    coverage = hits / trials
    sd = np.sqrt(level * (1 - level) / trials)
    # BCa at n = 40 on exponential data undercovers by a point or two: allow 0.03 below, 3 sd either side
    assert level - 0.03 - 3 * sd <= coverage <= level + 3 * sd, coverage


def test_bootstrap_ci_is_reproducible_and_contains_the_sample_mean():
    x = np.random.default_rng(0).normal(size=60)
    a, b = v.bootstrap_ci(x, random_state=7), v.bootstrap_ci(x, random_state=7)
    assert a == b and x.mean() in a and a.rows == 60 and a.level == 0.95


def test_bootstrap_ci_degenerate_and_bad_input():
    const = v.bootstrap_ci(np.full(10, 3.0), random_state=0)
    assert (const.low, const.high) == (3.0, 3.0)
    one = v.bootstrap_ci([1.0], random_state=0)
    assert np.isnan(one.low) and np.isnan(one.high)
    with pytest.raises(InputError, match="same length"):
        v.bootstrap_ci((np.ones(3), np.ones(4)), lambda a, b, axis=-1: a.mean(axis))
    with pytest.raises(InputError, match="finite"):
        v.bootstrap_ci([1.0, np.nan, 2.0])
    with pytest.raises(InputError, match="level"):
        v.bootstrap_ci([1.0, 2.0], level=95)


def _pgi2_rows(n, F, noise, seed):
    """Per-row PGI² of random, greedy and a method that recovers the share F of the gap on average;
    row scales vary over two orders of magnitude, as PGI² in squared output units does."""
    rng = np.random.default_rng(seed)
    scale = rng.lognormal(0.0, 1.5, n)
    random = scale * rng.uniform(0.8, 1.2, n)
    greedy = random + 2 * scale
    method = random + (F + rng.normal(0, noise, n)) * (greedy - random)
    return method, random, greedy


def test_faithfulness_score_is_the_ratio_of_row_means():
    m, r, g = _pgi2_rows(50, 0.6, 0.05, 1)
    score = faith_section.faithfulness_score(m, r, g, random_state=0)
    assert score.value == pytest.approx((m.mean() - r.mean()) / (g.mean() - r.mean()), rel=1e-12)
    assert score.gap == pytest.approx(g.mean() - r.mean())
    assert score.value in score.ci


def test_faithfulness_score_is_free_of_output_units():
    """F is a ratio of PGI² differences: rescaling the model output (PGI² by its square) changes nothing."""
    m, r, g = _pgi2_rows(40, 0.6, 0.05, 7)
    a = faith_section.faithfulness_score(m, r, g, random_state=3)
    b = faith_section.faithfulness_score(m * 1e6, r * 1e6, g * 1e6, random_state=3)
    assert b.value == pytest.approx(a.value, rel=1e-12)
    assert (b.ci.low, b.ci.high) == pytest.approx((a.ci.low, a.ci.high), rel=1e-9)


def test_faithfulness_bootstrap_is_paired():
    m, r, g = _pgi2_rows(80, 0.6, 0.05, 2)
    paired = faith_section.faithfulness_score(m, r, g, random_state=0).ci

    def ratio(a, b, c, axis=-1):
        return (a.mean(axis) - b.mean(axis)) / (c.mean(axis) - b.mean(axis))

    unpaired = stats.bootstrap((m, r, g), ratio, paired=False, vectorized=True, method="percentile",
                               n_resamples=2000, random_state=0).confidence_interval
    paired_width, unpaired_width = paired.high - paired.low, unpaired.high - unpaired.low
    assert paired_width < unpaired_width / 5, (paired_width, unpaired_width)
    assert paired.low <= 0.6 <= paired.high


def test_faithfulness_undefined_when_no_ranking_beats_random():
    r = np.linspace(1, 2, 20)
    with pytest.raises(InputError, match="scores above random"):
        faith_section.faithfulness_score(r, r, r * 0.9)
    crit = faith_section.explainer_faithfulness("SHAP", {"SHAP": r, "random": r, "greedy": r}, 0.3)
    assert crit.status == "not assessed" and "scores above random" in crit.explanation


@pytest.mark.parametrize("F, expected", [(0.85, "pass"), (0.4, "warn"), (0.1, "fail")])
def test_faithfulness_thresholds(F, expected):
    m, r, g = _pgi2_rows(200, F, 0.02, 3)
    crit = faith_section.explainer_faithfulness("SHAP", {"SHAP": m, "random": r, "greedy": g}, 0.3, random_state=0)
    assert crit.status == expected and crit.kind == "faithfulness"
    assert crit.value == pytest.approx(F, abs=0.02)
    assert "0.5 (faithfulness_pass)" in crit.threshold_text and "0.25 (faithfulness_fail)" in crit.threshold_text


def test_faithfulness_interval_straddling_the_pass_threshold_warns():
    m, r, g = _pgi2_rows(15, 0.55, 0.4, 4)        # few rows, noisy: the interval straddles 0.5
    crit = faith_section.explainer_faithfulness("SHAP", {"SHAP": m, "random": r, "greedy": g}, 0.3, random_state=0)
    assert crit.ci.low < 0.5 < crit.ci.high and crit.status == "warn"


def test_faithfulness_without_the_greedy_reference_is_not_assessed():
    r = np.ones(5)
    crit = faith_section.explainer_faithfulness("SHAP", {"SHAP": r, "random": r}, 0.3)
    assert crit.status == "not assessed" and "greedy" in crit.explanation


# ---------------------------------------------------------------- predictive adequacy
def _holdout(value, half_width=0.01, chance=0.0, metric="R²"):
    return model_section.HoldoutScore(metric, value, ci(value - half_width, value + half_width), chance)


@pytest.mark.parametrize("test, train, expected", [(0.65, 0.71, "pass"), (0.45, 0.71, "warn"), (0.31, 0.71, "fail"),
                                                   (-0.1, 0.71, "fail")])
def test_predictive_adequacy_thresholds(test, train, expected):
    crit = model_section.predictive_adequacy(_holdout(test), train)
    assert crit.status == expected
    if test > 0:
        assert crit.value == pytest.approx((train - test) / train)


def test_predictive_adequacy_uncertain_gap_warns_and_missing_training_is_not_assessed():
    assert model_section.predictive_adequacy(_holdout(0.31, half_width=0.2), 0.71).status == "warn"
    crit = model_section.predictive_adequacy(_holdout(0.5), None)
    assert crit.status == "not assessed" and "no training score" in crit.explanation


def test_predictive_adequacy_of_the_diabetes_gap_from_predictions():
    """R² 0.31 on the test rows against 0.71 in training (the diabetes demo) must not pass."""
    rng = np.random.default_rng(0)
    y = rng.normal(size=3000)
    pred = 0.5 * y + rng.normal(0, 0.663, 3000)         # R² = 1 − 0.5² − 0.663² ≈ 0.31
    score = model_section.holdout_score("R²", y, pred, random_state=0)
    assert score.value == pytest.approx(r2_score(y, pred), rel=1e-12)
    crit = model_section.predictive_adequacy(score, 0.71)
    assert crit.status == "fail", crit.explanation
    assert crit.value == pytest.approx((0.71 - r2_score(y, pred)) / 0.71, rel=1e-9)


def test_balanced_accuracy_score_with_string_labels_matches_sklearn():
    rng = np.random.default_rng(1)
    y = rng.choice(["low", "mid", "high"], 150)
    pred = np.where(rng.random(150) < 0.7, y, "mid")
    score = model_section.holdout_score("balanced accuracy", y, pred, random_state=0)
    assert score.value == pytest.approx(balanced_accuracy_score(y, pred), rel=1e-12)
    assert score.chance == pytest.approx(1 / 3) and score.value in score.ci
    with pytest.raises(InputError, match="unknown score"):
        model_section.holdout_score("accuracy", y, pred)


# ---------------------------------------------------------------- agreement
def test_per_row_tau_against_hand_computed_values():
    scores = {"A": np.array([[1, 2, 3, 4.0], [1, 1, 1, 1.0]]), "B": np.array([[1, 2, 4, 3.0], [4, 3, 2, 1.0]])}
    per_row, pairs = agree_section.pair_taus(scores)
    assert per_row[0] == pytest.approx(4 / 6)           # one discordant pair out of six
    assert np.isnan(per_row[1])                         # A ties every feature on row 2: no order
    assert pairs == {"A vs B": pytest.approx(4 / 6)}


def test_agreement_thresholds():
    rng = np.random.default_rng(5)
    base = rng.random((60, 8))
    same = agree_section.explainer_agreement({"A": base, "B": base * 2, "C": base + 1}, random_state=0)
    assert same.status == "pass" and same.value == pytest.approx(1.0)
    unrelated = agree_section.explainer_agreement({m: rng.random((60, 8)) for m in "ABC"}, random_state=0)
    assert unrelated.status == "fail" and unrelated.ci.high < 0.3
    assert "60 rows" in unrelated.explanation and "8 features" in unrelated.explanation


def test_agreement_from_global_tau_and_not_assessed():
    tau = pd.DataFrame([[1, 0.45, 0.2], [0.45, 1, 0.55], [0.2, 0.55, 1]], index=list("ABC"), columns=list("ABC"))
    crit = agree_section.explainer_agreement(global_tau=tau)
    assert crit.status == "warn" and crit.value == pytest.approx(0.4) and crit.ci is None
    assert "A vs C" in crit.explanation
    assert agree_section.explainer_agreement({"A": np.ones((3, 4))}).status == "not assessed"


# ---------------------------------------------------------------- stability across σ
def _by_sigma(Fs, n=100, seed=6):
    out = {}
    for sigma, (fa, fb) in Fs.items():
        a, r, g = _pgi2_rows(n, fa, 0.01, seed)
        b = r + fb * (g - r)
        out[sigma] = {"A": a, "B": b, "random": r, "greedy": g}
    return out


@pytest.mark.parametrize("Fs, expected", [({0.1: (0.8, 0.5), 0.3: (0.85, 0.55), 1.0: (0.8, 0.45)}, "pass"),
                                          ({0.1: (0.8, 0.5), 0.3: (0.45, 0.55)}, "warn"),
                                          ({0.1: (0.9, 0.5), 0.3: (0.2, 0.55)}, "fail")])
def test_stability_thresholds(Fs, expected):
    crit = faith_section.sigma_stability(_by_sigma(Fs), random_state=0)
    largest = max(max(f[i] for f in Fs.values()) - min(f[i] for f in Fs.values()) for i in (0, 1))
    assert crit.value == pytest.approx(largest, abs=0.01)
    assert crit.status == expected, crit.explanation


def test_stability_reports_a_change_of_order_and_needs_two_sigmas():
    crit = faith_section.sigma_stability(_by_sigma({0.1: (0.9, 0.5), 0.3: (0.2, 0.55)}), random_state=0)
    assert "order by F changes" in crit.explanation
    assert faith_section.sigma_stability(_by_sigma({0.1: (0.9, 0.5)})).status == "not assessed"


# ---------------------------------------------------------------- Rashomon sensitivity
@pytest.mark.parametrize("width, expected", [(0.1, "pass"), (0.3, "warn"), (0.8, "fail")])
def test_rashomon_thresholds(width, expected):
    reliance = np.array([2.0, 1.0, 0.1])
    lower = reliance - np.array([0.05, width, 0.01])
    upper = reliance + np.array([0.05, width, 0.01])
    crit = mcr_section.rashomon_sensitivity(["a", "b", "c"], reliance, lower, upper)
    assert crit.value == pytest.approx(max(0.1, 2 * width) / 2.0)
    assert crit.status == expected


def test_rashomon_without_reliance_is_not_assessed():
    assert mcr_section.rashomon_sensitivity(["a"], [0.0], [0.0], [0.0]).status == "not assessed"


# ---------------------------------------------------------------- the two verdicts
def _crit(status, name="c", kind="agreement"):
    return v.Criterion(name, status, 0.5, None, "rule", "text", kind)


@pytest.mark.parametrize("statuses, worst", [(["pass", "pass"], "pass"), (["pass", "warn"], "warn"),
                                             (["warn", "fail", "pass"], "fail"),
                                             (["pass", "not assessed"], "warn"),
                                             (["fail", "not assessed"], "fail"), ([], "warn")])
def test_each_verdict_is_the_worst_and_incomplete_ones_do_not_pass(statuses, worst):
    criteria = [_crit(s, f"c{i}") for i, s in enumerate(statuses)]
    assert v.Verdict.from_criteria(criteria).explanation_reliability.status == worst
    fitness = [_crit(s, f"c{i}", "predictive adequacy") for i, s in enumerate(statuses)]
    assert v.Verdict.from_criteria(fitness).model_fitness.status == worst


def test_verdict_headline_and_json():
    verdict = v.Verdict.from_criteria([_crit("fail", "Predictive adequacy", "predictive adequacy"),
                                       _crit("pass", "Agreement"),
                                       v.not_assessed("Rashomon sensitivity", "Rashomon sensitivity", "MCR skipped")])
    assert verdict.headline.startswith("Model fitness: FAIL")
    assert "Explanation reliability: WARN" in verdict.headline
    assert "not assessed: Rashomon sensitivity" in verdict.explanation_reliability.headline
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["model fitness"]["status"] == "fail" and data["explanation reliability"]["status"] == "warn"
    assert [c["status"] for c in data["criteria"]] == ["fail", "pass", "not assessed"]
    assert data["criteria"][2]["explanation"] == "Not assessed: MCR skipped."


def test_verdict_json_has_no_nan():
    one_row = faith_section.explainer_faithfulness("SHAP", {"SHAP": [2.0], "random": [1.0], "greedy": [3.0]}, 0.3)
    assert np.isnan(one_row.ci.low) and one_row.status == "warn"          # one row cannot decide
    text = json.dumps(v.Verdict.from_criteria([one_row]).to_dict(), allow_nan=False)
    assert json.loads(text)["criteria"][0]["ci"]["low"] is None


# ---------------------------------------------------------------- fairness
def test_fairness_mirrors_the_findings():
    crossed = fairness_section.fairness_criterion(["race"], crossed="proxy AUC 0.93 above 0.8")
    assert crossed.status == "warn" and "0.93" in crossed.explanation
    assert "0.1 (demographic_parity)" in crossed.threshold_text and "(min_group_rows" in crossed.threshold_text
    assert fairness_section.fairness_criterion(["race", "sex"]).status == "pass"
    skipped = fairness_section.fairness_criterion(["race"], not_assessed_reason="the fairness section failed")
    assert skipped.status == "not assessed"


@pytest.mark.parametrize("d", [2, 3, 10, 30, 200])
def test_row_taus_equal_scipys_kendall_tau_b_row_by_row(d):
    """The agreement section's vectorised τ-b against scipy.stats.kendalltau on each row: ties in either
    vector, a constant row (NaN: no order) and a NaN score (NaN)."""
    from scipy.stats import kendalltau

    from xai_plugins.report.sections.agreement import row_taus

    rng = np.random.default_rng(d)
    A = rng.integers(0, 5, (40, d)).astype(float)
    B = rng.normal(size=(40, d))
    B[:5] = np.round(B[:5])
    A[3], B[7, d - 1] = 1.0, np.nan
    want = [kendalltau(a, b).statistic if np.ptp(a) > 0 and np.ptp(b) > 0 else np.nan for a, b in zip(A, B)]
    np.testing.assert_allclose(row_taus(A, B), want, rtol=0, atol=1e-12)
    assert np.isnan(row_taus(A, B)[[3, 7]]).all()
