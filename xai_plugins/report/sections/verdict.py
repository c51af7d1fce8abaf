"""Verdict section: pass / warn / fail per criterion, with its threshold and confidence interval, and
two verdicts, model fitness and explanation reliability (see :mod:`xai_plugins.report.verdict` for the
aggregation; each criterion is its section's).

Built after the sections whose criteria it gathers (every section declaring a kind of criterion: a section
giving one criterion returns a :class:`~xai_plugins.report.criteria.Evidence` result, gathered as it is) and
before the summary (which takes its words from it); rendered first. Its typed result (:class:`VerdictResult`) holds the
:class:`~xai_plugins.report.verdict.Verdict` (``Audit.verdict``); ``data`` its JSON form. A criterion
whose section did not run is "not assessed", with the reason.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import explainers
from .. import verdict as vd
from ..criteria import Evidence
from ..section import CRITERIA, REGISTRY, new, register, title
from .agreement import explainer_agreement
from .fairness import fairness_criterion
from .faithfulness import GREEDY, RANDOM, explainer_faithfulness, sigma_stability
from .mcr import rashomon_sensitivity

__all__: list = []


@dataclass
class VerdictResult:
    """What other sections read of the verdict section: the :class:`~xai_plugins.report.verdict.Verdict`."""

    verdict: vd.Verdict


@register("verdict", "Verdict", reads=(CRITERIA, "explanations"), result=VerdictResult, seconds=0.4, position=10,
          stage=110)
def build(ctx, results, options):
    """Every criterion of the built sections, in report order; each interval draws from its own stream of the
    audit's seed."""
    t = options.limits
    model = results.get("model")
    adequacy = model.result if model is not None and model.result is not None else None
    kind = "predictive adequacy"
    criteria = [adequacy.criterion if adequacy is not None else vd.not_assessed(
        "Predictive adequacy", kind, _unavailable(model, "model") or "it gave no criterion", vd.rule(kind, t))]
    criteria += [c for key, found in results.items() if issubclass(REGISTRY[key].result or object, Evidence)
                 and (c := _evidence(found, key, t)) is not None]
    if options.protected:
        criteria.append(_fairness(results.get("fairness"), options.protected, t))
    criteria += [*_faithfulness(results.get("faithfulness"), results.get("explanations"), options, ctx, t),
                 _agreement(results.get("agreement"), results.get("explanations"), ctx.rng("verdict: agreement"), t),
                 _stability(results.get("faithfulness"), options, ctx.rng("verdict: stability"), t),
                 _rashomon(results.get("mcr"), t)]
    verdict = vd.Verdict.from_criteria(criteria, t)
    section = new("verdict")
    section.data = verdict.to_dict()
    test = None if adequacy is None else adequacy.score
    section.data["test score"] = None if test is None else test.to_dict()     # the deployer extract's accuracy
    section.result = VerdictResult(verdict)
    return section


def _unavailable(section, what: str) -> str | None:
    """Why ``section`` gives no data for a criterion (None when it does)."""
    if section is None:
        return f"the {what} section was not built"
    if section.status in ("ok", "warn"):
        return None
    reason = f": {section.reason}" if section.reason else ""
    return f"the {what} section was {'not computed' if section.status == 'skipped' else section.status}{reason}"


def _evidence(section, key: str, t) -> vd.Criterion | None:
    """The criterion section ``key`` gives in its :class:`~xai_plugins.report.criteria.Evidence` result (None: not
    applicable to this model); not assessed, with the reason, when the section did not produce one."""
    if section.result is not None:
        return section.result.criterion
    kind = REGISTRY[key].kinds[0].name
    return vd.not_assessed(title(key), kind, _unavailable(section, key) or "it gave no criterion", vd.rule(kind, t))


def _per_row(section) -> tuple[dict, str | None]:
    """{σ: {name: (rows,) PGI²}} with explainers under their display labels, or why there is none."""
    why = _unavailable(section, "faithfulness")
    if why is not None:
        return {}, why
    if section.result is None or not section.result.pgi2:
        return {}, "the faithfulness section scored no row"
    labels = section.result.labels
    keep = (RANDOM, GREEDY)
    return {s: {(k if k in keep else labels.get(k, k)): np.asarray(v, dtype=float) for k, v in by_key.items()}
            for s, by_key in section.result.pgi2.items()}, None


def _faithfulness(section, explanations, options, ctx, t) -> list:
    """A faithfulness criterion per explainer that ranked the explained rows, then a "not assessed" one, saying why,
    per explainer asked for that failed (the audit is incomplete without it; the greedy PG² reference is no
    contestant)."""
    kind = "faithfulness"
    methods = explanations.result.methods if explanations is not None and explanations.result is not None else {}
    failed = [vd.not_assessed(f"Faithfulness of {m.label}", kind, f"{m.label} did not run: {m.reason}",
                              vd.rule(kind, t))
              for m in methods.values() if m.status == "failed" and not explainers.get(m.key).reference
              and options.shown_explainer in (None, m.key)]
    ranked = _ranked(section, options, ctx, t)
    shown_missing = options.shown_explainer is not None and all(c.status == vd.NOT_ASSESSED for c in ranked)
    return failed if failed and shown_missing else ranked + failed


def _judged(methods, options) -> list:
    """The explainers among ``methods`` (display labels) that the explanation-reliability verdict judges: the one
    whose attributions are shown (``options.shown_explainer``) when named, else all of them."""
    if options.shown_explainer is None:
        return list(methods)
    shown = explainers.get(options.shown_explainer).label
    return [m for m in methods if m == shown]


def _ranked(section, options, ctx, t) -> list:
    """The faithfulness criteria of the explainers whose rankings the faithfulness section scored."""
    name, kind = "Faithfulness of the explainers", "faithfulness"
    pgi2, why = _per_row(section)
    if why is not None:
        return [vd.not_assessed(name, kind, why, vd.rule(kind, t))]
    at_ref = pgi2.get(options.sigma_ref, {})
    if GREEDY not in at_ref:
        return [vd.not_assessed(name, kind, "the greedy PG² reference ranking did not run", vd.rule(kind, t))]
    methods = _judged([m for m in at_ref if m not in (RANDOM, GREEDY)], options)
    if not methods:
        if options.shown_explainer is None:
            return [vd.not_assessed(name, kind, "no explainer other than the greedy PG² reference produced a ranking",
                                    vd.rule(kind, t))]
        shown = explainers.get(options.shown_explainer).label
        return [vd.not_assessed(f"Faithfulness of {shown}", kind, f"{shown}, the explainer whose attributions are "
                                "shown, produced no ranking of the explained rows", vd.rule(kind, t))]
    judged = [explainer_faithfulness(m, at_ref, options.sigma_ref, thresholds=t,
                                     random_state=ctx.rng(f"verdict: faithfulness {m}")) for m in methods]
    if options.shown_explainer is None:
        return judged
    others = [m for m in at_ref if m not in (RANDOM, GREEDY, *methods)]
    told = (f" {methods[0]} is the explainer whose attributions are shown: the verdict judges it alone"
            + (f" ({', '.join(others)} scored in the faithfulness section, not judged)." if others else "."))
    return [dataclasses.replace(c, explanation=c.explanation + told) for c in judged]


def _agreement(section, explanations, rng, t) -> vd.Criterion:
    why = _unavailable(section, "agreement")
    if why is not None:
        return vd.not_assessed("Agreement between explainers", "agreement", why, vd.rule("agreement", t))
    explained = explanations.result
    methods = explained.methods
    scores = {methods[k].label if k in methods else k: v for k, v in explained.importances.items() if v is not None}
    if len(scores) >= 2:
        return explainer_agreement(scores, thresholds=t, random_state=rng)
    return explainer_agreement(global_tau=section.result.global_tau, thresholds=t)


def _stability(section, options, rng, t) -> vd.Criterion:
    pgi2, why = _per_row(section)
    if why is not None:
        return vd.not_assessed("Stability across σ", "stability", why, vd.rule("stability", t))
    judged = None if options.shown_explainer is None else _judged(
        {m for by_name in pgi2.values() for m in by_name}, options)
    return sigma_stability(pgi2, judged=judged, thresholds=t, random_state=rng)


def _rashomon(section, t) -> vd.Criterion:
    why = _unavailable(section, "model class reliance")
    if why is not None:
        return vd.not_assessed("Rashomon sensitivity", "Rashomon sensitivity", why,
                               vd.rule("Rashomon sensitivity", t))
    rashomon = section.result
    table = rashomon.table
    return rashomon_sensitivity(table.index, table["model_reliance"], table["mcr_minus"], table["mcr_plus"],
                                rashomon.unit, thresholds=t, baseline=rashomon.constant_loss)


def _fairness(section, protected, t) -> vd.Criterion:
    why = _unavailable(section, "fairness")
    if why is not None:
        return fairness_criterion(protected, not_assessed_reason=why, thresholds=t)
    found = section.result
    return fairness_criterion(protected, found.disparities, found.other_findings, found.insufficient, thresholds=t)
