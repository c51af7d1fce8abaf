"""The wall-clock cap (``max_minutes``): this machine's speed is measured on one explained row, the plan keeps
within the cap by its usual means (Monte Carlo for the dearest sets, fewer rows, never fewer than the verdict
needs), and the report says the result is machine-dependent; ``heartbeat`` prints status lines without bars."""

import importlib

import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.errors import InputError
from xai_plugins.report import AuditOptions, audit
from xai_plugins.report import plan as planning

FAST = dict(explainers=("shap", "pg2"), sections=("explanations", "faithfulness"), sigma=(0.3,), mc_pairs=0,
            n_local=0, progress=False)


@pytest.fixture(scope="module")
def data():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = RandomForestRegressor(n_estimators=30, max_depth=6, random_state=0).fit(X[:300], y[:300])
    return model, X, y


def test_a_tight_cap_cuts_rows_but_never_below_what_the_verdict_needs(data, monkeypatch):
    model, X, y = data
    module = importlib.import_module("xai_plugins.report.audit")     # the module, not the function it exports
    monkeypatch.setattr(module, "measured_speed", lambda ctx, options: 50.0)   # a machine 50x slower than planned
    capped = audit(model, X[300:], y[300:], X_train=X[:300], max_rows=100, max_minutes=0.01, **FAST)
    free = audit(model, X[300:], y[300:], X_train=X[:300], max_rows=100, **FAST)
    assert free.plan.rows == 100 and free.plan.speed == 1.0
    assert capped.plan.speed == 50.0 and capped.plan.rows_needed <= capped.plan.rows < 100
    assert capped.plan.target <= 60 * 0.01 / 50.0
    assert "0.01 min cap" in capped.plan.sections["explanations"].note
    assert capped.options.machine_dependent and not free.options.machine_dependent
    said = " ".join(capped.sections["limitations"].data["items"])
    assert "wall-clock cap of 0.01 min" in said and "50×" in said
    assert capped.to_dict()["plan"]["measured speed"] == 50.0


def test_the_speed_is_this_machines_time_over_the_plans_estimate(data):
    model, X, y = data
    from xai_plugins.report.context import make_context

    ctx = make_context(model, X[300:], y[300:], X_train=X[:300], random_state=0)
    speed = planning.measured_speed(ctx, AuditOptions(**FAST))
    assert 0.05 <= speed <= 100.0
    assert planning.measured_speed(ctx, AuditOptions(**{**FAST, "explainers": ("shap",), "sections": ()})) == 1.0


def test_the_cap_must_be_positive():
    with pytest.raises(InputError, match="max_minutes"):
        AuditOptions(max_minutes=0)


def test_a_heartbeat_prints_status_lines_without_bars(data, capsys):
    model, X, y = data
    audit(model, X[300:], y[300:], X_train=X[:300], max_rows=20, heartbeat=0.05, **FAST)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("xai_plugins audit:")]
    assert lines and all("running" in line and "estimated" in line for line in lines)
