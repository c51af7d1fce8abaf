"""Independent per-feature noise: validation, CDF tables at the split boundaries, and sampling.

The C core never sees a distribution. For each row x and feature j it reads two tables at the
sorted split boundaries b of feature j: P(x_j + noise_j < b) and, computed directly rather than as
one minus it, P(x_j + noise_j > b). This module fills them with ``scipy.special.ndtr`` for
Gaussian noise, or with any frozen ``scipy.stats`` continuous distribution's ``cdf`` and ``sf``.
The C core takes each interval's probability from the table on its side of the median, so tail
probabilities (1e-15 and below) keep full relative precision.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .errors import InputError, InputTypeError, NoiseScaleWarning

#: σ at or above this multiple of the range of a feature's split thresholds and the rows' values makes
#: its perturbation meaningless: the perturbed value then falls within that range with probability
#: ≤ range / (σ √(2π)) < 0.4 %, so PG² compares only "below every threshold" with "above every
#: threshold", with probability ½ each, and no longer depends on σ (:func:`check_noise_scale`)
NOISE_SPAN_LIMIT = 100.0


@dataclass
class Perturbation:
    """Noise added to perturbed features: Gaussian with per-feature ``sigma`` (``dists`` None),
    or one frozen scipy.stats continuous distribution per feature (``dists``)."""

    sigma: np.ndarray | None
    dists: list | None
    #: the noise limits (:func:`check_noise_scale`) this noise was found to be below, if any
    safe_below: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def gaussian_sigma(self) -> np.ndarray:
        """``sigma`` of Gaussian noise (``dists`` None); InputError for a Perturbation built with neither."""
        if self.sigma is None:
            raise InputError("a Perturbation needs sigma (Gaussian noise) or dists; build one with make_perturbation")
        return self.sigma

    def side_probabilities(self, features: np.ndarray, z: np.ndarray, side: np.ndarray) -> np.ndarray:
        """(n, K) probabilities at the offsets ``z`` (n, K): column k holds P(noise_j < z) where
        ``side[k]`` is +1 and P(noise_j > z) where it is -1, j = ``features[k]``, each computed
        directly (not as one minus the other, which loses a tail); ``z`` is overwritten."""
        if self.dists is None:   # P(e > z) = P(e < -z) = ndtr(z / -sigma), exactly -(z / sigma)
            return special.ndtr(np.divide(z, side * self.gaussian_sigma[features], out=z))
        below, out = side > 0, np.empty_like(z)
        for j in np.unique(features):
            dist = self.dists[j]
            for side, fn in ((below, dist.cdf), (~below, getattr(dist, "sf", None))):
                cols = (features == j) & side
                out[:, cols] = fn(z[:, cols]) if fn is not None else 1.0 - dist.cdf(z[:, cols])
        return out

    def ppf(self, j: int, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of noise_j (for quasi-Monte Carlo)."""
        if self.dists is None:
            return self.gaussian_sigma[j] * special.ndtri(u)
        return self.dists[j].ppf(u)

    def sample(self, j: int, size, rng: np.random.Generator) -> np.ndarray:
        """Draws of noise_j."""
        if self.dists is None:
            return rng.normal(0.0, self.gaussian_sigma[j], size=size)
        return self.dists[j].rvs(size=size, random_state=rng)


def make_perturbation(n_features: int, sigma=0.3, perturbation=None, background=None, *,
                      names=None, missing=float("nan")) -> Perturbation:
    """Validate the noise specification.

    - ``sigma``: scalar or (n_features,) standard deviations of Gaussian noise, finite and > 0;
      with ``background`` data it is in units of each feature's standard deviation there
      (the PG² paper standardises features, so sigma = 0.3 means 0.3 standard deviations);
    - ``perturbation``: a frozen ``scipy.stats`` continuous distribution, or a list with one per
      feature, replacing the Gaussian (``sigma`` is then ignored);
    - ``names``: the model's feature names, to align a ``background`` DataFrame by column name.
    - ``missing``: the model's missing-value sentinel; background entries equal to it are
      missing (left out of the standard deviations, as NaN is).
    """
    if perturbation is None and background is None and isinstance(sigma, (int, float, np.floating)) \
            and not isinstance(sigma, bool) and np.isfinite(sigma) and sigma > 0:
        return _isotropic(int(n_features), float(sigma))
    if perturbation is not None:
        dists = list(perturbation) if isinstance(perturbation, (list, tuple)) else [perturbation] * n_features
        if len(dists) != n_features:
            raise InputError(f"perturbation has {len(dists)} distributions but the model has {n_features} features")
        for dist in dists:
            if not (hasattr(dist, "cdf") and hasattr(dist, "ppf") and hasattr(dist, "rvs")):
                raise InputTypeError("perturbation must be a frozen scipy.stats continuous distribution "
                                f"(with cdf, ppf and rvs); got {type(dist).__name__}")
            if hasattr(dist, "dist") and not hasattr(dist.dist, "_pdf") and hasattr(dist.dist, "_pmf"):
                raise InputTypeError("perturbation must be continuous; a discrete distribution has atoms at thresholds")
        return Perturbation(sigma=None, dists=dists)
    try:
        s = np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"sigma must be a number or an array of numbers; got {sigma!r}") from exc
    if s.ndim == 0:
        s = np.full(n_features, float(s))
    if s.shape != (n_features,):
        raise InputError(f"sigma must be a scalar or have one value per feature ({n_features}); got shape {s.shape}")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise InputError(f"sigma must be finite and > 0; got {s if s.size < 10 else s[:10]}")
    if background is not None:
        from ._validation import model_rows

        bg, _ = model_rows(background, names, n_features, what="background", allow_nan=True, missing=missing)
        empty = np.flatnonzero(np.isnan(bg).all(axis=0))
        if empty.size:
            raise InputError(f"background features {empty.tolist()} have no value (every entry is NaN): their "
                             "standard deviation, the unit of sigma, is undefined; impute them or pass a "
                             "background where they are observed")
        std = np.nanstd(bg, axis=0)
        if np.any(~np.isfinite(std)) or np.any(std <= 0):
            bad = np.flatnonzero(~(std > 0))
            raise InputError(f"background features {bad.tolist()} are constant: sigma in standard-deviation "
                             "units is undefined for them")
        s = s * std
    return Perturbation(sigma=s, dists=None)


@functools.lru_cache(maxsize=64)
def _isotropic(n_features: int, sigma: float) -> Perturbation:
    """The same Gaussian noise on every feature (cached: a loop of one-row calls builds it once)."""
    s = np.full(n_features, sigma)
    s.flags.writeable = False
    return Perturbation(sigma=s, dists=None)


def check_noise_scale(splits, perturbation: Perturbation, features, X: np.ndarray, stacklevel: int = 2) -> None:
    """Warn (:class:`~xai_plugins.errors.NoiseScaleWarning`) when the Gaussian σ of a perturbed
    feature j (in ``features``) is at least :data:`NOISE_SPAN_LIMIT` times the range spanned by the
    model's split thresholds on it (``splits.boundaries[j]``, sorted) and the rows' values ``X[:, j]``
    together: every CDF entry is then ½ within 0.4 %, PG² no longer depends on σ. Features with
    fewer than two distinct thresholds are not judged (one row on or near a lone threshold is ½ / ½
    for every σ, rightly), nor is a ``perturbation`` of scipy distributions.

    Free per call: the thresholds-only limits (a lower bound: the range is at least the thresholds'
    span) are computed once per ``splits``, and a Perturbation found below all of them remembers it
    (the cached isotropic ones then cost one identity test); only a σ beyond them reads the rows."""
    if perturbation.dists is not None:
        return
    limit = _noise_limits(splits)
    if perturbation.safe_below is limit:
        return
    sigma, features = perturbation.gaussian_sigma, np.asarray(features, dtype=np.intp)
    candidates = features[sigma[features] >= limit[features]]
    if not candidates.size:
        if np.all(sigma < limit):
            perturbation.safe_below = limit
        return
    b = splits.boundaries
    ranges = {int(j): np.nanmax(X[:, j], initial=b[j][-1]) - np.nanmin(X[:, j], initial=b[j][0]) for j in candidates}
    wide = [j for j, r in ranges.items() if sigma[j] >= NOISE_SPAN_LIMIT * r]
    if wide:
        shown = ", ".join(f"feature {j}: σ = {sigma[j]:.3g} vs range {ranges[j]:.3g}" for j in wide[:5])
        warnings.warn(f"the noise is at least {NOISE_SPAN_LIMIT:g} times the range of the model's split thresholds "
                      f"and the rows' values on {len(wide)} perturbed feature(s) ({shown}"
                      f"{', ...' if len(wide) > 5 else ''}): the perturbed value falls outside every threshold almost "
                      "surely, so PG² no longer depends on σ. Is σ in the features' units (with background data it "
                      "is in standard deviations)?", NoiseScaleWarning, stacklevel=stacklevel)


_LIMITS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _noise_limits(splits) -> np.ndarray:
    """(d,) :data:`NOISE_SPAN_LIMIT` times the span of each feature's thresholds (inf below two
    distinct thresholds); computed once per ``splits`` (a Forest's cached split boundaries)."""
    limit = _LIMITS.get(splits)
    if limit is None:
        limit = np.array([NOISE_SPAN_LIMIT * (b[-1] - b[0]) if len(b) > 1 else np.inf for b in splits.boundaries])
        limit.flags.writeable = False
        _LIMITS[splits] = limit
    return limit


def cdf_table(splits, X: np.ndarray, perturbation: Perturbation, features) -> np.ndarray:
    """(n, 2 * H) table, H = ``splits.cdf_offset[-1]``, in the layout of ``xai_pg2`` (csrc/xai.h):
    for each row and each feature j in ``features``, the CDF half ``[:, offsets[j]:offsets[j+1]]``
    holds [0, P(x_j + e < b_1), ..., P(x_j + e < b_m), 1] at feature j's sorted boundaries and the
    survival half ``[:, H + offsets[j]:H + offsets[j+1]]`` holds [1, P(x_j + e > b_1), ...,
    P(x_j + e > b_m), 0], each computed directly so that both tails keep their relative precision;
    other features' entries are 0 and never read. ``splits``: the
    :class:`~xai_plugins.prediction_gap.SplitBoundaries` of the model.
    Warns when the noise swamps the thresholds of a perturbed feature (:func:`check_noise_scale`)."""
    check_noise_scale(splits, perturbation, features, X, stacklevel=4)  # 4: the caller of pg2 / pgi2 / greedy
    cols, owner, at, side = splits.columns_of(features)
    z = at - X[:, owner]                            # per feature: -inf, b_1 - x_j, ..., b_m - x_j, +inf, twice
    probabilities = perturbation.side_probabilities(owner, z, side)
    if perturbation.dists is not None:              # exact ends, whatever a distribution gives at +-inf
        ends = np.isinf(at)
        probabilities[:, ends] = (side[ends] * at[ends] > 0)
    table = np.zeros((len(X), 2 * len(splits.column_feature)))
    table[:, cols] = probabilities
    return table
