"""The pieces a report section is made of: :class:`Section` (status, key numbers, tables, figures)
and :class:`Table`, with :func:`plain` turning numpy / pandas values into JSON-ready ones."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: the statuses a section can end in; "failed" and "warn" are raised in the summary and on stderr
STATUSES = ("ok", "warn", "failed", "skipped", "not applicable")
#: the reason of a section or method the user did not ask for
SKIPPED = "skipped by user"


@dataclass
class Table:
    """A captioned table: ``frame`` is shown with its index when ``index`` is True."""

    caption: str
    frame: pd.DataFrame
    index: bool = True

    def to_dict(self) -> dict:
        """Caption, columns and rows as JSON-ready lists."""
        frame = self.frame.reset_index() if self.index else self.frame
        return {"caption": self.caption, "columns": [str(c) for c in frame.columns],
                "rows": plain(frame.to_numpy().tolist())}


@dataclass
class Section:
    """One report section, built by its registered builder (see :mod:`.sections`).

    ``status`` is one of :data:`STATUSES` (``reason`` says why when it is not "ok"); ``data`` the
    section's key numbers (JSON-ready through :func:`plain`, exported by ``Audit.to_json``); ``raw``
    arrays other sections read (not exported); ``tables`` and ``figures`` in display order;
    ``seconds`` the builder's wall-clock time."""

    key: str
    title: str = ""
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    data: dict = field(default_factory=dict)
    tables: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready content (figures as captions only; ``raw`` left out)."""
        return {"title": self.title, "status": self.status, "reason": self.reason, "seconds": self.seconds,
                "data": plain(self.data), "tables": [t.to_dict() for t in self.tables],
                "figures": [f.to_dict() for f in self.figures]}


def plain(value):
    """Convert numpy / pandas values inside dicts and lists to JSON-ready Python objects
    (non-finite floats become None)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return plain(value.reset_index().to_dict(orient="records"))
    if isinstance(value, pd.Series):
        return plain(value.to_dict())
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
