"""The binary flip law: a numeric feature whose background holds two values is
perturbed by keeping x_j with probability 1 - rho, else redrawing a or b with the background's
frequencies; exact PG² against enumeration and against Monte Carlo through the model's own predict
(the property test over random models is in test_properties.py)."""

import itertools

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins.errors import InputError

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


def _data(n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n), rng.choice([2.0, 5.0], n, p=[0.3, 0.7])])
    y = 2 * X[:, 0] + X[:, 1] + (X[:, 2] == 5) + X[:, 0] * X[:, 2] + 0.1 * rng.normal(size=n)
    return X.astype(float), y


MODELS = {
    "rf": lambda: RandomForestRegressor(n_estimators=15, max_depth=5, random_state=0),
    "xgb": lambda: xgb.XGBRegressor(n_estimators=15, max_depth=4, tree_method="hist", n_jobs=1),
    "lgbm": lambda: lgb.LGBMRegressor(n_estimators=15, num_leaves=8, verbose=-1, n_jobs=1),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    X, y = _data()
    return MODELS[request.param]().fit(X, y), X


def _tolerance(model) -> float:
    """XGBoost's own predict sums its trees in float32."""
    return 1e-5 if isinstance(model, xgb.XGBRegressor) else 1e-9


def _law(X, j, xj, rho):
    a, b = np.unique(X[:, j])
    q = np.mean(X[:, j] == a)
    return [a, b], [(1 - rho) * (xj == a) + rho * q, (1 - rho) * (xj == b) + rho * (1 - q)]


def test_exact_equals_enumeration_through_the_models_own_predict(fitted):
    model, X = fitted
    noise = xp.binary_perturbation(model, X, 0.3, rho=0.35)
    assert sorted(noise.binary) == [0, 2]
    rows = X[:5]
    for S in ([0], [2], [0, 2]):
        got = xp.pg2(model, rows, S, perturbation=noise).value
        for i, x in enumerate(rows):
            laws = [_law(X, j, x[j], 0.35) for j in S]
            want = 0.0
            for pick in itertools.product(*[range(2) for _ in S]):
                z, w = x.copy(), 1.0
                for j, (values, p), c in zip(S, laws, pick):
                    z[j], w = values[c], w * p[c]
                want += w * (model.predict(z[None])[0] - model.predict(x[None])[0]) ** 2
            assert got[i] == pytest.approx(want, rel=_tolerance(model), abs=1e-12)


def test_exact_agrees_with_monte_carlo_through_the_models_own_predict(fitted):
    """Binary features by the flip law, the numeric one by Gaussian noise of σ background standard
    deviations, drawn here; the default rho is P(|e| > 1/2) for e ~ N(0, σ²)."""
    from scipy import stats

    model, X = fitted
    sigma = 0.4
    noise = xp.binary_perturbation(model, X, sigma)
    rho = 2 * stats.norm.cdf(-0.5 / sigma)
    exact = xp.pg2(model, X[:3], [0, 1, 2], perturbation=noise).value
    rng = np.random.default_rng(7)
    n = 30000
    for i, x in enumerate(X[:3]):
        Z = np.repeat(x[None], n, axis=0)
        Z[:, 1] += rng.normal(0, sigma * X[:, 1].std(), n)
        for j in (0, 2):
            values, p = _law(X, j, x[j], rho)
            Z[:, j] = np.where(rng.random(n) < p[0], values[0], values[1])
        gaps = (model.predict(Z) - model.predict(x[None])[0]) ** 2
        assert abs(gaps.mean() - exact[i]) <= 4 * gaps.std() / np.sqrt(n)


def test_greedy_and_monte_carlo_paths_use_the_law(fitted):
    model, X = fitted
    noise = xp.binary_perturbation(model, X, 0.3)
    greedy = xp.greedy_pg2_ranking(model, X[:4], perturbation=noise)
    last = xp.pg2(model, X[:4], [0, 1, 2], perturbation=noise).value
    np.testing.assert_allclose(greedy.pg2_path[:, -1], last, rtol=1e-9)
    mc = xp.pg2(model, X[:2], [0, 2], perturbation=noise, method="monte_carlo", n_samples=20000, random_state=0)
    exact = xp.pg2(model, X[:2], [0, 2], perturbation=noise).value
    assert np.all(np.abs(mc.value - exact) <= 4 * mc.stderr + 1e-12)
    drawn = np.unique(noise.draw(0, 1.0, 1000, np.random.default_rng(0)))
    assert set(drawn) <= {0.0, 1.0}


def test_clear_errors(fitted):
    model, X = fitted
    with pytest.raises(InputError, match="needs background"):
        xp.binary_perturbation(model, None)
    with pytest.raises(InputError, match="not binary"):
        xp.binary_perturbation(model, X, features=[1])
    noise = xp.binary_perturbation(model, X, features=[0])
    assert sorted(noise.binary) == [0]
    row = X[:1].copy()
    row[0, 0] = 0.5
    with pytest.raises(InputError, match="binary flip law"):
        xp.pg2(model, row, [0], perturbation=noise)


def test_on_dask_equals_in_memory_bitwise(fitted):
    da = pytest.importorskip("dask.array")
    model, X = fitted
    noise = xp.binary_perturbation(model, X, 0.3)
    lazy = xp.pg2(model, da.from_array(X[:12], chunks=(5, 3)), [0, 1, 2], perturbation=noise)
    np.testing.assert_array_equal(lazy.compute().value, xp.pg2(model, X[:12], [0, 1, 2], perturbation=noise).value)
