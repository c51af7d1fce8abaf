"""Manifest of an audit run: the SHA-256 of every input file (model, data, model card) and of every
output file (HTML, PDF, JSON), written beside the outputs as ``<stem>.manifest.json``.

A reviewer or a CI job checks that a report belongs to the files it names by recomputing the digests
(``sha256sum FILE`` prints the same hex digest). Inputs that are not files (data frames passed in
memory, the demo's data) have no file digest; the manifest then carries the audit's own content hashes
(the reproducibility appendix: the model's tree arrays and the data's values), which do not depend on
a file format. The inputs are hashed before any output is written (:func:`hash_inputs`); ``xai-audit``
also refuses an output path that is one of its input files. :mod:`xai_plugins.report.record` signs a
manifest (``xai-audit sign``) and checks a folder against its manifests (``xai-audit verify``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__: list[str] = []      # internal module: the public names are in the API reference

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


def hash_inputs(inputs) -> list:
    """The manifest's entries of the input files, read now: call it before writing any output, so that the
    digests are those of the files the audit read.

    Parameters
    ----------
    inputs : iterable of (str, path-like)
        (role, path) pairs, e.g. ("model", "model.json"); the path is recorded as given.

    Returns
    -------
    list of dict
        Per input: its role, path, size in bytes and SHA-256.
    """
    return [_entry(path, str(path), role=role) for role, path in inputs]


def build_manifest(inputs, outputs, content_hashes: dict | None = None, id_columns=()) -> dict:
    """The manifest as a dict.

    Parameters
    ----------
    inputs : list of dict
        The input files' entries, from :func:`hash_inputs` (computed before the outputs were written).
    outputs : iterable of path-like
        The files written, each with its size and SHA-256, by file name (the manifest lies beside them).
    content_hashes : dict, optional
        Label → digest, from the audit's reproducibility appendix (see :func:`content_hashes`).
    id_columns : sequence of str
        Columns of the data files read as row identifiers, not as features (``xai-audit --id-cols``).

    Returns
    -------
    dict
        The keys "format", "algorithm", "inputs", "outputs", "content hashes" and "id columns".
    """
    return {"format": FORMAT, "algorithm": "sha256", "inputs": list(inputs),
            "outputs": [_entry(path, Path(path).name) for path in outputs],
            "content hashes": dict(content_hashes or {}), "id columns": list(id_columns)}


def write_manifest(path, inputs, outputs, content_hashes: dict | None = None, id_columns=()) -> Path:
    """Write :func:`build_manifest` (same parameters) as JSON to ``path`` and return the path."""
    path = Path(path)
    text = json.dumps(build_manifest(inputs, outputs, content_hashes, id_columns), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def content_hashes(result) -> dict:
    """The content hashes an :class:`~xai_plugins.report.audit.Audit` computed (the reproducibility
    appendix's ``hashes``: model tree arrays, test and training data), {} when it has none."""
    section = result.sections.get("reproducibility")
    return dict(section.data.get("hashes", {})) if section is not None and section.status == "ok" else {}
