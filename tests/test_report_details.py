"""Report details a reviewer reads: the drift and calibration sections in the audit and its verdict, rows left out
for missing values, the Rashomon set at ε = 0, the sign-off conditions, what each method explains, captions and
settings that name only the methods that ran, the row-position example, legends clear of the x label."""

import re

import matplotlib
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from xai_plugins.report import audit, figures

SMALL = dict(max_rows=8, max_shap_rows=40, mcr_permutations=2, progress=False, random_state=0)


@pytest.fixture(scope="module")
def classifier_audit():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5].copy()
    X["large"] = (X["mean radius"] > 14).astype(int)              # a 0/1 column
    X_train, y_train, X_test, y_test = X.iloc[:320], y.iloc[:320], X.iloc[320:440].copy(), y.iloc[320:440]
    X_test.iloc[[1, 4, 9], 2] = np.nan                            # three test rows with a missing value
    model = RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False, random_state=0).fit(X_train, y_train)
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=("shap", "pg2", "local_mdi", "mcr"),
              sections=("explanations", "mcr"), **SMALL)
    return a, a.to_html(), X_test


@pytest.fixture(scope="module")
def regression_audit():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X.iloc[:300], y.iloc[:300])
    a = audit(model, X.iloc[300:], y.iloc[300:], explainers=("shap",), sections=("explanations",), **SMALL)
    return a, a.to_html()


def test_drift_and_calibration_sections_feed_the_model_fitness_verdict(classifier_audit):
    a, html, _ = classifier_audit
    for key in ("calibration", "drift"):
        assert a.sections[key].status == "ok", a.sections[key].reason
        assert a.sections[key].title in html and a.sections[key].figures
    kinds = [c.kind for c in a.verdict.model_fitness.criteria]
    assert "calibration" in kinds and "drift" in kinds
    assert not {"calibration", "drift"} & {c.kind for c in a.verdict.explanation_reliability.criteria}
    drift = a.verdict.criterion("drift")[0]
    assert drift.value == pytest.approx(a.sections["drift"].data["table"]["PSI"].max())
    calibration = a.verdict.criterion("calibration")[0]
    assert calibration.value == pytest.approx(a.sections["calibration"].data["ECE"])
    thresholds = a.verdict.to_dict()["thresholds"]
    assert {"drift_warn", "drift_fail", "drift_alpha", "calibration_pass", "calibration_fail"} <= set(thresholds)


def test_calibration_is_not_applicable_to_regression_and_drift_needs_training_data(regression_audit):
    a, html = regression_audit
    assert a.sections["calibration"].status == "not applicable"
    assert "regression model" in a.sections["calibration"].reason and "Not applicable" in html
    assert not a.verdict.criterion("calibration")                  # not applicable: no criterion, no penalty
    assert a.sections["drift"].status == "not applicable"
    (drift,) = a.verdict.criterion("drift")
    assert drift.status == "not assessed" and "no training data" in drift.explanation


def test_rows_left_out_for_missing_values_are_counted(classifier_audit):
    a, _, X_test = classifier_audit
    items = a.sections["limitations"].data["items"]
    (item,) = [i for i in items if "have a missing value" in i]
    assert item.startswith(f"3 of the {len(X_test)} test rows")
    assert f"{X_test.columns[2]}: 3" in item


def test_rashomon_set_at_epsilon_zero_is_explained(classifier_audit):
    a, html, _ = classifier_audit
    assert a.sections["mcr"].status == "ok", a.sections["mcr"].reason
    scope = a.sections["mcr"].data["Rashomon set"]
    assert scope.startswith("Rashomon tolerance ε = 0") and "lower bound" in scope
    assert "identical to this model" in html


def test_sign_off_has_decision_and_conditions_left_blank(classifier_audit):
    a, html, _ = classifier_audit
    approval = a.sections["governance"].data["approval"]
    conditions = [k for k in approval if k.startswith("Conditions")]
    assert conditions and approval[conditions[0]] == "" and any(k.startswith("Decision") for k in approval)
    assert html.count('<td class="sign conditions"></td>') == 2          # page 1 and the section


def test_local_mdi_is_not_said_to_explain_the_class_probability(classifier_audit):
    a, html, _ = classifier_audit
    explains = a.sections["explanations"].data["explains"]
    assert explains["SHAP"] == "the predicted probability of class 1"
    assert explains["local MDI"].startswith("the impurity decrease") and "not the predicted probability" in \
        explains["local MDI"]
    assert "Every method explains" not in html


def test_captions_and_settings_name_only_the_methods_that_ran(classifier_audit):
    a, html, _ = classifier_audit
    caption = a.sections["explanations"].figures[0].caption
    assert "SHAP" in caption and "local MDI" in caption and "PG² greedy" in caption
    for absent in ("AcME", "DT-Sampler"):
        assert absent not in caption
    settings = " ".join(a.options.describe())
    assert "AcME" not in settings and "DT-Sampler" not in settings and "MCR permutations" in settings
    (space,) = [i for i in a.sections["limitations"].data["items"] if i.startswith("This is a random-forest")]
    assert "SHAP and PG² greedy here all explain" in space and "AcME" not in space


def test_row_position_example_is_this_reports_own(classifier_audit):
    a, html, X_test = classifier_audit
    first = a.sections["explanations"].data["local rows"][0]
    position = re.fullmatch(r"(\d+ of \d+) \(index \d+\)", first).group(1)
    assert f"in “{first}”, “{position}”" in html
    assert "row 3 of 171" not in html and position.endswith(f"of {len(X_test)}")


def test_binary_columns_say_they_were_flipped(classifier_audit):
    a, _, _ = classifier_audit
    (item,) = [i for i in a.sections["limitations"].data["items"] if "take only two values" in i]
    assert "(large)" in item and "perturbed by a flip" in item and "binary_flip=False" in item


@pytest.mark.parametrize("height", [1.6, 3.0, 7.0])
def test_a_legend_below_the_axes_stays_clear_of_the_x_label(height):
    with matplotlib.rc_context(figures.STYLE):
        fig, (ax,) = figures._figure(6.0, height)
        ax.plot([0, 1], [0, 1], label="a")
        ax.scatter([0.5], [0.5], label="the row's own value")
        ax.set_xlabel("prediction")
        figures.legend_outside(ax, below=True)
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend, label = ax.get_legend().get_window_extent(renderer), ax.xaxis.label.get_window_extent(renderer)
        assert legend.y1 < label.y0                       # wholly below the x label
        assert label.y0 - legend.y1 < 20                  # and close to it: no gap that grows with the axes
