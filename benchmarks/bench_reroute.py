"""RF-MCR's routing of permuted rows, piece by piece, on fully grown trees: the figures behind the leaf
tables' budget (``mcr._passes._leaf_table``) and the S+ start from the original tree's leaf.

Workload: ``bench_mcr.py``'s friedman forest (``make_friedman1`` plus a duplicate of feature 0,
100,000 rows, fully grown bootstrap-free trees; fitted once and cached), feature 0 permuted by 10
seeds. Per tree (CPU milliseconds, one thread, all in this process so that the ratios share the
machine's pace), for the original tree and its S+ version: a walk of the permuted rows from their
training leaves, a leaf table's build, its entries per row (first 2,048 rows, rounded up) and a
lookup, also in walks (the walk of the permuted rows = 1), the unit of the budget; then the S+ walk
started from the original tree's new leaf, and the share of rows that keep that leaf.

Run: python benchmarks/bench_reroute.py [--trees 10] [--show 4]
"""

from __future__ import annotations

import argparse
import pickle
import time

import numpy as np
from bench_mcr import workload  # benchmarks/bench_mcr.py, beside this script

from xai_plugins import _native
from xai_plugins.forest.cache import import_model
from xai_plugins.mcr._loss import make_loss
from xai_plugins.mcr._parallel import OrderedMap
from xai_plugins.mcr._tables import ForestTables


def cpu_ms(call) -> tuple[float, object]:
    """(CPU milliseconds, result) of one call."""
    t = time.process_time()
    out = call()
    return (time.process_time() - t) * 1e3, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=10, help="trees of the cached friedman forest")
    ap.add_argument("--show", type=int, default=4, help="trees measured")
    ap.add_argument("--permutations", type=int, default=10)
    args = ap.parse_args()
    path, _ = workload("friedman", 100_000, args.trees, False)
    with open(path, "rb") as fh:
        model, X, y = pickle.load(fh)
    tables = ForestTables(import_model(model), model.estimators_, X.astype(np.float32), is_classifier=False)
    surrogates = tables.survey(make_loss("squared_error", tables.node_pred, y), OrderedMap(None, 1)).surrogates
    cols = [0]
    plus = surrogates.transform(tables, cols, True)
    X64, K = tables.X64, args.permutations
    permuted = [tables.permuted(cols, seed) for seed in range(K)]
    print(f"friedman forest, {args.trees} fully grown trees, 100,000 rows, feature 0, {K} permutations; "
          "CPU ms per tree (in walks: / the walk of the permuted rows)")
    print(f"{'tree':>4} {'version':>8} {'walk':>7} {'build':>7} {'entries/row':>11} {'lookup':>7} "
          f"{'build+K lookups in walks':>25}")
    kept_share, from_l, from_o = [], [], []
    for t in range(min(args.show, tables.T)):
        L = tables.training_leaves([t], None)[t]
        versions = {"original": _native.RerouteLayout(tables.forest, t, cols),
                    "S+": _native.RerouteLayout(tables.forest, t, cols, plus.splits)}
        for name, layout in versions.items():
            walk = np.mean([cpu_ms(lambda: layout.route(X64, L, nv))[0] for nv in permuted])
            build, table = cpu_ms(lambda: layout.table(X64))
            entries = entries_per_row(layout, X64[:2048])
            lookup = np.mean([cpu_ms(lambda: layout.route(X64, L, nv, table=table))[0] for nv in permuted])
            print(f"{t:4d} {name:>8} {walk:7.1f} {build:7.1f} {entries:11d} {lookup:7.1f} "
                  f"{(build + K * lookup) / (K * walk):25.2f}   (build {build / walk:.1f}, lookup {lookup / walk:.2f})")
        for nv in permuted:
            g_o = versions["original"].route(X64, L, nv)[0]
            a, g = cpu_ms(lambda: versions["S+"].route(X64, L, nv)[0])
            b, g_from_o = cpu_ms(lambda: versions["S+"].route(X64, g_o, nv)[0])
            assert np.array_equal(g, g_from_o)
            from_l.append(a)
            from_o.append(b)
            kept_share.append(np.mean(g == g_o))
    print(f"S+ walks from the training leaf {np.mean(from_l):.1f} ms, from the original tree's new leaf "
          f"{np.mean(from_o):.1f} ms; rows keeping that leaf {100 * np.mean(kept_share):.1f} %")


def entries_per_row(layout, rows) -> int:
    """Entries per row of ``layout``'s leaf table of ``rows`` (rounded up): the smallest ``max_per_row``
    budget that does not decline it, found by bisection (the table does not expose its size)."""
    lo, hi = 1, 4096
    while lo < hi:
        mid = (lo + hi) // 2
        if layout.table(rows, mid) is None:
            lo = mid + 1
        else:
            hi = mid
    return lo


if __name__ == "__main__":
    main()
