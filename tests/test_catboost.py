"""CatBoost models (xai_plugins.forest.catboost): parity with CatBoost's own raw output, exact PG²
against grid integration through CatBoost's own predict (borders from ``get_borders``), Monte
Carlo and the import cache (categorical features: tests/test_catboost_categorical.py)."""

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2

catboost = pytest.importorskip("catboost")
#: no console output, no catboost_info/ folder
QUIET = dict(verbose=0, allow_writing_files=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    X[rng.integers(0, 400, 50), 2] = np.nan
    y = 2 * X[:, 0] + np.nan_to_num(X[:, 2]) + X[:, 1] ** 2
    return X, y


def _models(X, y):
    yield catboost.CatBoostRegressor(iterations=25, depth=4, **QUIET, nan_mode="Min", random_seed=0).fit(X, y)
    yield catboost.CatBoostRegressor(iterations=15, depth=3, **QUIET, nan_mode="Max", random_seed=0).fit(X, y)
    yield catboost.CatBoostClassifier(iterations=20, depth=4, **QUIET, random_seed=0).fit(X, y > 1)
    yield catboost.CatBoostClassifier(iterations=10, depth=3, **QUIET, loss_function="MultiClass",
                                      random_seed=0).fit(X, np.digitize(y, [0, 1, 3]))


def _raw(model):
    return lambda R: np.asarray(model.predict(R, prediction_type="RawFormulaVal"), dtype=np.float64).reshape(len(R), -1)


def test_parity_on_borders_nan_and_every_loss(data):
    X, y = data
    rng = np.random.default_rng(1)
    for model in _models(X, y):
        forest = import_model(model)
        inner = np.flatnonzero((forest.left_child >= 0) & (np.abs(forest.threshold) < np.finfo(np.float32).max))
        rows = X[rng.integers(0, len(X), 300)].copy()
        for i, node in enumerate(rng.choice(inner, len(rows))):      # on a border, and one float32 above it
            t = np.float32(forest.threshold[node])
            rows[i, forest.feature[node]] = t if i % 2 else np.nextafter(t, np.float32(np.inf))
        every = np.vstack([X, rows])
        np.testing.assert_allclose(forest.predict(every), _raw(model)(every), rtol=1e-12, atol=1e-12)


def test_exact_pg2_matches_grid_integration_through_catboost(data):
    X, y = data
    for model in _models(X, y):
        for x in X[:3]:
            S = [j for j in (0, 1, 3)]
            ours = np.atleast_1d(xp.pg2(model, x[None, :], S, sigma=0.4).value[0])
            oracle = grid_pg2(model, _raw(model), x, S, {j: gaussian(0.4) for j in S})
            np.testing.assert_allclose(ours, oracle, rtol=1e-10, atol=1e-14)


def test_exact_pg2_agrees_with_monte_carlo(data):
    X, y = data
    model = next(_models(X, y))
    exact = xp.pg2(model, X[:4], [0, 1], sigma=0.3).value
    sampled = xp.pg2(model, X[:4], [0, 1], sigma=0.3, method="monte_carlo", n_samples=20000, random_state=0)
    assert np.all(np.abs(sampled.value - exact) <= 4 * sampled.stderr)


def test_refit_in_place_is_seen_by_the_cache(data):
    X, y = data
    model = catboost.CatBoostRegressor(iterations=10, depth=3, **QUIET, random_seed=0).fit(X, y)
    before = xp.pg2(model, X[:5], [0], sigma=0.3).value
    model.fit(X, -3 * y)                       # same object, same size, new trees
    after = xp.pg2(model, X[:5], [0], sigma=0.3).value
    np.testing.assert_allclose(import_model(model).predict(X[:50])[:, 0], _raw(model)(X[:50])[:, 0], rtol=1e-12)
    assert not np.allclose(before, after)


def test_a_tree_without_splits_imports(data, tmp_path):
    """CatBoost writes a depth-0 tree (one leaf; seen on COMPAS at 500 trees) with ``"splits": null``:
    made here by editing a model's JSON and loading it back into CatBoost, whose predict is the oracle."""
    import json

    X, y = data
    model = catboost.CatBoostRegressor(iterations=4, depth=2, **QUIET, random_seed=0).fit(X, y)
    model.save_model(str(tmp_path / "m.json"), format="json")
    exported = json.loads((tmp_path / "m.json").read_text())
    exported["oblivious_trees"][1] = {"leaf_values": [0.75], "leaf_weights": [400], "splits": None}
    (tmp_path / "m.json").write_text(json.dumps(exported))
    edited = catboost.CatBoostRegressor()
    edited.load_model(str(tmp_path / "m.json"), format="json")
    np.testing.assert_allclose(import_model(edited).predict(X)[:, 0], _raw(edited)(X)[:, 0], rtol=1e-12, atol=1e-12)
