"""``xai-audit``: write an explanation audit (HTML, PDF, JSON) of a saved tree model.

    xai-audit --model model.json --data test.csv --target y --out reports/ [--train train.csv]
              [--sections explanations faithfulness ...] [--sigma 0.1 0.3 1.0] [--trust-pickle]
    xai-audit --model model.json --data "test/*.parquet" --target y --scheduler tcp://host:8786

With ``--scheduler`` the audit runs on that Dask cluster (see :func:`xai_plugins.report.audit`'s
``client``): ``--data`` may be a glob of parquet or CSV files, read with ``dask.dataframe`` on the
workers, and every complete test row gets the per-row methods and the PGI² scores (``--max-rows``
and ``--time-budget`` are ignored for the row count).

The model is an XGBoost JSON/UBJSON file, or — only with ``--trust-pickle``, because unpickling
runs arbitrary code — a pickled / joblib scikit-learn, XGBoost or LightGBM model. With no
arguments it writes a demo audit of two models trained on scikit-learn's embedded diabetes
(regression) and breast-cancer (classification) data to ``reports/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import pandas as pd

from .errors import XaiError

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
XGBOOST_SUFFIXES = (".json", ".ubj")


class CLIError(XaiError):
    """A user error reported as ``xai-audit: error: <message>`` with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``xai-audit``."""
    from .report import EXPLAINERS, OPTIONAL_SECTIONS

    parser = argparse.ArgumentParser(
        prog="xai-audit", description="Audit the explanations of a tree-ensemble model (HTML + PDF report). "
        "Without arguments: a demo audit of two models on scikit-learn's diabetes and breast-cancer data.")
    parser.add_argument("--model", help="XGBoost .json/.ubj model, or .pkl/.joblib with --trust-pickle")
    parser.add_argument("--data", help="CSV of the test data (features + target column); with --scheduler, a "
                        "glob of parquet (.parquet/.pq or a folder) or CSV files read by dask.dataframe")
    parser.add_argument("--target", help="name of the target column in --data (and --train)")
    parser.add_argument("--train", help="CSV of the training data (same columns): noise scale, AcME, MCR")
    parser.add_argument("--out", default="reports", help="output folder (default: reports/)")
    parser.add_argument("--sections", nargs="+", choices=OPTIONAL_SECTIONS, metavar="SECTION",
                        help=f"optional sections to compute (default all): {', '.join(OPTIONAL_SECTIONS)}")
    parser.add_argument("--explainers", nargs="+", choices=EXPLAINERS, metavar="METHOD",
                        help=f"explainers to run (default all): {', '.join(EXPLAINERS)}")
    parser.add_argument("--sigma", nargs="+", type=float, default=[0.1, 0.3, 1.0],
                        help="noise levels in training standard deviations (default: 0.1 0.3 1.0)")
    parser.add_argument("--max-rows", type=int, default=50,
                        help="most test rows given the per-row methods (default 50)")
    parser.add_argument("--time-budget", type=float, default=20.0,
                        help="seconds for the per-row PG² work; fewer rows when it would take longer "
                             "(default 20; 0: always --max-rows, a machine-independent row count)")
    parser.add_argument("--title", help="report title (default: from the model file name)")
    parser.add_argument("--positive-class", help="class explained by classifiers (default: the last)")
    parser.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--trust-pickle", action="store_true",
                        help="allow loading a pickled/joblib model (unpickling runs arbitrary code)")
    parser.add_argument("--mcr-epsilon", type=float, default=0.0,
                        help="tolerance of the MCR Rashomon set: share of training rows (classifiers) or MSE "
                             "(regressors) by which swapped trees may differ (default 0: identical predictions)")
    parser.add_argument("--mcr-fit-forest", action="store_true",
                        help="for a model RF-MCR does not support (boosting, bootstrap forests), fit a bootstrap-free "
                             "random forest on --train and report its MCR ranges")
    parser.add_argument("--no-pdf", action="store_true", help="write HTML and JSON only")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--n-jobs", type=int, default=-1, help="threads (default -1: every core)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="address of a Dask scheduler (e.g. tcp://host:8786): run the per-row methods and the "
                             "faithfulness section on every test row on that cluster (needs xai_plugins[dask])")
    return parser


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_model(path, trust_pickle: bool = False):
    """Load an XGBoost JSON/UBJSON model (as XGBClassifier or XGBRegressor by its objective) or, with
    ``trust_pickle``, a pickled / joblib model. Raises :class:`CLIError` with the reason otherwise."""
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"model file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        if not trust_pickle:
            raise CLIError(f"refusing to load {path.name}: unpickling a file can run arbitrary code. "
                           "Pass --trust-pickle only if you trust where it came from, or save the model as "
                           "XGBoost JSON")
        try:
            import joblib

            return joblib.load(path)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is a user error here
            raise CLIError(f"cannot read model file {path.name}: {type(exc).__name__}: {exc}") from exc
    if suffix in XGBOOST_SUFFIXES:
        return _load_xgboost(path)
    raise CLIError(f"unknown model format {suffix!r} for {path.name}: use XGBoost .json/.ubj, or "
                   f"{'/'.join(PICKLE_SUFFIXES)} with --trust-pickle")


def _load_xgboost(path: Path):
    try:
        import xgboost
    except ImportError as exc:
        raise CLIError("reading an XGBoost model needs the xgboost package (pip install xgboost)") from exc
    try:
        booster = xgboost.Booster(model_file=str(path))
        objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
    except Exception as exc:  # noqa: BLE001 - xgboost raises its own error types for corrupt files
        raise CLIError(f"cannot read model file {path.name} as an XGBoost model: {exc}") from exc
    model = (xgboost.XGBClassifier if objective.startswith(("binary:", "multi:")) else xgboost.XGBRegressor)()
    model.load_model(str(path))
    return model


def read_table(path, target: str, label: str) -> tuple[pd.DataFrame, pd.Series]:
    """Features and target of a CSV; :class:`CLIError` when unreadable or without the target column."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise CLIError(f"cannot read {label} {str(path)!r}: {exc}") from exc
    if target not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20])) + (" ..." if len(frame.columns) > 20 else "")
        raise CLIError(f"target column {target!r} is not in {label} {Path(path).name} (columns: {shown})")
    return frame.drop(columns=[target]), frame[target]


def connect(address: str):
    """A ``distributed.Client`` of the scheduler at ``address``; :class:`CLIError` when unreachable."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise CLIError('--scheduler needs dask and distributed: pip install "xai_plugins[dask]"') from exc
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise CLIError(f"cannot connect to the Dask scheduler at {address!r}: {exc}") from exc


def read_dask_table(pattern: str, target: str):
    """Features and target of a glob of parquet or CSV files as a lazy dask DataFrame / Series, and
    a description of the files for the appendix; :class:`CLIError` when nothing matches or the
    target column is missing. Parquet: a .parquet/.pq pattern or a folder; CSV otherwise."""
    import glob
    import os

    import dask.dataframe as dd

    remote = "://" in pattern
    files = [] if remote else sorted(glob.glob(pattern)) if not os.path.isdir(pattern) else [pattern]
    if not remote and not files:
        raise CLIError(f"--data {pattern!r} matches no file")
    parquet = pattern.rstrip("/*").lower().endswith((".parquet", ".pq")) or (not remote and os.path.isdir(pattern))
    try:
        frame = dd.read_parquet(pattern) if parquet else dd.read_csv(pattern)
    except (OSError, ValueError) as exc:
        raise CLIError(f"cannot read --data {pattern!r}: {exc}") from exc
    if target not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20])) + (" ..." if len(frame.columns) > 20 else "")
        raise CLIError(f"target column {target!r} is not in --data {pattern} (columns: {shown})")
    size = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
    described = (f"{pattern} ({'parquet' if parquet else 'CSV'}, {len(files)} file(s), {size:,} bytes: "
                 f"{', '.join(Path(f).name for f in files[:10])}{' ...' if len(files) > 10 else ''})"
                 if files else f"{pattern} ({'parquet' if parquet else 'CSV'})")
    return frame.drop(columns=[target]), frame[target], described


def align_features(forest, X: pd.DataFrame, label: str) -> pd.DataFrame:
    """``X`` with the model's columns in the model's order (aligned by name where the model knows
    its feature names, by position otherwise); :class:`CLIError` on any mismatch."""
    try:
        rows, names = forest.rows(X, what=label, allow_nan=True)
    except XaiError as exc:
        raise CLIError(str(exc)) from exc
    return pd.DataFrame(rows, columns=names, index=X.index)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "audit"


def write_audit(result, out: Path, stem: str, pdf: bool = True) -> list:
    """Write ``stem``.html/.json (and .pdf) under ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.html", out / f"{stem}.json"]
    result.to_html(paths[0])
    result.to_json(paths[1])
    if pdf:
        paths.append(out / f"{stem}.pdf")
        result.to_pdf(paths[2])
    return paths


def run_files(args) -> list:
    """Audit the model and CSV files named on the command line."""
    from .forest import import_model
    from .report import audit

    model = load_model(args.model, args.trust_pickle)
    try:
        forest = import_model(model)
    except (XaiError, ValueError) as exc:
        raise CLIError(f"cannot audit {Path(args.model).name}: {exc}") from exc
    provenance = {"model file": f"{Path(args.model).name} (sha256 {sha256_file(args.model)})"}
    client = None
    if args.scheduler:
        X, y, provenance["test files"] = read_dask_table(args.data, args.target)
    else:
        X, y = read_table(args.data, args.target, "--data")
        X = align_features(forest, X, "--data")
        provenance["test file"] = f"{Path(args.data).name} (sha256 {sha256_file(args.data)})"
    X_train = y_train = None
    if args.train:
        X_train, y_train = read_table(args.train, args.target, "--train")
        X_train = align_features(forest, X_train, "--train")
        provenance["training file"] = f"{Path(args.train).name} (sha256 {sha256_file(args.train)})"
    positive = _positive_class(model, args.positive_class)
    title = args.title or f"Explanation audit of {Path(args.model).name}"
    if args.scheduler:
        client = connect(args.scheduler)
    try:
        result = audit(model, X, y, X_train=X_train, y_train=y_train, title=title, positive_class=positive,
                       provenance=provenance, client=client, **_audit_options(args))
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    finally:
        if client is not None:
            client.close()
    return write_audit(result, Path(args.out), _slug(Path(args.model).stem), pdf=not args.no_pdf)


def _audit_options(args) -> dict:
    """Keyword arguments of :func:`~xai_plugins.report.audit` shared by the demo and a user's files."""
    if args.max_rows < 1:
        raise CLIError(f"--max-rows must be at least 1; got {args.max_rows}")
    return {"sigma": args.sigma, "explainers": args.explainers or None, "sections": args.sections,
            "random_state": args.random_state, "max_rows": args.max_rows,
            "time_budget": args.time_budget if args.time_budget > 0 else None,
            "mcr_epsilon": args.mcr_epsilon, "mcr_fit_forest": args.mcr_fit_forest, "progress": not args.quiet,
            "n_jobs": args.n_jobs}


def _positive_class(model, value):
    """``--positive-class`` converted to the type of the model's class labels."""
    if value is None:
        return None
    for label in getattr(model, "classes_", []):
        if str(label) == value:
            return label
    raise CLIError(f"--positive-class {value!r} is not one of the model's classes "
                   f"{list(getattr(model, 'classes_', []))}")


def demo_models(random_state: int = 0) -> list:
    """(name, title, model, X_test, y_test, X_train, y_train) of the two demo audits: 100-tree random
    forests grown with bootstrap=False (so MCR applies) on scikit-learn's embedded data sets."""
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.model_selection import train_test_split

    out = []
    for name, title, loader, estimator in (
        ("demo_diabetes_regression", "Demo: diabetes progression (random forest regressor)", load_diabetes,
         RandomForestRegressor(n_estimators=100, max_depth=4, max_features=0.5, bootstrap=False,
                               random_state=random_state, n_jobs=1)),
        ("demo_breast_cancer_classification", "Demo: breast cancer diagnosis (random forest classifier)",
         load_breast_cancer, RandomForestClassifier(n_estimators=100, max_depth=3, max_features="sqrt",
                                                    bootstrap=False, random_state=random_state, n_jobs=1)),
    ):
        X, y = loader(return_X_y=True, as_frame=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=random_state)
        out.append((name, title, estimator.fit(X_train, y_train), X_test, y_test, X_train, y_train))
    return out


def run_demo(args) -> list:
    """Write the two demo audits to ``args.out``."""
    from .report import audit

    paths = []
    client = connect(args.scheduler) if args.scheduler else None
    try:
        for name, title, model, X_test, y_test, X_train, y_train in demo_models(args.random_state):
            result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, title=title, client=client,
                           **_audit_options(args))
            paths += write_audit(result, Path(args.out), name, pdf=not args.no_pdf)
    finally:
        if client is not None:
            client.close()
    return paths


def main(argv=None) -> int:
    """Entry point of ``xai-audit``; returns the exit status (0 ok, 2 user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    given = {"--model": args.model, "--data": args.data, "--target": args.target}
    try:
        if not any(given.values()):
            if args.train:
                raise CLIError("--train needs --model, --data and --target")
            paths = run_demo(args)
        elif not all(given.values()):
            raise CLIError(f"{', '.join(k for k, v in given.items() if not v)} missing: --model, --data and "
                           "--target go together (or give none of them for the demo)")
        else:
            paths = run_files(args)
    except CLIError as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
