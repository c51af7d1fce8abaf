"""The audit's machine- and notebook-readable views: the JSON against its published JSON Schema
(``xai_plugins/report/audit.schema.json``, shipped as package data), and ``Audit._repr_html_``."""

import copy
import fnmatch
import json
import re
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from xai_plugins.report import audit
from xai_plugins.report.audit_json import SCHEMA_VERSION
from xai_plugins.report.section import STATUSES

jsonschema = pytest.importorskip("jsonschema")

EVIL = "<script>alert('x')</script> & <b>"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def schema():
    text = resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def small_audit():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    model = RandomForestClassifier(n_estimators=10, max_depth=3, bootstrap=False, random_state=0)
    model.fit(X.iloc[:300], y.iloc[:300])
    return audit(model, X.iloc[300:400], y.iloc[300:400], X_train=X.iloc[:300], y_train=y.iloc[:300], title=EVIL,
                 explainers=("shap", "pg2", "local_mdi", "mcr"), max_rows=8, max_shap_rows=40, mcr_permutations=2,
                 progress=False)


def _errors(schema, document) -> list:
    return list(jsonschema.Draft202012Validator(schema).iter_errors(document))


def test_schema_is_a_valid_draft_2020_12_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["section"]["properties"]["status"]["enum"] == list(STATUSES)


def test_audit_json_validates(schema, small_audit):
    document = json.loads(small_audit.to_json())
    assert _errors(schema, document) == []
    assert document["verdict"]["model fitness"]["status"] in ("pass", "warn", "fail")


@pytest.mark.parametrize("path, value", [
    (("verdict", "model fitness", "status"), "maybe"),
    (("verdict", "explanation reliability"), None),
    (("verdict", "criteria", 0, "value"), "high"),
    (("verdict", "criteria", 0, "status"), "passed"),
    (("sections", "summary", "status"), "done"),
    (("rows explained",), -1),
    (("created",), "yesterday"),
    (("schema_version",), "0.9"),
    (("methods", "shap", "importance"), [1.0, 2.0]),
])
def test_schema_rejects_a_broken_audit_json(schema, small_audit, path, value):
    document = json.loads(small_audit.to_json())
    broken = copy.deepcopy(document)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _errors(schema, broken) != []


@pytest.mark.parametrize("key", ["verdict", "sections", "methods", "title", "schema_version"])
def test_schema_requires_the_top_level_keys(schema, small_audit, key):
    document = json.loads(small_audit.to_json())
    del document[key]
    assert _errors(schema, document) != []


def test_audit_json_carries_the_schema_version_the_schema_describes(schema, small_audit):
    assert json.loads(small_audit.to_json())["schema_version"] == SCHEMA_VERSION
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    assert re.fullmatch(r"[0-9]+\.[0-9]+", SCHEMA_VERSION)


def test_schema_is_package_data():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")       # (tomllib is Python >= 3.11 only)
    package_data = text.split("[tool.setuptools.package-data]")[1].split("\n[")[0]
    patterns = re.findall(r'"([^"]+)"', re.search(r'^"xai_plugins\.report" = \[(.*)\]$', package_data, re.M)[1])
    assert any(fnmatch.fnmatch("audit.schema.json", p) for p in patterns)


def test_notebook_view_shows_the_verdicts_and_sections_escaped(small_audit):
    a = copy.copy(small_audit)
    a.sections = dict(small_audit.sections)
    a.sections["mcr"] = copy.copy(small_audit.sections["mcr"])
    a.sections["mcr"].reason = EVIL
    view = a._repr_html_()
    assert "<script>" not in view and "&lt;script&gt;" in view and "&lt;b&gt;" in view
    root = ET.fromstring(view)                     # well-formed, and every text is in the elements
    text = "".join(root.itertext())
    assert EVIL in text
    verdict_rows = [["".join(cell.itertext()) for cell in row] for row in root.iter("tr")]
    assert [row[:2] for row in verdict_rows] == [
        ["Model fitness", a.verdict.model_fitness.status.upper()],
        ["Explanation reliability", a.verdict.explanation_reliability.status.upper()]]
    items = ["".join(li.itertext()) for li in root.find("ol")]
    assert items == [f"{s.title}: {s.status}" + (f" ({s.reason})" if s.reason else "")
                                       for s in a.sections.values()]


def test_notebook_view_without_a_verdict(small_audit):
    a = copy.copy(small_audit)
    a.verdict = None
    root = ET.fromstring(a._repr_html_())
    assert "No verdict" in "".join(root.itertext()) and root.find(".//table") is None
