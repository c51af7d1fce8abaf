"""The inputs of ``xai-audit`` (:mod:`xai_plugins.cli`): the saved model, the data files (CSV, Parquet; on a
Dask cluster or Spark), their target and id columns, the features read as the model reads them, and the
demo's models and data."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import OutputPathError, XaiError, XaiWarning
from .forest.files import load_model as read_model

__all__: list[str] = []

#: data files read as parquet (in memory with pandas, or on a cluster); any other file is read as CSV
PARQUET_SUFFIXES = (".parquet", ".pq")
#: the flag that names an input file of each role of :func:`input_files`
INPUT_FLAGS = {"model": "--model", "test data": "--data", "training data": "--train", "model card": "--model-card",
               "approval": "--approval"}


class CLIError(XaiError):
    """A user error reported as ``xai-audit: error: <message>`` with exit status 2."""


def load_model(path, trust_pickle: bool = False):
    """The fitted model saved at ``path`` (:func:`xai_plugins.load_model`: format from the content; a pickle only
    with ``trust_pickle``). Raises :class:`CLIError` with the reason otherwise."""
    try:
        return read_model(path, trust_pickle=trust_pickle)
    except XaiError as exc:
        raise CLIError(str(exc)) from exc


def read_table(path, target: str | None, label: str, sep: str = ",", id_cols=()) -> tuple[pd.DataFrame, Any]:
    """Features and target of a data file, without its ``id_cols``.

    Parameters
    ----------
    path : path-like
        A parquet file (:data:`PARQUET_SUFFIXES`, read in memory with pandas) or a CSV file.
    target : str or None
        The target column (None: the file holds none; the target returned is None).
    label : str
        The flag that named the file, for the messages ("--data", "--train").
    sep : str
        The CSV column separator.
    id_cols : sequence of str
        Row-identifier columns to drop (``--id-cols``).

    Returns
    -------
    (pandas.DataFrame, pandas.Series)
        The other columns and the target.

    Raises
    ------
    CLIError
        When the file is unreadable, apparently read with the wrong ``sep``, or lacks the target or an id column.
    """
    parquet = Path(path).suffix.lower() in PARQUET_SUFFIXES
    try:
        frame = pd.read_parquet(path) if parquet else pd.read_csv(path, sep=sep)
    except UnicodeDecodeError as exc:
        raise CLIError(f"cannot read {label} {str(path)!r} as CSV: it is not UTF-8 text ({exc.reason}); a parquet "
                       f"file must be named {' or '.join(PARQUET_SUFFIXES)}") from exc
    except (OSError, ValueError, ImportError) as exc:     # pyarrow's errors are ValueErrors / OSErrors
        raise CLIError(f"cannot read {label} {str(path)!r}{' as parquet' if parquet else ''}: {exc}") from exc
    if target is not None and target not in frame.columns:
        if len(frame.columns) == 1:
            other = next((s for s in (";", "\t", "|", ",") if s != sep and s in str(frame.columns[0])), None)
            if other is not None:
                raise CLIError(f"{label} {Path(path).name} reads as one column with --sep {sep!r}; its header "
                               f"contains {other!r}: pass --sep {shlex.quote(other)}")
        shown = ", ".join(map(str, frame.columns[:20])) + (" ..." if len(frame.columns) > 20 else "")
        raise CLIError(f"target column {target!r} is not in {label} {Path(path).name} (columns: {shown})")
    check_columns(frame, id_cols, f"{label} {Path(path).name}", "--id-cols")
    if target is None:
        return frame.drop(columns=list(id_cols)), None
    return frame.drop(columns=[target, *id_cols]), frame[target]


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


def check_out(out: Path, stems, pdf: bool = True, inputs=(), deployer: bool = False) -> None:
    """Check, before any computation, that every file the run will write can be written.

    Parameters
    ----------
    out : Path
        The output folder.
    stems : iterable of str
        The audits' file stems (see :func:`output_paths`).
    pdf : bool
        Whether the PDF is written.
    inputs : iterable of (str, path-like)
        The input files ((role, path) pairs, see :func:`input_files`): no output may be one of them.
    deployer : bool
        Whether the deployer extract is written.

    Raises
    ------
    CLIError
        When an output file is an input file (writing the report would destroy it: ``--model model.json
        --out .`` names the report ``model.json``), or cannot be written (tried for real by
        :func:`~xai_plugins.report.options.check_output_paths`, which leaves nothing behind).
    """
    from .report.options import check_output_paths

    paths = output_paths(Path(out), stems, pdf, deployer)
    for path in paths:
        for role, source in inputs:
            if path.exists() and os.path.samefile(path, source):
                raise CLIError(f"the output file {str(path)!r} is the {role} file {str(source)!r} "
                               f"({INPUT_FLAGS[role]}): writing the report would overwrite it; choose another "
                               "--out folder")
    try:
        check_output_paths(paths)
    except OutputPathError as exc:
        raise CLIError(str(exc)) from exc


def output_paths(out: Path, stems, pdf: bool = True, deployer: bool = False) -> list:
    """The files ``xai-audit`` writes under ``out``: per stem, the HTML, the JSON, (``pdf``) the PDF, (``deployer``)
    the deployer extract's HTML (and PDF) and the manifest (last)."""
    from .report.deployer import SUFFIX as DEPLOYER
    from .report.manifest import SUFFIX

    formats = ("html", "pdf") if pdf else ("html",)
    return [out / name for stem in stems
            for name in [*(f"{stem}.{ext}" for ext in (("html", "json", "pdf") if pdf else ("html", "json"))),
                         *(f"{stem}{DEPLOYER}.{ext}" for ext in (formats if deployer else ())),
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
    """A SparkSession with ``master`` (its console progress bar off, the audit shows its own) whose Python
    workers run this interpreter: ``PYSPARK_PYTHON`` is set to :data:`sys.executable` unless already set
    (Spark would otherwise start ``python3`` from the PATH, which may lack xai_plugins; Spark's scripts use
    it for ``PYSPARK_DRIVER_PYTHON`` too when that is unset, and this process is the driver already).
    :class:`CLIError` when pyspark is missing or Spark does not start."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise CLIError('--spark-master needs pyspark: pip install "xai_plugins[spark]" (and Java 17)') from exc
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        return (SparkSession.builder.master(master).appName("xai-audit")
                .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    except Exception as exc:  # noqa: BLE001 - py4j / JVM start-up errors have no common type
        raise CLIError(f"cannot start Spark with master {master!r}: {exc}") from exc


def read_cluster_table(pattern: str, target: str, sep: str = ",", spark=None, id_cols=()):
    """The test data of a glob of parquet or CSV files, read on the cluster, without its ``id_cols``: with
    ``spark`` (a SparkSession) a Spark DataFrame holding the target column and the target's name, else a
    lazy dask DataFrame of the features and the target's dask Series; and a description of the files for
    the appendix. :class:`CLIError` when nothing matches or the target column or an id column is missing.
    Parquet: a .parquet/.pq pattern or a folder; CSV otherwise."""
    import glob

    remote = "://" in pattern
    files = [] if remote else sorted(glob.glob(pattern)) if not os.path.isdir(pattern) else [pattern]
    if not remote and not files:
        raise CLIError(f"--data {pattern!r} matches no file")
    parquet = pattern.rstrip("/*").lower().endswith(PARQUET_SUFFIXES) or (not remote and os.path.isdir(pattern))
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
    check_columns(frame, id_cols, f"--data {pattern}", "--id-cols")
    frame = frame.drop(*id_cols) if spark is not None else frame.drop(columns=list(id_cols))
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
    X = _read_as_labels(forest, X, label)
    try:
        rows, names = forest.rows(X.drop(columns=extra), what=label, allow_nan=True, incomplete_ok=True)
    except XaiError as exc:
        raise CLIError(str(exc)) from exc
    labelled = forest.category_labels is not None and set(names) <= set(X.columns)
    aligned = X[names] if labelled else pd.DataFrame(rows, columns=names, index=X.index)
    return pd.concat([aligned, X[extra]], axis=1) if extra else aligned


def _read_as_labels(forest, X: pd.DataFrame, label: str) -> pd.DataFrame:
    """``X`` with each categorical feature's column read as labels of the model's training categories.

    A data file has no pandas ``category`` dtype: a column that the model (LightGBM, XGBoost) was fitted on as
    ``category`` comes back as text or numbers, and numbers there are labels, not codes. Each such column
    becomes a ``category`` column whose categories are the training ones, followed by the labels the model
    never saw (which the model then routes, or refuses, as its own predict does with unseen categories);
    such labels are warned about (:class:`~xai_plugins.errors.XaiWarning`), with their row counts."""
    names = list(forest.feature_names or ())
    for j, known in enumerate(forest.category_labels or ()):
        if known is None or hasattr(known, "codes") or j >= len(names) or names[j] not in X.columns:
            continue
        column = X[names[j]]
        values = column.astype(str).where(column.notna()) if all(isinstance(k, str) for k in known) else column
        present = pd.unique(values.dropna())
        unseen = [v for v in present if v not in set(known)]
        if unseen:
            counts = values.value_counts()
            shown = ", ".join(f"{v.item() if isinstance(v, np.generic) else v!r} ({counts[v]} rows)"
                              for v in unseen[:5])
            shown += " ..." if len(unseen) > 5 else ""
            warnings.warn(f"{label} column {names[j]!r} holds label(s) the model was not trained on: {shown}; "
                          "the model treats them as it treats unseen categories", XaiWarning, stacklevel=2)
        if not isinstance(column.dtype, pd.CategoricalDtype) and not forest.numeric_labels:
            X = X.assign(**{names[j]: pd.Categorical(values, categories=[*known, *unseen])})
    return X


#: the demo's three audits: the stems of their files
DEMO_STEMS = ("demo_diabetes_regression", "demo_breast_cancer_classification", "demo_diabetes_categorical_pipeline")
#: the demo's protected attribute (a column of scikit-learn's diabetes data, also a model feature there)
DEMO_PROTECTED = {DEMO_STEMS[0]: ("sex",), DEMO_STEMS[2]: ("sex",)}
#: the labels the categorical demo gives the diabetes data's two ``sex`` codes (1 and 2; the data set does not
#: document which is which, so the labels stay neutral)
DEMO_SEX_LABELS = {1.0: "sex 1", 2.0: "sex 2"}


def demo_models(random_state: int = 0) -> list:
    """(name, title, model, X_test, y_test, X_train, y_train) of the three demo audits: 100-tree random
    forests grown with bootstrap=False (so MCR applies) on scikit-learn's embedded data sets (the diabetes
    data in its original units, so that the protected ``sex`` has its codes 1 and 2 as groups), and a
    Pipeline (one-hot encoded ``sex`` as text, the other columns as they are, gradient boosting) on the
    diabetes data: a model with a categorical feature."""
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    def diabetes(return_X_y, as_frame):
        return load_diabetes(return_X_y=return_X_y, as_frame=as_frame, scaled=False)

    def diabetes_with_sex_as_text(return_X_y, as_frame):
        X, y = diabetes(return_X_y, as_frame)
        return X.assign(sex=X["sex"].map(DEMO_SEX_LABELS)), y

    pipeline = Pipeline([("encode", ColumnTransformer([("sex", OneHotEncoder(), ["sex"])], remainder="passthrough",
                                                      verbose_feature_names_out=False)),
                         ("boost", GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.05,
                                                             random_state=random_state))])
    out = []
    for name, title, loader, estimator in (
        (DEMO_STEMS[0], "Demo: diabetes progression (random forest regressor)", diabetes,
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
