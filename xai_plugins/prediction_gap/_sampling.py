"""Monte Carlo and randomised QMC PG² through the model's own predictor, each row drawing from its
own seeded stream (:func:`row_seed`), so any blocking of the rows gives the same draws."""

from __future__ import annotations

import numbers

import numpy as np
from scipy.stats import qmc

from .._validation import check_random_state
from ..errors import InputError
from ._boundaries import split_boundaries

__all__: list[str] = []

#: A sampled PG²'s standard error is informative only when at least this many of its sampled gaps
#: are nonzero and not all of them are equal (``PG2Estimate.informative``).
MIN_INFORMATIVE_GAPS = 10


def _informative(stderr: np.ndarray, nonzero: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Where a sampled PG²'s standard error is informative (see :attr:`PG2Estimate.informative`):
    at least :data:`MIN_INFORMATIVE_GAPS` nonzero gaps, not all equal; rows perturbing nothing are
    exactly 0."""
    perturbs_nothing = np.count_nonzero(masks, axis=1) == 0
    return ((nonzero >= MIN_INFORMATIVE_GAPS) & (stderr > 0)) | perturbs_nothing[:, None]


def row_seed(random_state) -> np.random.SeedSequence:
    """The root SeedSequence of a Monte Carlo run: from an int seed or a SeedSequence directly,
    from fresh entropy for None, and from 128 bits drawn from a Generator / RandomState.

    Row i (its index in ``X``) draws from ``default_rng(SeedSequence(root.entropy,
    spawn_key=root.spawn_key + (i,)))`` -- the i-th child of ``root.spawn`` -- so each row's
    stream is independent of the other rows and of how the rows are split into blocks.
    """
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, (bool, np.bool_))):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    rng = check_random_state(random_state)
    return np.random.SeedSequence([int(v) for v in rng.integers(0, 2**32, size=4, dtype=np.uint64)])


def _row_rng(root: np.random.SeedSequence, i: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (i,),
                                                        pool_size=root.pool_size))


def _sampled_pg2(forest, X, masks, noise, n_samples, method, root, batch_rows=200_000, row_offset=0):
    """Monte Carlo / randomised QMC estimate of PG² through the model's own predictor: ``(mean,
    stderr, nonzero)`` per row and output, ``nonzero`` the count of sampled gaps that are not 0; row
    i draws from its own generator (:func:`row_seed`), row index ``row_offset + i``. The perturbed
    copies of consecutive rows go to the predictor together, about ``batch_rows`` at a time (one call
    per row would pay the predictor's fixed cost per row)."""
    if forest.predict_fn is None:
        raise InputError("this Forest carries no model predictor; Monte Carlo sampling needs the fitted model")
    n, d = X.shape
    k = forest.n_outputs
    mean = np.zeros((n, k))
    stderr = np.zeros((n, k))
    nonzero = np.zeros((n, k), dtype=np.int64)
    base = np.asarray(forest.predict_fn(X)).reshape(n, k)
    replicates = 8 if method == "qmc" else 1
    categories = split_boundaries(forest).n_categories
    per_rep = max(n_samples // replicates, 1)
    pending: list = []          # (row, its perturbed copies) not yet sent to the predictor

    def flush():
        rows = np.concatenate([xp for _, xp in pending])
        predicted = np.concatenate([np.asarray(forest.predict_fn(rows[a:a + batch_rows])).reshape(-1, k)
                                    for a in range(0, len(rows), batch_rows)])
        at = 0
        for i, xp in pending:
            gaps = (predicted[at:at + len(xp)] - base[i]) ** 2
            at += len(xp)
            nonzero[i] = np.count_nonzero(gaps, axis=0)
            if method == "monte_carlo":
                mean[i] = gaps.mean(axis=0)
                stderr[i] = gaps.std(axis=0, ddof=1) / np.sqrt(len(gaps))
            else:
                rep_means = gaps.reshape(replicates, per_rep, k).mean(axis=1)
                mean[i] = rep_means.mean(axis=0)
                stderr[i] = rep_means.std(axis=0, ddof=1) / np.sqrt(replicates)
        pending.clear()

    for i in range(n):
        feats = np.flatnonzero(masks[i])
        if len(feats) == 0:
            continue
        rng = _row_rng(root, row_offset + i)
        if method == "monte_carlo":
            values = np.column_stack([noise.draw(j, X[i, j], n_samples, rng, categories[j]) for j in feats])
        else:
            blocks = []
            for _ in range(replicates):
                u = qmc.Halton(d=len(feats), scramble=True, seed=rng).random(per_rep)
                u = np.clip(u, 1e-16, 1 - 1e-16)
                blocks.append(np.column_stack([noise.perturbed(j, X[i, j], u[:, c], categories[j])
                                               for c, j in enumerate(feats)]))
            values = np.vstack(blocks)
        xp = np.repeat(X[i:i + 1], len(values), axis=0)
        xp[:, feats] = values
        if pending and sum(len(p) for _, p in pending) + len(xp) > batch_rows:
            flush()
        pending.append((i, xp))
    if pending:
        flush()
    return mean, stderr, nonzero


def _sample_sets(forest, X, *, sets_of, sampled, values, noise, n_samples, root, row_offset=0, output=None) -> None:
    """Monte Carlo PG² of the ``sampled`` (n, u) sets among ``sets_of`` (n, u, d), written into ``values``
    (n, u, outputs; with ``output``, an index, that output's alone): row i's sets draw from ``root``'s child
    ``row_offset + i``, set j from that child's child j."""
    for i in np.flatnonzero(sampled.any(axis=1)):
        which = np.flatnonzero(sampled[i])
        child = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (row_offset + int(i),),
                                       pool_size=root.pool_size)
        mean, _, _ = _sampled_pg2(forest, np.repeat(X[i:i + 1], len(which), axis=0),
                                  np.ascontiguousarray(sets_of[i, which]), noise, n_samples, "monte_carlo", child)
        values[i, which] = mean if output is None else mean[:, [output]]
