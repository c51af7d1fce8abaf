"""The ONNX importer: ``ai.onnx.ml`` tree ensembles -> :class:`~xai_plugins.forest.Forest`.

An :class:`OnnxModel` wraps a loaded ``onnx.ModelProto`` whose graph holds one tree-ensemble node:
``TreeEnsembleRegressor`` / ``TreeEnsembleClassifier`` (ai.onnx.ml opsets 1 and 3) or ``TreeEnsemble``
(ai.onnx.ml opset 5). The graph is read with the ``onnx`` package; ``onnxruntime`` (optional) only runs it.

How the attributes map onto the Forest:

- ``nodes_*`` (legacy) or ``tree_roots`` / ``nodes_*`` / ``leaf_*`` (opset 5): one Forest tree per ONNX
  tree, in the order onnxruntime sums them; a node's children become the Forest's lower (left) and upper
  (right) side of its column. ``BRANCH_LEQ`` / ``LT`` / ``GTE`` / ``GT`` are one threshold each; ``EQ`` and
  ``NEQ`` are two thresholds (the node becomes two, the subtree reached from both sides copied);
  ``BRANCH_MEMBER`` (opset 5) is a categorical set split of the Forest (the column then takes integer codes).
- ``nodes_missing_value_tracks_true``: a NaN goes to the true branch, else where its comparison sends it
  (false, or true for ``NEQ``), as onnxruntime routes it.
- leaf weights (``target_*`` / ``class_*`` / ``leaf_*``) per output; ``base_values``; ``aggregate_function``
  SUM (Forest "sum") or AVERAGE ("mean"); MIN / MAX are refused.
- ``post_transform``: NONE gives the outputs themselves ("raw", or "probability" for a classifier);
  LOGISTIC, SOFTMAX, SOFTMAX_ZERO give the margin (the scores before the transform, output space
  "margin", exact as for boosted models); PROBIT is refused. A binary classifier with one score (the
  skl2onnx / onnxmltools convention) gives one "margin" output, or with NONE onnxruntime's two columns
  ``[1 - s, s]`` (all weights >= 0) or ``[-s, s]``.
- Operators in front of the ensemble that act on each column alone and monotonely (``Identity``,
  ``Cast`` to float / double, ``Scaler``, ``Imputer`` of NaN, ``Concat`` of one-column inputs, which then
  name the features) are compiled into the input columns: each threshold is the exact switch point on the
  input column, found by bisection through an emulation of onnxruntime's arithmetic
  (:func:`xai_plugins.forest.pipeline.switch_points`). ``Reshape`` to (rows, columns) and ``Gather`` of
  constant columns (axis 1) only rearrange columns.
- Encoded categorical inputs, as skl2onnx writes a ``ColumnTransformer``'s ``OneHotEncoder`` /
  ``OrdinalEncoder``: an ai.onnx.ml ``OneHotEncoder`` (``cats_strings`` / ``cats_int64s``) or ``LabelEncoder``
  (``keys_strings`` / ``keys_int64s`` -> ``values_int64s`` / ``values_floats``, its default for any other key)
  of a string or int64 graph input column (behind an identity ``Cast`` at most, followed by ``Cast``,
  ``Reshape``, ``Concat`` only) makes that input ONE categorical feature of the Forest, as
  :mod:`xai_plugins.forest.pipeline` reads a Pipeline's encoders (its
  :class:`~xai_plugins.forest.pipeline.TransformedColumn`: labels and atoms): its codes are the positions in the
  encoder's categories, ``category_labels`` those categories (a DataFrame of strings or integers is read as
  labels), and every split on a dummy or code column becomes a set split on it (which codes, the unseen and
  the missing category take the true branch, as onnxruntime compares their encoded values). An unseen
  category is the all-zero row (``zeros=1``) or the LabelEncoder's default; a missing value reaches a string
  input as text no encoder knows (unseen). ``zeros=0`` makes onnxruntime fail on an unseen category: the
  Forest refuses it too (:class:`~xai_plugins.forest.layout.Categories`), as it refuses a missing value of an
  int64 input (which holds none). Every graph input is a feature, read or not (onnxruntime takes them all).
- Behind the ensemble ``Identity``, ``Cast`` and ``ZipMap`` are allowed. Any other operator is refused by
  name.
- Refused (UnsupportedModelError, naming it): aggregate MIN / MAX, post_transform PROBIT, a binary classifier
  whose scores onnxruntime defines row by row (class-1-only weights, two base values with one score),
  BRANCH_MEMBER sets that are not integer codes or on a transformed column, a column with both set and
  threshold splits, integer or string graph inputs not read through an encoder, columns compared partly in
  float32 and partly in double, an Imputer of a value other than NaN, a Cast to a non-float type (but in front
  of an encoder), a Concat along rows, a Reshape / Gather that does more than rearrange columns, an encoder of a
  transformed column or followed by anything but Cast / Reshape / Concat, a LabelEncoder of other keys or
  values (``keys_floats``, ``values_strings``, tensors), one input encoded twice with other categories.

Float32: the legacy operators store thresholds and weights as float32 (``*_as_tensor`` doubles where the
converter wrote them) and onnxruntime compares in the type of the tensor the ensemble reads, thresholds and
weights cast to it: a float graph input is compared (and its leaf weights summed) in float32. The Forest
then has ``input_float32`` True and thresholds on the float32 grid, so it routes every row exactly as
onnxruntime does; its outputs are summed in float64, so they differ from onnxruntime's float32 sums by
float32 rounding only (:func:`parity`). A double input is compared in double (``input_float32`` False),
unless a Cast to float comes first; a Scaler on a double computes in double and rounds to float32, so
the routing depends on the double itself. :meth:`OnnxModel.predict` casts the rows to the graph input's
type, as a caller of onnxruntime must.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._extras import require
from ..errors import InputTypeError, UnsupportedModelError
from ._onnx_trees import binary_single, ensemble_forest
from .layout import Categories, Forest
from .pipeline import TransformedColumn
from .predictor import ModelPredictor, labelled, probability_predictor
from .registry import LibraryImporter, installed_version, register

__all__: list[str] = []      # internal module: the public names are in the API reference

_ENSEMBLES = ("TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble")
_FRONT = ("Identity", "Cast", "Scaler", "Imputer", "Concat", "Reshape", "Gather", "OneHotEncoder", "LabelEncoder")
_BEHIND = ("Identity", "Cast", "ZipMap")
#: opset 5 enumerations -> the legacy names
_MODES5 = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER")
_TRANSFORMS5 = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_AGGREGATES5 = ("AVERAGE", "SUM", "MIN", "MAX")
_FLOAT, _DOUBLE, _INT64, _STRING = 1, 11, 7, 8          # onnx.TensorProto.FLOAT / DOUBLE / INT64 / STRING


def _onnx() -> Any:
    return require("onnx", "onnx", "reading ONNX models")


class OnnxModel:
    """An ONNX-ML tree-ensemble model (``onnx.ModelProto``), run by onnxruntime and imported exactly.

    Parameters
    ----------
    model : onnx.ModelProto, bytes, str or path-like
        The model, its serialized bytes, or a path to a ``.onnx`` file.

    Attributes
    ----------
    proto : onnx.ModelProto
        The model.
    n_features_in_ : int
        Input columns.
    feature_names : list of str or None
        The graph's input names when it takes one named column per feature.
    classes_ : ndarray
        The class labels (classifiers only).

    Raises
    ------
    UnsupportedModelError
        A graph without exactly one tree-ensemble node, or with an operator in front of it that is neither per
        column and monotone nor an encoder of an input column (named), or behind it other than Identity, Cast,
        ZipMap.

    Notes
    -----
    Treat the wrapped ``proto`` as immutable: the import cache keys on the OnnxModel object.
    """

    def __init__(self, model: Any) -> None:
        onnx = _onnx()
        if isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))
        elif isinstance(model, (bytes, bytearray, memoryview)):
            model = onnx.load_from_string(bytes(model))
        if not isinstance(model, onnx.ModelProto):
            raise InputTypeError(f"OnnxModel takes an onnx.ModelProto, bytes or a path; got {type(model).__name__}")
        self.proto = model
        self._plan = _plan(model)
        self._sessions: dict[str, Any] = {}
        self.n_features_in_ = self._plan.n_features
        self.feature_names = self._plan.feature_names
        if self._plan.labels is not None:
            self.classes_ = np.asarray(self._plan.labels)

    @classmethod
    def load(cls, path: Any) -> OnnxModel:
        """The model stored at ``path`` (or given as bytes / a ModelProto)."""
        return cls(path)

    def __repr__(self) -> str:
        node = self._plan.node
        kind = f"{node.op_type} (ai.onnx.ml opset {self._plan.opset})"
        classes = f", classes {self.classes_.tolist()}" if hasattr(self, "classes_") else ""
        return f"OnnxModel({kind}, {self.n_features_in_} features{classes}, post_transform {self._plan.transform})"

    def __getstate__(self) -> dict:
        """Pickled without its onnxruntime sessions (made again on first use)."""
        return {**self.__dict__, "_sessions": {}}

    def _session(self, kind: str) -> Any:
        """The onnxruntime session of the graph as it is ("model") or cut at the ensemble with its
        post-transform set to NONE ("margin"), made once, single-threaded (onnxruntime's sums in tree order)."""
        if kind not in self._sessions:
            ort = require("onnxruntime", "onnx", "running ONNX models")
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            proto = _margin_graph(self.proto, self._plan) if kind == "margin" else _without_zipmap(self.proto)
            self._sessions[kind] = ort.InferenceSession(proto.SerializeToString(), options,
                                                        providers=["CPUExecutionProvider"])
        return self._sessions[kind]

    def _feed(self, X: Any) -> dict:
        """The graph inputs of rows ``X`` (a DataFrame holding the inputs' names is read by name), each in its
        element type: float / double, text for string inputs (a missing value as ``str`` writes it, a category
        no encoder knows), integers for int64 inputs."""
        names = [name for name, _ in self._plan.inputs]
        if hasattr(X, "columns") and self.feature_names is not None and set(names) <= set(map(str, X.columns)):
            X = X[names]
        text = any(kind in (_STRING, _INT64) for kind in self._plan.input_types)
        X = np.asarray(X, dtype=object if text else np.float64)
        X = X.reshape(1, -1) if X.ndim == 1 else X
        inputs, at = {}, 0
        for (name, width), kind in zip(self._plan.inputs, self._plan.input_types):
            block = X[:, at:at + width]
            if kind == _STRING:
                inputs[name] = np.vectorize(str, otypes=[object])(block) if block.size else block.astype(object)
            elif kind == _INT64:
                inputs[name] = np.ascontiguousarray(np.asarray(block, dtype=np.float64), dtype=np.int64)
            else:
                inputs[name] = np.ascontiguousarray(np.asarray(block, dtype=np.float64),
                                                    dtype=np.float32 if kind == _FLOAT else np.float64)
            at += width
        return inputs

    def _run(self, kind: str, X: Any) -> list:
        return self._session(kind).run(None, self._feed(X))

    def predict(self, X: Any) -> np.ndarray:
        """onnxruntime's prediction: the labels of a classifier, the outputs of a regressor."""
        out = np.asarray(self._run("model", X)[0])
        return out.ravel() if out.ndim == 2 and out.shape[1] == 1 else out

    def predict_proba(self, X: Any) -> np.ndarray:
        """onnxruntime's class scores (n, n_classes) of a classifier (after its post-transform)."""
        if self._plan.labels is None:
            raise AttributeError("predict_proba: the model is not a classifier")
        return np.asarray(self._run("model", X)[1], dtype=np.float64)

    def decision_function(self, X: Any) -> np.ndarray:
        """The ensemble's scores before its post-transform, as onnxruntime computes them (n, k)."""
        out = np.asarray(self._run("margin", X)[self._plan.score_output], dtype=np.float64)
        return out.reshape(len(out), -1)


@dataclass
class _Plan:
    """What the graph analysis found: the ensemble node, its opset and attributes, the graph inputs
    (name, width) and their element types, the numeric inputs' type, per ensemble column its source input
    column, steps and encoder (a categorical :class:`~xai_plugins.forest.pipeline.TransformedColumn`: labels and atoms,
    or None), per input column its category labels (or None), and the output conventions."""

    node: Any
    opset: int
    attrs: dict
    inputs: list
    input_types: list
    input_type: int
    columns: list
    n_features: int
    feature_names: list | None
    category_labels: list | None
    labels: list | None
    transform: str
    score_output: int
    front: set


def _plan(proto: Any) -> _Plan:
    """The analysis of ``proto``'s graph (UnsupportedModelError naming what is not supported)."""
    onnx = _onnx()
    graph = proto.graph
    ensembles = [n for n in graph.node if n.op_type in _ENSEMBLES and n.domain == "ai.onnx.ml"]
    if len(ensembles) != 1:
        raise UnsupportedModelError(f"the ONNX graph holds {len(ensembles)} tree-ensemble nodes (ai.onnx.ml "
                                    f"{', '.join(_ENSEMBLES)}); one is supported")
    node = ensembles[0]
    opset = next((o.version for o in proto.opset_import if o.domain == "ai.onnx.ml"), 1)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    producers = {out: n for n in graph.node for out in n.output}
    consts = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in consts]
    widths = {i.name: _width(i) for i in inputs}
    columns, front = _trace(node.input[0], producers, widths, _guess_width(attrs), consts)
    _check_behind(graph, node, front)
    front = front | {node.output[0]}
    used = inputs          # every graph input, read or not: onnxruntime takes them all
    kinds = {i.name: i.type.tensor_type.elem_type for i in used}
    encoded = {c[0]: _STRING if isinstance(c[3].labels[0], str) else _INT64 for c in columns
               if c[3] is not None and len(c[3].labels)}
    types = {kinds[name] for name in {c[0] for c in columns} - set(encoded)}
    for name, steps in ((c[0], c[2]) for c in columns if c[3] is None):
        if any(step[0] == "cast" and step[1] in (_INT64, _STRING) for step in steps):
            raise UnsupportedModelError(f"operator Cast in front of the tree ensemble casts column {name!r} to element "
                                        "type int64 / string, which no encoder reads; only float and double are "
                                        "supported there")
    if not types <= {_FLOAT, _DOUBLE} or len(types) > 1 or any(kinds[n] != kind for n, kind in encoded.items()):
        raise UnsupportedModelError("the ONNX graph's numeric inputs must all be float or all double tensors, and "
                                    "its encoded inputs string or int64 tensors; got element types "
                                    f"{ {n: kinds[n] for n in kinds} } (onnx.TensorProto)")
    in_widths = [(i.name, widths[i.name] or 1 + max((c[1] for c in columns if c[0] == i.name), default=0))
                 for i in used]
    starts = dict(zip([n for n, _ in in_widths], np.cumsum([0] + [w for _, w in in_widths]).tolist()))
    columns = [(starts[name] + k, steps, None if enc is None else replace(enc, source=starts[name] + k))
               for name, k, steps, enc in columns]
    names = [n for n, _ in in_widths] if len(in_widths) > 1 and all(w == 1 for _, w in in_widths) else None
    category_labels = _input_labels(columns, sum(w for _, w in in_widths))
    labels = attrs.get("classlabels_int64s") or attrs.get("classlabels_strings")
    labels = None if not labels else [v.decode() if isinstance(v, bytes) else int(v) for v in labels]
    transform = attrs.get("post_transform", 0 if node.op_type == "TreeEnsemble" else b"NONE")
    transform = _TRANSFORMS5[transform] if isinstance(transform, int) else transform.decode()
    return _Plan(node, opset, attrs, in_widths, [kinds[n] for n, _ in in_widths], types.pop() if types else _FLOAT,
                 columns, sum(w for _, w in in_widths), names, category_labels, labels, transform,
                 1 if node.op_type == "TreeEnsembleClassifier" else 0, front)


def _input_labels(columns: list, n_features: int) -> list | None:
    """Per input column, the labels of the encoder that made ensemble columns of it (None: numeric), or None
    when no column is encoded; UnsupportedModelError for an input encoded twice with other categories."""
    labels: list = [None] * n_features
    for source, _, encoder in columns:
        if encoder is None:
            continue
        if labels[source] is not None and tuple(labels[source]) != tuple(encoder.labels):
            raise UnsupportedModelError(f"input column {source} of the ONNX graph is encoded twice, with different "
                                        "categories")
        labels[source] = encoder.labels
    return labels if any(known is not None for known in labels) else None


def _width(value_info: Any) -> int | None:
    dims = value_info.type.tensor_type.shape.dim
    return int(dims[1].dim_value) if len(dims) == 2 and dims[1].HasField("dim_value") else None


def _guess_width(attrs: dict) -> int:
    """The ensemble's input width by its largest feature id (an input of unknown width)."""
    return 1 + max(list(attrs.get("nodes_featureids") or [0]))


def _trace(name: str, producers: dict, widths: dict, width: int, consts: dict) -> tuple[list, set]:
    """Per column of tensor ``name``: (graph input, its column, the steps applied, the encoder that made it or
    None), and the first output of each node in front; UnsupportedModelError naming an operator that is neither
    per-column and monotone nor an encoder of an input column."""
    node = producers.get(name)
    if node is None:
        if name not in widths:
            raise UnsupportedModelError(f"the ONNX tree ensemble reads {name!r}, which is neither a graph input nor "
                                        "an output of another node")
        return [(name, k, (), None) for k in range(widths[name] or width)], set()
    if node.op_type not in _FRONT or node.domain not in ("", "ai.onnx.ml"):
        raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) in front of the tree ensemble is not "
                                    f"supported; supported there: {', '.join(_FRONT)} (per column, monotone, or "
                                    "encoding an input column)")
    onnx = _onnx()
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Concat":
        if attrs.get("axis") not in (1, -1):
            raise UnsupportedModelError(f"operator Concat ({node.name}) in front of the tree ensemble joins along "
                                        f"axis {attrs.get('axis')}; only columns (axis 1) are supported")
        parts = [_trace(i, producers, widths, 1, consts) for i in node.input]
        return [c for cols, _ in parts for c in cols], {node.output[0]}.union(*(f for _, f in parts))
    columns, front = _trace(node.input[0], producers, widths, width, consts)
    front = front | {node.output[0]}
    if node.op_type in ("Reshape", "Gather"):
        return _reshaped(node, attrs, columns, consts), front
    if node.op_type in ("OneHotEncoder", "LabelEncoder"):
        if len(columns) != 1:
            raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) in front of the tree ensemble encodes "
                                        f"{len(columns)} columns at once; supported: one input column per encoder")
        return _encoded(node, attrs, columns[0]), front
    if any(enc is not None for _, _, _, enc in columns) and node.op_type != "Cast":
        raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) in front of the tree ensemble transforms "
                                    "an encoded column; only Cast, Concat and Reshape may follow an encoder")
    return [(src, k, steps + (_step(node, attrs, j),), enc) for j, (src, k, steps, enc) in enumerate(columns)], front


def _reshaped(node: Any, attrs: dict, columns: list, consts: dict) -> list:
    """The columns after a ``Reshape`` to (rows, columns) (an encoder's (n, 1, K) output flattened) or a
    ``Gather`` of constant columns (axis 1); UnsupportedModelError for any other shape or selection."""
    value = consts.get(node.input[1]) if len(node.input) > 1 else None
    if value is None:
        raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) in front of the tree ensemble takes a "
                                    "computed shape or index; only constants are supported")
    value = np.asarray(value, dtype=np.int64).ravel()
    if node.op_type == "Gather":
        if attrs.get("axis", 0) != 1 or np.any((value < -len(columns)) | (value >= len(columns))):
            raise UnsupportedModelError(f"operator Gather ({node.name}) in front of the tree ensemble selects along "
                                        f"axis {attrs.get('axis', 0)}; only columns (axis 1) are supported")
        return [columns[int(j)] for j in value]
    if len(value) != 2 or value[0] not in (-1, 0) or value[1] not in (-1, len(columns)):
        raise UnsupportedModelError(f"operator Reshape ({node.name}) in front of the tree ensemble reshapes to "
                                    f"{value.tolist()}; only (rows, {len(columns)} columns) is supported")
    return columns


def _decoded(values: Any) -> list:
    return [v.decode() if isinstance(v, bytes) else int(v) for v in values]


def _encoded(node: Any, attrs: dict, column: tuple) -> list:
    """The ensemble columns an ai.onnx.ml ``OneHotEncoder`` (one per category, ``cats_strings`` /
    ``cats_int64s``) or ``LabelEncoder`` (one, keys -> values) makes of one input column: each a categorical
    column of the input (:class:`~xai_plugins.forest.pipeline.TransformedColumn`: the categories as labels, a label's
    position its code; atoms: the encoded value of each code, of an unseen category and of a missing value,
    which the string input receives as text no encoder knows). OneHotEncoder ``zeros=0`` and an int64 input's
    missing value are refused as onnxruntime refuses them (:class:`~xai_plugins.forest.layout.Categories`)."""
    source, k, steps, encoder = column
    if any(step[:1] != ("cast",) or step[1] not in (_INT64, _STRING) for step in steps) or encoder is not None:
        raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) in front of the tree ensemble encodes a "
                                    "transformed column; encode the graph input itself")
    if node.op_type == "OneHotEncoder":
        labels = _decoded(attrs.get("cats_strings") or attrs.get("cats_int64s") or [])
        codes, unseen = np.eye(len(labels)), np.zeros(len(labels))
        refused = attrs.get("zeros", 1) == 0
    else:
        keys = [n for n in ("keys_strings", "keys_int64s") if attrs.get(n)]
        values = [n for n in ("values_int64s", "values_floats") if attrs.get(n)]
        if len(keys) != 1 or len(values) != 1 or any(n in attrs for n in ("keys_tensor", "values_tensor")):
            raise UnsupportedModelError(f"operator LabelEncoder ({node.name}) in front of the tree ensemble maps "
                                        f"{sorted(n for n in attrs if n.startswith('keys'))} to "
                                        f"{sorted(n for n in attrs if n.startswith('values'))}; supported: "
                                        "keys_strings / keys_int64s to values_int64s / values_floats")
        labels = _decoded(attrs[keys[0]])
        default = attrs.get("default_int64", -1) if values[0] == "values_int64s" else attrs.get("default_float", -0.0)
        codes, unseen = np.asarray(attrs[values[0]], dtype=np.float64)[None, :], np.array([float(default)])
        refused = False
    known: tuple = tuple(labels)
    if refused or not all(isinstance(v, str) for v in known):
        known = Categories(known, f"the ONNX graph's {node.op_type} ({node.name}) " + (
            "(zeros=0) refuses it, as onnxruntime does; pass one of its categories" if refused else
            "reads an int64 input, which holds no missing value; pass one of its categories or another integer"),
            refuses_missing=True, refuses_unseen=refused)
    return [(source, k, (), TransformedColumn(0, labels=known, atoms=tuple(np.concatenate((row, [u, u])))))
            for row, u in zip(codes, unseen)]


def _step(node: Any, attrs: dict, j: int) -> tuple:
    """One column's step of a front node, as a hashable tuple for ``_onnx_trees.apply_steps``."""
    if node.op_type == "Identity":
        return ("identity",)
    if node.op_type == "Cast":
        if attrs.get("to") not in (_FLOAT, _DOUBLE, _INT64, _STRING):
            raise UnsupportedModelError(f"operator Cast ({node.name}) in front of the tree ensemble casts to element "
                                        f"type {attrs.get('to')}; only float and double are supported (and int64 / "
                                        "string right in front of an encoder of an input of that type)")
        return ("cast", attrs["to"])
    if node.op_type == "Scaler":
        offset, scale = list(attrs.get("offset") or [0.0]), list(attrs.get("scale") or [1.0])
        return ("scaler", offset[j if len(offset) > 1 else 0], scale[j if len(scale) > 1 else 0])
    replaced = attrs.get("replaced_value_float", 0.0)
    fill = list(attrs.get("imputed_value_floats") or [])
    if not np.isnan(replaced) or not fill:
        raise UnsupportedModelError(f"operator Imputer ({node.name}) in front of the tree ensemble replaces "
                                    f"{replaced!r} (not NaN) or integers: not monotone; impute NaN only")
    return ("imputer", fill[j if len(fill) > 1 else 0])


def _check_behind(graph: Any, ensemble: Any, front: set) -> None:
    """UnsupportedModelError naming a node that is neither in front of the ensemble nor an allowed one behind."""
    for node in graph.node:
        if node.output[0] in front or node.output[0] == ensemble.output[0]:
            continue
        if node.op_type not in _BEHIND:
            raise UnsupportedModelError(f"operator {node.op_type} ({node.name}) beside or behind the tree ensemble is "
                                        f"not supported; supported behind it: {', '.join(_BEHIND)}")


def _drop_behind(proto: Any, plan: _Plan, keep: Any) -> Any:
    """A copy of ``proto`` without the nodes behind the ensemble, its outputs those of the ensemble
    (``keep(ensemble)`` may change the copy's ensemble node)."""
    onnx = _onnx()
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    graph = out.graph
    kept = [n for n in graph.node if n.output[0] in plan.front]
    del graph.node[:]
    graph.node.extend(kept)
    keep(next(n for n in graph.node if n.output[0] == plan.node.output[0]))
    del graph.output[:]
    for name in plan.node.output:
        graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return out


def _margin_graph(proto: Any, plan: _Plan) -> Any:
    """The graph cut at the ensemble, its post-transform NONE: onnxruntime's scores before the transform."""
    onnx = _onnx()

    def none(node: Any) -> None:
        for a in node.attribute:
            if a.name == "post_transform":
                node.attribute.remove(a)
                break
        node.attribute.append(onnx.helper.make_attribute("post_transform", 0 if plan.node.op_type == "TreeEnsemble"
                                                         else "NONE"))

    return _drop_behind(proto, plan, none)


def _without_zipmap(proto: Any) -> Any:
    """``proto`` cut at the ensemble where a ZipMap follows it (its scores as a tensor), else itself."""
    if not any(n.op_type == "ZipMap" for n in proto.graph.node):
        return proto
    return _drop_behind(proto, _plan(proto), lambda node: None)


class OnnxImporter(LibraryImporter):
    """ONNX-ML tree ensembles wrapped in an :class:`OnnxModel` (see the module docstring)."""

    name = "onnx"
    supported = "ONNX-ML TreeEnsembleRegressor/TreeEnsembleClassifier/TreeEnsemble (OnnxModel)"

    def owns(self, cls: type) -> bool:
        """A subclass of :class:`OnnxModel`."""
        return issubclass(cls, OnnxModel)

    def to_forest(self, model: Any) -> Forest:
        """The Forest of the model's tree ensemble over the graph's input columns."""
        return ensemble_forest(model._plan, self.predictor(model))

    def feature_names(self, model: Any) -> Any:
        """The graph's input names when it takes one named column per feature, else None."""
        return model.feature_names

    def predictor(self, model: Any) -> ModelPredictor:
        """onnxruntime's scores before the post-transform, in the Forest's outputs (an encoded input's codes
        turned into its labels)."""
        return ModelPredictor(model, labelled(functools.partial(_margin, model._plan), model._plan.category_labels))

    def runtime(self, model: Any) -> tuple[str, float]:
        """onnxruntime, which sums a float graph's trees in float32 and outputs the legacy operators' scores in
        float32: the parity certificate allows float32 rounding. The gap is rounding only, as the routes are
        identical: about ``n_trees * 2**-24 * max |partial sum|`` (4e-7 for 6 trees, 4e-6 for 300 XGBoost trees
        of outputs near 1); a corrupted threshold or weight shows as a leaf value's size on the rows it
        reroutes."""
        version = installed_version("onnxruntime")
        return f"onnxruntime {version}", 2.0 ** -24

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """A classifier's post_transform LOGISTIC (per score) or SOFTMAX, and onnxruntime's probability output
        (NONE: the Forest gives that output itself; SOFTMAX_ZERO: None)."""
        link = {"LOGISTIC": "logistic", "SOFTMAX": "softmax"}.get(model._plan.transform)
        if link is None or model._plan.labels is None:
            return None
        usual = probability_predictor(model, forest)
        return None if usual is None else (link, usual[1])


def _margin(plan: _Plan, model: OnnxModel, X: Any) -> np.ndarray:
    """The model's own output in its Forest's output space (one column of a binary classifier's two where
    its Forest has one output)."""
    scores = model.decision_function(X)
    return scores[:, 1:] if plan.labels is not None and len(plan.labels) == 2 and scores.shape[1] == 2 and \
        binary_single(plan) else scores


#: the tags a serialized ModelProto may hold after its ir_version (fields 2-8, 14, 20, 21: producer, domain,
#: versions, doc string, graph, opset imports, metadata, training info, functions)
_NEXT_TAGS = frozenset((0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72, 0xA2, 0xAA))


def onnx_header(head: bytes) -> bool:
    """Whether the first bytes of a file look like a serialized ONNX ModelProto (protobuf has no magic bytes:
    ``onnx.save`` writes field 1, ir_version, first as tag 0x08 and a small varint, then another ModelProto
    field); confirm by loading it (:meth:`OnnxModel.load`)."""
    return len(head) >= 3 and head[0] == 0x08 and 1 <= head[1] <= 0x7F and head[2] in _NEXT_TAGS


register(OnnxImporter())
