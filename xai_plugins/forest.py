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

import json
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._validation import check_is_fitted

SUPPORTED_MODELS = (
    "xgboost Booster/XGBRegressor/XGBClassifier (gbtree), scikit-learn DecisionTree*, RandomForest*, "
    "ExtraTrees*, GradientBoosting*, HistGradientBoosting*, lightgbm Booster/LGBMRegressor/LGBMClassifier"
)


class UnsupportedModelError(TypeError):
    """The model type, objective or split kind cannot be represented as a numeric tree ensemble."""


@dataclass
class Forest:
    """A tree ensemble as flat arrays (see ``csrc/xai.h`` for the meaning of every field).

    ``value`` has shape (n_nodes, leaf_width); a tree adds its leaf values to outputs
    ``tree_target[t] .. tree_target[t] + leaf_width - 1``; the model output is
    ``base_score + sum`` (boosting) or ``base_score + mean`` (forests) over trees, in
    ``output_space`` ("raw" regression output, "margin" for boosted classifiers, "probability"
    for forest classifiers).
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
    model: object = None

    def __post_init__(self):
        self.left_child = np.ascontiguousarray(self.left_child, dtype=np.int32)
        self.right_child = np.ascontiguousarray(self.right_child, dtype=np.int32)
        self.feature = np.ascontiguousarray(self.feature, dtype=np.int32)
        self.threshold = np.ascontiguousarray(self.threshold, dtype=np.float64)
        self.missing_left = np.ascontiguousarray(self.missing_left, dtype=np.uint8)
        value = np.asarray(self.value, dtype=np.float64)
        self.value = np.ascontiguousarray(value.reshape(len(self.left_child), -1))
        self.tree_offset = np.ascontiguousarray(self.tree_offset, dtype=np.int64)
        self.tree_target = np.ascontiguousarray(self.tree_target, dtype=np.int32)
        self.base_score = np.ascontiguousarray(np.atleast_1d(self.base_score), dtype=np.float64)
        if self.impurity is not None:
            self.impurity = np.ascontiguousarray(self.impurity, dtype=np.float64)
        n = len(self.left_child)
        for name in ("right_child", "feature", "threshold", "missing_left"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"Forest.{name} has {len(getattr(self, name))} entries, expected {n}")
        if self.tree_offset[-1] != n or len(self.tree_target) != len(self.tree_offset) - 1:
            raise ValueError("Forest.tree_offset / tree_target do not match the node arrays")
        is_leaf = self.left_child < 0
        self.feature[is_leaf] = 0
        self.threshold[is_leaf] = 0.0
        self.leaf_width = self.value.shape[1]
        self.n_outputs = len(self.base_score)
        self.n_trees = len(self.tree_offset) - 1
        self.n_nodes = n
        self.n_leaves = int(is_leaf.sum())
        self.max_depth = _max_depth(self.left_child, self.right_child, self.tree_offset)
        self._boundaries()
        from . import _native  # validates the structure in C once, at import time

        _native.validate(self)

    def _boundaries(self):
        """Per feature, the sorted distinct real split boundaries b such that the model sends a real
        x left iff x < b (up to a null set), and each node's 1-based rank among them."""
        internal = self.left_child >= 0
        t = self.threshold[internal]
        if self.input_float32:
            # the model compares float32(x): left iff float32(x) <= a, where a is the largest
            # float32 obeying the rule against t; float32(x) <= a iff x < midpoint(a, next float32)
            a = t.astype(np.float32)
            obeys = (lambda v: v < t) if self.split_rule == "lt" else (lambda v: v <= t)
            a = np.where(obeys(a.astype(np.float64)), a, np.nextafter(a, np.float32(-np.inf)))
            up = np.nextafter(a, np.float32(np.inf))
            a = np.where(obeys(up.astype(np.float64)), up, a)
            b = (a.astype(np.float64) + np.nextafter(a, np.float32(np.inf)).astype(np.float64)) / 2.0
        else:
            b = t.copy()
        boundary = np.zeros(self.n_nodes)
        boundary[internal] = b
        rank = np.zeros(self.n_nodes, dtype=np.int32)
        self.boundaries = []
        offsets = [0]
        feat = self.feature[internal]
        for j in range(self.n_features):
            values = np.unique(b[feat == j])
            self.boundaries.append(values)
            offsets.append(offsets[-1] + len(values) + 2)
        idx = np.flatnonzero(internal)
        for j in range(self.n_features):
            sel = idx[feat == j]
            rank[sel] = np.searchsorted(self.boundaries[j], boundary[sel]) + 1
        self.threshold_rank = rank
        self.cdf_offset = np.asarray(offsets, dtype=np.int64)

    @property
    def split_features(self) -> np.ndarray:
        """Boolean (n_features,): features that some internal node splits on."""
        used = np.zeros(self.n_features, dtype=bool)
        used[self.feature[self.left_child >= 0]] = True
        return used

    def predict(self, X) -> np.ndarray:
        """Model output in ``output_space`` computed by the C core, shape (n, n_outputs)."""
        from . import _native
        from ._validation import check_matrix

        return _native.predict(self, check_matrix(X, n_features=self.n_features, allow_nan=True))


def _max_depth(left, right, offsets) -> int:
    depth = np.zeros(len(left), dtype=np.int64)
    best = 0
    for t in range(len(offsets) - 1):
        base = offsets[t]
        stack = [0]
        while stack:
            k = stack.pop()
            g = base + k
            if left[g] >= 0:
                for child in (left[g], right[g]):
                    if 0 < child < offsets[t + 1] - base:
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


def _import_sklearn(model) -> Forest:
    from sklearn import ensemble, tree

    check_is_fitted(model)
    name = type(model).__name__
    names = [str(c) for c in getattr(model, "feature_names_in_", [])] or None
    common = dict(n_features=int(model.n_features_in_), split_rule="le", input_float32=True,
                  feature_names=names, model_type=f"sklearn.{name}", model=model)
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
                           predict_fn=model.predict_proba, **common)
        trees = [_sklearn_tree(e, e.tree_.value[:, :, 0]) for e in estimators]
        k = model.n_outputs_
        return _concat(trees, base_score=np.zeros(k), aggregate="mean", task="regression", output_space="raw",
                       output_names=["output"] if k == 1 else [f"output_{o}" for o in range(k)],
                       predict_fn=lambda X: np.asarray(model.predict(X)).reshape(len(X), -1), **common)
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
                           predict_fn=lambda X: np.asarray(model.decision_function(X)).reshape(len(X), -1), **common)
        return _concat(trees, base_score=base, aggregate="sum", task="regression", output_space="raw",
                       predict_fn=lambda X: np.asarray(model.predict(X)).reshape(len(X), -1), **common)
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
    raw = lambda X: np.asarray(model._raw_predict(np.asarray(X, dtype=np.float64))).reshape(len(X), -1)  # noqa: E731
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


_LOGIT_OBJECTIVES = {"binary:logistic", "reg:logistic", "binary:hinge"}
_LOG_OBJECTIVES = {"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft"}


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
    if objective in _LOGIT_OBJECTIVES:
        base = np.log(base / (1.0 - base))
    elif objective in _LOG_OBJECTIVES:
        base = np.log(base)
    base = np.broadcast_to(base, (n_outputs,)).copy()
    trees = []
    tree_info = gb["model"]["tree_info"]
    for t, tree in enumerate(gb["model"]["trees"]):
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
    names = booster.feature_names
    task = "classification" if objective.startswith(("binary:", "multi:")) else "regression"
    if task == "classification":
        outputs = ["margin"] if n_outputs == 1 else [f"class_{k}" for k in range(n_outputs)]
    else:
        outputs = ["output"] if n_outputs == 1 else [f"output_{k}" for k in range(n_outputs)]

    def margin(X):
        out = booster.inplace_predict(np.asarray(X, dtype=np.float32), predict_type="margin")
        return np.asarray(out, dtype=np.float64).reshape(len(X), -1)

    return _concat(trees, base_score=base, n_features=n_features, split_rule="lt", input_float32=True,
                   aggregate="sum", task=task, output_space="raw" if task == "regression" and objective
                   not in _LOG_OBJECTIVES else "margin", model_type=f"xgboost.{type(model).__name__}",
                   feature_names=list(names) if names else None, output_names=outputs, predict_fn=margin,
                   model=model)


# ----------------------------------------------------------------------------- LightGBM

def _import_lightgbm(model) -> Forest:
    import lightgbm

    booster = model.booster_ if hasattr(model, "booster_") else model
    if not isinstance(booster, lightgbm.Booster):
        raise UnsupportedModelError(f"unsupported model {type(model).__name__}; supported: {SUPPORTED_MODELS}")
    dump = booster.dump_model()
    per_iteration = int(dump.get("num_tree_per_iteration", 1))
    trees = []
    for t, info in enumerate(dump["tree_info"]):
        left, right, feature, threshold, missing, value = [], [], [], [], [], []

        def visit(node):
            k = len(left)
            for lst, v in ((left, -1), (right, -1), (feature, 0), (threshold, 0.0), (missing, 0), (value, 0.0)):
                lst.append(v)
            if "leaf_value" in node or "split_index" not in node:
                if "leaf_coeff" in node or node.get("is_linear"):
                    raise UnsupportedModelError("LightGBM linear trees are not supported")
                value[k] = float(node.get("leaf_value", 0.0))
                return k
            if node["decision_type"] != "<=":
                raise UnsupportedModelError("LightGBM categorical splits are not supported; "
                                            "only numeric thresholds are")
            kind = node.get("missing_type", "None")
            if kind == "Zero":
                raise UnsupportedModelError("LightGBM splits with zero_as_missing (missing_type 'Zero') "
                                            "are not supported")
            thr = float(node["threshold"])
            feature[k], threshold[k] = int(node["split_feature"]), thr
            # missing_type None: LightGBM replaces NaN by 0.0 and compares
            missing[k] = int(node["default_left"]) if kind == "NaN" else int(0.0 <= thr)
            left[k] = visit(node["left_child"])
            right[k] = visit(node["right_child"])
            return k

        visit(info["tree_structure"])
        trees.append(dict(left=left, right=right, feature=feature, threshold=threshold, missing_left=missing,
                          value=value, target=t % per_iteration))
    if not trees:
        raise UnsupportedModelError("the LightGBM model has no trees")
    objective = str(dump.get("objective", "regression")).split()[0]
    task = "classification" if objective in ("binary", "multiclass", "multiclassova", "cross_entropy") \
        else "regression"
    n_outputs = per_iteration
    if task == "classification":
        outputs = ["margin"] if n_outputs == 1 else [f"class_{k}" for k in range(n_outputs)]
    else:
        outputs = ["output"] if n_outputs == 1 else [f"output_{k}" for k in range(n_outputs)]
    mean = bool(dump.get("average_output", False))

    def raw(X):
        return np.asarray(booster.predict(np.asarray(X, dtype=np.float64), raw_score=True),
                          dtype=np.float64).reshape(len(X), -1)

    return _concat(trees, base_score=np.zeros(n_outputs), n_features=int(dump["max_feature_idx"]) + 1,
                   split_rule="le", input_float32=False, aggregate="mean" if mean else "sum", task=task,
                   output_space="raw" if task == "regression" and objective in ("regression", "regression_l1",
                                                                                 "huber", "fair", "quantile")
                   else "margin",
                   model_type=f"lightgbm.{type(model).__name__}", feature_names=list(dump.get("feature_names", []))
                   or None, output_names=outputs, predict_fn=raw, model=model)


def import_model(model) -> Forest:
    """Import a fitted tree ensemble into a :class:`Forest` (a Forest is returned as is).

    Raises :class:`UnsupportedModelError` for other model types, categorical splits, linear
    trees or vector leaves, and sklearn's ``NotFittedError`` for an unfitted estimator.
    """
    if isinstance(model, Forest):
        return model
    module = type(model).__module__.split(".")[0]
    if module == "sklearn":
        return _import_sklearn(model)
    if module == "xgboost":
        check_is_fitted(model)
        return _import_xgboost(model)
    if module == "lightgbm":
        check_is_fitted(model)
        return _import_lightgbm(model)
    raise UnsupportedModelError(f"unsupported model type {type(model).__module__}.{type(model).__name__}; "
                                f"supported: {SUPPORTED_MODELS}")
