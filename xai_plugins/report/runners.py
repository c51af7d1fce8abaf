"""Run each explainer of the audit on the shared row samples and keep comparable results.

Every method explains the same scalar output (:attr:`AuditContext.output_label`). A method returns
a :class:`MethodResult` with a global importance per feature and, for per-row methods, scores per
explained row (higher = more important) and the row's feature ranking, which the faithfulness and
agreement sections consume. A method that cannot run says why (``status`` and ``reason``) instead
of disappearing from the report.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..acme import AcME
from ..attributions import greedy_gains
from ..forest import UnsupportedModelError, library_of
from ..mdi import local_mdi
from ..prediction_gap import greedy_pg2_ranking
from ..ranking_faithfulness import rank_by_magnitude
from . import figures
from .context import AuditContext

#: explainer key -> label used in tables and figures
LABELS = {"shap": "SHAP", "pg2": "PG² greedy", "local_mdi": "local MDI", "acme": "AcME",
          "dt_sampler": "DT-Sampler", "mcr": "MCR"}
EXPLAINERS = tuple(LABELS)
#: RandomForest / ExtraTrees classes whose bootstrap=False fit MCR applies to
MCR_MODELS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")


class NotApplicable(Exception):
    """The method does not apply to this model or task; the message says why."""


@dataclass
class MethodResult:
    """One explainer's output. ``status``: "ok", "not applicable", "skipped" or "failed".

    ``importance``: global importance per feature (pandas Series, higher = more important);
    ``local_scores`` (n_rows, d) per explained row, higher = more important; ``ranking`` (n_rows, d)
    feature order per row used for PGI²; ``params`` the settings used; ``figures`` its plots.
    """

    key: str
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    importance: pd.Series | None = None
    local_scores: np.ndarray | None = None
    ranking: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    extras: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Display name of the method."""
        return LABELS[self.key]

    def to_dict(self) -> dict:
        """JSON-ready summary (global importances, parameters, status; no per-row arrays)."""
        return {"method": self.label, "status": self.status, "reason": self.reason, "seconds": self.seconds,
                "params": self.params,
                "importance": None if self.importance is None else self.importance.to_dict(),
                "figures": [f.to_dict() for f in self.figures]}


def _local(values) -> tuple[np.ndarray, np.ndarray]:
    """Per-row scores |value| and the ranking by them (ties: lower feature index first)."""
    values = np.asarray(values, dtype=float)
    return np.abs(values), rank_by_magnitude(values)


def run_shap(ctx: AuditContext, rows: np.ndarray, shap_rows: np.ndarray, local_rows: list) -> MethodResult:
    """TreeSHAP on ``shap_rows``: global mean |SHAP|; per-row |SHAP| on ``rows``; waterfall plots."""
    import shap

    explainer = shap.TreeExplainer(ctx.model)
    explanation = explainer(ctx.model_input(ctx.X_test.to_numpy()[shap_rows]))
    per_class = None
    if explanation.values.ndim == 3:
        if explanation.values.shape[2] > 2 and len(ctx.classes) == explanation.values.shape[2]:
            per_class = pd.DataFrame(np.abs(explanation.values).mean(axis=0), index=ctx.feature_names,
                                     columns=[str(c) for c in ctx.classes])
        explanation = explanation[..., ctx.output]
    values = np.asarray(explanation.values, dtype=float)
    importance = pd.Series(np.abs(values).mean(axis=0), index=ctx.feature_names)
    position = np.searchsorted(shap_rows, rows)
    scores, ranking = _local(values[position])
    result = MethodResult("shap", importance=importance, local_scores=scores, ranking=ranking,
                          params={"rows": len(shap_rows), "algorithm": "TreeSHAP; absent features follow "
                                  "the training data's paths through the trees (no background sample)"})
    if per_class is not None:
        result.extras["per class"] = per_class
    for row in local_rows:
        result.figures.append(shap_figure(ctx, ctx.row_label(row), explanation[int(np.searchsorted(shap_rows, row))]))
    return result


def shap_figure(ctx: AuditContext, label: str, row_explanation):
    """The SHAP waterfall figure of one test row (``row_explanation``: its shap.Explanation)."""
    return figures.pyplot_drawn(
        f"SHAP waterfall of test row {label}: contributions to {ctx.output_label}, from the mean "
        f"over the training data to this row's value.",
        lambda ax: _waterfall(row_explanation), scale=0.6)


def acme_figure(ctx: AuditContext, label: str, local, i: int):
    """The AcME what-if figure of row ``i`` of the in-memory AcMELocal ``local`` (test row ``label``)."""
    return figures.pyplot_drawn(
        f"AcME what-if of test row {label}: {ctx.output_label} when one feature at a time is set "
        f"to each quantile of its background distribution (large marker: the row's own value; dashed: its "
        f"prediction).",
        lambda ax: figures.legend_outside(local.plot(row=i, ax=ax), title=f"AcME what-if, test row {label}",
                                          below=True),
        width=6.0, height=0.16 * min(ctx.n_features, 30) + 1.4)


def _waterfall(explanation) -> None:
    """shap's waterfall plot on pyplot's current figure (shap sizes the figure itself, with large type),
    its x range widened by 8 % on each side so the values printed at the ends of the bars are not cut
    (shap's twin axes for f(x) and E[f(X)] share the main axis' limits, so all get the same)."""
    import matplotlib.pyplot as plt
    import shap

    shap.plots.waterfall(explanation, max_display=10, show=False)
    axes = plt.gcf().axes
    lo, hi = axes[0].get_xlim()
    pad = 0.08 * (hi - lo)
    for ax in axes:
        if ax.get_xlim() == (lo, hi):
            ax.set_xlim(lo - pad, hi + pad)


def extremes_first(order, n_local: int) -> list:
    """``n_local`` distinct items of ``order`` (sorted by the explained output, ascending), taken
    from the top and the bottom alternately: the highest, the lowest, the second highest, ..."""
    picks = []
    for i in range(len(order)):
        candidate = int(order[-1 - i // 2] if i % 2 == 0 else order[i // 2])
        if candidate not in picks:
            picks.append(candidate)
        if len(picks) == min(n_local, len(order)):
            break
    return picks


def run_pg2(ctx: AuditContext, rows: np.ndarray, sigma, sigma_label: float | None = None) -> MethodResult:
    """Greedy PG² ranking at ``sigma`` (a scalar or one σ per feature) on ``rows``: per-row gains
    (the increase of PG² when the feature joins the perturbed set; ``extras["per_row"]``) and the
    greedy order itself as the ranking. ``sigma_label``: the σ named in the parameters."""
    X = ctx.X_test.to_numpy()[rows]
    output = ctx.output if ctx.forest.n_outputs > 1 else None
    greedy = greedy_pg2_ranking(ctx.forest, X, sigma=sigma, background=ctx.background, output=output,
                                verbose=ctx.progress)
    ranking = greedy.ranking
    gains = greedy_gains(ranking, greedy.pg2_path)
    position = np.empty_like(ranking)
    np.put_along_axis(position, ranking, np.arange(ctx.n_features)[None, :], axis=1)
    result = MethodResult("pg2", importance=pd.Series(gains.mean(axis=0), index=ctx.feature_names),
                          local_scores=-position.astype(float), ranking=ranking,
                          params={"rows": len(rows), "σ (training standard deviations)":
                                  sigma if sigma_label is None else sigma_label})
    result.extras["per_row"] = gains
    return result


def run_local_mdi(ctx: AuditContext, rows: np.ndarray) -> MethodResult:
    """Local MDI on every test row (global = mean over the test set) and on ``rows``."""
    try:
        values = local_mdi(ctx.model, ctx.X_test.to_numpy())
    except UnsupportedModelError as exc:
        raise NotApplicable(str(exc)) from exc
    scores, ranking = _local(values[rows])
    return MethodResult("local_mdi", importance=pd.Series(values.mean(axis=0), index=ctx.feature_names),
                        local_scores=scores, ranking=ranking, params={"rows": len(ctx.X_test)})


def run_acme(ctx: AuditContext, rows: np.ndarray, local_rows: list, n_quantiles: int) -> MethodResult:
    """AcME on the explained output: global importances over the background's quantile grid and
    local importances / what-if curves of ``rows``."""
    background = acme_background(ctx)
    acme = AcME(None, background, n_quantiles=n_quantiles, score_function=ctx.score)
    global_ = acme.explain_global()
    local = acme.explain_local(ctx.X_test.iloc[rows])
    scores, ranking = _local(local.values)
    result = MethodResult("acme", importance=pd.Series(global_.values, index=ctx.feature_names),
                          local_scores=scores, ranking=ranking,
                          params={"quantile grid points": n_quantiles, "rows": len(rows),
                                  "background rows": _background_rows(ctx, background)})
    for row in local_rows:
        result.figures.append(acme_figure(ctx, ctx.row_label(row), local, int(np.searchsorted(rows, row))))
    return result


def acme_background(ctx: AuditContext) -> pd.DataFrame:
    """AcME's background: the complete rows of the training data (else of the test data). AcME's
    quantile grid needs values in every column, while tree models (LightGBM, XGBoost, scikit-learn
    ≥ 1.3) accept missing values, so rows with one are left out."""
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    complete = source.dropna()
    if complete.empty:
        raise NotApplicable("every background row has a missing value; AcME's quantile grid needs complete rows")
    return complete


def _background_rows(ctx: AuditContext, background) -> str:
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    left_out = len(source) - len(background)
    return f"{len(background)}" + (f" ({left_out} with missing values left out)" if left_out else "")


def run_dt_sampler(ctx: AuditContext, *, n_rows: int, n_features: int, n_branch_nodes: int, n_samples: int,
                   time_budget: float) -> MethodResult:
    """DT-Sampler on the model's own predicted classes of ``n_rows`` rows, restricted to the
    ``n_features`` features the model splits on most among those that vary on these rows
    (classification only)."""
    from ..dt_sampler import DTSampler
    from ..dt_sampler.samplers import UnsatisfiableError

    if ctx.task != "classification":
        raise NotApplicable("DT-Sampler samples small classification trees; this is a regression model")
    source = ctx.X_train if ctx.X_train is not None else ctx.X_test
    rows = np.sort(ctx.rng("dt_sampler rows").permutation(len(source))[:n_rows])
    X = source.iloc[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        labels = np.asarray(ctx.model.predict(ctx.model_input(X.to_numpy()))) == ctx.positive_class
    if labels.all() or not labels.any():
        raise NotApplicable(f"the model predicts one class on all {len(rows)} sampled rows")
    split_counts = np.bincount(ctx.forest.feature[ctx.forest.left_child >= 0], minlength=ctx.n_features)
    # a feature constant on the sampled rows admits no test (its emergence is 0): choose among the others
    varies = np.ptp(X.to_numpy(dtype=float), axis=0) > 0
    if not varies.any():
        raise NotApplicable(f"every feature is constant on the {len(rows)} sampled rows")
    candidates = np.flatnonzero(varies)
    keep = np.sort(candidates[np.argsort(-split_counts[candidates], kind="stable")[:n_features]])
    columns = [ctx.feature_names[j] for j in keep]
    last_error = None
    for min_accuracy in (0.9, 0.8, 0.7):
        sampler = DTSampler(n_branch_nodes=n_branch_nodes, min_accuracy=min_accuracy, n_samples=n_samples,
                            random_state=ctx.seed_int("dt_sampler"), time_budget=time_budget, progress=False)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sampler.fit(X[columns], labels.astype(int))
            break
        except UnsatisfiableError as exc:
            last_error = exc
    else:
        raise NotApplicable(f"no small tree reaches 70% accuracy on the model's predictions ({last_error})")
    probability = sampler.emergence_probability_["probability"]
    importance = pd.Series(0.0, index=ctx.feature_names)
    importance[columns] = probability.to_numpy()
    result = MethodResult("dt_sampler", importance=importance,
                          params={"rows": len(rows), "features": len(columns), "branch nodes": n_branch_nodes,
                                  "trees sampled": len(sampler.trees_), "accuracy of every tree at least":
                                  sampler.min_accuracy})
    if not varies.all():
        result.params["constant on the sampled rows (emergence 0)"] = ", ".join(
            ctx.feature_names[j] for j in np.flatnonzero(~varies))
    result.extras["features"] = columns

    def draw(ax):
        sampler.plot(ax=ax)
        figures.legend_outside(ax, {"min_accuracy = 0": "level with no accuracy constraint"})

    result.figures.append(figures.drawn(
        f"DT-Sampler emergence probability: share of branch nodes testing each feature among "
        f"{len(sampler.trees_)} near-uniformly sampled trees with {n_branch_nodes} branch nodes that reproduce "
        f"the model's predicted class on at least {sampler.min_accuracy:.0%} of {len(rows)} rows (bars: 95% "
        f"intervals over the sampled trees; ticks: the level with no accuracy constraint).", draw,
        width=6.5, height=0.3 * len(columns) + 1.3))
    return result


def run_mcr(ctx: AuditContext, *, n_permutations: int, epsilon: float = 0.0,
            fit_forest: bool = False) -> MethodResult:
    """Model class reliance of a bootstrap=False RandomForest / ExtraTrees on the training data,
    over its ε-Rashomon set (``epsilon``: see :func:`~xai_plugins.mcr.model_class_reliance`).

    Any other model is "not applicable", unless ``fit_forest``: then a 100-tree Rashomon forest
    (:func:`~xai_plugins.mcr.fit_rashomon_forest`) is fitted on the same training data and its
    ranges are reported, labelled as such in ``params["forest"]``."""
    from ..mcr import fit_rashomon_forest, model_class_reliance

    if ctx.X_train is None or ctx.y_train is None:
        raise NotApplicable("RF-MCR needs the training data (X_train and y_train)")
    name = type(ctx.model).__name__
    if name not in MCR_MODELS or library_of(ctx.model) != "sklearn":
        reason = f"RF-MCR needs a scikit-learn RandomForest or ExtraTrees; this model is {name}"
    elif ctx.model.bootstrap:
        reason = "RF-MCR needs a forest grown with bootstrap=False; this one used bootstrap samples"
    else:
        reason = None
    if reason is None:
        X_train, forest, origin = ctx.model_input(ctx.X_train.to_numpy()), ctx.model, "the audited model"
    elif fit_forest:
        X_train = ctx.X_train
        forest = fit_rashomon_forest(X_train, ctx.y_train, task=ctx.task, n_estimators=100,
                                     random_state=ctx.seed_int("mcr forest"))
        origin = (f"a 100-tree random forest without bootstrap samples, fitted on the training data for this audit "
                  f"({reason}; the ranges describe that forest's Rashomon set, not the audited model)")
    else:
        raise NotApplicable(reason + " (the option to fit a Rashomon forest on the same data — --mcr-fit-forest, or "
                            "mcr_fit_forest=True in Python — reports that forest's ranges instead)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = model_class_reliance(forest, X_train, ctx.y_train, n_permutations=n_permutations, epsilon=epsilon,
                                   random_state=ctx.seed_int("mcr"), progress=False)
    table = res.table.loc[ctx.feature_names, ["mcr_minus", "model_reliance", "mcr_plus"]].astype(float)
    params = {"forest": origin, "permutations per feature": n_permutations, "training rows": len(ctx.X_train),
              "reliance": reliance_unit(res.loss, res.reliance), "Rashomon tolerance ε": res.epsilon}
    result = MethodResult("mcr", importance=table["model_reliance"].copy(), params=params)
    result.extras.update({"table": table, "result": res})
    return result


def reliance_unit(loss, reliance: str) -> str:
    """What RF-MCR's reliance numbers measure, in words (``loss`` and ``reliance`` as
    :func:`~xai_plugins.mcr.model_class_reliance` names them)."""
    loss = {"zero_one": "misclassification rate", "log_loss": "log-loss", "squared_error": "mean squared error",
            "absolute_error": "mean absolute error"}.get(str(loss), f"loss ({loss})")
    if reliance == "ratio":
        return f"{loss} with the feature scrambled divided by the {loss} without"
    return f"increase in {loss} when the feature is scrambled"


def run(key: str, fn, *args, **kwargs) -> MethodResult:
    """Call ``fn``, timing it and turning :class:`NotApplicable` / any error into a status."""
    start = time.perf_counter()
    try:
        result = fn(*args, **kwargs)
    except NotApplicable as exc:
        result = MethodResult(key, status="not applicable", reason=str(exc))
    except Exception as exc:  # noqa: BLE001 - the report states the failure instead of aborting
        result = MethodResult(key, status="failed", reason=f"{type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - start
    return result
