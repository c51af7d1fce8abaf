"""The PMML importer: PMML 4.x ``TreeModel`` / ``MiningModel`` documents (as written by sklearn2pmml and the
JPMML converters) -> :class:`~xai_plugins.forest.Forest`, read with the standard library only.

A document is a :class:`PMMLModel` (:meth:`PMMLModel.load`: a path, bytes or text); its own predictor, for
Monte Carlo estimates and parity checks, is the PMML evaluator ``pypmml`` (extra ``pmml``, needs Java).

How PMML constructs map onto the Forest:

- **Trees.** A PMML ``Node`` tries its children in order and enters the first whose predicate is true; when
  none is, ``noTrueChildStrategy`` says what happens (``returnLastPrediction``: the node's own score, a leaf;
  ``returnNullPrediction``: no prediction, refused unless a ``True`` child ends the list). Each child test
  becomes one binary node whose left branch is "x <= t" (``split_rule="le"``): ``lessOrEqual`` as is,
  ``lessThan`` as ``x <= t'`` with ``t'`` the next representable number below ``t``, ``greaterThan`` /
  ``greaterOrEqual`` as the same two with the branches swapped; the false branch goes on to the next
  child. ``True`` / ``False`` predicates select or skip a child; ``isMissing`` / ``isNotMissing`` become a
  node at threshold +inf, which every number passes left and only a missing value passes right. A
  ``CompoundPredicate`` with one operand is that operand; other compound predicates, ``SimpleSetPredicate``,
  ``equal`` / ``notEqual`` and fields that are not continuous float / double are refused by name (the Forest
  would read them as categorical set splits, not supported here yet).
- **Numbers.** A field of ``dataType="float"`` is compared in float32, as the evaluators do: its thresholds
  are read correctly rounded to float32 (``input_float32=True``); ``double`` fields are compared in float64.
  A model mixing both is refused. Thresholds and scores are read from the document's decimal text; a
  ``x-mathContext="float"`` tree (JPMML's XGBoost trees) adds its scores in float32 in the evaluator, the
  Forest in float64.
- **Missing values** (``missingValueStrategy`` of a TreeModel, for a predicate on a missing field):
  ``none`` (the predicate is false: the next child), ``defaultChild`` (the node's ``defaultChild`` when it is
  the child being tested, or the last, ``True``, child), ``lastPrediction`` (the parent's score: a node at
  threshold +inf in front sends a missing value to a leaf with that score) map exactly onto NaN routing;
  ``nullPrediction`` (no prediction) marks the features the trees test as refusing a missing value
  (``nan_refused``). ``aggregateNodes``, ``weightedConfidence`` are refused by name.
- **Leaves.** ``score`` for regression; for classification the ``ScoreDistribution`` probabilities
  (``probability`` when given, else ``recordCount`` over the node's total), or the ``score`` class alone.
- **Ensembles.** ``MiningModel`` segments (each under a ``True`` predicate) combined by ``sum`` /
  ``weightedSum`` (``aggregate="sum"``; weights folded into the leaves) or ``average`` / ``weightedAverage``
  (``aggregate="mean"``: regression values, or class probabilities: ``output_space="probability"``); a
  ``Targets`` rescaling ``y * rescaleFactor + rescaleConstant`` is folded into the leaves and
  ``base_score``. ``majorityVote``, ``weightedMajorityVote`` and the other methods are refused by name: a
  vote is not a sum of leaf values.
- **Boosted classifiers** (``modelChain``: regression models whose outputs feed a final classification
  ``RegressionModel``, as JPMML writes gradient boosting): the Forest is the chain's margin,
  ``output_space="margin"``: with ``normalizationMethod="logit"`` and two classes, one output, the logit
  of ``classes_[1]`` (``P(classes_[1]) = 1 / (1 + exp(-margin))``); with ``softmax``, one output per class
  (``P(k) = softmax(margin)_k``). Each class's ``coefficient * value + intercept`` is folded into its trees'
  leaves and ``base_score``.
- ``LocalTransformations`` / ``TransformationDictionary`` derived fields, ``MiningField`` replacement of
  missing values or outliers, and ``Target`` clamping are refused by name.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .._extras import require
from ..errors import InputError, UnsupportedModelError
from .layout import Forest, concat_trees
from .predictor import ModelPredictor
from .registry import LibraryImporter, register

__all__: list[str] = []      # internal module: PMMLModel is reached through xai_plugins.load_model

_MODELS = ("TreeModel", "MiningModel", "RegressionModel", "GeneralRegressionModel", "NeuralNetwork",
           "SupportVectorMachineModel", "NaiveBayesModel", "Scorecard", "RuleSetModel", "ClusteringModel")
_ADDITIVE = {"sum": "sum", "weightedSum": "sum", "average": "mean", "weightedAverage": "mean"}
_SWAPPED = {"greaterThan": "lessOrEqual", "greaterOrEqual": "lessThan"}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class PMMLModel:
    """A PMML document holding one tree model, parsed with ``xml.etree.ElementTree``.

    Attributes
    ----------
    feature_names : list of str
        The active fields of the model's ``MiningSchema``, in the ``DataDictionary``'s order.
    feature_names_in_ : ndarray of object
        The same, as scikit-learn names them.
    n_features_in_ : int
        Their number.
    target_name : str or None
        The target field.
    function_name : {"regression", "classification"}
        The model's ``functionName``.
    classes_ : ndarray of str
        The target's categories (``DataField`` values), classification only.
    """

    def __init__(self, text: str) -> None:
        if "<!DOCTYPE" in text[:4096] or "<!ENTITY" in text[:4096]:
            raise InputError("refusing a PMML document with a DOCTYPE / ENTITY declaration (entity expansion)")
        try:
            root = ET.fromstring(text)
        except ET.ParseError as exc:
            raise InputError(f"not a readable PMML document: {exc}") from exc
        for element in root.iter():
            element.tag = _local(element.tag)
        if root.tag != "PMML":
            raise InputError(f"not a PMML document: its root element is <{root.tag}>, not <PMML>")
        self.text, self.root = text, root
        self.version = root.get("version", "")
        models = [child for child in root if child.tag in _MODELS]
        if len(models) != 1:
            raise UnsupportedModelError(f"a PMML document with {len(models)} models is not supported (one "
                                        "TreeModel or MiningModel)")
        self.model_element = models[0]
        self.function_name = self.model_element.get("functionName", "")
        self.fields = {f.get("name"): f for f in root.iter("DataField")}
        schema = [m for m in self.model_element.findall("MiningSchema/MiningField")]
        active = {m.get("name") for m in schema if m.get("usageType", "active") == "active"}
        self.feature_names = [name for name in self.fields if name in active]
        self.feature_names_in_ = np.array(self.feature_names, dtype=object)
        self.n_features_in_ = len(self.feature_names)
        targets = [m.get("name") for m in schema if m.get("usageType") in ("target", "predicted")]
        self.target_name = targets[0] if targets else None
        if self.function_name == "classification":
            target = self.fields.get(self.target_name)
            values = [] if target is None else [v.get("value") for v in target.findall("Value")
                                                 if v.get("property", "valid") == "valid"]
            self.classes_ = np.array(values, dtype=object)
        self._evaluators: dict = {}

    @classmethod
    def load(cls, source: str | bytes | os.PathLike) -> PMMLModel:
        """The model of a PMML document: a path, the document's bytes, or its text (starting with ``<``)."""
        if isinstance(source, (bytes, bytearray)):
            return cls(bytes(source).decode("utf-8"))
        if isinstance(source, str) and source.lstrip().startswith("<"):
            return cls(source)
        path = Path(source)
        if not path.is_file():
            raise InputError(f"PMML file {str(path)!r} does not exist")
        return cls(path.read_bytes().decode("utf-8"))

    def __repr__(self) -> str:
        app = self.root.find("Header/Application")
        origin = "" if app is None else f", from {app.get('name', '')} {app.get('version', '')}".rstrip()
        what = f"{len(self.classes_)} classes" if hasattr(self, "classes_") else "regression"
        return (f"PMMLModel(PMML {self.version} {self.model_element.tag}, {what}, target {self.target_name!r}, "
                f"{self.n_features_in_} features{origin})")

    def _evaluator(self, key: str = "") -> Any:
        """The ``pypmml.Model`` of this document (``key``: of one of its sub-documents), made once."""
        if key not in self._evaluators:
            pypmml = require("pypmml", "pmml", "evaluating a PMML model")
            text = self.text if not key else _sub_document(self, key)
            self._evaluators[key] = pypmml.Model.fromString(text)
        return self._evaluators[key]

    def _frame(self, X: Any) -> Any:
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            return X[self.feature_names]
        return pd.DataFrame(np.asarray(X, dtype=np.float64).reshape(-1, self.n_features_in_),
                            columns=self.feature_names)

    def _scores(self, X: Any, key: str = "") -> Any:
        """The evaluator's output columns for the rows ``X``, as a DataFrame. The rows go as JSON written here with
        every float64 digit (pypmml's own DataFrame path writes 10 significant digits, which moves values near a
        threshold across it) and missing values as ``null``."""
        import pandas as pd

        frame = self._frame(X)
        values = frame.to_numpy(dtype=np.float64)
        data = [[None if np.isnan(v) else float(v) for v in row] for row in values]
        text = json.dumps({"columns": list(frame.columns), "data": data}, allow_nan=False)
        out = json.loads(self._evaluator(key).predict(text))
        return pd.DataFrame(out["data"], columns=out["columns"])

    def predict(self, X: Any) -> np.ndarray:
        """The evaluator's prediction (``pypmml``): the value (regression) or the most probable class."""
        if hasattr(self, "classes_"):
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        out = self._scores(X)
        column = next((c for c in out.columns if c.startswith("predicted")), out.columns[0])
        return np.asarray(out[column], dtype=np.float64)

    def predict_proba(self, X: Any) -> np.ndarray:
        """The evaluator's class probabilities (``pypmml``), shape (n, n_classes), in ``classes_`` order."""
        if not hasattr(self, "classes_"):
            raise InputError("predict_proba needs a classification model")
        out = self._scores(X)
        columns = [next(c for c in out.columns if c in (f"probability({k})", f"probability_{k}"))
                   for k in self.classes_]
        return np.asarray(out[columns], dtype=np.float64)

    def decision_function(self, X: Any) -> np.ndarray:
        """The margin of a ``modelChain`` classifier (what its Forest computes), shape (n, n_margins): each
        regression model of the chain evaluated alone (``pypmml``), then the final regression's
        coefficient and intercept."""
        rows = None
        columns = []
        fields, _ = _chain_segments(self)
        for name, coefficient, intercept, sign in _chain_margins(self):
            factor, constant = _targets(fields[name])
            values = np.asarray(self._scores(X, name).iloc[:, 0], dtype=np.float64) * factor + constant
            rows = len(values)
            columns.append(sign * (coefficient * values + intercept))
        return np.column_stack(columns) if rows is not None else np.zeros((0, 0))


def _sub_document(model: PMMLModel, field: str) -> str:
    """A PMML document whose model is the regression segment of ``model``'s chain that outputs ``field``."""
    segment = _chain_segments(model)[0][field]
    root = ET.Element("PMML", {"xmlns": "http://www.dmg.org/PMML-4_4", "version": "4.4"})
    root.append(_child(model.root, "Header"))
    dictionary = ET.fromstring(ET.tostring(_child(model.root, "DataDictionary")))
    ET.SubElement(dictionary, "DataField", {"name": "__value__", "optype": "continuous", "dataType": "double"})
    root.append(dictionary)
    copy = ET.fromstring(ET.tostring(segment))
    for part in copy.findall("Output") + copy.findall("Targets"):        # its Targets: applied by the caller
        copy.remove(part)
    ET.SubElement(_child(copy, "MiningSchema"), "MiningField", {"name": "__value__", "usageType": "target"})
    root.append(copy)
    return ET.tostring(root, encoding="unicode")


def _child(element: ET.Element, path: str) -> ET.Element:
    """The element at ``path`` under ``element`` (InputError when there is none)."""
    found = element.find(path)
    if found is None:
        raise InputError(f"PMML: <{element.tag}> without {path}")
    return found


def _refuse(what: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"PMML: {what} is not supported")


def _predicate(node: ET.Element) -> ET.Element:
    """The predicate of a ``Node`` (a one-operand ``CompoundPredicate`` is its operand)."""
    found = next((child for child in node if child.tag.endswith("Predicate") or child.tag in ("True", "False")),
                 None)
    if found is None:
        raise UnsupportedModelError("PMML: a Node without a predicate")
    while found.tag == "CompoundPredicate":
        operands = [c for c in found if c.tag.endswith("Predicate") or c.tag in ("True", "False")]
        if len(operands) != 1:
            raise _refuse(f"CompoundPredicate booleanOperator={found.get('booleanOperator')!r} with "
                          f"{len(operands)} operands")
        found = operands[0]
    return found


def _float32(text: str) -> float:
    """``text`` correctly rounded to float32 (ties to even), as a Python float."""
    exact = Fraction(text)
    near = np.float32(float(exact))
    options = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
    finite = [c for c in options if np.isfinite(c)]
    return float(min(finite, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1)))


class _Trees:
    """Builds the Forest's per-tree arrays from PMML TreeModels (see the module docstring)."""

    def __init__(self, model: PMMLModel, float_fields: str = "float32") -> None:
        self.model = model
        self.single = float_fields == "float32"
        self.column = {name: j for j, name in enumerate(model.feature_names)}
        self.classes = [str(c) for c in model.classes_] if hasattr(model, "classes_") else None
        self.refused = np.zeros(model.n_features_in_, dtype=bool)
        self.types: set = set()

    def tree(self, element: ET.Element, scale: float, target: int = 0) -> dict:
        """The arrays of one TreeModel, leaf values multiplied by ``scale``."""
        _check_schema(element)
        self.missing = element.get("missingValueStrategy", "none")
        if self.missing not in ("none", "defaultChild", "lastPrediction", "nullPrediction"):
            raise _refuse(f"missingValueStrategy={self.missing!r}")
        self.no_true = element.get("noTrueChildStrategy", "returnNullPrediction")
        if self.no_true not in ("returnNullPrediction", "returnLastPrediction"):
            raise _refuse(f"noTrueChildStrategy={self.no_true!r}")
        self.nodes: list[list] = []
        self.scale = scale
        root = element.find("Node")
        if root is None or _predicate(root).tag != "True":
            raise _refuse("a TreeModel whose root Node has a predicate other than True")
        self.grow(root)
        left, right, feature, threshold, missing_left, value = zip(*self.nodes)
        return dict(left=left, right=right, feature=feature, threshold=threshold, missing_left=missing_left,
                    value=np.array(value, dtype=np.float64), target=target)

    def new(self, value: Any = None) -> int:
        width = 1 if self.classes is None else len(self.classes)
        self.nodes.append([-1, -1, 0, 0.0, 0, np.zeros(width) if value is None else value])
        return len(self.nodes) - 1

    def value(self, node: ET.Element) -> np.ndarray | None:
        """A node's value (score, or class probabilities) times the scale; None when it has none."""
        score = node.get("score")
        if self.classes is None:
            return None if score is None else np.array([float(score) * self.scale])
        dists = node.findall("ScoreDistribution")
        out = np.zeros(len(self.classes))
        if dists:
            given = all(d.get("probability") is not None for d in dists)
            weights = [float(d.get("probability" if given else "recordCount", "0")) for d in dists]
            total = 1.0 if given else sum(weights)
            for d, w in zip(dists, weights):
                label = d.get("value", "")
                if label not in self.classes:
                    raise InputError(f"PMML: ScoreDistribution value {label!r} is no class of the target")
                out[self.classes.index(label)] = w / total if total else 0.0
        elif score in self.classes:
            out[self.classes.index(score)] = 1.0
        else:
            return None
        return out * self.scale

    def leaf(self, node: ET.Element, why: str) -> int:
        value = self.value(node)
        if value is None:
            raise InputError(f"PMML: a Node without a score or ScoreDistribution where {why}")
        return self.new(value)

    def grow(self, node: ET.Element) -> int:
        """The local id of the subtree of PMML ``node``."""
        kids = node.findall("Node")
        return self.leaf(node, "it is a leaf") if not kids else self.chain(node, kids, 0)

    def chain(self, node: ET.Element, kids: list, i: int) -> int:
        """The subtree that tests ``node``'s children from the ``i``-th on."""
        if i == len(kids):
            if self.no_true == "returnLastPrediction":
                return self.leaf(node, "no child's predicate is true (returnLastPrediction)")
            raise _refuse("noTrueChildStrategy='returnNullPrediction' where no child's predicate may be true (a "
                          "null prediction)")
        predicate = _predicate(kids[i])
        if predicate.tag == "True":
            return self.grow(kids[i])
        if predicate.tag == "False":
            return self.chain(node, kids, i + 1)
        if predicate.tag != "SimplePredicate":
            raise _refuse(predicate.tag)
        field, op = predicate.get("field", ""), predicate.get("operator", "")
        j = self.feature(field, op)
        gate = None
        if self.missing == "lastPrediction" and op not in ("isMissing", "isNotMissing"):
            gate = self.new()               # a missing value: the parent's score (right), others on (left)
            missing_leaf = self.leaf(node, "missingValueStrategy='lastPrediction' may return it")
            self.nodes[gate][:5] = [gate + 2, missing_leaf, j, np.inf, 0]
        at = self.new()
        if op in ("isMissing", "isNotMissing"):
            threshold, true_left, missing_true = np.inf, op == "isNotMissing", op == "isMissing"
        else:
            threshold = self.threshold(field, predicate.get("value"), _SWAPPED.get(op, op))
            true_left, missing_true = op not in _SWAPPED, self.default_taken(node, kids, i)
            if self.missing == "nullPrediction":
                self.refused[j] = True
        true_id = self.grow(kids[i])
        false_id = self.chain(node, kids, i + 1)
        left, right = (true_id, false_id) if true_left else (false_id, true_id)
        self.nodes[at][:5] = [left, right, j, threshold, int(missing_true == true_left)]
        return gate if gate is not None else at

    def feature(self, field: str | None, op: str | None) -> int:
        """The column of a SimplePredicate's field (continuous float / double only)."""
        if op in ("equal", "notEqual"):
            raise _refuse(f"SimplePredicate operator={op!r} (on field {field!r})")
        if field not in self.column:
            raise _refuse(f"a predicate on {field!r}, which is no active field of the model's MiningSchema (a "
                          "derived field?)")
        data = self.model.fields[field]
        kind = data.get("dataType")
        if data.get("optype", "continuous") != "continuous" or kind not in ("float", "double"):
            raise _refuse(f"field {field!r} of optype {data.get('optype')!r} / dataType {kind!r} (continuous float "
                          "or double only)")
        self.types.add(kind if self.single else "double")
        return self.column[field]

    def threshold(self, field: Any, text: Any, op: str) -> float:
        """The threshold t of "x <= t" equivalent to ``x op text`` in the field's precision."""
        if text is None or op not in ("lessOrEqual", "lessThan"):
            raise _refuse(f"SimplePredicate operator={op!r} on {field!r}")
        single = self.single and self.model.fields[field].get("dataType") == "float"
        t = _float32(text) if single else float(text)
        if np.isnan(t):
            raise InputError(f"PMML: a NaN threshold on {field!r}")
        if op == "lessThan":
            t = float(np.nextafter(np.float32(t), np.float32(-np.inf)) if single else np.nextafter(t, -np.inf))
        return t

    def default_taken(self, node: ET.Element, kids: list, i: int) -> bool:
        """Whether a missing value goes to the tested child (True) or on to the next (False)."""
        if self.missing != "defaultChild":
            return False
        default = node.get("defaultChild")
        if default is not None and default == kids[i].get("id"):
            return True
        last = i + 2 == len(kids) and _predicate(kids[i + 1]).tag == "True"
        if default is not None and last and default == kids[i + 1].get("id"):
            return False
        raise _refuse(f"defaultChild={default!r} other than the child tested or the last, True, child")


def _check_schema(element: ET.Element) -> None:
    """Refuses what a model's MiningSchema, LocalTransformations and Targets do beyond the Forest."""
    if element.find("LocalTransformations/DerivedField") is not None:
        raise _refuse("LocalTransformations (DerivedField in front of the model)")
    for field in element.findall("MiningSchema/MiningField"):
        if field.get("missingValueReplacement") is not None:
            raise _refuse(f"MiningField missingValueReplacement (field {field.get('name')!r})")
        if field.get("outliers", "asIs") != "asIs":
            raise _refuse(f"MiningField outliers={field.get('outliers')!r} (field {field.get('name')!r})")
    for target in element.findall("Targets/Target"):
        if target.get("min") is not None or target.get("max") is not None or \
                target.get("castInteger") is not None:
            raise _refuse("Target min / max / castInteger")


def _targets(element: ET.Element) -> tuple[float, float]:
    """(rescaleFactor, rescaleConstant) of a model's ``Targets`` (1, 0 without)."""
    target = element.find("Targets/Target")
    if target is None:
        return 1.0, 0.0
    return float(target.get("rescaleFactor", 1.0)), float(target.get("rescaleConstant", 0.0))


def _segments(element: ET.Element) -> tuple[str, list]:
    """(multipleModelMethod, [(weight, model element)]) of a MiningModel, every segment under ``True``."""
    segmentation = element.find("Segmentation")
    if segmentation is None:
        raise InputError("PMML: a MiningModel without Segmentation")
    out = []
    for segment in segmentation.findall("Segment"):
        if _predicate(segment).tag != "True":
            raise _refuse("a Segment whose predicate is not True")
        model = next((c for c in segment if c.tag in _MODELS), None)
        if model is None:
            raise InputError("PMML: a Segment without a model")
        out.append((float(segment.get("weight", 1.0)), model))
    return segmentation.get("multipleModelMethod", ""), out


def _additive(build: _Trees, element: ET.Element, scale: float, target: int) -> tuple[list, float, str]:
    """(trees, constant, aggregate) of a TreeModel or additive MiningModel, its output times ``scale``."""
    _check_schema(element)
    factor, constant = _targets(element)
    if element.tag == "TreeModel":
        return [build.tree(element, scale * factor, target)], scale * constant, "sum"
    if element.tag != "MiningModel":
        raise _refuse(f"{element.tag} inside a MiningModel")
    method, segments = _segments(element)
    if method not in _ADDITIVE:
        raise _refuse(f"Segmentation multipleModelMethod={method!r} (a vote or selection is not a sum of leaf "
                      "values)")
    weights = np.array([w for w, _ in segments]) if method.startswith("weighted") else np.ones(len(segments))
    mean = _ADDITIVE[method] == "mean"
    if mean:
        weights = weights * len(segments) / weights.sum()
    trees, base = [], 0.0
    for weight, (_, model) in zip(weights, segments):
        if mean and model.tag != "TreeModel":
            raise _refuse("a MiningModel nested inside an average")
        part, part_base, _ = _additive(build, model, scale * factor * weight, target)
        trees += part
        base += part_base
    return trees, (base / len(segments) if mean else base) + scale * constant, _ADDITIVE[method]


def _chain_segments(model: PMMLModel) -> tuple[dict, ET.Element]:
    """({output field: regression model}, final RegressionModel) of a ``modelChain`` classifier."""
    _, segments = _segments(model.model_element)
    *front, (_, final) = segments
    if final.tag != "RegressionModel" or final.get("functionName") != "classification":
        raise _refuse(f"a modelChain ending in {final.tag} functionName={final.get('functionName')!r} (a "
                      "classification RegressionModel only)")
    fields = {}
    for _, element in front:
        outputs = element.findall("Output/OutputField")
        if len(outputs) != 1 or outputs[0].get("feature", "predictedValue") != "predictedValue":
            raise _refuse("a modelChain segment without one predictedValue OutputField")
        fields[outputs[0].get("name")] = element
    return fields, final


def _chain_margins(model: PMMLModel) -> list[tuple[str, float, float, float]]:
    """Per margin of a ``modelChain`` classifier: (chain field, coefficient, intercept, sign)."""
    fields, final = _chain_segments(model)
    norm = final.get("normalizationMethod", "none")
    tables = final.findall("RegressionTable")
    classes = [str(c) for c in model.classes_]
    rows = []
    for table in tables:
        predictors = list(table)
        numeric = [p for p in predictors if p.tag == "NumericPredictor"]
        if len(numeric) != len(predictors) or len(numeric) > 1 or \
                any(p.get("name") not in fields or float(p.get("exponent", 1)) != 1 for p in numeric):
            raise _refuse("a final RegressionTable other than intercept + coefficient * (one chained model)")
        name = numeric[0].get("name") if numeric else None
        rows.append((table.get("targetCategory"), name, float(numeric[0].get("coefficient", "nan")) if numeric else 0.0,
                     float(table.get("intercept", 0.0))))
    if norm == "logit" and len(classes) == 2 and len(rows) == 2 and rows[1][1] is None and rows[0][1] is not None:
        category, name, coefficient, intercept = rows[0]
        return [(str(name), coefficient, intercept, 1.0 if category == classes[1] else -1.0)]
    if norm == "softmax" and sorted(str(r[0]) for r in rows) == sorted(classes) and all(r[1] for r in rows):
        by_class = {str(r[0]): r for r in rows}
        return [(str(by_class[c][1]), by_class[c][2], by_class[c][3], 1.0) for c in classes]
    raise _refuse(f"a modelChain whose final RegressionModel has normalizationMethod={norm!r} with {len(rows)} "
                  f"tables for {len(classes)} classes (logit with two classes, or softmax over all)")


def pmml_forest(model: PMMLModel, predict_fn: Any = None, float_fields: str = "float32") -> Forest:
    """The :class:`Forest` of a :class:`PMMLModel` (see the module docstring for the mapping).

    ``float_fields``: how ``dataType="float"`` fields are compared: "float32" (the PMML specification, JPMML, and
    the scikit-learn / XGBoost models the documents come from), or "double" (the input and the threshold's
    decimal text read as float64, as pypmml 1.5 / PMML4S does): the two differ only on inputs within float32
    rounding of a threshold."""
    if float_fields not in ("float32", "double"):
        raise InputError(f"float_fields must be 'float32' or 'double'; got {float_fields!r}")
    top = model.model_element
    if model.root.find("TransformationDictionary/DerivedField") is not None:
        raise _refuse("TransformationDictionary (DerivedField in front of the model)")
    if model.function_name not in ("regression", "classification"):
        raise _refuse(f"functionName={model.function_name!r}")
    build = _Trees(model, float_fields)
    classification = model.function_name == "classification"
    method = _segments(top)[0] if top.tag == "MiningModel" else ""
    names: list[str]
    if method == "modelChain":
        _check_schema(top)
        fields, _ = _chain_segments(model)
        build.classes = None
        trees, base = [], []
        for k, (field, coefficient, intercept, sign) in enumerate(_chain_margins(model)):
            part, constant, aggregate = _additive(build, fields[field], sign * coefficient, k)
            if aggregate != "sum":
                raise _refuse("a modelChain segment that averages its trees")
            trees += part
            base.append(constant + sign * intercept)
        space = "margin"
        names = ["margin"] if len(base) == 1 else [str(c) for c in model.classes_]
    else:
        if top.tag not in ("TreeModel", "MiningModel"):
            raise _refuse(f"{top.tag} (TreeModel and MiningModel only)")
        if classification and (top.find("Targets/Target") is not None or method.startswith(("sum", "weightedSum"))):
            raise _refuse(f"a classification MiningModel by {method!r} / with Targets")
        trees, constant, aggregate = _additive(build, top, 1.0, 0)
        width = len(model.classes_) if classification else 1
        base = [0.0] * width if classification else [constant]
        space = "probability" if classification else "raw"
        names = [str(c) for c in model.classes_] if classification else ["output"]
    if len(build.types) > 1:
        raise _refuse("a model comparing both float and double fields")
    if method == "modelChain":
        aggregate = "sum"
    app = model.root.find("Header/Application")
    return concat_trees(
        trees, base_score=np.asarray(base, dtype=np.float64), n_features=model.n_features_in_, split_rule="le",
        input_float32=build.types == {"float"}, aggregate=aggregate,
        task="classification" if classification else "regression", output_space=space, output_names=names,
        model_type=f"pmml.{top.tag}" + ("" if app is None else f" ({app.get('name', '')})"),
        feature_names=list(model.feature_names), predict_fn=predict_fn,
        nan_refused=build.refused if build.refused.any() else None)


class PMMLImporter(LibraryImporter):
    """PMML 4.x TreeModel / MiningModel documents read as :class:`PMMLModel`."""

    name = "pmml"
    supported = "PMML TreeModel / MiningModel documents (PMMLModel)"

    def owns(self, cls: type) -> bool:
        """Subclasses of :class:`PMMLModel`."""
        return issubclass(cls, PMMLModel)

    def to_forest(self, model: Any) -> Forest:
        """See the module docstring."""
        return pmml_forest(model, self.predictor(model))

    def feature_names(self, model: Any) -> Any:
        """The MiningSchema's active fields."""
        return list(model.feature_names)

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """A PMMLModel does not change: its parsed document."""
        return (model.root,), ()

    def predictor(self, model: Any) -> ModelPredictor:
        """The evaluator (``pypmml``) in the Forest's output space: ``decision_function`` for a modelChain,
        ``predict_proba`` for other classifiers, ``predict`` for regression."""
        if model.model_element.tag == "MiningModel" and _segments(model.model_element)[0] == "modelChain":
            return ModelPredictor(model, _decision_function)
        return ModelPredictor(model, _predict_proba if hasattr(model, "classes_") else _predict)


def _predict(model: Any, X: Any) -> Any:
    return model.predict(X)


def _predict_proba(model: Any, X: Any) -> Any:
    return model.predict_proba(X)


def _decision_function(model: Any, X: Any) -> Any:
    return model.decision_function(X)


def parity_gap(forest: Forest, model: PMMLModel, X: Any) -> float:
    """The largest ``|forest.predict(X) - evaluator(X)|`` (the evaluator: ``pypmml`` in the Forest's output
    space), NaN where either gives NaN counted as a mismatch (inf): a check that an import is faithful."""
    ours = forest.predict(X)
    theirs = PMMLImporter().predictor(model)(X)
    gap = np.abs(ours - theirs)
    return float(np.where(np.isnan(ours) != np.isnan(theirs), np.inf, np.nan_to_num(gap, nan=0.0)).max(initial=0.0))


register(PMMLImporter())
