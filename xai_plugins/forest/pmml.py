"""The PMML importer: PMML 4.x ``TreeModel`` / ``MiningModel`` documents (as written by sklearn2pmml and the
JPMML converters) -> :class:`~xai_plugins.forest.Forest`, read with the standard library only.

A document is a :class:`PMMLModel` (:meth:`PMMLModel.load`: a path, bytes or text); its own predictor, for
Monte Carlo estimates and the parity certificate (:mod:`.parity`), is the PMML evaluator ``pypmml`` (extra ``pmml``,
needs Java), given the rows as JSON with every float64 digit. The trees are built in :mod:`._pmml_trees`.

How PMML constructs map onto the Forest:

- **Trees.** A PMML ``Node`` tries its children in order and enters the first whose predicate is true; when
  none is, ``noTrueChildStrategy`` says what happens (``returnLastPrediction``: the node's own score, a leaf;
  ``returnNullPrediction``: no prediction, refused unless a ``True`` child ends the list). Each child test
  becomes one binary node whose left branch is "x <= t" (``split_rule="le"``): ``lessOrEqual`` as is,
  ``lessThan`` as ``x <= t'`` with ``t'`` the next representable number below ``t``, ``greaterThan`` /
  ``greaterOrEqual`` as the same two with the branches swapped; the false branch goes on to the next
  child. ``True`` / ``False`` predicates select or skip a child; ``isMissing`` / ``isNotMissing`` become a
  node at threshold +inf, which every number passes left and only a missing value passes right. A
  ``CompoundPredicate`` with one operand is that operand; other compound predicates (``and`` / ``or`` /
  ``xor`` / ``surrogate`` of several) are refused by name.
- **Categorical fields** (``optype="categorical"`` with declared ``Value`` s, whose positions are the codes:
  ``Forest.category_labels``, a DataFrame's text / category column read by label): ``SimpleSetPredicate``
  ``isIn`` / ``isNotIn`` and ``equal`` / ``notEqual`` become set-membership splits (csrc/xai.h); a value outside
  the declared ones is refused (``invalidValueTreatment="returnInvalid"``, the default) or tests as none of them
  (``"asIs"``; ``"asMissing"`` is refused). Order comparisons on them, set predicates or equality on continuous
  fields, and continuous fields that are not float / double are refused by name.
- **Numbers.** A field of ``dataType="float"`` is compared in float32, as the PMML specification, the
  reference evaluator JPMML and the scikit-learn / XGBoost models behind such documents do: its thresholds
  are read correctly rounded to float32 (``input_float32=True``); ``double`` fields are compared in float64.
  A model mixing both is refused. pypmml 1.5 (PMML4S) reads float fields and their thresholds as doubles:
  it differs from the Forest only on inputs within float32 rounding of a threshold, and equals
  ``pmml_forest(model, float_fields="double")`` everywhere. Thresholds and scores are read from the
  document's decimal text (JPMML writes round-trip decimals: exact); in a model of ``x-mathContext="float"``
  (JPMML's XGBoost models) scores, rescalings and coefficients are float32 numbers and are read so, as JPMML
  does (JPMML also adds them in float32, the Forest in float64; pypmml reads them as doubles).
- **Missing values** (``missingValueStrategy`` of a TreeModel, for a predicate on a missing field):
  ``none`` (the predicate is false: the next child), ``defaultChild`` (the node's ``defaultChild`` when it is
  the child being tested, or the last, ``True``, child), ``lastPrediction`` (the parent's score: a node at
  threshold +inf in front sends a missing value to a leaf with that score) map exactly onto NaN routing;
  ``nullPrediction`` (no prediction, scikit-learn's documents) marks the features the trees test as refusing
  a missing value (``nan_refused``: such rows are refused, where JPMML gives no prediction when the row's path
  tests the field). ``aggregateNodes``, ``weightedConfidence`` are refused by name. (pypmml 1.5 evaluates
  every strategy as ``none``.)
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
- ``LocalTransformations`` / ``TransformationDictionary`` derived fields (sklearn2pmml writes a scaler in a
  Pipeline as float32 ``Apply`` arithmetic), ``MiningField`` replacement of missing values or outliers, and
  ``Target`` clamping are refused by name.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from .._extras import require
from ..errors import InputError, UnsupportedModelError
from ._pmml_trees import (
    MODELS,
    Trees,
    additive,
    check_schema,
    child,
    labels_of,
    number,
    refuse,
    segments_of,
    targets_of,
)
from .layout import Categories, Forest, category_bitsets, concat_trees
from .predictor import ModelPredictor, decision_function, labelled, predict, predict_proba, probability_predictor
from .registry import LibraryImporter, installed_version, register

__all__: list[str] = []      # internal module: PMMLModel is reached through xai_plugins.load_model


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class PMMLModel:
    """A PMML document holding one tree model, parsed with ``xml.etree.ElementTree`` (namespaces dropped).

    Weakly referenceable (the import cache holds models weakly) and immutable once read; ``predict``,
    ``predict_proba`` and ``decision_function`` run the evaluator ``pypmml`` (made on first use).

    Parameters
    ----------
    text : str
        The document (:meth:`load` reads one from a path or bytes). A DOCTYPE / ENTITY declaration is refused.

    Attributes
    ----------
    text : str
        The document.
    root : xml.etree.ElementTree.Element
        Its parsed ``<PMML>`` element.
    model_element : xml.etree.ElementTree.Element
        Its one model (``TreeModel``, ``MiningModel``...).
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
        if "<!DOCTYPE" in text or "<!ENTITY" in text:
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
        models = [child for child in root if child.tag in MODELS]
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

    def __getstate__(self) -> dict:
        """Pickled without its evaluators (Java objects, made again on first use)."""
        return dict(self.__dict__, _evaluators={})

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
        return pd.DataFrame(np.asarray(X).reshape(-1, self.n_features_in_), columns=self.feature_names)

    def _scores(self, X: Any, key: str = "") -> Any:
        """The evaluator's output columns for the rows ``X``, as a DataFrame. The rows go as JSON written here with
        every float64 digit (pypmml's own DataFrame path writes 10 significant digits, which moves values near a
        threshold across it) and missing values as ``null``."""
        import pandas as pd

        frame = self._frame(X)
        kinds = [self.fields[name].get("dataType") for name in frame.columns]
        data = [[_json_value(v, kind) for v, kind in zip(row, kinds)] for row in frame.itertuples(index=False)]
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
            factor, constant = targets_of(fields[name])
            values = np.asarray(self._scores(X, name).iloc[:, 0], dtype=np.float64) * factor + constant
            rows = len(values)
            columns.append(sign * (coefficient * values + intercept))
        return np.column_stack(columns) if rows is not None else np.zeros((0, 0))


def _json_value(value: Any, kind: str | None) -> Any:
    """One input value as the evaluator's JSON reads it: None for a missing one, else in the field's type."""
    if value is None or isinstance(value, (float, np.floating)) and np.isnan(value):
        return None
    if kind == "integer" and not isinstance(value, str):
        return int(value)
    if kind in ("float", "double") and not isinstance(value, str):
        return float(value)
    return value if isinstance(value, (str, int, float)) else str(value)


def _sub_document(model: PMMLModel, field: str) -> str:
    """A PMML document whose model is the regression segment of ``model``'s chain that outputs ``field``."""
    segment = _chain_segments(model)[0][field]
    root = ET.Element("PMML", {"xmlns": "http://www.dmg.org/PMML-4_4", "version": "4.4"})
    root.append(child(model.root, "Header"))
    dictionary = ET.fromstring(ET.tostring(child(model.root, "DataDictionary")))
    ET.SubElement(dictionary, "DataField", {"name": "__value__", "optype": "continuous", "dataType": "double"})
    root.append(dictionary)
    copy = ET.fromstring(ET.tostring(segment))
    for part in copy.findall("Output") + copy.findall("Targets"):        # its Targets: applied by the caller
        copy.remove(part)
    ET.SubElement(child(copy, "MiningSchema"), "MiningField", {"name": "__value__", "usageType": "target"})
    root.append(copy)
    return ET.tostring(root, encoding="unicode")


def _chain_segments(model: PMMLModel) -> tuple[dict, ET.Element]:
    """({output field: regression model}, final RegressionModel) of a ``modelChain`` classifier."""
    _, segments = segments_of(model.model_element)
    *front, (_, final) = segments
    if final.tag != "RegressionModel" or final.get("functionName") != "classification":
        raise refuse(f"a modelChain ending in {final.tag} functionName={final.get('functionName')!r} (a "
                      "classification RegressionModel only)")
    fields = {}
    for _, element in front:
        outputs = element.findall("Output/OutputField")
        if len(outputs) != 1 or outputs[0].get("feature", "predictedValue") != "predictedValue":
            raise refuse("a modelChain segment without one predictedValue OutputField")
        fields[outputs[0].get("name")] = element
    return fields, final


def _chain_margins(model: PMMLModel) -> list[tuple[str, float, float, float]]:
    """Per margin of a ``modelChain`` classifier: (chain field, coefficient, intercept, sign)."""
    fields, final = _chain_segments(model)
    norm = final.get("normalizationMethod", "none")
    tables = final.findall("RegressionTable")
    single = final.get("x-mathContext") == "float"
    classes = [str(c) for c in model.classes_]
    rows = []
    for table in tables:
        predictors = list(table)
        numeric = [p for p in predictors if p.tag == "NumericPredictor"]
        if len(numeric) != len(predictors) or len(numeric) > 1 or \
                any(p.get("name") not in fields or float(p.get("exponent", 1)) != 1 for p in numeric):
            raise refuse("a final RegressionTable other than intercept + coefficient * (one chained model)")
        name = numeric[0].get("name") if numeric else None
        coefficient = number(numeric[0].get("coefficient", "nan"), single) if numeric else 0.0
        rows.append((table.get("targetCategory"), name, coefficient, number(table.get("intercept", "0"), single)))
    if norm == "logit" and len(classes) == 2 and len(rows) == 2 and rows[1][1] is None and rows[0][1] is not None:
        category, name, coefficient, intercept = rows[0]
        return [(str(name), coefficient, intercept, 1.0 if category == classes[1] else -1.0)]
    if norm == "softmax" and sorted(str(r[0]) for r in rows) == sorted(classes) and all(r[1] for r in rows):
        by_class = {str(r[0]): r for r in rows}
        return [(str(by_class[c][1]), by_class[c][2], by_class[c][3], 1.0) for c in classes]
    raise refuse(f"a modelChain whose final RegressionModel has normalizationMethod={norm!r} with {len(rows)} "
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
        raise refuse("TransformationDictionary (DerivedField in front of the model)")
    if model.function_name not in ("regression", "classification"):
        raise refuse(f"functionName={model.function_name!r}")
    build = Trees(model, float_fields)
    classification = model.function_name == "classification"
    method = segments_of(top)[0] if top.tag == "MiningModel" else ""
    names: list[str]
    if method == "modelChain":
        check_schema(top)
        fields, _ = _chain_segments(model)
        build.classes = None
        trees, base = [], []
        for k, (field, coefficient, intercept, sign) in enumerate(_chain_margins(model)):
            part, constant, aggregate = additive(build, fields[field], sign * coefficient, k)
            if aggregate != "sum":
                raise refuse("a modelChain segment that averages its trees")
            trees += part
            base.append(constant + sign * intercept)
        space = "margin"
        names = ["margin"] if len(base) == 1 else [str(c) for c in model.classes_]
    else:
        if top.tag not in ("TreeModel", "MiningModel"):
            raise refuse(f"{top.tag} (TreeModel and MiningModel only)")
        if classification and (top.find("Targets/Target") is not None or method.startswith(("sum", "weightedSum"))):
            raise refuse(f"a classification MiningModel by {method!r} / with Targets")
        trees, constant, aggregate = additive(build, top, 1.0, 0)
        width = len(model.classes_) if classification else 1
        base = [0.0] * width if classification else [constant]
        space = "probability" if classification else "raw"
        names = [str(c) for c in model.classes_] if classification else ["output"]
    if len(build.types) > 1:
        raise refuse("a model comparing both float and double fields")
    if method == "modelChain":
        aggregate = "sum"
    app = model.root.find("Header/Application")
    categorical = _categorical(model, trees, build.labels)
    return concat_trees(
        trees, base_score=np.asarray(base, dtype=np.float64), n_features=model.n_features_in_, split_rule="le",
        input_float32=build.types == {"float"}, aggregate=aggregate,
        task="classification" if classification else "regression", output_space=space, output_names=names,
        model_type=f"pmml.{top.tag}" + ("" if app is None else f" ({app.get('name', '')})"),
        feature_names=list(model.feature_names), predict_fn=predict_fn,
        nan_refused=build.refused if build.refused.any() else None, **categorical)


def _categorical(model: PMMLModel, trees: list, labels: list) -> dict:
    """The Forest's categorical fields (csrc/xai.h) from the trees' categorical nodes; empty without any. A value
    outside a field's declared values is refused (an invalid value: ``invalidValueTreatment="returnInvalid"``,
    the default) or read as none of them (``"asIs"``)."""
    if all(known is None for known in labels):
        return {}
    counts = np.array([0 if known is None else len(known) for known in labels], dtype=np.int32)
    nodes, atoms, offset = [], [], 0
    for tree in trees:
        for node in sorted(tree["cats"]):
            nodes.append(offset + node)
            atoms.append(tree["cats"][node])
        offset += len(tree["left"])
    features = np.concatenate([np.asarray(t["feature"], dtype=np.int64) for t in trees])
    cat_start, cat_bits = category_bitsets(np.array(nodes, dtype=np.int64), atoms,
                                           counts[features[np.array(nodes, dtype=np.int64)]], offset)
    treatment = {f.get("name"): f.get("invalidValueTreatment", "returnInvalid")
                 for f in model.model_element.findall("MiningSchema/MiningField")}
    categories: list = []
    for name, known in zip(model.feature_names, labels):
        if known is not None and treatment.get(name) not in ("returnInvalid", "asIs"):
            raise refuse(f"invalidValueTreatment={treatment.get(name)!r} on categorical field {name!r}")
        categories.append(None if known is None else Categories(
            known, refusal=f"the PMML document declares the values {known[:8]} of {name!r} (an invalid value, "
            "invalidValueTreatment 'returnInvalid')", refuses_unseen=treatment.get(name) != "asIs"))
    return dict(n_categories=counts, cat_start=cat_start, cat_bits=cat_bits, category_labels=categories,
                numeric_labels=True)


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

    def runtime(self, model: Any) -> tuple[str, float]:
        """pypmml, the PMML evaluator (Java); documents whose numbers are float32 (XGBoost's) are summed in float32
        by PMML's reference evaluator, so the certificate allows float32 rounding for them."""
        version = installed_version("pypmml")
        return f"pypmml {version}", 2.0 ** -24 if 'x-mathContext="float"' in model.text else 2.0 ** -53

    def predictor(self, model: Any) -> ModelPredictor:
        """The evaluator (``pypmml``) in the Forest's output space: ``decision_function`` for a modelChain,
        ``predict_proba`` for other classifiers, ``predict`` for regression."""
        method: Any = predict_proba if hasattr(model, "classes_") else predict
        if model.model_element.tag == "MiningModel" and segments_of(model.model_element)[0] == "modelChain":
            method = decision_function
        return ModelPredictor(model, labelled(method, labels_of(model)))

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """A ``modelChain`` classifier's ``logit`` (logistic) or ``softmax`` of its margin, and pypmml's
        probabilities."""
        return probability_predictor(model, forest)


register(PMMLImporter())
