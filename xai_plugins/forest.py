"""The flat tree-ensemble structure every primitive works on, and the importers that build it.

A :class:`Forest` mirrors ``csrc/xai.h``: one structure of arrays over all nodes of all trees,
child ids local to their tree (``tree_offset`` gives each tree's first node), thresholds
bit-identical to the model's own, and the model's comparison rule (``x <= t`` for
scikit-learn and LightGBM, ``x < t`` for XGBoost, on float32(x) where the model casts).
Nothing above this module knows which library a model came from.

Supported: XGBoost (``Booster``, ``XGBRegressor``, ``XGBClassifier``, gbtree), scikit-learn
(``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``,
``HistGradientBoosting*``), LightGBM (``Booster``, ``LGBMRegressor``, ``LGBMClassifier``).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import operator
import struct
import weakref
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._validation import check_is_fitted, model_feature_names, model_missing_value, model_rows
from .errors import InputError, ModelGoneError, ModelStructureError, UnsupportedModelError

SUPPORTED_MODELS = (
    "xgboost Booster/XGBRegressor/XGBClassifier (gbtree), scikit-learn DecisionTree*, RandomForest*, "
    "ExtraTrees*, GradientBoosting*, HistGradientBoosting*, lightgbm Booster/LGBMRegressor/LGBMClassifier"
)
#: LightGBM reads an input x with |x| <= kZeroThreshold (the float 1e-35f) as 0.0
LIGHTGBM_ZERO_THRESHOLD = float(np.float32(1e-35))

_ARRAY_FIELDS = {"left_child": np.int32, "right_child": np.int32, "feature": np.int32, "threshold": np.float64,
                 "missing_left": np.uint8, "tree_offset": np.int64, "tree_target": np.int32,
                 "base_score": np.float64, "impurity": np.float64, "weight": np.float64}


def _read_only(array, dtype) -> np.ndarray:
    """A C-contiguous read-only view of ``array`` as ``dtype`` (no copy when it already is one)."""
    out = np.ascontiguousarray(array, dtype=dtype).view()
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class Forest:
    """A tree ensemble as flat, read-only arrays (see ``csrc/xai.h`` for the meaning of every field).

    ``value`` has shape (n_nodes, leaf_width); a tree adds its leaf values to outputs
    ``tree_target[t] .. tree_target[t] + leaf_width - 1``; the model output is
    ``base_score + sum`` (boosting) or ``base_score + mean`` (forests) over trees, in
    ``output_space`` ("raw" regression output, "margin" for boosted classifiers and link-function
    objectives, "probability" for forest classifiers). ``predict_fn`` is the model's own predictor
    in that space (it holds the model weakly). Inputs equal to ``missing_value`` (XGBoost's
    ``missing=`` sentinel; NaN otherwise) are read as NaN, i.e. missing. A Forest is immutable:
    derived tables (the C struct, PG²'s split boundaries) are cached by the modules that use them,
    keyed on the Forest.
    """

    left_child: np.ndarray
    right_child: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray
    tree_offset: np.ndarray
    tree_target: np.ndarray
    base_score: np.ndarray
    n_features: int
    split_rule: str                      # "le" or "lt"
    input_float32: bool
    aggregate: str                       # "sum" or "mean"
    task: str                            # "regression" or "classification"
    output_space: str                    # "raw", "margin" or "probability"
    model_type: str
    impurity: np.ndarray | None = None
    weight: np.ndarray | None = None     # weighted samples per node (sklearn), when known
    feature_names: list[str] | None = None
    output_names: list[str] = field(default_factory=lambda: ["output"])
    predict_fn: Callable | None = None   # the model's own predictor, in output_space
    zero_threshold: float = 0.0          # inputs with |x| <= zero_threshold are read as 0 (LightGBM)
    objective: str | None = None         # the training objective, when the library records one
    missing_value: float = float("nan")  # inputs equal to it (in float32) are missing, as NaN is (XGBoost)
    leaf_width: int = field(init=False)
    n_outputs: int = field(init=False)
    n_trees: int = field(init=False)
    n_nodes: int = field(init=False)
    n_leaves: int = field(init=False)
    max_depth: int = field(init=False)

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        n = len(self.left_child)
        for name, dtype in _ARRAY_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                put(name, _read_only(np.atleast_1d(value) if name == "base_score" else value, dtype))
        feature = self.feature.copy()
        threshold = self.threshold.copy()
        is_leaf = self.left_child < 0
        feature[is_leaf] = 0
        threshold[is_leaf] = 0.0
        put("feature", _read_only(feature, np.int32))
        put("threshold", _read_only(threshold, np.float64))
        put("value", _read_only(np.asarray(self.value, dtype=np.float64).reshape(n, -1), np.float64))
        for name in ("right_child", "feature", "threshold", "missing_left"):
            if len(getattr(self, name)) != n:
                raise InputError(f"Forest.{name} has {len(getattr(self, name))} entries, expected {n}")
        if self.tree_offset[-1] != n or len(self.tree_target) != len(self.tree_offset) - 1:
            raise InputError("Forest.tree_offset / tree_target do not match the node arrays")
        if self.feature_names is not None:
            put("feature_names", [str(c) for c in self.feature_names])
        put("output_names", [str(c) for c in self.output_names])
        put("missing_value", float(self.missing_value))
        put("leaf_width", self.value.shape[1])
        put("n_outputs", len(self.base_score))
        put("n_trees", len(self.tree_offset) - 1)
        put("n_nodes", n)
        put("n_leaves", int(is_leaf.sum()))
        put("max_depth", _max_depth(self.left_child, self.right_child, self.tree_offset))
        from . import _native  # validates the structure in C once, at import time

        _native.validate(self)

    def __repr__(self):
        return (f"Forest({self.model_type}, {self.n_trees} trees, {self.n_leaves} leaves, "
                f"{self.n_features} features, outputs {self.output_names} in {self.output_space} space)")

    @property
    def split_features(self) -> np.ndarray:
        """Boolean (n_features,): features that some internal node splits on."""
        used = np.zeros(self.n_features, dtype=bool)
        used[self.feature[self.left_child >= 0]] = True
        return used

    def rows(self, X, *, what: str = "X", allow_nan: bool = True) -> tuple[np.ndarray, list[str]]:
        """``X`` as float64 rows in this model's feature order and the feature names (a DataFrame
        is aligned by column name; see :func:`xai_plugins._validation.model_rows`); entries equal to
        ``missing_value`` become NaN."""
        return model_rows(X, self.feature_names, self.n_features, what=what, allow_nan=allow_nan,
                          missing=self.missing_value)

    def predict(self, X) -> np.ndarray:
        """Model output in ``output_space`` computed by the C core, shape (n, n_outputs)."""
        from . import _native

        return _native.predict(self, self.rows(X)[0])


class ModelPredictor:
    """The fitted model's own predictor in a Forest's output space: ``predictor(X) -> (n, k)``.

    Holds the model weakly (the import cache must not keep models alive), so it raises
    :class:`~xai_plugins.errors.ModelGoneError` once the model has been garbage-collected.
    ``predict(model, X)`` is called with rows in the model's feature order; models fitted on a
    DataFrame get one with their own column names.
    """

    def __init__(self, model, predict: Callable):
        self._model = weakref.ref(model)
        self._predict = predict
        self._names = model_feature_names(model) if getattr(model, "feature_names_in_", None) is not None else None

    def __call__(self, X) -> np.ndarray:
        model = self._model()
        if model is None:
            raise ModelGoneError("the model this Forest was imported from no longer exists; keep a reference "
                                 "to the fitted model (Monte Carlo estimates call its own predictor)")
        X = np.asarray(X, dtype=np.float64)
        if self._names is not None:
            import pandas as pd

            X = pd.DataFrame(X, columns=self._names)
        return np.asarray(self._predict(model, X), dtype=np.float64).reshape(len(X), -1)


def tree_levels(left, right, offsets, *, strict: bool = False):
    """Breadth-first walk of every tree at once: yields, level by level from the roots, the global ids
    of the nodes reached, their tree indices and which of them are internal. A child out of its tree's
    range, the root, or a node reached before is not followed (``strict``: raises
    :class:`~xai_plugins.errors.ModelStructureError`; otherwise the C validator reports such trees)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    tree = np.flatnonzero(offsets[:-1] < offsets[1:])
    ids = offsets[tree]
    slot = np.full(len(left), -1, dtype=np.int32 if len(left) < 2**31 else np.int64)   # >= 0: reached
    slot[ids] = 0
    while len(ids):
        inner = left[ids] >= 0
        yield ids, tree, inner
        ids, tree = ids[inner], tree[inner]
        base = offsets[tree]
        kids = np.concatenate((left[ids] + base, right[ids] + base))
        tree = np.concatenate((tree, tree))
        base = np.concatenate((base, base))
        keep = (kids > base) & (kids < offsets[tree + 1])
        keep[keep] = slot[kids[keep]] < 0
        if strict and not keep.all():
            raise ModelStructureError("the model's trees are not binary trees rooted at node 0 (a child out "
                                      "of range or reached twice)")
        kids, tree = kids[keep], tree[keep]
        first = np.arange(len(kids), dtype=slot.dtype)
        slot[kids] = first                      # one of repeated kids (a node reached twice) keeps its slot
        keep = slot[kids] == first
        if strict and not keep.all():
            raise ModelStructureError("the model's trees are not binary trees (a node reached twice)")
        ids, tree = kids[keep], tree[keep]


def _max_depth(left, right, offsets) -> int:
    """Deepest root-to-leaf edge count. Malformed trees (a node reached twice: a cycle or a shared
    child; an index out of range) are walked no further here: the C validator reports them."""
    best = 0
    for depth, (_, _, inner) in enumerate(tree_levels(left, right, offsets)):
        if not inner.all():
            best = depth
    return best


def _preorder(left, right, offsets) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Renumber the nodes reachable from each tree's root in preorder (node, left subtree, right
    subtree; unused slots dropped), vectorised over all trees. ``left`` / ``right`` hold local child
    ids (-1 for a leaf). Returns (the old global id of each new node, the new tree offsets, and the
    new left and right children, local to their tree)."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    levels = list(tree_levels(left, right, offsets, strict=True))
    size = np.ones(len(left), dtype=np.int64)             # nodes in the subtree
    for ids, tree, inner in reversed(levels):
        g, base = ids[inner], offsets[tree[inner]]
        size[g] += size[left[g] + base] + size[right[g] + base]
    position = np.zeros(len(left), dtype=np.int64)        # preorder position in its tree
    for ids, tree, inner in levels:
        g, base = ids[inner], offsets[tree[inner]]
        position[left[g] + base] = position[g] + 1
        position[right[g] + base] = position[g] + 1 + size[left[g] + base]
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    new_offsets[1:] = np.cumsum(np.where(offsets[:-1] < offsets[1:], size[np.minimum(offsets[:-1], len(left) - 1)], 0))
    reached = np.concatenate([ids for ids, _, _ in levels])
    tree = np.concatenate([tree for _, tree, _ in levels])
    order = np.empty(len(reached), dtype=np.int64)
    order[new_offsets[tree] + position[reached]] = reached
    local = np.full(len(left), -1, dtype=np.int64)
    local[reached] = position[reached]
    base = np.repeat(offsets[:-1], np.diff(new_offsets))
    l_old, r_old = left[order], right[order]
    new_left = np.where(l_old >= 0, local[np.maximum(l_old, 0) + base], -1)
    new_right = np.where(r_old >= 0, local[np.maximum(r_old, 0) + base], -1)
    return order, new_offsets, new_left, new_right


def _concat(trees: list[dict], **common) -> Forest:
    """Build a Forest from per-tree dicts of local arrays (left, right, feature, threshold,
    missing_left, value, target and optional impurity / weight), each concatenated once into its
    Forest dtype."""
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t["left"]) for t in trees])

    def cat(key, dtype):
        return np.concatenate([np.asarray(t[key]).reshape(len(t["left"]), -1) for t in trees],
                              dtype=dtype, casting="unsafe")

    impurity = cat("impurity", np.float64).ravel() if all("impurity" in t for t in trees) else None
    weight = cat("weight", np.float64).ravel() if all("weight" in t for t in trees) else None
    return Forest(
        left_child=cat("left", np.int32).ravel(), right_child=cat("right", np.int32).ravel(),
        feature=cat("feature", np.int32).ravel(), threshold=cat("threshold", np.float64).ravel(),
        missing_left=cat("missing_left", np.uint8).ravel(), value=cat("value", np.float64),
        tree_offset=offsets, tree_target=np.array([t.get("target", 0) for t in trees]),
        impurity=impurity, weight=weight, **common)


# ----------------------------------------------------------------------------- scikit-learn

def _sklearn_tree(est, value, target=0) -> dict:
    tree = est.tree_
    if getattr(tree, "n_categorical_splits", 0) or np.any(getattr(tree, "is_categorical", False)):
        raise UnsupportedModelError("categorical splits are not supported; only numeric thresholds are")
    missing = getattr(tree, "missing_go_to_left", None)
    if missing is None:
        missing = np.zeros(tree.node_count, dtype=np.uint8)
    return dict(left=tree.children_left, right=tree.children_right, feature=tree.feature,
                threshold=tree.threshold, missing_left=missing, value=value, target=target,
                impurity=tree.impurity, weight=tree.weighted_n_node_samples)


def _sklearn_predict(model, X):
    return model.predict(X)


def _sklearn_proba(model, X):
    return model.predict_proba(X)


def _sklearn_decision(model, X):
    return model.decision_function(X)


def _sklearn_hgb_raw(model, X):
    return model._raw_predict(X)


def _import_sklearn(model) -> Forest:
    from sklearn import ensemble, tree

    name = type(model).__name__
    common = dict(n_features=int(model.n_features_in_), split_rule="le", input_float32=True,
                  feature_names=model_feature_names(model), model_type=f"sklearn.{name}")
    is_clf = hasattr(model, "classes_")
    if isinstance(model, (tree.BaseDecisionTree, ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
                          ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor)):
        estimators = [model] if isinstance(model, tree.BaseDecisionTree) else model.estimators_
        if is_clf:
            if model.n_outputs_ != 1:
                raise UnsupportedModelError(f"{name} with several outputs is not supported")
            trees = [_sklearn_tree(e, e.tree_.value[:, 0, :]) for e in estimators]
            k = len(model.classes_)
            return _concat(trees, base_score=np.zeros(k), aggregate="mean", task="classification",
                           output_space="probability", output_names=[str(c) for c in model.classes_],
                           predict_fn=ModelPredictor(model, _sklearn_proba), **common)
        trees = [_sklearn_tree(e, e.tree_.value[:, :, 0]) for e in estimators]
        k = model.n_outputs_
        return _concat(trees, base_score=np.zeros(k), aggregate="mean", task="regression", output_space="raw",
                       output_names=["output"] if k == 1 else [f"output_{o}" for o in range(k)],
                       predict_fn=ModelPredictor(model, _sklearn_predict), **common)
    if isinstance(model, (ensemble.GradientBoostingRegressor, ensemble.GradientBoostingClassifier)):
        _check_constant_init(model)
        rate = model.learning_rate
        trees = [_sklearn_tree(e, e.tree_.value[:, 0, 0] * rate, target=k)
                 for row in model.estimators_ for k, e in enumerate(row)]
        base = np.asarray(model._raw_predict_init(np.zeros((1, model.n_features_in_), dtype=np.float32)),
                          dtype=np.float64).ravel()
        if is_clf:
            outputs = ["margin"] if len(model.classes_) == 2 else [str(c) for c in model.classes_]
            return _concat(trees, base_score=base, aggregate="sum", task="classification", output_space="margin",
                           output_names=outputs,
                           predict_fn=ModelPredictor(model, _sklearn_decision), **common)
        return _concat(trees, base_score=base, aggregate="sum", task="regression", output_space="raw",
                       predict_fn=ModelPredictor(model, _sklearn_predict), **common)
    if isinstance(model, (ensemble.HistGradientBoostingRegressor, ensemble.HistGradientBoostingClassifier)):
        return _import_sklearn_hgb(model, is_clf, common)
    raise UnsupportedModelError(f"unsupported scikit-learn model {name}; supported: {SUPPORTED_MODELS}")


def _check_constant_init(model) -> None:
    """UnsupportedModelError unless a GradientBoosting model's ``init`` gives a constant baseline
    ("zero", or scikit-learn's Dummy estimators, whose prediction does not depend on x)."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    init = model.init_
    constant = (isinstance(init, str) and init == "zero") or isinstance(init, DummyRegressor) or (
        isinstance(init, DummyClassifier) and init.strategy != "stratified")
    if not constant:
        raise UnsupportedModelError(
            f"{type(model).__name__} with init={init!r} is not supported: its initial prediction varies with "
            "x, so the model is not a sum of leaf values; refit with init=None, init='zero', or a constant "
            "init (DummyRegressor / DummyClassifier, not strategy='stratified')")


def _import_sklearn_hgb(model, is_clf, common) -> Forest:
    trees = []
    for row in model._predictors:
        for k, predictor in enumerate(row):
            nodes = predictor.nodes
            if np.any(nodes["is_categorical"]):
                raise UnsupportedModelError("HistGradientBoosting categorical splits are not supported; "
                                            "only numeric thresholds are")
            leaf = nodes["is_leaf"].astype(bool)
            trees.append(dict(left=np.where(leaf, -1, nodes["left"]), right=np.where(leaf, -1, nodes["right"]),
                              feature=nodes["feature_idx"], threshold=nodes["num_threshold"],
                              missing_left=nodes["missing_go_to_left"], value=nodes["value"], target=k))
    base = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
    common = {**common, "input_float32": False}
    raw = ModelPredictor(model, _sklearn_hgb_raw)
    if is_clf:
        outputs = ["margin"] if len(model.classes_) == 2 else [str(c) for c in model.classes_]
        return _concat(trees, base_score=base, aggregate="sum", task="classification", output_space="margin",
                       output_names=outputs, predict_fn=raw, **common)
    return _concat(trees, base_score=base, aggregate="sum", task="regression", output_space="raw",
                   predict_fn=raw, **common)


# ----------------------------------------------------------------------------- XGBoost

def _parse_floats(text) -> np.ndarray:
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


# UBJSON number markers -> big-endian struct and numpy codes (the format stores numbers big-endian)
_UBJ_NUMBERS = {ord(marker): code for marker, code in
                {"i": ">b", "U": ">B", "I": ">h", "l": ">i", "L": ">q", "d": ">f", "D": ">d"}.items()}
_UBJ_STRUCTS = {marker: struct.Struct(code) for marker, code in _UBJ_NUMBERS.items()}
_UBJ_CONSTANTS = {ord("T"): True, ord("F"): False, ord("Z"): None}


def _ubjson(data: bytes):
    """Decode the UBJSON document of XGBoost's ``save_raw(raw_format="ubj")``: objects as dicts, typed
    arrays (``[$d#…``) as numpy arrays read straight from the bytes (exact: float32 thresholds keep
    their bits), other arrays as lists."""
    buf = bytes(data)
    STRING, ARRAY, OBJECT, END_ARRAY, END_OBJECT, TYPE, COUNT = map(ord, "S[{]}$#")

    def length(pos: int) -> tuple[int, int]:
        packed = _UBJ_STRUCTS[buf[pos]]
        return packed.unpack_from(buf, pos + 1)[0], pos + 1 + packed.size

    def value(pos: int, marker: int):
        packed = _UBJ_STRUCTS.get(marker)
        if packed is not None:
            return packed.unpack_from(buf, pos)[0], pos + packed.size
        if marker in _UBJ_CONSTANTS:
            return _UBJ_CONSTANTS[marker], pos
        if marker == STRING:
            n, pos = length(pos)
            return buf[pos:pos + n].decode(), pos + n
        if marker != ARRAY and marker != OBJECT:
            raise UnsupportedModelError(f"unexpected UBJSON marker {chr(marker)!r} in the XGBoost model")
        kind = count = None
        if buf[pos] == TYPE:
            kind, pos = buf[pos + 1], pos + 2
        if buf[pos] == COUNT:
            count, pos = length(pos + 1)
        if marker == ARRAY and kind in _UBJ_NUMBERS:        # a typed array: one numpy read
            dtype = np.dtype(_UBJ_NUMBERS[kind])
            out = np.frombuffer(buf, dtype=dtype, count=count, offset=pos)
            return out.astype(dtype.newbyteorder("=")), pos + count * dtype.itemsize
        items: list = []
        names: list = []
        while len(items) != count and (count is not None or buf[pos] not in (END_ARRAY, END_OBJECT)):
            if marker == OBJECT:
                n, pos = length(pos)
                names.append(buf[pos:pos + n].decode())
                pos += n
            if kind is None:
                item, pos = value(pos + 1, buf[pos])
            else:
                item, pos = value(pos, kind)
            items.append(item)
        pos += count is None                                     # the closing ] or }
        return (dict(zip(names, items)) if marker == OBJECT else items), pos

    return value(1, buf[0])[0]


def _import_xgboost(model) -> Forest:
    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not isinstance(booster, xgboost.Booster):
        raise UnsupportedModelError(f"unsupported model {type(model).__name__}; supported: {SUPPORTED_MODELS}")
    doc = _ubjson(booster.save_raw(raw_format="ubj"))
    learner = doc["learner"]
    gb = learner["gradient_booster"]
    if gb["name"] != "gbtree":
        raise UnsupportedModelError(f"XGBoost booster '{gb['name']}' is not supported; only gbtree is")
    params = learner["learner_model_param"]
    n_class = int(params.get("num_class", "0"))
    n_target = int(params.get("num_target", "1"))
    n_outputs = max(n_class, n_target, 1)
    objective = learner["objective"]["name"]
    base = _parse_floats(params["base_score"])
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
    base = np.broadcast_to(base, (n_outputs,)).copy()
    tree_info = np.asarray(gb["model"]["tree_info"], dtype=np.int64)
    rounds = _xgboost_rounds(model)
    n_used = len(tree_info) if rounds is None else int(gb["model"]["iteration_indptr"][rounds])
    trees = gb["model"]["trees"][:n_used]
    if not trees:
        raise UnsupportedModelError("the XGBoost model has no trees")
    if any(int(tree["tree_param"].get("size_leaf_vector", "1")) > 1 for tree in trees):
        raise UnsupportedModelError("XGBoost vector-leaf trees (multi_strategy='multi_output_tree') "
                                    "are not supported")

    def cat(key):
        return np.concatenate([np.asarray(tree.get(key, ()), dtype=np.float64 if key == "split_conditions"
                                          else np.int64) for tree in trees])

    if np.any(cat("split_type") != 0):
        raise UnsupportedModelError("XGBoost categorical splits (split_type 1) are not supported; "
                                    "only numeric thresholds are")
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(tree["left_children"]) for tree in trees])
    order, offsets, left, right = _preorder(cat("left_children"), cat("right_children"), offsets)
    cond = cat("split_conditions").astype(np.float32).astype(np.float64)[order]
    forest_arrays = dict(left_child=left, right_child=right, feature=cat("split_indices")[order], threshold=cond,
                         missing_left=cat("default_left")[order], value=cond, tree_offset=offsets,
                         tree_target=tree_info[:len(trees)])
    n_features = int(params.get("num_feature", "0")) or booster.num_features()
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
                   predict_fn=ModelPredictor(model, _xgboost_margin), objective=objective,
                   missing_value=model_missing_value(model))


def _xgboost_rounds(model) -> int | None:
    """Boosting rounds the model predicts with: ``best_iteration + 1`` for a scikit-learn wrapper
    fitted with early stopping (its ``predict`` stops there), else None (all rounds)."""
    if not hasattr(model, "get_booster"):
        return None
    try:
        return int(model.best_iteration) + 1
    except AttributeError:
        return None


def _xgboost_margin(model, X):
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    rounds = _xgboost_rounds(model)
    return booster.inplace_predict(np.asarray(X, dtype=np.float32), predict_type="margin",
                                   iteration_range=(0, rounds or 0), missing=model_missing_value(model))


# ----------------------------------------------------------------------------- LightGBM

# objectives whose prediction is the raw score (ConvertOutput identity; not with reg_sqrt, "... sqrt")
_LGB_IDENTITY_PREDICTION = {"regression", "regression_l1", "huber", "fair", "quantile", "mape", "lambdarank",
                            "rank_xendcg", "custom"}


def _lightgbm_numbers(trees: list[dict], key: str, dtype) -> np.ndarray:
    """The ``key=`` lists of every tree of a LightGBM model string, concatenated (parsed exactly:
    LightGBM writes doubles with 17 significant digits and ±inf as "inf" / "-inf")."""
    return np.array(" ".join(tree[key] for tree in trees).split(), dtype=dtype)


def _lightgbm_forest(text: str) -> tuple[dict, dict]:
    """The header fields and the Forest arrays of a LightGBM ``model_to_string()``: nodes renumbered
    in preorder (as ``dump_model()`` lists them); refuses linear trees, categorical splits and
    zero-as-missing splits."""
    head, _, body = text.partition("\nTree=")
    header = dict(line.split("=", 1) if "=" in line else (line, "") for line in head.splitlines())
    trees = [dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
             for block in body.partition("\nend of trees")[0].split("\nTree=")] if body else []
    if not trees:
        raise UnsupportedModelError("the LightGBM model has no trees")
    if any(tree.get("is_linear", "0") != "0" for tree in trees):
        raise UnsupportedModelError("LightGBM linear trees are not supported")
    leaves = np.array([int(tree["num_leaves"]) for tree in trees], dtype=np.int64)
    kind = _lightgbm_numbers(trees, "decision_type", np.int64)
    if np.any(kind & 1):
        raise UnsupportedModelError("LightGBM categorical splits are not supported; only numeric thresholds are")
    missing = (kind >> 2) & 3                             # 0: None, 1: Zero, 2: NaN
    if np.any(missing == 1):
        raise UnsupportedModelError("LightGBM splits with zero_as_missing (missing_type 'Zero') are not supported")
    # local ids: the tree's num_leaves - 1 internal nodes, then its leaves (LightGBM's child ~j is leaf j)
    inner = leaves - 1
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(inner + leaves)
    is_inner = np.arange(offsets[-1]) - np.repeat(offsets[:-1], inner + leaves) < np.repeat(inner, inner + leaves)
    n_inner = np.repeat(inner, inner)
    left = np.full(offsets[-1], -1, dtype=np.int64)
    right = left.copy()
    for side, key in ((left, "left_child"), (right, "right_child")):
        child = _lightgbm_numbers(trees, key, np.int64)
        side[is_inner] = np.where(child >= 0, child, n_inner + ~child)
    threshold = np.zeros(offsets[-1])
    threshold[is_inner] = _lightgbm_numbers(trees, "threshold", np.float64)
    feature = np.zeros(offsets[-1], dtype=np.int64)
    feature[is_inner] = _lightgbm_numbers(trees, "split_feature", np.int64)
    missing_left = np.zeros(offsets[-1], dtype=np.uint8)
    # missing_type None: LightGBM replaces NaN by 0.0 and compares
    missing_left[is_inner] = np.where(missing == 2, (kind >> 1) & 1, 0.0 <= threshold[is_inner])
    value = np.zeros(offsets[-1])
    value[~is_inner] = _lightgbm_numbers(trees, "leaf_value", np.float64)
    order, offsets, left, right = _preorder(left, right, offsets)
    per_iteration = int(header.get("num_tree_per_iteration", "1"))
    return header, dict(left_child=left, right_child=right, feature=feature[order], threshold=threshold[order],
                        missing_left=missing_left[order], value=value[order], tree_offset=offsets,
                        tree_target=np.arange(len(trees)) % per_iteration)


def _import_lightgbm(model) -> Forest:
    import lightgbm

    booster = model.booster_ if hasattr(model, "booster_") else model
    if not isinstance(booster, lightgbm.Booster):
        raise UnsupportedModelError(f"unsupported model {type(model).__name__}; supported: {SUPPORTED_MODELS}")
    header, arrays = _lightgbm_forest(booster.model_to_string())
    per_iteration = int(header.get("num_tree_per_iteration", "1"))
    objective_words = header.get("objective", "custom").split()  # no key: a custom objective
    objective = objective_words[0]
    task = "classification" if objective in ("binary", "multiclass", "multiclassova", "cross_entropy") \
        else "regression"
    n_outputs = per_iteration
    if task == "classification":
        outputs = ["margin"] if n_outputs == 1 else [f"class_{k}" for k in range(n_outputs)]
    else:
        outputs = ["output"] if n_outputs == 1 else [f"output_{k}" for k in range(n_outputs)]
    # boosting="rf": the margin is (sum over an output's trees) / n_iter, but predict(raw_score=True)
    # returns the plain sum (LightGBM divides only before applying its link)
    mean = "average_output" in header
    n_iter = len(arrays["tree_target"]) // per_iteration
    return Forest(**arrays, base_score=np.zeros(n_outputs), n_features=int(header["max_feature_idx"]) + 1,
                  split_rule="le", input_float32=False, aggregate="mean" if mean else "sum", task=task,
                  output_space="raw" if objective in _LGB_IDENTITY_PREDICTION and "sqrt" not in objective_words
                  else "margin", model_type=f"lightgbm.{type(model).__name__}",
                  feature_names=model_feature_names(model), output_names=outputs,
                  predict_fn=ModelPredictor(model, functools.partial(_lightgbm_raw, n_iter=n_iter, mean=mean)),
                  zero_threshold=LIGHTGBM_ZERO_THRESHOLD,
                  objective=objective)


def _lightgbm_raw(model, X, n_iter, mean):
    booster = model.booster_ if hasattr(model, "booster_") else model
    raw = booster.predict(np.asarray(X, dtype=np.float64), raw_score=True, num_iteration=n_iter)
    return raw / n_iter if mean else raw


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
