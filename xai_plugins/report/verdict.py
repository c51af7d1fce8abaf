"""The two verdicts of an audit (model fitness, explanation reliability) aggregated from the criteria the
sections give (:class:`Verdict`, :class:`Judgement`, :data:`RULE`), and the statistics every criterion uses:
bootstrap confidence intervals over rows (:func:`bootstrap_ci`) and grading against two thresholds
(:func:`grade`). Each criterion (its thresholds, kind, rule, words and wording) lives in the section that owns it
(``report/sections/``), declared through :mod:`.criteria`. Pure computation on numbers and per-row arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..errors import InputError
from .criteria import (  # noqa: F401
    EXPLANATION_RELIABILITY,
    FAIL,
    MODEL_FITNESS,
    NOT_ASSESSED,
    PASS,
    PROMOTION,
    QUESTIONS,
    SEVERITY,
    THRESHOLD_RANGES,
    THRESHOLDS,
    VERDICT_OF_KIND,
    WARN,
    WORDS,
    Criterion,
    finite,
    limits,
    not_assessed,
    rule,
    scarce_evidence,
    severity,
    shown,
    word,
)

__all__: list = []

#: Bootstrap resamples and confidence level of every interval in the verdict. 2,000 resamples put the
#: Monte Carlo error of a 95 % percentile bound well below the interval's own width.
N_BOOT = 2000
CI_LEVEL = 0.95
#: Above this many rows the bias-corrected (BCa) interval's jackknife (one statistic per left-out row, O(n²))
#: costs more than the bootstrap itself, and the percentile interval is as accurate: it is used instead.
BCA_MAX_ROWS = 1000


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
        return {"low": finite(self.low), "high": finite(self.high), "level": self.level, "method": self.method,
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
        worst = max(assessed, key=SEVERITY.__getitem__, default=WARN)
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
                                          "support individual decisions, within the limitations stated below.",
                 PROMOTION: "Every assessed criterion of the comparison passes: the challenger is not worse than the "
                            "audited model on what was measured."}[self.name]]

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
    thresholds: dict = field(default_factory=limits)
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
