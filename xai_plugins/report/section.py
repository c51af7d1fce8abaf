"""The report section as one unit: :class:`Section` (what a builder returns: status, key numbers, tables,
figures, and the typed :attr:`Section.result` other sections read), :class:`Unit` (what a section module
registers with :func:`register`: its builder, the sections it reads, its typed result, its thresholds and kinds
of criterion, its fixed cost and its place in the report) and the order the audit builds and shows them in
(:func:`compute_order`, :func:`render_order`).

A section module declares everything about its section once::

    @dataclass
    class Rashomon:                       # what other sections may read of it
        table: pd.DataFrame

    @register("mcr", "Rashomon set and model class reliance", reads=("explanations",), result=Rashomon,
              thresholds=THRESHOLDS, kinds=(RASHOMON,), seconds=0.3, position=110, stage=80)
    def build(ctx, results, options) -> Section: ...

``results`` holds only the sections named in ``reads`` (:class:`Reads`; any other name raises
:class:`UndeclaredRead`), and the builder reads their typed ``result`` (never another section's ``raw``, which
is the section's own template data: ``.ci/check_layers`` refuses such a read). The compute order is a
topological sort of the reads (:func:`compute_order`: a cycle or a read of an unknown section raises
:class:`SectionOrderError`); the report shows the sections by their declared ``position``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

#: the statuses a section can end in; "failed" and "warn" are raised in the summary and on stderr
STATUSES = ("ok", "warn", "failed", "skipped", "not applicable")
#: the reason of a section or method the user did not ask for
SKIPPED = "skipped by user"
#: ``reads=EVERY``: the section reads every other section (it is built last; only one section may)
EVERY = "*"
#: in ``reads``: every section that declares a kind of criterion (the verdict gathers their criteria)
CRITERIA = "criteria"
#: the fixed seconds of a section's tables and bootstraps (its figures apart) unless it declares its own
FIXED_SECONDS = 0.05

__all__: list = []


@dataclass
class Table:
    """A captioned table: ``frame`` is shown with its index when ``index`` is True."""

    caption: str
    frame: pd.DataFrame
    index: bool = True

    def to_dict(self) -> dict:
        """Caption, columns and rows as JSON-ready lists."""
        frame = self.frame.reset_index() if self.index else self.frame
        return {"caption": self.caption, "columns": [str(c) for c in frame.columns],
                "rows": plain(frame.to_numpy().tolist())}


@dataclass
class Section:
    """One report section, built by its registered builder (see :func:`register`).

    ``status`` is one of :data:`STATUSES` (``reason`` says why when it is not "ok"); ``data`` the
    section's key numbers (JSON-ready through :func:`plain`, exported by ``Audit.to_json``); ``result`` the
    typed result other sections read (the dataclass its unit declares; not exported); ``raw`` what its own
    template needs beyond ``data`` (never read by another section; not exported); ``tables`` and ``figures``
    in display order; ``seconds`` the builder's wall-clock time, ``cpu_seconds`` the CPU time of this process's
    threads meanwhile (what the run-time plan estimates: the C core's loops run on every core)."""

    key: str
    title: str = ""
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    data: dict = field(default_factory=dict)
    tables: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    result: object = None

    def to_dict(self) -> dict:
        """JSON-ready content (figures as captions only; ``raw`` and ``result`` left out)."""
        return {"title": self.title, "status": self.status, "reason": self.reason, "seconds": self.seconds,
                "data": plain(self.data), "tables": [t.to_dict() for t in self.tables],
                "figures": [f.to_dict() for f in self.figures]}


def plain(value):
    """Convert numpy / pandas values inside dicts and lists to JSON-ready Python objects
    (non-finite floats become None)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return plain(value.reset_index().to_dict(orient="records"))
    if isinstance(value, pd.Series):
        return plain(value.to_dict())
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class SectionOrderError(ValueError):
    """The sections' declared reads admit no compute order: a cycle, or a read of a section no module registers."""


class UndeclaredRead(KeyError):
    """A builder read a section its unit does not declare in ``reads``: a programming error, raised through the
    audit rather than shown as a failed section."""


@dataclass(frozen=True)
class Unit:
    """A registered section: ``name``, heading ``title``, ``build(ctx, results, options) -> Section``, the
    sections it ``reads`` (names, or :data:`EVERY`), the type of its typed ``result`` (None: it gives none),
    the ``thresholds`` its criteria use and their ``kinds`` (:class:`~.criteria.Threshold`,
    :class:`~.criteria.Kind`), its fixed cost ``seconds`` (the run-time plan's estimate of its tables and
    bootstraps), its ``position`` in the report and its ``stage``: where the reads leave the compute order
    open, the lower stage is built first (facts about the model and data, then the explainers, the analyses of
    their results, the judgements, the records); ``optional`` when a user may leave it out (``sections=`` /
    ``--sections``: those named are built, the others skipped) and ``default`` when such a section is built unless
    the user names others."""

    name: str
    title: str
    build: Callable
    reads: tuple = ()
    result: type | None = None
    thresholds: tuple = ()
    kinds: tuple = ()
    seconds: float = FIXED_SECONDS
    position: float = 0.0
    stage: float = 0.0
    optional: bool = False
    default: bool = False


#: every registered section by name, in registration order
REGISTRY: dict = {}


def register(name: str, title: str, *, reads=(), result: type | None = None, thresholds=(), kinds=(),
             seconds: float = FIXED_SECONDS, position: float, stage: float, optional: bool = False,
             default: bool = False):
    """Decorator registering ``build(ctx, results, options) -> Section`` as section ``name`` (see :class:`Unit`
    for the other fields). The section's thresholds and kinds of criterion join the verdict's
    (:func:`~.criteria.declare`)."""
    from . import criteria

    def decorate(fn):
        if name in REGISTRY and REGISTRY[name].build is not fn:
            raise ValueError(f"section {name!r} is registered twice")
        declared = (EVERY,) if reads == EVERY else tuple(reads)
        REGISTRY[name] = Unit(name, title, fn, declared, result, tuple(thresholds), tuple(kinds), float(seconds),
                              float(position), float(stage), bool(optional), bool(default))
        for item in (*kinds, *thresholds):
            criteria.declare(item)
        return fn

    return decorate


def unregister(name: str) -> None:
    """Remove section ``name`` (and its thresholds) from the registry (a test's made-up section)."""
    from . import criteria

    unit = REGISTRY.pop(name)
    for item in (*unit.kinds, *unit.thresholds):
        criteria.withdraw(item.name)


def title(name: str) -> str:
    """The heading of section ``name``."""
    return REGISTRY[name].title


def new(name: str, **fields) -> Section:
    """An empty :class:`Section` of ``name`` with its registered title."""
    return Section(name, title=title(name), **fields)


def skipped(name: str, reason: str = SKIPPED) -> Section:
    """A section the user did not ask for (or that cannot run): status "skipped" with ``reason``."""
    return new(name, status="skipped", reason=reason)


def skipped_by_user(name: str, options) -> Section | None:
    """The "skipped" :class:`Section` of an optional section that ``options.sections`` leaves out, else None."""
    return None if name in options.sections else skipped(name)


def dependencies(units: dict | None = None) -> dict:
    """Each section's reads as a set of section names (:data:`EVERY` expanded to every other section,
    :data:`CRITERIA` to every other section declaring a kind of criterion). Raises
    :class:`SectionOrderError` for a read of a section that is not registered, or two sections reading every
    other."""
    units = REGISTRY if units is None else units
    every = [u.name for u in units.values() if u.reads == (EVERY,)]
    if len(every) > 1:
        raise SectionOrderError(f"sections {every} each read every other section: they would read each other")
    out = {}
    for unit in units.values():
        reads = set(units) - {unit.name} if unit.reads == (EVERY,) else set(unit.reads) - {CRITERIA}
        if CRITERIA in unit.reads:
            reads |= {u.name for u in units.values() if u.kinds and u.name != unit.name}
        unknown = sorted(reads - set(units))
        if unknown:
            raise SectionOrderError(f"section {unit.name!r} reads {unknown}, which no section module registers")
        out[unit.name] = reads
    return out


def compute_order(units: dict | None = None) -> tuple:
    """The sections in the order they are built: every section after the sections it reads (Kahn's topological
    sort; among the sections ready to build, the lowest ``stage`` first, then the name). Raises
    :class:`SectionOrderError` when the reads form a cycle."""
    units = REGISTRY if units is None else units
    waits = dependencies(units)
    readers: dict = {name: [] for name in units}
    for name, reads in waits.items():
        for read in reads:
            readers[read].append(name)
    left = {name: len(reads) for name, reads in waits.items()}
    ready = [(units[n].stage, n) for n, k in left.items() if k == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for reader in readers[name]:
            left[reader] -= 1
            if left[reader] == 0:
                heapq.heappush(ready, (units[reader].stage, reader))
    if len(order) < len(units):
        raise SectionOrderError("the sections' reads form a cycle among " + ", ".join(sorted(set(units) - set(order))))
    return tuple(order)


def render_order(units: dict | None = None) -> tuple:
    """The sections in the order the report shows them: by declared ``position`` (then name). The presentation
    order is the reader's, not the computation's: the verdict, built from nearly every other section, comes first."""
    units = REGISTRY if units is None else units
    return tuple(sorted(units, key=lambda name: (units[name].position, name)))


class Reads:
    """The built sections a builder may read: the names its unit declares, in compute order. Indexing or
    :meth:`get` with any other name raises :class:`UndeclaredRead`; iteration covers the declared sections
    built so far."""

    def __init__(self, unit: Unit, built: dict, names: set | None = None):
        self._unit, self._built = unit, built
        self._names = dependencies()[unit.name] if names is None else set(names)

    def _check(self, name: str) -> None:
        if name not in self._names:
            raise UndeclaredRead(f"section {self._unit.name!r} reads {name!r} without declaring it in reads=")

    def __getitem__(self, name: str) -> Section:
        self._check(name)
        return self._built[name]

    def get(self, name: str, default=None):
        """The built section ``name``, ``default`` when it was not built (a declared read)."""
        self._check(name)
        return self._built.get(name, default)

    def __contains__(self, name) -> bool:
        return name in self._names and name in self._built

    def keys(self):
        """The declared sections built so far, in compute order."""
        return [name for name in self._built if name in self._names]

    def __iter__(self):
        return iter(self.keys())

    def values(self):
        """The declared :class:`Section` objects built so far, in compute order."""
        return [self._built[name] for name in self.keys()]

    def items(self):
        """(name, :class:`Section`) of the declared sections built so far, in compute order."""
        return [(name, self._built[name]) for name in self.keys()]
