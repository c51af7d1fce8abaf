"""Audit run times against their targets, beside the previous main.

Workloads (every section, HTML and PDF; datasets from ``../shared/datasets``):

- ``demos``: the two numeric demo audits of ``xai-audit`` (no arguments: diabetes regression, breast-cancer
  classification; the third, the categorical Pipeline, is left out), together; target ≤ 30 s;
- ``wine``: red wine quality as a 6-class RandomForestClassifier (``bootstrap=False``, fully grown, 63 trees:
  25,748 leaves, the size of a reviewer's ~25,676-leaf forest; 100 trees would give 40,813), 80/20 split,
  ``random_state=0``, 320 test rows; target ≤ 180 s;
- ``california``: California housing, numeric columns only (``ocean_proximity`` dropped, ``total_bedrooms``
  NaN kept: LightGBM routes it), LightGBM regressor with early stopping (learning rate 0.05, 50 rounds of
  patience on a 20 % validation split of the training rows); target ≤ 120 s;
- ``compas``: COMPAS two-year recidivism, XGBoost classifier (200 trees of depth 4); ``sex``, ``race`` and
  ``c_charge_degree`` coded as integers (the audit refuses pandas category columns for now), ``decile_score``
  (COMPAS's own score) dropped, protected ``race`` and ``sex``; target ≤ 30 s;
- ``wine-deep`` and ``compas-pipeline``: the deep forests of ``bench_greedy.py``, audited with every default
  section: wine as a 6-class forest of 200 fully grown trees (56,652 leaves), COMPAS through a one-hot Pipeline
  in front of 200 trees with ``min_samples_leaf=5`` (46,177 leaves; ``race`` and ``sex`` protected); target ≤ 180 s.

Per workload: the run-time plan's estimate, the explained rows, the audit's wall time (computation, then
HTML and PDF), the plan (CPU seconds of one thread) against the measured CPU seconds of every section of a
second or more (the process's threads: the C core's loops run on every core) and against its wall seconds, what the
archival PDF/A-3b and a signed manifest add beside a plain PDF of the same HTML, and the main sections'
timings; with ``--ref DIR`` the same workload audited by the build in
DIR (e.g. ``/work/oldmain``, the previous main) in a subprocess (:mod:`_builds`), its wall time beside.

Run: python benchmarks/bench_audit.py [--only demos wine california compas wine-deep compas-pipeline]
[--ref DIR [--ref-only NAME ...]]
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
TARGETS = {"demos": 30.0, "wine": 180.0, "california": 120.0, "compas": 30.0, "wine-deep": 180.0,
           "compas-pipeline": 180.0}


def _split(frame: pd.DataFrame, y):
    from sklearn.model_selection import train_test_split

    X_train, X_test, y_train, y_test = train_test_split(frame, y, test_size=0.2, random_state=0)
    return X_train, X_test, y_train, y_test


def wine():
    """(title, [(model, X_test, y_test, X_train, y_train, options)]): the 6-class wine forest."""
    from sklearn.ensemble import RandomForestClassifier

    frame = pd.read_csv(DATA / "winequality_red.csv", sep=";")
    y = frame.pop("quality").to_numpy()
    X_train, X_test, y_train, y_test = _split(frame, y)
    model = RandomForestClassifier(n_estimators=63, bootstrap=False, random_state=0).fit(X_train, y_train)
    return "Wine quality, 6-class random forest", [(model, X_test, y_test, X_train, y_train, {})]


def california():
    """The California LightGBM regressor with early stopping."""
    import lightgbm as lgb

    frame = pd.read_csv(DATA / "california_housing.csv").drop(columns="ocean_proximity")
    y = frame.pop("median_house_value").to_numpy()
    X_train, X_test, y_train, y_test = _split(frame, y)
    X_fit, X_val, y_fit, y_val = _split(X_train, y_train)
    model = lgb.LGBMRegressor(n_estimators=5000, learning_rate=0.05, random_state=0, verbose=-1, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_fit, y_fit, eval_set=[(X_val, y_val)], callbacks=[lgb.early_stopping(50, verbose=False)])
    return "California housing, LightGBM", [(model, X_test, y_test, X_train, y_train, {})]


def compas():
    """The COMPAS XGBoost classifier, race and sex protected."""
    import xgboost as xgb

    frame = pd.read_csv(DATA / "compas_two_years.csv").dropna()
    y = frame.pop("two_year_recid").to_numpy()
    frame = frame.drop(columns=["decile_score"])
    for column in ("sex", "race", "c_charge_degree"):
        frame[column] = frame[column].astype("category").cat.codes.astype(float)
    X_train, X_test, y_train, y_test = _split(frame, y)
    model = xgb.XGBClassifier(n_estimators=200, max_depth=4, learning_rate=0.1, random_state=0, n_jobs=1)
    model.fit(X_train, y_train)
    return "COMPAS recidivism, XGBoost", [(model, X_test, y_test, X_train, y_train, {"protected": ("race", "sex")})]


def wine_deep():
    """The 6-class wine forest of 200 fully grown trees (56,652 leaves) of ``bench_greedy.py``."""
    from bench_greedy import deep_forest

    model, X_train, X_test, y_train, y_test = deep_forest("wine")
    return "Wine quality, 200 fully grown trees", [(model, X_test, y_test, X_train, y_train, {})]


def compas_pipeline():
    """COMPAS through the one-hot Pipeline and 200-tree forest (46,177 leaves) of ``bench_greedy.py``, race and sex
    protected."""
    from bench_greedy import deep_forest

    model, X_train, X_test, y_train, y_test = deep_forest("compas")
    return "COMPAS, one-hot Pipeline and forest", [(model, X_test, y_test, X_train, y_train,
                                                     {"protected": ("race", "sex")})]


def demos():
    """The two demo audits of ``xai-audit``."""
    from xai_plugins.cli import demo_models

    return "the two demo audits", [(model, X_test, y_test, X_train, y_train, {"title": title})
                                   for _, title, model, X_test, y_test, X_train, y_train in demo_models()[:2]]


WORKLOADS = {"demos": demos, "wine": wine, "california": california, "compas": compas, "wine-deep": wine_deep,
             "compas-pipeline": compas_pipeline}


def run(name: str, out: Path) -> dict:
    """Audit workload ``name`` with the xai_plugins on the path: wall seconds (computation, rendering), explained
    rows, the plan's estimate (None for a build without one) and the slowest sections."""
    from xai_plugins.report import audit

    title, cases = WORKLOADS[name]()
    record = {"audit": 0.0, "render": 0.0, "rows": [], "estimate": None, "sections": {}, "pdf": 0.0,
              "plain pdf": None, "sign": None}
    for i, (model, X_test, y_test, X_train, y_train, options) in enumerate(cases):
        t0 = time.perf_counter()
        result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, progress=False, **options)
        t1 = time.perf_counter()
        html = result.to_html(out / f"{name}{i}.html")
        given = {"html": html} if "html" in inspect.signature(result.to_pdf).parameters else {}  # older builds
        t2 = time.perf_counter()
        result.to_pdf(out / f"{name}{i}.pdf", **given)                                        # render it again
        record["pdf"] += time.perf_counter() - t2
        record["audit"] += t1 - t0
        record["render"] += time.perf_counter() - t1
        if getattr(result.options, "pdf_variant", None) is not None:    # archival by default: its cost beside
            record["plain pdf"] = (record["plain pdf"] or 0.0) + _plain_pdf_seconds(result, html)   # a plain PDF
            record["sign"] = (record["sign"] or 0.0) + _sign_seconds(result, out / f"{name}{i}")
        record["rows"].append(result.rows_explained)
        plan = getattr(result, "plan", None)
        if plan is not None:
            record["estimate"] = (record["estimate"] or 0.0) + plan.seconds
            record.setdefault("planned", {})
            for key, section in result.sections.items():       # plan against measured, section by section
                was = record["planned"].get(key, (0.0, 0.0, 0.0))
                record["planned"][key] = (was[0] + plan.estimate(key), was[1] + getattr(section, "cpu_seconds", 0.0),
                                          was[2] + section.seconds)
        for key, seconds in result.sections["reproducibility"].data["timings"].items():
            record["sections"][key] = record["sections"].get(key, 0.0) + seconds
    return record


def _plain_pdf_seconds(result, html: str) -> float:
    """Seconds to render the same HTML as a plain PDF (``pdf_variant=None``)."""
    plain = copy.copy(result)
    plain.options = result.options.replace(pdf_variant=None)
    t0 = time.perf_counter()
    plain.to_pdf(html=html)
    return time.perf_counter() - t0


def _sign_seconds(result, stem: Path) -> float:
    """Seconds to write the JSON and a manifest of the reports and sign it with a fresh Ed25519 key."""
    from xai_plugins.report.manifest import content_hashes, write_manifest
    from xai_plugins.report.record import generate_key, load_private_key, sign_manifest

    key_path = stem.with_name(stem.name + ".key.pem")
    key_path.unlink(missing_ok=True)
    key_path.with_name(key_path.stem + ".pub.pem").unlink(missing_ok=True)
    generate_key(key_path)
    key = load_private_key(key_path)
    t0 = time.perf_counter()
    result.to_json(stem.with_suffix(".json"))
    outputs = [stem.with_suffix(s) for s in (".html", ".pdf", ".json")]
    manifest = write_manifest(stem.with_suffix(".manifest.json"), [], outputs, content_hashes(result))
    sign_manifest(manifest, key, "benchmark")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    ap.add_argument("--ref", type=Path, help="another build (e.g. /work/oldmain), audited in a subprocess")
    ap.add_argument("--ref-only", nargs="+", choices=list(WORKLOADS),
                    help="the workloads the reference build runs (default: every one of --only)")
    ap.add_argument("--worker", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    ap.add_argument("--out", help="folder for the reports (default: a temporary folder)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp())
    if args.worker:
        print(json.dumps(run(args.worker, out)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _builds import in_subprocess

    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"{os.cpu_count()} cores; reports in {out}")
    for name in args.only:
        mine = run(name, out)
        total = mine["audit"] + mine["render"]
        estimate = "" if mine["estimate"] is None else f", plan ≈ {mine['estimate']:.0f} s"
        verdict = "met" if total <= TARGETS[name] else "NOT met"
        line = (f"{name}: {total:.1f} s (audit {mine['audit']:.1f} + HTML/PDF {mine['render']:.1f}; rows explained "
                f"{mine['rows']}{estimate}); target ≤ {TARGETS[name]:g} s: {verdict}")
        archival = ""
        if mine["plain pdf"] is not None:
            extra = mine["pdf"] - mine["plain pdf"] + mine["sign"]
            archival = (f"   archival PDF/A-3b and signature: +{extra:.2f} s = {100 * extra / total:.1f} % of the "
                        f"audit (PDF/A-3b {mine['pdf']:.2f} s, a plain PDF of the same HTML {mine['plain pdf']:.2f} s; "
                        f"manifest + signature {mine['sign']:.2f} s)")
        if args.ref is not None and name in (args.ref_only or args.only):
            ref = in_subprocess(__file__, args.ref, "--worker", name, "--out", str(out / "ref"))
            ref_total = ref["audit"] + ref["render"]
            line += f"; {args.ref}: {ref_total:.1f} s (rows {ref['rows']}), ratio {ref_total / total:.1f}x"
        print(line)
        if archival:
            print(archival)
        slow = sorted(mine["sections"].items(), key=lambda kv: -kv[1])[:6]
        print("   " + "; ".join(f"{k} {v:.1f} s" for k, v in slow))
        planned = {k: v for k, v in mine.get("planned", {}).items() if max(v) >= 1.0}     # sections of 1 s or more
        if planned:
            print("   plan / measured CPU per section (s), then / wall: " + "; ".join(
                f"{k} {p:.1f} / {c:.1f} ({p / max(c, 1e-9):.2f}), / {w:.1f} ({p / max(w, 1e-9):.2f})"
                for k, (p, c, w) in planned.items()))
        print(f"   load average now {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
