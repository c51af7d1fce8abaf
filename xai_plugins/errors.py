"""The package's exceptions and warnings: one base class, each subclass also a matching builtin.

Catch :class:`XaiError` for anything this package raises on purpose; each subclass also
inherits the builtin a caller would expect (``except ValueError`` keeps working)::

    XaiError
    ├── InputError(XaiError, ValueError)          bad data or argument value (NaN, sizes, sigma <= 0, ...)
    │   ├── FeatureMismatchError                  columns that cannot be aligned to the model's features
    │   ├── ExplanationMismatchError              attributions that are not additive for this model's output
    │   └── ModelStructureError                   trees that are not well-formed (from the C validator)
    ├── InputTypeError(XaiError, TypeError)       an argument of the wrong type (complex X, n_jobs="x", ...)
    ├── UnsupportedModelError(XaiError, TypeError)  model type, objective or split kind not supported
    ├── InputIndexError(XaiError, IndexError)     a feature / output / row index out of range
    ├── NotFittedError(XaiError, sklearn.exceptions.NotFittedError)  a model that has not been fitted
    ├── ModelGoneError(XaiError, ReferenceError)  the model a Forest was imported from was garbage-collected
    ├── OutputPathError(XaiError, OSError)        a report / output file that cannot be written
    ├── NotAdditiveError(XaiError, TypeError)     an additive plot (shap waterfall) of scores that do not add up
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
           "NativeMemoryError", "OutputPathError", "NotAdditiveError", "XaiWarning", "NoiseScaleWarning"]


class XaiError(Exception):
    """Base class of every exception xai_plugins raises on purpose."""


class InputError(XaiError, ValueError):
    """A value the computation cannot use: NaN/inf, wrong sizes, empty data, sigma <= 0, ..."""


class FeatureMismatchError(InputError):
    """The data's columns cannot be aligned by name to the model's features."""


class ExplanationMismatchError(InputError):
    """Additive attributions (with ``base_values``) that do not add up to this model's output: the
    explanation belongs to another model or another output."""


class ModelStructureError(InputError):
    """The imported trees are not well-formed binary trees (found by the C validator)."""


class InputTypeError(XaiError, TypeError):
    """An argument of the wrong type (complex or non-numeric data, a non-integer n_jobs, ...)."""


class UnsupportedModelError(XaiError, TypeError):
    """The model type, objective or split kind cannot be represented as a numeric tree ensemble."""


class InputIndexError(XaiError, IndexError):
    """A feature, output or row index out of range."""


class ModelGoneError(XaiError, ReferenceError):
    """The fitted model a :class:`~xai_plugins.forest.Forest` came from no longer exists."""


class NativeMemoryError(XaiError, MemoryError):
    """The C core could not allocate its work space."""


class OutputPathError(XaiError, OSError):
    """An output file (report, JSON, PDF) or its folder cannot be written; raised before computing."""


class NotAdditiveError(XaiError, TypeError):
    """Scores that are importances, not additive contributions, were asked for an additive view
    (``shap.plots.waterfall`` / ``force``: a base value plus contributions adding up to the output)."""


class XaiWarning(UserWarning):
    """A result that is valid but probably not the quantity the caller meant."""


class NoiseScaleWarning(XaiWarning):
    """The noise is so wide that the perturbed value falls outside every split threshold of a
    perturbed feature almost surely: PG² then no longer depends on σ (see
    :func:`~xai_plugins.perturbation.check_noise_scale`)."""


def _not_fitted_error() -> type:
    """The class :class:`NotFittedError`: an :class:`XaiError` that is also scikit-learn's NotFittedError."""
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(XaiError, SklearnNotFittedError):
        """The model has not been fitted: call its ``fit`` first. Also scikit-learn's ``NotFittedError``
        (and so a ``ValueError`` and an ``AttributeError``)."""

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
