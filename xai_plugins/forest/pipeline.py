"""scikit-learn Pipelines compiled into one Forest over the pipeline's *input* columns.

A ``Pipeline`` whose steps before the tree model transform each column on its own and monotonely
(``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``, ``SimpleImputer``,
``"passthrough"`` / identity ``FunctionTransformer``, and ``ColumnTransformer`` / nested
``Pipeline`` made of them) is one tree ensemble over its input columns: a split ``h(x) < t`` on a
transformed column is the split ``x < T`` on the input column it comes from, where T is the
smallest input value that the model sends right. T is found exactly, by bisection over the float64
numbers, with the transformers' own ``transform`` and the tree's own comparison rule (its float32
cast and LightGBM's zero rounding included), so the compiled Forest routes every input row as the
pipeline does. A missing input goes where the pipeline sends it: where the imputer's fill value
goes, or where the tree sends NaN.

PG², rankings, explanations and the audit then speak of the pipeline's input columns (``age``,
not ``scaler__age``), with the noise in the input columns' units. Anything else in front of the
model (a transformer that mixes columns, PCA, polynomial features, a custom function, an
imputer's missing-indicator columns) is refused, naming the step.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from .._validation import default_feature_names
from ..errors import UnsupportedModelError
from .cache import import_model
from .layout import Categories, Forest, category_bitsets
from .predictor import ModelPredictor, labelled_rows
from .registry import LibraryImporter, importer_for, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: Transformers that act on each column alone and monotonely (non-decreasing), by class name
PER_COLUMN_MONOTONE = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "SimpleImputer")
#: Encoders whose input columns become categorical features (set-membership splits), by class name
ENCODERS = ("OneHotEncoder", "OrdinalEncoder")

_WHAT_WORKS = ("a Pipeline is explained in its input columns when every step before the tree model is one of "
               f"{', '.join(PER_COLUMN_MONOTONE + ENCODERS)}, 'passthrough', or a ColumnTransformer / Pipeline "
               "of them; "
               "otherwise fit the tree model on the transformed data and explain it on that data")


@dataclass(frozen=True)
class _Stage:
    """One transformer applied to one of its input columns: output ``out`` of ``transformer`` when
    its input column ``position`` holds the values (its other inputs held at 0)."""

    transformer: Any
    position: int
    out: int

    def __call__(self, values: np.ndarray) -> np.ndarray:
        width = int(self.transformer.n_features_in_)
        block = np.zeros((len(values), width))
        # an earlier stage may overflow a bisection probe to +-inf, which the transformer refuses: such
        # inputs make the pipeline itself fail, so they are held at +-DBL_MAX (order kept, NaN kept)
        block[:, self.position] = np.clip(values, -np.finfo(np.float64).max, np.finfo(np.float64).max)
        names = getattr(self.transformer, "feature_names_in_", None)
        if names is not None:
            import pandas as pd

            block = pd.DataFrame(block, columns=list(names))
        with np.errstate(over="ignore", invalid="ignore"):      # bisection probes reach +-1.8e308
            return np.asarray(self.transformer.transform(block), dtype=np.float64)[:, self.out]


@dataclass(frozen=True)
class TransformedColumn:
    """A transformed column: the input column it comes from and the stages applied to it, in order.
    A column an encoder made from a categorical input has that input's ``labels`` (its categories but
    a missing value; a label's position is its code) and ``atoms``: its value for each code, for an
    unseen category and for a missing value (csrc/xai.h's atoms), before ``stages``."""

    source: int
    stages: tuple = ()
    labels: tuple | None = None
    atoms: tuple | None = None

    def then(self, stage: _Stage) -> "TransformedColumn":
        return replace(self, stages=self.stages + (stage,))

    def __call__(self, values: np.ndarray) -> np.ndarray:
        for stage in self.stages:
            values = stage(values)
        return values

    def atom_values(self) -> np.ndarray:
        """A categorical column's value (after its stages) for each atom."""
        return self(np.asarray(self.atoms, dtype=np.float64))


def pipeline_columns(pipeline) -> tuple[list[TransformedColumn], Any, bool]:
    """The columns the pipeline's final estimator sees, each as (input column, transform), the final
    estimator, and whether it sees them as a scipy sparse matrix (:func:`_sparse_after`); raises
    :class:`UnsupportedModelError` naming a step that is not per-column and monotone."""
    steps = list(pipeline.steps)
    final = steps[-1][1]
    if final is None or final == "passthrough":
        raise UnsupportedModelError("the Pipeline ends without a model; its last step must be a tree model")
    n_inputs = input_attribute(pipeline, "n_features_in_")
    if n_inputs is None:
        raise UnsupportedModelError("cannot tell how many input columns the Pipeline takes (is it fitted?)")
    columns = [TransformedColumn(j) for j in range(int(n_inputs))]
    sparse = False
    for name, step in steps[:-1]:
        columns = _through(step, name, columns)
        sparse = _sparse_after(step, sparse)
    return columns, final, sparse


def _sparse_after(step: Any, sparse: bool) -> bool:
    """Whether ``step`` gives a scipy sparse matrix when it is given one (``sparse``) or not: a OneHotEncoder
    with ``sparse_output``; a ColumnTransformer as its fitted ``sparse_output_`` says (it stacks its blocks
    into a sparse matrix below its ``sparse_threshold``, a dense block's zeros left out); a Pipeline as its
    steps do; any other step keeps the format of its input."""
    kind = type(step).__name__
    if kind == "Pipeline":
        for _, sub in step.steps:
            sparse = _sparse_after(sub, sparse)
        return sparse
    if kind == "ColumnTransformer":
        return bool(getattr(step, "sparse_output_", False))
    if kind in ENCODERS:
        return kind == "OneHotEncoder" and bool(step.sparse_output)
    return sparse


def input_attribute(pipeline: Any, name: str) -> Any:
    """``n_features_in_`` / ``feature_names_in_`` of a Pipeline's input: the first step that has it
    (a leading "passthrough" has none; the model at the latest), or None."""
    return next((getattr(step, name) for _, step in pipeline.steps if hasattr(step, name)), None)


def _through(step, name: str, columns: list[TransformedColumn]) -> list[TransformedColumn]:
    """The columns after ``step`` (named ``name`` in its pipeline)."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return columns
    if isinstance(step, str) and step == "drop":
        return []
    kind = type(step).__name__
    if kind == "Pipeline":
        for sub_name, sub in step.steps:
            columns = _through(sub, f"{name}__{sub_name}", columns)
        return columns
    if kind == "ColumnTransformer":
        return _through_column_transformer(step, name, columns)
    if kind == "FunctionTransformer" and step.func is None:
        return columns
    if kind in ENCODERS:
        return _through_encoder(step, name, kind, columns)
    if kind not in PER_COLUMN_MONOTONE:
        raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) does not transform each column on its own "
                                    f"and monotonely; {_WHAT_WORKS}")
    if getattr(step, "add_indicator", False):
        raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) adds missing-indicator columns (a column "
                                    f"that depends on another); use add_indicator=False; {_WHAT_WORKS}")
    if int(step.n_features_in_) != len(columns):
        raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) takes {step.n_features_in_} columns but "
                                    f"receives {len(columns)}")
    kept = np.arange(len(columns)) if kind != "SimpleImputer" else _imputed(step, name)
    return [columns[j].then(_Stage(step, int(j), out)) for out, j in enumerate(kept)]


def _imputed(step: Any, name: str) -> np.ndarray:
    """The input columns a fitted SimpleImputer keeps (one with no value in training is dropped unless
    ``keep_empty_features``); :class:`UnsupportedModelError` naming the step when it replaces anything but
    NaN (``missing_values=-1``: a value inside the column, not monotone) or fills text columns."""
    missing = step.missing_values
    if not (isinstance(missing, float) and np.isnan(missing)):
        raise UnsupportedModelError(f"Pipeline step {name!r} (SimpleImputer) replaces missing_values={missing!r}, "
                                    "a value inside the column (the transform is not monotone); mark missing "
                                    "values as NaN and leave missing_values=np.nan (the default)")
    try:
        statistics = np.asarray(step.statistics_, dtype=np.float64)
    except (TypeError, ValueError):
        raise UnsupportedModelError(f"Pipeline step {name!r} (SimpleImputer, strategy={step.strategy!r}) fills "
                                    f"text columns (with {list(step.statistics_)[:5]}); leave it out and encode "
                                    "the columns with a OneHotEncoder / OrdinalEncoder, which read a missing "
                                    "value as a category of its own") from None
    if getattr(step, "keep_empty_features", False) or step.strategy == "constant":
        return np.arange(len(statistics))
    return np.flatnonzero(~np.isnan(statistics))                  # empty columns dropped


def _through_encoder(step, name: str, kind: str, columns: list[TransformedColumn]) -> list[TransformedColumn]:
    """The columns after a fitted OneHotEncoder (one indicator column per kept category) or
    OrdinalEncoder (one code column per input): each a categorical column of its input. With
    ``handle_unknown='error'`` its labels are :class:`~xai_plugins.forest.layout.Categories` that refuse
    any other label (and a missing value, unless one was a category in training), as the encoder does."""
    if int(step.n_features_in_) != len(columns):
        raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) takes {step.n_features_in_} columns but "
                                    f"receives {len(columns)}")
    if getattr(step, "_infrequent_enabled", False):
        raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) groups infrequent categories "
                                    "(min_frequency / max_categories); fit it without them")
    out = []
    for i, column in enumerate(columns):
        if column.stages or column.labels is not None:
            raise UnsupportedModelError(f"Pipeline step {name!r} ({kind}) encodes a column that an earlier step "
                                        f"transformed; encode the input column itself; {_WHAT_WORKS}")
        categories = list(step.categories_[i])
        missing = [k for k, c in enumerate(categories) if c is None or (isinstance(c, float) and np.isnan(c))]
        labels = tuple(c for k, c in enumerate(categories) if k not in missing)
        if step.handle_unknown == "error":
            labels = Categories(labels, f"Pipeline step {name!r} ({kind}, handle_unknown='error') refuses it, as "
                                "the pipeline's own predict does; pass one of them, or fit the encoder with "
                                f"handle_unknown={'ignore' if kind == 'OneHotEncoder' else 'use_encoded_value'!r}",
                                refuses_missing=not missing)
        n = len(labels)
        if kind == "OrdinalEncoder":
            unseen = float(step.unknown_value) if step.handle_unknown == "use_encoded_value" else np.nan
            # a missing value the encoder never saw in training is an unknown category to it
            lost = float(step.encoded_missing_value) if missing else unseen
            atoms = np.concatenate((np.arange(n, dtype=np.float64), [unseen, lost]))
            out.append(TransformedColumn(column.source, labels=labels, atoms=tuple(atoms)))
            continue
        dropped = None if step.drop_idx_ is None else step.drop_idx_[i]
        for k in range(len(categories)):
            if dropped is not None and k == dropped:
                continue
            atoms = np.zeros(n + 2)                 # an unseen category: every indicator 0 (handle_unknown)
            atoms[n + 1 if k in missing else k] = 1.0
            out.append(TransformedColumn(column.source, labels=labels, atoms=tuple(atoms)))
    return out


def _through_column_transformer(step, name: str, columns: list[TransformedColumn]) -> list[TransformedColumn]:
    """The columns after a fitted ColumnTransformer: each transformer's outputs in its output slice."""
    inputs = getattr(step, "_transformer_to_input_indices", None)
    slices = getattr(step, "output_indices_", None)
    if inputs is None or slices is None:
        raise UnsupportedModelError(f"Pipeline step {name!r} (ColumnTransformer) is not fitted by a supported "
                                    "scikit-learn version (no output_indices_)")
    width = max((s.stop for s in slices.values()), default=0)
    out: list = [None] * width
    for sub_name, sub, _ in step.transformers_:
        block = slices[sub_name]
        if block.stop == block.start:
            continue
        produced = _through(sub, f"{name}__{sub_name}", [columns[j] for j in inputs[sub_name]])
        if len(produced) != block.stop - block.start:
            raise UnsupportedModelError(f"Pipeline step {name}__{sub_name} gives {block.stop - block.start} "
                                        f"columns where {len(produced)} were traced")
        out[block] = produced
    return out


def _ordered_keys(x: np.ndarray) -> np.ndarray:
    """float64 -> uint64 keys in the same order (-inf first, +inf last; NaN not allowed)."""
    bits = x.view(np.int64)
    return (bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))).view(np.uint64) ^ np.uint64(1 << 63)


def _from_keys(keys: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_ordered_keys`."""
    bits = (keys ^ np.uint64(1 << 63)).view(np.int64)
    return (bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))).view(np.float64)


def switch_points(goes_right: Callable[[np.ndarray], np.ndarray], count: int) -> np.ndarray:
    """(count,) smallest finite float64 x with ``goes_right(x)[i]`` (+inf when none, -inf when every
    finite x goes right), for predicates that are False then True as x grows: a finite x goes right
    iff x >= the result. At most 64 vectorised bisection steps."""
    biggest = np.finfo(np.float64).max           # inputs are finite: transformers refuse infinities
    lo = np.full(count, _ordered_keys(np.array([-biggest]))[0])     # a key that goes left, once checked
    hi = np.full(count, _ordered_keys(np.array([biggest]))[0])      # a key that goes right, once checked
    right_low = goes_right(_from_keys(lo))
    right_high = goes_right(_from_keys(hi))
    open_ = ~right_low & right_high
    while True:
        gap = np.where(open_, hi - lo, np.uint64(0))
        if not (gap > 1).any():
            break
        mid = lo + gap // np.uint64(2)
        right = goes_right(_from_keys(mid))
        moving = gap > 1
        hi = np.where(moving & right, mid, hi)
        lo = np.where(moving & ~right, mid, lo)
    return np.where(right_low, -np.inf, np.where(right_high, _from_keys(hi), np.inf))


def compile_pipeline(forest: Forest, columns: list[TransformedColumn], feature_names: list[str],
                     predict_fn: Callable | None, sparse_zeros_missing: bool = False) -> Forest:
    """The Forest over the pipeline's input columns of ``forest`` (the final model's Forest over the
    transformed columns ``columns``): every split x < T on the input column, T the exact switch
    point, NaN routed where the transform sends it. ``predict_fn``: the pipeline's own predictor.
    ``sparse_zeros_missing``: the model sees the columns as a sparse matrix and reads its zeros as missing
    values (XGBoost): a category whose encoded value is 0 goes where the model sends missing values, and a
    numeric column is refused where its 0 would go elsewhere than its comparison sends it (a single input
    value routed apart, which no threshold on the input column expresses)."""
    if len(columns) != forest.n_features:
        raise UnsupportedModelError(f"the Pipeline gives {len(columns)} columns but its model takes "
                                    f"{forest.n_features}")
    internal = np.flatnonzero(forest.left_child >= 0)
    feature = np.array(forest.feature, dtype=np.int32)
    threshold = np.array(forest.threshold, dtype=np.float64)
    missing_left = np.array(forest.missing_left, dtype=np.uint8)
    labels = _input_labels(forest, columns, feature_names)
    n_categories = np.array([0 if known is None else len(known) for known in labels], dtype=np.int32)
    left_sets: dict[int, np.ndarray] = {}                # categorical node -> which atoms 0 .. K go left
    for j in np.unique(forest.feature[internal]):
        nodes = internal[forest.feature[internal] == j]
        column = columns[int(j)]
        feature[nodes] = column.source
        if column.labels is None and forest.n_categories is not None and forest.n_categories[j]:
            raise UnsupportedModelError(
                f"the Pipeline's model reads its column {int(j)} (from input column "
                f"{feature_names[column.source]!r}) as categorical, but no OneHotEncoder / OrdinalEncoder of the "
                "pipeline made it: encode that input column with an OrdinalEncoder in front of the model, or "
                "explain the model itself on the transformed columns (pipe[:-1].transform(X))")
        if column.labels is not None:
            values = column.atom_values()                    # atoms 0 .. K-1, unseen (K), missing (K + 1)
            if sparse_zeros_missing:
                values[values == 0] = np.nan
            left = _goes_left(forest, np.repeat(nodes, len(values)), np.tile(values, len(nodes))).reshape(
                len(nodes), len(values))
            left_sets.update(zip(nodes.tolist(), left[:, :-1]))
            missing_left[nodes], threshold[nodes] = left[:, -1], 0.0
            continue
        if sparse_zeros_missing and np.any(_goes_left(forest, nodes, np.zeros(len(nodes)))
                                           != (forest.missing_left[nodes] != 0)):
            raise UnsupportedModelError(
                f"input column {feature_names[column.source]!r} reaches the Pipeline's model "
                f"({forest.model_type}) in a sparse matrix, whose zeros it reads as missing values: the input value "
                "that the transform makes 0 goes where missing values go, not where its threshold sends it, which "
                "no split of the input column expresses; give the model a dense matrix (ColumnTransformer "
                "sparse_threshold=0, OneHotEncoder sparse_output=False)")
        threshold[nodes] = switch_points(functools.partial(_goes_right, forest, nodes, column), len(nodes))
        filled = column(np.array([np.nan]))[0]
        if sparse_zeros_missing and filled == 0:
            filled = np.nan                 # an imputer's fill value 0 is a missing value to the model
        if not np.isnan(filled):       # an imputer: a missing input goes where its fill value goes
            missing_left[nodes] = _goes_left(forest, nodes, np.full(len(nodes), filled))
    numeric_and_categorical = set(feature[internal][[int(node) not in left_sets for node in internal]]) \
        & set(np.flatnonzero(n_categories))
    if numeric_and_categorical:
        raise UnsupportedModelError(f"input column(s) {sorted(feature_names[j] for j in numeric_and_categorical)} "
                                    "are both encoded as categories and used as numbers")
    categorical: dict[str, Any] = {}
    if n_categories.any():
        nodes = np.array(sorted(left_sets), dtype=np.int64)
        cat_start, cat_bits = category_bitsets(nodes, [np.flatnonzero(left_sets[n]) for n in nodes.tolist()],
                                               n_categories[feature[nodes]], len(feature))
        categorical = dict(n_categories=n_categories, cat_start=cat_start, cat_bits=cat_bits)
    return Forest(left_child=forest.left_child, right_child=forest.right_child, feature=feature,
                  threshold=threshold, missing_left=missing_left, value=forest.value,
                  tree_offset=forest.tree_offset, tree_target=forest.tree_target, base_score=forest.base_score,
                  n_features=len(feature_names), split_rule="lt", input_float32=False, aggregate=forest.aggregate,
                  task=forest.task, output_space=forest.output_space, model_type=f"Pipeline({forest.model_type})",
                  impurity=forest.impurity, weight=forest.weight, feature_names=feature_names,
                  output_names=forest.output_names, predict_fn=predict_fn, objective=forest.objective,
                  category_labels=labels if n_categories.any() else None, numeric_labels=True,
                  input_limits=_input_limits(forest, columns, len(feature_names)),
                  nan_refused=_nan_refused(forest, columns, len(feature_names)), **categorical)


def _input_labels(forest: Forest, columns: list[TransformedColumn], feature_names: list[str]) -> list:
    """Per input column, the labels of the encoder that made categorical columns of it (None: none did), as
    :class:`~xai_plugins.forest.layout.Categories` where the pipeline refuses some label (the encoder's
    ``handle_unknown='error'``, or a model that refuses the NaN its encoder gives an unseen or missing
    category: :func:`_model_refusal`), kept over labels that refuse nothing. Every encoded input column has
    its labels, split on or not: the pipeline's own predict reads (and may refuse) its labels either way."""
    labels: list = [None] * len(feature_names)
    for j, column in enumerate(columns):
        if column.labels is None:
            continue
        if labels[column.source] not in (None, column.labels):
            raise UnsupportedModelError(f"input column {feature_names[column.source]!r} is encoded twice, "
                                        "with different categories")
        if getattr(labels[column.source], "refusal", None) is None:
            labels[column.source] = _model_refusal(forest, j, column)
    return labels


def _model_refusal(forest: Forest, j: int, column: TransformedColumn) -> Any:
    """The labels of the categorical ``column`` (the model's column ``j``), refusing also the unseen and the
    missing category where its encoder gives them NaN (OrdinalEncoder ``unknown_value=np.nan``) and the model
    refuses NaN there (its ``nan_refused``: scikit-learn's GradientBoosting)."""
    if forest.nan_refused is None or not forest.nan_refused[j]:
        return column.labels
    nan = np.isnan(column.atom_values()[-2:])             # the unseen and the missing atom
    if not nan.any():
        return column.labels
    known = column.labels
    return Categories(known, getattr(known, "refusal", None) or (
        f"the Pipeline's encoder turns it into NaN, which its model ({forest.model_type}) refuses, as the pipeline's "
        "own predict does; pass one of them, or have the encoder give a number (OrdinalEncoder unknown_value=-1)"),
        refuses_missing=nan[1] or getattr(known, "refuses_missing", False),
        refuses_unseen=nan[0] or getattr(known, "refuses_unseen", False))


def _nan_refused(forest: Forest, columns: list[TransformedColumn], n_inputs: int) -> np.ndarray | None:
    """The input columns (numeric) whose NaN reaches the pipeline's model as NaN (no imputer) where the model
    refuses NaN (its ``nan_refused``), or None when there is none (an encoded column's NaN is its missing
    category: :func:`_model_refusal`)."""
    if forest.nan_refused is None:
        return None
    refused = np.zeros(n_inputs, dtype=bool)
    for j, column in enumerate(columns):
        if column.labels is None and forest.nan_refused[j] and np.isnan(column(np.array([np.nan]))[0]):
            refused[column.source] = True
    return refused if refused.any() else None


def _input_limits(forest: Forest, columns: list[TransformedColumn], n_inputs: int) -> np.ndarray | None:
    """Per input column, the smallest and largest value the pipeline's model takes once transformed (the
    model's own ``input_limits`` on its columns, found exactly on the input column by bisection through the
    monotone transform), or None when the model takes any finite value."""
    if forest.input_limits is None:
        return None
    limits = np.tile([-np.inf, np.inf], (n_inputs, 1))
    for j, column in enumerate(columns):
        if column.labels is not None:
            continue                        # category atoms: 0 / 1 indicators or codes, inside any limit
        low, high = forest.input_limits[j]
        if column.stages:
            first_in, first_above = switch_points(functools.partial(_reaches, column, np.array(
                [low, np.nextafter(high, np.inf)])), 2)
            low, high = first_in, np.nextafter(first_above, -np.inf)
        limits[column.source] = max(limits[column.source, 0], low), min(limits[column.source, 1], high)
    return limits


def _reaches(column: TransformedColumn, bounds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Whether input value x[i], once ``column`` transforms it, is at least bounds[i]."""
    return column(x) >= bounds


def _goes_right(forest: Forest, nodes: np.ndarray, column: TransformedColumn, x: np.ndarray) -> np.ndarray:
    """Whether input value x[i] goes right at node nodes[i] once ``column`` transforms it."""
    return ~_goes_left(forest, nodes, column(x))


def _goes_left(forest, nodes: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Whether value z[i] (a transformed column's value) goes left at node nodes[i], by the model's
    own rule (csrc/xai.h ``xai_goes_left``): zero rounding, float32 cast, NaN to its side; at a
    categorical node of the model (its own ``categorical_features`` / ``enable_categorical``), by the
    bit of z's category (z looked up in the model's labels when it reads numbers as labels)."""
    v = np.where(np.abs(z) <= forest.zero_threshold, 0.0, z)
    if forest.input_float32:
        with np.errstate(over="ignore"):
            v = v.astype(np.float32).astype(np.float64)
    t = forest.threshold[nodes]
    left = v < t if forest.split_rule == "lt" else v <= t
    K = np.zeros(len(nodes), dtype=np.int64) if forest.n_categories is None else \
        forest.n_categories[forest.feature[nodes]].astype(np.int64)
    for j in np.unique(forest.feature[nodes][K > 0]):
        at = np.flatnonzero((forest.feature[nodes] == j) & (K > 0))
        code = z[at]
        known = forest.category_labels[j] if forest.category_labels is not None else None
        if forest.numeric_labels and known is not None:
            import pandas as pd

            code = np.where(np.isnan(code), np.nan, pd.Index(known).get_indexer(code))
        atom = np.where((code >= 0) & (code < K[at]) & (code == np.floor(code)), np.nan_to_num(code), K[at])
        atom = atom.astype(np.int64)
        word = forest.cat_bits[forest.cat_start[nodes[at]] + atom // 64]
        left[at] = ((word >> (atom % 64).astype(np.uint64)) & np.uint64(1)) == 1
    return np.where(np.isnan(z), forest.missing_left[nodes] != 0, left)


def explained_model(model: Any) -> tuple[Any, Callable[[Any], Any], np.ndarray | None]:
    """What a tree-model library explains for ``model``: (the fitted tree model, a function from
    ``model``'s input rows to that model's rows, for each of its columns the input column it comes
    from, or None when they are the input columns). A Pipeline gives its final model, its transform
    and its columns' sources, so that per-column explanations of the final model (TreeSHAP, whose
    values depend only on which side of each split a value falls, so they are the same for the
    compiled Forest) add up into the pipeline's input columns; any other model is its own."""
    pipeline = sys.modules.get("sklearn.pipeline")
    if pipeline is None or not isinstance(model, pipeline.Pipeline):
        return model, (lambda X: X), None
    columns, final, _ = pipeline_columns(model)
    return final, model[:-1].transform, np.array([c.source for c in columns], dtype=np.int64)


def _through_pipeline(inner: ModelPredictor, labels: dict, pipeline: Any, X: Any) -> Any:
    """The final step's own predictor ``inner`` on the pipeline's transform of the rows ``X`` (codes
    turned back into their ``labels`` first); the final model read from ``pipeline``, so that a pickled
    Pipeline predictor (Monte Carlo, the audit's scorer on a row engine) carries it."""
    return inner.apply(pipeline[-1], pipeline[:-1].transform(labelled_rows(X, labels)))


class PipelineImporter(LibraryImporter):
    """scikit-learn ``Pipeline``s of per-column monotone transformers in front of a supported tree
    model (see the module docstring)."""

    name = "sklearn-pipeline"
    supported = ("a scikit-learn Pipeline of " + ", ".join(PER_COLUMN_MONOTONE) +
                 " / ColumnTransformer steps in front of one of these models")

    def owns(self, cls: type) -> bool:
        """A subclass of ``sklearn.pipeline.Pipeline`` (False while scikit-learn is not imported)."""
        pipeline = sys.modules.get("sklearn.pipeline")
        return pipeline is not None and issubclass(cls, pipeline.Pipeline)

    def runtime(self, model: Any) -> tuple[str, float]:
        """The Pipeline's own predict: scikit-learn's, in front of its final model's runtime (and precision)."""
        final = model.steps[-1][1]
        found = importer_for(final)
        inner, unit = found.runtime(final) if found is not None else (type(final).__name__, 2.0 ** -53)
        return f"a scikit-learn {sys.modules['sklearn'].__version__} Pipeline in front of {inner}", unit

    def to_forest(self, model: Any) -> Forest:
        columns, final, sparse = pipeline_columns(model)
        inner = import_model(final)
        if not np.isnan(inner.missing_value):
            raise UnsupportedModelError("the Pipeline's model reads a missing= sentinel in its transformed "
                                        "columns; leave missing values as NaN (the XGBoost default)")
        names = self.feature_names(model)
        names = [str(c) for c in names] if names is not None else \
            default_feature_names(int(input_attribute(model, "n_features_in_")))
        library = importer_for(final)
        if sparse and getattr(library, "sparse_refuses_nan", False):   # e.g. scikit-learn's trees, given sparse rows
            inner = replace(inner, nan_refused=np.ones(inner.n_features, dtype=bool))
        return compile_pipeline(inner, columns, names, self.predictor(model),
                                sparse and getattr(library, "sparse_zeros_missing", False))

    def feature_names(self, model: Any) -> Any:
        """The names of the pipeline's input columns (those of its first step that has them)."""
        return input_attribute(model, "feature_names_in_")

    def predictor(self, model: Any) -> ModelPredictor:
        """The final model's own predictor applied to the pipeline's transform of the input rows
        (categorical inputs given as codes are turned back into their labels first)."""
        columns, final, _ = pipeline_columns(model)
        found = importer_for(final)
        if found is None:
            raise UnsupportedModelError(f"the Pipeline's model {type(final).__name__} is not a supported tree model")
        labels = {c.source: c.labels for c in columns if c.labels is not None}
        return ModelPredictor(model, functools.partial(_through_pipeline, found.predictor(final), labels))

    def probability(self, model: Any, forest: Forest) -> tuple[str, ModelPredictor] | None:
        """The final model's link and probabilities (its importer's), on the pipeline's transform of the rows."""
        columns, final, _ = pipeline_columns(model)
        found = importer_for(final)
        inner = None if found is None else found.probability(final, import_model(final))
        if inner is None:
            return None
        labels = {c.source: c.labels for c in columns if c.labels is not None}
        return inner[0], ModelPredictor(model, functools.partial(_through_pipeline, inner[1], labels))

    def fingerprint(self, model: Any) -> tuple[tuple, tuple]:
        """Every step object and its fitted arrays (a refit replaces them), and the final model's own
        fingerprint."""
        objects: list = []
        values: list = [type(model), len(model.steps)]
        for _, step in model.steps[:-1]:
            objects.append(step)
            objects += [v for k, v in sorted(vars(step).items()) if k.endswith("_") and hasattr(v, "__len__")] \
                if hasattr(step, "__dict__") else []
        final = model.steps[-1][1]
        found = importer_for(final)
        if found is not None:
            inner_objects, inner_values = found.fingerprint(final)
            objects += [final, *inner_objects]
            values += list(inner_values)
        return tuple(objects), tuple(values)


register(PipelineImporter())
