"""
Model class reliance: how much could an equally good model rely on each feature?
================================================================================

Permutation importance says how much *this* model relies on a feature. But many models fit the data
about equally well (the Rashomon set), and they may rely on different features: a reviewer asking
"does the model need ``bmi``?" should hear "between MCR− and MCR+, depending on which of the equally
good models you pick". **RF-MCR** (Smith et al.) computes these model class reliance ranges for a
random forest grown without bootstrap: swapping predictively equivalent trees and surrogate splits
gives the forests of the ε-Rashomon set with the smallest and largest reliance on each feature.

A narrow range means the data pin down the reliance; a wide one means the model's reliance on the
feature is one choice among many, and a ranking built on it should not be over-interpreted.
"""

# %%
# The reference forest
# --------------------
# :func:`~xai_plugins.mcr.fit_rashomon_forest` fits the random forest RF-MCR needs
# (``bootstrap=False``; randomness only from the features tried at each split).
import matplotlib.pyplot as plt
from sklearn.datasets import load_breast_cancer

from xai_plugins.mcr import fit_rashomon_forest, model_class_reliance

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
features = ["mean radius", "mean texture", "mean smoothness", "mean concavity", "mean concave points",
            "worst radius", "worst texture", "worst concave points", "worst symmetry", "radius error"]
X = X[features]
forest = fit_rashomon_forest(X, y, task="classification", n_estimators=100, min_samples_leaf=3, random_state=0,
                             n_jobs=1)
print(f"training accuracy {forest.score(X, y):.3f}")

# %%
# MCR ranges at ε = 0
# -------------------
# With ``epsilon=0`` only trees that predict the training data identically are swapped, so every
# forest of the set has exactly the reference forest's training predictions. Reliance is the
# increase of the loss (here the 0–1 loss: accuracy drop) when a column is permuted, averaged over
# ``n_permutations`` seeded permutations.
result = model_class_reliance(forest, X, y, n_permutations=5, epsilon=0.0, random_state=0, progress=False)
print(result.table[["mcr_minus", "model_reliance", "mcr_plus", "within_rashomon"]].round(4).to_string())

# %%
# ``result.plot()`` draws one bar per feature from MCR− to MCR+, the reference forest's own reliance
# marked.
ax = result.plot()
ax.set_title("RF-MCR ranges, ε = 0 (breast cancer, 100 trees)")
ax.figure.tight_layout()

# %%
# A looser Rashomon set
# ---------------------
# ``epsilon`` is the share of training rows (classifiers) by which the swapped forests' training loss
# may differ from the reference's: ε = 0.01 admits every forest within one point of training
# accuracy, and the ranges widen accordingly.
loose = model_class_reliance(forest, X, y, n_permutations=5, epsilon=0.01, random_state=0, progress=False)
width = (result.table["mcr_plus"] - result.table["mcr_minus"]).rename("width at ε = 0")
loose_width = (loose.table["mcr_plus"] - loose.table["mcr_minus"]).rename("width at ε = 0.01")
print(width.to_frame().join(loose_width).round(4).to_string())
print("boundary forests within the Rashomon set:", bool(loose.table["within_rashomon"].all()))

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.5), sharex=True)
result.plot(ax=ax0)
ax0.set_title("ε = 0")
loose.plot(ax=ax1)
ax1.set_title("ε = 0.01")
fig.tight_layout()

# %%
# Reading the ranges
# ------------------
# A feature whose MCR− is (close to) zero is one the model class can do without: some forest of the
# set barely uses it. A feature whose MCR− is clearly positive is needed by every good forest.
needed = result.table.index[result.table["mcr_minus"] > 0.005].tolist()
optional = result.table.index[result.table["mcr_minus"] <= 0.005].tolist()
print("needed by every forest of the set:", needed)
print("dispensable for some forest of the set:", optional)
