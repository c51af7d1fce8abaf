"""Local MDI speed: 10,000 rows on a 100-tree RandomForestRegressor (diabetes features, rows
resampled) against the same forest's own predict (n_jobs=1 and 2) and shap.TreeExplainer.

Run: python benchmarks/bench_local_mdi.py [--shap-rows 200]
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shap-rows", type=int, default=200, help="rows explained by TreeExplainer (extrapolated)")
    args = parser.parse_args()
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = X[rng.integers(0, len(X), 10_000)] + rng.normal(0, 1e-3, (10_000, X.shape[1]))
    model = RandomForestRegressor(n_estimators=100, random_state=0).fit(X, y)
    forest = xp.import_model(model)
    for jobs in (1, 2):
        model.set_params(n_jobs=jobs)
        t_pred = best_of(lambda: model.predict(rows))
        t_mdi = best_of(lambda: xp.local_mdi(forest, rows, n_jobs=jobs))
        print(f"n_jobs={jobs}: local MDI {1e3 * t_mdi:.1f} ms, forest.predict {1e3 * t_pred:.1f} ms, "
              f"ratio {t_mdi / t_pred:.2f}")
    import shap

    explainer = shap.TreeExplainer(model)
    sub = rows[:args.shap_rows]
    t_shap = best_of(lambda: explainer(sub, check_additivity=False), 1) * len(rows) / len(sub)
    t_mdi = best_of(lambda: xp.local_mdi(forest, rows))
    print(f"shap.TreeExplainer on 10,000 rows (extrapolated from {len(sub)}): {t_shap:.2f} s; "
          f"local MDI {1e3 * t_mdi:.1f} ms -> {t_shap / t_mdi:.0f}x faster")


if __name__ == "__main__":
    main()
