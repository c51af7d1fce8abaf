"""Input checks shared by every explainer: one place that turns bad data into clear exceptions."""

from __future__ import annotations

import numpy as np


def feature_names_of(X, n_features: int | None = None, model=None) -> list[str]:
    """Column names from a pandas DataFrame, else the model's ``feature_names_in_``, else x0..x{d-1}."""
    columns = getattr(X, "columns", None)
    if columns is not None:
        return [str(c) for c in columns]
    names = getattr(model, "feature_names_in_", None) if model is not None else None
    if names is not None:
        return [str(c) for c in names]
    if n_features is None:
        n_features = np.shape(X)[1]
    return [f"x{j}" for j in range(n_features)]


def check_matrix(X, *, n_features: int | None = None, allow_nan: bool = False,
                 name: str = "X", min_rows: int = 1) -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-D float64 array or raise a ValueError/TypeError that says why.

    - a 1-D input is read as one row;
    - ``n_features`` (when given) must match the number of columns;
    - infinities are always refused; NaN only when ``allow_nan`` is False.
    """
    if X is None:
        raise TypeError(f"{name} is None; pass a 2-D array or DataFrame of shape (n_rows, n_features)")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric; could not convert it to float64 ({exc})") from exc
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_rows, n_features); got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} is empty: it has {arr.shape[0]} rows, at least {min_rows} needed")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} columns but the model expects {n_features} features")
    if np.isinf(arr).any():
        rows, cols = np.nonzero(np.isinf(arr))
        raise ValueError(f"{name} contains infinite values (first at row {rows[0]}, column {cols[0]})")
    if not allow_nan and np.isnan(arr).any():
        rows, cols = np.nonzero(np.isnan(arr))
        raise ValueError(f"{name} contains NaN (first at row {rows[0]}, column {cols[0]}); "
                         "impute missing values first")
    return np.ascontiguousarray(arr)


def check_random_state(random_state) -> np.random.Generator:
    """A numpy Generator from None, an int seed, a SeedSequence or an existing Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1))
    return np.random.default_rng(random_state)


def check_is_fitted(model) -> None:
    """Raise sklearn's NotFittedError when a scikit-learn style model has not been fitted."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted as _sk_check

    try:
        _sk_check(model)
    except NotFittedError as exc:
        raise NotFittedError(f"{type(model).__name__} is not fitted yet; call fit() first") from exc
    except TypeError:
        pass  # not a scikit-learn estimator: the importer decides
