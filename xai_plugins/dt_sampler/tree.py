"""A sampled decision tree: level-order branch nodes over binary tests, with leaf classes."""

from __future__ import annotations

import numpy as np

from .binarize import BinaryTest, apply_tests
from .encoding import TreeStructure

__all__: list[str] = []      # internal module: the public names are in the API reference


class SampledTree:
    """One decision tree drawn by :class:`~xai_plugins.dt_sampler.DTSampler`.

    Branch node ``i`` (level order, root 0) applies binary test ``tests[test[i]]``: rows that
    pass go right, the others left.  ``left[i]`` / ``right[i]`` is the child branch node or -1
    for a leaf, whose class index is ``leaf_class[i, 0]`` / ``leaf_class[i, 1]``.

    Leaf classes are either sampled with the tree or, by default, the majority class of the
    training rows reaching the leaf (ties and empty leaves take ``default_class``).

    Parameters
    ----------
    structure : TreeStructure
        The decoded tree: per branch node its children (-1 = leaf), its test and any sampled
        leaf classes (-1 where not sampled).
    tests : list of BinaryTest
        The binary tests the nodes index.
    classes : ndarray of shape (2,)
        The class labels.
    Xb : ndarray of shape (n, n_tests)
        The training rows' 0/1 test outcomes.
    y_index : ndarray of int of shape (n,)
        Each training row's class index.
    default_class : int
        Class index of tied and empty leaves.

    Attributes
    ----------
    left, right, test : ndarray of int of shape (N,)
        Per branch node its children (-1 for a leaf) and test index.
    leaf_class : ndarray of int of shape (N, 2)
        Class index of the leaf on each side of each node (-1 where that side is a branch).
    n_correct : int
        Number of training rows classified correctly.
    accuracy : float
        Training accuracy.
    n_branch_nodes : int
        Number of branch nodes N (the tree has N + 1 leaves).
    features : ndarray of int of shape (N,)
        Original feature index tested at each branch node.

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Draws them (``trees_``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from xai_plugins.dt_sampler import DTSampler
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> X, y = X.iloc[:60, :4], y[:60]                 # 60 rows, 4 features: a small space
    >>> tree = DTSampler(n_branch_nodes=2, min_accuracy=0.8, sampler="exact",
    ...                  progress=False).fit(X, y).trees_[0]
    >>> tree.n_branch_nodes, len(tree.rules()), tree.accuracy >= 0.8
    (2, 3, True)
    >>> tree.rules()[0]
    'if mean texture <= 22.05 and mean radius <= 13.07 then 1'
    >>> tree.predict(X.to_numpy()).shape
    (60,)
    """

    def __init__(self, structure: TreeStructure, tests: list[BinaryTest], classes: np.ndarray,
                 Xb: np.ndarray, y_index: np.ndarray, default_class: int):
        self.left = np.asarray(structure.left)
        self.right = np.asarray(structure.right)
        self.test = np.asarray(structure.test)
        self.tests = tests
        self.classes = classes
        node, side = self._leaves(Xb)
        counts = np.zeros((len(self.left), 2, 2), dtype=int)
        np.add.at(counts, (node, side, y_index), 1)
        majority = np.where(counts[..., 1] > counts[..., 0], 1,
                            np.where(counts[..., 0] > counts[..., 1], 0, default_class))
        sampled = np.asarray(structure.leaf_class)
        leaf_class = np.where(sampled >= 0, sampled, majority)
        is_leaf = np.column_stack([self.left < 0, self.right < 0])
        self.leaf_class = np.where(is_leaf, leaf_class, -1)
        #: number of training rows classified correctly
        self.n_correct = int(np.sum(self.leaf_class[node, side] == y_index))
        #: training accuracy
        self.accuracy = self.n_correct / len(y_index)

    @property
    def n_branch_nodes(self) -> int:
        """Number of branch nodes N (the tree has N + 1 leaves)."""
        return len(self.left)

    @property
    def features(self) -> np.ndarray:
        """Original feature index tested at each branch node."""
        return np.array([self.tests[r].feature for r in self.test])

    def _leaves(self, Xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Branch node and side (0 left, 1 right) of the leaf each binary row ends in."""
        n = len(Xb)
        node = np.zeros(n, dtype=int)
        side = np.zeros(n, dtype=int)
        active = np.arange(n)
        while active.size:
            side[active] = Xb[active, self.test[node[active]]]
            child = np.where(side[active] == 1, self.right[node[active]], self.left[node[active]])
            done = child < 0
            node[active[~done]] = child[~done]
            active = active[~done]
        return node, side

    def predict(self, X) -> np.ndarray:
        """Class of each row of ``X`` (original features, same columns as in ``fit``)."""
        node, side = self._leaves(apply_tests(self.tests, np.asarray(X, dtype=float)))
        return self.classes[self.leaf_class[node, side]]

    def key(self) -> tuple:
        """Nested ``(test, left, right)`` tuple (None for a leaf): equal keys mean equal trees."""
        def sub(i):
            return None if i < 0 else (int(self.test[i]), sub(self.left[i]), sub(self.right[i]))
        return sub(0)

    def rules(self) -> list[str]:
        """One readable rule per leaf, e.g. ``"if age <= 40.5 and not smoker then 1"``."""
        out = []

        def walk(i, conditions):
            test = self.tests[self.test[i]]
            for s, child in ((0, self.left[i]), (1, self.right[i])):
                cond = test.describe(bool(s))
                if child < 0:
                    out.append(f"if {' and '.join(conditions + [cond])} then {self.classes[self.leaf_class[i, s]]}")
                else:
                    walk(child, conditions + [cond])
        walk(0, [])
        return out

    def __repr__(self) -> str:
        return (f"SampledTree(n_branch_nodes={self.n_branch_nodes}, training accuracy={self.accuracy:.3f}, "
                f"rules={self.rules()})")
