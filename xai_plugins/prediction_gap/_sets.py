"""The perturbed feature sets and rankings of PG² / PGI²: masks from the many ways of naming them,
rankings checked, the prefix sets of rankings, and rows whose perturbed features are missing."""

from __future__ import annotations

import functools
import numbers

import numpy as np

from .._validation import feature_index
from ..errors import InputError, InputTypeError

__all__: list[str] = []


def _squeeze(n_outputs: int, values: np.ndarray) -> np.ndarray:
    """``values`` (..., k) without its output axis when the model has one output."""
    return values[..., 0] if n_outputs == 1 else values


def _set_masks(S, n_rows: int, n_features: int, names=None) -> np.ndarray:
    """(n_rows, n_features) uint8 masks of the perturbed sets.

    ``S`` is one set for every row — feature indices (model order) and/or feature names, or a
    boolean mask (d,) — or one set per row: a boolean (n, d) mask, an (n, k) integer array, or a
    list of n index/name lists.
    """
    if isinstance(S, (list, tuple)) and all(type(f) is int or isinstance(f, (str, numbers.Integral)) for f in S):
        return _mask_of(S, n_rows, n_features, names)   # one set, indices and names mixed freely
    if isinstance(S, (str, numbers.Integral)) and not isinstance(S, (bool, np.bool_)):
        return _mask_of([S], n_rows, n_features, names)
    if isinstance(S, (list, tuple)) and S and all(isinstance(row, (list, tuple, np.ndarray)) for row in S) \
            and not all(np.asarray(row).dtype == bool for row in S):
        if len(S) != n_rows:
            raise InputError(f"per-row S must list one feature set per row: {n_rows} rows, got {len(S)} sets")
        return np.concatenate([_mask_of(list(row), 1, n_features, names) for row in S], axis=0)
    arr = np.asarray(S)
    if arr.dtype == bool:
        if arr.shape == (n_features,):
            arr = np.broadcast_to(arr, (n_rows, n_features))
        if arr.shape != (n_rows, n_features):
            raise InputError(f"a boolean S must have shape ({n_features},) or ({n_rows}, {n_features}); "
                             f"got {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.uint8)
    if arr.ndim == 2:
        if len(arr) != n_rows:
            raise InputError(f"per-row S must list one feature set per row: {n_rows} rows, got {len(arr)} sets")
        return np.concatenate([_mask_of(list(row), 1, n_features, names) for row in arr], axis=0)
    if arr.ndim > 2:
        raise InputError("S must be a feature list, a boolean mask (d,) or (n, d), an (n, k) index array "
                         f"or one list per row; got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "f":
        raise InputTypeError(f"S must hold integer feature indices, feature names or be a boolean mask; "
                             f"got dtype {arr.dtype}")
    return _mask_of([f.item() if hasattr(f, "item") else f for f in arr.ravel()], n_rows, n_features, names)


def _one_set(S, n_features: int, names) -> np.ndarray:
    """(n_features,) uint8 mask of one set ``S`` shared by every row (:func:`_set_masks`), remembered for a
    list of feature indices / names (a loop of one-row calls on the same set makes it once; read-only)."""
    if isinstance(S, (list, tuple)) and all(type(f) is int or type(f) is str for f in S):
        return _cached_set(tuple(S), n_features, None if names is None else tuple(names))
    return _set_masks(S, 1, n_features, names)[0]


@functools.lru_cache(maxsize=256)
def _cached_set(S: tuple, n_features: int, names: tuple | None) -> np.ndarray:
    mask = _set_masks(list(S), 1, n_features, None if names is None else list(names))[0]
    mask.flags.writeable = False
    return mask


def _mask_of(features, n_rows: int, n_features: int, names) -> np.ndarray:
    """(n_rows, n_features) uint8 mask of one set of features (indices or names)."""
    idx = [feature_index(f, names, n_features) for f in features]
    if len(set(idx)) != len(idx):
        raise InputError(f"S holds duplicated features: {list(features)}")
    mask = np.zeros((n_rows, n_features), dtype=np.uint8)
    mask[:, idx] = 1
    return mask


def _check_perturbed_finite(X, mask, missing=float("nan"), categories=None):
    """InputError when a numeric perturbed feature is missing in some row (NaN, or the model's
    ``missing`` sentinel, which rows enter as NaN); a categorical one (``categories`` > 0) may be: its
    missing value is an atom of its law."""
    nan = np.isnan(X)
    if not nan.any():
        return
    bad = nan & (mask != 0)          # (n, d), mask (n, d) or (1, d): pgi2 / greedy perturb every feature
    if categories is not None:
        bad &= categories == 0
    if bad.any():
        r, c = np.argwhere(bad)[0]
        what = "NaN" if np.isnan(missing) else f"a missing value (NaN or the model's missing= sentinel {missing!r})"
        raise InputError(f"X has {what} in perturbed feature {c} (row {r}); perturbing a missing value is undefined")


def _check_ranking(ranking, n_rows: int, n_features: int, names=None) -> np.ndarray:
    """(m, n, d) int64 rankings from a (d,), (n, d) or (m, n, d) array of feature orders (indices
    in the model's feature order, or feature names)."""
    r = np.asarray(getattr(ranking, "ranking", ranking))
    if r.dtype.kind in "OUS":
        lookup = np.vectorize(lambda f: feature_index(f, names, n_features), otypes=[np.int64])
        r = lookup(r) if r.size else r.astype(np.int64)
    if r.ndim == 1:
        r = np.broadcast_to(r, (n_rows, len(r)))
    if r.ndim == 2:
        r = r[None]
    if r.ndim != 3 or r.shape[1:] != (n_rows, n_features) or r.shape[0] < 1:
        raise InputError(f"ranking must have shape ({n_features},), ({n_rows}, {n_features}) or "
                         f"(m, {n_rows}, {n_features}); got {np.shape(r)}")
    if not np.issubdtype(r.dtype, np.integer):
        raise InputTypeError(f"ranking must hold integer feature indices or feature names; got dtype {r.dtype}")
    if not np.all(np.sort(r, axis=2) == np.arange(n_features)):
        raise InputError("every ranking row must be a permutation of 0..d-1")
    return r.astype(np.int64)


def _shared_sets(sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the distinct sets among ``sets`` (n, s, d) padded with empty sets (PG² = 0), and
    where each of the s sets is among them: ``(mask (n, u, d), where (n, s))``."""
    n, s, d = sets.shape
    unique, where = [], np.empty((n, s), dtype=np.int64)
    for i in range(n):
        u, inverse = np.unique(sets[i], axis=0, return_inverse=True)
        where[i] = inverse.reshape(-1)
        unique.append(u)
    mask = np.zeros((n, max(len(u) for u in unique), d), dtype=np.uint8)
    for i, u in enumerate(unique):
        mask[i, :len(u)] = u
    return mask, where


def _per_row_sets(S) -> bool:
    """Whether an in-memory ``S`` holds one set per row."""
    if isinstance(S, (list, tuple)):        # a list of feature lists / masks (one per row), else one set
        return bool(S) and all(isinstance(r, (list, tuple, np.ndarray)) for r in S)
    return np.ndim(S) == 2


def _block_masks(S, *, d, names) -> np.ndarray:
    """One block of per-row sets as a boolean (b, d) mask."""
    return _set_masks(S, len(S), d, names).astype(bool)



def _prefix_sets(r: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The prefix sets of the (m, n, d) rankings ``r``: ``(mask, where)``, mask[i, s, j] = 1 iff
    feature j is among the first k+1 of ranking a of row i (s = a * d + k), or each row's distinct
    sets (:func:`_shared_sets`) and where each prefix set is among them when m > 1 (else None)."""
    m, n, d = r.shape
    position = np.empty_like(r)
    np.put_along_axis(position, r, np.broadcast_to(np.arange(d), r.shape), axis=2)
    sets = (position[:, :, None, :] <= np.arange(d)[None, None, :, None]).astype(np.uint8)
    sets = sets.transpose(1, 0, 2, 3).reshape(n, m * d, d)
    if m == 1:      # one ranking: its d prefix sets are distinct, nothing to share
        return np.ascontiguousarray(sets), None
    return _shared_sets(sets)
