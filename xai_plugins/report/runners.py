"""Run each registered explainer of the audit (:mod:`.explainers`) on the shared row samples.

Every method explains the same scalar output (:attr:`AuditContext.output_label`). A per-row
explainer's block function is applied to the explained rows and reduced here, the same way for
every explainer: the global importance is the exact (correctly rounded) mean of the per-row
importances, the explained rows keep their scores and rankings, which the faithfulness and agreement
sections consume. A method that cannot run says why (``status`` and ``reason``) instead of
disappearing from the report.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import pgi2_of_rankings as faith
from .explainers import REGISTRY, Explainer, MethodResult, run
from .section import SKIPPED

#: the block outputs every per-row explainer returns (the others are averaged for its ``finish``)
PER_ROW = ("importance", "scores", "ranking")


def run_all(ctx, rows: np.ndarray, local_rows: list, options) -> dict:
    """Every registered explainer (key → :class:`MethodResult`, in registry order): those of
    ``options.explainers`` run on the explained ``rows`` (test-row positions; ``local_rows``: those
    shown with local figures), the others "skipped"."""
    methods = {}
    for key, explainer in REGISTRY.items():
        if key not in options.explainers:
            methods[key] = MethodResult(key, status="skipped", reason=SKIPPED)
        elif explainer.per_row:
            methods[key] = run(key, run_per_row, explainer, ctx, rows, local_rows, options)
        else:
            methods[key] = run(key, explainer.run, ctx, rows, options)
    return methods


def check_block(explainer: Explainer, out, n_rows: int, d: int) -> dict:
    """The block output ``out`` of ``explainer`` on ``n_rows`` rows, checked: a dict holding
    :data:`PER_ROW` arrays of shape (n_rows, d) and other (n_rows, m) arrays (ValueError naming what
    is wrong otherwise: a bug in the explainer's module)."""
    if not isinstance(out, dict) or any(name not in out for name in PER_ROW):
        raise ValueError(f"explainer {explainer.key!r}: block() must return a dict with {list(PER_ROW)}; "
                         f"got {type(out).__name__} {list(out) if isinstance(out, dict) else ''}")
    checked = {name: np.asarray(value) for name, value in out.items()}
    for name, value in checked.items():
        wanted = (n_rows, d) if name in PER_ROW else (n_rows,)
        if value.shape[:len(wanted)] != wanted or value.ndim != 2:
            raise ValueError(f"explainer {explainer.key!r}: block() output {name!r} has shape {value.shape}; "
                             f"expected ({n_rows}, {d if name in PER_ROW else 'm'})")
    return checked


def run_per_row(explainer: Explainer, ctx, rows: np.ndarray, local_rows: list, options) -> MethodResult:
    """A per-row explainer in memory: its block function on the rows of its :meth:`~.Explainer.scope`
    (one block), the global importance their exact mean, scores / ranking / per-row importance those
    of the explained ``rows``."""
    state = explainer.prepare(ctx, options)
    scope = explainer.scope(ctx, rows, options)
    out = check_block(explainer, explainer.block(state, ctx.X_test.to_numpy()[scope]), len(scope), ctx.n_features)
    pick = np.searchsorted(scope, rows)
    means = {name: faith.column_means(faith.column_sums(v)) for name, v in out.items() if name not in PER_ROW[1:]}
    result = MethodResult(explainer.key, importance=pd.Series(means["importance"], index=ctx.feature_names),
                          local_scores=np.asarray(out["scores"][pick], dtype=float),
                          ranking=np.asarray(out["ranking"][pick], dtype=np.int64), params={"rows": len(scope)})
    result.extras["per_row"] = np.asarray(out["importance"][pick], dtype=float)
    local_X = ctx.X_test.to_numpy()[np.asarray(local_rows, dtype=np.int64)]
    explainer.finish(ctx, result, state, means, local_X, [ctx.row_label(r) for r in local_rows], options)
    return result


def extremes_first(order, n_local: int) -> list:
    """``n_local`` distinct items of ``order`` (sorted by the explained output, ascending), taken
    from the top and the bottom alternately: the highest, the lowest, the second highest, ..."""
    picks: list = []
    for i in range(len(order)):
        candidate = int(order[-1 - i // 2] if i % 2 == 0 else order[i // 2])
        if candidate not in picks:
            picks.append(candidate)
        if len(picks) == min(n_local, len(order)):
            break
    return picks
