"""The audit history (``xai_plugins.report.history``: ``audit_history``, ``xai-audit history``): three audits of one
model on test data that drifts from the second on, ordered by their dates, the crossing marked at the second, the
tidy table checked against the JSONs, mixed schema versions refused."""

import importlib.util
import json

import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.cli import main
from xai_plugins.errors import InputError, SchemaVersionError
from xai_plugins.report import AuditHistory, audit, audit_history
from xai_plugins.report.history import COLUMNS

FAST = dict(sigma=[0.3], explainers=["local_mdi", "pg2"], sections=["faithfulness"], max_rows=10, mc_pairs=0,
            progress=False)
#: file name -> (date written into its JSON, shift of s5 in its test data): the names sort in another order than
#: the dates, and the test data drift from the second audit on
AUDITS = {"z.json": ("2026-01-05 09:00 UTC", 0.0), "a.json": ("2026-02-05 09:00 UTC", 0.05),
          "m.json": ("2026-03-05 09:00 UTC", 0.08)}


@pytest.fixture(scope="module")
def folder(diabetes_frame, tmp_path_factory):
    X, y = diabetes_frame
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    out = tmp_path_factory.mktemp("history")
    for name, (created, shift) in AUDITS.items():
        test = X[300:].copy()
        test["s5"] = test["s5"] + shift
        doc = audit(model, test, y[300:], X_train=X[:300], y_train=y[:300], **FAST).to_dict()
        doc["created"] = created
        (out / name).write_text(json.dumps(doc), encoding="utf-8")
    (out / "z.manifest.json").write_text(json.dumps({"format": "a manifest"}), encoding="utf-8")   # left out
    (out / "diff.json").write_text(json.dumps({"changes": []}), encoding="utf-8")                 # not an audit
    return out


@pytest.fixture(scope="module")
def docs(folder):
    return [json.loads((folder / name).read_text(encoding="utf-8")) for name in ("z.json", "a.json", "m.json")]


def test_audits_are_ordered_by_their_dates(folder):
    history = audit_history(folder)
    assert isinstance(history, AuditHistory)
    assert [a["label"] for a in history.audits] == ["z.json", "a.json", "m.json"]
    assert [a["audit"] for a in history.audits] == [1, 2, 3]
    assert audit_history(str(folder / "*.json")).audits == history.audits          # a glob: the same audits
    reordered = audit_history([folder / "m.json", folder / "z.json", folder / "a.json"])
    assert [a["label"] for a in reordered.audits] == ["z.json", "a.json", "m.json"]


def test_the_threshold_crossed_at_the_second_audit_is_marked_there(folder, docs):
    history = audit_history(folder)
    drift = "Drift between training and test data"
    assert [c["status"] for d in docs for c in d["verdict"]["criteria"] if c["name"] == drift] == ["pass", "fail",
                                                                                                    "fail"]
    crossed = history.crossings
    assert set(crossed["audit"]) == {2} and drift in set(crossed["name"])
    assert crossed.loc[crossed["name"] == drift, "source"].item() == "a.json"
    rows = history.table[(history.table["name"] == drift)]
    assert rows["crossed"].tolist() == [False, True, False]          # marked once, at the first crossing


def test_the_tidy_table_matches_the_jsons(folder, docs, tmp_path):
    history = audit_history(folder)
    history.to_csv(tmp_path / "history.csv")
    table = pd.read_csv(tmp_path / "history.csv")
    assert tuple(table.columns) == COLUMNS
    expected = sum(2 + len(d["verdict"]["criteria"])
                   + sum(len(m["importance"]) for m in d["methods"].values() if m["importance"]) for d in docs)
    assert len(table) == expected
    for position, doc in enumerate(docs, start=1):
        rows = table[table["audit"] == position]
        assert set(rows["created"]) == {doc["created"]}
        for name in ("model fitness", "explanation reliability"):
            assert rows.loc[rows["name"] == name, "status"].item() == doc["verdict"][name]["status"]
        for c in doc["verdict"]["criteria"]:
            row = rows[(rows["measure"] == "criterion") & (rows["name"] == c["name"])].iloc[0]
            assert row["status"] == c["status"] and row["group"] == c["kind"]
            for column, value in (("value", c["value"]), ("low", (c["ci"] or {}).get("low")),
                                  ("high", (c["ci"] or {}).get("high"))):
                assert (pd.isna(row[column]) and value is None) or row[column] == pytest.approx(value, rel=1e-12)
        for method in (m for m in doc["methods"].values() if m["importance"]):
            shares = rows[(rows["measure"] == "reliance") & (rows["group"] == method["method"])]
            total = sum(abs(v) for v in method["importance"].values())
            assert dict(zip(shares["name"], shares["value"])) == pytest.approx(
                {f: abs(v) / total for f, v in method["importance"].items()})


def test_mixed_schema_versions_are_refused(folder, docs, tmp_path):
    old = dict(docs[0], schema_version="0.9")
    with pytest.raises(SchemaVersionError, match="different schema versions"):
        audit_history([old, *docs[1:]])
    unversioned = {k: v for k, v in docs[0].items() if k != "schema_version"}
    with pytest.raises(SchemaVersionError, match="none"):
        audit_history([unversioned, *docs[1:]])
    with pytest.raises(InputError, match="no audit JSON"):
        audit_history(tmp_path)
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    (tmp_path / "new.json").write_text(json.dumps(docs[1]), encoding="utf-8")
    assert main(["history", str(tmp_path)]) == 2


def test_cli_writes_the_page_and_the_tables(folder, tmp_path, capsys):
    code = main(["history", str(folder), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "crossed at audit 2 (a.json): criterion Drift between training and test data became fail" in out
    written = {p.name for p in tmp_path.iterdir()}
    parquet = importlib.util.find_spec("pyarrow") is not None
    assert written == {"history.html", "history.json", "history.pdf", "history.csv", *(("history.parquet",) if parquet
                                                                                     else ())}
    assert (tmp_path / "history.pdf").read_bytes().startswith(b"%PDF")
    html = (tmp_path / "history.html").read_text(encoding="utf-8")
    assert html.count("<figure>") == 2 and "Thresholds crossed" in html
    if parquet:
        frame, csv = pd.read_parquet(tmp_path / "history.parquet"), pd.read_csv(tmp_path / "history.csv")
        assert tuple(frame.columns) == COLUMNS and len(frame) == len(csv)
        pd.testing.assert_series_equal(frame["value"].astype(float), csv["value"], rtol=1e-12)
        assert frame["crossed"].tolist() == csv["crossed"].tolist()
