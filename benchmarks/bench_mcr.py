"""RF-MCR speed beside the previous main: CPU seconds per (feature, permutation) relative to one
``predict`` of the same forest on the same rows, both builds on the same pickled model and rows.

Workloads (bootstrap-free forests from ``fit_rashomon_forest``):
- readme: binary classification (a logistic signal in the first half of 8 normal features, two of
  them noisy copies of each other), 100,000 rows, 500 trees of depth 8, every feature;
- friedman (``--big``): ``make_friedman1`` (10 features) plus a duplicate of feature 0, 100,000
  rows, ``--big-trees`` fully grown regression trees (about 200,000 nodes each: 80 trees make the
  16 M-node forest), ``--big-features`` (feature 0 by default).

Each build runs in its own subprocess (``--ref DIR``: the previous main, with its C extension built
in place), one thread (``n_jobs=1``; CPU time, steadier on a shared machine), the two builds
alternating ``--rounds`` times; per build the best round. ``predict`` is timed just before and just
after the MCR run and the two averaged: the shared machine's pace drifts by tens of percent within
minutes, and one predict timed apart from the MCR run moved the ratio as much as the code did.
Printed per workload: predict seconds, MCR seconds, predicts per (feature, permutation) for both
builds, and whether the two builds' tables are bitwise identical. Fitted models are cached in the
temp directory (``--refit``).

Run: python benchmarks/bench_mcr.py [--ref /work/oldmain] [--big [--big-trees 80] [--big-only]] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import tempfile
import time
from pathlib import Path

import _builds  # benchmarks/_builds.py, beside this script
import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def make_data(n, d, seed=0):
    """Binary classification: a logistic signal in the first half of the features, two of them
    noisy copies of each other, the rest noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 1] = X[:, 0] + 0.2 * rng.normal(size=n)
    k = max(2, d // 2)
    logit = X[:, :k] @ np.linspace(1.5, 0.5, k)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


def workload(name: str, rows: int, trees: int, refit: bool) -> tuple[str, int]:
    """Path of a pickle holding (model, X, y) for the workload (fitted once, cached), and its node count."""
    from xai_plugins.mcr import fit_rashomon_forest

    path = Path(tempfile.gettempdir()) / f"xai_bench_mcr_{name}_{rows}_{trees}.pkl"
    if refit or not path.exists():
        t = time.perf_counter()
        if name == "readme":
            X, y = make_data(rows, 8)
            model = fit_rashomon_forest(X, y, n_estimators=trees, random_state=0, max_depth=8, n_jobs=-1)
        else:
            from sklearn.datasets import make_friedman1

            X, y = make_friedman1(n_samples=rows, n_features=10, random_state=0)
            X = np.column_stack([X, X[:, 0]])
            model = fit_rashomon_forest(X, y, task="regression", n_estimators=trees, random_state=0, n_jobs=-1)
        print(f"{name}: fitted {trees} trees in {time.perf_counter() - t:.0f} s (not counted)", flush=True)
        with open(path, "wb") as fh:
            pickle.dump((model, X, y), fh, protocol=pickle.HIGHEST_PROTOCOL)
    with open(path, "rb") as fh:
        model, _, _ = pickle.load(fh)
    return str(path), sum(est.tree_.node_count for est in model.estimators_)


def worker(path: str, features: str, permutations: int, out: str) -> dict:
    """This build's MCR and the model's predict on the pickled workload (one thread, CPU time);
    the table saved to ``out``."""
    from xai_plugins.mcr import model_class_reliance

    with open(path, "rb") as fh:
        model, X, y = pickle.load(fh)
    model.set_params(n_jobs=1)
    feats = None if features == "all" else [int(f) for f in features.split(",")]
    predict = model.predict_proba if hasattr(model, "classes_") else model.predict

    def predict_seconds():
        t = time.process_time()
        predict(X)
        return time.process_time() - t

    before = predict_seconds()
    t = time.process_time()
    res = model_class_reliance(model, X, y, features=feats, n_permutations=permutations, random_state=0, n_jobs=1,
                               progress=False)
    mcr_s = time.process_time() - t
    predict_s = (before + predict_seconds()) / 2   # the machine's pace on either side of the MCR run
    res.table.to_pickle(out)
    pairs = len(res.table) * permutations
    return {"predict": predict_s, "mcr": mcr_s, "pairs": pairs,
            "rss MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def in_subprocess(build: Path, *args: str) -> dict:
    """Run this script's worker mode with ``build``'s xai_plugins first on the path."""
    return _builds.in_subprocess(__file__, build, *args)


def report(name: str, path: str, nodes: int, features: str, permutations: int, ref: str | None, rounds: int):
    """Print one workload's figures, the builds alternating ``rounds`` times."""
    import pandas as pd

    builds = {"now": ROOT} | ({"previous main": Path(ref)} if ref else {})
    best: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for label, build in builds.items():
                out = f"{tmp}/{label.replace(' ', '_')}.pkl"
                r = in_subprocess(build, "--worker", path, features, str(permutations), out)
                r["ratio"] = r["mcr"] / r["pairs"] / r["predict"]
                if label not in best or r["ratio"] < best[label]["ratio"]:
                    best[label] = r
        same = ""
        if ref:
            a, b = (pd.read_pickle(f"{tmp}/{label.replace(' ', '_')}.pkl") for label in builds)
            same = f"; tables bitwise identical to the previous main: {a.equals(b)}"
    print(f"\n{name}: {nodes / 1e6:.2f} M nodes, features {features}, {permutations} permutations, one thread "
          f"(CPU s, best of {rounds}){same}")
    print(f"{'build':>14s} {'predict s':>10s} {'MCR s':>8s} {'pairs':>6s} {'predicts/pair':>14s} {'max RSS MiB':>12s}")
    for label, r in best.items():
        print(f"{label:>14s} {r['predict']:10.3f} {r['mcr']:8.2f} {r['pairs']:6d} {r['ratio']:14.2f} "
              f"{r['rss MiB']:12.0f}")
    if ref:
        print(f"speed-up per pair (previous main / now): {best['previous main']['ratio'] / best['now']['ratio']:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--ref", help="checkout of the previous main (its C extension built in place)")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=500, help="trees of the readme forest")
    ap.add_argument("--permutations", type=int, default=10)
    ap.add_argument("--big", action="store_true", help="also the friedman forest of fully grown trees")
    ap.add_argument("--big-trees", type=int, default=80)
    ap.add_argument("--big-features", default="0", help="comma-separated feature indices, or 'all'")
    ap.add_argument("--big-only", action="store_true", help="only the friedman forest (with --big)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--refit", action="store_true")
    ap.add_argument("--quick", action="store_true", help="readme forest of 100 trees on 20,000 rows")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], int(args.worker[2]), args.worker[3])))
        return
    if args.quick:
        args.rows, args.trees = 20_000, 100
    print(f"cores: {os.cpu_count()}  rows: {args.rows:,}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if not (args.big and args.big_only):
        path, nodes = workload("readme", args.rows, args.trees, args.refit)
        report(f"readme forest ({args.trees} trees, depth 8, 8 features)", path, nodes, "all", args.permutations,
               args.ref, args.rounds)
    if args.big:
        path, nodes = workload("friedman", args.rows, args.big_trees, args.refit)
        report(f"friedman forest ({args.big_trees} fully grown trees)", path, nodes, args.big_features,
               args.permutations, args.ref, args.rounds)


if __name__ == "__main__":
    main()
