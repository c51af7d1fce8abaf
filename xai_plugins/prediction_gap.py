"""Squared prediction gap PG², its ranking metric PGI², and the greedy PG² ranking.

Definitions (Gajewski et al., "exact faithfulness for tree models", eq. 2-3):

    PG²(x, S)   = E[(f(x') - f(x))²],  x'_j = x_j + e_j for j in S (independent noise), x'_j = x_j otherwise
    PGI²(x, π)  = (1/d) Σ_{k=1..d} PG²(x, {π(1), ..., π(k)})
    greedy π    : π(k) = argmax_j PG²(x, {π(1), ..., π(k-1), j})   (ties -> lowest feature index)

The exact value is computed in closed form by the C core on the ensemble's output in the
Forest's ``output_space``: the regression output, the margin (log-odds / softmax logits) of
boosted classifiers, or the class probabilities of random forests — outputs that are sums of
leaf values. PG² of a logistic/softmax *probability* has no leaf-pair form, so for boosted
classifiers the exact value is on the margin; use ``method="monte_carlo"`` with your own
predictor for probabilities.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import qmc

from . import _native
from ._validation import check_matrix, check_random_state
from .forest import Forest, import_model
from .perturbation import cdf_table, make_perturbation

METHODS = ("exact", "monte_carlo", "qmc", "auto")
#: ``method="auto"`` uses the exact algorithm while (leaves in the model)² stays below this
#: bound on the leaf-pair terms of one PG² evaluation, Monte Carlo beyond it.
AUTO_PAIR_BUDGET = 1e9


@dataclass
class PG2Estimate:
    """PG² per row: ``value`` (n,) or (n, k) for k outputs, ``stderr`` (zeros when exact),
    ``method`` actually used, ``n_samples`` (0 when exact), wall ``seconds``, and for the exact
    method the number of leaf-pair terms evaluated. ``np.asarray(estimate)`` is ``value``."""

    value: np.ndarray
    stderr: np.ndarray
    method: str
    n_samples: int
    seconds: float
    pair_terms: int = 0

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)

    def __repr__(self):
        return (f"PG2Estimate(method={self.method!r}, n_rows={len(self.value)}, "
                f"mean={np.mean(self.value):.6g}, seconds={self.seconds:.3g})")


def _squeeze(forest: Forest, values: np.ndarray) -> np.ndarray:
    return values[..., 0] if forest.n_outputs == 1 else values


def _prepare(model, X, allow_nan=True):
    forest = import_model(model)
    X = check_matrix(X, n_features=forest.n_features, allow_nan=allow_nan)
    return forest, X


def _set_masks(S, n_rows: int, n_features: int) -> np.ndarray:
    """(n_rows, n_features) uint8 masks from a feature list, a boolean mask, or per-row masks."""
    arr = np.asarray(S)
    if arr.dtype == bool:
        if arr.shape == (n_features,):
            arr = np.broadcast_to(arr, (n_rows, n_features))
        if arr.shape != (n_rows, n_features):
            raise ValueError(f"a boolean S must have shape ({n_features},) or ({n_rows}, {n_features}); "
                             f"got {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.uint8)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"S must hold integer feature indices or be a boolean mask; got dtype {arr.dtype}")
    idx = arr.astype(np.int64).ravel()
    if np.any((idx < 0) | (idx >= n_features)):
        raise IndexError(f"S holds feature indices out of range [0, {n_features}): {idx[(idx < 0) | (idx >= n_features)]}")
    if len(np.unique(idx)) != len(idx):
        raise ValueError(f"S holds duplicated features: {idx.tolist()}")
    mask = np.zeros((n_rows, n_features), dtype=np.uint8)
    mask[:, idx] = 1
    return mask


def _check_perturbed_finite(X, mask):
    bad = np.isnan(X) & (mask != 0)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(f"X has NaN in perturbed feature {c} (row {r}); perturbing a missing value is undefined")


def pg2(model, X, S, sigma=0.3, *, perturbation=None, background=None, method="exact", n_samples=10_000,
        random_state=None, n_jobs=None) -> PG2Estimate:
    """PG²(x, S) = E[(f(x') - f(x))²] for every row x of ``X``.

    ``S``: feature indices (shared by all rows), a boolean mask (d,) or per-row masks (n, d).
    ``sigma`` / ``perturbation`` / ``background``: the noise, see :func:`make_perturbation`.
    ``method``: "exact" (closed form in C), "monte_carlo" (``n_samples`` perturbed copies per row
    through the model's own predictor), "qmc" (scrambled Halton points mapped through the inverse
    CDF, 8 independent scramblings for the standard error), or "auto" (exact unless the model
    exceeds :data:`AUTO_PAIR_BUDGET`; the estimate's ``method`` says which ran).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    forest, X = _prepare(model, X)
    masks = _set_masks(S, len(X), forest.n_features)
    _check_perturbed_finite(X, masks)
    noise = make_perturbation(forest.n_features, sigma, perturbation, background)
    if method == "auto":
        method = "exact" if float(forest.n_leaves) ** 2 <= AUTO_PAIR_BUDGET else "monte_carlo"
    start = time.perf_counter()
    if method == "exact":
        table = cdf_table(forest, X, noise, np.flatnonzero(masks.any(axis=0)))
        values, terms = _native.pg2(forest, X, masks[:, None, :], table, n_jobs=n_jobs)
        values = _squeeze(forest, values[:, 0, :])
        return PG2Estimate(values, np.zeros_like(values), "exact", 0, time.perf_counter() - start, terms)
    if n_samples < 2 or int(n_samples) != n_samples:
        raise ValueError(f"n_samples must be an integer >= 2; got {n_samples}")
    mean, stderr = _sampled_pg2(forest, X, masks, noise, int(n_samples), method, check_random_state(random_state))
    return PG2Estimate(_squeeze(forest, mean), _squeeze(forest, stderr), method, int(n_samples),
                       time.perf_counter() - start)


def _sampled_pg2(forest, X, masks, noise, n_samples, method, rng, batch_rows=200_000):
    """Monte Carlo / randomised QMC estimate of PG² through the model's own predictor."""
    if forest.predict_fn is None:
        raise NotImplementedError("this Forest carries no model predictor; sampling needs the model")
    n, d = X.shape
    k = forest.n_outputs
    mean = np.zeros((n, k))
    stderr = np.zeros((n, k))
    base = np.asarray(forest.predict_fn(X)).reshape(n, k)
    replicates = 8 if method == "qmc" else 1
    per_rep = max(n_samples // replicates, 1)
    for i in range(n):
        feats = np.flatnonzero(masks[i])
        if len(feats) == 0:
            continue
        if method == "monte_carlo":
            eps = np.column_stack([noise.sample(j, n_samples, rng) for j in feats])
        else:
            blocks = []
            for _ in range(replicates):
                u = qmc.Halton(d=len(feats), scramble=True, seed=rng).random(per_rep)
                u = np.clip(u, 1e-16, 1 - 1e-16)
                blocks.append(np.column_stack([noise.ppf(j, u[:, c]) for c, j in enumerate(feats)]))
            eps = np.vstack(blocks)
        gaps = np.empty((len(eps), k))
        for a in range(0, len(eps), batch_rows):
            xp = np.repeat(X[i:i + 1], min(batch_rows, len(eps) - a), axis=0)
            xp[:, feats] += eps[a:a + batch_rows]
            gaps[a:a + batch_rows] = (np.asarray(forest.predict_fn(xp)).reshape(-1, k) - base[i]) ** 2
        if method == "monte_carlo":
            mean[i] = gaps.mean(axis=0)
            stderr[i] = gaps.std(axis=0, ddof=1) / np.sqrt(len(gaps))
        else:
            rep_means = gaps.reshape(replicates, per_rep, k).mean(axis=1)
            mean[i] = rep_means.mean(axis=0)
            stderr[i] = rep_means.std(axis=0, ddof=1) / np.sqrt(replicates)
    return mean, stderr


def _check_ranking(ranking, n_rows: int, n_features: int) -> np.ndarray:
    """(m, n, d) int64 rankings from a (d,), (n, d) or (m, n, d) array of feature orders."""
    r = np.asarray(ranking)
    if r.ndim == 1:
        r = np.broadcast_to(r, (n_rows, len(r)))
    if r.ndim == 2:
        r = r[None]
    if r.ndim != 3 or r.shape[1:] != (n_rows, n_features) or r.shape[0] < 1:
        raise ValueError(f"ranking must have shape ({n_features},), ({n_rows}, {n_features}) or "
                         f"(m, {n_rows}, {n_features}); got {np.shape(ranking)}")
    if not np.issubdtype(r.dtype, np.integer):
        raise TypeError(f"ranking must hold integer feature indices; got dtype {r.dtype}")
    if not np.all(np.sort(r, axis=2) == np.arange(n_features)):
        raise ValueError("every ranking row must be a permutation of 0..d-1")
    return r.astype(np.int64)


def pgi2(model, X, ranking, sigma=0.3, *, perturbation=None, background=None, n_jobs=None) -> np.ndarray:
    """Exact PGI²(x, π) = (1/d) Σ_k PG²(x, π[1..k]) per row; ``ranking`` is (d,) or (n, d).

    Returns (n,) for single-output models, (n, k) otherwise. ``ranking`` may also stack m
    rankings of the same rows, (m, n, d), to score several explanations at once: the result
    gains a leading axis of length m, and a prefix set that several rankings of a row share (the
    full set always, often the first few) is computed once.
    """
    forest, X = _prepare(model, X, allow_nan=False)
    d = forest.n_features
    given = np.asarray(ranking)
    r = _check_ranking(ranking, len(X), d)
    m, n = r.shape[:2]
    position = np.empty_like(r)
    np.put_along_axis(position, r, np.broadcast_to(np.arange(d), r.shape), axis=2)
    # sets[i, a * d + k, j] = 1 iff feature j is among the first k+1 of ranking a of row i
    sets = (position[:, :, None, :] <= np.arange(d)[None, None, :, None]).astype(np.uint8)
    sets = sets.transpose(1, 0, 2, 3).reshape(n, m * d, d)
    unique, where = [], np.empty((n, m * d), dtype=np.int64)
    for i in range(n):
        u, inverse = np.unique(sets[i], axis=0, return_inverse=True)
        where[i] = inverse.reshape(-1)
        unique.append(u)
    mask = np.zeros((n, max(len(u) for u in unique), d), dtype=np.uint8)  # padding: empty sets, PG² = 0
    for i, u in enumerate(unique):
        mask[i, :len(u)] = u
    noise = make_perturbation(d, sigma, perturbation, background)
    table = cdf_table(forest, X, noise, range(d))
    values, _ = _native.pg2(forest, X, mask, table, n_jobs=n_jobs)
    per_set = np.take_along_axis(values, where[:, :, None], axis=1)         # (n, m * d, outputs)
    scores = per_set.reshape(n, m, d, -1).mean(axis=2).transpose(1, 0, 2)   # (m, n, outputs)
    out = _squeeze(forest, scores)
    return out if given.ndim == 3 else out[0]


def _output_weight(forest: Forest, output) -> np.ndarray:
    if output is None:
        return np.ones(forest.n_outputs)
    if isinstance(output, str):
        if output not in forest.output_names:
            raise ValueError(f"unknown output {output!r}; outputs are {forest.output_names}")
        output = forest.output_names.index(output)
    if not 0 <= int(output) < forest.n_outputs:
        raise IndexError(f"output {output} out of range for {forest.n_outputs} outputs")
    w = np.zeros(forest.n_outputs)
    w[int(output)] = 1.0
    return w


def greedy_pg2_ranking(model, X, sigma=0.3, *, perturbation=None, background=None, output=None,
                       return_pg2=False, n_jobs=None):
    """Greedy PG² ranking per row, most important first: step k adds the feature j maximising
    PG²(x, {π(1..k-1)} ∪ {j}) (summed over outputs, or for ``output`` only); ties go to the
    lowest feature index (features the model never reaches tie at the end in index order).

    Returns the (n, d) int ranking, and with ``return_pg2=True`` also the (n, d) path
    ``pg2_path[i, k] = PG²(x_i, π_i(1..k+1))``. PG² is not monotone in S, so the path need not rise.
    """
    forest, X = _prepare(model, X, allow_nan=False)
    noise = make_perturbation(forest.n_features, sigma, perturbation, background)
    table = cdf_table(forest, X, noise, range(forest.n_features))
    ranking, path = _native.greedy_pg2(forest, X, table, _output_weight(forest, output), n_jobs=n_jobs)
    ranking = ranking.astype(np.int64)
    return (ranking, path) if return_pg2 else ranking
