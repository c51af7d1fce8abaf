"""Row engines: where the per-row work of the methods runs (see :mod:`xai_plugins.engines.base`).

The methods declare their per-row work once, as row methods (:mod:`xai_plugins.engines.method`),
ask :func:`engine_for` which engine handles their inputs and run there with
:func:`xai_plugins.engines.runner.run`; they never name an engine. In memory is the default (one block);
Dask (:mod:`xai_plugins.engines.dask`) and Spark (:mod:`xai_plugins.engines.spark`) ship with the
package; another engine (Ray, ...) subclasses :class:`~xai_plugins.engines.base.Engine` and calls
:func:`register`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from .base import Engine
from .dask import DaskEngine
from .memory import MemoryEngine
from .spark import ENGINE as SPARK

#: the default engine (numpy in, numpy out)
MEMORY = MemoryEngine()
_ENGINES: list[Engine] = []


def register(engine: Engine) -> Engine:
    """Make ``engine`` available to :func:`engine_for` (replacing one of the same ``name``)."""
    if not isinstance(engine, Engine):
        raise InputError(f"an engine must subclass xai_plugins.engines.base.Engine; got {type(engine).__name__}")
    _ENGINES[:] = [e for e in _ENGINES if e.name != engine.name] + [engine]
    return engine


def engines() -> list[Engine]:
    """The registered engines (in-memory last: it handles everything no other engine claims)."""
    return [*_ENGINES, MEMORY]


def get(name: str) -> Engine:
    """The registered engine called ``name`` ("memory", "dask", ...)."""
    for engine in engines():
        if engine.name == name:
            return engine
    raise InputError(f"no engine named {name!r}; registered: {[e.name for e in engines()]}")


def remote(engine: Engine) -> bool:
    """Whether ``engine`` holds its rows away from this process (a cluster engine, whose results are
    lazy), so that what needs rows in memory reads a sample of them (the audit does)."""
    return engine.lazy


#: types no engine but the in-memory one takes (numpy arrays, plain Python containers and scalars)
_IN_MEMORY = frozenset({np.ndarray, list, tuple, int, float, str, bool, type(None)})


def engine_for(*objs: Any) -> Engine:
    """The engine of the inputs ``objs`` (None ignored): the registered engine that handles one of
    them, else the in-memory engine. Inputs of two different engines are refused."""
    if all(type(obj) in _IN_MEMORY for obj in objs):       # the common case, decided without asking the engines
        return MEMORY
    found: Engine | None = None
    for engine in _ENGINES:
        for obj in objs:
            if obj is not None and engine.handles(obj):
                if found is not None:
                    raise InputError(f"the inputs mix collections of several engines ({found.name}, {engine.name}); "
                                     "pass them all on one engine (or in memory)")
                found = engine
                break
    return MEMORY if found is None else found


register(DaskEngine())
register(SPARK)

__all__: list[str] = []      # internal module: the public names are in the API reference
