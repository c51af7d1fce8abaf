"""Categorical features: set-membership splits imported from LightGBM, predicted with
parity, and exact PG² under the categorical perturbation against an independent enumeration and
against Monte Carlo through the model's own predictor."""

import numpy as np
import pandas as pd
import pytest
from scipy import special

from xai_plugins import greedy_pg2_ranking, pg2, pgi2
from xai_plugins.errors import InputError
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2

lgb = pytest.importorskip("lightgbm")

SIGMA = 0.4


def _lightgbm_model(seed=0, n=600, n_trees=20, cats=(12, 4)):
    """A LightGBM regressor on two categorical codes (with NaN) and two numeric features."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, cats[0], n), rng.normal(size=n), rng.integers(0, cats[1], n),
                         rng.normal(size=n)]).astype(float)
    X[rng.random(n) < 0.08, 0] = np.nan
    c0 = np.nan_to_num(X[:, 0], nan=3.0)
    y = np.sin(1.7 * c0) * 2 + X[:, 1] + (X[:, 2] == 1) * 1.5 - X[:, 2] * X[:, 3] + rng.normal(0, 0.1, n)
    model = lgb.LGBMRegressor(n_estimators=n_trees, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1.0, max_cat_to_onehot=3, verbose=-1, random_state=seed)
    return model.fit(X, y, categorical_feature=[0, 2]), X


def _rows(rng, n, cats=(12, 4)):
    """Rows with seen, unseen and negative codes and NaN in the categorical features."""
    T = np.column_stack([rng.integers(-2, cats[0] + 3, n), rng.normal(size=n), rng.integers(-1, cats[1] + 2, n),
                         rng.normal(size=n)]).astype(float)
    T[rng.random(n) < 0.1, 0] = np.nan
    T[rng.random(n) < 0.1, 2] = np.nan
    return T


@pytest.fixture(scope="module")
def lgb_model():
    return _lightgbm_model()


def test_lightgbm_categorical_predict_parity(lgb_model):
    model, _ = lgb_model
    forest = import_model(model)
    assert forest.n_categories is not None and forest.n_categories[0] >= 12 and forest.n_categories[1] == 0
    T = _rows(np.random.default_rng(1), 3000)
    np.testing.assert_array_equal(forest.predict(T)[:, 0], model.booster_.predict(T, raw_score=True))


def _laws(forest, rho, q=None):
    return {j: (rho, q[j] if q else np.full(k, 1.0 / k)) for j, k in enumerate(forest.n_categories) if k}


@pytest.mark.parametrize("S", [[0], [2], [0, 2], [0, 1], [0, 1, 2, 3], [1, 3]])
def test_exact_pg2_matches_enumeration(lgb_model, S):
    model, _ = lgb_model
    forest = import_model(model)
    rng = np.random.default_rng(2)
    rows = _rows(rng, 6)
    rows[:, [1, 3]] = np.round(rows[:, [1, 3]], 1)
    rho = float(2 * special.ndtr(-0.5 / SIGMA))     # the documented default for sigma
    laws = _laws(forest, rho)
    for x in rows:
        if any(np.isnan(x[j]) for j in S if forest.n_categories[j] == 0):
            continue
        got = pg2(model, x[None, :], S, sigma=SIGMA).value[0]
        want = grid_pg2(model, lambda Z: model.booster_.predict(Z, raw_score=True)[:, None], x, S,
                        {j: gaussian(SIGMA) for j in range(4)}, laws)[0]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_background_frequencies_and_rho(lgb_model):
    model, X = lgb_model
    forest = import_model(model)
    K = forest.n_categories
    q = {}
    for j in (0, 2):
        col = X[:, j][~np.isnan(X[:, j])].astype(int)
        q[j] = np.bincount(col, minlength=K[j]) / len(col)
    rho = np.array([0.7, np.nan, 0.25, np.nan])
    x = np.array([np.nan, 0.3, 5.0, -0.2])   # a missing category is kept with probability 1 - rho
    got = pg2(model, x[None, :], [0, 2], background=X, rho=rho).value[0]
    want = grid_pg2(model, lambda Z: model.booster_.predict(Z, raw_score=True)[:, None], x, [0, 2], {},
                    {0: (0.7, q[0]), 2: (0.25, q[2])})[0]
    assert got == pytest.approx(want, rel=1e-12)


def test_exact_matches_own_predict_monte_carlo(lgb_model):
    model, _ = lgb_model
    rows = _rows(np.random.default_rng(3), 4)
    rows[:, [1, 3]] = np.nan_to_num(rows[:, [1, 3]])
    for method in ("monte_carlo", "qmc"):
        mc = pg2(model, rows, [0, 1, 2, 3], sigma=SIGMA, method=method, n_samples=20_000, random_state=5)
        exact = pg2(model, rows, [0, 1, 2, 3], sigma=SIGMA).value
        assert np.all(np.abs(mc.value - exact) <= 4 * mc.stderr + 1e-12), (method, mc.value, exact, mc.stderr)


def test_pruning_greedy_and_pgi2(lgb_model):
    model, _ = lgb_model
    rows = np.nan_to_num(_rows(np.random.default_rng(4), 5))
    full = pg2(model, rows, [0, 1, 2, 3], prune=False).value
    np.testing.assert_allclose(pg2(model, rows, [0, 1, 2, 3]).value, full, rtol=1e-12)
    greedy = greedy_pg2_ranking(model, rows, verbose=False)
    for i in range(len(rows)):     # the path is PG² of the ranking's prefixes, each computed on its own
        prefixes = [pg2(model, rows[i:i + 1], greedy.ranking[i, :k + 1]).value[0] for k in range(4)]
        np.testing.assert_allclose(greedy.pg2_path[i], prefixes, rtol=1e-12)
        assert pgi2(model, rows[i:i + 1], greedy.ranking[i], verbose=False)[0] == pytest.approx(np.mean(prefixes),
                                                                                               rel=1e-12)


def test_pandas_category_columns_read_with_training_codes():
    rng = np.random.default_rng(6)
    n = 400
    frame = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(rng.choice(["x", "y", "z"], n))})
    y = frame.a + (frame.c == "y") * 2.0 - (frame.c == "z")
    model = lgb.LGBMRegressor(n_estimators=10, min_child_samples=5, verbose=-1).fit(frame, y)
    test = pd.DataFrame({"a": [0.1, -0.3, 0.5, 0.0],
                         "c": pd.Categorical(["z", "y", "w", None], categories=["w", "z", "y"])})
    forest = import_model(model)
    np.testing.assert_allclose(forest.predict(test)[:, 0], model.predict(test, raw_score=True), rtol=0, atol=0)
    codes = test.assign(c=[2.0, 1.0, np.nan, np.nan])      # the training codes: x=0, y=1, z=2; unseen w -> NaN
    # an array holds the codes LightGBM reads; a frame's number column is refused, as LightGBM refuses it
    assert pg2(model, test, ["c"]).value == pytest.approx(pg2(model, codes.to_numpy(), ["c"]).value, rel=0, abs=0)
    with pytest.raises(ValueError, match="categorical_feature do not match"):
        model.predict(codes)
    with pytest.raises(InputError, match="'c' holds float64 values.*category dtype"):
        pg2(model, codes, ["c"])


def test_bad_categorical_inputs_are_refused(lgb_model):
    model, _ = lgb_model
    x = np.array([[2.5, 0.0, 1.0, 0.0]])
    with pytest.raises(InputError, match="integer category codes"):
        pg2(model, x, [0])
    with pytest.raises(InputError, match="rho"):
        pg2(model, np.array([[2.0, 0.0, 1.0, 0.0]]), [0], rho=1.5)


def test_categorical_laws_on_dask_equal_in_memory_bitwise(lgb_model):
    """rho= and the background's category frequencies reach the row engines (worked out once on the
    driver, shipped with the noise): exact and seeded Monte Carlo PG², greedy and PGI² on a dask array
    equal the in-memory results bit for bit, for any chunking."""
    da = pytest.importorskip("dask.array")
    import dask

    model, X = lgb_model
    T = _rows(np.random.default_rng(7), 23)
    T[:, 1:4:2] = np.nan_to_num(T[:, 1:4:2])
    rho = np.array([0.6, np.nan, 0.3, np.nan])
    kwargs = dict(background=X, rho=rho, sigma=0.4)
    with dask.config.set(scheduler="synchronous"):
        for chunks in (5, 23):
            lazy = da.from_array(T, chunks=(chunks, 4))
            for method in ("exact", "monte_carlo"):
                here = pg2(model, T, [0, 2, 3], method=method, n_samples=300, random_state=3, **kwargs)
                there = pg2(model, lazy, [0, 2, 3], method=method, n_samples=300, random_state=3, **kwargs).compute()
                np.testing.assert_array_equal(here.value, there.value)
                np.testing.assert_array_equal(here.stderr, there.stderr)
            complete = np.nan_to_num(T, nan=1.0)              # greedy and PGI² perturb every feature
            lazy_complete = da.from_array(complete, chunks=(chunks, 4))
            greedy = greedy_pg2_ranking(model, complete, **kwargs)
            lazy_greedy = greedy_pg2_ranking(model, lazy_complete, **kwargs).compute()
            np.testing.assert_array_equal(greedy.ranking, lazy_greedy.ranking)
            np.testing.assert_array_equal(greedy.pg2_path, lazy_greedy.pg2_path)
            np.testing.assert_array_equal(np.asarray(pgi2(model, complete, greedy.ranking, **kwargs)),
                                          np.asarray(pgi2(model, lazy_complete, greedy.ranking, **kwargs).compute()))
    uniform = pg2(model, T, [0, 2, 3], sigma=0.4).value
    assert not np.allclose(uniform, pg2(model, T, [0, 2, 3], **kwargs).value)   # the laws were used
