"""The import cache: one :class:`~xai_plugins.forest.Forest` per fitted model, keyed on the model
(held weakly) and on a fingerprint of its fitted state, with the in-place mutators of the XGBoost
and LightGBM ``Booster`` classes watched."""

from __future__ import annotations

import functools
import importlib
import itertools
import operator
import weakref
from typing import Callable

from .._validation import check_is_fitted, model_missing_value
from ..errors import UnsupportedModelError
from .layout import SUPPORTED_MODELS, Forest
from .lightgbm import _import_lightgbm
from .sklearn import _import_sklearn
from .xgboost import _import_xgboost


def import_model(model) -> Forest:
    """The :class:`Forest` of a fitted tree ensemble (a Forest is returned as is).

    A model is imported once: the Forest is cached, keyed on the model object (held weakly) and
    on a fingerprint of its fitted state, so repeated calls on the same model cost microseconds
    and a changed model is imported again. What the fingerprint sees:

    - a refit, warm start or reload that *replaces* the fitted state (scikit-learn's ``tree_``,
      ``estimators_``, ``_predictors``; the wrappers' XGBoost / LightGBM booster), and changes of
      ``n_estimators``, ``learning_rate``, ``n_features_in_`` and LightGBM's ``best_iteration``;
    - every *in-place* change of an XGBoost or LightGBM ``Booster`` made through its own methods:
      on the first import of a model of either library, the methods of its ``Booster`` class that
      change a model in place (:data:`BOOSTER_MUTATORS`: e.g. XGBoost ``load_model`` (also reached
      by ``XGBRegressor.load_model``), ``update`` / ``boost`` (the ``refresh`` updater),
      ``set_param``, ``set_attr``; LightGBM ``model_from_string``, ``set_leaf_output``, ``update``,
      ``rollback_one_iter``) are wrapped so that each call gives that booster a new generation
      (a warning raised inside one of them then names the wrapper's line as its location).

    Not seen (call :func:`clear_model_cache` after them): in-place writes into a scikit-learn
    tree's arrays (``tree_.value[...] = ...``) or into other attributes the importers read, and
    changes made by calling the libraries' C API directly, bypassing their Python ``Booster``.

    Missing values: NaN is missing for every model. XGBoost's scikit-learn wrappers also read
    their ``missing=`` sentinel (e.g. -999) as missing; the Forest records it (``missing_value``)
    and turns it into NaN wherever rows enter, so every method routes it as the model does. A bare
    XGBoost ``Booster`` carries no sentinel (it belongs to the DMatrix): only NaN is missing, so
    replace a sentinel by NaN in the data, or import the fitted ``XGBRegressor`` / ``XGBClassifier``.

    Raises :class:`~xai_plugins.errors.UnsupportedModelError` for other model types, objectives,
    categorical splits, linear trees or vector leaves, a GradientBoosting ``init`` estimator that
    is not constant, and :class:`~xai_plugins.errors.NotFittedError` (also scikit-learn's) for an
    unfitted estimator.
    """
    if isinstance(model, Forest):
        return model
    library = type(model).__module__.split(".")[0]
    importer = _IMPORTERS.get(library)
    if importer is None:
        raise UnsupportedModelError(f"unsupported model type {type(model).__module__}.{type(model).__name__}; "
                                    f"supported: {SUPPORTED_MODELS}")
    key = id(model)
    entry = _CACHE.get(key)
    if entry is not None and entry[0]() is model:
        token = _fingerprint(model, library)
        if _same_fingerprint(entry[1], token):
            return entry[2]
    check_is_fitted(model)
    _watch_boosters(library)
    token = _fingerprint(model, library)          # taken before the import: a change during it is seen next time
    forest = importer(model)
    try:
        ref = weakref.ref(model, functools.partial(_forget, _CACHE, key))   # no globals needed at exit
    except TypeError:            # not weak-referenceable: not cached
        return forest
    _CACHE[key] = (ref, token, forest)
    return forest


#: id(model) -> (weak reference to the model, fingerprint, Forest)
_CACHE: dict = {}
_IMPORTERS = {"sklearn": _import_sklearn, "xgboost": _import_xgboost, "lightgbm": _import_lightgbm}
#: per library, the methods of its ``Booster`` that change a model in place (each call gives the booster
#: a new generation, see :func:`import_model`); the others only read it, or return a new Booster
BOOSTER_MUTATORS = {
    "xgboost": ("load_model", "load_config", "update", "boost", "set_param", "set_attr", "_set_feature_info",
                "__setstate__"),
    "lightgbm": ("model_from_string", "set_leaf_output", "update", "rollback_one_iter", "shuffle_models",
                 "__setstate__"),
}
#: booster -> its generation (the last value of _NEXT_GENERATION it took; 0 when never changed since watched)
_GENERATION: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_NEXT_GENERATION = itertools.count(1)
_WATCHED: set = set()


def clear_model_cache() -> None:
    """Forget every imported model (the next call on a model imports it again): needed only after
    a change :func:`import_model` does not see (in-place writes into a scikit-learn tree's arrays,
    the libraries' C API called directly)."""
    _CACHE.clear()


def _forget(cache: dict, key, ref) -> None:
    """Drop the entry of a garbage-collected model (unless the id was already reused)."""
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]


def _watch_boosters(library: str) -> None:
    """Wrap ``library``'s in-place Booster mutators (:data:`BOOSTER_MUTATORS`), once per process."""
    if library in _WATCHED or library not in BOOSTER_MUTATORS:
        return
    booster_class = importlib.import_module(library).Booster
    for name in BOOSTER_MUTATORS[library]:
        method = booster_class.__dict__.get(name)
        if method is not None and not hasattr(method, "__xai_mutator__"):
            setattr(booster_class, name, _new_generation_after(method))
    _WATCHED.add(library)


def _new_generation_after(method: Callable) -> Callable:
    """``method`` that then gives its booster a new generation (also when it raises: a failed load
    may have changed the model half-way)."""
    @functools.wraps(method)
    def mutator(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        finally:
            _GENERATION[self] = next(_NEXT_GENERATION)

    mutator.__xai_mutator__ = True          # type: ignore[attr-defined]
    return mutator


def _fingerprint(model, library: str) -> tuple:
    """(objects a refit replaces, compared by identity; scalars, compared by value)."""
    objects, values = [], [type(model)]
    if library == "sklearn":
        values.append(getattr(model, "n_features_in_", None))
        for name in ("tree_", "estimators_", "_predictors"):
            held = getattr(model, name, None)
            if held is not None:
                objects.append(held)
                values.append(len(held) if hasattr(held, "__len__") else 0)
        values += [getattr(model, "learning_rate", None), getattr(model, "n_estimators", None)]
    elif library == "xgboost":
        booster = model.get_booster() if hasattr(model, "get_booster") else model
        objects.append(booster)
        values += [_GENERATION.get(booster, 0), repr(model_missing_value(model))]
    elif library == "lightgbm":
        booster = getattr(model, "booster_", model)
        objects.append(booster)
        values += [_GENERATION.get(booster, 0), getattr(booster, "best_iteration", None)]
    return tuple(objects), tuple(values)


def _same_fingerprint(a, b) -> bool:
    """Same objects (by identity) and equal scalars; scalars that cannot be compared count as changed."""
    if len(a[0]) != len(b[0]) or not all(map(operator.is_, a[0], b[0])):
        return False
    try:
        return bool(a[1] == b[1])
    except (TypeError, ValueError):
        return False
