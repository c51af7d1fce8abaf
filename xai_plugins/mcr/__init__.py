"""Model Class Reliance for random forests (RF-MCR; Smith, Mansilla & Goulding, NeurIPS 2020).

Model reliance of a model f on a (possibly multivariate) variable X1, with X2 the other inputs and
Φ an unconditional permutation of X1 (``n_permutations`` seeded shuffles, a group shuffled jointly)::

    MR_X1(f, Φ) = E L(f, <X1^Φ, X2, Y>) - E L(f, <X1, X2, Y>)            (eq. 1, "difference")
    MR_X1(f, Φ) = E L(f, <X1^Φ, X2, Y>) / E L(f, <X1, X2, Y>)            (Fisher et al., "ratio")

Model class reliance over the ε-Rashomon set R_ε(F) of a reference forest F (eq. 2-4)::

    MCR+_X1(F) = max_{F' in R_ε(F)} MR_X1(F'),      MCR-_X1(F) = min_{F' in R_ε(F)} MR_X1(F')

RF-MCR estimates both ends from the trees of F itself (§4):

* S+ / S- (surrogate splits, eq. 5 and 11). At every internal node another feature g is an exact
  surrogate when some threshold on g reproduces the node's partition of the training rows that
  reach it (either orientation, with scikit-learn's ``float32(x) <= t`` rule). S+ replaces a
  node's feature by a surrogate from X1; S- replaces an X1 feature by a surrogate outside X1.
  The transformed trees route every training row to the same leaf, so they predict the training
  data exactly as before.
* T+ / T- (predictive equivalence, eq. 7-9 and 12). Ψ(f) = {f' in F : f'(x) = f(x) for all x in Z}
  (found by hashing every tree's training predictions, O(T)); each tree is swapped for the member
  of Ψ(f) whose S-transformed version has the largest (T+) / smallest (T-) reliance::

      F+_T = {T+(f) : f in F+_S},  MCR+^ = MR_X1(F+_T)   (eq. 10);   MCR-^ = MR_X1(F-_T)   (eq. 13)

  The boundary forests F±_T predict the training data exactly like F (checked at run time).
* ε-Rashomon (§4.3): Ψ is relaxed to the trees whose training predictions differ from f's on at
  most a share ε of the rows (classification, predicted labels) or have MSE <= ε (regression).

The reported bounds are the extreme reliances over the Rashomon members examined, so
``mcr_minus = min(MR(F-_T), MR(F))`` and ``mcr_plus = max(MR(F+_T), MR(F))``; the boundary
forests' own reliances are in the table too. Bootstrapping must be off (the paper's
"modified random forest", §4.3): every tree must be grown on all training rows so that its
partitions, surrogates and training predictions can be recomputed from the data.

On permuted data every tree is evaluated by the C core (``xai_reroute``) from the training leaves:
a row keeps its training leaf unless its permuted X1 leaves that leaf's box, and then walks down
from the root (64 rows in lockstep, each prefetching its next node). With a single permuted
feature, a tree too large for the cache (``_passes.LARGE_TREE_NODES``) is routed through a leaf
table instead, built once for all permutations: per row, the leaves its other values reach as X1
runs over the real line, each with the upper end of its interval, looked up by a binary search
(``xai_reroute_table_build``; declined when it would need more entries per row than walking costs).
The original trees' change of the reference forest's predictions is accumulated in C. Transformed
trees are the forest's node arrays with the S± splits (copies of four arrays, no scikit-learn
``Tree`` copies), routed the same way, and only for the rows that pass a node changed by S±; an S+
tree from the leaf the original tree gives the permuted row. Trees run in parallel threads in fixed
blocks of ``TREE_BLOCK`` whose partial sums are added in block order, so results do not depend on
the thread count. Never are all per-tree × per-permutation predictions held at once: memory is
O(K·n·C + T) beyond the forest, plus the S± node arrays of the feature at hand (20 bytes per node
each, only when S± changed a node), plus the leaf tables of the tree at hand (16 bytes per entry),
plus the trees' training leaves (all of them, int32, when they fit in ``LEAF_CACHE_BYTES`` = 256
MiB; otherwise a block at a time, recomputed for every feature) and, within
``_passes.KEPT_LEAVES_BYTES`` = 1 GiB, the large trees' leaves on the permuted rows, which pass 2
reuses for the trees it swaps in.

Modules: ``._reliance`` (entry points, input checks, one result row per feature),
``._tables`` (node tables from the imported Forest, training leaves), ``._loss`` (losses and
MR), ``._rashomon`` (equivalence classes, ε-neighbourhoods), ``._surrogates`` (surrogate
splits, S±), ``._passes`` (pass 1 over permutations, pass 2 per boundary forest),
``._parallel`` (ordered thread map), ``._result`` (:class:`MCRResult`).
"""

from ._reliance import fit_rashomon_forest, model_class_reliance
from ._result import MCRResult

__all__ = ["fit_rashomon_forest", "model_class_reliance", "MCRResult"]
