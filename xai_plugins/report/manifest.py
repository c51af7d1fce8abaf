"""Manifest of an audit run: the SHA-256 of every input file (model, data, model card) and of every
output file (HTML, PDF, JSON), written beside the outputs as ``<stem>.manifest.json``.

A reviewer or a CI job checks that a report belongs to the files it names by recomputing the digests
(``sha256sum FILE`` prints the same hex digest). Inputs that are not files (data frames passed in
memory, the demo's data) have no file digest; the manifest then carries the audit's own content hashes
(the reproducibility appendix: the model's tree arrays and the data's values), which do not depend on
a file format.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

#: the manifest's file name after the audit's stem
SUFFIX = ".manifest.json"
#: what a manifest's "format" key says, so a reader can tell the layout it reads
FORMAT = "xai_plugins audit manifest 1"
_CHUNK = 1 << 20


def sha256_file(path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB chunks), the digest ``sha256sum`` prints."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _entry(path, name: str, **extra) -> dict:
    return {**extra, "path": name, "bytes": Path(path).stat().st_size, "sha256": sha256_file(path)}


def build_manifest(inputs, outputs, content_hashes: dict | None = None) -> dict:
    """The manifest as a dict: ``inputs`` ((role, path) pairs, e.g. ("model", "model.json"); the path as
    given) and ``outputs`` (paths; by file name, since the manifest lies beside them) each with their size
    and SHA-256, and ``content_hashes`` (label → digest, from the audit's reproducibility appendix)."""
    return {"format": FORMAT, "algorithm": "sha256",
            "inputs": [_entry(path, str(path), role=role) for role, path in inputs],
            "outputs": [_entry(path, Path(path).name) for path in outputs],
            "content hashes": dict(content_hashes or {})}


def write_manifest(path, inputs, outputs, content_hashes: dict | None = None) -> Path:
    """Write :func:`build_manifest` as JSON to ``path`` and return the path."""
    path = Path(path)
    text = json.dumps(build_manifest(inputs, outputs, content_hashes), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def content_hashes(result) -> dict:
    """The content hashes an :class:`~xai_plugins.report.audit.Audit` computed (the reproducibility
    appendix's ``hashes``: model tree arrays, test and training data), {} when it has none."""
    section = result.sections.get("reproducibility")
    return dict(section.data.get("hashes", {})) if section is not None and section.status == "ok" else {}
