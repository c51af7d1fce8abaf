"""MLflow evaluator plugin ``xai_audit``: the explanation audit inside ``mlflow.models.evaluate``.

::

    result = mlflow.models.evaluate(model_uri, data, targets="y", model_type="regressor",
                                    evaluators=["xai_audit"],
                                    evaluator_config={"xai_audit": {"X_train": X_train, "y_train": y_train}})
    mlflow.validate_evaluation_results({"xai_audit_model_fitness": MetricThreshold(threshold=1,
                                        greater_is_better=False)}, result)

Registered under the entry point group ``mlflow.model_evaluator`` (``pip install 'xai_plugins[mlflow]'``).
It audits the tree ensemble behind the MLflow model (flavours ``sklearn``, ``xgboost``, ``lightgbm``; the
pyfunc's ``get_raw_model()``, as MLflow's own SHAP evaluator does) on the evaluation data and logs, under
the run's ``xai_audit/`` artifact folder, ``audit.html``, ``audit.pdf``, ``audit.json`` and
``audit.manifest.json`` (see :mod:`xai_plugins.report.manifest`). Anything else (a pipeline, a served
model, predictions without a model, a model of another flavour) is refused with the reason.

``evaluator_config`` (MLflow wants it nested, ``{"xai_audit": {...}}``, when ``evaluators`` is a list) takes
any field of :class:`~xai_plugins.report.options.AuditOptions` (``max_rows``,
``thresholds``, ``protected``, ...) and ``X_train`` / ``y_train`` (training data: noise scale, predictive
adequacy, AcME, MCR), ``n_jobs``, ``pdf`` (default True) and ``baseline_model``. The metrics, all numbers, so that
``MetricThreshold`` can gate on them (:func:`audit_metrics`):

- ``xai_audit_model_fitness``, ``xai_audit_explanation_reliability`` and ``xai_audit_verdict`` (the worst
  of the two): 0 pass, 1 warn, 2 fail, lower is better (``greater_is_better=False``); absent when no verdict
  was computed, so a threshold on them then fails as a missing metric;
- per assessed criterion (``xai_audit_faithfulness_of_shap``, ``xai_audit_agreement_between_explainers``,
  ...): its measured value, ``..._ci_low`` / ``..._ci_high`` (the bootstrap interval) and ``..._status``;
- ``xai_audit_test_<score>``: the test performance (``xai_audit_test_r2``, ``xai_audit_test_accuracy``, ...);
- ``xai_audit_failed_sections``: sections and methods that failed to compute (``xai-audit --strict``);
- ``xai_audit_promotion`` (0 pass, 1 warn, 2 fail) when ``evaluator_config`` names a ``baseline_model`` (a model
  URI, a loaded pyfunc model or the fitted model): the baseline is then the audited model (the champion) and the
  evaluated model its challenger (:mod:`xai_plugins.report.sections.comparison`). MLflow 3's ``evaluate`` has no
  ``baseline_model`` argument of its own any more, so it is taken here.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tempfile
from pathlib import Path

import pandas as pd

from ._extras import needs
from .errors import InputError, UnsupportedModelError, XaiError

__all__: list[str] = []      # internal module: the public names are in the API reference

with needs("mlflow", "the MLflow evaluator xai_audit"):
    from mlflow.models.evaluation.artifacts import JsonEvaluationArtifact, TextEvaluationArtifact
    from mlflow.models.evaluation.base import EvaluationArtifact, EvaluationResult, ModelEvaluator

#: the entry point name, as ``evaluators=["xai_audit"]`` names it; also the artifact folder and metric prefix
NAME = "xai_audit"
#: MLflow flavours whose pyfunc model hands out the tree ensemble (``get_raw_model``)
FLAVOURS = ("mlflow.sklearn", "mlflow.xgboost", "mlflow.lightgbm")
#: MLflow model types the audit applies to, and the task each one means
MODEL_TYPES = {"regressor": "regression", "classifier": "classification"}
#: evaluator_config keys that are not AuditOptions fields
EXTRA_KEYS = ("X_train", "y_train", "n_jobs", "pdf", "baseline_model")


class BinaryEvaluationArtifact(EvaluationArtifact):
    """An evaluation artifact whose content is the file's bytes (the PDF, the manifest)."""

    def _save(self, output_artifact_path):
        Path(output_artifact_path).write_bytes(self._content)

    def _load_content_from_file(self, local_artifact_path):
        return Path(local_artifact_path).read_bytes()


class XaiAuditEvaluator(ModelEvaluator):
    """The ``xai_audit`` evaluator: an :func:`xai_plugins.report.audit` of the evaluated tree model, logged
    to the MLflow run as artifacts and metrics (see the module's documentation)."""

    @classmethod
    def can_evaluate(cls, *, model_type, evaluator_config, **kwargs) -> bool:
        """Whether the model type is one the audit applies to ("regressor" or "classifier")."""
        return model_type in MODEL_TYPES

    def evaluate(self, *, model_type, dataset, run_id, evaluator_config, model=None, **kwargs) -> EvaluationResult:
        """Audit ``model`` on ``dataset`` (features and targets), log the reports and the metrics to the
        run ``run_id`` and return them. Raises an :class:`~xai_plugins.errors.XaiError` naming what cannot
        be audited or which ``evaluator_config`` key is wrong."""
        from mlflow.tracking import MlflowClient

        from .report import audit

        options, extra = split_config(evaluator_config)
        raw = raw_model(model)
        _check_model_type(raw, model_type)
        if not dataset.has_targets:
            raise InputError("the xai_audit evaluator needs the targets: pass targets= to mlflow.models.evaluate")
        X = dataset.features_data
        defaults = {"title": f"Explanation audit of MLflow run {run_id}", "run_id": run_id,
                    "provenance": {"MLflow run": run_id, "MLflow dataset": f"{dataset.name} (digest {dataset.hash})"}}
        options = {**defaults, **options}
        champion, challenger = raw, None
        if extra.get("baseline_model") is not None:      # the baseline is the champion, the model challenges it
            champion, challenger = baseline_model(extra["baseline_model"]), raw
            _check_model_type(champion, model_type)
        result = audit(champion, X, pd.Series(dataset.labels_data, index=getattr(X, "index", None)),
                       X_train=extra.get("X_train"), y_train=extra.get("y_train"), n_jobs=extra.get("n_jobs"),
                       challenger=challenger, **options)
        metrics = audit_metrics(result)
        client = MlflowClient()
        artifacts = _log_reports(client, run_id, result, extra.get("pdf", True))
        _log_metrics(client, run_id, metrics)
        return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)


def split_config(config) -> tuple[dict, dict]:
    """``evaluator_config`` as (AuditOptions fields, :data:`EXTRA_KEYS`); :class:`InputError` naming any
    other key."""
    from .report.options import AuditOptions

    config = dict(config or {})
    fields = {f.name for f in dataclasses.fields(AuditOptions)} - {"command_line", "provenance"}
    unknown = sorted(set(config) - fields - set(EXTRA_KEYS))
    if unknown:
        raise InputError(f"unknown xai_audit evaluator_config key(s) {unknown}; the keys are the AuditOptions "
                         f"fields {sorted(fields)} and {list(EXTRA_KEYS)}")
    return ({k: v for k, v in config.items() if k in fields}, {k: v for k, v in config.items() if k in EXTRA_KEYS})


def raw_model(model):
    """The tree ensemble behind an MLflow pyfunc ``model`` (flavours :data:`FLAVOURS`), checked by the
    importer; :class:`UnsupportedModelError` (or :class:`InputError` for a missing model) saying why
    anything else cannot be audited."""
    from .forest import import_model

    if model is None:
        raise InputError("the xai_audit evaluator audits a model: pass the model to mlflow.models.evaluate, not "
                         "only its predictions")
    if hasattr(model, "pid"):       # mlflow.pyfunc._ServedPyFuncModel: the model runs in another process
        raise UnsupportedModelError("the xai_audit evaluator needs the model in this process: evaluate with "
                                    "env_manager='local'")
    flavours = getattr(getattr(model, "metadata", None), "flavors", None) or {}
    loader = flavours.get("python_function", {}).get("loader_module")
    if loader not in FLAVOURS:
        raise UnsupportedModelError(f"the xai_audit evaluator audits tree ensembles logged with {', '.join(FLAVOURS)}; "
                                    f"this model's flavour is {loader or 'not an MLflow flavour'} (a python function "
                                    "model hides its trees)")
    raw = model.get_raw_model()
    try:
        import_model(raw)
    except XaiError as exc:
        raise UnsupportedModelError(f"the {loader} model ({type(raw).__name__}) cannot be audited: {exc}") from exc
    return raw


def baseline_model(model):
    """The tree ensemble of the ``baseline_model`` of ``evaluator_config``: a model URI (``"runs:/<id>/model"``,
    ``"models:/name/1"``...), a loaded MLflow pyfunc model, or the fitted model itself."""
    import mlflow.pyfunc

    if isinstance(model, str):
        model = mlflow.pyfunc.load_model(model)
    return raw_model(model) if hasattr(model, "metadata") else model


def _check_model_type(raw, model_type) -> None:
    """:class:`InputError` when ``model_type`` names another task than the model's."""
    from .forest import import_model

    task = import_model(raw).task
    if MODEL_TYPES[model_type] != task:
        raise InputError(f"model_type={model_type!r} but the model is a {task} model: pass model_type="
                         f"{next(k for k, v in MODEL_TYPES.items() if v == task)!r}")


def _key(*parts) -> str:
    """A metric name: ``xai_audit_`` and the parts in lower-case ASCII, words joined by underscores."""
    text = " ".join(map(str, parts)).lower().replace("σ", "sigma").replace("²", "2").replace("τ", "tau")
    return f"{NAME}_" + re.sub(r"[^a-z0-9]+", "_", text).strip("_")


def audit_metrics(result) -> dict:
    """The numeric metrics of an :class:`~xai_plugins.report.audit.Audit` (see the module's list), by name;
    non-finite values are left out."""
    from .report.verdict import NOT_ASSESSED, severity

    metrics = {_key("failed sections"): float(sum(p["status"] == "failed" for p in result.problems))}
    if result.verdict is not None:
        for judgement in result.verdict.judgements:
            metrics[_key(judgement.name)] = float(severity(judgement.status))
        metrics[_key("verdict")] = max(metrics[_key(j.name)] for j in result.verdict.judgements)
        if result.promotion is not None:
            metrics[_key(result.promotion.name)] = float(severity(result.promotion.status))
        for criterion in result.verdict.criteria:
            if criterion.status == NOT_ASSESSED:
                continue
            metrics[_key(criterion.name, "status")] = float(severity(criterion.status))
            ci = criterion.ci
            for suffix, value in (("", criterion.value), ("ci low", None if ci is None else ci.low),
                                  ("ci high", None if ci is None else ci.high)):
                if value is not None and math.isfinite(value):
                    metrics[_key(criterion.name, suffix)] = float(value)
    performance = result.sections["model"].data.get("performance") if "model" in result.sections else None
    if isinstance(performance, pd.DataFrame) and "test" in performance:
        for name, value in performance["test"].items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                metrics[_key("test", name)] = float(value)
    return metrics


def _log_reports(client, run_id: str, result, pdf: bool) -> dict:
    """Write the HTML, JSON, (``pdf``) PDF and manifest to a temporary folder, log them under the run's
    ``xai_audit/`` artifacts and return them as evaluation artifacts."""
    from .report.manifest import content_hashes, write_manifest

    root = client.get_run(run_id).info.artifact_uri.rstrip("/") + f"/{NAME}"
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        html = result.to_html(out / "audit.html")
        artifacts = {f"{NAME}_html": TextEvaluationArtifact(f"{root}/audit.html", html),
                     f"{NAME}_json": JsonEvaluationArtifact(f"{root}/audit.json", result.to_dict())}
        result.to_json(out / "audit.json")
        reports = [out / "audit.html", out / "audit.json"]
        if pdf:
            pdf_bytes = result.to_pdf(out / "audit.pdf", html=html)
            artifacts[f"{NAME}_pdf"] = BinaryEvaluationArtifact(f"{root}/audit.pdf", pdf_bytes)
            reports.append(out / "audit.pdf")
        manifest = write_manifest(out / "audit.manifest.json", (), reports, content_hashes(result))
        artifacts[f"{NAME}_manifest"] = BinaryEvaluationArtifact(f"{root}/{manifest.name}", manifest.read_bytes())
        client.log_artifacts(run_id, folder, artifact_path=NAME)
    return artifacts


def _log_metrics(client, run_id: str, metrics: dict) -> None:
    """Log ``metrics`` to the run, at step 0."""
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()])
