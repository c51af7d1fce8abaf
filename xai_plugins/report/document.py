"""The documents made from audits beside the audit itself (the audit-to-audit diff, the audit history): written
to JSON, HTML and PDF with the audit report's look (:mod:`.render`), each output path checked before anything is
rendered (:func:`check_path`) and written with its folders (:func:`write`).

A document is a :class:`Document`: an object with ``to_dict()`` (JSON-ready), ``TEMPLATE`` (its jinja2 template
under ``templates/``, which reads the document as ``doc``), ``title``, ``description`` and ``created`` (an aware
datetime or None): its metadata, which become the PDF's document information. Its ``to_json``, ``to_html`` and
``to_pdf`` call :func:`json_text`, :func:`html` and :func:`pdf`.
"""

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


def json_text(document, path=None, **kwargs) -> str:
    """The document's ``to_dict()`` as JSON text; also written to ``path`` when given (checked first)."""
    check_path(path)
    text = json.dumps(document.to_dict(), indent=kwargs.pop("indent", 2), ensure_ascii=False, **kwargs)
    if path is not None:
        write(path, text.encode("utf-8"))
    return text


def html(document, path=None) -> str:
    """The document as one self-contained HTML page of the audit report's look; also written to ``path`` when given
    (checked before rendering)."""
    from .. import __version__
    from .render import render_page

    check_path(path)
    created = document.created
    meta = {"description": document.description, "keywords": ["explanation audit", document.title],
            "generator": f"xai_plugins {__version__}",
            "created": None if created is None else created.strftime("%Y-%m-%dT%H:%MZ"), "custom": {}}
    text = render_page(document.TEMPLATE, meta, doc=document)
    if path is not None:
        write(path, text.encode("utf-8"))
    return text


def pdf(document, path=None, source: str | None = None) -> bytes:
    """The PDF rendered by weasyprint from the document's HTML (``source``: what :func:`html` returned, when the caller
    has it), with no network access; also written to ``path`` when given (checked before rendering)."""
    from .render import html_to_pdf

    check_path(path)
    data = html_to_pdf(html(document) if source is None else source)
    if path is not None:
        write(path, data)
    return data


class Document:
    """What a document made from audits writes: :meth:`to_json`, :meth:`to_html` and :meth:`to_pdf` (the subclass
    gives ``to_dict``, ``TEMPLATE``, ``title``, ``description`` and ``created``)."""

    TEMPLATE = ""

    def to_json(self, path=None, **kwargs) -> str:
        """``to_dict()`` as JSON text; also written to ``path`` when given (checked first)."""
        return json_text(self, path, **kwargs)

    def to_html(self, path=None) -> str:
        """The self-contained HTML page, in the audit report's look; also written to ``path`` when given (checked
        before rendering)."""
        return html(self, path)

    def to_pdf(self, path=None, html: str | None = None) -> bytes:
        """The PDF rendered from the same HTML, with no network access; also written to ``path`` when given (checked
        before rendering). ``html``: what :meth:`to_html` returned, when the caller has it."""
        return pdf(self, path, html)
