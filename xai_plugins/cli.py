"""``xai-audit``: write an explanation audit (HTML, PDF, JSON) of a saved tree model.

    xai-audit --model model.json --data test.csv --target y --out reports/ [--train train.csv]
              [--sep ";"] [--id-cols id] [--protected race sex] [--model-card card.yaml] [--run-id R-42] [--strict]
              [--fail-on warn | fail | fitness:warn | explanations:fail ...]
              [--threshold faithfulness_pass=0.6 ...]
              [--sections explanations faithfulness ...] [--sigma 0.1 0.3 1.0] [--trust-pickle]
    xai-audit --model model.json --data "test/*.parquet" --target y --scheduler tcp://host:8786
    xai-audit --model model.json --data test.csv --target y --approval approval.yaml --sign key.pem --signer "J. Doe"
    xai-audit sign reports/ --key key.pem --signer "J. Doe" [--key-password-env VAR]
    xai-audit verify reports/ [--public-key key.pub.pem] [--model model.json --data test.csv --train train.csv]
    xai-audit keygen key.pem

Every audit setting is a flag derived from :class:`~xai_plugins.report.options.AuditOptions` (same
names, same defaults as :func:`xai_plugins.report.audit`). Everything the command line names is
checked before any computation: the output folder is writable and no output file is one of the input
files (``--model model.json --out .`` would name the report ``model.json``: refused), the model file is
a model, the data files (CSV read with ``--sep``, or parquet: ``.parquet`` / ``.pq``) are readable, the
target column fits the model's task, and the ``--protected`` and ``--id-cols`` columns exist
(``--id-cols``: row identifiers, dropped from the features). After the files written, stdout shows the
two verdicts (model fitness, explanation reliability), one line each with the criterion that decided it
(``--quiet`` removes only the progress bars). A section or method that fails is printed to stderr as a
one-line warning; with ``--strict`` the exit status is then 1. ``--strict`` checks that the audit was
computed in full, not what it found: the two verdicts are in the report and under the JSON's
``verdict`` key. ``--fail-on LEVEL`` reads them: the exit status is 1 when either verdict is at or
worse than LEVEL (``warn`` or ``fail``), one stderr line per verdict that trips it;
``--fail-on fitness:LEVEL`` or ``explanations:LEVEL`` gates on one verdict only (repeat the flag to
combine); an audit without a verdict trips every gate. Beside the HTML, JSON and PDF, each run writes
``<stem>.manifest.json``: the SHA-256 of every input file (model, data, training data, model card;
hashed before anything is written) and output file, the ``--id-cols``, and the audit's content hashes
of the model and data (see :mod:`xai_plugins.report.manifest`). ``--threshold NAME=VALUE`` changes one
of the verdict's thresholds (the names, defaults, valid ranges and rationales are listed in the report's
verdict section and :data:`~xai_plugins.report.criteria.THRESHOLD_RANGES`).

``--approval approval.yaml`` fills the governance block's decision, conditions, date, approver and role
(:func:`~xai_plugins.report.sections.governance.load_approval`); ``--sign KEY --signer NAME`` signs each manifest at
the end of the run. The subcommands ``sign``, ``verify`` and ``keygen`` (first word) sign a folder's
manifests, check a folder against its manifests and signatures (exit 1 and one line per file that differs),
and make an Ed25519 key pair to try it out (see :mod:`xai_plugins.report.record`). A key, a password or an
approval file that cannot be used is refused (exit 2) before any audit work.

With ``--scheduler`` the audit runs on that Dask cluster (see :func:`xai_plugins.report.audit`'s
``client``): ``--data`` may be a glob of parquet or CSV files, read with ``dask.dataframe`` on the
workers, and every complete test row gets the per-row methods and the PGI² scores (``--max-rows``
and ``--time-budget`` are ignored for the row count). With ``--spark-master`` (e.g. ``local[2]``,
``spark://host:7077``, ``yarn``) it runs on Spark the same way: a SparkSession is started with that
master, ``--data`` (a glob of parquet or CSV files, or a folder) is read by Spark, and the session is
stopped at the end (needs xai_plugins[spark] and Java 17); its Python workers run this interpreter
(``PYSPARK_PYTHON``, unless set).

The model is a file in its library's own format, told by its content: XGBoost JSON/UBJSON, a LightGBM
``model.txt``, a CatBoost ``.cbm`` or JSON model, an ONNX-ML tree ensemble, a PMML document, a scikit-learn model or
Pipeline saved with skops; or —
only with ``--trust-pickle``, because unpickling runs arbitrary code — a pickled / joblib model. With no
arguments it writes demo audits of three models trained on scikit-learn's embedded diabetes
(regression, with ``sex`` audited as a protected attribute) and breast-cancer (classification)
data, the third a scikit-learn Pipeline that one-hot encodes the diabetes data's ``sex`` as a text
column (a model with a categorical feature), to ``reports/``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import MissingExtraError, OutputPathError, XaiError, XaiWarning
from .forest import import_model
from .forest.files import load_model as read_model
from .forest.files import native_message

__all__: list[str] = []      # internal module: the public names are in the API reference

#: data files read as parquet (in memory with pandas, or on a cluster); any other file is read as CSV
PARQUET_SUFFIXES = (".parquet", ".pq")
#: the flag that names an input file of each role of :func:`input_files`
INPUT_FLAGS = {"model": "--model", "test data": "--data", "training data": "--train", "model card": "--model-card",
               "approval": "--approval"}
#: the subcommands: a first word of the command line that is not a flag
SUBCOMMANDS = ("sign", "verify", "keygen", "reasons")
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
        "a Pipeline with a categorical feature).",
        epilog="Filing an audit: 'xai-audit keygen KEY.pem' makes an Ed25519 key pair, 'xai-audit sign DIR --key KEY "
        "--signer NAME' signs the manifests in DIR, 'xai-audit verify DIR' re-hashes and checks them (each with "
        "--help).")
    files = parser.add_argument_group("files")
    files.add_argument("--model", help="model file: XGBoost .json/.ubj, LightGBM model.txt, CatBoost .cbm/.json, "
                       "ONNX, PMML, skops; .pkl/.joblib only with --trust-pickle")
    files.add_argument("--data", help="CSV or parquet (.parquet/.pq) file of the test data (features + target "
                       "column, and any --protected and --id-cols columns); with --scheduler or --spark-master, a glob "
                       "of parquet (.parquet/.pq or a folder) or CSV files")
    files.add_argument("--target", help="name of the target column in --data (and --train)")
    files.add_argument("--train", help="CSV or parquet file of the training data (same columns): noise scale, AcME, "
                       "MCR")
    files.add_argument("--sep", default=",", help="column separator of the CSV files (default: ',')")
    files.add_argument("--id-cols", nargs="+", default=[], metavar="COL",
                       help="columns of --data (and --train) that identify rows: dropped from the features, named "
                            "in the report and the manifest (default: none)")
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
    record = parser.add_argument_group("approval and signature")
    record.add_argument("--approval", metavar="YAML",
                        help="the reviewer's approval (YAML/JSON: decision, conditions, date, approver, role), shown "
                             "in the governance block")
    _key_flags(record, required=False)
    run = parser.add_argument_group("running")
    run.add_argument("--no-pdf", action="store_true", help="write HTML and JSON only")
    run.add_argument("--deployer-extract", action="store_true",
                     help="also write the two-page deployer extract (EU AI Act Art. 13): <stem>.deployer.html and "
                          "<stem>.deployer.pdf (without --no-pdf), listed in the manifest")
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


def _key_flags(group, required: bool) -> None:
    group.add_argument("--sign" if not required else "--key", metavar="KEY", required=required,
                       help="Ed25519 private key (PEM) that signs each manifest (<stem>.manifest.sig.json)")
    group.add_argument("--signer", metavar="NAME", required=required, help="who signs, recorded in the signature")
    group.add_argument("--key-password-env", metavar="VAR",
                       help="environment variable holding the key's password (never on the command line)")


def _password(var: str | None) -> bytes | None:
    if var is None:
        return None
    if var not in os.environ:
        raise CLIError(f"--key-password-env: the environment variable {var!r} is not set")
    return os.environ[var].encode("utf-8")


def signing_key(path, signer, password_env):
    """The private key of ``--sign`` / ``--key`` (None without one), loaded before any work; :class:`CLIError`
    when it is missing, unreadable, encrypted without a password or not an Ed25519 key, or ``--signer`` is
    missing or empty."""
    from .report.record import load_private_key

    if path is None:
        if signer is not None or password_env is not None:
            raise CLIError("--signer and --key-password-env go with --sign KEY")
        return None
    if not (signer or "").strip():
        raise CLIError("--sign needs --signer NAME: who signs")
    try:
        return load_private_key(path, _password(password_env))
    except XaiError as exc:
        raise CLIError(str(exc)) from exc


def subcommand(argv) -> int:
    """Run ``xai-audit sign | verify | keygen | reasons`` (``argv[0]``); the exit status (0 ok, 1 verification
    failed or, for reasons, a row not certified under ``--fail-uncertified``, 2 user error)."""
    if argv[0] == "reasons":
        return reasons_command(argv[1:])
    parser = argparse.ArgumentParser(prog=f"xai-audit {argv[0]}")
    if argv[0] == "keygen":
        parser.description = "Write a new Ed25519 key pair: OUT (private, PEM) and OUT-stem.pub.pem (public)."
        parser.add_argument("out", metavar="OUT.pem")
        parser.add_argument("--key-password-env", metavar="VAR", help="encrypt the key with this variable's value")
    else:
        parser.add_argument("directory", metavar="DIR", help="folder holding the audits' *.manifest.json files")
    if argv[0] == "sign":
        parser.description = "Sign every audit manifest in DIR (writes <stem>.manifest.sig.json)."
        _key_flags(parser, required=True)
    elif argv[0] == "verify":
        parser.description = ("Re-hash every file the manifests in DIR list, check their signatures, the PDF's "
                              "embedded JSON and (given) the input files: exit 1 and one line per difference.")
        parser.add_argument("--public-key", metavar="PEM", help="the signer's public key (else the embedded one, "
                            "which is self-asserted)")
        for role, flag in INPUT_FLAGS.items():
            parser.add_argument(flag, dest=role.replace(" ", "_"), metavar="PATH",
                                help=f"check the {role} file against the manifests")
    args = parser.parse_args(argv[1:])
    try:
        from .report import record

        if argv[0] == "keygen":
            for path in record.generate_key(args.out, _password(args.key_password_env)):
                print(f"wrote {path}")
            return EXIT_OK
        if argv[0] == "sign":
            key = signing_key(args.key, args.signer, args.key_password_env)
            for path in record.sign_directory(args.directory, key, args.signer):
                print(f"wrote {path}")
            return EXIT_OK
        public = record.load_public_key(args.public_key) if args.public_key else None
        inputs = [(role, getattr(args, role.replace(" ", "_"))) for role in INPUT_FLAGS
                  if getattr(args, role.replace(" ", "_")) is not None]
        found = record.verify_directory(args.directory, inputs, public)
    except (CLIError, XaiError) as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in found.failures:
        print(f"xai-audit: verify: {line}", file=sys.stderr)
    for line in found.notes:
        print(f"note: {line}")
    print(found.summary())
    return EXIT_OK if found.ok else EXIT_FAILED


def reasons_command(argv) -> int:
    """``xai-audit reasons``: certified reason codes of every row of a data file (:func:`xai_plugins.reason_codes`)
    written as one CSV line per (row, reason) with the row's certificate; a summary on stdout."""
    parser = argparse.ArgumentParser(
        prog="xai-audit reasons", description="The top-k reasons of each row's decision, each with its exact PG² "
        "contribution, and a certificate per row: the PG² of its reasons over that of the best set of as many "
        "features found by greedy PG² (protected attributes are never reasons).")
    parser.add_argument("--model", required=True, help="model file (as for the audit)")
    parser.add_argument("--data", required=True, help="CSV or parquet file of the rows to explain")
    parser.add_argument("--out", required=True, help="the CSV to write")
    parser.add_argument("--target", help="a target column in --data to leave out")
    parser.add_argument("--id-cols", nargs="+", default=[], metavar="COL", help="row-identifier columns, copied "
                        "into the output")
    parser.add_argument("--sep", default=",", help="CSV column separator")
    parser.add_argument("--k", type=int, default=4, help="reasons per row (default 4)")
    parser.add_argument("--protected", nargs="+", default=[], metavar="COL", help="features never given as reasons")
    parser.add_argument("--proxy", nargs="+", default=[], metavar="COL=ATTR", help="features known to be proxies of "
                        "a protected attribute, flagged when they are reasons")
    parser.add_argument("--background", help="CSV or parquet rows for interventional TreeSHAP (else path-dependent)")
    parser.add_argument("--sigma", type=float, default=0.3, help="noise scale of PG² (default 0.3)")
    parser.add_argument("--output", help="the output explained, for a model with several (a class label)")
    parser.add_argument("--certify-at", type=float, default=0.8, help="the certificate a row needs (default 0.8)")
    parser.add_argument("--fail-uncertified", action="store_true", help="exit 1 when a row is not certified")
    parser.add_argument("--trust-pickle", action="store_true", help="allow a pickled / joblib model")
    args = parser.parse_args(argv)
    try:
        with warnings_as_lines():
            from .reasons import reason_codes

            proxies = {}
            for item in args.proxy:
                column, sep, attribute = item.partition("=")
                if not sep or not column or not attribute:
                    raise CLIError(f"--proxy takes COL=ATTR (a feature and the protected attribute it stands for); "
                                   f"got {item!r}")
                proxies[column] = attribute
            inputs = [Path(p) for p in (args.model, args.data, args.background) if p]
            if any(Path(args.out).resolve() == p.resolve() for p in inputs if p.exists()):
                raise CLIError(f"--out {args.out} is one of the input files; name another file")
            model = load_model(args.model, args.trust_pickle)
            forest = import_model(model)
            frame, _ = read_table(args.data, args.target, "--data", args.sep, args.id_cols)
            ids = pd.read_csv(args.data, sep=args.sep, usecols=args.id_cols) if args.id_cols and \
                Path(args.data).suffix.lower() not in PARQUET_SUFFIXES else \
                (pd.read_parquet(args.data, columns=args.id_cols) if args.id_cols else None)
            X = align_features(forest, frame, "--data")
            background = None
            if args.background:
                bg, _ = read_table(args.background, None, "--background", args.sep)
                bg = bg.drop(columns=[c for c in (args.target, *args.id_cols) if c and c in bg.columns])
                background = align_features(forest, bg, "--background")
            codes = reason_codes(model, X, args.k, background=background, sigma=args.sigma, output=args.output,
                                 protected=args.protected, proxies=proxies, certify_at=args.certify_at)
    except (CLIError, XaiError) as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    table = codes.reasons.join(codes.rows[["certificate", "certified"]], on="row")
    if ids is not None:
        table = pd.concat([ids.iloc[table["row"].to_numpy()].reset_index(drop=True), table], axis=1)
    table.to_csv(args.out, index=False)
    summary = codes.summary()
    print(f"wrote {args.out}: {len(codes.rows)} rows, {len(table)} reasons")
    for _, line in summary.iterrows():
        print(f"certified at {line['threshold']:g}: {int(line['certified rows'])} of {len(codes.rows)} rows "
              f"({100 * line['share']:.1f} %)")
    return EXIT_FAILED if args.fail_uncertified and not codes.rows["certified"].all() else EXIT_OK


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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "audit"


def write_audit(result, out: Path, stem: str, pdf: bool = True, inputs=(), id_columns=(),
                deployer: bool = False) -> list:
    """Write ``stem``.html/.json (and .pdf) under ``out``, with ``deployer`` the deployer extract
    ``stem``.deployer.html (and .pdf), then their manifest with the ``inputs`` (entries of
    :func:`~xai_plugins.report.manifest.hash_inputs`, hashed before the run), the SHA-256 of each output and the
    ``id_columns``; returns the paths written."""
    from .report.manifest import content_hashes, write_manifest

    *reports, manifest = output_paths(out, [stem], pdf, deployer)
    try:
        html = result.to_html(reports[0])
        result.to_json(reports[1])
        if pdf:
            result.to_pdf(reports[2], html=html)          # the same HTML, not rendered again
        if deployer:
            extract = result.to_deployer_html(reports[3 if pdf else 2], report=reports[2 if pdf else 0].name)
            if pdf:
                result.to_deployer_pdf(reports[4], html=extract)
        write_manifest(manifest, inputs, reports, content_hashes(result), id_columns)
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
             ("model card", getattr(args, "model_card", None)), ("approval", args.approval)]
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
    if getattr(args, "approval", None):
        given["approval"] = args.approval
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


def prepare_files(args, argv, inputs, spark=None) -> dict:
    """Load and check everything the command line names, before any computation: the model, the data
    (with ``--sep``; read by ``spark``, a SparkSession, when given), the target column against the
    model's task, the ``--protected`` and ``--id-cols`` columns, the model card and the positive class.
    ``inputs``: the input files' manifest entries (:func:`~xai_plugins.report.manifest.hash_inputs`), whose
    digests the report's provenance cites. Returns the audit's arguments."""

    digest = {entry["path"]: entry["sha256"] for entry in inputs}
    model = load_model(args.model, args.trust_pickle)
    try:
        forest = import_model(model)
    except (XaiError, ValueError) as exc:
        raise CLIError(f"cannot audit {Path(args.model).name}: {native_message(exc)}") from exc
    check_id_columns(args.id_cols, args.target, forest)
    card = getattr(args, "model_card", None)
    if card is not None and not Path(card).is_file():
        raise CLIError(f"--model-card file {card!r} does not exist")
    if card is not None:
        from .report.sections.governance import read_model_card

        try:
            read_model_card(card)
        except XaiError as exc:
            raise CLIError(f"--model-card: {exc}") from exc
    protected = tuple(getattr(args, "protected", ()))
    provenance = {"model file": f"{Path(args.model).name} (sha256 {digest[args.model]})"}
    if args.scheduler or spark is not None:
        X, y, provenance["test files"] = read_cluster_table(args.data, args.target, args.sep, spark, args.id_cols)
        check_columns(X, protected, "--data", "--protected")
    else:
        X, y = read_table(args.data, args.target, "--data", args.sep, args.id_cols)
        check_columns(X, protected, f"--data {Path(args.data).name}", "--protected")
        check_target(model, forest, y, f"--data {Path(args.data).name}", "y_test")
        X = align_features(forest, X, "--data", keep=protected)
        provenance["test file"] = f"{Path(args.data).name} (sha256 {digest[args.data]})"
    X_train = y_train = None
    if args.train:
        X_train, y_train = read_table(args.train, args.target, "--train", args.sep, args.id_cols)
        check_target(model, forest, y_train, f"--train {Path(args.train).name}", "y_train")
        X_train = align_features(forest, X_train, "--train", keep=[c for c in protected if c in X_train.columns])
        provenance["training file"] = f"{Path(args.train).name} (sha256 {digest[args.train]})"
    if args.id_cols:
        provenance["id columns (not features)"] = ", ".join(args.id_cols)
    fixed = {"provenance": provenance, "positive_class": _positive_class(model, getattr(args, "positive_class", None))}
    if not hasattr(args, "title"):
        fixed["title"] = f"Explanation audit of {Path(args.model).name}"
    return {"model": model, "X_test": X, "y_test": y, "X_train": X_train, "y_train": y_train,
            "options": audit_options(args, argv, **fixed)}


def check_id_columns(id_cols, target: str, forest) -> None:
    """:class:`CLIError` when an ``--id-cols`` column is the target or a feature of the model (an id column
    is dropped from the features)."""
    features = [c for c in id_cols if c in (forest.feature_names or ())]
    if target in id_cols or features:
        raise CLIError(f"--id-cols {' '.join(map(shlex.quote, id_cols))}: "
                       + (f"{target!r} is the target column" if target in id_cols
                          else f"{features} are features of the model")
                       + "; --id-cols names the columns that identify rows, which the model does not read")


def run_files(args, argv) -> list:
    """Audit the model and data files named on the command line; returns the Audit and its paths. Checks
    the output paths first (none may be an input file), then hashes the input files for the manifest,
    before anything is computed or written."""
    from .report import audit
    from .report.manifest import hash_inputs

    stem = _slug(Path(args.model).stem)
    files = input_files(args)
    check_out(Path(args.out), [stem], pdf=not args.no_pdf, inputs=files, deployer=args.deployer_extract)
    inputs = hash_inputs(files)
    client = None
    try:
        client = start_spark(args.spark_master) if args.spark_master else None
        prepared = prepare_files(args, argv, inputs, client)
        client = connect(args.scheduler) if args.scheduler else client
        result = audit(**prepared, client=client, n_jobs=args.n_jobs)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    finally:
        if client is not None:
            (client.stop if args.spark_master else client.close)()
    return [(result, write_audit(result, Path(args.out), stem, pdf=not args.no_pdf, inputs=inputs,
                                 id_columns=args.id_cols, deployer=args.deployer_extract))]


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


def run_demo(args, argv) -> list:
    """Write the demo audits to ``args.out``; returns each Audit with its paths."""
    from .report import audit

    check_out(Path(args.out), DEMO_STEMS, pdf=not args.no_pdf, deployer=args.deployer_extract)
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
            results.append((result, write_audit(result, Path(args.out), name, pdf=not args.no_pdf,
                                                deployer=args.deployer_extract)))
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


def print_verdict(result) -> None:
    """Print the audit's two verdicts on stdout: its title, then one line per verdict with its status and
    the criterion that decided it (the verdict objects' ``str``), or that no verdict was computed."""
    if result.verdict is None:
        print(f"{result.title}: no verdict was computed (see the report's verdict section)")
        return
    print(f"{result.title}:")
    for judgement in result.verdict.judgements:
        print(f"  {judgement}")


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


def check_approval(path) -> None:
    """:class:`CLIError` for an ``--approval`` file that is missing, unreadable or holds an unknown key or a
    bad value (see :func:`~xai_plugins.report.sections.governance.load_approval`), before any audit work."""
    if path is None:
        return
    from .report.sections.governance import load_approval

    try:
        load_approval(path)
    except XaiError as exc:
        raise CLIError(f"--approval: {exc}") from exc


def sign(manifest, key, signer: str):
    """Sign the manifest an audit run wrote (:func:`~xai_plugins.report.record.sign_manifest`); its path."""
    from .report.record import sign_manifest

    try:
        return sign_manifest(manifest, key, signer)
    except (XaiError, OSError) as exc:
        raise CLIError(f"cannot sign {manifest}: {exc}") from exc


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
    verdict that trips a ``--fail-on`` gate, 2 user error or a missing extra, e.g. ``report`` for the
    command itself, said in one stderr line). A first word ``sign``, ``verify`` or ``keygen`` runs that
    subcommand (:func:`subcommand`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return subcommand(argv)
    try:
        parser = build_parser()     # imports the report: needs the 'report' extra, even for --help
    except MissingExtraError as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    given = {"--model": args.model, "--data": args.data, "--target": args.target}
    try:
        with warnings_as_lines():
            if args.scheduler and args.spark_master:
                raise CLIError("--scheduler (Dask) and --spark-master (Spark) exclude each other: give one")
            key = signing_key(args.sign, args.signer, args.key_password_env)
            check_approval(args.approval)
            if not any(given.values()):
                for flag, value in (("--train", args.train), ("--id-cols", args.id_cols)):
                    if value:
                        raise CLIError(f"{flag} needs --model, --data and --target")
                results = run_demo(args, argv)
            elif not all(given.values()):
                raise CLIError(f"{', '.join(k for k, v in given.items() if not v)} missing: --model, --data and "
                               "--target go together (or give none of them for the demo)")
            else:
                results = run_files(args, argv)
            if key is not None:
                results = [(result, [*paths, sign(paths[-1], key, args.signer)]) for result, paths in results]
    except (CLIError, MissingExtraError) as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    status = EXIT_OK
    for result, paths in results:
        for path in paths:
            print(f"wrote {path}")
        print_verdict(result)
        status = max(status, report_problems(result, getattr(args, "strict", False)),
                     verdict_gate(result, args.fail_on))
    return status


if __name__ == "__main__":
    sys.exit(main())
