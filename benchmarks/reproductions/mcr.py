"""RF-MCR paper (Smith, Mansilla & Goulding, NeurIPS 2020): XOR ground truth, COMPAS, breast cancer, scaling.

The figures of the paper carry no printed numbers; what its text states (the XOR truth, the
reference models' MSE and accuracy, the qualitative findings, linearithmic run time) is compared.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ._tolerance import check
from .base import DATASETS, Row, Table

PAPER = "RF-MCR (Smith et al.)"
EPSILONS = (0.0, 3.17)          # §5.1: RF-MCR at 0 and at SVM-MCR's 3.17


def _mcr(model, X, y, **kwargs):
    from xai_plugins.mcr import model_class_reliance

    return model_class_reliance(model, X, y, random_state=0, progress=False, **kwargs).table


def _forest(X, y, task, trees, **params):
    from xai_plugins.mcr import fit_rashomon_forest

    return fit_rashomon_forest(X, y, task=task, n_estimators=trees, random_state=0, n_jobs=-1, **params)


# ----------------------------------------------------------------------------- XOR (§5)

def xor_data(n: int = 1000, seed: int = 0):
    """§5: A, B fair coins, C = B (perfectly colinear), Y = A xor B."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    return pd.DataFrame({"A": a, "B": b, "C": b}).astype(float), a ^ b


def _xor(quick: bool) -> list[Row]:
    """MCR of A, B, C with MR as the drop in accuracy; truth A [0.5, 0.5], B and C [0, 0.5]."""
    n, perms = 1000, 10
    X, y = xor_data(n)
    table = _mcr(_forest(X, y, "classification", 50 if quick else 500), X, y, n_permutations=perms)
    se = 0.5 / np.sqrt(n * perms)   # sd of the accuracy after one shuffle is ~0.5 / sqrt(n)
    truth = {"A": (0.5, 0.5), "B": (0.0, 0.5), "C": (0.0, 0.5)}
    rows = []
    for feat, ends in truth.items():
        for end, paper in zip(("mcr_minus", "mcr_plus"), ends):
            ours = float(table.loc[feat, end])
            if paper == 0.0:
                ok, tol = abs(ours) <= 1e-12, "exact: a forest that never uses the feature has MR exactly 0"
            else:
                ok, tol = abs(ours - paper) <= 3 * se, f"|ours - 0.5| <= 3 x permutation SE = {3 * se:.4f}"
            rows.append(Row({"feature": feat, "end": end}, paper, round(ours, 4), bool(ok), tol,
                            "" if ok else "estimate missed the known truth"))
    return rows


# ----------------------------------------------------------------------------- COMPAS (§5.1)

def load_compas():
    """Features and decile score of ProPublica's COMPAS data; race one-hot (permuted together)."""
    df = pd.read_csv(DATASETS / "compas_two_years.csv")
    X = pd.DataFrame({
        "age": df["age"], "sex_male": (df["sex"] == "Male").astype(int),
        "priors_count": df["priors_count"], "juv_fel_count": df["juv_fel_count"],
        "juv_misd_count": df["juv_misd_count"], "juv_other_count": df["juv_other_count"],
        "charge_felony": (df["c_charge_degree"] == "F").astype(int),
    })
    races = pd.get_dummies(df["race"], prefix="race").astype(int)
    return pd.concat([X, races], axis=1).astype(float), df["decile_score"].to_numpy(float), list(races.columns)


def _half_split(n: int, seed: int = 0) -> np.ndarray:
    """Boolean mask of a random half of ``n`` rows (the training half)."""
    train = np.zeros(n, bool)
    train[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    return train


def _compas(quick: bool) -> list[Row]:
    """Reference MSE on held-out data, then RF-MCR ranges (MR as a ratio) at eps = 0 and 3.17."""
    X, y, race_cols = load_compas()
    train = _half_split(len(y))
    Xtr, ytr = X[train].reset_index(drop=True), y[train]
    model = _forest(Xtr, ytr, "regression", 100 if quick else 500, min_samples_leaf=10)
    err = (model.predict(X[~train]) - y[~train]) ** 2
    mse, se = float(err.mean()), float(err.std(ddof=1) / np.sqrt(err.size))
    agrees, tol = check(mse, "2.73", se)
    rows = [Row({"quantity": "reference test MSE"}, 2.73, round(mse, 3), agrees, f"{tol}, SE of our held-out MSE",
                f"decile score variance {y.var():.2f}. The paper prepares COMPAS as the SVM-MCR paper (Fisher et al.) "
                "does; the RF-MCR text gives neither that preparation's row filters, feature coding and "
                "response transform nor the split, and ours (ProPublica's filtered 6,172 rows, raw decile "
                "score, 50/50 split, 500 bootstrap-free trees, min_samples_leaf 10) is a guess at them; "
                "the SVM reference's 2.86 is as low, so the gap is the data preparation, not the forest")]
    singles = [c for c in X.columns if c not in race_cols]
    for eps in EPSILONS:
        table = _mcr(model, Xtr, ytr, features=singles, groups={"race": race_cols}, n_permutations=10,
                     epsilon=eps, reliance="ratio")
        for feat in ("race", "age"):
            lo, ref, hi = (float(table.loc[feat, c]) for c in ("mcr_minus", "model_reliance", "mcr_plus"))
            setting = {"epsilon": eps, "feature": feat, "end": "mcr_minus"}
            if feat == "race" and eps > 0:
                rows.append(Row(setting, 1.0, round(lo, 3), lo <= 1.05,
                                "claim 'race is a non-necessary variable' (§5.1): MCR- <= 1.05 "
                                "(ratio; 1 = no reliance)",
                                f"range [{lo:.3f}, {hi:.3f}], reference MR {ref:.3f}. Our eps bounds the MSE between a "
                                "swapped tree's training predictions and the original's; 3.17 is 1.11 x SVM-MCR's "
                                "reference MSE 2.86, which suggests that in Fisher et al. it bounds the loss of the "
                                "whole model instead, a far larger Rashomon set"))
            else:
                rows.append(Row(setting, None, round(lo, 3), None, "n/a",
                                f"range [{lo:.3f}, {hi:.3f}], reference MR {ref:.3f}; the paper shows this range only "
                                "in its Figure 2 (no printed value). It reports the age range as much wider at "
                                "eps = 3.17 than at eps = 0"))
    return rows


# ----------------------------------------------------------------------------- breast cancer (§5.2)

def _breast_cancer(quick: bool) -> list[Row]:
    """Held-out accuracy of the reference forest and the share of features with MCR- = 0 (eps = 0)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    data = load_breast_cancer(as_frame=True)
    Xtr, Xte, ytr, yte = train_test_split(data.data, data.target.to_numpy(), test_size=0.5, random_state=0,
                                          stratify=data.target)
    Xtr = Xtr.reset_index(drop=True)
    model = _forest(Xtr, ytr, "classification", 100 if quick else 500)
    acc = float((model.predict(Xte) == yte).mean())
    se = float(np.sqrt(acc * (1 - acc) / len(yte)))
    table = _mcr(model, Xtr, ytr, n_permutations=10)
    width = table["mcr_plus"] - table["mcr_minus"]
    unneeded = float((table["mcr_minus"] <= 0).mean())
    agrees, tol = check(100 * acc, "95.74", 100 * se)
    return [
        Row({"quantity": "reference test accuracy (%)"}, 95.74, round(100 * acc, 2), agrees,
            f"{tol}, binomial SE of our test accuracy",
            f"50/50 stratified split (seed 0) of sklearn's Wisconsin diagnostic data, {len(yte)} test rows; "
            "the paper does not give its split"),
        Row({"quantity": "share of features with MCR- = 0"}, 1.0, round(unneeded, 4), unneeded == 1.0,
            "exact: §5.2 'for each feature, there exists some model ... where that feature is not required'",
            f"MR = drop in training accuracy, eps = 0; median range width {width.median():.4f}, widest "
            f"{width.idxmax()} [{table.loc[width.idxmax(), 'mcr_minus']:.4f}, "
            f"{table.loc[width.idxmax(), 'mcr_plus']:.4f}]. Every full-depth tree fits the training rows "
            "exactly, so all trees are predictively equivalent at eps = 0"),
    ]


# ----------------------------------------------------------------------------- run time (§5.3, Fig. 4a)

def _scaling(quick: bool) -> list[Row]:
    """Seconds of RF-MCR for one variable as the training rows grow; slope of log t on log(n log n)."""
    X, y, _ = load_compas()
    sizes = (2000, 4000, 8000, 16000) if quick else (2000, 4000, 8000, 16000, 32000, 64000)
    rng = np.random.default_rng(0)
    seconds = []
    for n in sizes:
        idx = rng.integers(0, len(y), n)
        Xn, yn = X.iloc[idx].reset_index(drop=True), y[idx]
        model = _forest(Xn, yn, "regression", 100, min_samples_leaf=10)
        best = np.inf
        for _ in range(2):
            start = time.perf_counter()
            _mcr(model, Xn, yn, features=["age"], n_permutations=10, n_jobs=1)
            best = min(best, time.perf_counter() - start)
        seconds.append(best)
    n = np.array(sizes, float)
    slope = float(np.polyfit(np.log(n * np.log2(n)), np.log(seconds), 1)[0])
    return [Row({"quantity": "slope of log(seconds) on log(n log2 n)"}, 1.0, round(slope, 3),
                abs(slope - 1.0) <= 0.25,
                "|slope - 1| <= 0.25 (timing noise on a shared 2-core machine; 1 = linearithmic)",
                "seconds " + ", ".join(f"{s:.3f} at {k}" for k, s in zip(sizes, seconds)) +
                "; the paper's Figure 4a shows the curve without printed values")]


TABLES = [
    Table("mcr-xor", PAPER, "§5, Figure 1: MCR recovered on the XOR network",
          "1,000 rows: A, B fair coins, C = B, Y = A xor B (seed 0). Reference forest: bootstrap-free "
          "RandomForestClassifier (fit_rashomon_forest, max_features sqrt, full depth), 500 trees (quick: 50). "
          "MR = drop in training accuracy (zero-one loss, difference), 10 permutations, eps = 0. Truth from §5: "
          "A [0.5, 0.5], B and C [0, 0.5].",
          _xor),
    Table("mcr-compas", PAPER, "§5.1, Figure 2: COMPAS decile-score regression",
          "../shared/datasets/compas_two_years.csv (ProPublica's filtered rows): decile score regressed on age, "
          "sex, priors, three juvenile counts, charge degree and race (one-hot, permuted as one group). Random "
          "50/50 split (seed 0); reference forest bootstrap-free, min_samples_leaf 10, 500 trees (quick: 100); MSE "
          "on the held-out half (paper 2.73). MCR in-sample on the training half, MR as the ratio of squared "
          "errors (as the paper reports for comparison with Fisher et al.), 10 permutations, eps = 0 and 3.17.",
          _compas),
    Table("mcr-breast-cancer", PAPER, "§5.2, Figure 3: breast cancer (Wisconsin diagnostic)",
          "scikit-learn's breast cancer data (569 rows, 30 features: the paper's Street et al. dataset). "
          "Stratified 50/50 split (seed 0); bootstrap-free forest of 500 trees (quick: 100); accuracy on the "
          "test half (paper 95.74 %); MCR in-sample, MR = drop in accuracy, 10 permutations, eps = 0.",
          _breast_cancer),
    Table("mcr-scaling", PAPER, "§5.3, Figure 4a: run time against rows (linearithmic)",
          "COMPAS rows drawn with replacement (seed 0) to n = 2,000-64,000 training rows (quick: up to 16,000); "
          "bootstrap-free regression forest of 100 trees, min_samples_leaf 10; seconds (best of 2, n_jobs = 1) "
          "of RF-MCR for one variable (age), 10 permutations; least-squares slope of log seconds on "
          "log(n log2 n), fitting forests not counted.",
          _scaling),
]
