"""The cost model of ``method="auto"`` against measured exact PG² time.

For the XGBoost models of ``bench_pg2_production.py`` (California housing, depth 6, 100 and 500
trees; ``--big`` adds 500 × 8 and 1,000 × 10) and |S| = 2, 4 and all features, prints the measured
CPU seconds of one exact ``xp.pg2`` call per row (median over ``--rows`` test rows, one thread,
default pruning) beside :func:`xai_plugins.prediction_gap.exact_seconds`, and their ratio
(estimate / measured): the constants ``AUTO_SECONDS_PER_TREE`` and ``AUTO_SECONDS_PER_PAIR`` are
calibrated from this output.

Run: python benchmarks/bench_pg2_auto_cost.py [--rows 5] [--big]
"""

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_pg2_production import SIGMA, build_models, california, per_row  # noqa: E402


def main() -> None:
    import xai_plugins as xp
    from xai_plugins.forest import import_model
    from xai_plugins.prediction_gap import exact_seconds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    rows = california()[1][:args.rows]
    d = rows.shape[1]
    print(f"exact PG² per row (ms, CPU, median over {len(rows)} rows) vs the auto cost model")
    print(f"{'model':14s} {'|S|':>4s} {'measured':>10s} {'estimate':>10s} {'est/meas':>9s}")
    for name, model in build_models(args.big).items():
        if not name.startswith("xgb"):
            continue
        forest = import_model(model)
        for k in (2, 4, d):
            S = list(range(k))
            xp.pg2(model, rows[:1], S, SIGMA, n_jobs=1)  # import and cache the model
            measured = per_row(lambda x, S=S: xp.pg2(model, x, S, SIGMA, n_jobs=1), rows)
            estimate = exact_seconds(forest, k)
            print(f"{name:14s} {k:4d} {measured * 1e3:10.2f} {estimate * 1e3:10.2f} {estimate / measured:9.2f}")


if __name__ == "__main__":
    main()
