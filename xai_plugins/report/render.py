"""Render an :class:`~.audit.Audit` to self-contained HTML (jinja2) and to PDF (weasyprint).

The template and stylesheet are package data (``xai_plugins.templates``: ``audit.html``,
``audit.css``), read with :mod:`importlib.resources`. Autoescaping is on for every template,
because feature names and titles are user data. The PDF is rendered from the same HTML by
weasyprint with :class:`DataOnlyFetcher`, which refuses every URL that is not a ``data:`` URL,
so rendering never reaches the network or the file system.
"""

from __future__ import annotations

import math
import numbers
from importlib import resources

from .._extras import needs

with needs("report", "The audit report"):
    import jinja2
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher

TEMPLATE_PACKAGE = "xai_plugins.templates"


class RefusedURLError(ValueError):
    """Raised by :class:`DataOnlyFetcher` for any URL that is not embedded data."""


class DataOnlyFetcher(URLFetcher):
    """weasyprint URL fetcher that serves ``data:`` URLs and raises :class:`RefusedURLError` for
    anything else (http, https, file, ...). Refused URLs are kept in ``refused``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.refused = []

    def fetch(self, url, headers=None):
        """Decode a ``data:`` URL; refuse every other URL."""
        if not str(url).lower().startswith("data:"):
            self.refused.append(str(url))
            raise RefusedURLError(f"the audit renderer fetches embedded data: URLs only; refused {url!r}")
        return super().fetch(url, headers)


def fmt(value, digits: int = 4) -> str:
    """Format a number for the report: integers with thousands separators, other numbers with
    ``digits`` significant digits, missing / non-finite values as an en dash; text as is."""
    if value is None:
        return "–"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {fmt(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            return "–"
        if value == int(value) and abs(value) < 1e6:
            return f"{int(value):,}"
        return f"{value:.{digits}g}"
    return str(value)


def _load(name: str) -> str:
    return resources.files(TEMPLATE_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def environment() -> jinja2.Environment:
    """The jinja2 environment: package templates, autoescape on for everything, ``fmt`` filter."""
    env = jinja2.Environment(loader=jinja2.FunctionLoader(_load), autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    return env


def render_html(audit, template: str = "audit.html") -> str:
    """The audit as one HTML document with its CSS inlined and every figure embedded."""
    return environment().get_template(template).render(audit=audit, s=audit.sections, css=_load("audit.css"))


def html_to_pdf(html: str, fetcher: DataOnlyFetcher | None = None) -> bytes:
    """PDF bytes of ``html`` rendered with print CSS and no network access (see :class:`DataOnlyFetcher`)."""
    fetcher = fetcher or DataOnlyFetcher()
    return HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf()
