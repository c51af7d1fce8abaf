"""The cost model of ``pg2(method="auto")`` and of the audit's run-time plan: the exact method's CPU seconds from
the leaves it pairs up (:func:`exact_seconds`), one Monte Carlo sample's through the model's own predictor
(:func:`sample_seconds`), a Monte Carlo pilot, and the choice between them (:func:`auto_method`).

Both estimates are functions of the model, the rows and the sets only, never of a clock: the same call makes the
same choice on every machine. They are calibrated on a 2-core x86-64 machine with
``benchmarks/bench_pg2_auto_cost.py``, which prints each estimate beside the measured time."""

from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from .._native import pg2, pg2_terms, reachable_leaves
from ..errors import InputError
from ..forest import Forest, explained_model, library_of, tree_levels
from ._output_view import exact_view
from ._sampling import _informative, _sampled_pg2, row_seed

__all__: list[str] = []

#: The exact method's CPU seconds of one thread per row, fitted (relative least squares) on the XGBoost 100 × 6 and
#: 500 × 6, LightGBM 300 × 31 and 1,000 × 63 and random-forest models of California housing and the PG² paper's
#: 40 × 4 model, every |S|: a fixed part per row, one reachable leaf (walks, boxes, table rows) and one pair of
#: reachable leaves of the same output, priced by the outputs a leaf holds (:func:`_pairs`; about half of them survive
#: the default pruning, which the constant absorbs). The fit is within a factor 0.5–1.9 of every measured time.
AUTO_SECONDS_PER_ROW = 5.0e-5
AUTO_SECONDS_PER_LEAF = 2.8e-7
AUTO_SECONDS_PER_PAIR = 4.5e-10
#: :func:`counted_seconds`' prices, fitted (relative least squares) on the
#: audit workloads of ``bench_audit.py`` (wine, wine-deep, California, COMPAS, the COMPAS Pipeline) and California
#: XGBoost 500 × 6, |S| from 1 to d: per leaf a set can reach (the walks), per leaf the exact sum weighs (reachable
#: with a probability >= DBL_MIN: its box and moments) and per leaf-pair term it keeps after pruning
COUNTED_SECONDS_PER_REACHABLE = 9.6e-8
COUNTED_SECONDS_PER_WEIGHED = 2.1e-7
COUNTED_SECONDS_PER_TERM = 6.7e-10
#: One Monte Carlo sample through the model's own predictor: a fixed part (drawing the noise, the gap) plus, per
#: tree, its mean leaf depth times the seconds of one level of that library's predict (measured by
#: ``bench_pg2_auto_cost.py --samples``: XGBoost 2.1 ns, LightGBM 4.4–7.2, CatBoost 1.2, scikit-learn forests
#: 4.4–10, GradientBoosting 1.7, HistGradientBoosting 4.2, onnxruntime 44; PMML evaluators run in Java, row by
#: row: a fixed 20 µs). A model of no listed kind takes the dearest level.
AUTO_SECONDS_PER_SAMPLE = 3.0e-7
AUTO_SECONDS_PER_LEVEL = {"xgboost": 2.2e-9, "lightgbm": 7.0e-9, "catboost": 1.2e-9, "sklearn": 6.0e-9,
                          "sklearn GradientBoosting": 1.8e-9, "sklearn HistGradientBoosting": 4.5e-9,
                          "onnx": 4.4e-8, "pmml": 4.4e-8}
AUTO_SECONDS_PER_PMML_SAMPLE = 2.0e-5
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


def _pairs(forest: Forest, per_tree: np.ndarray) -> np.ndarray:
    """Pairs of distinct trees of the same output, weighted by the counts ``per_tree`` (..., n_trees) of their
    leaves: the leaf-pair terms of the exact sum (before pruning), each priced (outputs a leaf holds)^0.3 times a
    one-output term (the outputs of a pair are summed together, in registers: a 6-class forest's pair costs about
    1.7 times a regressor's, measured on the wine and COMPAS forests of ``bench_greedy.py``)."""
    if forest.n_outputs == 1:
        pairs = (per_tree.sum(axis=-1) ** 2 - np.sum(per_tree ** 2, axis=-1)) / 2.0
    else:
        target = np.asarray(forest.tree_target)
        pairs = sum((per_tree[..., target == o].sum(axis=-1) ** 2 - np.sum(per_tree[..., target == o] ** 2,
                                                                              axis=-1)) / 2.0
                    for o in np.unique(target))
    return pairs * forest.leaf_width ** 0.3


def exact_seconds(forest: Forest, n_perturbed: float, rows=None, masks=None) -> float:
    """Estimated CPU seconds of one exact PG² evaluation of a row: :data:`AUTO_SECONDS_PER_ROW`, plus
    :data:`AUTO_SECONDS_PER_LEAF` per reachable leaf and :data:`AUTO_SECONDS_PER_PAIR` per pair of reachable leaves
    of the same output. With ``rows`` (n, d) and ``masks`` (n, d) bool, the reachable leaves are counted on them
    (:func:`reachable_leaf_counts`; their mean cost per row); otherwise, for a set of ``n_perturbed`` features, a
    leaf at depth D is reachable with about 2^(-D (1 - |S|/d)) (each split on a feature outside S halves the
    chance). The leaves are those of the Forest the C core sums over for every output (``exact_view``: one
    output of a complementary binary forest)."""
    forest = exact_view(forest).forest
    if rows is not None:
        per_tree = reachable_leaf_counts(forest, rows, masks).astype(float)
    else:
        counts = leaf_depths(forest)
        outside = 1.0 - min(max(n_perturbed, 0.0), forest.n_features) / forest.n_features
        per_tree = counts @ np.exp2(-np.arange(counts.shape[1]) * outside)
    leaves, pairs = np.sum(per_tree, axis=-1), _pairs(forest, per_tree)
    return float(np.mean(AUTO_SECONDS_PER_ROW + leaves * AUTO_SECONDS_PER_LEAF + pairs * AUTO_SECONDS_PER_PAIR))


def exact_by_size(forest: Forest, rows=None, order: str = "random", noise=None, prune_rtol: float = 0.0,
                  max_rows: int = AUTO_PILOT_ROWS) -> np.ndarray:
    """:func:`exact_seconds` of a set of k features, k = 0..d, averaged over ``rows`` (at most ``max_rows``): the
    first k features of an ``order`` per row, their reachable leaves counted there; without rows, estimated from the
    leaf depths. ``order``: ``"random"``, a seeded random order (the same on every call: the random ranking's
    prefixes are sets of every kind), or ``"importance"``, the features by decreasing PG² of each alone under
    ``noise`` (:func:`importance_order`: what an explainer's ranking perturbs first; those features open the most
    leaves), by decreasing number of splits without ``noise``. With ``noise`` (a
    :class:`~xai_plugins.perturbation.Perturbation`), the leaves and leaf-pair terms the exact sum keeps under that
    noise at ``prune_rtol`` are counted instead (:func:`counted_seconds`)."""
    d = forest.n_features
    if rows is None:
        return np.array([exact_seconds(forest, k) for k in range(d + 1)])
    rows = np.ascontiguousarray(rows, dtype=np.float64)[:max_rows]

    def by_size():
        ranked = _orders(forest, rows, order, noise)
        masks = np.zeros((d + 1, *rows.shape), dtype=bool)
        for k in range(1, d + 1):
            np.put_along_axis(masks[k], ranked[:, :k], True, axis=1)
        if noise is not None:
            return counted_seconds(forest, rows, np.moveaxis(masks, 0, 1), noise, prune_rtol).mean(axis=0)
        return np.array([exact_seconds(forest, k, rows, masks[k]) for k in range(d + 1)])

    return memoised(forest, rows, noise, ("by size", order, prune_rtol), by_size)


def memoised(forest: Forest, rows: np.ndarray, noise, key: tuple, compute):
    """``compute()``, kept per Forest for these ``rows`` and ``noise`` (by identity: a plan prices the same
    perturbation many times) under ``key``."""
    known = _MEMO.setdefault(forest, {})
    full = (rows.tobytes(), None if noise is None else id(noise), *key)
    if full not in known:
        known[full] = (compute(), noise)        # the noise kept alive with its id
    return known[full][0]


_MEMO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: the pruning bound of the exact PG² of each feature alone by which :func:`importance_order` ranks them (an order
#: for a cost estimate, not a reported value)
ORDER_RTOL = 1e-3


def _orders(forest: Forest, rows: np.ndarray, order: str, noise) -> np.ndarray:
    """(n, d): the feature order of each row of ``rows`` (see :func:`exact_by_size`)."""
    d = forest.n_features
    if order == "random":
        return np.random.default_rng(0).permuted(np.tile(np.arange(d), (len(rows), 1)), axis=1)
    if noise is not None:
        return importance_order(forest, rows, noise)
    used = np.bincount(forest.feature[forest.left_child >= 0], minlength=d)
    return np.tile(np.argsort(-used, kind="stable"), (len(rows), 1))


def importance_order(forest: Forest, rows, noise) -> np.ndarray:
    """(n, d): per row of ``rows``, the features by decreasing exact PG² of each alone under ``noise`` (summed over
    the outputs the Forest's exact view keeps; ties by index, at the pruning bound :data:`ORDER_RTOL`): the greedy
    ranking's first step, and the order in which an importance ranking perturbs the features, for pricing the sets
    such rankings' prefixes are (computed once per Forest, rows and noise)."""
    from ..perturbation import cdf_table
    from ._boundaries import split_boundaries

    d = forest.n_features
    rows = np.ascontiguousarray(rows, dtype=np.float64)

    def order():
        splits = split_boundaries(exact_view(forest).forest)
        alone = np.ascontiguousarray(np.broadcast_to(np.eye(d, dtype=np.uint8), (len(rows), d, d)))
        value, _ = pg2(splits.c_forest, splits.cdf_offset, rows, alone, cdf_table(splits, rows, noise, range(d)),
                       prune_rtol=ORDER_RTOL)
        return np.argsort(-value.sum(axis=-1), axis=1, kind="stable")

    return memoised(forest, rows, noise, ("importance order",), order)


def counted_seconds(forest: Forest, rows, masks, noise, prune_rtol: float = 0.0) -> np.ndarray:
    """Estimated CPU seconds (n, n_sets) of the exact PG² of each row of ``rows`` (n, d) and set of ``masks``
    (n, n_sets, d) under ``noise``, on the Forest it runs on (``exact_view``): :data:`AUTO_SECONDS_PER_ROW`, plus
    :data:`COUNTED_SECONDS_PER_REACHABLE` per leaf the set can reach, :data:`COUNTED_SECONDS_PER_WEIGHED` per leaf
    the exact sum weighs and :data:`COUNTED_SECONDS_PER_TERM` per leaf-pair term it keeps at ``prune_rtol``,
    counted by the C core's walks without the sums (``xai_pg2_terms``): leaves too improbable to matter are not
    paired up, and a fully grown forest at a small σ weighs a few percent of the leaves it can reach."""
    from ..perturbation import cdf_table
    from ._boundaries import split_boundaries

    forest = exact_view(forest).forest
    splits = split_boundaries(forest)
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    masks = np.ascontiguousarray(masks, dtype=np.uint8)
    table = cdf_table(splits, rows, noise, np.flatnonzero(masks.any(axis=(0, 1))))
    weighed, terms = pg2_terms(splits.c_forest, splits.cdf_offset, rows, masks, table, prune_rtol)
    reachable = np.stack([reachable_leaf_counts(forest, rows, masks[:, s]).sum(axis=1)
                          for s in range(masks.shape[1])], axis=1)
    return (AUTO_SECONDS_PER_ROW + reachable * COUNTED_SECONDS_PER_REACHABLE + weighed * COUNTED_SECONDS_PER_WEIGHED
            + terms * COUNTED_SECONDS_PER_TERM * forest.leaf_width ** 0.3)


def reachable_leaf_counts(forest: Forest, rows, masks) -> np.ndarray:
    """(n, n_trees): the leaves of each tree that each row of ``rows`` can reach when the features of its row of
    ``masks`` vary and the others keep its values (the C core's walk; a missing value of a varied feature is not
    read)."""
    rows = np.where(np.asarray(masks, dtype=bool), 0.0, np.asarray(rows, dtype=np.float64))
    return reachable_leaves(forest, rows, np.asarray(masks, dtype=np.uint8))


def sample_seconds(forest: Forest, model=None) -> float:
    """Estimated CPU seconds of one Monte Carlo sample through the predictor of ``model`` (default: the model the
    Forest was read from): :data:`AUTO_SECONDS_PER_SAMPLE` plus, per tree, its mean leaf depth times
    :data:`AUTO_SECONDS_PER_LEVEL` of the model's library (scikit-learn's boosting estimators apart; a Pipeline's,
    that of the estimator at its end)."""
    if model is None:
        model = getattr(forest.predict_fn, "_model", lambda: None)()
    if model is not None:                   # a Pipeline: its estimator (the front's transform costs far less)
        model = explained_model(model)[0]
    kind = library_of(model) if model is not None else None
    if kind == "pmml":
        return AUTO_SECONDS_PER_PMML_SAMPLE
    if kind == "sklearn":
        name = type(model).__name__
        kind = next((f"sklearn {k}" for k in ("HistGradientBoosting", "GradientBoosting") if name.startswith(k)),
                    kind)
    level = AUTO_SECONDS_PER_LEVEL.get(kind or "", max(AUTO_SECONDS_PER_LEVEL.values()))
    counts = leaf_depths(forest)
    mean_depth = float(np.sum(counts @ np.arange(counts.shape[1]))) / max(float(counts.sum()), 1.0)
    return AUTO_SECONDS_PER_SAMPLE + forest.n_trees * mean_depth * level


_PRICES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _prices(forest: Forest, output: int | None = None) -> tuple[float, float]:
    """(:func:`sample_seconds`, :func:`exact_seconds` with every feature perturbed: every leaf reachable, the
    dearest exact evaluation of a row, of ``output`` alone or of every output) of ``forest``, computed once per
    Forest and output."""
    known = _PRICES.setdefault(forest, {})
    if output not in known:
        known[output] = (sample_seconds(forest), exact_seconds(exact_view(forest, output).forest, forest.n_features))
    return known[output]


def auto_method(forest: Forest, X, masks, noise, rtol, random_state, output=None) -> tuple[str, int, str]:
    """``(method, n_samples, reason)`` for ``method="auto"``: the cheaper of the exact method
    (:func:`exact_seconds` of the leaves the first :data:`AUTO_PILOT_ROWS` rows reach) and Monte Carlo at
    :func:`sample_seconds` per sample. Monte Carlo needs n = (sd/mean)² / rtol² samples for a relative standard
    error rtol, at least max(:data:`AUTO_MIN_SAMPLES`, 1/rtol²); when the exact method costs no more than that
    floor plus the pilot, it runs without one. Otherwise sd/mean of the squared gap comes from a
    pilot of :data:`AUTO_PILOT_SAMPLES` samples on up to :data:`AUTO_PILOT_ROWS` rows (the 90th
    percentile over them; a pilot row with fewer than :data:`MIN_INFORMATIVE_GAPS` nonzero gaps
    counts as needing at least 1/p − 1 for p = (nonzero + 3) / samples), drawn from
    ``random_state`` as :func:`row_seed` says. ``output``: of that output alone (an index; the exact method pairs
    its trees and leaf values only), else of every output."""
    if not (isinstance(rtol, numbers.Real) and 0 < float(rtol) < 1):
        raise InputError(f"rtol must be a relative accuracy in (0, 1); got {rtol!r}")
    rtol = float(rtol)
    n = len(X)
    pilot_rows = min(n, AUTO_PILOT_ROWS)
    per_sample, dearest = _prices(forest, output)
    floor = max(AUTO_MIN_SAMPLES, math.ceil(1.0 / rtol ** 2))
    pilot_seconds = pilot_rows * AUTO_PILOT_SAMPLES * per_sample
    # every leaf reachable bounds the exact cost: below the cheapest Monte Carlo, no leaf need be counted
    exact = (min(dearest, exact_seconds(exact_view(forest, output).forest, 0.0, X[:pilot_rows], masks[:pilot_rows]))
             if n and dearest > floor * per_sample else dearest)
    head = f"auto (rtol={rtol:g}): exact ≈ {exact * 1e3:.3g} ms per row"
    if n == 0 or exact * n <= pilot_seconds + n * floor * per_sample:
        return "exact", 0, (f"{head} vs Monte Carlo ≥ {floor * per_sample * 1e3:.3g} ms per row (at least {floor} "
                            f"samples) plus a pilot; ran exact without a pilot")
    pilot = slice(0, pilot_rows)
    mean, stderr, nonzero = _sampled_pg2(forest, X[pilot], masks[pilot], noise, AUTO_PILOT_SAMPLES, "monte_carlo",
                                         row_seed(random_state))
    if output is not None:
        mean, stderr, nonzero = mean[:, [output]], stderr[:, [output]], nonzero[:, [output]]
    spread = np.where(mean > 0, stderr ** 2 * AUTO_PILOT_SAMPLES / np.where(mean > 0, mean, 1.0) ** 2, 0.0)
    unseen = AUTO_PILOT_SAMPLES / (nonzero + 3.0) - 1.0        # CV² >= 1/p - 1 when only a share p is nonzero
    shaky = ~_informative(stderr, nonzero, masks[pilot])
    per_row = np.where(shaky, np.maximum(spread, unseen), spread).max(axis=1)
    n_samples = int(np.clip(np.ceil(np.percentile(per_row, 90) / rtol ** 2), floor, 10**7))
    sampled = n_samples * per_sample
    method = "exact" if exact <= sampled else "monte_carlo"
    return method, n_samples, (f"{head} vs Monte Carlo ≈ {sampled * 1e3:.3g} ms per row ({n_samples} samples for a "
                               f"{rtol:.0%} relative standard error, from a pilot); ran {method}")

