"""Signed audit records: a detached Ed25519 signature of each audit manifest, and the check that a folder
of reports still is what its manifests and signatures say.

:func:`sign_manifest` writes ``<stem>.manifest.sig.json`` beside ``<stem>.manifest.json``. The signature
covers a canonical JSON statement (:func:`statement`: the manifest's file name and SHA-256, the signer, the
time (UTC) and the key's fingerprint), so that neither the manifest nor who signed it, nor when, can change
unnoticed; the manifest in turn holds the SHA-256 and size of every input and output file. The signature file
records the signature (base64), the public key (PEM) and its fingerprint (``sha256:`` and the hex SHA-256 of
the raw 32-byte public key); never the private key.

:func:`verify_directory` re-hashes every output a manifest lists, checks each signature (against a public
key given by the verifier, else against the key embedded in the signature file, which only shows that the
files were not changed after signing, not who signed: a self-asserted key), checks that a PDF's embedded
JSON (where the PDF embeds one) is the JSON beside it, and that given input files (model, data) are those
the manifest names. Keys need the ``cryptography`` package (the ``report`` extra).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._extras import require
from ..errors import InputError, InputTypeError
from .deployer import SUFFIX as DEPLOYER_SUFFIX
from .manifest import FORMAT, SUFFIX, sha256_file

__all__: list[str] = []      # internal module: the public names are in the API reference

#: the signature file's name after the audit's stem
SIG_SUFFIX = ".manifest.sig.json"
#: what a signature file's "format" key says
SIG_FORMAT = "xai_plugins audit signature 1"
#: the manifest's input roles a verifier may check a file against (``xai-audit verify --model ...``)
INPUT_ROLES = ("model", "test data", "training data", "model card", "approval")


def _crypto():
    require("cryptography", "report", "signing and verifying audit records (cryptography)")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return serialization, ed25519


def load_private_key(path, password: bytes | None = None):
    """The Ed25519 private key of a PEM file.

    Parameters
    ----------
    path : str or pathlib.Path
        A PEM file (PKCS#8, as :func:`generate_key` writes it).
    password : bytes, optional
        The key's password when it is encrypted.

    Returns
    -------
    cryptography.hazmat.primitives.asymmetric.ed25519.Ed25519PrivateKey

    Raises
    ------
    InputError
        When the file is missing or unreadable, is not a PEM private key, or its password is missing or wrong.
    InputTypeError
        When it holds another kind of key (RSA, EC, ...): only Ed25519 keys sign audit records.
    """
    serialization, ed25519 = _crypto()
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"key file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise InputError(f"key file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=password)
    except TypeError:
        raise InputError(f"key file {str(path)!r} is encrypted: give its password (--key-password-env VAR)"
                         if password is None else f"key file {str(path)!r} is not encrypted: give no password") \
            from None
    except ValueError as exc:
        raise InputError(f"key file {str(path)!r} is not a PEM private key, or its password is wrong "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 - unsupported algorithms raise cryptography's own errors
        raise InputError(f"key file {str(path)!r} cannot be loaded: {type(exc).__name__}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise InputTypeError(f"key file {str(path)!r} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 "
                             "private key (make one with: xai-audit keygen key.pem)")
    return key


def load_public_key(path):
    """The Ed25519 public key of a PEM file (``-----BEGIN PUBLIC KEY-----``) or of a file holding the raw
    32-byte key in base64; :class:`~xai_plugins.errors.InputError` when it is none of these."""
    serialization, ed25519 = _crypto()
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"public key file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    return _public_key(data, f"public key file {str(path)!r}")


def _public_key(data: bytes, what: str):
    serialization, ed25519 = _crypto()
    try:
        key = serialization.load_pem_public_key(data) if b"-----BEGIN" in data else \
            ed25519.Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))
    except Exception:  # noqa: BLE001 - base64, PEM and key-size errors alike: not a key
        raise InputError(f"{what} is not an Ed25519 public key (PEM or raw base64)") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise InputTypeError(f"{what} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 public key")
    return key


def _raw(public_key) -> bytes:
    serialization, _ = _crypto()
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(public_key) -> str:
    """``sha256:`` and the hex SHA-256 of an Ed25519 public key's raw 32 bytes."""
    return "sha256:" + hashlib.sha256(_raw(public_key)).hexdigest()


def generate_key(path, password: bytes | None = None) -> tuple[Path, Path]:
    """Write a new Ed25519 key pair, for trying signatures out: the private key as PEM (PKCS#8, encrypted
    when ``password`` is given, readable by its owner only) to ``path`` and the public key as PEM to
    ``<path stem>.pub.pem``; returns both paths. :class:`~xai_plugins.errors.InputError` when either file
    exists (a key is never overwritten)."""
    serialization, ed25519 = _crypto()
    path = Path(path)
    public = path.with_name(f"{path.stem}.pub.pem")
    for p in (path, public):
        if p.exists():
            raise InputError(f"{str(p)!r} exists: a key file is never overwritten")
    key = ed25519.Ed25519PrivateKey.generate()
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return path, public


def statement(manifest_name: str, manifest_sha256: str, signer: str, signed_at: str, key_fingerprint: str) -> bytes:
    """The bytes an audit signature signs: canonical JSON (sorted keys, no spaces) of the manifest's file name
    and SHA-256, the signer, the time (UTC, ISO 8601) and the key's fingerprint."""
    return json.dumps({"format": SIG_FORMAT, "manifest": manifest_name, "manifest sha256": manifest_sha256,
                       "signer": signer, "signed at": signed_at, "key fingerprint": key_fingerprint},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sign_manifest(manifest, key, signer: str, when: _dt.datetime | None = None) -> Path:
    """Write the detached signature of an audit manifest.

    Parameters
    ----------
    manifest : str or pathlib.Path
        A ``<stem>.manifest.json`` file.
    key : Ed25519PrivateKey
        From :func:`load_private_key`.
    signer : str
        Who signs (a name, a role): recorded and signed.
    when : datetime.datetime, optional
        The time of signing (default: now); recorded in UTC.

    Returns
    -------
    pathlib.Path
        ``<stem>.manifest.sig.json`` beside the manifest: format, manifest name and SHA-256, signer, signed at,
        algorithm, signature (base64), public key (PEM) and key fingerprint.

    Raises
    ------
    InputError
        When the manifest is not a file named ``*.manifest.json``, or ``signer`` is empty.
    """
    serialization, _ = _crypto()
    manifest = Path(manifest)
    if not manifest.name.endswith(SUFFIX) or not manifest.is_file():
        raise InputError(f"{str(manifest)!r} is not an audit manifest file (*{SUFFIX})")
    if not str(signer).strip():
        raise InputError("the signer's name is empty")
    public = key.public_key()
    signed_at = (when or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc) \
        .isoformat(timespec="seconds").replace("+00:00", "Z")
    digest, print_ = sha256_file(manifest), fingerprint(public)
    signature = key.sign(statement(manifest.name, digest, str(signer).strip(), signed_at, print_))
    record = {"format": SIG_FORMAT, "manifest": manifest.name, "manifest sha256": digest,
              "signer": str(signer).strip(), "signed at": signed_at, "algorithm": "Ed25519",
              "signature": base64.b64encode(signature).decode("ascii"),
              "public key": public.public_bytes(serialization.Encoding.PEM,
                                                serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii"),
              "key fingerprint": print_}
    path = manifest.with_name(manifest.name[:-len(SUFFIX)] + SIG_SUFFIX)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def manifests(directory) -> list:
    """The audit manifests (``*.manifest.json``) in ``directory``, sorted; :class:`~xai_plugins.errors.InputError`
    when it is not a folder or holds none."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{str(directory)!r} is not a folder")
    found = sorted(directory.glob(f"*{SUFFIX}"))
    if not found:
        raise InputError(f"{str(directory)!r} holds no audit manifest (*{SUFFIX})")
    return found


def sign_directory(directory, key, signer: str) -> list:
    """:func:`sign_manifest` for every manifest in ``directory`` (see :func:`manifests`); the signature files."""
    return [sign_manifest(m, key, signer) for m in manifests(directory)]


@dataclass
class Verification:
    """What :func:`verify_directory` found: ``failures`` (one line per file that differs, naming it),
    ``notes`` (checks skipped, keys self-asserted), and the counts of what was checked."""

    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    manifests: int = 0
    files: int = 0
    signatures: int = 0
    inputs: int = 0
    embedded: int = 0

    @property
    def ok(self) -> bool:
        """Whether everything held."""
        return not self.failures

    def summary(self) -> str:
        """One line: what was checked and that it holds (or how many failures)."""
        what = (f"{self.manifests} manifest(s), {self.files} file hash(es), {self.signatures} signature(s), "
                f"{self.embedded} embedded JSON, {self.inputs} input file(s)")
        return f"verified {what}: all hold" if self.ok else f"{len(self.failures)} failure(s) in {what}"


def _compare(path: Path, entry: dict, what: str) -> str | None:
    if not path.is_file():
        return f"{path}: missing ({what})"
    size, digest = path.stat().st_size, sha256_file(path)
    if size != entry.get("bytes"):
        return f"{path}: {size} bytes, {what} says {entry.get('bytes')}"
    if digest != entry.get("sha256"):
        return f"{path}: sha256 {digest} differs from {what}'s {entry.get('sha256')}"
    return None


def _check_signature(manifest: Path, public_key, out: Verification) -> None:
    path = manifest.with_name(manifest.name[:-len(SUFFIX)] + SIG_SUFFIX)
    if not path.is_file():
        out.failures.append(f"{manifest}: not signed (no {path.name}; xai-audit sign)")
        return
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        fields = [str(record[k]) for k in ("manifest", "manifest sha256", "signer", "signed at", "key fingerprint")]
        signature = base64.b64decode(record["signature"], validate=True)
        embedded = _public_key(str(record["public key"]).encode("ascii"), f"{path.name}'s public key")
    except (ValueError, KeyError, TypeError, UnicodeError) as exc:
        out.failures.append(f"{path}: not a readable signature file ({type(exc).__name__}: {exc})")
        return
    out.signatures += 1
    if record.get("format") != SIG_FORMAT or record["manifest"] != manifest.name:
        out.failures.append(f"{path}: signs {record['manifest']!r}, not {manifest.name!r}")
        return
    if fingerprint(embedded) != record["key fingerprint"]:
        out.failures.append(f"{path}: its key fingerprint is not that of its public key")
    digest = sha256_file(manifest)
    if digest != record["manifest sha256"]:
        out.failures.append(f"{manifest}: changed after signing (sha256 {digest}, signed {record['manifest sha256']})")
    key = public_key if public_key is not None else embedded
    if public_key is not None and fingerprint(public_key) != record["key fingerprint"]:
        out.failures.append(f"{path}: signed by key {record['key fingerprint']}, not by the given public key "
                            f"{fingerprint(public_key)}")
        return
    try:
        key.verify(signature, statement(*fields[:2], *fields[2:]))
    except Exception:  # noqa: BLE001 - cryptography's InvalidSignature
        out.failures.append(f"{path}: the signature does not match its record ({manifest.name}, signer, time)")
        return
    if digest == record["manifest sha256"]:
        who = "the given public key" if public_key is not None else \
            "the key embedded in it (self-asserted: give --public-key to check who signed)"
        out.notes.append(f"{path.name}: signed by {record['signer']} at {record['signed at']}, checked against {who}")


def embedded_files(pdf) -> dict:
    """The files embedded in a PDF, name → bytes (read with pypdf, a dependency of the ``report`` extra)."""
    from pypdf import PdfReader

    return {name: contents[0] for name, contents in PdfReader(pdf).attachments.items() if contents}


def _check_embedded_json(directory: Path, entry: dict, out: Verification) -> None:
    pdf = directory / entry["path"]
    json_name = f"{pdf.stem.removesuffix(DEPLOYER_SUFFIX)}.json"     # a deployer extract embeds the report's JSON
    try:
        found = embedded_files(pdf)
    except Exception as exc:  # noqa: BLE001 - a damaged PDF: pypdf's errors
        out.failures.append(f"{pdf}: cannot be read as a PDF ({type(exc).__name__}: {exc})")
        return
    if json_name not in found:
        out.notes.append(f"{pdf.name}: embeds no {json_name}; embedded JSON check skipped")
    elif not (directory / json_name).is_file() or found[json_name] != (directory / json_name).read_bytes():
        out.embedded += 1
        out.failures.append(f"{pdf}: its embedded {json_name} differs from {directory / json_name}")
    else:
        out.embedded += 1


def _check_inputs(manifest: Path, record: dict, inputs, out: Verification) -> None:
    entries = record.get("inputs", [])
    for role, path in inputs:
        path = Path(path)
        of_role = [e for e in entries if e.get("role") == role]
        named = [e for e in of_role if Path(str(e.get("path"))).name == path.name] or of_role
        if not named:
            out.failures.append(f"{path}: {manifest.name} records no {role} file")
            continue
        out.inputs += 1
        problem = _compare(path, named[0], f"the {role} entry of {manifest.name}")
        if problem:
            out.failures.append(problem)


def verify_directory(directory, inputs=(), public_key=None) -> Verification:
    """Check a folder of audit reports against its manifests and signatures.

    Parameters
    ----------
    directory : str or pathlib.Path
        The folder holding ``<stem>.manifest.json`` files and the outputs they list.
    inputs : iterable of (str, path-like)
        (role, path) of input files to check against each manifest's input entry of that role (one of
        :data:`INPUT_ROLES`; matched by file name when a role has several entries).
    public_key : Ed25519PublicKey, optional
        The key the signatures must verify with (:func:`load_public_key`); without it, each signature is
        checked against the key embedded in its file, which says nothing of who signed (noted).

    Returns
    -------
    Verification
        ``failures``: per manifest, each output whose size or SHA-256 differs or that is missing, a manifest
        that is unreadable, unsigned or changed since signing, a signature that does not verify or was made
        with another key, a PDF whose embedded JSON differs from the JSON beside it, an input file that is not
        the one the manifest names. ``notes``: checks skipped.

    Raises
    ------
    InputError
        When ``directory`` is not a folder or holds no manifest.
    """
    directory, inputs = Path(directory), list(inputs)
    out = Verification()
    for manifest in manifests(directory):
        out.manifests += 1
        try:
            record = json.loads(manifest.read_text(encoding="utf-8"))
            outputs = list(record["outputs"]) if record.get("format") == FORMAT else None
        except (ValueError, KeyError, TypeError, UnicodeError, AttributeError) as exc:
            out.failures.append(f"{manifest}: not a readable audit manifest ({type(exc).__name__}: {exc})")
            continue
        if outputs is None:
            out.failures.append(f"{manifest}: not an audit manifest (format {record.get('format')!r})")
            continue
        _check_signature(manifest, public_key, out)
        for entry in outputs:
            out.files += 1
            problem = _compare(directory / str(entry.get("path")), entry, manifest.name)
            if problem:
                out.failures.append(problem)
            elif str(entry.get("path")).lower().endswith(".pdf"):
                _check_embedded_json(directory, entry, out)
        _check_inputs(manifest, record, inputs, out)
    return out
