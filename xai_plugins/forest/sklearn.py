"""The scikit-learn importer: DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*,
HistGradientBoosting* -> :class:`~xai_plugins.forest.Forest`."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedModelError
from .layout import CATEGORICAL_INSTEAD, FLOAT32_LIMIT, Forest, category_bitsets, concat_trees
from .predictor import ModelPredictor, decision_function, labelled_rows, predict, predict_proba, probability_predictor
from .registry import LibraryImporter, model_feature_names, register

__all__: list[str] = []      # internal module: the public names are in the API reference


def _sklearn_tree(est: Any, value: Any, target: int = 0) -> dict:
    """One fitted scikit-learn tree as the per-tree arrays of :func:`concat_trees`."""
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


def _families() -> dict[str, tuple[type, ...]]:
    """The supported scikit-learn model classes, by family (imports scikit-learn's tree and ensemble)."""
    from sklearn import ensemble, tree

    return {"forest": (tree.BaseDecisionTree, ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
                       ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor),
            "boosting": (ensemble.GradientBoostingRegressor, ensemble.GradientBoostingClassifier),
            "hist": (ensemble.HistGradientBoostingRegressor, ensemble.HistGradientBoostingClassifier)}


def _family(model: Any) -> str:
    """"forest", "boosting" or "hist": which kind of supported scikit-learn model ``model`` is."""
    return next(name for name, classes in _families().items() if isinstance(model, classes))


class SklearnImporter(LibraryImporter):
    """scikit-learn's DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*, GradientBoosting*,
    HistGradientBoosting* (subclasses included)."""

    name = "sklearn"
    sparse_refuses_nan = True           # missing values are supported in dense rows only
    supported = ("scikit-learn DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, "
                 "HistGradientBoosting*")

    def owns(self, cls: type) -> bool:
        """A subclass of a supported scikit-learn model (False while scikit-learn is not imported)."""
        return "sklearn" in sys.modules and any(issubclass(cls, classes) for classes in _families().values())

    def to_forest(self, model: Any) -> Forest:
        """Trees read from ``tree_`` (forests, GradientBoosting) or ``_predictors`` (HistGradientBoosting)."""
        name = type(model).__name__
        family = _family(model)
        n_features = int(model.n_features_in_)      # (their predict refuses what float32 makes infinite)
        tags = getattr(model, "__sklearn_tags__", None)
        takes_nan = tags is None or tags().input_tags.allow_nan         # (GradientBoosting refuses NaN)
        common = dict(n_features=n_features, split_rule="le", input_float32=True,
                      input_limits=np.tile([-FLOAT32_LIMIT, FLOAT32_LIMIT], (n_features, 1)),
                      nan_refused=None if takes_nan else np.ones(n_features, dtype=bool),
                      feature_names=model_feature_names(model), model_type=f"sklearn.{name}",
                      predict_fn=self.predictor(model))
        is_clf = hasattr(model, "classes_")
        if family == "forest":
            from sklearn.tree import BaseDecisionTree

            estimators = [model] if isinstance(model, BaseDecisionTree) else model.estimators_
            common["max_depth"] = max(int(e.tree_.max_depth) for e in estimators)
            if is_clf:
                if model.n_outputs_ != 1:
                    raise UnsupportedModelError(f"{name} with several outputs is not supported")
                trees = [_sklearn_tree(e, e.tree_.value[:, 0, :]) for e in estimators]
                k = len(model.classes_)
                return concat_trees(trees, base_score=np.zeros(k), aggregate="mean", task="classification",
                                    output_space="probability", output_names=[str(c) for c in model.classes_],
                                    **common)
            trees = [_sklearn_tree(e, e.tree_.value[:, :, 0]) for e in estimators]
            k = model.n_outputs_
            return concat_trees(trees, base_score=np.zeros(k), aggregate="mean", task="regression",
                                output_space="raw",
                                output_names=["output"] if k == 1 else [f"output_{o}" for o in range(k)], **common)
        if family == "boosting":
            _check_constant_init(model)
            rate = model.learning_rate
            trees = [_sklearn_tree(e, e.tree_.value[:, 0, 0] * rate, target=k)
                     for row in model.estimators_ for k, e in enumerate(row)]
            common["max_depth"] = max(int(e.tree_.max_depth) for row in model.estimators_ for e in row)
            base = np.asarray(model._raw_predict_init(np.zeros((1, model.n_features_in_), dtype=np.float32)),
                              dtype=np.float64).ravel()
        else:
            trees, categorical = _hgb_trees(model)
            base = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
            common.update(input_float32=False, input_limits=None, **categorical)
        if is_clf:
            outputs = ["margin"] if len(model.classes_) == 2 else [str(c) for c in model.classes_]
            return concat_trees(trees, base_score=base, aggregate="sum", task="classification",
                                output_space="margin", output_names=outputs, **common)
        return concat_trees(trees, base_score=base, aggregate="sum", task="regression", output_space="raw", **common)

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """The fitted trees (``tree_``, ``estimators_``, ``_predictors``) by identity and length, with
        ``n_features_in_``, ``learning_rate`` and ``n_estimators``."""
        objects: list = []
        values: list = [getattr(model, "n_features_in_", None)]
        for attribute in ("tree_", "estimators_", "_predictors"):
            held = getattr(model, attribute, None)
            if held is not None:
                objects.append(held)
                values.append(len(held) if hasattr(held, "__len__") else 0)
        values += [getattr(model, "learning_rate", None), getattr(model, "n_estimators", None)]
        return tuple(objects), tuple(values)

    def predictor(self, model: Any) -> ModelPredictor:
        """``predict_proba`` (forest classifiers), ``decision_function`` (GradientBoosting classifiers),
        ``_raw_predict`` (HistGradientBoosting), ``predict`` otherwise."""
        family = _family(model)
        method: Callable
        if family == "hist":
            labels = _hgb_labels(model)
            method = _raw_predict if labels is None else functools.partial(
                _raw_predict_labels, labels={j: known for j, known in enumerate(labels) if known is not None})
        elif hasattr(model, "classes_"):
            method = predict_proba if family == "forest" else decision_function
        else:
            method = predict
        return ModelPredictor(model, method)

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """The default (logistic or softmax of the margin, ``predict_proba``) for the log-loss of GradientBoosting
        and HistGradientBoosting classifiers; None for ``loss="exponential"`` (whose probabilities are the
        logistic of twice the margin) and for forests (their Forest gives the probabilities themselves)."""
        return probability_predictor(model, forest) if getattr(model, "loss", "log_loss") == "log_loss" else None


def _raw_predict(model: Any, X: Any) -> Any:
    return model._raw_predict(X)


def _raw_predict_labels(model: Any, X: Any, labels: dict) -> Any:
    """``_raw_predict`` of rows whose categorical columns hold the Forest's codes (turned into the labels
    the model reads)."""
    return model._raw_predict(labelled_rows(X, labels))


def _check_constant_init(model: Any) -> None:
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


def _hgb_trees(model: Any) -> tuple[list[dict], dict]:
    """The per-tree arrays of a HistGradientBoosting model's ``_predictors`` over its input columns, and
    its categorical features (labels: :func:`_hgb_labels`) as the Forest's fields (empty without any).

    With ``categorical_features`` the predictors see the columns of the model's ``_preprocessor`` (the
    categorical ones first, as the codes of its OrdinalEncoder): a split's feature is mapped back to its
    input column, and a categorical node sends code c left when bit c of its ``raw_left_cat_bitsets``
    row is set, the model's other categories right, and a missing value or a category unseen in
    training (the encoder makes it NaN) where ``missing_go_to_left`` says."""
    labels = _hgb_labels(model)
    source = np.arange(model.n_features_in_)
    if labels is not None:
        categorical = np.array([known is not None for known in labels])
        source = np.concatenate((np.flatnonzero(categorical), np.flatnonzero(~categorical)))
        n_categories = np.array([0 if known is None else len(known) for known in labels], dtype=np.int32)
    trees, left_sets, offset = [], [], 0
    for row in model._predictors:
        for k, predictor in enumerate(row):
            nodes = predictor.nodes
            leaf = nodes["is_leaf"].astype(bool)
            feature = source[nodes["feature_idx"]]
            is_cat = nodes["is_categorical"].astype(bool) & ~leaf
            for node in np.flatnonzero(is_cat):
                bits = np.unpackbits(predictor.raw_left_cat_bitsets[nodes["bitset_idx"][node]].astype("<u4")
                                     .view(np.uint8), bitorder="little")
                K = int(n_categories[feature[node]])
                left_sets.append((offset + node, np.append(np.flatnonzero(bits[:K]),
                                                           [K] if nodes["missing_go_to_left"][node] else [])))
            trees.append(dict(left=np.where(leaf, -1, nodes["left"]), right=np.where(leaf, -1, nodes["right"]),
                              feature=feature, threshold=np.where(is_cat, 0.0, nodes["num_threshold"]),
                              missing_left=nodes["missing_go_to_left"], value=nodes["value"], target=k,
                              weight=nodes["count"].astype(np.float64)))
            offset += len(nodes)
    if labels is None:
        return trees, {}
    cat_nodes = np.array([node for node, _ in left_sets], dtype=np.int64)
    all_features = np.concatenate([t["feature"] for t in trees])
    cat_start, cat_bits = category_bitsets(cat_nodes, [atoms for _, atoms in left_sets],
                                           n_categories[all_features[cat_nodes]], offset)
    return trees, dict(n_categories=n_categories, cat_start=cat_start, cat_bits=cat_bits,
                       category_labels=labels, numeric_labels=True)


def _hgb_labels(model: Any) -> list | None:
    """Per input column of a HistGradientBoosting model, the categories its OrdinalEncoder learned for a
    categorical feature (a category's position is its code; a missing value is none), or None for a
    numeric one; None without categorical features."""
    if getattr(model, "is_categorical_", None) is None or not np.any(model.is_categorical_):
        return None
    encoder = model._preprocessor.named_transformers_["encoder"]
    labels: list = [None] * int(model.n_features_in_)
    for j, categories in zip(np.flatnonzero(model.is_categorical_), encoder.categories_):
        labels[j] = [c for c in categories if not (c is None or (isinstance(c, float) and np.isnan(c)))]
    return labels


register(SklearnImporter())
