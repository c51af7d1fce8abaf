"""Model card, data summary and reproducibility facts of an audit (no explainer involved)."""

from __future__ import annotations

import hashlib
import platform
import warnings
from importlib import metadata

import numpy as np
import pandas as pd
from sklearn import metrics

from ..forest import library_of
from ..perturbation import category_atoms

__all__: list[str] = []      # internal module: the public names are in the API reference

PACKAGES = ("xai_plugins", "numpy", "scipy", "pandas", "scikit-learn", "xgboost", "lightgbm", "shap", "matplotlib",
            "jinja2", "weasyprint", "fairlearn", "python-sat", "pyunigen")


def model_card(ctx) -> dict:
    """Model type, size, task, explained output and data sizes."""
    f = ctx.forest
    leaves_per_tree = f.n_leaves / f.n_trees
    card = {"model type": f.model_type, "task": f.task, "explained output": ctx.output_label,
            "trees": f.n_trees, "maximum depth": f.max_depth, "leaves": f.n_leaves,
            "mean leaves per tree": round(leaves_per_tree, 1), "features": ctx.n_features,
            "features used in splits": int(f.split_features.sum()),
            "training rows": "not given" if ctx.X_train is None else len(ctx.X_train), "test rows": len(ctx.X_test)}
    if library_of(ctx.model) == "sklearn" and hasattr(ctx.model, "bootstrap"):
        card["bootstrap"] = bool(ctx.model.bootstrap)
    return card


#: why a ROC AUC of the performance table is missing (NaN)
NO_ROC_AUC = ("ROC AUC is not computed (–) on data lacking the explained class or the other class (a multi-class "
              "model: any class): it measures how well the predicted probabilities rank rows of one class above the "
              "others")


def performance(ctx) -> pd.DataFrame:
    """Test (and training) metrics: R², RMSE, MAE for regression; accuracy, balanced accuracy,
    ROC AUC and log-loss for classification (ROC AUC of the positive class against the others for
    a binary model, the one-vs-rest macro average over classes for a multi-class one; NaN where the
    rows lack a class, see :data:`NO_ROC_AUC`)."""
    frames = {"test": (ctx.X_test, ctx.y_test), "training": (ctx.X_train, ctx.y_train)}
    rows = {}
    for name, (X, y) in frames.items():
        if X is None or y is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            rows[name] = _metrics(ctx, ctx.model_input(X.to_numpy()), y)
    return pd.DataFrame(rows)


def _metrics(ctx, X, y) -> dict:
    predicted = np.asarray(ctx.model.predict(X))
    if ctx.task == "regression":
        return {"R²": metrics.r2_score(y, predicted), "RMSE": float(np.sqrt(metrics.mean_squared_error(y, predicted))),
                "MAE": metrics.mean_absolute_error(y, predicted)}
    out = {"accuracy": metrics.accuracy_score(y, predicted),
           "balanced accuracy": metrics.balanced_accuracy_score(y, predicted)}
    if hasattr(ctx.model, "predict_proba"):
        proba = np.asarray(ctx.model.predict_proba(X))
        classes = list(ctx.model.classes_)
        if len(classes) > 2:
            present = np.isin(classes, np.unique(y))
            out["ROC AUC (one-vs-rest, macro)"] = (metrics.roc_auc_score(y, proba, multi_class="ovr", labels=classes)
                                                   if present.all() else np.nan)
        else:
            target = np.asarray(y) == ctx.positive_class
            out[f"ROC AUC (class {ctx.positive_class})"] = (
                metrics.roc_auc_score(target, proba[:, classes.index(ctx.positive_class)])
                if 0 < target.sum() < len(target) else np.nan)
        out["log-loss"] = metrics.log_loss(y, proba, labels=classes)
    return out


def per_class(ctx, most: int = 10) -> tuple[pd.DataFrame, str]:
    """Per-class test metrics of a classifier (precision, recall, F1, support, one-vs-rest ROC AUC),
    for every class, or the ``most`` most frequent test classes when there are more; and a note
    saying which classes are shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = ctx.model_input(ctx.X_test.to_numpy())
        predicted = np.asarray(ctx.model.predict(X))
        proba = np.asarray(ctx.model.predict_proba(X)) if hasattr(ctx.model, "predict_proba") else None
    classes = list(ctx.classes)
    y = np.asarray(ctx.y_test)
    precision, recall, f1, support = metrics.precision_recall_fscore_support(y, predicted, labels=classes,
                                                                             zero_division=0)
    table = pd.DataFrame({"precision": precision, "recall": recall, "F1": f1, "test rows": support.astype(int)},
                         index=pd.Index([str(c) for c in classes], name="class"))
    if proba is not None:
        table["ROC AUC (one-vs-rest)"] = [metrics.roc_auc_score(y == c, proba[:, j]) if 0 < (y == c).sum() < len(y)
                                          else np.nan for j, c in enumerate(classes)]
    table = table.sort_values("test rows", ascending=False, kind="stable")
    note = f"every class ({len(classes)})"
    if len(table) > most:
        note = f"the {most} most frequent of {len(classes)} classes"
        table = table.head(most)
    return table, note


def data_summary(ctx) -> pd.DataFrame:
    """Per numeric feature: test-set mean, sd, min, quartiles, max and missing values (plus the training
    mean and missing count when training data is given); categorical features are in :func:`category_counts`."""
    X = ctx.X_test.loc[:, ~ctx.categorical]
    table = pd.DataFrame({"mean": X.mean(), "sd": X.std(), "min": X.min(), "25%": X.quantile(0.25),
                          "median": X.median(), "75%": X.quantile(0.75), "max": X.max(),
                          "missing": X.isna().sum().astype(int)})
    if ctx.X_train is not None:
        table["train mean"] = ctx.X_train.loc[:, ~ctx.categorical].mean()
        table["train missing"] = ctx.X_train.loc[:, ~ctx.categorical].isna().sum().astype(int)
    table.index.name = "feature"
    return table


def category_counts(ctx) -> pd.DataFrame:
    """Per categorical feature and category: the test rows in it and their share (and the training rows and
    share when training data is given); unseen categories (codes the model does not know) and missing values
    get a row each when some row has one."""
    frames = {"test": ctx.X_test} if ctx.X_train is None else {"test": ctx.X_test, "training": ctx.X_train}
    records = []
    for j in np.flatnonzero(ctx.categorical):
        k = int(ctx.forest.n_categories[j])
        counts = {name: np.bincount(category_atoms(X.iloc[:, j].to_numpy(dtype=float), k), minlength=k + 2)
                  for name, X in frames.items()}
        labels = ctx.categories(j) + ["(unseen category)", "(missing)"]
        for atom, label in enumerate(labels):
            if atom >= k and not any(c[atom] for c in counts.values()):
                continue
            record = {"feature": ctx.feature_names[j], "category": label}
            for name, c in counts.items():
                record.update({f"{name} rows": int(c[atom]), f"{name} share": c[atom] / max(c.sum(), 1)})
            records.append(record)
    return pd.DataFrame.from_records(records).set_index(["feature", "category"]) if records else pd.DataFrame()


def target_summary(ctx) -> dict:
    """Target distribution: class counts (classification) or mean/sd/range (regression)."""
    out = {}
    for name, y in (("test", ctx.y_test), ("training", ctx.y_train)):
        if y is None:
            continue
        if ctx.task == "classification":
            values, counts = np.unique(y, return_counts=True)
            out[name] = ", ".join(f"{v}: {c}" for v, c in zip(values, counts))
        else:
            out[name] = f"mean {np.mean(y):.4g}, sd {np.std(y, ddof=1):.4g}, range [{np.min(y):.4g}, {np.max(y):.4g}]"
    return out


def sha256_of_data(X: pd.DataFrame | None, y=None) -> str:
    """sha256 of the column names, float64 values (C order) and target of a dataset."""
    if X is None:
        return "not given"
    digest = hashlib.sha256("\x1f".join(map(str, X.columns)).encode())
    digest.update(np.ascontiguousarray(X.to_numpy(dtype=np.float64)).tobytes())
    if y is not None:
        digest.update(np.asarray(y).astype(str).astype("U").tobytes())
    return digest.hexdigest()


def sha256_of_model(forest) -> str:
    """sha256 of the imported tree arrays (structure, thresholds, leaf values, base score):
    identical for the same fitted trees whatever the library's file format."""
    digest = hashlib.sha256()
    for name in ("left_child", "right_child", "feature", "threshold", "missing_left", "value", "tree_offset",
                 "tree_target", "base_score"):
        digest.update(np.ascontiguousarray(getattr(forest, name)).tobytes())
    return digest.hexdigest()


def versions() -> dict:
    """Python, platform and installed versions of the packages the audit used."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
