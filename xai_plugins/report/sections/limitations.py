"""Limitations section: what the numbers of this audit do not say, generated from what ran."""

from __future__ import annotations

from .. import explainers
from ..explainers import name_list
from ..options import flag
from . import new, register


@register("limitations", "Limitations and scope")
def build(ctx, results, options):
    """One item per limitation that applies to the methods and data of this audit."""
    section = new("limitations")
    methods = results["explanations"].raw.get("methods", {})
    ran = {key for key, m in methods.items() if m.status == "ok"}
    cli = options.command_line is not None
    name = (lambda option: flag(option)) if cli else (lambda option: f"{option}=")
    items = [_output_space(ctx)]
    if any(explainers.get(k).reference for k in ran) or results["faithfulness"].status == "ok":
        items.append("PG² perturbs features with independent Gaussian noise of σ training standard deviations; "
                     "correlated features are perturbed independently, which can create unrealistic inputs. PGI² "
                     "measures faithfulness to the model, not to the data-generating process.")
        binary = [n for n, b in zip(ctx.feature_names, ctx.binary_features) if b]
        if binary and options.binary_sigma is None:
            items.append(f"{len(binary)} feature(s) take only the values 0 and 1 ({name_list(binary)}); Gaussian noise "
                         "gives them values such as 0.3 or 1.2 that never occur in the data. Set a smaller noise "
                         f"level for them with {name('binary_sigma')} (in training standard deviations).")
        elif binary:
            items.append(f"The 0/1 feature(s) {name_list(binary)} were perturbed with σ = {options.binary_sigma:g} "
                         "instead of the σ of the other features.")
    for key in (k for k in methods if k in ran):
        text = explainers.get(key).limitation(ctx, methods[key], options, name)
        items += [text] if text else []
    items.append(_rows(ctx, results, options, name))
    if results["mcr"].status == "ok":
        items.append("Model class reliance ranges cover the Rashomon set explored by the RF-MCR procedure "
                     "(bootstrap-free random forests); they are estimates from permutations, not guarantees.")
    if results["agreement"].status == "ok":
        items.append("Kendall τ-b counts ties; top-k overlap ignores the order inside the top k.")
    if options.machine_dependent:
        items.append(f"A time budget of {options.time_budget:g} s was set: the number of explained rows and the "
                     "Monte Carlo sample counts at equal time depend on this machine's speed and load, so another "
                     "run may give other numbers. Without a time budget every number depends only on the data "
                     "and the options.")
    section.data = {"items": items}
    return section


def _output_space(ctx) -> str:
    if ctx.forest.output_space == "margin":
        return ("This is a boosted classifier: PG², PGI², the greedy ranking, SHAP and AcME here all explain the "
                "margin (log-odds), where the exact closed form holds. PG² of the probability has no exact "
                "leaf-pair form and would need Monte Carlo.")
    if ctx.forest.output_space == "probability":
        return ("This is a random-forest classifier: every method explains the predicted probability of one class, "
                "a mean of leaf class fractions, so PG² and PGI² are exact on it.")
    return "Regression model: every method explains the raw model output; PG² and PGI² are exact."


def _rows(ctx, results, options, name) -> str:
    explained = results["explanations"].data.get("explained rows", 0)
    if ctx.cluster is not None:
        return (f"Computed on a Dask cluster: the per-row methods and the PGI² scores cover every complete test row "
                f"({explained} rows). The data summary's distribution, the performance metrics, the per-row "
                f"agreement, DT-Sampler without training data and the Monte Carlo comparison use a random sample of "
                f"{ctx.cluster.sample_size} test rows and carry sampling error.")
    return (f"Per-row sections use {explained} test rows drawn at random (seeded) among those without missing "
            f"values ({name('max_rows')} sets the number); numbers from samples carry sampling error, "
            "shown as confidence intervals.")
