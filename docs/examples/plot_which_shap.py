"""
Which SHAP? Five attributions scored by exact PGI²
==================================================

On an XGBoost model with two correlated features, the package's path-dependent and interventional TreeSHAP,
shap's ``TreeExplainer`` and XGBoost's ``pred_contribs`` are computed on the same rows and scored by the
exact PGI² of their rankings (higher: the model moves more when the features they call important are
perturbed).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import xgboost

import xai_plugins as xp

rng = np.random.default_rng(1)
X = rng.normal(size=(2000, 5))
X[:, 4] = X[:, 0] + 0.3 * rng.normal(size=2000)
y = X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=2000)
model = xgboost.XGBRegressor(n_estimators=100, max_depth=4).fit(X, y)

found = xp.which_shap(model, X[:200], background=X[1000:1100], sigma=0.3)
print(found.faithfulness.round(4))
print(found.agreement[["a", "b", "Kendall τ", "max |Δ|"]].round(4))

# %%
table = found.faithfulness
fig, ax = plt.subplots(figsize=(6, 3))
ax.errorbar(table["PGI²"], np.arange(len(table)), xerr=[table["PGI²"] - table["low"], table["high"] - table["PGI²"]],
            fmt="o", color="#4c72b0", capsize=3)
ax.set_yticks(np.arange(len(table)), table.index)
ax.invert_yaxis()
ax.set_xlabel("mean exact PGI² of the ranking (95 % interval)")
ax.set_title("Which SHAP is the model most sensitive to?")
fig.tight_layout()
