"""The grid path of PG²'s pair sums for oblivious trees (csrc/pg2_grid.c): on random oblivious forests
(numeric and categorical levels, features repeated across levels, NaN routing, per-feature σ, categorical
laws with an "other" share, several outputs), every ``pairs=`` path of the C core agrees with an independent
oracle — the joint grid of every perturbed feature's cells, the forest evaluated in numpy at one point per
cell — and with the others; the greedy ranking is the same on both paths; forests that are not oblivious
are refused by the grid path and left to the leaf pairs by ``auto``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from xai_plugins import _native
from xai_plugins.errors import InputError, UnsupportedModelError
from xai_plugins.forest.layout import category_bitsets, concat_trees
from xai_plugins.prediction_gap._boundaries import split_boundaries
from xai_plugins.prediction_gap._exact import PRUNE_RTOL

from oracle import cell_points, noise_mass

PATHS = ("leaves", "grids", "auto")


def oblivious_forest(rng, n_trees, depth, cats=(0, 0, 3, 0, 5), width=1, targets=1, aggregate="sum"):
    """A random forest of oblivious trees over features with ``cats`` categories (0: numeric): each level
    one condition (a feature, repeated freely; a threshold from a small pool of the feature's, or a set
    of atoms going left; a NaN direction), applied by every node of the level. Returns the Forest and
    the trees' levels [(feature, threshold or left atoms, missing_left)] for :func:`predict`."""
    d = len(cats)
    pools = [np.sort(rng.normal(size=4)).round(2) for _ in range(d)]
    trees, all_levels, nodes, atoms, node_k = [], [], [], [], []
    offset = 0
    for t in range(n_trees):
        lv = []
        for _ in range(depth):
            j = int(rng.integers(d))
            if cats[j]:
                left = np.flatnonzero(rng.random(cats[j] + 1) < 0.5)     # atoms 0 .. K (K: "other")
                lv.append((j, left, bool(rng.random() < 0.5)))
            else:
                lv.append((j, float(rng.choice(pools[j])), bool(rng.random() < 0.5)))
        D = len(lv)
        n_inner = 2 ** D - 1
        level_of = [int(np.floor(np.log2(i + 1))) for i in range(n_inner)]
        left = np.concatenate((2 * np.arange(n_inner) + 1, np.full(n_inner + 1, -1)))
        right = np.concatenate((2 * np.arange(n_inner) + 2, np.full(n_inner + 1, -1)))
        feature = [lv[level_of[i]][0] for i in range(n_inner)] + [0] * (n_inner + 1)
        threshold = [0.0 if cats[lv[level_of[i]][0]] else lv[level_of[i]][1] for i in range(n_inner)]
        for i in range(n_inner):
            if cats[lv[level_of[i]][0]]:
                nodes.append(offset + i)
                atoms.append(lv[level_of[i]][1])
                node_k.append(cats[lv[level_of[i]][0]])
        values = np.concatenate((np.zeros((n_inner, width)), rng.normal(size=(n_inner + 1, width))))
        trees.append(dict(left=left, right=right, feature=feature, threshold=threshold + [0.0] * (n_inner + 1),
                          missing_left=[lv[level_of[i]][2] for i in range(n_inner)] + [True] * (n_inner + 1),
                          value=values, target=t % targets))
        all_levels.append(lv)
        offset += len(left)
    categorical = {}
    if nodes:
        cat_start, cat_bits = category_bitsets(np.array(nodes), atoms, np.array(node_k), offset)
        categorical = dict(n_categories=np.array(cats, dtype=np.int32), cat_start=cat_start, cat_bits=cat_bits)
    forest = concat_trees(trees, **categorical, base_score=np.zeros(max(width, targets)), n_features=d,
                          split_rule="le", input_float32=False, aggregate=aggregate, task="regression",
                          output_space="raw", model_type="test oblivious forest",
                          output_names=[f"o{k}" for k in range(max(width, targets))])
    return forest, all_levels


def predict(levels, values, targets, cats, Z):
    """The forest's output minus its base score at the rows Z (n, d), from the levels alone: leaf =
    the bits of the branches (level l's bit the most significant but l), NaN by the level's direction,
    a categorical value by its atom (code, "other" = K, NaN)."""
    n_out = max(values[0].shape[1], max(targets) + 1)
    out = np.zeros((len(Z), n_out))
    for lv, val, target in zip(levels, values, targets):
        node = np.zeros(len(Z), dtype=np.int64)
        for j, cond, missing_left in lv:
            z = Z[:, j]
            if cats[j]:
                K = cats[j]
                ok = ~np.isnan(z) & (z >= 0) & (z < K) & (z == np.floor(np.nan_to_num(z)))
                atom = np.where(ok, np.nan_to_num(z), K).astype(np.int64)
                go_left = np.where(np.isnan(z), missing_left, np.isin(atom, cond))
            else:
                go_left = np.where(np.isnan(z), missing_left, z <= cond)
            node = 2 * node + 1 + (~go_left).astype(np.int64)
        leaf = node - (2 ** len(lv) - 1)
        contrib = val[leaf]
        if val.shape[1] == 1:
            out[:, target] += contrib[:, 0]
        else:
            out += contrib
    return out


def atom_of(x, K):
    """The atom of value x of a feature with K categories."""
    if np.isnan(x):
        return K + 1
    return int(x) if 0 <= x < K and x == int(x) else K


def category_probabilities(x, K, rho, q):
    """P(x' = atom a), a = 0 .. K + 1: x kept with probability 1 - rho, else atom a with q[a] (q over the
    codes and "other", NaN never drawn)."""
    p = np.zeros(K + 2)
    p[:K + 1] = rho * np.asarray(q)
    p[atom_of(x, K)] += 1 - rho
    return p


def oracle_pg2(levels, values, targets, cats, x, S, sigma, laws, aggregate="sum"):
    """Σ over the joint cells of the perturbed features of P(cell) (f(cell) - f(x))²: a numeric feature's
    cells cut at every threshold of the forest on it (masses of the Gaussian noise, from its own tail), a
    categorical one's atoms (codes, "other" as the value K, NaN)."""
    axes, probs = [], []
    for j in S:
        if cats[j]:
            K = cats[j]
            axes.append(np.append(np.arange(K + 1, dtype=float), np.nan))
            probs.append(category_probabilities(x[j], K, *laws[j]))
            continue
        t = np.unique([c for lv in levels for f, c, _ in lv if f == j])
        if len(t) == 0:
            axes.append(np.array([x[j]]))
            probs.append(np.array([1.0]))
            continue
        edges = np.concatenate(([-np.inf], t, [np.inf]))
        axes.append(cell_points(t))
        probs.append(np.array([noise_mass(stats.norm(scale=sigma[j]), lo - x[j], hi - x[j])
                               for lo, hi in zip(edges[:-1], edges[1:])]))
    cells = np.array(list(itertools.product(*axes)))
    weight = np.prod(np.array(list(itertools.product(*probs))), axis=1)
    rows = np.repeat(x[None, :], len(cells), axis=0)
    rows[:, list(S)] = cells
    gap = predict(levels, values, targets, cats, rows) - predict(levels, values, targets, cats, x[None, :])
    if aggregate == "mean":
        gap = gap / (len(levels) / max(max(targets) + 1, 1))
    return (weight[:, None] * gap ** 2).sum(axis=0)


def tables(forest, X, sigma, laws):
    """The C core's tables for rows X (csrc/xai.h), written from the laws: Gaussian CDF and survival at
    each boundary of a numeric feature, the atom probabilities of a categorical one."""
    splits = split_boundaries(forest)
    off = splits.cdf_offset
    H = int(off[-1])
    table = np.zeros((len(X), 2 * H))
    cats = forest.n_categories if forest.n_categories is not None else np.zeros(forest.n_features, int)
    for i, x in enumerate(X):
        for j in range(forest.n_features):
            a, b = int(off[j]), int(off[j + 1])
            if cats[j]:
                table[i, a:a + cats[j] + 2] = category_probabilities(x[j], cats[j], *laws[j])
                continue
            z = (splits.column_boundary[a:b] - (x[j] if np.isfinite(x[j]) else 0.0)) / sigma[j]
            table[i, a:b] = stats.norm.cdf(z)
            table[i, H + a:H + b] = stats.norm.sf(z)
    return splits, table


def c_pg2(forest, X, S, sigma, laws, pairs, prune_rtol=0.0):
    splits, table = tables(forest, X, sigma, laws)
    mask = np.zeros((len(X), 1, forest.n_features), dtype=np.uint8)
    mask[:, 0, list(S)] = 1
    out, _ = _native.pg2(splits.c_forest, splits.cdf_offset, np.ascontiguousarray(X, dtype=float), mask, table,
                         n_jobs=1, prune_rtol=prune_rtol, pairs=pairs)
    return out[:, 0]


def random_case(rng, cats=(0, 0, 3, 0, 5)):
    """Per-feature σ, laws with an "other" share, and rows with NaN (numeric features outside S only),
    ties on thresholds, unseen and negative codes."""
    d = len(cats)
    sigma = rng.uniform(0.2, 1.5, d)
    laws = {j: (float(rng.uniform(0.05, 0.9)), rng.dirichlet(np.ones(K + 1))) for j, K in enumerate(cats) if K}
    return sigma, laws


def random_rows(rng, forest_levels, cats, n, nan_numeric):
    X = rng.normal(size=(n, len(cats))).round(1)
    for j, K in enumerate(cats):
        if K:
            X[:, j] = rng.choice(np.append(np.arange(-1, K + 2, dtype=float), np.nan), n)
    thresholds = [c for lv in forest_levels for f, c, _ in lv if not cats[f]]
    if thresholds:                                     # some values exactly on a threshold
        X[0, [f for lv in forest_levels for f, c, _ in lv if not cats[f]][0]] = thresholds[0]
    for j in nan_numeric:
        X[1::2, j] = np.nan
    return X


def check_case(seed, depth, n_trees=6, cats=(0, 0, 3, 0, 5), width=1, targets=1, aggregate="sum", rows=4):
    rng = np.random.default_rng(seed)
    forest, levels = oblivious_forest(rng, n_trees, depth, cats, width, targets, aggregate)
    if forest.n_categories is None:              # no categorical split drawn: every feature is numeric
        cats = (0,) * len(cats)
    values = [forest.value[forest.tree_offset[t]:forest.tree_offset[t + 1]][2 ** depth - 1:] for t in range(n_trees)]
    tgt = [t % targets for t in range(n_trees)]
    sigma, laws = random_case(rng, cats)
    d = len(cats)
    numeric = [j for j in range(d) if not cats[j]]
    for S in (list(range(d)), [2, 0], [4], sorted(rng.choice(d, 3, replace=False).tolist())):
        outside = [j for j in numeric if j not in S]
        X = random_rows(rng, levels, cats, rows, outside[:1])
        got = {p: c_pg2(forest, X, S, sigma, laws, p) for p in PATHS}
        pruned = {p: c_pg2(forest, X, S, sigma, laws, p, PRUNE_RTOL) for p in ("leaves", "auto")}
        for i, x in enumerate(X):
            want = oracle_pg2(levels, values, tgt, cats, x, S, sigma, laws, aggregate)
            for p in PATHS:
                np.testing.assert_allclose(got[p][i], want, rtol=1e-12, atol=1e-14, err_msg=f"{p} {S} {seed}")
            for p, value in pruned.items():   # the certified bound, plus rounding
                np.testing.assert_allclose(value[i], want, rtol=PRUNE_RTOL + 1e-12, atol=1e-14, err_msg=f"{p} pruned")
        np.testing.assert_allclose(got["grids"], got["leaves"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paths_match_the_joint_grid(depth, seed):
    check_case(seed, depth, n_trees=7 if depth < 6 else 5)


def test_numeric_only_and_categorical_only():
    check_case(3, 4, cats=(0, 0, 0, 0, 0))
    check_case(4, 4, cats=(2, 4, 3, 1, 5))


@pytest.mark.parametrize("width, targets", [(2, 1), (1, 2), (3, 1)])
def test_several_outputs(width, targets):
    check_case(5, 3, width=width, targets=targets)


def test_mean_aggregate():
    check_case(6, 3, aggregate="mean")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31), depth=st.sampled_from([2, 3, 4, 6]))
def test_random_forests(seed, depth):
    check_case(seed, depth, n_trees=4, rows=2)


def test_greedy_ranking_is_the_same_on_both_paths():
    rng = np.random.default_rng(7)
    cats = (0, 0, 3, 0, 5)
    forest, levels = oblivious_forest(rng, 12, 4, cats)
    sigma, laws = random_case(rng, cats)
    X = random_rows(rng, levels, cats, 5, [])
    X[:, [0, 1, 3]] = np.nan_to_num(X[:, [0, 1, 3]])
    splits, table = tables(forest, X, sigma, laws)
    got = {p: _native.greedy_pg2(splits.c_forest, splits.cdf_offset, X, table, np.ones(1), n_jobs=1, pairs=p)
           for p in PATHS}
    for p in ("grids", "auto"):
        np.testing.assert_array_equal(got[p][0], got["leaves"][0])
        np.testing.assert_allclose(got[p][1], got["leaves"][1], rtol=1e-12)


def test_trees_that_are_not_oblivious_are_left_to_the_leaf_pairs():
    """A tree whose two level-1 nodes split differently (or that is not complete, or deeper than 8 levels)
    is refused by pairs="grids"; "auto" takes the leaf pairs."""
    rng = np.random.default_rng(8)
    forest, levels = oblivious_forest(rng, 4, 3, (0, 0, 0))
    sigma, laws = random_case(rng, (0, 0, 0))
    X = rng.normal(size=(3, 3))
    base = c_pg2(forest, X, [0, 1, 2], sigma, laws, "grids")
    threshold = np.array(forest.threshold)
    threshold[forest.tree_offset[1] + 2] += 0.123           # node 2 of tree 1: level 1's right node
    broken = concat_trees([dict(left=forest.left_child[a:b], right=forest.right_child[a:b],
                                feature=forest.feature[a:b], threshold=threshold[a:b],
                                missing_left=forest.missing_left[a:b], value=forest.value[a:b], target=0)
                           for a, b in zip(forest.tree_offset[:-1], forest.tree_offset[1:])],
                          base_score=np.zeros(1), n_features=3, split_rule="le", input_float32=False,
                          aggregate="sum", task="regression", output_space="raw", model_type="test")
    with pytest.raises(UnsupportedModelError):
        c_pg2(broken, X, [0, 1, 2], sigma, laws, "grids")
    np.testing.assert_allclose(c_pg2(broken, X, [0, 1, 2], sigma, laws, "auto"),
                               c_pg2(broken, X, [0, 1, 2], sigma, laws, "leaves"), rtol=0)
    assert not np.allclose(c_pg2(broken, X, [0, 1, 2], sigma, laws, "leaves"), base)
    deep, _ = oblivious_forest(rng, 2, 9, (0, 0, 0))
    with pytest.raises(UnsupportedModelError):
        c_pg2(deep, X, [0, 1, 2], sigma, laws, "grids")
    with pytest.raises(InputError):
        c_pg2(forest, X, [0, 1, 2], sigma, laws, "pairs")
