"""Exact PG² / PGI² / greedy ranking against independent references (tests/oracle.py)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeRegressor

import xai_plugins as xp
from xai_plugins.forest import import_model

from oracle import gaussian, grid_pg2, leaf_pair_pg2

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def diabetes4(diabetes_std):
    """The first four standardised diabetes features."""
    X, y = diabetes_std
    return X[:, :4], y


def _small_models(X, y):
    yc = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8)).astype(int)  # 3 classes
    return {
        "sklearn_tree": (DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y), "model"),
        "sklearn_rf": (RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, y), "model"),
        "sklearn_rf_proba": (RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, yc),
                             "proba"),
        "sklearn_gb_clf": (GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0).fit(X, yc),
                           "decision"),
        "sklearn_hgb": (HistGradientBoostingRegressor(max_iter=4, max_depth=3, random_state=0).fit(X, y), "model"),
        "xgb_hist": (xgb.XGBRegressor(n_estimators=5, max_depth=3, tree_method="hist", random_state=0).fit(X, y),
                     "forest"),
        "xgb_multiclass": (xgb.XGBClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, yc), "forest"),
        "lgbm": (lgb.LGBMRegressor(n_estimators=4, num_leaves=6, verbose=-1, random_state=0).fit(X, y), "forest"),
    }


@pytest.mark.parametrize("S", [[1], [0, 2], [0, 1, 3]])
def test_exact_matches_grid_integration(diabetes4, oracle_predictor, S):
    X, y = diabetes4
    rows = X[[0, 7, 42]]
    for name, (model, kind) in _small_models(X, y).items():
        exact = np.atleast_2d(np.asarray(xp.pg2(model, rows, S, sigma=0.4)).T).T
        for i, x in enumerate(rows):
            ref = grid_pg2(model, oracle_predictor(model, kind), x, S, [gaussian(0.4)] * 4)
            np.testing.assert_allclose(exact[i].reshape(-1), ref, rtol=1e-12, atol=1e-12 * max(1, ref.max()),
                                       err_msg=f"{name}, S={S}, row {i}")


def test_exact_matches_leaf_pair_reference_on_larger_model(diabetes_std):
    X, y = diabetes_std
    model = xgb.XGBRegressor(n_estimators=6, max_depth=3, tree_method="hist", random_state=1).fit(X, y)
    forest = import_model(model)
    sigma = np.linspace(0.2, 0.8, 10)
    for S in ([3], [2, 8], [0, 2, 3, 8, 9], list(range(10))):
        exact = xp.pg2(forest, X[:3], S, sigma=sigma).value
        for i in range(3):
            ref = leaf_pair_pg2(forest, X[i], S, [gaussian(s) for s in sigma])
            np.testing.assert_allclose(exact[i], ref[0], rtol=1e-12)


def test_monte_carlo_million_samples_within_four_standard_errors(diabetes4):
    X, y = diabetes4
    model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    exact = xp.pg2(model, X[:2], [0, 2], sigma=0.5).value
    mc = xp.pg2(model, X[:2], [0, 2], sigma=0.5, method="monte_carlo", n_samples=1_000_000, random_state=0)
    assert np.all(np.abs(mc.value - exact) <= 4 * mc.stderr)
    assert np.all(mc.stderr > 0)


def test_qmc_and_auto(diabetes4):
    X, y = diabetes4
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    exact = xp.pg2(model, X[:2], [1, 3], sigma=0.3).value
    q = xp.pg2(model, X[:2], [1, 3], sigma=0.3, method="qmc", n_samples=20_000, random_state=3)
    assert q.method == "qmc" and np.all(np.abs(q.value - exact) <= 5 * q.stderr + 1e-9)
    again = xp.pg2(model, X[:2], [1, 3], sigma=0.3, method="qmc", n_samples=20_000, random_state=3)
    np.testing.assert_array_equal(q.value, again.value)
    auto = xp.pg2(model, X[:2], [1, 3], sigma=0.3, method="auto")
    assert auto.method == "exact"
    np.testing.assert_array_equal(auto.value, exact)


def test_general_distribution_and_background_units(diabetes4, oracle_predictor):
    X, y = diabetes4
    model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    lap = stats.laplace(scale=0.3)
    exact = xp.pg2(model, X[:3], [0, 2], perturbation=lap).value
    for i in range(3):
        ref = grid_pg2(model, oracle_predictor(model, "model"), X[i], [0, 2], [lap.cdf] * 4)
        np.testing.assert_allclose(exact[i], ref[0], rtol=1e-12)
    bg = X * np.array([1.0, 2.0, 3.0, 4.0])
    scaled = xp.pg2(model, X[:3], [0, 2], sigma=0.1, background=bg).value
    direct = xp.pg2(model, X[:3], [0, 2], sigma=0.1 * bg.std(0)).value
    np.testing.assert_allclose(scaled, direct, rtol=1e-14)


def _stump(kind, t=0.5):
    X = np.array([[0.0], [0.25], [0.5], [0.75], [1.0]] * 4)
    y = (X[:, 0] > t).astype(float) * 10
    if kind == "xgb":
        return xgb.XGBRegressor(n_estimators=1, max_depth=1, learning_rate=1.0, base_score=0.0,
                                tree_method="exact").fit(X, y)
    return DecisionTreeRegressor(max_depth=1).fit(X, y)


@pytest.mark.parametrize("kind", ["xgb", "sklearn"])
def test_tie_on_threshold_keeps_half_probability_as_sigma_vanishes(kind):
    model = _stump(kind)
    forest = import_model(model)
    t = forest.threshold[0]
    x_on = np.array([[t]])
    # the unperturbed model routes a tie by its own rule: xgboost x < t (right), sklearn x <= t (left)
    leaf_values = forest.value[[forest.left_child[0], forest.right_child[0]], 0]
    pred = forest.predict(x_on)[0, 0]
    assert pred == (leaf_values[1] if kind == "xgb" else leaf_values[0])
    gap = (leaf_values[0] - leaf_values[1]) ** 2
    for sigma in (1e-3, 1e-4):
        value = xp.pg2(model, x_on, [0], sigma=sigma).value[0]
        np.testing.assert_allclose(value, 0.5 * gap, rtol=1e-3)
    # away from the threshold PG² does vanish
    assert xp.pg2(model, x_on + 0.1, [0], sigma=1e-3).value[0] < 1e-12 * gap


def test_nan_in_unperturbed_feature_follows_default_direction(diabetes4):
    X, y = diabetes4
    Xn = X.copy()
    Xn[::7, 1] = np.nan
    model = xgb.XGBRegressor(n_estimators=5, max_depth=3, random_state=0).fit(Xn, y)
    x = X[3].copy()
    x[1] = np.nan
    exact = xp.pg2(model, x[None, :], [0, 2], sigma=0.3).value[0]
    ref = grid_pg2(model, import_model(model).predict, x, [0, 2], [gaussian(0.3)] * 4)
    np.testing.assert_allclose(exact, ref[0], rtol=1e-12)
    with pytest.raises(ValueError, match="NaN in perturbed feature 1"):
        xp.pg2(model, x[None, :], [1], sigma=0.3)


def test_empty_set_gives_zero_and_outputs_have_the_right_shape(diabetes4):
    X, y = diabetes4
    models = _small_models(X, y)
    assert np.all(xp.pg2(models["xgb_hist"][0], X[:5], [], sigma=0.3).value == 0.0)
    proba = xp.pg2(models["sklearn_rf_proba"][0], X[:5], [0, 1], sigma=0.3).value
    assert proba.shape == (5, 3)
    margins = xp.pg2(models["xgb_multiclass"][0], X[:5], [0, 1], sigma=0.3).value
    assert margins.shape == (5, 3)


def test_pgi2_is_the_mean_over_prefixes(diabetes4):
    X, y = diabetes4
    model = _small_models(X, y)["xgb_hist"][0]
    rng = np.random.default_rng(0)
    ranking = np.array([rng.permutation(4) for _ in range(6)])
    got = xp.pgi2(model, X[:6], ranking, sigma=0.3)
    for i in range(6):
        prefixes = [xp.pg2(model, X[i:i + 1], ranking[i, :k], sigma=0.3).value[0] for k in range(1, 5)]
        np.testing.assert_allclose(got[i], np.mean(prefixes), rtol=1e-13)


@pytest.mark.parametrize("name", ["xgb_hist", "sklearn_rf_proba"])
def test_stacked_rankings_share_prefixes_and_equal_separate_calls(diabetes4, name):
    X, y = diabetes4
    model = _small_models(X, y)[name][0]
    rng = np.random.default_rng(1)
    rankings = np.array([[rng.permutation(4) for _ in range(5)] for _ in range(3)])
    rankings[1, :, :2] = rankings[0, :, :2]          # shared prefixes of length 1 and 2
    rankings[1, :, 2:] = rankings[0, :, 2:][:, ::-1]
    stacked = xp.pgi2(model, X[:5], rankings, sigma=0.3)
    assert stacked.shape[:2] == (3, 5)
    for a in range(3):
        np.testing.assert_allclose(stacked[a], xp.pgi2(model, X[:5], rankings[a], sigma=0.3), rtol=1e-14, atol=0)
    with pytest.raises(ValueError):
        xp.pgi2(model, X[:5], rankings[:, :4], sigma=0.3)


def test_greedy_ranking_matches_a_python_greedy_and_breaks_ties_by_index(diabetes_std):
    X, y = diabetes_std
    X = np.hstack([X[:, :5], np.zeros((len(X), 2))])  # features 5 and 6 are never split on
    model = xgb.XGBRegressor(n_estimators=8, max_depth=3, random_state=0).fit(X, y)
    greedy = xp.greedy_pg2_ranking(model, X[:4], sigma=0.3)
    ranking, path = greedy.ranking, greedy.pg2_path
    for i in range(4):
        chosen = []
        for _ in range(7):
            rest = [j for j in range(7) if j not in chosen]
            scores = [xp.pg2(model, X[i:i + 1], chosen + [j], sigma=0.3).value[0] for j in rest]
            best = rest[int(np.argmax(scores))]  # argmax returns the first (lowest index) maximum
            chosen.append(best)
            np.testing.assert_allclose(path[i, len(chosen) - 1], max(scores), rtol=1e-13)
        assert ranking[i].tolist() == chosen
    assert not import_model(model).split_features[[5, 6]].any()
    position = np.argsort(ranking, axis=1)
    assert np.all(position[:, 5] + 1 == position[:, 6])  # equal gains: lowest index first, side by side


def test_results_do_not_depend_on_thread_count(diabetes4):
    X, y = diabetes4
    model = RandomForestRegressor(n_estimators=20, max_depth=4, random_state=0).fit(X, y)
    from xai_plugins import _native
    from xai_plugins.perturbation import cdf_table, make_perturbation
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    forest = import_model(model)
    splits = split_boundaries(forest)
    rows = np.ascontiguousarray(X[:50], dtype=np.float64)
    table = cdf_table(splits, rows, make_perturbation(4, 0.3), range(4))
    mask = np.ones((50, 1, 4), dtype=np.uint8)
    one, _ = _native.pg2(splits.c_forest, splits.cdf_offset, rows, mask, table, n_jobs=1)
    two, _ = _native.pg2(splits.c_forest, splits.cdf_offset, rows, mask, table, n_jobs=2)
    np.testing.assert_array_equal(one, two)
    r1 = xp.greedy_pg2_ranking(forest, X[:20], n_jobs=1)
    r2 = xp.greedy_pg2_ranking(forest, X[:20], n_jobs=2)
    np.testing.assert_array_equal(r1.ranking, r2.ranking)
    np.testing.assert_array_equal(r1.pg2_path, r2.pg2_path)
