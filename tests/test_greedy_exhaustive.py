"""The greedy PG² ranking against an exhaustive greedy: at every step, the exact PG² of every candidate
set (the chosen features plus one more) through the same C evaluation, the objective summed over the
outputs in their order, the argmax lowest index first. The ranking and its path must be the same bit for
bit, with and without pruning, on boosted, bagged, oblivious and categorical models and on exact ties; the
ranking alone (``path=False``) is the same ranking."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

import xai_plugins as xp
from xai_plugins import _native
from xai_plugins.engines import engine_for
from xai_plugins.errors import InputError
from xai_plugins.perturbation import cdf_table
from xai_plugins.prediction_gap._boundaries import split_boundaries
from xai_plugins.prediction_gap._exact import PRUNE_RTOL
from xai_plugins.prediction_gap._greedy import _prepare, greedy_objective

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def _inputs(model, X, output=None, background=None):
    """(C forest, its table layout, rows, CDF tables, output weights) as the public greedy ranking builds them."""
    plan = _prepare(engine_for(X), model, X, 0.3, None, background, output, True, False, 1, None)
    rows = np.ascontiguousarray(plan.rows, dtype=np.float64)
    view, weight = greedy_objective(plan.shipped, plan.shared["output"])
    splits = split_boundaries(view.forest)
    table = cdf_table(splits, rows, plan.shared["noise"], range(view.forest.n_features))
    return splits, rows, table, weight


def _exhaustive(splits, rows, table, weight, rtol):
    """(ranking, path) of the greedy ranking with every candidate of every step evaluated at ``rtol``."""
    n, d = rows.shape
    ranking, path = np.empty((n, d), dtype=np.int32), np.empty((n, d))
    for i in range(n):
        chosen = []
        for step in range(d):
            rest = [j for j in range(d) if j not in chosen]
            mask = np.zeros((1, len(rest), d), dtype=np.uint8)
            mask[0, :, chosen] = 1
            mask[0, np.arange(len(rest)), rest] = 1
            values, _ = _native.pg2(splits.c_forest, splits.cdf_offset, rows[i:i + 1], mask, table[i:i + 1],
                                    n_jobs=1, prune_rtol=rtol)
            objective = []
            for v in values[0]:
                total = 0.0
                for o in range(len(weight)):  # the C core's order of the sum over outputs
                    total += weight[o] * v[o]
                objective.append(total)
            best = int(np.argmax(objective))  # the first (lowest index) maximum
            chosen.append(rest[best])
            ranking[i, step], path[i, step] = rest[best], objective[best]
    return ranking, path


def _check(model, X, output=None, background=None):
    splits, rows, table, weight = _inputs(model, X, output, background)
    for rtol in (0.0, PRUNE_RTOL):
        ranking, path = _native.greedy_pg2(splits.c_forest, splits.cdf_offset, rows, table, weight, n_jobs=1,
                                           prune_rtol=rtol)
        want_ranking, want_path = _exhaustive(splits, rows, table, weight, rtol)
        np.testing.assert_array_equal(ranking, want_ranking, err_msg=f"prune_rtol {rtol}")
        np.testing.assert_array_equal(path.view(np.int64), want_path.view(np.int64), err_msg=f"prune_rtol {rtol}")
        alone, no_path = _native.greedy_pg2(splits.c_forest, splits.cdf_offset, rows, table, weight, n_jobs=1,
                                            prune_rtol=rtol, path=False)
        assert no_path is None
        np.testing.assert_array_equal(alone, want_ranking, err_msg=f"ranking alone, prune_rtol {rtol}")
    return ranking


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X, y, np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))


def test_xgboost_regressor_deep_enough_to_prune(diabetes):
    X, y, _ = diabetes
    model = xgb.XGBRegressor(n_estimators=60, max_depth=5, tree_method="hist", random_state=0).fit(X, y)
    _check(model, X[::41][:6])


def test_xgboost_classifier_each_output_and_their_sum(diabetes):
    """Three outputs (one tree per class and round): the summed objective and one class's alone."""
    X, _, yc = diabetes
    model = xgb.XGBClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, yc)
    _check(model, X[:4])
    _check(model, X[:4], output=2)


def test_lightgbm_regressor(diabetes):
    X, y, _ = diabetes
    model = lgb.LGBMRegressor(n_estimators=40, num_leaves=15, random_state=0, verbose=-1).fit(X, y)
    _check(model, X[5:10])


def test_random_forests_with_vector_leaves(diabetes):
    """Class fractions in every leaf (several outputs summed per leaf pair) and a regression forest."""
    X, y, yc = diabetes
    classifier = RandomForestClassifier(n_estimators=15, max_depth=7, random_state=0).fit(X, yc)
    _check(classifier, X[:4])
    _check(classifier, X[:3], output=1)
    regressor = RandomForestRegressor(n_estimators=10, min_samples_leaf=5, random_state=0).fit(X, y)
    _check(regressor, X[:4])


def test_catboost_oblivious_trees(diabetes):
    catboost = pytest.importorskip("catboost")
    X, y, _ = diabetes
    model = catboost.CatBoostRegressor(iterations=30, depth=4, random_seed=0, verbose=0, thread_count=1,
                                       allow_writing_files=False).fit(X, y)
    _check(model, X[:4])


def test_categorical_models():
    """A one-hot Pipeline (set splits on the input column) and a LightGBM model on category columns."""
    rng = np.random.default_rng(5)
    n = 400
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(["paris", "rome", "oslo", "lima"], n),
                      "sex": rng.choice(["f", "m"], n), "income": rng.normal(0, 1, n)})
    y = (X.age / 10 + X.city.map({"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0}) + 2.0 * (X.sex == "f")
         + X.income + 0.1 * rng.normal(size=n)).to_numpy()
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore"), ["city", "sex"])],
                              remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", RandomForestRegressor(n_estimators=12, max_depth=6,
                                                                       random_state=0))]).fit(X, y)
    _check(pipe, X.iloc[:4], background=X)
    frame = X.astype({"city": "category", "sex": "category"})
    model = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1.0, random_state=0, verbose=-1).fit(frame, y)
    _check(model, frame.iloc[:4], background=frame)


def test_exact_ties_go_to_the_lowest_index(diabetes):
    """Features the model never splits on tie exactly at every step: they come last, in index order,
    as the exhaustive greedy puts them, with and without pruning."""
    X, y, _ = diabetes
    padded = np.hstack([np.zeros((len(X), 2)), X[:, :3], np.zeros((len(X), 2))])
    model = xgb.XGBRegressor(n_estimators=30, max_depth=3, random_state=0).fit(padded, y)
    ranking = _check(model, padded[:5])
    for order in ranking:
        assert [f for f in order if f in (0, 1, 5, 6)] == [0, 1, 5, 6]


def test_public_ranking_alone(diabetes):
    """``path=False``: the same ranking through the public API, the path NaN; in parallel threads too."""
    X, y, _ = diabetes
    model = xgb.XGBRegressor(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    full = xp.greedy_pg2_ranking(model, X[:6], 0.3, n_jobs=1)
    for n_jobs in (1, 2):
        alone = xp.greedy_pg2_ranking(model, X[:6], 0.3, path=False, n_jobs=n_jobs)
        np.testing.assert_array_equal(alone.ranking, full.ranking)
        assert np.isnan(alone.pg2_path).all() and alone.pg2_path.shape == full.pg2_path.shape


def test_ranking_alone_still_checks_the_tables_of_a_set_it_does_not_evaluate():
    """One feature: the ranking alone evaluates nothing, yet a bad CDF table is refused as with the path."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    model = xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X, X[:, 0] ** 2)
    splits, rows, table, weight = _inputs(model, X[:3])
    ranking, _ = _native.greedy_pg2(splits.c_forest, splits.cdf_offset, rows, table, weight, path=False)
    np.testing.assert_array_equal(ranking, 0)
    table[:, 1] = 2.0  # a CDF above 1
    for path in (True, False):
        with pytest.raises(InputError):
            _native.greedy_pg2(splits.c_forest, splits.cdf_offset, rows, table, weight, path=path)
