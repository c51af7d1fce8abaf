"""LightGBM reads an input x with |x| <= kZeroThreshold (1e-35f, as a double 1.0000000180025095e-35)
as 0.0 before comparing: dense rows drop such values as zeros. Its binning puts thresholds at
±kZeroThreshold around zero, so an input exactly at -kZeroThreshold goes right there (it is read as
0), where a plain x <= t would send it left. The C core applies the rule through
Forest.zero_threshold (xai_forest.zero_threshold) in every routing: predict, PG², local MDI, reroute."""

import dataclasses

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2

lgb = pytest.importorskip("lightgbm")

K_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold as the double it compares with
SPECIAL = [K_ZERO, -K_ZERO, 1e-36, -1e-36, np.nextafter(K_ZERO, np.inf), np.nextafter(-K_ZERO, -np.inf),
           np.nextafter(K_ZERO, 0.0), np.nextafter(-K_ZERO, 0.0), 0.0, -0.0, 2e-35, -2e-35]


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    n = 400
    x0 = rng.choice([0.0, 1e-36, -1e-36, 3e-36, -5e-36, 0.5, -0.5, 1.0, -1.0, 2.0], size=n)
    x1 = rng.normal(size=n)
    X = np.column_stack([x0, x1])
    y = np.where(x0 > 0, 2.0, 0.0) + np.where(x0 < 0, -1.5, 0.0) + 0.3 * x1
    return lgb.LGBMRegressor(n_estimators=5, num_leaves=6, min_child_samples=3, verbose=-1,
                             random_state=0).fit(X, y)


def _thresholds(booster, feature):
    found = []

    def visit(node):
        if "split_index" in node:
            if node["split_feature"] == feature:
                found.append(node["threshold"])
            visit(node["left_child"])
            visit(node["right_child"])

    for tree in booster.dump_model()["tree_info"]:
        visit(tree["tree_structure"])
    return found


def _rows(values):
    rng = np.random.default_rng(1)
    return np.column_stack([np.asarray(values, dtype=np.float64), rng.normal(size=len(values))])


def test_lightgbm_writes_thresholds_at_the_zero_threshold(model):
    found = _thresholds(model.booster_, 0)
    assert K_ZERO in found and -K_ZERO in found, found


def test_importer_sets_the_zero_threshold(model):
    assert import_model(model).zero_threshold == K_ZERO
    assert K_ZERO == 1.0000000180025095e-35


def test_predict_parity_at_and_around_the_zero_threshold(model):
    X = _rows(SPECIAL * 3)
    ours = import_model(model).predict(X)[:, 0]
    theirs = model.booster_.predict(X, raw_score=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-13)
    # the rule matters here: without it -K_ZERO would go left at the -K_ZERO threshold
    plain = dataclasses.replace(import_model(model), zero_threshold=0.0).predict(X)[:, 0]
    assert not np.allclose(plain, theirs, rtol=1e-13, atol=1e-13)
    at_minus = X[:, 0] == -K_ZERO
    assert np.all(np.abs(plain[at_minus] - theirs[at_minus]) > 1e-6)


def test_pg2_routes_unperturbed_tiny_values_as_zero(model):
    """A row whose unperturbed feature 0 is -K_ZERO has the PG² of the row with 0.0 there, and
    both match the grid oracle over LightGBM's own predictor."""
    def own(Z):
        return model.booster_.predict(Z, raw_score=True).reshape(len(Z), -1)
    for v in (-K_ZERO, K_ZERO, -1e-36, np.nextafter(-K_ZERO, -np.inf)):
        x = np.array([v, 0.2])
        zero = np.array([0.0 if abs(v) <= K_ZERO else v, 0.2])
        exact = xp.pg2(model, x[None, :], [1], sigma=0.5).value
        np.testing.assert_array_equal(exact, xp.pg2(model, zero[None, :], [1], sigma=0.5).value)
        ref = grid_pg2(model, own, x, [1], [gaussian(0.5)] * 2)
        np.testing.assert_allclose(exact, ref, rtol=1e-12)
    # and the rule changes the answer at -K_ZERO
    plain = dataclasses.replace(import_model(model), zero_threshold=0.0)
    x = np.array([[-K_ZERO, 0.2]])
    assert not np.isclose(xp.pg2(plain, x, [1], sigma=0.5).value[0], xp.pg2(model, x, [1], sigma=0.5).value[0],
                          rtol=1e-9)


@pytest.mark.parametrize("x0", [-K_ZERO, 0.0, K_ZERO, 1.5e-35])
def test_pg2_with_noise_on_the_scale_of_the_zero_threshold(model, x0):
    """Perturbing feature 0 by noise of sigma 1e-35: the cells around ±K_ZERO, against the grid
    oracle over LightGBM's own predictor (which reads the middle cell's point, 0, as 0)."""
    def own(Z):
        return model.booster_.predict(Z, raw_score=True).reshape(len(Z), -1)
    x = np.array([x0, -0.3])
    exact = xp.pg2(model, x[None, :], [0], sigma=1e-35).value
    ref = grid_pg2(model, own, x, [0], [gaussian(1e-35)] * 2)
    assert ref[0] > 0
    np.testing.assert_allclose(exact, ref, rtol=1e-12)
