"""The CatBoost importer: ``CatBoostRegressor``, ``CatBoostClassifier``, ``CatBoost`` ->
:class:`~xai_plugins.forest.Forest`, read from the model's JSON export.

CatBoost grows oblivious trees: every node of level i applies the same condition, and a row's leaf is
``sum_i [condition_i true] << i``. Each becomes a complete binary tree (level l applies condition D - 1 - l,
so leaf k of the last level is leaf k of CatBoost's list) whose true branch is the right child:

- a numeric condition ``float32(x_f) > border`` becomes the rule "left iff float32(x) <= border"; a missing
  value goes where ``nan_mode`` sends it (``Min``: below every border, i.e. left; ``Max``: right);
- a categorical feature is a set-membership split (csrc/xai.h). CatBoost keeps only the 32-bit hash of
  each category (``uint32(CityHash64(str(value)))``); the model's categories of a feature are the hashes its
  one-hot splits and CTR tables hold, sorted (their positions are the codes, listed in
  ``Forest.category_labels`` by a :class:`CatBoostCategories`). A one-hot condition ``hash(x) == value``
  is true for one category; a CTR condition ``ctr(x) > border`` whose CTR depends on one categorical
  feature is true for the categories whose CTR value (computed in float32 from the model's CTR table, as
  CatBoost does) exceeds the border, and for unseen categories when the CTR of an empty bucket does.
  CatBoost refuses NaN in a categorical column; the Forest reads it as the text ``"nan"`` (what
  ``astype(str)`` makes of it). CTRs over combinations of features, text and embedding features are refused.

The output is CatBoost's ``RawFormulaVal``: ``scale * sum of leaf values + bias`` (the scale folded into the
leaves).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import numpy as np

from .._extras import require
from ..errors import InputError, ModelStructureError, UnsupportedModelError
from .layout import Forest, category_bitsets, concat_trees
from .predictor import ModelPredictor, labelled_rows, model_input
from .registry import LibraryImporter, register

__all__: list[str] = []      # internal module: the public names are in the API reference

_CLASSIFICATION_LOSSES = ("Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll")
_MASK64 = (1 << 64) - 1
_CTR_MULT = 0x4906ba494954cb65                     # CatBoost's CalcHash(a, b) = M * (a + M * b) mod 2^64
_CTR_UNMULT = pow(_CTR_MULT * _CTR_MULT % (1 << 64), -1, 1 << 64)
_EMPTY_SLOT = _MASK64                              # an empty slot of a CTR hash table
_CTR_TYPES = ("Borders", "Buckets", "Counter", "FeatureFreq", "BinarizedTargetMeanValue")


def _model_json(model: Any) -> dict:
    """The model's JSON export (``save_model(format="json")``), parsed."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


def _int32(value: int) -> int:
    """``value`` (a 32-bit hash written signed or unsigned) as a signed 32-bit integer."""
    return (int(value) + (1 << 31)) % (1 << 32) - (1 << 31)


def category_text(value: Any) -> bytes:
    """The text CatBoost hashes for a categorical value: a string as is (UTF-8), an integer as ``str(value)``,
    a bool (Python, numpy or pandas) as ``b"1"`` / ``b"0"`` (CatBoost reads ``True`` as the category ``1``,
    not ``"True"``), NaN as ``b"nan"``. A real number is refused, as CatBoost refuses it."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bool, np.bool_)):
        return b"1" if value else b"0"
    if isinstance(value, (int, np.integer)):
        return str(int(value)).encode()
    if isinstance(value, (float, np.floating)) and np.isnan(value) or value is None:
        return b"nan"
    raise InputError(f"a CatBoost categorical feature holds {value!r}: CatBoost reads categories as text or "
                     "integers; pass the column as strings (astype(str)) or integer labels")


def category_hash(value: Any) -> int:
    """CatBoost's hash of a categorical value, as a signed 32-bit integer: ``CityHash64`` (v1.0.2, the version
    in CatBoost's ``util/digest/city``; from the ``clickhouse-cityhash`` package) of its
    :func:`category_text`, cut to 32 bits."""
    city = require("clickhouse_cityhash.cityhash", "catboost", "reading a CatBoost model's categorical features")
    return _int32(city.CityHash64(category_text(value)))


class CatBoostCategories(list):
    """The categories of one categorical feature of a CatBoost model: their hashes (signed 32-bit
    integers, :func:`category_hash`), sorted; a category's code is its position. ``codes`` reads a column
    of labels (text, integers) as codes (-1: a category the model never saw) and remembers one label per
    hash, so that ``labels_of`` can give CatBoost's own predictor a value for a code (Monte Carlo)."""

    def __init__(self, hashes: list[int]) -> None:
        super().__init__(hashes)
        self.position = {h: k for k, h in enumerate(hashes)}
        self._labels: dict[int, Any] = {}
        self.unseen = next(f"<unseen {i}>" for i in range(len(hashes) + 1)
                           if category_hash(f"<unseen {i}>") not in self.position)

    def codes(self, values: Any) -> np.ndarray:
        """The codes of an array of labels (float64; -1 for a label the model never saw)."""
        values = np.asarray(values, dtype=object)
        texts = values.astype(str)
        for word, digit in (("True", "1"), ("False", "0")):      # a bool is the category 1 / 0 (category_text)
            at = np.flatnonzero(texts == word)
            texts[at[np.fromiter((isinstance(v, (bool, np.bool_)) for v in values[at]), bool, len(at))]] = digit
        _, first, inverse = np.unique(texts, return_index=True, return_inverse=True)
        out = np.empty(len(first))
        for k, original in enumerate(values[first]):        # one hash per distinct text
            h = category_hash(original)
            out[k] = self.position.get(h, -1)
            self._labels.setdefault(h, original)
        return out[inverse.reshape(-1)]

    def labels_of(self, codes: np.ndarray) -> np.ndarray:
        """Labels CatBoost reads as the categories ``codes`` (an object array): for a code, a label seen by
        :meth:`codes`; for a number out of range, ``unseen`` (a text of no category of the model); for NaN,
        ``"nan"``."""
        codes = np.asarray(codes, dtype=np.float64)
        unique, inverse = np.unique(codes, return_inverse=True)     # NaN last, once
        out = np.empty(len(unique), dtype=object)
        for k, code in enumerate(unique):
            if np.isnan(code):
                out[k] = "nan"
            elif not (0 <= code < len(self) and code == int(code)):
                out[k] = self.unseen
            elif (found := self._labels.get(self[int(code)])) is not None:
                out[k] = found
            else:
                raise InputError(f"CatBoost keeps only a hash of each category, and category code {int(code)} "
                                 f"(hash {self[int(code)]}) has not been seen in the data given so far: pass the "
                                 "rows (or background=) as a DataFrame holding the category labels, or use "
                                 "method='exact'")
        return out[inverse.reshape(-1)]


def _ctr_key(h: int) -> int:
    """The key of category hash ``h`` in a one-feature CTR table: ``CalcHash(0, h)``, h sign-extended."""
    return (_CTR_MULT * ((_CTR_MULT * (h & _MASK64)) & _MASK64)) & _MASK64


def _ctr_value(good: float, total: float, ctr: dict) -> np.float32:
    """CatBoost's CTR ``((good + prior_num) / (total + prior_denom) + shift) * scale``, in float32."""
    f = np.float32
    value = (f(good) + f(ctr["prior_numerator"])) / (f(total) + f(ctr["prior_denomerator"]))
    return (value + f(ctr["shift"])) * f(ctr["scale"])


def _ctr_counts(kind: str, counts: list, target: int, denominator: float) -> tuple[float, float]:
    """(good, total) of one bucket of a CTR table (CatBoost's ``calc_ctrs``)."""
    if kind in ("Counter", "FeatureFreq"):
        return counts[0], denominator
    if kind == "BinarizedTargetMeanValue":
        return counts[0], counts[1]
    if kind == "Buckets":
        return counts[target], sum(counts)
    if len(counts) == 2:                                   # Borders, binary target
        return counts[1], counts[0] + counts[1]
    return sum(counts[target + 1:]), sum(counts)


def _ctr_tables(data: dict) -> dict:
    """Per CTR identifier, {bucket key: counts} and the counter denominator."""
    tables = {}
    for identifier, table in data.get("ctr_data", {}).items():
        stride, flat = int(table["hash_stride"]), table["hash_map"]
        buckets = {int(flat[i]): [float(c) for c in flat[i + 1:i + stride]] for i in range(0, len(flat), stride)
                   if int(flat[i]) != _EMPTY_SLOT}
        tables[identifier] = (buckets, float(table.get("counter_denominator", 0)))
    return tables


def _single_feature(ctr: dict, cat_names: list[str], float_names: list[str]) -> int:
    """The categorical feature (index among the categorical ones) a CTR depends on; a CTR over a
    combination (of categorical features, or with numeric splits) is refused by name."""
    elements = ctr.get("elements", [])
    if len(elements) == 1 and elements[0].get("combination_element") == "cat_feature_value":
        return int(elements[0]["cat_feature_index"])
    names = [cat_names[e["cat_feature_index"]] if "cat_feature_index" in e else float_names[e["float_feature_index"]]
             if "float_feature_index" in e else str(e) for e in elements]
    raise UnsupportedModelError(f"CatBoost CTR over the combination of features {' and '.join(dict.fromkeys(names))}:"
                                " set max_ctr_complexity=1 to train per-feature CTRs (a CTR of one categorical "
                                "feature is a category set, supported exactly)")


class _Splits:
    """Every split a CatBoost model can make, by ``split_index`` (float borders, then one-hot values, then
    CTR borders, in the order of the JSON's ``features_info``), each as the node fields it becomes."""

    def __init__(self, data: dict, n_features: int) -> None:
        info = data.get("features_info", {})
        floats = sorted(info.get("float_features", []), key=lambda f: f["feature_index"])
        cats = sorted(info.get("categorical_features", []), key=lambda f: f["feature_index"])
        names, float_names = ([str(f.get("feature_id") or f"feature {f['flat_feature_index']}") for f in kind]
                              for kind in (cats, floats))
        self.splits: list[dict] = []
        for f in floats:
            left_nan = f.get("nan_value_treatment") != "AsTrue"
            self.splits += [dict(feature=int(f["flat_feature_index"]), threshold=float(b), missing_left=left_nan,
                                 check=("FloatFeature", float(b))) for b in f.get("borders", [])]
        ctrs = info.get("ctrs", [])
        known: list[set] = [{_int32(v) for v in c.get("values", [])} for c in cats]
        tables = _ctr_tables(data)
        for ctr in ctrs:
            j = _single_feature(ctr, names, float_names)
            for key in tables[ctr["identifier"]][0]:
                h = (key * _CTR_UNMULT) & _MASK64          # the inverse of _ctr_key
                h = h - (1 << 64) if h >> 63 else h
                if not -(1 << 31) <= h < (1 << 31):
                    raise ModelStructureError(f"a CTR table of CatBoost feature {names[j]} holds a key that is not "
                                              "the hash of one category")
                known[j].add(h)
        self.categories = [CatBoostCategories(sorted(k)) for k in known]
        self.n_categories = np.zeros(n_features, dtype=np.int32)
        self.labels: list = [None] * n_features
        nan_code = []
        for c, categories in zip(cats, self.categories):
            self.n_categories[c["flat_feature_index"]] = len(categories)
            self.labels[c["flat_feature_index"]] = categories
            nan_code.append(categories.position.get(category_hash("nan"), len(categories)))
        for c, categories, nan in zip(cats, self.categories, nan_code):
            for value in c.get("values", []):
                true = np.zeros(len(categories) + 1, dtype=bool)
                true[categories.position[_int32(value)]] = True
                self.splits.append(self._categorical(c, true, nan, ("OneHotFeature", _int32(value))))
        for ctr in ctrs:
            j = _single_feature(ctr, names, float_names)
            buckets, denominator = tables[ctr["identifier"]]
            kind, target = ctr["ctr_type"], int(ctr.get("target_border_idx", 0))
            if kind not in _CTR_TYPES:
                raise UnsupportedModelError(f"CatBoost CTR type {kind} is not supported; the types "
                                            f"{', '.join(_CTR_TYPES)} are")
            values = np.empty(len(self.categories[j]) + 1, dtype=np.float32)
            values[-1] = _ctr_value(0.0, denominator if kind in ("Counter", "FeatureFreq") else 0.0, ctr)
            for k, h in enumerate(self.categories[j]):
                counts = buckets.get(_ctr_key(h))
                values[k] = values[-1] if counts is None else _ctr_value(
                    *_ctr_counts(kind, counts, target, denominator), ctr)
            for border in ctr.get("borders", []):
                self.splits.append(self._categorical(cats[j], values > np.float32(border), nan_code[j],
                                                     ("OnlineCtr", float(border))))

    @staticmethod
    def _categorical(cat: dict, true: np.ndarray, nan: int, check: tuple) -> dict:
        """A categorical split sending the atoms where ``true`` is False left, NaN as atom ``nan``; ``check``:
        the split type and value / border a tree's split at this index must have."""
        return dict(feature=int(cat["flat_feature_index"]), threshold=0.0, missing_left=not true[nan],
                    left_atoms=np.flatnonzero(~true), check=check)

    def __getitem__(self, split: dict) -> dict:
        """The node fields of one split of a tree (checked against the split's own type and border / value)."""
        index, kind = int(split["split_index"]), split.get("split_type")
        found = self.splits[index] if 0 <= index < len(self.splits) else {}
        want = _int32(split["value"]) if kind == "OneHotFeature" else float(split.get("border", np.nan))
        if found.get("check") != (kind, want):
            raise ModelStructureError(f"CatBoost split {split} does not match the model's features_info (split type "
                                      f"{kind}); only float, one-hot and CTR splits are supported")
        return found


def _oblivious_tree(tree: dict, splits: _Splits, width: int, scale: float) -> dict:
    """One oblivious tree as the per-tree arrays of :func:`~xai_plugins.forest.layout.concat_trees`, with
    ``left_atoms`` per inner node (None at a numeric one)."""
    fields = [splits[s] for s in tree.get("splits") or []]          # a tree without splits holds null
    depth = len(fields)
    n_inner, n_leaves = 2 ** depth - 1, 2 ** depth
    level = np.repeat(np.arange(depth), 2 ** np.arange(depth))            # level of each inner node (BFS)
    position = np.arange(n_inner) - (2 ** level - 1)                       # its index within the level
    condition = depth - 1 - level                                          # the split it applies
    node = [fields[c] for c in condition]
    left = np.concatenate((2 ** (level + 1) - 1 + 2 * position, np.full(n_leaves, -1)))
    right = np.concatenate((left[:n_inner] + 1, np.full(n_leaves, -1)))
    values = np.asarray(tree["leaf_values"], dtype=np.float64).reshape(n_leaves, width) * scale
    weights = np.asarray(tree.get("leaf_weights", np.zeros(n_leaves)), dtype=np.float64)
    return dict(left=left, right=right, feature=[n["feature"] for n in node] + [0] * n_leaves,
                threshold=[n["threshold"] for n in node] + [0.0] * n_leaves,
                missing_left=[n["missing_left"] for n in node] + [True] * n_leaves,
                value=np.concatenate((np.zeros((n_inner, width)), values)), target=0,
                weight=np.concatenate((_inner_weights(weights, depth), weights)),
                left_atoms=[n.get("left_atoms") for n in node])


def _inner_weights(leaf_weights: np.ndarray, depth: int) -> np.ndarray:
    """Weights of the inner nodes (BFS order) as sums of the leaves below them."""
    levels, below = [], leaf_weights
    for _ in range(depth):
        below = below.reshape(-1, 2).sum(axis=1)
        levels.append(below)
    return np.concatenate(levels[::-1]) if levels else np.zeros(0)


def _category_layout(trees: list[dict], n_categories: np.ndarray) -> dict:
    """``n_categories``, ``cat_start`` and ``cat_bits`` of the concatenated trees (empty without categorical
    splits)."""
    offsets = np.cumsum([0] + [len(t["left"]) for t in trees])
    nodes, atoms = [], []
    for offset, tree in zip(offsets, trees):
        for local, found in enumerate(tree.pop("left_atoms")):
            if found is not None:
                nodes.append(offset + local)
                atoms.append(found)
    if not nodes:
        return {}
    feature = np.concatenate([np.asarray(t["feature"], dtype=np.int64) for t in trees])
    cat_start, cat_bits = category_bitsets(np.array(nodes), atoms, n_categories[feature[nodes]], int(offsets[-1]))
    return dict(n_categories=n_categories, cat_start=cat_start, cat_bits=cat_bits)


class CatBoostImporter(LibraryImporter):
    """CatBoost's ``CatBoostRegressor``, ``CatBoostClassifier`` and ``CatBoost`` models (symmetric trees;
    numeric features, and categorical ones through one-hot splits and per-feature CTRs)."""

    name = "catboost"
    supported = ("catboost CatBoostRegressor/CatBoostClassifier/CatBoost (symmetric trees; numeric features, "
                 "categorical features with one-hot splits and per-feature CTRs)")

    def owns(self, cls: type) -> bool:
        """A subclass of ``catboost.CatBoost`` (False while catboost is not imported)."""
        catboost = sys.modules.get("catboost")
        return catboost is not None and issubclass(cls, catboost.CatBoost)

    def to_forest(self, model: Any) -> Forest:
        for kind in ("text", "embedding"):          # (the JSON export refuses them: asked of the model first)
            found = getattr(model, f"get_{kind}_feature_indices")()
            if found:
                names = ", ".join(str(model.feature_names_[j]) for j in found)
                raise UnsupportedModelError(f"CatBoost {kind} features ({names}) are not supported: drop them, or "
                                            "pass them as categorical features (cat_features=)")
        data = _model_json(model)
        trees = data.get("oblivious_trees")
        if not trees:
            raise UnsupportedModelError("only CatBoost models of symmetric (oblivious) trees are supported, with at "
                                        "least one tree; grow_policy Depthwise / Lossguide are not")
        n_features = len(model.feature_names_)         # (a loaded model's n_features_in_ is 0)
        splits = _Splits(data, n_features)
        scale, bias = data.get("scale_and_bias", [1.0, [0.0]])
        bias = np.atleast_1d(np.asarray(bias, dtype=np.float64))
        width = len(bias)
        loss = model.get_all_params().get("loss_function", "RMSE").split(":")[0]
        task = "classification" if loss in _CLASSIFICATION_LOSSES else "regression"
        if task == "classification":
            outputs = ["margin"] if width == 1 else [f"class_{k}" for k in range(width)]
        else:
            outputs = ["output"] if width == 1 else [f"output_{k}" for k in range(width)]
        arrays = [_oblivious_tree(t, splits, width, float(scale)) for t in trees]
        categorical = _category_layout(arrays, splits.n_categories)
        labels = splits.labels if any(known is not None for known in splits.labels) else None
        return concat_trees(arrays, **categorical, category_labels=labels, base_score=bias, n_features=n_features,
                            split_rule="le", input_float32=True, aggregate="sum",
                            task=task, output_space="raw" if loss in ("RMSE", "MAE", "Quantile", "MAPE", "Lq")
                            else "margin", model_type=f"catboost.{type(model).__name__}",
                            feature_names=self.feature_names(model), output_names=outputs,
                            predict_fn=_raw_predictor(model, labels), objective=loss)

    def feature_names(self, model: Any) -> Any:
        """``feature_names_``, CatBoost's generated "0", "1", ... counting as none."""
        names = getattr(model, "feature_names_", None)
        if names is None or [str(c) for c in names] == [str(j) for j in range(len(names))]:
            return None
        return names

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """CatBoost refits, reloads and edits a model in place, inside its C++ object, and its models
        cannot be weakly keyed: the fingerprint is the tree count, the scale and bias, and two sums over
        the leaf values (any refit or edit of the leaves changes them). It is read on every cached
        call: 17 µs for 6,400 leaves, 55 µs for 32,000 (100 / 500 depth-6 trees, measured with timeit)."""
        leaves = np.asarray(model.get_leaf_values(), dtype=np.float64)
        return (), (model.tree_count_, repr(model.get_scale_and_bias()), float(leaves.sum()),
                    float(leaves @ np.arange(len(leaves), dtype=np.float64)))

    def predictor(self, model: Any) -> ModelPredictor:
        """``predict(prediction_type="RawFormulaVal")``; a model with categorical features gets its category
        codes as the labels its Forest has read (:meth:`CatBoostCategories.labels_of`)."""
        from .cache import import_model

        return _raw_predictor(model, import_model(model).category_labels if model.get_cat_feature_indices()
                              else None)

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """Logloss / CrossEntropy: logistic, MultiClass: softmax, of ``predict(prediction_type="Probability")``
        (MultiClassOneVsAll and regression losses: None)."""
        link = {"Logloss": "logistic", "CrossEntropy": "logistic", "MultiClass": "softmax"}.get(forest.objective or "")
        if link is None:
            return None
        return link, _raw_predictor(model, forest.category_labels if model.get_cat_feature_indices() else None,
                                    "Probability")


def _raw_predictor(model: Any, labels: list | None, prediction_type: str = "RawFormulaVal") -> ModelPredictor:
    """CatBoost's ``predict(prediction_type=...)`` (the raw formula value, or "Probability") on rows in the
    Forest's feature order; the columns of the categorical features (``labels`` per feature, or None) turned
    from codes back into labels CatBoost reads."""
    if labels is None:
        return ModelPredictor(model, lambda m, X: m.predict(model_input(X, np.float64),
                                                            prediction_type=prediction_type))

    def predict(m: Any, X: Any) -> Any:
        import pandas as pd

        frame = pd.DataFrame(np.asarray(X, dtype=np.float64), columns=list(m.feature_names_))
        return m.predict(labelled_rows(frame, {j: known for j, known in enumerate(labels) if known is not None}),
                         prediction_type=prediction_type)

    return ModelPredictor(model, predict)


register(CatBoostImporter())
