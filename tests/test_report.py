"""Audit report: gathered numbers, HTML escaping, PDF content, no network access."""

import json
import re
import socket

import numpy as np
import pandas as pd
import pytest
from markupsafe import escape
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier

from xai_plugins.report import OPTIONAL_SECTIONS, RENDER_ORDER, audit
from xai_plugins.report.context import make_context
from xai_plugins.report.render import DataOnlyFetcher, RefusedURLError, fmt, html_to_pdf
from xai_plugins.report.sections import title

EVIL = "<script>alert(1)</script>"
TITLE = "Credit <b>model</b> v3"


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6].rename(columns={"mean smoothness": EVIL})
    return X.iloc[:300], y.iloc[:300], X.iloc[300:420], y.iloc[300:420]


@pytest.fixture(scope="module")
def report(data):
    X_train, y_train, X_test, y_test = data
    model = RandomForestClassifier(n_estimators=10, max_depth=3, bootstrap=False, random_state=0).fit(X_train, y_train)
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sigma=[0.1, 0.3, 1.0], title=TITLE,
              random_state=0, max_rows=12, max_shap_rows=60, dt_sampler_samples=4, dt_sampler_rows=40,
              mcr_permutations=2, progress=False)
    html = a.to_html()
    return a, html


@pytest.fixture(scope="module")
def pdf_text(report):
    import io

    import pypdf

    pdf = report[0].to_pdf()
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    return len(reader.pages), " ".join(page.extract_text() for page in reader.pages)


def test_every_section_is_present_and_computed(report):
    a, html = report
    assert list(a.sections) == list(RENDER_ORDER)
    for key, section in a.sections.items():
        assert title(key) in html
        # skipped: no protected attribute, not asked for (regulatory, decisions), no challenger
        expected = "skipped" if key in ("fairness", "regulatory", "comparison", "decisions") else "ok"
        assert section.status == expected, (key, section.reason)
    for key in ("shap", "pg2", "local_mdi", "acme", "dt_sampler", "mcr"):
        assert a.methods[key].status == "ok", (key, a.methods[key].reason)


def test_html_shows_the_audit_numbers(report):
    a, html = report
    table = a.sections["faithfulness"].data["pgi2"]
    for _, row in table.iterrows():
        assert f"{fmt(row['mean'])} ± {fmt(row['sd'])}" in html
    performance = a.sections["model"].tables[0].frame
    assert fmt(performance.loc["accuracy", "test"]) in html
    assert fmt(a.sections["agreement"].data["mean global tau"]) in html
    assert "the predicted probability of class 1" in html
    assert a.sections["faithfulness"].data["rows"] == 12


def test_the_share_of_pg2_says_why_it_can_exceed_100_percent(report):
    """A share of 103 % is no bug: PG² is not monotone in the perturbed set, and the caption says so."""
    caption = report[0].sections["faithfulness"].tables[0].caption
    assert "dimensionless share" in caption and "above 100% where perturbing the top-ranked features alone" in caption


def test_the_rashomon_criterion_judges_the_widest_range_against_the_constant_prediction_loss(report, data):
    y_train = data[1]
    loss, name = report[0].sections["mcr"].data["constant loss"]
    assert name == "misclassification rate" and loss == pytest.approx(1 - y_train.value_counts(normalize=True).max())
    rashomon = next(c for c in report[0].verdict.criteria if c.kind == "Rashomon sensitivity")
    assert f"× {loss:.4g}, the training misclassification rate of the best constant prediction" in rashomon.explanation


def test_pgi2_beats_random_and_greedy_wins_at_its_sigma(report):
    table = report[0].sections["faithfulness"].data["pgi2"].set_index(["method", "sigma"])["mean"]
    assert table[("PG² greedy (reference)", 0.3)] > table[("random", 0.3)]
    assert table[("PG² greedy (reference)", 0.3)] >= table[("SHAP", 0.3)] * 0.999


def test_user_text_is_escaped(report):
    a, html = report
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert TITLE not in html and "Credit &lt;b&gt;model&lt;/b&gt; v3" in html
    assert not re.search(r"<script", html, re.IGNORECASE)


def test_html_is_self_contained(report):
    html = report[1]
    sources = re.findall(r'(?:src|href)="([^"#][^"]*)"', html)
    assert sources and all(s.startswith("data:") for s in sources)


def test_audit_exports_json(report):
    a = report[0]
    payload = json.loads(a.to_json())
    assert set(payload["sections"]) == set(RENDER_ORDER)
    assert payload["sections"]["faithfulness"]["data"]["rows"] == 12
    assert payload["methods"]["shap"]["importance"][EVIL] >= 0


def test_pdf_pages_and_text(pdf_text):
    n_pages, text = pdf_text
    assert 8 <= n_pages <= 30
    flat = re.sub(r"\s+", " ", text)
    for key in RENDER_ORDER:
        assert title(key) in flat, key
    assert "Page 1 of" in flat


def test_pdf_rendering_never_touches_the_network(monkeypatch):
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("network access during PDF rendering")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    html = ('<html><head><link rel="stylesheet" href="https://example.com/x.css"></head><body>'
            '<p>x</p><img src="http://example.com/x.png"><img src="file:///etc/hostname">'
            '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'
            'YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="></body></html>')
    fetcher = DataOnlyFetcher()
    pdf = html_to_pdf(html, fetcher)
    assert pdf.startswith(b"%PDF")
    assert calls == []
    assert set(fetcher.refused) == {"https://example.com/x.css", "http://example.com/x.png", "file:///etc/hostname"}


def test_fetcher_raises_for_non_data_urls():
    fetcher = DataOnlyFetcher()
    with pytest.raises(RefusedURLError):
        fetcher.fetch("http://example.com/x.png")
    assert fetcher.refused == ["http://example.com/x.png"]


def test_skipped_sections_and_inapplicable_methods_are_reported():
    xgboost = pytest.importorskip("xgboost")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X[:300], y[:300])
    a = audit(model, X[300:], y[300:], X_train=X[:300], y_train=y[:300], sections=["explanations", "mcr"],
              explainers=["shap", "local_mdi", "dt_sampler", "mcr"], max_rows=10, progress=False)
    html = a.to_html()
    for key in ("faithfulness", "agreement", "regulatory", "decisions"):
        assert a.sections[key].status == "skipped"
    assert html.count("Not computed (skipped by user).") == 4
    assert a.methods["pg2"].status == "skipped"
    assert a.methods["local_mdi"].status == "not applicable"
    assert "regression" in a.methods["dt_sampler"].reason
    assert a.sections["mcr"].status == "not applicable" and "RandomForest" in a.sections["mcr"].reason
    assert "Not applicable: " + str(escape(a.sections["mcr"].reason)) in html


def test_bad_options_are_refused(data):
    X_train, y_train, X_test, y_test = data
    model = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X_train, y_train)
    with pytest.raises(ValueError, match="unknown sections"):
        audit(model, X_test, y_test, sections=["nope"], progress=False)
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['max_row'\]"):
        audit(model, X_test, y_test, max_row=5)
    with pytest.raises(ValueError, match="max_rows must be an integer"):
        audit(model, X_test, y_test, max_rows=0)
    from xai_plugins.report import AuditOptions

    with pytest.raises(ValueError, match="time_budget must be a positive number"):
        AuditOptions(time_budget=0)
    with pytest.raises(ValueError, match="do not match.*missing"):
        audit(model, X_test.iloc[:, 1:], y_test, progress=False)
    from xai_plugins.report.context import make_context

    reordered = make_context(model, X_test.iloc[:, ::-1], y_test, X_train=X_train.iloc[:, ::-1])
    pd.testing.assert_frame_equal(reordered.X_test, make_context(model, X_test, y_test).X_test)
    assert list(reordered.X_train.columns) == list(X_train.columns)
    assert set(OPTIONAL_SECTIONS) < set(RENDER_ORDER)


def test_boosted_classifiers_are_explained_on_the_margin():
    xgboost = pytest.importorskip("xgboost")
    X, y = load_breast_cancer(return_X_y=True)
    model = xgboost.XGBClassifier(n_estimators=5, max_depth=2).fit(X, y)
    ctx = make_context(model, X[:20], y[:20])
    assert ctx.output_label == "the margin (log-odds) of class 1"
    np.testing.assert_allclose(ctx.score(X[:20]), model.predict(X[:20], output_margin=True), rtol=1e-6)


def test_mcr_ranges_are_reported(report):
    a, html = report
    table = a.sections["mcr"].data["table"]
    assert list(table.columns[:3]) == ["mcr_minus", "model_reliance", "mcr_plus"]
    assert (table["mcr_minus"] <= table["mcr_plus"] + 1e-12).all()
    assert "Features with the widest model class reliance ranges" in html
    assert fmt(table["model_reliance"].iloc[0]) in html


def test_mcr_for_unsupported_models_says_why_or_fits_a_rashomon_forest(data):
    xgboost = pytest.importorskip("xgboost")
    X_train, y_train, X_test, y_test = data
    X_train, X_test = (X.rename(columns={EVIL: "mean smoothness"}) for X in (X_train, X_test))  # xgboost refuses "<"
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=2).fit(X_train, y_train)
    kwargs = dict(X_train=X_train, y_train=y_train, explainers=["local_mdi", "mcr"], sections=["mcr"],
                  mcr_permutations=2, progress=False)
    refused = audit(model, X_test, y_test, **kwargs)
    assert refused.sections["mcr"].status == "not applicable"
    assert "XGBClassifier" in refused.sections["mcr"].reason and "mcr_fit_forest" in refused.sections["mcr"].reason
    assert "not applicable" in refused.to_html()

    fitted = audit(model, X_test, y_test, mcr_fit_forest=True, **kwargs)
    mcr = fitted.sections["mcr"]
    assert mcr.status == "ok", mcr.reason
    assert "fitted on the training data for this audit" in mcr.data["params"]["forest"]
    table = mcr.data["table"]
    assert list(table.index.sort_values()) == sorted(X_train.columns)
    assert (table["mcr_minus"] <= table["model_reliance"] + 1e-12).all()
    assert (table["model_reliance"] <= table["mcr_plus"] + 1e-12).all()
    assert "for this audit" in fitted.to_html()


def test_mcr_epsilon_reaches_the_rashomon_set(data):
    X_train, y_train, X_test, y_test = data
    model = RandomForestClassifier(n_estimators=20, max_depth=3, bootstrap=False, random_state=0).fit(X_train, y_train)
    kwargs = dict(X_train=X_train, y_train=y_train, explainers=["local_mdi", "mcr"], sections=["mcr"],
                  mcr_permutations=2, progress=False)
    exact = audit(model, X_test, y_test, **kwargs).sections["mcr"]
    loose = audit(model, X_test, y_test, mcr_epsilon=0.05, **kwargs).sections["mcr"]
    assert exact.data["params"]["Rashomon tolerance ε"] == 0 and loose.data["params"]["Rashomon tolerance ε"] == 0.05
    def width(section):
        return (section.data["table"]["mcr_plus"] - section.data["table"]["mcr_minus"]).sum()

    assert width(loose) > width(exact)


def test_fmt():
    assert fmt(None) == "–" and fmt(float("nan")) == "–"
    assert fmt(1234) == "1,234" and fmt(3.0) == "3"
    assert fmt(0.123456) == "0.1235" and fmt(1e-7) == "1e-07"
    assert fmt([0.1, 2]) == "0.1, 2"


def test_a_failing_computation_is_reported_not_fatal(monkeypatch):
    from sklearn.ensemble import GradientBoostingRegressor

    from xai_plugins.report import pgi2_of_rankings as faithfulness

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(faithfulness, "pgi2_scores", broken)
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = GradientBoostingRegressor(n_estimators=5, max_depth=2).fit(X[:300], y[:300])
    X_test = X[300:320].copy()
    X_test.iloc[0, 2] = np.nan   # the model itself cannot predict this row
    a = audit(model, X_test, y[300:320], X_train=X[:300], y_train=y[:300], max_rows=50, time_budget=None,
              explainers=["shap", "pg2", "local_mdi"], sections=["explanations", "faithfulness"], progress=False)
    assert a.parameters["explained rows"] == 19        # complete rows only
    assert a.methods["pg2"].status == "ok"
    assert a.sections["faithfulness"].status == "failed" and "boom" in a.sections["faithfulness"].reason
    assert "NaN" in a.sections["model"].data["performance note"]
    assert a.sections["data"].data["missing values"] == 1
    html = a.to_html()
    assert "Failed: RuntimeError: boom" in html and "Predictive performance: not computed (ValueError" in html


def test_summary_means_carry_intervals_and_counts(report):
    a, html = report
    findings = {row["finding"]: row["result"] for row in a.sections["summary"].data["findings"]}
    agreement = findings["Do the methods agree?"]
    assert "6 features" in agreement and "95% CI [" in agreement and "12 rows" in agreement
    faithful = [v for k, v in findings.items() if k.startswith("Highest mean PGI² among the explainers at σ = 0.3")][0]
    assert faithful.count("95% CI [") == 3                  # the winner, the random floor, the greedy reference
    per_row = a.sections["faithfulness"].result.pgi2[0.3]["random"]
    assert f"random floor {fmt(float(np.mean(per_row)))} (95% CI [" in faithful
    assert "greedy" not in faithful.split(":")[0].lower()   # the greedy reference is never named the most faithful


def test_importing_the_report_keeps_the_users_backend():
    import subprocess
    import sys

    code = ("import matplotlib; matplotlib.use('svg'); import xai_plugins.report, xai_plugins.report.figures; "
            "print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "svg"


def test_audit_leaves_no_pyplot_figure_open(report):
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []          # the module fixture drew every figure, waterfall and AcME included


def test_rows_are_named_by_position_and_index(report, data):
    a, html = report
    X_test = data[2]
    labels = a.sections["explanations"].data["local rows"]
    assert len(labels) == 2
    for label in labels:
        position, index = re.fullmatch(r"(\d+) of (\d+) \(index (\d+)\)", label).group(1, 3)
        assert int(label.split(" of ")[1].split()[0]) == len(X_test)
        assert X_test.index[int(position) - 1] == int(index)     # position is 1-based, the index is the label
        assert f"test row {label}" in html


def test_numeric_headers_align_with_their_numbers(report):
    html = report[1]
    performance = html[html.index("Predictive performance on the test"):]
    header = performance[:performance.index("</thead>")]
    assert '<th class="num">test</th>' in header and '<th class="num">training</th>' in header
    assert "thead th.num { text-align: right; }" in html


def test_shap_waterfalls_are_short_enough_to_share_a_page(report):
    """shap draws 10 bars 6.5 inches high: at the report's scale two waterfalls after a figure left a page
    half empty; the report draws them WATERFALL_HEIGHT inches high, so each is at most ~4 inches shown."""
    import base64
    import io

    from PIL import Image

    a, _ = report
    waterfalls = [f for f in a.sections["explanations"].raw["local figures"] if f.caption.startswith("SHAP waterfall")]
    assert len(waterfalls) == 2
    for f in waterfalls:
        width, height = Image.open(io.BytesIO(base64.b64decode(f.uri.split(",", 1)[1]))).size
        assert f.width_in * height / width <= 3.0           # displayed height in inches (shap's own: ~3.9)
