"""The cost model of ``pg2(method="auto")``: the exact method's CPU seconds from the model's leaf
depths (:func:`exact_seconds`), a Monte Carlo pilot, and the choice between them (:func:`auto_method`)."""

from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from ..errors import InputError
from ..forest import Forest, tree_levels
from ._sampling import _informative, _sampled_pg2, row_seed

__all__: list[str] = []

#: The cost model of ``method="auto"``, in CPU seconds of one thread, calibrated on a 2-core x86-64
#: machine with ``benchmarks/bench_pg2_auto_cost.py`` (XGBoost 100 and 500 trees of depth 6, |S| = 2,
#: 4 and all): the exact method's setup per tree and row (walks, boxes, tables), one leaf-pair term
#: of its sum, the share of the pairs that the default pruning keeps (about half on the California
#: models), and one tree of one Monte Carlo sample through the model's own predictor.
AUTO_SECONDS_PER_TREE = 3.0e-6
AUTO_SECONDS_PER_PAIR = 0.9e-9
AUTO_PRUNED_SHARE = 0.5
AUTO_SECONDS_PER_TREE_SAMPLE = 1.0e-8
#: Monte Carlo pilot of ``method="auto"``: samples per row, on at most this many rows.
AUTO_PILOT_SAMPLES, AUTO_PILOT_ROWS = 256, 8
#: The Monte Carlo of ``method="auto"`` draws at least max(AUTO_MIN_SAMPLES, 1/rtol²) samples per row
#: (the squared gap's coefficient of variation is √2 when f(x') − f(x) is a centred Gaussian, and
#: larger with the mass at 0 that trees give, so fewer samples would rarely show rtol); this bounds
#: its cost from below, and when the exact method costs no more than that bound no pilot runs.
AUTO_MIN_SAMPLES = 1000
#: ``method="auto"`` keeps a sampled row only when its relative standard error is within this many
#: times rtol (and informative); other rows are computed exactly.
AUTO_ACCEPT = 2.0


_DEPTHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def leaf_depths(forest: Forest) -> np.ndarray:
    """(n_trees, max depth + 1): the number of leaves of each tree at each depth; computed once
    per Forest."""
    cached = _DEPTHS.get(forest)
    if cached is None:
        tree, depth = _walk_depths(forest)
        cached = np.zeros((forest.n_trees, int(depth.max(initial=0)) + 1))
        np.add.at(cached, (tree, depth), 1.0)
        _DEPTHS[forest] = cached
    return cached


def _walk_depths(forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """(tree, depth) of every leaf (:func:`~xai_plugins.forest.tree_levels`)."""
    leaves = [(tree[~inner], np.full(int((~inner).sum()), depth))
              for depth, (_, tree, inner) in enumerate(tree_levels(forest.left_child, forest.right_child,
                                                                    forest.tree_offset))]
    return np.concatenate([t for t, _ in leaves]), np.concatenate([d for _, d in leaves])


def exact_seconds(forest: Forest, n_perturbed: float) -> float:
    """Estimated CPU seconds of one exact PG² evaluation of a row with ``n_perturbed`` features in
    S: :data:`AUTO_SECONDS_PER_TREE` per tree, plus the leaf pairs. A leaf at depth D is reachable
    with about 2^(-D (1 - |S|/d)) (each split on a feature outside S halves the chance), which gives
    N_t leaves per tree and Σ_{t<u, same output} N_t N_u leaf pairs, of which
    :data:`AUTO_PRUNED_SHARE` are kept, at :data:`AUTO_SECONDS_PER_PAIR` per output a leaf holds
    (a random forest's class-probability leaves hold every class)."""
    counts = leaf_depths(forest)
    outside = 1.0 - min(max(n_perturbed, 0.0), forest.n_features) / forest.n_features
    per_tree = counts @ np.exp2(-np.arange(counts.shape[1]) * outside)
    if forest.n_outputs == 1:
        pairs = float(per_tree.sum() ** 2 - per_tree @ per_tree) / 2.0
    else:
        target = np.asarray(forest.tree_target)
        per_output = np.bincount(target, weights=per_tree, minlength=forest.n_outputs)
        square = np.bincount(target, weights=per_tree ** 2, minlength=forest.n_outputs)
        pairs = float(np.sum(per_output ** 2 - square) / 2.0)
    per_pair = forest.leaf_width * AUTO_PRUNED_SHARE * AUTO_SECONDS_PER_PAIR
    return forest.n_trees * AUTO_SECONDS_PER_TREE + pairs * per_pair


def auto_method(forest: Forest, X, masks, noise, rtol, random_state) -> tuple[str, int, str]:
    """``(method, n_samples, reason)`` for ``method="auto"``: the cheaper of the exact method
    (:func:`exact_seconds`) and Monte Carlo at :data:`AUTO_SECONDS_PER_TREE_SAMPLE` per tree and
    sample. Monte Carlo needs n = (sd/mean)² / rtol² samples for a relative standard error rtol, at
    least max(:data:`AUTO_MIN_SAMPLES`, 1/rtol²); when the exact method costs no more than that
    floor plus the pilot, it runs without one. Otherwise sd/mean of the squared gap comes from a
    pilot of :data:`AUTO_PILOT_SAMPLES` samples on up to :data:`AUTO_PILOT_ROWS` rows (the 90th
    percentile over them; a pilot row with fewer than :data:`MIN_INFORMATIVE_GAPS` nonzero gaps
    counts as needing at least 1/p − 1 for p = (nonzero + 3) / samples), drawn from
    ``random_state`` as :func:`row_seed` says."""
    if not (isinstance(rtol, numbers.Real) and 0 < float(rtol) < 1):
        raise InputError(f"rtol must be a relative accuracy in (0, 1); got {rtol!r}")
    rtol = float(rtol)
    n = len(X)
    exact = exact_seconds(forest, float(np.count_nonzero(masks)) / n if n else 0.0)
    per_sample = forest.n_trees * AUTO_SECONDS_PER_TREE_SAMPLE
    floor = max(AUTO_MIN_SAMPLES, math.ceil(1.0 / rtol ** 2))
    pilot_rows = min(n, AUTO_PILOT_ROWS)
    pilot_seconds = pilot_rows * AUTO_PILOT_SAMPLES * per_sample
    head = f"auto (rtol={rtol:g}): exact ≈ {exact * 1e3:.3g} ms per row"
    if n == 0 or exact * n <= pilot_seconds + n * floor * per_sample:
        return "exact", 0, (f"{head} vs Monte Carlo ≥ {floor * per_sample * 1e3:.3g} ms per row (at least {floor} "
                            f"samples) plus a pilot; ran exact without a pilot")
    pilot = slice(0, pilot_rows)
    mean, stderr, nonzero = _sampled_pg2(forest, X[pilot], masks[pilot], noise, AUTO_PILOT_SAMPLES, "monte_carlo",
                                         row_seed(random_state))
    spread = np.where(mean > 0, stderr ** 2 * AUTO_PILOT_SAMPLES / np.where(mean > 0, mean, 1.0) ** 2, 0.0)
    unseen = AUTO_PILOT_SAMPLES / (nonzero + 3.0) - 1.0        # CV² >= 1/p - 1 when only a share p is nonzero
    shaky = ~_informative(stderr, nonzero, masks[pilot])
    per_row = np.where(shaky, np.maximum(spread, unseen), spread).max(axis=1)
    n_samples = int(np.clip(np.ceil(np.percentile(per_row, 90) / rtol ** 2), floor, 10**7))
    sampled = n_samples * per_sample
    method = "exact" if exact <= sampled else "monte_carlo"
    return method, n_samples, (f"{head} vs Monte Carlo ≈ {sampled * 1e3:.3g} ms per row ({n_samples} samples for a "
                               f"{rtol:.0%} relative standard error, from a pilot); ran {method}")

