"""The package's exceptions and warnings: one base class, each subclass also a matching builtin.

Catch :class:`XaiError` for anything this package raises on purpose; each subclass also
inherits the builtin a caller would expect (``except ValueError`` keeps working)::

    XaiError
    ├── InputError(XaiError, ValueError)          bad data or argument value (NaN, sizes, sigma <= 0, ...)
    │   ├── FeatureMismatchError                  columns that cannot be aligned to the model's features
    │   └── ModelStructureError                   trees that are not well-formed (from the C validator)
    ├── InputTypeError(XaiError, TypeError)       an argument of the wrong type (complex X, n_jobs="x", ...)
    ├── UnsupportedModelError(XaiError, TypeError)  model type, objective or split kind not supported
    ├── InputIndexError(XaiError, IndexError)     a feature / output / row index out of range
    ├── ModelGoneError(XaiError, ReferenceError)  the model a Forest was imported from was garbage-collected
    ├── OutputPathError(XaiError, OSError)        a report / output file that cannot be written
    ├── NotAdditiveError(XaiError, TypeError)     an additive plot (shap waterfall) of scores that do not add up
    └── NativeMemoryError(XaiError, MemoryError)  the C core ran out of memory

    XaiWarning(UserWarning)                       results that are valid but probably not what was meant
    └── NoiseScaleWarning                         noise so wide that PG² no longer depends on it
"""

from __future__ import annotations

__all__ = ["XaiError", "InputError", "FeatureMismatchError", "ModelStructureError", "InputTypeError",
           "UnsupportedModelError", "InputIndexError", "ModelGoneError", "NativeMemoryError", "OutputPathError",
           "NotAdditiveError", "XaiWarning", "NoiseScaleWarning"]


class XaiError(Exception):
    """Base class of every exception xai_plugins raises on purpose."""


class InputError(XaiError, ValueError):
    """A value the computation cannot use: NaN/inf, wrong sizes, empty data, sigma <= 0, ..."""


class FeatureMismatchError(InputError):
    """The data's columns cannot be aligned by name to the model's features."""


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
