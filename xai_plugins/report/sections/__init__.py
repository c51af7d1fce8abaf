"""The report sections: one module (or subpackage) per section, each registering its unit with
:func:`~xai_plugins.report.section.register` (builder, reads, typed result, thresholds, cost, position; see
:mod:`xai_plugins.report.section`). This package imports every module in it, so a new section is one new
module and its partial ``templates/sections/<name>.html``, nothing else.

:func:`build_all` builds the sections in :func:`~xai_plugins.report.section.compute_order` (derived from their
reads) and returns them in :func:`~xai_plugins.report.section.render_order`. A builder that raises does not stop
the audit: its section's status becomes "failed" with the reason (the summary and the CLI then say so); a read
the builder did not declare is a programming error and raises.
"""

from __future__ import annotations

import importlib
import pkgutil
import time

from ..section import REGISTRY, STATUSES, Reads, UndeclaredRead, compute_order, dependencies, new, render_order, title


def build_all(ctx, options, on_section=None) -> dict:
    """Build every registered section in :func:`compute_order` and return them in :func:`render_order`.

    A builder's exception becomes a "failed" section carrying ``"<Type>: <message>"`` as its reason (and, as its
    typed result, its result type's empty default where it has one), except
    :class:`~xai_plugins.report.section.UndeclaredRead`, which is raised. ``on_section(name)`` is called before
    each builder (progress display)."""
    results: dict = {}
    reads = dependencies()
    for name in compute_order():
        unit = REGISTRY[name]
        if on_section is not None:
            on_section(name)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            section = unit.build(ctx, Reads(unit, results, reads[name]), options)
        except UndeclaredRead:
            raise
        except Exception as exc:  # noqa: BLE001 - the failure is shown in the section, the summary and the CLI
            section = new(name, status="failed", reason=f"{type(exc).__name__}: {exc}", result=_empty(unit.result))
        if section.status not in STATUSES:
            raise ValueError(f"section {name!r} returned status {section.status!r}; use one of {STATUSES}")
        if section.result is not None and unit.result is not None and not isinstance(section.result, unit.result):
            raise TypeError(f"section {name!r} returned a {type(section.result).__name__} result; its unit declares "
                            f"{unit.result.__name__}")
        section.title = section.title or title(name)
        section.seconds, section.cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        results[name] = section
    return {name: results[name] for name in render_order() if name in results}


def _empty(result: type | None) -> object:
    """An instance of ``result`` with its defaults, None when it has none (or no type is declared)."""
    try:
        return None if result is None else result()
    except TypeError:
        return None


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

#: the built-in sections in compute and in render order, as registered when the package was imported
COMPUTE_ORDER, RENDER_ORDER = compute_order(), render_order()

__all__: list = []
