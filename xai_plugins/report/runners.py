"""Run each registered explainer of the audit (:mod:`.explainers`) on the shared row samples.

Every method explains the same scalar output (:attr:`AuditContext.output_label`). A per-row
explainer's block function is applied to the explained rows and reduced here, the same way for
every explainer and every row engine (in memory, Dask, Spark): the global importance is the exact
(correctly rounded) mean of the per-row importances, the explained rows keep their scores and
rankings, which the faithfulness and agreement sections consume. A method that cannot run says why
(``status`` and ``reason``) instead of disappearing from the report.

Test data held by a row engine (a Dask or Spark DataFrame): :func:`prepare` reads its facts there
(row count, missing values per feature), keeps its complete rows on the engine and fetches a random
in-memory sample, which becomes the audit context's ``X_test`` for what needs rows in memory (data
summary, performance, per-row agreement, the Monte Carlo comparison); :func:`engine_rows` then
explains every complete row, so each row's result is bitwise the in-memory one and the reductions
are the same floats.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..engines.method import Output, Plan, RowMethod, Sum
from ..engines.runner import outputs
from ..errors import InputError
from ..forest.layout import code_frame
from .explainers import REGISTRY, Explainer, MethodResult, run
from .pgi2_of_rankings import column_means, column_sums
from .section import SKIPPED

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the block outputs every per-row explainer returns (the others are averaged for its ``finish``)
PER_ROW = ("importance", "scores", "ranking")


@dataclass
class AuditRows:
    """The explained rows, held by the row engine that holds the test data (in memory: one block).

    ``X``: the explained rows, an (n, d) collection of ``engine`` (bound to its client: see
    :meth:`~xai_plugins.engines.base.Engine.bind`); ``positions``: their test-row positions in
    memory (None when ``X`` holds every complete test row of an engine's data, where the explainers'
    in-memory :meth:`~.explainers.Explainer.scope` does not apply); ``agreement``: positions within
    ``X`` of the rows of the per-row agreement; ``local_X`` / ``local_labels``: the rows shown with
    local figures and their names; ``every``: on an engine, every test row (missing values included),
    whose mean is the global importance of the :attr:`~.explainers.Explainer.every_row` explainers."""

    engine: Any
    X: Any
    positions: np.ndarray | None
    agreement: np.ndarray
    local_X: np.ndarray
    local_labels: list
    every: Any = None

    @property
    def n(self) -> int:
        """The number of explained rows."""
        return int(self.engine.n_rows(self.X))

    def keep(self, *collections) -> list:
        """``collections`` computed and kept on the engine (as they are in memory)."""
        return self.engine.persist(*collections)

    def values(self, *objs) -> list:
        """The in-memory values of ``objs``."""
        return list(self.engine.compute(*objs))

    def tile(self, order):
        """One ranking ``order`` for every explained row (a collection of the engine)."""
        order = np.asarray(order, dtype=np.int64)
        plan = Plan(self.X, (Output("ranking", (order.size,), np.int64),), shipped=order, ship="value")
        return outputs(_TILE, self.engine, plan)["ranking"]

    def random_rankings(self, seed: int):
        """One uniformly random feature order per explained row (a collection of the engine), drawn
        from ``seed`` and the row's values (:func:`_random_order_block`): a row's order never depends on
        where the row is, so the random floor of the same rows is the same in memory and on any engine,
        for any row order and partitioning (equal rows get equal orders)."""
        d = int(self.X.shape[1])
        plan = Plan(self.X, (Output("ranking", (d,), np.int64),), shipped=int(seed), ship="value")
        return outputs(_RANDOM_ORDER, self.engine, plan)["ranking"]


def _tile_block(order, start, X) -> dict:
    return {"ranking": np.repeat(order[None, :], len(X), axis=0)}


def _random_order_block(seed, start, X) -> dict:
    """Per row, a uniformly random permutation drawn from a ``numpy.random.SeedSequence`` keyed by ``seed``
    and the row's float64 bits (−0.0 read as 0.0): a function of the row's values only, never of ``start``."""
    bits = np.ascontiguousarray(np.asarray(X, dtype=np.float64) + 0.0).view(np.uint32)
    out = np.empty((len(bits), bits.shape[1] // 2), dtype=np.int64)
    for i, row in enumerate(bits):
        out[i] = np.random.default_rng(np.random.SeedSequence([seed, *row.tolist()])).permutation(out.shape[1])
    return {"ranking": out}


def _explainer_block(shipped, start, X) -> dict:
    """One block of a per-row explainer (``shipped``: the explainer and its state): its outputs as
    float64 (b, m) arrays, the ranking as int64."""
    explainer, state = shipped
    out = explainer.block(state, X)
    return {name: np.asarray(v, dtype=np.int64 if name == "ranking" else np.float64).reshape(len(X), -1)
            for name, v in out.items()}


def _sums_of(*arrays) -> list:
    """Exact column sums of per-row outputs side by side, and the row count (:func:`column_sums`)."""
    return column_sums(np.concatenate([np.reshape(np.asarray(a, dtype=np.float64), (len(a), -1)) for a in arrays],
                                      axis=1))


def _no_plan(*args, **kwargs):
    raise TypeError("the audit's row methods are given their plan (runners.outputs), not prepared")


def _no_finish(plan, cols, engine):
    return cols


#: the audit's row methods: a per-row explainer's block, a ranking tiled over the rows, random orders
_EXPLAINER = RowMethod("explainer", _no_plan, _explainer_block, _no_finish)
_TILE = RowMethod("tile", _no_plan, _tile_block, _no_finish)
_RANDOM_ORDER = RowMethod("random-order", _no_plan, _random_order_block, _no_finish)


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
                         *[mapped[k]["scores"] for k in keys], *[mapped[k]["importance"] for k in keys])
        small = rows.values(*kept[len(keys):])
    except Exception as exc:  # noqa: BLE001 - one pass for every per-row method: they fail together, saying why
        for key in keys:
            methods[key] = MethodResult(key, status="failed", reason=f"{type(exc).__name__}: {exc}")
        return methods
    shared = (time.perf_counter() - start) / max(len(keys), 1)
    for j, key in enumerate(keys):
        seconds = methods[key].seconds + shared
        methods[key] = run(key, _finish, REGISTRY[key], ctx, rows, mapped[key], kept[j], small[j],
                           small[len(keys) + j], small[2 * len(keys) + j], options)
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
    averaged = [name for name in widths if name not in PER_ROW[1:]]
    declared = tuple(Output(name, (w,), np.int64 if name == "ranking" else np.float64) for name, w in widths.items())
    sums = Sum("sums", _sums_of, of=tuple(averaged))
    shipped = (explainer, state)
    if pick is None and explainer.every_row and rows.every is not None:    # the mean over every row, as in memory
        cols = outputs(_EXPLAINER, engine, Plan(X, declared, shipped=shipped, ship="object-once"))
        X = rows.every
        total = outputs(_EXPLAINER, engine, Plan(X, tuple(o for o in declared if o.name in averaged) + (sums,),
                                                  shipped=shipped, ship="object-once"))["sums"]
    else:
        cols = outputs(_EXPLAINER, engine, Plan(X, declared + (sums,), shipped=shipped, ship="object-once"))
        total = cols["sums"]
    explained = {name: cols[name] if pick is None else cols[name][pick] for name in PER_ROW}
    result = MethodResult(explainer.key)
    result.extras["mapped"] = {
        "state": state, "widths": widths, "averaged": averaged, "rows": int(engine.n_rows(X)),
        "ranking": explained["ranking"], "sums": total,
        "scores": engine.take(explained["scores"], rows.agreement),
        "importance": engine.take(explained["importance"], rows.agreement)}
    return result


def _finish(explainer: Explainer, ctx, rows: AuditRows, mapped: dict, ranking, total, scores, importance,
            options) -> MethodResult:
    """A per-row explainer's result from its reductions (``total``: the exact column sums of the
    averaged outputs; ``scores`` / ``importance``: those of the agreement rows)."""
    flat, means, at = column_means(total), {}, 0
    for name in mapped["averaged"]:
        means[name] = flat[at:at + mapped["widths"][name]]
        at += mapped["widths"][name]
    result = MethodResult(explainer.key, importance=pd.Series(means["importance"], index=ctx.feature_names),
                          local_scores=np.asarray(scores, dtype=float), ranking=ranking,
                          params={"rows": mapped["rows"]})
    result.extras["per_row"] = np.asarray(importance, dtype=float)
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


# --------------------------------------------------------------------------------------------
# test data held by a row engine (Dask, Spark)
# --------------------------------------------------------------------------------------------

@dataclass
class EngineRows:
    """The test data on a row engine. ``engine``: the engine, bound to its client; ``X``: the complete
    rows (no missing value), float64 in the model's feature order, a collection of ``engine``;
    ``position``: their positions among all ``n_rows`` test rows; ``missing``: missing values per
    feature over all rows; ``sample_size``: rows of the in-memory sample; ``every``: all test rows
    (a collection of ``engine``)."""

    engine: Any
    X: Any
    position: Any
    n_rows: int
    missing: np.ndarray
    sample_size: int
    every: Any = None

    @property
    def n_complete(self) -> int:
        """Complete test rows: the rows every per-row method explains."""
        return int(self.engine.n_rows(self.X))

    @property
    def where(self) -> str:
        """Where the rows are, in words ("the Dask cluster (...)", "Spark (master local[2])")."""
        return self.engine.describe()


def _missing_counts(X) -> list:
    return [np.isnan(X).sum(axis=0).astype(np.int64)]


def _complete(X) -> np.ndarray:
    return ~np.isnan(X).any(axis=1)


def prepare(forest, X_test, y_test, *, engine, sample_size: int, random_state, protected=()):
    """Read the test data's facts on ``engine`` (bound), keep its complete rows there and fetch a
    random in-memory sample of ``sample_size`` rows. ``y_test``: in memory, the engine's own per-row
    collection (a dask Series), or the name of ``X_test``'s target column. ``protected``: columns of
    ``X_test`` holding protected attributes; those that are not model features are held apart from
    the features and fetched with the sample.

    Returns the :class:`EngineRows` and the sample's rows (a DataFrame indexed by position among all
    test rows, with the protected columns) and targets, which the audit context holds as its
    ``X_test`` / ``y_test``."""
    if isinstance(y_test, str):
        X_test, y_test = engine.split_target(X_test, y_test)
    features = set(map(str, forest.feature_names or ()))
    apart = {}
    for name in (c for c in protected if str(c) not in features):
        X_test, apart[name] = engine.split_target(X_test, name, what="protected")
    rows, names = engine.rows(X_test, forest.feature_names, forest.n_features,
                              lambda x: forest.rows(x, what="X_test", allow_nan=True), what="X_test",
                              forest=forest)
    y = None if y_test is None else engine.by_rows(y_test, rows, "y_test")
    apart = {name: engine.by_rows(a, rows, f"protected column {name!r}") for name, a in apart.items()}
    n_rows = engine.n_rows(rows)
    missing_counts = outputs(_ROWS, engine, Plan(rows, (Sum("missing", _missing_counts),)))["missing"]
    (missing,) = engine.compute(missing_counts)[0]
    X, position = engine.persist(*engine.where(rows, _complete))
    cl = EngineRows(engine, X, position, n_rows, np.asarray(missing, dtype=np.int64), min(int(sample_size), n_rows),
                    rows)
    if cl.n_complete == 0:
        raise InputError("every test row has a missing value: the per-row methods need complete rows")
    picked = np.sort(np.random.default_rng(random_state).permutation(n_rows)[:cl.sample_size])
    fetched = [engine.take(a, picked) for a in ([] if y is None else [y]) + list(apart.values())]
    got = engine.compute(engine.take(rows, picked), *fetched)
    sample = code_frame(np.asarray(got[0], dtype=np.float64), names, forest.category_labels,   # read back as codes
                        index=pd.Index(picked, name="row"))
    for name, values in zip(apart, got[len(got) - len(apart):]):
        sample[name] = np.asarray(values).ravel()
    return cl, sample, None if y is None else np.asarray(got[1]).ravel()


def _score_block(scorer, start, X) -> dict:
    return {"score": scorer(X), "index": start + np.arange(len(X), dtype=np.float64)}


def _extremes_of(score, index, m: int) -> np.ndarray:
    """:func:`_extremes` of a block's (score, row index) pairs."""
    return _extremes(np.column_stack([score, index]), m)


def _extremes(block, m: int) -> np.ndarray:
    """The ``m`` lowest and ``m`` highest (score, index) pairs of a block, ordered by score then index."""
    order = np.lexsort((block[:, 1], block[:, 0]))
    keep = order if len(order) <= 2 * m else np.concatenate([order[:m], order[-m:]])
    return block[keep]


def _merge_extremes(parts, m: int) -> np.ndarray:
    """The ``m`` lowest and highest pairs of the blocks' :func:`_extremes` (the same for any blocking)."""
    return _extremes(np.concatenate(parts), m)


def engine_rows(ctx, cl: EngineRows, n_local: int) -> AuditRows:
    """The explained rows of an audit of data on a row engine: every complete test row, a random
    sample of them for the per-row agreement (``ctx.rng("agreement rows")``), and the ``n_local``
    rows of the highest and lowest explained output for the local figures (one pass of the model's
    predictions, ties by position, as in memory)."""
    engine, n = cl.engine, cl.n_complete
    agreement = np.sort(ctx.rng("agreement rows").permutation(n)[:min(n, cl.sample_size)])
    local_X, local_labels = np.empty((0, ctx.n_features)), []
    if n_local > 0:
        extremes = Sum("extremes", functools.partial(_extremes_of, m=n_local), of=("score", "index"),
                       combine=functools.partial(_merge_extremes, m=n_local))
        plan = Plan(cl.X, (Output("score"), Output("index"), extremes), shipped=ctx.portable_scorer(),
                    ship="object-once")
        (candidates,) = engine.compute(outputs(_SCORER, engine, plan)["extremes"])
        local_idx = extremes_first(candidates[:, 1].astype(np.int64), n_local)
        picked = np.sort(local_idx)
        local_X, labels = engine.compute(engine.take(cl.X, picked), engine.take(cl.position, picked))
        order = np.searchsorted(picked, local_idx)      # back to the alternating order
        local_X, local_labels = np.asarray(local_X)[order], [str(int(v)) for v in np.asarray(labels)[order]]
    return AuditRows(engine, cl.X, None, agreement, local_X, local_labels, cl.every)


def _nothing(shipped, start, X, *per_row) -> dict:
    return {}


#: reductions of the rows themselves, and the model's scores of the rows
_ROWS = RowMethod("rows", _no_plan, _nothing, _no_finish)
_SCORER = RowMethod("scorer", _no_plan, _score_block, _no_finish)
