"""Exact PG² on the Forest of the outputs a call asks for (``exact_view``): a binary forest whose class
probabilities sum to one is summed for one class, one output of a multi-output model on the trees and leaf
values of that output alone. Each view is checked against the brute-force grid oracle and against the C core
run on the whole model, and the greedy ranking of one output against an exhaustive greedy on the whole model."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor

import xai_plugins as xp
from xai_plugins import _native
from xai_plugins.errors import InputError
from xai_plugins.perturbation import cdf_table
from xai_plugins.prediction_gap._boundaries import split_boundaries
from xai_plugins.prediction_gap._noise import _noise
from xai_plugins.prediction_gap._output_view import exact_view

from oracle import gaussian, grid_pg2

xgb = pytest.importorskip("xgboost")
SIGMA = 0.4


def _whole_model_pg2(forest, X, S):
    """PG² (n, outputs) of every output by the C core on the whole Forest, no view, no pruning."""
    splits = split_boundaries(forest)
    rows = np.ascontiguousarray(X, dtype=np.float64)
    table = cdf_table(splits, rows, _noise(forest, SIGMA, None, None), range(forest.n_features))
    mask = np.zeros((len(rows), 1, forest.n_features), dtype=np.uint8)
    mask[:, 0, S] = 1
    return _native.pg2(splits.c_forest, splits.cdf_offset, rows, mask, table, n_jobs=1)[0][:, 0, :]


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0, random_state=0)
    return X, y


@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesClassifier])
def test_a_binary_forest_is_summed_for_one_class_and_both_classes_match_the_oracle(binary, cls):
    X, y = binary
    model = cls(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    forest = xp.import_model(model)
    view = exact_view(forest)
    assert view.forest.n_outputs == 1 and view.forest.leaf_width == 1
    np.testing.assert_array_equal(view.take, [0, 0])
    S = [0, 2]
    got = xp.pg2(model, X[:3], S, sigma=SIGMA).value
    whole = _whole_model_pg2(forest, X[:3], S)
    for i in range(3):
        ref = grid_pg2(model, model.predict_proba, X[i], S, [gaussian(SIGMA)] * 4)
        np.testing.assert_allclose(got[i], ref, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(got, whole, rtol=1e-12, atol=1e-18)


def test_two_outputs_that_do_not_sum_to_a_constant_are_both_summed():
    X, Y = make_regression(n_samples=200, n_features=4, n_targets=2, random_state=0)
    model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, Y)
    forest = xp.import_model(model)
    view = exact_view(forest)
    assert view.forest is forest
    np.testing.assert_array_equal(view.take, [0, 1])
    got = xp.pg2(model, X[:2], [1, 3], sigma=SIGMA).value
    for i in range(2):
        np.testing.assert_allclose(got[i], grid_pg2(model, model.predict, X[i], [1, 3], [gaussian(SIGMA)] * 4),
                                   rtol=1e-9)


@pytest.fixture(scope="module")
def three_classes():
    X, y = make_classification(n_samples=400, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=1)
    return X, y


def _models(X, y):
    return {"random forest": RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, y),
            "xgboost": xgb.XGBClassifier(n_estimators=6, max_depth=3, random_state=0).fit(X, y)}


@pytest.mark.parametrize("name", ["random forest", "xgboost"])
def test_one_output_of_a_multi_output_model_is_summed_alone(three_classes, name):
    X, y = three_classes
    model = _models(X, y)[name]
    forest = xp.import_model(model)
    whole = _whole_model_pg2(forest, X[:4], [0, 1, 3])
    for c in range(3):
        view = exact_view(forest, c)
        assert view.forest.n_outputs == 1 and view.forest.leaf_width == 1
        # a boosted model's trees each write one class: the other classes' trees are left out
        assert view.forest.n_trees == (forest.n_trees // 3 if name == "xgboost" else forest.n_trees)
        mine = _whole_model_pg2(view.forest, X[:4], [0, 1, 3])[:, view.take[0]]
        np.testing.assert_allclose(mine, whole[:, c], rtol=1e-12)


@pytest.mark.parametrize("name", ["random forest", "xgboost"])
def test_the_greedy_ranking_of_one_output_is_the_exhaustive_greedy_of_that_output(three_classes, name):
    X, y = three_classes
    model = _models(X, y)[name]
    forest = xp.import_model(model)
    d = forest.n_features
    for c in range(3):
        got = xp.greedy_pg2_ranking(model, X[:3], sigma=SIGMA, output=c, prune=False)
        for i in range(3):
            chosen, path = [], []
            for _ in range(d):
                rest = [j for j in range(d) if j not in chosen]
                values = [_whole_model_pg2(forest, X[i:i + 1], chosen + [j])[0, c] for j in rest]
                chosen.append(rest[int(np.argmax(values))])
                path.append(max(values))
            np.testing.assert_array_equal(got.ranking[i], chosen)
            np.testing.assert_allclose(got.pg2_path[i], path, rtol=1e-12)


def test_a_mean_whose_outputs_have_unequal_tree_counts_keeps_the_whole_model():
    # a mean over six one-output trees of which two write output 0, three output 1 and one output 2: the C
    # core scales every output by 3 / 6, so output 1's trees alone would be scaled otherwise
    stump = dict(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[0, 0, 0], threshold=[0.5, 0, 0],
                 missing_left=[1, 0, 0])
    leaves = [(1, 2), (3, -1), (0.5, 4), (-2, 2), (1, 6), (3, 3.5)]
    forest = xp.Forest(**{k: np.concatenate([stump[k]] * 6) for k in stump},
                       value=np.concatenate([[0.0, a, b] for a, b in leaves]), tree_offset=np.arange(0, 19, 3),
                       tree_target=[0, 0, 1, 1, 1, 2], base_score=[0.0, 0.0, 0.0], n_features=1, split_rule="le",
                       input_float32=False, aggregate="mean", task="regression", output_space="raw",
                       model_type="manual", output_names=["a", "b", "c"])
    view = exact_view(forest, 1)
    assert view.forest is forest
    np.testing.assert_array_equal(view.take, [1])
    assert exact_view(forest, 0).forest.n_trees == 2 and exact_view(forest, 2).forest is forest
    x = np.array([[0.3]])
    # x' crosses the split with p = P(0.3 + e > 0.5), moving output o by (3 / 6) * sum of its trees' (b - a)
    p = gaussian(SIGMA).sf(0.2)
    jump = np.array([sum(b - a for (a, b), t in zip(leaves, [0, 0, 1, 1, 1, 2]) if t == o) for o in range(3)])
    want = p * (0.5 * jump) ** 2
    for c in range(3):
        got = xp.greedy_pg2_ranking(forest, x, sigma=SIGMA, output=c, prune=False).pg2_path[0, 0]
        np.testing.assert_allclose(got, want[c], rtol=1e-12)


@pytest.mark.parametrize("name", ["random forest", "xgboost"])
def test_pg2_and_pgi2_of_one_output_are_that_output_of_every_output(three_classes, name):
    X, y = three_classes
    model = _models(X, y)[name]
    rows = X[:5]
    ranking = np.tile(np.arange(4), (5, 1))
    every = xp.pg2(model, rows, [0, 2, 3], sigma=SIGMA)
    scores = xp.pgi2(model, rows, ranking, sigma=SIGMA)
    sampled = xp.pg2(model, rows, [0, 2], sigma=SIGMA, method="monte_carlo", n_samples=500, random_state=3)
    sampled_pgi2 = xp.pgi2(model, rows, ranking, sigma=SIGMA, sampled_from=3, n_samples=300, random_state=4)
    for c, label in enumerate(model.classes_):
        for output in (c, label):
            one = xp.pg2(model, rows, [0, 2, 3], sigma=SIGMA, output=output)
            assert one.value.shape == (5,)
            np.testing.assert_allclose(one.value, every.value[:, c], rtol=1e-12)
            np.testing.assert_allclose(xp.pgi2(model, rows, ranking, sigma=SIGMA, output=output), scores[:, c],
                                       rtol=1e-12)
        # the sampled values are the same draws' (bit for bit), of that output
        mc = xp.pg2(model, rows, [0, 2], sigma=SIGMA, method="monte_carlo", n_samples=500, random_state=3, output=c)
        np.testing.assert_array_equal(mc.value, sampled.value[:, c])
        np.testing.assert_array_equal(mc.stderr, sampled.stderr[:, c])
        mixed = xp.pgi2(model, rows, ranking, sigma=SIGMA, sampled_from=3, n_samples=300, random_state=4, output=c)
        np.testing.assert_allclose(mixed, sampled_pgi2[:, c], rtol=1e-12)


def test_an_output_a_single_output_model_does_not_have_is_refused(binary):
    X, y = binary
    model = xgb.XGBClassifier(n_estimators=3, max_depth=2).fit(X, y)
    np.testing.assert_array_equal(xp.pg2(model, X[:2], [0], output=0).value, xp.pg2(model, X[:2], [0]).value)
    with pytest.raises(InputError, match="single output"):
        xp.pg2(model, X[:2], [0], output=1)
    with pytest.raises(InputError, match="single output"):
        xp.pgi2(model, X[:2], np.arange(4), output=2)


def test_the_counted_terms_are_the_terms_the_exact_sum_takes(three_classes):
    """``pg2_terms`` (the cost model's count) walks as the exact sum does: its leaf-pair terms are those the
    leaf-pair loop reports summing, with and without pruning, and the leaves it weighs bound the kept ones."""
    X, y = three_classes
    forest = xp.import_model(_models(X, y)["random forest"])
    splits = split_boundaries(forest)
    rows = np.ascontiguousarray(X[:6], dtype=np.float64)
    table = cdf_table(splits, rows, _noise(forest, SIGMA, None, None), range(forest.n_features))
    mask = (np.random.default_rng(0).random((6, 3, forest.n_features)) < 0.6).astype(np.uint8)
    for rtol in (0.0, 1e-3):
        weighed, terms = _native.pg2_terms(splits.c_forest, splits.cdf_offset, rows, mask, table, rtol)
        for i in range(6):
            for s in range(3):
                _, summed = _native.pg2(splits.c_forest, splits.cdf_offset, rows[i:i + 1], mask[i:i + 1, s:s + 1],
                                        table[i:i + 1], n_jobs=1, prune_rtol=rtol, pairs="leaves")
                assert terms[i, s] == summed
                assert weighed[i, s] * weighed[i, s] >= 2 * terms[i, s]



def test_a_forest_is_freed_once_unused_whatever_was_computed_on_it(binary):
    """The caches keyed by a Forest (its C struct, its split boundaries, its exact views) must not keep it alive."""
    import gc
    import weakref

    X, y = binary

    def freed(cls, call):
        model = cls(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
        forest = xp.import_model(model)
        call(forest)
        gone = weakref.ref(forest)
        del forest, model
        gc.collect()
        return gone() is None

    for cls in (RandomForestClassifier, RandomForestRegressor):
        assert freed(cls, lambda f: None)
        assert freed(cls, lambda f: (exact_view(f), exact_view(f, 0)))
        assert freed(cls, lambda f: xp.greedy_pg2_ranking(f, X[:2], sigma=SIGMA, verbose=False))
        assert freed(cls, lambda f: xp.pg2(f, X[:2], [0, 1], sigma=SIGMA, method="auto", verbose=False))
