"""``xai-audit``: write an explanation audit (HTML, PDF, JSON) of a saved tree model.

    xai-audit --model model.json --data test.csv --target y --out reports/ [--train train.csv]
              [--sep ";"] [--protected race sex] [--model-card card.yaml] [--run-id R-42] [--strict]
              [--fail-on warn | fail | fitness:warn | explanations:fail ...]
              [--threshold faithfulness_pass=0.6 ...]
              [--sections explanations faithfulness ...] [--sigma 0.1 0.3 1.0] [--trust-pickle]
    xai-audit --model model.json --data "test/*.parquet" --target y --scheduler tcp://host:8786

Every audit setting is a flag derived from :class:`~xai_plugins.report.options.AuditOptions` (same
names, same defaults as :func:`xai_plugins.report.audit`). Everything the command line names is
checked before any computation: the output folder is writable, the model file is a model, the data
files are readable with ``--sep``, the target column fits the model's task, and the ``--protected``
columns exist. A section or method that fails is printed to stderr as a one-line warning; with
``--strict`` the exit status is then 1. ``--strict`` checks that the audit was computed in full, not
what it found: the two verdicts (model fitness, explanation reliability) are in the report and under
the JSON's ``verdict`` key. ``--fail-on LEVEL`` reads them: the exit status is 1 when either verdict is
at or worse than LEVEL (``warn`` or ``fail``), one stderr line per verdict that trips it;
``--fail-on fitness:LEVEL`` or ``explanations:LEVEL`` gates on one verdict only (repeat the flag to
combine); an audit without a verdict trips every gate. Beside the HTML, JSON and PDF, each run writes
``<stem>.manifest.json``: the SHA-256 of every input file (model, data, training data, model card)
and output file, and the audit's content hashes of the model and data (see
:mod:`xai_plugins.report.manifest`). ``--threshold NAME=VALUE`` changes one of the verdict's thresholds (the
names, defaults and rationales are listed in the report's verdict section).

With ``--scheduler`` the audit runs on that Dask cluster (see :func:`xai_plugins.report.audit`'s
``client``): ``--data`` may be a glob of parquet or CSV files, read with ``dask.dataframe`` on the
workers, and every complete test row gets the per-row methods and the PGI² scores (``--max-rows``
and ``--time-budget`` are ignored for the row count). With ``--spark-master`` (e.g. ``local[2]``,
``spark://host:7077``, ``yarn``) it runs on Spark the same way: a SparkSession is started with that
master, ``--data`` (a glob of parquet or CSV files, or a folder) is read by Spark, and the session is
stopped at the end (needs xai_plugins[spark] and Java 17).

The model is an XGBoost JSON/UBJSON file, or — only with ``--trust-pickle``, because unpickling
runs arbitrary code — a pickled / joblib scikit-learn, XGBoost or LightGBM model. With no
arguments it writes demo audits of three models trained on scikit-learn's embedded diabetes
(regression, with ``sex`` audited as a protected attribute) and breast-cancer (classification)
data, the third a scikit-learn Pipeline that one-hot encodes the diabetes data's ``sex`` as a text
column (a model with a categorical feature), to ``reports/``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from .errors import OutputPathError, XaiError, XaiWarning

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
XGBOOST_SUFFIXES = (".json", ".ubj")
#: exit statuses: success, a failed section or method under --strict or a --fail-on gate tripped, a user error
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: ``--fail-on`` scopes: the Verdict attributes a gate reads ("" = both, i.e. the worst of the two)
GATE_SCOPES = {"": ("model_fitness", "explanation_reliability"), "fitness": ("model_fitness",),
               "explanations": ("explanation_reliability",)}
#: ``--fail-on`` values: LEVEL or SCOPE:LEVEL
FAIL_ON = tuple(f"{scope}:{level}" if scope else level for scope in GATE_SCOPES for level in ("warn", "fail"))
#: the demo's three audits: the stems of their files
DEMO_STEMS = ("demo_diabetes_regression", "demo_breast_cancer_classification", "demo_diabetes_categorical_pipeline")
#: the demo's protected attribute (a column of scikit-learn's diabetes data, also a model feature there)
DEMO_PROTECTED = {DEMO_STEMS[0]: ("sex",), DEMO_STEMS[2]: ("sex",)}
#: the labels the categorical demo gives the diabetes data's two ``sex`` codes (1 and 2; the data set does not
#: document which is which, so the labels stay neutral)
DEMO_SEX_LABELS = {1.0: "sex 1", 2.0: "sex 2"}


class CLIError(XaiError):
    """A user error reported as ``xai-audit: error: <message>`` with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``xai-audit``: the file flags, then one flag per audit option (see
    :func:`~xai_plugins.report.options.cli_fields`), whose default is left to :class:`AuditOptions`."""
    from .report.options import AuditOptions, cli_fields, flag

    parser = argparse.ArgumentParser(
        prog="xai-audit", description="Audit the explanations of a tree-ensemble model (HTML + PDF report). "
        "Without arguments: demo audits of three models on scikit-learn's diabetes and breast-cancer data (the third "
        "a Pipeline with a categorical feature).")
    files = parser.add_argument_group("files")
    files.add_argument("--model", help="XGBoost .json/.ubj model, or .pkl/.joblib with --trust-pickle")
    files.add_argument("--data", help="CSV of the test data (features + target column, and any --protected "
                       "columns); with --scheduler, a glob of parquet (.parquet/.pq or a folder) or CSV files")
    files.add_argument("--target", help="name of the target column in --data (and --train)")
    files.add_argument("--train", help="CSV of the training data (same columns): noise scale, AcME, MCR")
    files.add_argument("--sep", default=",", help="column separator of the CSV files (default: ',')")
    files.add_argument("--out", default="reports", help="output folder (default: reports/)")
    files.add_argument("--trust-pickle", action="store_true",
                       help="allow loading a pickled/joblib model (unpickling runs arbitrary code)")
    audit = parser.add_argument_group("audit settings (defaults: those of xai_plugins.report.AuditOptions)")
    audit.add_argument("--title", default=argparse.SUPPRESS, help="report title (default: from the model file name)")
    defaults = AuditOptions()
    for f in cli_fields():
        kwargs = dict(f.metadata["cli"])
        default = getattr(defaults, f.name)
        shown = "none" if default in (None, ()) else " ".join(map(str, default)) if isinstance(default, tuple) \
            else default
        if isinstance(default, bool):     # a flag on by default is turned off with --no-NAME
            kwargs["action"] = argparse.BooleanOptionalAction if default else "store_true"
        text = f.metadata["help"] if "default" in f.metadata["help"] else f"{f.metadata['help']} (default: {shown})"
        audit.add_argument(flag(f.name), dest=f.name, default=argparse.SUPPRESS, help=text, **kwargs)
    run = parser.add_argument_group("running")
    run.add_argument("--no-pdf", action="store_true", help="write HTML and JSON only")
    run.add_argument("--fail-on", action="append", choices=FAIL_ON, metavar="[SCOPE:]LEVEL",
                     help="exit with status 1 when a verdict is at or worse than LEVEL (warn or fail); SCOPE "
                          "fitness: or explanations: reads one verdict only (default: both); repeatable. Unlike "
                          "--strict, which checks that every section was computed, this reads the verdicts")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--n-jobs", type=int, default=None,
                     help="threads, as audit()'s n_jobs (default: the C core and RF-MCR on every core, the same "
                          "bits as one thread, the model's own predictor on one; N or -1: everything on N or every "
                          "core, and a scikit-learn model's own parallel predictions may then differ in the last "
                          "bits between runs)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="address of a Dask scheduler (e.g. tcp://host:8786): run the per-row methods and the "
                          "faithfulness section on every test row on that cluster (needs xai_plugins[dask])")
    run.add_argument("--spark-master", metavar="MASTER",
                     help="Spark master URL (e.g. local[2], spark://host:7077): start a SparkSession there, read "
                          "--data with Spark and run the per-row methods and the faithfulness section on every test "
                          "row (needs xai_plugins[spark] and Java 17)")
    return parser


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
    if path.suffix.lower() == ".json":
        _check_xgboost_json(path)
    try:
        booster = xgboost.Booster(model_file=str(path))
        objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
        model = (xgboost.XGBClassifier if objective.startswith(("binary:", "multi:")) else xgboost.XGBRegressor)()
        model.load_model(str(path))
    except Exception as exc:  # noqa: BLE001 - xgboost raises its own error types for corrupt files
        raise CLIError(f"cannot read model file {path.name} as an XGBoost model: {_native_message(exc)}") from exc
    return model


def _check_xgboost_json(path: Path) -> None:
    """Refuse a .json file that is not JSON, or JSON that is not an XGBoost model, with a message that
    says what to do (xgboost's own error would be a C++ cast error and stack trace)."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise CLIError(f"cannot read model file {path.name}: it is not UTF-8 text (a binary model must be "
                       f"saved as .ubj)") from exc
    except json.JSONDecodeError as exc:
        raise CLIError(f"cannot read model file {path.name}: it is not valid JSON ({exc})") from exc
    if not (isinstance(payload, dict) and isinstance(payload.get("learner"), dict)):
        keys = list(payload)[:5] if isinstance(payload, dict) else type(payload).__name__
        raise CLIError(f"cannot read model file {path.name}: it is JSON but not an XGBoost model (no \"learner\" "
                       f"object; found {keys}). Save the fitted model with model.save_model('model.json'), or pass "
                       f"a pickled scikit-learn / LightGBM model with --trust-pickle")


def _native_message(exc: Exception) -> str:
    """The message of a native library's exception without its C++ stack trace."""
    text = str(exc).split("Stack trace:")[0].strip()
    return re.sub(r"^\[[0-9:]+\] \S+: ", "", text)


def read_table(path, target: str, label: str, sep: str = ",") -> tuple[pd.DataFrame, pd.Series]:
    """Features and target of a CSV; :class:`CLIError` when unreadable, apparently read with the
    wrong ``sep``, or without the target column."""
    try:
        frame = pd.read_csv(path, sep=sep)
    except (OSError, ValueError) as exc:
        raise CLIError(f"cannot read {label} {str(path)!r}: {exc}") from exc
    if target not in frame.columns:
        if len(frame.columns) == 1:
            other = next((s for s in (";", "\t", "|", ",") if s != sep and s in str(frame.columns[0])), None)
            if other is not None:
                raise CLIError(f"{label} {Path(path).name} reads as one column with --sep {sep!r}; its header "
                               f"contains {other!r}: pass --sep {shlex.quote(other)}")
        shown = ", ".join(map(str, frame.columns[:20])) + (" ..." if len(frame.columns) > 20 else "")
        raise CLIError(f"target column {target!r} is not in {label} {Path(path).name} (columns: {shown})")
    return frame.drop(columns=[target]), frame[target]


def check_target(model, forest, y: pd.Series, label: str, what: str) -> None:
    """:class:`CLIError` when the target column does not fit the model's task, from the audit's own
    check (:func:`xai_plugins._validation.check_target`, so its message is the one ``audit()`` gives
    for ``what``: "y_test" or "y_train"): a non-numeric target for a regressor, labels the classifier
    was not trained on, missing targets."""
    from ._validation import check_target as check_labels
    from .report.context import model_classes

    try:
        check_labels(y, model_classes(model, forest), what=what)
    except XaiError as exc:
        raise CLIError(f"target column {y.name!r} of {label}: {exc}") from exc


def check_columns(frame, columns, label: str, flag: str) -> None:
    """:class:`CLIError` naming the ``columns`` (given with ``flag``) missing from ``frame``."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = ", ".join(map(str, list(frame.columns)[:20]))
        raise CLIError(f"{flag} column(s) {missing} not in {label} (columns: {shown})")


def check_out(out: Path, stems, pdf: bool = True) -> None:
    """Check, before any computation, that every file the run will write (``stem``.html/.json/.pdf
    under ``out``) can be written, by trying (see
    :func:`~xai_plugins.report.options.check_output_paths`, which leaves nothing behind)."""
    from .report.options import check_output_paths

    try:
        check_output_paths(output_paths(Path(out), stems, pdf))
    except OutputPathError as exc:
        raise CLIError(str(exc)) from exc


def output_paths(out: Path, stems, pdf: bool = True) -> list:
    """The files ``xai-audit`` writes under ``out``: per stem, the HTML, the JSON, (``pdf``) the PDF and
    the manifest (last)."""
    from .report.manifest import SUFFIX

    return [out / name for stem in stems
            for name in [*(f"{stem}.{ext}" for ext in (("html", "json", "pdf") if pdf else ("html", "json"))),
                         f"{stem}{SUFFIX}"]]


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


def start_spark(master: str):
    """A SparkSession with ``master`` (its console progress bar off, the audit shows its own);
    :class:`CLIError` when pyspark is missing or Spark does not start."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise CLIError('--spark-master needs pyspark: pip install "xai_plugins[spark]" (and Java 17)') from exc
    try:
        return (SparkSession.builder.master(master).appName("xai-audit")
                .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    except Exception as exc:  # noqa: BLE001 - py4j / JVM start-up errors have no common type
        raise CLIError(f"cannot start Spark with master {master!r}: {exc}") from exc


def read_cluster_table(pattern: str, target: str, sep: str = ",", spark=None):
    """The test data of a glob of parquet or CSV files, read on the cluster: with ``spark`` (a
    SparkSession) a Spark DataFrame holding the target column and the target's name, else a lazy
    dask DataFrame of the features and the target's dask Series; and a description of the files for
    the appendix. :class:`CLIError` when nothing matches or the target column is missing. Parquet: a
    .parquet/.pq pattern or a folder; CSV otherwise."""
    import glob

    remote = "://" in pattern
    files = [] if remote else sorted(glob.glob(pattern)) if not os.path.isdir(pattern) else [pattern]
    if not remote and not files:
        raise CLIError(f"--data {pattern!r} matches no file")
    parquet = pattern.rstrip("/*").lower().endswith((".parquet", ".pq")) or (not remote and os.path.isdir(pattern))
    try:
        if spark is not None:
            paths = files or [pattern]
            frame = (spark.read.parquet(*paths) if parquet
                     else spark.read.csv(paths, header=True, inferSchema=True, sep=sep))
        else:
            import dask.dataframe as dd

            frame = dd.read_parquet(pattern) if parquet else dd.read_csv(pattern, sep=sep)
    except Exception as exc:  # noqa: BLE001 - dask raises OSError/ValueError, Spark its AnalysisException
        raise CLIError(f"cannot read --data {pattern!r}: {exc}") from exc
    if target not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20])) + (" ..." if len(frame.columns) > 20 else "")
        raise CLIError(f"target column {target!r} is not in --data {pattern} (columns: {shown})")
    size = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
    described = (f"{pattern} ({'parquet' if parquet else 'CSV'}, {len(files)} file(s), {size:,} bytes: "
                 f"{', '.join(Path(f).name for f in files[:10])}{' ...' if len(files) > 10 else ''})"
                 if files else f"{pattern} ({'parquet' if parquet else 'CSV'})")
    if spark is not None:
        return frame, target, described
    return frame.drop(columns=[target]), frame[target], described


def align_features(forest, X: pd.DataFrame, label: str, keep=()) -> pd.DataFrame:
    """``X`` with the model's columns in the model's order (aligned by name where the model knows
    its feature names, by position otherwise), plus the ``keep`` columns that are not features
    (protected attributes); :class:`CLIError` on any mismatch. A model with labelled categorical
    features (text columns) keeps its columns as read, labels and all, so that the report (and a
    protected attribute among them) speaks of the labels."""
    extra = [c for c in keep if c not in (forest.feature_names or ())]
    try:
        rows, names = forest.rows(X.drop(columns=extra), what=label, allow_nan=True)
    except XaiError as exc:
        raise CLIError(str(exc)) from exc
    labelled = forest.category_labels is not None and set(names) <= set(X.columns)
    aligned = X[names] if labelled else pd.DataFrame(rows, columns=names, index=X.index)
    return pd.concat([aligned, X[extra]], axis=1) if extra else aligned


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "audit"


def write_audit(result, out: Path, stem: str, pdf: bool = True, inputs=()) -> list:
    """Write ``stem``.html/.json (and .pdf) under ``out``, then their manifest with the SHA-256 of
    ``inputs`` ((role, path) pairs, see :func:`input_files`) and of each output; returns the paths written."""
    from .report.manifest import content_hashes, write_manifest

    *reports, manifest = output_paths(out, [stem], pdf)
    try:
        html = result.to_html(reports[0])
        result.to_json(reports[1])
        if pdf:
            result.to_pdf(reports[2], html=html)          # the same HTML, not rendered again
        write_manifest(manifest, inputs, reports, content_hashes(result))
    except OSError as exc:   # checked before computing; this is a change on disk since then
        raise CLIError(f"cannot write the report: {exc}") from exc
    return [*reports, manifest]


def input_files(args) -> list:
    """(role, path) of every input file the command line names: the model, the test data (with
    ``--scheduler``, each local file its glob matches or its folder holds), the training data and the
    model card."""
    import glob

    data = sorted(glob.glob(args.data)) if args.scheduler or args.spark_master else [args.data]
    named = [("model", args.model), *(("test data", d) for d in data), ("training data", args.train),
             ("model card", getattr(args, "model_card", None))]
    files = []
    for role, path in named:
        if path is not None and os.path.isdir(path):
            files += [(role, str(f)) for f in sorted(Path(path).rglob("*")) if f.is_file()]
        elif path is not None and os.path.isfile(path):
            files.append((role, path))
    return files


def audit_options(args, argv, **fixed):
    """The :class:`~xai_plugins.report.options.AuditOptions` of the flags given (the others keep their
    defaults), the command line and ``fixed`` settings; :class:`CLIError` on an invalid value."""
    from .report.options import AuditOptions, cli_fields

    given = {f.name: getattr(args, f.name) for f in cli_fields() if hasattr(args, f.name)}
    if hasattr(args, "title"):
        given["title"] = args.title
    given.update(fixed)
    try:
        return AuditOptions(progress=not args.quiet, command_line=shlex.join(["xai-audit", *argv]), **given)
    except (XaiError, ValueError, TypeError) as exc:
        raise CLIError(_flagged(str(exc))) from exc


def _flagged(message: str) -> str:
    """An AuditOptions error message with the option names written as CLI flags."""
    from .report.options import cli_fields, flag

    for f in cli_fields():
        message = re.sub(rf"\b{f.name}\b", flag(f.name), message)
    return message


def prepare_files(args, argv, spark=None) -> dict:
    """Load and check everything the command line names, before any computation: the output folder,
    the model, the data (with ``--sep``; read by ``spark``, a SparkSession, when given), the target
    column against the model's task, the ``--protected`` columns, the model card and the positive
    class. Returns the audit's arguments."""
    from .forest import import_model
    from .report.manifest import sha256_file

    check_out(Path(args.out), [_slug(Path(args.model).stem)], pdf=not args.no_pdf)
    model = load_model(args.model, args.trust_pickle)
    try:
        forest = import_model(model)
    except (XaiError, ValueError) as exc:
        raise CLIError(f"cannot audit {Path(args.model).name}: {_native_message(exc)}") from exc
    card = getattr(args, "model_card", None)
    if card is not None and not Path(card).is_file():
        raise CLIError(f"--model-card file {card!r} does not exist")
    if card is not None:
        from .report.governance import read_model_card

        try:
            read_model_card(card)
        except XaiError as exc:
            raise CLIError(f"--model-card: {exc}") from exc
    protected = tuple(getattr(args, "protected", ()))
    provenance = {"model file": f"{Path(args.model).name} (sha256 {sha256_file(args.model)})"}
    if args.scheduler or spark is not None:
        X, y, provenance["test files"] = read_cluster_table(args.data, args.target, args.sep, spark)
        check_columns(X, protected, "--data", "--protected")
    else:
        X, y = read_table(args.data, args.target, "--data", args.sep)
        check_columns(X, protected, f"--data {Path(args.data).name}", "--protected")
        check_target(model, forest, y, f"--data {Path(args.data).name}", "y_test")
        X = align_features(forest, X, "--data", keep=protected)
        provenance["test file"] = f"{Path(args.data).name} (sha256 {sha256_file(args.data)})"
    X_train = y_train = None
    if args.train:
        X_train, y_train = read_table(args.train, args.target, "--train", args.sep)
        check_target(model, forest, y_train, f"--train {Path(args.train).name}", "y_train")
        X_train = align_features(forest, X_train, "--train", keep=[c for c in protected if c in X_train.columns])
        provenance["training file"] = f"{Path(args.train).name} (sha256 {sha256_file(args.train)})"
    fixed = {"provenance": provenance, "positive_class": _positive_class(model, getattr(args, "positive_class", None))}
    if not hasattr(args, "title"):
        fixed["title"] = f"Explanation audit of {Path(args.model).name}"
    return {"model": model, "X_test": X, "y_test": y, "X_train": X_train, "y_train": y_train,
            "options": audit_options(args, argv, **fixed)}


def run_files(args, argv) -> list:
    """Audit the model and data files named on the command line; returns the Audit and its paths."""
    from .report import audit

    client = None
    try:
        client = start_spark(args.spark_master) if args.spark_master else None
        prepared = prepare_files(args, argv, client)
        client = connect(args.scheduler) if args.scheduler else client
        result = audit(**prepared, client=client, n_jobs=args.n_jobs)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    finally:
        if client is not None:
            (client.stop if args.spark_master else client.close)()
    return [(result, write_audit(result, Path(args.out), _slug(Path(args.model).stem), pdf=not args.no_pdf,
                                 inputs=input_files(args)))]


def _positive_class(model, value):
    """``--positive-class`` converted to the type of the model's class labels."""
    if value is None:
        return None
    classes = list(getattr(model, "classes_", None) if getattr(model, "classes_", None) is not None else [])
    if not classes:
        raise CLIError("--positive-class applies to classifiers; this model is a regressor")
    for label in classes:
        if str(label) == str(value):
            return label
    raise CLIError(f"--positive-class {value!r} is not one of the model's classes {[str(c) for c in classes]}")


def demo_models(random_state: int = 0) -> list:
    """(name, title, model, X_test, y_test, X_train, y_train) of the three demo audits: 100-tree random
    forests grown with bootstrap=False (so MCR applies) on scikit-learn's embedded data sets, and a
    Pipeline (one-hot encoded ``sex`` as text, the other columns as they are, gradient boosting) on the
    diabetes data in its original units: a model with a categorical feature."""
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    def diabetes_with_sex_as_text(return_X_y, as_frame):
        X, y = load_diabetes(return_X_y=return_X_y, as_frame=as_frame, scaled=False)
        return X.assign(sex=X["sex"].map(DEMO_SEX_LABELS)), y

    pipeline = Pipeline([("encode", ColumnTransformer([("sex", OneHotEncoder(), ["sex"])], remainder="passthrough",
                                                      verbose_feature_names_out=False)),
                         ("boost", GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.05,
                                                             random_state=random_state))])
    out = []
    for name, title, loader, estimator in (
        (DEMO_STEMS[0], "Demo: diabetes progression (random forest regressor)", load_diabetes,
         RandomForestRegressor(n_estimators=100, max_depth=4, max_features=0.5, bootstrap=False,
                               random_state=random_state, n_jobs=1)),
        (DEMO_STEMS[1], "Demo: breast cancer diagnosis (random forest classifier)",
         load_breast_cancer, RandomForestClassifier(n_estimators=100, max_depth=3, max_features="sqrt",
                                                    bootstrap=False, random_state=random_state, n_jobs=1)),
        (DEMO_STEMS[2], "Demo: diabetes progression, sex as a category (one-hot Pipeline, gradient boosting)",
         diabetes_with_sex_as_text, pipeline),
    ):
        X, y = loader(return_X_y=True, as_frame=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=random_state)
        out.append((name, title, estimator.fit(X_train, y_train), X_test, y_test, X_train, y_train))
    return out


def run_demo(args, argv) -> list:
    """Write the demo audits to ``args.out``; returns each Audit with its paths."""
    from .report import audit

    check_out(Path(args.out), DEMO_STEMS, pdf=not args.no_pdf)
    results = []
    client = (connect(args.scheduler) if args.scheduler
              else start_spark(args.spark_master) if args.spark_master else None)
    try:
        for name, title, model, X_test, y_test, X_train, y_train in demo_models(getattr(args, "random_state", 0)):
            fixed = {"title": title}
            if not hasattr(args, "protected"):
                fixed["protected"] = DEMO_PROTECTED.get(name, ())
            options = audit_options(args, argv, **fixed)
            result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, options=options, client=client,
                           n_jobs=args.n_jobs)
            results.append((result, write_audit(result, Path(args.out), name, pdf=not args.no_pdf)))
    finally:
        if client is not None:
            (client.stop if args.spark_master else client.close)()
    return results


def report_problems(result, strict: bool) -> int:
    """Print one stderr line per failed or warning section / method; the exit status (1 when
    something failed and ``strict``)."""
    for p in result.problems:
        word = "failed" if p["status"] == "failed" else "warns"
        print(f"xai-audit: warning: {result.title}: {p['what']} {word}: {p['reason']}", file=sys.stderr)
    return EXIT_FAILED if strict and result.failed else EXIT_OK


def verdict_gate(result, fail_on) -> int:
    """The exit status of the ``--fail-on`` gates (values of :data:`FAIL_ON`): EXIT_FAILED, with one
    stderr line per verdict that is at or worse than a gate's level, or when the audit has no verdict;
    EXIT_OK otherwise (and without gates)."""
    from .report.verdict import severity

    if not fail_on:
        return EXIT_OK
    if result.verdict is None:
        print(f"xai-audit: verdict gate: {result.title}: no verdict was computed (see the verdict section), so "
              f"--fail-on {' '.join(fail_on)} cannot pass", file=sys.stderr)
        return EXIT_FAILED
    status = EXIT_OK
    for gate in dict.fromkeys(fail_on):
        scope, _, level = gate.rpartition(":")
        for judgement in (getattr(result.verdict, name) for name in GATE_SCOPES[scope]):
            if severity(judgement.status) >= severity(level):
                print(f"xai-audit: verdict gate: {result.title}: {judgement.name} is {judgement.status.upper()} "
                      f"(--fail-on {gate})", file=sys.stderr)
                status = EXIT_FAILED
    return status


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Print each distinct package warning (:class:`~xai_plugins.errors.XaiWarning`) raised inside
    once, as the stderr line ``xai-audit: warning: <message>``; other warnings are shown as usual."""
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", XaiWarning)
            yield
    finally:
        said = set()
        for w in caught:
            if not issubclass(w.category, XaiWarning):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
            elif str(w.message) not in said:
                said.add(str(w.message))
                print(f"xai-audit: warning: {w.message}", file=sys.stderr)


def main(argv=None) -> int:
    """Entry point of ``xai-audit``; returns the exit status (0 ok, 1 a failure under ``--strict`` or a
    verdict that trips a ``--fail-on`` gate, 2 user error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    given = {"--model": args.model, "--data": args.data, "--target": args.target}
    try:
        with warnings_as_lines():
            if args.scheduler and args.spark_master:
                raise CLIError("--scheduler (Dask) and --spark-master (Spark) exclude each other: give one")
            if not any(given.values()):
                if args.train:
                    raise CLIError("--train needs --model, --data and --target")
                results = run_demo(args, argv)
            elif not all(given.values()):
                raise CLIError(f"{', '.join(k for k, v in given.items() if not v)} missing: --model, --data and "
                               "--target go together (or give none of them for the demo)")
            else:
                results = run_files(args, argv)
    except CLIError as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    status = EXIT_OK
    for result, paths in results:
        for path in paths:
            print(f"wrote {path}")
        status = max(status, report_problems(result, getattr(args, "strict", False)),
                     verdict_gate(result, args.fail_on))
    return status


if __name__ == "__main__":
    sys.exit(main())
