"""Governance section: the model card, the approval block left blank for signing, and the run facts
(command line or Python API, date, run id, model and data hashes from the reproducibility appendix). Shown in
full as a numbered section and, in short, on the report's first page.

The governance block: the model card the owner supplies, blank approval fields for the
reviewer's signature, and the facts the tool itself knows about the run.

A model card is a JSON or YAML file (``.json``, ``.yaml``, ``.yml``) or a dict holding at least
:data:`CARD_FIELDS` (name, version, owner, intended use, out-of-scope uses, data provenance). Keys
are matched without regard to case, spaces, hyphens or underscores (``intended_use``, "Intended
use"); keys the card adds are kept and shown as they are; missing required ones are listed and
warned about (:class:`~xai_plugins.errors.XaiWarning`). An ``approver`` mapping may pre-fill the
approver's name and role; the decision, its conditions and the date are the reviewer's: left blank, or filled
from the reviewer's approval (:func:`load_approval`: ``audit(..., approval=...)``, ``xai-audit --approval
approval.yaml``). The signature field is always left blank (``xai-audit sign`` signs
the files themselves, see :mod:`xai_plugins.report.record`).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..._extras import require
from ...errors import InputError, InputTypeError, XaiWarning
from ..section import new, register

__all__: list = []

#: required card fields: normalised key -> label shown in the report
CARD_FIELDS = {"name": "Model name", "version": "Version", "owner": "Owner", "intended_use": "Intended use",
               "out_of_scope_uses": "Out-of-scope uses", "data_provenance": "Data provenance"}
#: other spellings of the required keys (normalised)
ALIASES = {"model_name": "name", "model_version": "version", "model_owner": "owner", "intended_uses": "intended_use",
           "out_of_scope": "out_of_scope_uses", "out_of_scope_use": "out_of_scope_uses",
           "provenance": "data_provenance"}
#: the approval block: label -> key a card's ``approver`` mapping may pre-fill (None: always blank: the decision,
#: the conditions it is subject to, the date and the signature are the reviewer's)
APPROVAL_FIELDS = {"Approver name": "name", "Approver role": "role",
                   "Decision": None, "Conditions": None, "Date of approval": None, "Signature": None}
APPROVER_KEYS = ("approver", "approval", "approved_by")
#: what the report says for a required field the card lacks
MISSING = "not provided"
#: keys of an approval file (normalised) -> label of :data:`APPROVAL_FIELDS` it fills
APPROVAL_FILE_KEYS = {"decision": "Decision", "conditions": "Conditions", "date": "Date of approval",
                      "approver": "Approver name", "approver_name": "Approver name", "role": "Approver role",
                      "approver_role": "Approver role"}
#: the decisions an approval file may record
DECISIONS = ("approved", "approved with conditions", "rejected")


def _key(name) -> str:
    key = re.sub(r"[\s\-_]+", "_", str(name).strip().lower())
    return ALIASES.get(key, key)


@dataclass
class ModelCard:
    """A loaded model card: ``fields`` (every label of :data:`CARD_FIELDS` → the card's value, None when
    missing), ``extra`` (other keys, as written), ``approver`` (label of :data:`APPROVAL_FIELDS` → value,
    "" blank), ``missing`` (labels of the absent required fields) and ``source`` (file name, "dict" or
    "none")."""

    fields: dict
    extra: dict = field(default_factory=dict)
    approver: dict = field(default_factory=lambda: {label: "" for label in APPROVAL_FIELDS})
    missing: list = field(default_factory=list)
    source: str = "none"

    @property
    def given(self) -> bool:
        """Whether a card was supplied at all."""
        return self.source != "none"

    def to_dict(self) -> dict:
        """JSON-ready fields (a missing required field as None)."""
        return {"source": self.source, "fields": dict(self.fields), "extra": dict(self.extra),
                "approver": dict(self.approver), "missing": list(self.missing)}


def _read(path: Path, what: str = "model card") -> object:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise InputError(f"{what} {str(path)!r}: use a .json, .yaml or .yml file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {str(path)!r} cannot be read: {exc}") from None
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{what} {str(path)!r} is not valid JSON: {exc}") from None
    yaml = require("yaml", "report", f"reading a YAML {what} (PyYAML)")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{what} {str(path)!r} is not valid YAML: {exc}") from None


def read_model_card(card) -> tuple[str, dict]:
    """``(source, mapping)`` of ``card`` (a path to a JSON / YAML file or a dict; see
    :func:`load_model_card`), checked without interpreting its fields, so that a bad card fails before
    an audit does any work: :class:`~xai_plugins.errors.InputError` for a file that is missing,
    unreadable, not valid JSON / YAML or whose top level is not a mapping,
    :class:`~xai_plugins.errors.InputTypeError` for any other type."""
    if isinstance(card, (str, Path)):
        source, content = Path(card).name, _read(Path(card))
    elif isinstance(card, dict):
        source, content = "dict", card
    else:
        raise InputTypeError(f"model_card must be a path to a JSON/YAML file or a dict; got {type(card).__name__}")
    if not isinstance(content, dict):
        raise InputError(f"model card {source!r} must be a mapping of fields (name, version, owner, ...); "
                         f"got {type(content).__name__}")
    return source, content


def load_model_card(card, approval: dict | None = None) -> ModelCard:
    """The :class:`ModelCard` of ``card``: a path (str or Path) to a JSON / YAML file, a dict, or None
    (no card: every required field missing, nothing warned), with the reviewer's ``approval`` (labels of
    :data:`APPROVAL_FIELDS` → text, from :func:`load_approval`) filling its approval block. Errors: see
    :func:`read_model_card`. Warns (:class:`~xai_plugins.errors.XaiWarning`) when required fields are missing.
    """
    if card is None:
        blank = ModelCard({label: None for label in CARD_FIELDS.values()}, missing=list(CARD_FIELDS.values()))
        blank.approver.update(approval or {})
        return blank
    source, content = read_model_card(card)
    fields, extra, approver = {label: None for label in CARD_FIELDS.values()}, {}, dict.fromkeys(APPROVAL_FIELDS, "")
    for name, value in content.items():
        key = _key(name)
        if key in CARD_FIELDS and value not in (None, "", [], {}):
            fields[CARD_FIELDS[key]] = value
        elif key in APPROVER_KEYS and isinstance(value, (dict, str)):
            given = {_key(k): v for k, v in value.items()} if isinstance(value, dict) else {"name": value}
            approver.update({label: str(given.get(k, "")) for label, k in APPROVAL_FIELDS.items() if k})
            extra.update({f"{name}: {k}": v for k, v in (value.items() if isinstance(value, dict) else ())
                          if _key(k) not in APPROVAL_FIELDS.values()})
        elif key not in CARD_FIELDS:
            extra[str(name)] = value
    approver.update(approval or {})
    missing = [label for label, value in fields.items() if value is None]
    if missing:
        warnings.warn(f"model card {source!r} lacks {', '.join(missing)}; the report marks them {MISSING!r}",
                      XaiWarning, stacklevel=2)
    return ModelCard(fields, extra, approver, missing, source)


def _approval_value(path: str, key: str, value) -> str:
    if key == "decision":
        if not isinstance(value, str) or value.strip().lower() not in DECISIONS:
            raise InputError(f"approval file {path!r}: decision {value!r} is not one of {list(DECISIONS)}")
        return value.strip().lower()
    if key == "date":
        if isinstance(value, _dt.date):
            return value.isoformat()
        try:
            return _dt.date.fromisoformat(str(value).strip()).isoformat()
        except ValueError:
            raise InputError(f"approval file {path!r}: date {value!r} is not a date (YYYY-MM-DD)") from None
    if key == "conditions" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"approval file {path!r}: {key!r} must be a non-empty text; got {value!r}")
    return value.strip()


def load_approval(approval) -> dict:
    """The reviewer's approval, read from a YAML (or JSON) file, as labels of :data:`APPROVAL_FIELDS` → text.

    Parameters
    ----------
    approval : str, pathlib.Path or dict
        A ``.yaml``, ``.yml`` or ``.json`` file (or, from Python, a dict) holding a mapping with any of the
        keys ``decision`` (one of :data:`DECISIONS`), ``conditions`` (a text or a list of texts), ``date``
        (YYYY-MM-DD), ``approver`` (or ``approver_name``)
        and ``role`` (or ``approver_role``); keys are matched without regard to case,
        spaces or hyphens.

    Returns
    -------
    dict
        The fields given, e.g. ``{"Decision": "approved", "Approver name": "J. Doe"}``; the signature is
        never one of them.

    Raises
    ------
    InputError
        When the file is missing, unreadable, not a mapping, holds an unknown key, a decision that is not one of
        :data:`DECISIONS`, a date that is not a date or an empty value.
    """
    path = Path("dict") if isinstance(approval, dict) else Path(approval)
    content: object = approval if isinstance(approval, dict) else _read(path, "approval file")
    if not isinstance(content, dict) or not content:
        raise InputError(f"approval file {str(path)!r} must be a mapping of {sorted(set(APPROVAL_FILE_KEYS))}")
    normalised = {re.sub(r"[\s\-_]+", "_", str(k).strip().lower()): (k, v) for k, v in content.items()}
    unknown = [str(k) for key, (k, _) in normalised.items() if key not in APPROVAL_FILE_KEYS]
    if unknown:
        raise InputError(f"approval file {str(path)!r}: unknown key(s) {unknown}; the keys are decision, conditions, "
                         "date, approver and role")
    return {APPROVAL_FILE_KEYS[key]: _approval_value(str(path), key, value) for key, (_, value) in normalised.items()}


def run_facts(*, command_line: str | None, created: str, run_id: str | None, hashes: dict) -> dict:
    """What the tool knows about the run, label → value: how it was started (the CLI's command line, or
    "Python API"), when (``created``, UTC), the user's ``run_id`` and the model / data ``hashes``."""
    return {"Produced by": command_line if command_line else "Python API (xai_plugins.report.audit)",
            "Date (UTC)": created, "Run id": run_id if run_id else "not given", **hashes}


@register("governance", "Governance and approval", reads=("reproducibility",), position=20, stage=140)
def build(ctx, results, options):
    """Load ``options.model_card`` with ``options.approval`` (see
    :func:`load_model_card`) and gather the run facts; the section warns when
    the card lacks required fields."""
    section = new("governance")
    approval = None if options.approval is None else load_approval(options.approval)
    card = load_model_card(options.model_card, approval)
    reproducibility = results.get("reproducibility")
    hashes = (reproducibility.result.hashes if reproducibility is not None and reproducibility.status == "ok"
              else {"model and data hashes": "not available (the reproducibility appendix was not built)"})
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section.data = {"card": card.to_dict(), "card given": card.given,
                    "card fields": {label: MISSING if value is None else value for label, value in card.fields.items()},
                    "approval": card.approver,
                    "run": run_facts(command_line=options.command_line, created=created, run_id=options.run_id,
                                     hashes=hashes)}
    if card.given and card.missing:
        section.status, section.reason = "warn", f"the model card lacks {', '.join(card.missing)}"
    return section
