"""The import cache: one :class:`~xai_plugins.forest.Forest` per fitted model, keyed on the model
(held weakly) and on a fingerprint of its fitted state, with the in-place mutators of the XGBoost
and LightGBM ``Booster`` classes watched."""

from __future__ import annotations

import functools
import itertools
import operator
import weakref
from typing import Any, Callable

from .._validation import check_is_fitted
from ..errors import UnsupportedModelError
from .layout import Forest
from .registry import BOOSTER_MUTATORS, LibraryImporter, importer, importer_for, supported_models

__all__: list[str] = []      # internal module: the public names are in the API reference


def import_model(model: Any) -> Forest:
    """Import a fitted tree ensemble as a :class:`xai_plugins.Forest` (cached per model).

    Every method of the package calls it on the model it is given; a Forest is returned as is.
    A model is imported once: the Forest is cached, keyed on the model object (held weakly) and
    on a fingerprint of its fitted state, so repeated calls on the same model cost microseconds
    and a changed model is imported again.

    Parameters
    ----------
    model : fitted model or Forest
        An XGBoost ``Booster`` / ``XGBRegressor`` / ``XGBClassifier`` (gbtree), a LightGBM
        ``Booster`` / ``LGBMRegressor`` / ``LGBMClassifier``, a CatBoost model with symmetric
        trees, a scikit-learn ``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``,
        ``GradientBoosting*`` or ``HistGradientBoosting*``, a scikit-learn ``Pipeline`` of
        supported per-column steps in front of one of these, or a Forest.

    Returns
    -------
    Forest
        The model's immutable Forest (the cached one when the model has not changed).

    Raises
    ------
    UnsupportedModelError
        Other model types, objectives, categorical splits, linear trees or vector leaves, a
        GradientBoosting ``init`` estimator that is not constant.
    NotFittedError
        An unfitted estimator (also scikit-learn's ``NotFittedError``).

    See Also
    --------
    xai_plugins.clear_model_cache : Forget every imported model.
    xai_plugins.Forest : The imported structure.

    Notes
    -----
    What the fingerprint sees:

    - a refit, warm start or reload that *replaces* the fitted state (scikit-learn's ``tree_``,
      ``estimators_``, ``_predictors``; the wrappers' XGBoost / LightGBM booster), and changes of
      ``n_estimators``, ``learning_rate``, ``n_features_in_`` and LightGBM's ``best_iteration``;
    - every *in-place* change of an XGBoost or LightGBM ``Booster`` made through its own methods:
      on the first import of a model of either library, the methods of its ``Booster`` class that
      change a model in place (``xai_plugins.forest.BOOSTER_MUTATORS``: e.g. XGBoost ``load_model``
      (also reached by ``XGBRegressor.load_model``), ``update`` / ``boost`` (the ``refresh``
      updater), ``set_param``, ``set_attr``; LightGBM ``model_from_string``, ``set_leaf_output``,
      ``update``, ``rollback_one_iter``) are wrapped so that each call gives that booster a new
      generation (a warning raised inside one of them then names the wrapper's line as its
      location).

    Not seen (call :func:`xai_plugins.clear_model_cache` after them): in-place writes into a
    scikit-learn tree's arrays (``tree_.value[...] = ...``) or into other attributes the importers
    read, and changes made by calling the libraries' C API directly, bypassing their Python
    ``Booster``.

    Missing values: NaN is missing for every model. XGBoost's scikit-learn wrappers also read
    their ``missing=`` sentinel (e.g. -999) as missing; the Forest records it (``missing_value``)
    and turns it into NaN wherever rows enter, so every method routes it as the model does. A bare
    XGBoost ``Booster`` carries no sentinel (it belongs to the DMatrix): only NaN is missing, so
    replace a sentinel by NaN in the data, or import the fitted ``XGBRegressor`` / ``XGBClassifier``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> forest = xp.import_model(model)
    >>> forest
    Forest(sklearn.RandomForestRegressor, 5 trees, ... leaves, 10 features, outputs ['output'] in raw space)
    >>> xp.import_model(model) is forest          # cached
    True
    >>> _ = model.set_params(n_estimators=6).fit(X, y)
    >>> xp.import_model(model).n_trees            # a refit is imported again
    6
    >>> xp.import_model(object())
    Traceback (most recent call last):
    ...
    xai_plugins.errors.UnsupportedModelError: unsupported model type builtins.object; supported: ...
    """
    if isinstance(model, Forest):
        return model
    found = importer_for(model)
    if found is None:
        raise UnsupportedModelError(f"unsupported model type {type(model).__module__}.{type(model).__name__}; "
                                    f"supported: {supported_models()}")
    key = id(model)
    entry = _CACHE.get(key)
    if entry is not None and entry[0]() is model:
        if _same_fingerprint(entry[1], _fingerprint(model, found)):
            return entry[2]
    check_is_fitted(model)
    _watch_boosters(found.name)
    token = _fingerprint(model, found)            # taken before the import: a change during it is seen next time
    forest = found.to_forest(model)
    try:
        ref = weakref.ref(model, functools.partial(_forget, _CACHE, key))   # no globals needed at exit
    except TypeError:            # not weak-referenceable: not cached
        return forest
    _CACHE[key] = (ref, token, forest)
    return forest


#: id(model) -> (weak reference to the model, fingerprint, Forest)
_CACHE: dict = {}
#: mutable model object -> its generation (the last value of _NEXT_GENERATION it took; 0 when never changed
#: since watched)
_GENERATION: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_NEXT_GENERATION = itertools.count(1)
#: the classes whose mutators are wrapped
_WATCHED: set[type] = set()


def clear_model_cache() -> None:
    """Forget every imported model: the next call on a model imports it again.

    Needed only after a change :func:`xai_plugins.import_model` does not see: in-place writes into
    a scikit-learn tree's arrays, the libraries' C API called directly.

    See Also
    --------
    xai_plugins.import_model : The cached import.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    >>> forest = xp.import_model(model)
    >>> model.tree_.value[1] = 0.0             # an in-place write the cache does not see
    >>> xp.import_model(model) is forest
    True
    >>> xp.clear_model_cache()
    >>> xp.import_model(model) is forest
    False
    """
    _CACHE.clear()


def generation(obj: Any) -> int:
    """The generation of ``obj``: the counter value its last call of a watched mutator took (0 when none
    since it was watched). Importers put it in their fingerprint."""
    return _GENERATION.get(obj, 0)


def _forget(cache: dict, key: int, ref: weakref.ref) -> None:
    """Drop the entry of a garbage-collected model (unless the id was already reused)."""
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]


def _watch_boosters(library: str) -> None:
    """Wrap ``library``'s in-place mutators (:data:`BOOSTER_MUTATORS`), once per process."""
    mutable = importer(library).mutable_class() if library in BOOSTER_MUTATORS else None
    if mutable is None or mutable in _WATCHED:
        return
    for name in BOOSTER_MUTATORS[library]:
        method = mutable.__dict__.get(name)
        if method is not None and not hasattr(method, "__xai_mutator__"):
            setattr(mutable, name, _new_generation_after(method))
    _WATCHED.add(mutable)


def _new_generation_after(method: Callable) -> Callable:
    """``method`` that then gives its object a new generation (also when it raises: a failed load
    may have changed the model half-way)."""
    @functools.wraps(method)
    def mutator(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        finally:
            _GENERATION[self] = next(_NEXT_GENERATION)

    mutator.__xai_mutator__ = True          # type: ignore[attr-defined]
    return mutator


def _fingerprint(model: Any, found: LibraryImporter) -> tuple[tuple, tuple]:
    """The importer's fingerprint of ``model``, with the model's class among the scalars."""
    objects, values = found.fingerprint(model)
    return tuple(objects), (type(model), *values)


def _same_fingerprint(a: tuple[tuple, tuple], b: tuple[tuple, tuple]) -> bool:
    """Same objects (by identity) and equal scalars; scalars that cannot be compared count as changed."""
    if len(a[0]) != len(b[0]) or not all(map(operator.is_, a[0], b[0])):
        return False
    try:
        return bool(a[1] == b[1])
    except (TypeError, ValueError):
        return False
