"""DT-Sampler benchmark: CNF size and seconds per UniGen sample.

Cases:
  (a) toy: 6 binary features, 40 rows, 4 branch nodes, >= 36 of 40 rows correct;
  (b) sklearn's breast cancer: 60 rows, the ten "mean ..." features cut at their median,
      4, 5 and 6 branch nodes, >= 54 of 60 rows correct.

For each case it prints the CNF size and the seconds per sample (CPU seconds of this
process, which other jobs on a shared machine do not inflate, and wall seconds) of a full
``DTSampler.fit``, and ratios against

  * the authors' published figures (763 variables / 6,970 clauses; 0.04 s per sample on a
    case like (a); 0.33 / 0.88 / 4.1 s on (b)), measured on *their* machine;
  * a reference run in this process: the same CNF sampled over the authors' sampling set
    (VL, VR and the one-hot test variables a) instead of our binary test codes;
  * optionally (``--reference-cnf DIR``) DIMACS files with a ``c ind`` line produced by the
    authors' own encoder for the same data (``toy_4.cnf``, ``bc_4.cnf`` ...), sampled here
    by the same harness.  They are not shipped: see README_dt_sampler.md.

A last table compares the pysat cardinality encodings for the accuracy constraint.
Run: ``python benchmarks/bench_dt_sampler.py [--quick] [--reference-cnf DIR]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from pysat.formula import CNF
from sklearn.datasets import load_breast_cancer

from xai_plugins.dt_sampler import DTSampler, encode_trees
from xai_plugins.dt_sampler.binarize import apply_tests
from xai_plugins.dt_sampler.encoding import CARDINALITY_ENCODINGS
from xai_plugins.dt_sampler.samplers import unigen_samples

AUTHORS = {"toy_4": (763, 6970, 0.04), "bc_4": (None, None, 0.33), "bc_5": (None, None, 0.88),
           "bc_6": (None, None, 4.1)}


def toy():
    """6 binary features, 40 rows, y = (x0 and x1) or x2 with 2 labels flipped."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 6))
    y = (X[:, 0] & X[:, 1]) | X[:, 2]
    y[rng.choice(40, 2, replace=False)] ^= 1
    return X, y


def breast_cancer():
    """60 random rows (seed 0) of the ten "mean ..." features; cut at the median by DTSampler."""
    data = load_breast_cancer(as_frame=True)
    X = data.data[[c for c in data.data.columns if c.startswith("mean")]]
    rows = np.random.default_rng(0).choice(len(X), 60, replace=False)
    return X.iloc[rows].reset_index(drop=True), data.target.to_numpy()[rows]


def our_encoding(est, X, y, cardinality=None):
    """The CNF ``est.fit`` built, rebuilt from its binary tests (optionally with another cardinality)."""
    Xb = apply_tests(est.tests_, np.asarray(X, float))
    return encode_trees(Xb, np.unique(y, return_inverse=True)[1], est.n_branch_nodes, est.min_correct_,
                        cardinality=cardinality or est.cardinality)


def timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def reference_sampling(clauses, sampling_set, n):
    _, cpu, wall = timed(lambda: unigen_samples(clauses, sampling_set, n, np.random.default_rng(0),
                                                progress=False))
    return cpu / n, wall / n


def authors_cnf(path):
    cnf = CNF(from_file=path)
    ind = next(c for c in cnf.comments if c.startswith("c ind"))
    return cnf.clauses, [int(v) for v in ind.split()[2:-1]], cnf.nv


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    parser.add_argument("--reference-cnf", help="folder with the authors' CNFs (toy_4.cnf, bc_4.cnf, ...)")
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          "seconds per sample = CPU s of this process (wall s in brackets)")
    Xt, yt = toy()
    Xc, yc = breast_cancer()
    cases = [("toy_4", Xt, yt, 4, 0.9, 300), ("bc_4", Xc, yc, 4, 0.9, 100),
             ("bc_5", Xc, yc, 5, 0.9, 50), ("bc_6", Xc, yc, 6, 0.9, 20)]
    header = (f"{'case':6s} {'vars':>5s} {'clauses':>7s} {'|S|':>4s} {'trees~':>8s} {'s/sample':>16s} "
              f"{'vs paper':>8s} {'one-hot |S| s/sample':>21s} {'ratio':>6s}")
    print(header)
    fitted = {}
    for name, X, y, N, level, n in cases:
        n = max(5, int(n * scale))
        est = DTSampler(n_branch_nodes=N, min_accuracy=level, n_samples=n, random_state=0, quantiles=(0.5,),
                        progress=False)
        _, cpu, wall = timed(lambda: est.fit(X, y))
        fitted[name] = est
        per, per_wall = cpu / n, wall / n
        enc = our_encoding(est, X, y)
        one_hot = [v for v in enc.sampling_set if v not in set(enc.code_vars.ravel())] + enc.test_vars.ravel().tolist()
        ref, _ = reference_sampling(enc.clauses, one_hot, n)
        paper = AUTHORS[name][2]
        st = est.cnf_stats_
        print(f"{name:6s} {st['n_vars']:5d} {st['n_clauses']:7d} {st['sampling_set_size']:4d} "
              f"{est.model_count_:8d} {per:7.4f} ({per_wall:6.4f}) {paper / per:7.1f}x "
              f"{len(one_hot):4d} {ref:16.4f} {ref / per:5.1f}x", flush=True)
        if name == "toy_4":
            print(f"       clauses vs the authors' 6,970: {st['n_clauses'] / 6970:.2f} "
                  f"(variables vs 763: {st['n_vars'] / 763:.2f})")

    if args.reference_cnf:
        print("\nauthors' CNF (their encoder, same data) sampled by the same harness in this process:")
        for name, X, y, _N, _level, n in cases:
            path = os.path.join(args.reference_cnf, f"{name}.cnf")
            if not os.path.exists(path):
                continue
            n = max(3, int(n * scale / (10 if name == "bc_6" else 3)))
            clauses, ind, nv = authors_cnf(path)
            ref, ref_wall = reference_sampling(clauses, ind, n)
            ours = fitted[name].cnf_stats_
            enc = our_encoding(fitted[name], X, y)
            per, _ = reference_sampling(enc.clauses, enc.sampling_set, n)
            print(f"{name:6s} authors: {nv} vars, {len(clauses)} clauses, {ref:.4f} s/sample ({ref_wall:.4f}) | "
                  f"ours: {ours['n_vars']} vars ({ours['n_vars'] / nv:.2f}), {ours['n_clauses']} clauses "
                  f"({ours['n_clauses'] / len(clauses):.2f}), {per:.4f} s/sample -> {ref / per:.1f}x faster",
                  flush=True)

    print("\nexact enumeration instead of sampling (sampler='exact': exact probabilities, no sampling error):")
    for name, X, y, N, level, _ in cases[:2]:
        est = DTSampler(n_branch_nodes=N, min_accuracy=level, sampler="exact", quantiles=(0.5,), progress=False)
        _, cpu, wall = timed(lambda: est.fit(X, y))
        print(f"{name:6s} {est.model_count_} trees in {cpu:.2f} s CPU ({wall:.2f} s wall)", flush=True)

    print("\ncardinality encoding of the accuracy constraint (s/sample, CPU):")
    for name, X, y, _N, _level, n in (cases[0], cases[2]):
        n = max(5, int(n * scale / 2))
        row = []
        for card in CARDINALITY_ENCODINGS:
            enc = our_encoding(fitted[name], X, y, card)
            per, _ = reference_sampling(enc.clauses, enc.sampling_set, n)
            row.append(f"{card} {len(enc.clauses)} cl {per:.4f}")
        print(f"{name:6s} " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
