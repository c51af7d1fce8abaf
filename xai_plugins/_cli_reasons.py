"""``xai-audit reasons``: certified reason codes of every row of a data file, one CSV line per (row, reason)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ._cli_inputs import PARQUET_SUFFIXES, CLIError, align_features, load_model, read_table, warnings_as_lines
from .errors import XaiError
from .forest import import_model

__all__: list[str] = []      # internal module: the command line's reasons subcommand

#: exit statuses (as xai-audit's): success, a row not certified under --fail-uncertified, a user error
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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



