"""The one runner of the per-row methods (:class:`~xai_plugins.engines.method.RowMethod`) on every
engine: in memory as one block, on Dask, Spark or any registered engine block by block."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Engine
from .method import Output, Plan, RowMethod, Sum, Total

__all__: list[str] = []


def run(method: RowMethod, engine: Engine, *args: Any, **kwargs: Any) -> Any:
    """``method`` on ``engine``: ``prepare(engine, *args, **kwargs)``, its block over the rows, ``finish``."""
    plan = method.prepare(engine, *args, **kwargs)
    return method.finish(plan, outputs(method, engine, plan), engine)


def outputs(method: RowMethod, engine: Engine, plan: Plan) -> dict:
    """The named outputs of ``plan``'s rows: the in-memory block's arrays as they are, or the
    engine's collections unpacked from its columns; exact totals and sums reduced."""
    if not engine.lazy:
        if plan.progress is None:
            cols = method.block(plan.shipped, 0, plan.rows, *plan.per_row, **plan.shared)
        else:
            cols = method.block(plan.shipped, 0, plan.rows, *plan.per_row, progress=plan.progress, **plan.shared)
        for out in () if callable(plan.outputs) else plan.outputs:
            if type(out) is Output and not out.rows_axis:
                if out.name not in cols:
                    raise KeyError(f"{method.name}: its block returned no {out.name!r} (it returned {sorted(cols)})")
            elif isinstance(out, Sum):
                arrays = (plan.rows, *plan.per_row) if out.of is None else [cols[name] for name in out.of]
                part = out.partial(*arrays)
                part = part if out.combine is None else out.combine([part])
                cols[out.name] = part if out.total is None else out.total(part)
            elif out.name not in cols:
                raise KeyError(f"{method.name}: its block returned no {out.name!r} (it returned {sorted(cols)})")
            elif isinstance(out, Output) and out.rows_axis:
                cols[out.name] = np.moveaxis(cols[out.name], 0, out.rows_axis)
        return cols
    declared = plan.outputs() if callable(plan.outputs) else plan.outputs
    rows_out = [out for out in declared if not isinstance(out, Sum)]
    cols = {}
    if rows_out:
        shared = plan.shared if plan.progress is None else {**plan.shared, "progress": False}
        layout, width = [], 0
        for out in rows_out:
            w = 1 if isinstance(out, Total) else out.width
            layout.append((out.name, width, width + w, isinstance(out, Total)))
            width += w
        packed = engine.map_rows(_packed, plan.rows, _shipped(engine, plan, method.name), list(plan.per_row), width,
                                 _block=method.block, _layout=tuple(layout), _width=width, **shared)
        for out, (name, a, b, _) in zip(rows_out, layout):
            if isinstance(out, Total):
                cols[name] = engine.reduce(_int_sum, [engine.columns(packed, a, b, shape=())], finish=_first,
                                           dtype=np.int64)
            else:
                cols[name] = engine.columns(packed, a, b, shape=out.shape, dtype=out.dtype, rows_axis=out.rows_axis)
    for out in declared:
        if isinstance(out, Sum):
            arrays = [plan.rows, *plan.per_row] if out.of is None else [cols[name] for name in out.of]
            joined = {} if out.combine is None else {"combine": out.combine}
            cols[out.name] = engine.reduce(_partial, arrays, out.partial, finish=out.total, shape=out.shape,
                                           dtype=out.dtype, **joined)
    return cols


def _shipped(engine: Engine, plan: Plan, name: str) -> Any:
    """``plan.shipped`` as ``plan.ship`` says it travels to the blocks."""
    if plan.ship == "forest":
        return engine.ship_forest(plan.shipped)
    if plan.ship == "forest+model":
        return engine.ship_forest(plan.shipped, with_model=True)
    if plan.ship in ("object", "object-once"):
        return engine.ship(plan.shipped, f"xai-{name}", cache=plan.ship == "object")
    if plan.ship == "value":
        return plan.shipped
    raise ValueError(f"{name}: unknown way of shipping {plan.ship!r}")


def _packed(shipped, start, X, *per_row, _block, _layout, _width, **shared) -> np.ndarray:
    """One block's named outputs side by side in (b, width) float64 columns; a Total in its first row
    (the block reads its rows as C-contiguous float64, as the in-memory engine's rows are)."""
    cols = _block(shipped, start, np.ascontiguousarray(X, dtype=np.float64), *per_row, **shared)
    b = len(X)
    out = np.zeros((b, _width))
    for name, a, stop, total in _layout:
        if total:
            if b:
                out[0, a] = cols[name]
        else:
            out[:, a:stop] = np.reshape(np.asarray(cols[name], dtype=np.float64), (b, stop - a))
    return out


def _partial(*blocks_and_fn) -> list:
    """``partial(*blocks)`` of one block (engine.reduce passes the blocks, then the function)."""
    *blocks, partial = blocks_and_fn
    return partial(*blocks)


def _int_sum(column) -> list:
    return [int(np.asarray(column).sum())]


def _first(total):
    return total[0]
