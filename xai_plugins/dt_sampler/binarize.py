"""Binary tests for DT-Sampler: 0/1 columns as they are, other numeric columns cut at thresholds,
categorical columns one-vs-rest (one test ``x = level`` per level; one test for two levels)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference

#: Default cut points: the quartiles of each non-binary column.
DEFAULT_QUANTILES = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class BinaryTest:
    """One binary test of DT-Sampler: a threshold, a categorical level, or a 0/1 column.

    The test is ``x[feature] > threshold``, ``x[feature] == level`` (a categorical feature's
    level, one-vs-rest: ``level`` its value in the numeric rows, its code for a text column, and
    ``label`` as shown), or ``x[feature] == 1`` for a 0/1 column.

    A row passing the test goes to the right child, a row failing it to the left child.

    Parameters
    ----------
    feature : int
        Index of the tested column.
    feature_name : str
        Its name.
    threshold : float or None
        The cut point of ``x > threshold``; None when the column is already 0/1, or categorical
        (``level``).
    level : float or None, default None
        A categorical feature's level tested one-vs-rest.
    label : str or None, default None
        That level as shown.

    Attributes
    ----------
    name : str
        Readable name, e.g. ``"age > 40.5"``, ``"city = paris"`` or ``"smoker"``.

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Fits the tests (``tests_``).

    Examples
    --------
    >>> import numpy as np
    >>> from xai_plugins.dt_sampler import BinaryTest
    >>> test = BinaryTest(feature=0, feature_name="age", threshold=40.5)
    >>> test.name, test.describe(passed=False)
    ('age > 40.5', 'age <= 40.5')
    >>> test.evaluate(np.array([[30.0], [50.0]])).tolist()
    [0, 1]
    >>> BinaryTest(1, "city", None, level=2.0, label="paris").name
    'city = paris'
    """

    feature: int
    feature_name: str
    threshold: float | None   # None: the column is already 0/1, or categorical (level)
    level: float | None = None
    label: str | None = None

    @property
    def name(self) -> str:
        """Readable name, e.g. ``"age > 40.5"``, ``"city = paris"`` or ``"smoker"``."""
        if self.level is not None:
            return f"{self.feature_name} = {self.label}"
        if self.threshold is None:
            return self.feature_name
        return f"{self.feature_name} > {self.threshold:.4g}"

    def describe(self, passed: bool) -> str:
        """The condition a row meets on the right (``passed``) or left branch."""
        if passed:
            return self.name
        if self.level is not None:
            return f"{self.feature_name} != {self.label}"
        if self.threshold is None:
            return f"not {self.feature_name}"
        return f"{self.feature_name} <= {self.threshold:.4g}"

    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """0/1 outcome of the test on each row of ``X`` (original feature columns)."""
        column = X[:, self.feature]
        if self.level is not None:
            return (column == self.level).astype(np.uint8)
        return (column == 1 if self.threshold is None else column > self.threshold).astype(np.uint8)


def _is_binary(column: np.ndarray) -> bool:
    return bool(np.all((column == 0) | (column == 1)))


def fit_tests(X: np.ndarray, feature_names: list[str], quantiles=DEFAULT_QUANTILES,
              thresholds: dict | None = None, labels: list | None = None) -> list[BinaryTest]:
    """Binary tests for the columns of ``X``.

    - a categorical column (``labels[j]`` not None: the label of each code 0 .. K-1 that column
      holds, or of each value of a numerically coded one, as a dict value -> label) gives one test
      ``x == level`` per level present (one-vs-rest; a level splitting the rows like an earlier
      one, as the second of two levels does, is dropped);
    - a column holding only 0 and 1 gives one test (``x == 1``);
    - another column gives ``x > t`` for each ``t`` in ``thresholds[name]`` when given, else for
      each ``quantiles`` value of the column; thresholds that leave every training row on one
      side or that split the rows exactly like a smaller threshold are dropped.

    Raises ``ValueError`` for a constant column (no test can split it) and for a user
    threshold that does not split the training rows.
    """
    thresholds = {} if thresholds is None else dict(thresholds)
    unknown = set(thresholds) - set(feature_names)
    if unknown:
        raise InputError(f"thresholds given for unknown features {sorted(unknown)}; "
                         f"known features: {feature_names}")
    q = np.asarray(quantiles, dtype=float).ravel()
    if q.size == 0 or np.any((q <= 0) | (q >= 1)):
        raise InputError(f"quantiles must be a non-empty list of numbers strictly between 0 and 1; got {quantiles!r}")
    constant = [name for j, name in enumerate(feature_names) if np.ptp(X[:, j]) == 0]
    if constant:
        raise InputError(f"constant features {constant} cannot be split by any test; drop them before fitting")
    tests = []
    for j, name in enumerate(feature_names):
        column = X[:, j]
        if labels is not None and labels[j] is not None:
            if name in thresholds:
                raise InputError(f"thresholds given for the categorical feature {name!r}: it is tested one level "
                                 "against the rest; drop it from thresholds")
            tests.extend(_level_tests(j, name, column, labels[j]))
            continue
        if name not in thresholds and _is_binary(column):
            tests.append(BinaryTest(j, name, None))
            continue
        if name in thresholds:
            cuts = np.asarray(thresholds[name], dtype=float).ravel()
            bad = [t for t in cuts if not (column.min() <= t < column.max())]
            if bad:
                raise InputError(f"thresholds {bad} for feature {name!r} do not split the training rows "
                                 f"(values lie in [{column.min():.4g}, {column.max():.4g}])")
        else:
            cuts = np.quantile(column, q)
            cuts = cuts[cuts < column.max()]
            if cuts.size == 0:   # a few large values only: split the maximum off
                cuts = np.array([np.max(column[column < column.max()])])
        seen = set()
        for t in np.sort(np.unique(cuts)):
            pattern = (column > t).tobytes()
            if pattern not in seen:
                seen.add(pattern)
                tests.append(BinaryTest(j, name, float(t)))
    return tests


def _level_tests(j: int, name: str, column: np.ndarray, labels: dict) -> list[BinaryTest]:
    """One-vs-rest tests of a categorical column, each split of the rows once (a test and its
    complement are the same split)."""
    tests, seen = [], set()
    for level in np.unique(column):
        hit = column == level
        if hit.all():
            continue
        pattern = hit.tobytes() if hit[0] else (~hit).tobytes()
        if pattern not in seen:
            seen.add(pattern)
            tests.append(BinaryTest(j, name, None, float(level), str(labels.get(float(level), level))))
    return tests


def apply_tests(tests: list[BinaryTest], X: np.ndarray) -> np.ndarray:
    """(n_rows, n_tests) 0/1 matrix of test outcomes."""
    return np.column_stack([t.evaluate(X) for t in tests]).astype(np.uint8)
