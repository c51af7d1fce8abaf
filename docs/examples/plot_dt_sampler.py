"""
DT-Sampler: which features does *any* small accurate tree need?
===============================================================

A decision tree grown by CART is one tree among many that fit the data about as well; the features
it happens to split on depend on greedy choices and ties. **DT-Sampler** (Tsuda lab) encodes every
decision tree with N branch nodes that reaches a given training accuracy as a SAT formula and
samples those trees uniformly (UniGen). The **emergence probability** of a feature, the share of the
sampled trees' branch nodes that test it, says how indispensable the feature is to the whole class
of small accurate trees, with Wilson intervals for the sampling error. For a reviewer it separates
"this feature is needed to reach this accuracy" from "CART happened to pick it".

The data: a 60-row sample of the breast-cancer data (a binary target) and six of its features, small
enough for the sampler to run in seconds.
"""

# %%
# Data and a CART tree for comparison
# -----------------------------------
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier, export_text

from xai_plugins.dt_sampler import DTSampler

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
features = ["mean radius", "mean texture", "mean concave points", "worst radius", "worst texture",
            "worst concave points"]
rows = np.random.default_rng(0).choice(len(X), 60, replace=False)
X_small, y_small = X.iloc[rows][features], y.iloc[rows]
print(y_small.value_counts().to_dict())

cart = DecisionTreeClassifier(max_leaf_nodes=4, random_state=0).fit(X_small, y_small)
print(f"CART with 3 branch nodes: training accuracy {cart.score(X_small, y_small):.3f}")
print(export_text(cart, feature_names=features))

# %%
# Sample accurate trees uniformly
# -------------------------------
# Every feature is binarised at its terciles (``quantiles``), giving 12 binary tests; the space is
# every tree with 3 branch nodes over those tests that classifies at least 90 % of the 60 rows
# correctly. ``n_samples`` trees are drawn with UniGen; ``model_count_`` is ApproxMC's count of the
# space.
sampler = DTSampler(n_branch_nodes=3, min_accuracy=0.9, n_samples=30, quantiles=(1 / 3, 2 / 3), random_state=0,
                    progress=False).fit(X_small, y_small)
print(f"{sampler.model_count_} accurate trees (ApproxMC estimate); {len(sampler.trees_)} sampled "
      f"in {sampler.fit_time_:.1f} s")
print(sampler.emergence_probability_.round(3).to_string())

# %%
# Each sampled tree can be read as rules:
for rule in sampler.trees_[0].rules():
    print(rule)
print(f"its training accuracy: {sampler.trees_[0].accuracy:.3f}")

# %%
# ``plot()`` draws the emergence probabilities with their Wilson intervals; the ticks mark the level
# each feature would have if accuracy did not matter (``min_accuracy=0``: every test equally likely).
ax = sampler.plot()
ax.set_title("Emergence (N = 3, accuracy ≥ 0.9, 30 trees)")
ax.figure.tight_layout()

# %%
# Check against the exact distribution
# ------------------------------------
# This space is small, so ``sampler="exact"`` can enumerate it: the exact emergence probabilities
# should lie within the sampled intervals (at the 95 % level, most of them).
exact = DTSampler(n_branch_nodes=3, min_accuracy=0.9, sampler="exact", quantiles=(1 / 3, 2 / 3), random_state=0,
                  progress=False).fit(X_small, y_small)
print(f"exact count: {exact.model_count_} trees")
both = sampler.emergence_probability_.join(exact.emergence_probability_["probability"].rename("exact"))
both["inside"] = (both["ci_low"] <= both["exact"]) & (both["exact"] <= both["ci_high"])
print(both.round(3).to_string())

# %%
# How the emergence changes with the accuracy required
# ----------------------------------------------------
# ``emergence_path`` refits at each ``min_accuracy`` (here with the exact enumeration) and
# ``plot_path`` draws the result: as the accuracy bar rises, the trees concentrate on the features
# that carry the signal.
path = exact.emergence_path(X_small, y_small, min_accuracies=[0.8, 0.85, 0.9, 0.95])
print(path.pivot(index="feature", columns="min_accuracy", values="probability").round(3).to_string())
ax = exact.plot_path()
ax.set_title("Emergence probability against the required accuracy (exact)")
ax.figure.tight_layout()

# %%
# Compare with CART: the features the single CART tree used, and their emergence.
used = sorted({features[i] for i in cart.tree_.feature if i >= 0})
print(pd.Series(exact.emergence_probability_["probability"], name="exact emergence").loc[used].round(3).to_string())
