"""
Auditing a risk classifier with a protected attribute
=====================================================

A model-risk reviewer receives a classifier that flags "high-risk" patients and a set of SHAP
explanations meant to justify its individual decisions. Two questions must be answered separately:
is the *model* fit for use (predictive adequacy, calibration, drift, fairness across a protected
group), and are its *explanations* reliable (faithful to the model, consistent between methods,
stable across noise levels)? :func:`xai_plugins.report.audit` answers both with evidence, a 95 %
interval and a threshold for every criterion, and writes a self-contained HTML report the
reviewer can file.

Here the risk score is an XGBoost classifier on scikit-learn's diabetes data, the target
binarised as "disease progression in the top quartile". The model does not see ``sex``; the
column is handed to the audit as a *protected attribute* so that the fairness section can compare
the groups and look for proxies of it among the model's features.
"""

# %%
# Data: a binary "high risk" target and a protected attribute kept out of the model
# ----------------------------------------------------------------------------------
# The diabetes features ship standardised; ``sex`` takes two values, which we turn into the
# labels "sex 1" / "sex 2" (the data set does not say which is which). The model is trained on the
# nine other features only.
import base64
import io
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import xgboost
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from xai_plugins.report import audit

X, progression = load_diabetes(return_X_y=True, as_frame=True)
high_risk = (progression > progression.quantile(0.75)).astype(int).rename("high_risk")
data = X.drop(columns="sex").assign(sex=np.where(X["sex"] > 0, "sex 2", "sex 1"))
features = [c for c in data.columns if c != "sex"]

X_train, X_test, y_train, y_test = train_test_split(data, high_risk, test_size=0.3, stratify=high_risk,
                                                    random_state=0)
model = xgboost.XGBClassifier(n_estimators=40, max_depth=3, learning_rate=0.1, random_state=0, n_jobs=1)
model.fit(X_train[features], y_train)
print(f"{len(X_train)} training rows, {len(X_test)} test rows, {high_risk.mean():.0%} high risk")
print(X_test["sex"].value_counts().to_dict())

# %%
# Run the audit
# -------------
# ``X_test`` / ``X_train`` still hold the ``sex`` column: ``protected=["sex"]`` holds it apart (it is
# not a model feature, so it is never passed to the model). We compute the explanation, faithfulness
# and agreement sections for TreeSHAP and the greedy PG² reference ranking, on 30 seeded test rows;
# the Rashomon (MCR) section is skipped, so that criterion is reported as *not assessed*.
result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, protected=["sex"],
               sections=["explanations", "faithfulness", "agreement"], explainers=["shap", "pg2"],
               title="High-risk classifier v1 (diabetes)", max_rows=30, random_state=0, progress=False)

# %%
# The two verdicts
# ----------------
# They are never combined: a model can be fit for use while its explanations are not, and the
# other way round. ``result.verdict.model_fitness`` and ``.explanation_reliability`` are
# ``Judgement`` objects; their ``headline`` is the one-line summary and
# their ``implications`` say what the reader should (not) do with the model or its explanations.
for judgement in (result.verdict.model_fitness, result.verdict.explanation_reliability):
    print(judgement.headline)
    for implication in judgement.implications:
        print("   -", implication)

# %%
# Every criterion carries its value, interval and the rule it was graded by:
for criterion in result.verdict.criteria:
    interval = "" if criterion.ci is None else f" [{criterion.ci.low:.3g}, {criterion.ci.high:.3g}]"
    value = "" if criterion.value is None else f"{criterion.value:.3g}{interval}"
    print(f"{criterion.status:>12}  {criterion.name:<45} {value}")

# %%
# Inspect the evidence: fairness and faithfulness
# -----------------------------------------------
# Every number of the report is in ``result.sections[name].data`` and ``.tables``. The fairness
# section gives the per-group performance of the model (fairlearn ``MetricFrame``) and the
# disparities with bootstrap intervals; the faithfulness section the exact PGI² of each method's
# per-row ranking at every noise level σ, against random rankings.
fairness = result.sections["fairness"].data["attributes"]["sex"]
by_group = fairness["by group"]
print(by_group.round(3).to_string())
print(fairness["disparities"][["value", "ci_low", "ci_high", "threshold"]].round(3).to_string())

pgi2 = result.sections["faithfulness"].data["pgi2"]
all_features = result.sections["faithfulness"].data["mean PG² all features"]
pgi2 = pgi2.assign(share=pgi2["mean"] / pgi2["sigma"].map(all_features))
print(pgi2.round(4).to_string(index=False))

# %%
# A two-panel summary: the model's behaviour per group (left) and, per σ, the mean PGI² of each
# ranking as a share of the mean PG² with every feature perturbed (right; higher is more faithful).
fig, (ax_group, ax_faith) = plt.subplots(1, 2, figsize=(10, 4))
metrics = ["selection rate", "true positive rate", "false positive rate", "accuracy"]
width = 0.38
for offset, (group, row) in zip((-width / 2, width / 2), by_group.iterrows()):
    ax_group.bar(np.arange(len(metrics)) + offset, row[metrics], width, label=f"{group} ({int(row['rows'])} rows)")
ax_group.set_xticks(np.arange(len(metrics)), [m.replace(" ", "\n") for m in metrics])
ax_group.set_ylim(0, 1)
ax_group.set_title("Model behaviour per protected group (test data)")
ax_group.legend()

methods = list(dict.fromkeys(pgi2["method"]))
sigmas = result.sections["faithfulness"].data["sigmas"]
width = 0.8 / len(methods)
for m, method in enumerate(methods):
    rows = pgi2[pgi2["method"] == method].set_index("sigma").loc[sigmas]
    ax_faith.bar(np.arange(len(sigmas)) + (m - (len(methods) - 1) / 2) * width, rows["share"], width, label=method)
ax_faith.set_xticks(np.arange(len(sigmas)), [f"σ = {s:g}" for s in sigmas])
ax_faith.set_ylabel("mean PGI² / mean PG²(all features)")
ax_faith.set_title("Faithfulness of the rankings (exact PGI²)")
ax_faith.set_ylim(0, 1.25)
ax_faith.legend(fontsize=8, ncol=3, loc="upper center")
fig.tight_layout()

# %%
# The report's own figures are embedded PNGs (``data:`` URIs), available as well: here the
# reliability diagram of the calibration section.
figure = result.sections["calibration"].figures[0]
image = mpimg.imread(io.BytesIO(base64.b64decode(figure.uri.split(",", 1)[1])), format="png")
fig, ax = plt.subplots(figsize=(5, 4))
ax.imshow(image)
ax.set_axis_off()
ax.set_title("Calibration section of the audit", fontsize=10)
print(figure.caption)

# %%
# Write the report
# ----------------
# ``to_html`` writes one self-contained file (figures embedded); ``to_pdf`` (weasyprint) and
# ``to_json`` give the same content as PDF and JSON. We write into a temporary folder here.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "high_risk_classifier_v1.html"
    result.to_html(path)
    print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, sections:")
    for section in result.sections.values():
        print(f"  {section.title}: {section.status}")
