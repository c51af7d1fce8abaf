"""The audit-to-audit diff (``xai_plugins.report.diff``: ``diff_audits``, ``Audit.diff``, ``xai-audit diff``): an audit
against itself, against a challenger trained without a feature and overfitted, against an audit of another schema
version, and the CLI's gates and outputs."""

import json

import pytest
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.cli import main
from xai_plugins.errors import InputError, SchemaVersionError
from xai_plugins.report import AuditDiff, Change, audit, diff_audits
from xai_plugins.report.audit_json import SCHEMA_VERSION
from xai_plugins.report.diff import GATES

FAST = dict(sigma=[0.3], explainers=["local_mdi", "pg2"], sections=["faithfulness"], max_rows=10, mc_pairs=0,
            progress=False)


@pytest.fixture(scope="module")
def audits(diabetes_frame):
    """The champion (5 trees of depth 3) and a challenger trained without "bmi" that overfits (3 unbagged trees of
    depth 12: its test skill falls far below its training skill), audited on the same rows."""
    X, y = diabetes_frame
    champion = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    Xc = X.drop(columns=["bmi"])
    challenger = RandomForestRegressor(n_estimators=3, max_depth=12, bootstrap=False, random_state=0)
    challenger.fit(Xc[:300], y[:300])
    old = audit(champion, X[300:], y[300:], X_train=X[:300], y_train=y[:300], **FAST)
    new = audit(challenger, Xc[300:], y[300:], X_train=Xc[:300], y_train=y[:300], **FAST)
    assert old.verdict.model_fitness.status == "warn" and new.verdict.model_fitness.status == "fail"
    return old, new


@pytest.fixture(scope="module")
def files(audits, tmp_path_factory):
    folder = tmp_path_factory.mktemp("diff")
    old, new = audits
    old.to_json(folder / "old.json")
    new.to_json(folder / "new.json")
    unversioned = json.loads(old.to_json())
    del unversioned["schema_version"]
    (folder / "unversioned.json").write_text(json.dumps(unversioned), encoding="utf-8")
    other = dict(unversioned, schema_version="2.0")
    (folder / "other.json").write_text(json.dumps(other), encoding="utf-8")
    for stem, digest in (("old", "a" * 64), ("new", "b" * 64)):      # the manifests xai-audit writes beside them
        inputs = [{"role": "model", "path": "model.json", "bytes": 1, "sha256": digest},
                  {"role": "test data", "path": "test.csv", "bytes": 1, "sha256": "c" * 64}]
        (folder / f"{stem}.manifest.json").write_text(json.dumps({"inputs": inputs}), encoding="utf-8")
    return folder


def test_the_manifests_beside_the_files_name_the_input_files(files):
    found = diff_audits(files / "old.json", files / "new.json")
    model = [c for c in found.of_kind("input") if c.subject == "model file (sha256)"]
    assert [(c.old, c.new) for c in model] == [("a" * 12, "b" * 12)]
    assert "test data file (sha256)" not in {c.subject for c in found.of_kind("input")}      # the same file
    assert found.inputs["test data file (sha256)"] == "same" and found.inputs["model file (sha256)"] == "different"
    assert [c.subject for c in found.tripped(["model"])] == ["model (sha256 of the tree arrays)"]   # the trees
    (files / "broken.json").write_text(json.dumps(json.loads((files / "old.json").read_text())), encoding="utf-8")
    (files / "broken.manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="cannot read the manifest"):
        diff_audits(files / "old.json", files / "broken.json")


def test_an_audit_against_itself_has_no_change(audits, files):
    old, _ = audits
    for found in (old.diff(old), diff_audits(files / "old.json", files / "old.json"), old.diff(old.to_dict())):
        assert isinstance(found, AuditDiff)
        assert found.changes == [] and not found.changed and found.tripped(["any"]) == []
    assert "not compared, the two audits read the same test data" in old.diff(old).compared[-1]


def test_a_challenger_changes_the_model_the_reliance_and_the_verdict(audits):
    old, new = audits
    found = old.diff(new)
    inputs = {c.subject for c in found.of_kind("input")}
    assert {"model (sha256 of the tree arrays)", "test data (sha256)", "training data (sha256)"} == inputs
    assert found.inputs == dict.fromkeys(inputs, "different")
    assert set(old.diff(old).inputs.values()) == {"same"}
    verdicts = found.of_kind("verdict")
    assert [(c.subject, c.old, c.new, c.worse) for c in verdicts] == [("model fitness", "warn", "fail", True)]
    adequacy = [c for c in found.of_kind("criterion") if c.subject == "Predictive adequacy"]
    assert len(adequacy) == 1 and adequacy[0].worse and (adequacy[0].old["status"], adequacy[0].new["status"]) == \
        ("warn", "fail")
    criteria = {c["name"]: c for c in json.loads(new.to_json())["verdict"]["criteria"]}
    assert adequacy[0].new["value"] == criteria["Predictive adequacy"]["value"]
    assert adequacy[0].new["low"] == criteria["Predictive adequacy"]["ci"]["low"]        # both intervals kept
    assert adequacy[0].old["high"] == old.verdict.criteria[0].ci.high
    # the feature the challenger does not read: gone from every explainer's reliance and from the test data
    dropped = [c for c in found.of_kind("reliance") if c.subject.endswith(": bmi")]
    assert sorted(c.group for c in dropped) == ["PG² greedy", "local MDI"]
    assert all(c.old > 0.1 and c.new is None for c in dropped)       # bmi carried a large share of the champion's
    assert [c.subject for c in found.of_kind("data")] == ["bmi"]
    # every other reliance change is a share that moved beyond the tolerance
    assert all(abs(c.new - c.old) > found.tolerances["reliance"] for c in found.of_kind("reliance") if c.new and c.old)
    faithfulness = [c for c in found.of_kind("criterion") if c.group == "faithfulness"]
    assert [c.subject for c in faithfulness] == ["Faithfulness of local MDI"]      # F fell by more than 0.05
    assert faithfulness[0].worse and faithfulness[0].old["value"] - faithfulness[0].new["value"] > 0.05
    assert faithfulness[0].old["low"] is not None and faithfulness[0].new["low"] is not None
    assert found.tripped() == verdicts and found.tripped(["faithfulness"]) == faithfulness
    assert found.tripped(["criterion"]) == [c for c in found.of_kind("criterion") if c in adequacy + faithfulness]
    assert {c.kind for c in found.tripped(["model"])} == {"input"}
    # the way back is better: no verdict gate trips, every change is still reported
    back = new.diff(old)
    assert back.tripped() == [] and len(back.changes) == len(found.changes)


def test_changes_print_as_one_line_each(audits):
    old, new = audits
    lines = old.diff(new).lines()
    assert "verdict: model fitness: warn → fail (worse)" in lines
    assert any(line.startswith("criterion: Predictive adequacy: warn ") and "[" in line for line in lines)
    assert all("\n" not in line for line in lines)
    assert str(Change("data", "", "age", {"mean": 1.0}, None)) == "data: age: mean 1 → absent"


def test_test_data_drift_is_read_from_the_data_summary(audits, diabetes_frame):
    X, y = diabetes_frame
    old, _ = audits
    shifted = X[300:].copy()
    shifted["s5"] = shifted["s5"] + shifted["s5"].std()          # one standard deviation
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    new = audit(model, shifted, y[300:], X_train=X[:300], y_train=y[:300], **FAST)
    found = old.diff(new)
    data = found.of_kind("data")
    assert [c.subject for c in data] == ["s5"] and "mean shift 1 pooled sd" in data[0].detail
    assert found.of_kind("input")[0].subject == "test data (sha256)"     # the same model and training data
    assert old.diff(new, data_tolerance=2.0).of_kind("data") == []


@pytest.mark.parametrize("name", ["unversioned.json", "other.json"])
def test_audits_of_different_schema_versions_are_refused(files, name):
    with pytest.raises(SchemaVersionError, match="different schema versions") as caught:
        diff_audits(files / "old.json", files / name)
    assert isinstance(caught.value, ValueError)
    assert ("none" if name == "unversioned.json" else "2.0") in str(caught.value)


def test_a_file_that_is_not_an_audit_is_refused(tmp_path, files):
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="not an audit's JSON"):
        diff_audits(files / "old.json", tmp_path / "x.json")
    with pytest.raises(InputError, match="unknown gate"):
        diff_audits(files / "old.json", files / "old.json").tripped(["nope"])


def _cli(capsys, *argv):
    code = main(["diff", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_gates(files, capsys):
    code, out, err = _cli(capsys, files / "old.json", files / "old.json")
    assert (code, out.strip(), err) == (0, "no change beyond the tolerances", "")
    code, out, err = _cli(capsys, files / "old.json", files / "new.json")
    assert code == 1 and "verdict: model fitness: warn → fail (worse)" in out.splitlines()
    assert err.strip().splitlines() == ["xai-audit: diff gate: verdict: model fitness: warn → fail (worse) "
                                        "(--fail-on-change verdict)"]
    code, out, err = _cli(capsys, files / "new.json", files / "old.json")      # better: the default gate passes
    assert code == 0 and err == "" and "verdict: model fitness: fail → warn" in out
    code, _, err = _cli(capsys, files / "new.json", files / "old.json", "--fail-on-change", "reliance", "data")
    assert code == 1 and "reliance: local MDI: bmi" in err and "data: bmi" in err
    assert set(GATES) >= {"verdict", "criterion", "faithfulness", "reliance", "data", "model", "any"}


@pytest.mark.parametrize("name", ["unversioned.json", "other.json"])
def test_cli_refuses_different_schema_versions(files, capsys, name):
    code, out, err = _cli(capsys, files / "old.json", files / name)
    assert code == 2 and out == "" and "cannot compare audits of different schema versions" in err


def test_cli_writes_the_report(files, capsys, tmp_path):
    code, out, _ = _cli(capsys, files / "old.json", files / "new.json", "--out", tmp_path)
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diff.html", "diff.json", "diff.pdf"]
    assert (tmp_path / "diff.pdf").read_bytes().startswith(b"%PDF")
    written = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
    assert written["changed"] and [c["text"] for c in written["changes"]] == \
        [line for line in out.splitlines() if not line.startswith("wrote ")]
    html = (tmp_path / "diff.html").read_text(encoding="utf-8")
    assert "What changed between two audits" in html and "Reliance on each feature" in html


def _categorical(shares: dict) -> dict:
    """An audit JSON whose data section holds one categorical feature, "colour", with these category shares."""
    table = {"caption": "", "columns": ["feature", "category", "test rows", "test share", "training rows",
                                        "training share"],
             "rows": [["colour", category, 1, share, 1, share] for category, share in shares.items()]}
    return {"schema_version": SCHEMA_VERSION, "title": "t", "created": "2026-01-01 00:00 UTC",
            "sections": {"data": {"data": {"rows": 10}, "tables": [table]}}}


def test_categorical_test_features_compare_by_their_category_shares():
    found = diff_audits(_categorical({"red": 0.5, "blue": 0.5}), _categorical({"red": 0.8, "blue": 0.2}))
    assert [(c.subject, c.detail) for c in found.of_kind("data")] == [
        ("colour", "category shares 0.3 apart (total variation)")]
    assert "red: 0.8; blue: 0.2" in found.to_html() and "colour: red 0.5, blue 0.5 → red 0.8" in found.lines()[0]
    assert diff_audits(_categorical({"red": 0.5, "blue": 0.5}), _categorical({"red": 0.6, "blue": 0.4})).changes == []
    assert diff_audits(_categorical({"red": 1.0}), _categorical({"blue": 1.0})).of_kind("data")[0].detail == \
        "category shares 1 apart (total variation)"
