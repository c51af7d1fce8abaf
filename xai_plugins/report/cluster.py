"""The test data of an audit on a Dask cluster: what the row engine cannot say by itself.

:func:`prepare` reads the test data once for its facts (row count, missing values, complete rows
per block) and fetches a random in-memory sample of ``sample_size`` rows, which becomes the
audit context's ``X_test`` for what needs rows in memory (data summary, performance metrics,
per-row agreement, the Monte Carlo comparison). :func:`audit_rows` hands every complete row to the
audit's row work (:class:`.runners.AuditRows`: the explainers' block functions and the faithfulness
scores run on the Dask row engine, as in memory, so each row's result is bitwise the in-memory one
and the reductions are the same floats) with the agreement sample and the rows of the local figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import is_dask
from ..engines import get as get_engine
from ..errors import InputError
from .runners import AuditRows, extremes_first

#: rows of an in-memory X_test per block when it is sent to a cluster
IN_MEMORY_BLOCK_ROWS = 10_000
#: the engine the cluster audit runs its row work on
ENGINE = get_engine("dask")


class Runner:
    """Computes on ``client`` (a ``distributed.Client``; without one, the current distributed client
    if any, else dask's default scheduler), with a progress bar on the client side when
    ``progress``: ``distributed.progress``, or ``dask.diagnostics.ProgressBar`` locally."""

    def __init__(self, client=None, progress: bool = False):
        if client is None:
            try:
                from distributed import default_client

                client = default_client()
            except (ImportError, ValueError):
                client = None
        self.client, self.progress = client, progress

    def persist(self, *collections) -> list:
        """The collections computed and kept in (cluster) memory, in one pass."""
        import dask

        if self.client is not None:
            out = self.client.persist(list(collections), optimize_graph=False)
            if self.progress:
                from distributed import progress

                progress(*out, notebook=False, multi=False)
            else:
                from distributed import wait

                wait(out)
            return out
        if self.progress:
            from dask.diagnostics import ProgressBar

            with ProgressBar():
                return list(dask.persist(*collections, optimize_graph=False))
        return list(dask.persist(*collections, optimize_graph=False))

    def compute(self, *collections) -> list:
        """The collections' values on the client, in one pass."""
        import dask

        if self.client is not None:
            return list(self.client.compute(list(collections), sync=True, optimize_graph=False))
        return list(dask.compute(*collections, optimize_graph=False))

    def describe(self) -> str:
        """Where the computations run, in words."""
        if self.client is not None:
            return f"distributed scheduler at {self.client.scheduler.address}"
        import dask

        return f"dask's {dask.config.get('scheduler', None) or 'default'} scheduler"

    def one(self, collection):
        """One collection's value (for :meth:`xai_plugins.engines.dask.DaskEngine.order_statistics`)."""
        return self.compute(collection)[0]


@dataclass
class ClusterRows:
    """The test data on the cluster. ``X``: the complete rows (no missing value), float64 in the
    model's feature order, a dask array with known chunks; ``position``: their positions among all
    ``n_rows`` test rows (dask, int64); ``missing``: missing values per feature over all rows;
    ``sample_size``: rows of the in-memory sample."""

    runner: Runner
    X: Any
    position: Any
    n_rows: int
    missing: np.ndarray
    sample_size: int

    @property
    def n_complete(self) -> int:
        """Complete test rows: the rows every per-row method explains."""
        return int(self.X.shape[0])


# --------------------------------------------------------------------------------------------
# reading the test data
# --------------------------------------------------------------------------------------------

def _blocks(forest, X) -> tuple[list, list]:
    """Delayed blocks of ``X`` with the model's columns in its order, and the feature names."""
    import dask.array as da

    from .._validation import default_feature_names, feature_order

    names = forest.feature_names
    if hasattr(X, "columns") and hasattr(X, "to_delayed"):          # dask DataFrame
        given = [str(c) for c in X.columns]
        order = feature_order(given, list(names) if names is not None else given, "X_test")
        if order is not None:
            X = X[[X.columns[i] for i in order]]
        return list(X.to_delayed()), list(names) if names is not None else given
    if is_dask(X):
        if X.ndim != 2 or X.shape[1] != forest.n_features:
            raise InputError(f"X_test must be (n, {forest.n_features}); got shape {X.shape}")
        return list(X.rechunk({1: -1}).to_delayed().ravel()), list(names or default_feature_names(X.shape[1]))
    rows, names = forest.rows(X, what="X_test", allow_nan=True)
    step = max(1, min(IN_MEMORY_BLOCK_ROWS, -(-len(rows) // 8)))
    return list(da.from_array(rows, chunks=(step, rows.shape[1])).to_delayed().ravel()), names


def _y_blocks(y):
    if y is None or not is_dask(y):
        return None
    return list(y.to_delayed()) if hasattr(y, "to_delayed") and not hasattr(y, "chunks") else \
        list(y.to_delayed().ravel())


def _as_float(block) -> np.ndarray:
    return np.asarray(block.to_numpy(dtype=np.float64) if hasattr(block, "to_numpy") else block, dtype=np.float64)


def _facts(block, y_block=None) -> tuple:
    a = _as_float(block)
    if a.ndim != 2:
        raise InputError(f"X_test blocks must be 2-D; got shape {a.shape}")
    missing = np.isnan(a)
    return len(a), int((~missing.any(axis=1)).sum()), missing.sum(axis=0), None if y_block is None else len(y_block)


def _complete_rows(block, start: int) -> np.ndarray:
    a = _as_float(block)
    keep = np.flatnonzero(~np.isnan(a).any(axis=1))
    return np.concatenate([a[keep], (start + keep).astype(np.float64)[:, None]], axis=1)


def _take(block, where) -> np.ndarray:
    return _as_float(block)[where]


def _take_y(block, where) -> np.ndarray:
    return np.asarray(block)[where]


def prepare(forest, X_test, y_test, *, runner: Runner, sample_size: int, random_state):
    """Read the test data's facts on the cluster and fetch a random in-memory sample.

    Returns the :class:`ClusterRows` and the sample's rows (a DataFrame indexed by position among
    all test rows) and targets, which the audit context holds as its ``X_test`` / ``y_test``."""
    import dask
    import dask.array as da

    blocks, names = _blocks(forest, X_test)
    y_blocks = _y_blocks(y_test)
    if y_blocks is not None and len(y_blocks) != len(blocks):
        raise InputError(f"y_test has {len(y_blocks)} partitions but X_test has {len(blocks)}: take both from "
                         "one dask DataFrame (ddf[target] and ddf.drop(columns=[target]))")
    facts = runner.compute(*[dask.delayed(_facts, pure=True)(b, None if y_blocks is None else y_blocks[i])
                             for i, b in enumerate(blocks)])
    lengths = [f[0] for f in facts]
    if y_blocks is not None and any(f[3] != f[0] for f in facts):
        raise InputError("y_test's partitions have other lengths than X_test's: take both from one dask DataFrame")
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_rows = int(starts[-1])
    if n_rows < 1:
        raise InputError("X_test is empty: it has 0 rows, at least 1 needed")
    if y_test is not None and y_blocks is None and len(np.asarray(y_test).ravel()) != n_rows:
        raise InputError(f"y_test has {len(np.asarray(y_test).ravel())} values but X_test has {n_rows} rows")
    d = forest.n_features
    parts = [da.from_delayed(dask.delayed(_complete_rows, pure=True)(b, int(starts[i])), shape=(f[1], d + 1),
                             dtype=np.float64)
             for i, (b, f) in enumerate(zip(blocks, facts)) if f[1] > 0]
    if not parts:
        raise InputError("every test row has a missing value: the per-row methods need complete rows")
    Z = da.concatenate(parts, axis=0)
    cl = ClusterRows(runner, Z[:, :d], Z[:, d].astype(np.int64), n_rows,
                     np.sum([f[2] for f in facts], axis=0).astype(np.int64), min(int(sample_size), n_rows))

    rng = np.random.default_rng(random_state)
    picked = np.sort(rng.permutation(n_rows)[:cl.sample_size])
    owner = np.searchsorted(starts, picked, side="right") - 1
    fetch, fetch_y = [], []
    for b in np.unique(owner):
        where = picked[owner == b] - starts[b]
        fetch.append(dask.delayed(_take, pure=True)(blocks[b], where))
        if y_blocks is not None:
            fetch_y.append(dask.delayed(_take_y, pure=True)(y_blocks[b], where))
    got = runner.compute(*fetch, *fetch_y)
    sample = pd.DataFrame(np.concatenate(got[:len(fetch)]), columns=names, index=pd.Index(picked, name="row"))
    if y_test is None:
        y_sample = None
    elif y_blocks is not None:
        y_sample = np.concatenate(got[len(fetch):])
    else:
        y_sample = np.asarray(y_test).ravel()[picked]
    return cl, sample, y_sample


# --------------------------------------------------------------------------------------------
# per-row methods on every complete row
# --------------------------------------------------------------------------------------------

def _score_block(scorer, start, X):
    return np.column_stack([scorer(X), start + np.arange(len(X), dtype=np.float64)])


def _extremes(block, m: int) -> np.ndarray:
    """The ``m`` lowest and ``m`` highest (score, index) pairs of a block, ordered by score then index."""
    order = np.lexsort((block[:, 1], block[:, 0]))
    keep = order if len(order) <= 2 * m else np.concatenate([order[:m], order[-m:]])
    return block[keep]


def _local_rows(candidates, n_local: int) -> list:
    """Complete-row indices of the highest and lowest explained output, alternating (as in memory:
    a stable sort of the scores, ties by position)."""
    both = np.concatenate(candidates)
    return extremes_first(both[np.lexsort((both[:, 1], both[:, 0])), 1].astype(np.int64), n_local)


def audit_rows(ctx, cl: ClusterRows, n_local: int) -> AuditRows:
    """The explained rows of an audit on the cluster: every complete test row, a random sample of
    them for the per-row agreement (``ctx.rng("agreement rows")``), and the ``n_local`` rows of the
    highest and lowest explained output for the local figures (one pass of the model's predictions)."""
    import dask

    n = cl.n_complete
    agreement = np.sort(ctx.rng("agreement rows").permutation(n)[:min(n, cl.sample_size)])
    local_X, local_labels = np.empty((0, ctx.n_features)), []
    if n_local > 0:
        scores = ENGINE.map_rows(_score_block, cl.X, ENGINE.ship(ctx.portable_scorer(), "xai-scorer", cache=False),
                                 [], 2)
        candidates = cl.runner.compute(*[dask.delayed(_extremes, pure=True)(b, n_local)
                                         for b in scores.to_delayed(optimize_graph=False).ravel()])
        local_idx = _local_rows(candidates, n_local)
        picked = np.sort(local_idx)
        local_X, labels = cl.runner.compute(cl.X[picked], cl.position[picked])
        order = np.searchsorted(picked, local_idx)      # back to the alternating order
        local_X, local_labels = local_X[order], [str(int(v)) for v in labels[order]]
    return AuditRows(ENGINE, cl.X, None, agreement, local_X, local_labels, persist=cl.runner.persist,
                     compute=lambda *objs: cl.runner.compute(*objs))
