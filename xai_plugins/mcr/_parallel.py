"""Threads over trees whose results are consumed in input order."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from .._validation import core_workers

__all__: list[str] = []      # internal module: the public names are in the API reference


class OrderedMap:
    """``fn(item)`` for every item, run by an executor's threads in batches of ``4 * workers`` and
    yielded in input order, so that sums the caller accumulates do not depend on ``workers``."""

    def __init__(self, executor: ThreadPoolExecutor | None, workers: int):
        self.executor, self.workers = executor, workers

    def __call__(self, fn, items):
        items = list(items)
        if self.executor is None or len(items) < 2:
            yield from map(fn, items)
            return
        batch = 4 * self.workers
        for a in range(0, len(items), batch):
            yield from self.executor.map(fn, items[a:a + batch])


@contextmanager
def tree_threads(n_jobs):
    """An :class:`OrderedMap` over ``n_jobs`` threads (scikit-learn's convention, see
    :func:`~xai_plugins._validation.core_workers`); the threads stop when the block ends."""
    workers = core_workers(n_jobs)
    if workers == 1:
        yield OrderedMap(None, 1)
        return
    with ThreadPoolExecutor(workers) as executor:
        yield OrderedMap(executor, workers)
