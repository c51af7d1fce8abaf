"""AcME paper (Dandolo et al., "AcME — Accelerated model-agnostic explanations"): Tables 2–8.

Table 2 is recomputed exactly as §5.1 generates its synthetic data. Tables 3–8 use the Boston
housing data, which scikit-learn no longer ships: they run on 506 random rows (Boston's size) of
California housing instead, so only the trends (ratios, orderings) are compared, never the
absolute values.
"""
from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pandas as pd
from scipy.stats import kendalltau
from sklearn.metrics import mean_squared_error, ndcg_score

from ._data import load_raw
from .base import Row, Table

PAPER = "AcME (Dandolo et al.)"
Q = 50                      # AcME's quantiles in every experiment of the paper (§5.1)
N_ROWS = 506                # Boston's size: the California sample standing in for it

# §5.1: beta, and the means / variances of the two experiments
BETA = np.array([10, 20, -10, 0.3, 1, 0, 0, -0.5])
EXPERIMENTS = {1: (np.full(8, 10.0), np.full(8, 10.0)),
               2: (np.array([100, 10, 10, 10, 100, 10, 10, 100.0]),
                   np.array([100, 10, 10, 10, 100, 10, 10, 100.0]))}
TABLE2 = {1: 0.9998, 2: 0.9998}

# Tables 3-6: KernelSHAP seconds (all 506 rows explained); Kendall tau (full list, top 5) and the
# ranking the paper lists for each setting, against the full-background / default-coalition one
ACME_SECONDS = 0.36
TABLE3 = {5: 357.23, 10: 425.61, 20: 875.85, 100: 1855.65}
TABLE4 = {5: (0.231, 0.2, "RM,LSTAT,CRIM,DIS,PTRATIO,NOX,AGE,TAX,B,INDUS,RAD,ZN,CHAS"),
          10: (0.692, 0.0, "RM,LSTAT,CRIM,PTRATIO,DIS,NOX,AGE,TAX,B,INDUS,RAD,CHAS,ZN"),
          20: (0.103, -0.2, "TAX,AGE,B,ZN,LSTAT,INDUS,CRIM,RAD,PTRATIO,RM,DIS,CHAS,NOX"),
          100: (0.359, 0.8, "LSTAT,RM,CRIM,DIS,PTRATIO,NOX,AGE,TAX,B,INDUS,RAD,ZN,CHAS")}
TABLE5 = {10: 92.40, 25: 221.61, 50: 327.65, 100: 506.31}
TABLE6 = {10: (-0.05, -0.2, "LSTAT,RM,ZN,CRIM,INDUS,CHAS,NOX,DIS,AGE,PTRATIO,TAX,RAD,B"),
          25: (0.231, 0.06, "LSTAT,RM,DIS,CRIM,NOX,PTRATIO,AGE,B,TAX,INDUS,ZN,CHAS,RAD"),
          50: (0.359, 0.8, "LSTAT,RM,CRIM,DIS,PTRATIO,NOX,AGE,TAX,B,INDUS,RAD,ZN,CHAS"),
          100: (0.821, 0.6, "LSTAT,RM,DIS,CRIM,PTRATIO,NOX,AGE,TAX,B,INDUS,RAD,CHAS,ZN")}
REFERENCE_RANKING = "LSTAT,RM,DIS,NOX,PTRATIO,CRIM,AGE,TAX,B,INDUS,RAD,CHAS,ZN"

# Tables 7-8: MSE with all features / AcME's top 5 / the rest; seconds per method and model
TABLE7 = {"linear": (21.89, 26.01, 55.15), "random_forest": (1.54, 2.40, 4.42), "boosting": (0.52, 0.86, 3.80)}
TABLE8_KERNEL = {"linear": 3651.8556, "random_forest": 5639.9273, "boosting": 4578.0989, "svr": 12094.5632}
TABLE8_ACME = {"linear": 0.2610, "random_forest": 0.4107, "boosting": 0.9764, "svr": 1.5584}
TABLE8_TREE = {"random_forest": 4.7886, "boosting": 3.1525}

SPEED_TOL = "same order of magnitude: ours within x10 of the paper's ratio either way"
TREND_NOTE = "Boston (13 features) replaced by California (8): values are not comparable, ratios and trends are"


# ----------------------------------------------------------------------------- Table 2

def linear_experiment(experiment: int, seed: int, n: int = 200):
    """§5.1 data: X ~ N8(mu, diag(var)), y = X beta + eps, eps ~ N(0, 10) (eq. 4, N = 200)."""
    mu, var = EXPERIMENTS[experiment]
    rng = np.random.default_rng(seed)
    X = rng.normal(mu, np.sqrt(var), size=(n, 8))
    return X, X @ BETA + rng.normal(0.0, np.sqrt(10.0), size=n)


def _table2(quick: bool) -> list[Row]:
    """Mean NDCG of AcME's global ranking of a fitted linear model against |beta_j| * sd_j."""
    from sklearn.linear_model import LinearRegression

    from xai_plugins.acme import AcME

    draws = 10 if quick else 100
    rows = []
    for exp, paper in TABLE2.items():
        truth = np.abs(BETA) * np.sqrt(EXPERIMENTS[exp][1])
        scores = []
        for seed in range(draws):
            X, y = linear_experiment(exp, seed)
            imp = AcME(LinearRegression().fit(X, y), X, n_quantiles=Q).explain_global().total
            scores.append(ndcg_score(truth[None], imp[None]))
        ours = float(np.mean(scores))
        rows.append(Row({"experiment": exp, "draws": draws}, paper, ours, bool(abs(ours - paper) <= 5e-4),
                        "|ours - paper| <= 5e-4: with the top five features in order, any order of the three "
                        "with |beta| <= 0.3 moves NDCG by at most 4e-4",
                        f"NDCG min {min(scores):.5f} over the draws; sklearn's ndcg_score of the paper's own "
                        "listed rankings gives 0.99962 (exp. 1) and 0.99987 (exp. 2), the paper prints 0.9998"))
    return rows


# ----------------------------------------------------------------------------- California data

def california(n: int = N_ROWS, seed: int = 0):
    """``n`` random rows of California housing with no missing value: 8 numeric features, value in $100,000."""
    features, y = load_raw("housing")          # ocean_proximity (categorical) dropped
    keep = features.notna().all(axis=1).to_numpy()
    rows = np.random.default_rng(seed).choice(np.flatnonzero(keep), n, replace=False)
    return features.iloc[rows].reset_index(drop=True), y[rows] / 1e5


def _models():
    """The paper's Table 7-8 model types; XGBoost stands in for CatBoost (not installed here)."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR
    from xgboost import XGBRegressor

    return {"linear": LinearRegression(), "random_forest": RandomForestRegressor(100, random_state=0),
            "boosting": XGBRegressor(n_estimators=300, max_depth=6, learning_rate=0.1, random_state=0, n_jobs=1),
            "svr": make_pipeline(StandardScaler(), SVR())}


def _timed(fn, repeat: int = 1):
    """(result of the last call, best CPU seconds of the process over ``repeat`` calls).

    Every timed call here is single-threaded, so on a quiet machine its CPU time is its elapsed
    time; unlike the latter, it is not inflated by other jobs sharing the cores.
    """
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return out, best


def _acme_seconds(model, X) -> tuple[np.ndarray, float]:
    """AcME global importances (Q = 50) and the best of 3 timings of set-up + explanation."""
    from xai_plugins.acme import AcME

    return _timed(lambda: AcME(model, X, n_quantiles=Q).explain_global().total, repeat=3)


def _kernel_shap(model, background, rows, nsamples="auto", seed=0):
    """Mean |KernelSHAP| per feature over ``rows`` and the seconds per explained row."""
    import shap

    logging.getLogger("shap").setLevel(logging.ERROR)     # its "large background" hint, once per call
    np.random.seed(seed)          # KernelExplainer samples coalitions with numpy's global generator
    explainer = shap.KernelExplainer(lambda Z: model.predict(pd.DataFrame(Z, columns=rows.columns)),
                                     np.asarray(background))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, seconds = _timed(lambda: explainer.shap_values(np.asarray(rows), nsamples=nsamples, silent=True))
    return np.abs(values).mean(axis=0), seconds / len(rows)


def ranking_tau(reference, scores, top: int = 5) -> tuple[float, float]:
    """Kendall tau between two importance vectors: over all features, and over the reference's top ``top``."""
    head = np.argsort(-reference, kind="stable")[:top]
    return float(kendalltau(reference, scores)[0]), float(kendalltau(reference[head], scores[head])[0])


def listed_tau(ranking: str, reference: str = REFERENCE_RANKING) -> tuple[float, float]:
    """:func:`ranking_tau` of two rankings written as comma-separated names, most important first."""
    names = reference.split(",")
    order = ranking.split(",")
    return ranking_tau(-np.arange(len(names), dtype=float), -np.array([order.index(f) for f in names], float))


# ----------------------------------------------------------------------------- Tables 3-6

def _tau_rows(table, knob, paper_values, taus, draws):
    """Rows of Table 4 or 6: does the paper's tau lie within the spread of ours over the draws?"""
    rows = []
    for value, (paper_full, paper_top, listed) in paper_values.items():
        recomputed = listed_tau(listed)
        for k, (which, paper) in enumerate((("full", paper_full), ("top 5", paper_top))):
            ours = taus[value][:, k]
            lo, hi = float(np.nanmin(ours)), float(np.nanmax(ours))
            agrees = bool(lo <= paper <= hi)
            rows.append(Row({"table": table, knob: value, "tau": which}, paper, round(float(np.nanmedian(ours)), 3),
                            agrees, f"paper's value within [min, max] of our tau over {draws} draws (its figure is "
                            "one draw)",
                            f"ours ranges over [{lo:.3f}, {hi:.3f}]; the tau of the ranking the paper lists for this "
                            f"setting against its listed reference is {recomputed[k]:.3f}"
                            + ("" if abs(recomputed[k] - paper) < 5e-3 else f", not the printed {paper}")
                            + ("" if agrees else "; besides, California's 8 features are ranked more stably than "
                               "Boston's 13, whose middle six KernelSHAP scores about equally (§5.2.2)")))
    return rows


def _speed_row(table, setting, paper_ratio, ours_ratio, acme_paper, acme_ours, note):
    """Seconds of a method / seconds of AcME's global explanation, paper vs ours."""
    factor = acme_paper / acme_ours
    return Row({"table": table, **setting}, round(paper_ratio, 1), round(ours_ratio, 1),
               bool(0.1 <= ours_ratio / paper_ratio <= 10), SPEED_TOL,
               f"{TREND_NOTE}; ratio = seconds(method) / seconds(AcME global); {note}. "
               f"This AcME takes {acme_ours * 1e3:.1f} ms "
               f"vs the paper's {acme_paper} s ({factor:.0f}x faster: one predict call for all perturbed rows), "
               "which alone multiplies the ratio by that factor")


def _growth_row(table, knob, paper_times, our_times):
    """Trend of Table 3 or 5: KernelSHAP seconds at the largest setting / at the smallest."""
    lo, hi = min(paper_times), max(paper_times)
    paper, ours = paper_times[hi] / paper_times[lo], our_times[hi] / our_times[lo]
    return Row({"table": table, knob: f"{hi} / {lo}", "quantity": "KernelSHAP seconds growth"}, round(paper, 2),
               round(ours, 2), bool(ours > 1), "trend: agrees when > 1 (KernelSHAP's time grows with the setting, as "
               "in the paper)", TREND_NOTE + "; ratio = seconds(largest) / seconds(smallest)")


def _tables3_6(quick: bool) -> list[Row]:
    """KernelSHAP with a sampled background (Tables 3-4) or fewer coalitions (Tables 5-6) vs the full one."""
    from sklearn.ensemble import RandomForestRegressor

    X, y = california()
    model = RandomForestRegressor(100, random_state=0).fit(X, y)
    n_explained, draws = (10, 5) if quick else (50, 20)
    explained = X.sample(n_explained, random_state=1)
    acme_imp, acme_s = _acme_seconds(model, X)
    reference, ref_s = _kernel_shap(model, X, explained)
    taus_bg, taus_k, secs_bg, secs_k = {}, {}, {}, {}
    for n_bg in TABLE3:
        res = [_kernel_shap(model, X.sample(n_bg, random_state=100 + r), explained) for r in range(draws)]
        taus_bg[n_bg] = np.array([ranking_tau(reference, s) for s, _ in res])
        secs_bg[n_bg] = float(np.median([t for _, t in res]))
    for k in TABLE5:
        res = [_kernel_shap(model, X, explained, nsamples=k, seed=r) for r in range(draws)]
        taus_k[k] = np.array([ranking_tau(reference, s) for s, _ in res])
        secs_k[k] = float(np.median([t for _, t in res]))
    note = f"KernelSHAP timed on {n_explained} rows, x {N_ROWS} for all rows"
    rows = [_speed_row("3", {"background rows": n}, TABLE3[n] / ACME_SECONDS, secs_bg[n] * N_ROWS / acme_s,
                       ACME_SECONDS, acme_s, note) for n in TABLE3]
    rows.append(_growth_row("3", "background rows", TABLE3, secs_bg))
    rows += _tau_rows("4", "background rows", TABLE4, taus_bg, draws)
    rows += [_speed_row("5", {"coalitions": k}, TABLE5[k] / ACME_SECONDS, secs_k[k] * N_ROWS / acme_s,
                        ACME_SECONDS, acme_s, note) for k in TABLE5]
    rows.append(_growth_row("5", "coalitions", TABLE5, secs_k))
    rows += _tau_rows("6", "coalitions", TABLE6, taus_k, draws)
    full, top = ranking_tau(reference, acme_imp)
    rows.append(Row({"table": "extra", "tau": "AcME vs full KernelSHAP"}, None, round(full, 3), None, "n/a",
                    f"not in the paper (it compares rankings only by eye, Fig. 9); top-5 tau {top:.3f}; "
                    f"full KernelSHAP {ref_s:.2f} s per row"))
    return rows


# ----------------------------------------------------------------------------- Tables 7-8

def _table7_row(name, model, X, y, importance):
    """In-sample MSE with all features, AcME's top five, and the rest (the paper's Table 7 protocol)."""
    from sklearn.base import clone

    top = list(X.columns[np.argsort(-importance, kind="stable")[:5]])
    rest = [c for c in X.columns if c not in top]
    mse = [mean_squared_error(y, clone(model).fit(X[cols], y).predict(X[cols]))
           for cols in (list(X.columns), top, rest)]
    p_all, p_top, p_rest = TABLE7[name]
    ours = mse[2] / mse[1]
    return Row({"table": "7", "model": name, "ratio": "MSE(rest) / MSE(top 5)"}, round(p_rest / p_top, 3),
               round(ours, 3), bool(ours > 1),
               "trend: agrees when > 1 like the paper's (AcME's top five predict better than the other features)",
               f"{TREND_NOTE}; our in-sample MSE all / top 5 / rest: {mse[0]:.3f} / {mse[1]:.3f} / {mse[2]:.3f} "
               f"(paper {p_all} / {p_top} / {p_rest}; top 5 = {', '.join(top)})")


def _tables7_8(quick: bool) -> list[Row]:
    """Table 7 (feature selection by AcME's ranking) and Table 8 (seconds per explanation method)."""
    import shap

    X, y = california()
    n_explained = 2 if quick else 20
    explained = X.sample(n_explained, random_state=1)
    rows, speed = [], []
    for name, model in _models().items():
        model.fit(X, y)
        importance, acme_s = _acme_seconds(model, X)
        if name in TABLE7:
            rows.append(_table7_row(name, model, X, y, importance))
        _, kernel_row_s = _kernel_shap(model, X, explained)
        speed.append(_speed_row("8", {"model": name, "method": "KernelSHAP"}, TABLE8_KERNEL[name] / TABLE8_ACME[name],
                                kernel_row_s * N_ROWS / acme_s, TABLE8_ACME[name], acme_s,
                                f"KernelSHAP timed on {n_explained} rows, x {N_ROWS}"))
        if name in TABLE8_TREE:
            _, tree_s = _timed(lambda m=model: shap.TreeExplainer(m).shap_values(X))
            speed.append(_speed_row("8", {"model": name, "method": "TreeSHAP"}, TABLE8_TREE[name] / TABLE8_ACME[name],
                                    tree_s / acme_s, TABLE8_ACME[name], acme_s,
                                    f"TreeSHAP on all {N_ROWS} rows {tree_s:.2f} s (paper {TABLE8_TREE[name]} s)"))
    return rows + speed


CALIFORNIA_PROTOCOL = (
    f"Boston housing is not shipped by scikit-learn any more: {N_ROWS} random rows (seed 0) of California housing "
    "(../shared/datasets, 8 numeric features, ocean_proximity and rows with missing values dropped, target in "
    "$100,000) stand in for its 506 rows. Trends are compared, not values. AcME: paper variant, Q = 50, global "
    "explanation of the whole sample (set-up included, best of 3). KernelSHAP: shap.KernelExplainer, mean |SHAP| "
    "over explained rows ranks the features; its seconds per explained row are multiplied by 506 (the paper "
    "explains every row). With 8 features KernelSHAP's default budget (2,064) covers all 254 coalitions, so the "
    "full-background, default-coalition reference is exact here; Boston's 13 features made the paper's sampled. "
    "Times are CPU seconds of single-threaded calls (the paper's are elapsed seconds on a laptop).")

TABLES = [
    Table("acme-table2", PAPER, "Table 2: NDCG of AcME's ranking on the §5.1 synthetic linear data",
          "§5.1 exactly: N = 200 rows, X ~ N8(mu, Sigma) with the experiment's mu and diagonal Sigma, "
          "beta = [10, 20, -10, 0.3, 1, 0, 0, -0.5], noise N(0, 10) per row (the paper writes the noise as "
          "N_p(0, Sigma), a p-vector; we read it as one scalar with Sigma's variance 10), scikit-learn "
          "LinearRegression, AcME global importances with Q = 50, sklearn.metrics.ndcg_score against the true "
          "relevance |beta_j| * sd(x_j) (the paper's listed true ranking of exp. 2 puts x1 first, which only the "
          "scale-weighted |beta| does). Mean over 100 draws (seeds 0-99); quick: 10 draws.",
          _table2),
    Table("acme-tables3-6", PAPER, "Tables 3-6: KernelSHAP time and Kendall tau as background rows and coalitions grow",
          CALIFORNIA_PROTOCOL + " Model: RandomForestRegressor(100 trees, seed 0). Reference: KernelSHAP with all "
          "506 rows as background and default coalitions. Tables 3-4: background of 5/10/20/100 random rows; "
          "Tables 5-6: full background, nsamples = 10/25/50/100 coalitions. Kendall tau (scipy) of the mean |SHAP| "
          "vectors against the reference, over all features and over the reference's top 5. Full: 50 explained "
          "rows, 20 draws per setting; quick: 10 rows, 5 draws. Times are medians over the draws; AcME's paper "
          "time is 0.36 s.",
          _tables3_6),
    Table("acme-tables7-8", PAPER, "Tables 7-8: MSE with AcME's top five features; seconds per explanation method",
          CALIFORNIA_PROTOCOL + " Models: LinearRegression, RandomForestRegressor(100, seed 0), XGBoost (300 trees, "
          "depth 6; CatBoost is not installed) and StandardScaler + SVR. Table 7: in-sample MSE on the 506 rows "
          "(the paper's are in-sample too: 21.89 is OLS's in-sample MSE on all of Boston) of the model refitted "
          "on all features, on AcME's top five, on the rest. Table 8: seconds of KernelSHAP (default coalitions, "
          "all 506 rows as background; full: timed on 20 rows, quick: 2) and TreeSHAP (all rows) divided by "
          "AcME's.",
          _tables7_8),
]
