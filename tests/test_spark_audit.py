"""The audit on a real local Spark session: ``audit(model, spark_df, y_test=<column>)`` explains every
complete row on Spark with the in-memory numbers (the faithfulness table bitwise), and
``xai-audit --spark-master local[2] --data 'rows/*.parquet'`` writes the report end to end."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from conftest import local_spark, section_json  # noqa: E402

from xai_plugins.engines.spark import keyed  # noqa: E402
from xai_plugins.errors import InputError  # noqa: E402
from xai_plugins.report import audit  # noqa: E402
from xai_plugins.report.section import plain  # noqa: E402

KW = dict(explainers=["pg2", "local_mdi"], sections=["explanations", "faithfulness", "agreement"],
          mc_pairs=0, max_shap_rows=30, progress=False)


@pytest.fixture(scope="module")
def spark():
    """One local Spark session for the module (2 threads)."""
    session = local_spark("local[2]", "xai_plugins-audit-tests", partitions=3)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def data():
    """A random forest classifier on 5 breast-cancer features; 70 test rows (one with a missing
    value) with a shuffled id column and the target ``y``."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = RandomForestClassifier(n_estimators=6, max_depth=3, bootstrap=False, random_state=0).fit(X.iloc[:300],
                                                                                                     y.iloc[:300])
    test = X.iloc[300:370].reset_index(drop=True).assign(y=y.iloc[300:370].to_numpy())
    test.iloc[4, 2] = np.nan
    test.insert(0, "id", np.random.default_rng(1).permutation(len(test)) * 3 + 1)
    return model, X.iloc[:300], y.iloc[:300], test


def test_audit_on_spark_is_the_in_memory_audit(spark, data):
    """The verdict (faithfulness and stability assessed from the per-row PGI² brought back from Spark: on the
    previous main both were "not assessed") and the faithfulness section are the in-memory audit's, bit for bit,
    with the in-memory sample holding every row."""
    model, X_train, y_train, test = data
    kw = dict(KW, max_shap_rows=len(test))
    df = spark.createDataFrame(test[["y", *test.columns[::-1][1:]]]).repartition(3)    # columns out of order
    on_spark = audit(model, keyed(df, ["id"]), y_test="y", X_train=X_train, y_train=y_train, **kw)
    ordered = test.sort_values("id").reset_index(drop=True)
    in_memory = audit(model, ordered[X_train.columns], ordered["y"], X_train=X_train, y_train=y_train,
                      max_rows=len(test), time_budget=None, **kw)
    by_kind = {c.kind: c for c in on_spark.verdict.criteria}
    assert by_kind["faithfulness"].status != "not assessed" and by_kind["stability"].status != "not assessed"
    for s in ("verdict", "faithfulness"):
        assert section_json(on_spark, s) == section_json(in_memory, s), s
    assert on_spark.rows_explained == 69 and in_memory.rows_explained == 69      # the row with a NaN left out
    for s in ("explanations", "faithfulness", "agreement"):
        assert on_spark.sections[s].status == "ok", (s, on_spark.sections[s].reason)
    a, b = on_spark.sections["faithfulness"].data, in_memory.sections["faithfulness"].data
    pd.testing.assert_frame_equal(a["pgi2"], b["pgi2"], check_exact=True)
    assert a["win rate"] == b["win rate"] and a["winners"] == b["winners"] and a["rows"] == 69
    # exact means of the per-row importances (local MDI's, here as in memory, also covers the row with a NaN)
    for key in ("pg2", "local_mdi"):
        pd.testing.assert_series_equal(on_spark.methods[key].importance, in_memory.methods[key].importance,
                                       check_exact=True)
    assert on_spark.methods["local_mdi"].params["rows"] == in_memory.methods["local_mdi"].params["rows"] == 70
    assert all(on_spark.methods[key].ranking is None for key in ("pg2", "local_mdi"))    # released with the cache
    assert on_spark.sections["model"].data["card"]["test rows"] == 70
    assert on_spark.sections["data"].data["missing values"] == 1
    assert "Spark (master local[2])" in str(on_spark.parameters["max_rows"])
    assert "every complete test row" in on_spark.to_html()


def test_keyed_rows_persisted_by_spark_keep_their_index(spark, data):
    """Spark caches a plan without adaptive partition coalescing: the keyed rows' index must not
    depend on it (on the previous main a persisted keyed frame failed with a KeyError)."""
    from xai_plugins.engines.spark import ENGINE

    _, X_train, _, test = data
    df = spark.createDataFrame(test.drop(columns=["y"])).repartition(3)
    rows, _ = ENGINE.rows(keyed(df, ["id"]), list(X_train.columns), 5, None)
    rows.df.persist()
    assert rows.df.count() == 70
    got = ENGINE.compute(rows)[0]
    expected = test.sort_values("id")[list(X_train.columns)].to_numpy()
    assert np.array_equal(got, expected, equal_nan=True)
    rows.df.unpersist()


def test_protected_column_on_spark_is_the_in_memory_fairness(spark, data):
    """A protected attribute that is not a model feature, held in the Spark DataFrame: carried apart
    from the features (the previous main read it as a feature and refused the frame) and assessed on
    the in-memory sample, here every row, with the numbers of the in-memory audit of those rows."""
    model, X_train, y_train, test = data
    test = test.assign(group=np.where(np.arange(len(test)) % 3 == 0, "u", "v"))
    kw = {**KW, "sections": ["explanations"], "max_shap_rows": 100, "protected": ["group"]}   # fairness: always built
    on_spark = audit(model, keyed(spark.createDataFrame(test).repartition(3), ["id"]), y_test="y",
                     X_train=X_train, y_train=y_train, **kw)
    ordered = test.sort_values("id").reset_index(drop=True)
    in_memory = audit(model, ordered[[*X_train.columns, "group"]], ordered["y"], X_train=X_train, y_train=y_train,
                      max_rows=len(test), **kw)
    a, b = on_spark.sections["fairness"], in_memory.sections["fairness"]
    assert a.status == b.status and a.status in ("ok", "warn"), (a.status, a.reason)
    assert a.data["attributes"]["group"]["group sizes"] == {"u": 24, "v": 46}
    assert plain(a.data) == plain(b.data)
    assert [t.to_dict() for t in a.tables] == [t.to_dict() for t in b.tables]


def test_audit_of_a_categorical_model_on_spark(spark, categorical_models):
    """A one-hot Pipeline on text columns, its rows in a Spark DataFrame: the faithfulness table and the
    importances are bitwise those of the in-memory audit of the rows in id order."""
    model, frame = categorical_models["pipeline"]
    frame = frame.assign(y=frame.age / 10 + np.random.default_rng(0).normal(size=len(frame)))
    ordered = frame.sort_values("id").reset_index(drop=True)
    kw = dict(KW, sections=["explanations", "faithfulness"], X_train=ordered[["age", "city", "sex"]].iloc[:60],
              y_train=ordered["y"].iloc[:60])
    on_spark = audit(model, keyed(spark.createDataFrame(frame).repartition(3), ["id"]), y_test="y", **kw)
    in_memory = audit(model, ordered[["age", "city", "sex"]], ordered["y"], max_rows=len(frame), **kw)
    assert on_spark.rows_explained == in_memory.rows_explained == len(frame)
    pd.testing.assert_frame_equal(on_spark.sections["faithfulness"].data["pgi2"],
                                  in_memory.sections["faithfulness"].data["pgi2"], check_exact=True)
    for key in ("pg2", "local_mdi"):
        pd.testing.assert_series_equal(on_spark.methods[key].importance, in_memory.methods[key].importance,
                                       check_exact=True)


def test_audit_on_spark_refuses_a_missing_protected_column(spark, data):
    model, _, _, test = data
    df = spark.createDataFrame(test.drop(columns=["id"]))
    with pytest.raises(InputError, match="protected names the column 'race'.*X_test does not have"):
        audit(model, df, y_test="y", protected=["race"], **KW)


def test_audit_on_spark_refuses_a_missing_target_column(spark, data):
    model, _, _, test = data
    df = spark.createDataFrame(test.drop(columns=["id"]))
    with pytest.raises(InputError, match="'target'.*X_test does not have"):
        audit(model, df, y_test="target", **KW)


def test_cli_spark_master_reads_a_parquet_glob(spark, data, tmp_path):
    from xai_plugins.cli import main

    model, X_train, y_train, test = data
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    (tmp_path / "rows").mkdir()
    for i, start in enumerate((0, 30, 60)):
        test.drop(columns=["id"]).iloc[start:start + 30].to_parquet(tmp_path / "rows" / f"part-{i}.parquet")
    X_train.assign(y=y_train.to_numpy()).to_csv(tmp_path / "train.csv", index=False)
    code = main(["--model", str(tmp_path / "model.joblib"), "--trust-pickle", "--data",
                 str(tmp_path / "rows" / "*.parquet"), "--target", "y", "--train", str(tmp_path / "train.csv"),
                 "--spark-master", "local[2]", "--out", str(tmp_path / "out"), "--explainers", "pg2",
                 "--sections", "explanations", "faithfulness", "--no-pdf", "--quiet"])
    assert code == 0
    report = json.loads((tmp_path / "out" / "model.json").read_text())
    assert report["rows explained"] == 69                       # every complete row
    assert report["sections"]["faithfulness"]["data"]["rows"] == 69
    assert report["sections"]["data"]["data"]["missing values"] == 1
    assert (tmp_path / "out" / "model.html").exists()
    assert "3 file(s)" in report["sections"]["reproducibility"]["data"]["hashes"]["test files"]
