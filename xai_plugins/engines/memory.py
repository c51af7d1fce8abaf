"""The in-memory engine: the whole input is one block (numpy in, numpy out, nothing lazy)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from .base import BlockFn, Engine, call_block, from_keys, order_keys

__all__: list[str] = []      # internal module: the public names are in the API reference


class MemoryEngine(Engine):
    """Runs a block function once, on every row; results are numpy arrays."""

    name = "memory"
    lazy = False

    def handles(self, obj: Any) -> bool:
        """False: the in-memory engine claims nothing; it runs whatever no other engine claims."""
        return False

    def rows(self, X, names, d, in_memory, what="X", like=None, *, forest=None):
        """``in_memory(X)``: the caller's own alignment (column names, dtypes, missing values)."""
        rows, names = in_memory(X)
        return np.asarray(rows, dtype=np.float64), list(names)

    def n_rows(self, rows) -> int:
        """``len(rows)``."""
        return len(rows)

    def by_rows(self, a, rows, what, *, axis=0, transform=None, width=None, dtype=None):
        """``a`` as a numpy array with rows on axis 0 (``transform`` applied to it first)."""
        a = transform(a) if transform is not None else np.moveaxis(np.asarray(a), axis, 0)
        if a.shape[:1] != (len(rows),):
            raise InputError(f"{what} has {a.shape[0] if a.ndim else 0} rows but X has {len(rows)}")
        return a if dtype is None else a.astype(dtype)

    def head(self, a, n: int) -> np.ndarray:
        """``a[:n]``."""
        return np.asarray(a[:n])

    def held(self, a, n: int):
        """``a`` itself: every row is on the driver."""
        return a

    def ship(self, obj, prefix="xai-object", *, cache=True):
        """``obj`` itself: nothing to send."""
        return obj

    def ship_forest(self, forest, *, with_model=False):
        """The Forest itself (its predictor works in this process)."""
        return forest

    def map_rows(self, block_fn: BlockFn, rows, shipped, per_row: Sequence[Any], width: int, **shared):
        """``block_fn(shipped, 0, rows, *per_row, **shared)`` as (n, width) float64."""
        out = call_block(block_fn, shipped, 0, rows, per_row, shared)
        return out.reshape(len(rows), width)

    def columns(self, out, start, stop, *, shape=None, dtype=None, rows_axis=0):
        """``out[:, start:stop]`` reshaped to (n, *shape), cast, rows moved to ``rows_axis``."""
        a = out[:, start:stop].reshape((len(out),) + (shape if shape is not None else (stop - start,)))
        a = a if dtype is None else a.astype(dtype)
        return np.moveaxis(a, 0, rows_axis) if rows_axis else a

    def reduce(self, block_fn: Callable, arrays, *args, finish=None, shape=(), dtype=np.float64, combine=None):
        """``finish(block_fn(*arrays, *args))``: one block (joined by ``combine`` when given)."""
        total = block_fn(*arrays, *args)
        total = total if combine is None else combine([total])
        return total if finish is None else finish(total)

    def where(self, rows, keep):
        """``rows[keep(rows)]`` and those rows' positions."""
        positions = np.flatnonzero(np.asarray(keep(rows), dtype=bool))
        return rows[positions], positions

    def take(self, a, positions):
        """``a[positions]``."""
        return np.asarray(a)[np.asarray(positions, dtype=np.int64)]

    def persist(self, *objs) -> list:
        """``objs`` (in memory already)."""
        return list(objs)

    def bind(self, client=None, progress=False):
        """This engine (``client`` and ``progress`` mean nothing in memory)."""
        return self

    def describe(self) -> str:
        """"in memory"."""
        return "in memory"

    def order_statistics(self, a, columns, ranks, compute=None) -> np.ndarray:
        """Exact order statistics by sorting each column's order keys (as the cluster engines' radix
        selection orders them: -0.0 before +0.0)."""
        a = np.asarray(a)
        keys = [np.sort(order_keys(a[:, int(c)]))[int(r)] for c, r in zip(columns, ranks)]
        return from_keys(np.array(keys, dtype=np.uint64))

    def compute(self, *objs) -> tuple:
        """``objs`` as they are (already in memory)."""
        return objs

    def result(self, cls, *, timed=None, **fields):
        """``cls(**fields)``."""
        return cls(**fields)
