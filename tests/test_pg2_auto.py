"""method="auto": the cost model picks the cheaper of the exact sum and a Monte Carlo estimate of the
requested relative accuracy, and says why; a long exact call shows a progress bar."""

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins import prediction_gap
from xai_plugins.errors import InputError
from xai_plugins.forest import import_model

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def model_and_rows(diabetes_std):
    X, y = diabetes_std
    model = xgb.XGBRegressor(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    return model, np.ascontiguousarray(X[:6])


def test_auto_takes_exact_when_it_is_cheaper(model_and_rows):
    model, rows = model_and_rows
    est = xp.pg2(model, rows, [0, 2, 5], method="auto", rtol=0.01)
    assert est.method == "exact" and "exact" in est.reason and "Monte Carlo" in est.reason
    np.testing.assert_array_equal(est.value, xp.pg2(model, rows, [0, 2, 5]).value)


def test_auto_takes_monte_carlo_with_the_pilot_sample_count(model_and_rows, monkeypatch):
    """With exact work priced very high, auto samples; its sample count comes from the pilot's
    spread, so the estimate's relative standard error is about rtol on the pilot rows."""
    model, rows = model_and_rows
    monkeypatch.setattr(prediction_gap, "AUTO_SECONDS_PER_PAIR", 1.0)
    est = xp.pg2(model, rows, [0, 2, 5], method="auto", rtol=0.05, random_state=0)
    assert est.method == "monte_carlo" and "ran monte_carlo" in est.reason
    exact = xp.pg2(model, rows, [0, 2, 5]).value
    relative = est.stderr / exact
    assert np.median(relative) < 0.1
    assert np.all(np.abs(est.value - exact) <= 5 * est.stderr + 1e-12)


def test_exact_cost_estimate_grows_with_the_perturbed_set(model_and_rows):
    forest = import_model(model_and_rows[0])
    costs = [prediction_gap.exact_seconds(forest, k) for k in (0, 2, 5, forest.n_features)]
    assert costs[0] < costs[1] < costs[2] < costs[3]
    leaves = np.bincount(np.repeat(np.arange(forest.n_trees), np.diff(forest.tree_offset)),
                         weights=(forest.left_child < 0), minlength=forest.n_trees)
    all_pairs = (leaves.sum() ** 2 - np.sum(leaves ** 2)) / 2   # S = all: every leaf reachable
    per_pair = prediction_gap.AUTO_PRUNED_SHARE * prediction_gap.AUTO_SECONDS_PER_PAIR
    setup = forest.n_trees * prediction_gap.AUTO_SECONDS_PER_TREE
    assert costs[0] >= setup
    assert costs[3] == pytest.approx(setup + all_pairs * per_pair)


@pytest.mark.parametrize("rtol", [0, 1, -0.1, "1%"])
def test_auto_refuses_a_bad_rtol(model_and_rows, rtol):
    model, rows = model_and_rows
    with pytest.raises(InputError):
        xp.pg2(model, rows, [0], method="auto", rtol=rtol)


def test_progress_bar_on_long_calls_only(model_and_rows, monkeypatch, capsys):
    model, rows = model_and_rows
    xp.pg2(model, rows, [0, 1])
    assert "exact PG²" not in capsys.readouterr().err
    monkeypatch.setattr(prediction_gap, "PROGRESS_AFTER", 0.0)
    quiet = xp.pg2(model, rows, [0, 1], verbose=False)
    assert "exact PG²" not in capsys.readouterr().err
    shown = xp.pg2(model, rows, [0, 1])
    assert "exact PG²" in capsys.readouterr().err
    np.testing.assert_array_equal(shown.value, quiet.value)
