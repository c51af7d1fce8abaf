"""Dask scale-out of the row-wise primitives: PG², PGI², the greedy PG² ranking, local MDI,
faithfulness, and the global summaries (global MDI, mean PGI²) as reductions.

The public functions (``xp.pg2``, ``xp.pgi2``, ``xp.greedy_pg2_ranking``, ``xp.local_mdi``,
``xp.global_mdi``, ``xp.faithfulness``) hand a ``dask.array.Array`` or ``dask.dataframe.DataFrame``
``X`` (or a dask ranking / explanation) to this module and get a *lazy* result back:

- every block of rows is computed by the in-memory function itself on the block's rows, so a
  result's ``.compute()`` is bitwise identical to the in-memory result on the same rows, whatever
  the chunking (every primitive is row-wise: no row's value depends on another row);
- the model is imported once on the client and enters the graph as ONE key (a frozen
  :class:`~xai_plugins.forest.Forest` without its predictor), shared by all blocks: each worker
  receives it once, and its split tables are built once per worker process and cached with it;
- a dask DataFrame's columns are aligned to the model's features by name (the same
  :func:`~xai_plugins._validation.feature_order` as in memory), then read with
  ``to_dask_array(lengths=True)``;
- seeded Monte Carlo / QMC (``pg2(method="monte_carlo"|"qmc")``) draws row i's noise from its own
  generator, ``SeedSequence(seed).spawn``'s i-th child (see
  :func:`xai_plugins.prediction_gap.row_seed`), in memory and on dask alike, so the estimate of a
  row does not depend on the blocking. Monte Carlo calls the model's own predictor, so the fitted
  model itself is shipped (once, as one graph key) with the Forest;
- global summaries are reduced without collecting rows: each block returns the *exact* sum of its
  values (an integer multiple of 2^-1127), the partial sums are added exactly and rounded once,
  so the mean is correctly rounded and identical to the in-memory one for any chunking.

Also dispatched here: ``AcME.explain_local`` (a lazy ``DaskAcMELocal``; the AcME object is one graph
key), the attributions behind the shap / interpret explainers (computed through dask, returned in
memory: ``shap.Explanation`` needs numpy), and the block reductions the audit uses on a cluster
(:func:`block_reduce`, :func:`random_rankings`, :func:`order_statistics`; see
:mod:`xai_plugins.report.cluster`).

Nothing here imports dask until a dask collection arrives: :func:`is_dask` only looks at
``sys.modules``. Dask itself is an optional dependency: ``pip install "xai_plugins[dask]"``.
"""

from __future__ import annotations

import copy
import time
import uuid
import weakref

import numpy as np

from . import attributions, mdi, prediction_gap, ranking_faithfulness
from ._validation import default_feature_names, feature_order, frame_values, is_dask, resolve_output
from .acme import AcMELocal
from .attributions import Attribution, _output_names
from .errors import InputError, ModelGoneError
from .exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean
from .forest import import_model
from .mdi import _warn_if_resampled, require_impurities
from .perturbation import make_perturbation
from .prediction_gap import (
    AUTO_ACCEPT,
    AUTO_PILOT_ROWS,
    METHODS,
    GreedyRanking,
    PG2Estimate,
    _check_perturbed_finite,
    _check_ranking,
    _sampled_pg2,
    _set_masks,
    auto_method,
    row_seed,
)

_INSTALL = 'dask input needs dask: pip install "xai_plugins[dask]"'




def _require_dask():
    try:
        import dask.array as da
    except ImportError as exc:          # pragma: no cover - a dask input implies dask is installed
        raise ImportError(_INSTALL) from exc
    return da


# --------------------------------------------------------------------------------------------
# shipping the model
# --------------------------------------------------------------------------------------------

#: Forest -> Delayed of its predictor-free copy (one graph key per imported model)
_SHIPPED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _ship(forest):
    """The Forest as one graph key (a copy without its weakly held predictor, which cannot be
    pickled), cached per Forest so that repeated calls reuse the key."""
    import dask

    shipped = _SHIPPED.get(forest)
    if shipped is None:
        plain = copy.copy(forest)
        object.__setattr__(plain, "predict_fn", None)
        shipped = dask.delayed(plain, name=f"xai-forest-{uuid.uuid4().hex}", pure=True, traverse=False)
        _SHIPPED[forest] = shipped
    return shipped


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
                             "dask ships the fitted model to the workers, keep a reference to it")
    held = copy.copy(predictor)
    held._model = _Held(model)
    return held


def _ship_with_model(forest):
    """The Forest with a predictor that holds the fitted model strongly, as one graph key (for
    Monte Carlo on workers). Not cached: the key keeps the model alive only while the graph does."""
    import dask

    shipped = copy.copy(forest)
    object.__setattr__(shipped, "predict_fn", held_predictor(forest))
    return dask.delayed(shipped, name=f"xai-forest-model-{uuid.uuid4().hex}", pure=True, traverse=False)


#: id(object) -> (weak reference, graph key name): one key per AcME object while it lives (the name
#: only: a Delayed value would hold the object and keep it alive)
_SHIPPED_NAMES: dict = {}


def ship(obj, prefix="xai-object", *, cache=True):
    """``obj`` as one graph key shared by every block (each worker receives it once). With
    ``cache`` the key name is reused per object while it lives (only for objects that do not
    change: a cluster keeps a key's first value); objects that cannot be weakly referenced get a
    fresh key."""
    import dask

    name = None
    if cache:
        entry = _SHIPPED_NAMES.get(id(obj))
        if entry is not None and entry[0]() is obj:
            name = entry[1]
        else:
            try:
                key = id(obj)
                ref = weakref.ref(obj, lambda _, key=key, names=_SHIPPED_NAMES: names.pop(key, None))
            except TypeError:
                ref = None
            if ref is not None:
                name = f"{prefix}-{uuid.uuid4().hex}"
                _SHIPPED_NAMES[id(obj)] = (ref, name)
    return dask.delayed(obj, name=name or f"{prefix}-{uuid.uuid4().hex}", pure=True, traverse=False)


def _noise(forest, sigma, perturbation, background):
    """Validate the noise on the client; return it as (sigma, perturbation) arguments that give
    the same Perturbation without the background data (sigma already in absolute units)."""

    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value)
    if noise.dists is not None:
        return dict(sigma=0.3, perturbation=noise.dists)
    return dict(sigma=noise.sigma, perturbation=None)


# --------------------------------------------------------------------------------------------
# rows and blocks
# --------------------------------------------------------------------------------------------

def _rows(forest, X):
    """``X`` as an (n, d) dask array in the model's feature order (known row chunks, one column
    chunk) and the feature names, aligning a dask DataFrame by column name."""
    return _aligned(X, forest.feature_names, forest.n_features, forest.rows)


def _aligned(X, names, d, in_memory, what="X"):
    """A dask ``X`` as an (n, d) dask array whose columns follow ``names`` (a dask DataFrame is
    aligned by column name; without ``names`` its columns name the features), with known row
    chunks and one column chunk; an in-memory ``X`` goes through ``in_memory(X) -> (rows, names)``."""
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
        if not all(isinstance(t, np.dtype) and t.kind == "f" for t in X.dtypes):
            frame_values(X._meta, what)                 # refuses text, date, non-numeric category columns now
            X = X.map_partitions(_float_partition, what, meta=X._meta.astype(np.float64))
        X = X.to_dask_array(lengths=True)
    elif not isinstance(X, da.Array):           # in-memory X with a dask S / ranking / weights
        rows, names = in_memory(X)
        X = da.from_array(rows, chunks=-1)
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


def _float_partition(part, what: str):
    """One partition of a dask DataFrame with its columns read as float64 by
    :func:`~xai_plugins._validation.frame_values` (nullable, pyarrow, numeric category dtypes)."""
    return type(part)(frame_values(part, what), columns=part.columns, index=part.index)


def _by_rows(a, X, what):
    """A per-row argument (numpy or dask, rows on axis 0) chunked like ``X``'s rows."""
    da = _require_dask()
    if not isinstance(a, da.Array):
        a = np.asarray(a)
        if a.shape[:1] != (X.shape[0],):
            raise InputError(f"{what} has {a.shape[0] if a.ndim else 0} rows but X has {X.shape[0]}")
        return da.from_array(a, chunks=(X.chunks[0],) + a.shape[1:])
    if any(np.isnan(c) for c in a.chunks[0]):
        a = a.compute_chunk_sizes()
    if a.shape[0] != X.shape[0]:
        raise InputError(f"{what} has {a.shape[0]} rows but X has {X.shape[0]}")
    return a.rechunk((X.chunks[0],) + tuple(-1 for _ in range(a.ndim - 1)))


def _call(fn, forest, shared, offset, X, *per_row):
    return np.ascontiguousarray(fn(forest, int(offset[0]), X, *per_row, **shared), dtype=np.float64)


def _map_rows(fn, X, forest, per_row, width, **shared):
    """(n, width) float64 dask array whose block b is ``fn(forest, first_row, X_b, *per_row_b,
    **shared)``; ``forest`` (a Delayed) is one key shared by every block."""
    da = _require_dask()
    rows = da.arange(X.shape[0], chunks=(X.chunks[0],), dtype=np.int64)   # block b gets its row indices
    args = [rows, "i", X, "iz"]
    letters = iter("abcdefghjklmnopqrstuvwxy")
    for a in per_row:
        args += [a, "i" + "".join(next(letters) for _ in range(a.ndim - 1))]
    return da.blockwise(_call, "ic", fn, None, forest, None, shared, None, *args, new_axes={"c": width},
                        concatenate=True, dtype=np.float64, meta=np.empty((0, 0)))


# --------------------------------------------------------------------------------------------
# lazy result types
# --------------------------------------------------------------------------------------------

class DaskPG2Estimate(PG2Estimate):
    """A :class:`PG2Estimate` whose ``value`` / ``stderr`` are dask arrays and ``pair_terms`` a
    dask scalar (``seconds`` is NaN until computed). ``.compute()`` computes them in one pass
    and returns an in-memory :class:`PG2Estimate` (``seconds``: the wall time of the compute)."""

    def compute(self, **kwargs) -> PG2Estimate:
        import dask

        start = time.perf_counter()
        value, stderr, terms, informative = dask.compute(self.value, self.stderr, self.pair_terms, self.informative,
                                                         **kwargs)
        return PG2Estimate(value, stderr, self.method, self.n_samples, time.perf_counter() - start,
                           int(terms), self.reason, informative)

    def __repr__(self):
        return (f"DaskPG2Estimate(method={self.method!r}, n_rows={self.value.shape[0]}, lazy, "
                f"chunks={self.value.chunks[0][:5]}{'...' if len(self.value.chunks[0]) > 5 else ''})")

class DaskGreedyRanking(GreedyRanking):
    """A :class:`GreedyRanking` of dask arrays; ``.compute()`` computes both in one pass."""

    def compute(self, **kwargs) -> GreedyRanking:
        import dask

        return GreedyRanking(*dask.compute(self.ranking, self.pg2_path, **kwargs))

    def __len__(self):
        return int(self.ranking.shape[0])

    def __repr__(self):
        return f"DaskGreedyRanking(n_rows={self.ranking.shape[0]}, lazy)"


# --------------------------------------------------------------------------------------------
# PG², PGI², greedy ranking
# --------------------------------------------------------------------------------------------

def _per_row_sets(S) -> bool:
    if is_dask(S):
        return True
    if isinstance(S, (list, tuple)) and S and all(isinstance(r, (list, tuple, np.ndarray)) for r in S):
        return True
    return np.ndim(S) == 2 if not isinstance(S, (list, tuple)) or S else False


def _pg2_block(forest, start, X, *masks, S=None, method, n_samples, root, n_jobs, sigma, perturbation, prune,
               auto_rtol=None):
    """PG² of a block of rows: columns value (k), stderr (k), informative (k, 0/1) and the block's
    leaf-pair terms (in its first row). ``auto_rtol``: sampled rows are held to ``method="auto"``'s
    guarantee (:func:`~xai_plugins.prediction_gap.exact_where_unshown`), row by row as in memory."""
    S = masks[0].astype(bool) if masks else S
    k = forest.n_outputs
    if method == "exact":
        est = prediction_gap.pg2(forest, X, S, sigma, perturbation=perturbation, method="exact", prune=prune,
                                 verbose=False, n_jobs=n_jobs)
        value, stderr = est.value.reshape(len(X), k), est.stderr.reshape(len(X), k)
        informative, terms = np.ones((len(X), k), dtype=bool), est.pair_terms
    else:
        forest = import_model(forest)
        X, names = forest.rows(X)

        m = _set_masks(S, len(X), forest.n_features, names)
        _check_perturbed_finite(X, m, forest.missing_value, forest.n_categories)
        noise = make_perturbation(forest.n_features, sigma, perturbation, None, names=forest.feature_names)
        value, stderr, nonzero = _sampled_pg2(forest, X, m, noise, n_samples, method, root, row_offset=start)
        informative, terms = prediction_gap._informative(stderr, nonzero, m), 0
        if auto_rtol is not None:
            terms = prediction_gap.exact_where_unshown(forest, X, m, noise, value, stderr, informative, auto_rtol,
                                                       prune=prune, n_jobs=n_jobs)[1]
    col = np.zeros((len(X), 1))
    col[0, 0] = terms
    return np.concatenate([value, stderr, informative.astype(np.float64), col], axis=1)


def pg2(model, X, S, sigma=0.3, *, perturbation=None, background=None, method="exact", n_samples=10_000,
        rtol=0.01, random_state=None, prune=True, n_jobs=None):
    """:func:`xai_plugins.pg2` on a dask ``X``: a lazy :class:`PG2Estimate` (see the module doc);
    ``method="auto"`` decides from the first :data:`~xai_plugins.prediction_gap.AUTO_PILOT_ROWS` rows."""
    import numbers


    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    forest = import_model(model)
    Xd, names = _rows(forest, X)
    d, k = forest.n_features, forest.n_outputs
    noise = _noise(forest, sigma, perturbation, background)
    per_row, shared_S = [], None
    if _per_row_sets(S):
        if is_dask(S):
            mask = S.map_blocks(lambda s: _set_masks(s, len(s), d, names).astype(bool),
                                dtype=bool, chunks=(S.chunks[0], (d,)))
            mask = _by_rows(mask, Xd, "S")
        else:
            mask = _by_rows(_set_masks(S, Xd.shape[0], d, names).astype(bool), Xd, "S")
        per_row = [mask]
    else:
        shared_S = _set_masks(S, 1, d, names)[0].astype(bool)
    reason = ""
    if method == "auto":
        head = np.asarray(Xd[:AUTO_PILOT_ROWS].compute(), dtype=np.float64)
        head_mask = (np.broadcast_to(shared_S, head.shape) if shared_S is not None
                     else np.asarray(per_row[0][:len(head)].compute())).astype(np.uint8)
        method, n_samples, reason = auto_method(forest, head, head_mask, make_perturbation(d, **noise), rtol,
                                                row_seed(random_state))
    root, shipped = None, None
    if method == "exact":
        shipped = _ship(forest)
    else:
        if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral) or n_samples < 2:
            raise InputError(f"n_samples must be an integer >= 2; got {n_samples!r}")
        root = row_seed(random_state)
        shipped = _ship_with_model(forest)
    out = _map_rows(_pg2_block, Xd, shipped, per_row, 3 * k + 1, S=shared_S, method=method,
                    n_samples=int(n_samples), root=root, n_jobs=n_jobs, prune=prune,
                    auto_rtol=rtol if reason and method != "exact" else None, **noise)
    value, stderr, informative = out[:, :k], out[:, k:2 * k], out[:, 2 * k:3 * k] > 0.5
    if k == 1:
        value, stderr, informative = value[:, 0], stderr[:, 0], informative[:, 0]
    terms = out[:, 3 * k].sum().astype(np.int64)
    if reason and method != "exact":
        reason += (f"; rows whose samples do not show a relative standard error within {AUTO_ACCEPT:g} x rtol "
                   "are computed exactly")
    return DaskPG2Estimate(value, stderr, method, 0 if method == "exact" else int(n_samples), float("nan"), terms,
                           reason, informative)


def _pgi2_block(forest, start, X, *rankings, ranking=None, stacked, n_jobs, sigma, perturbation, prune):

    r = rankings[0] if rankings else ranking
    if stacked:
        r = np.moveaxis(r, 1, 0)                     # (b, m, d) -> (m, b, d)
    out = np.asarray(prediction_gap.pgi2(forest, X, r, sigma, perturbation=perturbation, prune=prune, verbose=False,
                                         n_jobs=n_jobs))
    if stacked:
        out = np.moveaxis(out, 0, 1)                 # (m, b[, k]) -> (b, m[, k])
    return out.reshape(len(X), -1)


def _ranking_arg(ranking, Xd, d, names):
    """(per-row dask arrays, shared ranking, stacked m or 0) of a ranking argument."""

    ranking = getattr(ranking, "ranking", ranking)
    ndim = ranking.ndim if is_dask(ranking) else np.ndim(ranking)
    if ndim == 1 and not is_dask(ranking):
        return [], _check_ranking(ranking, 1, d, names)[0, 0], 0
    if ndim == 2:
        return [_by_rows(ranking, Xd, "ranking")], None, 0
    if ndim == 3:
        m = ranking.shape[0]
        if is_dask(ranking):
            moved = ranking.transpose(1, 0, 2)
        else:
            moved = np.moveaxis(np.asarray(ranking), 1, 0)
        return [_by_rows(moved, Xd, "ranking (axis 1)")], None, m
    raise InputError(f"ranking must have shape ({d},), (n, {d}) or (m, n, {d}); got {ndim} dimensions")


def pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, prune=True, n_jobs=None):
    """:func:`xai_plugins.pgi2` on a dask ``X`` and/or dask ``ranking``: a lazy dask array."""
    da = _require_dask()

    forest = import_model(model)
    if not is_dask(X):
        X = da.from_array(np.asarray(forest.rows(X, allow_nan=False)[0]),
                          chunks=(_row_chunks(ranking),) + (forest.n_features,))
    Xd, names = _rows(forest, X)
    d, k = forest.n_features, forest.n_outputs
    noise = _noise(forest, sigma, perturbation, background)
    per_row, shared, m = _ranking_arg(ranking, Xd, d, names)
    width = max(m, 1) * k
    out = _map_rows(_pgi2_block, Xd, _ship(forest), per_row, width, ranking=shared, stacked=bool(m),
                    n_jobs=n_jobs, prune=prune, **noise)
    if m:
        out = out.reshape(Xd.shape[0], m, k).transpose(1, 0, 2)
        return out[:, :, 0] if k == 1 else out
    return out[:, 0] if k == 1 else out


def _row_chunks(ranking):
    """Row chunks of a dask ranking (axis 1 when stacked)."""
    r = getattr(ranking, "ranking", ranking)
    chunks = r.chunks[1] if r.ndim == 3 else r.chunks[0]
    if any(np.isnan(c) for c in chunks):
        raise InputError("the dask ranking has unknown chunk sizes; call compute_chunk_sizes() first")
    return chunks


def _greedy_block(forest, start, X, *, output, n_jobs, sigma, perturbation, prune):

    res = prediction_gap.greedy_pg2_ranking(forest, X, sigma, perturbation=perturbation, output=output, prune=prune,
                                            verbose=False, n_jobs=n_jobs)
    return np.concatenate([res.ranking.astype(np.float64), res.pg2_path.reshape(len(X), -1)], axis=1)


def greedy_pg2_ranking(model, X, sigma=0.3, *, perturbation=None, background=None, output=None, prune=True,
                       n_jobs=None):
    """:func:`xai_plugins.greedy_pg2_ranking` on a dask ``X``: a lazy :class:`GreedyRanking`."""

    forest = import_model(model)
    Xd, _ = _rows(forest, X)
    d = forest.n_features
    resolve_output(forest.output_names, output)      # validate on the client
    noise = _noise(forest, sigma, perturbation, background)
    out = _map_rows(_greedy_block, Xd, _ship(forest), [], 2 * d, output=output, n_jobs=n_jobs, prune=prune,
                    **noise)
    return DaskGreedyRanking(out[:, :d].astype(np.int64), out[:, d:])


# --------------------------------------------------------------------------------------------
# local MDI, faithfulness
# --------------------------------------------------------------------------------------------

def _mdi_block(forest, start, X, *, n_jobs):

    return mdi.local_mdi(forest, X, n_jobs=n_jobs)


def local_mdi(model, X, *, n_jobs=None):
    """:func:`xai_plugins.local_mdi` on a dask ``X``: a lazy (n, d) dask array."""

    forest = require_impurities(model)
    Xd, _ = _rows(forest, X)
    return _map_rows(_mdi_block, Xd, _ship(forest), [], forest.n_features, n_jobs=n_jobs)


def _faith_block(forest, start, X, values, *, n_jobs, sigma, perturbation):

    return np.asarray(ranking_faithfulness.faithfulness(forest, values, sigma, X=X, perturbation=perturbation,
                                   n_jobs=n_jobs)).reshape(len(X), -1)


def faithfulness(model, explanation, sigma=0.3, *, X=None, perturbation=None, background=None, n_jobs=None):
    """:func:`xai_plugins.faithfulness` with a dask ``X`` and/or dask attribution values: a lazy
    dask array. Feature columns are matched by name as in memory."""
    da = _require_dask()

    forest = import_model(model)
    values = getattr(explanation, "values", explanation)
    if X is None:
        X = getattr(explanation, "data", None)
        if X is None:
            raise InputError("the explanation carries no data; pass the explained rows as X=")
    if not is_dask(values):
        values = np.asarray(values, dtype=np.float64)
    if values.ndim not in (2, 3):
        raise InputError(f"attribution values must be (n, d) or (n, d, k); got {values.ndim} dimensions")
    names = getattr(explanation, "feature_names", None)
    if names is None:
        names = getattr(X, "columns", None)
    if names is not None and forest.feature_names is not None:
        order = feature_order([str(c) for c in names], forest.feature_names, "the explanation")
        if order is not None:
            values = values[:, order]
            if not hasattr(X, "columns"):
                X = X[:, order] if is_dask(X) else np.asarray(X)[:, order]
    if not is_dask(X):
        rows = np.asarray(forest.rows(X, allow_nan=False)[0])
        chunks = values.chunks[0] if is_dask(values) else (len(rows),)
        X = da.from_array(rows, chunks=(chunks, forest.n_features))
    Xd, _ = _rows(forest, X)
    values = _by_rows(values, Xd, "the explanation")
    if values.shape[1] != forest.n_features:
        raise InputError(f"the explanation has {values.shape[1]} features but the model has {forest.n_features}")
    k = forest.n_outputs
    if values.ndim == 3 and values.shape[2] != k:
        raise InputError(f"the explanation has {values.shape[2]} outputs but the model has {k}")
    out = _map_rows(_faith_block, Xd, _ship(forest), [values], k, n_jobs=n_jobs,
                    **_noise(forest, sigma, perturbation, background))
    return out[:, 0] if values.ndim == 2 and k == 1 else out


# --------------------------------------------------------------------------------------------
# global summaries: exact reductions
# --------------------------------------------------------------------------------------------

def _exact_reduce(block_sums, finish, shape, da):
    """A dask array of ``shape`` from per-block exact sums (Delayed lists of ints) combined once."""
    import dask

    total = dask.delayed(_add_all, pure=True)(block_sums)
    return da.from_delayed(dask.delayed(finish, pure=True)(total), shape=shape, dtype=np.float64)


def _add_all(parts):
    out = list(parts[0])
    for p in parts[1:]:
        out = [a + b for a, b in zip(out, p)]
    return out


def _gmdi_block(forest, X, w):

    lm = mdi.local_mdi(forest, X)
    if w is None:
        w = np.ones(len(X))
    w = np.asarray(w, dtype=np.float64)
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise InputError("sample_weight must be finite and non-negative")
    return exact_column_sums(w[:, None] * lm) + exact_column_sums(w[:, None])


def _gmdi_finish(total):

    return exact_mean(total[:-1], total[-1])


def global_mdi(model, X, sample_weight=None, *, in_bag=False, n_jobs=None):
    """:func:`xai_plugins.global_mdi` on a dask ``X`` (with an optional numpy or dask
    ``sample_weight``): the weighted mean of local MDI as a lazy (d,) dask array, reduced exactly
    per block (no rows collected) and rounded once, so identical to the in-memory result."""
    da = _require_dask()
    import dask


    if in_bag:
        raise InputError("in_bag=True is not supported on dask input: it replays the bootstrap draws over the "
                         "exact training rows in order; compute it in memory, or use global_mdi(model) for the "
                         "MDI from the trees alone")
    forest = require_impurities(model)
    Xd, _ = _rows(forest, X)
    w = None if sample_weight is None else _by_rows(
        sample_weight if is_dask(sample_weight) else np.asarray(sample_weight, dtype=np.float64), Xd,
        "sample_weight")
    if w is not None and w.ndim != 1:
        raise InputError(f"sample_weight must be (n,) (one per row of X); got {w.ndim} dimensions")
    _warn_if_resampled(model, stacklevel=4)   # the caller of xai_plugins.global_mdi
    shipped = _ship(forest)
    xs = Xd.to_delayed().ravel()
    ws = [None] * len(xs) if w is None else list(w.to_delayed().ravel())
    parts = [dask.delayed(_gmdi_block, pure=True)(shipped, x, wb) for x, wb in zip(xs, ws)]
    return _exact_reduce(parts, _gmdi_finish, (forest.n_features,), da)


def _mean_finish(total, k):

    values = exact_mean(total[:-1], total[-1] << SUM_SCALE_BITS)
    return values[0] if k == 1 else values


def _sum_block(values):

    v = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    return exact_column_sums(v) + [len(v)]


def mean_pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, n_jobs=None):
    """Mean PGI² over the rows of ``X``: correctly rounded (exact sum, one rounding), so the same
    float for in-memory and dask input and for any chunking. In memory: a float (or (k,) array);
    on dask: a lazy dask scalar (or (k,) array) reduced per block without collecting rows.
    ``ranking`` as in :func:`xai_plugins.pgi2`, not stacked."""

    forest = import_model(model)
    k = forest.n_outputs
    if np.ndim(getattr(ranking, "ranking", ranking)) == 3:
        raise InputError("mean_pgi2 takes one ranking per row, not a stack")
    if not is_dask(X, getattr(ranking, "ranking", ranking)):
        v = np.asarray(prediction_gap.pgi2(forest, X, ranking, sigma, perturbation=perturbation, background=background,
                                n_jobs=n_jobs)).reshape(-1, k)
        values = exact_mean(exact_column_sums(v), len(v) << SUM_SCALE_BITS)
        return values[0] if k == 1 else values
    da = _require_dask()
    import dask

    scores = pgi2(model, X, ranking, sigma, perturbation=perturbation, background=background, n_jobs=n_jobs)
    parts = [dask.delayed(_sum_block, pure=True)(b) for b in scores.to_delayed().ravel()]
    import functools

    return _exact_reduce(parts, functools.partial(_mean_finish, k=k), () if k == 1 else (k,), da)


# --------------------------------------------------------------------------------------------
# AcME local explanations
# --------------------------------------------------------------------------------------------

def _pack(*arrays) -> np.ndarray:
    """Per-row arrays (rows on axis 0) flattened side by side into one (n, width) float64 block."""
    n = len(arrays[0])
    return np.concatenate([np.reshape(np.asarray(a, dtype=np.float64), (n, -1)) for a in arrays], axis=1)


def _acme_block(acme, start, X):
    local = acme.explain_local(X)
    return _pack(local.X, local.row_levels, local.row_predictions, local.predictions, local.effects, local.values)


class DaskAcMELocal(AcMELocal):
    """An :class:`~xai_plugins.acme.AcMELocal` whose per-row arrays (``X``, ``row_levels``,
    ``row_predictions``, ``predictions``, ``effects``, ``values``) are dask arrays; ``grid``,
    ``output_names`` and ``variant`` are known. ``.compute()`` computes them in one pass and
    returns the in-memory :class:`AcMELocal` (plots and ``what_if`` need that one)."""

    def compute(self, **kwargs) -> AcMELocal:
        import dask

        arrays = dask.compute(self.X, self.row_levels, self.row_predictions, self.predictions,
                              self.effects, self.values, **kwargs)
        return AcMELocal(self.grid, self.output_names, self.variant, *arrays)

    def __repr__(self):
        return f"DaskAcMELocal(n_rows={self.X.shape[0]}, variant={self.variant!r}, lazy)"


def acme_local(acme, X):
    """:meth:`AcME.explain_local <xai_plugins.acme.AcME.explain_local>` of a dask ``X``: a lazy
    ``DaskAcMELocal``. Each block of rows is explained by ``explain_local`` itself on a worker (the
    AcME object, with its model or score function, is one graph key), so ``.compute()`` is bitwise
    the in-memory explanation of the same rows. The number of model outputs is read from one model
    call on the client (the global baseline row); rows are checked (NaN, unseen categorical levels)
    when the blocks run."""
    d = len(acme.feature_names_)
    Xd, _ = _aligned(X, acme._align_names, d, lambda rows: (acme._check_rows(rows), list(acme.feature_names_)),
                     "X_rows")
    R = acme.grid_.values.size
    k = acme._scorer(acme.baseline_[None, :]).shape[1]
    out = _map_rows(_acme_block, Xd, ship(acme, "xai-acme"), [], 2 * d + k * (1 + 2 * R + d))
    n = Xd.shape[0]
    edges = np.cumsum([0, d, d, k, R * k, R * k, d * k])
    parts = [out[:, edges[i]:edges[i + 1]] for i in range(6)]

    def shaped(a, width):
        return a.reshape(n, width) if k == 1 else a.reshape(n, width, k)

    return DaskAcMELocal(grid=acme.grid_, output_names=acme._scorer.output_names(k), variant=acme.variant,
                         X=parts[0], row_levels=parts[1], row_predictions=parts[2][:, 0] if k == 1 else parts[2],
                         predictions=shaped(parts[3], R), effects=shaped(parts[4], R), values=shaped(parts[5], d))


# --------------------------------------------------------------------------------------------
# attributions (the shap / interpret adapters): computed through dask, returned in memory
# --------------------------------------------------------------------------------------------

def _split(out, widths) -> list:
    edges = np.cumsum([0] + list(widths))
    return [np.ascontiguousarray(out[:, a:b]) for a, b in zip(edges[:-1], edges[1:])]


def _pg2_attr_block(forest, start, X, *, n_jobs, sigma, perturbation):

    a = attributions.pg2_attribution(forest, X, sigma, perturbation=perturbation, n_jobs=n_jobs)
    return _pack(a.data, a.values, a.extras["ranking"], a.extras["pgi2"])


def pg2_attribution(model, X, sigma=0.3, *, perturbation=None, background=None, n_jobs=None):
    """:func:`xai_plugins.attributions.pg2_attribution` of a dask ``X``, computed block by block on
    the active scheduler and returned in memory (an Attribution holds numpy arrays): bitwise the
    in-memory attribution of the same rows."""

    forest = import_model(model)
    Xd, names = _rows(forest, X)
    d, k = forest.n_features, forest.n_outputs
    out = _map_rows(_pg2_attr_block, Xd, _ship(forest), [], d + 2 * d * k + k, n_jobs=n_jobs,
                    **_noise(forest, sigma, perturbation, background)).compute()
    rows, values, ranking, quality = _split(out, [d, d * k, d * k, k])
    shape = (len(rows), d) if k == 1 else (len(rows), d, k)
    return Attribution(values.reshape(shape), rows, names, _output_names(forest), "pg2",
                       {"ranking": ranking.reshape(shape).astype(np.int64),
                        "pgi2": np.ascontiguousarray(quality[:, 0]) if k == 1 else quality})


def _mdi_attr_block(forest, start, X, *, n_jobs):

    a = attributions.local_mdi_attribution(forest, X, n_jobs=n_jobs)
    return _pack(a.data, a.values)


def local_mdi_attribution(model, X, *, n_jobs=None):
    """:func:`xai_plugins.attributions.local_mdi_attribution` of a dask ``X`` (see
    :func:`pg2_attribution`)."""

    forest = require_impurities(model)
    Xd, names = _rows(forest, X)
    d = forest.n_features
    rows, values = _split(_map_rows(_mdi_attr_block, Xd, _ship(forest), [], 2 * d, n_jobs=n_jobs).compute(),
                          [d, d])
    return Attribution(values, rows, names, None, "local_mdi")


def acme_attribution(acme, X):
    """:func:`xai_plugins.attributions.acme_attribution` of a dask ``X``: :func:`acme_local`
    computed in one pass, returned in memory."""
    import dask


    local = acme_local(acme, X)
    rows, values, row_predictions = dask.compute(local.X, local.values, local.row_predictions)
    return Attribution(values, rows, list(local.feature_names), local.output_names, "acme",
                       {"row_predictions": row_predictions})


# --------------------------------------------------------------------------------------------
# block reductions used by the audit on a cluster
# --------------------------------------------------------------------------------------------

def block_reduce(a, fn, *args):
    """A Delayed: ``fn(block, *args)`` on each block of rows of the dask array ``a`` (one column
    chunk), each returning a list of exact Python ints / integer arrays, added elementwise (exact
    in any order, so the total does not depend on the chunking)."""
    import dask

    parts = [dask.delayed(fn, pure=True)(b, *args) for b in a.to_delayed(optimize_graph=False).ravel()]
    return dask.delayed(_add_all, pure=True)(parts)


def _random_block(seed, start, X, *, d):
    bits = np.random.PCG64(seed)
    bits.advance(int(start) * d)          # one 64-bit draw per double: skip the rows before this block
    return np.argsort(np.random.Generator(bits).random((len(X), d)), axis=1).astype(np.float64)


def random_rankings(X, random_state=None):
    """One uniformly random feature order per row of the dask array ``X``, lazily: row i gets
    ``argsort`` of the i-th row of ``np.random.default_rng(random_state).random((n, d))`` (the
    generator is advanced to each block's first row), so any chunking gives the in-memory draw
    bitwise. ``random_state``: an int, a SeedSequence or None (fresh entropy)."""
    seed = random_state
    if not (seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence))):
        seed = int(np.random.default_rng(seed).integers(2 ** 63))
    if seed is None:
        seed = np.random.SeedSequence()
    d = X.shape[1]
    return _map_rows(_random_block, X, seed, [], d, d=d).astype(np.int64)


def _order_keys(values) -> np.ndarray:
    """uint64 keys ordered like the float64 values (sign flipped for positives, all bits for negatives)."""
    u = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(u >> np.uint64(63), ~u, u | np.uint64(1 << 63))


def _from_keys(keys) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.uint64)
    u = np.where(keys >> np.uint64(63), keys & np.uint64((1 << 63) - 1), ~keys)
    return u.view(np.float64)


def _digit_counts(block, columns, prefixes, shift):
    out = np.zeros((len(columns), 256), dtype=np.int64)
    for t, (c, p) in enumerate(zip(columns, prefixes)):
        keys = _order_keys(block[:, c])
        if shift < 56:
            keys = keys[(keys >> np.uint64(shift + 8)) == np.uint64(p)]
        out[t] = np.bincount(((keys >> np.uint64(shift)) & np.uint64(255)).astype(np.intp), minlength=256)
    return [out]


def order_statistics(a, columns, ranks, compute=None) -> np.ndarray:
    """The exact ``ranks[t]``-th smallest value (0-based) of column ``columns[t]`` of the dask array
    ``a`` (rows on axis 0; best persisted), by radix selection on the float64 bit patterns: 8
    passes of per-block 256-bin digit counts, nothing but counts leaves the workers.
    ``compute``: how to compute a Delayed (default ``dask.compute``)."""
    import dask

    compute = compute or (lambda x: dask.compute(x)[0])
    columns = [int(c) for c in columns]
    remaining = np.asarray(ranks, dtype=np.int64).copy()
    prefixes = np.zeros(len(columns), dtype=np.uint64)
    for shift in range(56, -1, -8):
        counts = compute(block_reduce(a, _digit_counts, columns, [int(p) for p in prefixes], shift))[0]
        cumulative = np.cumsum(counts, axis=1)
        digit = np.argmax(cumulative > remaining[:, None], axis=1)
        below = np.where(digit > 0, cumulative[np.arange(len(columns)), np.maximum(digit - 1, 0)], 0)
        remaining -= below
        prefixes = (prefixes << np.uint64(8)) | digit.astype(np.uint64)
    return _from_keys(prefixes)
