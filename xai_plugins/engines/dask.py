"""The Dask engine: block functions mapped over the row chunks of a ``dask.array.Array`` or
``dask.dataframe.DataFrame``, results as lazy dask arrays.

- every block of rows is computed by the block function on the block's rows, so a result's
  ``.compute()`` is bitwise identical to the in-memory result on the same rows, whatever the
  chunking (every block function is row-wise: no row's value depends on another row);
- the model is imported once on the client and enters the graph as ONE key (a frozen
  :class:`~xai_plugins.forest.Forest` without its predictor, :meth:`DaskEngine.ship_forest`),
  shared by all blocks: each worker receives it once, and its split tables are built once per
  worker process and cached with it; Monte Carlo ships the fitted model with it;
- a dask DataFrame's columns are aligned to the model's features by name (the same
  :func:`~xai_plugins._validation.feature_order` as in memory), then read with
  ``to_dask_array(lengths=True)``;
- exact reductions: each block returns exact sums (integer multiples of 2^-1127) or counts, the
  partial sums are added exactly and rounded once, so a mean is correctly rounded and identical
  to the in-memory one for any chunking; order statistics by radix selection (counts only).

Nothing here imports dask until a dask collection arrives (:func:`~xai_plugins._validation.is_dask`
only looks at ``sys.modules``). Dask is an optional dependency: ``pip install "xai_plugins[dask]"``.
"""

from __future__ import annotations

import copy
import sys
import time
import uuid
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import default_feature_names, feature_order, frame_values, is_dask
from ..errors import InputError
from .base import BlockFn, Engine, RowReader, add_all, call_block, from_keys, lazy_result_type, order_keys, plain_forest

__all__: list[str] = []      # internal module: the public names are in the API reference

#: rows per block of an in-memory X sent to the workers
IN_MEMORY_BLOCK_ROWS = 10_000
_INSTALL = 'dask input needs dask: pip install "xai_plugins[dask]"'


def _require_dask():
    try:
        import dask.array as da
    except ImportError as exc:          # pragma: no cover - a dask input implies dask is installed
        raise ImportError(_INSTALL) from exc
    return da


def _delayed(obj, name: str):
    import dask

    return dask.delayed(obj, name=name, pure=True, traverse=False)


def _float_partition(part, what: str, read: Callable = frame_values):
    """One partition of a dask DataFrame with its columns read as float64 by ``read``:
    :func:`~xai_plugins._validation.frame_values` (nullable, pyarrow, numeric category dtypes) or
    the model's :class:`~.base.RowReader` (category and text columns as its codes)."""
    values = read(part, what) if len(part) else np.empty((0, part.shape[1]))
    return type(part)(values, columns=part.columns, index=part.index)


def _call(fn, shipped, shared, offset, X, *per_row):
    return call_block(fn, shipped, int(offset[0]), X, per_row, shared)


def _digit_counts(block, columns, prefixes, shift):
    out = np.zeros((len(columns), 256), dtype=np.int64)
    for t, (c, p) in enumerate(zip(columns, prefixes)):
        keys = order_keys(block[:, c])
        if shift < 56:
            keys = keys[(keys >> np.uint64(shift + 8)) == np.uint64(p)]
        out[t] = np.bincount(((keys >> np.uint64(shift)) & np.uint64(255)).astype(np.intp), minlength=256)
    return [out]


def _count_kept(block, keep) -> int:
    return int(np.count_nonzero(keep(block)))


def _kept_rows(block, keep, start: int) -> np.ndarray:
    """The kept rows of a block with their positions (float64, exact below 2^53) as a last column."""
    where = np.flatnonzero(keep(block))
    return np.concatenate([block[where], (start + where).astype(np.float64)[:, None]], axis=1)


class _Lazy:
    """Mixin of the lazy result types made by :meth:`DaskEngine.result`."""

    _base: type
    _timed: str | None

    def compute(self, **kwargs):
        """Compute every dask field in one pass; the in-memory result of the base type."""
        import dask

        fields = dict(self.__dict__)
        lazy = [k for k, v in fields.items() if is_dask(v)]
        start = time.perf_counter()
        for key, value in zip(lazy, dask.compute(*(fields[k] for k in lazy), **kwargs)):
            fields[key] = value.item() if isinstance(value, np.generic) else value
        if self._timed is not None:
            fields[self._timed] = time.perf_counter() - start
        return self._base(**fields)

    def __repr__(self):
        first = next((v for v in self.__dict__.values() if is_dask(v) and getattr(v, "ndim", 0)), None)
        rows = "" if first is None else f"n_rows={first.shape[first.ndim - 2 if first.ndim == 3 else 0]}, "
        return f"Dask{self._base.__name__}({rows}lazy)"


_LAZY_TYPES: dict = {}


def lazy_type(cls: type, timed: str | None = None) -> type:
    """The lazy subclass of the result type ``cls`` (one per type), e.g. ``DaskPG2Estimate``."""
    return lazy_result_type(_LAZY_TYPES, "Dask", _Lazy, cls, timed,
                            f"A lazy :class:`{cls.__name__}` of dask arrays; ``.compute()`` gives the in-memory "
                            f"{cls.__name__}.")


class DaskEngine(Engine):
    """Block functions over dask row chunks (see the module doc)."""

    name = "dask"
    lazy = True

    def __init__(self):
        #: Forest -> Delayed of its predictor-free copy (one graph key per imported model)
        self._forests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: id(object) -> (weak reference, graph key name): one key per object while it lives (the name
        #: only: a Delayed value would hold the object and keep it alive)
        self._names: dict = {}
        #: the ``distributed.Client`` computations go to (:meth:`bind`; None: dask's default) and
        #: whether :meth:`persist` shows a progress bar
        self._client: Any = None
        self._progress = False

    def handles(self, obj: Any) -> bool:
        """A dask collection (array, DataFrame, delayed) or a ``distributed.Client`` (a client names
        its engine); dask not loaded: nothing is one."""
        client = getattr(sys.modules.get("distributed"), "Client", None)
        return "dask" in sys.modules and (is_dask(obj) or (client is not None and isinstance(obj, client)))

    # ---- rows ----------------------------------------------------------------------------
    def rows(self, X, names, d, in_memory, what="X", like=None, *, forest=None):
        """An (n, d) dask array with known row chunks and one column chunk (see :meth:`Engine.rows`).
        ``like``: ``(collection, axis)``, blocks an in-memory ``X`` like that per-row argument."""
        da = _require_dask()
        if hasattr(X, "columns") and hasattr(X, "to_dask_array"):
            given = [str(c) for c in X.columns]
            if names is not None:
                order = feature_order(given, list(names), what)
                if order is not None:
                    X = X[[X.columns[i] for i in order]]
            else:
                feature_order(given, given, what)       # refuses duplicated names
                names = given
            reader = RowReader.of(forest)
            if reader is not None or not all(isinstance(t, np.dtype) and t.kind == "f" for t in X.dtypes):
                read = frame_values if reader is None else reader
                read(X._meta_nonempty, what)        # refuses text, date, non-numeric category columns now
                meta = type(X._meta)(np.empty((0, len(X.columns))), columns=X.columns)
                X = X.map_partitions(_float_partition, what, read, meta=meta)
            X = X.to_dask_array(lengths=True)
        elif not isinstance(X, da.Array):           # in-memory X with a dask S / ranking / weights
            rows, names = in_memory(X)
            chunks: Any = -1
            if like is not None and is_dask(like[0]):
                row_chunks = like[0].chunks[like[1]]
                if any(np.isnan(c) for c in row_chunks):
                    raise InputError("the dask argument has unknown chunk sizes; call compute_chunk_sizes() first")
                chunks = (row_chunks, rows.shape[1])
            if chunks == -1:        # a few blocks, so that the workers share the rows
                chunks = (max(1, min(IN_MEMORY_BLOCK_ROWS, -(-len(rows) // 8))), -1)
            X = da.from_array(np.asarray(rows), chunks=chunks)
        if X.ndim != 2:
            raise InputError(f"a dask {what} must be 2-D (n_rows, n_features); got {X.ndim} dimensions")
        if X.shape[1] != d:
            raise InputError(f"{what} has {X.shape[1]} columns but the model expects {d} features")
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        if X.shape[0] < 1:
            raise InputError(f"{what} is empty: it has 0 rows, at least 1 needed")
        X = X.rechunk({1: -1})
        return X, (list(names) if names is not None else default_feature_names(d))

    def n_rows(self, rows) -> int:
        """The (known) number of rows."""
        return int(rows.shape[0])

    def by_rows(self, a, rows, what, *, axis=0, transform=None, width=None, dtype=None):
        """A per-row argument chunked like ``rows`` (see :meth:`Engine.by_rows`)."""
        da = _require_dask()
        if hasattr(a, "to_dask_array"):             # a dask Series / DataFrame (a target column...)
            a = a.to_dask_array(lengths=True)
        if not isinstance(a, da.Array):
            a = transform(a) if transform is not None else np.moveaxis(np.asarray(a), axis, 0)
            if a.shape[:1] != (rows.shape[0],):
                raise InputError(f"{what} has {a.shape[0] if a.ndim else 0} rows but X has {rows.shape[0]}")
            a = a if dtype is None else a.astype(dtype)
            return da.from_array(a, chunks=(rows.chunks[0],) + a.shape[1:])
        if axis:
            a = da.moveaxis(a, axis, 0)
        if transform is not None:
            a = a.map_blocks(transform, dtype=dtype, chunks=(a.chunks[0], (width,)))
        elif dtype is not None:
            a = a.astype(dtype)
        if any(np.isnan(c) for c in a.chunks[0]):
            a = a.compute_chunk_sizes()
        if a.shape[0] != rows.shape[0]:
            raise InputError(f"{what} has {a.shape[0]} rows but X has {rows.shape[0]}")
        return a.rechunk((rows.chunks[0],) + tuple(-1 for _ in range(a.ndim - 1)))

    def head(self, a, n: int) -> np.ndarray:
        """The first ``n`` rows, computed."""
        return np.asarray(a[:n].compute())

    # ---- shipping ------------------------------------------------------------------------
    def ship(self, obj, prefix="xai-object", *, cache=True):
        """``obj`` as one graph key shared by every block (each worker receives it once). With
        ``cache`` the key name is reused per object while it lives (only for objects that do not
        change: a cluster keeps a key's first value); objects that cannot be weakly referenced get a
        fresh key."""
        name = None
        if cache:
            entry = self._names.get(id(obj))
            if entry is not None and entry[0]() is obj:
                name = entry[1]
            else:
                try:
                    key = id(obj)
                    ref = weakref.ref(obj, lambda _, key=key, names=self._names: names.pop(key, None))
                except TypeError:
                    ref = None
                if ref is not None:
                    name = f"{prefix}-{uuid.uuid4().hex}"
                    self._names[id(obj)] = (ref, name)
        return _delayed(obj, name or f"{prefix}-{uuid.uuid4().hex}")

    def ship_forest(self, forest, *, with_model=False):
        """The Forest as one graph key, cached per Forest (``xai-forest-*``); ``with_model``: a fresh
        key (``xai-forest-model-*``) that keeps the model alive only while the graph does."""
        if with_model:
            return _delayed(plain_forest(forest, with_model=True), f"xai-forest-model-{uuid.uuid4().hex}")
        shipped = self._forests.get(forest)
        if shipped is None:
            shipped = _delayed(plain_forest(forest), f"xai-forest-{uuid.uuid4().hex}")
            self._forests[forest] = shipped
        return shipped

    # ---- mapping and reducing ------------------------------------------------------------
    def map_rows(self, block_fn: BlockFn, rows, shipped, per_row: Sequence[Any], width: int, **shared):
        """(n, width) float64 dask array whose block b is ``block_fn(shipped, first_row, X_b,
        *per_row_b, **shared)``; ``shipped`` (a Delayed) is one key shared by every block."""
        da = _require_dask()
        index = da.arange(rows.shape[0], chunks=(rows.chunks[0],), dtype=np.int64)   # block b gets its row indices
        args = [index, "i", rows, "iz"]
        letters = iter("abcdefghjklmnopqrstuvwxy")
        for a in per_row:
            args += [a, "i" + "".join(next(letters) for _ in range(a.ndim - 1))]
        return da.blockwise(_call, "ic", block_fn, None, shipped, None, shared, None, *args,
                            new_axes={"c": width}, concatenate=True, dtype=np.float64, meta=np.empty((0, 0)))

    def columns(self, out, start, stop, *, shape=None, dtype=None, rows_axis=0):
        """``out[:, start:stop]`` reshaped to (n, *shape), cast, rows moved to ``rows_axis``."""
        da = _require_dask()
        a = out[:, start] if shape == () else out[:, start:stop]
        if shape:
            a = a.reshape((out.shape[0],) + tuple(shape))
        a = a if dtype is None else a.astype(dtype)
        return da.moveaxis(a, 0, rows_axis) if rows_axis else a

    def reduce(self, block_fn: Callable, arrays, *args, finish=None, shape=(), dtype=np.float64, combine=None):
        """Exact reduction over the row blocks of ``arrays`` (see :meth:`Engine.reduce`): a Delayed
        total without ``finish``, else a lazy dask array of ``shape``."""
        import dask

        blocks = [a.to_delayed(optimize_graph=False).ravel() for a in arrays]
        parts = [dask.delayed(block_fn, pure=True)(*bs, *args) for bs in zip(*blocks)]
        total = dask.delayed(combine or add_all, pure=True)(parts)
        if finish is None:
            return total
        return _require_dask().from_delayed(dask.delayed(finish, pure=True)(total), shape=shape, dtype=dtype)

    def order_statistics(self, a, columns, ranks, compute=None) -> np.ndarray:
        """Radix selection on the float64 bit patterns of ``a`` (rows on axis 0; best persisted): 8
        passes of per-block 256-bin digit counts, nothing but counts leaves the workers.
        ``compute``: how to compute a Delayed (default :meth:`compute`)."""
        compute = compute or (lambda x: self.compute(x)[0])
        columns = [int(c) for c in columns]
        remaining = np.asarray(ranks, dtype=np.int64).copy()
        prefixes = np.zeros(len(columns), dtype=np.uint64)
        for shift in range(56, -1, -8):
            counts = compute(self.reduce(_digit_counts, [a], columns, [int(p) for p in prefixes], shift))[0]
            cumulative = np.cumsum(counts, axis=1)
            digit = np.argmax(cumulative > remaining[:, None], axis=1)
            below = np.where(digit > 0, cumulative[np.arange(len(columns)), np.maximum(digit - 1, 0)], 0)
            remaining -= below
            prefixes = (prefixes << np.uint64(8)) | digit.astype(np.uint64)
        return from_keys(prefixes)

    def compute(self, *objs) -> tuple:
        """``objs`` computed in one pass (on the bound client when there is one)."""
        import dask

        if self._client is not None:
            return tuple(self._client.compute(list(objs), sync=True, optimize_graph=False))
        return dask.compute(*objs)

    def persist(self, *objs) -> list:
        """``objs`` computed and kept in the workers' memory in one pass (a progress bar with
        ``progress``: ``distributed.progress`` on a client, else ``dask.diagnostics.ProgressBar``)."""
        import dask

        if self._client is not None:
            out = self._client.persist(list(objs), optimize_graph=False)
            from distributed import progress, wait

            if self._progress:
                progress(*out, notebook=False, multi=False)
            else:
                wait(out)
            return list(out)
        if self._progress:
            from dask.diagnostics import ProgressBar

            with ProgressBar():
                return list(dask.persist(*objs, optimize_graph=False))
        return list(dask.persist(*objs, optimize_graph=False))

    def where(self, rows, keep):
        """The kept rows (one pass counts them per block, so the result has known chunks) and their
        positions, as dask arrays."""
        import dask

        da = _require_dask()
        blocks = rows.to_delayed(optimize_graph=False).ravel()
        counts = self.compute(*[dask.delayed(_count_kept, pure=True)(b, keep) for b in blocks])
        starts = np.concatenate([[0], np.cumsum(rows.chunks[0])]).astype(np.int64)
        d = rows.shape[1]
        parts = [da.from_delayed(dask.delayed(_kept_rows, pure=True)(b, keep, int(starts[i])), shape=(c, d + 1),
                                 dtype=np.float64) for i, (b, c) in enumerate(zip(blocks, counts)) if c]
        Z = da.concatenate(parts, axis=0) if parts else da.zeros((0, d + 1), chunks=(1, d + 1))
        return Z[:, :d], Z[:, d].astype(np.int64)

    def take(self, a, positions):
        """``a[positions]``, lazily."""
        return a[np.asarray(positions, dtype=np.int64)]

    def bind(self, client=None, progress=False):
        """This engine computing on ``client`` (a ``distributed.Client``; None: the current client
        if there is one, else dask's default scheduler), sharing its shipped objects."""
        if client is None:
            try:
                from distributed import default_client

                client = default_client()
            except (ImportError, ValueError):
                client = None
        bound = copy.copy(self)
        bound._client, bound._progress = client, bool(progress)
        return bound

    def describe(self) -> str:
        """The scheduler the computations run on."""
        if self._client is not None:
            return f"the Dask cluster (distributed scheduler at {self._client.scheduler.address})"
        import dask

        return f"Dask ({dask.config.get('scheduler', None) or 'default'} scheduler)"

    def result(self, cls, *, timed=None, **fields):
        """An instance of :func:`lazy_type` ``(cls)`` holding the lazy fields."""
        return lazy_type(cls, timed)(**fields)
