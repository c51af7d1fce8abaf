"""Optional dependencies: the core installs without them, each feature names the extra it needs.

The extras of the package (``pip install 'xai_plugins[NAME]'``):

- ``report``: the audit report and ``xai-audit`` (jinja2, weasyprint, which needs the Pango system
  library, fairlearn, and DT-Sampler's dependencies);
- ``dt-sampler``: DT-Sampler (python-sat, pyunigen);
- ``interpret``: the InterpretML explainers (interpret-core);
- ``all``: every optional feature; ``test``: ``all`` plus the test and lint tools.

Module-level imports of an optional dependency sit in a ``with needs(extra, feature):`` block (type
checkers see ordinary imports); an import inside a function can use :func:`require`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType


def missing_extra(extra: str, feature: str, error: BaseException) -> ImportError:
    """The :class:`ImportError` saying that ``feature`` needs ``extra`` and how to install it."""
    return ImportError(f"{feature} needs the {extra!r} extra: pip install 'xai_plugins[{extra}]' "
                       f"({type(error).__name__}: {error})", name=getattr(error, "name", None))


@contextmanager
def needs(extra: str, feature: str) -> Iterator[None]:
    """Turn a failing import inside the block into :func:`missing_extra`'s error, chained to the
    original one. ``OSError`` is caught too: a binding whose system library is missing (weasyprint
    without Pango) fails with it at import time."""
    try:
        yield
    except (ImportError, OSError) as error:
        raise missing_extra(extra, feature, error) from error


def require(module: str, extra: str, feature: str) -> ModuleType:
    """The imported ``module``, or :func:`missing_extra`'s error if it cannot be imported."""
    try:
        return import_module(module)
    except (ImportError, OSError) as error:
        raise missing_extra(extra, feature, error) from error
