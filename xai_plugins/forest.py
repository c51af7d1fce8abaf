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
import json
import weakref
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._validation import check_is_fitted, model_feature_names, model_rows
from .errors import InputError, ModelGoneError, UnsupportedModelError

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
    in that space (it holds the model weakly). A Forest is immutable: derived tables (the C struct,
    PG²'s split boundaries) are cached by the modules that use them, keyed on the Forest.
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
        is aligned by column name; see :func:`xai_plugins._validation.model_rows`)."""
        return model_rows(X, self.feature_names, self.n_features, what=what, allow_nan=allow_nan)

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


def _max_depth(left, right, offsets) -> int:
    """Deepest root-to-leaf edge count. Malformed trees (a node reached twice: a cycle or a shared
    child; an index out of range) are walked no further here: the C validator reports them."""
    depth = np.zeros(len(left), dtype=np.int64)
    seen = np.zeros(len(left), dtype=bool)
    best = 0
    for t in range(len(offsets) - 1):
        base = offsets[t]
        stack = [0]
        while stack:
            k = stack.pop()
            g = base + k
            if left[g] >= 0:
                for child in (left[g], right[g]):
                    if 0 < child < offsets[t + 1] - base and not seen[base + child]:
                        seen[base + child] = True
                        depth[base + child] = depth[g] + 1
                        stack.append(child)
            else:
                best = max(best, int(depth[g]))
    return best


def _concat(trees: list[dict], **common) -> Forest:
    """Build a Forest from per-tree dicts of local arrays (left, right, feature, threshold,
    missing_left, value, target and optional impurity / weight)."""
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t["left"]) for t in trees])

    def cat(key):
        return np.concatenate([np.asarray(t[key]) for t in trees])

    impurity = cat("impurity") if all("impurity" in t for t in trees) else None
    weight = cat("weight") if all("weight" in t for t in trees) else None
    return Forest(
        left_child=cat("left"), right_child=cat("right"), feature=cat("feature"),
        threshold=cat("threshold"), missing_left=cat("missing_left"),
        value=np.concatenate([np.asarray(t["value"], dtype=np.float64).reshape(len(t["left"]), -1) for t in trees]),
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


def _compact_tree(left, right) -> np.ndarray:
    """Local ids of the nodes reachable from the root, in preorder (XGBoost may leave unused slots)."""
    order, stack = [], [0]
    while stack:
        k = stack.pop()
        order.append(k)
        if left[k] >= 0:
            stack.extend((right[k], left[k]))
    return np.asarray(order, dtype=np.int64)


def _import_xgboost(model) -> Forest:
    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not isinstance(booster, xgboost.Booster):
        raise UnsupportedModelError(f"unsupported model {type(model).__name__}; supported: {SUPPORTED_MODELS}")
    doc = json.loads(booster.save_raw(raw_format="json"))
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
    trees = []
    tree_info = gb["model"]["tree_info"]
    rounds = _xgboost_rounds(model)
    n_used = len(tree_info) if rounds is None else int(gb["model"]["iteration_indptr"][rounds])
    for t, tree in enumerate(gb["model"]["trees"][:n_used]):
        if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise UnsupportedModelError("XGBoost vector-leaf trees (multi_strategy='multi_output_tree') "
                                        "are not supported")
        if any(int(s) != 0 for s in tree.get("split_type", [])):
            raise UnsupportedModelError("XGBoost categorical splits (split_type 1) are not supported; "
                                        "only numeric thresholds are")
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        order = _compact_tree(left, right)
        new_id = np.full(len(left), -1, dtype=np.int64)
        new_id[order] = np.arange(len(order))
        l_old, r_old = left[order], right[order]
        cond = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)[order]
        trees.append(dict(left=np.where(l_old >= 0, new_id[np.maximum(l_old, 0)], -1),
                          right=np.where(r_old >= 0, new_id[np.maximum(r_old, 0)], -1),
                          feature=np.asarray(tree["split_indices"])[order], threshold=cond,
                          missing_left=np.asarray(tree["default_left"])[order], value=cond,
                          target=int(tree_info[t])))
    if not trees:
        raise UnsupportedModelError("the XGBoost model has no trees")
    n_features = int(params.get("num_feature", "0")) or booster.num_features()
    task = "classification" if objective.startswith(("binary:", "multi:")) else "regression"
    if task == "classification":
        outputs = ["margin"] if n_outputs == 1 else [f"class_{k}" for k in range(n_outputs)]
    else:
        outputs = ["output"] if n_outputs == 1 else [f"output_{k}" for k in range(n_outputs)]

    return _concat(trees, base_score=base, n_features=n_features, split_rule="lt", input_float32=True,
                   aggregate="sum", task=task,
                   output_space="raw" if objective in _XGB_IDENTITY_PREDICTION else "margin",
                   model_type=f"xgboost.{type(model).__name__}",
                   feature_names=model_feature_names(model), output_names=outputs,
                   predict_fn=ModelPredictor(model, _xgboost_margin), objective=objective)


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
                                   iteration_range=(0, rounds or 0))


# ----------------------------------------------------------------------------- LightGBM

# objectives whose prediction is the raw score (ConvertOutput identity; not with reg_sqrt, "... sqrt")
_LGB_IDENTITY_PREDICTION = {"regression", "regression_l1", "huber", "fair", "quantile", "mape", "lambdarank",
                            "rank_xendcg", "custom"}


def _lightgbm_tree(root: dict) -> dict:
    """One tree of a LightGBM ``dump_model()`` as node lists (left, right, feature, threshold,
    missing_left, value), nodes numbered in visiting order; refuses linear trees, categorical
    splits and zero-as-missing splits."""
    tree = {key: [] for key in ("left", "right", "feature", "threshold", "missing_left", "value")}
    blank = {"left": -1, "right": -1, "feature": 0, "threshold": 0.0, "missing_left": 0, "value": 0.0}

    def visit(node):
        k = len(tree["left"])
        for key, v in blank.items():
            tree[key].append(v)
        if "leaf_value" in node or "split_index" not in node:
            if "leaf_coeff" in node or node.get("is_linear"):
                raise UnsupportedModelError("LightGBM linear trees are not supported")
            tree["value"][k] = float(node.get("leaf_value", 0.0))
            return k
        if node["decision_type"] != "<=":
            raise UnsupportedModelError("LightGBM categorical splits are not supported; "
                                        "only numeric thresholds are")
        kind = node.get("missing_type", "None")
        if kind == "Zero":
            raise UnsupportedModelError("LightGBM splits with zero_as_missing (missing_type 'Zero') "
                                        "are not supported")
        thr = float(node["threshold"])
        tree["feature"][k], tree["threshold"][k] = int(node["split_feature"]), thr
        # missing_type None: LightGBM replaces NaN by 0.0 and compares
        tree["missing_left"][k] = int(node["default_left"]) if kind == "NaN" else int(0.0 <= thr)
        tree["left"][k] = visit(node["left_child"])
        tree["right"][k] = visit(node["right_child"])
        return k

    visit(root)
    return tree


def _import_lightgbm(model) -> Forest:
    import lightgbm

    booster = model.booster_ if hasattr(model, "booster_") else model
    if not isinstance(booster, lightgbm.Booster):
        raise UnsupportedModelError(f"unsupported model {type(model).__name__}; supported: {SUPPORTED_MODELS}")
    dump = booster.dump_model()
    per_iteration = int(dump.get("num_tree_per_iteration", 1))
    trees = [dict(_lightgbm_tree(info["tree_structure"]), target=t % per_iteration)
             for t, info in enumerate(dump["tree_info"])]
    if not trees:
        raise UnsupportedModelError("the LightGBM model has no trees")
    objective_words = str(dump.get("objective", "custom")).split()  # no key: a custom objective
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
    mean = bool(dump.get("average_output", False))
    n_iter = len(trees) // per_iteration
    return _concat(trees, base_score=np.zeros(n_outputs), n_features=int(dump["max_feature_idx"]) + 1,
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
    on a cheap fingerprint of its fitted state (the tree containers a refit replaces, the number of
    trees, rounds and features), so repeated calls on the same model cost microseconds and a
    refitted or reloaded model is imported again. (An XGBoost ``Booster.load_model`` into the same
    object of a model with the same number of rounds, features and names is not detected: call
    :func:`clear_model_cache` after it.)

    Raises :class:`~xai_plugins.errors.UnsupportedModelError` for other model types, objectives,
    categorical splits, linear trees or vector leaves, and :class:`~xai_plugins.errors.NotFittedError`
    (also scikit-learn's) for an unfitted estimator.
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
        token = _fingerprint(model)
        if _same_fingerprint(entry[1], token):
            return entry[2]
    check_is_fitted(model)
    token = _fingerprint(model)
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


def clear_model_cache() -> None:
    """Forget every imported model (the next call on a model imports it again)."""
    _CACHE.clear()


def _forget(cache: dict, key, ref) -> None:
    """Drop the entry of a garbage-collected model (unless the id was already reused)."""
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]


def _fingerprint(model) -> tuple:
    """(objects a refit replaces, compared by identity; scalars, compared by value)."""
    objects, values = [], [type(model)]
    library = type(model).__module__.split(".")[0]
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
        values += [booster.num_boosted_rounds(), booster.num_features()]
    elif library == "lightgbm":
        booster = getattr(model, "booster_", model)
        objects.append(booster)
        values += [booster.current_iteration(), booster.num_trees(), booster.num_feature()]
    return tuple(objects), tuple(values)


def _same_fingerprint(a, b) -> bool:
    return (len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0]))
            and len(a[1]) == len(b[1]) and all(_equal(x, y) for x, y in zip(a[1], b[1])))


def _equal(x, y) -> bool:
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return x is y
