"""Governance section: the model card, the approval block left blank for signing, and the run facts
(command line or Python API, date, run id, model and data hashes from the reproducibility appendix).

Shown in full as a numbered section and, in short, on the report's first page.
"""

from __future__ import annotations

import datetime as _dt

from ..governance import MISSING, load_approval, load_model_card, run_facts
from . import new, register


@register("governance", "Governance and approval")
def build(ctx, results, options):
    """Load ``options.model_card`` with ``options.approval`` (see
    :func:`~xai_plugins.report.governance.load_model_card`) and gather the run facts; the section warns when
    the card lacks required fields."""
    section = new("governance")
    approval = None if options.approval is None else load_approval(options.approval)
    card = load_model_card(options.model_card, approval)
    reproducibility = results.get("reproducibility")
    hashes = (reproducibility.data.get("hashes", {}) if reproducibility is not None and reproducibility.status == "ok"
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
