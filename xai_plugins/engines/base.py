"""The row engine interface: what the runner asks of an engine, and the helpers every engine shares.

The methods declare their per-row work as row methods (:mod:`xai_plugins.engines.method`), run by
:mod:`xai_plugins.engines.runner`, the one caller of :meth:`Engine.map_rows`, :meth:`Engine.columns`
and :meth:`Engine.reduce`. A *block function* is what the runner maps: the per-row work of a method
on a block of rows::

    block_fn(shipped, start, X_block, *per_row_blocks, **shared) -> (b, width) float64 array

``shipped`` is the object shared by every block (a predictor-free Forest, an AcME object, a seed),
``start`` the index of the block's first row in the whole input (seeded draws depend on it, never
on the blocking), ``X_block`` (b, d) float64 rows in the model's feature order, ``per_row_blocks``
the matching rows of the per-row arguments (sets, rankings, attribution values), ``shared`` plain
keyword arguments (picklable). Row i's output may depend on row i and ``start + i`` only, so an
engine may cut the rows into blocks any way it likes and the result is bitwise the in-memory one.
An *exact reduction* is a block function returning a list of Python ints / integer arrays (exact
sums, :mod:`xai_plugins.exact_sum`, or counts) that are added elementwise (exact in any order),
then finished once on the driver.

An engine implements :class:`Engine` and registers with :func:`xai_plugins.engines.register`;
:func:`xai_plugins.engines.engine_for` picks the engine of the inputs (in memory by default).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence, cast

import numpy as np

from ..errors import InputError, ModelGoneError

__all__: list[str] = []      # internal module: the public names are in the API reference

BlockFn = Callable[..., np.ndarray]


class Engine:
    """One way of running block functions over rows. Subclasses implement every method below.

    Collections: ``rows`` is the engine's own (n, d) row collection (returned by :meth:`rows`);
    per-row arguments and results are the engine's collections too (numpy for the in-memory
    engine, lazy dask arrays for Dask...). ``lazy`` says whether results need ``.compute()``.
    """

    name: str = "engine"
    lazy: bool = True

    def handles(self, obj: Any) -> bool:
        """Whether ``obj`` is one of this engine's collections. Must never import the engine's
        library (look it up in ``sys.modules``: if it is not loaded, no object can be one)."""
        raise NotImplementedError

    def rows(self, X: Any, names: Sequence[str] | None, d: int, in_memory: Callable, what: str = "X", *,
             forest: Any = None):
        """``(rows, names)``: ``X`` as an (n, d) float64 row collection whose columns follow
        ``names`` (aligned by column name when ``X`` has columns; without ``names`` its columns name
        the features) and the feature names. An in-memory ``X`` (given with another argument of
        this engine) goes through ``in_memory(X) -> (rows, names)``. ``forest``: the model's Forest;
        when it has categorical features, the engine reads each block of
        ``X``'s columns with its :class:`RowReader` (category and text columns as the model's codes),
        as ``Forest.rows`` reads the same rows in memory. Refuses empty or misshapen input
        with :class:`~xai_plugins.errors.InputError`."""
        raise NotImplementedError

    def n_rows(self, rows: Any) -> int:
        """The number of rows of a row collection."""
        raise NotImplementedError

    def by_rows(self, a: Any, rows: Any, what: str, *, axis: int = 0, transform: Callable | None = None,
                width: int | None = None):
        """A per-row argument (numpy or this engine's collection; rows on ``axis``, moved to axis 0)
        blocked like ``rows``; ``transform(block) -> (b, width)`` is applied to it block by block
        (to the whole of an in-memory ``a``). InputError when its row count differs from ``rows``."""
        raise NotImplementedError

    def head(self, a: Any, n: int) -> np.ndarray:
        """The first ``n`` rows of a collection, in memory."""
        raise NotImplementedError

    def held(self, a: Any, n: int) -> Any:
        """The rows of the collection ``a`` that the driver reads without computing more than ``n`` of
        them (its checks and cost estimates read these): the first ``n`` rows (none for 0); the
        in-memory engine holds every row already and returns ``a`` itself."""
        return self.head(a, n) if n else np.empty((0, 0))

    def ship(self, obj: Any, prefix: str = "xai-object", *, cache: bool = True) -> Any:
        """``obj`` as the one shared object of :meth:`map_rows` / :meth:`reduce`, sent to each worker
        once. ``cache``: reuse the shipped handle per object while it lives (objects that do not change)."""
        raise NotImplementedError

    def ship_forest(self, forest: Any, *, with_model: bool = False) -> Any:
        """A Forest shipped without its (weakly held, unpicklable) predictor, once per Forest; with
        ``with_model`` a fresh copy whose predictor holds the fitted model (Monte Carlo on workers)."""
        raise NotImplementedError

    def map_rows(self, block_fn: BlockFn, rows: Any, shipped: Any, per_row: Sequence[Any], width: int, **shared):
        """The (n, width) float64 collection whose block starting at row ``start`` is
        ``block_fn(shipped, start, X_block, *per_row_blocks, **shared)``."""
        raise NotImplementedError

    def columns(self, out: Any, start: int, stop: int, *, shape: tuple = (), dtype: Any = None, rows_axis: int = 0):
        """Columns ``start:stop`` of a :meth:`map_rows` result as a per-row collection of trailing
        ``shape`` (``()``: (n,); default ``(stop - start,)``), cast to ``dtype``, rows moved to ``rows_axis``."""
        raise NotImplementedError

    def reduce(self, block_fn: Callable, arrays: Sequence[Any], *args, finish: Callable | None = None,
               shape: tuple = (), dtype: Any = np.float64, combine: Callable | None = None):
        """Exact reduction: ``block_fn(*blocks, *args)`` on each block of rows of the per-row
        collections ``arrays`` (blocked alike) returns a list of exact ints / integer arrays; the
        lists are added elementwise and ``finish(total)`` (of ``shape`` / ``dtype``) gives the result
        (the total itself without ``finish``). ``combine(parts) -> total``: another way of joining the
        blocks' parts (default :func:`add_all`), which must give the same total for any blocking.
        Lazy on a lazy engine."""
        raise NotImplementedError

    def where(self, rows: Any, keep: Callable[[np.ndarray], np.ndarray]) -> tuple[Any, Any]:
        """``(kept, positions)``: the rows of ``rows`` for which ``keep(X_block) -> (b,) bool`` holds
        (decided block by block, on the engine), as a row collection indexed 0..m-1 in their order,
        and their positions among ``rows`` (an (m,) int64 per-row collection)."""
        raise NotImplementedError

    def split_target(self, X: Any, column: str, what: str = "y_test") -> tuple[Any, Any]:
        """``(features, target)``: ``X`` without its target ``column``, and the target as a per-row
        argument of :meth:`by_rows` (here: a DataFrame's column; InputError when ``X`` has none, naming
        the argument ``what`` that named the column). Also what holds a protected attribute apart."""
        if column not in getattr(X, "columns", ()):
            raise InputError(f"{what} names the column {column!r}, which X_test does not have; "
                             f"columns: {[str(c) for c in getattr(X, 'columns', [])][:20]}")
        return X.drop(columns=[column]), X[column]

    def take(self, a: Any, positions: np.ndarray) -> Any:
        """The rows at the sorted ``positions`` of the per-row collection ``a`` (lazily on a lazy
        engine: :meth:`compute` brings them back; a target's labels keep their dtype)."""
        raise NotImplementedError

    def persist(self, *objs: Any) -> list:
        """``objs`` computed and kept on the engine (in cluster memory), to be read several times."""
        raise NotImplementedError

    def release(self, *objs: Any) -> None:
        """Forget what :meth:`persist` kept of ``objs``."""

    def bind(self, client: Any = None, progress: bool = False) -> Engine:
        """This engine computing on ``client`` (Dask: a ``distributed.Client``; Spark: a
        ``SparkSession``; None: the current one), showing its progress when ``progress``."""
        raise NotImplementedError

    def describe(self) -> str:
        """Where this engine computes, in words ("the Dask cluster (distributed scheduler at ...)")."""
        raise NotImplementedError

    def order_statistics(self, a: Any, columns: Sequence[int], ranks: Sequence[int], compute: Callable | None = None):
        """The exact ``ranks[t]``-th smallest value (0-based) of column ``columns[t]`` of the per-row
        collection ``a``, as a numpy array (computed now)."""
        raise NotImplementedError

    def compute(self, *objs: Any) -> tuple:
        """The in-memory values of ``objs`` (collections or lazy reductions), computed in one pass."""
        raise NotImplementedError

    def result(self, cls: type, *, timed: str | None = None, **fields):
        """``cls(**fields)``, lazily on a lazy engine: an instance of a subclass of ``cls`` whose
        ``compute()`` computes every collection field in one pass and returns ``cls(**computed)``
        (``timed``: the field that then receives the wall seconds of that compute)."""
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# helpers every engine shares
# --------------------------------------------------------------------------------------------

def call_block(block_fn: BlockFn, shipped: Any, start: int, X: np.ndarray, per_row: Sequence[np.ndarray],
               shared: dict) -> np.ndarray:
    """``block_fn`` on one block, its result as a C-contiguous float64 array (what engines store)."""
    return np.ascontiguousarray(block_fn(shipped, int(start), X, *per_row, **shared), dtype=np.float64)


def pack(*arrays) -> np.ndarray:
    """Per-row arrays (rows on axis 0) flattened side by side into one (n, width) float64 block."""
    n = len(arrays[0])
    return np.concatenate([np.reshape(np.asarray(a, dtype=np.float64), (n, -1)) for a in arrays], axis=1)


def add_all(parts: Sequence[list]) -> list:
    """Elementwise sum of lists of exact ints / integer arrays (exact in any order)."""
    out = list(parts[0])
    for p in parts[1:]:
        out = [a + b for a, b in zip(out, p)]
    return out


class _Held:
    """A strong stand-in for the weak reference of a ModelPredictor (picklable)."""

    def __init__(self, obj):
        self.obj = obj

    def __call__(self):
        return self.obj


def held_predictor(forest):
    """A copy of the Forest's model predictor that holds the fitted model strongly, so that it can
    be pickled and sent to workers (the Forest's own predictor holds the model weakly)."""
    predictor = forest.predict_fn
    if predictor is None:
        raise InputError("this Forest carries no model predictor; Monte Carlo sampling needs the fitted model")
    model = predictor._model() if hasattr(predictor, "_model") else None
    if model is None:
        raise ModelGoneError("the model this Forest was imported from no longer exists; Monte Carlo on "
                             "a cluster ships the fitted model to the workers, keep a reference to it")
    held = copy.copy(predictor)
    held._model = _Held(model)
    return held


class RowReader:
    """How a model reads a block of its feature columns (a pandas DataFrame named as its features):
    category and text columns as its category codes, numbers equal to its missing-value marker as
    NaN, category codes checked; exactly :meth:`Forest.rows <xai_plugins.forest.layout.Forest.rows>`
    (it runs that method on this small, picklable copy of what it reads: no tree), so a row engine
    that applies it to each block gets the in-memory rows bit for bit."""

    FIELDS = ("feature_names", "n_features", "category_labels", "numeric_labels", "n_categories", "missing_value",
              "input_limits", "nan_refused")
    feature_names: list | None
    category_labels: list | None

    def __init__(self, forest):
        for name in self.FIELDS:
            setattr(self, name, getattr(forest, name))

    @classmethod
    def of(cls, forest) -> RowReader | None:
        """The reader of ``forest`` (None: no Forest, or a model without categorical features, whose
        numeric columns are read as they are; a missing-value marker is read by the block functions)."""
        if forest is None or (forest.n_categories is None and forest.category_labels is None):
            return None
        return cls(forest)

    def labelled(self, name: str) -> bool:
        """Whether the feature ``name`` has category labels (its column may hold text)."""
        labels, names = self.category_labels, self.feature_names or []
        return labels is not None and name in names and labels[names.index(name)] is not None

    def __call__(self, frame, what: str = "X") -> np.ndarray:
        """The (b, d) float64 rows of the block ``frame``."""
        from ..forest.layout import Forest

        return Forest.rows(cast(Any, self), frame, what=what, allow_nan=True)[0]


def plain_forest(forest, *, with_model: bool = False):
    """A shallow copy of ``forest`` that pickles: without its predictor, or (``with_model``) with
    a predictor holding the fitted model strongly (:func:`held_predictor`)."""
    shipped = copy.copy(forest)
    object.__setattr__(shipped, "predict_fn", held_predictor(forest) if with_model else None)
    return shipped


def order_keys(values) -> np.ndarray:
    """uint64 keys ordered like the float64 values (sign flipped for positives, all bits for negatives)."""
    u = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(u >> np.uint64(63), ~u, u | np.uint64(1 << 63))


def from_keys(keys) -> np.ndarray:
    """The float64 values of :func:`order_keys` keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    u = np.where(keys >> np.uint64(63), keys & np.uint64((1 << 63) - 1), ~keys)
    return u.view(np.float64)


def lazy_result_type(cache: dict, prefix: str, lazy: type, cls: type, timed: str | None, doc: str) -> type:
    """The lazy subclass of the result type ``cls`` for one engine (``prefix`` + its name, e.g.
    ``DaskPG2Estimate``; bases: the engine's ``lazy`` mixin, then ``cls``), made once per (cls, timed)
    and kept in the engine's ``cache``."""
    key = (cls, timed)
    if key not in cache:
        cache[key] = type(f"{prefix}{cls.__name__}", (lazy, cls),
                          {"_base": cls, "_timed": timed, "__module__": lazy.__module__, "__doc__": doc})
    return cache[key]
