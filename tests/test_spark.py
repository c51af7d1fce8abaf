"""The Spark engine on a real local Spark session: every method through ``xp.*`` on a Spark
DataFrame is bitwise the in-memory result on the same rows (ordered by their id column), for 1, 3
and 7 partitions and when a task fails and Spark retries it; bad input raises the package's errors."""

import os

import numpy as np
import pandas as pd
import pytest

pyspark = pytest.importorskip("pyspark")

from conftest import local_spark, same_greedy_and_mdi  # noqa: E402

import xai_plugins as xp  # noqa: E402
from xai_plugins.engines import engine_for  # noqa: E402
from xai_plugins.engines.spark import ENGINE, SparkColumns, keyed  # noqa: E402
from xai_plugins.errors import FeatureMismatchError, InputError, InputTypeError  # noqa: E402
from xai_plugins.prediction_gap._pg2 import PG2  # noqa: E402

FEATURES = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def spark():
    """One local Spark session for the module: 2 threads, a task may fail up to 4 times."""
    session = local_spark("local[2,4]", "xai_plugins-tests", partitions=4)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def data():
    """A random forest on 4 named features, 60 rows with a shuffled integer id, the rows in id order."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 4)), columns=FEATURES)
    y = 2 * X.a + X.b ** 2 - X.c * X.d + rng.normal(scale=0.1, size=60)
    model = RandomForestRegressor(n_estimators=8, max_depth=4, bootstrap=False, max_features=0.5,
                                  random_state=0).fit(X, y)
    frame = X.copy()
    frame.insert(0, "id", rng.permutation(len(X)) * 7 + 3)
    frame = frame[["c", "id", "a", "d", "b"]]               # columns out of the model's order
    ordered = frame.sort_values("id")[FEATURES].reset_index(drop=True)
    return model, frame, ordered


@pytest.mark.parametrize("kind", ["lightgbm", "pipeline"])
def test_categorical_model_bitwise(spark, categorical_models, kind):
    """A model with categorical features on a Spark DataFrame (pandas categories and text arrive as
    strings), an unseen category included: PG², greedy and local / global MDI bitwise the in-memory
    results on the rows in id order (the previous main refused the string columns)."""
    model, frame = categorical_models[kind]
    X = keyed(spark.createDataFrame(frame.astype({"city": str, "sex": str})).repartition(3), ["id"])
    ordered = frame.sort_values("id").drop(columns=["id"]).reset_index(drop=True)
    _same(xp.pg2(model, X, ["city", "age"]).compute().value, xp.pg2(model, ordered, ["city", "age"]).value)
    same_greedy_and_mdi(model, X, ordered, _same, kind)
    with pytest.raises(InputTypeError, match="age"):         # text in a numeric feature: refused
        xp.pg2(model, spark.createDataFrame(frame.drop(columns=["id"]).astype(str)), ["city"])


def test_cached_frame_is_counted_once(spark, data):
    """A cached DataFrame without id columns: its partitions' row counts (the row index) are kept, so a
    second call skips the counting jobs, with the same bits; unpersisted, it is counted again."""
    model, frame, _ = data
    df = spark.createDataFrame(frame[FEATURES]).repartition(3).cache()
    reference = xp.pg2(model, df.toPandas(), ["a", "c"]).value      # rows in the DataFrame's own order
    tracker, jobs = spark.sparkContext.statusTracker(), []
    for group in ("first", "second", "unpersisted"):
        if group == "unpersisted":
            df.unpersist()
        spark.sparkContext.setJobGroup(group, group)
        _same(xp.pg2(model, df, ["a", "c"]).compute().value, reference)
        jobs.append(len(tracker.getJobIdsForGroup(group)))
    spark.sparkContext.setJobGroup("after", "after")
    assert jobs[1] < jobs[0] <= jobs[2], jobs       # e.g. [3, 1, 5]: counting is a shuffle, AQE runs it as 2 jobs


def _spark_rows(spark, frame, partitions):
    return keyed(spark.createDataFrame(frame).repartition(partitions), ["id"])


def _same(a, b):
    a, b = np.atleast_1d(np.asarray(a)), np.atleast_1d(np.asarray(b))
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)) if a.dtype.kind == "f" else np.array_equal(a, b)


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_bitwise_in_memory_any_partitioning(spark, data, partitions):
    model, frame, ordered = data
    X = _spark_rows(spark, frame, partitions)
    assert engine_for(X) is ENGINE

    est = xp.pg2(model, X, ["a", "c"])
    ref = xp.pg2(model, ordered, ["a", "c"])
    got = est.compute()
    _same(got.value, ref.value)
    assert got.pair_terms == ref.pair_terms and got.method == "exact"

    mc = xp.pg2(model, X, [1, 3], method="monte_carlo", n_samples=64, random_state=5).compute()
    mc_ref = xp.pg2(model, ordered, [1, 3], method="monte_carlo", n_samples=64, random_state=5)
    _same(mc.value, mc_ref.value)
    _same(mc.stderr, mc_ref.stderr)

    greedy = xp.greedy_pg2_ranking(model, X)
    greedy_ref = xp.greedy_pg2_ranking(model, ordered)
    g = greedy.compute()
    _same(g.ranking, greedy_ref.ranking)
    _same(g.pg2_path, greedy_ref.pg2_path)

    # PGI² of the Spark greedy ranking (a per-row Spark argument) and of an in-memory one
    _same(xp.pgi2(model, X, greedy.ranking).compute(), xp.pgi2(model, ordered, greedy_ref.ranking))
    _same(xp.mean_pgi2(model, X, greedy.ranking).compute(), xp.mean_pgi2(model, ordered, greedy_ref.ranking))
    _same(xp.pgi2(model, X, greedy_ref.ranking[::-1].copy()).compute(),
          xp.pgi2(model, ordered, greedy_ref.ranking[::-1].copy()))

    mdi = xp.local_mdi(model, X)
    _same(mdi.compute(), xp.local_mdi(model, ordered))
    weights = np.linspace(0.5, 2.0, len(ordered))
    _same(xp.global_mdi(model, X, weights).compute(), xp.global_mdi(model, ordered, weights))
    _same(xp.faithfulness(model, mdi, X=X).compute(), xp.faithfulness(model, xp.local_mdi(model, ordered), X=ordered))


def test_results_keyed_by_id(spark, data):
    model, frame, ordered = data
    est = xp.pg2(model, _spark_rows(spark, frame, 3), ["b"])
    keyed_frame = est.to_spark().toPandas().sort_values("id")
    assert list(keyed_frame.columns) == ["id", "value", "stderr", "informative"]
    _same(keyed_frame["id"].to_numpy(), np.sort(frame["id"].to_numpy()))
    _same(keyed_frame["value"].to_numpy(), xp.pg2(model, ordered, ["b"]).value)
    mdi = xp.local_mdi(model, _spark_rows(spark, frame, 2)).to_spark("mdi").toPandas().sort_values("id")
    _same(np.stack(mdi["mdi"].to_numpy()), xp.local_mdi(model, ordered))


def test_retried_task_same_bits(spark, data, tmp_path, monkeypatch):
    """A block that fails on its first attempt (Spark retries the task: local[2,4]) gives the same bits."""
    model, frame, ordered = data
    marker = str(tmp_path / "failed-once")
    real = PG2.block

    def flaky(*args, **kwargs):
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("task killed mid-run")
        return real(*args, **kwargs)

    monkeypatch.setattr(PG2, "block", flaky)
    got = xp.pg2(model, _spark_rows(spark, frame, 3), [0, 2], method="monte_carlo", n_samples=32,
                 random_state=9).compute()
    assert os.path.exists(marker)            # the first attempt did fail
    _same(got.value, xp.pg2(model, ordered, [0, 2], method="monte_carlo", n_samples=32, random_state=9).value)


def test_model_shipped_once(spark, data):
    model, _, _ = data
    forest = xp.forest.import_model(model)
    assert ENGINE.ship_forest(forest) is ENGINE.ship_forest(forest)


def test_bad_input(spark, data):
    model, frame, _ = data
    with pytest.raises(InputError, match="not unique"):
        xp.pg2(model, keyed(spark.createDataFrame(pd.concat([frame, frame.head(2)])).repartition(3), "id"), [0])
    with pytest.raises(FeatureMismatchError, match="unexpected"):
        xp.pg2(model, spark.createDataFrame(frame), [0])          # the id column is not a feature
    with pytest.raises(InputTypeError, match="non-numeric"):
        xp.pg2(model, keyed(spark.createDataFrame(frame.assign(a=frame.a.astype(str))), "id"), [0])
    with pytest.raises(InputError, match="id_cols"):
        keyed(spark.createDataFrame(frame), ["nope"])
    nan = frame.assign(a=frame.a.where(frame.id != frame.id.iloc[5]))
    est = xp.pg2(model, keyed(spark.createDataFrame(nan), "id"), ["a"])
    with pytest.raises(InputError, match="perturbed feature"):      # raised in a block, carried to the driver
        est.compute()
    assert isinstance(est.value, SparkColumns)


@pytest.mark.parametrize("with_background", [False, True])
def test_tree_shap_bitwise_in_memory(spark, data, with_background):
    """TreeSHAP on a Spark DataFrame (columns out of order, 3 partitions): path-dependent and interventional
    values and base values bitwise the in-memory ones on the rows in id order."""
    model, frame, ordered = data
    background = ordered[40:55] if with_background else None
    lazy = xp.tree_shap(model, _spark_rows(spark, frame, 3), background=background)
    got, ref = lazy.compute(), xp.tree_shap(model, ordered, background=background)
    _same(got.values, ref.values)
    _same(got.base_values, ref.base_values)
    assert got.method == ref.method == ("interventional" if with_background else "path_dependent")
