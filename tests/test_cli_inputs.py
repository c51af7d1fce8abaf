"""``xai-audit`` and its input files: no output may overwrite an input (and the manifest hashes the inputs
before anything is written), parquet data read in memory, unreadable files named, ``--id-cols``, the
thresholds' flag and ranges, the verdicts printed on stdout, and the Python that Spark's workers run."""

import hashlib
import json
import os
import sys
import types

import pytest
from sklearn.datasets import load_diabetes

import xai_plugins.report as report
from xai_plugins.cli import main, read_cluster_table

xgboost = pytest.importorskip("xgboost")

#: a fast audit: one explainer, a few rows, HTML and JSON only
FAST = ("--no-pdf", "--quiet", "--sections", "explanations", "--explainers", "pg2", "--max-rows", "3")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_inputs")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :4]
    test = X.iloc[200:260].assign(y=y.iloc[200:260])
    test.to_csv(root / "test.csv", index=False)
    test.to_parquet(root / "test.parquet")
    test.assign(customer_id=range(1000, 1060)).to_csv(root / "with_ids.csv", index=False)
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X.iloc[:200], y.iloc[:200]).save_model(root / "model.json")
    return root


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _no_audit(*args, **kwargs):
    raise AssertionError("the audit started before the output paths were checked")


def test_a_report_named_like_the_model_is_refused_before_any_work(files, capsys, monkeypatch, tmp_path):
    """``--out`` the model's folder would write the report ``model.json`` over the model: refused (exit 2)
    before the audit starts, and through another path to the same folder (a symlink) too."""
    monkeypatch.setattr(report, "audit", _no_audit)
    before = _sha256(files / "model.json")
    link = tmp_path / "same_folder"
    link.symlink_to(files, target_is_directory=True)
    for out in (files, link):
        code, stdout, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv",
                                 "--target", "y", "--out", out, *FAST)
        assert code == 2 and stdout == ""
        assert "is the model file" in err and "(--model)" in err and "choose another --out folder" in err
        assert len(err.strip().splitlines()) == 1
    assert _sha256(files / "model.json") == before
    assert not (files / "model.html").exists() and not (files / "model.manifest.json").exists()


def test_the_manifest_certifies_the_inputs_as_they_were_before_any_output(files, capsys, monkeypatch, tmp_path):
    """An input that changes while the outputs are written (as the model did when the report replaced it)
    keeps, in the manifest, the digest of the file the audit read."""
    model = tmp_path / "model.json"
    model.write_bytes((files / "model.json").read_bytes())
    original = _sha256(model)
    real = report.Audit.to_html

    def to_html_over_the_model(self, path=None):
        model.write_text("replaced")
        return real(self, path)

    monkeypatch.setattr(report.Audit, "to_html", to_html_over_the_model)
    code, _, err = _run(capsys, "--model", model, "--data", files / "test.csv", "--target", "y",
                        "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "model.manifest.json").read_text())
    assert {e["role"]: e["sha256"] for e in manifest["inputs"]}["model"] == original != _sha256(model)


def test_parquet_data_is_read_in_memory(files, capsys, tmp_path):
    code, stdout, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.parquet",
                             "--target", "y", "--out", tmp_path, *FAST)
    assert code == 0, err
    manifest = json.loads((tmp_path / "model.manifest.json").read_text())
    assert [e["path"] for e in manifest["inputs"] if e["role"] == "test data"] == [str(files / "test.parquet")]
    saved = json.loads((tmp_path / "model.json").read_text())
    assert saved["rows explained"] == 3


def test_a_binary_file_read_as_csv_says_so(files, capsys, tmp_path):
    (tmp_path / "data.csv").write_bytes((files / "test.parquet").read_bytes())
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", tmp_path / "data.csv", "--target", "y")
    assert code == 2
    assert "cannot read --data" in err and "not UTF-8 text" in err and "parquet file must be named" in err


def test_a_damaged_joblib_file_is_named_as_not_a_readable_model(files, capsys, tmp_path):
    (tmp_path / "model.joblib").write_bytes(b"\x00" * 100)        # joblib.load raises KeyError: 0
    code, _, err = _run(capsys, "--model", tmp_path / "model.joblib", "--trust-pickle", "--data", files / "test.csv",
                        "--target", "y", "--out", tmp_path / "out")
    assert code == 2
    assert "cannot read model file model.joblib: it is not a readable pickled / joblib model" in err
    assert "joblib.dump" in err and len(err.strip().splitlines()) == 1


def test_a_threshold_that_is_not_a_number_names_the_form_not_the_parser(files, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--model", str(files / "model.json"), "--threshold", "faithfulness_pass=high"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "argument --threshold: takes NAME=VALUE with a number as VALUE; got 'faithfulness_pass=high'" in err
    assert "_threshold" not in err


@pytest.mark.parametrize("setting, shown", [("faithfulness_pass=2", "[-inf, 1] (F ≤ 1 by construction)"),
                                            ("adequacy_warn=-1", "[0, inf] (a skill loss L ≥ 0)")])
def test_a_threshold_out_of_its_range_is_refused_with_the_range(files, capsys, monkeypatch, setting, shown):
    monkeypatch.setattr(report, "audit", _no_audit)
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--threshold", setting)
    assert code == 2 and f"threshold {setting.split('=')[0]} must lie in {shown}" in err


def test_id_columns_stay_in_the_csv(files, capsys, tmp_path):
    """Without --id-cols an id column is an unknown feature; with it the column is dropped from the features
    and named in the report's provenance and the manifest."""
    args = ("--model", files / "model.json", "--data", files / "with_ids.csv", "--target", "y")
    code, _, err = _run(capsys, *args, "--out", tmp_path, *FAST)
    assert code == 2 and "customer_id" in err
    code, _, err = _run(capsys, *args, "--id-cols", "customer_id", "--out", tmp_path, *FAST)
    assert code == 0, err
    assert json.loads((tmp_path / "model.manifest.json").read_text())["id columns"] == ["customer_id"]
    assert "customer_id" in json.dumps(json.loads((tmp_path / "model.json").read_text())["parameters"])


@pytest.mark.parametrize("id_cols, message", [(["nope"], "--id-cols column(s) ['nope'] not in --data with_ids.csv"),
                                              (["bmi"], "['bmi'] are features of the model"),
                                              (["y"], "'y' is the target column")])
def test_id_columns_are_checked(files, capsys, monkeypatch, id_cols, message):
    monkeypatch.setattr(report, "audit", _no_audit)
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "with_ids.csv", "--target", "y",
                        "--id-cols", *id_cols)
    assert code == 2 and message in err


def test_id_columns_are_dropped_from_cluster_data(files):
    pytest.importorskip("dask.dataframe")
    X, y, _ = read_cluster_table(str(files / "with_ids.csv"), "y", id_cols=["customer_id"])
    assert list(X.columns) == ["age", "sex", "bmi", "bp"] and y.name == "y"


def test_the_verdicts_are_printed_after_the_files_also_when_quiet(files, capsys, tmp_path):
    code, stdout, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                             "--out", tmp_path, *FAST)
    assert code == 0, err
    verdict = json.loads((tmp_path / "model.json").read_text())["verdict"]
    lines = stdout.splitlines()
    assert lines[:3] == [f"wrote {tmp_path / name}" for name in ("model.html", "model.json", "model.manifest.json")]
    assert lines[3] == "Explanation audit of model.json:"
    for line, name in zip(lines[4:], ("model fitness", "explanation reliability")):
        assert line.startswith(f"  {name}: {verdict[name]['status'].upper()} — ")


def _fake_pyspark(monkeypatch, seen: dict) -> None:
    """pyspark.sql.SparkSession replaced by a builder that records PYSPARK_PYTHON when the session starts."""
    class Builder:
        def __getattr__(self, name):
            return lambda *args: self

        def getOrCreate(self):  # noqa: N802 - pyspark's name
            seen["PYSPARK_PYTHON"] = os.environ.get("PYSPARK_PYTHON")
            return "session"

    sql = types.SimpleNamespace(SparkSession=types.SimpleNamespace(builder=Builder()))
    monkeypatch.setitem(sys.modules, "pyspark", types.SimpleNamespace(sql=sql))
    monkeypatch.setitem(sys.modules, "pyspark.sql", sql)


def test_spark_workers_run_this_python_unless_told_otherwise(monkeypatch):
    from xai_plugins.cli import start_spark

    seen: dict = {}
    _fake_pyspark(monkeypatch, seen)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert start_spark("local[1]") == "session" and seen["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    start_spark("local[1]")
    assert seen["PYSPARK_PYTHON"] == "/opt/python/bin/python3"


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_category_labels_in_a_csv_are_read_as_the_models_categories(library, capsys, tmp_path):
    """A CSV gives a column fitted as pandas ``category`` back as int64 labels: xai-audit reads them as the
    model's training categories, so the report's test score is the model's own on that data (the package read
    the labels as codes and reported R² 0.19 for a model whose R² is 0.62), and warns about labels the model
    never saw."""
    import joblib
    import numpy as np
    import pandas as pd
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(0)
    n = 600
    band = rng.choice([10, 20, 40, 80], n)
    x = rng.normal(size=n)
    y = np.where(band == 10, 3.0, 0.0) + np.where(band == 80, -2.0, 0.0) + x + rng.normal(scale=0.3, size=n)
    frame = pd.DataFrame({"band": pd.Categorical(band), "x": x})
    if library == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.LGBMRegressor(n_estimators=30, num_leaves=8, min_child_samples=5, verbose=-1).fit(frame[:400],
                                                                                                       y[:400])
    else:
        model = xgboost.XGBRegressor(n_estimators=30, max_depth=3, enable_categorical=True,
                                     tree_method="hist").fit(frame[:400], y[:400])
    joblib.dump(model, tmp_path / "model.joblib")
    test = frame[400:].assign(y=y[400:])
    test.to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "--model", tmp_path / "model.joblib", "--trust-pickle", "--data",
                             tmp_path / "test.csv", "--target", "y", "--out", out, *FAST)
    assert code == 0, err
    audits = [p for p in out.glob("*.json") if not p.name.endswith(".manifest.json")]
    performance = json.loads(audits[0].read_text())["sections"]["model"]["data"]["performance"]
    r2 = {row["index"]: row["test"] for row in performance}["R²"]
    assert abs(r2 - r2_score(y[400:], model.predict(frame[400:]))) < 1e-9
    assert "not trained on" not in err

    test.assign(band=test["band"].astype(int).replace(80, 160)).to_csv(tmp_path / "unseen.csv", index=False)
    code, stdout, err = _run(capsys, "--model", tmp_path / "model.joblib", "--trust-pickle", "--data",
                             tmp_path / "unseen.csv", "--target", "y", "--out", tmp_path / "out2", *FAST)
    assert "column 'band' holds label(s) the model was not trained on: 160" in err
