"""Independent per-feature noise: validation, CDF tables at the split boundaries, and sampling.

The C core never sees a distribution. For each row x and feature j it reads a table of
P(x_j + noise_j < b) at the sorted split boundaries b of feature j (DESIGN §4), which this
module fills: with ``scipy.special.ndtr`` for Gaussian noise, or with any frozen
``scipy.stats`` continuous distribution's ``cdf``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special


@dataclass
class Perturbation:
    """Noise added to perturbed features: Gaussian with per-feature ``sigma`` (``dists`` None),
    or one frozen scipy.stats continuous distribution per feature (``dists``)."""

    sigma: np.ndarray | None
    dists: list | None

    def cdf(self, j: int, z: np.ndarray) -> np.ndarray:
        """P(noise_j < z), elementwise."""
        if self.dists is None:
            return special.ndtr(z / self.sigma[j])
        return self.dists[j].cdf(z)

    def ppf(self, j: int, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of noise_j (for quasi-Monte Carlo)."""
        if self.dists is None:
            return self.sigma[j] * special.ndtri(u)
        return self.dists[j].ppf(u)

    def sample(self, j: int, size, rng: np.random.Generator) -> np.ndarray:
        """Draws of noise_j."""
        if self.dists is None:
            return rng.normal(0.0, self.sigma[j], size=size)
        return self.dists[j].rvs(size=size, random_state=rng)


def make_perturbation(n_features: int, sigma=0.3, perturbation=None, background=None) -> Perturbation:
    """Validate the noise specification.

    - ``sigma``: scalar or (n_features,) standard deviations of Gaussian noise, finite and > 0;
      with ``background`` data it is in units of each feature's standard deviation there
      (the PG² paper standardises features, so sigma = 0.3 means 0.3 standard deviations);
    - ``perturbation``: a frozen ``scipy.stats`` continuous distribution, or a list with one per
      feature, replacing the Gaussian (``sigma`` is then ignored).
    """
    if perturbation is not None:
        dists = list(perturbation) if isinstance(perturbation, (list, tuple)) else [perturbation] * n_features
        if len(dists) != n_features:
            raise ValueError(f"perturbation has {len(dists)} distributions but the model has {n_features} features")
        for dist in dists:
            if not (hasattr(dist, "cdf") and hasattr(dist, "ppf") and hasattr(dist, "rvs")):
                raise TypeError("perturbation must be a frozen scipy.stats continuous distribution "
                                f"(with cdf, ppf and rvs); got {type(dist).__name__}")
            if hasattr(dist, "dist") and not hasattr(dist.dist, "_pdf") and hasattr(dist.dist, "_pmf"):
                raise TypeError("perturbation must be continuous; a discrete distribution has atoms at thresholds")
        return Perturbation(sigma=None, dists=dists)
    try:
        s = np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sigma must be a number or an array of numbers; got {sigma!r}") from exc
    if s.ndim == 0:
        s = np.full(n_features, float(s))
    if s.shape != (n_features,):
        raise ValueError(f"sigma must be a scalar or have one value per feature ({n_features}); got shape {s.shape}")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"sigma must be finite and > 0; got {s if s.size < 10 else s[:10]}")
    if background is not None:
        from ._validation import check_matrix

        bg = check_matrix(background, n_features=n_features, name="background", allow_nan=True)
        std = np.nanstd(bg, axis=0)
        if np.any(~np.isfinite(std)) or np.any(std <= 0):
            bad = np.flatnonzero(~(std > 0))
            raise ValueError(f"background features {bad.tolist()} are constant: sigma in standard-deviation "
                             "units is undefined for them")
        s = s * std
    return Perturbation(sigma=s, dists=None)


def cdf_table(forest, X: np.ndarray, perturbation: Perturbation, features) -> np.ndarray:
    """(n, cdf_len) table: for each row and each feature j in ``features``, the entries
    [0, P(x_j + e < b_1), ..., P(x_j + e < b_m), 1] at feature j's sorted boundaries; other
    features' tables hold [0, ..., 0, 1] and are never read."""
    offsets = forest.cdf_offset
    table = np.zeros((len(X), offsets[-1]))
    table[:, offsets[1:] - 1] = 1.0
    for j in features:
        b = forest.boundaries[j]
        if len(b):
            table[:, offsets[j] + 1:offsets[j + 1] - 1] = perturbation.cdf(j, b[None, :] - X[:, j:j + 1])
    return table
