"""RF-MCR speed: every feature of a bootstrap-free forest, with the cost per (feature, permutation)
relative to one ``forest.predict_proba`` on the same rows, both measured in this process.

    python benchmarks/bench_mcr.py            # 500 trees, 100,000 rows, 8 features, 10 permutations
    python benchmarks/bench_mcr.py --quick    # 100 trees, 20,000 rows
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from xai_plugins.mcr import fit_rashomon_forest, model_class_reliance


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--features", type=int, default=8)
    ap.add_argument("--permutations", type=int, default=10)
    ap.add_argument("--max-depth", type=int, default=8)
    ap.add_argument("--n-jobs", type=int, default=-1, help="threads for fit, predict and MCR alike")
    ap.add_argument("--quick", action="store_true", help="100 trees on 20,000 rows")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.trees = 20_000, 100

    X, y = make_data(args.rows, args.features)
    t0 = time.perf_counter()
    model = fit_rashomon_forest(X, y, n_estimators=args.trees, random_state=0, max_depth=args.max_depth,
                                n_jobs=args.n_jobs)
    fit_s = time.perf_counter() - t0
    nodes = sum(e.tree_.node_count for e in model.estimators_)
    predict_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        model.predict_proba(X)
        predict_s.append(time.perf_counter() - t0)
    predict_s = float(np.median(predict_s))

    t0 = time.perf_counter()
    res = model_class_reliance(model, X, y, n_permutations=args.permutations, random_state=0,
                               n_jobs=args.n_jobs, progress=False)
    mcr_s = time.perf_counter() - t0
    pairs = args.features * args.permutations
    per_pair = mcr_s / pairs

    print(f"cores: {os.cpu_count()}  rows: {args.rows:,}  trees: {args.trees}  features: {args.features}  "
          f"permutations: {args.permutations}  max_depth: {args.max_depth}  nodes: {nodes:,}  "
          f"equivalence classes: {res.n_groups}")
    print(f"fit (not counted): {fit_s:.1f} s")
    print(f"one forest.predict_proba on the same rows: {predict_s:.3f} s")
    print(f"model_class_reliance, every feature: {mcr_s:.1f} s (target <= 60 s)")
    print(f"per (feature, permutation): {per_pair:.3f} s = {per_pair / predict_s:.2f} x one predict")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of the process: {peak:.0f} MiB (data {X.nbytes / 2**20:.0f} MiB, "
          f"forest nodes {nodes * 64 / 2**20:.0f} MiB, cached training leaves "
          f"{4 * args.rows * args.trees / 2**20:.0f} MiB when <= LEAF_CACHE_BYTES)")
    print(res.table[["mcr_minus", "model_reliance", "mcr_plus", "within_rashomon"]].round(4).to_string())


if __name__ == "__main__":
    main()
