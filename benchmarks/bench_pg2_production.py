"""Exact PG² on production-size models against a 1 %-accurate Monte Carlo estimate, and against
a reference build of this package (the previous main) measured in the same run.

Data: California housing (``../shared/datasets/california_housing.csv``; ``ocean_proximity``
dropped, missing ``total_bedrooms`` filled with the training median), split 80:20 with seed 0,
features standardised with the training mean and standard deviation; σ = 0.3 on every feature.
Models: ``XGBRegressor(tree_method="hist", max_depth=D, n_estimators=T, random_state=0)`` for
(T, D) in {(100, 6), (500, 6)} (``--big`` adds (500, 8) and (1000, 10), S = all only), and a
``RandomForestRegressor(n_estimators=50, min_samples_leaf=20, max_features=0.5, bootstrap=False)``.
Everything runs on one thread (``n_jobs=1``, XGBoost ``nthread=1``) and is timed in CPU seconds of
the process (``time.process_time``), which other load on the machine disturbs far less than wall time.

Per model and row, median over ``--rows`` test rows:
- ``exact all``: ``xp.pg2(model, x, S=all features)``; ``greedy``: ``xp.greedy_pg2_ranking``;
  ``pgi2``: ``xp.pgi2`` of one ranking (the features in index order), each through the public API;
- ``MC 1 %``: the number of Monte Carlo samples n whose relative standard error
  sd(g)/(mean(g)·√n) is 1 % for g = (f(x') − f(x))², from a 4,000-sample pilot on the row, times
  the cost of one sample through the model's own predictor (XGBoost ``inplace_predict`` /
  scikit-learn ``predict`` on a 20,000-row batch);
- ratios: reference / new (speed-up) and exact / MC-at-1 %.
The crossover is the number of depth-6 trees at which exact S = all costs as much as MC at 1 %:
the 500 × 6 model is cut to its first T trees (T = 25 … 500) and both costs are interpolated
log-log between the two cut sizes around their crossing.

The reference build runs in a subprocess (``--ref DIR``: a checkout of the previous main with
its C extension built in place, e.g. ``git worktree add ../oldmain <commit>`` then
``python setup.py build_ext --inplace`` there) on the same saved models and rows, right before
the new build, so that both see the same machine load.

``--memory`` adds, for the largest model (1000 × 10 with ``--big``), in a fresh subprocess per
build, the peak of numpy allocations (tracemalloc) and the peak growth of the resident memory
(``VmHWM`` restarted before the call through ``/proc/self/clear_refs``; ``getrusage`` where that is
refused) over a first exact ``xp.pg2`` call with S = all on one row, the model import alone and the
whole call, against 2 × the model's own size + the output's, the model's size taken both ways: its
UBJSON bytes (``save_raw``) and its booster's resident memory (growth of ``xgboost.Booster(model_file=)``
in a fresh process, which also gives the resident peak of XGBoost's own UBJSON writer alone).

Run: python benchmarks/bench_pg2_production.py [--ref DIR] [--rows 5] [--big] [--memory | --memory-only]
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

import _builds  # noqa: E402  (benchmarks/_builds.py, beside this script)
import numpy as np  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "california_housing.csv"
SIGMA = 0.3
PILOT = 4000
TARGET_RSE = 0.01


def california():
    """Standardised train/test features and targets of the California housing data."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    frame = pd.read_csv(DATA).drop(columns=["ocean_proximity"])
    y = frame.pop("median_house_value").to_numpy(float)
    X_train, X_test, y_train, _ = train_test_split(frame, y, test_size=0.2, random_state=0)
    X_train = X_train.fillna(X_train.median())
    X_test = X_test.fillna(X_train.median())
    mean, std = X_train.mean(), X_train.std()
    return ((X_train - mean) / std).to_numpy(float), ((X_test - mean) / std).to_numpy(float), y_train


def build_models(big: bool, memory_only: bool = False) -> dict:
    """name -> fitted model (the models both builds are timed on; with ``memory_only`` the largest
    XGBoost model alone)."""
    import xgboost as xgb
    from sklearn.ensemble import RandomForestRegressor

    X_train, _, y_train = california()
    sizes = [(100, 6), (500, 6)] + ([(500, 8), (1000, 10)] if big else [])
    if memory_only:
        trees, depth = sizes[-1]
        return {f"xgb {trees}x{depth}": xgb.XGBRegressor(tree_method="hist", max_depth=depth, n_estimators=trees,
                                                         random_state=0, n_jobs=2).fit(X_train, y_train)}
    models = {}
    for trees, depth in sizes:
        model = xgb.XGBRegressor(tree_method="hist", max_depth=depth, n_estimators=trees, random_state=0,
                                 n_jobs=2).fit(X_train, y_train)
        models[f"xgb {trees}x{depth}"] = model
    models["rf 50 trees, min_samples_leaf=20"] = RandomForestRegressor(
        n_estimators=50, min_samples_leaf=20, max_features=0.5, bootstrap=False, random_state=0,
        n_jobs=2).fit(X_train, y_train)
    return models


def per_row(fn, rows) -> float:
    """Median CPU seconds of fn(row) over the rows (each row its own call)."""
    times = []
    for x in rows:
        t = time.process_time()
        fn(x[None, :])
        times.append(time.process_time() - t)
    return float(np.median(times))


def predictor(model):
    """A single-threaded batch predictor: the model's own."""
    import xgboost as xgb

    if isinstance(model, (xgb.XGBModel, xgb.Booster)):
        booster = model.get_booster() if isinstance(model, xgb.XGBModel) else model
        booster.set_param({"nthread": 1})
        return lambda X: booster.inplace_predict(X)
    model.set_params(n_jobs=1)
    return model.predict


def mc_cost(model, rows, seed=0) -> tuple[float, float]:
    """(median samples for 1 % relative standard error, seconds per sample) over the rows."""
    predict = predictor(model)
    rng = np.random.default_rng(seed)
    needed = []
    for x in rows:
        noisy = x + SIGMA * rng.standard_normal((PILOT, x.size))
        gap = (predict(noisy) - predict(x[None, :])) ** 2
        needed.append((gap.std() / gap.mean() / TARGET_RSE) ** 2)
    batch = rows[0] + SIGMA * rng.standard_normal((20_000, rows.shape[1]))
    predict(batch[:100])
    t = time.process_time()
    predict(batch)
    return float(np.median(needed)), (time.process_time() - t) / len(batch)


def measure(models: dict, rows: np.ndarray, kinds: dict) -> dict:
    """Per model: seconds per row of each quantity in kinds[name] (with the build importable now)."""
    import xai_plugins as xp

    d = rows.shape[1]
    everything = list(range(d))
    out = {}
    for name, model in models.items():
        xp.pg2(model, rows[:1], [0], SIGMA, n_jobs=1)  # import and cache the model
        res = {}
        if "all" in kinds[name]:
            res["exact all"] = per_row(lambda x: xp.pg2(model, x, everything, SIGMA, n_jobs=1), rows)
        if "greedy" in kinds[name]:
            res["greedy"] = per_row(lambda x: xp.greedy_pg2_ranking(model, x, SIGMA, n_jobs=1), rows)
        if "pgi2" in kinds[name]:
            res["pgi2"] = per_row(lambda x: xp.pgi2(model, x, everything, SIGMA, n_jobs=1), rows)
        out[name] = res
    return out


def worker(path: str) -> None:
    """Subprocess entry: measure the pickled job with whatever xai_plugins is importable."""
    with open(path, "rb") as fh:
        job = pickle.load(fh)
    print(json.dumps(measure(job["models"], job["rows"], job["kinds"])))


def memory(path: str) -> dict:
    """Peak numpy allocations (tracemalloc) and peak resident-memory growth of a first exact PG² call
    (S = all, one row), the model import alone and the whole call, beside the model's UBJSON size."""
    import gc
    import tracemalloc

    import xai_plugins as xp
    from xai_plugins.forest import import_model

    with open(path, "rb") as fh:
        job = pickle.load(fh)
    model, row = job["model"], job["row"]
    gc.collect()
    exact = _builds.reset_peak()
    before = _builds.resident()
    tracemalloc.start()
    import_model(model)
    figures = {"import traced": tracemalloc.get_traced_memory()[1]}
    figures["import rss"] = _builds.peak_growth(before, exact)
    tracemalloc.reset_peak()
    exact = exact and _builds.reset_peak()
    out = np.asarray(xp.pg2(model, row, list(range(row.shape[1])), SIGMA, n_jobs=1))
    figures["traced peak"] = max(figures["import traced"], tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    figures["pg2 rss"] = _builds.peak_growth(before, exact)
    figures["rss growth"] = max(figures["import rss"], figures["pg2 rss"])
    figures["exact rss"] = exact
    return {"model": len(model.get_booster().save_raw()), "output": out.nbytes, **figures}


def booster_resident(path: str) -> dict:
    """Resident-memory growth of loading the UBJSON model at ``path`` with ``xgboost.Booster(model_file=)``
    (xgboost already imported): the model's own size in memory; then the peak growth of XGBoost's own
    UBJSON writer (``save_raw``), which any import through XGBoost's API pays."""
    import gc

    import xgboost as xgb

    gc.collect()
    before = _builds.resident()
    booster = xgb.Booster(model_file=path)
    figures = {"resident": _builds.resident() - before}
    exact = _builds.reset_peak()
    before = _builds.resident()
    booster.save_raw(raw_format="ubj")
    return {**figures, "writer rss": _builds.peak_growth(before, exact)}


def report_memory(name: str, model, row, ref: str | None) -> None:
    """Print the memory figures of ``memory`` for this build and the reference, each in a fresh process,
    against both measures of the model's own size: its UBJSON bytes and its booster's resident memory."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump({"model": model, "row": row}, fh)
    with tempfile.NamedTemporaryFile(suffix=".ubj", delete=False) as ubj:
        model.get_booster().save_model(ubj.name)

    def run(flag: str, job: str, env: dict) -> dict:
        done = subprocess.run([sys.executable, __file__, flag, job], env=env, capture_output=True, text=True,
                              cwd=tempfile.gettempdir(), check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    booster = run("--booster-worker", ubj.name, dict(os.environ))
    resident = booster["resident"]
    print(f"\nmemory of a first exact PG² call, S = all, one row, {name} (fresh process per build; MiB):")
    for label, build in [("new", Path(__file__).resolve().parents[1])] + ([("reference", Path(ref))] if ref else []):
        m = run("--memory-worker", fh.name, dict(os.environ, PYTHONPATH=str(build.resolve())))
        mib = {k: v / 2**20 for k, v in m.items() if not isinstance(v, bool)}
        print(f"  {label}: numpy peak {mib['traced peak']:.1f} (import {mib['import traced']:.1f}); resident peak "
              f"growth {mib['rss growth']:.1f} (import {mib['import rss']:.1f}, import + PG² {mib['pg2 rss']:.1f}"
              + ("" if m["exact rss"] else ", getrusage: includes what ran before") + ")")
        for what, size in (("UBJSON bytes", m["model"]), ("booster resident", resident)):
            bound = 2 * size + m["output"]
            print(f"    model = {what} {size / 2**20:.1f}: bound 2 x model + output {bound / 2**20:.1f}: numpy peak "
                  f"{'within' if m['traced peak'] <= bound else 'EXCEEDED'}, resident peak "
                  f"{'within' if m['rss growth'] <= bound else 'EXCEEDED'}")
    print(f"  (XGBoost's own UBJSON writer alone, save_raw of the model loaded from its file: resident peak growth "
          f"{booster['writer rss'] / 2**20:.1f})")
    os.unlink(fh.name)
    os.unlink(ubj.name)


def crossover(model, rows, ref=None) -> dict:
    """Exact S = all vs MC at 1 % on the first T trees of a depth-6 XGBoost model."""
    booster = model.get_booster()
    cuts = {trees: booster[:trees] for trees in (25, 50, 100, 150, 200, 300, 500)}
    kinds = {trees: ("all",) for trees in cuts}
    result = {"trees": list(cuts), "mc": [], "exact": []}
    if ref:
        old = run_reference(ref, cuts, rows, kinds)
        result["exact reference"] = [old[t]["exact all"] for t in cuts]
    new = measure(cuts, rows, kinds)
    for trees, cut in cuts.items():
        n, per_sample = mc_cost(cut, rows)
        result["mc"].append(n * per_sample)
        result["exact"].append(new[trees]["exact all"])
    result["crossover"] = crossing(result["trees"], result["exact"], result["mc"])
    if ref:
        result["crossover reference"] = crossing(result["trees"], result["exact reference"], result["mc"])
    return result


def crossing(trees, exact, mc):
    """Tree count where exact = MC, interpolated log-log; None when they do not cross in range."""
    ratio = np.log(np.asarray(exact) / np.asarray(mc))
    for i in range(len(trees) - 1):
        if ratio[i] <= 0 < ratio[i + 1]:
            a, b = np.log(trees[i]), np.log(trees[i + 1])
            return float(np.exp(a + (b - a) * (-ratio[i]) / (ratio[i + 1] - ratio[i])))
    return f"> {trees[-1]}" if ratio[-1] <= 0 else f"< {trees[0]}"


def run_reference(ref: str, models: dict, rows, kinds) -> dict:
    """measure() in a subprocess that imports the reference build from ``ref``."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump({"models": models, "rows": rows, "kinds": kinds}, fh)
    env = dict(os.environ, PYTHONPATH=str(Path(ref).resolve()))
    done = subprocess.run([sys.executable, __file__, "--worker", fh.name], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), check=True)
    os.unlink(fh.name)
    return {(int(k) if k.isdigit() else k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--big", action="store_true", help="also 500 x 8 and 1000 x 10 (S = all only)")
    parser.add_argument("--no-crossover", action="store_true")
    parser.add_argument("--memory", action="store_true", help="peak memory of exact PG² on the largest model")
    parser.add_argument("--memory-only", action="store_true", help="--memory alone: no timing, no crossover")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--memory-worker", help=argparse.SUPPRESS)
    parser.add_argument("--booster-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if args.memory_worker:
        print(json.dumps(memory(args.memory_worker)))
        return
    if args.booster_worker:
        print(json.dumps(booster_resident(args.booster_worker)))
        return
    _, X_test, _ = california()
    rows = X_test[np.random.default_rng(1).choice(len(X_test), args.rows, replace=False)]
    if args.memory_only:
        name, model = next(iter(build_models(args.big, memory_only=True).items()))
        report_memory(name, model, rows[:1], args.ref)
        return
    models = build_models(args.big)
    kinds = {name: ("all", "pgi2", "greedy") if name == "xgb 100x6" else
             ("all", "pgi2") if name == "xgb 500x6" else ("all",) for name in models}
    old = run_reference(args.ref, models, rows, kinds) if args.ref else {}
    new = measure(models, rows, kinds)
    print(f"California housing, σ = {SIGMA}, one thread, median over {args.rows} test rows (ms per row)")
    print(f"{'model':34s} {'quantity':10s} {'reference':>10s} {'new':>10s} {'speed-up':>9s} {'MC 1 %':>9s} "
          f"{'exact/MC':>9s}")
    for name, model in models.items():
        n, per_sample = mc_cost(model, rows)
        for quantity, seconds in new[name].items():
            ref = old.get(name, {}).get(quantity)
            mc = n * per_sample if quantity == "exact all" else None
            print(f"{name:34s} {quantity:10s} {ref * 1e3 if ref else float('nan'):10.2f} {seconds * 1e3:10.2f} "
                  f"{ref / seconds if ref else float('nan'):9.2f} {mc * 1e3 if mc else float('nan'):9.2f} "
                  f"{seconds / mc if mc else float('nan'):9.2f}")
        print(f"{'':34s} MC samples for 1 %: {n:,.0f}; {per_sample * 1e6:.2f} µs per sample")
    if args.memory:
        largest = list(models)[-2]   # the last XGBoost model (the forest comes last)
        report_memory(largest, models[largest], rows[:1], args.ref)
    if not args.no_crossover:
        cross = crossover(models["xgb 500x6"], rows, args.ref)
        print("\ncrossover, depth-6 XGBoost cut to T trees (ms per row):")
        print(f"{'T':>5s} {'exact new':>10s} {'exact ref':>10s} {'MC 1 %':>9s}")
        for i, t in enumerate(cross["trees"]):
            ref = cross.get("exact reference", [float("nan")] * len(cross["trees"]))[i]
            print(f"{t:5d} {cross['exact'][i] * 1e3:10.2f} {ref * 1e3:10.2f} {cross['mc'][i] * 1e3:9.2f}")
        print(f"exact = MC at 1 % near T = {cross['crossover']} trees (new)"
              + (f", {cross['crossover reference']} (reference)" if "crossover reference" in cross else ""))


if __name__ == "__main__":
    main()
