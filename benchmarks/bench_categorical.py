"""Exact PG² on models with categorical features, beside a 1 %-accurate Monte Carlo through the
model's own predictor and beside a numeric model of the same size, in one run.

Workloads (``../shared/datasets``): California housing with its categorical ``ocean_proximity`` and
COMPAS with ``race``, ``sex`` and ``c_charge_degree``; LightGBM with pandas category columns (set
splits), a one-hot ``Pipeline`` in front of LightGBM (compiled into set splits on the input
columns) and CatBoost on the text columns (one-hot splits and per-feature CTRs, imported as category
sets), 100 and 500 trees of depth 6. Per model, over ``--rows`` test rows, S = every feature:

- exact: CPU seconds per row of ``xp.pg2(..., method="exact")`` once the model is imported (one call on
  one row first: the import is cached per model and is not part of the exact sum's cost), the leaf-pair
  terms it evaluated per row (where CatBoost's symmetric trees take the grid path of csrc/pg2_grid.c: the
  products of its contractions), and nanoseconds per term. Every time here is the process's CPU time
  (``time.process_time``; every library runs on one thread), which other processes on a loaded machine
  change far less than the wall clock;
- Monte Carlo at 1 %: ``xp.pg2(..., method="monte_carlo")`` with a pilot of ``--pilot`` samples per
  row through the model's own ``predict`` (the categorical law drawn as in the exact sum), scaled to
  the sample count that gives a 1 % relative standard error on each row;
- numeric twin: the same library's settings fitted with the category codes as plain numbers (numeric
  splits, same tree count and depth, about as many leaves): "vs numeric" divides the exact time per row
  by the twin's of the model's own library (LightGBM's for LightGBM and the Pipeline, CatBoost's for
  CatBoost), "per term" the time per leaf-pair term. The models do not have the same number of terms:
  which leaves are pruned or have x's own value depends on the fitted values, not on the kind of split
  (COMPAS' categorical LightGBM keeps ~1.5x the twin's terms), so the cost of the set-membership
  arithmetic itself is the per-term ratio.
- ``--ref DIR``: the exact columns again with the build in DIR (a checkout of the previous main with its
  C extension built in place), on the same fitted models, in a subprocess.

Targets: exact cheaper than the 1 % Monte Carlo up to 500 depth-6 trees; categorical
splits at most 1.3x the time of the numeric twin (per term).

    python benchmarks/bench_categorical.py [--rows 20] [--pilot 2000] [--trees 100 500] [--ref DIR]
        [--workloads california compas] [--models CatBoost ...]

``--models``: only the models whose name contains one of the words given (their numeric twins are run too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):   # one thread: CPU time = cost
    os.environ.setdefault(_threads, "1")

import catboost  # noqa: E402
import joblib  # noqa: E402
import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402

import xai_plugins as xp  # noqa: E402
from xai_plugins.forest import import_model  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def california():
    frame = pd.read_csv(DATA / "california_housing.csv").dropna()
    y = frame.pop("median_house_value").to_numpy() / 1e5
    return frame, y, ["ocean_proximity"]


def compas():
    frame = pd.read_csv(DATA / "compas_two_years.csv").dropna()
    y = frame.pop("two_year_recid").to_numpy()
    frame = frame.drop(columns=[c for c in ("decile_score",) if c in frame])
    return frame, y, [c for c in ("race", "sex", "c_charge_degree") if c in frame]


def models(X, y, categorical, trees, classify):
    """(name, fit() -> model, rows it reads, name of its numeric twin) for the five kinds of one workload."""
    make = lgb.LGBMClassifier if classify else lgb.LGBMRegressor
    params = dict(n_estimators=trees, max_depth=6, num_leaves=63, learning_rate=0.05, verbose=-1, random_state=0,
                  n_jobs=1)
    as_category = X.assign(**{c: X[c].astype("category") for c in categorical})
    as_codes = X.assign(**{c: X[c].astype("category").cat.codes.astype(float) for c in categorical})
    numeric = [c for c in X.columns if c not in categorical]
    pipe = Pipeline([("front", ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), categorical)],
                                                 remainder="passthrough")), ("model", make(**params))])
    boost = catboost.CatBoostClassifier if classify else catboost.CatBoostRegressor
    cat_params = dict(iterations=trees, depth=6, learning_rate=0.05, max_ctr_complexity=1, random_seed=0,
                      thread_count=1, verbose=0, allow_writing_files=False)
    as_text = X.assign(**{c: X[c].astype(str) for c in categorical})
    return [("LightGBM categorical", lambda: make(**params).fit(as_category, y), as_category, "numeric twin (codes)"),
            ("one-hot Pipeline", lambda: pipe.fit(X[categorical + numeric], y), X[categorical + numeric],
             "numeric twin (codes)"),
            ("numeric twin (codes)", lambda: make(**params).fit(as_codes, y), as_codes, None),
            ("CatBoost categorical", lambda: boost(cat_features=categorical, **cat_params).fit(as_text, y), as_text,
             "CatBoost twin (codes)"),
            ("CatBoost twin (codes)", lambda: boost(**cat_params).fit(as_codes, y), as_codes, None)]


def exact_cost(model, rows, background) -> tuple[float, float]:
    """(seconds per row, leaf-pair terms per row) of exact PG² with S = every column, the model imported
    first (one call on one row)."""
    S = list(rows.columns)
    xp.pg2(model, rows.iloc[:1], S, sigma=0.3, background=background, verbose=False)
    start = time.process_time()
    est = xp.pg2(model, rows, S, sigma=0.3, background=background, verbose=False)
    return (time.process_time() - start) / len(rows), est.pair_terms / len(rows)


def mc_cost(model, rows, background, pilot) -> float:
    """CPU seconds per row of a Monte Carlo estimate with 1 % relative standard error on each row, from a
    pilot."""
    start = time.process_time()
    est = xp.pg2(model, rows, list(rows.columns), sigma=0.3, background=background, method="monte_carlo",
                 n_samples=pilot, random_state=0)
    seconds = (time.process_time() - start) / len(rows)
    relative = np.asarray(est.stderr) / np.maximum(np.abs(np.asarray(est.value)), 1e-300)
    return seconds * float(np.mean(np.maximum(1.0, (relative / 0.01) ** 2)))     # x the pilot's sample count


def reference_costs(ref: str, jobs) -> list:
    """exact_cost of each (model, rows, background) of ``jobs`` with the build in ``ref``, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.joblib"
        joblib.dump(jobs, path)
        env = dict(os.environ, PYTHONPATH=str(Path(ref).resolve()))
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(path)], cwd=ref, env=env,
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--pilot", type=int, default=2000)
    ap.add_argument("--trees", type=int, nargs="+", default=[100, 500])
    ap.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    ap.add_argument("--workloads", nargs="+", choices=["california", "compas"], default=["california", "compas"])
    ap.add_argument("--models", nargs="+", help="only the models whose name contains one of these words")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    if args.worker:
        print(json.dumps([exact_cost(*job) for job in joblib.load(args.worker)]))
        return
    ref_head = f" {'ref s/row':>10s} {'ref/new':>7s}" if args.ref else ""
    print(f"{'workload':28s} {'model':22s} {'trees':>5s} {'leaves':>6s} {'terms/row':>10s} {'exact s/row':>12s} "
          f"{'ns/term':>7s} {'MC 1% s/row':>12s} {'exact/MC':>9s} {'vs numeric':>10s} {'per term':>8s}{ref_head}")
    for key, label, load, classify in (("california", "California (ocean_proximity)", california, False),
                                       ("compas", "COMPAS (race, sex, charge)", compas, True)):
        if key not in args.workloads:
            continue
        X, y, categorical = load()
        for trees in args.trees:
            fitted = models(X, y, categorical, trees, classify)
            if args.models:
                wanted = {name for name, *_ in fitted if any(word in name for word in args.models)}
                wanted |= {twin for name, _, _, twin in fitted if name in wanted and twin is not None}
                fitted = [entry for entry in fitted if entry[0] in wanted]
            fitted = [(name, fit(), data, twin) for name, fit, data, twin in fitted]
            jobs = [(model, data.iloc[:args.rows], data) for _, model, data, _ in fitted]
            reference = reference_costs(args.ref, jobs) if args.ref else [None] * len(jobs)
            results = {}
            for (name, model, _, twin), job, ref in zip(fitted, jobs, reference):
                exact, terms = exact_cost(*job)
                leaves = int(np.sum(import_model(model).left_child < 0))
                results[name] = (leaves, exact, terms, mc_cost(*job, args.pilot), twin, ref)
            for name, (leaves, exact, terms, mc, twin, ref) in results.items():
                ratio = per_term = ""
                if twin is not None:
                    _, twin_exact, twin_terms, *_ = results[twin]
                    ratio = f"{exact / twin_exact:9.2f}x"
                    per_term = f"{exact / terms / (twin_exact / twin_terms):7.2f}x"
                old = f" {ref[0]:10.5f} {ref[0] / exact:7.2f}" if ref else ""
                print(f"{label:28s} {name:22s} {trees:5d} {leaves:6d} {terms:10.0f} {exact:12.5f} "
                      f"{exact / terms * 1e9:7.2f} {mc:12.5f} {exact / mc:9.3f} {ratio:>10s} {per_term:>8s}{old}",
                      flush=True)
    print("exact/MC < 1: exact is cheaper than a Monte Carlo estimate with 1 % relative standard error through "
          "the model's own predict; 'vs numeric' / 'per term': exact time per row / per leaf-pair term over the "
          "numeric twin's of the model's own library (target <= 1.3 per term)"
          + ("; ref/new: the reference build's exact time / this build's" if args.ref else ""))


if __name__ == "__main__":
    main()
