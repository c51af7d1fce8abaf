"""Limitations section: what the numbers of this audit do not say, generated from what ran."""

from __future__ import annotations

from .. import explainers
from ..explainers import name_list
from ..options import flag
from ..section import new, register

__all__: list = []


@register("limitations", "Limitations and scope", reads=("explanations", "faithfulness", "mcr", "agreement"),
          position=130, stage=100)
def build(ctx, results, options):
    """One item per limitation that applies to the methods and data of this audit."""
    section = new("limitations")
    methods = results["explanations"].result.methods
    ran = {key for key, m in methods.items() if m.status == "ok"}
    cli = options.command_line is not None
    name = (lambda option: flag(option)) if cli else (lambda option: f"{option}=")
    on_output = [m.label for key, m in methods.items() if key in ran and not explainers.get(key).explains]
    items = [_output_space(ctx, on_output)]
    missing = _missing_rows(ctx)
    if missing:
        items.append(missing)
    if any(explainers.get(k).reference for k in ran) or results["faithfulness"].status == "ok":
        items.append("PG² perturbs features with independent Gaussian noise of σ training standard deviations; "
                     "correlated features are perturbed independently, which can create unrealistic inputs. PGI² "
                     "measures faithfulness to the model, not to the data-generating process.")
        if ctx.categorical.any():
            how = (f"ρ = {ctx.rho:g} (set with {name('rho')})" if ctx.rho is not None else
                   f"ρ = 2Φ(−1/(2σ)) by default (set it with {name('rho')}), a convention tying the categorical "
                   "perturbation to the numeric σ, not a property of the data")
            items.append(f"The categorical feature(s) {name_list(ctx.categorical_names)} are perturbed by keeping the "
                         f"category with probability 1 − ρ and otherwise drawing one from the "
                         f"{'training' if ctx.X_train is not None else 'test'} data's category frequencies, "
                         f"independently of every other feature; {how}. Categories are unordered: their codes "
                         "carry no distance, so their drift is judged over the categories and their data summary "
                         "counts rows per category.")
        binary = [n for n, b in zip(ctx.feature_names, ctx.binary_features) if b]
        if binary:
            items.append(_binary(ctx, binary, options, name, cli))
    for key in (k for k in methods if k in ran):
        text = explainers.get(key).limitation(ctx, methods[key], options, name)
        items += [text] if text else []
    items.append(_rows(ctx, results, options, name))
    if results["mcr"].status == "ok":
        items.append("Model class reliance ranges cover the Rashomon set explored by the RF-MCR procedure "
                     "(bootstrap-free random forests); they are estimates from permutations, not guarantees.")
    if results["agreement"].status == "ok":
        items.append("Kendall τ-b counts ties; top-k overlap ignores the order inside the top k.")
    if options.time_budget is not None:
        items.append(f"A time budget of {options.time_budget:g} s was set: the number of explained rows and the "
                     "Monte Carlo sample counts at equal time depend on this machine's speed and load, so another "
                     "run may give other numbers. Without a time budget every number depends only on the data "
                     "and the options.")
    if options.max_minutes is not None and ctx.plan is not None:
        items.append(f"A wall-clock cap of {options.max_minutes:g} min was set: this machine ran one explained row's "
                     f"PG² work {ctx.plan.speed:.2g}× as long as the plan's estimate, so the plan kept "
                     f"{ctx.plan.rows} explained rows"
                     + (f" and estimated prefix sets of {ctx.plan.sampled_from} features or more by Monte Carlo"
                        if ctx.plan.sampled_from is not None else "")
                     + "; on another machine, or under another load, the same audit may keep other rows. Without "
                       "the cap every number depends only on the data and the options.")
    section.data = {"items": items}
    return section


def _output_space(ctx, labels) -> str:
    """What the methods that ran on the model's output (``labels``) explain, and whether PG² is exact on it."""
    named = (" and ".join([", ".join(labels[:-1]), labels[-1]]) if len(labels) > 1 else labels[0]) if labels else ""
    which = (f"{named} here {'all explain' if len(labels) > 1 else 'explains'}" if named else
             "the PGI² scores explain")
    if ctx.forest.output_space == "margin":
        return (f"This is a boosted classifier: {which} the margin (log-odds), where the exact closed form of PG² "
                "holds. PG² of the probability has no exact leaf-pair form and would need Monte Carlo.")
    if ctx.forest.output_space == "probability":
        return (f"This is a random-forest classifier: {which} the predicted probability of one class, a mean of "
                "leaf class fractions, so PG² and PGI² are exact on it.")
    return f"Regression model: {which} the raw model output; PG² and PGI² are exact."


def _missing_rows(ctx) -> str:
    """How many test rows have a missing value, and what leaves them out ("" when none has)."""
    n_rows, n_complete = ((ctx.cluster.n_rows, ctx.cluster.n_complete) if ctx.cluster is not None
                          else (len(ctx.X_test), len(ctx.complete_rows)))
    left_out = n_rows - n_complete
    if not left_out:
        return ""
    counts = ctx.X_test.isna().sum()
    counts = counts[counts > 0].sort_values(ascending=False)
    where = ("" if ctx.cluster is not None else
             " (" + ", ".join(f"{name}: {int(n)}" for name, n in counts.head(8).items())
             + (f" and {len(counts) - 8} more features" if len(counts) > 8 else "") + " missing)")
    return (f"{left_out} of the {n_rows} test rows ({left_out / n_rows:.0%}) have a missing value{where} and are left "
            "out of the per-row explanations and the faithfulness scores, which perturb every feature's value; the "
            "performance, calibration and drift figures include them. Conclusions about explanations may not hold "
            "for rows with missing values.")


def _rows(ctx, results, options, name) -> str:
    explained = results["explanations"].result.n_explained
    if ctx.cluster is not None:
        return (f"Computed on {ctx.cluster.where}: the per-row methods and the PGI² scores cover every complete test "
                f"row ({explained} rows). The data summary's distribution, the performance metrics, the per-row "
                f"agreement, DT-Sampler without training data and the Monte Carlo comparison use a random sample of "
                f"{ctx.cluster.sample_size} test rows and carry sampling error.")
    return (f"Per-row sections use {explained} test rows drawn at random (seeded) among those without missing "
            f"values ({name('max_rows')} sets the number); numbers from samples carry sampling error, "
            "shown as confidence intervals.")


def _binary(ctx, binary: list, options, name, cli: bool) -> str:
    """What the two-valued features' perturbation was: the flip law (default) or Gaussian noise."""
    sigma = "σ" if options.binary_sigma is None else f"σ = {options.binary_sigma:g} ({name('binary_sigma')})"
    if ctx.binary_flip:
        return (f"{len(binary)} feature(s) take only two values ({name_list(binary)}): they were perturbed by a flip, "
                "not Gaussian noise: each keeps its value with probability 1 − ρ and otherwise takes one of its two "
                f"values with its {'training' if ctx.X_train is not None else 'test'} frequency, ρ = 2Φ(−1/(2σ)) of "
                f"{sigma} (0.096 at σ = 0.3); PG² stays exact. {'--no-binary-flip' if cli else 'binary_flip=False'} "
                "perturbs them with Gaussian noise instead.")
    return (f"{len(binary)} feature(s) take only two values ({name_list(binary)}) and were perturbed by Gaussian "
            f"noise of {sigma} (the flip perturbation was turned off), which gives them values such as 0.3 or 1.2 "
            "that never occur in the data.")
