"""CI gates of ``xai-audit``: ``--fail-on`` exit statuses read from the two verdicts, and the manifest of
SHA-256 digests of every input and output file."""

import hashlib
import json

import pytest
from sklearn.datasets import load_diabetes

import xai_plugins.report as report
from xai_plugins.cli import build_parser, main, verdict_gate
from xai_plugins.report import verdict as vd

xgboost = pytest.importorskip("xgboost")

#: a small, fast audit (with --train): the model-fitness verdict passes (skill loss allowed up to 50), the explanation
#: reliability one cannot (Rashomon sensitivity is not assessed for a boosted model: at best "warn")
FAST = ("--no-pdf", "--quiet", "--explainers", "shap", "pg2", "--sections", "explanations", "faithfulness",
        "agreement", "--max-rows", "8", "--max-shap-rows", "40", "--threshold", "adequacy_warn=50",
        "--threshold", "adequacy_fail=100", "--threshold", "drift_warn=50", "--threshold", "drift_fail=100")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    X.iloc[:250].assign(y=y.iloc[:250]).to_csv(root / "train.csv", index=False)
    X.iloc[250:330].assign(y=y.iloc[250:330]).to_csv(root / "test.csv", index=False)
    xgboost.XGBRegressor(n_estimators=8, max_depth=3).fit(X.iloc[:250], y.iloc[:250]).save_model(root / "model.json")
    (root / "card.json").write_text(json.dumps({"name": "m", "version": "1", "owner": "o", "intended use": "test",
                                                "out-of-scope uses": "none", "data provenance": "diabetes"}))
    return root


def _run(capsys, files, out, *extra):
    code = main([str(a) for a in ("--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                                  "--train", files / "train.csv", "--out", out, *extra)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _criterion(kind: str, status: str) -> vd.Criterion:
    return vd.Criterion(kind, status, None, None, "", "", kind=kind)


class _Result:
    """What verdict_gate reads of an Audit: its title and verdict."""

    def __init__(self, fitness, reliability):
        self.title = "t"
        self.verdict = None if fitness is None else vd.Verdict.from_criteria(
            [_criterion("predictive adequacy", fitness), _criterion("agreement", reliability)])


@pytest.mark.parametrize("fitness, reliability, gates, expected", [
    ("pass", "warn", ["fail"], 0),
    ("pass", "warn", ["warn"], 1),
    ("pass", "fail", ["fail"], 1),
    ("fail", "pass", ["fail"], 1),
    ("pass", "pass", ["warn"], 0),
    ("pass", "fail", ["fitness:warn"], 0),
    ("warn", "pass", ["fitness:warn"], 1),
    ("warn", "pass", ["fitness:fail"], 0),
    ("fail", "warn", ["explanations:fail"], 0),
    ("fail", "warn", ["explanations:warn"], 1),
    ("pass", "warn", ["fitness:warn", "explanations:fail"], 0),
    ("pass", "fail", ["fitness:warn", "explanations:fail"], 1),
    ("fail", "fail", [], 0),
    ("fail", "fail", None, 0),
])
def test_fail_on_reads_each_verdict_and_the_worst_of_both(fitness, reliability, gates, expected, capsys):
    result = _Result(fitness, reliability)
    assert (result.verdict.model_fitness.status, result.verdict.explanation_reliability.status) == (fitness,
                                                                                                    reliability)
    assert verdict_gate(result, gates) == expected
    err = capsys.readouterr().err
    assert (err != "") == bool(expected)
    if expected:
        assert "--fail-on" in err and any(w in err for w in ("FAIL", "WARN"))


def test_an_audit_without_a_verdict_trips_every_gate(capsys):
    assert verdict_gate(_Result(None, None), ["fail"]) == 1
    assert "no verdict was computed" in capsys.readouterr().err


def test_fail_on_values_are_checked_by_the_parser(capsys):
    parser = build_parser()
    assert parser.parse_args(["--fail-on", "warn", "--fail-on", "explanations:fail"]).fail_on == \
        ["warn", "explanations:fail"]
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--fail-on", "pass"])
    assert exit_.value.code == 2 and "--fail-on" in capsys.readouterr().err


def test_fail_on_exit_status_of_a_real_run(files, capsys, tmp_path):
    code, _, err = _run(capsys, files, tmp_path, *FAST, "--fail-on", "fitness:warn")
    saved = json.loads((tmp_path / "model.json").read_text())["verdict"]
    assert saved["model fitness"]["status"] == "pass"          # skill loss and drift allowed up to 50
    assert saved["explanation reliability"]["status"] in ("warn", "fail")
    assert code == 0 and "verdict gate" not in err
    code, _, err = _run(capsys, files, tmp_path, *FAST, "--fail-on", "warn")
    assert code == 1
    status = saved["explanation reliability"]["status"].upper()
    assert f"explanation reliability is {status} (--fail-on warn)" in err and "model fitness is" not in err


def test_manifest_hashes_every_input_and_output(files, capsys, tmp_path):
    code, stdout, _ = _run(capsys, files, tmp_path, *FAST[1:], "--model-card", files / "card.json")
    assert code == 0
    manifest_path = tmp_path / "model.manifest.json"
    assert f"wrote {manifest_path}" in stdout
    manifest = json.loads(manifest_path.read_text())
    inputs = {entry["role"]: entry for entry in manifest["inputs"]}
    expected = {"model": files / "model.json", "test data": files / "test.csv", "training data": files / "train.csv",
                "model card": files / "card.json"}
    assert set(inputs) == set(expected)
    for role, path in expected.items():
        assert inputs[role]["sha256"] == _sha256(path) and inputs[role]["bytes"] == path.stat().st_size
    outputs = {entry["path"]: entry["sha256"] for entry in manifest["outputs"]}
    assert outputs == {f"model.{ext}": _sha256(tmp_path / f"model.{ext}")
                       for ext in ("html", "json", "pdf")}
    saved = json.loads((tmp_path / "model.json").read_text())
    assert manifest["content hashes"] == saved["sections"]["reproducibility"]["data"]["hashes"]


def test_manifest_path_is_checked_before_computing(files, capsys, tmp_path, monkeypatch):
    def no_audit(*args, **kwargs):
        raise AssertionError("the audit started before the manifest path was checked")

    monkeypatch.setattr(report, "audit", no_audit)
    (tmp_path / "model.manifest.json").mkdir()
    code, _, err = _run(capsys, files, tmp_path, "--no-pdf", "--quiet")
    assert code == 2 and "model.manifest.json" in err and "is a folder" in err
