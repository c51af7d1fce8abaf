"""Per-criterion verdicts of an audit (pass / warn / fail, with the threshold in the text) and the
overall verdict, with bootstrap confidence intervals over the explained rows.

Pure computation on numbers and per-row arrays: nothing here imports the report. The criteria:

- **predictive adequacy**: the share of the training skill above chance that is lost on the test data;
- **faithfulness** of each explainer, as the normalised score
  F = (PGI²(method) − PGI²(random)) / (PGI²(greedy) − PGI²(random)), 0 for a random ranking and 1 for the
  greedy PG² ranking, which optimises PG² and is therefore the ceiling, never a contestant; its confidence
  interval is a *paired* bootstrap over rows (the three per-row arrays are resampled together);
- **agreement** between explainers: mean pairwise Kendall τ of their feature orderings;
- **stability across σ**: the largest change of any explainer's F between noise levels;
- **Rashomon sensitivity**: the widest MCR range relative to the model's largest reliance;
- **fairness**, when protected attributes are named: whether a disparity, importance-profile or proxy
  threshold of the fairness section is crossed.

A criterion without data is "not assessed" and says why; it never passes. The overall verdict is the
worst assessed status, and an audit with a criterion not assessed is at best "warn".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..errors import InputError

PASS, WARN, FAIL, NOT_ASSESSED = "pass", "warn", "fail", "not assessed"
_SEVERITY = {PASS: 0, WARN: 1, FAIL: 2}

#: Bootstrap resamples and confidence level of every interval in the verdict. 2,000 resamples put the
#: Monte Carlo error of a 95 % percentile bound well below the interval's own width.
N_BOOT = 2000
CI_LEVEL = 0.95
#: Above this many rows the bias-corrected (BCa) interval's jackknife (one statistic per left-out row, O(n²))
#: costs more than the bootstrap itself, and the percentile interval is as accurate: it is used instead.
BCA_MAX_ROWS = 1000

#: Predictive adequacy: L = (train − test) / (train − chance), the share of the model's skill above
#: chance on its training data that does not carry over to the test data. A tuned ensemble usually
#: keeps at least three quarters of it (L ≤ 0.25); beyond half (the diabetes demo: R² 0.71 → 0.31,
#: L = 0.56) the training fit is mostly memorised and the explanations describe that fit, not the
#: population. A test score at or below chance fails whatever the gap. Judged on L's interval (see
#: :func:`grade`): pass when it lies at or below 0.25, fail when it lies above 0.5.
ADEQUACY_WARN_LOSS = 0.25
ADEQUACY_FAIL_LOSS = 0.5

#: Faithfulness: F ≥ 0.5 means the ranking recovers at least half of what the greedy ceiling gains over a
#: random ranking; F < 0.25 means it is closer to random than to the ceiling. Judged on the confidence
#: interval (see :func:`grade`): pass when it lies at or above 0.5, fail when it lies below 0.25.
FAITHFULNESS_PASS = 0.5
FAITHFULNESS_FAIL = 0.25

#: Agreement: Kendall τ ≥ 0.6 is the conventional "strong" rank association and τ < 0.3 "weak"; explainers
#: that agree only weakly give the reviewer conflicting stories about the same model.
AGREEMENT_PASS = 0.6
AGREEMENT_FAIL = 0.3

#: Stability across σ: the largest change of an explainer's F between noise levels. A change of 0.2 is
#: less than the gap between the faithfulness grades; a change of 0.5 moves a method from the ceiling to
#: half-way to random, so its faithfulness depends on the noise scale chosen, not on the method. Judged on
#: D's interval: pass when it lies at or below 0.2, fail when it lies above 0.5.
STABILITY_WARN = 0.2
STABILITY_FAIL = 0.5

#: Rashomon sensitivity: the widest MCR range (MCR+ − MCR−) in units of the model's largest model
#: reliance. Up to 0.2 equally accurate models agree on how much every feature matters; above 0.5
#: some feature's reliance could move by half of the top feature's, so the importance ranking of
#: this model is partly an arbitrary choice among equally good models.
RASHOMON_WARN = 0.2
RASHOMON_FAIL = 0.5

#: the entries of per-row PGI² dictionaries that are not explainers
RANDOM, CEILING = "random", "greedy"


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
        if not np.isfinite([self.low, self.high]).all():
            return f"no CI: {self.method}"
        return f"{self.level:.0%} CI [{self.low:.3g}, {self.high:.3g}]"


def _finite(value) -> float | None:
    """``value`` as a float, None when it is missing or not finite (JSON has no NaN)."""
    return None if value is None or not np.isfinite(value) else float(value)


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
    return ConfidenceInterval(low, high, level, "percentile", n)


def _normalised(method, random, greedy, axis=-1):
    """F of the row means along ``axis``: (mean(method) − mean(random)) / (mean(greedy) − mean(random))."""
    base = np.mean(random, axis=axis)
    return (np.mean(method, axis=axis) - base) / (np.mean(greedy, axis=axis) - base)


@dataclass(frozen=True)
class FaithfulnessScore:
    """Normalised faithfulness F = (PGI²(method) − PGI²(random)) / (PGI²(greedy) − PGI²(random)) of the
    row means, with its paired bootstrap interval. ``gap`` is PGI²(greedy) − PGI²(random) (the unit)."""

    value: float
    ci: ConfidenceInterval
    gap: float


def faithfulness_score(method, random, greedy, *, n_boot: int = N_BOOT, level: float = CI_LEVEL,
                       random_state=None) -> FaithfulnessScore:
    """F of an explainer from per-row PGI² of its rankings, of random rankings and of the greedy PG²
    ranking on the same rows; the interval resamples rows once for all three arrays (paired), and each
    resample's F is the ratio of its resampled means. Raises :class:`InputError` when the greedy
    ceiling does not beat random on average (F undefined)."""
    arrays = tuple(np.asarray(a, dtype=float).ravel() for a in (method, random, greedy))
    gap = float(np.mean(arrays[2]) - np.mean(arrays[1]))
    if not gap > 0:
        raise InputError(f"the greedy PG² ranking does not score above random rankings (mean PGI² gap {gap:.3g}); "
                         "the normalised faithfulness is undefined")
    ci = bootstrap_ci(arrays, _normalised, n_boot=n_boot, level=level, random_state=random_state)
    return FaithfulnessScore(float(_normalised(*arrays)), ci, gap)


@dataclass
class Criterion:
    """One verdict line. ``status``: "pass", "warn", "fail" or "not assessed"; ``value`` the measured
    quantity with its confidence interval ``ci`` (None where no row-level resampling applies);
    ``threshold_text`` the rule; ``explanation`` what was measured, in words. ``kind`` groups the
    criteria ("predictive adequacy", "faithfulness", "agreement", "stability", "Rashomon sensitivity",
    "fairness")."""

    name: str
    status: str
    value: float | None
    ci: ConfidenceInterval | None
    threshold_text: str
    explanation: str
    kind: str = ""

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {"name": self.name, "kind": self.kind, "status": self.status,
                "value": _finite(self.value),
                "ci": None if self.ci is None else self.ci.to_dict(), "threshold": self.threshold_text,
                "explanation": self.explanation}


#: how the intervals of the verdict are computed
INTERVALS = (f"Intervals are {CI_LEVEL:.0%} bootstrap intervals over rows ({N_BOOT:,} resamples; BCa up to "
             f"{BCA_MAX_ROWS:,} rows, percentile above); the faithfulness and stability intervals resample the same "
             "rows for every ranking (paired).")
#: how the overall verdict follows from the criteria
OVERALL_RULE = ("Overall: the worst status among the assessed criteria; if a criterion could not be assessed the "
                "overall verdict is at best \"warn\" (an incomplete audit does not pass).")


@dataclass
class Verdict:
    """The audit's verdict: ``overall`` in {"pass", "warn", "fail"}, the ``criteria`` it follows from
    (see :data:`OVERALL_RULE`), and ``headline``, the one-line summary shown on page 1."""

    overall: str
    criteria: list = field(default_factory=list)
    rule: str = OVERALL_RULE

    @classmethod
    def from_criteria(cls, criteria) -> "Verdict":
        """Combine criteria by :data:`OVERALL_RULE`."""
        criteria = list(criteria)
        assessed = [c.status for c in criteria if c.status != NOT_ASSESSED]
        worst = max(assessed, key=_SEVERITY.__getitem__, default=WARN)
        if len(assessed) < len(criteria) and worst == PASS:
            worst = WARN
        return cls(worst, criteria)

    def by_status(self, status: str) -> list:
        """The criteria with ``status``."""
        return [c for c in self.criteria if c.status == status]

    @property
    def headline(self) -> str:
        """One line: the overall verdict and the criteria that decided it."""
        parts = [f"{len(self.by_status(s))} {s}: {', '.join(c.name for c in self.by_status(s))}"
                 for s in (FAIL, WARN, NOT_ASSESSED) if self.by_status(s)]
        passed = len(self.by_status(PASS))
        detail = "; ".join(parts + ([f"{passed} pass"] if passed else []))
        return f"Overall verdict: {self.overall.upper()} ({detail or 'no criteria'})."

    def to_dict(self) -> dict:
        """JSON-ready: overall, headline, rule, how the intervals are computed and every criterion."""
        return {"overall": self.overall, "headline": self.headline, "rule": self.rule, "intervals": INTERVALS,
                "criteria": [c.to_dict() for c in self.criteria]}


def grade(value: float, ci: ConfidenceInterval | None, pass_at: float, fail_at: float) -> str:
    """Status of a measured quantity against two thresholds, a verdict only where the data decide it.

    Higher is better when ``pass_at > fail_at``: "pass" when the interval lies at or above ``pass_at``,
    "fail" when it lies below ``fail_at``. Lower is better when ``pass_at < fail_at``: "pass" when it lies
    at or below ``pass_at``, "fail" when it lies above ``fail_at``. Otherwise "warn" — also when the
    interval could not be computed (NaN bounds: fewer than two rows). Where no interval applies
    (``ci`` None: a quantity that is not a mean over rows) the rule applies to ``value`` itself.
    """
    if ci is None:
        low = high = value
    elif np.isfinite([ci.low, ci.high]).all():
        low, high = ci.low, ci.high
    else:
        return WARN
    if pass_at >= fail_at:
        return PASS if low >= pass_at else FAIL if high < fail_at else WARN
    return PASS if high <= pass_at else FAIL if low > fail_at else WARN


def not_assessed(name: str, kind: str, reason: str, threshold_text: str = "") -> Criterion:
    """A criterion that could not be evaluated (section skipped, failed or not applicable): says why."""
    return Criterion(name, NOT_ASSESSED, None, None, threshold_text, f"Not assessed: {reason}.", kind)


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


ADEQUACY_RULE = (f"L = (training − test) / (training − chance): pass if its {CI_LEVEL:.0%} CI (from the test score's "
                 f"bootstrap CI) lies ≤ {ADEQUACY_WARN_LOSS:g}, fail if it lies > {ADEQUACY_FAIL_LOSS:g} or the test "
                 "score is at or below chance, else warn")


def predictive_adequacy(test: HoldoutScore, train: float | None) -> Criterion:
    """Compare the test score with the training score ``train``: L = (train − test) / (train − chance),
    the share of the training skill above chance lost on the test data, graded by :func:`grade` with
    :data:`ADEQUACY_WARN_LOSS` / :data:`ADEQUACY_FAIL_LOSS` on the interval L takes over the test
    score's interval (the training score held fixed). Without a training score the criterion is not
    assessed, unless the test score is at or below chance, which fails."""
    name, kind, chance = "Predictive adequacy", "predictive adequacy", test.chance
    measured = f"{test.metric} {test.value:.3g} ({test.ci})"
    if not np.isfinite(test.value):
        return not_assessed(name, kind, f"the test {test.metric} is not finite", ADEQUACY_RULE)
    if test.value <= chance:
        return Criterion(name, FAIL, test.value, test.ci, ADEQUACY_RULE, f"Test {measured} is at or below chance "
                         f"({chance:.3g}): the model does not predict the test data.", kind)
    if train is None or not np.isfinite(train):
        return not_assessed(name, kind, f"no training score to compare the test {measured} with", ADEQUACY_RULE)
    if train <= chance:
        return Criterion(name, FAIL, np.nan, None, ADEQUACY_RULE, f"the training {test.metric} {train:.3g} is at or "
                         f"below chance ({chance:.3g}): the model did not learn its training data.", kind)
    loss = (train - test.value) / (train - chance)
    ci = ConfidenceInterval((train - test.ci.high) / (train - chance), (train - test.ci.low) / (train - chance),
                            test.ci.level, test.ci.method, test.ci.rows)
    return Criterion(name, grade(loss, ci, ADEQUACY_WARN_LOSS, ADEQUACY_FAIL_LOSS), float(loss), ci, ADEQUACY_RULE,
                     f"Test {measured} against training {test.metric} {train:.3g}: L = {loss:.2f} ({ci}), i.e. "
                     f"{max(loss, 0):.0%} of the skill above chance ({chance:.3g}) on the training data is lost on "
                     "the test data.", kind)


FAITHFULNESS_RULE = (f"F = (PGI² − PGI² random) / (PGI² greedy ceiling − PGI² random): pass if its {CI_LEVEL:.0%} "
                     f"paired-bootstrap CI lies ≥ {FAITHFULNESS_PASS:g}, fail if it lies < {FAITHFULNESS_FAIL:g}, "
                     "else warn")


def explainer_faithfulness(method: str, per_row: dict, sigma: float, *, n_boot: int = N_BOOT,
                           level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Faithfulness criterion of ``method`` from ``per_row`` = {name: (rows,) PGI² at ``sigma``} holding
    the method, ``"random"`` and ``"greedy"`` (see :func:`faithfulness_score`), graded by :func:`grade`
    with :data:`FAITHFULNESS_PASS` / :data:`FAITHFULNESS_FAIL`."""
    name, kind = f"Faithfulness of {method}", "faithfulness"
    missing = [k for k in (method, RANDOM, CEILING) if k not in per_row]
    if missing:
        return not_assessed(name, kind, f"no per-row PGI² for {', '.join(missing)} at σ = {sigma:g}", FAITHFULNESS_RULE)
    try:
        score = faithfulness_score(per_row[method], per_row[RANDOM], per_row[CEILING], n_boot=n_boot, level=level,
                                   random_state=random_state)
    except InputError as exc:
        return not_assessed(name, kind, str(exc), FAITHFULNESS_RULE)
    status = grade(score.value, score.ci, FAITHFULNESS_PASS, FAITHFULNESS_FAIL)
    return Criterion(name, status, score.value, score.ci, FAITHFULNESS_RULE,
                     f"At σ = {sigma:g} over {score.ci.rows} rows, {method}'s rankings recover F = {score.value:.2f} "
                     f"({score.ci}) of the PGI² gain of the greedy PG² ranking (the ceiling) over random rankings.",
                     kind)


def per_row_tau(scores: dict) -> tuple[np.ndarray, dict]:
    """Kendall τ-b (:func:`scipy.stats.kendalltau`) between every pair of methods' scores of the same row
    (``scores``: {method: (rows, d)}, higher = more important). Returns, per row, the mean τ over the
    pairs defined on it (NaN where none is: a method scoring every feature alike has no order), and
    the mean τ over rows of each pair ({"A vs B": τ})."""
    methods = list(scores)
    pairs = [(a, b) for i, a in enumerate(methods) for b in methods[i + 1:]]
    taus = np.full((len(pairs), len(next(iter(scores.values())))), np.nan)
    for p, (a, b) in enumerate(pairs):
        for r, (x, y) in enumerate(zip(np.asarray(scores[a], dtype=float), np.asarray(scores[b], dtype=float))):
            if np.ptp(x) > 0 and np.ptp(y) > 0:
                taus[p, r] = stats.kendalltau(x, y).statistic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # all-NaN rows / pairs
        return np.nanmean(taus, axis=0), {f"{a} vs {b}": float(np.nanmean(t)) for (a, b), t in zip(pairs, taus)}


AGREEMENT_RULE = (f"mean pairwise Kendall τ: pass if its {CI_LEVEL:.0%} bootstrap CI over rows (the value itself for "
                  f"global importances) lies ≥ {AGREEMENT_PASS:g}, fail if it lies < {AGREEMENT_FAIL:g}, else warn")


def explainer_agreement(scores: dict | None = None, global_tau=None, *, n_boot: int = N_BOOT,
                        level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Agreement criterion: the mean pairwise Kendall τ of the explainers' feature orderings, graded by
    :func:`grade` with :data:`AGREEMENT_PASS` / :data:`AGREEMENT_FAIL`.

    With per-row ``scores`` ({method: (rows, d)}), τ is computed row by row (:func:`per_row_tau`) and its
    interval is a bootstrap over the rows; otherwise ``global_tau`` (a square pandas DataFrame of τ between
    the methods' global importances, NaN where undefined) gives the value, without an interval.
    """
    name, kind = "Agreement between explainers", "agreement"
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
        return not_assessed(name, kind, "fewer than two explainers produced importances", AGREEMENT_RULE)
    if not np.isfinite(tau):
        return not_assessed(name, kind, "no pair of explainers orders the features (constant importances)",
                            AGREEMENT_RULE)
    finite_pairs = {k: v for k, v in pairs.items() if np.isfinite(v)}
    weakest = min(finite_pairs, key=lambda pair: finite_pairs[pair])
    features = "" if n_features is None else f" of {n_features} features"
    pair_count = f"{len(pairs)} pair{'s' * (len(pairs) > 1)}"
    text = (f"Mean Kendall τ over the {pair_count} of {len(methods)} explainers' orderings{features}, {over}: "
            f"{tau:.2f}" + ("" if ci is None else f" ({ci})") + f". Least agreeing pair: {weakest} "
            f"(τ = {finite_pairs[weakest]:.2f}).")
    return Criterion(name, grade(tau, ci, AGREEMENT_PASS, AGREEMENT_FAIL), tau, ci, AGREEMENT_RULE, text, kind)


STABILITY_RULE = (f"D = largest change of an explainer's F between noise levels: pass if its {CI_LEVEL:.0%} "
                  f"paired-bootstrap CI lies ≤ {STABILITY_WARN:g}, fail if it lies > {STABILITY_FAIL:g}, else warn")


def sigma_stability(pgi2: dict, *, n_boot: int = N_BOOT, level: float = CI_LEVEL, random_state=None) -> Criterion:
    """Stability criterion from ``pgi2`` = {σ: {name: (rows,) PGI²}} (the same rows at every σ, each σ with
    ``"random"`` and ``"greedy"``): D = max over explainers of (max_σ F − min_σ F), graded by
    :data:`STABILITY_WARN` / :data:`STABILITY_FAIL`; the interval is a paired bootstrap of D (rows
    resampled once for every array); the explanation also says whether the explainers' order by F
    changes between σ."""
    name, kind = "Stability across σ", "stability"
    usable = {s: v for s, v in pgi2.items() if RANDOM in v and CEILING in v
              and np.mean(v[CEILING]) - np.mean(v[RANDOM]) > 0}
    sigmas = sorted(usable)
    methods = [m for m in (usable[sigmas[0]] if sigmas else ()) if m not in (RANDOM, CEILING)
               and all(m in usable[s] for s in sigmas)]
    if len(sigmas) < 2 or not methods:
        return not_assessed(name, kind, "fewer than two noise levels σ with an explainer, random and greedy PGI² "
                            "(and a ceiling above random)", STABILITY_RULE)
    columns = [*methods, RANDOM, CEILING]
    arrays = tuple(np.asarray(usable[s][m], dtype=float) for s in sigmas for m in columns)

    def spread(*values, axis=-1):
        """D of the row means: values are the arrays above, σ-major; F per (σ, method), range over σ."""
        means = np.mean(np.stack(values), axis=axis).reshape(len(sigmas), len(columns), -1)
        floor, ceiling = means[:, -2], means[:, -1]
        scores = (means[:, :-2] - floor[:, None]) / (ceiling - floor)[:, None]
        return np.max(np.max(scores, axis=0) - np.min(scores, axis=0), axis=0).reshape(np.shape(values[0])[:-1])

    value = float(spread(*arrays))
    ci = bootstrap_ci(arrays, spread, n_boot=n_boot, level=level, random_state=random_state)
    scores = {s: {m: float(_normalised(usable[s][m], usable[s][RANDOM], usable[s][CEILING])) for m in methods}
              for s in sigmas}
    orders = {s: tuple(sorted(methods, key=lambda m: -scores[s][m])) for s in sigmas}
    moved = max(methods, key=lambda m: max(scores[s][m] for s in sigmas) - min(scores[s][m] for s in sigmas))
    order_text = ("The explainers' order by F is the same at every σ." if len(set(orders.values())) == 1 else
                  "The explainers' order by F changes with σ: " + "; ".join(
                      f"σ = {s:g}: {' > '.join(orders[s])}" for s in sigmas) + ".")
    text = (f"F per σ ({', '.join(f'{s:g}' for s in sigmas)}) of {len(methods)} explainers; largest change "
            f"D = {value:.2f} ({ci}), for {moved} (" + ", ".join(f"{scores[s][moved]:.2f}" for s in sigmas) + "). "
            + order_text)
    return Criterion(name, grade(value, ci, STABILITY_WARN, STABILITY_FAIL), value, ci, STABILITY_RULE, text, kind)


RASHOMON_RULE = (f"R = widest MCR range / largest model reliance: pass R ≤ {RASHOMON_WARN:g}, warn R ≤ "
                 f"{RASHOMON_FAIL:g}, fail above")


def rashomon_sensitivity(features, reliance, lower, upper, unit: str = "") -> Criterion:
    """Rashomon criterion from each feature's model reliance MR_j(f) and its MCR range [MCR−_j, MCR+_j]:
    R = max_j (MCR+_j − MCR−_j) / max_j MR_j(f), graded by :data:`RASHOMON_WARN` / :data:`RASHOMON_FAIL`.
    No interval: the MCR bounds are themselves estimates over the Rashomon set, not row means. ``unit``
    says in words what a reliance measures (e.g. "increase in log-loss when the feature is scrambled")."""
    name, kind = "Rashomon sensitivity", "Rashomon sensitivity"
    features = [str(f) for f in features]
    reliance, lower, upper = (np.asarray(a, dtype=float) for a in (reliance, lower, upper))
    top = float(np.max(reliance)) if len(reliance) else np.nan
    if not len(features) or not np.isfinite(top) or top <= 0:
        return not_assessed(name, kind, "no feature has a positive model reliance to compare the MCR ranges with",
                            RASHOMON_RULE)
    widths = upper - lower
    widest = int(np.nanargmax(widths))
    value = float(widths[widest] / top)
    status = grade(value, None, RASHOMON_WARN, RASHOMON_FAIL)
    text = (f"Widest range: {features[widest]}, reliance between {lower[widest]:.4g} and {upper[widest]:.4g} among "
            f"equally accurate models (the audited model: {reliance[widest]:.4g}); the largest reliance of the model "
            f"is {top:.4g} ({features[int(np.argmax(reliance))]}), so R = {value:.2f}."
            + (f" Reliance: {unit}." if unit else ""))
    return Criterion(name, status, value, None, RASHOMON_RULE, text, kind)


def fairness(attributes, thresholds: dict, crossed: str = "", not_assessed_reason: str = "") -> Criterion:
    """Fairness criterion of the protected ``attributes``: "warn" when the fairness section warns
    (``crossed``: its findings, as the section words them: a threshold of ``thresholds`` ({metric: limit},
    quoted in the rule) crossed, or an attribute used as a model input), "pass" when it does not, "not
    assessed" with ``not_assessed_reason``. A finding warns rather than fails: a disparity may be
    justified by the intended use, which the reviewer, not the tool, judges."""
    name, kind = "Fairness", "fairness"
    rule = ("warn when the fairness section warns (any of " + ", ".join(f"{k} > {v:g}" for k, v in thresholds.items())
            + ", or a protected attribute used by the model), else pass")
    names = f"Protected attribute{'s' * (len(attributes) > 1)} {', '.join(map(str, attributes))}"
    if not_assessed_reason:
        return not_assessed(name, kind, not_assessed_reason, rule)
    if crossed:
        return Criterion(name, WARN, None, None, rule, f"{names}: the fairness section warns ({crossed}).", kind)
    return Criterion(name, PASS, None, None, rule, f"{names}: no fairness threshold crossed.", kind)
