"""The Spark engine's pieces that need no engine: the row index of a DataFrame (:func:`keyed`, the
positional index), the batches cut into runs of consecutive rows, and the functions Spark runs on the
executors: blocks and reductions on Arrow record batches (``mapInArrow``: no pandas on the way in or out),
filters, reads and the row index on pandas ones (``mapInPandas``). See :mod:`xai_plugins.engines.spark`."""

from __future__ import annotations

import pickle
import sys
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, InputTypeError, XaiError
from .base import call_block

__all__: list[str] = []

_ROW = "_xai_row"           # the global row index
_POS = "_xai_pos"           # a kept row's index among the rows it was kept from (SparkEngine.where)
_ERR = "_xai_error"         # a package error raised in the row's block (message), else null
_EXC = "_xai_exception"     # the same error, pickled
_INSTALL = 'Spark input needs pyspark: pip install "xai_plugins[spark]" (and Java 17)'


def is_spark_frame(obj: Any) -> bool:
    """True for a ``pyspark.sql.DataFrame``; never imports pyspark."""
    sql = sys.modules.get("pyspark.sql")
    frame = getattr(sql, "DataFrame", None) if sql is not None else None
    return frame is not None and isinstance(obj, frame)


class SparkRows:
    """A Spark DataFrame whose ``id_cols`` key its rows (see :func:`keyed`); ``carry``: columns
    that are not features either, carried with the rows (a target: per-row arguments may name them);
    the other columns are the features."""

    def __init__(self, df, id_cols: Sequence[str], carry: Sequence[str] = ()):
        if not is_spark_frame(df):
            raise InputTypeError(f"keyed() takes a pyspark.sql.DataFrame; got {type(df).__name__}")
        ids = [id_cols] if isinstance(id_cols, str) else [str(c) for c in id_cols]
        carry = [str(c) for c in carry]
        missing = [c for c in ids + carry if c not in df.columns]
        if missing or not (ids or carry) or len(set(ids + carry)) != len(ids + carry):
            raise InputError(f"id_cols must be distinct columns of the DataFrame; got {ids} (missing {missing}; "
                             f"columns {df.columns[:20]})")
        if any(c.startswith("_xai_") for c in ids + carry):
            raise InputError("id column names starting with '_xai_' are reserved by xai_plugins")
        self.df, self.id_cols, self.carry = df, ids, carry

    def __repr__(self):
        return f"SparkRows(id_cols={self.id_cols}, columns={len(self.df.columns)})"


def keyed(df, id_cols: Sequence[str] | str) -> SparkRows:
    """A Spark DataFrame with its rows keyed by id columns, to explain on Spark.

    Pass the result as ``X`` to :func:`xai_plugins.pg2`, :func:`xai_plugins.pgi2`,
    :func:`xai_plugins.greedy_pg2_ranking`, :func:`xai_plugins.local_mdi`,
    :func:`xai_plugins.global_mdi`, :func:`xai_plugins.faithfulness` (or to
    :func:`xai_plugins.report.audit`). Results come back keyed by these columns, and row i (for
    seeded Monte Carlo and for ``.compute()``'s order) is the i-th in ascending ``id_cols`` order,
    whatever the partitioning. The other columns are the features.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows: the id columns and the model's features (aligned by name).
    id_cols : str or sequence of str
        The id column(s); the ids must be unique and non-null (checked). Names
        starting with ``_xai_`` are reserved.

    Returns
    -------
    SparkRows
        ``df`` with its id columns, for the functions above.

    Raises
    ------
    InputTypeError
        ``df`` is not a ``pyspark.sql.DataFrame``.
    InputError
        ``id_cols`` that are not distinct columns of ``df``, or names starting with ``_xai_``.

    See Also
    --------
    xai_plugins.pg2 : Lazy on Spark rows; ``.to_spark()`` gives a keyed Spark DataFrame.

    Examples
    --------
    On a Spark session (not run here: it needs Java and takes seconds to start):

    >>> from pyspark.sql import SparkSession                            # doctest: +SKIP
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()   # doctest: +SKIP
    >>> rows = keyed(spark.read.parquet("rows/*.parquet"), ["id"])      # doctest: +SKIP
    >>> xp.pg2(model, rows, S=["MedInc"]).to_spark().write.parquet("pg2/")   # doctest: +SKIP

    Anything but a Spark DataFrame is refused:

    >>> import pandas as pd
    >>> from xai_plugins.engines.spark import keyed
    >>> keyed(pd.DataFrame({"id": [1, 2], "x": [0.5, 1.5]}), "id")
    Traceback (most recent call last):
    ...
    xai_plugins.errors.InputTypeError: keyed() takes a pyspark.sql.DataFrame; got DataFrame
    """
    return SparkRows(df, id_cols)


# --------------------------------------------------------------------------------------------
# shipping
# --------------------------------------------------------------------------------------------

#: Python worker process: broadcast key -> the unpickled object (one load per process)
_LOADED: dict = {}


class Shipped:
    """A picklable handle of an object broadcast once as pickled bytes; :meth:`get` loads it
    once per Python worker process."""

    def __init__(self, broadcast, key: str):
        self.broadcast, self.key = broadcast, key

    def get(self):
        """The object (unpickled on first use in this process, then cached)."""
        obj = _LOADED.get(self.key)
        if obj is None:
            obj = _LOADED[self.key] = pickle.loads(self.broadcast.value)
        return obj


class RowsArg:
    """An in-memory per-row argument (rows on axis 0) shipped once; blocks take its rows by index."""

    def __init__(self, shipped: Shipped, shape: tuple):
        self.shipped, self.shape, self.n = shipped, shape, shape[0]


# --------------------------------------------------------------------------------------------
# per-row collections
# --------------------------------------------------------------------------------------------



def _spark_type(dtype):
    from pyspark.sql import types as T

    return {"b": T.BooleanType(), "i": T.LongType(), "u": T.LongType()}.get(np.dtype(dtype).kind, T.DoubleType())


def _keyed_frame(df, ids, fields):
    """``df``'s rows as id columns plus one column per ``(name, SparkColumns)`` of this ``df``; a
    package error raised in a block fails the query with its message."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    key = list(ids) or [_ROW]
    out = [F.col(c) for c in key]
    for name, c in fields:
        cols = [F.col(x).cast(_spark_type(c.dtype)) for x in c.cols]
        out.append((cols[0] if not c.trail else F.array(*cols).cast(T.ArrayType(_spark_type(c.dtype)))).alias(name))
    checked = df.where(F.assert_true(F.col(_ERR).isNull(), F.col(_ERR)).isNull()) if _ERR in df.columns else df
    return checked.select(*out)


def _key(batch, ids, i):
    return tuple(batch[c].iat[i] for c in ids)


def _partition_stats(ids):
    """mapInPandas function: per partition, its id, row count, first and last key (pickled) and
    why its ids are unusable (nulls, duplicates), if they are."""
    import pandas as pd
    from pyspark import TaskContext

    def run(batches):
        n, first, last, bad = 0, None, None, None
        for b in batches:
            if not len(b):
                continue
            if ids and bad is None:
                keys = b[ids]
                if keys.isna().to_numpy().any():
                    bad = f"id columns {ids} hold nulls"
                elif keys.duplicated().any() or (last is not None and _key(b, ids, 0) == last):
                    bad = f"id columns {ids} are not unique"
                first = _key(b, ids, 0) if first is None else first
                last = _key(b, ids, len(b) - 1)
            n += len(b)
        yield pd.DataFrame({"p": [TaskContext.get().partitionId()], "n": [n], "first": [pickle.dumps(first)],
                            "last": [pickle.dumps(last)], "bad": [bad]})
    return run


def _add_index(offsets, firsts, ids):
    """mapInPandas function: ``_xai_row`` = the partition's offset + the row's position in it."""
    from pyspark import TaskContext

    def run(batches):
        p = TaskContext.get().partitionId()
        at = offsets[p]
        for b in batches:
            if not len(b):
                continue
            if at == offsets[p] and ids and _key(b, ids, 0) != firsts[p]:
                raise RuntimeError("Spark gave a partition other rows than when it counted them (a non-deterministic "
                                   "source or sort); persist or checkpoint the DataFrame first")
            b.insert(0, _ROW, np.arange(at, at + len(b), dtype=np.int64))
            at += len(b)
            yield b
    return run


def _positional_index(df, counts=None):
    """``df`` with ``_xai_row`` = its partition's offset + the row's position in the partition
    (``monotonically_increasing_id``'s low 33 bits), from one count per partition (a Spark job;
    ``counts``: {partition: rows} when known already); the row count; the counts."""
    from pyspark.sql import functions as F

    if counts is None:
        counts = dict(df.select(F.spark_partition_id().alias("p")).groupBy("p").count().collect())
    offsets = np.concatenate([[0], np.cumsum([counts.get(p, 0) for p in range(max(counts, default=-1) + 1)])])
    starts = ", ".join(str(int(o)) for o in list(offsets[:-1]) or [0])
    row = (f"element_at(array({starts}), spark_partition_id() + 1) + monotonically_increasing_id()"
           " - shiftleft(CAST(spark_partition_id() AS BIGINT), 33)")
    return df.selectExpr(f"{row} AS {_ROW}", *map(_quoted, df.columns)), int(offsets[-1]), counts


def _runs(index: np.ndarray):
    """(slice of the sorted batch, first index) of each run of consecutive row indices."""
    cut = np.flatnonzero(np.diff(index) != 1) + 1
    edges = np.concatenate([[0], cut, [len(index)]])
    return [(slice(a, b), int(index[a])) for a, b in zip(edges[:-1], edges[1:])]


def _floats(batch, cols) -> np.ndarray:
    """Columns ``cols`` of the Arrow record batch as one (b, len(cols)) float64 array (nulls as NaN)."""
    return np.column_stack([np.asarray(batch.column(c).to_numpy(zero_copy_only=False), dtype=np.float64)
                            for c in cols])


def _blocks(batch, inputs):
    """Per run of consecutive indices in the Arrow record ``batch``: (start, rows, blocks of each input)."""
    index = batch.column(_ROW).to_numpy()
    order = np.argsort(index, kind="stable")
    index = index[order]
    for where, start in _runs(index):
        rows = order[where]
        blocks = []
        for spec in inputs:
            if isinstance(spec, RowsArg):
                blocks.append(spec.shipped.get()[index[where]])
            else:
                cols, shape, dtype = spec
                block = _floats(batch, cols)[rows]
                blocks.append(block.reshape((len(rows),) + shape).astype(dtype, copy=False))
        yield start, rows, blocks


def _map_fn(block_fn, shipped, inputs, shared, ids, width):
    """mapInArrow function: each record batch's rows through ``block_fn`` (a run of consecutive
    indices at a time), as the row index, the id columns, ``width`` float64 columns and the error
    columns (a package error raised in a block carried by every row of the batch)."""
    import pyarrow as pa

    names = [_ROW, *ids, *(f"_xai_o{j}" for j in range(width)), _ERR, _EXC]

    def run(batches):
        obj = shipped.get() if isinstance(shipped, Shipped) else shipped
        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            out = np.empty((n, width))
            error = None
            for start, rows, blocks in _blocks(batch, inputs):
                try:
                    out[rows] = call_block(block_fn, obj, start, blocks[0], blocks[1:], shared).reshape(len(rows),
                                                                                                        width)
                except XaiError as exc:     # the user's input: carried to the driver, not retried
                    error = exc
                    break
            if error is None:
                errors = [pa.nulls(n, pa.string()), pa.nulls(n, pa.binary())]
            else:
                errors = [pa.array([f"{type(error).__name__}: {error}"] * n, pa.string()),
                          pa.array([pickle.dumps(error)] * n, pa.binary())]
            columns = np.asfortranarray(out)
            yield pa.RecordBatch.from_arrays([batch.column(c) for c in (_ROW, *ids)]
                                             + [pa.array(columns[:, j]) for j in range(width)] + errors, names)
    return run


def _reduce_fn(block_fn, inputs, args, combine):
    """mapInArrow function: per record batch, ``combine`` of ``block_fn`` on each run (pickled), or
    the package error it raised (pickled)."""
    import pyarrow as pa

    def run(batches):
        loaded = [a.get() if isinstance(a, Shipped) else a for a in args]
        for batch in batches:
            if not batch.num_rows:
                continue
            try:
                part, error = pickle.dumps(combine([block_fn(*blocks, *loaded)
                                                    for _, _, blocks in _blocks(batch, inputs)])), None
            except XaiError as exc:
                part, error = None, pickle.dumps(exc)
            yield pa.RecordBatch.from_arrays([pa.array([part], pa.binary()), pa.array([error], pa.binary())],
                                             ["part", _EXC])
    return run


def _raise_carried(rows):
    for r in rows:
        if r[_EXC] is not None:
            raise pickle.loads(r[_EXC])


# --------------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------------

def _keep_fn(keep, cols):
    """mapInPandas function: the rows whose features ``cols`` pass ``keep``, their index renamed ``_xai_pos``."""
    def run(batches):
        for b in batches:
            if len(b):
                kept = b[np.asarray(keep(b[cols].to_numpy(dtype=np.float64)), dtype=bool)]
                yield kept.rename(columns={_ROW: _POS})
    return run


def _read_fn(reader, cols, names, what):
    """mapInPandas function: the feature columns ``cols`` of each batch read by ``reader`` (float64)."""
    def run(batches):
        for b in batches:
            if len(b):
                b[cols] = reader(b[cols].set_axis(names, axis=1), what)
                yield b
    return run


def _text(field) -> bool:
    from pyspark.sql import types as T

    return isinstance(field.dataType, T.StringType)


def _numeric(field) -> bool:
    from pyspark.sql import types as T

    return isinstance(field.dataType, (T.NumericType, T.BooleanType, T.NullType))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
