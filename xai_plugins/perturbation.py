"""Independent per-feature noise: validation, CDF tables at the split boundaries, and sampling.

The C core never sees a distribution. For each row x and feature j it reads two tables at the
sorted split boundaries b of feature j: P(x_j + noise_j < b) and, computed directly rather than as
one minus it, P(x_j + noise_j > b). This module fills them with ``scipy.special.ndtr`` for
Gaussian noise, or with any frozen ``scipy.stats`` continuous distribution's ``cdf`` and ``sf``.
The C core takes each interval's probability from the table on its side of the median, so tail
probabilities (1e-15 and below) keep full relative precision.

A categorical feature j (set-membership splits) is perturbed by a finite law instead: x'_j keeps
x_j with probability 1 - ρ_j and is otherwise drawn from the category frequencies q_j of the
background data (its observed values; one the model has no category for counts as "other", an unseen
category) or, without background, uniformly from the model's categories. Its table holds the
probability of each atom (category code, "other", NaN: see ``csrc/xai.h``). ρ_j defaults to the
probability that the feature's own noise moves a value by more than half a unit, P(|e_j| > 1/2)
(2 Φ(-1 / (2σ)) for Gaussian noise of σ in the units given: 0.096 for the default σ = 0.3), i.e. the
chance that the same noise added to a category code and rounded changes the category.

A numeric feature whose background holds only two values {a, b} (a 0/1 indicator) can be perturbed
by the same law (``Perturbation.binary``, built by :func:`xai_plugins.prediction_gap.binary_perturbation`):
x'_j keeps x_j with probability 1 - ρ_j and is otherwise a or b with the background's frequencies
of a and b. Its table entries at the split boundaries are then exact sums over the two atoms,
P(x'_j goes left of b) = Σ_v P(x'_j = v) [v goes left of b], each v read as the model reads it.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .errors import InputError, InputTypeError, NoiseScaleWarning

__all__: list[str] = []      # internal module: the public names are in the API reference

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
    #: categorical features: per-feature ρ (NaN: the default, :func:`default_rho`), or None for all defaults
    rho: np.ndarray | None = None
    #: background rows (model feature order), whose category frequencies are q; None: uniform q
    background: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the Gaussian σ in the units given (before scaling by the background's standard deviations)
    sigma_units: np.ndarray | None = field(default=None, repr=False, compare=False)
    _laws: dict = field(default_factory=dict, repr=False, compare=False)
    #: numeric features perturbed by the flip law: feature -> (its two values (2,), their frequencies (2,))
    binary: dict = field(default_factory=dict, repr=False, compare=False)

    def rho_of(self, j: int) -> float:
        """ρ_j: the given one, else :meth:`default_rho`."""
        return float(self.rho[j]) if self.rho is not None and np.isfinite(self.rho[j]) else self.default_rho(j)

    def binary_probabilities(self, j: int, xj: np.ndarray) -> np.ndarray:
        """(n, 2) P(x'_j = a), P(x'_j = b) of binary feature j for each row value ``xj`` (which must be
        a or b: :class:`~xai_plugins.errors.InputError` otherwise)."""
        values, q = self.binary[j]
        xj = np.asarray(xj, dtype=np.float64)
        own = xj[:, None] == values[None, :]
        bad = ~own.any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"feature {j} is perturbed by the binary flip law (its background holds only the values "
                             f"{values[0]:g} and {values[1]:g}), but row {i} has {xj[i]!r}: explain rows whose value "
                             "is one of the two, or leave the feature out of binary_perturbation(features=...)")
        rho = self.rho_of(j)
        return (1.0 - rho) * own + rho * q[None, :]

    def category_law(self, j: int, n_categories: int) -> tuple[float, np.ndarray]:
        """(ρ_j, q_j) of categorical feature j with ``n_categories`` = K codes: x'_j keeps x_j with
        probability 1 - ρ_j, else is code c with probability q_j[c], c < K, or with probability q_j[K] a
        category the model does not know ("other": a background value that is no code of the model, such
        as a label CatBoost never split on), which goes where the model sends unseen categories. q_j holds
        the frequencies of the background's observed values (NaN left out), uniform over the K codes
        without background (remembered per feature)."""
        key = (int(j), int(n_categories))
        law = self._laws.get(key)
        if law is None:
            rho = self.rho_of(j)
            if self.background is None:
                q = np.append(np.full(n_categories, 1.0 / n_categories), 0.0)
            else:
                column = self.background[:, j]
                observed = column[~np.isnan(column)]          # not empty: make_perturbation checks it
                q = np.bincount(category_atoms(observed, n_categories), minlength=n_categories + 1) / observed.size
            law = self._laws[key] = (float(rho), q)
        return law

    def default_rho(self, j: int) -> float:
        """ρ_j when none is given: P(|e_j| > 1/2) for the feature's noise e_j (see the module docstring)."""
        if self.dists is None:
            sigma = self.sigma_units if self.sigma_units is not None else self.gaussian_sigma
            return float(2.0 * special.ndtr(-0.5 / sigma[j]))
        dist = self.dists[j]
        return float(min(1.0, dist.cdf(-0.5) + dist.sf(0.5)))

    def atom_table(self, j: int, n_categories: int, xj: np.ndarray) -> np.ndarray:
        """(n, K + 2) probabilities of the atoms of x'_j (codes 0 .. K-1, "other", NaN) per row value ``xj``."""
        rho, q = self.category_law(j, n_categories)
        table = np.zeros((len(xj), n_categories + 2))
        table[:, :n_categories + 1] = rho * q
        table[np.arange(len(xj)), category_atoms(xj, n_categories)] += 1.0 - rho
        return table

    def perturbed(self, j: int, xj: float, u: np.ndarray, n_categories: int = 0) -> np.ndarray:
        """x'_j for uniforms ``u`` by the inverse CDF: x_j + noise (numeric), or for a categorical
        feature x_j where u < 1 - ρ_j and else the code whose cumulative frequency first exceeds
        (u - 1 + ρ_j) / ρ_j (the code K for "other", which every predictor reads as an unseen category)."""
        if j in self.binary:
            values, q = self.binary[j]
            self.binary_probabilities(j, np.array([xj]))          # checks that x_j is one of the two values
            rho = self.rho_of(j)
        elif not n_categories:
            return xj + self.ppf(j, u)
        else:
            rho, q = self.category_law(j, n_categories)
            values = np.arange(n_categories + 1, dtype=np.float64)
        keep = u < 1.0 - rho
        draw = (u - (1.0 - rho)) / rho if rho > 0 else np.zeros_like(u)
        codes = np.minimum(np.searchsorted(np.cumsum(q), draw, side="right"), len(q) - 1)
        return np.where(keep, xj, values[codes])

    def draw(self, j: int, xj: float, size: int, rng: np.random.Generator, n_categories: int = 0) -> np.ndarray:
        """``size`` random draws of x'_j (Monte Carlo): x_j + :meth:`sample`, or the categorical / binary law."""
        if not n_categories and j not in self.binary:
            return xj + self.sample(j, size, rng)
        return self.perturbed(j, xj, rng.random(size), n_categories)

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


def category_atoms(values: np.ndarray, n_categories: int) -> np.ndarray:
    """The atom of each value of a categorical feature (``csrc/xai.h``): the code when it is an integer
    in [0, K), K ("other": an unseen category) for any other number, K + 1 for NaN."""
    values = np.asarray(values, dtype=np.float64)
    code = (values >= 0) & (values < n_categories) & (values == np.floor(values))
    atoms = np.where(code, np.nan_to_num(values), n_categories)
    return np.where(np.isnan(values), n_categories + 1, atoms).astype(np.int64)


def make_perturbation(n_features: int, sigma=0.3, perturbation=None, background=None, *,
                      names=None, missing=float("nan"), rho=None, labels=None,
                      numeric_labels: bool = False) -> Perturbation:
    """Validate the noise specification.

    - ``sigma``: scalar or (n_features,) standard deviations of Gaussian noise, finite and > 0;
      with ``background`` data it is in units of each feature's standard deviation there
      (the PG² paper standardises features, so sigma = 0.3 means 0.3 standard deviations);
    - ``perturbation``: a frozen ``scipy.stats`` continuous distribution, or a list with one per
      feature, replacing the Gaussian (``sigma`` is then ignored); a :class:`Perturbation` is
      returned as it is;
    - ``names``: the model's feature names, to align a ``background`` DataFrame by column name.
    - ``missing``: the model's missing-value sentinel; background entries equal to it are
      missing (left out of the standard deviations, as NaN is).
    - ``rho``: for categorical features, the probability ρ that x'_j is redrawn from the category
      frequencies (scalar, or one per feature: entries of numeric features and NaN entries are not
      used / take the default); default P(|e_j| > 1/2) of the feature's noise (see the module docstring).
    - ``labels``: per feature, the category labels of a categorical feature (a Forest's
      ``category_labels``): a ``background`` DataFrame's category / text columns are read as their codes,
      and its numbers too when ``numeric_labels`` (the Forest's ``numeric_labels``); a category the model
      refuses (labels with a ``refusal``) is refused there too (a missing value is not: it is never drawn).
    """
    if isinstance(perturbation, Perturbation):      # already validated (e.g. shipped to a row engine's workers)
        return perturbation
    if background is not None and labels is not None:       # category columns read as the model's codes
        from ._categories import category_codes

        background = category_codes(background, names, labels, numeric_labels, "background", missing=False)
    rho_vector = _rho_vector(rho, n_features)
    labelled = np.array([known is not None for known in labels]) if labels is not None else np.zeros(n_features, bool)
    if rho_vector is not None or background is not None:
        noise = _numeric_perturbation(n_features, sigma, perturbation, background, names, missing, labelled)
        bg = None
        if background is not None:
            from ._categories import check_refused
            from ._validation import model_rows

            bg, _ = model_rows(background, names, n_features, what="background", allow_nan=True, missing=missing)
            if numeric_labels and labels is not None:       # codes of categories its model refuses: never drawn
                check_refused(bg, labels, "background", missing=False)
        return Perturbation(noise.sigma, noise.dists, rho=rho_vector, background=bg,
                            sigma_units=noise.sigma_units)
    return _numeric_perturbation(n_features, sigma, perturbation, background, names, missing, labelled)


def per_feature(value, n_features: int, name: str) -> np.ndarray:
    """``value`` (a number, or one number per feature) as a (n_features,) float64 array; raises
    :class:`InputTypeError` / :class:`InputError` naming ``name`` otherwise (booleans too: ``True`` is no 1.0)."""
    if _holds_bool(value):
        raise InputTypeError(f"{name} must be a number or one number per feature, not a boolean; got {value!r}")
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"{name} must be a number or one number per feature; got {value!r}") from exc
    if out.ndim == 0:
        out = np.full(n_features, float(out))
    if out.shape != (n_features,):
        raise InputError(f"{name} must be a scalar or have one value per feature ({n_features}); got shape "
                         f"{out.shape}")
    return out


def _holds_bool(value) -> bool:
    """Whether ``value`` (a scalar, an array or a sequence) is or holds a boolean."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (int, float)):
        return False
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    return arr.dtype == bool or (arr.dtype == object and any(isinstance(v, (bool, np.bool_)) for v in arr.ravel()))


def _rho_vector(rho, n_features: int) -> np.ndarray | None:
    """``rho`` as a (d,) array (NaN: default), validated in [0, 1]; None stays None."""
    if rho is None:
        return None
    r = per_feature(rho, n_features, "rho")
    if np.any(~np.isnan(r) & ~((r >= 0) & (r <= 1))):
        raise InputError(f"rho is a probability: every entry must lie in [0, 1] (NaN for the default); got {rho!r}")
    return r


def _numeric_perturbation(n_features, sigma, perturbation, background, names, missing,
                          labelled: np.ndarray) -> Perturbation:
    """The noise of the numeric features (see :func:`make_perturbation`). A feature with category labels
    (``labelled``) has no standard deviation to speak of: its σ is in the units given (its law is the
    categorical one, or, for a category the model never splits on, any noise, which changes nothing), so a
    background in which it is constant is no error."""
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
    s = per_feature(sigma, n_features, "sigma")
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
        std = np.where(labelled, 1.0, np.nanstd(bg, axis=0))
        if np.any(~np.isfinite(std)) or np.any(std <= 0):
            bad = np.flatnonzero(~(std > 0))
            raise InputError(f"background features {bad.tolist()} are constant: sigma in standard-deviation "
                             "units is undefined for them")
        return Perturbation(sigma=s * std, dists=None, sigma_units=s)
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
    if perturbation.binary:                         # the flip law has no σ to judge
        features = [j for j in np.asarray(features).tolist() if j not in perturbation.binary]
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
    other features' entries are 0 and never read. A categorical feature's CDF half holds the
    probabilities of its atoms (:meth:`Perturbation.atom_table`). ``splits``: the
    :class:`~xai_plugins.prediction_gap.SplitBoundaries` of the model.
    Warns when the noise swamps the thresholds of a perturbed feature (:func:`check_noise_scale`)."""
    check_noise_scale(splits, perturbation, features, X, stacklevel=4)  # 4: the caller of pg2 / pgi2 / greedy
    features = np.asarray(features, dtype=np.int64)
    categorical = splits.n_categories[features] > 0 if len(splits.categorical) else None
    cols, owner, at, side = splits.columns_of(features if categorical is None else features[~categorical])
    z = at - X[:, owner]                            # per feature: -inf, b_1 - x_j, ..., b_m - x_j, +inf, twice
    probabilities = perturbation.side_probabilities(owner, z, side)
    if perturbation.dists is not None:              # exact ends, whatever a distribution gives at +-inf
        ends = np.isinf(at)
        probabilities[:, ends] = (side[ends] * at[ends] > 0)
    table = np.zeros((len(X), 2 * len(splits.column_feature)))
    table[:, cols] = probabilities
    for j in features[categorical] if categorical is not None else ():   # atom probabilities (CDF half)
        k = int(splits.n_categories[j])
        table[:, splits.cdf_offset[j]:splits.cdf_offset[j] + k + 2] = perturbation.atom_table(j, k, X[:, j])
    H = len(splits.column_feature)
    for j in (int(j) for j in features if int(j) in perturbation.binary):   # the flip law, summed over its atoms
        lo, hi = int(splits.cdf_offset[j]), int(splits.cdf_offset[j + 1])
        left = splits.goes_left(perturbation.binary[j][0], splits.column_boundary[lo:hi]).astype(np.float64)
        p = perturbation.binary_probabilities(j, X[:, j])
        table[:, lo:hi] = p @ left
        table[:, H + lo:H + hi] = p @ (1.0 - left)
        for side, ones in ((0, left.all(axis=0)), (H, (left == 0).all(axis=0))):   # both atoms on one side: 1
            table[:, side + lo + np.flatnonzero(ones)] = 1.0
    return table
