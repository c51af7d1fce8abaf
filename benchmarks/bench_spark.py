"""Spark scale-out: rows/s of exact PG² (S = all) and the greedy PG² ranking on the 100-tree
depth-6 XGBoost model of bench_dask.py, in memory on one thread vs Spark ``local[1]`` and
``local[2]`` (Python workers, Arrow batches through ``mapInPandas``), and the per-task overhead
(a cheap |S| = 1 PG² on 16 partitions vs one partition).

Spark DataFrames without id columns (row i = the DataFrame's own order), so no sort; each call
counts the partitions once (the row index), then maps. Results are bitwise the in-memory ones
(tests/test_spark.py).
    python benchmarks/bench_spark.py [--rows 240] [--greedy-rows 24]
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd
import xgboost as xgb
from bench_dask import load, timed

import xai_plugins as xp


def session(master):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=240)
    ap.add_argument("--greedy-rows", type=int, default=24)
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)

    name, X, y = load()
    model = xgb.XGBRegressor(n_estimators=100, max_depth=6, learning_rate=0.1, random_state=0, n_jobs=1).fit(X, y)
    d = X.shape[1]
    cols = [f"x{j}" for j in range(d)]
    model.get_booster().feature_names = cols
    print(f"{name}: {X.shape[0]} rows x {d} features; XGBoost 100 trees depth 6")
    rows, grows = pd.DataFrame(X[:args.rows], columns=cols), pd.DataFrame(X[:args.greedy_rows], columns=cols)
    S = list(range(d))
    xp.pg2(model, rows[:2], S, n_jobs=1)
    t_mem = timed(lambda: xp.pg2(model, rows, S, n_jobs=1))
    g_mem = timed(lambda: xp.greedy_pg2_ranking(model, grows, n_jobs=1))
    print(f"in memory, 1 thread : exact PG2 S=all {args.rows / t_mem:8.1f} rows/s   "
          f"greedy {args.greedy_rows / g_mem:7.2f} rows/s")
    result = {}
    for cores in (1, 2):
        spark = session(f"local[{cores}]")
        try:
            sdf = spark.createDataFrame(rows).repartition(4 * cores).cache()
            gdf = spark.createDataFrame(grows).repartition(2 * cores).cache()
            sdf.count(), gdf.count()
            xp.pg2(model, sdf, S).compute()                     # start the Python workers, load the model
            t = timed(lambda: xp.pg2(model, sdf, S).compute())
            g = timed(lambda: xp.greedy_pg2_ranking(model, gdf).compute())
            tiny = spark.createDataFrame(rows[:16])
            one, many = tiny.repartition(1).cache(), tiny.repartition(16).cache()
            one.count(), many.count()
            t1 = timed(lambda: xp.pg2(model, one, [0]).compute(), 2)
            t16 = timed(lambda: xp.pg2(model, many, [0]).compute(), 2)
            overhead = (t16 - t1) / 15 * cores          # per task, per core (two jobs per call)
            result[cores] = (args.rows / t, args.greedy_rows / g)
            print(f"Spark local[{cores}]    : exact PG2 S=all {args.rows / t:8.1f} rows/s (x{t_mem / t:.2f} of "
                  f"in-memory)   greedy {args.greedy_rows / g:7.2f} rows/s (x{g_mem / g:.2f})   per-task overhead "
                  f"{overhead * 1e3:.1f} ms (16 partitions {t16:.2f} s vs 1 partition {t1:.2f} s)")
        finally:
            spark.stop()
    print(f"local[2] vs local[1]: exact x{result[2][0] / result[1][0]:.2f}, greedy x{result[2][1] / result[1][1]:.2f}")
    print(f"per-row cost in memory: exact S=all {t_mem / args.rows * 1e3:.2f} ms, "
          f"greedy {g_mem / args.greedy_rows * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
