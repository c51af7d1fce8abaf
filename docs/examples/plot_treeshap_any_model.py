"""
TreeSHAP for a model shap cannot read
=====================================

scikit-learn's ``HistGradientBoostingClassifier`` with ``categorical_features="from_dtype"`` splits on
category sets, which shap's ``TreeExplainer`` does not read. The package's TreeSHAP runs on its own import
of the model, so a categorical column is one player, and the values add up to the model's margin.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

import xai_plugins as xp

rng = np.random.default_rng(0)
n = 2000
X = pd.DataFrame({"sex": pd.Categorical(rng.choice(["Male", "Female"], n)),
                  "charge": pd.Categorical(rng.choice(["felony", "misdemeanor"], n, p=[0.4, 0.6])),
                  "age": rng.integers(18, 70, n).astype(float),
                  "priors": rng.poisson(2, n).astype(float)})
logit = 0.8 * (X["charge"] == "felony") + 0.4 * X["priors"] - 0.05 * (X["age"] - 35)
y = rng.random(n) < 1 / (1 + np.exp(-logit + 1))
model = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0).fit(X, y)

sv = xp.tree_shap(model, X[:300])
print("additive:", np.allclose(sv.values.sum(1) + sv.base_values, model.decision_function(X[:300])))

# %%
# Mean absolute TreeSHAP value per input column (log-odds)
order = np.argsort(np.abs(sv.values).mean(0))
fig, ax = plt.subplots(figsize=(6, 3))
ax.barh(np.array(sv.feature_names)[order], np.abs(sv.values).mean(0)[order], color="#4c72b0")
ax.set_xlabel("mean |TreeSHAP value| (log-odds)")
ax.set_title("Path-dependent TreeSHAP of a categorical HistGradientBoosting model")
fig.tight_layout()
