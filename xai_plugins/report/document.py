"""The documents made from audits beside the audit itself (the audit-to-audit diff, the audit history): written
to JSON, HTML and PDF with the audit report's look (:mod:`.render`), each output path checked before anything is
rendered (:func:`check_path`) and written with its folders (:func:`write`)."""

from __future__ import annotations

import json
from pathlib import Path

from .options import check_output_paths

__all__: list[str] = []      # internal module: the public names are in the API reference


def check_path(path) -> None:
    """Raise :class:`~xai_plugins.errors.OutputPathError` unless ``path`` (None: nothing to write) can be written."""
    if path is not None:
        check_output_paths([path])


def write(path, payload: bytes) -> None:
    """Write ``payload`` to ``path``, creating its folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)


class Document:
    """A document made from audits: its JSON-ready :meth:`to_dict` rendered through the jinja2 template ``TEMPLATE``
    (the template reads the document as ``doc``) with the audit report's stylesheet; ``title``, ``created`` (an
    aware datetime or None) and ``description`` fill its metadata (the PDF's document information)."""

    TEMPLATE = ""
    title = ""
    description = ""

    def to_dict(self) -> dict:
        """The document as JSON-ready dicts and lists."""
        raise NotImplementedError

    @property
    def created(self):
        """When the newest audit it reads was computed (None when undated)."""
        return None

    def to_json(self, path=None, **kwargs) -> str:
        """:meth:`to_dict` as JSON text; also written to ``path`` when given (checked first)."""
        check_path(path)
        text = json.dumps(self.to_dict(), indent=kwargs.pop("indent", 2), ensure_ascii=False, **kwargs)
        if path is not None:
            write(path, text.encode("utf-8"))
        return text

    def to_html(self, path=None) -> str:
        """The self-contained HTML document; also written to ``path`` when given (checked before rendering)."""
        from .. import __version__
        from .render import render_page

        check_path(path)
        meta: dict = {"description": self.description, "keywords": ["explanation audit", self.title],
                "generator": f"xai_plugins {__version__}",
                "created": None if self.created is None else self.created.strftime("%Y-%m-%dT%H:%MZ"), "custom": {}}
        html = render_page(self.TEMPLATE, meta, doc=self)
        if path is not None:
            write(path, html.encode("utf-8"))
        return html

    def to_pdf(self, path=None, html: str | None = None) -> bytes:
        """The PDF rendered by weasyprint from the same HTML, with no network access; also written to ``path`` when
        given (checked before rendering). ``html``: what :meth:`to_html` returned, when the caller has it."""
        from .render import html_to_pdf

        check_path(path)
        pdf = html_to_pdf(self.to_html() if html is None else html)
        if path is not None:
            write(path, pdf)
        return pdf
