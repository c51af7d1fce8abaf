"""Category columns read as a model's codes (:func:`category_codes`), and the checks of coded rows:
values the model was never trained on, unknown codes, refused missing values. Inputs are validated
once, here and in :mod:`xai_plugins._validation`."""

from __future__ import annotations

import numbers

import numpy as np

from ._validation import _is_series, is_dask
from .errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference


def category_codes(X, names, labels: list, numeric_labels: bool = False, what: str = "X", *, missing: bool = True):
    """``X`` with the column of each feature that has training ``labels`` (per feature, or None) replaced by
    its codes where it holds labels: the position of each value in those labels, NaN for a missing value,
    -1 (an unseen category) for a label the model never saw.

    A DataFrame's pandas ``category`` and text columns hold labels (aligned by name when ``names`` is given,
    else by position). When ``numeric_labels`` (the model's own predict looks values up in its categories:
    scikit-learn's encoders, HistGradientBoosting) every column of a DataFrame holds labels (numbers where the
    categories are text are refused, as that predict refuses them), and so does an array's column when the
    feature's labels are numbers; an array's other numbers are the codes themselves. Without
    ``numeric_labels`` (LightGBM, XGBoost fitted on a pandas ``category`` column) a DataFrame column of numbers,
    or of text where the categories are numbers, is refused (:class:`InputError`): the model's own predict
    refuses it, and reading its labels as codes would give other categories (``read_csv`` gives integer
    labels back as int64); an array holds the codes. A feature's labels may instead be an object with
    ``codes(values)`` (CatBoost's hashed categories): its integer and text columns, and its column of a numpy
    object array, hold labels; a float column holds codes. A label outside labels with a ``refusal`` (whose
    model refuses it: :class:`~xai_plugins.forest.layout.Categories`), or a missing value where they refuse one
    and ``missing``, raises :class:`InputError` naming the column and the label."""
    import pandas as pd

    looked_up = [numeric_labels and known is not None and _all_numbers(known) for known in labels]
    hashed = [hasattr(known, "codes") for known in labels]
    if _is_series(X):
        X = X.to_frame().T
    if isinstance(X, pd.DataFrame):
        out = None
        columns = list(names) if names is not None else list(X.columns)
        for name, known, by_hash in zip(columns, labels, hashed):
            if known is None or name not in X.columns:
                continue
            column = X[name]
            if by_hash and pd.api.types.is_float_dtype(column.dtype):
                continue                                # CatBoost's codes
            if not (by_hash or isinstance(column.dtype, pd.CategoricalDtype)):
                _refuse_mismatched(column, known, numeric_labels, f"{what} column {str(name)!r}")
            out = X.copy() if out is None else out
            out[name] = _refuse_unknown(column, _column_codes(column, known), known, f"{what} column {str(name)!r}",
                                        missing)
        return X if out is None else out
    if not any(looked_up) and not (any(hashed) and isinstance(X, np.ndarray) and X.dtype.kind == "O") or is_dask(X):
        return X
    arr = np.asarray(X)
    if arr.ndim not in (1, 2) or arr.shape[-1] != len(labels) or arr.dtype.kind not in "biufO":
        return X                                    # check_matrix says what is wrong with it
    out = arr.reshape(-1, arr.shape[-1]).astype(np.float64 if arr.dtype.kind in "biuf" else object)
    for j in np.flatnonzero(np.array(looked_up) | np.array(hashed) & (arr.dtype == object)):
        out[:, j] = _refuse_unknown(out[:, j], _label_codes(out[:, j], labels[j]), labels[j], f"{what} column {j}",
                                    missing)
    return out


def _all_numbers(values) -> bool:
    """True when every one of ``values`` is a real number (not a bool)."""
    return all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values)


def _shown(known) -> str:
    """The first categories of ``known``, for a message."""
    return f"{list(known)[:10]}{' ...' if len(known) > 10 else ''}"


def _refuse_mismatched(column, known, numeric_labels: bool, where: str) -> None:
    """:class:`InputError` when a DataFrame column (not a pandas ``category``) holds values that the model's own
    predict refuses for the categories ``known``: numbers or bools where they are text and the model looks its
    values up (``numeric_labels``: scikit-learn's encoders and HistGradientBoosting refuse them), and, for a
    model fitted on a pandas ``category`` column (LightGBM, XGBoost), anything but text labels of text
    categories (see :func:`category_codes`)."""
    from pandas.api import types

    if numeric_labels:
        if types.is_numeric_dtype(column.dtype) and all(isinstance(v, str) for v in known):
            raise InputError(f"{where} holds {column.dtype} values, but its categories are text ({_shown(known)}): "
                             "the model's own predict refuses numbers there; pass the labels")
        return
    if types.infer_dtype(column, skipna=True) in ("string", "empty") and not _all_numbers(known):
        return
    raise InputError(f"{where} holds {column.dtype} values, but the model was fitted on a pandas category column "
                     f"there (categories {_shown(known)}): its own predict refuses this column, and its values "
                     "are labels, not the category codes. Convert the column to the category dtype with the "
                     f"training categories: X[{str(column.name)!r}] = pd.Categorical(X[{str(column.name)!r}], "
                     "categories=<the training categories>)")


def _refuse_unknown(values, codes: np.ndarray, known, where: str, missing: bool = True) -> np.ndarray:
    """``codes`` (of ``values``, a column or an array of labels or codes), or :class:`InputError` naming the
    first value whose code is none of the categories ``known`` where they carry a ``refusal`` (a missing value
    too where ``missing`` and they refuse one)."""
    refusal = getattr(known, "refusal", None)
    if refusal is None:
        return codes
    unseen = ~((codes >= 0) & (codes < len(known)) | np.isnan(codes))
    bad = unseen & known.refuses_unseen | np.isnan(codes) & missing & known.refuses_missing
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = values.iloc[i] if hasattr(values, "iloc") else values[i]
        value = value.item() if isinstance(value, np.generic) else value
        raise InputError(f"{where} holds {value!r} (row {i}), not one of the model's training categories "
                         f"{_shown(known)}: {refusal}")
    return codes


def check_taken(rows: np.ndarray, limits: np.ndarray | None, nan_refused: np.ndarray | None, names: list[str],
                what: str = "X") -> None:
    """:class:`InputError` when ``rows`` hold a value the model's own predict refuses: NaN in a feature of
    ``nan_refused`` (a Forest's ``nan_refused``), or a value beyond its feature's ``limits`` (n_features, 2), the
    smallest and largest input the model takes (a Forest's ``input_limits``); None: no such refusal."""
    if nan_refused is not None:
        nan = np.isnan(rows) & nan_refused
        if nan.any():
            i, j = (int(k) for k in np.argwhere(nan)[0])
            raise InputError(f"{what} has NaN in column {names[j]!r} (row {i}), where the model's own predict refuses "
                             "a missing value; impute it first (as the model was trained)")
    if limits is None:
        return
    bad = (rows < limits[:, 0]) | (rows > limits[:, 1])
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise InputError(f"{what} has {float(rows[i, j])!r} in column {names[j]!r} (row {i}), beyond the inputs the "
                         f"model takes there ({float(limits[j, 0])!r} .. {float(limits[j, 1])!r}): its own predict "
                         "refuses it (its float32 cast makes it infinite); rescale the column as the model was trained")


def check_refused(rows: np.ndarray, labels: list, what: str = "X", missing: bool = True) -> None:
    """:class:`InputError` when ``rows`` (category codes in the model's feature order, of a model whose own
    predict reads labels: ``numeric_labels``) hold, in a feature whose ``labels`` carry a ``refusal``, a code
    that is none of its categories (NaN too, where ``missing`` and they refuse a missing value): the model's
    own predict would refuse the label (see :func:`category_codes`)."""
    for j, known in enumerate(labels):
        if getattr(known, "refusal", None) is not None:
            _refuse_unknown(rows[:, j], rows[:, j], known, f"{what} column {j} (category codes)", missing)


def _column_codes(column, known) -> np.ndarray:
    """:func:`_label_codes` of a DataFrame column. A pandas ``category`` or string column is looked up once
    per distinct label: its values are its categories (its distinct strings) at its codes, -1 (missing)
    reading as NaN."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        at, distinct = column.cat.codes.to_numpy(), column.cat.categories
    elif isinstance(column.dtype, pd.StringDtype):
        at, distinct = pd.factorize(column)
    else:
        return _label_codes(column.to_numpy(dtype=object), known)
    per_label = _label_codes(np.asarray(distinct, dtype=object), known)
    codes = np.full(len(at), np.nan)
    codes[at >= 0] = per_label[at[at >= 0]]
    return codes


def _label_codes(values: np.ndarray, known) -> np.ndarray:
    """The codes of ``values`` (an object or float array) among the labels ``known``: positions, NaN for a
    missing value, -1 for an unseen one (``known.codes`` reads them where it has one)."""
    import pandas as pd

    codes = known.codes(values) if hasattr(known, "codes") else pd.Index(known).get_indexer(values).astype(np.float64)
    codes[pd.isna(values)] = np.nan
    return codes


def check_codes(rows: np.ndarray, n_categories: np.ndarray, what: str = "X") -> None:
    """InputError when a categorical feature (``n_categories`` > 0) holds a number that is not an
    integer category code (NaN and integers outside the model's codes are fine: missing and unseen)."""
    cols = np.flatnonzero(n_categories)
    values = rows[:, cols]
    bad = np.isfinite(values) & (values != np.floor(values)) | np.isinf(values)
    if bad.any():
        i, c = np.argwhere(bad)[0]
        raise InputError(f"{what} has {values[i, c]!r} in categorical feature {cols[c]} (row {i}): a categorical "
                         "feature takes integer category codes (the model's codes 0 .. K-1; other integers are "
                         "unseen categories, NaN is missing); pass the codes the model was trained on, or a "
                         "DataFrame with the pandas category column")
