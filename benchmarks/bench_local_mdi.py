"""Local MDI speed and memory against the forest's own ``predict`` and the previous main.

Workloads (each a fully grown ``RandomForestRegressor``):
- california: California housing (8 numeric features, ``total_bedrooms`` NaN kept: scikit-learn
  routes them), 100 trees, local MDI of 5,000 rows;
- friedman (``--big``): ``make_friedman1`` with 100,000 rows and 10 features plus a duplicate of
  feature 0, ``--trees`` trees (500 by default; about 126,000 nodes a tree: 128 trees make the 16 M-node
  forest, 500 trees 63 M), local MDI of all 100,000 rows.

Per workload and thread count (n_jobs = 1 and 2 for both: scikit-learn's ``predict`` runs its
trees on ``n_jobs`` joblib threads, local MDI its row chunks on ``n_jobs`` threads) the best of a
few runs of ``model.predict(rows)`` and ``xp.local_mdi`` (the Forest imported and cached
beforehand, as after a first call), timed alternately in one subprocess per build: this one and,
with ``--ref DIR``, the previous main, on the same pickled model and rows. CPU time for n_jobs = 1
(steadier when other processes share the cores), wall time for n_jobs = 2; the ratios to
predict (old/now: the previous main's ratio over this one's), the time per million nodes, and
whether the two builds' results are bitwise identical. ``--memory`` adds, in a fresh
subprocess per build, the peak of numpy allocations (tracemalloc) and the peak resident memory of a
first ``local_mdi`` call (import included) on the unpickled model, beside the model's own size and
the output's.

Fitted models are cached in the temp directory (``--refit`` rebuilds them).

Run: python benchmarks/bench_local_mdi.py [--ref /work/oldmain] [--big [--trees 500] [--big-only] [--big-repeat 2]]
     [--one-thread] [--memory]
"""

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

import _builds  # benchmarks/_builds.py, beside this script
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CALIFORNIA = ROOT.parent / "shared" / "datasets" / "california_housing.csv"


def best_of(fn, repeat, clock=time.perf_counter):
    """Smallest time of ``repeat`` calls of fn on ``clock``."""
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return min(times)


def workload(name: str, trees: int, refit: bool) -> tuple[str, int]:
    """Path of a pickle holding (model, rows) for the workload (fitted once, cached), and its node count."""
    path = Path(tempfile.gettempdir()) / f"xai_bench_local_mdi_{name}_{trees}.pkl"
    if refit or not path.exists():
        from sklearn.ensemble import RandomForestRegressor

        if name == "california":
            import pandas as pd

            frame = pd.read_csv(CALIFORNIA).drop(columns="ocean_proximity")
            y = frame.pop("median_house_value").to_numpy()
            X = frame.to_numpy(dtype=np.float64)
            rows = X[np.random.default_rng(0).choice(len(X), 5_000, replace=False)]
        else:
            from sklearn.datasets import make_friedman1

            X, y = make_friedman1(n_samples=100_000, n_features=10, random_state=0)
            X = np.column_stack([X, X[:, 0]])
            rows = X
        t = time.perf_counter()
        model = RandomForestRegressor(n_estimators=trees, random_state=0, n_jobs=-1).fit(X, y)
        print(f"{name}: fitted {trees} trees in {time.perf_counter() - t:.0f} s (not counted)", flush=True)
        with open(path, "wb") as fh:
            pickle.dump((model, np.ascontiguousarray(rows)), fh, protocol=pickle.HIGHEST_PROTOCOL)
    with open(path, "rb") as fh:
        model, _ = pickle.load(fh)
    return str(path), sum(est.tree_.node_count for est in model.estimators_)


def time_local_mdi(path: str, repeat: int, out: str | None, threads: int = 2) -> dict:
    """This build's local MDI and the model's predict on the pickled workload, timed alternately:
    CPU time with n_jobs = 1 (steadier on a loaded machine) and, unless ``threads`` is 1, wall time
    with n_jobs = 2; the result saved to ``out``."""
    import xai_plugins as xp

    with open(path, "rb") as fh:
        model, rows = pickle.load(fh)
    t = time.perf_counter()
    result = xp.local_mdi(model, rows)
    times = {"first call": time.perf_counter() - t}
    for jobs, clock in ((1, time.process_time), (2, time.perf_counter))[:threads]:
        model.set_params(n_jobs=jobs)
        key = f"{jobs} {'cpu' if clock is time.process_time else 'wall'}"
        pred, mdi = [], []
        for _ in range(repeat):
            pred.append(best_of(lambda: model.predict(rows), 1, clock))
            mdi.append(best_of(lambda jobs=jobs: xp.local_mdi(model, rows, n_jobs=jobs), 1, clock))
        times[key] = (min(pred), min(mdi))
    if out:
        np.save(out, result)
    return times


def memory(path: str) -> dict:
    """Peak numpy allocations and resident memory of a first local MDI call on the unpickled model."""
    import tracemalloc

    import xai_plugins as xp

    with open(path, "rb") as fh:
        model, rows = pickle.load(fh)
    model_bytes = sum(est.tree_.__getstate__()["nodes"].nbytes + est.tree_.value.nbytes for est in model.estimators_)
    exact = _builds.reset_peak()                  # the peak of this call, not the unpickling's before it
    rss_before = _builds.resident()
    tracemalloc.start()
    result = xp.local_mdi(model, rows)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"model": model_bytes, "output": result.nbytes, "traced peak": traced,
            "rss growth": _builds.peak_growth(rss_before, exact)}


def in_subprocess(build: Path, *args: str) -> dict:
    """Run this script's worker mode with ``build``'s xai_plugins first on the path."""
    return _builds.in_subprocess(__file__, build, *args)


def report(name: str, path: str, nodes: int, ref: str | None, repeat: int, with_memory: bool, threads: int) -> None:
    """Print one workload's figures."""
    with open(path, "rb") as fh:
        model, rows = pickle.load(fh)
    print(f"\n{name}: {len(model.estimators_)} trees, {nodes / 1e6:.2f} M nodes, {len(rows):,} rows x "
          f"{rows.shape[1]} features")
    del model, rows   # the workers load their own copy: one big forest in memory at a time
    with tempfile.TemporaryDirectory() as tmp:
        new = in_subprocess(ROOT, "--worker", path, str(repeat), f"{tmp}/new.npy", str(threads))
        old = in_subprocess(Path(ref), "--worker", path, str(repeat), f"{tmp}/old.npy", str(threads)) if ref else None
        same = "" if old is None else "; results bitwise identical to the previous main: " \
            + str(np.array_equal(np.load(f"{tmp}/new.npy"), np.load(f"{tmp}/old.npy")))
    print(f"first call (import + local MDI, n_jobs=None): now {new['first call']:.3f} s"
          + (f", previous main {old['first call']:.3f} s" if old else "") + same)
    print(f"{'n_jobs':>10s} {'predict s':>10s} {'MDI now s':>10s} {'now/pred':>9s} {'s/M nodes':>10s}"
          + (f" {'predict s':>10s} {'MDI old s':>10s} {'old/pred':>9s} {'old/now':>8s}" if old else ""))
    for key in ("1 cpu", "2 wall")[:threads]:
        pred, now = new[key]
        line = f"{key:>10s} {pred:10.3f} {now:10.3f} {now / pred:9.2f} {now / nodes * 1e6:10.4f}"
        if old:
            old_pred, old_mdi = old[key]
            old_ratio = old_mdi / old_pred
            line += f" {old_pred:10.3f} {old_mdi:10.3f} {old_ratio:9.2f} {old_ratio * pred / now:8.2f}"
        print(line, flush=True)
    if with_memory:
        for label, build in [("now", ROOT)] + ([("previous main", Path(ref))] if ref else []):
            m = in_subprocess(build, "--memory-worker", path)
            print(f"memory ({label}): model {m['model'] / 2**20:.0f} MiB, output {m['output'] / 2**20:.1f} MiB; first "
                  f"call: numpy peak {m['traced peak'] / 2**20:.0f} MiB, resident growth {m['rss growth'] / 2**20:.0f} "
                  f"MiB; limit 2 x model + output = {(2 * m['model'] + m['output']) / 2**20:.0f} MiB", flush=True)


def main():
    if sys.argv[1:2] == ["--worker"]:
        path, repeat, out, threads = sys.argv[2:6]
        print(json.dumps(time_local_mdi(path, int(repeat), out, int(threads))))
        return
    if sys.argv[1:2] == ["--memory-worker"]:
        print(json.dumps(memory(sys.argv[2])))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", help="checkout of the previous main (its C extension built in place)")
    parser.add_argument("--big", action="store_true", help="also the friedman workload (100,000 rows)")
    parser.add_argument("--trees", type=int, default=500, help="trees of the friedman forest")
    parser.add_argument("--memory", action="store_true", help="peak memory of a first call")
    parser.add_argument("--refit", action="store_true", help="refit the cached models")
    parser.add_argument("--big-only", action="store_true", help="only the friedman workload (with --big)")
    parser.add_argument("--big-repeat", type=int, default=2, help="timed runs of the friedman workload")
    parser.add_argument("--one-thread", action="store_true", help="time n_jobs = 1 only (CPU time)")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    runs = ([] if args.big and args.big_only else [("california", 100, 5)]) \
        + ([("friedman", args.trees, args.big_repeat)] if args.big else [])
    for name, trees, repeat in runs:
        path, nodes = workload(name, trees, args.refit)
        report(name, path, nodes, args.ref, repeat, args.memory, 1 if args.one_thread else 2)


if __name__ == "__main__":
    main()
