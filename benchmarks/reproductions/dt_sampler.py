"""DT-Sampler paper (Tsuda lab, "Feature importance measurement based on decision tree sampling").

Of the paper's four UCI datasets only a breast cancer set is at hand (scikit-learn's Wisconsin
diagnostic data); mouse (Mice Protein Expression), car (Car Evaluation) and heart are not, and
scikit-learn's wine data (cultivar 2 against the others) stands in for car, with car's row size,
tree size and threshold.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ._tolerance import check
from .base import Row, Table

PAPER = "DT-Sampler (Tsuda lab)"

# Table 3, breast row: (#b, #f, thres., #node RF / ours, training acc. RF / ours, test acc. RF / ours)
TABLE3_BREAST = {"rows": 150, "features": 15, "threshold": 0.816, "nodes": (19.00, 11),
                 "train": ("83.33", "80.89"), "test": ("73.49", "74.54")}     # % as printed
TABLE3_GAPS = {"mouse": 93.33 - 91.67, "car": 88.32 - 88.57, "breast": 74.54 - 73.49, "heart": 81.36 - 83.93}
# encoding table (§3): (#b, #f, #n, thres.) -> authors' encoding (#var_cnf, #cls_cnf); the base encoding first
ENCODING = {("mouse", 50, 15, 13, 1.00): ((3599, 20586), (1274, 8397)),
            ("mouse", 50, 15, 11, 0.90): ((3260, 22890), (1990, 24689)),
            ("car", 40, 10, 17, 1.00): ((3956, 21625), (1406, 9495)),
            ("car", 50, 15, 11, 0.90): ((3436, 26218), (2152, 33473)),
            ("breast", 40, 15, 17, 1.00): ((5821, 32400), (2041, 13663)),
            ("breast", 50, 12, 13, 0.90): ((3759, 24732), (2198, 27869)),
            ("heart", 40, 19, 13, 1.00): ((4572, 26063), (1590, 10697)),
            ("heart", 50, 10, 13, 0.90): ((3241, 21568), (2108, 25552))}
CATALAN = {1: 1, 2: 2, 3: 5, 4: 14}       # Table 4: tree shapes with 3, 5, 7, 9 nodes


@lru_cache(maxsize=None)
def _wisconsin():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    return data.data, data.target


def _split(X, y, n_train: int, seed: int = 0):
    """Stratified random ``n_train`` training rows, the rest for testing."""
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, train_size=n_train, random_state=seed, stratify=y)


# ----------------------------------------------------------------------------- Table 3

def _compare(X, y, n_train, n_features, n_branch, threshold, n_samples):
    """DT-Sampler's sampled trees vs a random forest on the same median-cut features.

    Returns mean tree size (nodes), training and test accuracy of each, and the test size.
    """
    from sklearn.ensemble import RandomForestClassifier

    from xai_plugins.dt_sampler import DTSampler

    Xtr, Xte, ytr, yte = _split(X[:, :n_features], y, n_train)
    est = DTSampler(n_branch_nodes=n_branch, min_accuracy=threshold, n_samples=n_samples, random_state=0,
                    quantiles=(0.5,), progress=False, time_budget=None).fit(Xtr, ytr)
    Btr, Bte = (np.column_stack([t.evaluate(A) for t in est.tests_]) for A in (Xtr, Xte))
    rf = RandomForestClassifier(100, random_state=0).fit(Btr, ytr)
    return {"dt": (2 * n_branch + 1, np.mean([(t.predict(Xtr) == ytr).mean() for t in est.trees_]),
                   np.mean([(t.predict(Xte) == yte).mean() for t in est.trees_])),
            "rf": (np.mean([e.tree_.node_count for e in rf.estimators_]), rf.score(Btr, ytr), rf.score(Bte, yte)),
            "n_test": len(yte), "n_train": len(ytr)}


def _acc_row(setting, printed, ours, n, reason):
    """An accuracy in % against the paper's printed one, within 2 binomial SE (+ half a printed unit)."""
    se = 100 * math.sqrt(max(ours * (1 - ours), 1e-4) / n)
    agrees, tol = check(100 * ours, printed, se)
    return Row(setting, float(printed), round(100 * float(ours), 2), agrees, f"{tol}, binomial SE over {n} rows",
               reason)


def _table3(quick: bool) -> list[Row]:
    """The breast row of Table 3 on scikit-learn's breast cancer data, and wine standing in for car."""
    from sklearn.datasets import load_wine

    n_samples = 20 if quick else 500
    p = TABLE3_BREAST
    X, y = _wisconsin()
    r = _compare(X, y, p["rows"], p["features"], 5, p["threshold"], n_samples)
    other = ("sklearn's breast cancer is Wisconsin diagnostic (569 rows, 30 real features, ~95 % accuracy); "
             "the paper's accuracies in the 70s match UCI's other 'Breast Cancer' set (Ljubljana, 286 rows, "
             "recurrence), which is not at hand")
    rows = [Row({"dataset": "breast", "model": "DT-Sampler", "quantity": "nodes"}, p["nodes"][1], r["dt"][0],
                r["dt"][0] == p["nodes"][1], "exact (2N + 1 with N = 5 branch nodes)"),
            Row({"dataset": "breast", "model": "RF", "quantity": "nodes"}, p["nodes"][0], round(float(r["rf"][0]), 2),
                abs(r["rf"][0] / p["nodes"][0] - 1) <= 0.25,
                "within 25 % (the paper gives no RF hyper-parameters; sklearn defaults, 100 trees)", other)]
    low_bar = ("; the 81.6 % threshold, set for data whose RF reaches 83 % in training, is a low bar here: "
               "the space holds every tree from 81.6 % up, and the uniform average over it sits far below the best")
    for model, k in (("DT-Sampler", 1), ("RF", 0)):
        key, why = ("dt", other + low_bar) if k else ("rf", other)
        rows.append(_acc_row({"dataset": "breast", "model": model, "quantity": "training acc. (%)"}, p["train"][k],
                             r[key][1], r["n_train"], why))
        rows.append(_acc_row({"dataset": "breast", "model": model, "quantity": "test acc. (%)"}, p["test"][k],
                             r[key][2], r["n_test"], why))
    gap = 100 * (r["dt"][2] - r["rf"][2])
    se_gap = 100 * math.sqrt(2 * 0.25 / r["n_test"])
    claim = ("the paper's claim is comparable accuracy to RF; its test-accuracy gaps (pp): "
             + ", ".join(f"{k} {v:+.2f}" for k, v in TABLE3_GAPS.items()))
    rows.append(Row({"dataset": "breast", "quantity": "test acc. DT-Sampler - RF (pp)"},
                    round(TABLE3_GAPS["breast"], 2), round(gap, 2), abs(gap - TABLE3_GAPS["breast"]) <= 2 * se_gap,
                    f"|ours - paper| <= 2 x SE of a difference of two accuracies (at most {2 * se_gap:.2f} pp)",
                    claim + low_bar))
    wine = load_wine()
    r = _compare(wine.data, (wine.target == 1).astype(int), 100, 13, 5, 0.92, n_samples)
    for model, key in (("DT-Sampler", "dt"), ("RF", "rf")):
        rows.append(Row({"dataset": "wine (for car)", "model": model, "quantity": "test acc. (%)"}, None,
                        round(100 * float(r[key][2]), 2), None, "n/a",
                        f"substitute: car is not at hand; nodes {r[key][0]:.2f}, training acc. "
                        f"{100 * r[key][1]:.2f} %, {r['n_test']} test rows"))
    rows.append(Row({"dataset": "wine (for car)", "quantity": "test acc. DT-Sampler - RF (pp)"}, None,
                    round(100 * (r["dt"][2] - r["rf"][2]), 2), None, "n/a", claim))
    return rows


# ----------------------------------------------------------------------------- uniformity (App. A.1, §3.1)

def count_trees(n: int, k: int) -> int:
    """Trees with ``n`` branch nodes over ``k`` binary tests, no test twice on a root-to-leaf path.

    T(0, k) = 1; T(n, k) = k * sum_l T(l, k - 1) T(n - 1 - l, k - 1) (the root takes any test, its
    subtrees the remaining ones).
    """
    if n == 0:
        return 1
    if k == 0:
        return 0
    return k * sum(count_trees(left, k - 1) * count_trees(n - 1 - left, k - 1) for left in range(n))


def _toy(n_rows: int = 40, n_features: int = 6, seed: int = 0):
    """Random binary features, y = (x0 and x1) or x2 with two labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n_rows, n_features))
    y = (X[:, 0] & X[:, 1]) | X[:, 2]
    y[rng.choice(n_rows, 2, replace=False)] ^= 1
    return X, y


def _uniformity(quick: bool) -> list[Row]:
    """Shapes and tree counts of the whole space (exact), emergence at threshold 0, sampled vs enumerated."""
    from xai_plugins.dt_sampler import DTSampler

    X, y = _toy()
    k = X.shape[1]
    rows = []
    for n, paper in CATALAN.items():
        est = DTSampler(n_branch_nodes=n, min_accuracy=0.0, sampler="exact", progress=False).fit(X, y)
        shapes = {(tuple(t.left >= 0), tuple(t.right >= 0)) for t in est.trees_}
        rows.append(Row({"branch nodes": n, "quantity": "tree shapes"}, paper, len(shapes), len(shapes) == paper,
                        "exact (Catalan number, Table 4)",
                        f"{len(est.trees_)} trees enumerated; the recursion over tests gives {count_trees(n, k)}"
                        + ("" if len(est.trees_) == count_trees(n, k) else " (MISMATCH)")))
    n_samples = 200 if quick else 2000
    est = DTSampler(n_branch_nodes=3, min_accuracy=0.0, n_samples=n_samples, random_state=0, progress=False).fit(X, y)
    p = est.emergence_probability_["probability"].to_numpy()
    tol = 3 * math.sqrt((1 / k) * (1 - 1 / k) / n_samples)
    dev = float(np.abs(p - 1 / k).max())
    rows.append(Row({"branch nodes": 3, "threshold": 0, "sampler": "UniGen", "quantity": "max_j emergence prob."},
                    round(1 / k, 4), round(float(p[np.argmax(np.abs(p - 1 / k))]), 4), dev <= tol,
                    f"every feature within 3 x binomial SE over the trees ({tol:.4f}) of 1/K (§3.1)",
                    f"{n_samples} UniGen trees, K = {k} features"))
    exact = DTSampler(n_branch_nodes=4, min_accuracy=0.9, sampler="exact", progress=False).fit(X, y)
    drawn = DTSampler(n_branch_nodes=4, min_accuracy=0.9, n_samples=n_samples, random_state=0, progress=False).fit(X, y)
    pe = exact.emergence_probability_["probability"].to_numpy()
    ps = drawn.emergence_probability_["probability"].to_numpy()
    se = np.sqrt(np.maximum(pe * (1 - pe), 1e-4) / n_samples)
    z = float(np.max(np.abs(ps - pe) / se))
    keys = {t.key() for t in exact.trees_}
    outside = sum(t.key() not in keys for t in drawn.trees_)
    rows.append(Row({"branch nodes": 4, "threshold": 0.9, "sampler": "UniGen vs exact", "quantity": "max_j |z|"},
                    None, round(z, 2), None, "n/a",
                    f"the paper compares samplers with the enumerated truth only in its Figure 5; {n_samples} UniGen "
                    f"trees against all {len(exact.trees_)} enumerated: largest standardized difference of a "
                    f"feature's emergence probability {z:.2f} ({'within' if z <= 3 else 'beyond'} 3); "
                    f"{outside} sampled trees outside the enumerated space"))
    return rows


# ----------------------------------------------------------------------------- encoding size (§3)

def _encoding(quick: bool) -> list[Row]:
    """Our CNF's variables and clauses vs the authors' encoding, same rows / features / nodes / threshold."""
    from xai_plugins.dt_sampler import encode_trees
    from xai_plugins.dt_sampler.binarize import apply_tests, fit_tests

    X, y = _wisconsin()
    rows = []
    for (name, b, f, nodes, thres), (base, authors) in ENCODING.items():
        Xtr, _, ytr, _ = _split(X[:, :f], y, b)
        Xb = apply_tests(fit_tests(Xtr, [str(j) for j in range(f)], quantiles=(0.5,)), Xtr)
        enc = encode_trees(Xb, ytr, (nodes - 1) // 2, math.ceil(round(thres * b, 9)))
        for what, paper, ours, naro in (("variables", authors[0], enc.n_vars, base[0]),
                                        ("clauses", authors[1], len(enc.clauses), base[1])):
            rows.append(Row({"dataset": name, "rows": b, "binary features": f, "nodes": nodes, "threshold": thres,
                             "quantity": what}, paper, ours, ours <= paper,
                            "not the same count (our encoding differs by design): agrees when ours <= the "
                            "authors', i.e. the paper's size advantage is kept",
                            f"ours / authors' {ours / paper:.2f}; the base encoding (Narodytska et al.) has {naro}; "
                            f"the paper's {name} data are not at hand: sklearn breast cancer rows of the same shape "
                            "(the size depends on the data mostly through repeated rows)"))
    return rows


TABLES = [
    Table("dtsampler-table3", PAPER, "Table 3: DT-Sampler vs random forest (tree size, training / test accuracy)",
          "Breast row: 150 stratified training rows (seed 0) of scikit-learn's breast cancer data, its first 15 "
          "features cut at their median (15 binary tests), N = 5 branch nodes (11 nodes), threshold 81.6 %, "
          "500 UniGen trees (quick: 20); DT-Sampler's accuracies are the mean over the sampled trees; RF = "
          "RandomForestClassifier(100, seed 0) on the same binary features, nodes = mean node count per tree; "
          "test = the remaining 419 rows. Mouse, car and heart are not at hand (UCI); wine (cultivar 2 vs the "
          "others, car's 100 training rows, its 13 features at the median, N = 5, car's threshold 92 %, 78 test "
          "rows) stands in for car, without paper values.",
          _table3),
    Table("dtsampler-uniformity", PAPER, "Appendix A.1 / §3.1: the tree space and uniform sampling",
          "Toy data: 40 rows, 6 random binary features, y = (x0 and x1) or x2 with two labels flipped (seed 0). "
          "Exact enumeration of every tree with N = 1-4 branch nodes (threshold 0): distinct shapes vs the "
          "Catalan numbers of Table 4, and the tree count vs an independent recursion. Threshold 0, N = 3: "
          "UniGen emergence probabilities vs the paper's 1/K. Threshold 90 %, N = 4: UniGen vs exact "
          "enumeration. 2,000 UniGen trees (quick: 200).",
          _uniformity),
    Table("dtsampler-encoding", PAPER, "§3 encoding table: CNF variables and clauses vs the authors' encoding",
          "For each (#b rows, #f binary features, #n nodes, threshold) of the paper's table: #b stratified rows "
          "(seed 0) of scikit-learn's breast cancer data, its first #f features cut at the median, "
          "encode_trees with N = (#n - 1) / 2 and T = ceil(threshold * #b) (mtotalizer cardinality). Compared "
          "with the authors' #var_cnf and #cls_cnf (the second figure of each pair; the first is the base "
          "encoding). Deterministic; quick = full.",
          _encoding),
]
