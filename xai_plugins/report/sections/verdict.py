"""Verdict section: pass / warn / fail per criterion, with its threshold and confidence interval, and
two verdicts, model fitness and explanation reliability (see :mod:`xai_plugins.report.verdict` for
the criteria, thresholds and rule).

Computed after the sections it reads and before the summary (which takes its words from it); rendered
first. ``raw["verdict"]`` holds the
:class:`~xai_plugins.report.verdict.Verdict` (``Audit.verdict``); ``data`` its JSON form. A criterion
whose section did not run is "not assessed", with the reason.
"""

from __future__ import annotations

import numpy as np
from sklearn import metrics

from .. import explainers
from .. import verdict as vd
from . import new, register, title
from .mcr import reliance_unit

#: the test score of the predictive-adequacy criterion per task, and its training counterpart
TASK_SCORES = {"regression": ("R²", metrics.r2_score), "classification": ("balanced accuracy",
                                                                          metrics.balanced_accuracy_score)}


@register("verdict", "Verdict")
def build(ctx, results, options):
    """Every criterion of :mod:`..verdict` from the built sections; each interval draws from its own
    stream of the audit's seed."""
    t = options.limits
    adequacy, test = _adequacy(ctx, ctx.rng("verdict: predictive adequacy"), t)
    criteria = [adequacy]
    criteria += [c for key in ("calibration", "drift") if (c := _evidence(results.get(key), key, t)) is not None]
    if options.protected:
        criteria.append(_fairness(results.get("fairness"), options.protected, t))
    criteria += [*_faithfulness(results.get("faithfulness"), results.get("explanations"), options, ctx, t),
                 _agreement(results.get("agreement"), results.get("explanations"), ctx.rng("verdict: agreement"), t),
                 _stability(results.get("faithfulness"), ctx.rng("verdict: stability"), t),
                 _rashomon(results.get("mcr"), t)]
    verdict = vd.Verdict.from_criteria(criteria, t)
    section = new("verdict")
    section.data = verdict.to_dict()
    section.data["test score"] = None if test is None else test.to_dict()     # the deployer extract's accuracy
    section.raw["verdict"] = verdict
    return section


def _unavailable(section, what: str) -> str | None:
    """Why ``section`` gives no data for a criterion (None when it does)."""
    if section is None:
        return f"the {what} section was not built"
    if section.status in ("ok", "warn"):
        return None
    reason = f": {section.reason}" if section.reason else ""
    return f"the {what} section was {'not computed' if section.status == 'skipped' else section.status}{reason}"


def _adequacy(ctx, rng, t) -> tuple[vd.Criterion, vd.HoldoutScore | None]:
    """The predictive-adequacy criterion and the test score it judged (None when none was computed)."""
    name, kind = "Predictive adequacy", "predictive adequacy"
    if ctx.y_test is None:
        return vd.not_assessed(name, kind, "no test target was given", vd.rule(kind, t)), None
    scarce = vd.scarce_evidence(ctx.y_test, t["min_test_rows"], ctx.task == "classification")
    if scarce:
        return vd.not_assessed(name, kind, f"too little evidence: {scarce}", vd.rule(kind, t)), None
    metric, score = TASK_SCORES[ctx.task]
    try:
        test = vd.holdout_score(metric, ctx.y_test, ctx.model.predict(ctx.model_input(ctx.X_test.to_numpy())),
                                random_state=rng)
        train = None
        if ctx.X_train is not None and ctx.y_train is not None:
            train = float(score(ctx.y_train, ctx.model.predict(ctx.model_input(ctx.X_train.to_numpy()))))
    except Exception as exc:  # noqa: BLE001 - e.g. the model's predict refusing missing values: said in the verdict
        return vd.not_assessed(name, kind, f"the model's predictions failed ({type(exc).__name__}: {exc})",
                               vd.rule(kind, t)), None
    return vd.predictive_adequacy(test, train, t), test


def _evidence(section, key: str, t) -> vd.Criterion | None:
    """The criterion a model-fitness section ``key`` carries in ``raw["criterion"]`` (None: not applicable to
    this model); not assessed, with the reason, when the section did not produce one."""
    if section is not None and "criterion" in section.raw:
        return section.raw["criterion"]
    return vd.not_assessed(title(key), key, _unavailable(section, key) or "it gave no criterion", vd.rule(key, t))


def _per_row(section) -> tuple[dict, str | None]:
    """{σ: {name: (rows,) PGI²}} with explainers under their display labels, or why there is none."""
    why = _unavailable(section, "faithfulness")
    if why is not None:
        return {}, why
    if not section.raw.get("pgi2"):
        return {}, "the faithfulness section scored no row"
    labels = section.raw.get("labels", {})
    keep = (vd.RANDOM, vd.GREEDY)
    return {s: {(k if k in keep else labels.get(k, k)): np.asarray(v, dtype=float) for k, v in by_key.items()}
            for s, by_key in section.raw["pgi2"].items()}, None


def _faithfulness(section, explanations, options, ctx, t) -> list:
    """A faithfulness criterion per explainer that ranked the explained rows, then a "not assessed" one, saying why,
    per explainer asked for that failed (the audit is incomplete without it; the greedy PG² reference is no
    contestant)."""
    kind = "faithfulness"
    methods = explanations.raw.get("methods", {}) if explanations is not None else {}
    return _ranked(section, options, ctx, t) + [
        vd.not_assessed(f"Faithfulness of {m.label}", kind, f"{m.label} did not run: {m.reason}", vd.rule(kind, t))
        for m in methods.values() if m.status == "failed" and not explainers.get(m.key).reference]


def _ranked(section, options, ctx, t) -> list:
    """The faithfulness criteria of the explainers whose rankings the faithfulness section scored."""
    name, kind = "Faithfulness of the explainers", "faithfulness"
    pgi2, why = _per_row(section)
    if why is not None:
        return [vd.not_assessed(name, kind, why, vd.rule(kind, t))]
    at_ref = pgi2.get(options.sigma_ref, {})
    if vd.GREEDY not in at_ref:
        return [vd.not_assessed(name, kind, "the greedy PG² reference ranking did not run", vd.rule(kind, t))]
    methods = [m for m in at_ref if m not in (vd.RANDOM, vd.GREEDY)]
    if not methods:
        return [vd.not_assessed(name, kind, "no explainer other than the greedy PG² reference produced a ranking",
                                vd.rule(kind, t))]
    return [vd.explainer_faithfulness(m, at_ref, options.sigma_ref, thresholds=t,
                                      random_state=ctx.rng(f"verdict: faithfulness {m}")) for m in methods]


def _agreement(section, explanations, rng, t) -> vd.Criterion:
    why = _unavailable(section, "agreement")
    if why is not None:
        return vd.not_assessed("Agreement between explainers", "agreement", why, vd.rule("agreement", t))
    methods = explanations.raw.get("methods", {})
    scores = {methods[k].label if k in methods else k: v for k, v in explanations.raw.get("importances", {}).items()
              if v is not None}
    if len(scores) >= 2:
        return vd.explainer_agreement(scores, thresholds=t, random_state=rng)
    return vd.explainer_agreement(global_tau=section.data.get("global tau"), thresholds=t)


def _stability(section, rng, t) -> vd.Criterion:
    pgi2, why = _per_row(section)
    if why is not None:
        return vd.not_assessed("Stability across σ", "stability", why, vd.rule("stability", t))
    return vd.sigma_stability(pgi2, thresholds=t, random_state=rng)


def _rashomon(section, t) -> vd.Criterion:
    why = _unavailable(section, "model class reliance")
    if why is not None:
        return vd.not_assessed("Rashomon sensitivity", "Rashomon sensitivity", why,
                               vd.rule("Rashomon sensitivity", t))
    table = section.data["table"]
    return vd.rashomon_sensitivity(table.index, table["model_reliance"], table["mcr_minus"], table["mcr_plus"],
                                   reliance_unit(section.data.get("params", {})), thresholds=t,
                                   baseline=section.data["constant loss"])


def _fairness(section, protected, t) -> vd.Criterion:
    why = _unavailable(section, "fairness")
    if why is not None:
        return vd.fairness(protected, not_assessed_reason=why, thresholds=t)
    return vd.fairness(protected, section.raw.get("disparities", []), section.raw.get("other findings", ""),
                       section.raw.get("insufficient", []), thresholds=t)
