"""Tree building of the PMML importer (:mod:`xai_plugins.forest.pmml`, whose docstring gives the mapping of PMML
constructs onto the Forest): the per-tree arrays of PMML ``TreeModel`` s, the additive ``MiningModel`` s over them,
and the refusals by name of what does not map exactly."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import InputError, UnsupportedModelError

__all__: list[str] = []      # internal module of forest/pmml.py

MODELS = ("TreeModel", "MiningModel", "RegressionModel", "GeneralRegressionModel", "NeuralNetwork",
           "SupportVectorMachineModel", "NaiveBayesModel", "Scorecard", "RuleSetModel", "ClusteringModel")
ADDITIVE = {"sum": "sum", "weightedSum": "sum", "average": "mean", "weightedAverage": "mean"}
SWAPPED = {"greaterThan": "lessOrEqual", "greaterOrEqual": "lessThan"}


def child(element: ET.Element, path: str) -> ET.Element:
    """The element at ``path`` under ``element`` (InputError when there is none)."""
    found = element.find(path)
    if found is None:
        raise InputError(f"PMML: <{element.tag}> without {path}")
    return found


def refuse(what: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"PMML: {what} is not supported")


def predicate_of(node: ET.Element) -> ET.Element:
    """The predicate of a ``Node`` (a one-operand ``CompoundPredicate`` is its operand)."""
    found = next((child for child in node if child.tag.endswith("Predicate") or child.tag in ("True", "False")),
                 None)
    if found is None:
        raise UnsupportedModelError("PMML: a Node without a predicate")
    while found.tag == "CompoundPredicate":
        operands = [c for c in found if c.tag.endswith("Predicate") or c.tag in ("True", "False")]
        if len(operands) != 1:
            raise refuse(f"CompoundPredicate booleanOperator={found.get('booleanOperator')!r} with "
                          f"{len(operands)} operands")
        found = operands[0]
    return found


def number(text: str, single: bool) -> float:
    """A number of the document: ``text`` read as float32 (correctly rounded) in a model of
    ``x-mathContext="float"`` (JPMML's XGBoost models: their values are float32), else as float64."""
    return float32_of(text) if single else float(text)


def float32_of(text: str) -> float:
    """``text`` correctly rounded to float32 (ties to even), as a Python float."""
    exact = Fraction(text)
    near = np.float32(float(exact))
    options = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
    finite = [c for c in options if np.isfinite(c)]
    return float(min(finite, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1)))


class Trees:
    """Builds the Forest's per-tree arrays from PMML TreeModels (see the module docstring)."""

    def __init__(self, model: Any, float_fields: str = "float32") -> None:
        self.model = model
        self.single = float_fields == "float32"
        self.column = {name: j for j, name in enumerate(model.feature_names)}
        self.classes = [str(c) for c in model.classes_] if hasattr(model, "classes_") else None
        self.refused = np.zeros(model.n_features_in_, dtype=bool)
        self.labels = labels_of(model)
        self.types: set = set()

    def tree(self, element: ET.Element, scale: float, target: int = 0) -> dict:
        """The arrays of one TreeModel, leaf values multiplied by ``scale``."""
        check_schema(element)
        self.float_math = element.get("x-mathContext") == "float"
        self.missing = element.get("missingValueStrategy", "none")
        if self.missing not in ("none", "defaultChild", "lastPrediction", "nullPrediction"):
            raise refuse(f"missingValueStrategy={self.missing!r}")
        self.no_true = element.get("noTrueChildStrategy", "returnNullPrediction")
        if self.no_true not in ("returnNullPrediction", "returnLastPrediction"):
            raise refuse(f"noTrueChildStrategy={self.no_true!r}")
        self.nodes: list[list] = []
        self.cats: dict[int, list] = {}             # categorical node -> the atoms it sends left
        self.scale = scale
        root = element.find("Node")
        if root is None or predicate_of(root).tag != "True":
            raise refuse("a TreeModel whose root Node has a predicate other than True")
        self.grow(root)
        left, right, feature, threshold, missing_left, value = zip(*self.nodes)
        return dict(left=left, right=right, feature=feature, threshold=threshold, missing_left=missing_left,
                    value=np.array(value, dtype=np.float64), target=target, cats=self.cats)

    def new(self, value: Any = None) -> int:
        width = 1 if self.classes is None else len(self.classes)
        self.nodes.append([-1, -1, 0, 0.0, 0, np.zeros(width) if value is None else value])
        return len(self.nodes) - 1

    def value(self, node: ET.Element) -> np.ndarray | None:
        """A node's value (score, or class probabilities) times the scale; None when it has none."""
        score = node.get("score")
        if self.classes is None:
            return None if score is None else np.array([number(score, self.float_math) * self.scale])
        dists = node.findall("ScoreDistribution")
        out = np.zeros(len(self.classes))
        if dists:
            given = all(d.get("probability") is not None for d in dists)
            weights = [number(d.get("probability" if given else "recordCount", "0"), self.float_math) for d in dists]
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
            raise refuse("noTrueChildStrategy='returnNullPrediction' where no child's predicate may be true (a "
                          "null prediction)")
        predicate = predicate_of(kids[i])
        if predicate.tag == "True":
            return self.grow(kids[i])
        if predicate.tag == "False":
            return self.chain(node, kids, i + 1)
        if predicate.tag not in ("SimplePredicate", "SimpleSetPredicate"):
            raise refuse(predicate.tag)
        field = predicate.get("field", "")
        op = predicate.get("operator", predicate.get("booleanOperator", ""))
        j = self.feature(field, op, predicate.tag)
        known = self.labels[j]
        gate = None
        if self.missing == "lastPrediction" and op not in ("isMissing", "isNotMissing"):
            gate = self.new()               # a missing value: the parent's score (right), others on (left)
            missing_leaf = self.leaf(node, "missingValueStrategy='lastPrediction' may return it")
            self.nodes[gate][:5] = [gate + 2, missing_leaf, j, np.inf, 0]
            if known is not None:
                self.cats[gate] = list(range(len(known) + 1))
        at = self.new()
        if op in ("isMissing", "isNotMissing"):
            threshold, true_left, missing_true = np.inf, op == "isNotMissing", op == "isMissing"
            if known is not None:
                self.cats[at] = list(range(len(known) + 1))
        elif known is not None:
            threshold, true_left, missing_true = 0.0, True, self.default_taken(node, kids, i)
            self.cats[at] = members(predicate, op, known, self.model.fields[field].get("dataType"))
            if self.missing == "nullPrediction":
                self.refused[j] = True
        else:
            threshold = self.threshold(field, predicate.get("value"), SWAPPED.get(op, op))
            true_left, missing_true = op not in SWAPPED, self.default_taken(node, kids, i)
            if self.missing == "nullPrediction":
                self.refused[j] = True
        true_id = self.grow(kids[i])
        false_id = self.chain(node, kids, i + 1)
        left, right = (true_id, false_id) if true_left else (false_id, true_id)
        self.nodes[at][:5] = [left, right, j, threshold, int(missing_true == true_left)]
        return gate if gate is not None else at

    def feature(self, field: str, op: str, tag: str) -> int:
        """The column of a predicate's field: continuous float / double, or categorical with declared values."""
        if field not in self.column:
            raise refuse(f"a predicate on {field!r}, which is no active field of the model's MiningSchema (a "
                          "derived field?)")
        if self.labels[self.column[field]] is not None:
            if op not in ("equal", "notEqual", "isIn", "isNotIn", "isMissing", "isNotMissing"):
                raise refuse(f"{tag} operator={op!r} on categorical field {field!r}")
            return self.column[field]
        if tag != "SimplePredicate" or op in ("equal", "notEqual"):
            raise refuse(f"{tag} operator={op!r} (on field {field!r}, not categorical)")
        data = self.model.fields[field]
        kind = data.get("dataType")
        if data.get("optype", "continuous") != "continuous" or kind not in ("float", "double"):
            raise refuse(f"field {field!r} of optype {data.get('optype')!r} / dataType {kind!r} (continuous float "
                          "or double only)")
        self.types.add(kind if self.single else "double")
        return self.column[field]

    def threshold(self, field: Any, text: Any, op: str) -> float:
        """The threshold t of "x <= t" equivalent to ``x op text`` in the field's precision."""
        if text is None or op not in ("lessOrEqual", "lessThan"):
            raise refuse(f"SimplePredicate operator={op!r} on {field!r}")
        single = self.single and self.model.fields[field].get("dataType") == "float"
        t = float32_of(text) if single else float(text)
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
        last = i + 2 == len(kids) and predicate_of(kids[i + 1]).tag == "True"
        if default is not None and last and default == kids[i + 1].get("id"):
            return False
        raise refuse(f"defaultChild={default!r} other than the child tested or the last, True, child")


def typed(text: str, kind: str | None) -> Any:
    """A categorical value of the document in the field's ``dataType`` (what a DataFrame column holds)."""
    if kind == "integer":
        return int(text)
    if kind in ("float", "double"):
        return float(text)
    return text


def labels_of(model: Any) -> list:
    """Per active field, its categories (the ``DataField``'s valid ``Value`` s, typed: a category's position is
    its code) for a categorical field, None for a continuous one."""
    out: list = []
    for name in model.feature_names:
        data = model.fields[name]
        if data.get("optype", "continuous") != "categorical":
            out.append(None)
            continue
        values = [v.get("value", "") for v in data.findall("Value") if v.get("property", "valid") == "valid"]
        if not values:
            raise refuse(f"categorical field {name!r} without declared values")
        out.append([typed(v, data.get("dataType")) for v in values])
    return out


_ARRAY_ITEM = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def members(predicate: ET.Element, op: str, known: list, kind: str | None) -> list:
    """The atoms (codes 0 .. K-1, K: any other value) for which a categorical predicate is true."""
    if predicate.tag == "SimplePredicate":
        values = [typed(predicate.get("value", ""), kind)]
    else:
        array = child(predicate, "Array")
        values = [typed(quoted.replace('\\"', '"') if quoted or not bare else bare, kind)
                  for quoted, bare in _ARRAY_ITEM.findall(array.text or "")]
    inside = {known.index(v) for v in values if v in known}
    if op in ("equal", "isIn"):
        return sorted(inside)
    return [a for a in range(len(known) + 1) if a not in inside]


def check_schema(element: ET.Element) -> None:
    """Refuses what a model's MiningSchema, LocalTransformations and Targets do beyond the Forest."""
    if element.find("LocalTransformations/DerivedField") is not None:
        raise refuse("LocalTransformations (DerivedField in front of the model)")
    for field in element.findall("MiningSchema/MiningField"):
        if field.get("missingValueReplacement") is not None:
            raise refuse(f"MiningField missingValueReplacement (field {field.get('name')!r})")
        if field.get("outliers", "asIs") != "asIs":
            raise refuse(f"MiningField outliers={field.get('outliers')!r} (field {field.get('name')!r})")
    for target in element.findall("Targets/Target"):
        if target.get("min") is not None or target.get("max") is not None or \
                target.get("castInteger") is not None:
            raise refuse("Target min / max / castInteger")


def targets_of(element: ET.Element) -> tuple[float, float]:
    """(rescaleFactor, rescaleConstant) of a model's ``Targets`` (1, 0 without)."""
    target = element.find("Targets/Target")
    if target is None:
        return 1.0, 0.0
    single = element.get("x-mathContext") == "float"
    return number(target.get("rescaleFactor", "1"), single), number(target.get("rescaleConstant", "0"), single)


def segments_of(element: ET.Element) -> tuple[str, list]:
    """(multipleModelMethod, [(weight, model element)]) of a MiningModel, every segment under ``True``."""
    segmentation = element.find("Segmentation")
    if segmentation is None:
        raise InputError("PMML: a MiningModel without Segmentation")
    out = []
    for segment in segmentation.findall("Segment"):
        if predicate_of(segment).tag != "True":
            raise refuse("a Segment whose predicate is not True")
        model = next((c for c in segment if c.tag in MODELS), None)
        if model is None:
            raise InputError("PMML: a Segment without a model")
        out.append((float(segment.get("weight", 1.0)), model))
    return segmentation.get("multipleModelMethod", ""), out


def additive(build: Trees, element: ET.Element, scale: float, target: int) -> tuple[list, float, str]:
    """(trees, constant, aggregate) of a TreeModel or additive MiningModel, its output times ``scale``."""
    check_schema(element)
    factor, constant = targets_of(element)
    if element.tag == "TreeModel":
        return [build.tree(element, scale * factor, target)], scale * constant, "sum"
    if element.tag != "MiningModel":
        raise refuse(f"{element.tag} inside a MiningModel")
    method, segments = segments_of(element)
    if method not in ADDITIVE:
        raise refuse(f"Segmentation multipleModelMethod={method!r} (a vote or selection is not a sum of leaf "
                      "values)")
    weights = np.array([w for w, _ in segments]) if method.startswith("weighted") else np.ones(len(segments))
    mean = ADDITIVE[method] == "mean"
    if mean:
        weights = weights * len(segments) / weights.sum()
    trees, base = [], 0.0
    for weight, (_, model) in zip(weights, segments):
        if mean and model.tag != "TreeModel":
            raise refuse("a MiningModel nested inside an average")
        part, part_base, _ = additive(build, model, scale * factor * weight, target)
        trees += part
        base += part_base
    return trees, (base / len(segments) if mean else base) + scale * constant, ADDITIVE[method]
