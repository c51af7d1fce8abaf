"""Render an :class:`~.audit.Audit` to self-contained HTML (jinja2) and to PDF (weasyprint).

The template and stylesheet are package data (``xai_plugins.templates``: ``audit.html``,
``audit.css``), read with :mod:`importlib.resources`. Autoescaping is on for every template,
because feature names and titles are user data. The PDF is rendered from the same HTML by
weasyprint with :class:`DataOnlyFetcher`, which refuses every URL that is not a ``data:`` URL,
so rendering never reaches the network or the file system.

Archival PDF (``pdf_variant``, default PDF/A-3b): :func:`html_to_pdf` passes WeasyPrint the variant (its
sRGB output intent and the XMP ``pdfaid`` identification), a stable file identifier
(:func:`pdf_identifier`, from the audit's content hashes), tags, and the embedded files
(:func:`audit_attachments`: the audit's JSON and the model card, as PDF/A-3 associated files). The
document metadata (title, model name and version, audit id, date) comes from the HTML's ``<meta>``
elements (:func:`pdf_metadata`), so the HTML given to ``Audit.to_pdf`` carries it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import numbers
import warnings
from importlib import resources
from pathlib import Path

from .._extras import needs

__all__: list[str] = []      # internal module: the public names are in the API reference

with needs("report", "The audit report"):
    import jinja2
    import pydyf
    from weasyprint import HTML, Attachment
    from weasyprint.urls import URLFetcher

TEMPLATE_PACKAGE = "xai_plugins.templates"
#: the archival PDF variants ``pdf_variant`` accepts (both take embedded files; None: a plain PDF)
PDF_VARIANTS = ("pdf/a-3b", "pdf/a-3u")


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


def render_page(template: str, meta: dict, **context) -> str:
    """One self-contained HTML document of the report's look: ``template`` rendered with the report's CSS inlined,
    ``meta`` (the document metadata its ``<meta>`` elements carry: see :func:`pdf_metadata`) and ``context``."""
    return environment().get_template(template).render(css=_load("audit.css"), meta=meta, **context)


def render_html(audit, template: str = "audit.html") -> str:
    """The audit as one HTML document with its CSS inlined and every figure embedded."""
    return render_page(template, pdf_metadata(audit), audit=audit, s=audit.sections)


def render_deployer_html(audit, content: dict) -> str:
    """The deployer extract as one HTML document (``templates/deployer.html``, the report's CSS inlined):
    ``content`` from :func:`~.deployer.deployer_content`, the audit id and metadata from :func:`pdf_metadata`."""
    meta = pdf_metadata(audit)
    meta["description"] = "Deployer extract of the " + meta["description"][0].lower() + meta["description"][1:]
    return render_page("deployer.html", meta, audit=audit, d=content)


def html_to_pdf(html: str, fetcher: DataOnlyFetcher | None = None, *, variant: str | None = None,
                identifier: bytes | None = None, attachments=(), tags: bool | None = None,
                info: dict | None = None) -> bytes:
    """PDF bytes of ``html`` rendered with print CSS and no network access (see :class:`DataOnlyFetcher`).

    ``variant``: one of :data:`PDF_VARIANTS` (None: a plain PDF); ``identifier``: the first half of the file
    identifier (/ID); ``attachments``: weasyprint ``Attachment`` objects embedded (with a PDF/A-3 variant:
    associated files, their ``relationship`` as /AFRelationship); ``tags``: a tagged PDF (default: with a
    variant); ``info``: entries added to the document information dictionary (name → text; names without an XMP
    equivalent, e.g. ``ModelName``). The ``<meta>`` elements of ``html`` (title, description, keywords, generator,
    dcterms.created) become the document information and, with a variant, its XMP metadata.
    """
    fetcher = fetcher or DataOnlyFetcher()
    if variant is None:
        return HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf(
            pdf_identifier=identifier or None, attachments=list(attachments) or None, pdf_tags=bool(tags),
            finisher=functools.partial(_finish, info=info or {}))
    if variant not in PDF_VARIANTS:
        raise ValueError(f"pdf_variant must be one of {PDF_VARIANTS} or None; got {variant!r}")
    return HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf(
        pdf_variant=variant, pdf_identifier=identifier or True, attachments=list(attachments) or None,
        pdf_tags=True if tags is None else tags, finisher=functools.partial(_finish, info=info or {}))


def _finish(document, pdf, info: dict) -> None:
    """Add ``info`` to the document information dictionary, and list each associated file once in the catalog's
    /AF (weasyprint lists each twice: from the EmbeddedFiles names and from the file specifications)."""
    for key, value in info.items():
        pdf.info[key] = pydyf.String(str(value))
    if "AF" in pdf.catalog:
        pdf.catalog["AF"][:] = list(dict.fromkeys(pdf.catalog["AF"]))


def content_digest(audit) -> str:
    """Hex SHA-256 of what the audit is about: its content hashes (the reproducibility appendix: the model's
    tree arrays, the test and training data), its title and its parameters. The same audit content gives the
    same digest, whenever it is computed; without the appendix, the digest of its JSON."""
    from .manifest import content_hashes

    hashes = content_hashes(audit)
    if not hashes:
        return hashlib.sha256(audit.to_json().encode("utf-8")).hexdigest()
    from .section import plain

    payload = {"hashes": hashes, "title": audit.title, "parameters": plain(audit.parameters)}
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


def pdf_identifier(audit, document: str | None = None) -> bytes:
    """The PDF's permanent file identifier (the first string of /ID): the first 32 hex digits of
    :func:`content_digest`, so the same audit content gives the same identifier; another ``document`` made
    from the same audit (e.g. "deployer extract") gets its own, derived from the same digest."""
    digest = content_digest(audit)
    if document is not None:
        digest = hashlib.sha256(f"{document} {digest}".encode("utf-8")).hexdigest()
    return digest[:32].encode("ascii")


def _card_fields(audit) -> dict:
    section = audit.sections.get("governance")
    if section is None or not section.data.get("card given"):
        return {}
    return {k: v for k, v in section.data.get("card", {}).get("fields", {}).items() if v is not None}


def created_datetime(audit) -> _dt.datetime | None:
    """``audit.created`` ('YYYY-MM-DD HH:MM UTC') as an aware UTC datetime, None when it reads otherwise."""
    try:
        return _dt.datetime.strptime(str(audit.created), "%Y-%m-%d %H:%M UTC").replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def pdf_metadata(audit) -> dict:
    """The document metadata the template writes as ``<meta>`` elements: ``description``, ``keywords``,
    ``generator``, ``created`` (W3C date) and ``custom`` (``ModelName``, ``ModelVersion`` from the model card when
    given, and ``AuditId``: the run id, else "sha256:" and the first 16 hex digits of :func:`content_digest`),
    which ``Audit.to_pdf`` also writes into the PDF's document information dictionary."""
    from .. import __version__

    card = _card_fields(audit)
    name, version = card.get("Model name"), card.get("Version")
    run_id = getattr(audit.options, "run_id", None)
    audit_id = str(run_id) if run_id else f"sha256:{content_digest(audit)[:16]}"
    model = " ".join(str(v) for v in (name, f"version {version}" if version is not None else None) if v is not None)
    created = created_datetime(audit)
    custom = {"ModelName": name, "ModelVersion": version, "AuditId": audit_id}
    return {"description": f"Explanation audit{f' of {model}' if model else ''}; audit id {audit_id}",
            "keywords": ["explanation audit", *(str(v) for v in (name, version) if v is not None), audit_id],
            "generator": f"xai_plugins {__version__}",
            "created": None if created is None else created.strftime("%Y-%m-%dT%H:%MZ"),
            "custom": {k: str(v) for k, v in custom.items() if v is not None}}


def audit_pdf(audit, html: str, json_name: str, document: str | None = None) -> bytes:
    """PDF bytes of ``html``, one of ``audit``'s documents, made as ``audit.options.pdf_variant`` says: with a
    PDF/A variant, its identifier (:func:`pdf_identifier` of ``document``), the audit's JSON embedded as
    ``json_name`` with the model card (:func:`audit_attachments`) and the document information of
    :func:`pdf_metadata`; without one, a plain PDF. Warns (``RuntimeWarning``) when the renderer was refused a
    URL."""
    fetcher = DataOnlyFetcher()
    variant = audit.options.pdf_variant
    extra: dict = {}
    if variant is not None:
        extra = {"variant": variant, "identifier": pdf_identifier(audit, document),
                 "attachments": audit_attachments(audit, json_name, fetcher), "info": pdf_metadata(audit)["custom"]}
    pdf = html_to_pdf(html, fetcher, **extra)
    if fetcher.refused:
        warnings.warn(f"the PDF renderer refused to fetch {fetcher.refused}", RuntimeWarning, stacklevel=3)
    return pdf


def audit_attachments(audit, json_name: str = "audit.json", fetcher: DataOnlyFetcher | None = None) -> list:
    """The files a PDF/A-3 audit embeds: the audit's JSON (exactly the bytes ``to_json()`` writes, named
    ``json_name``, relationship Data) and the model card when given (its file's bytes, or a dict as JSON;
    relationship Source), dated ``audit.created``. The manifest hashes the PDF, so it cannot be inside it."""
    created = created_datetime(audit) or _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    created = created.replace(tzinfo=None)          # weasyprint writes it as UTC ('Z')
    fetcher = fetcher or DataOnlyFetcher()
    files = [Attachment(string=audit.to_json().encode("utf-8"), name=json_name, url_fetcher=fetcher,
                        description="The audit's numbers, as xai-audit writes them (JSON, see audit.schema.json)",
                        created=created, modified=created, relationship="Data")]
    card = getattr(audit.options, "model_card", None)
    if isinstance(card, (str, Path)):
        files.append(Attachment(string=Path(card).read_bytes(), name=Path(card).name, url_fetcher=fetcher,
                                description="The model card the audit was given", created=created,
                                modified=created, relationship="Source"))
    elif isinstance(card, dict):
        text = json.dumps(card, indent=2, ensure_ascii=False, default=str)
        files.append(Attachment(string=text.encode("utf-8"), name="model-card.json", url_fetcher=fetcher,
                                description="The model card the audit was given", created=created,
                                modified=created, relationship="Source"))
    return files
