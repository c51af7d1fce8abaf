"""What every reproduced table is: a paper, a protocol, and rows of paper vs ours.

Each module of this package (one per paper) defines ``TABLES``, a list of :class:`Table`.
``benchmarks/reproduce.py`` collects them, runs the ones asked for, and writes
``<id>.json`` and ``REPRODUCTIONS.md``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
"""The papers' real datasets (``../shared/datasets`` from the project root)."""


@dataclass
class Row:
    """One reproduced number: the setting it belongs to, the paper's value and ours.

    ``agrees`` is decided with ``tolerance``, which the table states before the numbers are
    looked at (sampling error where the paper's figure is random, exact where it is not).
    ``paper`` is ``None`` when the paper gives no number for the setting (e.g. a dataset we
    substitute); ``agrees`` is then ``None`` too and ``reason`` says why.
    """

    setting: dict
    paper: float | None
    ours: float
    agrees: bool | None
    tolerance: str
    reason: str = ""

    def to_dict(self) -> dict:
        return {"setting": self.setting, "paper": self.paper, "ours": self.ours,
                "agrees": self.agrees, "tolerance": self.tolerance, "reason": self.reason}


@dataclass
class Table:
    """A table (or figure) of a paper that can be recomputed.

    ``run(quick)`` returns the rows; ``quick=True`` uses the smaller samples that ``protocol``
    documents so that every table together finishes in minutes on two cores.
    """

    id: str                       # e.g. "pg2-table2"
    paper: str                    # e.g. "PG² (Gajewski et al.)"
    title: str
    protocol: str                 # data, split, models, samples; quick-mode differences
    run: Callable[[bool], list[Row]]
    notes: list[str] = field(default_factory=list)
