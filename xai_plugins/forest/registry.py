"""The one registry of model libraries: the only place that knows which library a model came from.

Each library module of this package (``sklearn.py``, ``xgboost.py``, ``lightgbm.py``) defines a
:class:`LibraryImporter` and registers one instance with :func:`register` when it is imported (the
package imports every one of its public modules, so a new library is one new module). Everything
else asks the registry: :func:`importer_for` / :func:`library_of` (which library), :func:`model_feature_names`,
:func:`model_missing_value`, and through the importer the Forest, the fingerprint of the fitted state
and the model's own predictor.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, InputTypeError
from .layout import Forest

__all__: list[str] = []      # internal module: the public names are in the API reference

if TYPE_CHECKING:
    from .predictor import ModelPredictor


class LibraryImporter(abc.ABC):
    """One library's importer. Subclass it, set :attr:`name` and :attr:`supported`, implement
    :meth:`owns`, :meth:`to_forest` and :meth:`predictor` (and override the others where the library
    differs from the defaults), and :func:`register` an instance.

    ``mutators``: the methods of the library's mutable model class (:meth:`mutable_class`) that
    change a fitted model in place; the import cache wraps them once so that each call gives that
    object a new generation (:func:`xai_plugins.forest.cache.generation`, read by :meth:`fingerprint`).
    """

    #: the library's name (the distribution's import name: "sklearn", "xgboost", ...)
    name: str = ""
    #: the model types it imports, for error messages (:func:`supported_models`)
    supported: str = ""
    #: in-place mutators of :meth:`mutable_class` to watch (see the class docstring)
    mutators: tuple[str, ...] = ()
    #: whether the library's models read the zeros a scipy sparse matrix leaves out as missing values (XGBoost),
    #: not as zeros (scikit-learn, LightGBM, CatBoost): a Pipeline that gives its model a sparse matrix is
    #: compiled accordingly
    sparse_zeros_missing: bool = False
    #: whether the library's models refuse NaN in a scipy sparse matrix (scikit-learn's trees take missing values
    #: in dense rows only)
    sparse_refuses_nan: bool = False

    @abc.abstractmethod
    def owns(self, cls: type) -> bool:
        """Whether models of class ``cls`` belong to this library (decided by class: cached per class)."""
        raise NotImplementedError

    @abc.abstractmethod
    def to_forest(self, model: Any) -> Forest:
        """The :class:`Forest` of a fitted ``model`` (already checked to be fitted)."""
        raise NotImplementedError

    def feature_names(self, model: Any) -> Any:
        """The names ``model`` was fitted with, in column order, or None (default: ``feature_names_in_``)."""
        return getattr(model, "feature_names_in_", None)

    def missing_value(self, model: Any) -> float:
        """The input value ``model`` reads as missing besides NaN (default: NaN only)."""
        return float("nan")

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """(objects a refit replaces, compared by identity; scalars, compared by value): the import cache
        imports ``model`` again when either changes."""
        return (), ()

    @abc.abstractmethod
    def predictor(self, model: Any) -> ModelPredictor:
        """The model's own predictor in its Forest's output space."""
        raise NotImplementedError

    def runtime(self, model: Any) -> tuple[str, float]:
        """``(description, unit roundoff)`` of the runtime that scores ``model`` in production: the library and
        its version, and the precision in which its predictor sums the trees (2**-53 for float64; a float32
        runtime such as XGBoost's overrides it). The parity certificate (:mod:`.parity`) reads it."""
        return f"{self.name} {installed_version(self.name)}", 2.0 ** -53

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """``(link, the model's own probabilities)`` of a classifier whose Forest gives its margin: the link
        (:func:`xai_plugins.forest.link.probabilities`) that maps the Forest's outputs to the model's
        probabilities, and the model's own probabilities on the Forest's rows (category codes turned into the
        labels the model reads: :func:`xai_plugins.forest.predictor.probability_predictor`). None (the default)
        where the Forest's output is the model's output (regressors, classifiers in probability space) or the
        library has no probabilities the Forest's margin maps to: the parity certificate (:mod:`.parity`) then
        checks the output by the margin comparison."""
        return None

    def mutable_class(self) -> type | None:
        """The class whose :attr:`mutators` change a fitted model in place (imported on the first import
        of one of this library's models), or None."""
        return None


def installed_version(distribution: str) -> str:
    """The installed version of a distribution ("(not installed)" without it)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("scikit-learn" if distribution == "sklearn" else distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


#: name -> importer, in registration order
_IMPORTERS: dict[str, LibraryImporter] = {}
#: per library, the methods of its mutable model class that change a model in place (each call gives the
#: object a new generation, see :func:`xai_plugins.forest.import_model`)
BOOSTER_MUTATORS: dict[str, tuple[str, ...]] = {}
#: class -> its importer (None: no library owns it), filled on first sight of a class (a plain dict: a
#: lookup costs a hash, and holding a class does not hold any model)
_BY_CLASS: dict[type, LibraryImporter | None] = {}


def register(importer: LibraryImporter) -> LibraryImporter:
    """Register ``importer`` (an instance of a :class:`LibraryImporter` subclass) under its ``name``,
    replacing an importer of the same name. Libraries must own disjoint classes: the first importer
    in registration order that owns a class takes it. Returns ``importer``."""
    if not isinstance(importer, LibraryImporter) or not importer.name:
        raise InputTypeError(f"register() takes an instance of a LibraryImporter subclass with a name set; got "
                             f"{importer!r}")
    _IMPORTERS[importer.name] = importer
    BOOSTER_MUTATORS.pop(importer.name, None)
    if importer.mutators:
        BOOSTER_MUTATORS[importer.name] = tuple(importer.mutators)
    _BY_CLASS.clear()
    return importer


def unregister(name: str) -> None:
    """Forget the importer registered under ``name`` (nothing when there is none)."""
    _IMPORTERS.pop(name, None)
    BOOSTER_MUTATORS.pop(name, None)
    _BY_CLASS.clear()


def importer(name: str) -> LibraryImporter:
    """The importer registered under ``name`` (InputError when there is none)."""
    try:
        return _IMPORTERS[name]
    except KeyError:
        raise InputError(f"no model library {name!r} is registered; registered: {sorted(_IMPORTERS)}") from None


def importer_for(model: Any) -> LibraryImporter | None:
    """The importer of the library ``model`` belongs to, or None when no registered library owns it."""
    cls = type(model)
    try:
        return _BY_CLASS[cls]
    except KeyError:
        found = _BY_CLASS[cls] = next((imp for imp in _IMPORTERS.values() if imp.owns(cls)), None)
        return found


def library_of(model: Any) -> str | None:
    """The name of the library ``model`` belongs to ("sklearn", "xgboost", "lightgbm", ...), or None."""
    found = importer_for(model)
    return None if found is None else found.name


def supported_models() -> str:
    """The model types the registered importers accept, for error messages."""
    return ", ".join(imp.supported for imp in _IMPORTERS.values())


def model_feature_names(model: Any) -> list[str] | None:
    """The feature names a fitted model was trained with, in its column order, or None.

    A :class:`Forest` carries them; otherwise its library's importer reads them (scikit-learn and
    the wrappers store ``feature_names_in_``; XGBoost boosters ``feature_names``; LightGBM boosters
    ``feature_name()``, its generated ``Column_i`` names counting as none); a model of no registered
    library: its ``feature_names_in_``.
    """
    if model is None:
        return None
    if isinstance(model, Forest):
        return None if model.feature_names is None else list(model.feature_names)
    found = importer_for(model)
    try:
        names = found.feature_names(model) if found is not None else getattr(model, "feature_names_in_", None)
    except Exception:  # noqa: BLE001 - an unfitted wrapper has no names; the importer says it is unfitted
        return None
    if names is None or len(names) == 0:
        return None
    return [str(c) for c in names]


def model_missing_value(model: Any) -> float:
    """The input value a fitted model reads as missing besides NaN: XGBoost's scikit-learn
    wrappers' ``missing`` (a :class:`Forest` carries it as ``missing_value``); NaN for every other
    model, a bare XGBoost ``Booster`` included (its ``missing`` belongs to the DMatrix, not to the
    model)."""
    if isinstance(model, Forest):
        return float(model.missing_value)
    found = importer_for(model)
    return float(np.nan) if found is None else float(found.missing_value(model))
