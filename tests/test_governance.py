"""Governance block (model card, approval, run facts) and the verdict section inside an audit: card
loading and its errors, the fields in the HTML, the verdict on the first PDF page, Audit.verdict in
the JSON, criteria that could not be assessed."""

import io
import json
import warnings

import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.errors import InputError, InputTypeError, XaiWarning
from xai_plugins.report import audit
from xai_plugins.report.sections.governance import APPROVAL_FIELDS, CARD_FIELDS, MISSING, load_model_card, run_facts

CARD = {"Name": "Diabetes progression RF", "version": "2.1", "OWNER": "Risk analytics",
        "intended-use": "rank patients for a follow-up call", "out of scope uses": ["diagnosis", "pricing"],
        "data_provenance": "scikit-learn diabetes data, 442 patients", "risk tier": "<i>medium</i>",
        "approver": {"name": "J. Doe", "role": "Chief risk officer", "signature": "forged"}}


# ---------------------------------------------------------------- loading a card
@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_card_from_file_normalises_keys_and_keeps_extra_fields(tmp_path, suffix):
    import yaml

    path = tmp_path / f"card{suffix}"
    path.write_text(json.dumps(CARD) if suffix == ".json" else yaml.safe_dump(CARD), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", XaiWarning)          # a complete card warns about nothing
        card = load_model_card(path)
    assert card.fields == {"Model name": "Diabetes progression RF", "Version": "2.1", "Owner": "Risk analytics",
                           "Intended use": "rank patients for a follow-up call",
                           "Out-of-scope uses": ["diagnosis", "pricing"],
                           "Data provenance": "scikit-learn diabetes data, 442 patients"}
    assert card.extra == {"risk tier": "<i>medium</i>", "approver: signature": "forged"}
    assert card.approver == {"Approver name": "J. Doe", "Approver role": "Chief risk officer",
                             "Decision": "", "Conditions": "",
                             "Date of approval": "", "Signature": ""}          # never pre-signed nor pre-decided
    assert card.missing == [] and card.source == path.name and card.given


def test_missing_required_fields_are_warned_about_and_listed():
    with pytest.warns(XaiWarning, match="lacks Owner, Out-of-scope uses, Data provenance"):
        card = load_model_card({"name": "m", "version": 1, "intended use": "x", "owner": ""})
    assert card.missing == ["Owner", "Out-of-scope uses", "Data provenance"]
    assert card.fields["Owner"] is None and card.fields["Version"] == 1


def test_no_card_is_empty_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        card = load_model_card(None)
    assert not card.given and card.missing == list(CARD_FIELDS.values())
    assert card.approver == dict.fromkeys(APPROVAL_FIELDS, "")


@pytest.mark.parametrize("name, text, match", [
    ("card.yaml", "name: [unclosed", "not valid YAML"),
    ("card.yml", "- name: a\n- version: 1\n", "must be a mapping"),
    ("card.json", "{\"name\": ", "not valid JSON"),
    ("card.json", "null", "must be a mapping"),
    ("card.txt", "name: a", "use a .json, .yaml or .yml file"),
])
def test_invalid_card_files_raise_input_error(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        load_model_card(path)


def test_missing_file_and_wrong_type():
    with pytest.raises(InputError, match="does not exist"):
        load_model_card("/nonexistent/card.yaml")
    with pytest.raises(InputTypeError, match="path to a JSON/YAML file or a dict"):
        load_model_card(42)


def test_run_facts_say_how_the_report_was_produced():
    facts = run_facts(command_line="xai-audit --model m.json", created="2026-01-01 00:00 UTC", run_id=None,
                      hashes={"model (sha256)": "ab"})
    assert facts == {"Produced by": "xai-audit --model m.json", "Date (UTC)": "2026-01-01 00:00 UTC",
                     "Run id": "not given", "model (sha256)": "ab"}
    assert run_facts(command_line=None, created="d", run_id="r1", hashes={})["Produced by"].startswith("Python API")


# ---------------------------------------------------------------- inside an audit
@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X_train, y_train, X_test, y_test = X.iloc[:300], y.iloc[:300], X.iloc[300:], y.iloc[300:]
    model = RandomForestRegressor(n_estimators=15, max_depth=4, bootstrap=False, random_state=0).fit(X_train, y_train)
    return model, X_test, y_test, X_train, y_train


SMALL = dict(max_rows=10, max_shap_rows=40, mcr_permutations=2, explainers=("shap", "pg2", "local_mdi", "mcr"),
             progress=False)


@pytest.fixture(scope="module")
def governed(diabetes):
    model, X_test, y_test, X_train, y_train = diabetes
    return audit(model, X_test, y_test, X_train=X_train, y_train=y_train, model_card=CARD, run_id="run-2026-042",
                 title="Governed audit", protected=("sex",), **SMALL)


def test_governance_fields_and_blank_approval_in_the_html(governed):
    html = governed.to_html()
    for value in ("Diabetes progression RF", "2.1", "Risk analytics", "rank patients for a follow-up call",
                  "diagnosis, pricing", "scikit-learn diabetes data, 442 patients", "risk tier", "&lt;i&gt;medium",
                  "run-2026-042", "Python API", "J. Doe", "Chief risk officer"):
        assert value in html, value
    assert "<i>medium" not in html                                                   # card text is escaped
    assert "forged" not in html.split("Approver role")[1].split("</table>")[0]       # the signature stays blank
    blanks = html.count('<td class="sign"></td>') + html.count('<td class="sign conditions"></td>')
    assert blanks == 8            # decision, conditions, date and signature, on page 1 and in the section
    repro = governed.sections["reproducibility"].data["hashes"]
    run = governed.sections["governance"].data["run"]
    assert all(run[label] == value for label, value in repro.items())        # the appendix's hashes, reused


def test_verdict_is_on_the_first_pdf_page_and_in_the_json(governed):
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(governed.to_pdf()))
    first = " ".join(reader.pages[0].extract_text().split())
    assert f"Model fitness: {governed.verdict.model_fitness.status.upper()}" in first
    assert f"Explanation reliability: {governed.verdict.explanation_reliability.status.upper()}" in first
    assert "Diabetes progression RF" in first and "Signature" in first
    data = json.loads(governed.to_json())
    for key, judgement in zip(("model fitness", "explanation reliability"), governed.verdict.judgements):
        assert data["verdict"][key]["status"] == judgement.status in ("pass", "warn", "fail")
    kinds = {c["kind"] for c in data["verdict"]["criteria"]}
    assert kinds == {"predictive adequacy", "drift", "faithfulness", "agreement", "stability",
                     "Rashomon sensitivity", "fairness"}            # a regressor: no calibration
    names = [c["name"] for c in data["verdict"]["criteria"]]
    assert "Faithfulness of SHAP" in names and not any("greedy" in n for n in names)   # greedy is no contestant
    assert data["sections"]["governance"]["data"]["card fields"]["Owner"] == "Risk analytics"


def test_verdict_criteria_follow_the_sections(governed, diabetes):
    by_kind = {c.kind: c for c in governed.verdict.criteria}
    model, X_test, y_test, X_train, y_train = diabetes
    # predictive adequacy from the model's own predictions (sklearn's R² as the oracle)
    train, test = model.score(X_train, y_train), model.score(X_test, y_test)
    assert by_kind["predictive adequacy"].value == pytest.approx((train - test) / train, rel=1e-9)
    # faithfulness of SHAP from the faithfulness section's per-row PGI² at the reference σ
    faith = governed.sections["faithfulness"].result.pgi2[0.3]
    expected = (faith["shap"].mean() - faith["random"].mean()) / (faith["greedy"].mean() - faith["random"].mean())
    shap_crit = next(c for c in governed.verdict.criteria if c.name == "Faithfulness of SHAP")
    assert shap_crit.value == pytest.approx(expected, rel=1e-12) and shap_crit.ci.rows == 10
    assert shap_crit.value in shap_crit.ci


def test_skipped_sections_are_not_assessed_and_never_pass(diabetes):
    model, X_test, y_test, X_train, y_train = diabetes
    cheap = {**SMALL, "explainers": ("shap", "pg2")}
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sections=("explanations",), **cheap)
    status = {c.kind: c.status for c in a.verdict.criteria}
    assert status["faithfulness"] == status["stability"] == status["agreement"] == "not assessed"
    assert status["Rashomon sensitivity"] == "not assessed"
    assert a.verdict.explanation_reliability.status in ("warn", "fail")
    assert "not assessed" in a.verdict.explanation_reliability.headline
    assert "Not assessed: the faithfulness section was not computed" in a.to_html()
    again = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sections=("explanations",), **cheap)
    assert again.verdict.to_dict() == a.verdict.to_dict()          # every interval from its own seeded stream


def test_no_model_card_says_how_to_give_one(diabetes):
    model, X_test, y_test, X_train, y_train = diabetes
    a = audit(model, X_test, y_test, sections=("explanations",), **{**SMALL, "explainers": ("shap",)})
    gov = a.sections["governance"]
    assert gov.status == "ok" and gov.data["card fields"]["Owner"] == MISSING
    html = a.to_html()
    assert "model_card=" in html and "Fairness was not judged: no protected attribute was named" in html
    kinds = {c.kind: c.status for c in a.verdict.criteria}
    assert kinds["predictive adequacy"] == "not assessed"          # no training data to compare with
    assert "fairness" not in kinds                                 # judged only when protected attributes are named


def test_invalid_card_fails_before_any_work(diabetes, tmp_path, monkeypatch):
    from xai_plugins.report import sections

    model, X_test, y_test, *_ = diabetes
    bad = tmp_path / "card.yaml"
    bad.write_text("- not\n- a mapping\n", encoding="utf-8")
    monkeypatch.setattr(sections, "build_all", lambda *a, **k: pytest.fail("the audit started computing"))
    with pytest.raises(InputError, match="must be a mapping"):
        audit(model, X_test, y_test, model_card=bad, **SMALL)


# ---------------------------------------------------------------- from the command line
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory, diabetes):
    import yaml

    model, X_test, y_test, X_train, y_train = diabetes
    xgboost = pytest.importorskip("xgboost")
    root = tmp_path_factory.mktemp("governance_cli")
    X_test.assign(y=y_test).to_csv(root / "test.csv", index=False)
    X_train.assign(y=y_train).to_csv(root / "train.csv", index=False)
    xgboost.XGBRegressor(n_estimators=8, max_depth=3).fit(X_train, y_train).save_model(root / "model.json")
    (root / "card.yaml").write_text(yaml.safe_dump(CARD), encoding="utf-8")
    (root / "bad.yaml").write_text("name: [unclosed", encoding="utf-8")
    return root


def test_cli_model_card_and_command_line_on_the_report(cli_files, tmp_path):
    from xai_plugins.cli import main

    argv = ["--model", str(cli_files / "model.json"), "--data", str(cli_files / "test.csv"), "--target", "y",
            "--train", str(cli_files / "train.csv"), "--model-card", str(cli_files / "card.yaml"), "--run-id",
            "R-7", "--explainers", "shap", "pg2", "--max-rows", "8", "--sections", "faithfulness", "--no-pdf",
            "--quiet", "--out", str(tmp_path)]
    assert main(argv) == 0
    data = json.loads((tmp_path / "model.json").read_text(encoding="utf-8"))
    run = data["sections"]["governance"]["data"]["run"]
    assert run["Produced by"].startswith("xai-audit --model") and "--model-card" in run["Produced by"]
    assert run["Run id"] == "R-7"
    assert {data["verdict"][k]["status"] for k in ("model fitness", "explanation reliability")} <= {"pass", "warn",
                                                                                                       "fail"}
    html = (tmp_path / "model.html").read_text(encoding="utf-8")
    assert "Risk analytics" in html and "--protected COL" in html          # the CLI flag, not the Python argument


def test_cli_rejects_an_invalid_card(cli_files, tmp_path, capsys):
    from xai_plugins.cli import main

    status = main(["--model", str(cli_files / "model.json"), "--data", str(cli_files / "absent.csv"), "--target", "y",
                   "--model-card", str(cli_files / "bad.yaml"), "--quiet", "--out", str(tmp_path)])
    assert status == 2 and "not valid YAML" in capsys.readouterr().err       # refused before the data is read
    assert not list(tmp_path.iterdir())                              # nothing written
