"""TreeSHAP speed: the package's C TreeSHAP (``xp.tree_shap``) beside shap's ``TreeExplainer`` and XGBoost's and
LightGBM's native contributions (``pred_contribs=True`` / ``pred_contrib=True``), on one thread, per row.

Workloads (California housing, 8 features, 20,640 rows; the model fitted once and cached in the temp directory):
- xgboost 500 x depth 6 (``XGBRegressor``, ``nthread=1``);
- lightgbm 1,000 x 63 leaves (``LGBMRegressor``, ``num_threads=1``);
- sklearn random forest 100 trees, ``min_samples_leaf=5``.

Path-dependent values of ``--rows`` rows (default 1,000): the best of ``--repeat`` runs of each, CPU time (one
thread everywhere), the ratio to ours, and the largest difference between ours and each other's values.
Interventional values against ``--background`` rows (default 100) of ``--rows // 10`` rows beside shap's
``TreeExplainer(feature_perturbation="interventional")``.

Run: python benchmarks/bench_treeshap.py [--rows 1000] [--background 100] [--repeat 3]
"""

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
CALIFORNIA = ROOT.parent / "shared" / "datasets" / "california_housing.csv"


def data():
    """California housing features and target (the shared CSV, else scikit-learn's copy)."""
    if CALIFORNIA.exists():
        import pandas as pd

        frame = pd.read_csv(CALIFORNIA).drop(columns="ocean_proximity")
        y = frame.pop("median_house_value").to_numpy(float)
        return frame.to_numpy(float), y
    from sklearn.datasets import fetch_california_housing

    X, y = fetch_california_housing(return_X_y=True)
    return X, y


def model(name: str, X, y):
    """The workload's fitted model (cached in the temp directory)."""
    path = Path(tempfile.gettempdir()) / f"xai_bench_treeshap_{name}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    if name == "xgboost":
        import xgboost

        fitted = xgboost.XGBRegressor(n_estimators=500, max_depth=6, nthread=1).fit(X, y)
    elif name == "lightgbm":
        import lightgbm

        fitted = lightgbm.LGBMRegressor(n_estimators=1000, num_leaves=63, num_threads=1, verbose=-1).fit(X, y)
    else:
        from sklearn.ensemble import RandomForestRegressor

        fitted = RandomForestRegressor(n_estimators=100, min_samples_leaf=5, random_state=0, n_jobs=1).fit(X, y)
    path.write_bytes(pickle.dumps(fitted))
    return fitted


def best_of(fn, repeat):
    """(smallest CPU seconds of ``repeat`` calls, the last call's result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def native(name: str, fitted, rows):
    """The library's own contributions (features only, bias dropped), or None."""
    if name == "xgboost":
        import xgboost

        booster = fitted.get_booster()
        return lambda: booster.predict(xgboost.DMatrix(rows, nthread=1), pred_contribs=True)[:, :-1]
    if name == "lightgbm":
        return lambda: fitted.predict(rows, pred_contrib=True, num_threads=1)[:, :-1]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--background", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import shap

    import xai_plugins as xp

    X, y = data()
    rows, background = X[: args.rows], X[-args.background:]
    print(f"{'workload':<10} {'method':<16} {'rows':>6} {'ours ms/row':>12} {'other':<22} {'other ms/row':>13} "
          f"{'other/ours':>10} {'max |Δ|':>9}")
    for name in ("xgboost", "lightgbm", "sklearn"):
        fitted = model(name, X, y)
        xp.import_model(fitted)                                   # imported once, as after a first call
        ours_s, ours = best_of(lambda: xp.tree_shap(fitted, rows, n_jobs=1).values, args.repeat)
        explainer = shap.TreeExplainer(fitted)
        others = [("shap TreeExplainer", lambda: explainer.shap_values(rows, check_additivity=False))]
        if native(name, fitted, rows) is not None:
            others.append((f"{name} native", native(name, fitted, rows)))
        for label, fn in others:
            seconds, theirs = best_of(fn, args.repeat)
            print(f"{name:<10} {'path-dependent':<16} {len(rows):>6} {1e3 * ours_s / len(rows):>12.3f} {label:<22} "
                  f"{1e3 * seconds / len(rows):>13.3f} {seconds / ours_s:>10.2f} "
                  f"{np.abs(np.asarray(theirs) - ours).max():>9.2g}")
        few = rows[: max(1, args.rows // 10)]
        ours_s, ours = best_of(lambda: xp.tree_shap(fitted, few, background=background, n_jobs=1).values,
                               args.repeat)
        interventional = shap.TreeExplainer(fitted, data=background, feature_perturbation="interventional")
        seconds, theirs = best_of(lambda: interventional.shap_values(few, check_additivity=False), args.repeat)
        print(f"{name:<10} {'interventional':<16} {len(few):>6} {1e3 * ours_s / len(few):>12.3f} "
              f"{'shap TreeExplainer':<22} {1e3 * seconds / len(few):>13.3f} {seconds / ours_s:>10.2f} "
              f"{np.abs(np.asarray(theirs) - ours).max():>9.2g}")


if __name__ == "__main__":
    main()
