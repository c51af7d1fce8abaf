"""The MLflow evaluator ``xai_audit`` against a real local tracking store (a temporary ``file:`` folder):
the reports logged as run artifacts, the verdicts and key figures as metrics, a ``MetricThreshold`` on a
verdict gating as it should, and clear refusals of what cannot be audited."""

import hashlib
import importlib.metadata
import json

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from xai_plugins.errors import InputError, UnsupportedModelError

mlflow = pytest.importorskip("mlflow")
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.models import MetricThreshold  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

#: a small, fast audit; no MCR, so Rashomon sensitivity is not assessed and the explanation-reliability
#: verdict cannot pass; skill loss allowed up to 50 and a PSI up to 1 (80 test rows: two samples of one
#: distribution give PSI ~0.15 here, and an unconfirmed PSI above drift_fail warns), so the model-fitness one passes
CONFIG = {"explainers": ["shap", "pg2", "local_mdi"], "sections": ["explanations", "faithfulness", "agreement"],
          "max_rows": 8, "max_shap_rows": 40,
          "thresholds": {"adequacy_warn": 50, "adequacy_fail": 100, "drift_fail": 1.0}, "progress": False}
STATUS = {"pass": 0, "warn": 1, "fail": 2}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A file tracking store in a temporary folder (MLflow 3 wants MLFLOW_ALLOW_FILE_STORE for it; a sqlite
    store would need SQLAlchemy, which mlflow-skinny leaves out)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri((tmp_path_factory.mktemp("store") / "mlruns").as_uri())     # created by MLflow
        yield
        mlflow.set_tracking_uri(previous)


@pytest.fixture(scope="module")
def diabetes_split():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    rows = np.random.default_rng(0).permutation(len(X))         # a random split: the file is not in random order
    X, y = X.iloc[rows, :5], y.iloc[rows]
    return X.iloc[:250], y.iloc[:250], X.iloc[250:330], y.iloc[250:330]


def _log(model, X):
    with mlflow.start_run():
        # cloudpickle: MLflow 3's default (skops) needs the skops package, which mlflow-skinny leaves out
        return mlflow.sklearn.log_model(model, name="model", input_example=X.iloc[:2],
                                        serialization_format="cloudpickle").model_uri


@pytest.fixture(scope="module")
def evaluated(store, diabetes_split):
    X_train, y_train, X_test, y_test = diabetes_split
    model = RandomForestRegressor(n_estimators=8, max_depth=3, bootstrap=False, random_state=0).fit(X_train, y_train)
    uri = _log(model, X_train)
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(uri, X_test.assign(y=y_test), targets="y", model_type="regressor",
                                        evaluators=["xai_audit"],
                                        evaluator_config={"xai_audit": {**CONFIG, "X_train": X_train,
                                                                        "y_train": y_train}})
    return model, result, run.info.run_id


def _sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_the_entry_point_names_the_evaluator():
    from xai_plugins.mlflow_evaluator import XaiAuditEvaluator

    points = {e.name: e for e in importlib.metadata.entry_points(group="mlflow.model_evaluator")}
    assert "xai_audit" in points, "reinstall the package (pip install -e .) to register the entry point"
    assert points["xai_audit"].load() is XaiAuditEvaluator


def test_evaluate_logs_the_three_reports_and_the_manifest(evaluated, tmp_path):
    _, result, run_id = evaluated
    client = MlflowClient()
    names = sorted(f.path for f in client.list_artifacts(run_id, "xai_audit"))
    assert names == ["xai_audit/audit.html", "xai_audit/audit.json", "xai_audit/audit.manifest.json",
                     "xai_audit/audit.pdf"]
    folder = client.download_artifacts(run_id, "xai_audit", str(tmp_path))
    html = open(f"{folder}/audit.html", encoding="utf-8").read()
    assert html.startswith("<!DOCTYPE html>") and "Model fitness" in html
    assert open(f"{folder}/audit.pdf", "rb").read(5) == b"%PDF-"
    saved = json.load(open(f"{folder}/audit.json", encoding="utf-8"))
    assert saved["title"] == f"Explanation audit of MLflow run {run_id}"
    manifest = json.load(open(f"{folder}/audit.manifest.json", encoding="utf-8"))
    assert {e["path"]: e["sha256"] for e in manifest["outputs"]} == {
        name: _sha256(f"{folder}/{name}") for name in ("audit.html", "audit.json", "audit.pdf")}
    assert set(result.artifacts) == {"xai_audit_html", "xai_audit_json", "xai_audit_pdf", "xai_audit_manifest"}


def test_metrics_are_logged_and_match_the_audit(evaluated, diabetes_split, tmp_path):
    model, result, run_id = evaluated
    _, _, X_test, y_test = diabetes_split
    logged = MlflowClient().get_run(run_id).data.metrics
    assert logged == pytest.approx(result.metrics)
    folder = MlflowClient().download_artifacts(run_id, "xai_audit", str(tmp_path))
    verdict = json.load(open(f"{folder}/audit.json", encoding="utf-8"))["verdict"]
    fitness, reliability = (STATUS[verdict[k]["status"]] for k in ("model fitness", "explanation reliability"))
    assert (logged["xai_audit_model_fitness"], logged["xai_audit_explanation_reliability"]) == (fitness, reliability)
    assert logged["xai_audit_verdict"] == max(fitness, reliability)
    assert logged["xai_audit_test_r2"] == pytest.approx(r2_score(y_test, model.predict(X_test)), rel=1e-12)
    criteria = {c["name"]: c for c in verdict["criteria"]}
    for method in ("SHAP", "local MDI"):
        key = f"xai_audit_faithfulness_of_{method.lower().replace(' ', '_')}"
        assert logged[key] == pytest.approx(criteria[f"Faithfulness of {method}"]["value"])
        assert logged[f"{key}_ci_low"] == pytest.approx(criteria[f"Faithfulness of {method}"]["ci"]["low"])
        assert logged[f"{key}_status"] == STATUS[criteria[f"Faithfulness of {method}"]["status"]]
    assert logged["xai_audit_agreement_between_explainers"] == pytest.approx(
        criteria["Agreement between explainers"]["value"])
    assert "xai_audit_rashomon_sensitivity" not in logged              # not assessed: no number
    assert logged["xai_audit_failed_sections"] == 0
    assert all(isinstance(v, float) and np.isfinite(v) for v in logged.values())


def test_metric_threshold_gates_on_a_verdict(evaluated):
    _, result, _ = evaluated
    assert result.metrics["xai_audit_model_fitness"] == 0 and result.metrics["xai_audit_explanation_reliability"] >= 1
    mlflow.validate_evaluation_results(
        {"xai_audit_model_fitness": MetricThreshold(threshold=0, greater_is_better=False),
         "xai_audit_verdict": MetricThreshold(threshold=2, greater_is_better=False)}, result)
    with pytest.raises(MlflowException, match="xai_audit_explanation_reliability"):
        mlflow.validate_evaluation_results(
            {"xai_audit_explanation_reliability": MetricThreshold(threshold=0, greater_is_better=False)}, result)
    with pytest.raises(MlflowException, match="xai_audit_verdict"):
        mlflow.validate_evaluation_results(
            {"xai_audit_verdict": MetricThreshold(threshold=0, greater_is_better=False)}, result)


def test_a_pipeline_is_audited_in_its_input_columns(store, diabetes_split, tmp_path):
    X_train, y_train, X_test, y_test = diabetes_split
    pipeline = make_pipeline(StandardScaler(), RandomForestRegressor(n_estimators=4, max_depth=2, bootstrap=False,
                                                                     random_state=0)).fit(X_train, y_train)
    result = _evaluate(_log(pipeline, X_train), X_test, y_test, X_train=X_train, y_train=y_train)
    assert result.metrics["xai_audit_test_r2"] == pytest.approx(r2_score(y_test, pipeline.predict(X_test)), rel=1e-12)
    folder = MlflowClient().download_artifacts(mlflow.last_active_run().info.run_id, "xai_audit", str(tmp_path))
    saved = json.load(open(f"{folder}/audit.json", encoding="utf-8"))
    text = json.dumps(saved["sections"])
    assert "Pipeline(sklearn.RandomForestRegressor)" in text and all(f'"{name}"' in text for name in X_test.columns)
    assert "Faithfulness of SHAP" in json.dumps(saved["verdict"])


def _evaluate(uri, X, y, **config):
    with mlflow.start_run():
        return mlflow.models.evaluate(uri, X.assign(y=y), targets="y", model_type=config.pop("model_type", "regressor"),
                                      evaluators="xai_audit", evaluator_config={**CONFIG, **config})


def test_refusals_name_what_cannot_be_audited(store, diabetes_split):
    X_train, y_train, X_test, y_test = diabetes_split
    pipeline = make_pipeline(PCA(2), RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0))
    with pytest.raises(UnsupportedModelError, match=r"Pipeline step 'pca' \(PCA\).*fit the tree model on"):
        _evaluate(_log(pipeline.fit(X_train, y_train), X_train), X_test, y_test)

    class Constant(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return np.zeros(len(model_input))

    with mlflow.start_run():
        uri = mlflow.pyfunc.log_model(name="constant", python_model=Constant(), input_example=X_train.iloc[:2]) \
            .model_uri
    with pytest.raises(UnsupportedModelError, match="flavour is mlflow.pyfunc.model"):
        _evaluate(uri, X_test, y_test)
    forest = _log(RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X_train, y_train), X_train)
    with pytest.raises(InputError, match=r"unknown xai_audit evaluator_config key\(s\) \['max_row'\]"):
        _evaluate(forest, X_test, y_test, max_row=3)
    with pytest.raises(InputError, match="model_type='classifier' but the model is a regression model"):
        _evaluate(forest, X_test, y_test, model_type="classifier")


def test_a_baseline_model_is_the_champion_and_the_evaluated_model_its_challenger(store, diabetes_split):
    """evaluator_config's baseline_model (a model URI): the audit's champion is the baseline, the evaluated model
    its challenger; the promotion verdict is logged as a metric that MetricThreshold gates on."""
    X_train, y_train, X_test, y_test = diabetes_split
    forest = dict(n_estimators=8, bootstrap=False)
    baseline = RandomForestRegressor(max_depth=3, random_state=0, **forest).fit(X_train, y_train)
    candidate = RandomForestRegressor(max_depth=2, random_state=1, **forest).fit(X_train, y_train)
    baseline_uri, candidate_uri = _log(baseline, X_train), _log(candidate, X_train)
    with mlflow.start_run():
        result = mlflow.models.evaluate(candidate_uri, X_test.assign(y=y_test), targets="y", model_type="regressor",
                                        evaluators=["xai_audit"],
                                        evaluator_config={"xai_audit": {**CONFIG, "X_train": X_train,
                                                                        "y_train": y_train, "pdf": False,
                                                                        "baseline_model": baseline_uri}})
    audit_json = result.artifacts["xai_audit_json"].content
    comparison = audit_json["sections"]["comparison"]
    assert comparison["status"] == "ok"
    assert result.metrics["xai_audit_promotion"] == STATUS[comparison["data"]["promotion"]["status"]]
    r2 = {row["quantity"]: row for row in comparison["data"]["deltas"]}["test R²"]
    assert r2["champion"] == pytest.approx(r2_score(y_test, baseline.predict(X_test)))
    assert r2["challenger"] == pytest.approx(r2_score(y_test, candidate.predict(X_test)))
    mlflow.validate_evaluation_results(
        {"xai_audit_promotion": MetricThreshold(threshold=2, greater_is_better=False)}, result)


def test_the_history_reads_the_audits_of_mlflow_runs(evaluated, store, capsys):
    """history over runs:/<run id> URIs: the audit each run's xai_audit evaluation logged, in the order computed."""
    from xai_plugins.cli import main
    from xai_plugins.report import audit_history

    _, result, run_id = evaluated
    found = audit_history([f"runs:/{run_id}", f"runs:/{run_id}/xai_audit/audit.json"])
    assert [a["label"] for a in found.audits] == [f"runs:/{run_id}", f"runs:/{run_id}/xai_audit/audit.json"]
    logged = result.artifacts["xai_audit_json"].content
    verdicts = found.table[(found.table.audit == 1) & (found.table.measure == "verdict")]
    assert dict(zip(verdicts.name, verdicts.status)) == {k: logged["verdict"][k]["status"]
                                                        for k in ("model fitness", "explanation reliability")}
    assert main(["history", f"runs:/{run_id}", f"runs:/{run_id}"]) == 0
    with pytest.raises(InputError, match="runs:/no-such-run"):
        audit_history(["runs:/no-such-run"])
