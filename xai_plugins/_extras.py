"""Optional dependencies: the core installs without them, each feature names the extra it needs.

The extras of the package (``pip install 'xai_plugins[NAME]'``):

- ``report``: the audit report and ``xai-audit`` (jinja2, weasyprint, which needs the Pango system library);
- ``dt-sampler``: DT-Sampler (python-sat, pyunigen);
- ``interpret``: the InterpretML explainers (interpret-core);
- ``all``: every optional feature; ``test``: ``all`` plus the test and lint tools.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType


def require(module: str, extra: str, feature: str) -> ModuleType:
    """The imported ``module``; if it cannot be imported, an :class:`ImportError` that says that
    ``feature`` needs the ``extra`` and how to install it, chained to the original error.

    ``OSError`` is caught too: a binding whose system library is missing (weasyprint without Pango)
    fails with it at import time.
    """
    try:
        return import_module(module)
    except (ImportError, OSError) as error:
        raise ImportError(f"{feature} needs the {extra!r} extra: pip install 'xai_plugins[{extra}]' "
                          f"({type(error).__name__}: {error})", name=module) from error
