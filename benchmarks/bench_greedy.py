"""The greedy PG² ranking per row against TreeSHAP on the same rows, and against a reference build of this
package (the previous main) measured in the same run, whose rankings and PG² paths must be the same bit for bit.

Workloads (each model fitted once per run, one thread):
- ``paper 40x4``: the PG² paper's "bigger" XGBoost model (standardised diabetes, 40 trees of depth 4, eta 0.2,
  subsample 0.8, seed 42, hist), σ = 0.3;
- ``xgb 500x6`` and ``lgbm 1000x63``: California housing (``../shared/datasets/california_housing.csv``, as in
  ``bench_pg2_production.py``: standardised, split 80:20 with seed 0), ``XGBRegressor(max_depth=6,
  n_estimators=500, tree_method="hist")`` and ``LGBMRegressor(n_estimators=1000, num_leaves=63)``, σ = 0.3;
- ``rf wine 6-class``: red wine quality (``winequality_red.csv``) as a 6-class ``RandomForestClassifier`` of 200
  fully grown trees, σ = 0.3 standard deviations of the training rows (``background``);
- ``rf compas one-hot``: COMPAS two-year recidivism (``compas_two_years.csv``; ``decile_score`` dropped) through a
  ``Pipeline`` of a one-hot ``ColumnTransformer`` (race, sex, charge degree) and a ``RandomForestClassifier`` of 200
  trees with ``min_samples_leaf=5``, σ = 0.3 standard deviations of the training rows, categories redrawn from
  their frequencies there.

Per model, the median over ``--rows`` test rows of the CPU seconds (``time.process_time``, ``n_jobs=1``) of one
call on one row, the model imported by a first call: ``xp.greedy_pg2_ranking`` (default pruning, ``--no-prune``
sums every leaf pair), the same ranking alone (``path=False``: no PG² path, fewer exact evaluations),
the exact PG² of the path's d prefix sets alone (``xp.pgi2`` of the ranking: "path sets", and its share of the
greedy's time, the part no ranking strategy can save while the path is asked for), ``xp.tree_shap``
(path-dependent) and shap's ``TreeExplainer.shap_values`` (of the forest behind the Pipeline, on
the one-hot rows). With ``--ref DIR`` (a checkout of the previous main with its C extension built in place) the
reference's greedy ranking runs in a subprocess on the same pickled models and rows, right before the new build,
and the two builds' rankings and PG² paths are compared bit for bit.

Run: python benchmarks/bench_greedy.py [--ref ../oldmain] [--rows 3] [--models NAME ...] [--no-prune]
"""

import argparse
import json
import os
import pickle
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import _builds  # noqa: E402  (benchmarks/_builds.py, beside this script)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
SIGMA = 0.3
MODELS = ("paper 40x4", "xgb 500x6", "lgbm 1000x63", "rf wine 6-class", "rf compas one-hot")


def _split(X, y):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.2, random_state=0)


def paper():
    """(model, test rows, background): the PG² paper's 40 x depth-4 XGBoost model on standardised diabetes."""
    import xgboost as xgb
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=4, learning_rate=0.2, subsample=0.8, random_state=42,
                             tree_method="hist", n_jobs=1).fit(X, y)
    return model, X, None


def california(library: str):
    """(model, test rows, background): XGBoost 500 x depth 6 or LightGBM 1,000 x 63 leaves on California."""
    frame = pd.read_csv(DATA / "california_housing.csv").drop(columns=["ocean_proximity"])
    y = frame.pop("median_house_value").to_numpy(float)
    X_train, X_test, y_train, _ = _split(frame, y)
    X_train, X_test = X_train.fillna(X_train.median()), X_test.fillna(X_train.median())
    mean, std = X_train.mean(), X_train.std()
    X_train, X_test = ((X_train - mean) / std).to_numpy(float), ((X_test - mean) / std).to_numpy(float)
    if library == "xgboost":
        import xgboost as xgb

        model = xgb.XGBRegressor(tree_method="hist", max_depth=6, n_estimators=500, random_state=0, n_jobs=1)
    else:
        import lightgbm as lgb

        model = lgb.LGBMRegressor(n_estimators=1000, num_leaves=63, random_state=0, n_jobs=1, verbose=-1)
    return model.fit(X_train, y_train), X_test, None


def deep_forest(name: str) -> tuple:
    """(model, X_train, X_test, y_train, y_test) of the deep forests: ``"wine"``, the 6-class random forest of 200
    fully grown trees on red wine; ``"compas"``, a one-hot Pipeline in front of a 200-tree forest
    (``min_samples_leaf=5``) on COMPAS (``bench_audit.py`` audits the same models)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    if name == "wine":
        frame = pd.read_csv(DATA / "winequality_red.csv", sep=";")
        y = frame.pop("quality").to_numpy()
        model = RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=1)
    else:
        frame = pd.read_csv(DATA / "compas_two_years.csv").dropna()
        y = frame.pop("two_year_recid").to_numpy()
        categorical = ["race", "sex", "c_charge_degree"]
        frame = frame.drop(columns=["decile_score"])
        frame = frame[categorical + [c for c in frame.columns if c not in categorical]]
        front = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), categorical)],
                                  remainder="passthrough")
        forest = RandomForestClassifier(n_estimators=200, min_samples_leaf=5, random_state=0, n_jobs=1)
        model = Pipeline([("front", front), ("model", forest)])
    X_train, X_test, y_train, y_test = _split(frame, y)
    return model.fit(X_train, y_train), X_train, X_test, y_train, y_test


def wine():
    """(model, test rows, background): the 6-class random forest of 200 fully grown trees on red wine."""
    model, X_train, X_test, _, _ = deep_forest("wine")
    return model, X_test, X_train


def compas():
    """(model, test rows, background): a one-hot Pipeline in front of a 200-tree forest on COMPAS."""
    model, X_train, X_test, _, _ = deep_forest("compas")
    return model, X_test, X_train


def build(names, n_rows: int) -> dict:
    """name -> (model, rows, background) for the workloads asked for, ``n_rows`` test rows each (seed 1)."""
    makers = {"paper 40x4": paper, "xgb 500x6": lambda: california("xgboost"),
              "lgbm 1000x63": lambda: california("lightgbm"), "rf wine 6-class": wine, "rf compas one-hot": compas}
    jobs = {}
    for name in names:
        model, X_test, background = makers[name]()
        pick = np.random.default_rng(1).choice(len(X_test), n_rows, replace=False)
        rows = X_test.iloc[pick] if isinstance(X_test, pd.DataFrame) else X_test[pick]
        jobs[name] = (model, rows, background)
    return jobs


def one_row(rows, i):
    return rows.iloc[i:i + 1] if isinstance(rows, pd.DataFrame) else rows[i:i + 1]


def per_row(fn, rows) -> tuple[float, list]:
    """(median CPU seconds of fn(row) over the rows, each row its own call; the results)."""
    times, out = [], []
    for i in range(len(rows)):
        t = time.process_time()
        out.append(fn(one_row(rows, i)))
        times.append(time.process_time() - t)
    return float(np.median(times)), out


def greedy(jobs: dict, prune: bool, alone: bool = False) -> dict:
    """Per model: median seconds per row of the greedy ranking with the build importable now, the rankings and
    the PG² paths (as hexadecimal floats, so that they cross JSON bit for bit); with ``alone`` also the seconds
    of the ranking alone (``path=False``) and whether it is the same ranking."""
    import xai_plugins as xp

    out = {}
    for name, (model, rows, background) in jobs.items():
        def call(x, **path):
            return xp.greedy_pg2_ranking(model, x, SIGMA, background=background, prune=prune, n_jobs=1,
                                         verbose=False, **path)

        call(one_row(rows, 0))  # import and cache the model
        seconds, results = per_row(call, rows)
        out[name] = {"seconds": seconds, "ranking": [r.ranking[0].tolist() for r in results],
                     "path": [[float(v).hex() for v in r.pg2_path[0]] for r in results]}
        if alone:
            seconds, alone_results = per_row(lambda x: call(x, path=False), rows)
            out[name]["alone"] = seconds
            out[name]["alone same"] = [r.ranking[0].tolist() for r in alone_results] == out[name]["ranking"]
            # the path's d prefix sets alone: what an exact PG² of each costs, whatever ranks them
            times = []
            for i, r in enumerate(results):
                t = time.process_time()
                xp.pgi2(model, one_row(rows, i), r.ranking[0], SIGMA, background=background, prune=prune, n_jobs=1,
                        verbose=False)
                times.append(time.process_time() - t)
            out[name]["path sets"] = float(np.median(times))
    return out


def tree_shap(jobs: dict) -> dict:
    """Per model: median seconds per row of ``xp.tree_shap`` and of shap's ``TreeExplainer``."""
    import shap

    import xai_plugins as xp

    out = {}
    for name, (model, rows, _) in jobs.items():
        xp.tree_shap(model, one_row(rows, 0), n_jobs=1)
        ours, _ = per_row(lambda x: xp.tree_shap(model, x, n_jobs=1), rows)
        forest, encoded = model, rows
        if hasattr(model, "steps"):  # shap explains the forest behind the Pipeline, on its encoded rows
            forest, encoded = model.steps[-1][1], model[:-1].transform(rows)
            encoded = encoded.toarray() if hasattr(encoded, "toarray") else np.asarray(encoded, dtype=float)
        explainer = shap.TreeExplainer(forest)
        theirs, _ = per_row(lambda x: explainer.shap_values(x, check_additivity=False), encoded)
        out[name] = {"xp.tree_shap": ours, "shap": theirs}
    return out


def worker(path: str) -> None:
    """Subprocess entry: the greedy ranking of the pickled job with whatever xai_plugins is importable."""
    with open(path, "rb") as fh:
        job = pickle.load(fh)
    print(json.dumps(greedy(job["jobs"], job["prune"])))


def leaves(model) -> int:
    """Leaves of the model's forest (as imported)."""
    from xai_plugins.forest import import_model

    forest = import_model(model)
    return int((forest.left_child < 0).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    parser.add_argument("--rows", type=int, default=3, help="test rows per model")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--no-prune", action="store_true", help="greedy with prune=False (every leaf pair)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    prune = not args.no_prune
    jobs = build(args.models, args.rows)
    old = {}
    if args.ref:
        with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
            pickle.dump({"jobs": jobs, "prune": prune}, fh)
        old = _builds.in_subprocess(str(Path(__file__).resolve()), Path(args.ref).resolve(), "--worker", fh.name)
        os.unlink(fh.name)
    new = greedy(jobs, prune, alone=True)
    shap_times = tree_shap(jobs)
    print(f"greedy PG² ranking (prune={prune}) vs TreeSHAP, σ = {SIGMA}, one thread, median over {args.rows} "
          f"test rows (ms per row; ratios: times the new greedy's cost)")
    print(f"{'model':18s} {'leaves':>7s} {'reference':>10s} {'new':>9s} {'speed-up':>8s} {'xp.tree_shap':>12s} "
          f"{'greedy/ts':>9s} {'shap':>8s} {'greedy/shap':>11s} {'alone':>9s} {'speed-up':>8s} {'alone/ts':>8s} "
          f"{'path sets':>9s} {'share':>5s}  same ranking / path bits / ranking alone")
    for name, (model, _, _) in jobs.items():
        ours, ts = new[name]["seconds"], shap_times[name]
        ref = old.get(name)
        same = ("- / -" if ref is None else
                f"{ref['ranking'] == new[name]['ranking']} / {ref['path'] == new[name]['path']}")
        alone = new[name]["alone"]
        print(f"{name:18s} {leaves(model):7d} {ref['seconds'] * 1e3 if ref else float('nan'):10.2f} "
              f"{ours * 1e3:9.2f} {ref['seconds'] / ours if ref else float('nan'):8.2f} "
              f"{ts['xp.tree_shap'] * 1e3:12.3f} {ours / ts['xp.tree_shap']:9.1f} {ts['shap'] * 1e3:8.3f} "
              f"{ours / ts['shap']:11.1f} {alone * 1e3:9.2f} {ref['seconds'] / alone if ref else float('nan'):8.2f} "
              f"{alone / ts['xp.tree_shap']:8.1f} {new[name]['path sets'] * 1e3:9.2f} "
              f"{new[name]['path sets'] / ours:5.2f}  {same} / {new[name]['alone same']}")


if __name__ == "__main__":
    main()
