"""The trees of an ONNX-ML tree-ensemble node as a :class:`~xai_plugins.forest.Forest` (used by
:mod:`xai_plugins.forest.onnx`, whose docstring gives the mapping of the attributes)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedModelError
from .layout import Forest, category_bitsets
from .pipeline import switch_points

__all__: list[str] = []      # internal module: the public names are in the API reference

_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF")
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
_MAX_CODE = 1 << 24                   # the Forest's largest number of categories (csrc/xai.h)
_MAX_DEPTH = 4000
_FLOAT = 1                            # onnx.TensorProto.FLOAT


@dataclass
class _Table:
    """Every node and leaf of the ensemble ("items"): split feature (ensemble column), mode, threshold,
    missing-value tracking, true / false item, member sets; the trees' roots in onnxruntime's order;
    and per item its weights (n_items, n_slots), slots being the node's targets or classes."""

    feature: np.ndarray
    mode: np.ndarray
    threshold: np.ndarray
    track: np.ndarray
    true: np.ndarray
    false: np.ndarray
    sets: dict
    roots: list
    weights: np.ndarray
    used_slots: set


def _array(attrs: dict, name: str, default: Any = ()) -> np.ndarray:
    """Attribute ``name`` (its ``_as_tensor`` double form where present) as an array."""
    from onnx import numpy_helper

    value = attrs.get(name + "_as_tensor", attrs.get(name))
    if value is None:
        return np.asarray(default)
    return numpy_helper.to_array(value) if hasattr(value, "dims") else np.asarray(value)


def _weights(n_items: int, n_slots: int, items: np.ndarray, slots: np.ndarray, values: np.ndarray,
             dtype: type) -> np.ndarray:
    """Per item the sum of its weights per slot (each weight in onnxruntime's type ``dtype``)."""
    if len(slots) and (slots.min() < 0 or slots.max() >= n_slots):
        raise UnsupportedModelError(f"the ONNX tree ensemble has a weight for output {int(slots.max())} of {n_slots}")
    out = np.zeros((n_items, n_slots))
    np.add.at(out, (items, slots), values.astype(dtype).astype(np.float64))
    return out


def _read_legacy(attrs: dict, classifier: bool, n_slots: int, dtype: type) -> _Table:
    """The items of a TreeEnsembleRegressor / TreeEnsembleClassifier (ai.onnx.ml opsets 1 and 3)."""
    trees, ids = np.asarray(attrs["nodes_treeids"]), np.asarray(attrs["nodes_nodeids"])
    key = {(int(t), int(n)): i for i, (t, n) in enumerate(zip(trees, ids))}
    modes = np.array([_MODES.index(m.decode() if isinstance(m, bytes) else m) for m in attrs["nodes_modes"]])

    def items(tree_ids: Any, node_ids: Any, what: str) -> np.ndarray:
        try:
            return np.array([key[(int(t), int(n))] for t, n in zip(tree_ids, node_ids)], dtype=np.int64)
        except KeyError as missing:
            raise UnsupportedModelError(f"the ONNX tree ensemble's {what} names node {missing}, which it does not "
                                        "have") from None

    inner = modes != LEAF
    true, false = np.full(len(ids), -1), np.full(len(ids), -1)
    true[inner] = items(trees[inner], np.asarray(attrs["nodes_truenodeids"])[inner], "nodes_truenodeids")
    false[inner] = items(trees[inner], np.asarray(attrs["nodes_falsenodeids"])[inner], "nodes_falsenodeids")
    _, first = np.unique(trees, return_index=True)
    prefix = "class_" if classifier else "target_"
    slots = np.asarray(attrs.get(prefix + "ids", []), dtype=np.int64)
    weights = _weights(len(ids), n_slots, items(attrs.get(prefix + "treeids", []), attrs.get(prefix + "nodeids", []),
                                                prefix + "nodeids"), slots, _array(attrs, prefix + "weights"), dtype)
    track = np.zeros(len(ids), dtype=bool)
    given = np.asarray(attrs.get("nodes_missing_value_tracks_true", []), dtype=bool)
    track[:len(given)] = given
    return _Table(np.asarray(attrs["nodes_featureids"], dtype=np.int64), modes, _array(attrs, "nodes_values"),
                  track, true, false, {}, sorted(first.tolist()), weights, set(slots.tolist()))


def _read_v5(attrs: dict, dtype: type) -> _Table:
    """The items of a TreeEnsemble (ai.onnx.ml opset 5): its nodes, then its leaves."""
    from onnx import numpy_helper

    n = len(attrs["nodes_featureids"])
    n_leaves = len(attrs["leaf_targetids"])
    modes = np.concatenate((numpy_helper.to_array(attrs["nodes_modes"]).astype(np.int64), np.full(n_leaves, LEAF)))

    def child(ids: str, leafs: str) -> np.ndarray:
        at = np.asarray(attrs[ids], dtype=np.int64)
        return np.concatenate((np.where(np.asarray(attrs[leafs], dtype=bool), n + at, at), np.full(n_leaves, -1)))

    members = np.asarray(_array(attrs, "membership_values"), dtype=np.float64)
    groups = np.split(members, np.flatnonzero(np.isnan(members))) if len(members) else []
    sets = dict(zip(np.flatnonzero(modes == MEMBER).tolist(), [g[~np.isnan(g)] for g in groups]))
    track = np.zeros(n + n_leaves, dtype=bool)
    given = np.asarray(attrs.get("nodes_missing_value_tracks_true", []), dtype=bool)
    track[:len(given)] = given
    slots = np.asarray(attrs["leaf_targetids"], dtype=np.int64)
    weights = _weights(n + n_leaves, int(attrs.get("n_targets", 1)), n + np.arange(n_leaves), slots,
                       numpy_helper.to_array(attrs["leaf_weights"]), dtype)
    threshold = np.concatenate((numpy_helper.to_array(attrs["nodes_splits"]), np.zeros(n_leaves)))
    return _Table(np.concatenate((np.asarray(attrs["nodes_featureids"]), np.zeros(n_leaves))).astype(np.int64), modes,
                  threshold, track, child("nodes_truenodeids", "nodes_trueleafs"),
                  child("nodes_falsenodeids", "nodes_falseleafs"), sets, list(attrs["tree_roots"]), weights,
                  set(slots.tolist()))


class _Emitter:
    """The trees written out in preorder, EQ / NEQ nodes as two one-threshold nodes (see :meth:`item`)."""

    def __init__(self, table: _Table) -> None:
        self.table = table
        self.rows: list[list] = []        # [feature, mode, threshold, track, true, false, item (leaf) or -1, set]

    def tree(self, root: int) -> int:
        start = len(self.rows)
        self.item(root, start, 0)
        return len(self.rows) - start

    def node(self, start: int, feature: int, mode: int, threshold: float, track: bool, members: Any = None) -> int:
        self.rows.append([feature, mode, threshold, track, -1, -1, -1, members])
        return len(self.rows) - 1

    def item(self, i: int, start: int, depth: int) -> int:
        """Writes item ``i``'s subtree; returns its local id. EQ(t): x >= t and not x > t; NEQ(t) the
        opposite: a node GTE(t) whose true side is a node GT(t), the subtree reached from both sides copied."""
        t = self.table
        if depth > _MAX_DEPTH or not 0 <= i < len(t.mode):
            raise UnsupportedModelError("the ONNX tree ensemble's trees are not trees (a cycle, too deep, or a child "
                                        "out of range)")
        mode = int(t.mode[i])
        if mode == LEAF:
            self.rows.append([0, LEAF, 0.0, False, -1, -1, i, None])
            return len(self.rows) - 1 - start
        f, v, track = int(t.feature[i]), float(t.threshold[i]), bool(t.track[i])
        if mode in (EQ, NEQ):
            yes, no = (t.true[i], t.false[i]) if mode == EQ else (t.false[i], t.true[i])
            outer = self.node(start, f, GTE, v, track if mode == EQ else False)
            inner = self.node(start, f, GT, v, False)
            self.rows[outer][4] = inner - start
            self.rows[inner][4] = self.item(int(no), start, depth + 1)
            self.rows[inner][5] = self.item(int(yes), start, depth + 1)
            self.rows[outer][5] = self.item(int(no), start, depth + 1)
            return outer - start
        at = self.node(start, f, mode, v, track, t.sets.get(i))
        self.rows[at][4] = self.item(int(t.true[i]), start, depth + 1)
        self.rows[at][5] = self.item(int(t.false[i]), start, depth + 1)
        return at - start


def _decide(z: np.ndarray, mode: np.ndarray, t: np.ndarray, track: np.ndarray) -> np.ndarray:
    """Whether value z[i] takes the true branch of a node (mode, threshold, NaN tracking), as onnxruntime
    compares them (in z's and t's common type)."""
    with np.errstate(invalid="ignore"):
        out = np.select([mode == LEQ, mode == LT, mode == GTE], [z <= t, z < t, z >= t], z > t)
    return np.where(np.isnan(z), track, out)


def _goes_right(apply: Callable, mode: np.ndarray, t: np.ndarray, track: np.ndarray, low: np.ndarray,
                x: np.ndarray) -> np.ndarray:
    return _decide(apply(x), mode, t, track) != low


def _numeric(apply: Callable, mode: np.ndarray, t: np.ndarray, track: np.ndarray, float32: bool,
             rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node (one input column, its transform ``apply``): whether the true branch is the lower side of
    the input column, the Forest threshold (``rule`` "le" / "lt"; on the float32 grid where ``float32``)
    and whether NaN goes to the lower side."""
    n = len(mode)
    low = _decide(apply(np.full(n, -np.finfo(np.float64).max)), mode, t, track)
    switch = switch_points(functools.partial(_goes_right, apply, mode, t, track, low), n)
    if float32:
        with np.errstate(over="ignore"):
            grid = switch.astype(np.float32)
        grid = np.where(grid < switch, np.nextafter(grid, np.float32(np.inf)), grid)
        below = np.nextafter(grid, np.float32(-np.inf))
    else:
        grid, below = switch, np.nextafter(switch, -np.inf)
    threshold = grid if rule == "lt" else np.where(np.isinf(grid), grid, below)
    nan_low = _decide(apply(np.full(n, np.nan)), mode, t, track) == low
    return low, threshold.astype(np.float64), nan_low


def apply_steps(steps: tuple, x: np.ndarray, float32: bool) -> np.ndarray:
    """Column values ``x`` (float64) through ``steps`` as onnxruntime computes them, starting from a float
    (``float32``) or double graph input: a Cast rounds, a Scaler computes ``(x - offset) * scale`` in its
    input's type with float32 offset and scale and rounds the result to float32, an Imputer fills NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = x.astype(np.float32) if float32 else x.copy()
        for step in steps:
            if step[0] == "cast":
                v = v.astype(np.float32 if step[1] == _FLOAT else np.float64)
            elif step[0] == "scaler":
                v = ((v - v.dtype.type(np.float32(step[1]))) * v.dtype.type(np.float32(step[2]))).astype(np.float32)
            elif step[0] == "imputer":
                v = np.where(np.isnan(v), v.dtype.type(step[1]), v)
    return v


def _float32_input(plan: Any, steps: tuple) -> bool:
    """Whether a column's routing depends on float32(x) only: a float graph input, or a Cast to float before
    any step that computes with the double (a Scaler)."""
    if plan.input_type == _FLOAT:
        return True
    for step in steps:
        if step == ("cast", _FLOAT):
            return True
        if step[0] == "scaler":
            return False
    return False


def _float32_columns(plan: Any, columns: list[int]) -> bool:
    """Whether the ensemble's ``columns`` depend on float32(x) only (:func:`_float32_input`);
    UnsupportedModelError when some do and others on the double itself."""
    seen = {_float32_input(plan, plan.columns[j][1]) for j in columns}
    if len(seen) > 1:
        raise UnsupportedModelError("the ONNX graph compares some input columns in float32 and others in double; "
                                    "cast them all to one type in front of the tree ensemble")
    return seen.pop() if seen else plan.input_type == _FLOAT


def _ensemble_dtype(plan: Any) -> type:
    """onnxruntime's threshold and sum type: the type of the tensor the ensemble reads (an encoder gives
    float)."""
    _, steps, encoder = plan.columns[0] if plan.columns else (0, (), None)
    return apply_steps(steps, np.zeros(1), encoder is not None or plan.input_type == _FLOAT).dtype.type


def binary_single(plan: Any) -> bool:
    """Whether ``plan``'s classifier is binary with one score and a post-transform: its Forest has one
    "margin" output (onnxruntime's scores before the transform are then [.., s])."""
    return plan.labels is not None and len(plan.labels) == 2 and plan.transform != "NONE" and \
        set(np.asarray(plan.attrs.get("class_ids", [])).tolist()) <= {0}


def _outputs(plan: Any, table: _Table) -> tuple[np.ndarray, np.ndarray, list, str]:
    """(map from the ensemble's slots to the Forest's outputs, base score, output names, output space)
    following onnxruntime's conventions (see the :mod:`xai_plugins.forest.onnx` docstring)."""
    base = np.asarray(_array(plan.attrs, "base_values"), dtype=_ensemble_dtype(plan)).astype(np.float64)
    n = table.weights.shape[1]
    space = "raw" if plan.transform == "NONE" else "margin"
    if plan.labels is None:                                             # a regressor
        base = base if len(base) == n else np.zeros(n)         # onnxruntime ignores base values of another size
        return np.eye(n), base, ["output"] if n == 1 else [f"output_{k}" for k in range(n)], space
    names, space = [str(c) for c in plan.labels], "probability" if plan.transform == "NONE" else "margin"
    if n > 2:
        return np.eye(n), np.concatenate((base, np.zeros(n - len(base))))[:n], names, space
    if table.used_slots <= {0} and len(base) < 2:
        b = base[0] if len(base) else 0.0
        if plan.transform != "NONE":
            return np.array([[1.0], [0.0]]), np.array([b]), ["margin"], "margin"
        if np.all(table.weights >= 0):
            return np.array([[-1.0, 1.0], [0.0, 0.0]]), np.array([1.0 - b, b]), names, space
        return np.array([[-1.0, 1.0], [0.0, 0.0]]), np.array([-b, b]), names, "margin"
    leaves = table.mode == LEAF
    if table.used_slots == {0, 1} and len(base) < 2 and np.all(table.weights[leaves] != 0, axis=1)[1:].all():
        return np.eye(2), np.concatenate((base, np.zeros(2 - len(base)))), names, space
    raise UnsupportedModelError(f"the ONNX binary classifier has weights for classes {sorted(table.used_slots)} and "
                                f"{len(base)} base values: a layout whose scores onnxruntime defines row by row; "
                                "supported: one score (class 0 weights) or both classes at every leaf")


def _table(plan: Any, dtype: type) -> tuple[_Table, str]:
    """The items of the plan's ensemble node and its aggregate function (UnsupportedModelError for MIN / MAX)."""
    attrs, op = plan.attrs, plan.node.op_type
    if op == "TreeEnsemble":
        table = _read_v5(attrs, dtype)
        aggregate = _AGGREGATES[int(attrs.get("aggregate_function", 1))]
    else:
        n_slots = len(plan.labels) if plan.labels is not None else int(attrs.get("n_targets", 1))
        table = _read_legacy(attrs, op == "TreeEnsembleClassifier", n_slots, dtype)
        aggregate = attrs.get("aggregate_function", b"SUM")
        aggregate = aggregate.decode() if isinstance(aggregate, bytes) else aggregate
    if aggregate not in ("SUM", "AVERAGE"):
        raise UnsupportedModelError(f"the ONNX tree ensemble's aggregate_function {aggregate} is not supported "
                                    "(SUM and AVERAGE are)")
    if plan.transform == "PROBIT":
        raise UnsupportedModelError("the ONNX tree ensemble's post_transform PROBIT is not supported (NONE, LOGISTIC, "
                                    "SOFTMAX and SOFTMAX_ZERO are: the Forest gives the scores before them)")
    return table, "sum" if aggregate == "SUM" else "mean"


def _member_sets(plan: Any, rows: list, members: np.ndarray, n_categories: np.ndarray) -> dict:
    """Per BRANCH_MEMBER node of ``members``, the codes that take its true branch (left), each set's column
    counted in ``n_categories`` (its largest code + 1)."""
    sets = {}
    for node in members:
        j, values = int(rows[node][0]), np.asarray(rows[node][7], dtype=np.float64)
        source, steps, encoder = plan.columns[j]
        if encoder is not None or any(s[0] not in ("identity", "cast") for s in steps) or \
                np.any(values != np.floor(values)) or np.any(values < 0) or np.any(values >= _MAX_CODE):
            raise UnsupportedModelError(f"BRANCH_MEMBER node on column {j} of the ONNX tree ensemble: its set "
                                        f"({values[:5].tolist()}...) is not of category codes 0 .. {_MAX_CODE - 1} of "
                                        "an input column (or the column is transformed in front of the ensemble)")
        n_categories[source] = max(n_categories[source], int(values.max(initial=0)) + 1)
        sets[int(node)] = values.astype(np.int64)
    return sets


def _encoded_sets(plan: Any, j: int, nodes: np.ndarray, mode: np.ndarray, t: np.ndarray,
                  track: np.ndarray) -> tuple[dict, np.ndarray]:
    """Per node of ``nodes`` splitting the encoded ensemble column ``j``: the atoms (codes 0 .. K-1, then the
    unseen category) whose encoded value takes the true branch (left), as onnxruntime compares it, and whether
    the missing atom does (:class:`~xai_plugins.forest.pipeline.TransformedColumn` atoms through the steps after the
    encoder)."""
    _, steps, encoder = plan.columns[j]
    values = apply_steps(steps, np.asarray(encoder.atoms, dtype=np.float64), True)
    true = _decide(values[None, :], mode[:, None], t[:, None], track[:, None])
    return {int(node): np.flatnonzero(true[i, :-1]) for i, node in enumerate(nodes)}, true[:, -1]


def ensemble_forest(plan: Any, predict_fn: Any) -> Forest:
    """The Forest of ``plan``'s tree-ensemble node over the graph's input columns (see the module docstring of
    :mod:`xai_plugins.forest.onnx`)."""
    dtype = _ensemble_dtype(plan)
    table, aggregate = _table(plan, dtype)
    emitter = _Emitter(table)
    sizes = [emitter.tree(int(root)) for root in table.roots]
    rows = emitter.rows
    feature = np.array([r[0] for r in rows], dtype=np.int64)
    mode = np.array([r[1] for r in rows], dtype=np.int64)
    if np.any((mode != LEAF) & ((feature < 0) | (feature >= len(plan.columns)))):
        raise UnsupportedModelError(f"the ONNX tree ensemble splits on a column beyond its {len(plan.columns)} inputs")
    threshold: np.ndarray = np.array([r[2] for r in rows], dtype=np.float64).astype(dtype)
    track = np.array([r[3] for r in rows], dtype=bool)
    true, false = np.array([r[4] for r in rows]), np.array([r[5] for r in rows])
    encoded = np.isin(feature, [j for j, c in enumerate(plan.columns) if c[2] is not None]) & (mode != LEAF) & \
        (mode != MEMBER)
    numeric = (mode != LEAF) & (mode != MEMBER) & ~encoded
    float32 = _float32_columns(plan, np.unique(feature[numeric]).tolist())
    rule = "le" if np.isin(mode[numeric], (LEQ, GT)).sum() * 2 >= numeric.sum() else "lt"
    left, right = np.where(mode == LEAF, -1, true), np.where(mode == LEAF, -1, false)
    out_threshold: np.ndarray = np.zeros(len(rows))
    missing_left = track.astype(np.uint8)
    source = np.zeros(len(rows), dtype=np.int64)
    for j in np.unique(feature[numeric]):
        at = np.flatnonzero(numeric & (feature == j))
        apply = functools.partial(apply_steps, plan.columns[int(j)][1], float32=plan.input_type == _FLOAT)
        low, out_threshold[at], nan_low = _numeric(apply, mode[at], threshold[at], track[at], float32, rule)
        left[at], right[at] = np.where(low, true[at], false[at]), np.where(low, false[at], true[at])
        missing_left[at], source[at] = nan_low, plan.columns[int(j)][0]
    members = np.flatnonzero(mode == MEMBER)
    labels = plan.category_labels
    n_categories = np.array([0 if known is None else len(known) for known in labels or [None] * plan.n_features],
                            dtype=np.int32)
    sets = _member_sets(plan, rows, members, n_categories)
    for j in np.unique(feature[encoded]):
        at = np.flatnonzero(encoded & (feature == j))
        found, missing_left[at] = _encoded_sets(plan, int(j), at, mode[at], threshold[at], track[at])
        sets.update(found)
        source[at] = plan.columns[int(j)][0]
    if len(sets) and np.any(np.isin(source[numeric], np.flatnonzero(n_categories))):
        raise UnsupportedModelError("an input column of the ONNX tree ensemble has both categorical (BRANCH_MEMBER "
                                    "or encoded) and threshold splits: the Forest reads a column as categories or as "
                                    "numbers")
    source[members] = [plan.columns[int(feature[m])][0] for m in members]
    categorical: dict[str, Any] = {}
    if n_categories.any():
        nodes = np.array(sorted(sets), dtype=np.int64)
        cat_start, cat_bits = category_bitsets(nodes, [sets[n] for n in nodes.tolist()],
                                               n_categories[source[nodes]], len(rows))
        categorical = dict(n_categories=n_categories, cat_start=cat_start, cat_bits=cat_bits,
                           category_labels=labels, numeric_labels=labels is not None)
    leaves = np.array([r[6] for r in rows])
    mapping, base, names, space = _outputs(plan, table)
    value = np.zeros((len(rows), mapping.shape[1]))
    value[mode == LEAF] = table.weights[leaves[mode == LEAF]] @ mapping
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    return Forest(left_child=left, right_child=right, feature=np.where(mode == LEAF, 0, source),
                  threshold=np.where(numeric, out_threshold, 0.0), missing_left=missing_left, value=value,
                  tree_offset=offsets, tree_target=np.zeros(len(sizes), dtype=np.int32), base_score=base,
                  n_features=plan.n_features, split_rule=rule, input_float32=float32, aggregate=aggregate,
                  task="regression" if plan.labels is None else "classification", output_space=space,
                  model_type=f"onnx.{plan.node.op_type}", feature_names=plan.feature_names, output_names=names,
                  predict_fn=predict_fn, **categorical)
