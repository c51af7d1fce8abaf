"""Calibration section: whether a classifier's predicted probabilities match observed frequencies (reliability
diagram, Brier score and expected calibration error with bootstrap intervals), and the calibration criterion of
the model-fitness verdict. "Not applicable" to regression models.

For one class, with ``y`` 1 where a test row belongs to it and ``p`` the predicted probability of it:

- the **Brier score** mean((p − y)²) (as :func:`sklearn.metrics.brier_score_loss`);
- the **expected calibration error** ECE = Σ_b (n_b / n) · |mean_b(y) − mean_b(p)| over :data:`N_BINS`
  equal-width probability bins (a probability of exactly 1 in the last bin), i.e. (1/n) Σ_b |Σ_{i∈b} (y_i − p_i)|;
- the **reliability diagram**: per non-empty bin, the mean predicted probability against the observed frequency
  (as :func:`sklearn.calibration.calibration_curve` with ``strategy="uniform"``);

each score with a bootstrap interval over test rows (labels and probabilities resampled together,
:func:`~..verdict.bootstrap_ci`). The criterion grades the ECE's interval with the thresholds
``calibration_pass`` / ``calibration_fail``; the section's typed result (:class:`~..criteria.Evidence`) carries it
(None for a regression model, which has no probabilities to calibrate).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import InputError
from .. import criteria, figures
from .. import verdict as vd
from ..criteria import Evidence, Kind, Threshold, named
from ..section import Table, new, register

__all__: list = []

NAME = "calibration"
#: the thresholds of the calibration criterion (with ``min_test_rows`` of the model section)
THRESHOLDS = (
    Threshold("calibration_pass", 0.05, "calibration: expected calibration error (ECE) at or below which it passes",
              "probabilities within 5 percentage points of the observed frequencies on average, the resolution of "
              "a 10-bin reliability diagram", NAME, 0.0, 1.0, "an ECE in [0, 1]"),
    Threshold("calibration_fail", 0.15, "calibration: ECE above which it fails",
              "probabilities off by more than 15 percentage points on average misstate the risks a decision rests "
              "on: recalibrate (Platt or isotonic) before using them as probabilities", NAME, 0.0, 1.0,
              "an ECE in [0, 1]", at_least="calibration_pass"),
)


def _rule(t: dict) -> str:
    return (f"ECE of the explained class's predicted probability (10 equal-width bins): pass if its "
            f"{vd.CI_LEVEL:.0%} bootstrap CI over test rows lies ≤ {named('calibration_pass', t)}, fail if it lies "
            f"> {named('calibration_fail', t)}, else warn; not assessed unless the class and the other "
            f"classes each have at least {named('min_test_rows', t)} test rows")


CALIBRATION = Kind(NAME, criteria.MODEL_FITNESS, {"pass": "well calibrated", "warn": "roughly calibrated",
                                                  "fail": "miscalibrated"}, _rule)

#: equal-width probability bins of the ECE and the reliability diagram
N_BINS = 10


def _bins(p, n_bins: int) -> np.ndarray:
    """Bin of each probability: floor(p · n_bins), with p = 1 in the last bin."""
    return np.minimum((np.asarray(p, dtype=float) * n_bins).astype(int), n_bins - 1)


def brier_score(y, p, axis=-1):
    """Mean squared difference between the probabilities ``p`` and the 0/1 outcomes ``y`` along ``axis``."""
    return np.mean((np.asarray(p, dtype=float) - np.asarray(y, dtype=float)) ** 2, axis=axis)


def expected_calibration_error(y, p, axis=-1, n_bins: int = N_BINS):
    """ECE = (1/n) Σ_b |Σ_{i∈b} (y_i − p_i)| over ``n_bins`` equal-width bins of ``p`` along ``axis`` (vectorised
    over the other axes, as :func:`~.verdict.bootstrap_ci` needs)."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    bins, gap = _bins(p, n_bins), y - p
    total = sum(np.abs(np.sum(np.where(bins == b, gap, 0.0), axis=axis)) for b in range(n_bins))
    return total / y.shape[axis]


def reliability_table(y, p, n_bins: int = N_BINS) -> pd.DataFrame:
    """Per non-empty equal-width bin: its probability range, test rows, mean predicted probability and observed
    frequency of the class."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    bins = _bins(p, n_bins)
    rows = [{"bin": f"[{b / n_bins:.1f}, {(b + 1) / n_bins:.1f}{']' if b == n_bins - 1 else ')'}",
             "test rows": int(np.sum(bins == b)), "mean predicted probability": float(np.mean(p[bins == b])),
             "observed frequency": float(np.mean(y[bins == b]))} for b in range(n_bins) if np.any(bins == b)]
    return pd.DataFrame(rows).set_index("bin")


@dataclass(frozen=True)
class Calibration:
    """Calibration of one class's probabilities: Brier score and ECE with their bootstrap intervals, the
    reliability table (:func:`reliability_table`) and the class's test frequency (``prevalence``)."""

    brier: float
    brier_ci: vd.ConfidenceInterval
    ece: float
    ece_ci: vd.ConfidenceInterval
    table: pd.DataFrame
    prevalence: float

    @property
    def rows(self) -> int:
        """Test rows assessed."""
        return self.ece_ci.rows


def assess(y, p, *, n_bins: int = N_BINS, random_state=None) -> Calibration:
    """Brier score, ECE (with bootstrap intervals over rows) and reliability table of the probabilities ``p`` of
    one class against ``y`` (1 where the row is of that class, else 0). :class:`InputError` when ``y`` is not 0/1,
    ``p`` is not a probability, or their lengths differ."""
    y, p = np.asarray(y, dtype=float).ravel(), np.asarray(p, dtype=float).ravel()
    if len(y) != len(p):
        raise InputError(f"calibration needs one probability per label; got {len(p)} probabilities, {len(y)} labels")
    if not np.isin(y, (0.0, 1.0)).all():
        raise InputError("calibration labels must be 0 or 1 (1: the row belongs to the class assessed)")
    if not (np.isfinite(p).all() and np.all((p >= 0) & (p <= 1))):
        raise InputError("calibration needs probabilities in [0, 1]; the model's predict_proba gave other values")
    rng = np.random.default_rng(random_state) if not isinstance(random_state, np.random.Generator) else random_state
    ece = lambda yy, pp, axis=-1: expected_calibration_error(yy, pp, axis=axis, n_bins=n_bins)  # noqa: E731
    return Calibration(float(brier_score(y, p)), vd.bootstrap_ci((y, p), brier_score, random_state=rng),
                       float(ece(y, p)), vd.bootstrap_ci((y, p), ece, random_state=rng),
                       reliability_table(y, p, n_bins), float(np.mean(y)) if len(y) else np.nan)


def calibration_criterion(result: Calibration, what: str, thresholds=None) -> vd.Criterion:
    """The calibration criterion of the model-fitness verdict: the ECE of ``result`` graded by
    :func:`~.verdict.grade` on its interval (lower is better) with ``calibration_pass`` / ``calibration_fail``;
    ``what`` names the probability assessed (e.g. "the predicted probability of class 1")."""
    name, kind, t = "Calibration of the predicted probabilities", "calibration", vd.limits(thresholds)
    bounds = (t["calibration_pass"], t["calibration_fail"])
    status = vd.grade(result.ece, result.ece_ci, *bounds, lower_is_better=True)
    worst = result.table.assign(gap=(result.table["observed frequency"]
                                     - result.table["mean predicted probability"]).abs())["gap"].idxmax()
    row = result.table.loc[worst]
    explanation = (f"Over {result.rows} test rows, {what}: ECE {vd.shown(result.ece, bounds, '.3f')} "
                   f"({result.ece_ci.text(bounds)}), Brier score "
                   f"{result.brier:.3f} ({result.brier_ci}; a constant prediction of the class frequency "
                   f"{result.prevalence:.2f} scores {result.prevalence * (1 - result.prevalence):.3f}). Largest gap in "
                   f"bin {worst}: predicted {row['mean predicted probability']:.2f} on average, observed "
                   f"{row['observed frequency']:.2f} ({int(row['test rows'])} rows).")
    implication = {vd.FAIL: "The predicted probabilities misstate how often the class occurs: they should not be "
                            "read as probabilities (risks, expected losses) without recalibration.",
                   vd.WARN: "The predicted probabilities are only roughly calibrated (or too few rows to tell): use "
                            "them as scores, and as probabilities only with care."}.get(status, "")
    return vd.Criterion(name, status, result.ece, result.ece_ci, vd.rule(kind, t), explanation, kind, implication,
                        bounds)




@register(NAME, "Calibration of the predicted probabilities", result=Evidence, thresholds=THRESHOLDS,
          kinds=(CALIBRATION,), seconds=0.3, position=50, stage=30)
def build(ctx, results, options):
    """Calibration of the explained class's predicted probability on the test rows."""
    section = new(NAME)
    t = options.limits
    if ctx.task != "classification":
        section.status = "not applicable"
        section.reason = ("a regression model predicts a number, not class probabilities; its accuracy is in the model "
                          "section")
        section.result = Evidence(None)
        return section
    why = ("no test target was given" if ctx.y_test is None else
           "the model has no predict_proba" if not hasattr(ctx.model, "predict_proba") else None)
    if why is not None:
        section.status, section.reason = "not applicable", why
        section.result = Evidence(vd.not_assessed(section.title, NAME, why, vd.rule(NAME, t)))
        return section
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # feature-name warnings of the model's own predict
        proba = np.asarray(ctx.model.predict_proba(ctx.model_input(ctx.X_test.to_numpy())), dtype=float)
    column = list(ctx.classes).index(ctx.positive_class)
    what = f"the predicted probability of class {ctx.positive_class}"
    if len(ctx.classes) > 2:
        what += " (one class against the others)"
    target = np.asarray(ctx.y_test) == ctx.positive_class
    result = assess(target, proba[:, column], random_state=ctx.rng("calibration"))
    scarce = vd.scarce_evidence(np.where(target, f"class {ctx.positive_class}", "the other classes"),
                                t["min_test_rows"], True)
    criterion = (vd.not_assessed(section.title, NAME, f"too little evidence: {scarce}", vd.rule(NAME, t)) if scarce
                 else calibration_criterion(result, what, t))
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
    section.result = Evidence(criterion)
    section.figures.append(figures.reliability_diagram(
        f"Reliability diagram of {what} over {result.rows} test rows{on_sample}: each point is one of "
        f"{N_BINS} equal-width probability bins (area: its test rows); points on the diagonal are "
        "calibrated, below it the model over-predicts the class, above it under-predicts it.",
        result.table, f"predicted probability of class {ctx.positive_class}"))
    section.tables.append(Table(f"Reliability per probability bin of {what}: test rows, mean predicted probability "
                                "and observed frequency of the class.", result.table))
    return section

