"""Gather an audit: run every requested section once and keep the results inspectable.

:func:`audit` computes; :class:`Audit` holds the sections (``.sections``, ``.methods``), exports
them (``to_dict``/``to_json``) and renders them (``to_html``/``to_pdf``, see :mod:`.render`).
Nothing here recomputes an explanation: it calls the package's explainers and metrics.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._validation import check_n_jobs, is_dask
from ..prediction_gap import greedy_pg2_ranking, pgi2
from . import agreement as agree
from . import describe, faithfulness, figures
from . import explainers as runners
from .context import make_context
from ..errors import InputError

SECTION_TITLES = {
    "summary": "Summary of key findings",
    "model": "Model card",
    "data": "Data summary",
    "explanations": "Explanations by method",
    "faithfulness": "Faithfulness",
    "agreement": "Agreement between methods",
    "mcr": "Rashomon set and model class reliance",
    "limitations": "Limitations and scope",
    "reproducibility": "Reproducibility appendix",
}
SECTIONS = tuple(SECTION_TITLES)
#: sections a user may skip with ``sections=``; the others are cheap and always computed
OPTIONAL_SECTIONS = ("explanations", "faithfulness", "agreement", "mcr")
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
                "rows": _plain(frame.to_numpy().tolist())}


@dataclass
class Section:
    """One numbered report section. ``status``: "ok", "skipped", "not applicable" or "failed" (then
    ``reason`` says why); ``data`` the section's key numbers; ``tables`` and ``figures`` in order."""

    key: str
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    data: dict = field(default_factory=dict)
    tables: list = field(default_factory=list)
    figures: list = field(default_factory=list)

    @property
    def title(self) -> str:
        """The section's heading."""
        return SECTION_TITLES[self.key]

    def to_dict(self) -> dict:
        """JSON-ready content (figures as captions only)."""
        return {"title": self.title, "status": self.status, "reason": self.reason, "seconds": self.seconds,
                "data": _plain(self.data), "tables": [t.to_dict() for t in self.tables],
                "figures": [f.to_dict() for f in self.figures]}


@dataclass
class Audit:
    """Result of :func:`audit`: ``sections`` (key → :class:`Section`, in report order), ``methods``
    (explainer key → :class:`~.explainers.MethodResult`), ``parameters`` and ``created`` (UTC)."""

    title: str
    sections: dict
    methods: dict
    parameters: dict
    created: str
    #: test rows given the per-row methods and the faithfulness scores (0 when none was computed)
    rows_explained: int = 0

    def to_dict(self) -> dict:
        """The whole audit as JSON-ready dicts and lists (figures reduced to their captions)."""
        return {"title": self.title, "created": self.created, "rows explained": self.rows_explained,
                "parameters": _plain(self.parameters),
                "sections": {k: s.to_dict() for k, s in self.sections.items()},
                "methods": {k: m.to_dict() for k, m in self.methods.items()}}

    def to_json(self, path=None, **kwargs) -> str:
        """:meth:`to_dict` as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=kwargs.pop("indent", 2), ensure_ascii=False, **kwargs)
        if path is not None:
            _write(path, text.encode("utf-8"))
        return text

    def to_html(self, path=None) -> str:
        """The self-contained HTML report; also written to ``path`` when given."""
        from .render import render_html

        html = render_html(self)
        if path is not None:
            _write(path, html.encode("utf-8"))
        return html

    def to_pdf(self, path=None) -> bytes:
        """The PDF rendered by weasyprint from the same HTML, with no network access; also written to
        ``path`` when given."""
        from .render import DataOnlyFetcher, html_to_pdf

        fetcher = DataOnlyFetcher()
        pdf = html_to_pdf(self.to_html(), fetcher)
        if fetcher.refused:
            warnings.warn(f"the PDF renderer refused to fetch {fetcher.refused}", RuntimeWarning, stacklevel=2)
        if path is not None:
            _write(path, pdf)
        return pdf


def _write(path, payload: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)


def _plain(value):
    """Convert numpy / pandas values inside dicts and lists to JSON-ready Python objects."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return _plain(value.reset_index().to_dict(orient="records"))
    if isinstance(value, pd.Series):
        return _plain(value.to_dict())
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _check_choice(values, allowed, name) -> list:
    values = list(allowed if values is None else ([values] if isinstance(values, str) else values))
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise InputError(f"unknown {name} {unknown}; choose from {list(allowed)}")
    return values


def _parallel(fn):
    """Give ``fn`` an ``n_jobs`` keyword applied to every computation inside it (through
    ``joblib.parallel_config``, which ``n_jobs=None`` defers to everywhere in the package)."""

    @functools.wraps(fn)
    def wrapper(*args, n_jobs=None, **kwargs):
        from joblib import parallel_config

        check_n_jobs(n_jobs)
        if n_jobs is None:
            return fn(*args, **kwargs)
        with parallel_config(n_jobs=n_jobs):
            return fn(*args, **kwargs)

    return wrapper


@_parallel
def audit(model, X_test, y_test=None, *, X_train=None, y_train=None, sigma=(0.1, 0.3, 1.0),
          explainers=runners.EXPLAINERS, sections=None, title="Model audit", random_state=0,
          positive_class=None, max_rows=50, max_shap_rows=200, time_budget=20.0, n_local=2, top_k=5,
          acme_quantiles=30, mc_pairs=4, mcr_permutations=5, mcr_epsilon=0.0, mcr_fit_forest=False,
          dt_sampler_rows=60, dt_sampler_features=8, dt_sampler_samples=20, provenance=None,
          progress=True, client=None) -> Audit:
    """Audit the explanations of a fitted tree ensemble and return an inspectable :class:`Audit`.

    With ``client`` (a ``distributed.Client``), or a dask DataFrame / array ``X_test``, the audit runs
    on the Dask cluster (see :mod:`.cluster`): greedy PG², local MDI, TreeSHAP, AcME local and the
    faithfulness section (PGI² of every ranking, random baseline) cover EVERY complete test row —
    ``max_rows`` and ``time_budget`` are ignored, the report says so — with the same numbers as an
    in-memory audit of the same rows; the data summary, performance metrics, local figures, per-row
    agreement and the Monte Carlo comparison use a random in-memory sample of ``max_shap_rows`` test
    rows. ``X_train`` is brought into memory (noise scale, AcME background, DT-Sampler, MCR).

    Parameters
    ----------
    model : fitted XGBoost / scikit-learn / LightGBM tree ensemble (see :func:`xai_plugins.import_model`).
    X_test, y_test : the data the report is about; ``y_test`` enables the performance metrics.
    X_train, y_train : training data: the noise scale (σ is in training standard deviations), the
        AcME background, DT-Sampler rows and MCR need them (without, the test data stands in where possible).
    sigma : noise levels of the faithfulness section; the greedy PG² ranking uses the middle one.
    explainers : subset of ``("shap", "pg2", "local_mdi", "acme", "mcr", "dt_sampler")``.
    sections : subset of :data:`OPTIONAL_SECTIONS` to compute (default all); the others say
        "not computed (skipped by user)".
    random_state : seed of every random choice (row samples, random baseline, Monte Carlo, samplers).
    positive_class : class whose probability / margin classifiers are explained (default: the last).
    max_rows, max_shap_rows, time_budget : at most ``max_rows`` test rows get the per-row methods,
        fewer (at least 10) when the greedy PG² ranking and the PGI² scores are estimated, from a timed
        probe on two rows, to exceed ``time_budget`` seconds; ``time_budget=None`` always uses
        ``max_rows`` (a row count that does not depend on the machine's speed). TreeSHAP's global
        importance uses ``max_shap_rows`` rows.
    n_local : rows shown with local explanations (the highest and lowest explained output first).
    top_k : k of the top-k overlap. ``acme_quantiles``, ``mc_pairs``, ``mcr_permutations`` and
        ``dt_sampler_*``: sizes of those methods' runs. ``mcr_epsilon``: tolerance of the
        ε-Rashomon set (0: only trees predicting the training data identically are swapped; a share
        of rows for classifiers, an MSE for regressors). ``mcr_fit_forest``: for a model RF-MCR does
        not support (boosting, bootstrap forests), fit a 100-tree ``bootstrap=False`` random forest on
        the training data and report its MCR ranges instead of "not applicable". ``provenance``:
        extra facts for the appendix (e.g. file names and hashes). ``progress``: a tqdm bar per section
        (and, on a cluster, ``distributed.progress`` / dask's ``ProgressBar`` for each pass over the rows).
    n_jobs : threads of the C core and RF-MCR (scikit-learn convention: None = 1, -1 = every core).
    client : a ``distributed.Client`` to run the per-row sections on (see above); None: in memory,
        unless ``X_test`` is a dask collection (then dask's current scheduler).

    ``Audit.rows_explained`` is the number of test rows the per-row methods explained.
    """
    start_all = time.perf_counter()
    wanted = _check_choice(explainers, runners.EXPLAINERS, "explainers")
    requested = _check_choice(sections, OPTIONAL_SECTIONS, "sections")
    sigmas = [float(s) for s in np.atleast_1d(sigma)]
    if not sigmas or min(sigmas) <= 0:
        raise InputError(f"sigma must hold positive noise levels; got {sigma!r}")
    sigma_ref = sorted(sigmas)[len(sigmas) // 2]
    cl = None
    if client is not None or is_dask(X_test, y_test):
        from ..forest import import_model
        from . import cluster

        cl_runner = cluster.Runner(client, progress)
        if is_dask(X_train, y_train):
            X_train, y_train = (None if v is None else (v.compute() if is_dask(v) else v) for v in (X_train, y_train))
        cl, X_test, y_test = cluster.prepare(import_model(model), X_test, y_test, runner=cl_runner,
                                             sample_size=max_shap_rows, random_state=random_state)
    ctx = make_context(model, X_test, y_test, X_train=X_train, y_train=y_train, positive_class=positive_class,
                       random_state=random_state)
    parameters = {"sigma": sigmas, "greedy PG² σ": sigma_ref, "explainers": wanted, "sections": requested,
                  "random_state": random_state, "positive_class": ctx.positive_class, "max_rows": max_rows,
                  "max_shap_rows": max_shap_rows, "time_budget (s)": time_budget, "top_k": min(top_k, ctx.n_features),
                  "acme_quantiles": acme_quantiles, "mc_pairs": mc_pairs, "mcr_permutations": mcr_permutations,
                  "mcr_epsilon": mcr_epsilon, "mcr_fit_forest": mcr_fit_forest, "dt_sampler_rows": dt_sampler_rows,
                  "dt_sampler_features": dt_sampler_features, "dt_sampler_samples": dt_sampler_samples}
    if cl is not None:
        ignored = "{} (ignored for the row count: Dask cluster, every complete test row)"
        parameters.update({"max_rows": ignored.format(max_rows), "time_budget (s)": ignored.format(time_budget),
                           "in-memory sample (rows)": cl.sample_size, "scheduler": cl.runner.describe()})
    out = {key: Section(key) for key in SECTIONS}
    bar = tqdm(total=len(SECTIONS), desc="audit", disable=not progress, leave=False)

    def stage(key):
        bar.set_postfix_str(key)
        return time.perf_counter()

    def done(key, t0):
        out[key].seconds = time.perf_counter() - t0
        bar.update(1)

    t0 = stage("model")
    out["model"].data = {"card": describe.model_card(ctx), "target": describe.target_summary(ctx),
                         "performance note": "" if ctx.y_test is not None else "not computed (no test target given)"}
    if ctx.y_test is not None:
        try:
            performance = describe.performance(ctx)
        except Exception as exc:  # noqa: BLE001 - e.g. the model's own predict refusing missing values
            out["model"].data["performance note"] = f"not computed ({type(exc).__name__}: {exc})"
        else:
            on_sample = "" if cl is None else f" On a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows."
            out["model"].tables.append(Table((f"Predictive performance (classification metrics for class "
                                              f"{ctx.positive_class})." if ctx.task == "classification"
                                              else "Predictive performance.") + on_sample, performance))
    if cl is not None:
        out["model"].data["card"]["test rows"] = cl.n_rows
    done("model", t0)

    t0 = stage("data")
    summary = describe.data_summary(ctx)
    out["data"].data = {"missing values": int(summary["missing"].sum()), "rows": len(ctx.X_test),
                        "features": ctx.n_features}
    caption = "Per-feature distribution of the test data (missing: count of missing values)."
    if cl is not None:
        summary["missing"] = cl.missing
        out["data"].data.update({"missing values": int(cl.missing.sum()), "rows": cl.n_rows})
        caption = (f"Per-feature distribution of a random sample of {len(ctx.X_test)} of the {cl.n_rows} test rows "
                   f"(missing: count of missing values over all {cl.n_rows} rows, computed on the Dask cluster).")
    out["data"].tables.append(Table(caption, summary))
    done("data", t0)

    needs_methods = bool({"explanations", "faithfulness", "agreement", "mcr"} & set(requested))
    t0 = stage("explanations")
    methods, rows, local_rows, local_labels, agreement_rows = {}, np.arange(0), [], [], 0
    rows_explained = 0
    if needs_methods and cl is not None:
        rows = ctx.sample_rows(len(ctx.X_test))          # the sample's complete rows: Monte Carlo comparison
        rows_explained = cl.n_complete
        parameters["explained rows"] = rows_explained
        parameters["complete test rows (sampled from)"] = rows_explained
        parameters["row-count calibration"] = {"rows": rows_explained, "time budget": "none: every complete test "
                                               "row, on the Dask cluster (max_rows and time_budget ignored)"}
        in_memory = {
            "dt_sampler": lambda: runners.run_dt_sampler(
                ctx, n_rows=dt_sampler_rows, n_features=dt_sampler_features, n_branch_nodes=3,
                n_samples=dt_sampler_samples, time_budget=time_budget),
            "mcr": lambda: runners.run_mcr(ctx, n_permutations=mcr_permutations, epsilon=mcr_epsilon,
                                           fit_forest=mcr_fit_forest),
        }
        methods, local_labels, agreement_rows = cluster.run_methods(
            ctx, cl, wanted, sigma_ref=sigma_ref, acme_quantiles=acme_quantiles, n_local=n_local,
            in_memory_calls=in_memory)
    elif needs_methods:
        rows, calibration = _choose_rows(ctx, wanted, requested, sigmas, sigma_ref, max_rows, time_budget)
        parameters["explained rows"] = len(rows)
        parameters["complete test rows (sampled from)"] = len(ctx.complete_rows)
        parameters["row-count calibration"] = calibration
        local_rows = _local_rows(ctx, rows, n_local)
        shap_rows = ctx.sample_rows(max(max_shap_rows, len(rows)))
        calls = {
            "shap": lambda: runners.run_shap(ctx, rows, shap_rows, local_rows),
            "pg2": lambda: runners.run_pg2(ctx, rows, sigma_ref),
            "local_mdi": lambda: runners.run_local_mdi(ctx, rows),
            "acme": lambda: runners.run_acme(ctx, rows, local_rows, acme_quantiles),
            "dt_sampler": lambda: runners.run_dt_sampler(
                ctx, n_rows=dt_sampler_rows, n_features=dt_sampler_features, n_branch_nodes=3,
                n_samples=dt_sampler_samples, time_budget=time_budget),
            "mcr": lambda: runners.run_mcr(ctx, n_permutations=mcr_permutations, epsilon=mcr_epsilon,
                                           fit_forest=mcr_fit_forest),
        }
        for key in runners.EXPLAINERS:
            if key in wanted:
                methods[key] = runners.run(key, calls[key])
            else:
                methods[key] = runners.MethodResult(key, status="skipped", reason=SKIPPED)
        rows_explained, local_labels, agreement_rows = len(rows), [ctx.row_label(r) for r in local_rows], len(rows)
    scope = "sampled test rows" if cl is None else (
        f"test rows: every complete test row ({cl.n_rows - cl.n_complete} of the {cl.n_rows} have a missing "
        f"value), computed on the Dask cluster (max_rows and time_budget do not apply); the per-row agreement "
        f"uses a random sample of {agreement_rows} of them")
    _guarded(out["explanations"], _explanations_section, ctx, methods, rows_explained, local_labels,
             "explanations" in requested, scope)
    done("explanations", t0)

    t0 = stage("faithfulness")
    if "faithfulness" in requested:
        _guarded(out["faithfulness"], _faithfulness_section, ctx, methods, rows, sigmas, sigma_ref, mc_pairs, cl)
    else:
        out["faithfulness"].status, out["faithfulness"].reason = "skipped", SKIPPED
    done("faithfulness", t0)

    t0 = stage("agreement")
    if "agreement" in requested:
        _guarded(out["agreement"], _agreement_section, methods, min(top_k, ctx.n_features), agreement_rows)
    else:
        out["agreement"].status, out["agreement"].reason = "skipped", SKIPPED
    done("agreement", t0)

    t0 = stage("mcr")
    _guarded(out["mcr"], _mcr_section, methods.get("mcr"), "mcr" in requested)
    done("mcr", t0)

    t0 = stage("summary")
    _summary_section(out["summary"], ctx, methods, out)
    done("summary", t0)

    t0 = stage("limitations")
    out["limitations"].data = {"items": _limitations(ctx, methods, parameters)}
    done("limitations", t0)

    t0 = stage("reproducibility")
    repro = out["reproducibility"]
    repro.data = {"versions": describe.versions(), "seed": random_state,
                  "hashes": {"model (sha256 of the tree arrays)": describe.sha256_of_model(ctx.forest),
                             ("test data (sha256)" if cl is None else f"test data: the in-memory sample of "
                              f"{len(ctx.X_test)} rows (sha256)"): describe.sha256_of_data(ctx.X_test, ctx.y_test),
                             "training data (sha256)": describe.sha256_of_data(ctx.X_train, ctx.y_train),
                             **(provenance or {})}}
    done("reproducibility", t0)
    bar.close()
    timings = {SECTION_TITLES[k]: round(s.seconds, 3) for k, s in out.items() if k != "reproducibility"}
    timings.update({f"of which {m.label}": round(m.seconds, 3) for m in methods.values() if m.status != "skipped"})
    repro.data["timings"] = timings
    repro.data["parameters"] = parameters
    repro.data["total seconds (before rendering)"] = round(time.perf_counter() - start_all, 2)
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if cl is not None:          # per-row rankings persisted on the cluster: release them
        for m in methods.values():
            if is_dask(m.ranking):
                m.ranking = None
    return Audit(str(title), out, methods, parameters, created, rows_explained)


def _guarded(section, build, *args) -> None:
    """``build(section, *args)``; an error marks the section "failed" with the reason instead of
    aborting the audit (the other sections still render)."""
    try:
        build(section, *args)
    except Exception as exc:  # noqa: BLE001 - reported in the section
        section.status, section.reason = "failed", f"{type(exc).__name__}: {exc}"
        section.tables, section.figures = [], []


def _choose_rows(ctx, wanted, requested, sigmas, sigma_ref, max_rows, time_budget) -> tuple[np.ndarray, dict]:
    """Explained rows: ``max_rows``, fewer when the estimated PG² work (greedy ranking plus the exact
    PGI² of every ranking at every σ) would exceed ``time_budget``; never fewer than 10 (or all)."""
    candidates = ctx.sample_rows(max_rows)
    if time_budget is None:
        return candidates, {"rows": len(candidates), "time budget": "none"}
    probe = ctx.X_test.to_numpy()[candidates[:2]]
    per_row = 0.0
    try:
        if "pg2" in wanted:
            t = time.perf_counter()
            ranking = greedy_pg2_ranking(ctx.forest, probe, sigma=sigma_ref, background=ctx.background).ranking
            per_row += (time.perf_counter() - t) / len(probe)
        else:
            ranking = np.tile(np.arange(ctx.n_features), (len(probe), 1))
        if "faithfulness" in requested:  # every method's ranking and the random one, scored together
            rng = np.random.default_rng(ctx.random_state)
            stacked = np.stack([ranking] + [np.argsort(rng.random(ranking.shape), axis=1) for _ in wanted])
            t = time.perf_counter()
            pgi2(ctx.forest, probe, stacked, sigma=sigma_ref, background=ctx.background)
            per_row += (time.perf_counter() - t) / len(probe) * len(sigmas)
    except Exception as exc:  # noqa: BLE001 - the methods themselves will report the problem
        return candidates, {"rows": len(candidates), "probe failed": f"{type(exc).__name__}: {exc}"}
    if per_row == 0:
        return candidates, {"estimated seconds per row": per_row, "rows": len(candidates)}
    n = int(time_budget / per_row)
    n = int(np.clip(n, min(10, max_rows), max_rows))
    return ctx.sample_rows(n), {"estimated seconds per row": per_row, "rows": n}


def _local_rows(ctx, rows, n_local) -> list:
    """Explained rows with the highest and lowest output, alternating, ``n_local`` in all."""
    if n_local <= 0 or len(rows) == 0:
        return []
    return runners.extremes_first(rows[np.argsort(ctx.score(ctx.X_test.to_numpy()[rows]), kind="stable")], n_local)


def _explanations_section(section, ctx, methods, n_rows, local_labels, requested, scope="sampled test rows") -> None:
    if not requested:
        section.status, section.reason = "skipped", SKIPPED
        return
    ok = {m.label: m.importance for m in methods.values() if m.status == "ok" and m.importance is not None
          and m.key != "mcr"}
    section.data = {"explained rows": n_rows, "rows scope": scope, "local rows": list(local_labels),
                    "methods": {m.label: {"status": m.status, "reason": m.reason, "params": m.params}
                                for m in methods.values()}}
    if ok:
        section.figures.append(figures.importance_bars(
            f"Global importance of the top features by method (explained output: {ctx.output_label}). SHAP: mean "
            f"|SHAP value|; PG² greedy: mean PG² gain (negative when adding the feature lowers PG²: PG² is not "
            f"monotone in the perturbed set); local MDI: mean impurity decrease; AcME: mean standardised "
            f"effect; DT-Sampler: emergence probability.", ok))
        table = pd.DataFrame(ok)
        table.index.name = "feature"
        lead = next(iter(ok))
        section.tables.append(Table(f"Global importances of every feature, sorted by {lead}.",
                                    table.sort_values(lead, ascending=False)))
    section.figures.extend(methods["dt_sampler"].figures if "dt_sampler" in methods else [])
    section.data["global figures"] = len(section.figures)
    for key in ("shap", "acme"):
        section.figures.extend(methods[key].figures if key in methods else [])


def _faithfulness_section(section, ctx, methods, rows, sigmas, sigma_ref, mc_pairs, cl=None) -> None:
    n_rows = len(rows) if cl is None else cl.n_complete
    rankings = {m.label: m.ranking for m in methods.values() if m.status == "ok" and m.ranking is not None}
    for m in methods.values():
        if m.status == "ok" and m.ranking is None and m.importance is not None:
            order = np.argsort(-m.importance.to_numpy(dtype=float), kind="stable")
            rankings[f"{m.label} (global)"] = np.tile(order, (n_rows, 1)) if cl is None else cl.tile(order)
    if n_rows == 0:
        section.status, section.reason = "not applicable", "no explained rows"
        return
    if cl is None:
        rankings["random"] = faithfulness.random_rankings(ctx, n_rows)
        table, per_row = faithfulness.pgi2_scores(ctx, rows, rankings, sigmas)
        win_rate = faithfulness.win_rates(per_row, sigma_ref)
    else:
        from . import cluster
        from ..distributed import random_rankings

        rankings["random"] = random_rankings(cl.X, ctx.random_state)
        table, win_rate = cluster.pgi2_scores(ctx, cl, rankings, sigmas, sigma_ref)
    winners = faithfulness.winners(table)
    section.data = {"rows": n_rows, "sigmas": sigmas, "pgi2": table, "winners": winners,
                    "win rate": win_rate.to_dict(), "sigma_ref": sigma_ref}
    wide = table.pivot(index="method", columns="sigma", values="mean").loc[list(rankings)]
    sd = table.pivot(index="method", columns="sigma", values="sd").loc[list(rankings)]
    shown = pd.DataFrame({f"σ = {s:g}": [f"{_g(a)} ± {_g(b)}" for a, b in zip(wide[s], sd[s])] for s in sigmas},
                         index=wide.index)
    shown["win rate at σ = %g" % sigma_ref] = [section.data["win rate"].get(m, np.nan) for m in shown.index]
    where = "" if cl is None else " (every complete test row, computed on the Dask cluster)"
    section.tables.append(Table(f"Exact PGI² of each method's per-row ranking: mean ± standard deviation over "
                                f"{n_rows} test rows{where}, per noise level σ (in training standard deviations); "
                                f"win rate: share of rows where the method's ranking scores highest.", shown))
    section.figures.append(figures.pgi2_by_sigma(
        "Exact PGI² per method and σ: mean over the explained rows ± one standard error (log scale); dashed: "
        "random rankings and global rankings applied to every row.",
        table, sigmas))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the model's predictor called on arrays by Monte Carlo
        conv, equal = faithfulness.monte_carlo_convergence(ctx, rows, sigma_ref, mc_pairs)
    section.data.update({"monte carlo": conv, "equal time": equal})
    drawn_from = "" if cl is None else f" (rows drawn from the in-memory sample of {len(ctx.X_test)} test rows)"
    section.figures.append(figures.convergence(
        f"Monte Carlo estimates of PG² against the exact value for {mc_pairs} random (row, S) pairs{drawn_from} at "
        f"σ = {sigma_ref:g}: relative error against the number of samples.", conv, equal.dropna()))
    equal_shown = equal[["row", "|S|", "exact", "exact_seconds", "n_samples", "mc", "relative_error"]].rename(
        columns={"exact_seconds": "exact time (s)", "n_samples": "MC samples in that time",
                 "mc": "MC estimate", "relative_error": "MC relative error"})
    section.tables.append(Table("Exact PG² against Monte Carlo at equal time: the number of model-predictor "
                                "samples that fit in the exact computation's time, and the error they leave.",
                                equal_shown, index=False))


def _g(x) -> str:
    from .render import fmt

    return fmt(x)


def _agreement_section(section, methods, k, n_rows) -> None:
    global_imp = {m.label: m.importance for m in methods.values() if m.status == "ok" and m.importance is not None}
    local = {m.label: m.local_scores for m in methods.values() if m.status == "ok" and m.local_scores is not None}
    if len(global_imp) < 2:
        section.status, section.reason = "not applicable", "fewer than two methods produced importances"
        return
    tau, overlap = agree.global_agreement(global_imp, k)
    section.data = {"k": k, "global tau": tau, "global overlap": overlap,
                    "mean global tau": agree.mean_off_diagonal(tau),
                    "mean global overlap": agree.mean_off_diagonal(overlap)}
    section.figures.append(figures.heatmaps(
        f"Agreement of the global importances: Kendall τ-b (left) and top-{k} overlap (right).",
        {"Kendall τ (global)": tau, f"top-{k} overlap (global)": overlap}))
    if len(local) >= 2:
        ltau, loverlap = agree.local_agreement(local, k)
        section.data.update({"local tau": ltau, "local overlap": loverlap,
                             "mean local tau": agree.mean_off_diagonal(ltau),
                             "mean local overlap": agree.mean_off_diagonal(loverlap), "rows": n_rows})
        section.figures.append(figures.heatmaps(
            f"Agreement of the per-row explanations, averaged over {n_rows} test rows: Kendall τ-b (left) and "
            f"top-{k} overlap (right).", {"Kendall τ (per row)": ltau, f"top-{k} overlap (per row)": loverlap}))
    section.tables.append(Table(f"Kendall τ between global importances (upper triangle) and top-{k} overlap "
                                f"(lower triangle).", _combine(tau, overlap)))


def _combine(upper: pd.DataFrame, lower: pd.DataFrame) -> pd.DataFrame:
    out = upper.copy()
    mask = np.tril(np.ones(out.shape, dtype=bool), k=-1)
    out[:] = np.where(mask, lower.to_numpy(), upper.to_numpy())
    return out


def _mcr_section(section, result, requested) -> None:
    if not requested:
        section.status, section.reason = "skipped", SKIPPED
        return
    if result is None or result.status != "ok":
        section.status = "skipped" if result is None else result.status
        section.reason = SKIPPED if result is None else result.reason
        return
    table = result.extras["table"].copy()
    table["width"] = table["mcr_plus"] - table["mcr_minus"]
    table.index.name = "feature"
    table = table.sort_values("model_reliance", ascending=False)
    widest = table.sort_values("width", ascending=False).head(3)
    section.data = {"table": table, "widest": widest.index.tolist(), "params": result.params}
    section.figures.append(figures.ranges(
        "Model class reliance: the range [MCR−, MCR+] of each feature's reliance over the Rashomon set of "
        "near-optimal forests (bar), and the audited model's own reliance (dot).", result.extras["table"]))
    section.tables.append(Table("Model reliance and MCR range of each feature, by decreasing reliance.", table))


def _summary_section(section, ctx, methods, out) -> None:
    rows = []
    for m in methods.values():
        if m.status == "ok" and m.importance is not None:
            top = m.importance.sort_values(ascending=False, kind="stable").head(3).index.tolist()
            rows.append({"finding": f"Top features: {m.label}", "result": ", ".join(map(str, top))})
        elif m.status != "skipped":
            rows.append({"finding": f"Top features: {m.label}", "result": f"{m.status}: {m.reason}"})
    agreement = out["agreement"].data
    if "mean global tau" in agreement:
        tau = agreement["mean global tau"]
        verdict = "strong" if tau >= 0.6 else "moderate" if tau >= 0.3 else "weak"
        rows.append({"finding": "Do the methods agree?",
                     "result": f"{verdict}: mean pairwise Kendall τ of global importances {_g(tau)}; mean top-"
                               f"{agreement['k']} overlap {_g(agreement['mean global overlap'])}"})
    faith = out["faithfulness"].data
    if "winners" in faith:
        table = faith["pgi2"]
        parts = []
        for sigma, method in faith["winners"].items():
            best = table[(table["method"] == method) & (table["sigma"] == sigma)]["mean"].iloc[0]
            rand = table[(table["method"] == "random") & (table["sigma"] == sigma)]["mean"].iloc[0]
            parts.append(f"σ = {sigma:g}: {method} (PGI² {_g(best)} vs random {_g(rand)})")
        rows.append({"finding": "PGI² winner (most faithful ranking)", "result": "; ".join(parts)})
    mcr = out["mcr"]
    if mcr.status == "ok":
        table = mcr.data["table"]
        rows.append({"finding": "Features with the widest MCR ranges",
                     "result": "; ".join(f"{f} [{_g(table.loc[f, 'mcr_minus'])}, {_g(table.loc[f, 'mcr_plus'])}]"
                                         for f in mcr.data["widest"])})
    else:
        result = f"not computed ({mcr.reason})" if mcr.status == "skipped" else f"{mcr.status}: {mcr.reason}"
        rows.append({"finding": "Features with the widest MCR ranges", "result": result})
    performance = out["model"].tables
    if performance:
        frame = performance[0].frame
        first = frame.index[0]
        rows.append({"finding": f"Test {first}", "result": _g(frame.loc[first, "test"])})
    section.data = {"findings": rows}
    section.tables.append(Table(f"Key findings. Every method explains {ctx.output_label}.",
                                pd.DataFrame(rows), index=False))


def _limitations(ctx, methods, parameters) -> list:
    items = []
    if ctx.forest.output_space == "margin":
        items.append("This is a boosted classifier: PG², PGI², the greedy ranking, SHAP and AcME here all explain "
                     "the margin (log-odds), where the exact closed form holds. PG² of the probability has no exact "
                     "leaf-pair form and would need Monte Carlo.")
    elif ctx.forest.output_space == "probability":
        items.append("This is a random-forest classifier: every method explains the predicted probability of the "
                     "positive class, which is a mean of leaf class fractions, so PG² and PGI² are exact on it.")
    else:
        items.append("Regression model: every method explains the raw model output; PG² and PGI² are exact.")
    items.append("PG² perturbs features with independent Gaussian noise of σ training standard deviations; "
                 "correlated features are perturbed independently, which can create unrealistic inputs. PGI² "
                 "measures faithfulness to the model, not to the data-generating process.")
    items.append(f"The greedy PG² ranking is computed at σ = {parameters['greedy PG² σ']:g} only and reused at "
                 "the other σ; by construction it tends to favour itself in PGI² at that σ.")
    items.append("Local MDI is the impurity decrease along the row's own decision path, averaged over trees, "
                 "using the node impurities stored at training time (Gini, entropy or variance); it describes how "
                 "the model was fitted, not how the prediction responds to the feature, and is available for "
                 "scikit-learn trees only.")
    if "in-memory sample (rows)" in parameters:
        items.append(f"Computed on a Dask cluster: the per-row methods (greedy PG², local MDI, TreeSHAP, AcME) and "
                     f"the PGI² scores cover every complete test row ({parameters.get('explained rows', 0)} rows; "
                     "max_rows and time_budget were ignored). The data summary's distribution, the performance "
                     "metrics, the per-row agreement, DT-Sampler without training data and the Monte Carlo comparison "
                     f"use a random sample of {parameters['in-memory sample (rows)']} test rows and carry sampling "
                     "error.")
    else:
        items.append(f"Per-row sections use {parameters.get('explained rows', 0)} test rows drawn at random among "
                     f"those without missing values (TreeSHAP's global importance up to {parameters['max_shap_rows']} "
                     "rows); numbers from samples carry sampling error.")
    dts = methods.get("dt_sampler")
    if dts is not None and dts.status == "ok":
        items.append(f"DT-Sampler explains the model's predicted classes on {dts.params['rows']} rows, restricted "
                     f"to the {dts.params['features']} features the model splits on most ("
                     f"{', '.join(map(str, dts.extras['features']))}); other features get importance 0.")
    items.append("MCR ranges cover the Rashomon set explored by the MCR procedure (bootstrap=False random "
                 "forests); they are estimates from permutation, not guarantees.")
    items.append("Kendall τ-b counts ties; top-k overlap ignores the order inside the top k.")
    return items
