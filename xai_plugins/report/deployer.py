"""The deployer extract of an audit: the information a deployer needs (EU AI Act Art. 13), on two pages.

:func:`deployer_content` gathers it from an :class:`~.audit.Audit`'s sections and verdict only (nothing is
recomputed): the model's accuracy on the test data with its interval (the verdict's test score and the model
section's test metrics), the known circumstances that degrade it (drift, noise sensitivity across σ, too little
evidence), which explainers may be shown to deployers (faithfulness criterion "pass") and which should not
(warn, fail or not assessed, with the reason), the input ranges and categories the model was fitted and validated
on, the two verdicts, the date and the full report's file name. ``Audit.to_deployer_html`` /
``to_deployer_pdf`` render it with ``templates/deployer.html`` (:func:`~.render.render_deployer_html`, which adds
the audit id); ``xai-audit --deployer-extract`` writes
``<stem>.deployer.html`` and ``<stem>.deployer.pdf`` (:data:`SUFFIX`).
"""

from __future__ import annotations

from pathlib import Path

__all__: list[str] = []      # internal module: the public names are in the API reference

#: what the extract's file names add to the report's stem: ``<stem>.deployer.html``, ``<stem>.deployer.pdf``
SUFFIX = ".deployer"
#: the statuses of a criterion that let an explainer be shown to deployers
SHOWN = ("pass",)


def report_name(path, default: str = "") -> str:
    """The full report's file name an extract written to ``path`` points to: ``x.deployer.pdf`` → ``x.pdf``
    (the same suffix; ``default`` when ``path`` is None).

    Parameters
    ----------
    path : str, pathlib.Path or None
        Where the extract is written.
    default : str, default ""
        The name returned without a path.

    Returns
    -------
    str
        The report's file name.
    """
    if path is None:
        return default
    path = Path(path)
    return f"{path.stem.removesuffix(SUFFIX)}{path.suffix}"


def deployer_content(audit, report: str = "") -> dict:
    """Everything the deployer extract shows, read from ``audit`` (its sections, methods and verdict).

    Parameters
    ----------
    audit : Audit
        A computed audit.
    report : str, default ""
        The full report's file name the extract points to ("" : the report in general).

    Returns
    -------
    dict
        ``title``, ``date``, ``report``; ``accuracy`` (the test score line with its interval, the
        other test metrics, the predictive-adequacy status); ``degradation`` (drift, noise and evidence findings,
        each ``{"what", "status", "text"}``), ``noise`` (mean PGI² per ranking and σ, and the mean PG² with every
        feature perturbed); ``explainers`` (``{"label", "show", "status", "reason"}`` each); ``ranges``
        (feature → [min, max]) with ``ranges from``; ``categories`` (feature → the categories validated on);
        ``verdicts`` (``{"name", "status", "line"}`` each).
    """
    s, verdict = audit.sections, audit.verdict
    criteria = list(getattr(verdict, "criteria", ()))
    data = s["data"].data if "data" in s else {}
    return {"title": audit.title, "date": audit.created, "report": report, "accuracy": _accuracy(s, criteria),
            "degradation": _degradation(audit, criteria),
            "noise": _noise(s.get("faithfulness")), "explainers": _explainers(audit, criteria),
            "ranges": data.get("input ranges", {}), "ranges from": data.get("input ranges from", ""),
            "categories": data.get("validated categories", {}),
            "verdicts": [{"name": j.name, "status": j.status, "line": j.headline}
                         for j in getattr(verdict, "judgements", ())]}


def _first(criteria, kind: str):
    return next((c for c in criteria if c.kind == kind), None)


def _accuracy(s, criteria) -> dict:
    """The verdict's test score (with its interval), the model section's other test metrics, and the
    predictive-adequacy criterion's status and implication."""
    score = s["verdict"].data.get("test score") if "verdict" in s else None
    performance = s["model"].data.get("performance") if "model" in s else None
    others = {} if performance is None or "test" not in getattr(performance, "columns", ()) else \
        {str(k): v for k, v in performance["test"].items() if score is None or k != score["metric"]}
    c = _first(criteria, "predictive adequacy")
    return {"score": None if score is None else score["text"], "metrics": others,
            "status": None if c is None else c.status, "word": None if c is None else c.word,
            "note": "" if c is None else (c.implication or c.explanation.removeprefix("Not assessed: ")),
            "rows": None if "model" not in s else s["model"].data.get("card", {}).get("test rows")}


def _degradation(audit, criteria) -> list:
    """The known circumstances that degrade the model or its explanations: the drift finding (with the drifting
    features), the noise sensitivity (stability across σ), and every criterion judged on too little evidence or
    without an interval."""
    found = []
    drift = _first(criteria, "drift")
    if drift is not None:
        text = drift.explanation.removeprefix("Not assessed: ")
        table = audit.sections["drift"].data.get("table") if "drift" in audit.sections else None
        if table is not None and "drift" in table:
            moved = table[table["drift"] != "none"]
            if len(moved):
                text += " Drifting features: " + ", ".join(f"{name} (PSI {row['PSI']:.3g}, {row['drift']})"
                                                           for name, row in moved.iterrows()) + "."
        found.append({"what": "Drift between training and test data", "status": drift.status, "text": text})
    stability = _first(criteria, "stability")
    if stability is not None:
        text = stability.explanation.removeprefix("Not assessed: ")
        if stability.implication and stability.status != "not assessed":
            text += f" {stability.implication}"
        found.append({"what": "Noise on the inputs (stability across σ)", "status": stability.status, "text": text})
    for c in criteria:
        said = c.explanation.removeprefix("Not assessed: ")
        if c.status == "not assessed" and "too little evidence" in said:
            found.append({"what": f"Too little evidence: {c.name}", "status": c.status, "text": said})
        elif c.value is not None and c.ci is not None and c.shown["ci"] is None:
            found.append({"what": f"Too little evidence: {c.name}", "status": c.status,
                          "text": f"{c.ci.text()} ({c.ci.rows} rows); its grade rests on the value alone."})
    if audit.rows_explained:
        found.append({"what": "Rows the explanations were checked on", "status": "",
                      "text": f"{audit.rows_explained:,} test rows (faithfulness, stability)."})
    return found


def _noise(section) -> dict | None:
    """Mean PGI² per ranking (rows) and σ (columns) from the faithfulness section, and the mean PG² with every
    feature perturbed per σ; None when the section has none."""
    if section is None or section.status not in ("ok", "warn") or "pgi2" not in section.data:
        return None
    table = section.data["pgi2"].pivot(index="method", columns="sigma", values="mean")
    rows = {str(name): [table.loc[name, s] for s in table.columns] for name in table.index}
    everything = section.data.get("mean PG² all features", {})
    return {"sigmas": [float(s) for s in table.columns], "rows": rows, "unit": section.data.get("unit", ""),
            "all features": [everything.get(s) for s in table.columns], "sigma_ref": section.data.get("sigma_ref")}


def _explainers(audit, criteria) -> list:
    """Each explainer that ran or failed, shown to deployers only when its faithfulness criterion passes; else
    not shown, with the criterion's reason (the greedy PG² reference is not graded)."""
    from . import explainers as registry

    faith = {c.name: c for c in criteria if c.kind == "faithfulness"}
    general = faith.get("Faithfulness of the explainers")
    out = []
    for key, m in audit.methods.items():
        if m.status == "skipped":
            continue
        label = getattr(m, "label", key)
        named = f"Faithfulness of {label}"        # "Faithfulness of DT-Sampler (global)" for a global method
        c = faith.get(named) or next((v for k, v in faith.items() if k.startswith(named + " (")), None)
        if c is None and registry.get(key).reference:
            out.append({"label": label, "show": False, "status": "not assessed",
                        "reason": "the reference ranking the others are judged against; its own faithfulness is "
                                  "not graded"})
            continue
        c = c or general
        if c is None:
            out.append({"label": label, "show": False, "status": "not assessed",
                        "reason": "no faithfulness criterion in the verdict"})
            continue
        if c.status == "not assessed":
            reason = c.explanation.removeprefix("Not assessed: ")
        else:
            ci = f", {c.ci.level:.0%} CI {c.shown['ci']}" if c.shown["ci"] else ", no interval"
            reason = f"{c.word}: F = {c.shown['value']}{ci}" + (f". {c.implication}" if c.implication else "")
        out.append({"label": label, "show": c.status in SHOWN, "status": c.status, "reason": reason})
    return out
