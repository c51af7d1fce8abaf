"""The noise of PG² made once on the driver (:func:`_noise`), as blocks receive it
(:func:`_portable`: no background rows), and the binary flip law (:func:`binary_perturbation`)."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import feature_index
from ..errors import InputError
from ..forest import Forest, import_model
from ..perturbation import Perturbation, make_perturbation

__all__ = ["binary_perturbation"]


def _noise(forest: Forest, sigma, perturbation, background, rho=None) -> Perturbation:
    """The noise of a PG² call on ``forest``, validated (``sigma`` in the background's standard
    deviations when a background is given)."""
    return make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                             missing=forest.missing_value, labels=forest.category_labels,
                             numeric_labels=forest.numeric_labels, rho=rho)


def _portable(forest: Forest, noise: Perturbation) -> Perturbation:
    """``noise`` as the blocks receive it: the same law without the background rows (nothing
    row-sized travels), its categories' laws (ρ, background frequencies) worked out here once;
    ``noise`` itself when it holds no background."""
    if noise.background is None:
        return noise
    categories = forest.n_categories if forest.n_categories is not None else np.zeros(forest.n_features, np.int32)
    shipped = Perturbation(noise.sigma, noise.dists, safe_below=noise.safe_below, rho=noise.rho,
                           sigma_units=noise.sigma_units, binary=noise.binary)
    for j in np.flatnonzero(categories):
        shipped._laws[(int(j), int(categories[j]))] = noise.category_law(int(j), int(categories[j]))
    return shipped


def binary_perturbation(model, background, sigma=0.3, *, perturbation=None, rho=None, features=None) -> Perturbation:
    """Noise in which every 0/1 feature is perturbed by flipping it, for PG² and its relatives.

    The noise of :func:`xai_plugins.pg2` (``sigma`` in the background's standard deviations, or
    ``perturbation``; categorical features as always) in which each numeric feature whose
    ``background`` holds exactly two values {a, b} (a 0/1 indicator) is perturbed by the flip law
    instead of additive noise: x′_j keeps x_j with probability 1 − ρ_j, else is a or b with their
    frequencies in ``background``. PG² stays exact under it (each table entry is a sum over the
    two atoms, read as the model reads them).

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        A model :func:`xai_plugins.import_model` supports, or a :class:`xai_plugins.Forest`.
    background : array-like of shape (N, d) or DataFrame
        Background data (required): the two values of a binary feature and their frequencies come
        from it, and ``sigma`` is in its standard deviations.
    sigma : float or array-like of shape (d,), default 0.3
        Gaussian noise scale of the other features, in the background's standard deviations.
    perturbation : frozen scipy.stats distribution, list of them, or None, default None
        Noise distribution(s) of the other features instead of the Gaussian.
    rho : float, array-like of shape (d,) or None, default None
        ρ_j, scalar or per feature; default that of categorical features, ``P(|e_j| > 1/2)`` for the
        feature's noise in the units given (0.096 for σ = 0.3).
    features : int, str, sequence of them, or None, default None
        Names or indices of the features given the flip law, each of which must hold two values in
        ``background``; default every numeric feature that does.

    Returns
    -------
    Perturbation
        Pass it as ``perturbation=`` to :func:`xai_plugins.pg2`, :func:`xai_plugins.pgi2`,
        :func:`xai_plugins.greedy_pg2_ranking`, the explainers, on any row engine; its ``binary``
        maps each flipped feature to its two values and their frequencies.

    Raises
    ------
    InputError
        ``background`` is None, or a feature named in ``features`` does not hold exactly two
        values in it (or is categorical).
    UnsupportedModelError
        A model that cannot be imported.

    See Also
    --------
    xai_plugins.pg2 : Takes the result as ``perturbation=``.

    Notes
    -----
    Explained rows must hold a or b in the flipped features.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)       # column 1 (sex) holds two values
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> noise = xp.binary_perturbation(model, X, sigma=0.3)
    >>> sorted(noise.binary)
    [1]
    >>> xp.pg2(model, X[:5], S=[1, 2], perturbation=noise).value.shape
    (5,)
    """
    forest = import_model(model)
    if background is None:
        raise InputError("binary_perturbation needs background data: the two values of a binary feature and their "
                         "frequencies come from it")
    noise = make_perturbation(forest.n_features, sigma, perturbation, background, names=forest.feature_names,
                              missing=forest.missing_value, labels=forest.category_labels, rho=rho)
    numeric = ~forest.categorical
    named = features is not None
    chosen = np.flatnonzero(numeric) if not named else np.array(sorted(
        {feature_index(f, forest.feature_names, forest.n_features)
         for f in ([features] if isinstance(features, (str, numbers.Integral)) else features)}), dtype=np.int64)
    binary = {}
    background = noise.background
    assert background is not None           # make_perturbation keeps the background it was given
    for j in chosen.tolist():
        column = background[:, j]
        values, counts = np.unique(column[~np.isnan(column)], return_counts=True)
        if len(values) == 2 and numeric[j]:
            binary[j] = (values, counts / counts.sum())
        elif named:
            raise InputError(f"feature {j} ({(forest.feature_names or [j] * forest.n_features)[j]}) is not binary: its "
                             f"background holds {len(values)} distinct values{'' if numeric[j] else ' (categorical)'}; "
                             "the flip law needs exactly two (leave it out of features=)")
    return Perturbation(noise.sigma, noise.dists, rho=noise.rho, background=background,
                        sigma_units=noise.sigma_units, binary=binary)
