"""
Certified reason codes
======================

The reasons an attribution gives for a decision are certified against the best set of as many features
found by greedy PG². TreeSHAP's reasons on a credit model are certified for nearly every applicant; reasons
taken from an explanation of another model are not.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier

import xai_plugins as xp

rng = np.random.default_rng(2)
n = 2000
X = pd.DataFrame({"income": rng.normal(size=n), "debt": rng.normal(size=n), "tenure": rng.normal(size=n),
                  "age": rng.integers(18, 80, n).astype(float), "zip_risk": rng.normal(size=n)})
y = (X["income"] - X["debt"] + 0.5 * X["tenure"] + 0.3 * rng.normal(size=n) > 0).astype(int)
model = GradientBoostingClassifier(random_state=0).fit(X, y)
other = GradientBoostingClassifier(random_state=0).fit(X, (X["zip_risk"] + X["tenure"] > 0).astype(int))

faithful = xp.reason_codes(model, X[:200], k=2, protected=["age"])
borrowed = xp.reason_codes(model, X[:200], k=2, protected=["age"], explanation=xp.tree_shap(other, X[:200]))
print(faithful.reasons.head())
print(pd.concat({"TreeSHAP of the model": faithful.summary(), "TreeSHAP of another model": borrowed.summary()}))

# %%
fig, ax = plt.subplots(figsize=(6, 3))
bins = np.linspace(0, 1.05, 22)
ax.hist(faithful.rows["certificate"], bins=bins, alpha=0.7, label="TreeSHAP of the model")
ax.hist(borrowed.rows["certificate"], bins=bins, alpha=0.7, label="TreeSHAP of another model")
ax.axvline(0.8, color="k", linestyle="--", linewidth=1)
ax.set_xlabel("certificate: PG²(reasons) / PG²(greedy set of as many)")
ax.set_ylabel("applicants")
ax.legend()
fig.tight_layout()
