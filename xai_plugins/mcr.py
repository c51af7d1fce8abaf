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

On permuted data the original trees are evaluated by the C core (``xai_reroute``): a row keeps
its training leaf unless its permuted X1 leaves that leaf's box, and only such rows are routed
again; the change of the reference forest's predictions is accumulated in C. Transformed trees
(rebuilt as scikit-learn ``Tree`` objects, evaluated with ``Tree.apply``) re-route only the rows
that pass a node changed by S±. Trees run in parallel threads in fixed blocks of ``TREE_BLOCK``
whose partial sums are added in block order, so results do not depend on the thread count. Never
are all per-tree × per-permutation predictions held at once: memory is O(K·n·C + T) beyond the
forest, plus the trees' training leaves (all of them, int32, when they fit in
``LEAF_CACHE_BYTES`` = 256 MiB; otherwise a block at a time, recomputed for every feature).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import _native
from ._validation import (check_is_fitted, check_matrix, check_n_jobs, check_random_state, feature_index,
                          model_feature_names, model_rows)
from .errors import InputError, InputTypeError, UnsupportedModelError
from .forest import import_model

__all__ = ["fit_rashomon_forest", "model_class_reliance", "MCRResult"]

_LOSSES = {"classification": ("zero_one", "log_loss"), "regression": ("squared_error", "absolute_error")}
_PROB_FLOOR = 1e-15
#: the training leaves of every tree (int32, T x n) are kept across features when they fit in this
#: many bytes; otherwise they are recomputed for every feature, a block of trees at a time
LEAF_CACHE_BYTES = 256 * 2**20
#: trees per unit of parallel work; partial sums are formed per block and added in block order
TREE_BLOCK = 16


# ----------------------------------------------------------------------------- fitting

def fit_rashomon_forest(X, y, task: str = "classification", n_estimators: int = 500, random_state=0,
                        n_jobs=None, **params):
    """Fit the reference forest RF-MCR needs: a random forest with ``bootstrap=False``.

    Randomness comes only from the features considered at each split (``max_features``; default
    ``"sqrt"`` for classification and ``1/3`` for regression, as in Breiman's forests). Extra
    keyword arguments go to ``RandomForestClassifier`` / ``RandomForestRegressor``.
    """
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    if task not in ("classification", "regression"):
        raise InputError(f"task must be 'classification' or 'regression', got {task!r}")
    if params.pop("bootstrap", False):
        raise InputError("RF-MCR needs bootstrap=False: every tree must see all training rows")
    cls = RandomForestClassifier if task == "classification" else RandomForestRegressor
    params.setdefault("max_features", "sqrt" if task == "classification" else 1.0 / 3.0)
    model = cls(n_estimators=n_estimators, bootstrap=False, random_state=random_state, n_jobs=n_jobs,
                **params)
    arr = check_matrix(X, name="X")
    return model.fit(X if hasattr(X, "columns") else arr, y)


# ----------------------------------------------------------------------------- result

@dataclass
class MCRResult:
    """Model class reliance ranges of one reference forest.

    ``table`` is a DataFrame indexed by feature (or group) name with columns ``mcr_minus``,
    ``model_reliance`` (the reference forest's MR) and ``mcr_plus``, the boundary forests' own
    reliances ``mr_minus_forest`` / ``mr_plus_forest``, and the Rashomon check: training loss of
    the reference (``reference_loss``) and of the boundary forests (``loss_minus_forest``,
    ``loss_plus_forest``), the largest absolute difference between a boundary forest's training
    predictions and the reference's (``deviation_minus`` / ``deviation_plus``) and
    ``within_rashomon`` (both boundary forests' training losses within ``epsilon`` of the
    reference's; exact prediction equality when ``epsilon == 0``).
    """

    table: object
    loss: str
    reliance: str
    epsilon: float
    n_permutations: int
    n_trees: int
    n_groups: int                      # classes of predictively equivalent trees (ε = 0)
    groups: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-friendly form: settings plus one record per feature (or group)."""
        records = []
        for name, row in self.table.iterrows():
            rec = {"name": str(name)}
            for key, value in row.items():
                rec[key] = bool(value) if isinstance(value, (bool, np.bool_)) else float(value)
            records.append(rec)
        return {"loss": self.loss, "reliance": self.reliance, "epsilon": float(self.epsilon),
                "n_permutations": int(self.n_permutations), "n_trees": int(self.n_trees),
                "n_groups": int(self.n_groups), "groups": {k: list(v) for k, v in self.groups.items()},
                "features": records}

    def plot(self, ax=None):
        """Horizontal bars from MCR- to MCR+ per feature, the reference forest's MR marked; returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.4, 0.45 * len(self.table) + 1.2))
        t = self.table
        pos = np.arange(len(t))[::-1]
        lo, hi = t["mcr_minus"].to_numpy(float), t["mcr_plus"].to_numpy(float)
        ax.barh(pos, hi - lo, left=lo, height=0.5, color="#8fb3d9", edgecolor="#2b5d8c", label="MCR range")
        ax.scatter(np.r_[lo, hi], np.r_[pos, pos], marker="|", s=200, color="#2b5d8c", zorder=3)  # ends
        ax.scatter(t["model_reliance"].to_numpy(float), pos, marker="D", s=30, color="#c0392b", zorder=4,
                   label="reference MR")
        vals = np.r_[lo, hi, t["model_reliance"].to_numpy(float)]
        vals = vals[np.isfinite(vals)]
        if vals.size:
            pad = 0.05 * (np.ptp(vals) or max(abs(vals).max(), 1.0))
            ax.set_xlim(vals.min() - pad, vals.max() + pad)
        ax.set_yticks(pos)
        ax.set_yticklabels([str(i) for i in t.index])
        kind = "ratio" if self.reliance == "ratio" else "difference"
        ax.set_xlabel(f"model reliance ({self.loss}, {kind})")
        ax.set_title(f"RF-MCR, ε = {self.epsilon:g}")
        ax.axvline(1.0 if self.reliance == "ratio" else 0.0, color="grey", lw=0.8)
        ax.legend(loc="best", fontsize="small")
        return ax


# ----------------------------------------------------------------------------- validation

def _check_model(model):
    """Return (estimators, is_classifier) for a supported fitted forest or raise a clear error."""
    from sklearn import ensemble

    name = type(model).__name__
    boosting = ("GradientBoosting", "HistGradientBoosting", "XGB", "LGBM", "Booster", "AdaBoost", "CatBoost")
    if any(b in name for b in boosting):
        raise UnsupportedModelError(f"{name} is a boosting model, which RF-MCR does not support: the method swaps "
                        "predictively equivalent trees of an averaging forest. Use "
                        "fit_rashomon_forest() or a RandomForest*/ExtraTrees* model with bootstrap=False")
    forests = (ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
               ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor)
    if not isinstance(model, forests):
        raise UnsupportedModelError(f"unsupported model {name}; RF-MCR needs a fitted RandomForestClassifier/Regressor "
                        "or ExtraTreesClassifier/Regressor grown with bootstrap=False (see fit_rashomon_forest)")
    check_is_fitted(model)
    if model.bootstrap:
        raise InputError(f"{name} was grown with bootstrap=True: each tree saw a different resample, so its "
                         "surrogate splits and training predictions cannot be recomputed and predictively "
                         "equivalent trees cannot be matched. Refit with bootstrap=False (randomness from "
                         "max_features), e.g. with xai_plugins.mcr.fit_rashomon_forest")
    if model.n_outputs_ != 1:
        raise InputError(f"{name} with {model.n_outputs_} outputs is not supported; fit one output")
    return model.estimators_, hasattr(model, "classes_")


def _units(features, groups, names):
    """List of (name, column indices) to permute: the groups, then single features."""
    d = len(names)

    def col(c):
        return feature_index(c, names, d)

    units = []
    if groups is not None:
        if not isinstance(groups, dict):
            raise InputTypeError("groups must be a dict {name: [columns...]}")
        for gname, cols in groups.items():
            cols = [cols] if isinstance(cols, (str, int, np.integer)) else list(cols)
            if not cols:
                raise InputError(f"group {gname!r} is empty")
            units.append((str(gname), sorted({col(c) for c in cols})))
    if features is not None or groups is None:
        feats = range(d) if features is None else ([features] if isinstance(features, (str, int, np.integer))
                                                   else list(features))
        units.extend((names[j], [j]) for j in (col(c) for c in feats))
    if not units:
        raise InputError("no features or groups to evaluate")
    return units


# ----------------------------------------------------------------------------- per-tree set-up

def _tree_surrogates(tree, X32, leaf):
    """Exact surrogate splits of every internal node: arrays (node, feature, threshold, flipped),
    plus the tree's internal nodes grouped by depth (root first).

    ``flipped`` means the surrogate sends the node's left rows to ``x > threshold``.
    """
    left, right, feat = tree.children_left, tree.children_right, tree.feature
    n_nodes, d = tree.node_count, X32.shape[1]
    order = np.argsort(leaf.astype(np.uint16) if n_nodes <= 2**16 else leaf, kind="stable")  # radix sort
    sleaf = leaf[order]
    starts = np.flatnonzero(np.r_[True, sleaf[1:] != sleaf[:-1]])
    xs = X32[order]
    lo = np.empty((n_nodes, d), dtype=np.float32)
    hi = np.empty((n_nodes, d), dtype=np.float32)
    lo[sleaf[starts]] = np.minimum.reduceat(xs, starts, axis=0)
    hi[sleaf[starts]] = np.maximum.reduceat(xs, starts, axis=0)
    levels, frontier = [], np.array([0])
    while frontier.size:
        inner = frontier[left[frontier] >= 0]
        if inner.size:
            levels.append(inner)
        frontier = np.concatenate([left[inner], right[inner]])
    for inner in reversed(levels):  # children before parents
        lo[inner] = np.minimum(lo[left[inner]], lo[right[inner]])
        hi[inner] = np.maximum(hi[left[inner]], hi[right[inner]])
    inner = np.flatnonzero(left >= 0)
    L, R = left[inner], right[inner]
    own = np.zeros((inner.size, d), dtype=bool)
    own[np.arange(inner.size), feat[inner]] = True
    parts = []
    for flipped, (a, b) in ((False, (L, R)), (True, (R, L))):
        # rows of child a all <= rows of child b on g: threshold between them sends a left
        ok = (hi[a] < lo[b]) & ~own
        i, g = np.nonzero(ok)
        thr = (hi[a][i, g].astype(np.float64) + lo[b][i, g].astype(np.float64)) / 2.0
        parts.append((inner[i], g, thr, np.full(i.size, flipped)))
    node, g, thr, flip = (np.concatenate(p) for p in zip(*parts))
    o = np.lexsort((g, node))
    return (node[o], g[o], thr[o], flip[o]), levels


def _rebuild(tree, left, right, feature, threshold):
    """A copy of the scikit-learn Tree ``tree`` with new split arrays (same nodes and leaf values)."""
    from sklearn.tree._tree import Tree

    state = tree.__getstate__()
    nodes = state["nodes"].copy()
    nodes["left_child"], nodes["right_child"] = left, right
    nodes["feature"], nodes["threshold"] = feature, threshold
    new = Tree(*tree.__reduce__()[1])
    new.__setstate__(dict(state, nodes=nodes))
    return new


# ----------------------------------------------------------------------------- main entry

def model_class_reliance(model, X, y, features=None, groups=None, n_permutations: int = 10,
                         epsilon: float = 0.0, random_state=0, loss: str | Callable = None,
                         reliance: str = "difference", n_jobs=None, progress: bool = True) -> MCRResult:
    """RF-MCR ranges [MCR-, MCR+] of every feature (or group) of a bootstrap-free forest.

    ``model`` must have been fitted on exactly ``X, y`` (checked against the trees' node counts).
    ``loss``: ``"zero_one"`` (default, accuracy drop) or ``"log_loss"`` for classifiers,
    ``"squared_error"`` (default) or ``"absolute_error"`` for regressors, or a callable
    ``loss(y_true, y_pred) -> per-row losses`` (y_pred: class probabilities (n, C) or values (n,)).
    ``reliance``: ``"difference"`` (paper, eq. 1) or ``"ratio"`` (Fisher et al.).
    ``groups={"name": [cols]}`` permutes each set jointly. Results do not depend on ``n_jobs``.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    estimators, is_clf = _check_model(model)
    task = "classification" if is_clf else "regression"
    d = int(model.n_features_in_)
    if isinstance(n_permutations, (bool, np.bool_)) or not isinstance(n_permutations, (int, np.integer)):
        raise InputTypeError(f"n_permutations must be an int, got {type(n_permutations).__name__}")
    if n_permutations < 1:
        raise InputError(f"n_permutations must be >= 1, got {n_permutations}")
    if not np.isfinite(epsilon) or epsilon < 0:
        raise InputError(f"epsilon must be a finite number >= 0, got {epsilon}")
    if reliance not in ("difference", "ratio"):
        raise InputError(f"reliance must be 'difference' or 'ratio', got {reliance!r}")
    loss = _LOSSES[task][0] if loss is None else loss
    if not callable(loss) and loss not in _LOSSES[task]:
        raise InputError(f"loss {loss!r} is not available for {task}; use one of {_LOSSES[task]} or a callable")
    Xc, names = model_rows(X, model_feature_names(model), d, allow_nan=False)
    n = Xc.shape[0]
    X32 = np.ascontiguousarray(Xc, dtype=np.float32)   # scikit-learn trees compare float32(x) <= t
    units = _units(features, groups, names)
    y = np.asarray(y).ravel()
    if y.shape[0] != n:
        raise InputError(f"y has {y.shape[0]} entries but X has {n} rows")
    if is_clf:
        classes = model.classes_
        yidx = np.searchsorted(classes, y).clip(0, len(classes) - 1)
        if not np.array_equal(classes[yidx], y):
            raise InputError("y contains labels the forest was not fitted on; pass its training targets")
    else:
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise InputError("y contains NaN or infinite values")

    ctx = _Context(import_model(model), estimators, X32, y, yidx if is_clf else None, model.classes_ if is_clf else None,
                   loss, n_jobs)
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**63 - 1, size=n_permutations)

    try:
        neighbours = ctx.neighbourhoods(epsilon) if epsilon > 0 else None
        rows = [ctx.unit(cols, seeds, epsilon, neighbours, reliance)
                for _, cols in tqdm(units, desc="RF-MCR", unit="feature", disable=not progress)]
    finally:
        ctx.close()
    table = pd.DataFrame(rows, index=pd.Index([u[0] for u in units], name="feature"))
    loss_name = getattr(loss, "__name__", "callable") if callable(loss) else loss
    return MCRResult(table=table, loss=loss_name, reliance=reliance, epsilon=float(epsilon),
                     n_permutations=int(n_permutations), n_trees=len(estimators),
                     n_groups=ctx.n_groups, groups={u[0]: [names[c] for c in u[1]] for u in units if len(u[1]) > 1})


class _Context:
    """Everything computed once per call: leaf tables, surrogates, equivalence classes, reference."""

    def __init__(self, forest, estimators, X32, y, yidx, classes, loss, n_jobs):
        self.is_clf = classes is not None
        self.X32, self.y, self.yidx, self.classes, self.loss = X32, y, yidx, classes, loss
        self.trees = [est.tree_ for est in estimators]
        n, T = X32.shape[0], len(self.trees)
        self.n, self.T = n, T
        self.workers = check_n_jobs(n_jobs)
        self.pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        self.forest = forest  # the same trees in the C core's layout, same node numbering
        self.offsets = forest.tree_offset[:-1]
        self.tree_of = np.repeat(np.arange(T), np.diff(forest.tree_offset))
        self.master = tuple(np.concatenate([getattr(tr, a) for tr in self.trees])
                            for a in ("children_left", "children_right", "feature", "threshold"))
        self.internal = self.master[0] >= 0
        # per-node tables: prediction (class probabilities or value) and, for classifiers, loss per class
        if self.is_clf:
            vals = np.concatenate([tr.value[:, 0, :] for tr in self.trees])
            self.pred = vals / vals.sum(axis=1, keepdims=True)
            C = self.pred.shape[1]
            if callable(loss):
                self.ltab = np.stack([np.asarray(loss(np.full(len(self.pred), classes[c]), self.pred), float)
                                      for c in range(C)], axis=1)
            elif loss == "zero_one":
                self.ltab = 1.0 - np.eye(C)[self.pred.argmax(axis=1)]
            else:
                self.ltab = -np.log(np.clip(self.pred, _PROB_FLOOR, None))
        else:
            self.pred = np.concatenate([tr.value[:, 0, 0] for tr in self.trees])
        self.leaf_cache = [None] * T if T * n * 4 <= LEAF_CACHE_BYTES else None
        sur, hashes, by_depth = [], [], {}
        self.train_loss = np.empty(T)
        self.ref_sum = np.zeros((n, self.pred.shape[1]) if self.is_clf else n)
        def prepare(t):
            tree = self.trees[t]
            leaf = tree.apply(X32)
            counts = np.bincount(leaf, minlength=tree.node_count)
            leaves = tree.children_left < 0
            if tree.n_node_samples[0] != n or not np.array_equal(counts[leaves], tree.n_node_samples[leaves]):
                raise InputError(f"the forest was not fitted on this X: tree {t} was grown on "
                                 f"{tree.n_node_samples[0]} rows and its leaves' row counts disagree with the "
                                 f"{n} rows given (MCR needs the exact training data of a bootstrap=False forest)")
            g = leaf + self.offsets[t]
            if self.leaf_cache is not None:
                self.leaf_cache[t] = g.astype(np.int32)
            p = np.take(self.pred, g, axis=0)
            digest = hashlib.blake2b(np.ascontiguousarray(p).tobytes(), digest_size=16).hexdigest()
            return p, self._tree_loss(g), digest, _tree_surrogates(tree, X32, leaf)

        try:
            for t, (p, loss_t, digest, ((node, feat, thr, flip), levels)) in enumerate(self._map(prepare, range(T))):
                self.ref_sum += p
                self.train_loss[t] = loss_t
                hashes.append(digest)
                sur.append((node + self.offsets[t], feat, thr, flip))
                for depth, inner in enumerate(levels):
                    by_depth.setdefault(depth, []).append(inner + self.offsets[t])
        except Exception:
            self.close()
            raise
        self.s_node, self.s_feat, self.s_thr, self.s_flip = (np.concatenate(a) for a in zip(*sur))
        self.levels = [np.concatenate(by_depth[k]) for k in sorted(by_depth)]  # global internal nodes
        _, self.group = np.unique(np.array(hashes), return_inverse=True)
        self.group = self.group.ravel()
        self.n_groups = int(self.group.max()) + 1
        self.ref_train = self.ref_sum / T
        self.ref_loss = self._forest_loss(self.ref_train)

    # -- losses ---------------------------------------------------------------
    def _tree_loss(self, g, rows=slice(None)):
        """Summed loss of one tree over ``rows``, which reached the global leaf ids ``g``."""
        if self.is_clf:
            return float(self.ltab[g, self.yidx[rows]].sum())
        v, y = np.take(self.pred, g), self.y[rows]
        if callable(self.loss):
            return float(np.sum(self.loss(y, v)))
        r = v - y
        return float(np.dot(r, r) if self.loss == "squared_error" else np.abs(r).sum())

    def _forest_loss(self, P):
        """Mean loss of forest predictions P (probabilities or values) over the rows."""
        if self.is_clf:
            if callable(self.loss):
                return float(np.mean(self.loss(self.classes[self.yidx], P)))
            if self.loss == "zero_one":
                return float(np.mean(P.argmax(axis=1) != self.yidx))
            return float(-np.log(np.clip(P[np.arange(self.n), self.yidx], _PROB_FLOOR, None)).mean()) + 0.0
        if callable(self.loss):
            return float(np.mean(self.loss(self.y, P)))
        r = P - self.y
        return float(np.mean(r * r) if self.loss == "squared_error" else np.abs(r).mean())

    # -- ε-Rashomon neighbourhoods -------------------------------------------
    def neighbourhoods(self, epsilon):
        """(T, T) bool: trees whose training predictions are within ε of each other's."""
        T, n = self.T, self.n
        block = max(1, min(T, 2**26 // (8 * n)))
        starts = list(range(0, T, block))
        near = np.zeros((T, T), dtype=bool)

        def preds(a):
            out = []
            for t in range(a, min(T, a + block)):
                p = self.pred[self.trees[t].apply(self.X32) + self.offsets[t]]
                out.append(p.argmax(axis=1) if self.is_clf else p)
            return np.array(out)

        for i, a in enumerate(starts):
            Pa = preds(a)
            for b in starts[i:]:
                Pb = Pa if b == a else preds(b)
                if self.is_clf:
                    agree = sum((Pa == c).astype(np.float32) @ (Pb == c).T.astype(np.float32)
                                for c in range(self.pred.shape[1]))
                    dist = 1.0 - agree / n
                else:
                    sa, sb = (Pa * Pa).sum(1), (Pb * Pb).sum(1)
                    dist = np.maximum(sa[:, None] + sb[None, :] - 2.0 * Pa @ Pb.T, 0.0) / n
                ok = dist <= epsilon + 1e-12
                near[a:a + len(Pa), b:b + len(Pb)] = ok
                near[b:b + len(Pb), a:a + len(Pa)] = ok.T
        np.fill_diagonal(near, True)
        return near

    # -- transforms -------------------------------------------------------------
    def _uses(self, feat, cols):
        """Bool per tree: some internal node splits on a feature in ``cols`` (``feat`` flat, global)."""
        return np.bincount(self.tree_of[self.internal & np.isin(feat, cols)], minlength=self.T) > 0

    def _variant(self, cols, plus):
        """S+ (plus) or S- of every tree for the feature set ``cols``: (trees, changed, splits on cols)."""
        left, right, feat, thr = (a.copy() for a in self.master)
        node_in = np.isin(feat[self.s_node], cols)
        sur_in = np.isin(self.s_feat, cols)
        cand = (sur_in & ~node_in) if plus else (~sur_in & node_in)
        nodes, first = np.unique(self.s_node[cand], return_index=True)
        pick = np.flatnonzero(cand)[first]
        feat[nodes] = self.s_feat[pick]
        thr[nodes] = self.s_thr[pick]
        flip = nodes[self.s_flip[pick]]
        left[flip], right[flip] = self.master[1][flip], self.master[0][flip]
        changed = np.bincount(self.tree_of[nodes], minlength=self.T) > 0
        trees = list(self.trees)
        for t in np.flatnonzero(changed):
            sl = slice(self.offsets[t], self.offsets[t] + self.trees[t].node_count)
            trees[t] = _rebuild(self.trees[t], left[sl], right[sl], feat[sl], thr[sl])
        return trees, changed, self._uses(feat, cols), self._below(nodes)

    def _below(self, nodes):
        """Bool per global node: it is one of ``nodes`` or lies under one (rows whose leaf is not
        below a node changed by S± reach the same leaf in the transformed tree)."""
        below = np.zeros(len(self.master[0]), dtype=bool)
        below[nodes] = True
        ml, mr = self.master[0], self.master[1]
        for inner in self.levels:
            off = self.offsets[self.tree_of[inner]]
            below[ml[inner] + off] |= below[inner]
            below[mr[inner] + off] |= below[inner]
        return below

    # -- evaluation -------------------------------------------------------------
    def close(self):
        """Stop the worker threads."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def _map(self, fn, idx):
        """fn(t) for every tree index in ``idx``, in parallel batches, yielded in order (so that sums
        accumulated by the caller do not depend on the number of workers)."""
        if self.pool is None or len(idx) < 2:
            yield from map(fn, idx)
            return
        batch = 4 * self.workers
        for a in range(0, len(idx), batch):
            yield from self.pool.map(fn, list(idx[a:a + batch]))

    def _leaves(self, tree, t, X32):
        """Global ids of the leaves the rows of X32 reach in ``tree`` (tree number ``t``)."""
        return tree.apply(X32) + self.offsets[t]

    def _evaluate(self, trees, idx, X32, weights=None):
        """Weighted sum over trees ``idx`` of their predictions on X32 (weights default to 1)."""
        total = np.zeros_like(self.ref_sum)
        for i, p in enumerate(self._map(lambda t: np.take(self.pred, self._leaves(trees[t], t, X32), axis=0),
                                        idx)):
            total += p if weights is None else weights[i] * p
        return total

    def _permuted(self, cols, seed):
        """X32 with the columns ``cols`` jointly shuffled by the permutation drawn from ``seed``."""
        perm = np.random.default_rng(seed).permutation(self.n)
        Xp = self.X32.copy()
        Xp[:, cols] = self.X32[:, cols][perm]
        return Xp

    def unit(self, cols, seeds, epsilon, neighbours, reliance):
        """One row of the result table for the feature set ``cols``.

        Pass 1 runs over blocks of trees and, per permutation, re-routes only the rows whose permuted
        values leave their training leaf's box (original tree) or that pass a node changed by S+ / S-
        (transformed trees). It yields
        per-tree losses, the reference forest on the permuted data and the forests F±_S, kept per
        permutation (O(K·n·C)).
        Pass 2 swaps trees (T±) and re-evaluates only the trees whose weight changed, or the
        swapped forest from scratch when that is cheaper (few equivalence classes).
        """
        n, T, K = self.n, self.T, len(seeds)
        uses_o = self._uses(self.master[2], cols)
        plus_trees, ch_p, uses_p, below_p = self._variant(cols, True)
        minus_trees, ch_m, uses_m, below_m = self._variant(cols, False)
        run = np.flatnonzero(uses_o | ch_p | ch_m)
        sums = {k: np.zeros(T) for k in ("orig", "plus", "minus")}
        ref_acc = [self.ref_sum.copy() for _ in range(K)]   # T · reference forest on permuted data
        d_plus = [np.zeros_like(self.ref_sum) for _ in range(K)]
        d_minus = [np.zeros_like(self.ref_sum) for _ in range(K)]
        block = max(1, len(run)) if self.leaf_cache is not None else max(TREE_BLOCK, 2**22 // n // TREE_BLOCK * TREE_BLOCK)
        for a in range(0, len(run), block):
            part = run[a:a + block]
            train = None if self.leaf_cache is not None else dict(
                zip(part, self._map(lambda t: self._leaves(self.trees[t], t, self.X32).astype(np.int32), part)))
            blocks = [part[b:b + TREE_BLOCK] for b in range(0, len(part), TREE_BLOCK)]
            for k, seed in enumerate(seeds):
                Xp = self._permuted(cols, seed)
                X64 = Xp.astype(np.float64)

                def one_block(trees):
                    """Per-tree results of a fixed block of trees and the block's summed change of
                    the reference forest's predictions (accumulated in C, in tree order)."""
                    change = np.zeros_like(self.ref_sum)
                    results = []
                    for t in trees:
                        L = self.leaf_cache[t] if train is None else train[t]
                        # C core: a row changes leaf only if a permuted value leaves its training leaf's box
                        g_o, rows = _native.reroute(self.forest, t, X64, cols, L, self.pred, change)
                        d_o = self._tree_loss(g_o[rows], rows) - self._tree_loss(L[rows], rows)
                        out = [d_o]
                        for tree, on, below in ((plus_trees[t], ch_p[t], below_p),
                                                (minus_trees[t], ch_m[t], below_m)):
                            if not on:
                                out.append(None)
                                continue
                            r = _rows(below[g_o])
                            g = self._leaves(tree, t, Xp[r])
                            out.append((d_o + self._tree_loss(g, r) - self._tree_loss(g_o[r], r), r,
                                        np.take(self.pred, g, axis=0) - np.take(self.pred, g_o[r], axis=0)))
                        results.append((t, out))
                    return change, results

                # fixed blocks reduced in order: the sums do not depend on the number of threads
                for change, results in self._map(one_block, blocks):
                    ref_acc[k] += change
                    for t, (d_o, p, m) in results:
                        sums["orig"][t] += d_o
                        for key, res, acc in (("plus", p, d_plus), ("minus", m, d_minus)):
                            if res is None:
                                sums[key][t] += d_o
                            else:
                                sums[key][t] += res[0]
                                acc[k][res[1]] += res[2]
        ref_perm = sum(self._forest_loss(r / T) - self.ref_loss for r in ref_acc)
        acc = {"plus": [r + d for r, d in zip(ref_acc, d_plus)], "minus": [r + d for r, d in zip(ref_acc, d_minus)]}
        del d_plus, d_minus, ref_acc
        delta = {k: v / K for k, v in sums.items()}  # mean per-tree loss increase (0 for trees ignoring cols)
        model_rel = float(_reliance(ref_perm / K, self.ref_loss, reliance))

        out = {"mcr_minus": np.nan, "model_reliance": model_rel, "mcr_plus": np.nan}
        for key, sign, trees, uses in (("minus", -1.0, minus_trees, uses_m), ("plus", 1.0, plus_trees, uses_p)):
            mr = _reliance(delta[key] / n, self.train_loss / n, reliance)
            w = np.bincount(_best(self.group, neighbours, sign * mr), minlength=T).astype(np.float64)
            net = w - 1.0                                     # weight change of every tree under T±
            if np.count_nonzero((net != 0) & uses) <= np.count_nonzero((w > 0) & uses):
                coef, start0, start = net, self.ref_sum, acc[key]
            else:
                coef, start0, start = w, 0.0, [0.0] * K
            dyn, fixed = np.flatnonzero((coef != 0) & uses), np.flatnonzero((coef != 0) & ~uses)
            base_dyn = self._evaluate(trees, dyn, self.X32, coef[dyn])
            fit = (start0 + self._evaluate(trees, fixed, self.X32, coef[fixed]) + base_dyn) / T
            deviation = float(np.max(np.abs(fit - self.ref_train)))
            if epsilon == 0 and deviation > 1e-9:
                raise RuntimeError(f"internal error: boundary forest F{key} deviates from the reference on "
                                   f"training data by {deviation:g} although epsilon = 0")
            train = self._forest_loss(fit)
            perm = 0.0
            for k, seed in enumerate(seeds):
                moved = self._evaluate(trees, dyn, self._permuted(cols, seed), coef[dyn]) if dyn.size else 0.0
                P = (start[k] + (fit * T - start0 - base_dyn) + moved) / T
                perm += self._forest_loss(P) - train
            out[f"mr_{key}_forest"] = float(_reliance(perm / K, train, reliance))
            out[f"loss_{key}_forest"] = train
            out[f"deviation_{key}"] = deviation
        if reliance == "difference":  # incremental sums leave rounding noise around exact zeros
            for key in ("model_reliance", "mr_minus_forest", "mr_plus_forest"):
                out[key] = 0.0 if abs(out[key]) < 1e-12 else out[key]
        out["mcr_minus"] = min(out["mr_minus_forest"], out["model_reliance"])
        out["mcr_plus"] = max(out["mr_plus_forest"], out["model_reliance"])
        out["reference_loss"] = self.ref_loss
        tol = epsilon + 1e-12
        out["within_rashomon"] = bool(out["loss_minus_forest"] <= self.ref_loss + tol
                                      and out["loss_plus_forest"] <= self.ref_loss + tol
                                      and (epsilon > 0 or max(out["deviation_minus"], out["deviation_plus"]) <= 1e-9))
        return out


def _rows(mask):
    """Rows flagged in ``mask``: their indices, or all rows (a slice: no copies) when most are."""
    return slice(None) if np.count_nonzero(mask) > 0.6 * len(mask) else np.flatnonzero(mask)


def _reliance(delta, train_loss, kind):
    """MR from the mean loss increase under permutation and the original loss (arrays or scalars):
    the difference itself, or Fisher's ratio (permuted / original; +inf when only the original is 0)."""
    if kind == "difference":
        return delta
    delta, train_loss = np.asarray(delta, float), np.asarray(train_loss, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(train_loss > 0, (train_loss + delta) / train_loss, np.where(delta > 0, np.inf, 1.0))
    return ratio if ratio.ndim else float(ratio)


def _best(group, neighbours, score):
    """For every tree, the index of the highest-scoring tree it may be swapped for (first on ties)."""
    if neighbours is not None:
        return np.where(neighbours, score[None, :], -np.inf).argmax(axis=1)
    order = np.lexsort((np.arange(len(score)), -score, group))
    g_sorted = group[order]
    first = np.r_[True, g_sorted[1:] != g_sorted[:-1]]
    best_of_group = np.empty(group.max() + 1, dtype=np.int64)
    best_of_group[g_sorted[first]] = order[first]
    return best_of_group[group]
