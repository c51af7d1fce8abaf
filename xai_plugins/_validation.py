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
- **Missing values** are NaN. A model that reads another value as missing (XGBoost's
  ``missing=-999`` sentinel, :func:`xai_plugins.forest.model_missing_value`) has that value turned into NaN where
  rows enter (:func:`model_rows`), so every method sees NaN = missing, as the model does.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import numbers
import sys

import numpy as np

from .errors import FeatureMismatchError, InputError, InputIndexError, InputTypeError


def default_feature_names(n_features: int) -> list[str]:
    """x0, x1, ... for data without column names."""
    return list(_default_names(n_features))


@functools.lru_cache(maxsize=16)
def _default_names(n_features: int) -> tuple[str, ...]:
    return tuple(f"x{j}" for j in range(n_features))


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
               min_rows: int = 1, missing: float = float("nan")) -> tuple[np.ndarray, list[str]]:
    """``X`` as (n, n_features) float64 rows in the model's feature order, and the feature names.

    A DataFrame (or a Series, read as one row) is aligned by column name to ``names`` (the
    model's feature names, see :func:`xai_plugins.forest.model_feature_names`); when the model knows no names its
    columns are taken in order and name the features. Arrays are read positionally.
    ``n_features`` None accepts any column count. Entries equal to the model's ``missing`` value
    (:func:`xai_plugins.forest.model_missing_value`) become NaN (see :func:`check_matrix`).
    """
    if _is_series(X):
        X = X.to_frame().T
    columns = getattr(X, "columns", None)
    given = None if columns is None else [str(c) for c in columns]
    if given is not None and names is not None:
        order = feature_order(given, list(names), what)
        if order is not None:
            X = X.iloc[:, order]
    rows = check_matrix(X, n_features=n_features, allow_nan=allow_nan, name=what, min_rows=min_rows,
                        missing=missing)
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
                 name: str = "X", min_rows: int = 1, missing: float = float("nan")) -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-D float64 array or raise an :class:`InputError` /
    :class:`InputTypeError` that says why.

    - a 1-D input is read as one row;
    - ``n_features`` (when given) must match the number of columns;
    - entries equal to ``missing`` (a model's missing-value sentinel; compared in float32, as
      XGBoost compares it) become NaN, in a copy;
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
    sentinel = _sentinel_mask(arr, missing)
    if sentinel is not None:
        arr = np.where(sentinel, np.nan, arr)
    if np.isfinite(arr.sum()):          # one pass: no infinity and no NaN (a huge finite sum is checked below)
        return np.ascontiguousarray(arr)
    if np.isinf(arr).any():
        rows, cols = np.nonzero(np.isinf(arr))
        raise InputError(f"{name} contains infinite values (first at row {rows[0]}, column {cols[0]})")
    if not allow_nan and np.isnan(arr).any():
        rows, cols = np.nonzero(np.isnan(arr))
        found = "NaN"
        if sentinel is not None and sentinel[rows[0], cols[0]]:
            found = f"the model's missing value {missing!r} (its missing= sentinel, read as NaN)"
        raise InputError(f"{name} contains {found} (first at row {rows[0]}, column {cols[0]}); "
                         "impute missing values first")
    return np.ascontiguousarray(arr)


def _sentinel_mask(arr: np.ndarray, missing: float) -> np.ndarray | None:
    """Boolean mask of the entries of ``arr`` equal to ``missing`` in float32 (XGBoost compares
    float32(x) with float32(missing)), or None when ``missing`` is NaN or no entry equals it."""
    if np.isnan(missing):
        return None
    with np.errstate(over="ignore"):
        mask = arr.astype(np.float32) == np.float32(missing)
    return mask if mask.any() else None


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
    if all(isinstance(t, np.dtype) and t.kind in "fb" for t in frame.dtypes):
        return np.asarray(frame, dtype=np.float64)          # plain numpy floats: one block, no per-column work
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
        values = np.full(len(codes), np.nan)        # code -1: missing (also when there is no category at all)
        present = codes >= 0
        values[present] = categories[codes[present]]
        return values
    if types.is_complex_dtype(dtype):
        raise InputTypeError(f"{what} holds complex numbers; pass real-valued data")
    numeric = types.is_numeric_dtype(dtype) or types.is_bool_dtype(dtype)
    objects = types.is_object_dtype(dtype)
    if objects:
        numeric = types.infer_dtype(column, skipna=True) in _NUMERIC_OBJECTS
    if not numeric or types.is_timedelta64_dtype(dtype):
        return None
    try:
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        return None
    beyond = np.abs(values) >= 2.0 ** 53
    if (types.is_integer_dtype(dtype) or objects) and beyond.any():
        big = column[beyond]
        if any(int(v) != int(f) for v, f in zip(big, values[beyond])):
            raise InputError(f"{what} holds integers beyond 2**53 that float64 cannot represent exactly "
                             f"(e.g. {big.iloc[0]}); rescale the column as the model was trained")
    return values


def check_target(y, classes, *, n_rows: int | None = None, what: str = "y") -> np.ndarray:
    """``y`` as a 1-D array checked against the model's task; the one label check of the API and the CLI.

    ``classes``: the model's class labels (a classifier) or None (a regressor). A regressor's target
    must be numeric (any pandas dtype :func:`frame_values` reads) and is returned as float64; a
    classifier's labels must each be one of ``classes``, equal to it or written as it (the text
    ``"1"`` is class ``1``: a CSV column can read either way), and are returned as the model's own
    class values. A missing target (NaN, None, ``pd.NA``) cannot be scored: it raises
    :class:`InputError` with the first row, as do labels the model does not know
    (``'n'``/``'y'`` for a 0/1 model) and a length other than ``n_rows``.
    """
    import pandas as pd

    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InputError(f"{what} must be one column of targets; got {y.shape[1]} columns")
        y = y.iloc[:, 0]
    if not isinstance(y, pd.Series):
        array = np.asarray(y)
        if array.ndim > 1 and sum(k > 1 for k in array.shape) > 1:
            raise InputError(f"{what} must be 1-D (one target per row); got shape {array.shape}")
        y = pd.Series(array.ravel())
    if n_rows is not None and len(y) != n_rows:
        raise InputError(f"{what} has {len(y)} values but the data has {n_rows} rows")
    missing = np.flatnonzero(pd.isna(y).to_numpy(dtype=bool))
    if missing.size:
        raise InputError(f"{what} has {missing.size} missing target(s) (NaN/None, first at row {missing[0]}); a "
                         "missing target cannot be scored: drop those rows (from the data too) or fill them")
    if classes is None:
        values = _column_values(y, what)
        if values is None:
            raise InputTypeError(f"the model is a regressor but {what} is not numeric (e.g. {y.iloc[0]!r}); "
                                 "pass the numeric target it predicts")
        if np.isinf(values).any():
            raise InputError(f"{what} contains infinite values (first at row {np.flatnonzero(np.isinf(values))[0]})")
        return values
    classes = list(classes)
    index = {}
    for label in pd.unique(y):
        same = [k for k, c in enumerate(classes) if _same_label(c, label)]
        index[label] = same[0] if same else -1
    unknown = sorted(str(label) for label, k in index.items() if k < 0)
    if unknown:
        raise InputError(f"the model is a classifier of classes {[str(c) for c in classes]} but {what} holds labels "
                         f"{unknown[:5]}{' ...' if len(unknown) > 5 else ''} it was not trained on: pass the "
                         "labels encoded as when the model was fitted (and check that this is the target column)")
    kept = np.asarray(classes)
    return kept[y.map(index).to_numpy(dtype=np.intp)]


def _same_label(cls, label) -> bool:
    """A target value names a class when it equals it (1.0 is 1) or is written as it ("1" is 1)."""
    try:
        if bool(cls == label):
            return True
    except (TypeError, ValueError):
        pass
    if str(cls) == str(label):
        return True
    number = _as_number(cls)
    return isinstance(cls, str) != isinstance(label, str) and number is not None and number == _as_number(label)


def _as_number(value) -> float | None:
    """``value`` as a float (numbers and numeric text), or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def feature_index(feature, names: list[str] | None, n_features: int) -> int:
    """Index in the model's feature order of a feature given by position or by name."""
    if type(feature) is int and 0 <= feature < n_features:     # the common case first
        return feature
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
    if output_names is None or len(output_names) == 1:
        if output not in (None, 0) and not (output_names and str(output) == str(output_names[0])):
            raise InputError(f"the model has a single output; got output={output!r}")
        return None
    k = len(output_names)
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


def check_n_jobs(n_jobs, n_tasks: int | None = None) -> int:
    """Worker count for ``n_jobs`` under the scikit-learn convention (see the module docstring),
    at most ``n_tasks`` (when given: with a single task, ``n_jobs`` is only checked, no core count
    or joblib configuration is looked up)."""
    if n_jobs is not None and (isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral)):
        raise InputTypeError(f"n_jobs must be an integer or None; got {n_jobs!r}")
    if n_jobs == 0:
        raise InputError("n_jobs == 0 has no meaning; use None, a positive count, or -1 for all cores")
    if n_tasks is not None and n_tasks <= 1:
        return 1
    if n_jobs is not None and int(n_jobs) > 0:
        return int(n_jobs) if n_tasks is None else min(int(n_jobs), n_tasks)
    from joblib import effective_n_jobs

    workers = max(1, int(effective_n_jobs(None if n_jobs is None else int(n_jobs))))
    return workers if n_tasks is None else min(workers, n_tasks)


#: the worker count that :func:`core_workers` gives ``n_jobs=None`` inside a :func:`core_threads` block
_CORE_THREADS: contextvars.ContextVar = contextvars.ContextVar("xai_plugins_core_threads", default=None)


@contextlib.contextmanager
def core_threads(n_jobs):
    """Inside this block, ``n_jobs=None`` means ``n_jobs`` for the package's own loops whose results do not
    depend on the thread count (:func:`core_workers`); the model's own predictor and joblib keep their defaults.
    The audit runs in ``core_threads(-1)`` unless given ``n_jobs``."""
    check_n_jobs(n_jobs)
    token = _CORE_THREADS.set(n_jobs)
    try:
        yield
    finally:
        _CORE_THREADS.reset(token)


def core_workers(n_jobs, n_tasks: int | None = None) -> int:
    """Worker count of a loop whose result is the same bits for any count (the C core's row chunks, RF-MCR's
    ordered tree map): ``n_jobs`` when given, else the enclosing :func:`core_threads` setting, else
    :func:`check_n_jobs`'s default."""
    return check_n_jobs(_CORE_THREADS.get() if n_jobs is None else n_jobs, n_tasks)


#: the most samples per row that Monte Carlo / QMC draws (``n_samples``): a row's perturbed copies are held in
#: memory together (n_samples × n_features float64 values), and ``method="auto"`` never asks for more
MAX_SAMPLES = 10**7


def check_n_samples(n_samples) -> int:
    """``n_samples`` as an int in [2, :data:`MAX_SAMPLES`]; :class:`InputError` (a ``ValueError``) otherwise.

    Parameters
    ----------
    n_samples : int
        Samples per row of a Monte Carlo / QMC estimate.

    Returns
    -------
    int
        ``n_samples``.
    """
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral) or int(n_samples) < 2:
        raise InputError(f"n_samples must be an integer >= 2; got {n_samples!r}")
    if int(n_samples) > MAX_SAMPLES:
        raise InputError(f"n_samples must be at most {MAX_SAMPLES:,} (each row's samples are held in memory "
                         f"together); got {int(n_samples):,}. For a more accurate value use method=\"exact\"")
    return int(n_samples)


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
    seed = int(random_state) if isinstance(random_state, numbers.Integral) else random_state
    return np.random.default_rng(seed)


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


__all__: list[str] = []      # internal module: the public names are in the API reference
