"""The audit JSON's layout version (:data:`SCHEMA_VERSION`), and audits read back from their JSON (``Audit.to_json``,
``xai-audit``'s ``<stem>.json``) for the audit-to-audit diff (:mod:`.diff`) and the audit history (:mod:`.history`):
each audit loaded once (:func:`load`, with the manifest ``xai-audit`` wrote beside it), their schema versions checked
against each other (:func:`check_versions`), and the measures both compare taken from the keys ``audit.schema.json``
guarantees: the two verdicts, every criterion with its interval, each explainer's global importance as shares, the
test data's per-feature summary and the inputs' hashes.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, SchemaVersionError
from .manifest import SUFFIX

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the version of the audit JSON's layout (``audit.schema.json`` describes it), which ``Audit.to_dict`` writes:
#: "MAJOR.MINOR", the major part changing when a key a reader relies on changes; audits are compared (the diff, the
#: history) only within one version
SCHEMA_VERSION = "1.0"

#: the content hashes of the model and of the (in-memory) test data in the reproducibility appendix, by their key
MODEL_HASH, TEST_HASH = "model (sha256 of the tree arrays)", "test data (sha256)"
#: the two verdicts, by their key in the JSON
VERDICTS = ("model fitness", "explanation reliability")
#: the criteria statuses in order of severity ("not assessed" has none: never better nor worse)
SEVERITY = {"pass": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class Loaded:
    """One audit read back: its JSON ``doc``, a ``label`` naming it (the file's name, else its title),
    its ``path`` (None when given as a dict or an Audit) and the ``manifest`` beside the file ({} when none)."""

    doc: dict
    label: str
    path: Path | None = None
    manifest: dict | None = None

    @property
    def version(self):
        """The schema version the JSON carries (None: written before versions were recorded)."""
        return self.doc.get("schema_version")


def load(source) -> Loaded:
    """Read one audit: an :class:`~.audit.Audit`, its ``to_dict()``, the path of its JSON (with the manifest
    ``<stem>.manifest.json`` beside it, when there is one) or an MLflow run's URI (``runs:/<run id>``: the audit the
    ``xai_audit`` evaluator logged). Raises :class:`~xai_plugins.errors.InputError` for a
    file that is not an audit's JSON."""
    if hasattr(source, "to_dict") and hasattr(source, "sections"):
        doc = source.to_dict()
        return Loaded(doc, str(doc["title"]))
    if isinstance(source, dict):
        return Loaded(source, str(source.get("title", "audit")))
    if str(source).startswith(RUNS):
        return _from_mlflow(str(source))
    path = Path(source)
    doc = _read(path, "the audit JSON")
    if not isinstance(doc, dict) or "sections" not in doc:
        raise InputError(f"{str(path)!r} is not an audit's JSON (no 'sections' key)")
    beside = path.with_name(path.name.removesuffix(".json") + SUFFIX)
    return Loaded(doc, path.name, path, _read(beside, "the manifest") if beside.is_file() else {})


#: the prefix of an MLflow run's URI: ``runs:/<run id>`` reads the audit the ``xai_audit`` evaluator logged there
RUNS = "runs:/"


def _from_mlflow(uri: str) -> Loaded:
    """The audit an MLflow run holds: ``runs:/<run id>`` (the ``xai_audit`` evaluator's ``xai_audit/audit.json``) or
    ``runs:/<run id>/<path of an audit JSON>``, downloaded with its folder (the manifest beside it) from the tracking
    server the environment names."""
    import tempfile

    from .._extras import needs

    with needs("mlflow", "audits read from MLflow runs"):
        import mlflow.artifacts
    run_id, _, inner = uri[len(RUNS):].partition("/")
    folder, _, name = (inner or "xai_audit/audit.json").rpartition("/")
    try:
        local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=folder or None,
                                                    dst_path=tempfile.mkdtemp(prefix="xai-audit-"))
    except Exception as exc:  # noqa: BLE001 - MLflow's errors name the run and the store
        raise InputError(f"cannot read the audit of {uri}: {exc}") from exc
    found = load(Path(local) / name)
    return Loaded(found.doc, uri, found.path, found.manifest)


def _read(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc}") from exc


def check_versions(audits) -> None:
    """Raise :class:`~xai_plugins.errors.SchemaVersionError` unless every audit carries one schema version (that of
    this xai_plugins' audits or another, but the same), naming each audit's."""
    versions = {a.version for a in audits}
    if None in versions or len(versions) > 1:
        said = "; ".join(f"{a.label}: {a.version or 'none'}" for a in audits)
        raise SchemaVersionError(
            f"cannot compare audits of different schema versions ({said}); audits are compared within one version "
            f"(this xai_plugins writes {SCHEMA_VERSION}). An audit without a version was written before versions "
            f"were recorded: compute it again")


def created(doc) -> _dt.datetime | None:
    """When the audit was computed (its ``created``, 'YYYY-MM-DD HH:MM UTC'), None when it reads otherwise."""
    try:
        return _dt.datetime.strptime(str(doc.get("created")), "%Y-%m-%d %H:%M UTC").replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def verdicts(doc) -> dict:
    """{verdict name: status} of the two verdicts (None for both when the audit has none)."""
    verdict = doc.get("verdict") or {}
    return {name: (verdict.get(name) or {}).get("status") for name in VERDICTS}


def criteria(doc) -> dict:
    """{criterion name: {"kind", "status", "value", "low", "high"}} of every criterion of the verdict (the interval's
    bounds None where it has none)."""
    out = {}
    for c in (doc.get("verdict") or {}).get("criteria", []):
        ci = c.get("ci") or {}
        out[c["name"]] = {"kind": c["kind"], "status": c["status"], "value": c.get("value"),
                          "low": ci.get("low"), "high": ci.get("high")}
    return out


def thresholds(doc) -> dict:
    """{threshold name: value} the audit's verdicts used."""
    return {name: t["value"] for name, t in (doc.get("verdict") or {}).get("thresholds", {}).items()}


def reliance(doc) -> dict:
    """{explainer label: {feature: share}}: each computed explainer's global importance as shares of its total
    absolute importance (comparable between audits whose importance scales differ), by feature."""
    out = {}
    for method in doc.get("methods", {}).values():
        importance = method.get("importance")
        if method.get("status") not in ("ok", "warn") or not importance:
            continue
        values = {f: abs(v) for f, v in importance.items() if v is not None and math.isfinite(v)}
        total = sum(values.values())
        out[method["method"]] = {f: (v / total if total > 0 else 0.0) for f, v in values.items()}
    return out


def data_summary(doc) -> tuple:
    """(rows, {feature: summary}): the test data's size and per-feature summary from the data section's tables ((0, {})
    when the section was not computed): a numeric feature's {"mean", "sd", "missing"} ("missing": a share of the rows),
    a categorical feature's {category: share of the test rows}."""
    section = doc.get("sections", {}).get("data") or {}
    rows = (section.get("data") or {}).get("rows") or 0
    out: dict = {}
    for table in section.get("tables", []):
        at = {c: i for i, c in enumerate(table["columns"])}
        if {"feature", "mean", "sd", "missing"} <= set(at):
            out.update((r[at["feature"]], {"mean": r[at["mean"]], "sd": r[at["sd"]],
                                           "missing": (r[at["missing"]] or 0) / rows if rows else None})
                       for r in table["rows"])
        elif {"feature", "category", "test share"} <= set(at):
            for r in table["rows"]:
                out.setdefault(r[at["feature"]], {})[str(r[at["category"]])] = r[at["test share"]]
    return rows, out


def inputs(audit: Loaded) -> dict:
    """{input: SHA-256} of what the audit read: its content hashes (the reproducibility appendix: the model's tree
    arrays, the test and training data's values) and, from the manifest beside its file, each input file's digest
    by role (several files of one role joined)."""
    section = audit.doc.get("sections", {}).get("reproducibility") or {}
    out = dict((section.get("data") or {}).get("hashes", {}))
    files: dict = {}
    for entry in (audit.manifest or {}).get("inputs", []):
        files.setdefault(f"{entry['role']} file (sha256)", []).append(entry["sha256"])
    out.update({role: " ".join(digests) for role, digests in files.items()})
    return out
