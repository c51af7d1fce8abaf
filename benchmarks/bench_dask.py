"""Dask scale-out: rows/s of exact PG² (S = all) and the greedy PG² ranking on a 100-tree depth-6
XGBoost model, in memory on one thread vs a LocalCluster of 1 and 2 single-threaded worker
processes, and the per-task overhead (blocks of one row of a cheap |S| = 1 PG²).

Data: California housing from ../shared/datasets (8 numeric features, rows with a missing
value dropped, standardised) if present, else scikit-learn's diabetes; every result line names the
data it measured (the fallback says that California housing was not found).
    python benchmarks/bench_dask.py [--rows 240] [--greedy-rows 24]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
import xgboost as xgb

import xai_plugins as xp

HERE = os.path.dirname(os.path.abspath(__file__))
CALIFORNIA = os.path.join(HERE, "..", "..", "shared", "datasets", "california_housing.csv")


def load(path=CALIFORNIA):
    """(name, X, y): California housing from ``path`` when it exists, else scikit-learn's diabetes, named
    so that the result lines say it is the fallback and why."""
    if os.path.exists(path):
        df = pd.read_csv(path).drop(columns=["ocean_proximity"]).dropna()
        y = df.pop("median_house_value").to_numpy() / 1e5
        name = "California housing"
    else:
        from sklearn.datasets import load_diabetes

        df, y = load_diabetes(return_X_y=True, as_frame=True)
        y, name = y.to_numpy(), f"diabetes (fallback: California housing not found at {os.path.normpath(path)})"
    X = ((df - df.mean()) / df.std()).to_numpy()
    return name, X, y


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=240)
    ap.add_argument("--greedy-rows", type=int, default=24)
    ap.add_argument("--chunk", type=int, default=20)
    args = ap.parse_args()
    import dask.array as da
    from distributed import Client, LocalCluster

    name, X, y = load()
    model = xgb.XGBRegressor(n_estimators=100, max_depth=6, learning_rate=0.1, random_state=0, n_jobs=1).fit(X, y)
    forest = xp.import_model(model)
    d = X.shape[1]
    print(f"{name}: {X.shape[0]} rows x {d} features; XGBoost 100 trees depth 6: {forest.n_leaves} leaves")
    rows, grows = X[:args.rows], X[:args.greedy_rows]
    S = list(range(d))
    xp.pg2(model, rows[:2], S, n_jobs=1)          # warm the split tables
    t_mem = timed(lambda: xp.pg2(model, rows, S, n_jobs=1))
    g_mem = timed(lambda: xp.greedy_pg2_ranking(model, grows, n_jobs=1))
    cheap_rows = X[:2000]
    c_mem = timed(lambda: xp.pg2(model, cheap_rows, [0], n_jobs=1), 3)
    print(f"[{name}] in memory, 1 thread : exact PG2 S=all {args.rows / t_mem:8.1f} rows/s   "
          f"greedy {args.greedy_rows / g_mem:7.2f} rows/s   |S|=1 {len(cheap_rows) / c_mem:9.0f} rows/s")
    result = {"mem": (args.rows / t_mem, args.greedy_rows / g_mem)}
    for workers in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40)
            client = Client(cluster)
        try:
            Xd = da.from_array(rows, chunks=(args.chunk, d))
            Gd = da.from_array(grows, chunks=(max(args.greedy_rows // (2 * workers), 1), d))
            xp.pg2(model, Xd[:4], S).value.compute()        # ship the model, import on the workers
            t = timed(lambda: xp.pg2(model, Xd, S).value.compute())
            g = timed(lambda: xp.greedy_pg2_ranking(model, Gd).compute())
            one = da.from_array(cheap_rows[:400], chunks=(1, d))
            big = da.from_array(cheap_rows[:400], chunks=(400, d))
            t1 = timed(lambda: xp.pg2(model, one, [0]).value.compute(), 2)
            tb = timed(lambda: xp.pg2(model, big, [0]).value.compute(), 2)
            overhead = (t1 - tb) / 400 * workers          # per task, per worker process
            result[workers] = (args.rows / t, args.greedy_rows / g)
            print(f"[{name}] LocalCluster {workers} proc: exact PG2 S=all {args.rows / t:8.1f} rows/s "
                  f"(x{t_mem / t:.2f} of in-memory)   greedy {args.greedy_rows / g:7.2f} rows/s "
                  f"(x{g_mem / g:.2f})   per-task overhead {overhead * 1e3:.2f} ms "
                  f"(400 one-row blocks {t1:.2f} s vs one block {tb:.3f} s)")
        finally:
            client.close()
            cluster.close()
    if 1 in result and 2 in result:
        print(f"[{name}] 2 vs 1 worker processes: exact x{result[2][0] / result[1][0]:.2f}, "
              f"greedy x{result[2][1] / result[1][1]:.2f}")
    print(f"[{name}] per-row cost in memory: exact S=all {t_mem / args.rows * 1e3:.2f} ms, "
          f"greedy {g_mem / args.greedy_rows * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
