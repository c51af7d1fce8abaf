"""Certified pruning of the exact PG² (``prune=True``) and the greedy ranking's screening: every
value stays within its proven relative bound of the all-pairs sum, which tests/oracle.py checks
independently, and the greedy ranking is the one the all-pairs sums give."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestClassifier

import xai_plugins as xp
from xai_plugins import _native
from xai_plugins.errors import InputError
from xai_plugins.forest import import_model
from xai_plugins.perturbation import cdf_table, make_perturbation
from xai_plugins.prediction_gap._boundaries import split_boundaries
from xai_plugins.prediction_gap._exact import PRUNE_RTOL

from oracle import gaussian, leaf_pair_pg2

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    yc = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return X, y, yc


@pytest.fixture(scope="module")
def models(data):
    X, y, yc = data
    return {
        "xgb 40x5": xgb.XGBRegressor(n_estimators=40, max_depth=5, tree_method="hist", random_state=0).fit(X, y),
        "xgb 3-class": xgb.XGBClassifier(n_estimators=12, max_depth=4, random_state=0).fit(X, yc),
        "rf 3-class (vector leaves)": RandomForestClassifier(n_estimators=12, max_depth=6, random_state=0).fit(X, yc),
    }


def _strict_and_pruned(model, rows, S, sigma, rtol):
    """(all-pairs values, values pruned at rtol, their pair-term counts) through the C core."""
    forest = import_model(model)
    splits = split_boundaries(forest)
    table = cdf_table(splits, rows, make_perturbation(forest.n_features, sigma), range(forest.n_features))
    mask = np.zeros((len(rows), 1, forest.n_features), dtype=np.uint8)
    mask[:, 0, S] = 1
    strict, strict_terms = _native.pg2(splits.c_forest, splits.cdf_offset, rows, mask, table, prune_rtol=0.0)
    pruned, pruned_terms = _native.pg2(splits.c_forest, splits.cdf_offset, rows, mask, table, prune_rtol=rtol)
    return strict[:, 0], pruned[:, 0], strict_terms, pruned_terms


@pytest.mark.parametrize("sigma", [0.1, 0.3, 1.0])
def test_default_pruning_within_its_bound(data, models, sigma):
    X = data[0]
    rows = np.ascontiguousarray(X[::37][:8])
    d = X.shape[1]
    for name, model in models.items():
        for S in (list(range(d)), [0, 2, 3, 8], [8]):
            strict, pruned, n_all, n_kept = _strict_and_pruned(model, rows, S, sigma, PRUNE_RTOL)
            assert n_kept <= n_all
            # the bound is relative to each value; 1e-15 of the largest covers summation rounding
            slack = PRUNE_RTOL * strict + 1e-15 * strict.max()
            assert np.all(np.abs(pruned - strict) <= slack), (name, sigma, S)


def test_pruning_is_active_on_a_larger_model(data, models):
    """On 40 trees of depth 5 at σ = 0.1 many leaves are improbable: the default pruning leaves
    out a good share of the pair terms, and the public API's value equals the strict one to its bound."""
    X = data[0]
    rows = np.ascontiguousarray(X[:6])
    model = models["xgb 40x5"]
    strict, pruned, n_all, n_kept = _strict_and_pruned(model, rows, list(range(X.shape[1])), 0.1, PRUNE_RTOL)
    assert n_kept < 0.8 * n_all
    public = xp.pg2(model, rows, list(range(X.shape[1])), 0.1)
    loose = xp.pg2(model, rows, list(range(X.shape[1])), 0.1, prune=False)
    assert public.pair_terms == n_kept and loose.pair_terms == n_all
    np.testing.assert_allclose(public.value, loose.value, rtol=PRUNE_RTOL, atol=0)


@pytest.fixture(scope="module")
def small_models(data):
    """Models small enough for the numpy leaf-pair oracle (six features)."""
    X, y, yc = data
    X = X[:, :6]
    return {
        "xgb 12x3": xgb.XGBRegressor(n_estimators=12, max_depth=3, tree_method="hist", random_state=0).fit(X, y),
        "xgb 3-class": xgb.XGBClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, yc),
        "rf 3-class (vector leaves)": RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(X, yc),
    }


def test_looser_bounds_hold_against_the_oracle(data, small_models):
    """Any prune_rtol keeps every value within rtol of the independent numpy leaf-pair oracle, and
    at the loose end the error is a real share of what the bound allows (the check is not vacuous)."""
    X = data[0][:, :6]
    rows = np.ascontiguousarray(X[::97][:3])
    d = X.shape[1]
    used = {rtol: [] for rtol in (1e-9, 1e-4, 1e-2, 0.3)}
    for name, model in small_models.items():
        forest = import_model(model)
        for S in (list(range(d)), [1, 2, 3]):
            reference = np.array([leaf_pair_pg2(forest, x, S, [gaussian(0.3)] * d) for x in rows])
            for rtol in used:
                strict, pruned, _, _ = _strict_and_pruned(model, rows, S, 0.3, rtol)
                reference = reference.reshape(strict.shape)
                np.testing.assert_allclose(strict, reference, rtol=1e-10, atol=1e-12 * reference.max())
                error = np.abs(pruned - reference)
                assert np.all(error <= rtol * reference + 1e-10 * reference.max()), (name, rtol, S)
                used[rtol].append(np.max(error / np.maximum(rtol * reference, 1e-300)))
    assert max(used[0.3]) > 1e-3 and max(used[1e-2]) > 1e-3


def test_greedy_screening_gives_the_all_pairs_ranking(data, models):
    X = data[0]
    rows = X[::29][:10]
    for name, model in models.items():
        screened = xp.greedy_pg2_ranking(model, rows, 0.3)
        strict = xp.greedy_pg2_ranking(model, rows, 0.3, prune=False)
        np.testing.assert_array_equal(screened.ranking, strict.ranking, err_msg=name)
        np.testing.assert_allclose(screened.pg2_path, strict.pg2_path, rtol=1e-12, atol=1e-15, err_msg=name)


def test_greedy_ties_still_go_to_the_lowest_index(data):
    """Features the model never splits on tie exactly at every step (adding one leaves PG²
    unchanged); screening must keep them in index order and give the all-pairs ranking."""
    X, y, _ = data
    padded = np.hstack([X[:, :3], np.zeros((len(X), 3))])    # features 3..5 constant: never split on
    model = xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0).fit(padded, y)
    rows = np.hstack([X[:8, :3], X[:8, 3:6]])
    screened = xp.greedy_pg2_ranking(model, rows, 0.3)
    strict = xp.greedy_pg2_ranking(model, rows, 0.3, prune=False)
    np.testing.assert_array_equal(screened.ranking, strict.ranking)
    for order in screened.ranking:
        unused = [f for f in order if f >= 3]
        assert unused == [3, 4, 5]


@pytest.mark.parametrize("rtol", [-1e-3, 1.0, 2.0, float("nan"), float("inf")])
def test_bad_prune_rtol_is_refused(data, models, rtol):
    X = data[0]
    with pytest.raises(InputError):
        _strict_and_pruned(models["xgb 40x5"], np.ascontiguousarray(X[:2]), [0, 1], 0.3, rtol)
