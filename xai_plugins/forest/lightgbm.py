"""The LightGBM importer: ``Booster``, ``LGBMRegressor``, ``LGBMClassifier`` ->
:class:`~xai_plugins.forest.Forest`, parsed from ``model_to_string()`` (exact thresholds, ±inf included)."""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from ..errors import UnsupportedModelError
from .cache import generation
from .layout import Forest, category_bitsets, preorder
from .predictor import ModelPredictor, model_input
from .registry import LibraryImporter, model_feature_names, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: LightGBM names the columns of data fitted without names Column_0, Column_1, ...
_DEFAULT_NAME = "Column_{}"

#: LightGBM reads an input x with |x| <= kZeroThreshold (the float 1e-35f) as 0.0
LIGHTGBM_ZERO_THRESHOLD = float(np.float32(1e-35))

# objectives whose prediction is the raw score (ConvertOutput identity; not with reg_sqrt, "... sqrt")
_LGB_IDENTITY_PREDICTION = {"regression", "regression_l1", "huber", "fair", "quantile", "mape", "lambdarank",
                            "rank_xendcg", "custom"}


def _lightgbm_numbers(trees: list[dict], key: str, dtype: Any) -> np.ndarray:
    """The ``key=`` lists of every tree of a LightGBM model string, concatenated (parsed exactly:
    LightGBM writes doubles with 17 significant digits and ±inf as "inf" / "-inf")."""
    return np.array(" ".join(tree[key] for tree in trees).split(), dtype=dtype)


def _lightgbm_forest(text: str) -> tuple[dict, dict]:
    """The header fields and the Forest arrays of a LightGBM ``model_to_string()``: nodes renumbered
    in preorder (as ``dump_model()`` lists them); categorical splits become category bitsets
    (:func:`_lightgbm_categories`); refuses linear trees and zero-as-missing splits."""
    header, blocks = _split(text)
    trees = [dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line) for block in blocks]
    if not trees:
        raise UnsupportedModelError("the LightGBM model has no trees")
    if any(tree.get("is_linear", "0") != "0" for tree in trees):
        raise UnsupportedModelError("LightGBM linear trees are not supported")
    leaves = np.array([int(tree["num_leaves"]) for tree in trees], dtype=np.int64)
    kind = _lightgbm_numbers(trees, "decision_type", np.int64)
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
    missing_left[is_inner] = np.where(missing == 2, (kind >> 1) & 1, 0.0 <= threshold[is_inner]) & ~kind & 1
    categorical = _lightgbm_categories(header, trees, kind, feature[is_inner], threshold[is_inner])
    value = np.zeros(offsets[-1])
    value[~is_inner] = _lightgbm_numbers(trees, "leaf_value", np.float64)
    count = np.zeros(offsets[-1])                         # training rows per node: path-dependent TreeSHAP's weights
    count[is_inner] = _lightgbm_numbers(trees, "internal_count", np.float64)
    count[~is_inner] = _lightgbm_numbers(trees, "leaf_count", np.float64)
    order, offsets, left, right = preorder(left, right, offsets)
    per_iteration = int(header.get("num_tree_per_iteration", "1"))
    if categorical is not None:
        n_categories, cat_start, cat_bits = categorical
        start = np.full(len(is_inner), -1, dtype=np.int64)
        start[is_inner] = cat_start
        categorical = dict(n_categories=n_categories, cat_start=start[order], cat_bits=cat_bits)
    return header, dict(**(categorical or {}), left_child=left, right_child=right, feature=feature[order],
                        threshold=threshold[order],
                        missing_left=missing_left[order], value=value[order], weight=count[order], tree_offset=offsets,
                        tree_target=np.arange(len(trees)) % per_iteration)


def _lightgbm_categories(header: dict, trees: list[dict], kind, feature, threshold):
    """``(n_categories, cat_start, cat_bits)`` of a LightGBM model's categorical splits (``decision_type``
    bit 0), per internal node in model order, or None without any. A categorical feature's categories
    are the codes 0 .. K-1, K one more than the largest it lists in ``feature_infos``; a node sends
    code c left when bit c of its ``cat_threshold`` words is set, and everything else right, NaN,
    negative and unseen codes included (LightGBM's CategoricalDecision)."""
    is_cat = (kind & 1).astype(bool)
    if not is_cat.any():
        return None
    infos = header.get("feature_infos", "").split()
    n_features = int(header["max_feature_idx"]) + 1
    n_categories = np.zeros(n_features, dtype=np.int32)
    for j, info in enumerate(infos[:n_features]):
        if info != "none" and not info.startswith("["):
            n_categories[j] = max(int(c) for c in info.split(":")) + 1
    words_of = [np.array(tree.get("cat_threshold", "").split(), dtype=np.uint64) for tree in trees]
    bounds_of = [np.array(tree.get("cat_boundaries", "").split(), dtype=np.int64) for tree in trees]
    tree_of = np.repeat(np.arange(len(trees)), [int(tree["num_leaves"]) - 1 for tree in trees])
    nodes = np.flatnonzero(is_cat)
    codes = []
    for node in nodes:
        t, idx = tree_of[node], int(threshold[node])
        words = words_of[t][bounds_of[t][idx]:bounds_of[t][idx + 1]]
        codes.append(np.flatnonzero(np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")))
        j = feature[node]
        n_categories[j] = max(n_categories[j], int(codes[-1].max(initial=-1)) + 1)
    cat_start, cat_bits = category_bitsets(nodes, codes, n_categories[feature[nodes]], len(kind))
    return n_categories, cat_start, cat_bits


def _split(text: str) -> tuple[dict, list[str]]:
    """The header fields of a LightGBM ``model_to_string()`` and the text of each of its trees."""
    head, _, body = text.partition("\nTree=")
    header = dict(line.partition("=")[::2] for line in head.splitlines())       # a line without "=": key -> ""
    return header, body.partition("\nend of trees")[0].split("\nTree=") if body else []


class LightGBMImporter(LibraryImporter):
    """LightGBM's ``Booster`` and its scikit-learn wrappers (``LGBMRegressor``, ``LGBMClassifier``, ...)."""

    name = "lightgbm"
    supported = "lightgbm Booster/LGBMRegressor/LGBMClassifier"
    mutators = ("model_from_string", "set_leaf_output", "update", "rollback_one_iter", "shuffle_models",
                "__setstate__")

    def owns(self, cls: type) -> bool:
        """A subclass of ``lightgbm.Booster`` or ``lightgbm.LGBMModel`` (False while lightgbm is not imported)."""
        lightgbm = sys.modules.get("lightgbm")
        return lightgbm is not None and issubclass(cls, (lightgbm.Booster, lightgbm.LGBMModel))

    def to_forest(self, model: Any) -> Forest:
        """Trees parsed from ``model_to_string()``."""
        header, arrays = _lightgbm_forest(_booster(model).model_to_string())
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
        labels = _lightgbm_labels(_booster(model), int(header["max_feature_idx"]) + 1)
        if labels is not None and "n_categories" in arrays:    # a category dtype's codes are its labels' positions
            arrays["n_categories"] = np.maximum(arrays["n_categories"], [len(c or ()) for c in labels])
        return Forest(**arrays, category_labels=labels, base_score=np.zeros(n_outputs),
                      n_features=int(header["max_feature_idx"]) + 1,
                      split_rule="le", input_float32=False, aggregate="mean" if "average_output" in header else "sum",
                      task=task,
                      output_space="raw" if objective in _LGB_IDENTITY_PREDICTION and "sqrt" not in objective_words
                      else "margin", model_type=f"lightgbm.{type(model).__name__}",
                      feature_names=model_feature_names(model), output_names=outputs,
                      predict_fn=_raw_predictor(model, header, len(arrays["tree_target"])),
                      zero_threshold=LIGHTGBM_ZERO_THRESHOLD, objective=objective)

    def feature_names(self, model: Any) -> Any:
        """The wrapper's ``feature_names_in_``, else the booster's ``feature_name()``; LightGBM's generated
        ``Column_i`` names count as none."""
        names = getattr(model, "feature_names_in_", None)
        if names is None:
            names = _booster(model).feature_name()
        if names is not None and [str(c) for c in names] == [_DEFAULT_NAME.format(j) for j in range(len(names))]:
            return None
        return names

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """The booster by identity, its generation and its ``best_iteration``."""
        booster = _booster(model)
        return (booster,), (generation(booster), getattr(booster, "best_iteration", None))

    def predictor(self, model: Any) -> ModelPredictor:
        """The raw score of ``predict(raw_score=True)`` over the model's trees."""
        header, blocks = _split(_booster(model).model_to_string())
        return _raw_predictor(model, header, len(blocks))

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """binary (``sigmoid:1``): logistic, multiclass: softmax, of ``predict`` (other objectives: None)."""
        header, blocks = _split(_booster(model).model_to_string())
        words = header.get("objective", "custom").split()
        link = {"binary": "logistic", "multiclass": "softmax"}.get(words[0])
        if link is None or (link == "logistic" and "sigmoid:1" not in words):
            return None
        return link, _raw_predictor(model, header, len(blocks), raw=False)

    def mutable_class(self) -> type:
        """``lightgbm.Booster``."""
        import lightgbm

        return lightgbm.Booster


def _booster(model: Any) -> Any:
    """The model's ``Booster`` (the model itself when it is one)."""
    return getattr(model, "booster_", model)


def _lightgbm_labels(booster, n_features: int) -> list | None:
    """Per feature, the categories of the pandas ``category`` column LightGBM was trained on (their
    positions are the codes the trees compare), or None without any.

    ``Booster.pandas_categorical`` lists the categories of every ``category`` column of the training frame,
    in column order; the model's ``categorical_feature`` parameter names the features its trees split as
    categories (by default the unordered ``category`` columns). The two are paired in order, which is right
    only when they have the same length: otherwise (an ordered ``category`` column, which LightGBM reads as
    its codes, or an explicit ``categorical_feature``) the model does not store which columns held which
    categories, and it is refused (:class:`UnsupportedModelError`) rather than read with shifted labels."""
    found = getattr(booster, "pandas_categorical", None)
    if not found:
        return None
    params = booster.model_to_string().rpartition("\n[categorical_feature: ")[2].partition("]")[0]
    features = [int(j) for j in params.split(",") if j.strip()]
    if len(features) != len(found):
        raise UnsupportedModelError(
            f"this LightGBM model was trained on {len(found)} pandas category column(s) but splits "
            f"{len(features)} feature(s) as categories (an ordered category column, which LightGBM reads as its "
            "codes, or an explicit categorical_feature): the model does not store which columns held which "
            "categories. Refit it with unordered categories (pd.Categorical(..., ordered=False)) for the "
            "columns to split as categories and numeric codes for the others")
    labels: list = [None] * n_features
    for j, categories in zip(features, found):
        labels[j] = list(categories)
    return labels


def _raw_predictor(model: Any, header: dict, n_trees: int, raw: bool = True) -> ModelPredictor:
    """The raw-score predictor (``raw``; else the probabilities) of a model whose ``model_to_string()`` has
    ``header`` and ``n_trees`` trees. With boosting="rf" the margin is (sum over an output's trees) / n_iter,
    but ``predict(raw_score=True)`` returns the plain sum (LightGBM divides only before applying its link)."""
    n_iter = n_trees // int(header.get("num_tree_per_iteration", "1"))
    return ModelPredictor(model, functools.partial(_lightgbm_raw, n_iter=n_iter,
                                                   mean=raw and "average_output" in header, raw=raw))


def _lightgbm_raw(model: Any, X: Any, n_iter: int, mean: bool, raw: bool = True) -> Any:
    out = _booster(model).predict(model_input(X, np.float64), raw_score=raw, num_iteration=n_iter)
    return out / n_iter if mean else out


register(LightGBMImporter())
