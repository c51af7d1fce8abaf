"""The Spark engine: block functions mapped over the rows of a ``pyspark.sql.DataFrame`` with
``mapInArrow`` (Arrow record batches, read as numpy); per-row results stay in Spark, reductions are exact.

- **Rows and their index.** ``X`` is a Spark DataFrame whose columns are the model's features
  (aligned by name, as everywhere; numeric columns read as float64, nulls as NaN; a categorical
  model's string columns read as its category codes, as in memory: ``engines.base.RowReader``), or
  :func:`keyed` ``(df, id_cols)``: a DataFrame whose ``id_cols`` name each row (any sortable,
  non-null, unique combination) and whose other columns are the features. Each row gets a global
  index i (what seeded Monte Carlo draws from: row i uses ``row_seed`` child i, and what
  ``.compute()`` orders by): with ``id_cols``, i is the row's rank in ascending ``id_cols`` order,
  so it does not depend on the partitioning; the in-memory twin is
  ``df.toPandas().sort_values(id_cols)``. Without them, i is the row's position in the DataFrame's
  own order (partition by partition, as ``df.toPandas()`` gives it), which a repartition changes.
- **Bitwise the in-memory result.** Each Arrow batch is cut into runs of consecutive indices and
  the block function runs on each run with the run's first index as ``start``; every block
  function is row-wise (row i depends on row i and i only), so any partitioning, batch size or
  retried task gives the in-memory bits.
- **The model shipped once**: pickled once on the driver into a Spark broadcast (bytes), loaded
  once per Python worker process and cached there (its split tables with it); tasks carry the
  broadcast handle only. The row index of a DataFrame without id columns costs a counting job, kept
  while the DataFrame stays cached (``df.cache()``), so repeated calls on it run one job each.
- **Results.** Per-row results are lazy ``SparkColumns`` (a Spark DataFrame underneath):
  ``.to_spark(name)`` gives a Spark DataFrame keyed by the id columns (or by ``_xai_row`` when
  there are none); ``.compute()`` collects them to numpy in index order. Result objects (a
  ``PG2Estimate``, a ``GreedyRanking``) get the same two methods. Exact reductions (means of
  global MDI, counts) run per batch as exact integer sums, are added on the driver (exact in any
  order) and rounded once.
- **Errors.** A package error inside a block (``XaiError``: NaN in a perturbed feature...) is
  carried back with the rows and raised again on the driver by ``compute()``, not retried;
  anything else fails the task, which Spark retries (``spark.task.maxFailures``).

Nothing here imports pyspark until a Spark DataFrame arrives. ``pip install "xai_plugins[spark]"``
(pyspark >= 4; Java 17). Spark Connect sessions are not supported (the model ships as a broadcast).
"""

from __future__ import annotations

import copy
import pickle
import sys
import uuid
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import default_feature_names, feature_order
from ..errors import InputError, InputTypeError
from ._spark_batches import (
    _ERR,
    _EXC,
    _POS,
    _ROW,
    RowsArg,
    Shipped,
    SparkRows,
    _add_index,
    _keep_fn,
    _keyed_frame,
    _map_fn,
    _numeric,
    _partition_stats,
    _positional_index,
    _quoted,
    _raise_carried,
    _read_fn,
    _reduce_fn,
    _text,
    is_spark_frame,
    keyed,
)
from .base import BlockFn, Engine, RowReader, add_all, lazy_result_type, plain_forest


class SparkColumns:
    """Per-row values on Spark (lazy): columns ``cols`` of the Spark DataFrame ``df`` (which has
    the row index ``_xai_row`` and the id columns), each row's values of trailing ``shape`` and
    ``dtype``; ``rows_axis``: where the rows go in :meth:`compute`'s array."""

    def __init__(self, df, ids: list, n: int, cols: list, trail: tuple, dtype=np.float64, rows_axis: int = 0,
                 carried: dict | None = None):
        self.df, self.ids, self.n, self.cols = df, ids, n, cols
        self.trail, self.dtype, self.rows_axis = tuple(trail), np.dtype(dtype), rows_axis
        #: user column name -> its column in ``df``, for the columns carried with the rows
        self.carried = carried or {}

    def view(self, cols=None, trail=None, dtype=None, rows_axis=None) -> SparkColumns:
        """The same rows with other columns / trailing shape / dtype / rows axis."""
        return SparkColumns(self.df, self.ids, self.n, self.cols if cols is None else cols,
                            self.trail if trail is None else trail, self.dtype if dtype is None else dtype,
                            self.rows_axis if rows_axis is None else rows_axis, self.carried)

    @property
    def shape(self) -> tuple:
        """The shape of :meth:`compute`'s array."""
        shape = list(self.trail)
        shape.insert(self.rows_axis, self.n)
        return tuple(shape)

    @property
    def ndim(self) -> int:
        """Dimensions of :meth:`compute`'s array."""
        return 1 + len(self.trail)

    def __getitem__(self, key):
        """``a[:, order]``: the features (first trailing axis) reordered; nothing else."""
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None) and self.rows_axis == 0
                and self.trail):
            raise InputError("Spark per-row values support only a[:, order] (reordering the features)")
        cols = np.asarray(self.cols, dtype=object).reshape(self.trail)[np.asarray(key[1])]
        return self.view(cols=list(cols.ravel()), trail=cols.shape)

    def compute(self) -> np.ndarray:
        """The values in memory, rows in index order."""
        return ENGINE.compute(self)[0]

    def to_spark(self, name: str = "value"):
        """A Spark DataFrame: the id columns (``_xai_row`` when there are none) and ``name`` (one
        value per row, or an array of the row's values in C order)."""
        return _keyed_frame(self.df, self.ids, [(name, self)])

    def __repr__(self):
        return f"SparkColumns(shape={self.shape}, dtype={self.dtype}, lazy)"


class SparkReduction:
    """A lazy exact reduction (see :meth:`SparkEngine.reduce`); :meth:`compute` runs it."""

    def __init__(self, block_fn, arrays, args, finish, shape, combine=None):
        self.block_fn, self.arrays, self.args, self.finish, self.shape = block_fn, arrays, args, finish, shape
        self.combine = combine or add_all

    def compute(self):
        """The reduced value (run now on Spark, added and finished on the driver)."""
        return ENGINE.compute(self)[0]


class _Lazy:
    """Mixin of the lazy result types made by :meth:`SparkEngine.result`."""

    _base: type
    _timed: str | None

    def compute(self):
        """Compute every Spark field in one pass; the in-memory result of the base type."""
        import time

        fields = dict(self.__dict__)
        lazy = [k for k, v in fields.items() if isinstance(v, (SparkColumns, SparkReduction))]
        start = time.perf_counter()
        for key, value in zip(lazy, ENGINE.compute(*(fields[k] for k in lazy))):
            fields[key] = value.item() if isinstance(value, np.generic) else value
        if self._timed is not None:
            fields[self._timed] = time.perf_counter() - start
        return self._base(**fields)

    def to_spark(self):
        """The per-row fields as one Spark DataFrame keyed by the id columns (``_xai_row`` when
        there are none), one column per field (named as the field)."""
        per_row = [(k, v) for k, v in self.__dict__.items() if isinstance(v, SparkColumns)]
        frames = []
        for df in {id(v.df): v.df for _, v in per_row}.values():
            ids = next(v.ids for _, v in per_row if v.df is df)
            frames.append(_keyed_frame(df, ids, [(k, v) for k, v in per_row if v.df is df]))
        out = frames[0]
        for f in frames[1:]:
            out = out.join(f, on=list(per_row[0][1].ids) or [_ROW])
        return out

    def __repr__(self):
        first = next((v for v in self.__dict__.values() if isinstance(v, SparkColumns)), None)
        return f"Spark{self._base.__name__}({'' if first is None else f'n_rows={first.n}, '}lazy)"


_LAZY_TYPES: dict = {}


def lazy_type(cls: type, timed: str | None = None) -> type:
    """The lazy subclass of the result type ``cls`` (one per type), e.g. ``SparkPG2Estimate``."""
    return lazy_result_type(_LAZY_TYPES, "Spark", _Lazy, cls, timed,
                            f"A lazy :class:`{cls.__name__}` on Spark; ``.compute()`` gives the in-memory "
                            f"{cls.__name__}, "
                            "``.to_spark()`` a keyed Spark DataFrame.")


# --------------------------------------------------------------------------------------------
# what runs on the executors
# --------------------------------------------------------------------------------------------

class SparkEngine(Engine):
    """Block functions over the rows of Spark DataFrames (see the module doc)."""

    name = "spark"
    lazy = True

    def __init__(self):
        self._forests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: the SparkSession of :meth:`bind` (None: the active one)
        self._session: Any = None
        #: cached Spark DataFrame -> its rows per partition (see :meth:`_index`)
        self._counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _context(self):
        """The SparkContext (the bound session's, else the active one); InputError when there is none."""
        from pyspark.sql import SparkSession

        session = self._session or SparkSession.getActiveSession()
        if session is None:
            raise InputError("no active Spark session: start one (SparkSession.builder.getOrCreate())")
        return session.sparkContext

    def handles(self, obj: Any) -> bool:
        """A Spark DataFrame, a :func:`keyed` one, a per-row result of this engine, or a SparkSession
        (a client names its engine)."""
        sql = sys.modules.get("pyspark.sql")
        session = getattr(sql, "SparkSession", None) if sql is not None else None
        return (isinstance(obj, (SparkRows, SparkColumns, SparkReduction, _Lazy)) or is_spark_frame(obj)
                or (session is not None and isinstance(obj, session)))

    # ---- rows ----------------------------------------------------------------------------
    def rows(self, X, names, d, in_memory, what="X", like=None, *, forest=None):
        """``X`` indexed (see the module doc) as :class:`SparkColumns` of its d features (float64,
        in ``names`` order, aligned by column name); an in-memory ``X`` with Spark per-row
        arguments (``like``) becomes a Spark DataFrame indexed by position."""
        carry: list = []
        if isinstance(X, SparkColumns) and X.trail == (d,) and X.rows_axis == 0:      # rows of this engine
            return X, (list(names) if names is not None else default_feature_names(d))
        if isinstance(X, SparkRows):
            df, ids, carry = X.df, X.id_cols, X.carry
        elif is_spark_frame(X):
            df, ids = X, []
        else:
            rows, names = in_memory(X)
            other = like[0] if like is not None else None
            if not isinstance(other, SparkColumns) and self._session is None:
                raise InputTypeError(f"{what}: an in-memory X goes with per-row arguments of this package's Spark "
                                     "results only (or with an engine bound to a SparkSession)")
            session = other.df.sparkSession if isinstance(other, SparkColumns) else self._session
            df = session.createDataFrame(
                [(i, *map(float, r)) for i, r in enumerate(np.asarray(rows))],
                [_ROW, *(f"_xai_v{j}" for j in range(d))])
            return SparkColumns(df, [], len(rows), [f"_xai_v{j}" for j in range(d)], (d,)), list(names)
        given = [c for c in df.columns if c not in ids and c not in carry]
        if names is not None:
            order = feature_order(given, list(names), what)
            features = given if order is None else [given[i] for i in order]
        else:
            feature_order(given, given, what)       # refuses duplicated names
            features, names = given, given
        if len(features) != d:
            raise InputError(f"{what} has {len(features)} feature columns but the model expects {d} features")
        reader = RowReader.of(forest)
        fields = {f.name: f for f in df.schema.fields}
        labelled = [reader is not None and reader.labelled(str(name)) for name in names]
        bad = [f"{c} ({fields[c].dataType.simpleString()})" for c, text in zip(features, labelled)
               if not (_numeric(fields[c]) or text and _text(fields[c]))]
        if bad:
            raise InputTypeError(f"{what} has non-numeric feature columns {bad[:20]}; cast them to numbers first"
                                 " (text is read only in the model's categorical features, as its category labels)")
        from pyspark.sql import functions as F

        cols = [f"_xai_v{j}" for j in range(d)]
        carried = {c: f"_xai_c{j}" for j, c in enumerate(carry)}
        # one SQL projection (a single call into Spark, however many columns)
        selected = df.selectExpr(*map(_quoted, ids),
                                 *((_quoted(c) if text else f"CAST({_quoted(c)} AS DOUBLE)") + f" AS {v}"
                                   for c, v, text in zip(features, cols, labelled)),
                                 *(f"{_quoted(c)} AS {v}" for c, v in carried.items()))
        if ids:     # sorted by the ids into a fixed number of partitions, which adaptive execution keeps as they are
            key = [F.col(_quoted(c)) for c in ids]
            selected = selected.repartitionByRange(max(1, df.rdd.getNumPartitions()), *key).sortWithinPartitions(*key)
        if reader is not None:      # read by the model as in memory, block by block: category labels as codes
            selected = self._read(selected, reader, cols, list(names), what)
        indexed, n = self._index(selected, ids, source=df)
        if n < 1:
            raise InputError(f"{what} is empty: it has 0 rows, at least 1 needed")
        return SparkColumns(indexed, ids, n, cols, (d,), carried=carried), (list(names) if names is not None
                                                                            else default_feature_names(d))

    @staticmethod
    def _read(df, reader, cols, names, what):
        """``df`` with its feature columns ``cols`` (named ``names`` by the model) read by ``reader``
        in each Arrow batch (one Python stage, which keeps the rows' order and partitions)."""
        from pyspark.sql import types as T

        schema = T.StructType([T.StructField(f.name, T.DoubleType()) if f.name in cols else f
                               for f in df.schema.fields])
        return df.mapInPandas(_read_fn(reader, cols, names, what), schema)

    def _index(self, df, ids, source=None):
        """``df`` with the global row index ``_xai_row`` (partition offsets from one counting pass;
        without ids both the count and the index are Spark expressions, no Python stage). ``source``:
        the DataFrame ``df`` was selected from, partition for partition; while Spark keeps it cached
        (its partitions fixed), its counts are kept, so later calls on it skip the counting job."""
        from pyspark.sql import types as T

        if not ids:
            cached = source is not None and bool(getattr(source, "is_cached", False))
            indexed, n, counts = _positional_index(df, self._counts.get(source) if cached else None)
            if cached:
                self._counts[source] = counts
            return indexed, n
        stats = sorted(df.mapInPandas(_partition_stats(ids), "p int, n long, first binary, last binary, bad string")
                       .collect(), key=lambda r: r["p"])
        offsets, firsts, at, last = {}, {}, 0, None
        for r in stats:
            if r["bad"]:
                raise InputError(f"{r['bad']}: the id columns must name each row once (keyed(df, id_cols))")
            if ids and r["n"]:
                first = pickle.loads(r["first"])
                if first == last:
                    raise InputError(f"id columns {ids} are not unique: the id columns must name each row once")
                firsts[r["p"]], last = first, pickle.loads(r["last"])
            offsets[r["p"]] = at
            at += r["n"]
        schema = T.StructType([T.StructField(_ROW, T.LongType(), False), *df.schema.fields])
        return df.mapInPandas(_add_index(offsets, firsts, ids), schema), at

    def n_rows(self, rows) -> int:
        """The number of rows (counted when indexed)."""
        return rows.n

    def by_rows(self, a, rows, what, *, axis=0, transform=None, width=None, dtype=None):
        """A per-row argument: in memory, shipped once (:class:`RowsArg`); a :class:`SparkColumns`
        (rows moved to axis 0, ``transform`` applied per block on Spark); the name of a column carried
        with ``rows`` (``SparkRows(..., carry=)``: a target), its values as they are."""
        if isinstance(a, str) and isinstance(rows, SparkColumns) and a in rows.carried:
            return rows.view(cols=[rows.carried[a]], trail=(), dtype=object)
        if isinstance(a, SparkColumns):
            if axis != a.rows_axis:
                raise InputError(f"{what}: its rows are on axis {a.rows_axis} of the Spark result, not {axis}")
            a = a.view(rows_axis=0)
            if transform is not None:
                a = self.columns(self.map_rows(_transformed, a, transform, [], width), 0, width, dtype=dtype)
            elif dtype is not None:
                a = a.view(dtype=dtype)
            if a.n != rows.n:
                raise InputError(f"{what} has {a.n} rows but X has {rows.n}")
            return a
        if is_spark_frame(a) or isinstance(a, SparkRows):
            raise InputTypeError(f"{what}: pass per-row arguments in memory or as this package's Spark results, "
                                 "not as a Spark DataFrame")
        a = transform(a) if transform is not None else np.moveaxis(np.asarray(a), axis, 0)
        if a.shape[:1] != (rows.n,):
            raise InputError(f"{what} has {a.shape[0] if a.ndim else 0} rows but X has {rows.n}")
        return RowsArg(self.ship(a if dtype is None else a.astype(dtype), cache=False), a.shape)

    def head(self, a, n: int) -> np.ndarray:
        """The first ``n`` rows (by index), in memory."""
        from pyspark.sql import functions as F

        if isinstance(a, RowsArg):
            return np.asarray(a.shipped.get()[:n])
        first = a.view()
        first.df, first.n = a.df.where(F.col(_ROW) < n), min(n, a.n)
        return self.compute(first)[0]

    # ---- shipping ------------------------------------------------------------------------
    def ship(self, obj, prefix="xai-object", *, cache=True):
        """``obj`` pickled once into a Spark broadcast (:class:`Shipped`); ``cache``: one
        broadcast per Forest (only through :meth:`ship_forest`; other objects get a fresh one)."""
        from pyspark import cloudpickle

        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return Shipped(self._context().broadcast(data), f"{prefix}-{uuid.uuid4().hex}")

    def ship_forest(self, forest, *, with_model=False):
        """The Forest without its predictor, broadcast once per Forest and SparkContext;
        ``with_model``: a fresh broadcast whose predictor holds the fitted model (Monte Carlo on
        the executors)."""
        if with_model:
            return self.ship(plain_forest(forest, with_model=True), "xai-forest-model")
        context, shipped = self._forests.get(forest, (None, None))
        if shipped is None or context is not self._context():
            shipped = self.ship(plain_forest(forest), "xai-forest")
            self._forests[forest] = (self._context(), shipped)
        return shipped

    # ---- mapping and reducing ------------------------------------------------------------
    def _frame(self, inputs):
        """One Spark DataFrame holding every Spark input's columns (joined on the row index and
        range-partitioned by it when there are several), and how a block reads each input."""
        from pyspark.sql import functions as F

        base = next(a for a in inputs if isinstance(a, SparkColumns))
        df, specs, joined = base.df, [], {id(base.df): {}}
        for a in inputs:
            if isinstance(a, RowsArg):
                specs.append(a)
                continue
            rename = joined.get(id(a.df))
            if rename is None:
                tag = f"_xai_j{len(joined)}_"
                rename = joined[id(a.df)] = {c: tag + c for c in a.df.columns if c.startswith("_xai_") and c != _ROW}
                df = df.join(a.df.select(_ROW, *(F.col(c).alias(t) for c, t in rename.items())), on=_ROW)
            specs.append(([rename.get(c, c) for c in a.cols], a.trail, a.dtype))
        if len(joined) > 1:
            df = df.repartitionByRange(_ROW).sortWithinPartitions(_ROW)
        return base, df, specs

    def map_rows(self, block_fn: BlockFn, rows, shipped, per_row: Sequence[Any], width: int, **shared):
        """:class:`SparkColumns` (n, width) whose rows in a run of consecutive indices starting at
        ``start`` are ``block_fn(shipped, start, X_run, *per_row_runs, **shared)``."""
        from pyspark.sql import types as T

        base, df, specs = self._frame([rows, *per_row])
        fields = {f.name: f for f in base.df.schema.fields}
        schema = T.StructType([fields[_ROW], *(fields[c] for c in base.ids),
                               *(T.StructField(f"_xai_o{j}", T.DoubleType()) for j in range(width)),
                               T.StructField(_ERR, T.StringType()), T.StructField(_EXC, T.BinaryType())])
        out = df.mapInArrow(_map_fn(block_fn, shipped, specs, shared, base.ids, width), schema)
        return SparkColumns(out, base.ids, base.n, [f"_xai_o{j}" for j in range(width)], (width,))

    def columns(self, out, start, stop, *, shape=None, dtype=None, rows_axis=0):
        """A view of columns ``start:stop`` of ``out`` (trailing ``shape``, ``dtype``, ``rows_axis``)."""
        return out.view(out.cols[start:stop], (stop - start,) if shape is None else shape,
                        np.float64 if dtype is None else dtype, rows_axis)

    def reduce(self, block_fn: Callable, arrays, *args, finish=None, shape=(), dtype=np.float64, combine=None):
        """A lazy :class:`SparkReduction` (see :meth:`Engine.reduce`); ``compute()`` runs it."""
        return SparkReduction(block_fn, list(arrays), args, finish, shape, combine)

    def where(self, rows, keep):
        """The kept rows, re-indexed by one more counting pass (their ids kept), and their positions."""
        from pyspark.sql import types as T

        fields = [f for f in rows.df.schema.fields if f.name != _ROW]
        schema = T.StructType([T.StructField(_POS, T.LongType(), False), *fields])
        kept = rows.df.select(_ROW, *(f.name for f in fields)).mapInPandas(_keep_fn(keep, rows.cols), schema)
        indexed, n = self._index(kept, rows.ids)
        out = SparkColumns(indexed, rows.ids, n, rows.cols, rows.trail, carried=rows.carried)
        return out, out.view(cols=[_POS], trail=(), dtype=np.int64)

    def split_target(self, X, column, what="y_test"):
        """``X`` (a DataFrame or :func:`keyed` one) carrying its target ``column`` with its rows (not
        as a feature), and ``column``, which :meth:`by_rows` then reads from the rows (``what``: the
        argument that named it, for the error when ``X`` has no such column)."""
        df, ids, carry = (X.df, X.id_cols, X.carry) if isinstance(X, SparkRows) else (X, [], [])
        if column not in df.columns:
            raise InputError(f"{what} names the column {column!r}, which X_test does not have; "
                             f"columns: {df.columns[:20]}")
        return SparkRows(df, ids, [*carry, column]), column

    def take(self, a, positions):
        """The rows at ``positions``, lazily (a :class:`SparkColumns` of the rows whose index is one of them)."""
        from pyspark.sql import functions as F

        positions = np.asarray(positions, dtype=np.int64)
        if isinstance(a, RowsArg):
            return np.asarray(a.shipped.get())[positions]
        taken = a.view()
        taken.df, taken.n = a.df.where(F.col(_ROW).isin([int(p) for p in positions])), len(positions)
        return taken

    def persist(self, *objs) -> list:
        """The DataFrames behind ``objs`` cached by Spark (each materialised now, by one count)."""
        frames = {id(o.df): o.df for o in objs if isinstance(o, SparkColumns)}
        for df in frames.values():
            df.persist()
            df.count()
        return list(objs)

    def release(self, *objs) -> None:
        """The DataFrames behind ``objs`` no longer cached."""
        for o in objs:
            if isinstance(o, SparkColumns):
                o.df.unpersist()

    def bind(self, client=None, progress=False):
        """This engine on the SparkSession ``client`` (None: the active one). Spark shows its own
        progress (the session's ``spark.ui.showConsoleProgress``), so ``progress`` changes nothing."""
        bound = copy.copy(self)
        bound._session = client
        return bound

    def describe(self) -> str:
        """Spark and its master."""
        return f"Spark (master {self._context().master})"

    def order_statistics(self, a, columns, ranks, compute=None) -> np.ndarray:
        """The exact order statistics of columns of ``a``, from its values collected in memory."""
        from .memory import MemoryEngine

        return MemoryEngine().order_statistics(self.compute(a)[0], columns, ranks)

    def compute(self, *objs) -> tuple:
        """In-memory values of ``objs``: each Spark DataFrame behind them is collected once (its
        needed columns, Arrow batches as numpy), reductions over collected rows are finished on the
        driver (exact: the same value), others run as one Spark job each."""
        wanted: dict = {}
        for a in objs:
            if isinstance(a, SparkColumns) and a.dtype != object:
                wanted.setdefault(id(a.df), (a.df, set()))[1].update(a.cols)
        for o in objs:         # a reduction over frames collected anyway is finished from their values
            if isinstance(o, SparkReduction) and all(isinstance(a, RowsArg) or id(a.df) in wanted for a in o.arrays):
                for a in o.arrays:
                    if isinstance(a, SparkColumns):
                        wanted[id(a.df)][1].update(a.cols)
        collected = {key: _collect(df, sorted(cols)) for key, (df, cols) in wanted.items()}
        return tuple(self._value(o, collected) for o in objs)

    def _value(self, o, collected):
        if is_spark_frame(o):           # a whole (small) DataFrame: training data
            return o.toPandas()
        if isinstance(o, SparkColumns) and o.dtype == object:      # carried values (a target), as they are
            return o.df.select(_ROW, *o.cols).toPandas().sort_values(_ROW)[o.cols[0]].to_numpy()
        if isinstance(o, SparkColumns):
            data = collected[id(o.df)]
            a = np.column_stack([data[c] for c in o.cols]).reshape((o.n,) + o.trail).astype(o.dtype)
            return np.moveaxis(a, 0, o.rows_axis) if o.rows_axis else a
        if isinstance(o, SparkReduction):
            if all(isinstance(a, RowsArg) or id(a.df) in collected for a in o.arrays):
                blocks = [a.shipped.get() if isinstance(a, RowsArg) else self._value(a.view(rows_axis=0), collected)
                          for a in o.arrays]
                total = o.combine([o.block_fn(*blocks, *(a.get() if isinstance(a, Shipped) else a for a in o.args))])
            else:
                total = _reduce(o)
            return total if o.finish is None else o.finish(total)
        return o

    def result(self, cls, *, timed=None, **fields):
        """An instance of :func:`lazy_type` ``(cls)`` holding the lazy fields."""
        return lazy_type(cls, timed)(**fields)


def _transformed(transform, start, block):
    return transform(block)


def _collect(df, cols) -> dict:
    """Columns ``cols`` of ``df`` in row-index order: {column: (n,) float64}, brought to the driver
    as Arrow batches (no Python stage on the executors); a package error carried by a row raised."""
    carried = _EXC in df.columns
    table = df.select(_ROW, *cols, *([_EXC] if carried else [])).toArrow()
    if carried and table.column(_EXC).null_count < table.num_rows:
        raise pickle.loads(next(v for v in table.column(_EXC).to_pylist() if v is not None))
    order = np.argsort(np.asarray(table.column(_ROW).to_numpy()), kind="stable")
    return {c: np.asarray(table.column(c).to_numpy(), dtype=np.float64)[order] for c in cols}


def _reduce(o: SparkReduction) -> list:
    """Run an exact reduction on Spark: per batch, the block function's exact sums (pickled);
    added on the driver."""
    _, df, specs = ENGINE._frame(o.arrays)
    rows = df.mapInArrow(_reduce_fn(o.block_fn, specs, o.args, o.combine),
                         "part binary, _xai_exception binary").collect()
    _raise_carried(rows)
    return o.combine([pickle.loads(r["part"]) for r in rows])


#: the registered instance
ENGINE = SparkEngine()


#: the public name: the engine itself is reached through :func:`xai_plugins.engines.engine_for`
__all__ = ["keyed"]
