"""Calibration section: whether a classifier's predicted probabilities match observed frequencies (reliability
diagram, Brier score and expected calibration error with bootstrap intervals, see
:mod:`xai_plugins.report.calibration`). "Not applicable" to regression models.

``raw["criterion"]`` holds the calibration criterion of the model-fitness verdict (the verdict section reads it;
None for a regression model, which has no probabilities to calibrate).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import calibration, figures
from .. import verdict as vd
from ..section import Table
from . import new, register

NAME = "calibration"


@register(NAME, "Calibration of the predicted probabilities")
def build(ctx, results, options):
    """Calibration of the explained class's predicted probability on the test rows."""
    section = new(NAME)
    t = options.limits
    if ctx.task != "classification":
        section.status = "not applicable"
        section.reason = ("a regression model predicts a number, not class probabilities; its accuracy is in the model "
                          "section")
        section.raw["criterion"] = None
        return section
    why = ("no test target was given" if ctx.y_test is None else
           "the model has no predict_proba" if not hasattr(ctx.model, "predict_proba") else None)
    if why is not None:
        section.status, section.reason = "not applicable", why
        section.raw["criterion"] = vd.not_assessed(section.title, NAME, why, vd.rule(NAME, t))
        return section
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # feature-name warnings of the model's own predict
        proba = np.asarray(ctx.model.predict_proba(ctx.model_input(ctx.X_test.to_numpy())), dtype=float)
    column = list(ctx.classes).index(ctx.positive_class)
    what = f"the predicted probability of class {ctx.positive_class}"
    if len(ctx.classes) > 2:
        what += " (one class against the others)"
    target = np.asarray(ctx.y_test) == ctx.positive_class
    result = calibration.assess(target, proba[:, column], random_state=ctx.rng("calibration"))
    scarce = vd.scarce_evidence(np.where(target, f"class {ctx.positive_class}", "the other classes"),
                                t["min_test_rows"], True)
    criterion = (vd.not_assessed(section.title, NAME, f"too little evidence: {scarce}", vd.rule(NAME, t)) if scarce
                 else calibration.calibration_criterion(result, what, t))
    on_sample = "" if ctx.cluster is None else \
        f" (a random sample of {result.rows} of the {ctx.cluster.n_rows} test rows)"
    section.data = {"assessed": what, "test rows": result.rows, "on sample": on_sample,
                    "Brier score": result.brier, "Brier score CI": result.brier_ci.to_dict(),
                    "ECE": result.ece, "ECE CI": result.ece_ci.to_dict(), "class frequency": result.prevalence,
                    "Brier score of the class frequency": result.prevalence * (1 - result.prevalence),
                    "ECE shown": vd.shown(result.ece, criterion.limits, ".3f"),
                    "ECE interval": result.ece_ci.text(criterion.limits), "Brier score interval": str(result.brier_ci),
                    "status": criterion.status, "word": criterion.word, "reliability": result.table,
                    "result": (f"not assessed in the model-fitness verdict ({scarce})" if scarce else
                               f"{criterion.word} ({criterion.status} in the model-fitness verdict)")}
    section.raw["criterion"] = criterion
    section.figures.append(figures.reliability_diagram(
        f"Reliability diagram of {what} over {result.rows} test rows{on_sample}: each point is one of "
        f"{calibration.N_BINS} equal-width probability bins (area: its test rows); points on the diagonal are "
        "calibrated, below it the model over-predicts the class, above it under-predicts it.",
        result.table, f"predicted probability of class {ctx.positive_class}"))
    section.tables.append(Table(f"Reliability per probability bin of {what}: test rows, mean predicted probability "
                                "and observed frequency of the class.", result.table))
    return section

