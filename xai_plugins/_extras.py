"""Optional dependencies: the core installs without them, each feature names the extra it needs.

The extras of the package (``pip install 'xai_plugins[NAME]'``):

- ``report``: the audit report and ``xai-audit`` (jinja2, weasyprint, which needs the Pango system
  library, fairlearn, and DT-Sampler's dependencies);
- ``dt-sampler``: DT-Sampler (python-sat, pyunigen);
- ``interpret``: the InterpretML explainers (interpret-core);
- ``all``: every optional feature; ``test``: ``all`` plus the test and lint tools.

Module-level imports of an optional dependency sit in a ``with needs(extra, feature):`` block (type
checkers see ordinary imports); an import inside a function can use :func:`require`. Progress bars come
from :func:`tqdm`, which needs no ipywidgets (in no extra) in a notebook.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from importlib.util import find_spec
from types import ModuleType

from .errors import MissingExtraError

__all__: list[str] = []      # internal module: the public names are in the API reference


def missing_extra(extra: str, feature: str, error: BaseException) -> MissingExtraError:
    """The :class:`~xai_plugins.errors.MissingExtraError` (an :class:`ImportError`) saying that ``feature``
    needs ``extra`` and how to install it."""
    return MissingExtraError(f"{feature} needs the {extra!r} extra: pip install 'xai_plugins[{extra}]' "
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


def tqdm(*args, **kwargs):
    """A progress bar, ``tqdm(*args, **kwargs)`` of :func:`progress_class`.

    Parameters
    ----------
    *args, **kwargs
        The arguments of ``tqdm.tqdm`` (an iterable, ``total``, ``desc``, ``disable``...).

    Returns
    -------
    tqdm.std.tqdm
        The bar (an iterator and a context manager, as tqdm's own).
    """
    return progress_class()(*args, **kwargs)


@functools.cache
def progress_class() -> type:
    """The progress bar class: ``tqdm.auto.tqdm`` (a widget in a notebook) where ipywidgets can be imported,
    else the text bar ``tqdm.std.tqdm``. ``tqdm.auto`` itself, in a notebook without ipywidgets, warns
    "IProgress not found" on import and then falls back to the text bar anyway.

    Returns
    -------
    type
        A ``tqdm.std.tqdm`` subclass (or that class itself).
    """
    try:
        widgets = find_spec("ipywidgets") is not None
    except ValueError:      # a module set to None in sys.modules (hidden): not importable
        widgets = False
    if widgets:
        from tqdm.auto import tqdm as bar
    else:
        from tqdm.std import tqdm as bar
    return bar
