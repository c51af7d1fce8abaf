"""Model import time (model -> Forest, the first call on a model) per library, beside a reference
build of this package (the previous main) measured in the same run.

Models (data: ``make_friedman1`` with its first column duplicated, seed 0):
- ``sklearn RF``: ``RandomForestRegressor(n_estimators=25)``, fully grown, 20,000 rows (~0.6 M nodes);
  ``--big`` adds ``bench_local_mdi.py``'s friedman forest, ``RandomForestRegressor(n_estimators=--big-trees)``
  on 100,000 rows (about 126,000 nodes a tree: 128 trees make the 16 M-node forest, 500 trees 63 M),
  fitted once and cached by that script (fitting it takes many minutes);
- ``XGBoost``: ``XGBRegressor(n_estimators=1000, max_depth=6)`` on 20,000 rows;
- ``LightGBM``: ``LGBMRegressor(n_estimators=1000)`` (31 leaves) on 20,000 rows;
- the XGBoost and LightGBM models converted to ONNX by onnxmltools (when installed): the time of reading the
  file's bytes into an ``OnnxModel`` and importing it, beside the same model's native import (this build only:
  the reference build may not read ONNX).

Each build imports each model ``--repeat`` times (the cache cleared before each) in its own
subprocess, on the same pickled models; the figure is the best CPU time of the process
(``time.process_time``, less disturbed by other load than wall time) and the same per million nodes.

Run: python benchmarks/bench_import.py [--ref DIR] [--repeat 3] [--big] [--big-trees 500]
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
import bench_local_mdi  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build_models() -> dict:
    """name -> fitted model (the small ones)."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import RandomForestRegressor

    def data(n):
        X, y = make_friedman1(n, random_state=0)
        return np.c_[X, X[:, 0]], y

    X, y = data(20_000)
    models = {"sklearn RF 25 trees": RandomForestRegressor(25, random_state=0, n_jobs=-1).fit(X, y),
              "XGBoost 1000 x 6": xgb.XGBRegressor(n_estimators=1000, max_depth=6, random_state=0).fit(X, y),
              "LightGBM 1000 x 31 leaves": lgb.LGBMRegressor(n_estimators=1000, verbose=-1,
                                                              random_state=0).fit(X, y)}
    try:
        import onnxmltools
        from onnxmltools.convert.common.data_types import FloatTensorType
    except ImportError:
        return models
    shape = [("X", FloatTensorType([None, X.shape[1]]))]
    for name in ("XGBoost 1000 x 6", "LightGBM 1000 x 31 leaves"):
        convert = onnxmltools.convert_xgboost if name.startswith("XGBoost") else onnxmltools.convert_lightgbm
        models[f"{name}, ONNX"] = convert(models[name], initial_types=shape).SerializeToString()
    return models


def measure(models: dict, repeat: int) -> dict:
    """name -> (best CPU seconds of import_model, nodes) with the xai_plugins on sys.path."""
    from xai_plugins.forest import clear_model_cache, import_model

    try:
        from xai_plugins.forest.onnx import OnnxModel
    except ImportError:                                   # a build without the ONNX importer
        OnnxModel = None
    out = {}
    for name, model in models.items():
        if isinstance(model, bytes) and OnnxModel is None:
            continue
        best = float("inf")
        for _ in range(repeat if "100k" not in name else 1):
            clear_model_cache()
            start = time.process_time()
            forest = import_model(OnnxModel.load(model) if isinstance(model, bytes) else model)
            best = min(best, time.process_time() - start)
        out[name] = (best, forest.n_nodes)
        del forest
        clear_model_cache()
    return out


def load_models(path: str, big: str | None) -> dict:
    """The pickled small models, and the big forest from ``bench_local_mdi.py``'s cache (a pickle of
    (model, rows)) when ``big`` names it."""
    with open(path, "rb") as fh:
        models = pickle.load(fh)
    if big:
        with open(big, "rb") as fh:
            model = pickle.load(fh)[0]
        models[f"sklearn RF {len(model.estimators_)} trees, 100k rows"] = model
    return models


def run(build: str, path: str, repeat: int, big: str | None) -> dict:
    """measure() in a subprocess importing the package from ``build``."""
    return _builds.in_subprocess(__file__, Path(build), "--worker", path, "--repeat", str(repeat),
                                 *(["--big-path", big] if big else []))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="checkout of the reference build (its C extension built in place)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="also the fully grown 100k-row random forest")
    parser.add_argument("--big-trees", type=int, default=500)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--big-path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(load_models(args.worker, args.big_path), args.repeat)))
        return
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    big = bench_local_mdi.workload("friedman", args.big_trees, refit=False)[0] if args.big else None
    models = build_models()
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump(models, fh, protocol=pickle.HIGHEST_PROTOCOL)
    del models
    try:
        old = run(str(Path(args.ref).resolve()), fh.name, args.repeat, big) if args.ref else {}
        new = run(str(ROOT), fh.name, args.repeat, big)
    finally:
        os.unlink(fh.name)
    print(f"{'model':36s} {'nodes':>11s} {'reference s':>12s} {'new s':>9s} {'ref s/M':>9s} {'new s/M':>9s} "
          f"{'speed-up':>9s}")
    for name, (seconds, nodes) in new.items():
        ref = old.get(name, (float("nan"), nodes))[0]
        print(f"{name:36s} {nodes:11,d} {ref:12.3f} {seconds:9.3f} {ref / nodes * 1e6:9.3f} "
              f"{seconds / nodes * 1e6:9.3f} {ref / seconds:9.1f}")


if __name__ == "__main__":
    main()
