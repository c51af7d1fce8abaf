"""The Forest the C core sums over for the outputs a PG² call asks for (:func:`exact_view`).

The leaf-pair sums of exact PG² cost in proportion to the outputs a tree writes (its leaf width), so a
call that needs fewer outputs than the model has runs on a smaller Forest with the same splits:

- one output ``c`` of a multi-output model: every tree that writes ``c``, with only that column of its
  leaf values (a multi-class random forest's leaves hold one probability per class; a boosted
  multi-class model's trees each write one class's margin, and those of the other classes are left out);
- every output of a binary classifier whose two leaf values sum to the same constant within each tree
  (scikit-learn's class probabilities, p0 = 1 − p1): each tree's centred values of output 0 are those of
  output 1 negated, so PG² (a mean of squares) is the same for both outputs, and output 1 alone is summed.

The view shares the model's splits, so its exact PG² is the model's, output for output: the same sums
over the same leaf pairs of the same centred values (of their negation, for the complementary output,
whose leaf values differ from 1 − p1 by the rounding of the two quotients: a few units in the last place).
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import numpy as np

from ..forest import Forest

__all__: list[str] = []

#: Per tree, the largest spread of its leaves' p0 + p1 (in units of the sum's magnitude) for which a binary
#: forest counts as complementary: two correctly rounded quotients n0 / n and n1 / n sum to 1 within 2 ulp.
COMPLEMENT_ULPS = 4


@dataclass(frozen=True, eq=False)
class ExactView:
    """The Forest whose exact PG² the C core computes (``forest``) and, for each output asked for, the
    output of that Forest it equals (``take``: index the C core's results' last axis with it)."""

    forest: Forest
    take: np.ndarray


_VIEWS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def exact_view(forest: Forest, output: int | None = None) -> ExactView:
    """The :class:`ExactView` of ``forest`` for ``output`` (an output index; None: every output), built
    once per Forest and output and cached with the Forest (the cache holds a reduced Forest, never ``forest``
    itself, which would keep its own weak key alive)."""
    views = _VIEWS.setdefault(forest, {})
    if output not in views:
        view = _view(forest, output)
        views[output] = (None if view.forest is forest else view.forest, view.take)
    reduced, take = views[output]
    return ExactView(forest if reduced is None else reduced, take)


def _view(forest: Forest, output: int | None) -> ExactView:
    k = forest.n_outputs
    if output is None:
        one = _one_output(forest, 1) if _complementary(forest) else None
        if one is not None:             # every tree writes both outputs: never refused
            return ExactView(one, np.zeros(2, dtype=np.intp))
        return ExactView(forest, np.arange(k))
    if k == 1:
        return ExactView(forest, np.zeros(1, dtype=np.intp))
    one = _one_output(forest, output)
    return (ExactView(forest, np.array([output])) if one is None else
            ExactView(one, np.zeros(1, dtype=np.intp)))


def _complementary(forest: Forest) -> bool:
    """Whether ``forest`` is binary with p0 + p1 constant over the leaves of each tree."""
    if forest.n_outputs != 2 or forest.leaf_width != 2 or np.any(forest.tree_target != 0):
        return False
    leaf = forest.left_child < 0
    total = forest.value[:, 0] + forest.value[:, 1]
    tree = np.repeat(np.arange(forest.n_trees), np.diff(forest.tree_offset))[leaf]
    total = total[leaf]
    high, low = np.full(forest.n_trees, -np.inf), np.full(forest.n_trees, np.inf)
    np.maximum.at(high, tree, total)
    np.minimum.at(low, tree, total)
    scale = np.maximum(np.abs(high), np.abs(low))
    return bool(np.all(high - low <= COMPLEMENT_ULPS * np.finfo(np.float64).eps * scale))


def _one_output(forest: Forest, c: int) -> Forest | None:
    """The Forest of the trees writing output ``c``, with that output's leaf values only; None when the
    mean over trees would weigh them otherwise (a mean-aggregated model whose outputs have unequal tree
    counts)."""
    W, target = forest.leaf_width, forest.tree_target
    keep = (target <= c) & (c < target + W)
    n_kept = int(keep.sum())
    if forest.aggregate == "mean" and n_kept * forest.n_outputs != forest.n_trees * W:   # mean scale k / (T W)
        return None
    sizes = np.diff(forest.tree_offset)
    nodes = np.repeat(keep, sizes)
    column = np.repeat(c - target, sizes)[nodes]

    def rows(a):
        return None if a is None else a[nodes]

    return dataclasses.replace(
        forest, left_child=forest.left_child[nodes], right_child=forest.right_child[nodes],
        feature=forest.feature[nodes], threshold=forest.threshold[nodes], missing_left=forest.missing_left[nodes],
        value=forest.value[nodes, column], tree_offset=np.concatenate(([0], np.cumsum(sizes[keep]))),
        tree_target=np.zeros(n_kept, dtype=np.int32), base_score=forest.base_score[c:c + 1],
        output_names=[forest.output_names[c]], impurity=rows(forest.impurity), weight=rows(forest.weight),
        cat_start=rows(forest.cat_start), predict_fn=None, max_depth=None)
