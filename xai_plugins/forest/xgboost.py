"""The XGBoost importer: ``Booster``, ``XGBRegressor``, ``XGBClassifier`` (gbtree) ->
:class:`~xai_plugins.forest.Forest`, read from the model's UBJSON (exact float32 thresholds)."""

from __future__ import annotations

import ctypes
import functools
import json
import sys
from typing import Any

import numpy as np

from .. import _native
from ..errors import UnsupportedModelError
from ._ubjson import decode_ubjson
from .cache import generation
from .layout import Categories, Forest, category_bitsets, preorder
from .predictor import ModelPredictor, model_input
from .registry import LibraryImporter, model_feature_names, register

__all__: list[str] = []      # internal module: the public names are in the API reference


def _parse_floats(text: Any) -> np.ndarray:
    """XGBoost 3.x stores base_score as a string such as "[1.5213348E2]" or "5E-1"."""
    if isinstance(text, (int, float)):
        return np.array([float(text)])
    return np.array([float(v) for v in str(text).strip("[]").split(",") if v.strip()])


# objective -> its ProbToMargin: maps learner_model_param.base_score to the margin intercept (XGBoost 3.x;
# the per-output base_score vectors of multi:* / multi-target / multi-alpha models are already margins)
_XGB_INTERCEPT = {
    **dict.fromkeys(("binary:logistic", "reg:logistic"), "logit"),
    **dict.fromkeys(("count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft"), "log"),
    **dict.fromkeys(("reg:squarederror", "reg:squaredlogerror", "reg:absoluteerror", "reg:pseudohubererror",
                     "reg:quantileerror", "binary:logitraw", "binary:hinge", "multi:softprob", "multi:softmax",
                     "rank:pairwise", "rank:ndcg", "rank:map"), "identity"),
}
# regression objectives whose prediction is the margin itself (PredTransform identity): output_space "raw"
_XGB_IDENTITY_PREDICTION = {"reg:squarederror", "reg:squaredlogerror", "reg:absoluteerror",
                            "reg:pseudohubererror", "reg:quantileerror", "rank:pairwise", "rank:ndcg", "rank:map"}


class XGBoostImporter(LibraryImporter):
    """XGBoost's ``Booster`` and its scikit-learn wrappers (``XGBRegressor``, ``XGBClassifier``, ...), gbtree."""

    name = "xgboost"
    supported = "xgboost Booster/XGBRegressor/XGBClassifier (gbtree)"
    mutators = ("load_model", "load_config", "update", "boost", "set_param", "set_attr", "_set_feature_info",
                "__setstate__")

    def runtime(self, model: Any) -> tuple[str, float]:
        """XGBoost sums its trees and returns its predictions in float32."""
        return super().runtime(model)[0], 2.0 ** -24
    sparse_zeros_missing = True         # a CSR matrix's absent entries are missing values to XGBoost

    def owns(self, cls: type) -> bool:
        """A subclass of ``xgboost.Booster`` or ``xgboost.XGBModel`` (False while xgboost is not imported)."""
        xgboost = sys.modules.get("xgboost")
        return xgboost is not None and issubclass(cls, (xgboost.Booster, xgboost.XGBModel))

    def to_forest(self, model: Any) -> Forest:
        """Trees read from the booster's UBJSON, the rounds its ``predict`` uses: a large booster is
        exported in slices of boosting rounds, each read and let go before the next (:func:`_read_parts`);
        each tree's node arrays go straight from the model's bytes into arrays of the Forest's dtypes (no
        per-tree copies), and the bytes are let go before the trees are renumbered."""
        booster = _booster(model)
        n_features, rounds = booster.num_features(), _xgboost_rounds(model)   # no booster call once buffer is read
        parts = _read_parts(booster, rounds, n_features)
        _native.release_free_memory()
        objective, base, n_outputs, n_features, labels, typed = parts[0]["meta"]
        nodes, old_offsets, tree_info, set_splits = _join_parts(parts)
        del parts
        if len(old_offsets) == 1:
            raise UnsupportedModelError("the XGBoost model has no trees")
        order, offsets, left, right = preorder(nodes.pop("left_children"), nodes.pop("right_children"), old_offsets)
        categorical = {} if not set_splits and not any(typed) and labels is None else \
            _xgboost_categories(set_splits, old_offsets, order, nodes["split_indices"], labels, typed, n_features)
        feature = nodes.pop("split_indices")[order]
        missing_left = nodes.pop("default_left")[order]
        cond = nodes.pop("split_conditions")[order].astype(np.float64)
        cond[nodes.pop("split_type")[order] != 0] = 0.0
        cover = nodes.pop("sum_hessian")[order].astype(np.float64)      # path-dependent TreeSHAP's node weights
        del order
        threshold = cond.copy()
        threshold[left < 0] = 0.0
        forest_arrays = dict(left_child=left, right_child=right, feature=feature, threshold=threshold,
                             missing_left=missing_left, value=cond, tree_offset=offsets,
                             tree_target=tree_info, weight=cover, **categorical)
        task = "classification" if objective.startswith(("binary:", "multi:")) else "regression"
        if task == "classification":
            outputs = ["margin"] if n_outputs == 1 else [f"class_{k}" for k in range(n_outputs)]
        else:
            outputs = ["output"] if n_outputs == 1 else [f"output_{k}" for k in range(n_outputs)]

        return Forest(**forest_arrays, base_score=base, n_features=n_features, split_rule="lt", input_float32=True,
                       aggregate="sum", task=task,
                       output_space="raw" if objective in _XGB_IDENTITY_PREDICTION else "margin",
                       model_type=f"xgboost.{type(model).__name__}",
                       feature_names=model_feature_names(model), output_names=outputs,
                       predict_fn=self.predictor(model), objective=objective,
                       missing_value=self.missing_value(model), category_labels=labels)

    def feature_names(self, model: Any) -> Any:
        """The wrapper's ``feature_names_in_``, else the booster's ``feature_names``."""
        names = getattr(model, "feature_names_in_", None)
        return _booster(model).feature_names if names is None else names

    def missing_value(self, model: Any) -> float:
        """The scikit-learn wrapper's ``missing`` (a bare Booster has none: its ``missing`` belongs to the DMatrix)."""
        if not hasattr(model, "get_booster"):
            return float("nan")
        missing = getattr(model, "missing", None)
        return float("nan") if missing is None else float(missing)

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """The booster by identity, its generation and the wrapper's ``missing``."""
        booster = _booster(model)
        return (booster,), (generation(booster), repr(self.missing_value(model)))

    def predictor(self, model: Any) -> ModelPredictor:
        """The margin of ``inplace_predict`` over the rounds the model predicts with, with its ``missing``."""
        return ModelPredictor(model, _xgboost_margin)

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """binary:logistic: logistic, multi:softprob: softmax, of ``inplace_predict``'s values (other objectives:
        None)."""
        link = {"binary:logistic": "logistic", "multi:softprob": "softmax"}.get(forest.objective or "")
        return None if link is None else (link, ModelPredictor(model, functools.partial(_xgboost_margin,
                                                                                         predict_type="value")))

    def mutable_class(self) -> type:
        """``xgboost.Booster``."""
        import xgboost

        return xgboost.Booster


def _xgboost_categories(set_splits: list[tuple[int, dict]], offsets: np.ndarray, order: np.ndarray,
                        feature: np.ndarray, labels: list | None, typed: list[bool], n_features: int) -> dict:
    """The Forest's categorical fields (``n_categories``, ``cat_start``, ``cat_bits``) of XGBoost's
    categorical splits (``split_type`` 1, one-hot and partition alike), empty without any. A node's
    ``categories`` segment lists the codes it sends RIGHT; every other code goes left, and so does an
    unseen one (negative, or beyond the model's categories: XGBoost's ``Decision``), NaN by
    ``default_left``. A feature's K is the number of training categories the model stores (fitted on a
    pandas ``category`` column), else one more than the largest code its splits name (at least 1 for a
    feature of type "c" in ``typed``). ``set_splits``: (tree index, its ``categories*`` arrays) of each
    tree with a categorical split; ``offsets``: the trees' node offsets in model order; ``order``: the
    model-order node of each preorder node; ``feature``: the split feature of each model-order node."""
    nodes, right_sets = [], []
    for t, tree in set_splits:
        codes = tree["categories"]
        for node, start, size in zip(tree["categories_nodes"], tree["categories_segments"], tree["categories_sizes"]):
            nodes.append(offsets[t] + int(node))
            right_sets.append(codes[int(start):int(start) + int(size)])
    n_categories = np.array([len(known or ()) for known in labels] if labels else [0] * n_features, dtype=np.int32)
    n_categories[:len(typed)] = np.maximum(n_categories[:len(typed)], np.asarray(typed[:n_features], dtype=np.int32))
    if not nodes and not n_categories.any():
        return {}
    old_nodes = np.array(nodes, dtype=np.int64)
    for node, right in zip(old_nodes, right_sets):
        j = feature[node]
        n_categories[j] = max(n_categories[j], int(right.max(initial=-1)) + 1, 1)
    position = np.empty(len(feature), dtype=np.int64)
    position[order] = np.arange(len(order))
    new_nodes = position[old_nodes]
    ranked = np.argsort(new_nodes)
    K = n_categories[feature[old_nodes]]
    left_sets = [np.setdiff1d(np.arange(K[i] + 1), right_sets[i]) for i in ranked]
    cat_start, cat_bits = category_bitsets(new_nodes[ranked], left_sets, K[ranked], len(order))
    return dict(n_categories=n_categories, cat_start=cat_start, cat_bits=cat_bits)


#: why a label outside a feature's stored categories is refused (XGBoost's own predict refuses it)
_UNSEEN_REFUSAL = ("XGBoost refuses it (\"Found a category not in the training set\"); pass one of them, or NaN for "
                   "a missing value")


def _xgboost_labels(cats: dict | None, n_features: int) -> list | None:
    """Per feature, the training categories XGBoost (3.x) stores with a model fitted on pandas ``category``
    columns (the ``cats`` field: per feature its text labels as UTF-8 bytes and offsets, or its numbers;
    a category's position is its code), as :class:`~xai_plugins.forest.layout.Categories` that refuse any
    other label, as XGBoost does; None for a feature without; None when it stores none."""
    encoded = (cats or {}).get("enc") or []
    labels: list = [None] * n_features
    for j, enc in enumerate(encoded[:n_features]):
        values = np.asarray(enc.get("values", ()))
        if not len(values):
            continue
        if "offsets" in enc:
            raw = values.astype(np.uint8).tobytes()
            bounds = np.asarray(enc["offsets"], dtype=np.int64)
            known = [raw[a:b].decode("utf-8", errors="replace") for a, b in zip(bounds[:-1], bounds[1:])]
        else:
            known = values.tolist()
        labels[j] = Categories(known, _UNSEEN_REFUSAL)
    return labels if any(known is not None for known in labels) else None


#: per-node arrays of XGBoost's trees that the import does not read (left out while decoding)
_UNUSED_TREE_ARRAYS = frozenset({"loss_changes", "base_weights", "parents"})
#: per-node arrays of XGBoost's trees that the import reads, and the dtype each is gathered in
#: (thresholds and leaf values are float32 in the model: widened only once renumbered)
_NODE_ARRAYS = {"left_children": np.int32, "right_children": np.int32, "split_indices": np.int32,
                "split_conditions": np.float32, "default_left": np.uint8, "split_type": np.uint8,
                "sum_hessian": np.float32}
#: a tree's arrays that list its categorical splits' category sets
_CATEGORY_ARRAYS = ("categories", "categories_nodes", "categories_segments", "categories_sizes")


def _node_arrays(trees: list[dict]) -> tuple[dict, np.ndarray]:
    """Each array of :data:`_NODE_ARRAYS` of all ``trees`` (decoded dicts), filled tree after tree into
    one preallocated array of its dtype (in model order), and the trees' node offsets."""
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(tree["left_children"]) for tree in trees])
    out = {key: np.empty(offsets[-1], dtype=dtype) for key, dtype in _NODE_ARRAYS.items()}
    for t, tree in enumerate(trees):
        a, b = offsets[t], offsets[t + 1]
        for key, array in out.items():
            values = tree.get(key)
            if values is not None and len(values) != b - a:
                raise UnsupportedModelError(f"malformed XGBoost model: tree {t} has {len(values)} {key} "
                                            f"for {b - a} nodes")
            array[a:b] = 0 if values is None else values
    return out, offsets


#: a booster of more trees than this may be exported in slices of boosting rounds (:func:`_read_parts`): its
#: first slice, about this many trees, tells its size; a booster of no more trees is exported whole
_FIRST_TREES = 16
#: UBJSON bytes per slice after the first (XGBoost's writer holds about three times a slice's bytes); a
#: model no larger than this (by its first slice) is exported whole
_SLICE_BYTES = 8 << 20


def _read_parts(booster: Any, rounds: int | None, n_features: int) -> list[dict]:
    """The trees of the booster's rounds [0, ``rounds``) (all: None), read part by part by
    :func:`_read_part`. A small booster (at most :data:`_FIRST_TREES` trees), one with a categorical feature or
    one that is not a plain gbtree is one part: the whole model. A larger one is read in slices of boosting
    rounds (``booster[a:b]``, whole rounds: every class's and parallel tree of a round together), each
    exported, read and let go before the next, so that XGBoost's UBJSON writer (which holds about three
    times the bytes it writes) and its output buffer hold one slice at a time rather than the whole model:
    a first slice of about :data:`_FIRST_TREES` trees, then slices of about :data:`_SLICE_BYTES` bytes at
    the bytes per round read so far; where the first slice shows a model of at most :data:`_SLICE_BYTES`
    bytes, it is exported whole instead (a slice costs time: XGBoost copies its trees). A slice keeps the
    model's learner (objective, base_score, feature types), read from the first part only."""
    plan = _slice_plan(booster, rounds)
    if plan is None:
        return [_read_part(booster, rounds, n_features, True)]
    n_rounds, per_round = plan
    parts: list[dict] = []
    begin, step, size = 0, max(1, _FIRST_TREES // per_round), 0
    while begin < n_rounds:
        end = min(n_rounds, begin + step)
        part = booster[begin:end]
        parts.append(_read_part(part, None, n_features, not parts))
        del part                                        # frees the slice and XGBoost's buffer of it
        size += parts[-1].pop("bytes")
        if begin == 0 and end < n_rounds and size * n_rounds <= _SLICE_BYTES * end:
            return [_read_part(booster, rounds, n_features, True)]          # a small model: whole
        step = max(1, int(_SLICE_BYTES * end // max(size, 1)))
        begin = end
    return parts


def _slice_plan(booster: Any, rounds: int | None) -> tuple[int, int] | None:
    """(rounds to read, trees per round) when the booster is read in slices (see :func:`_read_parts`):
    a gbtree booster of more than :data:`_FIRST_TREES` trees in those rounds and no categorical feature
    (``booster[a:b]`` leaves out the categories the model stores); None to read it whole."""
    try:
        learner = json.loads(booster.save_config())["learner"]
        gb, params = learner["gradient_booster"], learner["learner_model_param"]
        if gb["name"] != "gbtree":
            return None                                 # DART keeps per-tree weights: read whole (and refused)
        if "c" in (booster.feature_types or ()):
            return None                                 # a slice drops the model's categories (XGBoost 3.x)
        per_round = max(int(params.get("num_class", "0")), int(params.get("num_target", "1")), 1) * \
            int(gb["gbtree_model_param"]["num_parallel_tree"])
        total = booster.num_boosted_rounds()
    except (KeyError, TypeError, ValueError):
        return None
    n_rounds = total if rounds is None else rounds
    if not 0 < n_rounds <= total or n_rounds * per_round <= _FIRST_TREES:
        return None
    return n_rounds, per_round


def _read_part(booster: Any, rounds: int | None, n_features: int, first: bool) -> dict:
    """What the import needs of one part of a model (the whole booster or a slice of it), copied out of
    its UBJSON (XGBoost's own output buffer, read in place and let go on return, even on an error):
    ``nodes`` and ``offsets`` (:func:`_node_arrays`) of its trees of rounds [0, ``rounds``) (all: None),
    their ``tree_info`` (output per tree), ``set_splits`` (the ``categories*`` arrays of each tree with a
    categorical split, by tree index within the part), ``bytes`` (the part's UBJSON size) and, for the
    ``first`` part, ``meta``: (objective, margin base score per output, outputs, features, category
    labels, which features have type "c")."""
    buffer = _model_buffer(booster)
    doc = learner = gb = trees = None
    try:
        doc = decode_ubjson(buffer, skip=_UNUSED_TREE_ARRAYS, views=True)
        learner = doc["learner"]
        gb = learner["gradient_booster"]
        if gb["name"] != "gbtree":
            raise UnsupportedModelError(f"XGBoost booster '{gb['name']}' is not supported; only gbtree is")
        out: dict = {"bytes": len(buffer)}
        if first:
            params = learner["learner_model_param"]
            n_outputs = max(int(params.get("num_class", "0")), int(params.get("num_target", "1")), 1)
            objective = learner["objective"]["name"]
            base = _margin_intercept(objective, _parse_floats(params["base_score"]))
            n_features = int(params.get("num_feature", "0")) or n_features
            out["meta"] = (objective, np.broadcast_to(base, (n_outputs,)).copy(), n_outputs, n_features,
                           _xgboost_labels(gb["model"].get("cats"), n_features),
                           [t == "c" for t in learner.get("feature_types") or ()])
        tree_info = np.array(gb["model"]["tree_info"], dtype=np.int64)
        n_used = len(tree_info) if rounds is None else int(gb["model"]["iteration_indptr"][rounds])
        trees = gb["model"]["trees"][:n_used]
        if any(int(tree["tree_param"].get("size_leaf_vector", "1")) > 1 for tree in trees):
            raise UnsupportedModelError("XGBoost vector-leaf trees (multi_strategy='multi_output_tree') "
                                        "are not supported")
        out["nodes"], out["offsets"] = _node_arrays(trees)
        out["tree_info"] = tree_info[:len(trees)]
        out["set_splits"] = [(t, {key: np.array(tree[key], dtype=np.int64) for key in _CATEGORY_ARRAYS})
                             for t, tree in enumerate(trees) if np.any(tree.get("split_type", ()))]
    finally:        # the views into XGBoost's buffer go before XGBoost reuses or frees it
        doc = learner = gb = trees = buffer = None
    return out


def _join_parts(parts: list[dict]) -> tuple[dict, np.ndarray, np.ndarray, list]:
    """The parts' node arrays joined field by field (each part's field let go once copied; one part's
    are taken as they are), the node offsets of all their trees, the trees' outputs, and their
    categorical splits by tree index in the model."""
    if len(parts) == 1:
        return parts[0]["nodes"], parts[0]["offsets"], parts[0]["tree_info"], parts[0]["set_splits"]
    tree_at = np.cumsum([0] + [len(part["tree_info"]) for part in parts])
    node_at = np.cumsum([0] + [int(part["offsets"][-1]) for part in parts])
    offsets = np.concatenate([part["offsets"][:-1] + at for part, at in zip(parts, node_at)] + [node_at[-1:]])
    nodes = {key: np.concatenate([part["nodes"].pop(key) for part in parts]) for key in _NODE_ARRAYS}
    tree_info = np.concatenate([part["tree_info"] for part in parts])
    set_splits = [(int(at) + t, arrays) for part, at in zip(parts, tree_at) for t, arrays in part["set_splits"]]
    return nodes, offsets, tree_info, set_splits


def _save_api() -> tuple | None:
    """What ``save_raw`` calls XGBoost's C library with (the C function, its status check, its length type
    and its argument encoder), or None where this XGBoost lays them out otherwise."""
    try:
        from xgboost.core import _LIB, _check_call, c_bst_ulong, make_jcargs

        return _LIB.XGBoosterSaveModelToBuffer, _check_call, c_bst_ulong, make_jcargs
    except (ImportError, AttributeError):
        return None


def _margin_intercept(objective: str, base: np.ndarray) -> np.ndarray:
    """The margin intercept of ``base`` (``learner_model_param.base_score``) under ``objective``'s link."""
    link = _XGB_INTERCEPT.get(objective)
    if link is None:
        raise UnsupportedModelError(f"XGBoost objective '{objective}' is not supported: the map from its "
                                    f"base_score to the margin is unknown; supported: {sorted(_XGB_INTERCEPT)}")
    stored = base
    with np.errstate(divide="ignore", invalid="ignore"):
        if link == "logit":
            base = np.log(base) - np.log1p(-base)
        elif link == "log":
            base = np.log(base)
    if not np.all(np.isfinite(base)):
        raise UnsupportedModelError(f"XGBoost objective '{objective}' stores base_score {stored.tolist()}, whose "
                                    f"margin ({link} link) is not finite (e.g. every training label 0 under a log "
                                    "link): the model's own margin output is undefined")
    return base


def _model_buffer(booster: Any) -> Any:
    """The booster's UBJSON, the bytes ``save_raw(raw_format="ubj")`` returns, read in place from
    XGBoost's own output buffer (``save_raw`` would copy them into a second buffer of the model's size)
    where its C API is reachable, else ``save_raw``'s copy. XGBoost reuses that buffer at the booster's
    next call that returns bytes on this thread: the caller decodes it before calling the booster again."""
    api = _save_api()
    if api is None:
        return booster.save_raw(raw_format="ubj")
    save, check_call, ulong, json_args = api
    length, data = ulong(), ctypes.POINTER(ctypes.c_char)()
    check_call(save(booster.handle, json_args(format="ubj"), ctypes.byref(length), ctypes.byref(data)))
    return (ctypes.c_char * length.value).from_address(ctypes.addressof(data.contents))


def _booster(model: Any) -> Any:
    """The model's ``Booster`` (the model itself when it is one)."""
    return model.get_booster() if hasattr(model, "get_booster") else model


def _xgboost_rounds(model: Any) -> int | None:
    """Boosting rounds the model predicts with: ``best_iteration + 1`` for a scikit-learn wrapper
    fitted with early stopping (its ``predict`` stops there), else None (all rounds)."""
    if not hasattr(model, "get_booster"):
        return None
    try:
        return int(model.best_iteration) + 1
    except AttributeError:
        return None


def _xgboost_margin(model: Any, X: Any, predict_type: str = "margin") -> Any:
    rounds = _xgboost_rounds(model)
    return _booster(model).inplace_predict(model_input(X, np.float32), predict_type=predict_type,
                                           iteration_range=(0, rounds or 0),
                                           missing=_IMPORTER.missing_value(model))


_IMPORTER = register(XGBoostImporter())
