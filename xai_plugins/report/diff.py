"""The audit-to-audit diff: what changed between two audits of one schema version (:func:`diff_audits`,
``Audit.diff``, ``xai-audit diff``), as an :class:`AuditDiff` of :class:`Change` objects, with the gates a CI job
fails on (:data:`GATES`).

Everything is read from the two audits' JSON (:mod:`.audit_json`); nothing is recomputed. What is compared:

- the inputs: the content hashes of the model's tree arrays and of the test and training data (the reproducibility
  appendix), and the SHA-256 of each input file when ``xai-audit``'s manifest lies beside the JSON;
- the thresholds of the verdicts (a verdict can change because a threshold did);
- the two verdicts' statuses;
- every criterion of the verdict (faithfulness of each explainer among them): its status and its value with both
  intervals, a value change counting when it exceeds the ``value`` tolerance;
- reliance: each explainer's global importance of every feature as a share of its total absolute importance, a
  change counting when a share moves by more than the ``reliance`` tolerance (or the feature is in one audit only);
- the test data: from the data section's per-feature summary (the JSON holds no rows), the shift of a numeric feature's
  mean in pooled standard deviations and the relative change of its standard deviation, and the total-variation
  distance between a categorical feature's category shares, counting above the ``data`` tolerance; features in one
  test set only. Skipped when the test data's content hash is the same.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..errors import InputError
from . import audit_json, document

__all__ = ["AuditDiff", "Change", "diff_audits"]

#: the tolerances a change must exceed to be reported, by default (see :func:`diff_audits`)
TOLERANCES = {"value": 0.05, "reliance": 0.05, "data": 0.2}
#: what each gate of ``xai-audit diff --fail-on-change`` trips on (:meth:`AuditDiff.tripped`)
GATES = {
    "verdict": "a verdict got worse (pass → warn, warn → fail, pass → fail, or it is no longer given)",
    "criterion": "a criterion got worse: its status, or a faithfulness F that fell by more than the value tolerance",
    "faithfulness": "an explainer's faithfulness got worse: its status, or F fell by more than the value tolerance",
    "reliance": "a feature's share of an explainer's importance moved by more than the reliance tolerance",
    "data": "a feature of the test data moved by more than the data tolerance",
    "model": "the model changed (the content hash of its tree arrays; another file of the same trees is the same "
             "model)",
    "any": "any change reported",
}
#: the gate ``xai-audit diff`` applies without ``--fail-on-change``
DEFAULT_GATES = ("verdict",)


@dataclass(frozen=True)
class Change:
    """One change between two audits.

    Parameters
    ----------
    kind : str
        "input", "threshold", "verdict", "criterion", "reliance" or "data".
    group : str
        What the subject belongs to: the criterion's kind (e.g. "faithfulness"), the explainer (reliance), "" else.
    subject : str
        What changed: an input, a threshold, a verdict, a criterion, a feature.
    old, new : object
        Its value in each audit (None: absent there); a criterion's is a dict of its "status", "value", "low" and
        "high" (the interval's bounds, None without one), a test feature's its "mean", "sd" and "missing" share.
    worse : bool, default False
        Whether the change is a deterioration (a verdict or criterion status that got worse, a faithfulness F that
        fell by more than the tolerance).
    detail : str, default ""
        What the change amounts to (the measure and its size).

    Examples
    --------
    >>> from xai_plugins.report import Change
    >>> print(Change("verdict", "", "model fitness", "pass", "warn", worse=True))
    verdict: model fitness: pass → warn (worse)
    """

    kind: str
    group: str
    subject: str
    old: object
    new: object
    worse: bool = False
    detail: str = ""

    def __str__(self) -> str:
        """One line: kind, subject, old → new, the detail and whether it is worse."""
        said = [self.detail] if self.detail else []
        said += ["worse"] if self.worse else []
        return (f"{self.kind}: {self.subject}: {_text(self.old)} → {_text(self.new)}"
                + (f" ({'; '.join(said)})" if said else ""))

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {"kind": self.kind, "group": self.group, "subject": self.subject, "old": self.old, "new": self.new,
                "worse": self.worse, "detail": self.detail, "text": str(self)}


def _number(value) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _text(value) -> str:
    """A change's old or new value in words."""
    if value is None:
        return "absent"
    if isinstance(value, dict) and "status" in value:
        ci = f" [{_number(value['low'])}, {_number(value['high'])}]" if value.get("low") is not None else ""
        return f"{value['status']} {_number(value['value'])}{ci}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    if isinstance(value, float):
        return _number(value)
    return str(value)


@dataclass
class AuditDiff(document.Document):
    """What changed between two audits: the result of :func:`diff_audits` and ``Audit.diff``.

    Parameters
    ----------
    old, new : dict
        Each audit's "label", "title", "created" and "schema_version".
    changes : list of Change
        Every change beyond the tolerances, by kind (inputs, thresholds, verdicts, criteria, reliance, data).
    compared : list of str
        What was compared, one sentence each (what the JSON held to compare).
    tolerances : dict
        The tolerances applied ("value", "reliance", "data").
    inputs : dict, default {}
        Every input either audit names (content hashes, input files) -> "same", "different" or "in one audit only":
        same model? same data?

    Attributes
    ----------
    changed : bool
        Whether any change was reported.

    See Also
    --------
    xai_plugins.report.diff_audits : Computes it.

    Examples
    --------
    >>> from xai_plugins.report import diff_audits
    >>> old = {"schema_version": "1.0", "title": "a", "created": "2026-01-05 10:00 UTC", "sections": {},
    ...        "verdict": {"model fitness": {"status": "pass"}, "explanation reliability": {"status": "pass"}}}
    >>> new = dict(old, created="2026-02-05 10:00 UTC",
    ...            verdict={"model fitness": {"status": "fail"}, "explanation reliability": {"status": "pass"}})
    >>> d = diff_audits(old, new)
    >>> d.lines()
    ['verdict: model fitness: pass → fail (worse)']
    >>> [c.subject for c in d.tripped(["verdict"])], d.tripped(["data"])
    (['model fitness'], [])
    """

    old: dict
    new: dict
    changes: list
    compared: list
    tolerances: dict = field(default_factory=lambda: dict(TOLERANCES))
    inputs: dict = field(default_factory=dict)
    TEMPLATE = "diff.html"

    @property
    def changed(self) -> bool:
        """Whether any change was reported."""
        return bool(self.changes)

    @property
    def title(self) -> str:
        """The document's title."""
        return f"Audit diff: {self.old['label']} → {self.new['label']}"

    @property
    def description(self) -> str:
        """The document's description (its metadata)."""
        return f"What changed between the explanation audits {self.old['label']} and {self.new['label']}"

    @property
    def created(self):
        """When the newer audit was computed."""
        return audit_json.created(self.new)

    def of_kind(self, kind: str) -> list:
        """The changes of one kind ("input", "threshold", "verdict", "criterion", "reliance", "data")."""
        return [c for c in self.changes if c.kind == kind]

    def tripped(self, gates=DEFAULT_GATES) -> list:
        """The changes that trip any of ``gates`` (keys of ``xai_plugins.report.diff.GATES``: "verdict",
        "criterion", "faithfulness", "reliance", "data", "model", "any"); empty: every gate passes."""
        unknown = sorted(set(gates) - set(GATES))
        if unknown:
            raise InputError(f"unknown gate(s) {unknown}; the gates are {list(GATES)}")
        rules = {"verdict": lambda c: c.kind == "verdict" and c.worse,
                 "criterion": lambda c: c.kind == "criterion" and c.worse,
                 "faithfulness": lambda c: c.kind == "criterion" and c.group == "faithfulness" and c.worse,
                 "reliance": lambda c: c.kind == "reliance",
                 "data": lambda c: c.kind == "data",
                 "model": lambda c: c.kind == "input" and c.subject == audit_json.MODEL_HASH,
                 "any": lambda c: True}
        return [c for c in self.changes if any(rules[g](c) for g in gates)]

    def lines(self) -> list:
        """One line per change (what ``xai-audit diff`` prints)."""
        return [str(c) for c in self.changes]

    def to_dict(self) -> dict:
        """The diff as JSON-ready dicts and lists."""
        return {"old": self.old, "new": self.new, "tolerances": self.tolerances, "compared": self.compared,
                "inputs": self.inputs, "changed": self.changed, "changes": [c.to_dict() for c in self.changes]}


def diff_audits(old, new, *, value_tolerance: float = TOLERANCES["value"],
                reliance_tolerance: float = TOLERANCES["reliance"], data_tolerance: float = TOLERANCES["data"]):
    """What changed from audit ``old`` to audit ``new``: inputs, thresholds, verdicts, criteria (with both
    intervals), per-feature reliance and the test data's distribution.

    Parameters
    ----------
    old, new : Audit, dict or path-like
        The audits: an :class:`~xai_plugins.report.Audit`, its ``to_dict()`` or the path of its JSON (the manifest
        ``xai-audit`` wrote beside it, ``<stem>.manifest.json``, adds the input files' digests).
    value_tolerance : float, default 0.05
        A criterion's value change is reported when larger (absolute; a status change always is).
    reliance_tolerance : float, default 0.05
        A feature's share of an explainer's total absolute importance: a move larger than this is reported.
    data_tolerance : float, default 0.2
        A numeric test feature's mean shift in pooled standard deviations, or relative change of its standard
        deviation, or a categorical one's total-variation distance between its category shares, larger than this is
        reported.

    Returns
    -------
    AuditDiff
        Every change, what was compared and the tolerances; ``tripped(gates)`` for a CI gate.

    Raises
    ------
    SchemaVersionError
        The audits are of different schema versions, or one carries none (written before versions were recorded).
    InputError
        A path that is not an audit's JSON.

    See Also
    --------
    xai_plugins.report.audit_history : The same measures over many audits.

    Notes
    -----
    The JSON holds no test rows, so the test data are compared by their per-feature summary (mean, standard
    deviation, share missing) in the data section: a shift there is evidence of drift between the two test sets, not
    a test on rows. Reliance is compared as shares so that an explainer whose scale changed with the model (a mean
    PG² gain in the target's unit squared) is compared by how it divides the importance among the features.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.report import audit
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> fast = dict(sigma=[0.3], explainers=["local_mdi"], sections=["faithfulness"], max_rows=10, mc_pairs=0,
    ...             progress=False)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    >>> a = audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], **fast)
    >>> a.diff(a).changed
    False
    >>> shallow = RandomForestRegressor(n_estimators=5, max_depth=1, random_state=0).fit(X[:300], y[:300])
    >>> b = audit(shallow, X[300:], y[300:], X_train=X[:300], y_train=y[:300], **fast)
    >>> d = a.diff(b)
    >>> [c.subject for c in d.of_kind("input")]
    ['model (sha256 of the tree arrays)']
    """
    before, after = audit_json.load(old), audit_json.load(new)
    audit_json.check_versions([before, after])
    tolerances = {"value": value_tolerance, "reliance": reliance_tolerance, "data": data_tolerance}
    changes = [*_inputs(before, after), *_thresholds(before.doc, after.doc), *_verdicts(before.doc, after.doc),
               *_criteria(before.doc, after.doc, value_tolerance),
               *_reliance(before.doc, after.doc, reliance_tolerance)]
    data, compared_data = _data(before, after, data_tolerance)
    changes += data
    compared = [
        "inputs: the content hashes of the model's tree arrays and of the test and training data (reproducibility "
        "appendix), and each input file's SHA-256 where xai-audit's manifest lies beside the JSON",
        "thresholds: every threshold of the verdicts",
        "verdicts: the status of model fitness and of explanation reliability",
        f"criteria: each criterion's status, and its value (with its interval) when it moved by more than "
        f"{value_tolerance:g}",
        f"reliance: each explainer's global importance of every feature as a share of its total absolute importance, "
        f"when a share moved by more than {reliance_tolerance:g}",
        compared_data]
    return AuditDiff(_about(before), _about(after), changes, compared, tolerances, _same_inputs(before, after))


def _about(audit) -> dict:
    return {"label": audit.label, "title": audit.doc.get("title"), "created": audit.doc.get("created"),
            "schema_version": audit.version}


def _changed_values(kind: str, old: dict, new: dict, group=lambda name: "") -> list:
    """A change per key whose value differs between ``old`` and ``new`` (a key in one only: None in the other)."""
    return [Change(kind, group(k), k, old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new])
            if old.get(k) != new.get(k)]


def _same_inputs(before, after) -> dict:
    old, new = audit_json.inputs(before), audit_json.inputs(after)
    return {k: "in one audit only" if k not in old or k not in new else "same" if old[k] == new[k] else "different"
            for k in dict.fromkeys([*old, *new])}


def _inputs(before, after) -> list:
    old, new = audit_json.inputs(before), audit_json.inputs(after)
    return [Change("input", "", k, _short(old.get(k)), _short(new.get(k)), detail="a different input")
            for k in dict.fromkeys([*old, *new]) if k in old and k in new and old[k] != new[k]]


def _short(text):
    """``text`` with each SHA-256 hex digest in it cut to its first 12 digits."""
    return None if text is None else re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1", str(text))


def _thresholds(old, new) -> list:
    return _changed_values("threshold", audit_json.thresholds(old), audit_json.thresholds(new))


def _worse(old, new) -> bool:
    """Whether a status got worse (a verdict no longer given is worse; "not assessed" is neither)."""
    if old in audit_json.SEVERITY and new is None:
        return True
    return old in audit_json.SEVERITY and new in audit_json.SEVERITY and \
        audit_json.SEVERITY[new] > audit_json.SEVERITY[old]


def _verdicts(old, new) -> list:
    return [Change(c.kind, c.group, c.subject, c.old, c.new, worse=_worse(c.old, c.new))
            for c in _changed_values("verdict", audit_json.verdicts(old), audit_json.verdicts(new))]


def _criteria(old_doc, new_doc, tolerance: float) -> list:
    old, new = audit_json.criteria(old_doc), audit_json.criteria(new_doc)
    changes = []
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            kind = (old.get(name) or new[name])["kind"]
            changes.append(Change("criterion", kind, name, _criterion(a), _criterion(b), detail="in one audit only"))
            continue
        kind = a["kind"]
        moved = _delta(a["value"], b["value"])
        if a["status"] == b["status"] and (moved is None or abs(moved) <= tolerance):
            continue
        fell = kind == "faithfulness" and moved is not None and moved < -tolerance
        worse = _worse(a["status"], b["status"]) or fell
        detail = "; ".join(([] if moved is None else [f"value {moved:+.3g}"]) + _overlap(a, b))
        changes.append(Change("criterion", kind, name, _criterion(a), _criterion(b), worse, detail))
    return changes


def _criterion(c):
    return None if c is None else {k: c[k] for k in ("status", "value", "low", "high")}


def _delta(a, b):
    return None if a is None or b is None else b - a


def _overlap(a: dict, b: dict) -> list:
    """Whether two criteria's intervals overlap (["intervals overlap"] or ["intervals disjoint"]; [] unless both
    have one)."""
    if None in (a["low"], a["high"], b["low"], b["high"]):
        return []
    return ["intervals overlap" if a["low"] <= b["high"] and b["low"] <= a["high"] else "intervals disjoint"]


def _reliance(old_doc, new_doc, tolerance: float) -> list:
    old, new = audit_json.reliance(old_doc), audit_json.reliance(new_doc)
    changes = []
    for explainer in [e for e in old if e in new]:
        a, b = old[explainer], new[explainer]
        for feature in dict.fromkeys([*a, *b]):
            moved = _delta(a.get(feature), b.get(feature))
            if moved is None or abs(moved) > tolerance:
                detail = "in one audit only" if moved is None else f"share of the importance {moved:+.3g}"
                changes.append(Change("reliance", explainer, f"{explainer}: {feature}", a.get(feature),
                                      b.get(feature), detail=detail))
    return changes


def _data(before, after, tolerance: float) -> tuple:
    """The test data's changes and the sentence saying what was compared."""
    same = audit_json.inputs(before).get(audit_json.TEST_HASH)
    if same is not None and same == audit_json.inputs(after).get(audit_json.TEST_HASH):
        return [], "test data: not compared, the two audits read the same test data (same content hash)"
    (rows_a, a), (rows_b, b) = audit_json.data_summary(before.doc), audit_json.data_summary(after.doc)
    if not a or not b:
        return [], "test data: not compared, the data section is missing from an audit"
    said = (f"test data ({rows_a} → {rows_b} rows): from the data section's per-feature summary (the JSON holds no "
            f"rows), a numeric feature's mean shift in pooled standard deviations and the relative change of its "
            f"standard deviation, a categorical feature's total-variation distance between its category shares, when "
            f"one exceeds {tolerance:g}; features in one test set only")
    changes = []
    for feature in dict.fromkeys([*a, *b]):
        x, y = a.get(feature), b.get(feature)
        moved = "in one test set only" if x is None or y is None else _moved(x, y, tolerance)
        if moved:
            changes.append(Change("data", "", feature, x, y, detail=moved))
    return changes, said


def _moved(x: dict, y: dict, tolerance: float) -> str:
    """How a feature's test summary moved beyond ``tolerance`` ("" when it did not)."""
    numeric = "mean" in x, "mean" in y
    if numeric == (False, False):
        distance = sum(abs(x.get(c, 0.0) - y.get(c, 0.0)) for c in {*x, *y}) / 2
        return f"category shares {distance:.3g} apart (total variation)" if distance > tolerance else ""
    if numeric != (True, True):
        return "numeric in one test set, categorical in the other"
    shift, spread = _shift(x, y)
    if (shift is not None and abs(shift) > tolerance) or (spread is not None and abs(spread) > tolerance):
        return f"mean shift {_number(shift)} pooled sd; sd {_number(spread)} relative"
    return ""


def _shift(x: dict, y: dict) -> tuple:
    """(mean shift in pooled standard deviations, relative change of the standard deviation); None where a summary
    lacks the numbers or the spread is nil."""
    if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in (x["mean"], y["mean"], x["sd"], y["sd"])):
        return None, None
    pooled = math.sqrt((x["sd"] ** 2 + y["sd"] ** 2) / 2)
    shift = (y["mean"] - x["mean"]) / pooled if pooled > 0 else None
    spread = (y["sd"] - x["sd"]) / x["sd"] if x["sd"] > 0 else None
    return shift, spread
