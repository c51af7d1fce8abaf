"""CNF of the binary decision trees with N branch nodes that classify at least T training rows.

The branch-node-only scheme of DT-Sampler (formulas 1-6 of the paper), written from scratch:
only the N branch nodes are numbered (level order, root = 0); a leaf is a property of its parent
(the left / right child of node i is a leaf when ``VL_i`` / ``VR_i`` is false).  Binary test r
sends a row with ``x_r = 0`` left and a row with ``x_r = 1`` right.

Variables (K binary tests, groups g of identical training rows):

- ``VL_i, VR_i``: node i has a left / right *branch* child                      (formula 1)
- ``c_{i,s,j}``: node j is the child of node i on side s (s = left/right), only for the
  level-order candidates ``i < j <= 2i + 1 + s``; every j >= 1 has exactly one parent     (2)
  and links are strictly increasing in (parent slot, child id), which is level order    (3)
- ``a_{i,r}``: node i tests r; exactly one per node                                    (4)
  because ``a_{i,r}`` is defined as "the ``ceil(log2 K)`` code bits ``b_i`` of node i spell r"
  and codes >= K are forbidden
- ``d0_{r,j}`` / ``d1_{r,j}``: the path from the root to j went right / left at a node
  testing r, so rows with ``x_r = 0`` / ``x_r = 1`` never reach j ("discriminated", the
  per-sample path tracking of Narodytska et al. 2018).  A node may not test r when
  ``d0_{r,j} or d1_{r,j}`` (no feature repeated on a root-to-leaf path)                   (5)
- ``CL_i, CR_i``: class of the left / right leaf of node i (forced 0 where that child is a
  branch, so that each labelled tree has one assignment)
- ``z_g``: every row of group g is classified correctly; ``sum_g |g| z_g >= T``
  through a :mod:`pysat.card` encoding                                                  (6)

``z_g`` only implies correctness (``z_g => row reaches a leaf labelled y_g``), which is all
``>= T`` needs.  The sampling set is ``VL, VR, b``: it fixes the shape and the tests, and
everything else is a function of it or existentially quantified.  Projected on it a model
exists iff *some* leaf labelling classifies T rows, i.e. iff the majority labelling does:
each distinct tree (shape + tests) is one projected solution.  Adding ``CL, CR`` to the
sampling set makes a tree with its leaf labels the unit instead.  Coding the tests in
binary rather than sampling the one-hot ``a`` keeps UniGen's random XOR constraints short
(``N ceil(log2 K)`` instead of ``N K`` variables): 2x faster per sample at N = 4, 4x at
N = 5 and 12x at N = 6 on the breast-cancer benchmark (benchmarks/bench_dt_sampler.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .._extras import needs
from ..errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference

with needs("dt-sampler", "DT-Sampler"):
    from pysat.card import CardEnc, EncType
    from pysat.formula import IDPool

#: Cardinality encodings of :mod:`pysat.card` accepted for the accuracy constraint (6).  The
#: default, ``mtotalizer``, sampled fastest on the costlier benchmark case (breast cancer, N = 5:
#: 0.14 s per sample against 0.16 s for ``seqcounter``, 3 runs each) and within noise of the best
#: on the toy case; the two sorting networks were slowest.  The bound is "at most M - T rows
#: wrong" with M - T small; a likely reason is that totalizer trees propagate a count through
#: log M levels where the sequential counter needs a chain of M.
CARDINALITY_ENCODINGS = {
    "seqcounter": EncType.seqcounter,
    "totalizer": EncType.totalizer,
    "kmtotalizer": EncType.kmtotalizer,
    "mtotalizer": EncType.mtotalizer,
    "cardnetwrk": EncType.cardnetwrk,
    "sortnetwrk": EncType.sortnetwrk,
}

LEFT, RIGHT = 0, 1


def child_candidates(i: int, side: int, n_nodes: int) -> range:
    """Level-order ids the ``side`` child of branch node ``i`` can take: ``i < j <= 2i + 1 + side``."""
    return range(i + 1, min(2 * i + 1 + side, n_nodes - 1) + 1)


@dataclass(frozen=True)
class TreeStructure:
    """A decoded tree: per branch node (level order) its children (-1 = leaf) and binary test.

    ``leaf_class[i, s]`` is the sampled class index of the leaf on side ``s`` of node ``i``
    (-1 where that child is a branch node, or when leaf labels were not sampled).
    """

    left: tuple[int, ...]
    right: tuple[int, ...]
    test: tuple[int, ...]
    leaf_class: np.ndarray


@dataclass(frozen=True)
class TreeEncoding:
    """The CNF (DIMACS-style integer clauses), its sampling set and the variables needed to decode."""

    n_nodes: int
    n_tests: int
    min_correct: int
    clauses: list
    n_vars: int
    sampling_set: tuple[int, ...]
    branch_vars: np.ndarray   # (N, 2): VL_i, VR_i
    test_vars: np.ndarray     # (N, K): a_{i,r}
    code_vars: np.ndarray     # (N, ceil(log2 K)): b_{i,k}, bit k of the test of node i
    label_vars: np.ndarray    # (N, 2): CL_i, CR_i
    leaf_labels: bool

    def decode(self, literals) -> TreeStructure:
        """Tree of a model given as signed literals (at least the sampling set)."""
        true = list({lit for lit in literals if lit > 0})
        has_child = np.isin(self.branch_vars, true)
        children = np.full((self.n_nodes, 2), -1)
        next_id = 1
        for i in range(self.n_nodes):          # level order: children numbered in slot order
            for side in (LEFT, RIGHT):
                if has_child[i, side]:
                    children[i, side] = next_id
                    next_id += 1
        tests = np.isin(self.code_vars, true) @ (1 << np.arange(self.code_vars.shape[1]))
        if next_id != self.n_nodes or np.any(tests >= self.n_tests):
            raise InputError("the model does not describe a tree with one test per branch node")
        leaf_class = np.full((self.n_nodes, 2), -1)
        if self.leaf_labels:
            leaf_class = np.where(children < 0, np.isin(self.label_vars, true).astype(int), -1)
        return TreeStructure(tuple(children[:, LEFT].tolist()), tuple(children[:, RIGHT].tolist()),
                             tuple(np.asarray(tests).tolist()), leaf_class)


def encode_trees(Xb: np.ndarray, y: np.ndarray, n_nodes: int, min_correct: int, *,
                 leaf_labels: bool = False, cardinality: str = "mtotalizer") -> TreeEncoding:
    """CNF whose models, projected on the sampling set, are the accurate trees.

    The branch-node-only scheme of DT-Sampler (formulas 1-6 of the paper): only the N branch nodes
    are numbered (level order, root = 0), a binary test sends a row with ``x_r = 0`` left and one
    with ``x_r = 1`` right, no test is repeated on a root-to-leaf path, and a cardinality
    constraint asks that at least T rows be classified correctly. Projected on the sampling set
    (the tree's shape and the tests, plus the leaf classes with ``leaf_labels``), each distinct
    tree is one solution.

    Parameters
    ----------
    Xb : array-like of 0/1 of shape (M, K)
        The matrix of binary tests.
    y : array-like of 0/1 of shape (M,)
        The class of each row.
    n_nodes : int
        N, the number of branch nodes.
    min_correct : int
        The number T of rows that must be classified correctly (0 = any tree).
    leaf_labels : bool, default False
        Add the leaf classes to the sampling set: a tree with its leaf labels is the unit.
    cardinality : str, default "mtotalizer"
        The ``pysat.card`` encoding of the accuracy constraint: "seqcounter", "totalizer",
        "kmtotalizer", "mtotalizer", "cardnetwrk" or "sortnetwrk".

    Returns
    -------
    TreeEncoding
        The CNF (DIMACS-style integer ``clauses``, ``n_vars``), its ``sampling_set`` and the
        variables needed to ``decode`` a model into a tree.

    Raises
    ------
    InputError
        An unknown ``cardinality``.

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Encodes, checks and draws the accurate trees.

    Examples
    --------
    >>> import numpy as np
    >>> from xai_plugins.dt_sampler import encode_trees
    >>> Xb = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])   # 4 rows, 2 binary tests
    >>> y = np.array([0, 1, 1, 0])                          # test 0 classifies every row
    >>> cnf = encode_trees(Xb, y, n_nodes=1, min_correct=4)
    >>> cnf.n_nodes, cnf.n_tests, cnf.min_correct, len(cnf.sampling_set)
    (1, 2, 4, 1)
    """
    Xb = np.asarray(Xb, dtype=np.uint8)
    y = np.asarray(y, dtype=np.uint8)
    n_rows, n_tests = Xb.shape
    if cardinality not in CARDINALITY_ENCODINGS:
        raise InputError(f"cardinality must be one of {sorted(CARDINALITY_ENCODINGS)}; got {cardinality!r}")
    N, K = n_nodes, n_tests
    pool = IDPool()
    branch = np.array([[pool.id(("V", i, s)) for s in (LEFT, RIGHT)] for i in range(N)])
    test = np.array([[pool.id(("a", i, r)) for r in range(K)] for i in range(N)])
    n_bits = int(np.ceil(np.log2(K))) if K > 1 else 0
    code = np.array([[pool.id(("b", i, k)) for k in range(n_bits)] for i in range(N)]).reshape(N, n_bits)
    label = np.array([[pool.id(("C", i, s)) for s in (LEFT, RIGHT)] for i in range(N)])
    link = {(i, s, j): pool.id(("c", i, s, j))
            for i in range(N) for s in (LEFT, RIGHT) for j in child_candidates(i, s, N)}
    # excluded[v][r, j]: rows with x_r = v never reach node j (d0 / d1); node 0 has none
    excluded = [np.array([[pool.id(("d", v, r, j)) if j else 0 for j in range(N)] for r in range(K)])
                for v in (0, 1)]
    clauses: list[list[int]] = []

    # (1) a branch child on side s iff some link leaves that slot; a branch child has no leaf label
    for i in range(N):
        for s in (LEFT, RIGHT):
            kids = [link[i, s, j] for j in child_candidates(i, s, N)]
            clauses.append([-branch[i, s], *kids])
            clauses.extend([-k, branch[i, s]] for k in kids)
            clauses.append([-branch[i, s], -label[i, s]])
    # (2) every node but the root has a parent
    for j in range(1, N):
        clauses.append([v for (i, s, jj), v in link.items() if jj == j])
    # (3) level order: two links can coexist only when strictly increasing in slot and child id;
    #     this also gives at most one parent per node and one child per slot
    for (i1, s1, j1), (i2, s2, j2) in combinations(link, 2):
        slot1, slot2 = 2 * i1 + s1, 2 * i2 + s2
        if not ((slot1 < slot2 and j1 < j2) or (slot2 < slot1 and j2 < j1)):
            clauses.append([-link[i1, s1, j1], -link[i2, s2, j2]])
    # (4) exactly one test per branch node: a_{i,r} <=> code bits of node i spell r; codes >= K banned
    for i in range(N):
        for r in range(2 ** n_bits):
            spelled = [code[i, k] if (r >> k) & 1 else -code[i, k] for k in range(n_bits)]
            if r < K:
                clauses.extend([-test[i, r], bit] for bit in spelled)
                clauses.append([test[i, r], *(-bit for bit in spelled)])
            else:
                clauses.append([-bit for bit in spelled])
    # (5) path tracking: d_v[r, j] <=> parent p of j has d_v[r, p], or p tests r and j lies on the
    #     side rows with x_r = v do not take (v = 1 goes right, so d1 grows on left links)
    for (i, s, j), c in link.items():
        for v, grows_on in ((0, RIGHT), (1, LEFT)):
            for r in range(K):
                d_child, d_parent = excluded[v][r, j], excluded[v][r, i]
                reason = [d_parent] if i else []
                if s == grows_on:
                    clauses.append([-c, -test[i, r], d_child])
                    reason.append(test[i, r])
                if i:
                    clauses.append([-c, -d_parent, d_child])
                clauses.append([-c, -d_child, *reason])
    #     no test repeated on a root-to-leaf path
    for j in range(1, N):
        for r in range(K):
            clauses.extend([[-test[j, r], -excluded[0][r, j]], [-test[j, r], -excluded[1][r, j]]])

    # (6) accuracy: z_g => each row of group g reaches a leaf labelled with its class
    if min_correct > 0:
        rows, counts = np.unique(np.column_stack([Xb, y]), axis=0, return_counts=True)
        weighted = []
        for g, (row, count) in enumerate(zip(rows, counts)):
            x, cls = row[:-1], int(row[-1])
            z = pool.id(("z", g))
            weighted.extend([z] * int(count))   # the cardinality encoding counts repeated literals
            for j in range(N):
                cut = [excluded[int(x[r])][r, j] for r in range(K)] if j else []
                for s, goes_other_way in ((LEFT, x == 1), (RIGHT, x == 0)):
                    lab = label[j, s] if cls == 1 else -label[j, s]
                    clauses.append([-z, branch[j, s], *cut, *test[j, goes_other_way].tolist(), lab])
        card = CardEnc.atleast(weighted, bound=int(min_correct), vpool=pool,
                               encoding=CARDINALITY_ENCODINGS[cardinality])
        clauses.extend(card.clauses)

    can_branch = [branch[i, s] for i in range(N) for s in (LEFT, RIGHT) if child_candidates(i, s, N)]
    sampling = can_branch + code.ravel().tolist()
    if leaf_labels:
        sampling += label.ravel().tolist()
    return TreeEncoding(N, K, int(min_correct), [list(map(int, c)) for c in clauses], pool.top,
                        tuple(int(v) for v in sampling), branch, test, code, label, leaf_labels)
