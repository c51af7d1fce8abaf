"""The scikit-learn importer: DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*,
HistGradientBoosting* -> :class:`~xai_plugins.forest.Forest`."""

from __future__ import annotations

import numpy as np

from .._validation import model_feature_names
from ..errors import UnsupportedModelError
from .layout import CATEGORICAL_INSTEAD, SUPPORTED_MODELS, Forest, concat_trees
from .predictor import ModelPredictor


def _sklearn_tree(est, value, target=0) -> dict:
    tree = est.tree_
    if getattr(tree, "n_categorical_splits", 0) or np.any(getattr(tree, "is_categorical", False)):
        raise UnsupportedModelError("scikit-learn tree categorical splits are not supported yet: "
                                    + CATEGORICAL_INSTEAD)
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
            return concat_trees(trees, base_score=np.zeros(k), aggregate="mean", task="classification",
                           output_space="probability", output_names=[str(c) for c in model.classes_],
                           predict_fn=ModelPredictor(model, _sklearn_proba), **common)
        trees = [_sklearn_tree(e, e.tree_.value[:, :, 0]) for e in estimators]
        k = model.n_outputs_
        return concat_trees(trees, base_score=np.zeros(k), aggregate="mean", task="regression", output_space="raw",
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
            return concat_trees(trees, base_score=base, aggregate="sum", task="classification", output_space="margin",
                           output_names=outputs,
                           predict_fn=ModelPredictor(model, _sklearn_decision), **common)
        return concat_trees(trees, base_score=base, aggregate="sum", task="regression", output_space="raw",
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
                raise UnsupportedModelError("HistGradientBoosting categorical splits are not supported yet: "
                                            + CATEGORICAL_INSTEAD)
            leaf = nodes["is_leaf"].astype(bool)
            trees.append(dict(left=np.where(leaf, -1, nodes["left"]), right=np.where(leaf, -1, nodes["right"]),
                              feature=nodes["feature_idx"], threshold=nodes["num_threshold"],
                              missing_left=nodes["missing_go_to_left"], value=nodes["value"], target=k))
    base = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
    common = {**common, "input_float32": False}
    raw = ModelPredictor(model, _sklearn_hgb_raw)
    if is_clf:
        outputs = ["margin"] if len(model.classes_) == 2 else [str(c) for c in model.classes_]
        return concat_trees(trees, base_score=base, aggregate="sum", task="classification", output_space="margin",
                       output_names=outputs, predict_fn=raw, **common)
    return concat_trees(trees, base_score=base, aggregate="sum", task="regression", output_space="raw",
                   predict_fn=raw, **common)
