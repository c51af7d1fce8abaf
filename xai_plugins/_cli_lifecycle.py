"""``xai-audit diff`` and ``xai-audit history``: what changed between two audits, and the audits of one model family
over time, read from their JSON (:mod:`xai_plugins.report.diff`, :mod:`xai_plugins.report.history`)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from .errors import XaiError

__all__: list[str] = []      # internal module: the command line's diff and history subcommands

#: exit statuses (as xai-audit's): no gate tripped, a gate tripped, a user error (unreadable or incomparable audits)
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _out_flags(parser, stem: str) -> None:
    parser.add_argument("--out", metavar="DIR", help=f"also write {stem}.html, {stem}.json and {stem}.pdf (and the "
                        "tables) to DIR")
    parser.add_argument("--no-pdf", action="store_true", help="write HTML and JSON only")


def _write(document, out, stem: str, pdf: bool) -> list:
    """Write ``document`` as ``stem``.html / .json (/ .pdf) under ``out``, every path checked first; the paths
    written."""
    from .report.options import check_output_paths

    paths = [Path(out) / f"{stem}.{suffix}" for suffix in ("html", "json", *(("pdf",) if pdf else ()))]
    check_output_paths(paths)
    html = document.to_html(paths[0])
    document.to_json(paths[1])
    if pdf:
        document.to_pdf(paths[2], html=html)
    return paths


def diff_command(argv) -> int:
    """``xai-audit diff OLD.json NEW.json``: one stdout line per change, the report with ``--out``, and the exit
    status of the ``--fail-on-change`` gates (0 none tripped, 1 one tripped, 2 audits that cannot be compared)."""
    from .report.diff import DEFAULT_GATES, GATES, TOLERANCES, diff_audits

    parser = argparse.ArgumentParser(
        prog="xai-audit diff", description="What changed between two audits of one schema version: inputs, "
        "thresholds, verdicts, criteria with both intervals, per-feature reliance and the test data's summary.",
        epilog="Gates: " + "; ".join(f"{k}: {v}" for k, v in GATES.items()) + ". Exit status: 0 no gate tripped, "
        "1 a gate tripped (one stderr line per change that trips it), 2 audits that cannot be compared.")
    parser.add_argument("old", metavar="OLD.json", help="the older audit's JSON")
    parser.add_argument("new", metavar="NEW.json", help="the newer audit's JSON")
    parser.add_argument("--fail-on-change", nargs="+", choices=list(GATES), default=list(DEFAULT_GATES),
                        metavar="GATE", help=f"exit 1 when a change trips one of these gates ({', '.join(GATES)}; "
                        f"default: {' '.join(DEFAULT_GATES)}, i.e. a verdict got worse)")
    for name, value in TOLERANCES.items():
        parser.add_argument(f"--{name}-tolerance", type=float, default=value, metavar="X",
                            help=f"the {name} tolerance (default {value:g}; see xai_plugins.report.diff_audits)")
    _out_flags(parser, "diff")
    args = parser.parse_args(argv)
    try:
        found = diff_audits(args.old, args.new, value_tolerance=args.value_tolerance,
                            reliance_tolerance=args.reliance_tolerance, data_tolerance=args.data_tolerance)
        paths = _write(found, args.out, "diff", not args.no_pdf) if args.out else []
    except XaiError as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in found.lines() or ["no change beyond the tolerances"]:
        print(line)
    for path in paths:
        print(f"wrote {path}")
    tripped = found.tripped(args.fail_on_change)
    for change in tripped:
        print(f"xai-audit: diff gate: {change} (--fail-on-change {' '.join(args.fail_on_change)})", file=sys.stderr)
    return EXIT_FAILED if tripped else EXIT_OK


def history_command(argv) -> int:
    """``xai-audit history DIR_OR_GLOB`` (or ``runs:/RUN_ID ...``): a summary line per audit and per crossing on
    stdout; with ``--out`` the one-page report, history.csv and history.parquet (with pyarrow). Exit 0, or 2 for
    audits that cannot be read or compared."""
    from .report.history import audit_history

    parser = argparse.ArgumentParser(
        prog="xai-audit history", description="Verdicts, criteria with their intervals and per-feature reliance over "
        "the audits of one model family, ordered by when they were computed; the first audit at which a verdict or "
        "criterion got worse is marked.")
    parser.add_argument("where", metavar="DIR_OR_GLOB", nargs="+",
                        help="a folder of audit JSONs, or a glob of them (quoted), or MLflow runs (runs:/RUN_ID ...: "
                             "the audits their xai_audit evaluation logged)")
    _out_flags(parser, "history")
    args = parser.parse_args(argv)
    try:
        found = audit_history(args.where[0] if len(args.where) == 1 else args.where)
        paths = _write(found, args.out, "history", not args.no_pdf) if args.out else []
        if args.out:
            paths.append(Path(args.out) / "history.csv")
            found.to_csv(paths[-1])
            if importlib.util.find_spec("pyarrow") is not None:
                paths.append(Path(args.out) / "history.parquet")
                found.to_parquet(paths[-1])
    except XaiError as exc:
        print(f"xai-audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for a in found.audits:
        print(f"audit {a['audit']}: {a['label']} ({a['created']}): model fitness {a['model fitness']}, "
              f"explanation reliability {a['explanation reliability']}")
    for _, row in found.crossings.iterrows():
        print(f"crossed at audit {row['audit']} ({row['source']}): {row['measure']} {row['name']} became "
              f"{row['status']}")
    for path in paths:
        print(f"wrote {path}")
    return EXIT_OK
