"""
Explaining a scikit-learn Pipeline in its input columns
=======================================================

Deployed models are rarely a bare estimator: a ``ColumnTransformer`` one-hot encodes the text
columns and scales the numeric ones before the trees see them. Explaining the trees on the
transformed matrix yields features such as ``cat__age_band_50s`` and scaled units nobody asked
about; a reviewer wants ``age_band`` and ``bmi`` in kg/m².

``xai_plugins`` imports such a Pipeline as one tree ensemble **over its input columns**: each
split on a scaled column becomes a split on the raw column (the exact switch point), and the
indicator columns of a ``OneHotEncoder`` become one categorical feature whose splits are sets of
labels. :class:`xai_plugins.shap.PG2Explainer` then returns a ``shap.Explanation`` with one value
per input column, which shap's plots draw as usual.
"""

# %%
# A Pipeline with text and numeric columns
# ----------------------------------------
# The diabetes data in its original units, with ``sex`` as the text labels "sex 1" / "sex 2" (the
# data set does not say which is which) and ``age`` replaced by a text age band.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shap
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import xai_plugins as xp
from xai_plugins.shap import PG2Explainer, label_plot

X, y = load_diabetes(return_X_y=True, as_frame=True, scaled=False)
age_band = pd.cut(X["age"], bins=[0, 30, 40, 50, 60, 70, 100], labels=["<30", "30s", "40s", "50s", "60s", "70+"])
raw = X.drop(columns=["age", "sex"]).assign(age_band=age_band.astype(str),
                                            sex=X["sex"].map({1.0: "sex 1", 2.0: "sex 2"}))
text_columns = ["age_band", "sex"]
numeric_columns = [c for c in raw.columns if c not in text_columns]
X_train, X_test, y_train, y_test = train_test_split(raw, y, test_size=0.25, random_state=0)

pipe = Pipeline([
    ("prep", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), text_columns),
                                ("num", StandardScaler(), numeric_columns)])),
    ("gbr", GradientBoostingRegressor(n_estimators=100, max_depth=2, learning_rate=0.05, random_state=0)),
]).fit(X_train, y_train)
print(f"test R² {pipe.score(X_test, y_test):.3f}")
print("the trees see", len(pipe[:-1].get_feature_names_out()), "columns:", list(pipe[:-1].get_feature_names_out()[:8]),
      "...")

# %%
# One model over the input columns
# --------------------------------
# The imported :class:`~xai_plugins.Forest` has the Pipeline's 10 input columns, ``age_band`` and
# ``sex`` categorical with their labels, and predicts as the Pipeline does on the raw rows.
forest = xp.import_model(pipe)
print(forest.feature_names)
print({n: labels for n, labels in zip(forest.feature_names, forest.category_labels) if labels is not None})
print("predict parity:", np.allclose(forest.predict(X_test).ravel(), pipe.predict(X_test)))

# %%
# PG² speaks of the input columns: ``S`` names them, and ``bmi`` is perturbed in its own units (σ is
# in standard deviations of the ``background`` data), ``age_band`` by the categorical law (kept with
# probability 1 − ρ, else redrawn from the training frequencies).
est = xp.pg2(pipe, X_test, ["bmi", "age_band"], sigma=0.3, background=X_train)
print(f"mean PG²(bmi, age_band) = {est.value.mean():.1f}")

# %%
# SHAP-style plots of the greedy PG² attributions
# -----------------------------------------------
# Each value is the growth of the exact PG² when the feature joins the row's greedy order, so a row's
# values add up to PG²(x, all features). These are importances, not additive contributions
# (``waterfall`` and ``force`` plots refuse them); ``label_plot`` replaces shap's axis label
# "SHAP value" by what the values are.
explainer = PG2Explainer(pipe, sigma=0.3, background=X_train)
explanation = explainer(X_test.iloc[:60])
print(explanation.values.shape, explanation.feature_names)
print("rows add up to PG²(all):", np.allclose(
    explanation.values.sum(axis=1), xp.pg2(pipe, X_test.iloc[:60], list(raw.columns), sigma=0.3,
                                           background=X_train).value))

shap.plots.bar(explanation, max_display=10, show=False)
label_plot(explanation)
plt.title("Mean greedy PG² gain per input column")
plt.tight_layout()

# %%
# The beeswarm shows one dot per row; the text columns have no numeric colour scale, so shap draws
# them grey. A gain can be negative: PG² is not monotone in the perturbed set, so adding a feature
# to the greedy order may lower it (the bar chart above averages absolute gains).
plt.figure()
shap.plots.beeswarm(explanation, max_display=10, show=False)
label_plot(explanation)
plt.title("Greedy PG² gain per row")
plt.tight_layout()

# %%
# Each row's greedy order and its exact PGI² come with the explanation:
for i in range(3):
    order = [explanation.feature_names[j] for j in explanation.ranking[i, :4]]
    print(f"row {i} ({X_test.iloc[i]['sex']}, {X_test.iloc[i]['age_band']}): top 4 {order}, "
          f"PGI² {explanation.pgi2[i]:.1f}")
