"""Reproducibility appendix: seeds, hashes, settings, timings and package versions."""

from __future__ import annotations

from dataclasses import dataclass

from .. import describe
from ..audit_json import MODEL_HASH, TEST_HASH
from ..section import Table, new, register

__all__: list = []


@dataclass
class Appendix:
    """What other sections read of the reproducibility appendix: the model and data ``hashes``."""

    hashes: dict


@register("reproducibility", "Reproducibility appendix", reads=("explanations",), result=Appendix, position=150,
          stage=130)
def build(ctx, results, options):
    """Seed, data and model hashes, the settings (readable labels with the flag or argument that
    sets them), the row facts, and the package versions. Timings are added by the audit."""
    section = new("reproducibility")
    cl = ctx.cluster
    test_label = (TEST_HASH if cl is None
                  else f"test data: the in-memory sample of {len(ctx.X_test)} rows (sha256)")
    explained = results["explanations"].result
    section.data = {
        "versions": describe.versions(),
        "seed": options.random_state,
        "hashes": {MODEL_HASH: describe.sha256_of_model(ctx.forest),
                   test_label: describe.sha256_of_data(ctx.X_test, ctx.y_test),
                   "training data (sha256)": describe.sha256_of_data(ctx.X_train, ctx.y_train),
                   **(options.provenance or {})},
        "settings": options.describe(cli=options.command_line is not None),
        "rows": {"explained test rows": explained.n_explained,
                 "complete test rows (sampled from)": explained.n_complete, "row count": explained.row_count},
        "machine-dependent": options.machine_dependent,
    }
    if ctx.parity is not None:
        section.data["parity certificate"] = str(ctx.parity)
    section.result = Appendix(section.data["hashes"])
    if options.command_line is not None:
        section.data["command line"] = options.command_line
    if ctx.plan is not None:
        section.data["plan"] = ctx.plan.to_dict()
        section.tables.append(Table(
            f"Run-time plan, made before any section ran from the model and the data sizes (never a clock): per "
            f"section, how its PG² work runs, the rows it covers, the Monte Carlo samples per estimate and the "
            f"estimated seconds of one core (≈ {ctx.plan.seconds:.0f} s in all; cost target {ctx.plan.target:g} s "
            f"for the whole audit before rendering; the verdict needs {ctx.plan.rows_needed} explained rows). Compare "
            "with the measured timings below, wall-clock times: the exact PG² sums run on every core.",
            ctx.plan.table(), index=False))
    return section
