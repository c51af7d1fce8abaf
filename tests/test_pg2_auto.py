"""method="auto": the cost model picks the cheaper of the exact sum and a Monte Carlo estimate of the
requested relative accuracy, and says why; a long exact call shows a progress bar."""

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins.errors import InputError
from xai_plugins.forest import import_model
from xai_plugins.prediction_gap import _auto as prediction_gap
from xai_plugins.prediction_gap import _exact

from oracle import gaussian, grid_pg2

xgb = pytest.importorskip("xgboost")


def _price_exact_high(monkeypatch):
    """Price the exact method so high that auto samples (its per-Forest prices computed afresh)."""
    import weakref

    monkeypatch.setattr(prediction_gap, "AUTO_SECONDS_PER_ROW", 1.0)
    monkeypatch.setattr(prediction_gap, "_PRICES", weakref.WeakKeyDictionary())


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
    _price_exact_high(monkeypatch)
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
    expected = (prediction_gap.AUTO_SECONDS_PER_ROW + leaves.sum() * prediction_gap.AUTO_SECONDS_PER_LEAF
                + all_pairs * prediction_gap.AUTO_SECONDS_PER_PAIR)
    assert costs[3] == pytest.approx(expected)
    rows = model_and_rows[1]
    every = np.ones(rows.shape, dtype=bool)
    assert prediction_gap.exact_seconds(forest, 0, rows, every) == pytest.approx(expected)


def test_reachable_leaves_are_the_leaves_some_value_of_the_free_features_reaches():
    """The C walk's count against scikit-learn's own apply() over a grid of values of the free features holding
    every threshold and a point beyond each (every leaf a CART tree grows has a non-empty box)."""
    from itertools import product

    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    X, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(n_estimators=6, max_depth=5, random_state=0).fit(X, y)
    forest = import_model(model)
    for free in ([2], [2, 8], [0, 3]):
        mask = np.zeros((3, X.shape[1]), dtype=bool)
        mask[:, free] = True
        counts = prediction_gap.reachable_leaf_counts(forest, X[:3], mask)
        grids = []
        for j in free:
            cuts = np.unique(np.concatenate([t.tree_.threshold[t.tree_.feature == j] for t in model.estimators_]))
            grids.append(np.concatenate([cuts, np.nextafter(cuts, np.inf), [cuts.min() - 1, cuts.max() + 1]]))
        for i in range(3):
            grid = np.repeat(X[i:i + 1], np.prod([len(g) for g in grids]), axis=0)
            grid[:, free] = np.array(list(product(*grids)))
            reached = model.apply(grid)
            assert counts[i].tolist() == [len(np.unique(reached[:, t])) for t in range(forest.n_trees)]


def test_the_pair_estimate_bounds_the_pair_terms_the_exact_sum_computes(model_and_rows):
    """The cost model's pair count is the pairs of reachable leaves; the exact sum computes those of them whose
    trees share a perturbed feature (without pruning): never more, and most of them once every feature varies."""
    model, rows = model_and_rows
    forest = import_model(model)
    for k in (1, 3, 6, rows.shape[1]):
        mask = np.zeros(rows.shape, dtype=bool)
        mask[:, :k] = True
        estimated = prediction_gap._pairs(forest, prediction_gap.reachable_leaf_counts(forest, rows, mask))
        computed = xp.pg2(model, rows, list(range(k)), prune=False).pair_terms
        assert computed <= estimated.sum()
        if k == rows.shape[1]:
            assert computed >= 0.5 * estimated.sum()


def test_a_monte_carlo_sample_is_priced_by_the_models_library(model_and_rows):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    model, rows = model_and_rows
    X, y = rows, np.arange(len(rows), dtype=float)
    forest_model = RandomForestRegressor(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    boosted = GradientBoostingRegressor(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    xgb_price, rf_price, gb_price = (prediction_gap.sample_seconds(import_model(m)) for m in (model, forest_model,
                                                                                              boosted))
    assert gb_price < rf_price and xgb_price < rf_price      # a scikit-learn forest predicts tree by tree
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    for inner in (forest_model, model):                        # a Pipeline: priced by the estimator at its end
        piped = make_pipeline(StandardScaler(), clone(inner)).fit(X, inner.predict(X))
        alone = clone(inner).fit(X, inner.predict(X))
        assert prediction_gap.sample_seconds(import_model(piped), piped) == pytest.approx(
            prediction_gap.sample_seconds(import_model(alone), alone), rel=0.3)


@pytest.mark.parametrize("rtol", [0, 1, -0.1, "1%"])
def test_auto_refuses_a_bad_rtol(model_and_rows, rtol):
    model, rows = model_and_rows
    with pytest.raises(InputError):
        xp.pg2(model, rows, [0], method="auto", rtol=rtol)


def test_progress_bar_on_long_calls_only(model_and_rows, monkeypatch, capsys):
    model, rows = model_and_rows
    xp.pg2(model, rows, [0, 1])
    assert "exact PG²" not in capsys.readouterr().err
    monkeypatch.setattr(_exact, "PROGRESS_AFTER", 0.0)
    quiet = xp.pg2(model, rows, [0, 1], verbose=False)
    assert "exact PG²" not in capsys.readouterr().err
    shown = xp.pg2(model, rows, [0, 1])
    assert "exact PG²" in capsys.readouterr().err
    np.testing.assert_array_equal(shown.value, quiet.value)


# ------------------------------------------------------------- a zero-variance pilot proves nothing

@pytest.fixture(scope="module")
def faraway_row(model_and_rows, diabetes_std):
    """(model, row, feature): the diabetes row whose exact PG² for one perturbed feature is the
    smallest one above 1e-9 (float64 grid integration still resolves it): its thresholds sit so far
    from x (relative to sigma) that 256 Monte Carlo samples all give a zero gap, although the true
    PG² is not 0."""
    model = model_and_rows[0]
    X = np.ascontiguousarray(diabetes_std[0])
    best = None
    for j in range(X.shape[1]):
        exact = xp.pg2(model, X, [j]).value
        positive = np.flatnonzero(exact > 1e-9)
        i = positive[np.argmin(exact[positive])]
        if best is None or exact[i] < best[2]:
            best = (i, j, exact[i])
    i, j, _ = best
    return model, X[i:i + 1], j


def grid_truth(model, row, j, sigma=0.3):
    """Grid integration over the cells of feature j, through the C predict (XGBoost's own sums
    are float32; the C predict's parity with them is tested in test_properties)."""
    return grid_pg2(model, import_model(model).predict, row[0], [j], [gaussian(sigma)] * row.shape[1])


def test_auto_returns_the_exact_value_where_a_pilot_sees_only_zero_gaps(faraway_row):
    model, row, j = faraway_row
    truth = grid_truth(model, row, j)
    assert truth[0] > 0
    pilot = xp.pg2(model, row, [j], method="monte_carlo", n_samples=prediction_gap.AUTO_PILOT_SAMPLES,
                   random_state=0)
    assert pilot.value[0] == 0 and pilot.stderr[0] == 0     # the failing case: 0 ± 0 from the samples
    est = xp.pg2(model, row, [j], method="auto", rtol=0.01, random_state=0)
    np.testing.assert_allclose(est.value, truth, rtol=1e-9)
    assert est.stderr[0] == 0 and est.informative.all()


def test_auto_computes_exactly_the_rows_whose_samples_show_no_error(faraway_row, model_and_rows, monkeypatch):
    """With exact work priced so high that auto samples, the row whose samples are all zero is
    computed exactly (and said so); the other rows keep an informative Monte Carlo estimate."""
    model, row, j = faraway_row
    rows = np.vstack([row, model_and_rows[1]])
    _price_exact_high(monkeypatch)
    est = xp.pg2(model, rows, [j], method="auto", rtol=0.05, random_state=0)
    assert est.method == "monte_carlo" and "computed exactly" in est.reason
    assert est.stderr[0] == 0 and est.informative.all()
    np.testing.assert_allclose(est.value[0], grid_truth(model, row, j)[0], rtol=1e-9)
    exact = xp.pg2(model, rows, [j]).value
    sampled = est.stderr > 0
    assert sampled.any()
    assert np.all(np.abs(est.value - exact)[sampled] <= 5 * est.stderr[sampled])


def test_monte_carlo_flags_a_standard_error_that_says_nothing(faraway_row, model_and_rows):
    model, row, j = faraway_row
    rows = np.vstack([row, model_and_rows[1]])
    est = xp.pg2(model, rows, [j, 2], method="monte_carlo", n_samples=2000, random_state=0)
    assert est.informative.shape == est.value.shape and est.informative[1:].all()
    few = xp.pg2(model, row, [j], method="monte_carlo", n_samples=256, random_state=0)
    assert not few.informative[0] and "uninformative" in repr(few)
    assert xp.pg2(model, row, [j]).informative.all()


def test_auto_skips_the_pilot_when_exact_costs_less_than_any_monte_carlo(model_and_rows, monkeypatch):
    model, rows = model_and_rows

    def no_pilot(*args, **kwargs):
        raise AssertionError("the pilot ran although the cost model had decided")

    monkeypatch.setattr(prediction_gap, "_sampled_pg2", no_pilot)
    for S in ([0], [0, 2, 5], list(range(rows.shape[1]))):
        est = xp.pg2(model, rows, S, method="auto", rtol=0.01)
        assert est.method == "exact" and "without a pilot" in est.reason


def test_dask_auto_keeps_the_guarantee_bitwise(faraway_row, model_and_rows, monkeypatch):
    """On a dask X, auto holds every sampled row to the same guarantee, block by block: the row
    whose samples are all zero is computed exactly, and the result equals the in-memory one bitwise."""
    da = pytest.importorskip("dask.array")
    model, row, j = faraway_row
    rows = np.vstack([row, model_and_rows[1]])
    _price_exact_high(monkeypatch)
    est = xp.pg2(model, rows, [j], method="auto", rtol=0.05, random_state=0)
    lazy = xp.pg2(model, da.from_array(rows, chunks=(3, rows.shape[1])), [j], method="auto", rtol=0.05,
                  random_state=0)
    got = lazy.compute(scheduler="synchronous")
    assert got.method == est.method == "monte_carlo" and "computed exactly" in got.reason
    assert got.stderr[0] == 0 and got.informative.all()
    for a, b in ((got.value, est.value), (got.stderr, est.stderr), (got.informative, est.informative)):
        np.testing.assert_array_equal(a, b)


def _gaussian_noise(forest, sigma=0.3):
    from xai_plugins.prediction_gap._noise import _noise

    return _noise(forest, sigma, None, None, None)


def test_importance_order_ranks_the_features_by_their_pg2_alone_and_starts_the_greedy_ranking(model_and_rows):
    model, rows = model_and_rows
    forest = import_model(model)
    d = forest.n_features
    order = prediction_gap.importance_order(forest, rows, _gaussian_noise(forest))
    alone = np.array([[float(np.ravel(xp.pg2(model, rows[i:i + 1], [j], sigma=0.3, prune=False).value)[0])
                       for j in range(d)] for i in range(len(rows))])
    assert np.array_equal(order, np.argsort(-alone, axis=1, kind="stable"))
    greedy = xp.greedy_pg2_ranking(model, rows, sigma=0.3, verbose=False).ranking
    assert np.array_equal(order[:, 0], greedy[:, 0])             # the greedy's first step is the feature alone
    by_size = prediction_gap.exact_by_size(forest, rows, order="importance", noise=_gaussian_noise(forest),
                                           prune_rtol=_exact.PRUNE_RTOL)
    masks = np.zeros((len(rows), d + 1, d), dtype=bool)
    for i in range(len(rows)):
        for k in range(1, d + 1):
            masks[i, k, order[i, :k]] = True
    counted = prediction_gap.counted_seconds(forest, rows, masks, _gaussian_noise(forest), _exact.PRUNE_RTOL)
    np.testing.assert_allclose(by_size, counted.mean(axis=0), rtol=1e-12)


def test_the_greedy_cost_prices_every_candidate_of_every_step_and_the_path(model_and_rows):
    """Along each row's importance order, step k screens the d - k + 1 sets 'first k - 1 features and one more' at
    the screening bound (the last step, one candidate, screens none) and evaluates the first k exactly."""
    import itertools

    from xai_plugins.prediction_gap._greedy import GREEDY, SCREEN_RTOL

    model, rows = model_and_rows
    forest = import_model(model)
    d, noise = forest.n_features, _gaussian_noise(forest)
    order = prediction_gap.importance_order(forest, rows, noise)
    expected = 0.0
    for i, row in enumerate(rows):
        screened = [set(order[i, :k]) | {j} for k in range(d - 1) for j in range(d) if j not in order[i, :k]]
        path = [set(order[i, :k]) for k in range(1, d + 1)]
        for sets, rtol in ((screened, SCREEN_RTOL), (path, _exact.PRUNE_RTOL)):
            masks = np.array([[j in s for j in range(d)] for s in sets])[None]
            expected += prediction_gap.counted_seconds(forest, row[None], masks, noise, rtol).sum()
        assert len(screened) == sum(itertools.islice(range(d, 0, -1), d - 1))
    assert GREEDY.cost(forest, 3, rows, noise) == pytest.approx(3 * expected / len(rows), rel=1e-12)


def test_the_greedy_cost_of_a_one_feature_model_is_its_one_exact_set():
    from sklearn.ensemble import RandomForestRegressor

    from xai_plugins.prediction_gap._greedy import GREEDY

    X = np.random.default_rng(0).normal(size=(100, 1))
    forest = import_model(RandomForestRegressor(n_estimators=5, random_state=0).fit(X, X[:, 0] ** 2))
    noise = _gaussian_noise(forest)
    one = prediction_gap.counted_seconds(forest, X[:3], np.ones((3, 1, 1), dtype=bool), noise, _exact.PRUNE_RTOL)
    assert GREEDY.cost(forest, 2, X[:3], noise) == pytest.approx(2 * one.mean(), rel=1e-12)
