"""Bad input to PG² / PGI² / greedy ranking raises a clear exception before reaching C."""

import numpy as np
import pytest
from scipy import stats
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp


@pytest.fixture(scope="module")
def fitted(diabetes):
    X, y = diabetes
    return RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y), X[:5].copy()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sigma=0.0), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=-1.0), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=np.nan), ValueError, "sigma must be finite"),
    (dict(sigma=[0.1, 0.2]), ValueError, "one value per feature"),
    (dict(sigma="wide"), TypeError, "sigma must be a number"),
    (dict(perturbation=[stats.norm()] * 3), ValueError, "3 distributions"),
    (dict(perturbation="gauss"), TypeError, "frozen scipy.stats"),
    (dict(perturbation=stats.poisson(3)), TypeError, "continuous"),
    (dict(method="bootstrap"), ValueError, "method must be one of"),
    (dict(method="monte_carlo", n_samples=1), ValueError, "n_samples"),
    (dict(background=np.ones((10, 10))), ValueError, "constant"),
])
def test_bad_noise_and_method(fitted, kwargs, error, match):
    model, X = fitted
    with pytest.raises(error, match=match):
        xp.pg2(model, X, [0, 1], **kwargs)


def test_bad_data(fitted):
    model, X = fitted
    with pytest.raises(ValueError, match="columns"):
        xp.pg2(model, X[:, :4], [0])
    with pytest.raises(ValueError, match="empty"):
        xp.pg2(model, X[:0], [0])
    bad = X.copy()
    bad[1, 3] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        xp.pg2(model, bad, [0])
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN in perturbed feature 3"):
        xp.pg2(model, bad, [3])
    with pytest.raises(ValueError, match="NaN"):
        xp.greedy_pg2_ranking(model, bad)
    with pytest.raises(TypeError, match="numeric"):
        xp.pg2(model, [["a"] * 10], [0])


def test_bad_sets_and_rankings(fitted):
    model, X = fitted
    with pytest.raises(IndexError, match="out of range"):
        xp.pg2(model, X, [0, 10])
    with pytest.raises(IndexError, match="out of range"):
        xp.pg2(model, X, [-1])
    with pytest.raises(ValueError, match="duplicated"):
        xp.pg2(model, X, [2, 2])
    with pytest.raises(TypeError, match="integer"):
        xp.pg2(model, X, [0.5])
    with pytest.raises(ValueError, match="boolean S"):
        xp.pg2(model, X, np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="permutation"):
        xp.pgi2(model, X, [0] * 10)
    with pytest.raises(ValueError, match="shape"):
        xp.pgi2(model, X, np.arange(5))
    with pytest.raises(ValueError, match="single output"):
        xp.greedy_pg2_ranking(model, X, output="class_9")


def test_invalid_cdf_table_is_caught_in_c(fitted):
    from xai_plugins import _native
    from xai_plugins.forest import import_model

    model, X = fitted
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    splits = split_boundaries(import_model(model))
    table = np.zeros((len(X), 2 * splits.cdf_offset[-1]))  # CDF and survival halves; last CDF entries must be 1
    with pytest.raises(ValueError, match="CDF"):
        _native.pg2(splits.c_forest, splits.cdf_offset, np.ascontiguousarray(X, dtype=float),
                    np.ones((len(X), 1, 10), dtype=np.uint8), table)


def test_split_ranks_are_checked_once_and_against_each_table(fitted):
    """Ranks out of their feature's range are refused when the PG² struct is built (with the node);
    a table layout too small for the ranks is refused by every PG² call."""
    from xai_plugins import _native
    from xai_plugins.errors import InputIndexError
    from xai_plugins.forest import import_model
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    model, X = fitted
    forest = import_model(model)
    splits = split_boundaries(forest)
    bad = splits.threshold_rank.copy()
    node = int(np.flatnonzero(forest.left_child >= 0)[0])
    bad[node] = splits.threshold_rank.max() + 1000
    with pytest.raises(InputIndexError, match=f"node {node}"):
        _native.CForest(forest, threshold_rank=bad, rank_count=[len(b) for b in splits.boundaries])
    small = splits.cdf_offset.copy()
    small[1:] -= 1                                  # feature 0's table one entry short
    rows = np.ascontiguousarray(X[:2], dtype=float)
    table = np.zeros((2, 2 * small[-1]))
    with pytest.raises(InputIndexError):
        _native.pg2(splits.c_forest, small, rows, np.ones((2, 1, X.shape[1]), dtype=np.uint8), table)
