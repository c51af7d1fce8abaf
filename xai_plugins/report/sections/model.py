"""Model section: what the model is, its target and its predictive performance on the test data, and the
predictive-adequacy criterion of the model-fitness verdict (the test score against the training score).

Its typed result (:class:`ModelResult`) carries the criterion and the test score the verdict and the deployer
extract read.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn import metrics

from ...errors import InputError
from .. import describe
from ..criteria import (
    FAIL,
    MODEL_FITNESS,
    WARN,
    Criterion,
    Kind,
    Threshold,
    limits,
    named,
    not_assessed,
    rule,
    scarce_evidence,
    shown,
)
from ..section import Table, new, register
from ..verdict import CI_LEVEL, N_BOOT, ConfidenceInterval, bootstrap_ci, finite, grade

__all__: list = []

KIND = "predictive adequacy"
_INF = float("inf")
#: the thresholds of the predictive-adequacy criterion (``min_test_rows`` also bounds the calibration criterion)
THRESHOLDS = (
    Threshold("adequacy_warn", 0.25, "predictive adequacy: largest skill loss L that passes",
              "a tuned ensemble usually keeps at least three quarters of its training skill above chance on new data",
              KIND, 0.0, _INF, "a skill loss L ≥ 0"),
    Threshold("adequacy_fail", 0.5, "predictive adequacy: skill loss L above which it fails",
              "beyond half, most of the skill the model shows on its training data is memorised rather than learnt, "
              "and the explanations describe that fit, not the population", KIND, 0.0, _INF, "a skill loss L ≥ 0",
              at_least="adequacy_warn"),
    Threshold("min_test_rows", 10, "predictive adequacy and calibration: fewest test rows a score needs (a "
              "classifier: in each of at least two classes) for the criterion to be assessed",
              "over fewer than 10 rows a class's recall or observed frequency moves in steps of more than 0.1 and a "
              "bootstrap interval resamples too few distinct rows to hold its level: too little evidence to pass or "
              "fail a model", KIND, 2.0, _INF, "a row count ≥ 2"),
)


def _rule(t: dict) -> str:
    level = f"{CI_LEVEL:.0%}"
    return (f"L = (training − test) / (training − chance): pass if its {level} CI (from the test "
            f"score's bootstrap CI) lies ≤ {named('adequacy_warn', t)}, fail if it lies > "
            f"{named('adequacy_fail', t)} or the test score is at or below chance, else warn; "
            f"not assessed with fewer than {named('min_test_rows', t)} test rows (a classifier: "
            "fewer than two classes of that many test rows)")


ADEQUACY = Kind(KIND, MODEL_FITNESS, {"pass": "adequate", "warn": "doubtful", "fail": "inadequate"}, _rule)
#: the test score of the predictive-adequacy criterion per task, and its training counterpart
TASK_SCORES = {"regression": ("R²", metrics.r2_score), "classification": ("balanced accuracy",
                                                                          metrics.balanced_accuracy_score)}


@dataclass
class ModelResult:
    """What other sections read of the model section: the predictive-adequacy ``criterion``, the test ``score`` it
    judged (None when none was computed) and the ``performance`` table (None when it was not computed)."""

    criterion: Criterion
    score: "HoldoutScore | None"
    performance: pd.DataFrame | None = None


def _r2(y, pred, axis=-1):
    centred = y - np.mean(y, axis=axis, keepdims=True)
    return 1 - np.sum((y - pred) ** 2, axis=axis) / np.sum(centred ** 2, axis=axis)


def _balanced_accuracy(y, pred, axis=-1):
    classes = np.unique(y)
    recalls = np.stack([np.sum((y == c) & (pred == c), axis=axis) / np.sum(y == c, axis=axis) for c in classes])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # a class absent from a resample
        return np.nanmean(recalls, axis=0)


#: score name -> (vectorised score of (y_true, y_pred, axis), chance level from the test labels)
SCORES = {"R²": (_r2, lambda y: 0.0), "balanced accuracy": (_balanced_accuracy, lambda y: 1 / len(np.unique(y)))}


@dataclass(frozen=True)
class HoldoutScore:
    """A test-set score (``metric`` in :data:`SCORES`) with its bootstrap interval over test rows and the
    score of an uninformative model (``chance``: 0 for R², 1/k for balanced accuracy over k classes)."""

    metric: str
    value: float
    ci: ConfidenceInterval
    chance: float

    @property
    def text(self) -> str:
        """"R² 0.437 (95% CI [0.297, 0.558])": the score and its interval as the verdict prints them, each number
        on its side of chance (:func:`shown`)."""
        return f"{self.metric} {shown(self.value, (self.chance,))} ({self.ci.text((self.chance,))})"

    def to_dict(self) -> dict:
        """JSON-ready: metric, value, interval, chance and :attr:`text`."""
        return {"metric": self.metric, "value": finite(self.value), "ci": self.ci.to_dict(),
                "chance": finite(self.chance), "text": self.text}


def holdout_score(metric: str, y_true, y_pred, *, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                  random_state=None) -> HoldoutScore:
    """``metric`` ("R²" for regression, "balanced accuracy" for classification) of predictions on the test
    rows, with a paired bootstrap interval (labels and predictions resampled together). Class labels of
    any type are coded as integers first."""
    if metric not in SCORES:
        raise InputError(f"unknown score {metric!r}; choose from {list(SCORES)}")
    score, chance = SCORES[metric]
    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if metric != "R²":
        codes = np.unique(np.concatenate([y_true.astype(str), y_pred.astype(str)]), return_inverse=True)[1]
        y_true, y_pred = codes[:len(y_true)], codes[len(y_true):]
    ci = bootstrap_ci((y_true, y_pred), score, n_boot=n_boot, level=level, random_state=random_state)
    return HoldoutScore(metric, float(score(y_true.astype(float), y_pred.astype(float))), ci, float(chance(y_true)))


def predictive_adequacy(test: HoldoutScore, train: float | None, thresholds=None) -> Criterion:
    """Compare the test score with the training score ``train``: L = (train − test) / (train − chance),
    the share of the training skill above chance lost on the test data, graded by :func:`grade` with the
    thresholds ``adequacy_warn`` / ``adequacy_fail`` on the interval L takes over the test score's interval
    (the training score held fixed). Without a training score the criterion is not assessed, unless the
    test score is at or below chance, which fails."""
    name, kind, chance, t = "Predictive adequacy", "predictive adequacy", test.chance, limits(thresholds)
    text = rule(kind, t)
    measured = test.text
    useless = "The model's predictions should not be used: it does not predict better than chance."
    if not np.isfinite(test.value):
        return not_assessed(name, kind, f"the test {test.metric} is not finite", text)
    if test.value <= chance:
        return Criterion(name, FAIL, test.value, test.ci, text, f"Test {measured} is at or below chance "
                         f"({chance:.3g}): the model does not predict the test data.", kind, useless, (chance,))
    if train is None or not np.isfinite(train):
        return not_assessed(name, kind, f"no training score to compare the test {measured} with", text)
    if train <= chance:
        return Criterion(name, FAIL, np.nan, None, text, f"the training {test.metric} {train:.3g} is at or "
                         f"below chance ({chance:.3g}): the model did not learn its training data.", kind, useless)
    loss = (train - test.value) / (train - chance)
    ci = ConfidenceInterval((train - test.ci.high) / (train - chance), (train - test.ci.low) / (train - chance),
                            test.ci.level, test.ci.method, test.ci.rows)
    bounds = (t["adequacy_warn"], t["adequacy_fail"])
    status = grade(loss, ci, *bounds)
    implication = {FAIL: "The model does not generalise: much of its training fit is memorised, so its predictions "
                         "on new data are unreliable and its explanations describe that fit, not the population.",
                   WARN: "The model may not generalise: check its test performance before relying on it."
                   }.get(status, "")
    percent = shown(100 * max(loss, 0), [100 * b for b in bounds], ".0f")
    return Criterion(name, status, float(loss), ci, text,
                     f"Test {measured} against training {test.metric} {train:.3g}: L = {shown(loss, bounds, '.2f')} "
                     f"({ci.text(bounds)}), i.e. {percent}% of the skill above chance ({chance:.3g}) on the training "
                     "data is lost on the test data.", kind, implication, bounds)


def _adequacy(ctx, rng, t) -> tuple[Criterion, HoldoutScore | None]:
    """The predictive-adequacy criterion and the test score it judged (None when none was computed)."""
    name = "Predictive adequacy"
    if ctx.y_test is None:
        return not_assessed(name, KIND, "no test target was given", rule(KIND, t)), None
    scarce = scarce_evidence(ctx.y_test, t["min_test_rows"], ctx.task == "classification")
    if scarce:
        return not_assessed(name, KIND, f"too little evidence: {scarce}", rule(KIND, t)), None
    metric, score = TASK_SCORES[ctx.task]
    try:
        test = holdout_score(metric, ctx.y_test, ctx.model.predict(ctx.model_input(ctx.X_test.to_numpy())),
                             random_state=rng)
        train = None
        if ctx.X_train is not None and ctx.y_train is not None:
            train = float(score(ctx.y_train, ctx.model.predict(ctx.model_input(ctx.X_train.to_numpy()))))
    except Exception as exc:  # noqa: BLE001 - e.g. the model's predict refusing missing values: said in the verdict
        return not_assessed(name, KIND, f"the model's predictions failed ({type(exc).__name__}: {exc})",
                            rule(KIND, t)), None
    return predictive_adequacy(test, train, t), test


@register("model", "Model and predictive performance", result=ModelResult, thresholds=THRESHOLDS, kinds=(ADEQUACY,),
          seconds=0.2, position=40, stage=10)
def build(ctx, results, options):
    """Model facts, target distribution and the performance table(s)."""
    section = new("model")
    section.result = ModelResult(*_adequacy(ctx, ctx.rng("verdict: predictive adequacy"), options.limits))
    cl = ctx.cluster
    section.data = {"card": describe.model_card(ctx), "target": describe.target_summary(ctx),
                    "performance note": "" if ctx.y_test is not None else "not computed (no test target given)"}
    if cl is not None:
        section.data["card"]["test rows"] = cl.n_rows
    if ctx.parity is not None:
        section.data["parity"] = ctx.parity.to_dict()
        section.data["card"]["parity with its runtime"] = str(ctx.parity)
        section.data["card"]["parity on its output"] = (
            f"{'passed' if ctx.parity.output_passed else f'FAILED on {ctx.parity.output_failed_rows} rows'}: "
            f"{ctx.parity.output_runtime}, max |Δ| {ctx.parity.output_max_abs_diff:.3g} "
            f"(tolerance {ctx.parity.output_tolerance:.3g})")
        if not ctx.parity.passed:
            section.status, section.reason = "warn", "UNVERIFIED: the trees read from the model do not reproduce its " \
                                                     "runtime's scores (the parity certificate failed)"
    if ctx.y_test is None:
        return section
    try:
        performance = describe.performance(ctx)
    except Exception as exc:  # noqa: BLE001 - e.g. the model's own predict refusing missing values
        section.data["performance note"] = f"not computed ({type(exc).__name__}: {exc})"
        section.status, section.reason = "warn", section.data["performance note"]
        return section
    on_sample = "" if cl is None else f" On a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows."
    overall = {"regression": "", "classification": " (overall, every class counted)"}[ctx.task]
    section.tables.append(Table(f"Predictive performance on the test and training data{overall}.{on_sample}",
                                performance))
    section.data["performance"] = performance
    section.result.performance = performance
    if performance.filter(like="ROC AUC", axis=0).isna().to_numpy().any():
        section.data["performance note"] = describe.NO_ROC_AUC
    if ctx.task == "classification" and len(ctx.classes) > 2:
        table, shown = describe.per_class(ctx)
        section.data.update({"per class": table, "classes shown": shown})
        section.tables.append(Table(f"Test performance per class, {shown}, by decreasing number of test rows. "
                                    f"The detailed pages explain class {ctx.positive_class}.{on_sample}", table))
    return section
