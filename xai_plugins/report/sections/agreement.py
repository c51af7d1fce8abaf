"""Agreement section: how similarly the explainers rank the features, and the agreement criterion of the
explanation-reliability verdict.

Kendall τ-b (:func:`scipy.stats.kendalltau`, ties allowed) and top-k overlap |A ∩ B| / k between
every pair of methods: on the global importances, and row by row on the per-row scores (then
averaged over the explained rows). ``data`` carries the τ and overlap matrices and the number of rows and
features they were computed over (``rows``: the per-row agreement's rows; ``features``: d, the length of every
ranking); the typed result (:class:`Agreement`) the per-row mean τ the summary reads.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from .. import criteria, figures
from ..criteria import FAIL, WARN, Criterion, Kind, Threshold, limits, named, not_assessed, rule, shown
from ..section import Table, new, register, skipped_by_user
from ..verdict import CI_LEVEL, N_BOOT, bootstrap_ci, grade

__all__: list = []

KIND = "agreement"
#: the thresholds of the agreement criterion
THRESHOLDS = (
    Threshold("agreement_pass", 0.6, "agreement: Kendall τ at or above which it passes",
              "τ ≥ 0.6 is the conventional \"strong\" rank association", KIND, -1.0, 1.0, "a Kendall τ in [−1, 1]",
              at_least="agreement_fail"),
    Threshold("agreement_fail", 0.3, "agreement: Kendall τ below which it fails",
              "τ < 0.3 is the conventional \"weak\" rank association: the explainers tell the reviewer "
              "conflicting stories about the same model", KIND, -1.0, 1.0, "a Kendall τ in [−1, 1]"),
)


def _rule(t: dict) -> str:
    return (f"mean pairwise Kendall τ: pass if its {CI_LEVEL:.0%} bootstrap CI over rows (the value itself for "
            f"global importances) lies ≥ {named('agreement_pass', t)}, fail if it lies < "
            f"{named('agreement_fail', t)}, else warn")


AGREEMENT = Kind(KIND, criteria.EXPLANATION_RELIABILITY, {"pass": "strong", "warn": "moderate", "fail": "weak"}, _rule)


@dataclass
class Agreement:
    """What other sections read of the agreement section: the mean pairwise τ of each per-row explanation
    (``per_row_tau``, (rows,); None without two per-row methods), the τ matrix of the global importances
    (``global_tau``; None without two methods) with its mean and the mean top-``k`` overlap, over the ``methods``
    and ``n_features`` features."""

    per_row_tau: np.ndarray | None = None
    global_tau: pd.DataFrame | None = None
    mean_global_tau: float = float("nan")
    mean_global_overlap: float = float("nan")
    k: int = 0
    methods: list = field(default_factory=list)
    n_features: int = 0


#: entries of the (rows, d, d) sign arrays :func:`row_taus` builds at once
_TAU_BLOCK = 1 << 22


def _tau(a, b) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return np.nan
    return float(kendalltau(a, b).statistic)


def row_taus(A, B) -> np.ndarray:
    """Kendall τ-b between ``A[i]`` and ``B[i]`` for each row i of two (n, d) arrays (what
    :func:`scipy.stats.kendalltau` gives row by row, ties allowed): Σ_{j<l} s^A_{jl} s^B_{jl} / √(Σ|s^A| Σ|s^B|)
    with s_{jl} = sign(x_j − x_l), i.e. (concordant − discordant) pairs over the pairs untied in each. NaN for a
    row where either scores every feature alike (no order) or holds a NaN."""
    A, B = np.atleast_2d(np.asarray(A, dtype=float)), np.atleast_2d(np.asarray(B, dtype=float))
    n, d = A.shape
    out = np.full(n, np.nan)
    step = max(1, _TAU_BLOCK // max(d * d, 1))
    upper = np.triu(np.ones((d, d), dtype=bool), k=1)
    for lo in range(0, n, step):
        a, b = A[lo:lo + step], B[lo:lo + step]
        sa = np.sign(a[:, :, None] - a[:, None, :])[:, upper]
        sb = np.sign(b[:, :, None] - b[:, None, :])[:, upper]
        untied = np.abs(sa).sum(axis=1) * np.abs(sb).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:lo + step] = np.where(untied > 0, (sa * sb).sum(axis=1) / np.sqrt(untied), np.nan)
    return np.clip(out, -1.0, 1.0)


def top_k(scores, k: int) -> set:
    """Indices of the ``k`` largest scores (ties: lower index first)."""
    return set(np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k].tolist())


def _overlap(a, b, k: int) -> float:
    return len(top_k(a, k) & top_k(b, k)) / k


def _matrix(methods: list, pair_value) -> pd.DataFrame:
    out = pd.DataFrame(np.eye(len(methods)), index=methods, columns=methods)
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            out.loc[a, b] = out.loc[b, a] = pair_value(a, b)
    return out


def global_agreement(importances: dict, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kendall τ and top-``k`` overlap matrices between global importance vectors
    (``{method: Series}``). τ is NaN when a method gives every feature the same importance."""
    methods = list(importances)
    vec = {m: importances[m].to_numpy(dtype=float) for m in methods}
    return (_matrix(methods, lambda a, b: _tau(vec[a], vec[b])),
            _matrix(methods, lambda a, b: _overlap(vec[a], vec[b], k)))


def local_agreement(scores: dict, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Row-averaged Kendall τ and top-``k`` overlap between per-row scores (``{method: (n, d)}``);
    rows where a method's scores are all equal are left out of that pair's τ mean."""
    methods = list(scores)

    def mean_tau(a, b):
        taus = row_taus(scores[a], scores[b])
        return float(np.nanmean(taus)) if np.isfinite(taus).any() else np.nan

    def mean_overlap(a, b):
        return float(np.mean([_overlap(x, y, k) for x, y in zip(scores[a], scores[b])]))

    return _matrix(methods, mean_tau), _matrix(methods, mean_overlap)


def per_row_tau(scores: dict) -> np.ndarray:
    """Per explained row, the mean Kendall τ-b over every pair of methods (``{method: (n, d)}``);
    NaN for a row where no pair has a defined τ."""
    methods = list(scores)
    taus = np.array([row_taus(scores[a], scores[b]) for j, a in enumerate(methods) for b in methods[j + 1:]])
    n = len(next(iter(scores.values())))
    if not taus.size:
        return np.full(n, np.nan)
    defined = np.isfinite(taus).any(axis=0)
    out = np.full(n, np.nan)
    out[defined] = np.nanmean(taus[:, defined], axis=0)
    return out


def mean_off_diagonal(matrix: pd.DataFrame) -> float:
    """Average over distinct method pairs (NaN entries ignored)."""
    values = matrix.to_numpy(dtype=float)
    upper = values[np.triu_indices(len(values), k=1)]
    return float(np.nanmean(upper)) if np.isfinite(upper).any() else np.nan


def pair_taus(scores: dict) -> tuple[np.ndarray, dict]:
    """Kendall τ-b (:func:`row_taus`, as :func:`scipy.stats.kendalltau`) between every pair of
    methods' scores of the same row (``scores``: {method: (rows, d)}, higher = more important). Returns, per row,
    the mean τ over the pairs defined on it (NaN where none is: a method scoring every feature alike has no
    order), and the mean τ over rows of each pair ({"A vs B": τ})."""
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

    With per-row ``scores`` ({method: (rows, d)}), τ is computed row by row (:func:`pair_taus`) and its
    interval is a bootstrap over the rows; otherwise ``global_tau`` (a square pandas DataFrame of τ between
    the methods' global importances, NaN where undefined) gives the value, without an interval.
    """
    name, kind, t = "Agreement between explainers", "agreement", limits(thresholds)
    text_rule = rule(kind, t)
    if scores is not None and len(scores) >= 2:
        methods, n_features = list(scores), np.shape(next(iter(scores.values())))[1]
        per_row, pairs = pair_taus(scores)
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


@register("agreement", "Agreement between methods", reads=("explanations",), result=Agreement, thresholds=THRESHOLDS,
          kinds=(AGREEMENT,), seconds=0.3, position=100, stage=70, optional=True, default=True)
def build(ctx, results, options):
    """Global and per-row agreement matrices between every pair of methods."""
    if (skipped := skipped_by_user("agreement", options)) is not None:
        return skipped
    section = new("agreement")
    section.result = Agreement()
    explained = results["explanations"].result
    methods, n_rows = explained.methods, explained.agreement_rows
    k = min(options.top_k, ctx.n_features)
    global_imp = {m.label: m.importance for m in methods.values() if m.status == "ok" and m.importance is not None}
    local = {m.label: m.local_scores for m in methods.values() if m.status == "ok" and m.local_scores is not None}
    if len(global_imp) < 2:
        section.status, section.reason = "not applicable", "fewer than two methods produced importances"
        return section
    tau, overlap = global_agreement(global_imp, k)
    section.result = Agreement(None, tau, mean_off_diagonal(tau), mean_off_diagonal(overlap), k, list(global_imp),
                               ctx.n_features)
    section.data = {"k": k, "features": ctx.n_features, "methods": list(global_imp), "global tau": tau,
                    "global overlap": overlap, "mean global tau": section.result.mean_global_tau,
                    "mean global overlap": section.result.mean_global_overlap, "rows": 0}
    section.figures.append(figures.heatmaps(
        f"Agreement of the global importances over {ctx.n_features} features: Kendall τ-b (left) and top-{k} "
        "overlap (right).", {"Kendall τ (global)": tau, f"top-{k} overlap (global)": overlap}))
    section.tables.append(Table(f"Kendall τ-b between the global importances of every pair of methods, over "
                                f"{ctx.n_features} features (1: same order, 0: unrelated, −1: reversed).", tau))
    section.tables.append(Table(f"Top-{k} overlap between the global importances: share of the {k} most "
                                "important features two methods have in common.", overlap))
    if len(local) >= 2:
        ltau, loverlap = local_agreement(local, k)
        section.data.update({"local tau": ltau, "local overlap": loverlap, "rows": n_rows,
                             "mean local tau": mean_off_diagonal(ltau),
                             "mean local overlap": mean_off_diagonal(loverlap)})
        section.result.per_row_tau = per_row_tau(local)
        section.figures.append(figures.heatmaps(
            f"Agreement of the per-row explanations, averaged over {n_rows} test rows and {ctx.n_features} "
            f"features: Kendall τ-b (left) and top-{k} overlap (right).",
            {"Kendall τ (per row)": ltau, f"top-{k} overlap (per row)": loverlap}))
    return section
