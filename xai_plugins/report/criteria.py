"""What a section declares about its criteria: the settable :class:`Threshold` objects its criteria compare with
and the :class:`Kind` of each criterion (the verdict it joins, the words of its statuses, its rule in words).
Sections declare them when they register (``register(..., thresholds=..., kinds=...)``); :func:`limits` validates
the values a user sets (``thresholds=`` / ``xai-audit --threshold NAME=VALUE``).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:
    from .verdict import ConfidenceInterval

__all__: list = []

PASS, WARN, FAIL, NOT_ASSESSED = "pass", "warn", "fail", "not assessed"
SEVERITY = {PASS: 0, WARN: 1, FAIL: 2}


def severity(status: str) -> int:
    """0 for "pass", 1 for "warn", 2 for "fail": the order CI gates and metrics use (``xai-audit --fail-on``,
    the MLflow evaluator's status metrics). Raises :class:`InputError` for any other status."""
    if status not in SEVERITY:
        raise InputError(f"a verdict status is one of {list(SEVERITY)}; got {status!r}")
    return SEVERITY[status]


def finite(value) -> float | None:
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


#: the two verdicts: what the model is worth, and what its explanations are worth
MODEL_FITNESS, EXPLANATION_RELIABILITY = "model fitness", "explanation reliability"
#: the verdict of a champion/challenger comparison: may the challenger replace the audited model?
PROMOTION = "promotion"
#: the verdict each kind of criterion joins (an unknown kind raises, so no criterion is silently left out of both
#: verdicts): the built-in kinds, in the order of the report's thresholds table; a section's new :class:`Kind`
#: joins at the end when it registers
VERDICT_OF_KIND = {"predictive adequacy": MODEL_FITNESS, "faithfulness": EXPLANATION_RELIABILITY,
                   "agreement": EXPLANATION_RELIABILITY, "stability": EXPLANATION_RELIABILITY,
                   "Rashomon sensitivity": EXPLANATION_RELIABILITY, "calibration": MODEL_FITNESS,
                   "drift": MODEL_FITNESS, "fairness": MODEL_FITNESS}
_BUILTIN_KINDS = frozenset(VERDICT_OF_KIND)
#: the question each verdict answers, shown beside it
QUESTIONS = {MODEL_FITNESS: "Is the model fit for use? (predictive adequacy, calibration and drift when assessed, "
                            "fairness when protected attributes are named)",
             EXPLANATION_RELIABILITY: "Can its explanations be relied on? (faithfulness, agreement, stability across "
                                      "σ, Rashomon sensitivity)",
             PROMOTION: "May the challenger replace the audited model? (performance not worse beyond a margin, "
                        "fairness not worse, explanations not less faithful, no unexplained shift of reliance onto a "
                        "protected attribute or its proxies)"}

#: the one source of every qualitative word the report uses for a graded quantity: kind -> status -> word
#: the one source of every qualitative word the report uses for a graded quantity: kind -> status -> word (each
#: section's :class:`Kind` declares its own)
WORDS: dict = {}


def word(kind: str, status: str) -> str:
    """The qualitative word of a criterion of ``kind`` with ``status`` (:data:`WORDS`; the status itself for
    a kind without words, "not assessed" when not assessed)."""
    return WORDS.get(kind, {}).get(status, status)



@dataclass(frozen=True)
class Threshold:
    """A settable threshold of the verdict, declared by the section whose criterion uses it: ``name`` is its key in
    ``audit(..., thresholds={name: value})`` and ``xai-audit --threshold NAME=VALUE``; ``default`` its value unless
    set; ``what`` the quantity and side it bounds; ``rationale`` where the default comes from (shown in the report
    beside the verdict); ``kind`` the criterion it belongs to (orders the thresholds table); ``low``, ``high`` and
    ``range_text`` the values it may take (outside them it can never be reached, or is always crossed), ``open``
    when both ends are excluded; ``at_least`` the threshold it may not be below (a fail limit above its pass
    limit)."""

    name: str
    default: float
    what: str
    rationale: str
    kind: str = ""
    low: float = -float("inf")
    high: float = float("inf")
    range_text: str = ""
    open: bool = False
    at_least: str = ""


#: every threshold the sections declare, by name, in the order of their kinds in :data:`VERDICT_OF_KIND`
THRESHOLDS: dict = {}
#: the values each threshold may take: name -> (low, high, what the range is)
THRESHOLD_RANGES: dict = {}


@dataclass(frozen=True)
class Kind:
    """A kind of criterion, declared by the section that owns it: the ``verdict`` it joins (:data:`MODEL_FITNESS`
    or :data:`EXPLANATION_RELIABILITY`), the qualitative ``words`` of its statuses and its ``rule`` (threshold
    values -> the rule in words, naming each threshold)."""

    name: str
    verdict: str
    words: dict
    rule: Callable


#: every kind of criterion the sections declare, by name
KINDS: dict = {}


def _kind_rank(threshold: Threshold) -> int:
    kinds = list(VERDICT_OF_KIND)
    return kinds.index(threshold.kind) if threshold.kind in kinds else len(kinds)


def declare(item) -> None:
    """Add a section's :class:`Threshold` (to :data:`THRESHOLDS`, ordered by kind) or :class:`Kind` (to
    :data:`KINDS`; a new kind also joins :data:`VERDICT_OF_KIND`). Raises ``ValueError`` for a name declared twice
    differently."""
    table = KINDS if isinstance(item, Kind) else THRESHOLDS
    if table.get(item.name, item) != item:
        raise ValueError(f"{type(item).__name__.lower()} {item.name!r} is declared twice")
    table[item.name] = item
    if isinstance(item, Kind):
        VERDICT_OF_KIND.setdefault(item.name, item.verdict)
        WORDS[item.name] = item.words
        return
    ordered = sorted(THRESHOLDS.values(), key=_kind_rank)
    THRESHOLDS.clear()
    THRESHOLDS.update((t.name, t) for t in ordered)
    THRESHOLD_RANGES.clear()
    THRESHOLD_RANGES.update((t.name, (t.low, t.high, t.range_text)) for t in ordered)


def withdraw(name: str) -> None:
    """Remove the threshold or kind ``name`` (a made-up section's, in a test)."""
    for table in (THRESHOLDS, THRESHOLD_RANGES, KINDS):
        table.pop(name, None)
    if name not in _BUILTIN_KINDS:
        VERDICT_OF_KIND.pop(name, None)
        WORDS.pop(name, None)


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
    for higher, t in THRESHOLDS.items():
        lower = t.at_least
        if lower and out[higher] < out[lower]:
            raise InputError(f"threshold {higher} ({out[higher]:g}) must be at least {lower} ({out[lower]:g})")
    for name, value in given.items():
        t = THRESHOLDS[name]
        if not t.low <= out[name] <= t.high or (t.open and out[name] in (t.low, t.high)):
            raise InputError(f"threshold {name} must lie in [{t.low:g}, {t.high:g}] ({t.range_text}); got {value!r}")
    return out


def named(name: str, values: dict) -> str:
    """A threshold's value with its name, as the rules quote it: "0.5 (faithfulness_pass)"."""
    return f"{values[name]:g} ({name})"


def rule(kind: str, thresholds=None) -> str:
    """The rule of the criteria of ``kind`` (its :class:`Kind`'s), naming each threshold with its value
    (``thresholds``: as :func:`limits` takes them)."""
    return KINDS[kind].rule(limits(thresholds))


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
                "value": finite(self.value),
                "ci": None if self.ci is None else self.ci.to_dict(), "threshold": self.threshold_text,
                "explanation": self.explanation, "implication": self.implication, "shown": self.shown}


def not_assessed(name: str, kind: str, reason: str, threshold_text: str = "") -> Criterion:
    """A criterion that could not be evaluated (section skipped, failed or not applicable, too little evidence):
    says why, in its explanation and in its implication (which the report's first page shows)."""
    return Criterion(name, NOT_ASSESSED, None, None, threshold_text, f"Not assessed: {reason}.", kind,
                     f"{name}: not assessed — {reason}. The audit cannot vouch for it.")


@dataclass
class Evidence:
    """The typed result of a section that gives the verdict one criterion (calibration, drift): its ``criterion``,
    or None where the criterion does not apply to this model."""

    criterion: Criterion | None
