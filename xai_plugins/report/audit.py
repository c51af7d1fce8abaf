"""Gather an audit: build every registered section once and keep the results inspectable.

:func:`audit` computes; :class:`Audit` holds the sections (``.sections``, ``.methods``), exports
them (``to_dict``/``to_json``) and renders them (``to_html``/``to_pdf``, see :mod:`.render`; the two-page deployer
extract: ``to_deployer_html``/``to_deployer_pdf``, see :mod:`.deployer`).
Nothing here recomputes an explanation: the sections (:mod:`.sections`) call the package's
explainers and metrics.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import functools
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._extras import tqdm
from .._validation import check_n_jobs, core_threads
from ..engines import engine_for, remote
from ..errors import InputTypeError, NoiseScaleWarning, ParityError, XaiError
from . import sections as registry
from .audit_json import SCHEMA_VERSION
from .context import CHALLENGER, CHAMPION, derive_seed, make_context
from .document import check_path as _check_path
from .document import json_text
from .document import write as _write
from .options import AuditOptions
from .plan import AuditPlan, measured_speed, plan_audit
from .section import plain
from .sections.governance import load_approval, read_model_card

__all__: list[str] = []      # internal module: the public names are in the API reference


@dataclass
class Audit:
    """The result of :func:`audit`: every section, explainer result and verdict, and their exports.

    Every number in the report is inspectable (``a.sections["faithfulness"].data["pgi2"]``);
    :meth:`to_html`, :meth:`to_pdf` and :meth:`to_json` write the report. As a notebook cell's last
    expression it shows the two verdicts (with what they imply) and every section with its status.

    Parameters
    ----------
    title : str
        The report's title.
    sections : dict
        Section name → ``Section`` (its ``title``, ``status``, ``reason``, ``data``...), in
        report order.
    methods : dict
        Explainer key → ``MethodResult`` (its ``status``, ``importance``, ``ranking``...).
    parameters : dict
        The options and the row facts, JSON-ready.
    created : str
        When the audit was computed (UTC).
    rows_explained : int, default 0
        Test rows given the per-row methods and the faithfulness scores (0 when none was computed).
    options : AuditOptions, default AuditOptions()
        The settings of the audit.
    verdict : Verdict or None, default None
        The two verdicts (``model_fitness``, ``explanation_reliability``); set by the verdict
        section when there is one.
    plan : AuditPlan or None, default None
        The run-time plan made before the sections ran.

    Attributes
    ----------
    problems : list of dict
        Every section or method that failed or warns (``{"what", "status", "reason"}``).
    failed : bool
        Whether a section or a method failed (``xai-audit --strict`` then exits with status 1).
    title, sections, methods, parameters, created, rows_explained, options, verdict, plan
        As given.

    See Also
    --------
    xai_plugins.report.audit : Computes it.

    Examples
    --------
    >>> import json
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.report import audit
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    >>> a = audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], sigma=[0.3],
    ...           explainers=["local_mdi"], sections=["faithfulness"], max_rows=10, mc_pairs=0,
    ...           progress=False)
    >>> a.title, a.problems
    ('Model audit', [])
    >>> list(a.sections)[:3]
    ['verdict', 'governance', 'summary']
    >>> sorted(json.loads(a.to_json()))
    ['created', 'methods', 'parameters', 'plan', 'rows explained', 'schema_version', 'sections', 'title', 'verdict']
    >>> a.to_html().startswith("<!DOCTYPE html>")
    True
    """

    title: str
    sections: dict
    methods: dict
    parameters: dict
    created: str
    #: test rows given the per-row methods and the faithfulness scores (0 when none was computed)
    rows_explained: int = 0
    options: AuditOptions = field(default_factory=AuditOptions)
    verdict: object = None
    #: the run-time plan made before the sections ran (``xai_plugins.report.plan.AuditPlan``)
    plan: AuditPlan | None = None

    @property
    def promotion(self):
        """The promotion verdict of an audit with a challenger (a ``Judgement`` like each of the two in ``verdict``:
        may the challenger replace the audited model?), None without one."""
        comparison = self.sections.get("comparison")
        return None if comparison is None or comparison.result is None else comparison.result.promotion

    @property
    def problems(self) -> list:
        """Every section or method that failed or warns (``{"what", "status", "reason"}``)."""
        summary = self.sections.get("summary")
        return [] if summary is None else summary.data.get("problems", [])

    @property
    def failed(self) -> bool:
        """Whether a section or a method failed (``xai-audit --strict`` then exits with status 1)."""
        return any(p["status"] == "failed" for p in self.problems)

    def _repr_html_(self) -> str:
        """The notebook view (Jupyter calls it): the title, the two verdicts with their headlines and
        implications, and every section with its status and reason; every text escaped. The full report
        is :meth:`to_html`. Its table cells are left-aligned inline (Jupyter's CSS right-aligns them)."""
        from html import escape

        left = "style='text-align:left;vertical-align:top'"

        rows = []
        for judgement in getattr(self.verdict, "judgements", ()):
            said = "".join(f"<li>{escape(text)}</li>" for text in judgement.implications)
            rows.append(f"<tr><th {left}>{escape(judgement.name.capitalize())}</th>"
                        f"<td {left}><b>{escape(judgement.status.upper())}</b></td><td {left}>"
                        f"{escape(judgement.headline)}{f'<ul>{said}</ul>' if said else ''}</td></tr>")
        verdicts = (f"<table>{''.join(rows)}</table>" if rows
                    else "<p><b>No verdict</b>: the verdict section was not built (see below).</p>")
        sections = "".join(f"<li>{escape(s.title)}: {escape(s.status)}{f' ({escape(s.reason)})' if s.reason else ''}"
                           "</li>" for s in self.sections.values())
        return (f"<div class='xai-audit'><h3>{escape(self.title)}</h3><p>{escape(self.created)}; "
                f"{self.rows_explained} test rows explained</p>{verdicts}<p>Sections:</p><ol>{sections}</ol>"
                "<p>The full report: <code>.to_html(path)</code>, <code>.to_pdf(path)</code>.</p></div>")

    def to_dict(self) -> dict:
        """The whole audit as JSON-ready dicts and lists (figures reduced to their captions)."""
        verdict = self.verdict.to_dict() if hasattr(self.verdict, "to_dict") else plain(self.verdict)
        return {"schema_version": SCHEMA_VERSION, "title": self.title, "created": self.created,
                "rows explained": self.rows_explained, "verdict": verdict, "parameters": plain(self.parameters),
                "sections": {k: s.to_dict() for k, s in self.sections.items()},
                "methods": {k: m.to_dict() for k, m in self.methods.items()},
                **({} if self.plan is None else {"plan": self.plan.to_dict()})}

    def diff(self, other, **tolerances):
        """What changed from this audit to ``other`` (an Audit, its ``to_dict()`` or its JSON's path): an
        :class:`~xai_plugins.report.AuditDiff`, as :func:`~xai_plugins.report.diff_audits` (``tolerances``: its
        keyword arguments) computes it."""
        from .diff import diff_audits

        return diff_audits(self, other, **tolerances)

    def to_json(self, path=None, **kwargs) -> str:
        """:meth:`to_dict` as JSON text; also written to ``path`` when given (checked first:
        :class:`~xai_plugins.errors.OutputPathError` when it cannot be written)."""
        return json_text(self, path, **kwargs)

    def to_html(self, path=None) -> str:
        """The self-contained HTML report; also written to ``path`` when given (checked before
        rendering: :class:`~xai_plugins.errors.OutputPathError` when it cannot be written)."""
        from .render import render_html

        _check_path(path)
        html = render_html(self)
        if path is not None:
            _write(path, html.encode("utf-8"))
        return html

    def to_pdf(self, path=None, html: str | None = None) -> bytes:
        """The PDF rendered by weasyprint from the same HTML, with no network access; also written to
        ``path`` when given (checked before rendering: :class:`~xai_plugins.errors.OutputPathError`
        when it cannot be written). ``html``: what :meth:`to_html` returned, when the caller has it (not
        rendered again).

        With ``options.pdf_variant`` (default "pdf/a-3b") an archival PDF/A-3: sRGB output intent, XMP
        metadata (title, model name and version, audit id, date), tags, a file identifier from the audit's
        content hashes, and the audit's JSON (the bytes :meth:`to_json` writes, named after ``path``) and the
        model card embedded as associated files; None: a plain PDF."""
        from .render import audit_pdf

        _check_path(path)
        name = "audit.json" if path is None else Path(path).with_suffix(".json").name
        pdf = audit_pdf(self, self.to_html() if html is None else html, name)
        if path is not None:
            _write(path, pdf)
        return pdf

    def to_deployer_html(self, path=None, report: str | None = None) -> str:
        """The two-page deployer extract (``xai_plugins.report.deployer``: accuracy with its interval, what
        degrades it, which explainers may be shown to deployers, the input ranges, the verdicts) as self-contained
        HTML; also written to ``path`` when given (checked first). ``report``: the full report's file name it
        points to (default: ``path``'s name without ``.deployer``, e.g. ``x.deployer.html`` → ``x.html``)."""
        from .deployer import deployer_content, report_name
        from .render import render_deployer_html

        _check_path(path)
        html = render_deployer_html(self, deployer_content(self, report_name(path) if report is None else report))
        if path is not None:
            _write(path, html.encode("utf-8"))
        return html

    def to_deployer_pdf(self, path=None, html: str | None = None, report: str | None = None) -> bytes:
        """The deployer extract as PDF, by the machinery of :meth:`to_pdf` (with ``options.pdf_variant``, default
        "pdf/a-3b": a PDF/A-3 embedding the audit's JSON, named after the full report, e.g. ``x.json`` for
        ``x.deployer.pdf``); also written to ``path`` when given (checked first). ``html``: what
        :meth:`to_deployer_html` returned, when the caller has it; ``report``: as there (default ``x.pdf``)."""
        from .deployer import report_name
        from .render import audit_pdf

        _check_path(path)
        name = "audit.json" if path is None else Path(report_name(path)).with_suffix(".json").name
        source = self.to_deployer_html(report=report_name(path) if report is None else report) if html is None else html
        pdf = audit_pdf(self, source, name, document="deployer extract")
        if path is not None:
            _write(path, pdf)
        return pdf


def _parallel(fn):
    """Give ``fn`` an ``n_jobs`` keyword applied to every computation inside it (through
    ``joblib.parallel_config``, which ``n_jobs=None`` defers to everywhere in the package). With
    ``n_jobs=None`` the loops whose results are the same bits on any thread count (the C core's rows,
    RF-MCR's trees) use every core (:func:`~xai_plugins._validation.core_threads`), and the rest, the
    model's own predictor among them, one thread."""

    @functools.wraps(fn)
    def wrapper(*args, n_jobs=None, **kwargs):
        from joblib import parallel_config

        check_n_jobs(n_jobs)
        if n_jobs is None:
            with core_threads(-1):
                return fn(*args, **kwargs)
        with parallel_config(n_jobs=n_jobs):
            return fn(*args, **kwargs)

    return wrapper


def _certified(ctx, options, role: str = CHAMPION):
    """The parity certificate of the model held under ``role`` on the test rows
    (:func:`~xai_plugins.forest.parity.certify`; None when the model's own predict takes none of them); a failed one
    refuses the audit (:class:`~xai_plugins.errors.ParityError`) unless ``options.unverified``."""
    from ..forest.parity import certify

    forest = ctx.models[role].forest
    rows = ctx.X_test.to_numpy(dtype=float)[: options.max_shap_rows]      # the Forest's rows (category codes)
    if forest.nan_refused is not None:              # the model's own predict refuses these rows
        rows = rows[~np.isnan(rows[:, forest.nan_refused]).any(axis=1)]
    if not len(rows):
        return None                                 # no row the model's own predict takes: nothing to compare
    certificate = certify(forest, rows, random_state=0)
    if not certificate.passed and not options.unverified:
        what = "the model" if role == CHAMPION else f"the {role} model"
        raise ParityError(f"refusing to explain {what}: the trees read from it do not reproduce its own "
                          f"runtime's scores ({certificate}). Explain it anyway, every number labelled unverified, "
                          f"with unverified=True (xai-audit --unverified)")
    return certificate


@_parallel
def audit(model, X_test, y_test=None, *, X_train=None, y_train=None, options: AuditOptions | None = None,
          client=None, challenger=None, **overrides) -> Audit:
    """Audit the explanations of a fitted tree ensemble and return an inspectable :class:`Audit`.

    Builds every section of the report once (summary, model card, calibration, data summary,
    drift, explanations by method, faithfulness, agreement, Rashomon analysis, fairness,
    limitations, reproducibility appendix) and the two verdicts (model fitness, explanation
    reliability). Every setting is a field of :class:`xai_plugins.report.AuditOptions` (defaults
    written there once), given as ``options=`` and/or as keyword overrides
    (``audit(model, X, y, max_rows=100, sigma=[0.3])``).

    Parameters
    ----------
    model : fitted tree ensemble
        A model :func:`xai_plugins.import_model` supports (XGBoost, LightGBM, CatBoost,
        scikit-learn, or a scikit-learn Pipeline in front of one).
    X_test : array-like, DataFrame, dask collection or pyspark.sql.DataFrame
        The test rows. A dask DataFrame / array runs the audit on the Dask cluster; a Spark
        DataFrame (or ``keyed(spark_df, id_cols)``) on Spark.
    y_test : array-like, str or None, default None
        The test targets; on Spark, the name of the target column of ``X_test``.
    X_train : array-like, DataFrame or None, default None
        The training rows (noise levels are in their standard deviations; drift compares them with
        the test rows); brought into memory.
    y_train : array-like or None, default None
        The training targets.
    options : AuditOptions or None, default None
        The settings; None: the defaults. Keyword ``overrides`` replace fields of it.
    client : distributed.Client, pyspark.sql.SparkSession or None, default None
        Run on this Dask cluster (a ``distributed.Client``) or Spark session (default with Spark
        data: the active one).
    challenger : fitted model or None, default None
        A model to compare with ``model`` (the champion) on the same rows: any model
        :func:`xai_plugins.import_model` supports, of the same task, input columns (read alike) and classes,
        of any library or kind. Its parity certificate is checked as the champion's, and the
        "comparison" section gives the deltas of performance, calibration and fairness, the shift of
        reliance per feature, both models' faithfulness and their agreement, and the promotion verdict
        (``Audit.promotion``).
    n_jobs : int or None, default None
        Threads (scikit-learn convention, -1 = every core). The default None runs the C core's rows
        and RF-MCR's trees on every core, whose results are the same bits on any thread count, and
        everything else, the model's own predictor among it, on one thread; an integer applies to
        everything (``joblib.parallel_config``), and more than one thread then lets a scikit-learn
        model sum its trees' predictions in thread order, which can change the last bits of its
        predictions between runs: bit-identical reports need ``n_jobs=None`` or 1.
    **overrides
        Any field of :class:`xai_plugins.report.AuditOptions`; the main ones are under Other
        Parameters.

    Returns
    -------
    Audit
        Every section (``.sections``), explainer result (``.methods``) and verdict
        (``.verdict``), exportable to HTML, PDF and JSON.

    Other Parameters
    ----------------
    sigma : float or sequence of float
        Noise levels of the faithfulness section, in training standard deviations; the greedy PG²
        ranking uses the middle one.
    explainers : sequence of str
        Subset of ``xai_plugins.report.EXPLAINERS`` ("shap", "pg2", "local_mdi", "acme",
        "dt_sampler", "mcr"), or any registered explainer key.
    sections : sequence of str
        Optional sections to compute ("explanations", "faithfulness", "agreement", "mcr").
    random_state : int or None
        The root of every random draw: each section draws from its own stream derived from it and
        the section's name.
    positive_class : object
        Class explained in the detailed pages; default the last class of a binary model and the
        most frequent test class of a multi-class one.
    max_rows : int
        Test rows given the per-row methods: a seeded sample, the same on every machine.
    cost_target : float
        Estimated seconds of the whole audit before rendering. The run-time plan, made from the
        model and the data sizes before any section runs and never from a clock, keeps within it
        by sampling the dearest PGI² sets by seeded Monte Carlo, then explaining fewer rows, never
        fewer than the verdict needs; the plan is printed with the progress bar, whose total is the
        estimated seconds, and recorded in the appendix and the JSON.
    time_budget : float or None
        Opt-in: fewer rows when the PG² work would take longer, which makes the report
        machine-dependent, as it then says.
    binary_sigma : float or None
        σ of 0/1 columns.
    binary_flip : bool
        Default True: two-valued numeric features perturbed by the flip law instead of Gaussian
        noise.
    protected : sequence of str
        Columns of ``X_test`` / ``X_train`` held apart as protected attributes, which need not be
        model features.
    model_card : str, pathlib.Path or dict
        The model card (a JSON / YAML file, or a dict).
    approval : str, pathlib.Path or dict
        The reviewer's approval (a YAML / JSON file, or a dict: decision, conditions, date, approver, role),
        shown in the governance block.
    run_id : str or None
        Your identifier of the run, printed on the report.
    thresholds : dict
        ``{name: value}``: the verdicts' thresholds (names, defaults and rationales in
        ``xai_plugins.report.criteria.THRESHOLDS``, each declared by the section whose criterion uses it).

    Raises
    ------
    InputTypeError
        An unknown option (the options are the fields of ``AuditOptions``), or an option of the
        wrong type.
    InputError
        An option value ``AuditOptions`` refuses, or data the audit cannot use.
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.report.Audit : The result.
    xai_plugins.report.AuditOptions : Every setting, with its default.

    Notes
    -----
    With ``client`` (a ``distributed.Client``), or a dask DataFrame / array ``X_test``, the audit
    runs on the Dask cluster; with a Spark DataFrame ``X_test`` (``y_test``: the name of its target
    column; ``client``: a ``SparkSession``, default the active one) on Spark (see
    ``xai_plugins.report.runners.prepare``): every per-row explainer and the faithfulness section
    cover EVERY complete test row (``max_rows`` and ``time_budget`` are ignored, the report says so),
    with the same numbers as an in-memory audit of the same rows; the data summary, performance
    metrics, local figures, per-row agreement and the Monte Carlo comparison use a random
    in-memory sample of ``max_shap_rows`` test rows.

    A section whose computation raises is marked "failed" with the reason, the summary lists it
    (``Audit.problems``), and the other sections still render.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from xai_plugins.report import audit
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    >>> a = audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], sigma=[0.3],
    ...           explainers=["local_mdi"], sections=["faithfulness"], max_rows=10, mc_pairs=0,
    ...           progress=False)
    >>> a.rows_explained, a.failed
    (10, False)
    >>> a.sections["faithfulness"].status, a.sections["agreement"].status
    ('ok', 'skipped')
    >>> a.verdict.model_fitness.status in ("pass", "warn", "fail")
    True
    """
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(AuditOptions)})
    if unknown:
        raise InputTypeError(f"audit() got unknown option(s) {unknown}; the options are the fields of AuditOptions: "
                             f"{[f.name for f in dataclasses.fields(AuditOptions)]}")
    options = (options or AuditOptions()).replace(**overrides) if overrides else (options or AuditOptions())
    if options.model_card is not None:
        read_model_card(options.model_card)          # a bad model card or approval fails before any work
    if options.approval is not None:
        load_approval(options.approval)
    start_all = time.perf_counter()
    root = np.random.SeedSequence(options.random_state)
    cl, engine = None, engine_for(X_test, y_test, client)
    if remote(engine):      # the test data on a row engine (Dask, Spark): every complete row explained there
        from ..forest import import_model
        from .runners import prepare

        engine = engine.bind(client, options.progress)
        X_train, y_train = (engine.compute(v)[0] if v is not None and engine.handles(v) else v
                            for v in (X_train, y_train))
        sample_seed = int(derive_seed(root, "cluster sample").generate_state(1, np.uint32)[0])
        cl, X_test, y_test = prepare(import_model(model), X_test, y_test, engine=engine,
                                     sample_size=options.max_shap_rows, random_state=sample_seed,
                                     protected=options.protected)
    ctx = make_context(model, X_test, y_test, X_train=X_train, y_train=y_train, positive_class=options.positive_class,
                       random_state=options.random_state, protected=options.protected, cluster=cl, root_seed=root,
                       progress=options.progress and cl is None,   # on a cluster: the scheduler's progress
                       rho=options.rho, binary_flip=options.binary_flip)
    ctx.parity = _certified(ctx, options)
    if challenger is not None:
        ctx.add_model(CHALLENGER, challenger)
        _certified(ctx, options, CHALLENGER)
    _check_noise(ctx, options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoiseScaleWarning)         # said once, by _check_noise
        ctx.plan = plan_audit(ctx, options)
        if options.max_minutes is not None and cl is None:      # the cap, on this machine: time one row's PG² work
            ctx.plan = plan_audit(ctx, options, measured_speed(ctx, options), time.perf_counter() - start_all)
    with _planned_progress(ctx.plan, options.progress, options.heartbeat) as progress:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoiseScaleWarning)     # said once, by _check_noise
            built = registry.build_all(ctx, options, on_section=progress)
    explained = built["explanations"].result if "explanations" in built else None
    methods = explained.methods if explained is not None else {}
    rows_explained = built["explanations"].data.get("explained rows", 0) if "explanations" in built else 0
    parameters = _parameters(options, ctx, built, cl)
    repro = built.get("reproducibility")
    if repro is not None and repro.status == "ok":
        timings = {s.title: round(s.seconds, 3) for k, s in built.items() if k != "reproducibility"}
        timings.update({f"of which {m.label}": round(m.seconds, 3) for m in methods.values() if m.status != "skipped"})
        repro.data["timings"] = timings
        repro.data["total seconds (before rendering)"] = round(time.perf_counter() - start_all, 2)
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if cl is not None:          # per-row rankings persisted on the engine: release them
        for m in methods.values():
            if m.ranking is not None and engine.handles(m.ranking):
                engine.release(m.ranking)
                m.ranking = None
    verdict = built["verdict"].result.verdict if "verdict" in built and built["verdict"].result else None
    return Audit(str(options.title), built, methods, parameters, created, rows_explained, options, verdict, ctx.plan)


@contextlib.contextmanager
def _planned_progress(plan, show: bool, heartbeat: float | None = None):
    """The audit's progress display: the plan printed once, then one bar whose total is the plan's estimated
    seconds (tqdm's ETA follows from it), advanced by each section's estimate as it finishes, the running
    section and its estimate as the postfix; without the bar (``show`` False) and with ``heartbeat``, one stderr
    line every ``heartbeat`` seconds saying which section runs, the time spent and the plan's estimate. Yields
    ``on_section(name)`` for :func:`~.sections.build_all`."""
    bar = tqdm(total=round(plan.seconds, 1), desc="audit", unit="est. s", disable=not show, leave=False,
               bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} est. s [{elapsed}<{remaining}{postfix}]")
    if show:
        bar.write(f"xai_plugins audit plan (estimated, ≈ {plan.seconds:.0f} s before rendering):\n{plan.describe()}")
    running: list = []
    started, stop = time.perf_counter(), threading.Event()

    def beat():
        while not stop.wait(heartbeat):
            section = running[-1] if running else "starting"
            print(f"xai_plugins audit: {(time.perf_counter() - started) / 60:.1f} min, running {section} (the plan "
                  f"estimated ≈ {plan.seconds:.0f} s in all)", file=sys.stderr, flush=True)

    beating = threading.Thread(target=beat, daemon=True) if heartbeat and not show else None
    if beating is not None:
        beating.start()

    def on_section(name):
        if running:
            bar.update(plan.estimate(running.pop()))
        running.append(name)
        bar.set_postfix_str(f"{name} ≈ {plan.estimate(name):.2g} s")

    try:
        yield on_section
    finally:
        stop.set()
        if running:
            bar.update(plan.estimate(running.pop()))
        bar.close()


def _check_noise(ctx, options: AuditOptions) -> None:
    """One :class:`~xai_plugins.errors.NoiseScaleWarning` for the audit's widest noise (largest σ,
    and ``binary_sigma`` on the 0/1 columns) when it swamps a feature's split thresholds and test
    values; noise the sections cannot use is left for them to report."""
    from ..perturbation import check_noise_scale, make_perturbation
    from ..prediction_gap._boundaries import split_boundaries

    try:
        noise = make_perturbation(ctx.n_features, **ctx.noise(max(options.sigma), options.binary_sigma))
    except XaiError:
        return
    check_noise_scale(split_boundaries(ctx.forest), noise, np.flatnonzero(~ctx.categorical),
                      ctx.X_test.to_numpy(dtype=float), stacklevel=5)


def _parameters(options: AuditOptions, ctx, built, cl) -> dict:
    """The options by argument name (JSON-ready) and the facts the run settled (explained rows,
    explained class, greedy PG² σ)."""
    out = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
           if f.name not in ("provenance", "progress", "heartbeat", "model_card", "approval")}
    out.update({"positive_class": ctx.positive_class, "greedy PG² σ": options.sigma_ref,
                "top_k": min(options.top_k, ctx.n_features)})
    if ctx.categorical.any():
        out["categorical features"] = ctx.categorical_names
        out["ρ of the categorical features per σ"] = {s: ctx.rho_at(s) for s in options.sigma}
    explained = built["explanations"].data if "explanations" in built else {}
    for key in ("explained rows", "complete test rows (sampled from)", "row-count calibration"):
        if key in explained:
            out[key] = explained[key]
    if cl is not None:
        ignored = "{} (ignored for the row count: every complete test row, on " + cl.where + ")"
        out.update({"max_rows": ignored.format(options.max_rows), "time_budget": ignored.format(options.time_budget),
                    "in-memory sample (rows)": cl.sample_size, "computed on": cl.where})
    return out
