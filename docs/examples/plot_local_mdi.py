"""
Local MDI: decomposing a forest's impurity importance into rows
===============================================================

The mean decrease in impurity (MDI, scikit-learn's ``feature_importances_``) is the most common
global importance of a random forest, but it says nothing about individual rows. **Local MDI**
(Sutera et al.) follows each row down every tree and credits each split feature with the impurity
decrease between the node and the child the row follows. Averaged over the training rows it gives
back the forest's global MDI exactly (for a forest grown without bootstrap), so the global number a
model card quotes can be broken down by row, by segment or by outcome, at the cost of less than one
``predict`` of the forest.

This example checks the identity on a bootstrap-free random forest fitted on the diabetes data,
then draws the per-row importances as a shap beeswarm through
:class:`xai_plugins.shap.LocalMDIExplainer`.
"""

# %%
# A bootstrap-free random forest
# ------------------------------
# ``bootstrap=False``: every tree is grown on every training row, so the mean local MDI over the
# training rows equals the forest's MDI. ``max_features=0.5`` keeps the trees different.
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shap
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins.shap import LocalMDIExplainer, label_plot

X, y = load_diabetes(return_X_y=True, as_frame=True)
rf = RandomForestRegressor(n_estimators=100, max_features=0.5, min_samples_leaf=5, bootstrap=False, random_state=0,
                           n_jobs=1).fit(X, y)

# %%
# Local and global MDI
# --------------------
# :func:`~xai_plugins.local_mdi` gives one row per sample, one column per feature, in the variance
# units of the target (disease progression²). :func:`~xai_plugins.global_mdi` gives the mean over the
# rows (correctly rounded); without ``X`` it is computed from the trees alone, as scikit-learn does.
local = xp.local_mdi(rf, X)                                          # (442, 10)
global_from_rows = xp.global_mdi(rf, X)
global_from_trees = xp.global_mdi(rf)
sklearn_mdi = np.mean([t.tree_.compute_feature_importances(normalize=False) for t in rf.estimators_], axis=0)
print(local.shape)
print("mean of local MDI == global MDI over the rows:", np.allclose(local.mean(axis=0), global_from_rows))
print("== global MDI from the trees:", np.allclose(global_from_rows, global_from_trees))
print("== scikit-learn's unnormalised MDI:", np.allclose(global_from_trees, sklearn_mdi))

# %%
# Note that ``rf.feature_importances_`` normalises each tree's importances *before* averaging over
# the trees, so it is close to, but not exactly, the normalised global MDI:
comparison = pd.DataFrame({"global MDI / sum": global_from_rows / global_from_rows.sum(),
                           "feature_importances_": rf.feature_importances_}, index=X.columns)
print(comparison.round(4).T.to_string())

# %%
# A bar chart of both: the global MDI of the trees, and the mean of the 442 rows' local MDI with the
# spread of the rows (10th to 90th percentile) around it.
order = np.argsort(global_from_trees)
spread = np.percentile(local, [10, 90], axis=0)
fig, ax = plt.subplots(figsize=(7, 4))
positions = np.arange(X.shape[1])
ax.barh(positions - 0.2, global_from_trees[order], 0.4, label="global MDI (from the trees)", color="#7f7f7f")
ax.barh(positions + 0.2, local.mean(axis=0)[order], 0.4, label="mean local MDI over the rows", color="#2ca02c")
ax.errorbar(local.mean(axis=0)[order], positions + 0.2,
            xerr=np.abs(spread[:, order] - local.mean(axis=0)[order]), fmt="none", ecolor="k", elinewidth=0.8,
            capsize=2, label="rows' 10th–90th percentile")
ax.set_yticks(positions, X.columns[order])
ax.set_xlabel("impurity decrease (disease progression²)")
ax.set_title("Global MDI = mean of local MDI (bootstrap-free forest)")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()

# %%
# Breaking the global number down
# -------------------------------
# Because the identity is exact, a segment's share of the global MDI is the sum of its rows' local
# MDI. For example, how much of ``bmi``'s importance comes from the rows with a high target?
high = y.to_numpy() > np.median(y)
share = local[high].sum(axis=0) / local.sum(axis=0)
print(pd.Series(share, index=X.columns).round(2).sort_values(ascending=False).to_string())

# %%
# A beeswarm of the per-row importances
# -------------------------------------
# :class:`~xai_plugins.shap.LocalMDIExplainer` wraps the same computation in a ``shap.Explanation``,
# so shap's plots draw it (local MDI is an importance, not an additive contribution: ``label_plot``
# replaces shap's "SHAP value" axis label).
explanation = LocalMDIExplainer(rf)(X)
print(np.array_equal(explanation.values, local))
shap.plots.beeswarm(explanation, max_display=10, show=False)
label_plot(explanation)
plt.title("Local MDI per row (colour: the feature's value)")
plt.tight_layout()

# %%
# For a bootstrap forest the mean over the data is *not* the forest's MDI, and the package says so;
# ``global_mdi(rf, X_train, in_bag=True)`` weights each tree by its own bootstrap sample instead.
rf_bootstrap = RandomForestRegressor(n_estimators=30, min_samples_leaf=5, random_state=0, n_jobs=1).fit(X, y)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    plain_mean = xp.global_mdi(rf_bootstrap, X)
print([str(w.message)[:100] + "..." for w in caught])
print("in_bag=True restores the identity:",
      np.allclose(xp.global_mdi(rf_bootstrap, X, in_bag=True), xp.global_mdi(rf_bootstrap)))
