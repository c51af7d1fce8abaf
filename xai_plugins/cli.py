"""``xai-audit``: write an explanation audit (HTML, PDF, JSON) of a saved tree model.

    xai-audit --model model.json --data test.csv --target y --out reports/ [--train train.csv]
              [--sep ";"] [--id-cols id] [--protected race sex] [--model-card card.yaml] [--run-id R-42] [--strict]
              [--fail-on warn | fail | fitness:warn | explanations:fail | promotion:fail ...]
              [--challenger other_model.json]
              [--threshold faithfulness_pass=0.6 ...]
              [--sections explanations faithfulness ...] [--sigma 0.1 0.3 1.0] [--trust-pickle]
    xai-audit --model model.json --data "test/*.parquet" --target y --scheduler tcp://host:8786
    xai-audit --model model.json --data test.csv --target y --approval approval.yaml --sign key.pem --signer "J. Doe"
    xai-audit sign reports/ --key key.pem --signer "J. Doe" [--key-password-env VAR]
    xai-audit verify reports/ [--public-key key.pub.pem] [--model model.json --data test.csv --train train.csv]
    xai-audit keygen key.pem
    xai-audit diff old.json new.json [--out DIR] [--fail-on-change verdict criterion faithfulness reliance data ...]
    xai-audit history reports/ [--out DIR]

Every audit setting is a flag derived from :class:`~xai_plugins.report.options.AuditOptions` (same
names, same defaults as :func:`xai_plugins.report.audit`). Everything the command line names is
checked before any computation: the output folder is writable and no output file is one of the input
files (``--model model.json --out .`` would name the report ``model.json``: refused), the model file is
a model, the data files (CSV read with ``--sep``, or parquet: ``.parquet`` / ``.pq``) are readable, the
target column fits the model's task, and the ``--protected`` and ``--id-cols`` columns exist
(``--id-cols``: row identifiers, dropped from the features). After the files written, stdout shows the
two verdicts (model fitness, explanation reliability), one line each with the criterion that decided it
(``--quiet`` replaces the progress bars by one stderr line a minute). A section or method that fails is
printed to stderr as a one-line warning; with ``--strict`` the exit status is then 1. ``--strict`` checks
that the audit was computed in full, not what it found: the two verdicts are in the report and under the JSON's
``verdict`` key. ``--fail-on LEVEL`` reads them: the exit status is 1 when either verdict is at or
worse than LEVEL (``warn`` or ``fail``), one stderr line per verdict that trips it;
``--fail-on fitness:LEVEL`` or ``explanations:LEVEL`` gates on one verdict only (repeat the flag to
combine); an audit without a verdict trips every gate. ``--challenger FILE`` compares a second model with
``--model`` on the same rows (the report's champion/challenger section, :mod:`xai_plugins.report.sections.comparison`)
and adds a third verdict, promotion, which ``--fail-on promotion:LEVEL`` gates on (without a challenger that gate
trips). Beside the HTML, JSON and PDF, each run writes
``<stem>.manifest.json``: the SHA-256 of every input file (model, data, training data, model card;
hashed before anything is written) and output file, the ``--id-cols``, and the audit's content hashes
of the model and data (see :mod:`xai_plugins.report.manifest`). ``--threshold NAME=VALUE`` changes one
of the verdict's thresholds (the names, defaults, valid ranges and rationales are listed in the report's
verdict section and :data:`~xai_plugins.report.criteria.THRESHOLD_RANGES`).

``--approval approval.yaml`` fills the governance block's decision, conditions, date, approver and role
(:func:`~xai_plugins.report.sections.governance.load_approval`); ``--sign KEY --signer NAME`` signs each manifest at
the end of the run. The subcommands ``sign``, ``verify`` and ``keygen`` (first word) sign a folder's
manifests, check a folder against its manifests and signatures (exit 1 and one line per file that differs),
and make an Ed25519 key pair to try it out (see :mod:`xai_plugins.report.record`). ``diff`` prints what changed
between two audits' JSON, one line per change (``--out``: the report as HTML, PDF and JSON), and exits 1 when a
change trips a ``--fail-on-change`` gate (default ``verdict``: a verdict got worse), 2 for audits of different schema
versions; ``history`` draws the audits of a folder or glob over time (see :mod:`xai_plugins.report.diff` and
:mod:`xai_plugins.report.history`). A key, a password or an
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
Pipeline saved with skops; or — only with ``--trust-pickle``, because unpickling runs arbitrary code — a pickled /
joblib model. With no
arguments it writes demo audits of three models trained on scikit-learn's embedded diabetes
(regression, with ``sex`` audited as a protected attribute) and breast-cancer (classification)
data, the third a scikit-learn Pipeline that one-hot encodes the diabetes data's ``sex`` as a text
column (a model with a categorical feature), to ``reports/``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

from ._cli_inputs import (
    DEMO_PROTECTED,
    DEMO_STEMS,
    INPUT_FLAGS,
    CLIError,
    align_features,
    check_columns,
    check_out,
    check_target,
    connect,
    demo_models,
    load_model,
    output_paths,
    read_cluster_table,
    read_table,
    start_spark,
    warnings_as_lines,
)
from .errors import MissingExtraError, XaiError
from .forest import import_model
from .forest.files import native_message

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the subcommands: a first word of the command line that is not a flag
SUBCOMMANDS = ("sign", "verify", "keygen", "reasons", "diff", "history")
#: exit statuses: success, a failed section or method under --strict or a --fail-on gate tripped, a user error
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: ``--fail-on`` scopes: the Verdict attributes a gate reads ("" = both, i.e. the worst of the two)
GATE_SCOPES = {"": ("model_fitness", "explanation_reliability"), "fitness": ("model_fitness",),
               "explanations": ("explanation_reliability",), "promotion": ("promotion",)}
#: ``--fail-on`` values: LEVEL or SCOPE:LEVEL
FAIL_ON = tuple(f"{scope}:{level}" if scope else level for scope in GATE_SCOPES for level in ("warn", "fail"))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``xai-audit``: the file flags, then one flag per audit option (see
    :func:`~xai_plugins.report.options.cli_fields`), whose default is left to :class:`AuditOptions`."""
    from .report.options import AuditOptions, cli_fields, flag

    parser = argparse.ArgumentParser(
        prog="xai-audit", description="Audit the explanations of a tree-ensemble model (HTML + PDF report). "
        "Without arguments: demo audits of three models on scikit-learn's diabetes and breast-cancer data (the third "
        "a Pipeline with a categorical feature).",
        epilog="Filing an audit: 'xai-audit keygen KEY.pem' makes an Ed25519 key pair, 'xai-audit sign DIR --key KEY "
        "--signer NAME' signs the manifests in DIR, 'xai-audit verify DIR' re-hashes and checks them. Comparing "
        "audits: 'xai-audit diff OLD.json NEW.json' (a CI gate), 'xai-audit history DIR' (each with --help).")
    files = parser.add_argument_group("files")
    files.add_argument("--model", help="model file: XGBoost .json/.ubj, LightGBM model.txt, CatBoost .cbm/.json, "
                       "ONNX, PMML, skops; .pkl/.joblib only with --trust-pickle")
    files.add_argument("--data", help="CSV or parquet (.parquet/.pq) file of the test data (features + target "
                       "column, and any --protected and --id-cols columns); with --scheduler or --spark-master, a glob "
                       "of parquet (.parquet/.pq or a folder) or CSV files")
    files.add_argument("--challenger", metavar="FILE",
                       help="a model file to compare with --model on the same rows (the same formats): adds the "
                            "champion/challenger section and its promotion verdict (gate it with --fail-on "
                            "promotion:LEVEL)")
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
    run.add_argument("--quiet", action="store_true",
                     help="no progress bars: one status line a minute on stderr instead")
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
    """Run ``xai-audit sign | verify | keygen | reasons | diff | history`` (``argv[0]``); the exit status (0 ok, 1
    verification failed or, for reasons, a row not certified under ``--fail-uncertified``, for diff a
    ``--fail-on-change`` gate tripped, 2 user error)."""
    if argv[0] == "reasons":
        from ._cli_reasons import reasons_command

        return reasons_command(argv[1:])
    if argv[0] in ("diff", "history"):
        from ._cli_lifecycle import diff_command, history_command

        return (diff_command if argv[0] == "diff" else history_command)(argv[1:])
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
    named = [("model", args.model), ("challenger", args.challenger), *(("test data", d) for d in data),
             ("training data", args.train),
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
        return AuditOptions(progress=not args.quiet, heartbeat=60.0 if args.quiet else None,
                            command_line=shlex.join(["xai-audit", *argv]), **given)
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
    challenger = None
    if args.challenger:
        challenger = load_model(args.challenger, args.trust_pickle)
        try:
            check_id_columns(args.id_cols, args.target, import_model(challenger))
        except (XaiError, ValueError) as exc:
            raise CLIError(f"cannot compare with {Path(args.challenger).name}: {native_message(exc)}") from exc
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
    if args.challenger:
        provenance["challenger file"] = f"{Path(args.challenger).name} (sha256 {digest[args.challenger]})"
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
            "challenger": challenger, "options": audit_options(args, argv, **fixed)}


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
    """Print the audit's two verdicts (and the promotion verdict of an audit with a challenger) on stdout: its
    title, then one line per verdict with its status and the criterion that decided it (the verdict objects'
    ``str``), or that no verdict was computed."""
    if result.verdict is None:
        print(f"{result.title}: no verdict was computed (see the report's verdict section)")
        return
    print(f"{result.title}:")
    for judgement in (*result.verdict.judgements, *([result.promotion] if result.promotion is not None else [])):
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
        if scope == "promotion" and result.promotion is None:
            print(f"xai-audit: verdict gate: {result.title}: no promotion verdict was computed (it needs "
                  f"--challenger and the comparison section), so --fail-on {gate} cannot pass", file=sys.stderr)
            status = EXIT_FAILED
            continue
        for judgement in (result.promotion if name == "promotion" else getattr(result.verdict, name)
                          for name in GATE_SCOPES[scope]):
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
