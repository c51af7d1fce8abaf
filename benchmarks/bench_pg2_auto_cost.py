"""The cost model of ``method="auto"`` against measured exact PG² time, and what auto costs.

Default mode: for the XGBoost models of ``bench_pg2_production.py`` (California housing, depth 6,
100 and 500 trees; ``--big`` adds 500 × 8 and 1,000 × 10) and |S| = 2, 4 and all features, prints
the measured CPU seconds of one exact ``xp.pg2`` call per row (median over ``--rows`` test rows,
one thread, default pruning) beside :func:`xai_plugins.prediction_gap.exact_seconds`, and their
ratio (estimate / measured): the constants ``AUTO_SECONDS_PER_TREE`` and ``AUTO_SECONDS_PER_PAIR``
are calibrated from this output.

``--ratios``: CPU seconds of one ``xp.pg2(..., method="auto", rtol=0.01)`` call on ``--rows`` rows
against plain exact and plain Monte Carlo calls on the same rows (Monte Carlo with the sample count
auto ran, or with 10,000 samples — the least a 1 % estimate draws — where auto ran exact), best of
3, on the PG² paper's 40-tree diabetes model (``bench_pg2.py``) with |S| = 1, 5, 10 and on the
100 × 6 and 500 × 6 California models with |S| = 2, 4, 8; with ``--ref DIR`` the same calls of the
reference build (the previous main) run in a subprocess right before.

Run: python benchmarks/bench_pg2_auto_cost.py [--rows 5] [--big] [--ratios [--ref DIR]]
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from bench_pg2_production import SIGMA, build_models, california, per_row  # noqa: E402

RTOL, MC_FLOOR = 0.01, 10_000


def calibration(rows, big: bool) -> None:
    """Measured exact time per row beside the cost model's estimate."""
    import xai_plugins as xp
    from xai_plugins.forest import import_model
    from xai_plugins.prediction_gap._auto import exact_seconds

    d = rows.shape[1]
    print(f"exact PG² per row (ms, CPU, median over {len(rows)} rows) vs the auto cost model")
    print(f"{'model':14s} {'|S|':>4s} {'measured':>10s} {'estimate':>10s} {'est/meas':>9s}")
    for name, model in build_models(big).items():
        if not name.startswith("xgb"):
            continue
        forest = import_model(model)
        for k in (2, 4, d):
            S = list(range(k))
            xp.pg2(model, rows[:1], S, SIGMA, n_jobs=1)  # import and cache the model
            measured = per_row(lambda x, S=S: xp.pg2(model, x, S, SIGMA, n_jobs=1), rows)
            estimate = exact_seconds(forest, k)
            print(f"{name:14s} {k:4d} {measured * 1e3:10.2f} {estimate * 1e3:10.2f} {estimate / measured:9.2f}")


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
        n_mc = est.n_samples if est.method == "monte_carlo" else MC_FLOOR
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
    for name, m in build_models(False).items():
        if name.startswith("xgb"):
            m.get_booster().set_param({"nthread": 1})
            for k in (2, 4, rows.shape[1]):
                cases.append((m, rows, list(range(k)), SIGMA))
                labels.append((name, k))
    old = reference(ref, cases) if ref else [None] * len(cases)
    new = auto_costs(cases)
    print(f"method='auto', rtol={RTOL}: CPU ms of one call on {n_rows} rows (best of 3), one thread")
    print(f"{'model':11s} {'|S|':>3s} {'build':>5s} {'ran':>11s} {'auto':>9s} {'exact':>9s} {'MC':>9s} "
          f"{'MC n':>7s} {'auto/exact':>10s} {'auto/MC':>8s}")
    for (name, k), o, nw in zip(labels, old, new):
        for build, r in (("ref", o), ("new", nw)):
            if r is None:
                continue
            print(f"{name:11s} {k:3d} {build:>5s} {r['method']:>11s} {r['auto'] * 1e3:9.2f} {r['exact'] * 1e3:9.2f} "
                  f"{r['mc'] * 1e3:9.2f} {r['n_mc']:7d} {r['auto'] / r['exact']:10.2f} {r['auto'] / r['mc']:8.2f}")


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
    parser.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        with open(args.worker, "rb") as fh:
            print(json.dumps(auto_costs(pickle.load(fh))))
    elif args.ratios:
        ratios(args.rows, args.ref)
    else:
        calibration(california()[1][:args.rows], args.big)


if __name__ == "__main__":
    main()
