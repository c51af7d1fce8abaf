"""Per-call overhead of the public API: a loop of one-row calls against one batched call.

Target (one model identity): a repeated call on the same model costs at most 100 µs more
than its share of a batched call. The reference in the same process is the same loop with the
import cache cleared before every call, which is what every call paid before the cache (the model
was re-imported, an XGBoost model's JSON re-parsed, on each call).

    python benchmarks/bench_call_overhead.py
"""

from __future__ import annotations

import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins.forest import clear_model_cache


def per_call(fn, rows, clear=False) -> float:
    """Median seconds of fn(one row) over the rows (after one warm-up call)."""
    fn(rows[:1])
    times = []
    for i in range(len(rows)):
        if clear:
            clear_model_cache()
        start = time.perf_counter()
        fn(rows[i:i + 1])
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def batched_share(fn, rows, repeats=3) -> float:
    """Seconds per row of fn(all rows), the best of ``repeats`` calls (after one warm-up call)."""
    fn(rows)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(rows)
        best = min(best, time.perf_counter() - start)
    return best / len(rows)


def main():
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    models = {
        "XGBRegressor 40 trees x depth 4": xgb.XGBRegressor(n_estimators=40, max_depth=4, tree_method="hist",
                                                            random_state=0, n_jobs=1).fit(X, y),
        "XGBRegressor 500 trees x depth 6": xgb.XGBRegressor(n_estimators=500, max_depth=6, tree_method="hist",
                                                             random_state=0, n_jobs=1).fit(X, y),
        "RandomForestRegressor 100 trees x depth 8": RandomForestRegressor(n_estimators=100, max_depth=8,
                                                                           random_state=0).fit(X, y),
    }
    rows = np.ascontiguousarray(X[:200])
    calls = {
        "pg2 |S|=2": lambda m: (lambda R: xp.pg2(m, R, [2, 8], sigma=0.3, n_jobs=1)),
        "pgi2 (identity ranking)": lambda m: (lambda R: xp.pgi2(m, R, np.arange(X.shape[1]), sigma=0.3, n_jobs=1)),
    }
    print(f"{'model':44s} {'call':24s} {'batch share':>12s} {'loop':>10s} {'overhead':>10s} "
          f"{'loop, no cache':>15s}")
    for name, model in models.items():
        for label, make in calls.items():
            fn = make(model)
            sample = rows if label.startswith("pg2") else rows[:40]     # PGI² costs d PG² calls per row
            share = batched_share(fn, sample)
            loop = per_call(fn, sample)
            uncached = per_call(fn, sample[:20], clear=True)
            print(f"{name:44s} {label:24s} {1e6 * share:10.1f}µs {1e6 * loop:8.1f}µs "
                  f"{1e6 * (loop - share):8.1f}µs {1e6 * uncached:13.1f}µs")
    print("overhead = median one-row call - batched time per row (target <= 100 µs); 'no cache' re-imports the "
          "model on every call, as every call did before the import cache")


if __name__ == "__main__":
    main()
