"""Exact PG² far in the tails of the noise, and with extreme thresholds, against the brute-force
oracle (tests/oracle.py) at rtol 1e-12.

A row placed k noise scales beyond every split boundary of a perturbed feature crosses with
probability ~1e-8 .. 1e-15. Below the row (lower tail) that probability is a small CDF value;
above it (upper tail) it is a small survival value, which 1 - CDF cannot carry: computed that way
its relative error is ~1e-16 / p (2.4e-6 at p ~ 4e-11)."""

import numpy as np
import pytest
from scipy import special, stats
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

import xai_plugins as xp
from xai_plugins.forest import import_model
from xai_plugins.perturbation import cdf_table, make_perturbation
from xai_plugins.prediction_gap._boundaries import split_boundaries

from oracle import cell_points, gaussian, grid_pg2, leaf_pair_pg2

xgb = pytest.importorskip("xgboost")

#: noise scales between the row and its nearest boundary: Gaussian tail masses 1.1e-8 .. 6.2e-16
GAUSS_K = [5.6, 6.5, 7.3, 8.0]
#: logistic tail masses exp(-k): 1.0e-8 .. 1.0e-15
LOGISTIC_K = [18.4, 23.0, 29.0, 34.5]


def _with_predictors(fitted, oracle_predictor):
    """{name: (model, kind)} -> {name: (model, the grid oracle's f for it)}."""
    return {name: (model, oracle_predictor(model, kind)) for name, (model, kind) in fitted.items()}


@pytest.fixture(scope="module")
def models(oracle_predictor):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 3))
    y = 3.0 * np.tanh(2 * X[:, 0]) + X[:, 1] * (X[:, 0] > 0.3) + 0.5 * X[:, 2] + 0.1 * rng.normal(size=400)
    return X, _with_predictors({
        # mean aggregation, float32 inputs, x <= t: many trees share feature 0 (the leaf-pair loop)
        "sklearn_rf": (RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y), "model"),
        # sum aggregation, float32 inputs, x < t
        "xgb": (xgb.XGBRegressor(n_estimators=8, max_depth=3, tree_method="hist", random_state=0).fit(X, y),
                "forest"),
    }, oracle_predictor)


def _tail_row(model, X, side, k, scale, features):
    """Row 0 of X with every feature in ``features`` moved k * scale beyond all of its boundaries:
    above them (side "lower": crossings fall in the lower tail of the noise) or below them ("upper")."""
    bounds = split_boundaries(import_model(model)).boundaries
    x = X[0].copy()
    for j in features:
        x[j] = bounds[j][-1] + k * scale if side == "lower" else bounds[j][0] - k * scale
    return x


def _check(model, f, x, S, noise, sigma=None, perturbation=None, tail=None):
    exact = np.asarray(xp.pg2(model, x[None, :], S, sigma=sigma, perturbation=perturbation).value).reshape(-1)
    ref = grid_pg2(model, f, x, S, [noise] * len(x))
    assert 0.0 < ref[0] < 1e-5, ref  # the test really is in the tail
    if tail is not None:  # PG² = sum of crossing masses (about `tail`) x squared gaps
        assert ref[0] < tail * 1e4, (ref, tail)
    np.testing.assert_allclose(exact, ref, rtol=1e-12, atol=0)
    return exact


@pytest.mark.parametrize("name", ["sklearn_rf", "xgb"])
@pytest.mark.parametrize("side", ["lower", "upper"])
@pytest.mark.parametrize("family,k", [("gaussian", k) for k in GAUSS_K] + [("logistic", k) for k in LOGISTIC_K])
def test_one_feature_tails(models, name, side, family, k):
    """Gaussian (sigma 0.05) and logistic (scale 0.02) noise, k scales away from the boundaries."""
    X, fitted = models
    model, f = fitted[name]
    scale = 0.05 if family == "gaussian" else 0.02
    x = _tail_row(model, X, side, k, scale, [0])
    if family == "gaussian":
        _check(model, f, x, [0], gaussian(scale), sigma=scale, tail=special.ndtr(-k))
    else:
        noise = stats.logistic(scale=scale)
        _check(model, f, x, [0], noise, perturbation=noise, tail=np.exp(-k))


@pytest.mark.parametrize("k", [5.6, 7.3])
def test_two_features_in_opposite_tails(models, k):
    """Feature 0 far above its boundaries, feature 1 far below: both tails in one PG², and the
    leaf-pair loop over two shared features (tree boxes around and away from the median)."""
    X, fitted = models
    model, f = fitted["sklearn_rf"]
    sigma = 0.05
    x = _tail_row(model, X, "lower", k, sigma, [0])
    x[1] = _tail_row(model, X, "upper", k, sigma, [1])[1]
    _check(model, f, x, [0, 1], gaussian(sigma), sigma=sigma, tail=special.ndtr(-k))
    forest = import_model(model)
    exact = xp.pg2(model, x[None, :], [0, 1], sigma=sigma).value
    ref = leaf_pair_pg2(forest, x, [0, 1], [gaussian(sigma)] * 3)
    np.testing.assert_allclose(exact, ref, rtol=1e-12)


@pytest.mark.parametrize("k", [5.6, 8.0])
def test_row_between_two_far_boundaries(models, k):
    """The row in the widest gap of feature 0's boundaries, k sigma from both ends: crossings in
    both tails of the same feature, the row's own interval containing the median."""
    X, fitted = models
    model, f = fitted["xgb"]
    b = split_boundaries(import_model(model)).boundaries[0]
    i = int(np.argmax(np.diff(b)))
    sigma = (b[i + 1] - b[i]) / (2 * k)
    x = X[0].copy()
    x[0] = (b[i] + b[i + 1]) / 2
    _check(model, f, x, [0], gaussian(sigma), sigma=sigma, tail=special.ndtr(-k))


def test_table_survival_half_is_computed_directly(models):
    """cdf_table's second half holds P(x' > b) itself, not 1 - P(x' < b)."""
    X, fitted = models
    splits = split_boundaries(import_model(fitted["xgb"][0]))
    x = _tail_row(fitted["xgb"][0], X, "upper", 8.0, 0.05, [0])
    table = cdf_table(splits, x[None, :], make_perturbation(3, 0.05), [0])
    half, (lo, hi) = splits.cdf_offset[-1], splits.cdf_offset[:2]
    assert table.shape == (1, 2 * half)
    b = splits.boundaries[0]
    np.testing.assert_array_equal(table[0, lo:hi], np.concatenate([[0.0], stats.norm.cdf(b - x[0], scale=0.05), [1.0]]))
    np.testing.assert_allclose(table[0, half + lo:half + hi],
                               np.concatenate([[1.0], stats.norm.sf(b - x[0], scale=0.05), [0.0]]), rtol=1e-14)
    assert table[0, half + lo + 1] < 1e-15


# --- extreme thresholds: |b| ~ 5e29, where b ± 1 == b ---------------------------------------------

def test_oracle_cell_points_are_inside_their_cells():
    for b in (np.array([-5e29, 5e29]), np.array([1.0, 2.0, 3.0]), np.array([-1e30])):
        p = cell_points(b)
        edges = np.concatenate([[-np.inf], b, [np.inf]])
        assert np.all(p > edges[:-1]) and np.all(p <= edges[1:]) and np.all(p[[0, -1]] != b[[0, -1]])


@pytest.fixture(scope="module")
def huge(oracle_predictor):
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(-1.2e30, 1.2e30, 300), rng.normal(size=300)])
    y = np.where(X[:, 0] > 5e29, 4.0, 0.0) - np.where(X[:, 0] < -5e29, 3.0, 0.0) + X[:, 1] + 0.1 * rng.normal(size=300)
    lgb = pytest.importorskip("lightgbm")
    return X, _with_predictors({
        "sklearn_tree": (DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y), "model"),
        "xgb": (xgb.XGBRegressor(n_estimators=4, max_depth=3, tree_method="hist", random_state=0).fit(X, y),
                "forest"),
        "lgbm": (lgb.LGBMRegressor(n_estimators=4, num_leaves=6, min_child_samples=5, verbose=-1,
                                   random_state=0).fit(X, y), "forest"),
    }, oracle_predictor)


@pytest.mark.parametrize("name", ["sklearn_tree", "xgb", "lgbm"])
def test_extreme_thresholds_and_inputs(huge, name):
    X, fitted = huge
    model, f = fitted[name]
    b = split_boundaries(import_model(model)).boundaries[0]
    assert np.max(np.abs(b)) > 1e29  # thresholds where the old oracle's b ± 1 rounded back onto b
    sigma = np.array([3e29, 0.5])
    rows = np.array([[1e30, 0.2], [-1e30, -0.4], [5e29, 1.0], [-4.9e29, 0.0], [b[-1], 0.3], [b[0], -0.3]])
    for S in ([0], [0, 1]):
        exact = np.asarray(xp.pg2(model, rows, S, sigma=sigma).value).reshape(len(rows), -1)
        for i, x in enumerate(rows):
            ref = grid_pg2(model, f, x, S, [gaussian(s) for s in sigma])
            np.testing.assert_allclose(exact[i], ref, rtol=1e-12, err_msg=f"{name}, S={S}, row {i}")
