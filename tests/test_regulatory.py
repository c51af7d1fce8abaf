"""The regulatory mapping section: a crosswalk of the audit's evidence to SR 11-7 and the EU AI Act, graded from the
audit itself (evidence not computed is a gap), its JSON block against the published schema, and its HTML."""

import json
import re
from importlib import resources

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from xai_plugins.report import audit
from xai_plugins.report import verdict as vd
from xai_plugins.report.options import AuditOptions
from xai_plugins.report.sections import REGISTRY

jsonschema = pytest.importorskip("jsonschema")

EXPLANATION_ITEMS = ("AI Act Annex IV(2)(b)", "AI Act Annex IV(2)(e)", "AI Act Art. 13(3)(b)(iv)")


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False, random_state=0)
    model.fit(X.iloc[:200], y.iloc[:200])
    return model, X, y


def _audit(data, **kwargs):
    model, X, y = data
    return audit(model, X.iloc[200:260], y.iloc[200:260], X_train=X.iloc[:200], y_train=y.iloc[:200],
                 explainers=("shap", "pg2", "local_mdi", "mcr"), max_rows=6, max_shap_rows=30, mcr_permutations=2,
                 mc_pairs=0, progress=False, **kwargs)


@pytest.fixture(scope="module")
def full(data):
    return _audit(data, sections=("explanations", "faithfulness", "agreement", "mcr", "regulatory"))


@pytest.fixture(scope="module")
def block(full):
    return json.loads(full.to_json())["sections"]["regulatory"]


def _item(block, item_id):
    return next(i for i in block["data"]["items"] if i["id"] == item_id)


def test_block_validates_against_the_schema(full, block):
    schema = json.loads(resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text("utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    assert block["status"] == "ok"
    assert list(validator.iter_errors(json.loads(full.to_json()))) == []
    broken = json.loads(full.to_json())
    broken["sections"]["regulatory"]["data"]["items"][0]["status"] = "compliant"
    assert list(validator.iter_errors(broken)) != []


def test_no_dangling_names(block):
    from xai_plugins.report.sections.regulatory import crosswalk, dangling

    assert dangling() == []
    names = {ref.get("section") or ref.get("criterion") for i in crosswalk()["items"] for ref in i["evidence"]}
    assert names <= set(REGISTRY) | set(vd.VERDICT_OF_KIND)
    for item in block["data"]["items"]:
        for e in item["evidence"]:
            assert (e["key"] in REGISTRY) if e["type"] == "section" else (e["name"] in vd.VERDICT_OF_KIND)


@pytest.mark.parametrize("item_id", EXPLANATION_ITEMS)
def test_explanation_evidence_maps_to_annex_iv_and_article_13(block, item_id):
    item = _item(block, item_id)
    criteria = {e["name"]: e for e in item["evidence"] if e["type"] == "criterion"}
    assert {"faithfulness", "agreement", "Rashomon sensitivity"} <= set(criteria)
    assert all(criteria[kind]["answers"] for kind in ("faithfulness", "agreement", "Rashomon sensitivity"))
    assert {"faithfulness", "agreement", "mcr"} <= {e["key"] for e in item["evidence"] if e["type"] == "section"}
    tags = block["data"]["tags"]
    for section in ("faithfulness", "agreement", "mcr"):
        assert item_id in tags["sections"][section]
    tagged = [name for name, ids in tags["criteria"].items() if item_id in ids]
    assert any(name.startswith("Faithfulness") for name in tagged)
    assert "Agreement between explainers" in tagged and "Rashomon sensitivity" in tagged
    figures = [caption for caption, ids in tags["figures"].items() if item_id in ids]
    assert figures, "the explanation figures carry the item"


def test_evidence_not_computed_is_a_gap(data):
    result = _audit(data, sections=("explanations", "regulatory"))
    items = {i["id"]: i for i in result.sections["regulatory"].data["items"]}
    for item_id in EXPLANATION_ITEMS:
        criteria = {e["name"]: e for e in items[item_id]["evidence"] if e["type"] == "criterion"}
        sections = {e["key"]: e for e in items[item_id]["evidence"] if e["type"] == "section"}
        assert not criteria["faithfulness"]["answers"] and not criteria["agreement"]["answers"]
        assert not sections["faithfulness"]["answers"] and not sections["mcr"]["answers"]
        assert items[item_id]["status"] != "answered"
        assert any(g.startswith("Faithfulness") for g in items[item_id]["gaps"])
    # no protected attributes: the fairness criterion is not in this audit, so Art. 13(3)(b)(v) is a gap
    assert items["AI Act Art. 13(3)(b)(v)"]["status"] == "gap"
    assert items["AI Act Art. 15(2)"]["status"] == "gap"
    tags = result.sections["regulatory"].data["tags"]
    assert tags["sections"]["faithfulness"] == [] and tags["sections"]["mcr"] == []


def test_every_quote_has_text_and_a_citation(block):
    for item in block["data"]["items"]:
        assert item["citation"].strip() and re.match(r"^https?://\S+$", item["url"])
        assert item["outside"].strip()
        if item["quote"] is None:
            assert "not found" in item["quote_note"]
        else:
            assert item["quote"].strip() and len(item["quote"].split()) <= 40
    frameworks = {i["framework"] for i in block["data"]["items"]}
    assert frameworks == {"SR 11-7", "EU AI Act"}
    ids = {i["id"] for i in block["data"]["items"]}
    for point in ("1", "2)(b", "2)(d", "2)(e", "2)(g", "3"):
        assert f"AI Act Annex IV({point})" in ids
    for paragraph in ("1", "2", "3", "4"):
        assert f"AI Act Art. 15({paragraph})" in ids


def test_switched_on_by_sections_or_strict():
    """Listed in ``sections``, or by default with ``strict``; the options then name it, so the appendix and
    the JSON's parameters say it was asked for (they did not when ``strict`` alone switched it on)."""
    assert "regulatory" not in AuditOptions().sections
    assert "regulatory" in AuditOptions(sections=["regulatory"]).sections
    assert "regulatory" in AuditOptions(strict=True).sections
    assert "regulatory" not in AuditOptions(strict=True, sections=["explanations"]).sections   # an explicit choice
    from types import SimpleNamespace

    from xai_plugins.report.sections.regulatory import build

    off = build(None, {}, SimpleNamespace(sections=(), strict=False))
    on = build(None, {}, SimpleNamespace(sections=("regulatory",), strict=False))
    assert off.status == "skipped" and on.status == "ok"
    assert all(i["status"] == "gap" for i in on.data["items"])


def test_html_contains_the_section(full):
    html = full.to_html()
    assert "Regulatory mapping" in html
    assert "to be completed outside this audit" in html
    assert "Annex IV, point 2(b)" in html and "the relevance of the different parameters" in html
