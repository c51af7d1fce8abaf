"""
AcME: fast global importances and a local what-if view
======================================================

AcME (Dandolo et al.) explains any model from its predictions on a quantile grid: starting from a
baseline row, each feature in turn is set to each of Q quantiles of the data while the others stay
put. The spread of the resulting predictions gives a global importance, and for one row the same
grid answers the question a loan officer or a clinician actually asks: *what would the model
predict if this value were different?* It costs about one ``predict`` on d·Q + 1 rows, so it is
cheap enough to run on every model in a review, and it needs nothing but ``predict`` /
``predict_proba``.

We explain a random forest on the diabetes data (regression), then a classifier on the wine data
(one importance per class).
"""

# %%
# Global importances
# ------------------
import matplotlib.pyplot as plt
from sklearn.datasets import load_diabetes, load_wine
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
from sklearn.model_selection import train_test_split

from xai_plugins.acme import AcME

X, y = load_diabetes(return_X_y=True, as_frame=True, scaled=False)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
rf = RandomForestRegressor(n_estimators=100, min_samples_leaf=5, random_state=0, n_jobs=1).fit(X_train, y_train)

explainer = AcME(rf, X_train, n_quantiles=30)
overall = explainer.explain_global()          # baseline: the column means (the mode for a categorical feature)
print(overall.importances.round(2).to_string())

# %%
# ``plot()`` draws the paper's summary plot: for each feature (sorted by importance), the
# standardised effect of moving it to each quantile (colour: quantile level, blue → red), the
# dashed line at the baseline prediction.
ax = overall.plot()
ax.set_title("AcME global explanation (diabetes, random forest)")
ax.figure.tight_layout()

# %%
# A local what-if plot
# --------------------
# ``explain_local`` uses each row as its own baseline: every feature of the row is moved along its
# grid, the others kept. ``plot(row)`` shows the *actual* predictions per grid point, the larger
# marker at the row's own value, the dashed line at the row's prediction.
local = explainer.explain_local(X_test.iloc[:5])
row = 0
print(X_test.iloc[row].to_dict())
print(f"prediction {local.row_predictions[row]:.1f}")
ax = local.plot(row)
ax.set_title(f"What if? Test row {row} (prediction {local.row_predictions[row]:.0f})")
ax.figure.tight_layout()

# %%
# The same grid as a table: what the model would predict for this patient at each bmi quantile.
table = local.what_if(row, feature="bmi")
print(table.iloc[::5].round(2).to_string(index=False))

# %%
# Local importances of the five rows (the mean absolute standardised effect of each feature, with
# the row as baseline):
print(local.importances.round(1).to_string())

# %%
# A classifier: one importance per class
# --------------------------------------
# With ``predict_proba`` AcME explains each class's probability; the default plot stacks the classes'
# importances, ``output=`` selects one class for the detailed plots.
Xw, yw = load_wine(return_X_y=True, as_frame=True)
clf = GradientBoostingClassifier(n_estimators=50, max_depth=2, random_state=0).fit(Xw, yw)
wine = AcME(clf, Xw, n_quantiles=20).explain_global()
print(wine.importances.head(5).round(3).to_string())

fig, (ax_bar, ax_class) = plt.subplots(1, 2, figsize=(11, 4.5))
wine.plot(kind="bar", ax=ax_bar)
ax_bar.set_title("Wine: AcME importance, stacked per class")
wine.plot(output=2, ax=ax_class)
ax_class.set_title("Wine: effects on P(class 2)")
fig.tight_layout()
