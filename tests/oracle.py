"""Independent references for PG²: brute-force integration over grid cells, and a plain
numpy leaf-pair sum. Neither shares code with the C core or the perturbation module."""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats


def real_boundary(t: float, rule: str, float32: bool) -> float:
    """sup{x real : the model sends x left at threshold t}, found by bisection on the model's
    own comparison (float32 cast where the model casts)."""

    def left(x):
        v = np.float64(np.float32(x)) if float32 else np.float64(x)
        return v < t if rule == "lt" else v <= t

    lo, hi = t - 1e-3 * (abs(t) + 1), t + 1e-3 * (abs(t) + 1)
    assert left(lo) and not left(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if left(mid) else (lo, mid)
    return hi if left(hi) else lo if not left(lo) else (lo + hi) / 2


def model_thresholds(model) -> tuple[dict, str, bool]:
    """Per-feature raw thresholds read straight from the library's own model dump, with the
    comparison rule and whether inputs are cast to float32."""
    module = type(model).__module__.split(".")[0]
    thr: dict[int, list] = {}
    if module == "xgboost":
        df = model.get_booster().trees_to_dataframe()
        df = df[df.Feature != "Leaf"]
        names = model.get_booster().feature_names
        for f, s in zip(df.Feature, df.Split):
            j = names.index(f) if names else int(f[1:])
            thr.setdefault(j, []).append(float(np.float32(s)))
        return thr, "lt", True
    if module == "lightgbm":
        df = model.booster_.trees_to_dataframe()
        df = df[df.split_feature.notna() & (df.decision_type == "<=")]      # numeric splits only
        names = model.booster_.feature_name()
        for f, s in zip(df.split_feature, df.threshold):
            thr.setdefault(names.index(f), []).append(float(s))
        return thr, "le", False
    if module == "catboost":           # every border of every float feature; x > border goes right
        for j, borders in model.get_borders().items():
            thr[int(j)] = [float(b) for b in borders]
        return thr, "le", True
    if hasattr(model, "_predictors"):  # sklearn HistGradientBoosting (categorical features: columns reordered,
        is_cat = getattr(model, "is_categorical_", None)          # the categorical ones first)
        source = np.arange(model.n_features_in_) if is_cat is None else \
            np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
        for row in model._predictors:
            for p in row:
                for node in p.nodes[~p.nodes["is_leaf"].astype(bool) & ~p.nodes["is_categorical"].astype(bool)]:
                    thr.setdefault(int(source[node["feature_idx"]]), []).append(float(node["num_threshold"]))
        return thr, "le", False
    estimators = getattr(model, "estimators_", [model])
    for est in np.ravel(estimators):
        tree = est.tree_
        for j, t, child in zip(tree.feature, tree.threshold, tree.children_left):
            if child >= 0:
                thr.setdefault(int(j), []).append(float(t))
    return thr, "le", True


def noise_mass(noise, lo: float, hi: float) -> float:
    """P(lo < e <= hi) for the noise e: a frozen scipy distribution (anything with cdf and sf) or
    a bare CDF callable. Tail intervals are taken from the tail they lie in, cdf(hi) - cdf(lo) in
    the lower tail and sf(lo) - sf(hi) in the upper one, so tiny masses keep their digits."""
    if hi <= lo:
        return 0.0
    if not hasattr(noise, "sf"):
        cdf = noise.cdf if hasattr(noise, "cdf") else noise
        return float(cdf(hi) - cdf(lo)) if np.isfinite(lo) else float(cdf(hi))
    below_hi = float(noise.cdf(hi))      # P(e <= hi)
    if below_hi <= 0.5:
        return below_hi - float(noise.cdf(lo))
    above_lo = float(noise.sf(lo))       # P(e > lo)
    if above_lo <= 0.5:
        return above_lo - float(noise.sf(hi))
    return (1.0 - float(noise.cdf(lo))) - float(noise.sf(hi))  # around the median: no cancellation


def cell_points(b: np.ndarray) -> np.ndarray:
    """One point strictly inside each cell (-inf, b_0], (b_0, b_1], ..., (b_m, inf) of the sorted
    boundaries b: the neighbouring float outside the end boundaries (b ± 1 rounds back onto b once
    |b| > 2**53), the midpoint inside."""
    return np.concatenate([[np.nextafter(b[0], -np.inf)], b[:-1] / 2 + b[1:] / 2, [np.nextafter(b[-1], np.inf)]])


def category_law(xj: float, rho: float, q) -> tuple[np.ndarray, np.ndarray]:
    """The values x'_j takes and their probabilities when x'_j keeps xj with probability 1 - rho and is
    otherwise code c with probability q[c] (written from the definition, apart from the package)."""
    codes = np.arange(len(q), dtype=np.float64)
    p = rho * np.asarray(q, dtype=np.float64)
    if xj in codes:                         # NaN is never "in": it is its own value below
        p[int(xj)] += 1.0 - rho
        return codes, p
    return np.append(codes, xj), np.append(p, 1.0 - rho)


def grid_pg2(model, predict, x, S, cdfs, laws=None, atoms=None) -> np.ndarray:
    """Σ over grid cells of the perturbed features of P(cell) (f(cell) - f(x))², with cells cut at
    the real boundaries of every threshold and f evaluated at one point per cell; a categorical
    feature j (in ``laws``, {j: (rho, q)}) enumerates its values instead (:func:`category_law`), and
    so does a feature with a finite law (in ``atoms``, {j: (values, probabilities)}).

    predict: (n, d) -> (n, k) model output; cdfs[j]: the noise on feature j, a frozen scipy
    distribution (its sf serves the upper tail) or a bare CDF callable (see noise_mass)."""
    thr, rule, f32 = model_thresholds(model)
    axes, probs = [], []
    for j in S:
        if laws is not None and j in laws:
            reps, p = category_law(x[j], *laws[j])
            axes.append(reps)
            probs.append(p)
            continue
        if atoms is not None and j in atoms:
            axes.append(np.asarray(atoms[j][0], dtype=np.float64))
            probs.append(np.asarray(atoms[j][1], dtype=np.float64))
            continue
        b = np.unique([real_boundary(t, rule, f32) for t in thr.get(j, [])])
        if len(b) == 0:
            reps, p = np.array([x[j]]), np.array([1.0])
        else:
            reps = cell_points(b)
            edges = np.concatenate([[-np.inf], b, [np.inf]])
            p = np.array([noise_mass(cdfs[j], lo - x[j], hi - x[j]) for lo, hi in zip(edges[:-1], edges[1:])])
        axes.append(reps)
        probs.append(p)
    cells = np.array(list(itertools.product(*axes)))
    weight = np.prod(np.array(list(itertools.product(*probs))), axis=1)
    rows = np.repeat(x[None, :], len(cells), axis=0)
    rows[:, list(S)] = cells
    fx = predict(x[None, :])[0]
    gap = predict(rows) - fx
    return (weight[:, None] * gap ** 2).sum(axis=0)


def gaussian(sigma):
    """Gaussian noise of standard deviation sigma, with cdf and sf."""
    return stats.norm(scale=sigma)


def leaf_pair_pg2(forest, x, S, cdfs) -> np.ndarray:
    """The paper's O(n²) sum over all leaf pairs of all tree pairs, in numpy, from the Forest
    arrays: PG² = scale² Σ_t Σ_u Σ_l Σ_m c_l c_m P(box_l ∩ box_m), boxes over the real boundaries."""
    S = set(S)
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    splits = split_boundaries(forest)
    zero = float(getattr(forest, "zero_threshold", 0.0))

    def read(v):  # the value the model compares (LightGBM reads |v| <= its zero threshold as 0)
        v = 0.0 if abs(v) <= zero else v
        return np.float32(v) if forest.input_float32 else v

    leaves = []  # per tree: list of (centred value vector, {j: (lo, hi)}, target)
    for t in range(forest.n_trees):
        base = forest.tree_offset[t]
        x_leaf = base
        while forest.left_child[x_leaf] >= 0:
            j = forest.feature[x_leaf]
            v = read(x[j])
            go = v < forest.threshold[x_leaf] if forest.split_rule == "lt" else v <= forest.threshold[x_leaf]
            x_leaf = base + (forest.left_child[x_leaf] if go else forest.right_child[x_leaf])
        out = []
        stack = [(0, {})]
        while stack:
            k, box = stack.pop()
            g = base + k
            if forest.left_child[g] < 0:
                out.append((forest.value[g] - forest.value[x_leaf], box))
                continue
            j = forest.feature[g]
            if j not in S:
                v = read(x[j])
                go = v < forest.threshold[g] if forest.split_rule == "lt" else v <= forest.threshold[g]
                stack.append((forest.left_child[g] if go else forest.right_child[g], box))
                continue
            b = splits.boundaries[j][splits.threshold_rank[g] - 1]
            lo, hi = box.get(j, (-np.inf, np.inf))
            stack.append((forest.left_child[g], {**box, j: (lo, min(hi, b))}))
            stack.append((forest.right_child[g], {**box, j: (max(lo, b), hi)}))
        leaves.append(out)

    def prob(box):
        p = 1.0
        for j, (lo, hi) in box.items():
            p *= noise_mass(cdfs[j], lo - x[j], hi - x[j])
        return p

    total = np.zeros(forest.n_outputs)
    for t, u in itertools.product(range(forest.n_trees), repeat=2):
        if forest.tree_target[t] != forest.tree_target[u]:
            continue
        acc = np.zeros(forest.leaf_width)
        for cl, bl in leaves[t]:
            for cm, bm in leaves[u]:
                inter = {j: (max(bl.get(j, (-np.inf,))[0], bm.get(j, (-np.inf,))[0]),
                             min(bl.get(j, (0, np.inf))[1], bm.get(j, (0, np.inf))[1]))
                         for j in set(bl) | set(bm)}
                acc += cl * cm * prob(inter)
        k = forest.tree_target[t]
        total[k:k + forest.leaf_width] += acc
    # a mean runs over the trees adding to each output (all trees, or n_trees / k for one-output trees)
    scale = forest.n_outputs / (forest.n_trees * forest.leaf_width) if forest.aggregate == "mean" else 1.0
    return total * scale ** 2


def xgboost_leaf_sum(model, Z, missing=np.nan) -> np.ndarray:
    """(n, k) float64 sum, per output, of the leaf values that XGBoost's own routing reaches
    (``pred_leaf`` on a DMatrix with the given ``missing``), base score left out: the model's margin
    up to a constant, without its float32 summation (the constant cancels in PG²)."""
    import json

    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    matrix = xgboost.DMatrix(np.asarray(Z, dtype=np.float64), missing=missing, feature_names=booster.feature_names,
                             feature_types=booster.feature_types, enable_categorical=True)  # codes: as trained
    leaves = booster.predict(matrix, pred_leaf=True).reshape(len(Z), -1).astype(np.int64)
    gbtree = json.loads(booster.save_raw(raw_format="json"))["learner"]["gradient_booster"]["model"]
    target = [int(t) for t in gbtree["tree_info"]]
    out = np.zeros((len(Z), max(target) + 1))
    for t, tree in enumerate(gbtree["trees"]):
        value = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)
        out[:, target[t]] += value[leaves[:, t]]
    return out
