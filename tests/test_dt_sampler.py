"""DT-Sampler: the CNF's models against an independent brute-force enumeration of trees,
UniGen uniformity (chi-square against the exact distribution), validity of every sampled
tree, exact vs sampled emergence, the min_accuracy = 0 identity (1/K), reproducibility,
binarisation and bad input."""

from __future__ import annotations

import itertools
from collections import Counter
from functools import lru_cache

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from xai_plugins.dt_sampler import DTSampler, TimeBudgetWarning, UnsatisfiableError


# ---------------------------------------------------------------- independent brute force
def shapes(n):
    """All binary tree shapes with n branch nodes as nested (left, right) tuples, None = leaf."""
    if n == 0:
        yield None
        return
    for k in range(n):
        for left in shapes(k):
            for right in shapes(n - 1 - k):
                yield (left, right)


def labelled(shape, used, K):
    """All ways to put tests on a shape with no test repeated on a root-to-leaf path."""
    if shape is None:
        yield None
        return
    for r in range(K):
        if r not in used:
            for left in labelled(shape[0], used | {r}, K):
                for right in labelled(shape[1], used | {r}, K):
                    yield (r, left, right)


def leaf_counts(tree, Xb, y):
    """Counter of (leaf path, class) over the rows; a row with test value 1 goes right."""
    out = Counter()
    for x, c in zip(Xb, y):
        node, path = tree, ()
        while node is not None:
            side = int(x[node[0]])
            path += (side,)
            node = node[1 + side]
        out[path, c] += 1
    return out


def brute_force(Xb, y, N, T):
    """{tree: number of leaf labellings reaching T} over every tree whose best labelling reaches T."""
    K = Xb.shape[1]
    found = {}
    for shape in shapes(N):
        for tree in labelled(shape, frozenset(), K):
            counts = leaf_counts(tree, Xb, y)
            leaves = sorted({path for path, _ in counts})
            per_leaf = [(counts[leaf, 0], counts[leaf, 1]) for leaf in leaves]
            n_empty = N + 1 - len(leaves)      # a leaf nobody reaches: either label
            good = sum(sum(pair[c] for pair, c in zip(per_leaf, choice)) >= T
                       for choice in itertools.product((0, 1), repeat=len(leaves))) * 2**n_empty
            if good:
                found[tree] = good
    return found


@lru_cache(maxsize=None)
def n_trees_closed_form(n, K, depth=0):
    """Trees with n branch nodes, the root at ``depth``: K - depth tests are left for it."""
    if n == 0:
        return 1
    return (K - depth) * sum(n_trees_closed_form(k, K, depth + 1) * n_trees_closed_form(n - 1 - k, K, depth + 1)
                             for k in range(n))


def toy(n_rows=40, n_features=6, seed=0, flips=2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n_rows, n_features))
    y = (X[:, 0] & X[:, 1]) | X[:, 2]
    y[rng.choice(n_rows, flips, replace=False)] ^= 1
    return X, y



X_TOY, Y_TOY = toy()


# ---------------------------------------------------------------- the space is right
@pytest.mark.parametrize("N, n_features, n_rows, seed, level", [
    (1, 4, 20, 1, 0.7), (2, 5, 30, 2, 0.8), (3, 4, 25, 3, 0.8), (3, 6, 40, 4, 0.85), (4, 5, 40, 5, 0.85),
    (4, 6, 40, 0, 0.9)])
def test_exact_space_equals_brute_force(N, n_features, n_rows, seed, level):
    X, y = toy(n_rows, n_features, seed, flips=3)
    s = DTSampler(n_branch_nodes=N, min_accuracy=level, sampler="exact", progress=False).fit(X, y)
    expected = brute_force(X, y, N, s.min_correct_)
    assert s.model_count_ == len(expected) > 0
    assert {t.key() for t in s.trees_} == set(expected)


@pytest.mark.parametrize("N, seed", [(2, 6), (3, 7)])
def test_sampled_leaf_labels_count_labellings(N, seed):
    X, y = toy(24, 4, seed, flips=4)
    s = DTSampler(n_branch_nodes=N, min_accuracy=0.75, sampler="exact", leaf_labels="sampled",
                  progress=False).fit(X, y)
    expected = brute_force(X, y, N, s.min_correct_)
    assert s.model_count_ == sum(expected.values())
    assert Counter(t.key() for t in s.trees_) == Counter(expected)
    assert min(t.n_correct for t in s.trees_) >= s.min_correct_


@pytest.mark.parametrize("N, K", [(1, 3), (2, 4), (3, 4), (4, 5)])
def test_threshold_zero_counts_every_tree_and_gives_one_over_k(N, K):
    X, y = toy(20, K, seed=N)
    s = DTSampler(n_branch_nodes=N, min_accuracy=0, sampler="exact", progress=False).fit(X, y)
    assert s.model_count_ == n_trees_closed_form(N, K)
    # the paper: at threshold 0 each feature is tested with probability 1/K (test relabelling symmetry)
    np.testing.assert_allclose(s.emergence_probability_["probability"], 1 / K, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- UniGen samples
@pytest.fixture(scope="module")
def hashed():
    """A space of a few hundred trees: UniGen has to use XOR hashing, not enumeration."""
    exact = DTSampler(n_branch_nodes=3, min_accuracy=0.8, sampler="exact", progress=False).fit(X_TOY, Y_TOY)
    sampled = DTSampler(n_branch_nodes=3, min_accuracy=0.8, n_samples=240, random_state=11,
                        progress=False, confidence=0.999).fit(X_TOY, Y_TOY)
    return exact, sampled


def test_unigen_uniform_over_small_space():
    exact = DTSampler(n_branch_nodes=3, min_accuracy=0.85, sampler="exact", progress=False).fit(X_TOY, Y_TOY)
    sampled = DTSampler(n_branch_nodes=3, min_accuracy=0.85, n_samples=400, random_state=3,
                        progress=False).fit(X_TOY, Y_TOY)
    keys = [t.key() for t in exact.trees_]
    seen = Counter(t.key() for t in sampled.trees_)
    assert set(seen) <= set(keys)
    observed = np.array([seen[k] for k in keys])
    assert stats.chisquare(observed).pvalue > 0.01


def test_unigen_uniform_over_hashed_space(hashed):
    exact, sampled = hashed
    assert exact.model_count_ > 150            # beyond UniGen's enumeration cut-off
    # bins: the root test; expected frequencies from the exact space
    expected = Counter(t.key()[0] for t in exact.trees_)
    observed = Counter(t.key()[0] for t in sampled.trees_)
    roots = sorted(expected)
    f_exp = np.array([expected[r] for r in roots]) / exact.model_count_ * len(sampled.trees_)
    assert stats.chisquare([observed[r] for r in roots], f_exp).pvalue > 0.01


def test_every_sampled_tree_is_valid_and_accurate(hashed):
    exact, sampled = hashed
    space = {t.key() for t in exact.trees_}
    for tree in sampled.trees_:
        assert tree.key() in space
        # a tree: N branch nodes, each but the root with one parent, children after parents
        children = [c for c in np.r_[tree.left, tree.right] if c >= 0]
        assert sorted(children) == list(range(1, 3))
        assert all(c > i for i in range(3) for c in (tree.left[i], tree.right[i]) if c >= 0)

        def paths(tree, i, seen):
            assert tree.test[i] not in seen
            for c in (tree.left[i], tree.right[i]):
                if c >= 0:
                    paths(tree, c, seen | {tree.test[i]})
        paths(tree, 0, frozenset())
        assert np.sum(tree.predict(X_TOY) == Y_TOY) >= sampled.min_correct_ == 32


def test_exact_and_sampled_emergence_agree(hashed):
    exact, sampled = hashed
    for attr in ("emergence_probability_", "tree_fraction_"):
        p = getattr(exact, attr)["probability"]
        est = getattr(sampled, attr)
        assert ((est["ci_low"] <= p) & (p <= est["ci_high"])).all(), attr
    # exact mode reports no sampling error
    assert (exact.emergence_probability_["ci_low"] == exact.emergence_probability_["probability"]).all()


def test_emergence_definitions(hashed):
    exact, _ = hashed
    counts = np.zeros(6)
    present = np.zeros(6)
    for tree in exact.trees_:
        used = np.bincount(tree.features, minlength=6)
        counts += used
        present += used > 0
    n = len(exact.trees_)
    np.testing.assert_allclose(exact.emergence_probability_["probability"], counts / (3 * n))
    np.testing.assert_allclose(exact.tree_fraction_["probability"], present / n)
    assert exact.emergence_probability_["probability"].sum() == pytest.approx(1.0)


def test_seeded_runs_are_reproducible():
    kw = dict(n_branch_nodes=2, min_accuracy=0.8, n_samples=30, progress=False)
    a = DTSampler(random_state=5, **kw).fit(X_TOY, Y_TOY)
    b = DTSampler(random_state=5, **kw).fit(X_TOY, Y_TOY)
    c = DTSampler(random_state=6, **kw).fit(X_TOY, Y_TOY)
    assert [t.key() for t in a.trees_] == [t.key() for t in b.trees_]
    pd.testing.assert_frame_equal(a.emergence_probability_, b.emergence_probability_)
    assert [t.key() for t in a.trees_] != [t.key() for t in c.trees_]


def test_predict_is_majority_vote(hashed):
    _, sampled = hashed
    votes = np.mean([t.predict(X_TOY) for t in sampled.trees_], axis=0)
    np.testing.assert_array_equal(sampled.predict(X_TOY), (votes >= 0.5).astype(int))


# ---------------------------------------------------------------- binarisation and output
def test_binarisation_and_per_feature_aggregation():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"flag": rng.integers(0, 2, 30), "size": rng.normal(size=30), "other": rng.normal(size=30)})
    y = (X["flag"].to_numpy() == 1) | (X["size"].to_numpy() > 0.5)
    s = DTSampler(n_branch_nodes=2, min_accuracy=0.8, sampler="exact", progress=False,
                  thresholds={"other": [0.0]}).fit(X, y)
    names = [t.name for t in s.tests_]
    quartiles = np.quantile(X["size"], [0.25, 0.5, 0.75])
    assert names == ["flag"] + [f"size > {q:.4g}" for q in quartiles] + ["other > 0"]
    assert list(s.emergence_probability_.index) == ["flag", "size", "other"]
    tests = s.test_emergence_probability_
    per_feature = tests.groupby("original_feature", sort=False)["probability"].sum()
    np.testing.assert_allclose(s.emergence_probability_["probability"], per_feature[["flag", "size", "other"]])
    assert (s.tree_fraction_["probability"] <= s.test_tree_fraction_.groupby("original_feature")["probability"]
            .sum()[["flag", "size", "other"]] + 1e-12).all()
    np.testing.assert_allclose(s.uniform_probability_, [1 / 5, 3 / 5, 1 / 5])
    assert s.classes_.tolist() == [False, True]
    assert all(r.endswith(("then False", "then True")) for r in s.trees_[0].rules())


def test_plots_return_axes():
    s = DTSampler(n_branch_nodes=2, min_accuracy=0.8, sampler="exact", progress=False).fit(X_TOY, Y_TOY)
    assert s.plot().get_title().startswith("DT-Sampler")
    with pytest.warns(UserWarning, match="no tree reaches"):
        path = s.emergence_path(X_TOY, Y_TOY, [0.0, 0.8, 1.0])
    assert sorted(path["min_accuracy"].unique()) == [0.0, 0.8]
    assert len(s.plot_path().get_lines()) == 6


# ---------------------------------------------------------------- bad input
def test_more_than_two_classes_is_refused():
    with pytest.raises(ValueError, match="binary classification only"):
        DTSampler(sampler="exact").fit(X_TOY, np.arange(40) % 3)
    with pytest.raises(ValueError, match="1 class"):
        DTSampler(sampler="exact").fit(X_TOY, np.zeros(40))


def test_unreachable_threshold_is_unsatisfiable():
    with pytest.raises(UnsatisfiableError, match="at least 40 of the 40"):
        DTSampler(n_branch_nodes=1, min_accuracy=1.0, progress=False).fit(X_TOY, Y_TOY)


def test_time_budget_warns_with_estimate():
    with pytest.warns(TimeBudgetWarning, match=r"estimated to take \d+ s") as record:
        DTSampler(n_branch_nodes=2, min_accuracy=0.8, n_samples=3, time_budget=1e-9, progress=False,
                  random_state=0).fit(X_TOY, Y_TOY)
    assert record[0].filename == __file__   # the warning points at the caller of fit


def test_nan_constant_and_bad_parameters():
    X = X_TOY.astype(float)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DTSampler().fit(X, Y_TOY)
    X = X_TOY.copy()
    X[:, 4] = 1
    with pytest.raises(ValueError, match=r"constant features \['x4'\]"):
        DTSampler().fit(X, Y_TOY)
    with pytest.raises(ValueError, match="do not split"):
        DTSampler(thresholds={"x0": [5.0]}).fit(X_TOY, Y_TOY)
    with pytest.raises(ValueError, match="one label per row"):
        DTSampler().fit(X_TOY, Y_TOY[:-1])
    with pytest.raises(ValueError, match="missing"):
        DTSampler().fit(X_TOY, np.where(Y_TOY == 1, 1.0, np.nan))
    for bad in (dict(n_branch_nodes=0), dict(min_accuracy=1.5), dict(sampler="quick"), dict(n_samples=0),
                dict(leaf_labels="x"), dict(cardinality="x"), dict(confidence=1.0), dict(time_budget=0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            DTSampler(**bad).fit(X_TOY, Y_TOY)


def test_wilson_interval_contains_the_estimate():
    """At p = 0 and p = 1 the textbook formula leaves rounding error outside [low, high]; the
    interval must still contain p (matplotlib refuses negative error bars)."""
    from xai_plugins.dt_sampler import wilson_interval

    for n in range(1, 60):
        p = np.arange(n + 1) / n
        low, high = wilson_interval(p, n, 0.95)
        assert np.all(low <= p) and np.all(p <= high)
        assert np.all(low >= 0) and np.all(high <= 1)
        inside = (p > 0) & (p < 1)
        assert np.all(low[inside] < p[inside]) and np.all(high[inside] > p[inside])
    # a normal approximation check at a large n: the interval is close to p ± z sqrt(p(1-p)/n)
    low, high = wilson_interval(np.array([0.5]), 10_000, 0.95)
    assert high[0] - low[0] == pytest.approx(2 * 1.959964 * 0.005, rel=1e-3)
