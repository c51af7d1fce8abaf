"""The cost model of ``method="auto"`` against measured times, and what auto costs.

Default mode: for the California models (XGBoost 100 × 6 and 500 × 6, a random forest, LightGBM 300 × 31 and
1,000 × 63; ``--big`` adds XGBoost 500 × 8 and 1,000 × 10) and the PG² paper's 40 × 4 model, and |S| = 2, 4 and all
features, prints the measured CPU seconds of one exact ``xp.pg2`` call per row (best of 2 calls on ``--rows`` test
rows, one thread, default pruning) beside :func:`xai_plugins.prediction_gap.exact_seconds` of the leaves those rows
reach, and their ratio (estimate / measured): ``AUTO_SECONDS_PER_ROW``, ``_PER_LEAF`` and ``_PER_PAIR`` are fitted
on this output.

``--samples``: the measured CPU seconds of one Monte Carlo sample through each library's own predictor (XGBoost,
LightGBM, CatBoost, scikit-learn's random forest, GradientBoosting and HistGradientBoosting, onnxruntime where
skl2onnx is installed) beside ``sample_seconds``, which ``AUTO_SECONDS_PER_LEVEL`` is calibrated from.

``--ratios``: CPU seconds of one ``xp.pg2(..., method="auto", rtol=0.01)`` call on ``--rows`` rows against plain
exact and plain Monte Carlo calls on the same rows, best of 3. The Monte Carlo reference draws the samples auto's
pilot asks for a 1 % estimate (at least 10,000), whichever method auto ran, so that "the cheaper of exact and
Monte Carlo" is the cheaper way to the same accuracy. Models: the PG² paper's 40-tree diabetes model with |S| = 1,
5, 10 and the California XGBoost 100 × 6 and 500 × 6, random forest and LightGBM 1,000 × 63 models with |S| = 2, 4,
8; with ``--ref DIR`` the same calls of the reference build (the previous main) run in a subprocess right before.

Run: python benchmarks/bench_pg2_auto_cost.py [--rows 5] [--big] [--samples] [--ratios [--ref DIR]]
"""

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from bench_pg2_production import SIGMA, build_models, california  # noqa: E402

RTOL, MC_FLOOR = 0.01, 10_000


def lightgbm_models() -> dict:
    """The California LightGBM regressors of the calibration (one thread)."""
    import lightgbm as lgb

    X_train, _, y_train = california()
    return {f"lgbm {trees}x{leaves}": lgb.LGBMRegressor(n_estimators=trees, num_leaves=leaves, verbose=-1, n_jobs=1,
                                                         random_state=0).fit(X_train, y_train)
            for trees, leaves in ((300, 31), (1000, 63))}


def calibration(rows, big: bool) -> None:
    """Measured exact time per row beside the cost model's estimate from the leaves the rows reach."""
    import xai_plugins as xp
    from xai_plugins.forest import import_model
    from xai_plugins.prediction_gap._auto import exact_seconds

    paper, X_paper = paper_model()
    cases = [(name, model, rows) for name, model in {**build_models(big), **lightgbm_models()}.items()]
    cases.append(("paper 40x4", paper, X_paper[:len(rows)]))
    print(f"exact PG² per row (ms, CPU, best of 2 calls on {len(rows)} rows) vs the auto cost model")
    print(f"{'model':34s} {'|S|':>4s} {'measured':>10s} {'estimate':>10s} {'est/meas':>9s}")
    for name, model, x in cases:
        forest = import_model(model)
        d = x.shape[1]
        for k in (2, 4, d):
            S = list(range(k))
            masks = np.zeros(x.shape, dtype=bool)
            masks[:, S] = True
            xp.pg2(model, x[:1], S, SIGMA, n_jobs=1)  # import and cache the model
            measured = best_of(lambda S=S: xp.pg2(model, x, S, SIGMA, n_jobs=1), 2) / len(x)
            estimate = exact_seconds(forest, k, x, masks)
            print(f"{name:34s} {k:4d} {measured * 1e3:10.3f} {estimate * 1e3:10.3f} {estimate / measured:9.2f}")


def sample_calibration(n_samples: int = 4000) -> None:
    """Measured seconds of one Monte Carlo sample per library beside ``sample_seconds``."""
    import catboost as cb
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor

    import xai_plugins as xp
    from xai_plugins.forest import import_model
    from xai_plugins.prediction_gap._auto import sample_seconds

    X_train, X_test, y_train = california()
    X_train, y_train, rows = X_train[:4000], y_train[:4000], X_test[:3]
    models = {"xgboost 400x6": xgb.XGBRegressor(n_estimators=400, max_depth=6, n_jobs=1),
              "catboost 400x6": cb.CatBoostRegressor(iterations=400, depth=6, verbose=0, thread_count=1),
              "sklearn RF 100, min_samples_leaf=5": RandomForestRegressor(n_estimators=100, min_samples_leaf=5),
              "sklearn GB 400x4": GradientBoostingRegressor(n_estimators=400, max_depth=4),
              "sklearn HGB 400": HistGradientBoostingRegressor(max_iter=400, early_stopping=False)}
    models = {name: m.fit(X_train, y_train) for name, m in models.items()} | lightgbm_models()
    try:
        from skl2onnx import to_onnx

        rf = RandomForestRegressor(n_estimators=50, max_depth=8, random_state=0).fit(X_train, y_train)
        with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as fh:
            fh.write(to_onnx(rf, X_train[:1].astype(np.float32)).SerializeToString())
        models["onnxruntime RF 50x8"] = xp.load_model(fh.name)
    except ImportError:
        pass
    print(f"one Monte Carlo sample through the model's own predictor (µs, CPU; {n_samples} samples on {len(rows)} "
          "rows, |S| = 3)")
    print(f"{'model':34s} {'measured':>10s} {'estimate':>10s} {'est/meas':>9s}")
    for name, model in models.items():
        xp.pg2(model, rows[:1], [0, 1], SIGMA, n_jobs=1)
        measured = best_of(lambda m=model: xp.pg2(m, rows, [0, 1, 2], SIGMA, method="monte_carlo",
                                                  n_samples=n_samples, random_state=0), 2) / len(rows) / n_samples
        estimate = sample_seconds(import_model(model))
        print(f"{name:34s} {measured * 1e6:10.2f} {estimate * 1e6:10.2f} {estimate / measured:9.2f}")


def best_of(fn, repeat=3) -> float:
    """Least CPU seconds of ``repeat`` calls of fn."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def auto_costs(cases: list) -> list:
    """Per (model, rows, S, sigma): CPU seconds of auto, exact and Monte Carlo, with whatever
    xai_plugins is importable, and the method auto ran."""
    import xai_plugins as xp

    out = []
    for model, rows, S, sigma in cases:
        xp.pg2(model, rows[:1], S, sigma, n_jobs=1)  # import and cache the model
        est = xp.pg2(model, rows, S, sigma, method="auto", rtol=RTOL, random_state=0, n_jobs=1)
        asked = re.search(r"\((\d+) samples for", est.reason)      # the pilot's count, whichever method ran
        n_mc = max(MC_FLOOR, est.n_samples if est.method == "monte_carlo" else int(asked.group(1)) if asked else 0)
        out.append({
            "method": est.method,
            "auto": best_of(lambda: xp.pg2(model, rows, S, sigma, method="auto", rtol=RTOL, random_state=0,
                                           n_jobs=1)),
            "exact": best_of(lambda: xp.pg2(model, rows, S, sigma, n_jobs=1)),
            "mc": best_of(lambda: xp.pg2(model, rows, S, sigma, method="monte_carlo", n_samples=n_mc,
                                         random_state=0)),
            "n_mc": n_mc})
    return out


def paper_model():
    """The PG² paper's "bigger" model (bench_pg2.py) and its standardised diabetes rows."""
    import xgboost as xgb
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=4, learning_rate=0.2, subsample=0.8, random_state=42,
                             tree_method="hist", n_jobs=1).fit(X, y)
    return model, X


def ratios(n_rows: int, ref) -> None:
    """auto / exact and auto / Monte Carlo, new build beside the reference build."""
    model, X = paper_model()
    cases, labels = [], []
    for k in (1, 5, 10):
        cases.append((model, X[:n_rows], list(range(k)), 0.3))
        labels.append(("paper 40x4", k))
    _, X_test, _ = california()
    rows = X_test[np.random.default_rng(1).choice(len(X_test), n_rows, replace=False)]
    for name, m in {**build_models(False), **lightgbm_models()}.items():
        if name.startswith("xgb"):
            m.get_booster().set_param({"nthread": 1})
        if name.startswith(("xgb", "rf", "lgbm 1000")):
            for k in (2, 4, rows.shape[1]):
                cases.append((m, rows, list(range(k)), SIGMA))
                labels.append((name[:11], k))
    old = reference(ref, cases) if ref else [None] * len(cases)
    new = auto_costs(cases)
    print(f"method='auto', rtol={RTOL}: CPU ms of one call on {n_rows} rows (best of 3), one thread")
    print(f"{'model':11s} {'|S|':>3s} {'build':>5s} {'ran':>11s} {'auto':>9s} {'exact':>9s} {'MC':>9s} "
          f"{'MC n':>7s} {'auto/exact':>10s} {'auto/MC':>8s} {'auto/cheaper':>12s}")
    for (name, k), o, nw in zip(labels, old, new):
        for build, r in (("ref", o), ("new", nw)):
            if r is None:
                continue
            print(f"{name:11s} {k:3d} {build:>5s} {r['method']:>11s} {r['auto'] * 1e3:9.2f} {r['exact'] * 1e3:9.2f} "
                  f"{r['mc'] * 1e3:9.2f} {r['n_mc']:7d} {r['auto'] / r['exact']:10.2f} {r['auto'] / r['mc']:8.2f} "
                  f"{r['auto'] / min(r['exact'], r['mc']):12.2f}")


def reference(ref: str, cases: list) -> list:
    """auto_costs() in a subprocess that imports the reference build from ``ref``."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump(cases, fh)
    env = dict(os.environ, PYTHONPATH=str(Path(ref).resolve()) + os.pathsep + str(Path(__file__).parent))
    done = subprocess.run([sys.executable, __file__, "--worker", fh.name], env=env, capture_output=True, text=True,
                          cwd=str(Path(ref).resolve()), check=True)
    os.unlink(fh.name)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--ratios", action="store_true", help="auto against plain exact and Monte Carlo")
    parser.add_argument("--samples", action="store_true", help="one Monte Carlo sample per library")
    parser.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        with open(args.worker, "rb") as fh:
            print(json.dumps(auto_costs(pickle.load(fh))))
    elif args.ratios:
        ratios(args.rows, args.ref)
    elif args.samples:
        sample_calibration()
    else:
        calibration(california()[1][:args.rows], args.big)


if __name__ == "__main__":
    main()
