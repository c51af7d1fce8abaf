"""Same inputs and options, same numbers: two audits, and the CLI against audit(), agree exactly
apart from timings and dates (and a time budget is opt-in and declared)."""

import json

import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from xai_plugins.cli import main
from xai_plugins.report import AuditOptions, audit

#: keys whose values are clocks: wall-clock timings and creation dates (the governance block's run date is
#: to the minute, so two runs straddling a minute differ there)
CLOCK_KEYS = {"created", "seconds", "timings", "total seconds (before rendering)", "Date (UTC)"}
SMALL = dict(max_rows=8, max_shap_rows=40, dt_sampler_samples=4, dt_sampler_rows=30, mcr_permutations=2,
             mc_pairs=2, acme_quantiles=8, n_local=1, progress=False)

#: every explainer but DT-Sampler (the slowest; the identical-runs test covers it)
FAST = ["shap", "pg2", "local_mdi", "acme", "mcr"]


def without_clocks(value):
    """``value`` (parsed JSON) with every clock entry removed."""
    if isinstance(value, dict):
        return {k: without_clocks(v) for k, v in value.items() if k not in CLOCK_KEYS}
    if isinstance(value, list):
        return [without_clocks(v) for v in value]
    return value


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    model = RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False, random_state=0).fit(X[:250], y[:250])
    return model, X[:250], y[:250], X[250:330], y[250:330]


def test_two_identical_audits_give_identical_json(data):
    model, X_train, y_train, X_test, y_test = data
    runs = [json.loads(audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **SMALL).to_json())
            for _ in range(2)]
    assert runs[0]["sections"]["faithfulness"]["status"] == "ok"
    assert runs[0]["methods"]["dt_sampler"]["status"] == "ok" and runs[0]["methods"]["mcr"]["status"] == "ok"
    assert runs[0]["rows explained"] == 8
    assert without_clocks(runs[0]) == without_clocks(runs[1])
    assert runs[0]["sections"]["reproducibility"]["data"]["machine-dependent"] is False


def test_another_seed_changes_the_draws(data):
    model, X_train, y_train, X_test, y_test = data
    a, b = (audit(model, X_test, y_test, X_train=X_train, y_train=y_train, random_state=seed,
                  explainers=["pg2", "local_mdi"], sections=["faithfulness"], **SMALL) for seed in (0, 1))
    assert list(a.sections["faithfulness"].result.rows) != list(b.sections["faithfulness"].result.rows)


def test_sections_draw_from_their_own_streams(data):
    """Turning a section off does not shift the draws of the others (one stream per section)."""
    model, X_train, y_train, X_test, y_test = data
    kw = dict(X_train=X_train, y_train=y_train, explainers=["shap", "pg2"], **SMALL)
    full = audit(model, X_test, y_test, sections=["explanations", "faithfulness", "agreement"], **kw)
    alone = audit(model, X_test, y_test, sections=["faithfulness"], **kw)
    pd.testing.assert_frame_equal(full.sections["faithfulness"].data["pgi2"],
                                  alone.sections["faithfulness"].data["pgi2"])


def test_time_budget_is_opt_in_and_declared(data):
    model, X_train, y_train, X_test, y_test = data
    assert AuditOptions().time_budget is None
    kw = dict(X_train=X_train, y_train=y_train, explainers=["shap", "pg2"], sections=["faithfulness"], **SMALL)
    timed = audit(model, X_test, y_test, time_budget=30.0, **kw)
    assert timed.sections["reproducibility"].data["machine-dependent"] is True
    assert any("depend on this machine's speed" in item for item in timed.sections["limitations"].data["items"])
    assert "machine" in timed.to_html()


def test_cli_and_audit_agree(data, tmp_path, capsys):
    model, X_train, y_train, X_test, y_test = data
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    X_test.assign(y=y_test).to_csv(tmp_path / "test.csv", index=False)
    X_train.assign(y=y_train).to_csv(tmp_path / "train.csv", index=False)
    argv = ["--model", tmp_path / "model.joblib", "--trust-pickle", "--data", tmp_path / "test.csv", "--target", "y",
            "--train", tmp_path / "train.csv", "--out", tmp_path / "out", "--no-pdf", "--quiet"]
    for key, value in SMALL.items():
        if key != "progress":
            argv += ["--" + key.replace("_", "-"), value]
    argv += ["--explainers", *FAST]
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    from_cli = json.loads((tmp_path / "out" / "model.json").read_text())
    read = lambda name: pd.read_csv(tmp_path / name)  # noqa: E731 - the CLI's floats, as it read them
    test, train = read("test.csv"), read("train.csv")
    direct = json.loads(audit(model, test.drop(columns="y"), test["y"], X_train=train.drop(columns="y"),
                              y_train=train["y"], title=from_cli["title"], explainers=FAST, **SMALL).to_json())
    limits = [" ".join(p["sections"]["limitations"]["data"]["items"]) for p in (from_cli, direct)]
    assert "--max-rows" in limits[0] and "max_rows=" not in limits[0]      # each reader is told their own handle
    assert "max_rows=" in limits[1] and "--max-rows" not in limits[1]
    for payload in (from_cli, direct):       # by design: file hashes, command line, flag names vs arguments
        for key in ("reproducibility", "governance", "limitations"):
            payload["sections"].pop(key, None)
        payload["parameters"].pop("command_line")
    assert without_clocks(from_cli) == without_clocks(direct)


def test_default_runs_the_core_on_every_core_with_the_bits_of_one_thread(data, monkeypatch):
    """audit(n_jobs=None) runs the C core's row loops in core_threads(-1) (every core) and gives the same
    numbers as n_jobs=1, where everything runs on one thread."""
    import xai_plugins._native as native
    from xai_plugins._validation import _CORE_THREADS, core_threads, core_workers

    seen = []

    def recording(n_jobs, n_tasks=None):
        seen.append(_CORE_THREADS.get())
        return core_workers(n_jobs, n_tasks)

    monkeypatch.setattr(native, "core_workers", recording)
    model, X_train, y_train, X_test, y_test = data
    options = dict(SMALL, explainers=FAST)
    default = json.loads(audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **options).to_json())
    assert seen and set(seen) == {-1}
    seen.clear()
    one = json.loads(audit(model, X_test, y_test, X_train=X_train, y_train=y_train, n_jobs=1, **options).to_json())
    assert seen and set(seen) == {None}
    assert without_clocks(default) == without_clocks(one)
    with core_threads(2):
        assert core_workers(None, 10) == 2 and core_workers(1, 10) == 1 and core_workers(None, 1) == 1
    assert core_workers(None, 10) == 1


def test_core_threads_checks_its_count():
    from xai_plugins._validation import core_threads

    with pytest.raises(ValueError, match="n_jobs == 0"):
        with core_threads(0):
            pass
