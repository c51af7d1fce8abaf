"""The flat tree-ensemble structure every primitive works on (:class:`Forest`, mirroring
``csrc/xai.h``) and the helpers the importers build it with.

A :class:`Forest` is one structure of arrays over all nodes of all trees, child ids local to their
tree (``tree_offset`` gives each tree's first node), thresholds bit-identical to the model's own,
and the model's comparison rule (``x <= t`` for scikit-learn and LightGBM, ``x < t`` for XGBoost,
on float32(x) where the model casts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._categories import category_codes, check_codes, check_refused, check_taken
from .._validation import model_rows
from ..errors import InputError, ModelStructureError

__all__: list[str] = []      # internal module: the public names are in the API reference

#: what a refusal of categorical splits suggests instead
CATEGORICAL_INSTEAD = ("one-hot or ordinal encode the column in a scikit-learn Pipeline (OneHotEncoder / "
                       "OrdinalEncoder in front of the model: explained in the input column), or use a model whose "
                       "categorical splits are supported exactly: LightGBM categorical_feature=, XGBoost "
                       "enable_categorical=True, HistGradientBoosting categorical_features=")

#: the largest float64 that float32 does not round to infinity (2**128 - 2**103 rounds to it, ties to even): a model
#: that casts its inputs to float32 and refuses infinities (scikit-learn's trees) refuses anything beyond it
FLOAT32_LIMIT = float(np.nextafter(2.0 ** 128 - 2.0 ** 103, 0.0))

_ARRAY_FIELDS = {"left_child": np.int32, "right_child": np.int32, "feature": np.int32, "threshold": np.float64,
                 "missing_left": np.uint8, "tree_offset": np.int64, "tree_target": np.int32,
                 "base_score": np.float64, "impurity": np.float64, "weight": np.float64,
                 "n_categories": np.int32, "cat_start": np.int64, "cat_bits": np.uint64, "input_limits": np.float64,
                 "nan_refused": np.bool_}


def _read_only(array: ArrayLike, dtype: DTypeLike) -> np.ndarray:
    """A C-contiguous read-only view of ``array`` as ``dtype`` (no copy when it already is one)."""
    out = np.ascontiguousarray(array, dtype=dtype).view()
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class Forest:
    """A tree ensemble as flat, read-only arrays: what every method of the package works on.

    One structure of arrays over all nodes of all trees (see ``csrc/xai.h`` for the meaning of
    every field), child ids local to their tree (``tree_offset`` gives each tree's first node),
    thresholds bit-identical to the model's own. ``value`` has shape (n_nodes, leaf_width); a tree
    adds its leaf values to outputs ``tree_target[t] .. tree_target[t] + leaf_width - 1``; the
    model output is ``base_score + sum`` (boosting) or ``base_score + mean`` (forests) over trees,
    in ``output_space``. Inputs equal to ``missing_value`` (XGBoost's ``missing=`` sentinel; NaN
    otherwise) are read as NaN, i.e. missing. A Forest is immutable: its arrays are read-only, and
    derived tables (the C struct, PG²'s split boundaries) are cached by the modules that use them,
    keyed on the Forest. The C core validates the structure once, at construction. Usually built
    by :func:`xai_plugins.import_model`.

    Parameters
    ----------
    left_child, right_child : array-like of int of shape (n_nodes,)
        Local id (within its tree) of each node's left / right child, -1 for a leaf.
    feature : array-like of int of shape (n_nodes,)
        Split feature of each internal node (set to 0 at leaves).
    threshold : array-like of float of shape (n_nodes,)
        Split threshold of each internal node, bit-identical to the model's own; not NaN (±inf
        allowed); set to 0 at leaves.
    missing_left : array-like of shape (n_nodes,)
        1 when NaN goes left at the node, else 0.
    value : array-like of float of shape (n_nodes,) or (n_nodes, leaf_width)
        Leaf outputs (internal nodes ignored).
    tree_offset : array-like of int of shape (n_trees + 1,)
        First node of each tree; ``tree_offset[0] = 0``, ``tree_offset[-1] = n_nodes``.
    tree_target : array-like of int of shape (n_trees,)
        First output each tree adds to.
    base_score : array-like of float of shape (n_outputs,)
        The model's constant, added to the trees' sum or mean.
    n_features : int
        Number of input features d.
    split_rule : {"le", "lt"}
        The comparison that sends a row left: ``x <= t`` (scikit-learn, LightGBM) or ``x < t``
        (XGBoost).
    input_float32 : bool
        Whether the model compares float32(x), as scikit-learn and XGBoost do.
    aggregate : {"sum", "mean"}
        How the trees are combined: summed (boosting) or averaged (forests).
    task : {"regression", "classification"}
        The model's task.
    output_space : {"raw", "margin", "probability"}
        "raw" regression output, "margin" for boosted classifiers and link-function objectives,
        "probability" for forest classifiers.
    model_type : str
        Readable name of the model's type (e.g. "sklearn.RandomForestRegressor").
    impurity : array-like of float of shape (n_nodes,) or None, default None
        Node impurities (local MDI needs them).
    weight : array-like of float of shape (n_nodes,) or None, default None
        Weighted training samples per node (scikit-learn), when known.
    feature_names : list of str or None, default None
        The model's feature names.
    output_names : list of str, default ["output"]
        Names of the outputs (class labels for classifiers).
    predict_fn : callable or None, default None
        The model's own predictor in ``output_space`` (it holds the model weakly).
    zero_threshold : float, default 0.0
        Inputs with ``|x| <= zero_threshold`` are read as 0 (LightGBM).
    objective : str or None, default None
        The training objective, when the library records one.
    missing_value : float, default nan
        Inputs equal to it (in float32) are missing, as NaN is (XGBoost's ``missing=``).
    n_categories : array-like of int of shape (n_features,) or None, default None
        Per feature its number of category codes (0: numeric), or None when there are no
        categorical features.
    cat_start : array-like of int of shape (n_nodes,) or None, default None
        Per node the first word of its category bitset in ``cat_bits``.
    cat_bits : array-like of uint64 or None, default None
        The category bitsets of the categorical splits: which category codes go left.
    category_labels : list or None, default None
        Per feature, the categories the model was trained on (their positions are its codes), or
        None; a DataFrame's category / text columns are read as these codes.
    numeric_labels : bool, default False
        True when the model's own predict reads a number in a categorical column as a label to
        look up in ``category_labels`` (scikit-learn encoders, HistGradientBoosting), in arrays and
        DataFrames alike; False when the number is the code itself (LightGBM, XGBoost).
    max_depth : int or None, default None
        The deepest root-to-leaf edge count over all trees: worked out from the arrays when None
        (an importer that reads it from the model passes it; the C validator refuses a tree deeper
        than it).
    input_limits : array-like of float of shape (n_features, 2) or None, default None
        Per feature the smallest and the largest input the model's own predict takes (scikit-learn's
        trees refuse a value that their float32 cast makes infinite); rows beyond them are refused.
        None: any finite value.
    nan_refused : array-like of bool of shape (n_features,) or None, default None
        The features in which the model's own predict refuses a missing value (scikit-learn's
        GradientBoosting); rows holding one there are refused. None: NaN is taken everywhere.

    Attributes
    ----------
    leaf_width : int
        Values per node: n_outputs for vector leaves, else 1.
    n_outputs : int
        Number of model outputs.
    n_trees : int
        Number of trees.
    n_nodes : int
        Number of nodes over all trees.
    n_leaves : int
        Number of leaves over all trees.
    split_features : ndarray of bool of shape (n_features,)
        Features that some internal node splits on.
    categorical : ndarray of bool of shape (n_features,)
        The categorical features (set-membership splits).

    Raises
    ------
    InputError
        Arrays of inconsistent sizes.
    ModelStructureError
        Trees that are not well-formed (found by the C validator).

    See Also
    --------
    xai_plugins.import_model : Builds the Forest of a fitted model, cached.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import xai_plugins as xp
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> forest = xp.import_model(model)
    >>> forest.n_trees, forest.n_features, forest.output_space, forest.aggregate
    (5, 10, 'raw', 'mean')
    >>> bool(np.allclose(forest.predict(X[:5])[:, 0], model.predict(X[:5])))
    True

    A one-split stump built by hand (x <= 0.5 gives 1, else 2; NaN goes left):

    >>> stump = xp.Forest(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[0, 0, 0],
    ...                   threshold=[0.5, 0, 0], missing_left=[1, 0, 0], value=[0.0, 1.0, 2.0],
    ...                   tree_offset=[0, 3], tree_target=[0], base_score=[0.0], n_features=1,
    ...                   split_rule="le", input_float32=False, aggregate="sum", task="regression",
    ...                   output_space="raw", model_type="manual")
    >>> stump.predict([[0.0], [1.0], [np.nan]])[:, 0].tolist()
    [1.0, 2.0, 1.0]
    """

    left_child: np.ndarray
    right_child: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray
    tree_offset: np.ndarray
    tree_target: np.ndarray
    base_score: np.ndarray
    n_features: int
    split_rule: str                      # "le" or "lt"
    input_float32: bool
    aggregate: str                       # "sum" or "mean"
    task: str                            # "regression" or "classification"
    output_space: str                    # "raw", "margin" or "probability"
    model_type: str
    impurity: np.ndarray | None = None
    weight: np.ndarray | None = None     # weighted samples per node (sklearn), when known
    feature_names: list[str] | None = None
    output_names: list[str] = field(default_factory=lambda: ["output"])
    predict_fn: Callable | None = None   # the model's own predictor, in output_space
    zero_threshold: float = 0.0          # inputs with |x| <= zero_threshold are read as 0 (LightGBM)
    objective: str | None = None         # the training objective, when the library records one
    missing_value: float = float("nan")  # inputs equal to it (in float32) are missing, as NaN is (XGBoost)
    #: categorical features (csrc/xai.h): per feature its number of category codes (0: numeric), or None
    #: when there are none; per node the first word of its category bitset in ``cat_bits``
    n_categories: np.ndarray | None = None
    cat_start: np.ndarray | None = None
    cat_bits: np.ndarray | None = None
    #: per feature, the categories the model was trained on (their positions are its codes), or None; a
    #: DataFrame's category / text columns are read as these codes (``xai_plugins._categories.category_codes``)
    category_labels: list | None = None
    #: True when the model's own predict reads a number in a categorical column as a label to look up in
    #: ``category_labels`` (scikit-learn encoders, HistGradientBoosting), in arrays and DataFrames alike;
    #: False when the number is the code itself (LightGBM, XGBoost)
    numeric_labels: bool = False
    #: the deepest root-to-leaf edge count over all trees: worked out from the arrays when None (an
    #: importer that reads it from the model passes it; the C validator refuses a tree deeper than it)
    max_depth: int | None = None
    #: per feature the smallest and largest input the model's own predict takes (n_features, 2), or None
    input_limits: np.ndarray | None = None
    #: the features where the model's own predict refuses NaN (n_features,), or None
    nan_refused: np.ndarray | None = None
    leaf_width: int = field(init=False)
    n_outputs: int = field(init=False)
    n_trees: int = field(init=False)
    n_nodes: int = field(init=False)
    n_leaves: int = field(init=False)

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        n = len(self.left_child)
        for name, dtype in _ARRAY_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                put(name, _read_only(np.atleast_1d(value) if name == "base_score" else value, dtype))
        if self.n_categories is not None and not np.any(self.n_categories):
            put("n_categories", None)                   # no categorical feature: the numeric layout
        if self.n_categories is not None and (len(self.n_categories) != self.n_features or self.cat_start is None
                                              or len(self.cat_start) != n or self.cat_bits is None):
            raise InputError("Forest.n_categories needs one entry per feature, cat_start one per node and cat_bits")
        if self.input_limits is not None and self.input_limits.shape != (self.n_features, 2):
            raise InputError(f"Forest.input_limits needs shape ({self.n_features}, 2); got {self.input_limits.shape}")
        if self.nan_refused is not None and self.nan_refused.shape != (self.n_features,):
            raise InputError(f"Forest.nan_refused needs shape ({self.n_features},); got {self.nan_refused.shape}")
        for name in ("right_child", "feature", "threshold", "missing_left"):
            if len(getattr(self, name)) != n:
                raise InputError(f"Forest.{name} has {len(getattr(self, name))} entries, expected {n}")
        is_leaf = self.left_child < 0
        for name in ("feature", "threshold"):           # a leaf has neither: +0 there (in a copy where it is not)
            at_leaves = getattr(self, name)[is_leaf]
            if np.any(at_leaves != 0) or np.any(np.signbit(at_leaves)):
                cleared = getattr(self, name).copy()
                cleared[is_leaf] = 0
                put(name, _read_only(cleared, cleared.dtype))
        put("value", _read_only(np.asarray(self.value, dtype=np.float64).reshape(n, -1), np.float64))
        if self.tree_offset[-1] != n or len(self.tree_target) != len(self.tree_offset) - 1:
            raise InputError("Forest.tree_offset / tree_target do not match the node arrays")
        if self.feature_names is not None:
            put("feature_names", [str(c) for c in self.feature_names])
        put("output_names", [str(c) for c in self.output_names])
        put("missing_value", float(self.missing_value))
        put("leaf_width", self.value.shape[1])
        put("n_outputs", len(self.base_score))
        put("n_trees", len(self.tree_offset) - 1)
        put("n_nodes", n)
        put("n_leaves", int(is_leaf.sum()))
        put("max_depth", int(_max_depth(self.left_child, self.right_child, self.tree_offset) if self.max_depth is None
                             else self.max_depth))
        from .. import _native  # validates the structure in C once, at import time

        _native.validate(self)

    def __repr__(self) -> str:
        return (f"Forest({self.model_type}, {self.n_trees} trees, {self.n_leaves} leaves, "
                f"{self.n_features} features, outputs {self.output_names} in {self.output_space} space)")

    @property
    def split_features(self) -> np.ndarray:
        """Boolean (n_features,): features that some internal node splits on."""
        used = np.zeros(self.n_features, dtype=bool)
        used[self.feature[self.left_child >= 0]] = True
        return used

    def rows(self, X: Any, *, what: str = "X", allow_nan: bool = True,
             incomplete_ok: bool = False) -> tuple[np.ndarray, list[str]]:
        """``X`` as float64 rows in this model's feature order and the feature names (a DataFrame
        is aligned by column name; see ``xai_plugins._validation.model_rows``); entries equal to
        ``missing_value`` become NaN. A missing value where the model's own predict refuses one
        (``nan_refused``) is refused unless ``incomplete_ok`` (a caller that sets incomplete rows aside,
        as the audit does)."""
        if self.category_labels is not None:
            X = category_codes(X, self.feature_names, self.category_labels, self.numeric_labels, what)
        rows, names = model_rows(X, self.feature_names, self.n_features, what=what, allow_nan=allow_nan,
                                 missing=self.missing_value)
        if self.n_categories is not None:
            check_codes(rows, self.n_categories, what)
        if self.numeric_labels and self.category_labels is not None:
            check_refused(rows, self.category_labels, what)
        if self.input_limits is not None or self.nan_refused is not None:
            check_taken(rows, self.input_limits, None if incomplete_ok else self.nan_refused, names, what)
        return rows, names

    @property
    def categorical(self) -> np.ndarray:
        """Boolean (n_features,): the categorical features (set-membership splits)."""
        return np.zeros(self.n_features, dtype=bool) if self.n_categories is None else self.n_categories > 0

    def predict(self, X: Any) -> np.ndarray:
        """Model output in ``output_space`` computed by the C core, shape (n, n_outputs)."""
        from .. import _native

        return _native.predict(self, self.rows(X)[0])


class Categories(tuple):
    """A feature's training categories (a label's position is its code, as in ``Forest.category_labels``)
    whose model refuses a label outside them, rather than read it as an unseen category: ``refusal`` says
    who refuses it and what to do (read by :func:`~xai_plugins._categories.category_codes` and
    :func:`~xai_plugins._categories.check_refused`); ``refuses_missing``: a missing value too (an encoder
    with ``handle_unknown='error'`` that met none in training); ``refuses_unseen`` False: only a missing
    value is refused."""

    refusal: str
    refuses_missing: bool

    refuses_unseen: bool

    def __new__(cls, labels: Any, refusal: str, refuses_missing: bool = False, refuses_unseen: bool = True) \
            -> Categories:
        out = super().__new__(cls, labels)
        out.refusal, out.refuses_missing, out.refuses_unseen = refusal, bool(refuses_missing), bool(refuses_unseen)
        return out

    def __reduce__(self) -> tuple:
        return Categories, (tuple(self), self.refusal, self.refuses_missing, self.refuses_unseen)


def category_values(rows: np.ndarray, labels: list | None) -> np.ndarray:
    """The inverse of :func:`xai_plugins._categories.category_codes`: ``rows`` (n, d) with each
    feature that has ``labels`` (per feature, or None) read back from codes to labels, as an object
    array (NaN stays NaN; a code outside the labels, an unseen category, stays the number it is).
    ``rows`` itself when no feature has labels."""
    if labels is None or all(known is None for known in labels):
        return rows
    out = rows.astype(object)
    for j, known in enumerate(labels):
        if known is None:
            continue
        codes = rows[:, j]
        hit = np.flatnonzero(np.isfinite(codes) & (codes >= 0) & (codes < len(known)) & (codes == np.floor(codes)))
        out[hit, j] = np.asarray(list(known), dtype=object)[codes[hit].astype(np.int64)]
    return out


class _Unseen:
    """The label of :func:`code_frame`'s unseen category: equal to no label of any model."""

    def __repr__(self) -> str:
        return "<unseen category>"


_UNSEEN = _Unseen()


def code_frame(rows: np.ndarray, names: list, labels: list | None, index: Any = None) -> Any:
    """``rows`` (category codes in the model's feature order, as :meth:`Forest.rows` gives them) as a DataFrame
    that :meth:`Forest.rows` reads back to the same rows (a frame's numbers in a labelled column are labels, not
    codes): each feature with ``labels`` (per feature, or None) a pandas ``category`` column of them, its
    unseen code (-1) a category that no label equals and NaN missing; the others as numbers (and so the codes
    of labels with a ``codes`` method: CatBoost reads a float column as its codes)."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=names, index=index)
    for j, known in enumerate(labels or ()):
        if known is None or hasattr(known, "codes"):
            continue
        codes = rows[:, j]
        at = np.where(np.isnan(codes), -1, np.where((codes >= 0) & (codes < len(known)), codes, len(known)))
        frame[names[j]] = pd.Categorical.from_codes(at.astype(np.int64),
                                                    categories=pd.Index([*known, _UNSEEN], dtype=object))
    return frame


def category_frame(rows: np.ndarray, names: list, labels: list | None) -> Any:
    """``rows`` (codes) in the form a model's own ``predict`` reads: a DataFrame with columns ``names``
    whose labelled features (``labels``: per feature, or None) are pandas ``category`` columns with the
    labels as categories, so that the model's encoder or category map reads the same codes (a code
    outside the labels, an unseen category, becomes a missing value), or, for labels with a
    ``labels_of(codes)`` method (CatBoost's hashed categories), the labels that method gives; ``rows``
    itself when no feature has labels."""
    if labels is None or all(known is None for known in labels):
        return rows
    import pandas as pd

    columns = {}
    for j, (name, known) in enumerate(zip(names, labels)):
        codes = rows[:, j]
        if known is None:
            columns[name] = codes
            continue
        if hasattr(known, "labels_of"):         # labels of its own making (CatBoost's hashed categories)
            columns[name] = known.labels_of(codes)
            continue
        hit = np.isfinite(codes) & (codes >= 0) & (codes < len(known)) & (codes == np.floor(codes))
        columns[name] = pd.Categorical.from_codes(np.where(hit, codes, -1).astype(np.int64),
                                                  categories=pd.Index(list(known)))
    return pd.DataFrame(columns)


def _index_dtype(n: int) -> np.dtype:
    """The narrowest of int32 / int64 that holds every node id and node count of ``n`` nodes."""
    return np.dtype(np.int32 if n < 2**31 - 1 else np.int64)


def tree_levels(left: np.ndarray, right: np.ndarray, offsets: ArrayLike, *,
                strict: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Breadth-first walk of every tree at once: yields, level by level from the roots, the global ids
    of the nodes reached, their tree indices (both int32 below 2^31 nodes, else int64) and which of
    them are internal. A child out of its tree's range, the root, or a node reached before is not
    followed (``strict``: raises :class:`~xai_plugins.errors.ModelStructureError`; otherwise the C
    validator reports such trees)."""
    index = _index_dtype(len(left))
    offsets = np.asarray(offsets, dtype=np.int64).astype(index)
    tree = np.flatnonzero(offsets[:-1] < offsets[1:]).astype(index)
    ids = offsets[tree]
    slot = np.full(len(left), -1, dtype=index)          # >= 0: reached
    slot[ids] = 0
    while len(ids):
        inner = left[ids] >= 0
        yield ids, tree, inner
        ids, tree = ids[inner], tree[inner]
        base = offsets[tree]
        kids = np.concatenate((left[ids] + base, right[ids] + base)).astype(index, copy=False)
        tree = np.concatenate((tree, tree))
        base = np.concatenate((base, base))
        keep = (kids > base) & (kids < offsets[tree + 1])
        keep[keep] = slot[kids[keep]] < 0
        if strict and not keep.all():
            raise ModelStructureError("the model's trees are not binary trees rooted at node 0 (a child out "
                                      "of range or reached twice)")
        kids, tree = kids[keep], tree[keep]
        first = np.arange(len(kids), dtype=index)
        slot[kids] = first                      # one of repeated kids (a node reached twice) keeps its slot
        keep = slot[kids] == first
        if strict and not keep.all():
            raise ModelStructureError("the model's trees are not binary trees (a node reached twice)")
        ids, tree = kids[keep], tree[keep]


def _max_depth(left: np.ndarray, right: np.ndarray, offsets: np.ndarray) -> int:
    """Deepest root-to-leaf edge count. Malformed trees (a node reached twice: a cycle or a shared
    child; an index out of range) are walked no further here: the C validator reports them."""
    best = 0
    for depth, (_, _, inner) in enumerate(tree_levels(left, right, offsets)):
        if not inner.all():
            best = depth
    return best


def preorder(left: ArrayLike, right: ArrayLike,
             offsets: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Renumber the nodes reachable from each tree's root in preorder (node, left subtree, right
    subtree; unused slots dropped), vectorised over all trees. ``left`` / ``right`` hold local child
    ids (-1 for a leaf). Returns (the old global id of each new node, the new tree offsets (int64), and
    the new left and right children, local to their tree); ids and children are int32 below 2^31
    nodes (the Forest's dtype: no copy to make), and every temporary is freed as soon as it is used."""
    left = np.asarray(left)
    index = _index_dtype(len(left))
    left = left.astype(index, copy=False)
    right = np.asarray(right, dtype=index)
    offsets = np.asarray(offsets, dtype=np.int64)
    start = offsets.astype(index)
    levels = list(tree_levels(left, right, offsets, strict=True))
    size = np.ones(len(left), dtype=index)                # nodes in the subtree
    for ids, tree, inner in reversed(levels):
        g, base = ids[inner], start[tree[inner]]
        size[g] += size[left[g] + base] + size[right[g] + base]
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    new_offsets[1:] = np.cumsum(np.where(offsets[:-1] < offsets[1:], size[np.minimum(offsets[:-1], len(left) - 1)], 0))
    position = np.zeros(len(left), dtype=index)           # preorder position in its tree
    for ids, tree, inner in levels:
        g, base = ids[inner], start[tree[inner]]
        lg = left[g] + base
        position[lg] = position[g] + 1
        position[right[g] + base] = position[g] + 1 + size[lg]
    del size
    reached = np.concatenate([ids for ids, _, _ in levels])
    order = np.empty(len(reached), dtype=index)
    order[new_offsets.astype(index)[np.concatenate([tree for _, tree, _ in levels])] + position[reached]] = reached
    del levels
    unreached = np.ones(len(left), dtype=bool)
    unreached[reached] = False
    del reached
    position[unreached] = -1                              # now each old node's new local id, or -1
    del unreached
    base = np.repeat(start[:-1], np.diff(new_offsets))
    new_left, new_right = left[order], right[order]
    for kids in (new_left, new_right):
        inner = kids >= 0
        kids[inner] = position[kids[inner] + base[inner]]
    return order, new_offsets, new_left, new_right


def category_bitsets(nodes: np.ndarray, left_atoms: list, categories: np.ndarray,
                     n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(cat_start, cat_bits)`` of csrc/xai.h from the categorical nodes ``nodes`` (ascending ids,
    out of ``n_nodes``), the atoms each sends left (``left_atoms``: integer arrays in 0 .. K) and
    each one's K (``categories``): a node owns (K + 64) // 64 words, bit a of word a // 64;
    ``cat_start`` is -1 at the other nodes."""
    words = (np.asarray(categories, dtype=np.int64) + 64) // 64
    cat_start = np.full(n_nodes, -1, dtype=np.int64)
    cat_start[nodes] = np.concatenate(([0], np.cumsum(words)[:-1]))
    bits = np.zeros(64 * int(words.sum()), dtype=np.uint8)
    for node, atoms in zip(nodes, left_atoms):
        bits[64 * cat_start[node] + np.asarray(atoms, dtype=np.int64)] = 1
    return cat_start, np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)


def concat_trees(trees: list[dict], **common: Any) -> Forest:
    """Build a Forest from per-tree dicts of local arrays (left, right, feature, threshold,
    missing_left, value, target and optional impurity / weight), each concatenated once into its
    Forest dtype."""
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t["left"]) for t in trees])

    def cat(key: str, dtype: DTypeLike) -> np.ndarray:
        return np.concatenate([np.asarray(t[key]).reshape(len(t["left"]), -1) for t in trees],
                              dtype=dtype, casting="unsafe")

    impurity = cat("impurity", np.float64).ravel() if all("impurity" in t for t in trees) else None
    weight = cat("weight", np.float64).ravel() if all("weight" in t for t in trees) else None
    return Forest(
        left_child=cat("left", np.int32).ravel(), right_child=cat("right", np.int32).ravel(),
        feature=cat("feature", np.int32).ravel(), threshold=cat("threshold", np.float64).ravel(),
        missing_left=cat("missing_left", np.uint8).ravel(), value=cat("value", np.float64),
        tree_offset=offsets, tree_target=np.array([t.get("target", 0) for t in trees]),
        impurity=impurity, weight=weight, **common)
