"""Per-criterion verdicts of an audit (pass / warn / fail, with the threshold in the text) and the
two verdicts (model fitness, explanation reliability), with bootstrap confidence intervals over the
explained rows.

Pure computation on numbers and per-row arrays: nothing here imports the report. The criteria:

- **predictive adequacy**: the share of the training skill above chance that is lost on the test data (not assessed
  on too few test rows or classes: :func:`scarce_evidence`);
- **faithfulness** of each explainer, as the normalised score
  F = (PGI²(method) − PGI²(random)) / (PGI²(best found) − PGI²(random)), 0 for a random ranking and 1 for
  the best ranking found on each row among every evaluated ranking (the greedy PG² reference and the
  explainers): greedy is a heuristic, not a bound, so it is not the reference by itself, and F ≤ 1 by
  construction; its confidence interval is a *paired* bootstrap over rows (the per-row arrays are
  resampled together);
- **agreement** between explainers: mean pairwise Kendall τ of their feature orderings;
- **stability across σ**: the largest change of any explainer's F between noise levels;
- **Rashomon sensitivity**: the widest MCR range relative to the model's largest reliance (passing when that range
  is a negligible change in the loss, below a share of the loss of the best constant prediction);
- **fairness**, when protected attributes are named: whether a disparity, importance-profile or proxy
  threshold of the fairness section is crossed.

The criteria form two verdicts that are never combined (:data:`VERDICT_OF_KIND`): **model fitness**
(predictive adequacy, fairness, and calibration / drift criteria where a section supplies them) and
**explanation reliability** (faithfulness, agreement, stability, Rashomon sensitivity). A criterion
without data is "not assessed" and says why; it never passes. Each verdict is the worst assessed status
of its criteria, at best "warn" when one was not assessed. Every threshold is a named, settable
:class:`Threshold` with its rationale (:data:`THRESHOLDS`); :data:`WORDS` is the one place a status
becomes a qualitative word ("strong", "faithful", ...).
"""

from __future__ import annotations

import numbers
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..errors import InputError

PASS, WARN, FAIL, NOT_ASSESSED = "pass", "warn", "fail", "not assessed"
_SEVERITY = {PASS: 0, WARN: 1, FAIL: 2}


def severity(status: str) -> int:
    """0 for "pass", 1 for "warn", 2 for "fail": the order CI gates and metrics use (``xai-audit --fail-on``,
    the MLflow evaluator's status metrics). Raises :class:`InputError` for any other status."""
    if status not in _SEVERITY:
        raise InputError(f"a verdict status is one of {list(_SEVERITY)}; got {status!r}")
    return _SEVERITY[status]

#: Bootstrap resamples and confidence level of every interval in the verdict. 2,000 resamples put the
#: Monte Carlo error of a 95 % percentile bound well below the interval's own width.
N_BOOT = 2000
CI_LEVEL = 0.95
#: Above this many rows the bias-corrected (BCa) interval's jackknife (one statistic per left-out row, O(n²))
#: costs more than the bootstrap itself, and the percentile interval is as accurate: it is used instead.
BCA_MAX_ROWS = 1000

@dataclass(frozen=True)
class Threshold:
    """A settable threshold of the verdict: ``name`` is its key in ``audit(..., thresholds={name: value})`` and
    ``xai-audit --threshold NAME=VALUE``; ``default`` its value unless set; ``what`` the quantity and side it
    bounds; ``rationale`` where the default comes from (shown in the report beside the verdict)."""

    name: str
    default: float
    what: str
    rationale: str


#: every threshold of the verdict and of the fairness section, by name (see :class:`Threshold`)
THRESHOLDS = {t.name: t for t in (
    Threshold("adequacy_warn", 0.25, "predictive adequacy: largest skill loss L that passes",
              "a tuned ensemble usually keeps at least three quarters of its training skill above chance on new data"),
    Threshold("adequacy_fail", 0.5, "predictive adequacy: skill loss L above which it fails",
              "beyond half, most of the skill the model shows on its training data is memorised rather than learnt, "
              "and the explanations describe that fit, not the population"),
    Threshold("min_test_rows", 10, "predictive adequacy and calibration: fewest test rows a score needs (a "
              "classifier: in each of at least two classes) for the criterion to be assessed",
              "over fewer than 10 rows a class's recall or observed frequency moves in steps of more than 0.1 and a "
              "bootstrap interval resamples too few distinct rows to hold its level: too little evidence to pass or "
              "fail a model"),
    Threshold("faithfulness_pass", 0.5, "faithfulness: F at or above which it passes",
              "the ranking recovers at least half of what the best ranking found gains over random rankings"),
    Threshold("faithfulness_fail", 0.25, "faithfulness: F below which it fails",
              "below a quarter the ranking is closer to random than to the best ranking found"),
    Threshold("agreement_pass", 0.6, "agreement: Kendall τ at or above which it passes",
              "τ ≥ 0.6 is the conventional \"strong\" rank association"),
    Threshold("agreement_fail", 0.3, "agreement: Kendall τ below which it fails",
              "τ < 0.3 is the conventional \"weak\" rank association: the explainers tell the reviewer "
              "conflicting stories about the same model"),
    Threshold("stability_warn", 0.2, "stability: largest change D of F between noise levels that passes",
              "a change of 0.2 is less than the gap between the faithfulness grades"),
    Threshold("stability_fail", 0.5, "stability: change D of F above which it fails",
              "a change of 0.5 moves a method from the best ranking found to half-way to random: its faithfulness "
              "then depends on the noise scale chosen, not on the method"),
    Threshold("rashomon_warn", 0.2, "Rashomon sensitivity: widest MCR range R (share of the top reliance) that "
              "passes", "up to 0.2, equally accurate models agree on how much every feature matters"),
    Threshold("rashomon_fail", 0.5, "Rashomon sensitivity: R above which it fails",
              "above 0.5 some feature's reliance could move by half of the top feature's among equally good "
              "models, so the importance ranking is partly an arbitrary choice"),
    Threshold("rashomon_floor", 0.05, "Rashomon sensitivity: widest MCR range, as a share of the training loss of "
              "the best constant prediction, below which the ranges are negligible and the criterion passes",
              "scrambling a feature then changes the loss by less than a twentieth of what an uninformative model "
              "loses (its majority-class error rate, the target's variance): R, a ratio of such changes, is noise "
              "there and must not drive the verdict"),
    Threshold("calibration_pass", 0.05, "calibration: expected calibration error (ECE) at or below which it passes",
              "probabilities within 5 percentage points of the observed frequencies on average, the resolution of "
              "a 10-bin reliability diagram"),
    Threshold("calibration_fail", 0.15, "calibration: ECE above which it fails",
              "probabilities off by more than 15 percentage points on average misstate the risks a decision rests "
              "on: recalibrate (Platt or isotonic) before using them as probabilities"),
    Threshold("drift_warn", 0.1, "drift: PSI of a feature at or above which a confirmed shift warns",
              "the customary population-stability-index limit of \"no significant shift\" (credit scoring practice)"),
    Threshold("drift_fail", 0.25, "drift: PSI of a feature at or above which a confirmed shift fails",
              "the customary limit of a \"major shift\" that calls for investigation or redevelopment"),
    Threshold("drift_alpha", 0.05, "drift: Bonferroni-corrected two-sample KS p-value (χ² test of homogeneity for a "
              "categorical feature) below which a shift is confirmed",
              "the conventional 5% level, corrected for testing every feature"),
    Threshold("demographic_parity", 0.1, "fairness: demographic-parity difference above which it warns (fails when "
              "the whole interval lies above)", "a gap of 10 percentage points in the share of positive predictions, "
              "the customary limit in fairness practice"),
    Threshold("equalized_odds", 0.1, "fairness: equalized-odds difference above which it warns (fails when the "
              "whole interval lies above)", "a gap of 10 percentage points in the true- or false-positive rate, "
              "the same limit as demographic parity"),
    Threshold("mean_prediction_gap", 0.5, "fairness (regression): mean-prediction gap, in standard deviations of "
              "the predictions, above which it warns (fails when the whole interval lies above)",
              "a medium standardised difference (Cohen's d = 0.5)"),
    Threshold("mae_ratio", 1.25, "fairness (regression): worst / best group MAE above which it warns",
              "the four-fifths rule read for errors (1 / 0.8 = 1.25)"),
    Threshold("importance_profile_distance", 0.25, "fairness: total-variation distance between two groups' "
              "importance profiles above which it warns", "a quarter of the importance mass on other features"),
    Threshold("proxy_auc", 0.8, "fairness: ROC AUC of the features predicting the attribute above which it warns",
              "an AUC of 0.8 is conventionally \"good\" discrimination: the features then reveal the attribute"),
    Threshold("min_group_rows", 30, "fairness: fewest test rows a group needs for its disparities to be judged",
              "a rate over fewer than 30 rows has a 95% interval wider than ±0.17 (binomial, p = 0.5), wider than "
              "the disparities judged: such groups are insufficient evidence"),
)}


_INF = float("inf")
#: the values each threshold of :data:`THRESHOLDS` may take, closed intervals (low, high, the range of the quantity
#: it bounds): outside it a threshold can never be reached, or is always crossed (checked by :func:`limits`)
THRESHOLD_RANGES = {
    **dict.fromkeys(("adequacy_warn", "adequacy_fail"), (0.0, _INF, "a skill loss L ≥ 0")),
    **dict.fromkeys(("faithfulness_pass", "faithfulness_fail"), (-_INF, 1.0, "F ≤ 1 by construction")),
    **dict.fromkeys(("agreement_pass", "agreement_fail"), (-1.0, 1.0, "a Kendall τ in [−1, 1]")),
    **dict.fromkeys(("stability_warn", "stability_fail"), (0.0, _INF, "a change D of F ≥ 0")),
    **dict.fromkeys(("rashomon_warn", "rashomon_fail"), (0.0, _INF, "a share R of the top reliance ≥ 0")),
    **dict.fromkeys(("calibration_pass", "calibration_fail"), (0.0, 1.0, "an ECE in [0, 1]")),
    **dict.fromkeys(("drift_warn", "drift_fail"), (0.0, _INF, "a PSI ≥ 0")),
    "drift_alpha": (0.0, 1.0, "a significance level, both ends excluded"),
    **dict.fromkeys(("demographic_parity", "equalized_odds"), (0.0, 1.0, "a difference of rates in [0, 1]")),
    "mean_prediction_gap": (0.0, _INF, "a gap in standard deviations ≥ 0"),
    "mae_ratio": (1.0, _INF, "a worst / best ratio ≥ 1"),
    "importance_profile_distance": (0.0, 1.0, "a total-variation distance in [0, 1]"),
    "proxy_auc": (0.0, 1.0, "a ROC AUC in [0, 1]"),
    **dict.fromkeys(("min_group_rows", "min_test_rows"), (2.0, _INF, "a row count ≥ 2")),
    "rashomon_floor": (0.0, _INF, "a share of a loss ≥ 0"),
}


def limits(thresholds=None) -> dict:
    """Every threshold's value ({name: value}): the defaults of :data:`THRESHOLDS` with ``thresholds`` (a
    mapping of names to numbers) applied. Raises :class:`InputError` on an unknown name or a value that is
    not a finite number or outside its range (:data:`THRESHOLD_RANGES`), and when a pass threshold lies on the
    wrong side of its fail threshold."""
    given = dict(thresholds or {})
    unknown = sorted(set(given) - set(THRESHOLDS))
    if unknown:
        raise InputError(f"unknown threshold(s) {unknown}; the thresholds are {sorted(THRESHOLDS)}")
    out = {name: t.default for name, t in THRESHOLDS.items()}
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(float(value)):
            raise InputError(f"threshold {name} must be a finite number; got {value!r}")
        out[name] = float(value)
    for higher, lower in (("faithfulness_pass", "faithfulness_fail"), ("agreement_pass", "agreement_fail"),
                          ("adequacy_fail", "adequacy_warn"), ("stability_fail", "stability_warn"),
                          ("rashomon_fail", "rashomon_warn"), ("calibration_fail", "calibration_pass"),
                          ("drift_fail", "drift_warn")):
        if out[higher] < out[lower]:
            raise InputError(f"threshold {higher} ({out[higher]:g}) must be at least {lower} ({out[lower]:g})")
    for name, value in given.items():
        low, high, what = THRESHOLD_RANGES[name]
        if not low <= out[name] <= high or (name == "drift_alpha" and out[name] in (low, high)):
            raise InputError(f"threshold {name} must lie in [{low:g}, {high:g}] ({what}); got {value!r}")
    return out


#: the default of every threshold by name
DEFAULTS = limits()

#: the entries of per-row PGI² dictionaries that are not explainers
RANDOM, GREEDY = "random", "greedy"


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap confidence interval [``low``, ``high``] at ``level`` over ``rows`` rows; ``method`` is
    "BCa" or "percentile" (scipy.stats.bootstrap). Bounds are NaN when fewer than two rows exist."""

    low: float
    high: float
    level: float
    method: str
    rows: int

    def __contains__(self, value) -> bool:
        """Whether ``value`` lies in the interval (bounds included; never for NaN bounds)."""
        return bool(self.low <= value <= self.high)

    def to_dict(self) -> dict:
        """JSON-ready fields (a NaN bound as None)."""
        return {"low": _finite(self.low), "high": _finite(self.high), "level": self.level, "method": self.method,
                "rows": self.rows}

    def __str__(self) -> str:
        """"95% CI [low, high]", or why there is none."""
        return self.text()

    def text(self, limits=()) -> str:
        """"95% CI [low, high]" with each bound printed on its side of every threshold of ``limits``
        (:func:`shown`), or why there is none."""
        if not np.isfinite([self.low, self.high]).all():
            return f"no CI: {self.method}"
        return f"{self.level:.0%} CI {self.bounds(limits)}"

    def bounds(self, limits=()) -> str:
        """"[low, high]", each bound printed by :func:`shown` against ``limits``."""
        return f"[{shown(self.low, limits)}, {shown(self.high, limits)}]"


def _finite(value) -> float | None:
    """``value`` as a float, None when it is missing or not finite (JSON has no NaN)."""
    return None if value is None or not np.isfinite(value) else float(value)


def shown(value: float, limits=(), spec: str = ".3g") -> str:
    """``value`` printed with ``spec`` (".3g", ".2f", ...), with more digits where ``spec`` would print it on
    a threshold of ``limits`` it differs from, or on the other side of one: every number printed beside a
    rule reads on the side of each threshold that the rule judged (0.2000559 against 0.2: "0.2001", not "0.2")."""
    value = float(value)
    if not np.isfinite(value):
        return f"{value:{spec}}"
    kind, digits = spec[-1], int(spec[1:-1])
    for more in range(digits, 18):
        text = f"{value:.{more}{kind}}"
        if all(np.sign(float(text) - t) == np.sign(value - t) for t in limits):
            return text
    return repr(value)


def _rng(random_state) -> np.random.Generator:
    return random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)


def bootstrap_ci(values, statistic=np.mean, *, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                 random_state=None) -> ConfidenceInterval:
    """Bootstrap confidence interval of ``statistic`` over rows (:func:`scipy.stats.bootstrap`).

    ``values`` is one array (rows,) or a tuple of arrays of equal length resampled *together* (a paired
    bootstrap: a resample draws row indices once and takes those rows from every array). ``statistic``
    receives as many arrays as given and an ``axis`` keyword (vectorised, like ``np.mean``). The interval
    is BCa (bias-corrected and accelerated) up to :data:`BCA_MAX_ROWS` rows, percentile above, and
    percentile where BCa is undefined (e.g. every row equal).
    """
    arrays = tuple(np.asarray(v, dtype=float).ravel() for v in (values if isinstance(values, tuple) else (values,)))
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise InputError(f"paired bootstrap arrays must have the same length; got {[len(a) for a in arrays]}")
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1); got {level!r}")
    if not all(np.isfinite(a).all() for a in arrays):
        raise InputError("bootstrap values must be finite")
    if n < 2:
        return ConfidenceInterval(np.nan, np.nan, level, "fewer than two rows", n)
    rng = _rng(random_state)
    method = "BCa" if n <= BCA_MAX_ROWS else "percentile"
    batch = max(1, 20_000_000 // (n * len(arrays)))    # about 160 MB of resampled rows at a time
    for attempt in (method, "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)        # 0/0 in a degenerate resample
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            res = stats.bootstrap(arrays, statistic, n_resamples=n_boot, confidence_level=level, method=attempt,
                                  paired=len(arrays) > 1, vectorized=True, batch=batch, random_state=rng)
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(low) and np.isfinite(high):
            return ConfidenceInterval(low, high, level, attempt, n)
        if np.ptp(res.bootstrap_distribution) == 0 and np.isfinite(res.bootstrap_distribution).all():
            value = float(res.bootstrap_distribution.flat[0])
            return ConfidenceInterval(value, value, level, "percentile", n)
    undefined = bool(np.isnan(res.bootstrap_distribution).any())
    return ConfidenceInterval(low, high, level, "undefined in some resamples" if undefined else "percentile", n)


def _normalised(method, random, best, axis=-1):
    """F of the row means along ``axis``: (mean(method) − mean(random)) / (mean(best) − mean(random)); NaN
    where no ranking beats random on average (a bootstrap resample can draw such rows: F is undefined
    there, and an interval that meets one is undefined too rather than above 1)."""
    base = np.mean(random, axis=axis)
    gap = np.mean(best, axis=axis) - base
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (np.mean(method, axis=axis) - base) / np.where(gap > 0, gap, 1.0), np.nan)


def best_found(per_row: dict) -> np.ndarray:
    """Per row, the highest PGI² among every evaluated ranking of ``per_row`` ({name: (rows,) PGI²}; the
    random rankings left out): the best ranking found, the reference of F. The greedy PG² ranking is a
    heuristic, not a bound, and an explainer may beat it on a row; the best found never is beaten, so
    F ≤ 1 by construction, in every bootstrap resample too."""
    return np.max(np.stack([np.asarray(v, dtype=float) for k, v in per_row.items() if k != RANDOM]), axis=0)


@dataclass(frozen=True)
class FaithfulnessScore:
    """Normalised faithfulness F = (PGI²(method) − PGI²(random)) / (PGI²(best found) − PGI²(random)) of the
    row means, with its paired bootstrap interval. ``gap`` is PGI²(best found) − PGI²(random) (the unit)."""

    value: float
    ci: ConfidenceInterval
    gap: float


def faithfulness_score(method, random, best, *, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                       random_state=None) -> FaithfulnessScore:
    """F of an explainer from per-row PGI² of its rankings, of random rankings and of the best ranking found
    (:func:`best_found`) on the same rows; the interval resamples rows once for all three arrays (paired),
    and each resample's F is the ratio of its resampled means. Raises :class:`InputError` when the best
    ranking found does not beat random on average (F undefined)."""
    arrays = tuple(np.asarray(a, dtype=float).ravel() for a in (method, random, best))
    gap = float(np.mean(arrays[2]) - np.mean(arrays[1]))
    if not gap > 0:
        raise InputError(f"no evaluated ranking scores above random rankings (mean PGI² gap {gap:.3g}); "
                         "the normalised faithfulness is undefined")
    ci = bootstrap_ci(arrays, _normalised, n_boot=n_boot, level=level, random_state=random_state)
    return FaithfulnessScore(float(_normalised(*arrays)), ci, gap)


#: the two verdicts: what the model is worth, and what its explanations are worth
MODEL_FITNESS, EXPLANATION_RELIABILITY = "model fitness", "explanation reliability"
#: the verdict each kind of criterion joins; a new kind of criterion (calibration, drift, ...) joins by an entry
#: here (an unknown kind raises, so no criterion is silently left out of both verdicts)
VERDICT_OF_KIND = {"predictive adequacy": MODEL_FITNESS, "calibration": MODEL_FITNESS, "drift": MODEL_FITNESS,
                   "fairness": MODEL_FITNESS, "faithfulness": EXPLANATION_RELIABILITY,
                   "agreement": EXPLANATION_RELIABILITY, "stability": EXPLANATION_RELIABILITY,
                   "Rashomon sensitivity": EXPLANATION_RELIABILITY}
#: the question each verdict answers, shown beside it
QUESTIONS = {MODEL_FITNESS: "Is the model fit for use? (predictive adequacy, calibration and drift when assessed, "
                            "fairness when protected attributes are named)",
             EXPLANATION_RELIABILITY: "Can its explanations be relied on? (faithfulness, agreement, stability across "
                                      "σ, Rashomon sensitivity)"}

#: the one source of every qualitative word the report uses for a graded quantity: kind -> status -> word
WORDS = {"predictive adequacy": {PASS: "adequate", WARN: "doubtful", FAIL: "inadequate"},
         "faithfulness": {PASS: "faithful", WARN: "partly faithful", FAIL: "unfaithful"},
         "agreement": {PASS: "strong", WARN: "moderate", FAIL: "weak"},
         "stability": {PASS: "stable", WARN: "somewhat σ-dependent", FAIL: "σ-dependent"},
         "Rashomon sensitivity": {PASS: "low", WARN: "moderate", FAIL: "high"},
         "fairness": {PASS: "no disparity found", WARN: "possible disparity", FAIL: "disparity"},
         "calibration": {PASS: "well calibrated", WARN: "roughly calibrated", FAIL: "miscalibrated"},
         "drift": {PASS: "no confirmed drift", WARN: "moderate or unconfirmed drift", FAIL: "major drift"}}


def word(kind: str, status: str) -> str:
    """The qualitative word of a criterion of ``kind`` with ``status`` (:data:`WORDS`; the status itself for
    a kind without words, "not assessed" when not assessed)."""
    return WORDS.get(kind, {}).get(status, status)


@dataclass
class Criterion:
    """One verdict line. ``status``: "pass", "warn", "fail" or "not assessed"; ``value`` the measured
    quantity with its confidence interval ``ci`` (None where no row-level resampling applies);
    ``threshold_text`` the rule, naming its thresholds; ``explanation`` what was measured, in words;
    ``implication`` what the status means for the reader ("" when it implies nothing). ``kind`` groups the
    criteria and decides which verdict they join (:data:`VERDICT_OF_KIND`); ``limits`` the thresholds the value
    is compared with, so that the value and its interval are printed on their side of each (:func:`shown`)."""

    name: str
    status: str
    value: float | None
    ci: ConfidenceInterval | None
    threshold_text: str
    explanation: str
    kind: str = ""
    implication: str = ""
    limits: tuple = ()

    @property
    def word(self) -> str:
        """The qualitative word of this criterion's status (see :func:`word`)."""
        return word(self.kind, self.status)

    def __str__(self) -> str:
        """One line: the name, the status and the first sentence of what was measured."""
        said = " ".join(self.explanation.split()).removeprefix("Not assessed: ")
        first = re.split(r"(?<=\.)\s+(?=[A-Z])", said, maxsplit=1)[0]      # "i.e. the ..." is no sentence end
        return f"{self.name} ({self.status}): {first.rstrip('.')}"

    @property
    def shown(self) -> dict:
        """{"value": the value, "ci": "[low, high]"} as the report prints them beside the rule (:func:`shown`
        against :attr:`limits`); None where there is none."""
        value, ci = self.value, self.ci
        return {"value": None if value is None or not np.isfinite(value) else shown(value, self.limits),
                "ci": None if ci is None or not np.isfinite([ci.low, ci.high]).all() else ci.bounds(self.limits)}

    def to_dict(self) -> dict:
        """JSON-ready fields (``shown``: the value and interval as printed, see :attr:`shown`)."""
        return {"name": self.name, "kind": self.kind, "status": self.status, "word": self.word,
                "value": _finite(self.value),
                "ci": None if self.ci is None else self.ci.to_dict(), "threshold": self.threshold_text,
                "explanation": self.explanation, "implication": self.implication, "shown": self.shown}


#: how the intervals of the verdict are computed
INTERVALS = (f"Intervals are {CI_LEVEL:.0%} bootstrap intervals over rows ({N_BOOT:,} resamples; BCa up to "
             f"{BCA_MAX_ROWS:,} rows, percentile above); the faithfulness and stability intervals resample the same "
             "rows for every ranking (paired).")
#: how each of the two verdicts follows from its criteria
RULE = ("Each verdict is the worst status among its assessed criteria; if one of its criteria could not be assessed "
        "it is at best \"warn\" (an incomplete assessment does not pass). The two verdicts are never combined: a "
        "model can be fit for use while its explanations are not, and the other way round.")


@dataclass
class Judgement:
    """One of the two verdicts: ``name`` (:data:`MODEL_FITNESS` or :data:`EXPLANATION_RELIABILITY`),
    ``status`` by :data:`RULE` over its ``criteria``."""

    name: str
    status: str
    criteria: list

    @classmethod
    def from_criteria(cls, name: str, criteria) -> "Judgement":
        """Combine ``criteria`` by :data:`RULE`."""
        criteria = list(criteria)
        assessed = [c.status for c in criteria if c.status != NOT_ASSESSED]
        worst = max(assessed, key=_SEVERITY.__getitem__, default=WARN)
        if len(assessed) < len(criteria) and worst == PASS:
            worst = WARN
        return cls(name, worst, criteria)

    def by_status(self, status: str) -> list:
        """The criteria with ``status``."""
        return [c for c in self.criteria if c.status == status]

    @property
    def headline(self) -> str:
        """One line: the verdict and the criteria that decided it."""
        parts = [f"{len(self.by_status(s))} {s}: {', '.join(c.name for c in self.by_status(s))}"
                 for s in (FAIL, WARN, NOT_ASSESSED) if self.by_status(s)]
        passed = len(self.by_status(PASS))
        detail = "; ".join(parts + ([f"{passed} pass"] if passed else []))
        return f"{self.name[0].upper() + self.name[1:]}: {self.status.upper()} ({detail or 'no criteria'})."

    @property
    def implications(self) -> list:
        """What the failing and warning criteria mean for the reader, worst first; when all pass, that."""
        said = [c.implication for s in (FAIL, WARN, NOT_ASSESSED) for c in self.by_status(s) if c.implication]
        if said or self.status != PASS:
            return said
        return [{MODEL_FITNESS: "Every assessed criterion of the model's fitness passes.",
                 EXPLANATION_RELIABILITY: "Every assessed criterion of the explanations passes: they may be used to "
                                          "support individual decisions, within the limitations stated below."}
                [self.name]]

    def __str__(self) -> str:
        """One line: the verdict, its status and the criterion that decided it (the worst one, see
        :class:`Criterion`'s ``str``), with the count of the other criteria that did not pass."""
        open_ = [c for s in (FAIL, WARN, NOT_ASSESSED) for c in self.by_status(s)]
        more = f" (and {len(open_) - 1} more not passing)" if len(open_) > 1 else ""
        reason = str(open_[0]) if open_ else "every criterion passes" if self.criteria else "no criteria"
        return f"{self.name}: {self.status.upper()} — {reason}{more}"

    def to_dict(self) -> dict:
        """JSON-ready: status, headline, question, implications and the names of its criteria."""
        return {"status": self.status, "headline": self.headline, "question": QUESTIONS[self.name],
                "implications": self.implications, "criteria": [c.name for c in self.criteria]}


@dataclass
class Verdict:
    """The audit's two verdicts, :attr:`model_fitness` and :attr:`explanation_reliability`, each a
    :class:`Judgement` of its own criteria (:data:`VERDICT_OF_KIND`, :data:`RULE`); ``criteria`` all of them
    in report order; ``thresholds`` the threshold values used ({name: value})."""

    model_fitness: Judgement
    explanation_reliability: Judgement
    criteria: list = field(default_factory=list)
    thresholds: dict = field(default_factory=lambda: dict(DEFAULTS))
    rule: str = RULE

    @classmethod
    def from_criteria(cls, criteria, thresholds=None) -> "Verdict":
        """Split ``criteria`` between the two verdicts by kind and combine each by :data:`RULE`. Raises
        :class:`InputError` for a criterion whose kind joins neither verdict."""
        criteria = list(criteria)
        unknown = sorted({c.kind for c in criteria} - set(VERDICT_OF_KIND))
        if unknown:
            raise InputError(f"criterion kind(s) {unknown} join neither verdict; add them to VERDICT_OF_KIND")
        fitness, reliability = (Judgement.from_criteria(name, [c for c in criteria if VERDICT_OF_KIND[c.kind] == name])
                                for name in (MODEL_FITNESS, EXPLANATION_RELIABILITY))
        return cls(fitness, reliability, criteria, limits(thresholds))

    @property
    def judgements(self) -> tuple:
        """(model fitness, explanation reliability)."""
        return self.model_fitness, self.explanation_reliability

    def criterion(self, kind: str) -> list:
        """The criteria of ``kind``."""
        return [c for c in self.criteria if c.kind == kind]

    @property
    def headline(self) -> str:
        """The two verdicts' headlines, one after the other."""
        return " ".join(j.headline for j in self.judgements)

    def __str__(self) -> str:
        """One line: the two verdicts' ``str``, model fitness first."""
        return "; ".join(map(str, self.judgements))

    def to_dict(self) -> dict:
        """JSON-ready: both verdicts, the rule, how the intervals are computed, every criterion, and every
        threshold with its value, default and rationale."""
        return {MODEL_FITNESS: self.model_fitness.to_dict(),
                EXPLANATION_RELIABILITY: self.explanation_reliability.to_dict(),
                "headline": self.headline, "rule": self.rule, "intervals": INTERVALS,
                "criteria": [c.to_dict() for c in self.criteria],
                "thresholds": {name: {"value": value, "default": THRESHOLDS[name].default,
                                      "what": THRESHOLDS[name].what, "rationale": THRESHOLDS[name].rationale}
                               for name, value in self.thresholds.items()}}


def grade(value: float, ci: ConfidenceInterval | None, pass_at: float, fail_at: float,
          lower_is_better: bool | None = None) -> str:
    """Status of a measured quantity against two thresholds, a verdict only where the data decide it.

    Higher is better (``lower_is_better`` False; by default when ``pass_at > fail_at``): "pass" when the
    interval lies at or above ``pass_at``, "fail" when it lies below ``fail_at``. Lower is better: "pass"
    when it lies at or below ``pass_at``, "fail" when it lies above ``fail_at`` (with ``pass_at ==
    fail_at``, a single limit, say which side is better). Otherwise "warn" — also when the interval could
    not be computed (NaN bounds: fewer than two rows). Where no interval applies (``ci`` None: a quantity
    that is not a mean over rows) the rule applies to ``value`` itself.
    """
    if ci is None:
        low = high = value
    elif np.isfinite([ci.low, ci.high]).all():
        low, high = ci.low, ci.high
    else:
        return WARN
    if lower_is_better is None:
        lower_is_better = pass_at < fail_at
    if not lower_is_better:
        return PASS if low >= pass_at else FAIL if high < fail_at else WARN
    return PASS if high <= pass_at else FAIL if low > fail_at else WARN


def not_assessed(name: str, kind: str, reason: str, threshold_text: str = "") -> Criterion:
    """A criterion that could not be evaluated (section skipped, failed or not applicable, too little evidence):
    says why, in its explanation and in its implication (which the report's first page shows)."""
    return Criterion(name, NOT_ASSESSED, None, None, threshold_text, f"Not assessed: {reason}.", kind,
                     f"{name}: not assessed — {reason}. The audit cannot vouch for it.")


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
        return {"metric": self.metric, "value": _finite(self.value), "ci": self.ci.to_dict(),
                "chance": _finite(self.chance), "text": self.text}


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


def scarce_evidence(y, min_rows: float, classification: bool) -> str:
    """Why the test target ``y`` is too little evidence to judge a score by ("" when it is enough): a regressor's
    score needs ``min_rows`` test rows (the threshold ``min_test_rows``), a classifier's at least two classes
    of ``min_rows`` test rows each (rarer classes still count in the score, and widen its interval)."""
    y = np.asarray(y).ravel()
    rows = f"{len(y)} test row{'s' * (len(y) != 1)}"
    if not classification:
        return "" if len(y) >= min_rows else f"only {rows}, fewer than {min_rows:g} (min_test_rows)"
    labels, counts = np.unique(y.astype(str), return_counts=True)
    if np.sum(counts >= min_rows) >= 2:
        return ""
    if len(labels) < 2:
        return (f"the test target holds one class only ({', '.join(labels)}: {rows}); a classifier is judged on at "
                f"least two classes of {min_rows:g} test rows (min_test_rows) or more")
    return (f"fewer than two classes have {min_rows:g} test rows (min_test_rows) or more (test rows per class: "
            + ", ".join(f"{label}: {count}" for label, count in zip(labels, counts)) + ")")


def _named(name: str, values: dict) -> str:
    """A threshold's value with its name, as the rules quote it: "0.5 (faithfulness_pass)"."""
    return f"{values[name]:g} ({name})"


def rule(kind: str, thresholds=None) -> str:
    """The rule of the criteria of ``kind``, naming each threshold with its value (``thresholds``: as
    :func:`limits` takes them)."""
    t = limits(thresholds)
    level = f"{CI_LEVEL:.0%}"
    rules = {
        "predictive adequacy": (f"L = (training − test) / (training − chance): pass if its {level} CI (from the test "
                                f"score's bootstrap CI) lies ≤ {_named('adequacy_warn', t)}, fail if it lies > "
                                f"{_named('adequacy_fail', t)} or the test score is at or below chance, else warn; "
                                f"not assessed with fewer than {_named('min_test_rows', t)} test rows (a classifier: "
                                "fewer than two classes of that many test rows)"),
        "faithfulness": (f"F = (PGI² − PGI² random) / (PGI² best ranking found − PGI² random), ≤ 1 by construction: "
                         f"pass if its {level} paired-bootstrap CI lies ≥ {_named('faithfulness_pass', t)}, fail if "
                         f"it lies < {_named('faithfulness_fail', t)}, else warn"),
        "agreement": (f"mean pairwise Kendall τ: pass if its {level} bootstrap CI over rows (the value itself for "
                      f"global importances) lies ≥ {_named('agreement_pass', t)}, fail if it lies < "
                      f"{_named('agreement_fail', t)}, else warn"),
        "stability": (f"D = largest change of an explainer's F between noise levels: pass if its {level} "
                      f"paired-bootstrap CI lies ≤ {_named('stability_warn', t)}, fail if it lies > "
                      f"{_named('stability_fail', t)}, else warn"),
        "Rashomon sensitivity": ("R = widest MCR range / largest model reliance: pass when the widest range is below "
                                 f"{_named('rashomon_floor', t)} × the training loss of the best constant prediction "
                                 "(a negligible change in the loss, whatever R); else pass R ≤ "
                                 f"{_named('rashomon_warn', t)}, warn R ≤ {_named('rashomon_fail', t)}, fail above"),
        "calibration": (f"ECE of the explained class's predicted probability (10 equal-width bins): pass if its "
                        f"{level} bootstrap CI over test rows lies ≤ {_named('calibration_pass', t)}, fail if it lies "
                        f"> {_named('calibration_fail', t)}, else warn; not assessed unless the class and the other "
                        f"classes each have at least {_named('min_test_rows', t)} test rows"),
        "drift": (f"per feature, PSI over the training deciles (missing values a bin of their own) and a two-sample KS "
                  f"test (a categorical feature: PSI over its categories and a χ² test of homogeneity), "
                  f"Bonferroni-corrected over the features: fail when a feature's PSI ≥ "
                  f"{_named('drift_fail', t)} and its p-value < {_named('drift_alpha', t)}; warn when a PSI ≥ "
                  f"{_named('drift_warn', t)} is so confirmed, or a PSI ≥ drift_fail is not (too few rows to tell); "
                  "else pass"),
        "fairness": (f"per protected attribute, over groups of ≥ {t['min_group_rows']:g} test rows (min_group_rows; "
                     f"smaller groups are insufficient evidence): fail when a disparity's {level} interval lies wholly "
                     f"above its limit (demographic parity {_named('demographic_parity', t)}, equalized odds "
                     f"{_named('equalized_odds', t)}, mean prediction gap {_named('mean_prediction_gap', t)} sd); "
                     "warn when a disparity's value crosses its limit without that certainty, or an "
                     "importance-profile, proxy or error-ratio limit is crossed, or a protected attribute is used by "
                     "the model; else pass"),
    }
    return rules[kind]


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


def explainer_faithfulness(method: str, per_row: dict, sigma: float, *, thresholds=None, n_boot: int = N_BOOT,
                           level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Faithfulness criterion of ``method`` from ``per_row`` = {name: (rows,) PGI² at ``sigma``} holding
    the method, ``"random"``, ``"greedy"`` and any other evaluated rankings: F against the best ranking found
    among them row by row (:func:`best_found`, :func:`faithfulness_score`), graded by :func:`grade` with the
    thresholds ``faithfulness_pass`` / ``faithfulness_fail``."""
    name, kind, t = f"Faithfulness of {method}", "faithfulness", limits(thresholds)
    text = rule(kind, t)
    missing = [k for k in (method, RANDOM, GREEDY) if k not in per_row]
    if missing:
        return not_assessed(name, kind, f"no per-row PGI² for {', '.join(missing)} at σ = {sigma:g}", text)
    best = best_found(per_row)
    try:
        score = faithfulness_score(per_row[method], per_row[RANDOM], best, n_boot=n_boot, level=level,
                                   random_state=random_state)
    except InputError as exc:
        return not_assessed(name, kind, str(exc), text)
    status = grade(score.value, score.ci, t["faithfulness_pass"], t["faithfulness_fail"])
    greedy_rows = float(np.mean(np.asarray(per_row[GREEDY], dtype=float) >= best))
    implication = {FAIL: f"Explanations by {method} should not be used to justify individual decisions: its "
                         "rankings are closer to random than to the best ranking found.",
                   WARN: f"Explanations by {method} should be used with caution for individual decisions: "
                         "their faithfulness is not established."}.get(status, "")
    bounds = (t["faithfulness_pass"], t["faithfulness_fail"])
    return Criterion(name, status, score.value, score.ci, text,
                     f"At σ = {sigma:g} over {score.ci.rows} rows, {method}'s rankings recover "
                     f"F = {shown(score.value, bounds, '.2f')} ({score.ci.text(bounds)}) of the PGI² gain over random "
                     f"rankings of the best ranking found per row among the {len(per_row) - 1} evaluated rankings "
                     f"(the greedy PG² reference is the best on {greedy_rows:.0%} of the rows).", kind, implication,
                     bounds)


def per_row_tau(scores: dict) -> tuple[np.ndarray, dict]:
    """Kendall τ-b (:func:`~.agreement.row_taus`, as :func:`scipy.stats.kendalltau`) between every pair of
    methods' scores of the same row (``scores``: {method: (rows, d)}, higher = more important). Returns, per row,
    the mean τ over the pairs defined on it (NaN where none is: a method scoring every feature alike has no
    order), and the mean τ over rows of each pair ({"A vs B": τ})."""
    from .agreement import row_taus

    methods = list(scores)
    pairs = [(a, b) for i, a in enumerate(methods) for b in methods[i + 1:]]
    taus = np.full((len(pairs), len(next(iter(scores.values())))), np.nan)
    for p, (a, b) in enumerate(pairs):
        taus[p] = row_taus(scores[a], scores[b])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # all-NaN rows / pairs
        return np.nanmean(taus, axis=0), {f"{a} vs {b}": float(np.nanmean(t)) for (a, b), t in zip(pairs, taus)}


def explainer_agreement(scores: dict | None = None, global_tau=None, *, thresholds=None, n_boot: int = N_BOOT,
                        level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Agreement criterion: the mean pairwise Kendall τ of the explainers' feature orderings, graded by
    :func:`grade` with the thresholds ``agreement_pass`` / ``agreement_fail``.

    With per-row ``scores`` ({method: (rows, d)}), τ is computed row by row (:func:`per_row_tau`) and its
    interval is a bootstrap over the rows; otherwise ``global_tau`` (a square pandas DataFrame of τ between
    the methods' global importances, NaN where undefined) gives the value, without an interval.
    """
    name, kind, t = "Agreement between explainers", "agreement", limits(thresholds)
    text_rule = rule(kind, t)
    if scores is not None and len(scores) >= 2:
        methods, n_features = list(scores), np.shape(next(iter(scores.values())))[1]
        per_row, pairs = per_row_tau(scores)
        per_row = per_row[np.isfinite(per_row)]
        tau = float(np.mean(per_row)) if len(per_row) else np.nan
        ci = bootstrap_ci(per_row, n_boot=n_boot, level=level, random_state=random_state) if len(per_row) else None
        over = f"per row, averaged over {len(per_row)} rows"
    elif global_tau is not None and len(global_tau) >= 2:
        methods, n_features, ci = list(global_tau.index), None, None
        values = global_tau.to_numpy(dtype=float)
        upper = np.triu_indices(len(methods), k=1)
        pairs = {f"{methods[i]} vs {methods[j]}": values[i, j] for i, j in zip(*upper)}
        finite = [v for v in pairs.values() if np.isfinite(v)]
        tau = float(np.mean(finite)) if finite else np.nan
        over = "of the global importances"
    else:
        return not_assessed(name, kind, "fewer than two explainers produced importances", text_rule)
    if not np.isfinite(tau):
        return not_assessed(name, kind, "no pair of explainers orders the features (constant importances)",
                            text_rule)
    finite_pairs = {k: v for k, v in pairs.items() if np.isfinite(v)}
    weakest = min(finite_pairs, key=lambda pair: finite_pairs[pair])
    features = "" if n_features is None else f" of {n_features} features"
    pair_count = f"{len(pairs)} pair{'s' * (len(pairs) > 1)}"
    bounds = (t["agreement_pass"], t["agreement_fail"])
    text = (f"Mean Kendall τ over the {pair_count} of {len(methods)} explainers' orderings{features}, {over}: "
            f"{shown(tau, bounds, '.2f')}" + ("" if ci is None else f" ({ci.text(bounds)})")
            + f". Least agreeing pair: {weakest} (τ = {finite_pairs[weakest]:.2f}).")
    status = grade(tau, ci, t["agreement_pass"], t["agreement_fail"])
    implication = {FAIL: "The explainers tell conflicting stories about the same model: no single method's ranking "
                         "should be presented as the model's reasoning.",
                   WARN: "The explainers agree only in part: compare methods before presenting one's ranking as the "
                         "model's reasoning."}.get(status, "")
    return Criterion(name, status, tau, ci, text_rule, text, kind, implication, bounds)


def sigma_stability(pgi2: dict, *, thresholds=None, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                    random_state=None) -> Criterion:
    """Stability criterion from ``pgi2`` = {σ: {name: (rows,) PGI²}} (the same rows at every σ, each σ with
    ``"random"`` and ``"greedy"``): D = max over explainers of (max_σ F − min_σ F), F against the best ranking
    found at each σ (:func:`best_found`), graded by the thresholds ``stability_warn`` / ``stability_fail``;
    the interval is a paired bootstrap of D (rows resampled once for every array); the explanation also
    says whether the explainers' order by F changes between σ."""
    name, kind, t = "Stability across σ", "stability", limits(thresholds)
    text_rule = rule(kind, t)
    best = {s: best_found(v) for s, v in pgi2.items() if RANDOM in v and GREEDY in v}
    usable = {s: v for s, v in pgi2.items() if s in best and np.mean(best[s]) - np.mean(v[RANDOM]) > 0}
    sigmas = sorted(usable)
    methods = [m for m in (usable[sigmas[0]] if sigmas else ()) if m not in (RANDOM, GREEDY)
               and all(m in usable[s] for s in sigmas)]
    if len(sigmas) < 2 or not methods:
        return not_assessed(name, kind, "fewer than two noise levels σ with an explainer, random and greedy PGI² "
                            "(and a ranking above random)", text_rule)
    arrays = tuple(np.asarray(a, dtype=float) for s in sigmas for a in
                   [*(usable[s][m] for m in methods), usable[s][RANDOM], best[s]])
    width = len(methods) + 2

    def spread(*values, axis=-1):
        """D of the row means: values are the arrays above, σ-major; F per (σ, method), range over σ."""
        means = np.mean(np.stack(values), axis=axis).reshape(len(sigmas), width, -1)
        floor, gap = means[:, -2], (means[:, -1] - means[:, -2])[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):        # F undefined where no ranking beats random
            scores = np.where(gap > 0, (means[:, :-2] - floor[:, None]) / np.where(gap > 0, gap, 1.0), np.nan)
        return np.max(np.max(scores, axis=0) - np.min(scores, axis=0), axis=0).reshape(np.shape(values[0])[:-1])

    value = float(spread(*arrays))
    ci = bootstrap_ci(arrays, spread, n_boot=n_boot, level=level, random_state=random_state)
    scores = {s: {m: float(_normalised(usable[s][m], usable[s][RANDOM], best[s])) for m in methods} for s in sigmas}
    orders = {s: tuple(sorted(methods, key=lambda m: -scores[s][m])) for s in sigmas}
    moved = max(methods, key=lambda m: max(scores[s][m] for s in sigmas) - min(scores[s][m] for s in sigmas))
    order_text = ("The explainers' order by F is the same at every σ." if len(set(orders.values())) == 1 else
                  "The explainers' order by F changes with σ: " + "; ".join(
                      f"σ = {s:g}: {' > '.join(orders[s])}" for s in sigmas) + ".")
    bounds = (t["stability_warn"], t["stability_fail"])
    text = (f"F per σ ({', '.join(f'{s:g}' for s in sigmas)}) of {len(methods)} explainers; largest change "
            f"D = {shown(value, bounds, '.2f')} ({ci.text(bounds)}), for {moved} ("
            + ", ".join(f"{scores[s][moved]:.2f}" for s in sigmas) + "). " + order_text)
    status = grade(value, ci, t["stability_warn"], t["stability_fail"])
    implication = {FAIL: f"The faithfulness of {moved} depends on the noise scale σ chosen: its faithfulness grade "
                         "holds only at the σ it was judged at.",
                   WARN: f"The faithfulness of {moved} varies with the noise scale σ."}.get(status, "")
    return Criterion(name, status, value, ci, text_rule, text, kind, implication, bounds)


def rashomon_sensitivity(features, reliance, lower, upper, unit: str = "", thresholds=None,
                         baseline: tuple[float, str] | None = None) -> Criterion:
    """Rashomon criterion from each feature's model reliance MR_j(f) and its MCR range [MCR−_j, MCR+_j]:
    R = max_j (MCR+_j − MCR−_j) / max_j MR_j(f), graded by the thresholds ``rashomon_warn`` /
    ``rashomon_fail``. No interval: the MCR bounds are themselves estimates over the Rashomon set, not row
    means. ``unit`` says in words what a reliance measures (e.g. "increase in log-loss when the feature is
    scrambled"). ``baseline``: (the training loss of the best constant prediction, in the reliances' unit, what
    it is in words); when the widest range is below ``rashomon_floor`` times it, the ranges are negligible
    changes in the loss and the criterion passes whatever R, a ratio of negligible quantities."""
    name, kind, t = "Rashomon sensitivity", "Rashomon sensitivity", limits(thresholds)
    text_rule = rule(kind, t)
    features = [str(f) for f in features]
    reliance, lower, upper = (np.asarray(a, dtype=float) for a in (reliance, lower, upper))
    top = float(np.max(reliance)) if len(reliance) else np.nan
    if not len(features) or not np.isfinite(top) or top <= 0:
        return not_assessed(name, kind, "no feature has a positive model reliance to compare the MCR ranges with",
                            text_rule)
    widths = upper - lower
    widest = int(np.nanargmax(widths))
    value = float(widths[widest] / top)
    bounds = (t["rashomon_warn"], t["rashomon_fail"])
    text = (f"Widest range: {features[widest]}, reliance between {lower[widest]:.4g} and {upper[widest]:.4g} among "
            f"equally accurate models (the audited model: {reliance[widest]:.4g}); the largest reliance of the model "
            f"is {top:.4g} ({features[int(np.argmax(reliance))]}), so R = {shown(value, bounds, '.2f')}."
            + (f" Reliance: {unit}." if unit else ""))
    negligible = False
    if baseline is not None:
        floor = t["rashomon_floor"] * baseline[0]
        negligible = bool(widths[widest] < floor)
        text += (f" The widest range, {shown(widths[widest], (floor,), '.4g')}, is "
                 + ("below" if negligible else "at or above") + f" the floor {shown(floor, (widths[widest],), '.4g')} "
                 f"({t['rashomon_floor']:g} (rashomon_floor) × {baseline[0]:.4g}, the training {baseline[1]} of the "
                 "best constant prediction)" + (": equally accurate models differ only by negligible changes in the "
                                                "loss, so R is not judged." if negligible else "."))
    status = PASS if negligible else grade(value, None, *bounds)
    implication = {FAIL: f"How much the model relies on {features[widest]} is partly an arbitrary choice among "
                         "equally accurate models: its importance should not be read as a property of the data.",
                   WARN: f"Equally accurate models could rely on {features[widest]} noticeably more or less."
                   }.get(status, "")
    return Criterion(name, status, value, None, text_rule, text, kind, implication, () if negligible else bounds)


@dataclass(frozen=True)
class Disparity:
    """A disparity between the groups of a protected ``attribute``: ``metric``, ``value`` with its interval
    [``low``, ``high``] (NaN when there is none), and the ``limit`` above which it is a finding."""

    attribute: str
    metric: str
    value: float
    low: float
    high: float
    limit: float

    @property
    def status(self) -> str:
        """"fail" when the whole interval lies above the limit (the data show the disparity), "warn" when the
        value does but the interval reaches the limit (or there is no interval), "pass" when the value is
        at or below the limit; "not assessed" for a value that is not finite."""
        if not np.isfinite(self.value):
            return NOT_ASSESSED
        if self.value <= self.limit:
            return PASS
        return FAIL if np.isfinite(self.low) and self.low > self.limit else WARN

    def __str__(self) -> str:
        """"attribute: metric value [low, high] vs limit", each number printed on its side of the limit."""
        limit = (self.limit,)
        interval = (f" (95% interval [{shown(self.low, limit)}, {shown(self.high, limit)}])"
                    if np.isfinite([self.low, self.high]).all() else "")
        return f"{self.attribute}: {self.metric} {shown(self.value, limit)}{interval}, limit {self.limit:g}"


def fairness(attributes, disparities=(), crossed: str = "", insufficient=(), not_assessed_reason: str = "",
             thresholds=None) -> Criterion:
    """Fairness criterion of the protected ``attributes``: "fail" when a :class:`Disparity` of ``disparities``
    fails (its whole interval above its limit), "warn" when one warns, when the fairness section reports
    other findings (``crossed``: importance profiles, proxies, error ratios, a protected attribute used as a
    model input) or when an attribute had too few rows per group to be judged (``insufficient``: one text
    per such attribute), else "pass"; "not assessed" with ``not_assessed_reason``."""
    name, kind = "Fairness", "fairness"
    text_rule = rule(kind, thresholds)
    names = f"Protected attribute{'s' * (len(attributes) > 1)} {', '.join(map(str, attributes))}"
    if not_assessed_reason:
        return not_assessed(name, kind, not_assessed_reason, text_rule)
    by_status = {s: [d for d in disparities if d.status == s] for s in (FAIL, WARN)}
    status = FAIL if by_status[FAIL] else WARN if by_status[WARN] or crossed or insufficient else PASS
    within = [d for d in disparities if d.status == PASS]
    parts = [f"{s} — " + "; ".join(map(str, by_status[s])) for s in (FAIL, WARN) if by_status[s]]
    parts += [f"within limits — {'; '.join(map(str, within))}"] * bool(within)
    parts += [f"other findings: {crossed}"] * bool(crossed)
    parts += [f"insufficient evidence: {'; '.join(insufficient)}"] * bool(insufficient)
    text = f"{names}: " + (". ".join(parts) if parts else "no fairness threshold crossed") + "."
    implication = ""
    if by_status[FAIL]:
        implication = ("The model's predictions differ between groups of "
                       + ", ".join(dict.fromkeys(d.attribute for d in by_status[FAIL]))
                       + " beyond the limit with 95% confidence: it should not be used for decisions about these "
                         "groups without a documented justification.")
    elif status == WARN:
        reasons = ([f"possible disparity: {d}" for d in by_status[WARN]] + [crossed] * bool(crossed)
                   + [f"too little evidence: {text}" for text in insufficient])
        implication = f"Review the fairness section before use — {'; '.join(reasons)}."
    return Criterion(name, status, None, None, text_rule, text, kind, implication)
