"""The audit history: the verdicts, the criteria with their intervals (faithfulness of each explainer among them)
and each explainer's reliance on every feature over N audits of one model family, in the order they were computed
(:func:`audit_history`, ``xai-audit history``), as a tidy table and one page of small-multiple figures, the first
audit at which a criterion crosses a threshold marked.

Everything is read from the audits' JSON (:mod:`.audit_json`), as the audit-to-audit diff (:mod:`.diff`) reads it.
"""

from __future__ import annotations

import glob as _glob
import json
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from ..errors import InputError
from . import audit_json, document
from .figures import small_multiples
from .manifest import SUFFIX

__all__ = ["AuditHistory", "audit_history"]

#: the tidy table's columns (one row per audit and measure)
COLUMNS = ("audit", "created", "source", "measure", "group", "name", "status", "value", "low", "high", "crossed")
#: marker colour of each status in the figures
STATUS_COLOURS = {"pass": "#2e7d32", "warn": "#b26a00", "fail": "#8a1c1c", "not assessed": "#9e9e9e"}
#: features drawn per explainer in the reliance figure (those with the largest share in any audit)
TOP_FEATURES = 6


@dataclass
class AuditHistory(document.Document):
    """The audits' measures over time: the result of :func:`audit_history`.

    Parameters
    ----------
    audits : list of dict
        Per audit, in the order they were computed: its position "audit" (1, 2, ...), "label" (its file's name),
        "title", "created", "model" (the first 12 hex digits of its model's content hash) and the two verdicts.
    table : pandas.DataFrame
        The tidy table, one row per audit and measure (columns ``xai_plugins.report.history.COLUMNS``): "measure"
        is "verdict", "criterion" or "reliance"; "group" the criterion's kind or the explainer; "name" the verdict,
        criterion or feature; "status" the verdict's or criterion's status; "value" the criterion's value or the
        feature's share of the explainer's total absolute importance; "low" and "high" the criterion's interval;
        "crossed" True at the first audit where the verdict's or criterion's status is worse than at the audit
        before (it crossed a threshold).
    thresholds : dict, default {}
        {criterion kind: {threshold name: value}}: the pass, warn and fail thresholds of each kind of criterion as the
        newest audit set them, drawn on the criteria's panels.

    Attributes
    ----------
    crossings : pandas.DataFrame
        The rows of ``table`` where a threshold was crossed.

    See Also
    --------
    xai_plugins.report.audit_history : Computes it.
    xai_plugins.report.diff_audits : Two audits in detail.

    Examples
    --------
    >>> from xai_plugins.report import audit_history
    >>> def doc(day, status):
    ...     c = {"name": "Drift", "kind": "drift", "status": status, "value": 0.1, "ci": None}
    ...     return {"schema_version": "1.0", "title": "m", "created": f"2026-01-0{day} 10:00 UTC", "sections": {},
    ...             "verdict": {"criteria": [c], "model fitness": {"status": status},
    ...                         "explanation reliability": {"status": "pass"}}}
    >>> h = audit_history([doc(3, "fail"), doc(1, "pass"), doc(2, "fail")])
    >>> [a["created"][:10] for a in h.audits]
    ['2026-01-01', '2026-01-02', '2026-01-03']
    >>> h.crossings[["audit", "measure", "name"]].values.tolist()
    [[2, 'verdict', 'model fitness'], [2, 'criterion', 'Drift']]
    """

    audits: list
    table: pd.DataFrame
    thresholds: dict = field(default_factory=dict)
    TEMPLATE = "history.html"

    @property
    def title(self) -> str:
        """The document's title."""
        return f"Audit history of {self.audits[-1]['title']} ({len(self.audits)} audits)"

    @property
    def description(self) -> str:
        """The document's description (its metadata)."""
        return f"Verdicts, criteria and reliance over {len(self.audits)} explanation audits"

    @property
    def created(self):
        """When the newest audit was computed."""
        return audit_json.created(self.audits[-1])

    @property
    def crossings(self) -> pd.DataFrame:
        """The rows of the table where a verdict or criterion crossed a threshold (first time only)."""
        return self.table[self.table["crossed"]].reset_index(drop=True)

    def to_dict(self) -> dict:
        """The history as JSON-ready dicts and lists: the audits, the crossings and the tidy table's rows."""
        def records(frame):
            return json.loads(frame.to_json(orient="records"))

        return {"audits": self.audits, "crossings": records(self.crossings), "table": records(self.table)}

    def to_csv(self, path=None) -> str:
        """The tidy table as CSV text; also written to ``path`` when given (checked first)."""
        document.check_path(path)
        text = self.table.to_csv(index=False)
        if path is not None:
            document.write(path, text.encode("utf-8"))
        return text

    def to_parquet(self, path) -> None:
        """The tidy table as a parquet file at ``path`` (needs pyarrow)."""
        document.check_path(path)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.table.to_parquet(path, index=False)

    def figures(self) -> list:
        """The page's figures (each a caption and an embedded PNG): the verdicts and every assessed criterion with its
        interval and thresholds, then each explainer's reliance on its main features, one small panel each."""
        criteria = self.table[(self.table["measure"] == "criterion") & self.table["value"].notna()]
        panels = [("verdict", name) for name in audit_json.VERDICTS] + \
                 [("criterion", name) for name in dict.fromkeys(criteria["name"])]
        reliance = self.table[self.table["measure"] == "reliance"]
        out = [small_multiples(
            "Verdicts and criteria per audit (x: the audit's position, in the order they were computed): each "
            "criterion's value with its interval where it has one, coloured by its status, its thresholds dashed; a "
            "ring marks the first audit at which it crossed a threshold.", panels, self._criterion_panel,
            len(self.audits))]
        explainers = list(dict.fromkeys(reliance["group"]))
        if explainers:
            out.append(small_multiples(
                f"Reliance per explainer: each feature's share of the explainer's total absolute global importance, "
                f"for the {TOP_FEATURES} features with the largest share in any audit (a feature has one colour in "
                f"every panel).", explainers, self._reliance_panel, len(self.audits), legend=True))
        return out

    def _criterion_panel(self, ax, panel) -> None:
        measure, name = panel
        rows = self.table[(self.table["measure"] == measure) & (self.table["name"] == name)]
        colours = [STATUS_COLOURS.get(s, "#9e9e9e") for s in rows["status"]]
        if measure == "verdict":
            values = rows["status"].map(audit_json.SEVERITY)
            ax.step(rows["audit"], values, where="mid", color="#5f6368", lw=1)
            ax.set_yticks([0, 1, 2], ["pass", "warn", "fail"])
            ax.set_ylim(-0.4, 2.4)
        else:
            values = rows["value"].astype(float)
            low, high = rows["low"].astype(float), rows["high"].astype(float)
            ax.errorbar(rows["audit"], values, yerr=[values - low.fillna(values), high.fillna(values) - values],
                        color="#5f6368", lw=1, capsize=2, zorder=1)
            for t, value in self.thresholds.get(rows["group"].iloc[0], {}).items():
                ax.axhline(value, ls="--", lw=0.8, color=STATUS_COLOURS["fail" if t.endswith("fail") else "warn"])
        ax.scatter(rows["audit"], values, c=colours, s=18, zorder=2)
        crossed = rows[rows["crossed"]]
        ax.scatter(crossed["audit"], values[crossed.index], s=110, facecolors="none", edgecolors="#8a1c1c", lw=1.4,
                   zorder=3)
        ax.set_title(name if len(name) < 30 else name[:28] + "…", fontsize=7.5)

    def _shares(self, explainer) -> pd.DataFrame:
        """An explainer's reliance shares (audits × its :data:`TOP_FEATURES` features with the largest share)."""
        rows = self.table[(self.table["measure"] == "reliance") & (self.table["group"] == explainer)]
        shares = rows.pivot_table(index="audit", columns="name", values="value", aggfunc="first")
        return shares[shares.max().sort_values(ascending=False).index[:TOP_FEATURES]]

    def _reliance_panel(self, ax, explainer) -> None:
        explainers = dict.fromkeys(self.table.loc[self.table["measure"] == "reliance", "group"])
        features = list(dict.fromkeys(f for e in explainers for f in self._shares(e).columns))
        colours = matplotlib.colormaps["tab10" if len(features) <= 10 else "tab20"]
        shares = self._shares(explainer)
        for feature in shares.columns:
            ax.plot(shares.index, shares[feature], marker="o", ms=2.5, lw=1, label=str(feature),
                    color=colours(features.index(feature) % colours.N))
        ax.set_title(explainer)
        ax.set_ylim(bottom=0)



def audit_files(where) -> list:
    """The audit JSONs a folder holds or a glob matches (sorted by name), without the manifests and signatures
    ``xai-audit`` writes beside them nor other JSON files (a diff's, a history's)."""
    where = str(where)
    paths = sorted(Path(where).glob("*.json")) if Path(where).is_dir() else sorted(map(Path, _glob.glob(where)))
    out = []
    for path in paths:
        if path.name.endswith((SUFFIX, ".sig.json")) or not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict) and "sections" in doc and "verdict" in doc:
            out.append(path)
    return out


def audit_history(audits) -> AuditHistory:
    """The verdicts, criteria (with their intervals) and reliance of N audits of one model family over time.

    Parameters
    ----------
    audits : str, path-like or sequence of Audit, dict or path-like
        A folder of audit JSONs or a glob of them (the manifests and signatures beside them left out), or the
        audits themselves (:class:`~xai_plugins.report.Audit` objects, their ``to_dict()``, their JSON paths, or
        MLflow runs' URIs ``runs:/<run id>`` whose ``xai_audit`` evaluation logged them).

    Returns
    -------
    AuditHistory
        The audits ordered by when they were computed (the JSON's ``created``; audits of the same minute, and
        undated ones after them, in the order given), the tidy table (``to_csv``, ``to_parquet``), the first
        crossing of each threshold, and a one-page report (``to_html``, ``to_pdf``).

    Raises
    ------
    SchemaVersionError
        The audits are of different schema versions, or one carries none.
    InputError
        No audit found, or a path that is not an audit's JSON.

    See Also
    --------
    xai_plugins.report.diff_audits : Two audits in detail.

    Notes
    -----
    A threshold is crossed at the first audit whose status (of a verdict or a criterion) is worse than at the audit
    before it: pass → warn crosses the pass threshold, warn → fail the fail threshold. Reliance is each explainer's
    global importance of every feature as a share of its total absolute importance, so that audits whose importance
    scales differ compare.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.report import audit, audit_history
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    >>> a = audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], sigma=[0.3], explainers=["local_mdi"],
    ...           sections=["faithfulness"], max_rows=10, mc_pairs=0, progress=False)
    >>> h = audit_history([a, a])
    >>> sorted(set(h.table["measure"])), len(h.crossings)
    (['criterion', 'reliance', 'verdict'], 0)
    """
    single = isinstance(audits, (str, Path)) and not str(audits).startswith(audit_json.RUNS)
    sources = audit_files(audits) if single else [audits] if isinstance(audits, str) else list(audits)
    if not sources:
        raise InputError(f"no audit JSON found in {audits!r}")
    loaded = [audit_json.load(s) for s in sources]
    audit_json.check_versions(loaded)
    order = sorted(range(len(loaded)), key=lambda i: (audit_json.created(loaded[i].doc) is None,
                                                      audit_json.created(loaded[i].doc) or 0, i))
    ordered = [loaded[i] for i in order]
    table = _crossed(pd.DataFrame([row for i, a in enumerate(ordered, 1) for row in _rows(i, a)], columns=COLUMNS))
    return AuditHistory([_about(i, a) for i, a in enumerate(ordered, 1)], table, _threshold_lines(ordered[-1].doc))


def _about(position: int, audit) -> dict:
    model = audit_json.inputs(audit).get(audit_json.MODEL_HASH)
    return {"audit": position, "label": audit.label, "title": audit.doc.get("title"),
            "created": audit.doc.get("created"), "model": None if model is None else model[:12],
            **audit_json.verdicts(audit.doc)}


def _rows(position: int, audit) -> list:
    """The tidy rows of one audit (``crossed`` set later)."""
    base = {"audit": position, "created": audit.doc.get("created"), "source": audit.label, "crossed": False}
    rows = [{**base, "measure": "verdict", "group": "", "name": name, "status": status}
            for name, status in audit_json.verdicts(audit.doc).items()]
    rows += [{**base, "measure": "criterion", "group": c["kind"], "name": name, "status": c["status"],
              "value": c["value"], "low": c["low"], "high": c["high"]}
             for name, c in audit_json.criteria(audit.doc).items()]
    rows += [{**base, "measure": "reliance", "group": explainer, "name": feature, "value": share}
             for explainer, shares in audit_json.reliance(audit.doc).items() for feature, share in shares.items()]
    return rows


def _crossed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with "crossed" True at each verdict's and criterion's first audit whose status is worse than at the
    audit before."""
    severity = table["status"].map(audit_json.SEVERITY)
    for _, rows in table[table["measure"] != "reliance"].groupby(["measure", "name"], sort=False):
        ranks = severity[rows.index].to_numpy(dtype=float)
        worse = np.flatnonzero(ranks[1:] > ranks[:-1])        # NaN ("not assessed") is never worse nor better
        if len(worse):
            table.loc[rows.index[worse[0] + 1], "crossed"] = True
    table["crossed"] = table["crossed"].astype(bool)
    return table


def _threshold_lines(doc) -> dict:
    """{criterion kind: {threshold name: value}}: the pass / warn / fail thresholds (names ending so) of each kind of
    criterion, as the newest audit set them, drawn on its panels."""
    from .criteria import THRESHOLDS

    out: dict = {}
    for name, value in audit_json.thresholds(doc).items():
        if name in THRESHOLDS and name.endswith(("_pass", "_warn", "_fail")):
            out.setdefault(THRESHOLDS[name].kind, {})[name] = value
    return out
