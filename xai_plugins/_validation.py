"""Input checks shared by every public entry point: one place that turns user data into the
arrays the computations need, or into a clear exception (see :mod:`xai_plugins.errors`).

Conventions (the same for every function of the package):

- **Columns.** A DataFrame's columns are aligned *by name* to the model's feature names (the
  names it was fitted with) by :func:`model_rows`; a DataFrame that lacks one of them, or has an
  extra column, is refused with :class:`~xai_plugins.errors.FeatureMismatchError` naming both. A
  plain array is read positionally. Feature indices (``S``, rankings, ``features=``) always
  index the model's feature order, and feature names are accepted wherever an index is.
- **n_jobs** follows scikit-learn: ``None`` means 1 unless a ``joblib.parallel_config(n_jobs=...)``
  context says otherwise, ``-1`` all cores, ``-2`` all but one.
- **random_state** follows scikit-learn: ``None`` draws fresh entropy, an int or a
  ``numpy.random.Generator`` / ``RandomState`` makes results reproducible.
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from .errors import FeatureMismatchError, InputError, InputIndexError, InputTypeError

#: LightGBM names the columns of data fitted without names Column_0, Column_1, ...
_LIGHTGBM_DEFAULT_NAME = "Column_{}"


def default_feature_names(n_features: int) -> list[str]:
    """x0, x1, ... for data without column names."""
    return [f"x{j}" for j in range(n_features)]


def model_feature_names(model) -> list[str] | None:
    """The feature names a fitted model was trained with, in its column order, or None.

    A :class:`~xai_plugins.forest.Forest` carries them; scikit-learn (and the XGBoost / LightGBM
    scikit-learn wrappers) store ``feature_names_in_``; XGBoost boosters ``feature_names``;
    LightGBM boosters ``feature_name()`` (its generated ``Column_i`` names count as none).
    """
    if model is None:
        return None
    if hasattr(model, "tree_offset") and hasattr(model, "feature_names"):       # a Forest
        return None if model.feature_names is None else list(model.feature_names)
    library = type(model).__module__.split(".")[0]
    try:
        names = getattr(model, "feature_names_in_", None)
        if names is None and library == "xgboost":
            names = (model.get_booster() if hasattr(model, "get_booster") else model).feature_names
        elif names is None and library == "lightgbm":
            names = getattr(model, "booster_", model).feature_name()
    except Exception:  # noqa: BLE001 - an unfitted wrapper has no names; the importer says it is unfitted
        return None
    if names is None or len(names) == 0:
        return None
    names = [str(c) for c in names]
    if library == "lightgbm" and names == [_LIGHTGBM_DEFAULT_NAME.format(j) for j in range(len(names))]:
        return None
    return names


def stored_name(column: str) -> str:
    """A column name as LightGBM stores it (it replaces spaces by underscores); used only when the
    name as given is not among the model's."""
    return column.replace(" ", "_")


def feature_order(given: list[str], names: list[str], what: str = "X") -> np.ndarray | None:
    """Positions in ``given`` of each of ``names`` (None when already in order); raises
    :class:`FeatureMismatchError` naming the missing and unexpected columns otherwise."""
    if len(set(given)) != len(given):
        seen, dup = set(), []
        for g in given:
            (dup.append(g) if g in seen else seen.add(g))
        raise FeatureMismatchError(f"{what} has duplicated column names {sorted(set(dup))}")
    if given == names:
        return None
    if set(given) != set(names) and len(given) == len(names) and \
            {stored_name(g) for g in given} == set(names):
        given = [stored_name(g) for g in given]
    missing = [n for n in names if n not in given]
    unexpected = [g for g in given if g not in names]
    if missing or unexpected:
        raise FeatureMismatchError(
            f"{what} columns do not match the model's features: missing {missing[:20]}, unexpected "
            f"{unexpected[:20]} (the model was fitted on {len(names)} features: {names[:20]}"
            f"{' ...' if len(names) > 20 else ''})")
    where = {g: i for i, g in enumerate(given)}
    return np.array([where[n] for n in names], dtype=np.intp)


def model_rows(X, names: list[str] | None, n_features: int | None, *, what: str = "X", allow_nan: bool = False,
               min_rows: int = 1) -> tuple[np.ndarray, list[str]]:
    """``X`` as (n, n_features) float64 rows in the model's feature order, and the feature names.

    A DataFrame (or a Series, read as one row) is aligned by column name to ``names`` (the
    model's feature names, see :func:`model_feature_names`); when the model knows no names its
    columns are taken in order and name the features. Arrays are read positionally.
    ``n_features`` None accepts any column count.
    """
    if _is_series(X):
        X = X.to_frame().T
    columns = getattr(X, "columns", None)
    given = None if columns is None else [str(c) for c in columns]
    if given is not None and names is not None:
        order = feature_order(given, list(names), what)
        if order is not None:
            X = X.iloc[:, order]
    rows = check_matrix(X, n_features=n_features, allow_nan=allow_nan, name=what, min_rows=min_rows)
    if names is not None:
        return rows, list(names)
    if given is not None:
        feature_order(given, given, what)       # refuses duplicated names
        return rows, given
    return rows, default_feature_names(rows.shape[1])


def _is_series(X) -> bool:
    return type(X).__name__ == "Series" and hasattr(X, "to_frame")


def is_dask(*objs) -> bool:
    """True when any of ``objs`` is a dask collection (array, DataFrame, delayed). Never imports
    dask: without dask loaded no object can be one."""
    if sys.modules.get("dask") is None:
        return False
    is_collection = getattr(sys.modules["dask"], "is_dask_collection", None)
    if is_collection is None:
        return False
    return any(is_collection(o) for o in objs)


def check_matrix(X, *, n_features: int | None = None, allow_nan: bool = False,
                 name: str = "X", min_rows: int = 1) -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-D float64 array or raise an :class:`InputError` /
    :class:`InputTypeError` that says why.

    - a 1-D input is read as one row;
    - ``n_features`` (when given) must match the number of columns;
    - complex data and infinities are always refused; NaN unless ``allow_nan``.
    """
    if X is None:
        raise InputTypeError(f"{name} is None; pass a 2-D array or DataFrame of shape (n_rows, n_features)")
    if hasattr(X, "dtypes") and hasattr(X, "items"):
        arr = frame_values(X, name)
    else:
        if np.iscomplexobj(X):
            raise InputTypeError(f"{name} holds complex numbers; pass real-valued data")
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputTypeError(f"{name} must be numeric; could not convert it to float64 ({exc})") from exc
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_rows, n_features); got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise InputError(f"{name} is empty: it has {arr.shape[0]} rows, at least {min_rows} needed")
    if n_features is not None and arr.shape[1] != n_features:
        raise InputError(f"{name} has {arr.shape[1]} columns but the model expects {n_features} features")
    if np.isinf(arr).any():
        rows, cols = np.nonzero(np.isinf(arr))
        raise InputError(f"{name} contains infinite values (first at row {rows[0]}, column {cols[0]})")
    if not allow_nan and np.isnan(arr).any():
        rows, cols = np.nonzero(np.isnan(arr))
        raise InputError(f"{name} contains NaN (first at row {rows[0]}, column {cols[0]}); "
                         "impute missing values first")
    return np.ascontiguousarray(arr)


def frame_values(frame, name: str = "X") -> np.ndarray:
    """A pandas DataFrame's values as an (n, d) float64 array, converting only what converts exactly.

    Numeric columns of any dtype become float64: numpy, nullable (``Float64``, ``Int64``,
    ``boolean``), pyarrow (``double[pyarrow]``, ``int64[pyarrow]``, ...) and object columns that
    hold only numbers; a missing value (``pd.NA``, ``None``) becomes NaN; a ``category`` whose
    categories are numbers becomes its values. An integer beyond ±2**53, which float64 would round,
    raises :class:`InputError`. Text, dates, non-numeric categories and objects that are not
    numbers raise :class:`InputTypeError` naming the columns: encode them as the model was
    trained (its numeric codes) first. Complex columns are refused as well.
    """
    n = len(frame)
    out = np.empty((n, frame.shape[1]), dtype=np.float64, order="F")
    refused = []
    for j, (label, column) in enumerate(frame.items()):
        values = _column_values(column, f"{name} column {str(label)!r}")
        if values is None:
            refused.append(f"{str(label)!r} ({column.dtype})")
        else:
            out[:, j] = values
    if refused:
        raise InputTypeError(
            f"{name} has non-numeric column(s) {', '.join(refused[:20])}{' ...' if len(refused) > 20 else ''}: "
            "the trees compare numbers; encode these columns as the model was trained (e.g. the numeric "
            "category codes or one-hot columns it was fitted on) before passing them")
    return out


#: object columns with these pandas.api.types.infer_dtype kinds hold only numbers (and missing values)
_NUMERIC_OBJECTS = {"integer", "floating", "mixed-integer-float", "decimal", "boolean", "empty"}


def _column_values(column, what: str) -> np.ndarray | None:
    """One column as float64 (missing -> NaN), or None when it is not numeric (see :func:`frame_values`)."""
    import pandas as pd
    from pandas.api import types

    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = _column_values(pd.Series(dtype.categories), what)
        if categories is None:
            return None
        codes = column.cat.codes.to_numpy()
        return np.where(codes >= 0, categories[codes], np.nan)
    if types.is_complex_dtype(dtype):
        raise InputTypeError(f"{what} holds complex numbers; pass real-valued data")
    numeric = types.is_numeric_dtype(dtype) or types.is_bool_dtype(dtype)
    if dtype == object:
        numeric = types.infer_dtype(column, skipna=True) in _NUMERIC_OBJECTS
    if not numeric or types.is_timedelta64_dtype(dtype):
        return None
    try:
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        return None
    if (types.is_integer_dtype(dtype) or dtype == object) and np.any(np.abs(values) > 2.0 ** 53):
        big = column[np.abs(values) > 2.0 ** 53]
        if any(int(v) != int(f) for v, f in zip(big, values[np.abs(values) > 2.0 ** 53])):
            raise InputError(f"{what} holds integers beyond 2**53 that float64 cannot represent exactly "
                             f"(e.g. {big.iloc[0]}); rescale the column as the model was trained")
    return values


def feature_index(feature, names: list[str] | None, n_features: int) -> int:
    """Index in the model's feature order of a feature given by position or by name."""
    if isinstance(feature, (bool, np.bool_)):
        raise InputTypeError(f"feature {feature!r} must be an index or a name, not a bool")
    if isinstance(feature, numbers.Integral):
        if not 0 <= int(feature) < n_features:
            raise InputIndexError(f"feature index {feature} out of range for {n_features} features")
        return int(feature)
    if isinstance(feature, str):
        if names is not None and feature not in names and stored_name(feature) in names:
            feature = stored_name(feature)
        if names is None or feature not in names:
            known = names if names is not None else "none: the model and data carry no feature names"
            raise InputError(f"unknown feature {feature!r}; feature names are {known}")
        return list(names).index(feature)
    raise InputTypeError(f"feature {feature!r} must be an integer index or a feature name")


def resolve_output(output_names: list[str] | None, output, *, default=None) -> int | None:
    """Position of ``output`` (an index, or a name such as a class label) among a model's outputs.

    A single-output model (``output_names`` None or of length 1) takes ``None`` or 0 and gives
    None. With several outputs, ``None`` falls back to ``default`` (an index or name; when it is
    None too, the caller must choose and an :class:`InputError` says so).
    """
    k = 1 if output_names is None else len(output_names)
    if k == 1:
        if output not in (None, 0) and not (output_names and str(output) == str(output_names[0])):
            raise InputError(f"the model has a single output; got output={output!r}")
        return None
    if output is None:
        output = default
    if output is None:
        raise InputError(f"the model has {k} outputs {list(output_names)}; choose one with output=<name or index>")
    labels = [str(o) for o in output_names]
    if isinstance(output, (numbers.Integral, np.integer)) and not isinstance(output, (bool, np.bool_)):
        if str(output) in labels and int(output) >= k:  # an integer class label beyond the index range
            return labels.index(str(output))
        if not 0 <= int(output) < k:
            raise InputIndexError(f"output {output} out of range for {k} outputs {labels}")
        return int(output)
    if str(output) in labels:
        return labels.index(str(output))
    raise InputError(f"unknown output {output!r}; outputs are {labels}")


def check_n_jobs(n_jobs) -> int:
    """Worker count for ``n_jobs`` under the scikit-learn convention (see the module docstring)."""
    if n_jobs is not None and (isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral)):
        raise InputTypeError(f"n_jobs must be an integer or None; got {n_jobs!r}")
    if n_jobs == 0:
        raise InputError("n_jobs == 0 has no meaning; use None, a positive count, or -1 for all cores")
    if n_jobs is not None and n_jobs > 0:
        return int(n_jobs)
    from joblib import effective_n_jobs

    return max(1, int(effective_n_jobs(None if n_jobs is None else int(n_jobs))))


def check_random_state(random_state) -> np.random.Generator:
    """A numpy Generator from None (fresh entropy), an int seed, a SeedSequence, a RandomState
    or an existing Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1))
    if isinstance(random_state, (bool, np.bool_)) or not (
            random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence))):
        raise InputTypeError(f"random_state must be None, an int, a SeedSequence or a numpy Generator; "
                             f"got {random_state!r}")
    return np.random.default_rng(random_state)


def check_is_fitted(model) -> None:
    """Raise :class:`~xai_plugins.errors.NotFittedError` (an ``XaiError`` that is also scikit-learn's
    ``NotFittedError``) when a scikit-learn style model (scikit-learn, the XGBoost and LightGBM
    scikit-learn wrappers) has not been fitted."""
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    from sklearn.utils.validation import check_is_fitted as _sk_check

    from .errors import NotFittedError

    try:
        _sk_check(model)
    except SklearnNotFittedError as exc:
        raise NotFittedError(f"{type(model).__name__} is not fitted yet; call fit() first") from exc
    except TypeError:
        pass  # not a scikit-learn estimator: the importer decides


__all__ = ["is_dask", "model_rows", "model_feature_names", "feature_order", "feature_index", "resolve_output",
           "check_matrix", "frame_values", "check_n_jobs", "check_random_state", "check_is_fitted",
           "default_feature_names"]
