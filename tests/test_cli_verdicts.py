"""What a person sees of the verdicts outside the report: one line per verdict object (``print``), the
verdicts printed by every ``xai-audit`` run (the demo too), the notebook view's left-aligned table, and a
notebook without ipywidgets getting a plain progress bar and no tqdm warning."""

import subprocess
import sys
import textwrap

import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins.cli as cli
import xai_plugins.report as report
from xai_plugins.report import verdict as vd

CHANCE = ("Test balanced accuracy 0.48 (95% CI [0.40, 0.55]) is at or below chance (0.5): the model does not "
          "predict the test data. The model's predictions should not be used.")


def _verdict() -> vd.Verdict:
    return vd.Verdict.from_criteria([
        vd.Criterion("Predictive adequacy", vd.FAIL, 0.48, None, "", CHANCE, kind="predictive adequacy"),
        vd.not_assessed("Drift between training and test data", "drift", "no training data was given"),
        vd.Criterion("Agreement between explainers", vd.PASS, 0.7, None, "", "Mean Kendall τ 0.7.", kind="agreement"),
    ])


def test_verdict_objects_print_as_one_line():
    verdict = _verdict()
    fitness = ("model fitness: FAIL — Predictive adequacy (fail): Test balanced accuracy 0.48 (95% CI [0.40, 0.55]) is "
               "at or below chance (0.5): the model does not predict the test data (and 1 more not passing)")
    assert str(verdict.model_fitness) == fitness
    assert str(verdict.explanation_reliability) == "explanation reliability: PASS — every criterion passes"
    assert str(verdict) == f"{fitness}; explanation reliability: PASS — every criterion passes"
    assert str(verdict.criteria[1]) == "Drift between training and test data (not assessed): no training data was given"
    assert all("\n" not in str(o) for o in (verdict, *verdict.judgements, *verdict.criteria))


def test_a_criterion_line_ends_at_a_sentence_not_at_an_abbreviation():
    """"i.e." is no end of sentence: the line kept "L = 0.58 ..., i.e" and dropped the rest of the sentence."""
    from xai_plugins.report.verdict import Criterion

    said = "Test R² 0.336 against training R² 0.809: L = 0.58, i.e. the model keeps 42% of its skill. Second."
    criterion = Criterion("Predictive adequacy", "warn", 0.58, None, "", said)
    assert str(criterion) == ("Predictive adequacy (warn): Test R² 0.336 against training R² 0.809: L = 0.58, i.e. "
                              "the model keeps 42% of its skill")


def test_the_demo_prints_each_audits_verdicts(capsys, monkeypatch, tmp_path):
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    forest = RandomForestRegressor(n_estimators=3, max_depth=2, bootstrap=False, random_state=0).fit(X[:100], y[:100])
    monkeypatch.setattr(cli, "demo_models", lambda *a: [(cli.DEMO_STEMS[0], "Tiny demo", forest, X[100:140],
                                                         y[100:140], X[:100], y[:100])])
    code = cli.main(["--out", str(tmp_path), "--quiet", "--no-pdf", "--sections", "explanations", "--explainers",
                     "local_mdi", "--max-rows", "3"])
    stdout = capsys.readouterr().out.splitlines()
    assert code == 0
    at = stdout.index("Tiny demo:")
    assert stdout[at - 1].startswith("wrote ") and stdout[at + 1].startswith("  model fitness: ")
    assert stdout[at + 2].startswith("  explanation reliability: ")


def test_an_audit_without_a_verdict_says_so(capsys):
    cli.print_verdict(report.Audit("t", {}, {}, {}, "now"))
    assert capsys.readouterr().out == "t: no verdict was computed (see the report's verdict section)\n"


def test_the_notebook_view_left_aligns_its_table_cells():
    html = report.Audit("t", {}, {}, {}, "now", verdict=_verdict())._repr_html_()
    cells = html.count("<td") + html.count("<th")
    assert cells == 6 and html.count("style='text-align:left;vertical-align:top'") == cells


def test_a_notebook_without_ipywidgets_gets_the_text_bar_and_no_warning():
    """tqdm.auto in a Jupyter kernel without ipywidgets warns "IProgress not found" when imported; the
    package's bars come from a class that does not try the widget then."""
    pytest.importorskip("IPython")
    code = textwrap.dedent("""
        import sys, types, warnings
        import IPython
        sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")   # what tqdm reads as Jupyter
        sys.modules["ipywidgets"] = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import xai_plugins.report, xai_plugins.dt_sampler
            from xai_plugins._extras import progress_class, tqdm
            with tqdm(total=2, disable=True) as bar:
                bar.update(2)
        import tqdm.std
        assert progress_class() is tqdm.std.tqdm, progress_class()
        print([str(w.message) for w in caught if "Tqdm" in w.category.__name__])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
