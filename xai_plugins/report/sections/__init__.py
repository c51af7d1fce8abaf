"""The registry of report sections.

A section is one module of this package holding one builder decorated with :func:`register`::

    @register("mcr", "Rashomon set and model class reliance")
    def build(ctx, results, options) -> Section: ...

``ctx`` is the :class:`~xai_plugins.report.context.AuditContext`, ``results`` the sections built so
far (name → :class:`~xai_plugins.report.section.Section`, in :data:`COMPUTE_ORDER`) and ``options``
the :class:`~xai_plugins.report.options.AuditOptions`. Each section renders through one partial,
``templates/sections/<name>.html``. Adding a section = a new module, a new partial and its name in
:data:`COMPUTE_ORDER` (after the sections it reads) and :data:`RENDER_ORDER`.

:func:`build_all` runs the builders; one that raises does not stop the audit: its section's status
becomes "failed" with the reason (the summary and the CLI then say so).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass

from ..section import SKIPPED, STATUSES, Section, Table

#: the order sections are built in: every section after the sections it reads
COMPUTE_ORDER = ("model", "data", "calibration", "drift", "explanations", "faithfulness", "agreement", "mcr",
                 "fairness", "limitations", "verdict", "summary", "reproducibility", "governance", "regulatory")
#: the order sections appear in the report (the verdict and the governance block first)
RENDER_ORDER = ("verdict", "governance", "summary", "model", "calibration", "data", "drift", "explanations",
                "faithfulness", "agreement", "mcr", "fairness", "limitations", "regulatory", "reproducibility")


@dataclass(frozen=True)
class Entry:
    """A registered section: its ``name``, heading ``title`` and ``builder``."""

    name: str
    title: str
    builder: object


REGISTRY: dict = {}


def register(name: str, title: str):
    """Decorator registering ``fn(ctx, results, options) -> Section`` as the builder of section ``name``."""

    def decorate(fn):
        if name in REGISTRY and REGISTRY[name].builder is not fn:
            raise ValueError(f"section {name!r} is registered twice")
        REGISTRY[name] = Entry(name, title, fn)
        return fn

    return decorate


def title(name: str) -> str:
    """The heading of section ``name``."""
    return REGISTRY[name].title


def new(name: str, **fields) -> Section:
    """An empty :class:`Section` of ``name`` with its registered title."""
    return Section(name, title=title(name), **fields)


def skipped_by_user(name: str, options) -> Section | None:
    """The "skipped" :class:`Section` of an optional section that ``options.sections`` leaves out, else None."""
    return None if name in options.sections else skipped(name)


def build_all(ctx, options, on_section=None) -> dict:
    """Build every section of :data:`COMPUTE_ORDER` and return them in :data:`RENDER_ORDER`.

    A builder's exception becomes a "failed" section carrying ``"<Type>: <message>"`` as its reason.
    ``on_section(name)`` is called before each builder (progress display)."""
    results = {}
    for name in COMPUTE_ORDER:
        if on_section is not None:
            on_section(name)
        start = time.perf_counter()
        try:
            section = REGISTRY[name].builder(ctx, results, options)
        except Exception as exc:  # noqa: BLE001 - the failure is shown in the section, the summary and the CLI
            section = new(name, status="failed", reason=f"{type(exc).__name__}: {exc}")
        if section.status not in STATUSES:
            raise ValueError(f"section {name!r} returned status {section.status!r}; use one of {STATUSES}")
        section.title = section.title or title(name)
        section.seconds = time.perf_counter() - start
        results[name] = section
    return {name: results[name] for name in RENDER_ORDER if name in results}


def skipped(name: str, reason: str = SKIPPED) -> Section:
    """A section the user did not ask for (or that cannot run): status "skipped" with ``reason``."""
    return new(name, status="skipped", reason=reason)


for _name in dict.fromkeys(COMPUTE_ORDER + RENDER_ORDER):
    importlib.import_module(f"{__name__}.{_name}")

__all__ = ["COMPUTE_ORDER", "RENDER_ORDER", "REGISTRY", "Section", "Table", "register", "build_all", "new",
           "skipped", "skipped_by_user", "title"]
