"""Exact PG² speed on the PG² paper's "bigger" XGBoost model (standardised diabetes, 40 trees,
depth 4, eta 0.2, subsample 0.8, seed 42, hist), against a Monte Carlo estimate through
XGBoost's own inplace_predict in the same process, plus leaf-pair throughput on a 500-tree,
depth-6 model. Single-threaded C calls (n_jobs=1) unless stated, with the public API's default
certified pruning (PRUNE_RTOL) except for the throughput line, which sums every pair.

Run: python benchmarks/bench_pg2.py
"""

import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_diabetes

import xai_plugins as xp
from xai_plugins import _native
from xai_plugins.forest import import_model
from xai_plugins.perturbation import cdf_table, make_perturbation
from xai_plugins.prediction_gap._boundaries import split_boundaries
from xai_plugins.prediction_gap._exact import PRUNE_RTOL


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return np.array(times)


def main():
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=4, learning_rate=0.2, subsample=0.8, random_state=42,
                             tree_method="hist").fit(X, y)
    forest = import_model(model)
    d = X.shape[1]
    rows = X[:100]
    rng = np.random.default_rng(0)
    splits = split_boundaries(forest)
    table = cdf_table(splits, rows, make_perturbation(d, 0.3), range(d))
    print(f"model: {forest.n_trees} trees, {forest.n_leaves} leaves, max depth {forest.max_depth}")
    print("per-call exact PG² (one row, C core, median over 100 rows x random S):")
    medians = {}
    for k in (1, 3, 5, d):
        per_call = []
        for i in range(100):
            mask = np.zeros((1, 1, d), dtype=np.uint8)
            mask[0, 0, rng.choice(d, k, replace=False)] = 1
            per_call.append(timed(lambda: _native.pg2(splits.c_forest, splits.cdf_offset, rows[i:i + 1], mask,
                                                      table[i:i + 1], n_jobs=1, prune_rtol=PRUNE_RTOL), 3).min())
        medians[k] = np.median(per_call)
        print(f"  |S|={k:2d}: median {1e3 * medians[k]:.4f} ms   p90 {1e3 * np.quantile(per_call, 0.9):.4f} ms")
    api = timed(lambda: xp.pg2(forest, rows[:1], list(range(5)), sigma=0.3, n_jobs=1), 50)
    print(f"  public xp.pg2 call (|S|=5, incl. validation + CDF table): median {1e3 * np.median(api):.3f} ms")

    greedy = [timed(lambda: _native.greedy_pg2(splits.c_forest, splits.cdf_offset, rows[i:i + 1], table[i:i + 1],
                                                   np.ones(1), n_jobs=1, prune_rtol=PRUNE_RTOL), 1)[0]
              for i in range(50)]
    print(f"greedy ranking of one row (C core): median {1e3 * np.median(greedy):.3f} ms")
    t_batch = timed(lambda: xp.greedy_pg2_ranking(forest, rows, sigma=0.3, n_jobs=-1), 1)[0]
    print(f"greedy ranking, 100 rows, public API, 2 threads: {1e3 * t_batch / 100:.3f} ms per row")

    full = np.ones((1, 1, d), dtype=np.uint8)
    exact_t = np.median([timed(lambda: _native.pg2(splits.c_forest, splits.cdf_offset, rows[i:i + 1], full,
                                                     table[i:i + 1], n_jobs=1, prune_rtol=PRUNE_RTOL), 3).min()
                         for i in range(20)])
    booster = model.get_booster()
    booster.set_param({"nthread": 1})

    def monte_carlo(i):
        xp_ = np.repeat(rows[i:i + 1], 1000, axis=0) + rng.normal(0, 0.3, (1000, d))
        f = booster.inplace_predict(xp_.astype(np.float32))
        f0 = booster.inplace_predict(rows[i:i + 1].astype(np.float32))
        return np.mean((f - f0) ** 2)

    mc_t = np.median([timed(lambda: monte_carlo(i), 3).min() for i in range(20)])
    print(f"S = all: exact {1e3 * exact_t:.4f} ms vs 1,000-sample Monte Carlo via inplace_predict "
          f"{1e3 * mc_t:.4f} ms -> ratio exact/MC = {exact_t / mc_t:.3f}")

    big = xgb.XGBRegressor(n_estimators=500, max_depth=6, learning_rate=0.05, random_state=0,
                           tree_method="hist").fit(X, y)
    bforest = import_model(big)
    bsplits = split_boundaries(bforest)
    btable = cdf_table(bsplits, rows[:4], make_perturbation(d, 0.3), range(d))
    mask = np.ones((4, 1, d), dtype=np.uint8)
    _, terms = _native.pg2(bsplits.c_forest, bsplits.cdf_offset, rows[:4], mask, btable, n_jobs=1)
    elapsed = timed(lambda: _native.pg2(bsplits.c_forest, bsplits.cdf_offset, rows[:4], mask, btable, n_jobs=1),
                    3).min()   # every pair (prune_rtol=0): the throughput of the leaf-pair loop itself
    print(f"500 trees x depth 6 ({bforest.n_leaves} leaves), S = all, 4 rows: {terms:.3e} leaf-pair terms in "
          f"{elapsed:.3f} s (best of 3) -> {terms / elapsed:.3e} pair terms / s / core")


if __name__ == "__main__":
    main()
