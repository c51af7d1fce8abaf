"""The deployer extract: explainers shown only when their faithfulness passes, every feature's training range,
the accuracy with the interval of the full report, at most two PDF/A pages, and ``xai-audit --deployer-extract``."""

import json
import re
from html import unescape

import joblib
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins.report as report
from xai_plugins.cli import main

pytest.importorskip("weasyprint")
FEATURES = ["bmi", "bp", "s5"]


@pytest.fixture(scope="module")
def data():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X[FEATURES]
    model = RandomForestRegressor(n_estimators=10, max_depth=3, random_state=0).fit(X[:300], y[:300])
    return model, X, y


@pytest.fixture(scope="module")
def tiny(data):
    model, X, y = data
    return report.audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300],
                        sections=["explanations", "faithfulness"], explainers=["pg2", "local_mdi"], max_rows=5,
                        progress=False)


@pytest.fixture(scope="module")
def extract(tiny):
    return tiny.to_deployer_html(report="model.pdf")


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_explainers_are_shown_only_when_their_faithfulness_passes(tiny, extract):
    criteria = {c.name: c.status for c in tiny.verdict.criteria if c.kind == "faithfulness"}
    rows = dict(re.findall(r'<tr class="explainer"><th scope="row">(.*?)</th>\s*<td class="text show">(.*?)</td>',
                           extract))
    labels = [m.label for m in tiny.methods.values() if m.status != "skipped"]
    assert sorted(unescape(k) for k in rows) == sorted(labels) == ["PG² greedy", "local MDI"]
    for label, shown in rows.items():
        status = criteria.get(f"Faithfulness of {unescape(label)}", "not assessed")
        assert shown == ("show" if status == "pass" else "do not show"), (label, status)


def test_every_feature_with_its_training_range(tiny, data, extract):
    _, X, _ = data
    ranges = tiny.sections["data"].data["input ranges"]
    assert tiny.sections["data"].data["input ranges from"] == "training data"
    for name in FEATURES:
        low, high = ranges[name]
        assert (low, high) == (X[name][:300].min(), X[name][:300].max())
        assert re.search(rf'<th scope="row" class="range">{name}</th><td>{report.render.fmt(low)}</td>'
                         rf'<td>{report.render.fmt(high)}</td>', extract)


def test_the_accuracy_carries_the_interval_of_the_full_report(tiny, extract):
    score = tiny.sections["verdict"].data["test score"]["text"]
    assert score.startswith("R² ") and "95% CI [" in score
    assert score in _text(tiny.to_html())
    line = _text(re.search(r'<p class="accuracy">.*?</p>', extract, re.S).group(0))
    assert score in line and "142 test rows" in line
    text = _text(extract)
    assert "model.pdf" in text and tiny.created in text and all(j.headline in text for j in tiny.verdict.judgements)


def test_the_pdf_has_at_most_two_pdfa_pages(tiny, tmp_path):
    pikepdf = pytest.importorskip("pikepdf")
    from pypdf import PdfReader

    path = tmp_path / "x.deployer.pdf"
    tiny.to_deployer_pdf(path)
    assert 1 <= len(PdfReader(path).pages) <= 2
    with pikepdf.open(path) as doc:
        with doc.open_metadata(set_pikepdf_as_editor=False, update_docinfo=False) as meta:
            xmp = dict(meta)
        assert "x.json" in doc.attachments
    assert xmp.get("{http://www.aiim.org/pdfa/ns/id/}part") == "3"


def _cli(tmp_path, data, *extra):
    model, X, y = data
    joblib.dump(model, tmp_path / "model.joblib")
    X[300:].assign(y=y[300:]).to_csv(tmp_path / "test.csv", index=False)
    X[:300].assign(y=y[:300]).to_csv(tmp_path / "train.csv", index=False)
    return main([str(a) for a in ("--model", tmp_path / "model.joblib", "--trust-pickle", "--data",
                                  tmp_path / "test.csv", "--train", tmp_path / "train.csv", "--target", "y",
                                  "--out", tmp_path / "out", "--sections", "explanations", "faithfulness",
                                  "--explainers", "pg2", "local_mdi", "--max-rows", 5, "--quiet", *extra)])


def test_the_cli_writes_the_extract_and_lists_it_in_the_manifest(tmp_path, data, capsys):
    assert _cli(tmp_path, data, "--deployer-extract") == 0
    out = tmp_path / "out"
    manifest = json.loads((out / "model.manifest.json").read_text())
    listed = [entry["path"] for entry in manifest["outputs"]]
    assert {"model.deployer.html", "model.deployer.pdf"} <= set(listed)
    assert "model.pdf" in (out / "model.deployer.html").read_text(encoding="utf-8")
    assert "wrote " + str(out / "model.deployer.pdf") in capsys.readouterr().out

    from xai_plugins.report.record import verify_directory

    checked = verify_directory(out)          # both PDFs embed model.json, the JSON beside them
    assert checked.embedded == 2 and not checked.notes
    assert [f for f in checked.failures if "not signed" not in f] == []


def test_without_the_flag_no_extract(tmp_path, data):
    assert _cli(tmp_path, data, "--no-pdf") == 0
    assert not list((tmp_path / "out").glob("*.deployer.*"))


def test_the_output_check_covers_the_extract(tmp_path, data, capsys, monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("the audit started before the output paths were checked")

    monkeypatch.setattr(report, "audit", started)
    (tmp_path / "out" / "model.deployer.pdf").mkdir(parents=True)     # the extract the run would write is a folder
    assert _cli(tmp_path, data, "--deployer-extract") == 2
    assert "model.deployer.pdf" in capsys.readouterr().err


def test_a_global_method_is_matched_to_its_named_criterion(tiny):
    """A global method's criterion is "Faithfulness of DT-Sampler (global)": the extract listed DT-Sampler and
    MCR as having no faithfulness criterion while page 1 of the same audit graded them."""
    import dataclasses

    from xai_plugins.report.deployer import _explainers

    criteria = [dataclasses.replace(c, name=c.name + " (global)") if c.name == "Faithfulness of local MDI" else c
                for c in tiny.verdict.criteria]
    graded = next(c for c in criteria if c.name == "Faithfulness of local MDI (global)")
    row = next(r for r in _explainers(tiny, criteria) if r["label"] == "local MDI")
    assert row["status"] == graded.status and "no faithfulness criterion" not in row["reason"]
