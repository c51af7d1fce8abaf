"""What shap's plots show for our Explanations: the additive plots (waterfall, force) refuse them
with a clear NotAdditiveError, and the axes name the values (e.g. "PG² gain"), not "SHAP value"."""

import matplotlib.pyplot as plt  # the Agg backend: tests/conftest.py
import numpy as np
import pytest
import shap
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

import xai_plugins.shap as xs
from xai_plugins import errors


@pytest.fixture(scope="module")
def explanations():
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :6]
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    return {"PG² gain": xs.PG2Explainer(model, sigma=0.3, background=X)(X[:12])[..., 1],
            "local MDI": xs.LocalMDIExplainer(model)(X[:12]),
            "AcME importance": xs.AcMEExplainer(model, X, n_quantiles=10)(X[:12])[..., 1]}


def _labels():
    return " | ".join(t for ax in plt.gcf().axes for t in (ax.get_xlabel(), ax.get_ylabel()))


@pytest.mark.parametrize("plot", [shap.plots.waterfall, shap.plots.force])
def test_additive_plots_refuse_clearly(explanations, plot):
    for label, e in explanations.items():
        row = e[0]                           # shap's slicing keeps the refusal
        with pytest.raises(errors.NotAdditiveError, match=f"{label}.*do not add up.*waterfall") as info:
            plot(row, show=False)
        assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("plot, expected", [
    (shap.plots.bar, "mean(|{}|)"), (shap.plots.beeswarm, "{}"), (shap.plots.violin, "{}"),
    (shap.plots.heatmap, "{}")])
def test_plots_name_the_values(explanations, plot, expected):
    for label, e in explanations.items():
        plot(e, show=False)
        assert "SHAP value" in _labels()                 # shap's own wording, whatever the values are
        xs.label_plot(e)
        assert expected.format(label) in _labels().split(" | ") and "SHAP" not in _labels()
        plt.close("all")


def test_single_row_and_scatter_labels(explanations):
    e = explanations["PG² gain"]
    shap.plots.bar(e[0], show=False)
    xs.label_plot(e[0])
    assert plt.gca().get_xlabel() == "PG² gain"
    plt.close("all")
    shap.plots.scatter(e[:, 2], show=False)
    xs.label_plot(e[:, 2])
    assert "PG² gain for" in _labels() and "SHAP" not in _labels()


def test_shap_explanations_keep_their_labels():
    values = np.arange(12.0).reshape(4, 3)
    e = shap.Explanation(values, base_values=np.zeros(4), data=values, feature_names=list("abc"))
    shap.plots.beeswarm(e, show=False)
    xs.label_plot(e)
    assert "SHAP value" in _labels()
