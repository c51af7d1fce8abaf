"""The package's exceptions and warnings: one base class, each subclass also a matching builtin.

Catch :class:`XaiError` for anything this package raises on purpose; each subclass also
inherits the builtin a caller would expect (``except ValueError`` keeps working)::

    XaiError
    ├── InputError(XaiError, ValueError)          bad data or argument value (NaN, sizes, sigma <= 0, ...)
    │   ├── FeatureMismatchError                  columns that cannot be aligned to the model's features
    │   ├── ExplanationMismatchError              attributions that are not additive for this model's output
    │   ├── ModelStructureError                   trees that are not well-formed (from the C validator)
    │   └── SchemaVersionError                    audit JSONs of different (or no) schema versions compared
    ├── InputTypeError(XaiError, TypeError)       an argument of the wrong type (complex X, n_jobs="x", ...)
    ├── UnsupportedModelError(XaiError, TypeError)  model type, objective or split kind not supported
    ├── InputIndexError(XaiError, IndexError)     a feature / output / row index out of range
    ├── NotFittedError(XaiError, sklearn.exceptions.NotFittedError)  a model that has not been fitted
    ├── ModelGoneError(XaiError, ReferenceError)  the model a Forest was imported from was garbage-collected
    ├── OutputPathError(XaiError, OSError)        a report / output file that cannot be written
    ├── NotAdditiveError(XaiError, TypeError)     an additive plot (shap waterfall) of scores that do not add up
    ├── MissingExtraError(XaiError, ImportError)  a feature whose optional dependencies (an extra) are not installed
    └── NativeMemoryError(XaiError, MemoryError)  the C core ran out of memory

    XaiWarning(UserWarning)                       results that are valid but probably not what was meant
    └── NoiseScaleWarning                         noise so wide that PG² no longer depends on it

:class:`NotFittedError` also is scikit-learn's (itself a ``ValueError`` and ``AttributeError``), so
``except sklearn.exceptions.NotFittedError`` keeps working; it is built on first use, so that
importing this module does not import scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["XaiError", "InputError", "FeatureMismatchError", "ExplanationMismatchError", "ModelStructureError",
           "InputTypeError", "UnsupportedModelError", "InputIndexError", "NotFittedError", "ModelGoneError",
           "NativeMemoryError", "OutputPathError", "NotAdditiveError", "MissingExtraError", "ParityError",
           "SchemaVersionError",
           "XaiWarning", "NoiseScaleWarning"]


class XaiError(Exception):
    """Base class of every exception xai_plugins raises on purpose.

    Catch it for anything this package raises on purpose; each subclass also inherits the builtin
    a caller would expect (``except ValueError`` keeps working for an
    :class:`xai_plugins.errors.InputError`).

    See Also
    --------
    xai_plugins.errors.InputError : Bad data or argument values.
    xai_plugins.errors.UnsupportedModelError : Models the package cannot import.

    Examples
    --------
    >>> import xai_plugins as xp
    >>> try:
    ...     xp.import_model(object())
    ... except xp.XaiError as exc:
    ...     print(type(exc).__name__)
    UnsupportedModelError
    """


class InputError(XaiError, ValueError):
    """A value the computation cannot use: NaN/inf, wrong sizes, empty data, sigma <= 0, ...

    Also a ``ValueError``.

    See Also
    --------
    xai_plugins.errors.FeatureMismatchError : Columns that cannot be aligned (a subclass).
    xai_plugins.errors.InputTypeError : Arguments of the wrong type.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> try:
    ...     xp.pg2(model, X[:5], S=[2], sigma=0.0)
    ... except ValueError as exc:
    ...     print(type(exc).__name__, "-", str(exc).split(";")[0])
    InputError - sigma must be finite and > 0
    """


class FeatureMismatchError(InputError):
    """The data's columns cannot be aligned by name to the model's features.

    A DataFrame passed as ``X``, ``background``, ``X_train``... is reordered to the model's
    feature names; a missing or extra name raises this error, naming both lists. Also an
    :class:`InputError` and a ``ValueError``.

    See Also
    --------
    xai_plugins.errors.InputError : Its base class.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> xp.pg2(model, X.rename(columns={"bmi": "BMI"}), S=["age"])
    Traceback (most recent call last):
    ...
    xai_plugins.errors.FeatureMismatchError: X columns do not match the model's features: missing ['bmi'], ...
    """


class ExplanationMismatchError(InputError):
    """Additive attributions that do not add up to this model's output.

    Attributions with ``base_values`` that do not add up to this model's output: the explanation
    belongs to another model or another output.

    Raised by :func:`xai_plugins.faithfulness`. Also an :class:`InputError` and a ``ValueError``.

    See Also
    --------
    xai_plugins.faithfulness : Checks the additivity of the explanations it scores.

    Examples
    --------
    >>> import types
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> wrong = types.SimpleNamespace(values=np.zeros((3, 10)), data=X[:3], base_values=np.zeros(3))
    >>> xp.faithfulness(model, wrong)
    Traceback (most recent call last):
    ...
    xai_plugins.errors.ExplanationMismatchError: the explanation does not add up to this model's output: ...
    """


class ModelStructureError(InputError):
    """The imported trees are not well-formed binary trees (found by the C validator).

    The message says where (tree, node). Also an :class:`InputError` and a ``ValueError``.

    See Also
    --------
    xai_plugins.Forest : Validated when built.

    Examples
    --------
    >>> import xai_plugins as xp
    >>> xp.Forest(left_child=[1, -1, -1], right_child=[1, -1, -1], feature=[0, 0, 0],
    ...           threshold=[0.5, 0, 0], missing_left=[1, 0, 0], value=[0.0, 1.0, 2.0],
    ...           tree_offset=[0, 3], tree_target=[0], base_score=[0.0], n_features=1,
    ...           split_rule="le", input_float32=False, aggregate="sum", task="regression",
    ...           output_space="raw", model_type="manual")       # node 1 is both children of node 0
    Traceback (most recent call last):
    ...
    xai_plugins.errors.ModelStructureError: invalid tree structure: ... (at tree 0, node 1)
    """


class ParityError(XaiError, ValueError):
    """The imported trees do not reproduce the scores of the model's own runtime (the parity certificate failed).

    Raised by :func:`xai_plugins.report.audit` before anything is explained, with the certificate in the message;
    ``AuditOptions(unverified=True)`` (``xai-audit --unverified``) explains the model anyway, labelling every
    number unverified. Also a ``ValueError``.

    See Also
    --------
    xai_plugins.report.audit : Certifies the model before explaining it.

    Examples
    --------
    >>> from xai_plugins.errors import ParityError, XaiError
    >>> issubclass(ParityError, XaiError) and issubclass(ParityError, ValueError)
    True
    """


class SchemaVersionError(InputError):
    """Audit JSONs that cannot be compared: of different schema versions, or one without a version.

    Raised by :func:`xai_plugins.report.diff_audits` (``Audit.diff``, ``xai-audit diff``) and
    :func:`xai_plugins.report.audit_history` (``xai-audit history``), naming each audit's version; an audit
    written before versions were recorded has none and must be computed again. Also an :class:`InputError`
    and a ``ValueError``.

    See Also
    --------
    xai_plugins.report.diff_audits : Compares two audits of one schema version.

    Examples
    --------
    >>> from xai_plugins.report import diff_audits
    >>> try:
    ...     diff_audits({"schema_version": "1.0"}, {"title": "an older audit"})
    ... except ValueError as exc:
    ...     print(type(exc).__name__)
    SchemaVersionError
    """


class InputTypeError(XaiError, TypeError):
    """An argument of the wrong type (complex or non-numeric data, a non-integer n_jobs, ...).

    Text columns must be encoded as the model was trained. Also a ``TypeError``.

    See Also
    --------
    xai_plugins.errors.InputError : Values of the right type that cannot be used.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> try:
    ...     xp.local_mdi(model, X[:5], n_jobs="x")
    ... except TypeError as exc:
    ...     print(type(exc).__name__, "-", exc)
    InputTypeError - n_jobs must be an integer or None; got 'x'
    """


class UnsupportedModelError(XaiError, TypeError):
    """The model type, objective or split kind cannot be represented as a numeric tree ensemble.

    Raised for unsupported model types, objectives, linear trees, vector leaves, a GradientBoosting
    ``init`` estimator that is not constant, and for methods a model lacks what they need (local
    MDI of a model without stored impurities). Also a ``TypeError``.

    See Also
    --------
    xai_plugins.import_model : Lists the supported models in its message.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> import xai_plugins as xp
    >>> try:
    ...     xp.import_model(LinearRegression())
    ... except xp.UnsupportedModelError as exc:
    ...     print(isinstance(exc, TypeError), "LinearRegression" in str(exc))
    True True
    """


class InputIndexError(XaiError, IndexError):
    """A feature, output or row index out of range.

    Also an ``IndexError``.

    See Also
    --------
    xai_plugins.errors.InputError : Other unusable values.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> try:
    ...     xp.pg2(model, X[:5], S=[99])
    ... except IndexError as exc:
    ...     print(type(exc).__name__, "-", exc)
    InputIndexError - feature index 99 out of range for 10 features
    """


class ModelGoneError(XaiError, ReferenceError):
    """The fitted model a :class:`xai_plugins.Forest` came from no longer exists.

    A Forest holds its model weakly; Monte Carlo estimates call the model's own predictor, so they
    need the model alive: keep a reference to it. Also a ``ReferenceError``.

    See Also
    --------
    xai_plugins.import_model : Imports a model into a Forest.

    Examples
    --------
    >>> import gc
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = xp.import_model(DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y))
    >>> _ = gc.collect()
    >>> xp.pg2(forest, X[:2], S=[2], method="monte_carlo", n_samples=100, random_state=0)
    Traceback (most recent call last):
    ...
    xai_plugins.errors.ModelGoneError: the model this Forest was imported from no longer exists; ...
    """


class NativeMemoryError(XaiError, MemoryError):
    """The C core could not allocate its work space.

    Also a ``MemoryError``: explain fewer rows per call.

    See Also
    --------
    xai_plugins.errors.XaiError : Its base class.

    Examples
    --------
    >>> from xai_plugins.errors import NativeMemoryError
    >>> try:
    ...     raise NativeMemoryError("the C core could not allocate its work space")
    ... except MemoryError as exc:
    ...     print(type(exc).__name__)
    NativeMemoryError
    """


class OutputPathError(XaiError, OSError):
    """An output file (report, JSON, PDF) or its folder cannot be written; raised before computing.

    Also an ``OSError``.

    See Also
    --------
    xai_plugins.report.Audit : Its ``to_html``, ``to_pdf`` and ``to_json`` check their path first.

    Examples
    --------
    >>> from xai_plugins.errors import OutputPathError
    >>> try:
    ...     raise OutputPathError("cannot write 'reports/': it is a folder; choose another output path")
    ... except OSError as exc:
    ...     print(type(exc).__name__, isinstance(exc, OSError))
    OutputPathError True
    """


class NotAdditiveError(XaiError, TypeError):
    """An additive view was asked of scores that are importances, not additive contributions.

    Scores that are importances, not additive contributions, were asked for an additive view
    (``shap.plots.waterfall`` / ``force``: a base value plus contributions adding up to the output).

    Raised by the :class:`xai_plugins.shap.NotAdditive` marker that our explanations carry as
    ``base_values``. Also a ``TypeError``.

    See Also
    --------
    xai_plugins.shap.NotAdditive : The marker that raises it.

    Examples
    --------
    >>> from xai_plugins.shap import NotAdditive
    >>> float(NotAdditive("PG² gain"))
    Traceback (most recent call last):
    ...
    xai_plugins.errors.NotAdditiveError: these values (PG² gain) are importances that do not add up ...
    """


class MissingExtraError(XaiError, ImportError):
    """A feature needs an optional dependency that is not installed.

    The message names the extra that installs it (``pip install 'xai_plugins[EXTRA]'``, see
    ``xai_plugins._extras``).

    Also an ``ImportError``, so ``except ImportError`` keeps working.

    See Also
    --------
    xai_plugins.errors.XaiError : Its base class.

    Examples
    --------
    >>> from xai_plugins.errors import MissingExtraError
    >>> try:
    ...     raise MissingExtraError("The audit report needs the 'report' extra: pip install 'xai_plugins[report]'")
    ... except ImportError as exc:
    ...     print(type(exc).__name__, "-", exc)
    MissingExtraError - The audit report needs the 'report' extra: pip install 'xai_plugins[report]'
    """


class XaiWarning(UserWarning):
    """A result that is valid but probably not the quantity the caller meant.

    A ``UserWarning``.

    See Also
    --------
    xai_plugins.errors.NoiseScaleWarning : Noise too wide to matter (a subclass).

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> from xai_plugins.errors import XaiWarning
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     mdi = xp.global_mdi(model, X)          # a bootstrap forest: not its MDI
    >>> [type(w.message).__name__ for w in caught]
    ['XaiWarning']
    """


class NoiseScaleWarning(XaiWarning):
    """The noise is so wide that PG² no longer depends on σ.

    The perturbed value then falls outside every split threshold of a perturbed feature almost
    surely.

    Warned (by ``xai_plugins.perturbation.check_noise_scale``) when a Gaussian σ is at least 100
    times the range of a perturbed feature's split thresholds and the rows' values; features with
    fewer than two distinct thresholds are not judged. An :class:`XaiWarning`.

    See Also
    --------
    xai_plugins.pg2 : Warns it, as do pgi2, the greedy ranking and faithfulness.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = xp.pg2(model, X[:2], S=[2], sigma=1e4)
    >>> [type(w.message).__name__ for w in caught]
    ['NoiseScaleWarning']
    """


def _not_fitted_error() -> type:
    """The class :class:`NotFittedError`: an :class:`XaiError` that is also scikit-learn's NotFittedError."""
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(XaiError, SklearnNotFittedError):
        """The model has not been fitted: call its ``fit`` first.

        Also scikit-learn's ``NotFittedError`` (and so a ``ValueError`` and an ``AttributeError``),
        so ``except sklearn.exceptions.NotFittedError`` keeps working.

        See Also
        --------
        xai_plugins.import_model : Raises it for an unfitted estimator.

        Examples
        --------
        >>> from sklearn.ensemble import RandomForestRegressor
        >>> from sklearn.exceptions import NotFittedError as SklearnNotFittedError
        >>> import xai_plugins as xp
        >>> try:
        ...     xp.import_model(RandomForestRegressor())
        ... except SklearnNotFittedError as exc:
        ...     print(type(exc).__module__, type(exc).__name__, "-", exc)
        xai_plugins.errors NotFittedError - RandomForestRegressor is not fitted yet; call fit() first
        """

    NotFittedError.__module__, NotFittedError.__qualname__ = __name__, "NotFittedError"    # picklable by name
    return NotFittedError


if TYPE_CHECKING:
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    class NotFittedError(XaiError, _SklearnNotFittedError):
        """The model has not been fitted (see :func:`_not_fitted_error`)."""


def __getattr__(name: str):
    """Build :class:`NotFittedError` (which imports scikit-learn) on first use."""
    if name == "NotFittedError":
        cls = _not_fitted_error()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
