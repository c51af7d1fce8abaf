"""Run each registered explainer of the audit (:mod:`.explainers`) on the shared row samples.

Every method explains the same scalar output (:attr:`AuditContext.output_label`). A per-row
explainer's block function is applied to the explained rows and reduced here, the same way for
every explainer: the global importance is the exact (correctly rounded) mean of the per-row
importances, the explained rows keep their scores and rankings, which the faithfulness and agreement
sections consume. A method that cannot run says why (``status`` and ``reason``) instead of
disappearing from the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..engines.base import pack
from .explainers import REGISTRY, Explainer, MethodResult, run
from .pgi2_of_rankings import column_means, column_sums
from .section import SKIPPED

#: the block outputs every per-row explainer returns (the others are averaged for its ``finish``)
PER_ROW = ("importance", "scores", "ranking")


@dataclass
class AuditRows:
    """The explained rows, held by the row engine that holds the test data (in memory: one block).

    ``X``: the explained rows, an (n, d) collection of ``engine``; ``positions``: their test-row
    positions in memory (None when ``X`` holds every complete test row of a cluster, where the
    explainers' in-memory :meth:`~.explainers.Explainer.scope` does not apply); ``agreement``:
    positions within ``X`` of the rows of the per-row agreement; ``local_X`` / ``local_labels``:
    the rows shown with local figures and their names; ``persist(*collections)`` keeps lazy
    collections computed on the engine, ``compute(*objs)`` brings values back (default: the engine's)."""

    engine: Any
    X: Any
    positions: np.ndarray | None
    agreement: np.ndarray
    local_X: np.ndarray
    local_labels: list
    persist: Callable | None = None
    compute: Callable | None = None

    @property
    def n(self) -> int:
        """The number of explained rows."""
        return int(self.engine.n_rows(self.X))

    def keep(self, *collections) -> list:
        """``collections`` computed and kept on the engine (as they are in memory)."""
        return list(collections) if self.persist is None else list(self.persist(*collections))

    def values(self, *objs) -> list:
        """The in-memory values of ``objs``."""
        return list((self.compute or self.engine.compute)(*objs))

    def tile(self, order):
        """One ranking ``order`` for every explained row (a collection of the engine)."""
        order = np.asarray(order, dtype=np.int64)
        out = self.engine.map_rows(_tile_block, self.X, order, [], order.size)
        return self.engine.columns(out, 0, order.size, dtype=np.int64)


def _tile_block(order, start, X):
    return np.broadcast_to(order.astype(np.float64), (len(X), order.size))


def _explainer_block(shipped, start, X, *, widths):
    """One block of a per-row explainer (``shipped``: the explainer and its state), its outputs packed
    side by side (``widths``: name -> columns)."""
    explainer, state = shipped
    out = explainer.block(state, X)
    return pack(*[out[name] for name in widths])


def run_all(ctx, rows: AuditRows, options) -> dict:
    """Every registered explainer (key → :class:`MethodResult`, in registry order): those of
    ``options.explainers`` on the explained ``rows``, the others "skipped". The per-row explainers'
    block functions are mapped over the rows by their engine and reduced there, in one pass: the
    per-row collections are kept on the engine (``ranking``), the reductions computed together."""
    methods, mapped = {}, {}
    for key, explainer in REGISTRY.items():
        if key not in options.explainers:
            methods[key] = MethodResult(key, status="skipped", reason=SKIPPED)
        elif explainer.per_row:
            methods[key] = run(key, _map, explainer, ctx, rows, options)
            if methods[key].status == "ok":
                mapped[key] = methods[key].extras.pop("mapped")
        else:
            methods[key] = run(key, explainer.run, ctx, rows.positions, options)
    keys = list(mapped)
    start = time.perf_counter()
    try:
        kept = rows.keep(*[mapped[k]["ranking"] for k in keys], *[mapped[k]["sums"] for k in keys],
                         *[mapped[k]["sampled"] for k in keys])
        small = rows.values(*kept[len(keys):])
    except Exception as exc:  # noqa: BLE001 - one pass for every per-row method: they fail together, saying why
        for key in keys:
            methods[key] = MethodResult(key, status="failed", reason=f"{type(exc).__name__}: {exc}")
        return methods
    shared = (time.perf_counter() - start) / max(len(keys), 1)
    for j, key in enumerate(keys):
        seconds = methods[key].seconds + shared
        methods[key] = run(key, _finish, REGISTRY[key], ctx, rows, mapped[key], kept[j], small[j],
                           small[len(keys) + j], options)
        methods[key].seconds += seconds
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


def _map(explainer: Explainer, ctx, rows: AuditRows, options) -> MethodResult:
    """A per-row explainer's block function mapped over its rows (in memory those of its
    :meth:`~.explainers.Explainer.scope`, picked back to the explained rows), lazily on a lazy engine:
    the ranking, the exact column sums of the averaged outputs and the agreement rows' scores and
    importances, in ``extras["mapped"]``."""
    state = explainer.prepare(ctx, options)
    engine, X, pick = rows.engine, rows.X, None
    if rows.positions is not None:
        scope = explainer.scope(ctx, rows.positions, options)
        X, pick = ctx.X_test.to_numpy()[scope], np.searchsorted(scope, rows.positions)
    probe = check_block(explainer, explainer.block(state, ctx.X_test.to_numpy()[ctx.complete_rows[:1]]), 1,
                        ctx.n_features)
    widths = {name: int(np.prod(v.shape[1:])) for name, v in probe.items()}
    packed = engine.map_rows(_explainer_block, X, engine.ship((explainer, state), "xai-explainer", cache=False), [],
                             sum(widths.values()), widths=widths)
    at, parts = 0, {}
    for name, width in widths.items():
        parts[name] = engine.columns(packed, at, at + width, dtype=np.int64 if name == "ranking" else None)
        at += width
    averaged = [name for name in widths if name not in PER_ROW[1:]]
    explained = {name: a if pick is None else a[pick] for name, a in parts.items()}
    result = MethodResult(explainer.key)
    result.extras["mapped"] = {
        "state": state, "widths": widths, "averaged": averaged, "rows": int(engine.n_rows(X)),
        "ranking": explained["ranking"],
        "sums": engine.reduce(column_sums, [np.concatenate([parts[name] for name in averaged], axis=1)]),
        "sampled": np.concatenate([explained["scores"], explained["importance"]], axis=1)[rows.agreement]}
    return result


def _finish(explainer: Explainer, ctx, rows: AuditRows, mapped: dict, ranking, total, sampled,
            options) -> MethodResult:
    """A per-row explainer's result from its reductions (``total``: the exact column sums of the
    averaged outputs; ``sampled``: scores and importances of the agreement rows)."""
    flat, means, at = column_means(total), {}, 0
    for name in mapped["averaged"]:
        means[name] = flat[at:at + mapped["widths"][name]]
        at += mapped["widths"][name]
    d = ctx.n_features
    result = MethodResult(explainer.key, importance=pd.Series(means["importance"], index=ctx.feature_names),
                          local_scores=np.asarray(sampled[:, :d], dtype=float), ranking=ranking,
                          params={"rows": mapped["rows"]})
    result.extras["per_row"] = np.asarray(sampled[:, d:], dtype=float)
    explainer.finish(ctx, result, mapped["state"], means, rows.local_X, rows.local_labels, options)
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
