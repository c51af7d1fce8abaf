"""The parity certificate: the Forest scores as the model's own runtime on the given rows and beside every split
threshold, within the runtime's rounding; a misread threshold or comparison is caught."""

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import xai_plugins as xp
from xai_plugins.errors import InputError
from xai_plugins.forest import registry
from xai_plugins.forest.parity import certify

xgboost = pytest.importorskip("xgboost")
lightgbm = pytest.importorskip("lightgbm")
catboost = pytest.importorskip("catboost")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=400)
    return X, y


MODELS = {
    "rf": lambda X, y: RandomForestRegressor(n_estimators=20, max_depth=6, random_state=0).fit(X, y),
    "gb-classifier": lambda X, y: GradientBoostingClassifier(n_estimators=30, random_state=0).fit(X, y > 0),
    "hgb-classifier": lambda X, y: HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y > 0),
    "xgb-regressor": lambda X, y: xgboost.XGBRegressor(n_estimators=100, max_depth=5).fit(X, y),
    "xgb-multiclass": lambda X, y: xgboost.XGBClassifier(n_estimators=30, max_depth=4).fit(X, np.digitize(y, [-1, 1])),
    "lgbm-regressor": lambda X, y: lightgbm.LGBMRegressor(n_estimators=60, verbose=-1).fit(X, y),
    "catboost": lambda X, y: catboost.CatBoostRegressor(iterations=60, depth=4, verbose=0, random_seed=0).fit(X, y),
}


@pytest.mark.parametrize("kind", list(MODELS))
def test_every_library_passes_its_own_runtime(data, kind):
    X, y = data
    model = MODELS[kind](X, y)
    certificate = certify(model, X[:100])
    assert certificate.passed, str(certificate)
    assert certificate.rows == 100 and certificate.threshold_rows > 0
    assert certificate.thresholds_checked == certificate.thresholds
    assert certificate.max_abs_diff <= certificate.tolerance
    assert certificate.runtime.split()[0] in ("sklearn", "xgboost", "lightgbm", "catboost")
    assert "passed" in str(certificate) and certificate.to_dict()["passed"] is True


def test_the_tolerance_is_the_runtimes_rounding(data):
    X, y = data
    exact = certify(MODELS["lgbm-regressor"](X, y), X[:50])           # LightGBM sums in float64
    single = certify(MODELS["xgb-regressor"](X, y), X[:50])           # XGBoost in float32
    assert exact.tolerance < 1e-10 < single.tolerance < 1e-2
    assert single.max_abs_diff > 0         # float32 rounding is seen, and is within the bound


CLASSIFIERS = {
    "gb-binary": lambda X, y: GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X, y > 0),
    "gb-multiclass": lambda X, y: GradientBoostingClassifier(n_estimators=10, random_state=0).fit(
        X, np.digitize(y, [-1, 1])),
    "hgb-multiclass": lambda X, y: HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(
        X, np.digitize(y, [-1, 1])),
    "xgb-binary": lambda X, y: xgboost.XGBClassifier(n_estimators=30, max_depth=4).fit(X, y > 0),
    "lgbm-binary": lambda X, y: lightgbm.LGBMClassifier(n_estimators=30, verbose=-1).fit(X, y > 0),
    "lgbm-multiclass": lambda X, y: lightgbm.LGBMClassifier(n_estimators=20, verbose=-1).fit(
        X, np.digitize(y, [-1, 1])),
    "catboost-binary": lambda X, y: catboost.CatBoostClassifier(iterations=30, depth=4, verbose=0,
                                                                random_seed=0).fit(X, y > 0),
    "catboost-multiclass": lambda X, y: catboost.CatBoostClassifier(iterations=20, depth=3, verbose=0, random_seed=0,
                                                                    loss_function="MultiClass").fit(
        X, np.digitize(y, [-1, 1])),
    "pipeline-gb": lambda X, y: make_pipeline(StandardScaler(), GradientBoostingClassifier(
        n_estimators=10, random_state=0)).fit(X, y > 0),
}


@pytest.mark.parametrize("kind", list(CLASSIFIERS) + ["gb-classifier", "hgb-classifier", "xgb-multiclass"])
def test_every_librarys_classifier_passes_on_the_margin_and_the_probabilities(data, kind):
    X, y = data
    model = {**MODELS, **CLASSIFIERS}[kind](X, y)
    certificate = certify(model, X[:100])
    assert certificate.passed and certificate.margin_passed and certificate.output_passed, str(certificate)
    assert certificate.output_space == "margin" and "link" in certificate.output_runtime
    assert 0 < certificate.output_max_abs_diff <= certificate.output_tolerance or certificate.output_max_abs_diff == 0
    assert certificate.output_tolerance > certificate.tolerance
    shown = certificate.to_dict()
    assert {"output_runtime", "output_max_abs_diff", "output_tolerance", "output_failed_rows"} <= set(shown)
    assert "on the model's output" in str(certificate)


@pytest.mark.parametrize("kind", ["rf", "xgb-regressor"])
def test_for_regressors_the_output_check_is_the_margin_comparison(data, kind):
    X, y = data
    certificate = certify(MODELS[kind](X, y), X[:50])
    assert "margin comparison" in certificate.output_runtime
    assert (certificate.output_max_abs_diff, certificate.output_tolerance, certificate.output_failed_rows) == \
        (certificate.max_abs_diff, certificate.tolerance, certificate.failed_rows)


def test_a_margin_without_a_known_link_is_checked_by_the_margin_comparison(data):
    X, y = data
    model = GradientBoostingClassifier(n_estimators=10, loss="exponential", random_state=0).fit(X, y > 0)
    certificate = certify(model, X[:50])
    assert certificate.passed and "no link to the model's probabilities" in certificate.output_runtime
    assert certificate.output_max_abs_diff == certificate.max_abs_diff


@pytest.mark.parametrize("kind", ["gb-binary", "xgb-multiclass", "lgbm-binary", "catboost-multiclass"])
def test_a_corrupted_link_fails_the_output_check_while_the_margin_passes(data, kind, monkeypatch):
    from xai_plugins.forest import parity

    X, y = data
    model = {**MODELS, **CLASSIFIERS}[kind](X, y)
    real = parity.probabilities
    monkeypatch.setattr(parity, "probabilities", lambda link, margin: real(link, 1.01 * margin))
    certificate = certify(model, X[:100])
    assert certificate.margin_passed and not certificate.output_passed and not certificate.passed
    assert certificate.output_max_abs_diff > certificate.output_tolerance
    assert "FAILED" in str(certificate)


def test_a_pipeline_is_certified_in_its_input_columns():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300), "c": rng.choice(list("xyz"), 300)})
    y = frame["a"] + (frame["c"] == "x") + 0.3 * rng.normal(size=300)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]), (StandardScaler(), ["a", "b"])),
                         RandomForestRegressor(n_estimators=10, random_state=0)).fit(frame, y)
    certificate = certify(pipe, frame[:60])
    assert certificate.passed and "Pipeline in front of sklearn" in certificate.runtime


def _misreading(importer, node_of):
    """An importer whose Forest has one threshold misread (moved halfway to its neighbour split's value)."""
    original = importer.to_forest

    def to_forest(model):
        forest = original(model)
        threshold = forest.threshold.copy()
        node = node_of(forest)
        threshold[node] = np.nextafter(threshold[node], np.inf) + 0.05
        return dataclasses.replace(forest, threshold=threshold)

    return to_forest


@pytest.mark.parametrize("kind", ["rf", "lgbm-regressor", "xgb-regressor"])
def test_a_misread_threshold_fails_the_certificate(data, kind, monkeypatch):
    X, y = data
    model = MODELS[kind](X, y)
    library = registry.importer_for(model)
    xp.clear_model_cache()
    monkeypatch.setattr(library, "to_forest", _misreading(library, lambda f: int(np.flatnonzero(f.left_child >= 0)[0])))
    certificate = certify(model, X[:100])
    xp.clear_model_cache()
    assert not certificate.passed and certificate.failed_rows > 0
    assert certificate.max_abs_diff > certificate.tolerance
    assert "FAILED" in str(certificate)


def test_many_thresholds_are_sampled_up_to_the_cap(data):
    X, y = data
    model = MODELS["rf"](X, y)
    capped = certify(model, X[:20], max_thresholds=50)
    assert capped.thresholds_checked == 50 < capped.thresholds and capped.threshold_rows <= 150
    assert capped == certify(model, X[:20], max_thresholds=50)          # seeded


def test_a_forest_without_its_model_or_rows_is_refused(data):
    X, y = data
    forest = xp.import_model(MODELS["rf"](X, y))
    with pytest.raises(InputError, match="carries none"):
        certify(dataclasses.replace(forest, predict_fn=None), X[:5])
    with pytest.raises(InputError):
        certify(forest, X[:0])


# --- the audit: certified before anything is explained --------------------------------------------------

def _small_audit(model, X, y, **options):
    from xai_plugins.report import audit

    return audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], sections=("faithfulness",),
                 explainers=("pg2",), progress=False, **options)


def test_an_audit_records_its_certificate_in_the_model_card_the_appendix_and_the_json(data):
    import json

    import jsonschema

    from xai_plugins.report.render import render_html

    X, y = data
    model = MODELS["lgbm-regressor"](X[:300], y[:300])
    result = _small_audit(model, X, y)
    parity = result.sections["model"].data["parity"]
    assert parity["passed"] and parity["rows"] == 100 and parity["runtime"].startswith("lightgbm")
    card = result.sections["model"].data["card"]["parity with its runtime"]
    assert card.startswith("parity with lightgbm") and " passed: " in card
    html = render_html(result)
    assert "Parity certificate" in html and "class=\"problems unverified\"" not in html
    document = json.loads(result.to_json())
    schema = json.loads((Path(xp.__file__).parent / "report" / "audit.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert document["sections"]["model"]["data"]["parity"]["passed"] is True


def test_a_classifiers_audit_shows_the_output_check_in_the_model_card_and_the_json(data):
    import json

    import jsonschema

    from xai_plugins.report.render import render_html

    X, y = data
    model = CLASSIFIERS["lgbm-binary"](X[:300], y[:300])
    result = _small_audit(model, X, y > 0)
    card = result.sections["model"].data["card"]["parity on its output"]
    assert card.startswith("passed: the model's probabilities against the logistic link")
    assert "parity on its output" in render_html(result)
    document = json.loads(result.to_json())
    schema = json.loads((Path(xp.__file__).parent / "report" / "audit.schema.json").read_text())
    jsonschema.validate(document, schema)
    parity = document["sections"]["model"]["data"]["parity"]
    assert parity["output_failed_rows"] == 0 and parity["output_tolerance"] > parity["tolerance"]


def test_a_model_whose_trees_are_misread_is_refused_or_labelled_unverified(data, monkeypatch, tmp_path, capsys):
    from xai_plugins.errors import ParityError
    from xai_plugins.report.render import render_html

    X, y = data
    model = MODELS["rf"](X[:300], y[:300])
    library = registry.importer_for(model)
    xp.clear_model_cache()
    monkeypatch.setattr(library, "to_forest", _misreading(library, lambda f: int(np.flatnonzero(f.left_child >= 0)[0])))
    with pytest.raises(ParityError, match="refusing to explain the model.*--unverified"):
        _small_audit(model, X, y)
    result = _small_audit(model, X, y, unverified=True)
    xp.clear_model_cache()
    assert result.sections["model"].status == "warn" and "UNVERIFIED" in result.sections["model"].reason
    assert result.sections["model"].data["parity"]["passed"] is False
    html = render_html(result)
    assert "class=\"problems unverified\"" in html and "Every\n  number in this report is unverified" in html
