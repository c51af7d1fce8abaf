"""Exact PG² on models with categorical features, beside a 1 %-accurate Monte Carlo through the
model's own predictor and beside a numeric model of the same size, in one run.

Workloads (``../shared/datasets``): California housing with its categorical ``ocean_proximity`` and
COMPAS with ``race``, ``sex`` and ``c_charge_degree``; LightGBM with pandas category columns (set
splits), a one-hot ``Pipeline`` in front of LightGBM (compiled into set splits on the input
columns) and CatBoost on the text columns (one-hot splits and per-feature CTRs, imported as category
sets), 100 and 500 trees of depth 6. Per model, over ``--rows`` test rows, S = every feature:

- exact: seconds per row of ``xp.pg2(..., method="exact")``;
- Monte Carlo at 1 %: ``xp.pg2(..., method="monte_carlo")`` with a pilot of ``--pilot`` samples per
  row through the model's own ``predict`` (the categorical law drawn as in the exact sum), scaled to
  the sample count that gives a 1 % relative standard error on each row;
- numeric twin: the same library's settings fitted with the category codes as plain numbers (numeric
  splits, same tree count and depth): exact seconds per row; "vs numeric" divides by the twin of the
  model's own library (LightGBM's for LightGBM and the Pipeline, CatBoost's for CatBoost).

Targets (issue 21): exact cheaper than the 1 % Monte Carlo up to 500 depth-6 trees; categorical
splits at most 1.3x the time of the numeric twin.

    python benchmarks/bench_categorical.py [--rows 20] [--pilot 2000] [--trees 100 500]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import catboost
import lightgbm as lgb
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

import xai_plugins as xp

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
    """(name, model, rows it reads, name of its numeric twin) for the five kinds of one workload."""
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
    return [("LightGBM categorical", make(**params).fit(as_category, y), as_category, "numeric twin (codes)"),
            ("one-hot Pipeline", pipe.fit(X[categorical + numeric], y), X[categorical + numeric],
             "numeric twin (codes)"),
            ("numeric twin (codes)", make(**params).fit(as_codes, y), as_codes, None),
            ("CatBoost categorical", boost(cat_features=categorical, **cat_params).fit(as_text, y), as_text,
             "CatBoost twin (codes)"),
            ("CatBoost twin (codes)", boost(**cat_params).fit(as_codes, y), as_codes, None)]


def seconds_per_row(fn, rows) -> float:
    start = time.perf_counter()
    fn(rows)
    return (time.perf_counter() - start) / len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--pilot", type=int, default=2000)
    ap.add_argument("--trees", type=int, nargs="+", default=[100, 500])
    args = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    print(f"{'workload':28s} {'model':22s} {'trees':>5s} {'exact s/row':>12s} {'MC 1% s/row':>12s} "
          f"{'exact/MC':>9s} {'vs numeric':>10s}")
    for label, load, classify in (("California (ocean_proximity)", california, False),
                                  ("COMPAS (race, sex, charge)", compas, True)):
        X, y, categorical = load()
        for trees in args.trees:
            results = []
            for name, model, data, twin in models(X, y, categorical, trees, classify):
                rows = data.iloc[:args.rows]
                S = list(data.columns)
                exact = seconds_per_row(lambda r: xp.pg2(model, r, S, sigma=0.3, background=data, verbose=False),
                                        rows)
                start = time.perf_counter()
                pilot = xp.pg2(model, rows, S, sigma=0.3, background=data, method="monte_carlo",
                               n_samples=args.pilot, random_state=0)
                pilot_seconds = (time.perf_counter() - start) / len(rows)
                relative = np.asarray(pilot.stderr) / np.maximum(np.abs(np.asarray(pilot.value)), 1e-300)
                needed = np.maximum(1.0, (relative / 0.01) ** 2)        # x the pilot's sample count
                mc = pilot_seconds * float(np.mean(needed))
                results.append((name, exact, mc, twin))
            exact_of = {name: exact for name, exact, _, _ in results}
            for name, exact, mc, twin in results:
                ratio = "" if twin is None else f"{exact / exact_of[twin]:9.2f}x"
                print(f"{label:28s} {name:22s} {trees:5d} {exact:12.5f} {mc:12.5f} {exact / mc:9.3f} {ratio:>10s}")
    print("exact/MC < 1: exact is cheaper than a Monte Carlo estimate with 1 % relative standard error through "
          "the model's own predict; 'vs numeric': exact time / the numeric twin of the model's own library "
          "(target <= 1.3)")


if __name__ == "__main__":
    main()
