"""benchmarks/reproduce.py: the table list, one quick table end to end through the CLI, a failing
table reported rather than crashing the run, and the helpers the tables' verdicts rest on."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "reproduce.py"
DATASETS = ROOT.parent / "shared" / "datasets"
ROW_KEYS = {"setting", "paper", "ours", "agrees", "tolerance", "reason"}


def _run(*args, tmp_path=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path or ROOT, timeout=300)


@pytest.fixture(scope="module")
def reproduce():
    spec = importlib.util.spec_from_file_location("reproduce_cli", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_list_names_every_pg2_and_local_mdi_table(reproduce, capsys):
    reproduce.main(["--list"])
    ids = {line.split("\t")[0] for line in capsys.readouterr().out.splitlines()}
    expected = {f"pg2-table{i}" for i in range(1, 7)} | {"pg2-precision", "localmdi-table4", "localmdi-figure6"}
    assert expected <= ids


def test_unknown_id_is_refused(reproduce, capsys):
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["no-such-table"])
    assert exc.value.code == 2 and "unknown table id" in capsys.readouterr().err


@pytest.mark.skipif(not (DATASETS / "winequality_red.csv").exists(), reason="needs ../shared/datasets")
def test_quick_table_writes_json_and_markdown(tmp_path):
    out = _run("pg2-table6", "--quick", "--out", str(tmp_path / "out"), tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "out" / "pg2-table6.json").read_text())
    assert {"id", "paper", "title", "protocol", "rows", "seconds"} <= set(result)
    assert result["id"] == "pg2-table6" and "error" not in result
    assert len(result["rows"]) == 63                      # 3 datasets x 3 sigma' x (4 rankings + 3 orderings)
    for row in result["rows"]:
        assert set(row) == ROW_KEYS
        assert isinstance(row["paper"], float) and np.isfinite(row["ours"])
        assert isinstance(row["agrees"], bool) and (row["agrees"] or row["reason"])
    md = (tmp_path / "out" / "REPRODUCTIONS.md").read_text()
    ok = sum(row["agrees"] for row in result["rows"])
    assert f"**Overall: {ok} / 63 rows agree**" in md and "## pg2-table6" in md
    assert "[1/1] pg2-table6" in out.stderr                # progress on stderr


def test_failing_table_is_reported_not_raised(reproduce, tmp_path):
    from reproductions.base import Row, Table

    def boom(quick):
        raise RuntimeError("broken on purpose")

    good = Table("t-good", "P", "good", "p", lambda quick: [Row({"a": 1}, 1.0, 1.0, True, "exact")])
    results = [reproduce.run_table(Table("t-bad", "P", "bad", "p", boom), True), reproduce.run_table(good, True)]
    assert "broken on purpose" in results[0]["error"] and results[0]["rows"] == []
    assert results[1]["rows"][0]["agrees"] is True and "error" not in results[1]
    md = reproduce.markdown(results, {"mcr": "ImportError: x"}, quick=True)
    assert "failed tables: t-bad" in md and "| [t-bad](#t-bad) | bad | **failed** |" in md
    assert "broken on purpose" in md.split("## t-bad")[1]
    assert "**Overall: 1 / 1 rows agree**" in md and "could not be imported" in md


def test_agreement_rule(reproduce):
    from reproductions._tolerance import check, half_unit, rmse_se

    assert half_unit("0.132") == pytest.approx(5e-4)
    assert half_unit("1.32e+05") == pytest.approx(500.0)
    assert half_unit("72.47") == pytest.approx(5e-3)
    assert check(0.13249, "0.132", 0.0)[0] and not check(0.13251, "0.132", 0.0)[0]
    assert check(0.2, "0.100", 0.05)[0] and not check(0.2, "0.100", 0.04)[0]
    # rmse_se against a simulation of the RMSE's spread
    rng = np.random.default_rng(0)
    draws = [np.sqrt(np.mean(rng.normal(0, 2, 400) ** 2)) for _ in range(2000)]
    assert rmse_se(rng.normal(0, 2, 400)) == pytest.approx(np.std(draws), rel=0.15)


def test_row_correlations_match_scipy(reproduce):
    from reproductions.local_mdi import row_correlations

    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(20, 9)), rng.normal(size=(20, 9))
    b[3] = a[3] * -2.0                                   # |a| and |b| perfectly correlated
    a[5] = 1.0                                           # constant row: no correlation
    for kind, oracle in (("Pearson", pearsonr), ("Spearman", spearmanr)):
        ours = row_correlations(a, b, kind)
        assert np.isnan(ours[5])
        expected = [oracle(np.abs(a[i]), np.abs(b[i]))[0] for i in range(20) if i != 5]
        np.testing.assert_allclose(np.delete(ours, 5), expected, atol=1e-12)
        assert ours[3] == pytest.approx(1.0)


def test_led_is_the_seven_segment_display(reproduce):
    from reproductions.local_mdi import led

    X, y = led()
    assert X.shape == (10, 7) and len({tuple(r) for r in X}) == 10
    assert X[y == 8].sum() == 7 and X[y == 1].sum() == 2 and X[y == 7].sum() == 3
    assert X.sum(axis=1).tolist() == [6, 2, 5, 5, 4, 5, 6, 3, 7, 6]   # lit segments of 0..9
