"""The only module that touches the compiled C core (``xai_plugins._core``).

It fills the ``xai_forest`` struct of ``csrc/xai.h`` from a :class:`~xai_plugins.forest.Forest`
(keeping every array alive while the struct is used), splits rows into chunks run on a thread
pool (cffi releases the GIL around each C call, so chunks run in parallel; each row is computed
independently, so results do not depend on the thread count), and turns C status codes into
Python exceptions.
"""

from __future__ import annotations

import ctypes
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ._validation import core_workers
from .errors import InputError, InputIndexError, ModelStructureError, NativeMemoryError, UnsupportedModelError, XaiError

__all__: list[str] = []      # internal module: the public names are in the API reference

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - depends on the build
    raise ImportError("the C core of xai_plugins is not built; reinstall with `pip install -e .` "
                      f"from the project root ({exc})") from exc

ffi, lib = _core.ffi, _core.lib
ABI_VERSION = 16
if lib.xai_abi_version() != ABI_VERSION:  # pragma: no cover - depends on the build
    raise ImportError(f"stale C core build (ABI {lib.xai_abi_version()}, expected {ABI_VERSION}); "
                      "rebuild with `pip install -e .`")

#: C status -> the package exception raised for it (the message is the C core's xai_strerror)
_ERRORS = {
    lib.XAI_E_SIZE: InputError,
    lib.XAI_E_INDEX: InputIndexError,
    lib.XAI_E_STRUCTURE: ModelStructureError,
    lib.XAI_E_VALUE: InputError,
    lib.XAI_E_UNSUPPORTED: UnsupportedModelError,
    lib.XAI_E_NOMEM: NativeMemoryError,
}


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing elsewhere): after a
    step that frees much memory in blocks the C allocator keeps (XGBoost's UBJSON writer's scratch, numpy
    temporaries below its mmap threshold), so that they neither stay resident for the life of the process
    nor add to the peak of a later step whose large blocks come from fresh pages."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _check(status: int, what: str, first_row: int = 0) -> None:
    """Raise the package exception matching a C status, with the C core's description of it and
    where the C core found the problem (``first_row``: the index in the caller's X of the chunk's
    first row)."""
    if status == lib.XAI_OK:
        return
    message = ffi.string(lib.xai_strerror(status)).decode()
    raise _ERRORS.get(status, XaiError)(f"{what}: {message}{_error_location(first_row)}")


def _error_location(first_row: int) -> str:
    """" (at tree t, node k, row i)" as recorded by the C core in this thread (node local to its
    tree), or ""."""
    tree, node, row = ffi.new("int64_t *"), ffi.new("int64_t *"), ffi.new("int64_t *")
    lib.xai_last_error(tree, node, row)
    parts = [f"tree {tree[0]}"] if tree[0] >= 0 else []
    parts += [f"node {node[0]}"] if node[0] >= 0 else []
    parts += [f"row {first_row + row[0]}"] if row[0] >= 0 else []
    return f" (at {', '.join(parts)})" if parts else ""


def _ptr(ctype: str, array):
    """A ``ctype`` pointer to the data of a C-contiguous numpy array (NULL for None); a
    non-contiguous array raises ValueError rather than handing C a strided buffer."""
    return ffi.NULL if array is None else ffi.cast(ctype, ffi.from_buffer(array))


#: the Forest arrays an ``xai_forest`` struct points at (:class:`CForest` holds them while C may read them)
_STRUCT_ARRAYS = ("base_score", "tree_offset", "tree_target", "left_child", "right_child", "feature", "threshold",
                  "missing_left", "value", "impurity", "n_categories", "cat_start", "cat_bits")


class CForest:
    """The ``xai_forest`` struct of ``csrc/xai.h`` for a Forest, owning a reference to every array
    it points at (so none can be freed while C may read it). ``threshold_rank`` and ``rank_count``
    (PG² only) are the per-node ranks and per-feature boundary counts of
    :func:`xai_plugins.prediction_gap.split_boundaries`, validated in C once, here."""

    def __init__(self, forest, threshold_rank: np.ndarray | None = None, rank_count: np.ndarray | None = None):
        if threshold_rank is not None:
            threshold_rank = np.ascontiguousarray(threshold_rank, dtype=np.int32)
            rank_count = np.ascontiguousarray(rank_count, dtype=np.int32)
            if threshold_rank.shape != (forest.n_nodes,) or rank_count.shape != (forest.n_features,):
                raise InputError(f"threshold_rank must have one entry per node ({forest.n_nodes}) and "
                                 f"rank_count one per feature ({forest.n_features})")
        # the arrays, not the Forest: a Forest's cached struct must not keep its own (weak) cache key alive
        self.arrays = tuple(getattr(forest, name) for name in _STRUCT_ARRAYS)
        self.n_outputs = forest.n_outputs
        self.threshold_rank, self.rank_count = threshold_rank, rank_count
        s = ffi.new("xai_forest *")
        s.n_trees, s.n_nodes, s.n_features = forest.n_trees, forest.n_nodes, forest.n_features
        s.n_outputs, s.leaf_width, s.max_depth = forest.n_outputs, forest.leaf_width, forest.max_depth
        s.split_rule = lib.XAI_LEFT_IF_LT if forest.split_rule == "lt" else lib.XAI_LEFT_IF_LE
        s.input_float32 = int(forest.input_float32)
        s.aggregate = lib.XAI_AGGREGATE_MEAN if forest.aggregate == "mean" else lib.XAI_AGGREGATE_SUM
        s.zero_threshold = float(forest.zero_threshold)
        s.base_score = _ptr("double *", forest.base_score)
        s.tree_offset = _ptr("int64_t *", forest.tree_offset)
        s.tree_target = _ptr("int32_t *", forest.tree_target)
        s.left_child = _ptr("int32_t *", forest.left_child)
        s.right_child = _ptr("int32_t *", forest.right_child)
        s.feature = _ptr("int32_t *", forest.feature)
        s.threshold = _ptr("double *", forest.threshold)
        s.missing_left = _ptr("uint8_t *", forest.missing_left)
        s.value = _ptr("double *", forest.value)
        s.impurity = _ptr("double *", forest.impurity)
        s.n_categories = _ptr("int32_t *", forest.n_categories)
        s.cat_start = _ptr("int64_t *", forest.cat_start)
        s.cat_bits = _ptr("uint64_t *", forest.cat_bits)
        s.n_cat_words = 0 if forest.cat_bits is None else len(forest.cat_bits)
        s.threshold_rank = _ptr("int32_t *", threshold_rank)
        s.rank_count = _ptr("int32_t *", rank_count)
        self.ptr = s
        if threshold_rank is not None:      # ranks checked once here, so PG² calls need not walk nodes
            _check(lib.xai_validate(s), "invalid PG² split ranks")


#: Forest -> its CForest without PG² ranks (dropped with the Forest)
_STRUCTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def c_forest(forest) -> CForest:
    """The cached C struct of a Forest (built on first use)."""
    cached = _STRUCTS.get(forest)
    if cached is None:
        cached = _STRUCTS[forest] = CForest(forest)
    return cached


def validate(forest) -> None:
    """Check the forest's structure in C (raises ModelStructureError / InputIndexError / InputError)."""
    _check(lib.xai_validate(c_forest(forest).ptr), "invalid tree structure")


def _run_chunks(n_rows: int, n_jobs, work, chunks_per_worker: int = 4) -> None:
    """Call work(start, stop) over row chunks, in parallel threads (``n_jobs``: see
    :func:`xai_plugins._validation.core_workers`; each row's result is the same bits on any thread;
    ``chunks_per_worker``: more balance the load, fewer keep more rows per call)."""
    workers = core_workers(n_jobs, n_rows)
    if workers <= 1:
        work(0, n_rows)
        return
    bounds = np.linspace(0, n_rows, min(n_rows, chunks_per_worker * workers) + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(work, a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]:
            future.result()


def predict(forest, X: np.ndarray, n_jobs: int | None = None) -> np.ndarray:
    """(n, n_outputs) model output over the Forest, NaN routed as the model does."""
    s = c_forest(forest).ptr
    out = np.empty((len(X), forest.n_outputs))

    def work(a, b):
        _check(lib.xai_predict(s, _ptr("double *", X[a:b]), b - a, _ptr("double *", out[a:b])), "predict", a)

    _run_chunks(len(X), n_jobs, work)
    return out


def reachable_leaves(forest, X: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(n, n_trees) int64: per row of ``X`` (n, d) float64, the leaves of each tree it can reach when the features
    of its row of ``mask`` (n, d) vary and the others keep its values (``xai_reachable_leaves``)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    mask = np.ascontiguousarray(mask, dtype=np.uint8)
    if X.ndim != 2 or X.shape[1] != forest.n_features or mask.shape != X.shape:
        raise InputError(f"reachable_leaves takes X and mask of shape (n, {forest.n_features}); got {X.shape} and "
                         f"{mask.shape}")
    counts = np.empty((len(X), forest.n_trees), dtype=np.int64)
    _check(lib.xai_reachable_leaves(c_forest(forest).ptr, _ptr("double *", X), len(X), _ptr("uint8_t *", mask),
                                    _ptr("int64_t *", counts)), "reachable_leaves", 0)
    return counts


#: ``pairs=`` of :func:`pg2` / :func:`greedy_pg2` -> the C core's XAI_PAIRS_* (csrc/xai.h)
PAIRS = {"auto": lib.XAI_PAIRS_AUTO, "leaves": lib.XAI_PAIRS_LEAVES, "grids": lib.XAI_PAIRS_GRIDS}


def _pairs(pairs: str) -> int:
    """The C constant of a ``pairs=`` name (InputError for another)."""
    if pairs not in PAIRS:
        raise InputError(f"pairs must be one of {', '.join(PAIRS)}, not {pairs!r}")
    return PAIRS[pairs]


def pg2(cforest: CForest, cdf_offset, X, mask, cdf, n_jobs=None, prune_rtol=0.0,
        pairs: str = "auto") -> tuple[np.ndarray, int]:
    """PG² for every (row, set): mask (n, n_sets, d) uint8, cdf (n, cdf_len) -> ((n, n_sets, k), pair terms).
    ``cforest`` carries the PG² threshold ranks; ``cdf_offset`` is the matching table layout.
    ``prune_rtol``: 0 sums every leaf pair; in (0, 1) the C core's certified pruning (relative error
    of every value below it). ``pairs``: how the sums over pairs of trees are taken, ``"leaves"`` (leaf
    pairs), ``"grids"`` (per-feature grids of oblivious trees: UnsupportedModelError unless every tree is
    oblivious) or ``"auto"`` (the cheaper, per row and set; what the public functions use)."""
    s = cforest.ptr
    code = _pairs(pairs)
    n, n_sets = mask.shape[:2]
    out = np.empty((n, n_sets, cforest.n_outputs))
    terms = []

    def work(a, b):
        count = ffi.new("int64_t *")
        _check(lib.xai_pg2(s, _ptr("double *", X[a:b]), b - a, _ptr("uint8_t *", mask[a:b]), n_sets,
                           _ptr("double *", cdf[a:b]), _ptr("int64_t *", cdf_offset), cdf.shape[1], prune_rtol, code,
                           _ptr("double *", out[a:b]), count), "PG²", a)
        terms.append(count[0])

    _run_chunks(n, n_jobs, work)
    return out, int(sum(terms))


def pg2_terms(cforest: CForest, cdf_offset, X, mask, cdf, prune_rtol=0.0) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`pg2` would sum, without summing it (``xai_pg2_terms``): per (row, set) of ``mask`` (n, n_sets, d),
    the leaves it weighs (reachable with probability >= DBL_MIN, before pruning) and the leaf-pair terms of its
    pair loop (after pruning at ``prune_rtol``); two (n, n_sets) float64 arrays. Arguments as for :func:`pg2`."""
    n, n_sets = mask.shape[:2]
    counts = np.zeros((n, n_sets, 2))
    _check(lib.xai_pg2_terms(cforest.ptr, _ptr("double *", X), n, _ptr("uint8_t *", mask), n_sets,
                             _ptr("double *", cdf), _ptr("int64_t *", cdf_offset), cdf.shape[1], prune_rtol,
                             _ptr("double *", counts)), "PG² terms", 0)
    return counts[..., 0], counts[..., 1]


def greedy_pg2(cforest: CForest, cdf_offset, X, cdf, output_weight, n_jobs=None,
               prune_rtol=0.0, pairs: str = "auto", path: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Greedy PG² ranking per row: ((n, d) int ranking, (n, d) objective after each step, or None with
    ``path=False``: the ranking alone, which evaluates fewer sets exactly); ``prune_rtol`` and ``pairs`` as
    for :func:`pg2`."""
    s = cforest.ptr
    code = _pairs(pairs)
    n, d = X.shape
    ranking = np.empty((n, d), dtype=np.int32)
    objective = np.empty((n, d)) if path else None
    weight = np.ascontiguousarray(output_weight, dtype=np.float64)

    def work(a, b):
        _check(lib.xai_greedy_pg2(s, _ptr("double *", X[a:b]), b - a, _ptr("double *", cdf[a:b]),
                                  _ptr("int64_t *", cdf_offset), cdf.shape[1], prune_rtol, code,
                                  _ptr("double *", weight), _ptr("int32_t *", ranking[a:b]),
                                  _ptr("double *", None if objective is None else objective[a:b])), "greedy PG²", a)

    _run_chunks(n, n_jobs, work)
    return ranking, objective


#: Forest -> its local MDI walk layout (xai_mdi_layout's records, dropped with the Forest)
_MDI_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def mdi_layout(forest) -> np.ndarray:
    """The cached walk layout of local MDI for a Forest (``xai_mdi_node`` records, built on first use:
    one 24-byte record per node)."""
    cached = _MDI_LAYOUTS.get(forest)
    if cached is None:
        cached = np.empty(forest.n_nodes * ffi.sizeof("xai_mdi_node"), dtype=np.uint8)
        _check(lib.xai_mdi_layout(c_forest(forest).ptr, _ptr("xai_mdi_node *", cached)), "local MDI")
        _MDI_LAYOUTS[forest] = cached
    return cached


def local_mdi(forest, X, tree_weight=None, n_jobs=None) -> np.ndarray:
    """(n, d) local MDI; tree_weight (n, n_trees) or None for the plain average over trees."""
    s = c_forest(forest).ptr
    layout = _ptr("xai_mdi_node *", mdi_layout(forest))
    out = np.empty((len(X), forest.n_features))

    def work(a, b):
        w = None if tree_weight is None else tree_weight[a:b]
        _check(lib.xai_local_mdi(s, layout, _ptr("double *", X[a:b]), b - a, _ptr("double *", w),
                                 _ptr("double *", out[a:b])), "local MDI", a)

    _run_chunks(len(X), n_jobs, work, chunks_per_worker=1)  # one chunk per thread: blocks as large as can be
    return out


def treeshap(forest, X, *, cover=None, background=None, n_jobs=None) -> np.ndarray:
    """(n, n_outputs, d + 1) exact TreeSHAP values (the base value last): path-dependent with ``cover``
    (n_nodes,) > 0, or interventional against ``background`` (m, d) rows; see ``csrc/xai.h``."""
    s = c_forest(forest).ptr
    out = np.empty((len(X), forest.n_outputs, forest.n_features + 1))
    if cover is not None:
        cover = np.ascontiguousarray(cover, dtype=np.float64)
        if cover.shape != (forest.n_nodes,):
            raise InputError(f"cover must have one entry per node ({forest.n_nodes}); got shape {cover.shape}")

        def work(a, b):
            _check(lib.xai_treeshap_path(s, _ptr("double *", cover), _ptr("double *", X[a:b]), b - a,
                                         _ptr("double *", out[a:b])), "path-dependent TreeSHAP", a)
    else:
        background = np.ascontiguousarray(background, dtype=np.float64)

        def work(a, b):
            _check(lib.xai_treeshap_interventional(s, _ptr("double *", X[a:b]), b - a, _ptr("double *", background),
                                                   len(background), _ptr("double *", out[a:b])),
                   "interventional TreeSHAP", a)

    _run_chunks(len(X), n_jobs, work)
    return out


class RerouteLayout:
    """The C core's walk layout of tree ``tree`` of a Forest, or of a version of it with the same
    shape that splits differently, for rows whose features ``changed`` take new values: built once
    (``xai_reroute_prepare``), it routes any number of row sets (:meth:`route`). ``splits``: the
    version's ``(feature, threshold, flipped)`` over all nodes (``flipped`` None or bool: the node
    sends ``x <= threshold`` to its right child); default, the Forest's own splits."""

    def __init__(self, forest, tree: int, changed, splits=None):
        feature, threshold, flipped = (forest.feature, forest.threshold, None) if splits is None else splits
        feature = np.ascontiguousarray(feature, dtype=np.int32)
        threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        flipped = None if flipped is None else np.ascontiguousarray(flipped, dtype=np.uint8)
        if any(a is not None and a.shape != (forest.n_nodes,) for a in (feature, threshold, flipped)):
            raise InputError(f"a version of a tree needs feature, threshold and flipped over all {forest.n_nodes} "
                             "nodes")
        self.forest, self.changed = forest, np.ascontiguousarray(changed, dtype=np.int32)
        spec = ffi.new("xai_reroute_spec *", dict(
            tree=int(tree), feature=_ptr("int32_t *", feature), threshold=_ptr("double *", threshold),
            flipped=_ptr("uint8_t *", flipped), changed=_ptr("int32_t *", self.changed), n_changed=len(self.changed)))
        out = ffi.new("xai_reroute_layout **")
        _check(lib.xai_reroute_prepare(c_forest(forest).ptr, spec, out), "reroute")
        self._layout = ffi.gc(out[0], lib.xai_reroute_free)
        self.n_nodes = int(forest.tree_offset[tree + 1] - forest.tree_offset[tree])

    def table(self, X: np.ndarray, max_per_row: int = 0) -> "RerouteTable | None":
        """The leaf table of the rows of X (float64, C order) for this layout of one changed feature:
        per row, the leaves its other values reach as the changed feature's value runs over the real
        line (``xai_reroute_table_build``: about 1 + 0.15 E walks of the rows for E entries per row,
        ``benchmarks/bench_reroute.py``). :meth:`route` on the same X with ``table=`` then looks every
        finite new value up instead of walking. ``max_per_row`` > 0: None as soon as a block of rows
        needs more entries per row."""
        if len(self.changed) != 1:
            raise InputError("a leaf table needs exactly one changed feature")
        if X.dtype != np.float64 or not X.flags.c_contiguous or X.shape[1:] != (self.forest.n_features,):
            raise InputError("a leaf table needs X as C-ordered float64 (n, n_features)")
        out = ffi.new("xai_reroute_table **")
        _check(lib.xai_reroute_table_build(c_forest(self.forest).ptr, self._layout, _ptr("double *", X), len(X),
                                           int(max_per_row), out), "reroute_table")
        return None if out[0] == ffi.NULL else RerouteTable(self, len(X), ffi.gc(out[0], lib.xai_reroute_table_free))

    def route(self, X: np.ndarray, start_leaf: np.ndarray | None, new_values=None, node_value=None,
              table: "RerouteTable | None" = None) -> tuple:
        """Leaves of the rows of X (float64, C order) whose changed features took the values
        ``new_values`` (float64, C order, one column per changed feature; default: X's own), given the
        global leaves ``start_leaf`` their old values reach: ``(leaf, moved)``, every row's global
        leaf (int32) and the rows whose leaf changed. ``start_leaf`` None: every row walks from the
        root, and ``moved`` is empty. With ``node_value`` (n_nodes, width), float64 C-ordered:
        ``(leaf, moved, delta)``, ``delta`` (len(moved), width) the moved rows' changes of node value.
        ``table``: this layout's :meth:`table` of the same X. One call, no thread pool: callers run
        trees in parallel."""
        n, forest = len(X), self.forest
        if table is not None and (table.layout is not self or table.n_rows != n):
            raise InputError("a leaf table routes only the rows it was built on, with its own layout")
        start_leaf = None if start_leaf is None else np.ascontiguousarray(start_leaf, dtype=np.int32)
        if new_values is None and X.ndim == 2 and X.shape[1] == forest.n_features:
            new_values = np.ascontiguousarray(X[:, self.changed])
        if X.dtype != np.float64 or not X.flags.c_contiguous or X.shape[1:] != (forest.n_features,) \
                or (start_leaf is not None and start_leaf.shape != (n,)) or new_values.dtype != np.float64 \
                or not new_values.flags.c_contiguous or new_values.shape != (n, len(self.changed)):
            raise InputError("reroute needs X as C-ordered float64 (n, n_features), new values as C-ordered "
                             "float64 (n, changed features) and one start leaf per row")
        delta = None
        if node_value is not None:
            if start_leaf is None or node_value.dtype != np.float64 or not node_value.flags.c_contiguous \
                    or len(node_value) != forest.n_nodes:
                raise InputError(f"node_value must be C-ordered float64 with {forest.n_nodes} rows, and needs "
                                 "start leaves")
            delta = np.empty((n,) + node_value.shape[1:])
        leaf = np.empty(n, dtype=np.int32)
        moved = np.empty(n if start_leaf is not None else 0, dtype=np.int64)
        args = ffi.new("xai_reroute_args *", dict(
            X=_ptr("double *", X), new_values=_ptr("double *", new_values), n_rows=n,
            start_leaf=_ptr("int32_t *", start_leaf), leaf=_ptr("int32_t *", leaf),
            moved=_ptr("int64_t *", moved if start_leaf is not None else None), node_value=_ptr("double *", node_value),
            width=0 if node_value is None else int(np.prod(node_value.shape[1:])), delta=_ptr("double *", delta),
            table=ffi.NULL if table is None else table.ptr))
        _check(lib.xai_reroute(c_forest(forest).ptr, self._layout, args), "reroute")
        moved = moved[:args.n_moved]
        return (leaf, moved) if delta is None else (leaf, moved, delta[:args.n_moved])


@dataclass(frozen=True)
class RerouteTable:
    """A :class:`RerouteLayout`'s leaf table of ``n_rows`` rows (``ptr``, freed with the object)."""

    layout: RerouteLayout
    n_rows: int
    ptr: object


def mark_below(forest, nodes) -> np.ndarray:
    """Bool per global node of ``forest``: it is one of ``nodes`` (global ids) or lies under one."""
    mark = np.zeros(forest.n_nodes, dtype=np.uint8)
    mark[nodes] = 1
    _check(lib.xai_mark_below(c_forest(forest).ptr, _ptr("uint8_t *", mark)), "mark_below")
    return mark.view(bool)


def scatter_add(target: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``target[rows] += values`` in place, row by row in the C core (numpy's fancy-indexed add is
    several times slower on 2-d arrays): ``target`` (n,) or (n, width) and ``values`` (len(rows),
    ...) C-ordered float64, ``rows`` int64."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    width = 1 if target.ndim == 1 else target.shape[1]
    if target.dtype != np.float64 or not target.flags.c_contiguous or values.size != len(rows) * width:
        raise InputError("scatter_add needs a C-ordered float64 target and one row of values per row index")
    _check(lib.xai_scatter_add(_ptr("double *", target), len(target), width, _ptr("int64_t *", rows),
                               _ptr("double *", values), len(rows)), "scatter_add")


def surrogates(forest, tree: int, X32: np.ndarray, leaf: np.ndarray, wanted: np.ndarray | None = None):
    """RF-MCR's exact surrogate splits of tree ``tree`` whose training rows ``X32`` (float32, C
    order, no NaN) reach its local leaves ``leaf``: arrays (local node, feature, threshold,
    flipped), sorted by node then feature (see ``xai_surrogates`` in ``csrc/xai.h``). ``wanted``
    (bool per feature; None: every feature): only the splits on a wanted feature or by one."""
    leaf = np.ascontiguousarray(leaf, dtype=np.int32)
    if wanted is not None:
        wanted = np.ascontiguousarray(wanted, dtype=np.uint8)
    if X32.dtype != np.float32 or not X32.flags.c_contiguous or X32.shape[1:] != (forest.n_features,) \
            or leaf.shape != (len(X32),) or (wanted is not None and wanted.shape != (forest.n_features,)):
        raise InputError("surrogates needs X as C-ordered float32 (n, n_features), one leaf per row and wanted "
                         "as one flag per feature")
    a, b = forest.tree_offset[tree], forest.tree_offset[tree + 1]
    capacity = int(np.count_nonzero(forest.left_child[a:b] >= 0)) * max(forest.n_features - 1, 0)
    node, feature = np.empty(capacity, dtype=np.int32), np.empty(capacity, dtype=np.int32)
    threshold, flipped = np.empty(capacity), np.empty(capacity, dtype=np.uint8)
    count = ffi.new("int64_t *")
    _check(lib.xai_surrogates(c_forest(forest).ptr, int(tree), _ptr("float *", X32), len(X32),
                              _ptr("int32_t *", leaf), _ptr("uint8_t *", wanted), capacity, _ptr("int32_t *", node),
                              _ptr("int32_t *", feature), _ptr("double *", threshold), _ptr("uint8_t *", flipped),
                              count), "surrogates")
    c = count[0]
    return node[:c], feature[:c], threshold[:c], flipped[:c].astype(bool)
