"""RF-MCR: model class reliance of a bootstrap-free random forest over its Rashomon set."""

from __future__ import annotations

import warnings
from typing import cast

import pandas as pd

from ...forest import explained_model, library_of
from . import Explainer, MethodResult, NotApplicable, register

__all__: list[str] = []      # internal module: the public names are in the API reference

#: RandomForest / ExtraTrees classes whose bootstrap=False fit MCR applies to
MCR_MODELS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")


@register
class ModelClassReliance(Explainer):
    """RF-MCR on the training data: the model's reliance on each feature (the global importance) and
    its range over the Rashomon set (``extras["table"]``, shown by the MCR section)."""

    key, label, caption = "mcr", "MCR", "model reliance"
    explains = "the model's loss when a feature is scrambled"
    in_importance_bars = False

    def cost(self, ctx, options, costs):
        """The permutations of every feature over the data, when the model is a forest it refits or one without
        bootstrap."""
        if self.ranks(ctx, options):
            return [options.mcr_permutations * ctx.n_features * costs.data_rows * costs.per_sample]
        return []

    def ranks(self, ctx, options):
        """With the training data, on a forest it can assess (or refits)."""
        return ctx.X_train is not None and ctx.y_train is not None and (
            options.mcr_fit_forest or _model_unfit(ctx)[0] is None)

    def run(self, ctx, rows, options):
        """RF-MCR with the audit's permutations and tolerance."""
        return model_class_reliance_result(ctx, n_permutations=options.mcr_permutations, epsilon=options.mcr_epsilon,
                                           fit_forest=options.mcr_fit_forest)


def model_class_reliance_result(ctx, *, n_permutations: int, epsilon: float = 0.0,
            fit_forest: bool = False) -> MethodResult:
    """Model class reliance of a bootstrap=False RandomForest / ExtraTrees (alone, or at the end of a
    scikit-learn Pipeline, assessed in its input columns) on the training data, over its ε-Rashomon set
    (``epsilon``: see :func:`~xai_plugins.mcr.model_class_reliance`).

    Any other model is "not applicable", unless ``fit_forest``: then a 100-tree Rashomon forest
    (:func:`~xai_plugins.mcr.fit_rashomon_forest`) is fitted on the same training data and its
    ranges are reported, labelled as such in ``params["forest"]``."""
    from ...mcr import fit_rashomon_forest, model_class_reliance

    if ctx.X_train is None or ctx.y_train is None:
        raise NotApplicable("RF-MCR needs the training data (X_train and y_train)")
    reason, name = _model_unfit(ctx)
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
    columns = ["mcr_minus", "model_reliance", "mcr_plus"]
    table = cast(pd.DataFrame, res.table).loc[ctx.feature_names, columns].astype(float)
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


def _model_unfit(ctx) -> tuple:
    """(why RF-MCR cannot assess the audited model itself, or None; the model in words): it needs a scikit-learn
    RandomForest or ExtraTrees grown with ``bootstrap=False``, alone or at the end of a Pipeline."""
    inner = explained_model(ctx.model)[0]              # a Pipeline's final model; any other model itself
    name = type(inner).__name__ if inner is ctx.model else f"a Pipeline ending in {type(inner).__name__}"
    if type(inner).__name__ not in MCR_MODELS or library_of(inner) != "sklearn":
        return f"RF-MCR needs a scikit-learn RandomForest or ExtraTrees; this model is {name}", name
    if inner.bootstrap:
        return "RF-MCR needs a forest grown with bootstrap=False; this one used bootstrap samples", name
    return None, name
