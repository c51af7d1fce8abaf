"""The exact PG² of the C core: the CDF tables of the rows, the leaf-pair sums (pruned within
:data:`PRUNE_RTOL`), with a progress bar over batches of rows on long in-memory calls."""

from __future__ import annotations

import numpy as np

from .. import _native
from ..perturbation import cdf_table
from ._auto import AUTO_ACCEPT, exact_seconds
from ._boundaries import split_boundaries
from ._output_view import exact_view

__all__: list[str] = []

#: A progress bar is shown (``verbose=True``) on calls estimated to take longer than this (seconds).
PROGRESS_AFTER = 5.0
#: Relative error bound of the exact method's certified pruning (``prune=True``): leaves whose
#: pairs cannot move any PG² by more than this share of it are left out of the leaf-pair sums
#: (the bound and its proof: ``prune_leaves`` in ``csrc/pg2.c``); below float64 accumulation error
#: over the ~10⁸ terms of a large model. ``prune=False`` sums every leaf pair.
PRUNE_RTOL = 1e-13


def _exact_pg2(forest, X, masks, noise, prune, verbose, n_jobs, output=None) -> tuple[np.ndarray, int]:
    """Exact PG² (n, outputs; with ``output``, an index: (n, 1) of that output) of the rows of ``X`` under their
    ``masks``, and the leaf-pair terms summed."""
    view = exact_view(forest, output)
    splits = split_boundaries(view.forest)
    table = cdf_table(splits, X, noise, np.flatnonzero(masks.any(axis=0)))
    seconds = exact_seconds(view.forest, masks.sum(axis=1).mean()) * len(X) if verbose and len(X) > 1 else 0.0
    values, terms = _batched(len(X), seconds, verbose, "exact PG²", lambda a, b: _native.pg2(
        splits.c_forest, splits.cdf_offset, X[a:b], masks[a:b, None, :], table[a:b], n_jobs=n_jobs,
        prune_rtol=PRUNE_RTOL if prune else 0.0))
    return values[:, 0, view.take], terms


def exact_where_unshown(forest, X, masks, noise, mean, stderr, informative, rtol, *, prune=True, verbose=False,
                        n_jobs=None, output=None) -> tuple[int, int]:
    """``method="auto"``'s guarantee on sampled rows: a row whose samples have not shown a relative
    standard error within :data:`AUTO_ACCEPT` × ``rtol``, or whose standard error is not informative
    (see :func:`_informative`), is computed exactly; ``mean`` / ``stderr`` / ``informative`` are
    updated in place (of ``output`` alone, an index, or of every output). Returns (rows computed exactly, leaf-pair
    terms summed)."""
    redo = ~np.all(informative & (stderr <= AUTO_ACCEPT * rtol * mean), axis=1)
    if not redo.any():
        return 0, 0
    mean[redo], terms = _exact_pg2(forest, X[redo], masks[redo], noise, prune, verbose, n_jobs, output)
    stderr[redo], informative[redo] = 0.0, True
    return int(redo.sum()), terms



def _batched(n_rows: int, seconds: float, verbose: bool, what: str, call) -> tuple:
    """call(a, b) over the rows a..b in one go, or in about 50 batches under a tqdm bar when the
    call is estimated to take over :data:`PROGRESS_AFTER` seconds. call returns a tuple of per-row
    arrays and counts; the batches' arrays are concatenated and their counts added."""
    if not verbose or seconds <= PROGRESS_AFTER or n_rows < 2:
        return call(0, n_rows)
    from .._extras import tqdm

    step = max(1, -(-n_rows // 50))
    parts = []
    with tqdm(total=n_rows, desc=what, unit="row") as bar:
        for a in range(0, n_rows, step):
            parts.append(call(a, min(a + step, n_rows)))
            bar.update(min(step, n_rows - a))
    return tuple(np.concatenate(p) if isinstance(p[0], np.ndarray) else sum(p) for p in zip(*parts))
