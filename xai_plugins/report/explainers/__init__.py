"""The registry of the audit's explainers: one module of this package per explainer.

An explainer is a subclass of :class:`Explainer` decorated with :func:`register`::

    @register
    class MyExplainer(Explainer):
        key, label, caption = "mine", "My method", "mean |my score|"

        def prepare(self, ctx, options):          # once per audit, in memory: what every block needs
            return ctx.forest

        def block(self, state, X):                # per-row work on a block of rows (n, d) float64
            values = my_scores(state, X)
            return {"importance": values, **by_magnitude(values)}

A **per-row** explainer (one that overrides :meth:`Explainer.block`) is run by :mod:`..runners` on the
explained rows, whatever holds them (memory, a Dask cluster): block by block, its global importance
the exact mean of the per-row ``importance`` over the rows. An explainer of the whole data (no
block) overrides :meth:`Explainer.run` instead. Every section that shows explainers (explanations,
faithfulness, agreement, fairness, limitations) and the options read this registry, so adding an
explainer to the audit is one new module (imported below, or anywhere before the audit runs) and
its test.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...ranking_faithfulness import rank_by_magnitude


@dataclass(frozen=True)
class Costs:
    """What an explainer's cost estimate reads (see :meth:`Explainer.cost`; the audit's plan fills it from the
    model, the data sizes and the options): the explained ``rows``, the seconds of one Monte Carlo sample
    (``per_sample``) and of one row's greedy PG² ranking (``greedy_per_row``), the model's ``leaves`` and their
    ``mean_depth``, the rows of the data (test and training: ``data_rows``), the seconds of one figure embedded
    as a PNG (``figure``) and of one drawn through pyplot (``pyplot``)."""

    rows: int
    per_sample: float
    greedy_per_row: float
    leaves: float
    mean_depth: float
    data_rows: int
    figure: float
    pyplot: float


class NotApplicable(Exception):
    """The method does not apply to this model or task; the message says why."""


class Unsupported(Exception):
    """The method applies, but its implementation cannot read this model: it fails (the audit is incomplete and
    says so); the message says why in the reader's words, and is the method's reason as it is."""


@dataclass
class MethodResult:
    """One explainer's output. ``status``: "ok", "not applicable", "skipped" or "failed".

    ``importance``: global importance per feature (pandas Series, higher = more important);
    ``local_scores`` (n_rows, d) per explained row, higher = more important; ``ranking`` (n_rows, d)
    feature order per row used for PGI²; ``params`` the settings used; ``figures`` its plots;
    ``extras["per_row"]`` the per-row importances when they differ from ``local_scores``.
    """

    key: str
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    importance: pd.Series | None = None
    local_scores: np.ndarray | None = None
    ranking: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    extras: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Display name of the method."""
        return get(self.key).label

    def to_dict(self) -> dict:
        """JSON-ready summary (global importances, parameters, status; no per-row arrays)."""
        return {"method": self.label, "status": self.status, "reason": self.reason, "seconds": self.seconds,
                "params": self.params,
                "importance": None if self.importance is None else self.importance.to_dict(),
                "figures": [f.to_dict() for f in self.figures]}


class Explainer:
    """One explainer of the audit. Class attributes: ``key`` (the ``explainers=`` name), ``label``
    (tables, figures), ``caption`` (what its global importance is, e.g. "mean |SHAP value|");
    ``per_class`` (it may carry ``extras["per class"]``, a features × classes table shown under the
    importances), ``reference`` (its per-row ranking is the greedy PG² reference of the faithfulness
    section, not a contestant), ``signed`` (importances may be negative: shown last),
    ``in_importance_bars`` (drawn in the explanations' importance figure; RF-MCR has its own
    section), ``figure_kind`` ("local": figures of single rows, "global": of the whole model),
    ``every_row`` (a per-row explainer whose global importance is the mean over every test row,
    rows with missing values included, in memory and on a row engine alike; the explained rows stay
    the complete ones); ``explains`` what its scores explain when that is not the explained output (in words,
    ``{output}`` standing for the explained output; "": the explained output itself)."""

    key: str = ""
    label: str = ""
    caption: str = ""
    per_class: bool = False
    reference: bool = False
    signed: bool = False
    in_importance_bars: bool = True
    figure_kind: str = "local"
    every_row: bool = False
    explains: str = ""

    @property
    def per_row(self) -> bool:
        """Whether the explainer explains rows one by one (it overrides :meth:`block`)."""
        return type(self).block is not Explainer.block

    def block(self, state, X) -> dict:
        """Per-row explainers: the per-row work on a block of rows ``X`` ((n, d) float64, the
        ``state`` of :meth:`prepare`): {"importance": (n, d) per-row importance (its exact mean over
        the rows is the global one), "scores": (n, d) local scores (higher = more important),
        "ranking": (n, d) feature order, any other name: an (n, m) float array whose mean
        :meth:`finish` receives}. Row i's output may depend on row i only, so that any blocking
        gives the same bits. Explainers of the whole data do not override it."""
        raise NotImplementedError(f"explainer {self.key!r} is not a per-row explainer")

    def prepare(self, ctx, options):
        """Per-row explainers: what every block needs, built once in memory (shipped to the
        workers on a cluster); raise :class:`NotApplicable` when the model or task does not fit."""
        return None

    def scope(self, ctx, rows: np.ndarray, options) -> np.ndarray:
        """Per-row explainers, in memory: the sorted test-row positions whose mean importance is the
        global one (a superset of the explained ``rows``; default: every test row with
        :attr:`every_row`, else ``rows`` themselves). On a row engine every complete test row is used,
        every test row with :attr:`every_row`."""
        return np.arange(len(ctx.X_test)) if self.every_row else rows

    def finish(self, ctx, result: MethodResult, state, means: dict, local_X: np.ndarray, local_labels: list,
               options) -> None:
        """Per-row explainers: complete ``result`` (parameters, figures of the ``local_X`` rows named
        ``local_labels``); ``means``: the exact means over the rows of every block output but
        "scores" and "ranking"."""

    def run(self, ctx, rows: np.ndarray, options) -> MethodResult:
        """Explainers of the whole data (no :meth:`block`): the result on the audit's data."""
        raise NotImplementedError(f"explainer {self.key!r} has neither a block function nor a run method")

    def cost(self, ctx, options, costs: Costs) -> list:
        """The estimated CPU seconds of this explainer in an audit, as the terms the plan adds up (the
        work, its figures), from :class:`Costs`; a function of the model, the data sizes and the
        options only (the same inputs, the same plan). Default: nothing to estimate."""
        return []

    def ranks(self, ctx, options) -> bool:
        """Whether this explainer is expected to give the faithfulness section a ranking of this model (the plan
        prices one PGI² per ranking); False where the model or task rules the method out before it runs.
        Default: True."""
        return True

    def limitation(self, ctx, result: MethodResult, options, name) -> str | None:
        """What the report's limitations say about this method when it ran (``name(option)``: how
        the reader sets an option), or None."""
        return None


REGISTRY: dict = {}


def register(cls):
    """Class decorator registering an :class:`Explainer` subclass under its ``key`` (one instance)."""
    if not cls.key or not cls.label:
        raise ValueError(f"explainer {cls.__name__} needs a key and a label")
    if cls.key in REGISTRY and type(REGISTRY[cls.key]) is not cls:
        raise ValueError(f"explainer {cls.key!r} is registered twice")
    REGISTRY[cls.key] = cls()
    return cls


def get(key: str) -> Explainer:
    """The registered explainer ``key``."""
    return REGISTRY[key]


def keys() -> tuple:
    """Every registered explainer key, in registration order (the report's order)."""
    return tuple(REGISTRY)


def by_magnitude(values) -> dict:
    """A block's ``scores`` (|values|) and ``ranking`` (by |values|, ties: lower feature index first)."""
    values = np.asarray(values, dtype=float)
    return {"scores": np.abs(values), "ranking": rank_by_magnitude(values)}


def name_list(names, most: int = 8) -> str:
    """At most ``most`` names, comma-separated, then how many more."""
    names = list(map(str, names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def run(key: str, fn, *args, **kwargs) -> MethodResult:
    """Call ``fn``, timing it and turning :class:`NotApplicable` / any error into a status."""
    start = time.perf_counter()
    try:
        result = fn(*args, **kwargs)
    except NotApplicable as exc:
        result = MethodResult(key, status="not applicable", reason=str(exc))
    except Unsupported as exc:
        result = MethodResult(key, status="failed", reason=str(exc))
    except Exception as exc:  # noqa: BLE001 - the report states the failure instead of aborting
        result = MethodResult(key, status="failed", reason=f"{type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - start
    return result


for _name in ("treeshap", "greedy_pg2", "local_mdi", "acme", "dt_sampler", "mcr"):
    importlib.import_module(f"{__name__}.{_name}")

#: the built-in explainers (the default of ``explainers=``)
EXPLAINERS = keys()

__all__: list[str] = []      # internal module: the public names are in the API reference
