"""A per-row method declared once: what it prepares on the driver, the named outputs it produces per
row, the block that computes them for a run of rows, and how they become its result.

:func:`xai_plugins.engines.runner.run` runs a :class:`RowMethod` on any engine: in memory it calls
``block`` once on every row (start 0) and hands its named arrays to ``finish`` as they are; a lazy
engine (Dask, Spark...) maps ``block`` over its row blocks, packs the named outputs side by side into
its float64 columns (widths from the declared shapes) and unpacks them again for ``finish``.

The block contract (:mod:`xai_plugins.engines.base`): row i's outputs may depend on row i and
``start + i`` only, so any blocking gives the in-memory result bitwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__: list[str] = []


@dataclass(frozen=True)
class Output:
    """A per-row output: ``block`` returns it as an array of shape (b, *shape) and dtype ``dtype``;
    ``finish`` receives it as a collection of all rows, with rows on ``rows_axis``."""

    name: str
    shape: tuple = ()
    dtype: Any = np.float64
    rows_axis: int = 0

    @property
    def width(self) -> int:
        """Float64 columns the output takes on a lazy engine."""
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Total:
    """An exact count per block (``block`` returns a Python int below 2**53), summed over the blocks;
    ``finish`` receives the total (an int, lazy on a lazy engine)."""

    name: str


@dataclass(frozen=True)
class Sum:
    """An exact reduction of per-row outputs: ``partial(*arrays)`` (the block's rows of the outputs
    named in ``of``, or of the rows themselves and the per-row arguments when ``of`` is None) returns
    a list of exact ints / integer arrays (:mod:`xai_plugins.exact_sum`, counts), added elementwise
    over the blocks (exact in any order; ``combine(parts) -> total`` joins them otherwise, the same
    for any blocking); ``finish`` receives ``total(added)`` of ``shape`` / ``dtype`` (the added
    parts themselves when ``total`` is None), lazy on a lazy engine. ``partial`` and ``total`` are
    module-level functions or partials of them (lazy engines pickle them)."""

    name: str
    partial: Callable
    total: Callable | None = None
    of: tuple | None = None
    shape: tuple = ()
    dtype: Any = np.float64
    combine: Callable | None = None


@dataclass(slots=True)
class Plan:
    """What ``prepare`` hands the runner: the engine's ``rows``, the ``outputs`` of this call (or a
    function giving them, called only by an engine that packs them into columns, when learning their
    shapes costs something, e.g. a model call: then only :class:`Output` with ``rows_axis`` 0), the
    object every block shares (``shipped``; ``ship`` says how it travels: ``"forest"`` without its
    predictor, ``"forest+model"`` with the fitted model, ``"object"`` / ``"object-once"`` (sent once,
    cached per object or not), ``"value"`` as it is), the per-row arguments blocked like ``rows``,
    the plain keyword arguments of ``block`` (``shared``), ``progress`` (a progress bar for an
    in-memory block: passed to ``block`` as ``progress=``, False on a lazy engine; None: no such
    argument) and ``state``: what ``finish`` needs from the driver (never shipped)."""

    rows: Any
    outputs: tuple | Callable[[], tuple]
    shipped: Any = None
    ship: str = "forest"
    per_row: tuple = ()
    shared: dict = field(default_factory=dict)
    progress: bool | None = None
    state: Any = None


@dataclass(eq=False)
class RowMethod:
    """A per-row method, declared once and run by :func:`xai_plugins.engines.runner.run`.

    Parameters
    ----------
    name : str
        What it is called (the prefix of the objects a lazy engine ships).
    prepare : callable
        ``prepare(engine, *args, **kwargs) -> Plan``: validates the inputs once, on the driver, and
        reads the rows with ``engine.rows`` (per-row arguments with ``engine.by_rows``).
    block : callable
        ``block(shipped, start, X, *per_row, **shared) -> {name: array}``: the outputs of a block of
        rows (a module-level function: lazy engines pickle it).
    finish : callable
        ``finish(plan, columns, engine) -> object``: the named outputs (numpy in memory, the
        engine's collections otherwise) made into the method's result, with ``engine.result(cls,
        **fields)`` (``cls(**fields)`` in memory, lazy elsewhere), or brought back with
        ``engine.compute`` where the result is always in memory.
    cost : callable or None
        ``cost(forest, n_rows, **options) -> seconds``: the estimated CPU seconds of a run (the
        audit's plan reads it).
    """

    name: str
    prepare: Callable[..., Plan]
    block: Callable[..., dict]
    finish: Callable[..., Any]
    cost: Callable[..., float] | None = None
