"""Regulatory mapping section: a crosswalk from this audit's criteria, sections and figures to SR 11-7 and the EU AI
Act (Annex IV points 1, 2(b), 2(d), 2(e), 2(g), 3; Articles 13(3)(b) and 15(1)–(4)).

The crosswalk is data (``xai_plugins/report/regulatory_map.json``): per regulatory item its citation, the URL its
short verbatim quote was read at (no quote where the text was not found: ``quote_note`` says so), the audit's
evidence (verdict criteria by kind, sections by key) and what must be completed outside this audit. The section
grades each item from *this* audit: evidence that was not computed or not assessed (a skipped section, a "not
assessed" criterion) is a gap, never an answer.

Optional: built when ``"regulatory"`` is in ``sections=`` / ``--sections`` (which ``strict=True`` / ``--strict`` adds
to the default sections). Computed last (it reads every other section and the verdict).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import pandas as pd

from .. import verdict as vd
from ..section import EVERY, REGISTRY, Table, new, register, skipped

__all__: list = []

#: an item answered by all its evidence, by some of it, or by none (then it is completed outside this audit)
ANSWERED, PARTLY, GAP = "answered", "partly answered", "gap"
#: section statuses whose content answers an item
_SECTION_OK = ("ok", "warn")


@lru_cache(maxsize=1)
def crosswalk() -> dict:
    """The crosswalk as shipped (``regulatory_map.json``): ``{"about": ..., "items": [...]}``."""
    text = resources.files("xai_plugins.report").joinpath("regulatory_map.json").read_text(encoding="utf-8")
    return json.loads(text)


def dangling(items=None) -> list:
    """Evidence names of ``items`` (default: the crosswalk's) that name no registered section or criterion kind."""
    items = crosswalk()["items"] if items is None else items
    return [f"{item['id']}: {ref}" for item in items for ref in item["evidence"]
            if ref.get("section", "") not in REGISTRY and ref.get("criterion", "") not in vd.VERDICT_OF_KIND]


def _enabled(options) -> bool:
    return "regulatory" in options.sections


@register("regulatory", "Regulatory mapping", reads=EVERY, position=140, stage=150, optional=True)
def build(ctx, results, options):
    """Grade every crosswalk item from the built sections and the verdict's criteria; tag each criterion, section and
    figure of the audit with the items it answers."""
    if not _enabled(options):
        return skipped("regulatory")
    verdict = results["verdict"].result.verdict if "verdict" in results and results["verdict"].result else None
    criteria = list(verdict.criteria) if verdict is not None else []
    items = [_grade(item, results, criteria) for item in crosswalk()["items"]]
    section = new("regulatory")
    section.data = {"about": crosswalk()["about"], "items": items, "tags": _tags(items, results, criteria),
                    "counts": {s: sum(i["status"] == s for i in items) for s in (ANSWERED, PARTLY, GAP)}}
    section.tables.append(Table("Regulatory items, what in this audit answers them, and what is left outside it",
                                pd.DataFrame([_row(i) for i in items]), index=False))
    return section


def _grade(item: dict, results: dict, criteria: list) -> dict:
    """``item`` with its evidence graded from this audit (``answers``: True / False) and its status."""
    evidence = [_evidence(ref, results, criteria) for ref in item["evidence"]]
    answered = sum(e["answers"] for e in evidence)
    status = ANSWERED if evidence and answered == len(evidence) else PARTLY if answered else GAP
    gaps = [f"{e['name']}: {e['found']}" for e in evidence if not e["answers"]]
    return {"id": item["id"], "framework": item["framework"], "title": item["title"], "citation": item["citation"],
            "url": item["url"], "quote": item["quote"], "quote_note": item.get("quote_note", ""),
            "status": status, "evidence": evidence, "gaps": gaps, "outside": item["outside"]}


def _evidence(ref: dict, results: dict, criteria: list) -> dict:
    """One piece of evidence graded: what this audit found for it and whether that answers the item."""
    if "criterion" in ref:
        kind = ref["criterion"]
        found = [c for c in criteria if c.kind == kind]
        assessed = [c for c in found if c.status != vd.NOT_ASSESSED]
        text = ("not in this audit" if not found else
                "; ".join(f"{c.name}: {c.status}" for c in found))
        return {"type": "criterion", "name": kind, "what": ref["what"], "found": text, "answers": bool(assessed),
                "statuses": [c.status for c in found]}
    key = ref["section"]
    sec = results.get(key)
    status = "not in this audit" if sec is None else sec.status
    answers = sec is not None and sec.status in _SECTION_OK
    text = status if answers or sec is None or not sec.reason else f"{status} ({sec.reason})"
    name = REGISTRY[key].title if key in REGISTRY else key
    return {"type": "section", "name": name, "key": key, "what": ref["what"], "found": text, "answers": answers,
            "statuses": [status]}


def _tags(items: list, results: dict, criteria: list) -> dict:
    """Every criterion (by name), section (by key) and figure (by caption) of the audit → the items it answers."""
    by_kind: dict = {}
    by_section: dict = {}
    for item in items:
        for e in item["evidence"]:
            if e["answers"]:
                target = by_kind if e["type"] == "criterion" else by_section
                target.setdefault(e["name"] if e["type"] == "criterion" else e["key"], []).append(item["id"])
    sections = {key: by_section.get(key, []) for key in results}
    figures = {f.caption: by_section.get(key, []) for key, sec in results.items() for f in sec.figures}
    return {"criteria": {c.name: by_kind.get(c.kind, []) if c.status != vd.NOT_ASSESSED else [] for c in criteria},
            "sections": sections, "figures": figures}


def _row(item: dict) -> dict:
    answers = [f"{e['name']} ({e['found']})" for e in item["evidence"] if e["answers"]]
    gaps = item["gaps"] + [f"to be completed outside this audit: {item['outside']}"]
    return {"Item": f"{item['citation']}", "Status": item["status"], "Answered in this audit by": "; ".join(answers)
            or "nothing in this audit", "Gaps": "; ".join(gaps)}
