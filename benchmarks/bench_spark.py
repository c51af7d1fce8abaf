"""Spark scale-out: rows/s of exact PG² (S = all) and the greedy PG² ranking on the 100-tree
depth-6 XGBoost model of bench_dask.py, in memory on one thread vs Spark ``local[1]`` and
``local[2]`` (Python workers, Arrow batches through ``mapInArrow``), and the per-task overhead
(a cheap |S| = 1 PG² on 16 partitions of one row vs one partition of 16 rows: the per-call costs cancel),
split into Spark's own cost of a Python task (an identity ``mapInArrow`` on the same partitions, which
no engine goes below) and this package's (the rest), each the median of 5 rounds that time the four
side by side; and the per-call fixed cost (the |S| = 1 call on one partition; of it, the driver's
building of the lazy result).

Spark DataFrames without id columns (row i = the DataFrame's own order), so no sort; each call
counts the partitions once (the row index), then maps. Results are bitwise the in-memory ones
(tests/test_spark.py).
    python benchmarks/bench_spark.py [--rows 240] [--greedy-rows 24] [--masters local[1] local[2]] [--ref DIR]

``--ref DIR``: the same measurements with another build (a checkout of the previous main, its C
extension built in place), run in a subprocess after this build's, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost as xgb
from _builds import in_subprocess
from bench_dask import load, timed

import xai_plugins as xp


def session(master):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(n_rows: int, n_greedy: int, masters=("local[1]", "local[2]")) -> dict:
    """Seconds of each measurement (in memory on one thread, then per Spark master) and the
    per-task overhead, for this process's build of xai_plugins."""
    warnings.simplefilter("ignore", FutureWarning)
    _, X, y = load()
    model = xgb.XGBRegressor(n_estimators=100, max_depth=6, learning_rate=0.1, random_state=0, n_jobs=1).fit(X, y)
    d = X.shape[1]
    cols = [f"x{j}" for j in range(d)]
    model.get_booster().feature_names = cols
    rows, grows = pd.DataFrame(X[:n_rows], columns=cols), pd.DataFrame(X[:n_greedy], columns=cols)
    S = list(range(d))
    xp.pg2(model, rows[:2], S, n_jobs=1)
    out = {"memory": {"exact": timed(lambda: xp.pg2(model, rows, S, n_jobs=1)),
                      "greedy": timed(lambda: xp.greedy_pg2_ranking(model, grows, n_jobs=1))}}
    for master in masters:
        cores = int(master[len("local["):-1])
        spark = session(master)
        try:
            sdf = spark.createDataFrame(rows).repartition(4 * cores).cache()
            gdf = spark.createDataFrame(grows).repartition(4 * cores).cache()     # as sdf: a short last wave
            sdf.count(), gdf.count()
            xp.pg2(model, sdf, S).compute()                     # start the Python workers, load the model
            tiny = spark.createDataFrame(rows[:16])
            one, many = tiny.repartition(1).cache(), tiny.repartition(16).cache()
            one.count(), many.count()
            out[master] = {"exact": timed(lambda: xp.pg2(model, sdf, S).compute()),
                           "greedy": timed(lambda: xp.greedy_pg2_ranking(model, gdf).compute()),
                           "build": timed(lambda: xp.pg2(model, one, [0]), 3), "cores": cores}
            reps = []       # the four side by side, 5 times: a busy machine slows them alike
            for _ in range(5):
                reps.append([timed(f) for f in (lambda: xp.pg2(model, one, [0]).compute(),
                                                lambda: xp.pg2(model, many, [0]).compute(),
                                                lambda: _identity(one).toArrow(), lambda: _identity(many).toArrow())])
            t1, t16, s1, s16 = np.asarray(reps).T
            out[master].update({"1 partition": float(np.median(t1)), "per task": float(np.median(t16 - t1)) / 15,
                                "spark per task": float(np.median(s16 - s1)) / 15,
                                "ours per task": float(np.median(t16 - t1 - (s16 - s1))) / 15})
        finally:
            spark.stop()
    return out


def _batches(batches):
    yield from batches


def _identity(df):
    """``df`` through a Python task that returns its Arrow batches as they are (Spark's own cost)."""
    return df.mapInArrow(_batches, df.schema)


def show(label: str, got: dict, n_rows: int, n_greedy: int) -> None:
    """Print one build's rows/s and ratios against its own in-memory thread."""
    mem = got["memory"]
    print(f"{label}: in memory, 1 thread : exact PG2 S=all {n_rows / mem['exact']:8.1f} rows/s   "
          f"greedy {n_greedy / mem['greedy']:7.2f} rows/s")
    for master, r in got.items():
        if master == "memory":
            continue
        per_core = {k: r[k] * r["cores"] * 1e3 for k in ("per task", "spark per task", "ours per task")}   # ms
        print(f"{label}: Spark {master:9s}: exact {n_rows / r['exact']:8.1f} rows/s (x{mem['exact'] / r['exact']:.2f} "
              f"of in-memory)   greedy {n_greedy / r['greedy']:7.2f} rows/s (x{mem['greedy'] / r['greedy']:.2f})   "
              f"per-task overhead {per_core['per task']:.1f} ms = Spark's own Python task "
              f"{per_core['spark per task']:.1f} ms + this package's {per_core['ours per task']:.1f} ms (medians "
              f"of 5); per call {r['1 partition'] * 1e3:.0f} ms (driver building {r['build'] * 1e3:.0f} ms)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=240)
    ap.add_argument("--greedy-rows", type=int, default=24)
    ap.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    ap.add_argument("--ref", help="checkout of a reference build (the previous main), measured in a subprocess")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(args.rows, args.greedy_rows, args.masters)))
        return
    print(f"{load()[0]}: XGBoost 100 trees depth 6; load average {os.getloadavg()[0]:.1f}")
    builds = [("new", None)] + ([("reference", Path(args.ref))] if args.ref else [])
    for label, build in builds:
        got = (measure(args.rows, args.greedy_rows, args.masters) if build is None else
               in_subprocess(__file__, build, "--worker", "--rows", str(args.rows), "--greedy-rows",
                             str(args.greedy_rows), "--masters", *args.masters))
        show(label, got, args.rows, args.greedy_rows)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
