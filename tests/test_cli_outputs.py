"""What ``xai-audit`` and the Audit's save calls show the user: output paths checked before any
computation (one clear line, exit status 2), and ``--quiet`` silencing every progress bar."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes

import xai_plugins.report as report
from xai_plugins import errors
from xai_plugins.cli import main
from xai_plugins.prediction_gap import _exact

xgboost = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_outputs")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :4]
    X.iloc[200:260].assign(y=y.iloc[200:260]).to_csv(root / "test.csv", index=False)
    xgboost.XGBRegressor(n_estimators=6, max_depth=3).fit(X.iloc[:200], y.iloc[:200]).save_model(root / "model.json")
    return root


class AuditStarted(Exception):
    """Raised by the fake audit: the run got past the output checks into the computation."""


def _no_audit(*args, **kwargs):
    raise AuditStarted("the audit started computing before the output paths were checked")


def _run(capsys, files, *extra):
    code = main([str(a) for a in ("--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                                  *extra)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_unwritable_out_fails_before_computing(files, capsys, monkeypatch):
    # /proc refuses new folders even to root, for whom os.access ignores the permission bits
    out = "/proc/xai-audit-out"
    monkeypatch.setattr(report, "audit", _no_audit)
    code, stdout, err = _run(capsys, files, "--out", out, "--quiet")
    assert code == 2 and stdout == ""
    assert err.startswith("xai-audit: error: cannot create the output folder") and out in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unwritable_report_file_fails_before_computing(files, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(report, "audit", _no_audit)
    (tmp_path / "model.pdf").mkdir()        # the PDF the run would write is a folder
    code, _, err = _run(capsys, files, "--out", tmp_path, "--quiet")
    assert code == 2 and "model.pdf" in err and "is a folder" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(AuditStarted):     # no PDF: nothing in the way, the run gets to the (fake) audit
        _run(capsys, files, "--out", tmp_path, "--quiet", "--no-pdf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pdf"]     # the check left nothing behind


def test_demo_checks_both_audits_files(capsys, monkeypatch, tmp_path):
    import xai_plugins.cli as cli

    monkeypatch.setattr(cli, "demo_models", lambda *a: pytest.fail("the demo models were fitted before --out was "
                                                                   "checked"))
    (tmp_path / "demo_breast_cancer_classification.json").mkdir()
    code = main(["--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "demo_breast_cancer_classification.json" in err


def test_save_calls_check_the_path_before_rendering(monkeypatch, tmp_path):
    import xai_plugins.report.render as render

    result = report.Audit("t", {}, {}, {}, "now")
    monkeypatch.setattr(render, "render_html", lambda *a: pytest.fail("rendered before the path was checked"))
    monkeypatch.setattr(render, "html_to_pdf", lambda *a: pytest.fail("rendered before the path was checked"))
    (tmp_path / "taken").mkdir()
    for save in (result.to_html, result.to_pdf, result.to_json):
        with pytest.raises(errors.OutputPathError, match="is a folder") as info:
            save(tmp_path / "taken")
        assert isinstance(info.value, errors.XaiError) and isinstance(info.value, OSError)
        with pytest.raises(errors.OutputPathError, match="cannot create the output folder"):
            save("/proc/xai-audit-out/report.html")


def test_check_leaves_existing_files_untouched(tmp_path):
    from xai_plugins.report.options import check_output_paths

    kept = tmp_path / "kept.html"
    kept.write_text("old report")
    check_output_paths([kept, tmp_path / "new" / "deeper" / "a.json"])
    assert kept.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.html"]


def test_quiet_prints_no_progress_bar(files, capfd, monkeypatch, tmp_path):
    # every PG² call long enough for a bar: the greedy ranking and the PGI² scores show one unless quiet
    monkeypatch.setattr(_exact, "PROGRESS_AFTER", -1.0)
    flags = ["--model", files / "model.json", "--data", files / "test.csv", "--target", "y", "--no-pdf",
             "--sections", "explanations", "faithfulness", "--explainers", "pg2", "--max-rows", "4", "--mc-pairs", "0",
             "--sigma", "0.3"]
    assert main([str(a) for a in flags + ["--out", tmp_path / "loud"]]) == 0
    loud = capfd.readouterr().err
    assert "greedy PG² ranking" in loud and "PGI²" in loud       # the bars exist when not quiet
    assert main([str(a) for a in flags + ["--out", tmp_path / "quiet", "--quiet"]]) == 0
    captured = capfd.readouterr()
    assert captured.err == ""
    assert "wrote" in captured.out


def test_quiet_audit_api(monkeypatch, capfd):
    monkeypatch.setattr(_exact, "PROGRESS_AFTER", -1.0)
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :4]
    model = xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X.iloc[:150], y.iloc[:150])
    result = report.audit(model, X.iloc[150:190], y.iloc[150:190], sections=("faithfulness",), explainers=("pg2",),
                          max_rows=3, mc_pairs=0, progress=False)
    assert capfd.readouterr().err == ""
    assert isinstance(result.sections["faithfulness"].data, dict)
    assert np.isfinite(pd.Series(result.methods["pg2"].importance)).all()


def test_the_cli_renders_the_html_once_for_the_html_and_the_pdf(files, monkeypatch, tmp_path):
    """The PDF is made from the HTML just written (rendering it twice cost the demos ~0.3 s each)."""
    from xai_plugins.report import render

    calls = []
    real = render.render_html
    monkeypatch.setattr(render, "render_html", lambda a: calls.append(1) or real(a))
    flags = ["--model", files / "model.json", "--data", files / "test.csv", "--target", "y", "--quiet",
             "--sections", "explanations", "--explainers", "pg2", "--max-rows", "4", "--out", tmp_path]
    assert main([str(a) for a in flags]) == 0
    assert len(calls) == 1
    html = (tmp_path / "model.html").read_text(encoding="utf-8")
    assert (tmp_path / "model.pdf").read_bytes().startswith(b"%PDF") and "</html>" in html
