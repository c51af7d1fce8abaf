"""xai_plugins.shap: explainers that return shap.Explanation objects, and the faithfulness score.

Oracles: the PG² gains are rebuilt from independent ``xp.pg2`` calls on each greedy prefix; local
MDI against the tree-only global MDI identity; plots drawn by shap itself on the Agg backend.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import shap
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression

import xai_plugins as xp
from xai_plugins.acme import AcME
from xai_plugins.shap import AcMEExplainer, LocalMDIExplainer, NotAdditive, PG2Explainer


@pytest.fixture(scope="module")
def rf_classifier():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :8]
    model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    return model, X, y


def prefix_pg2(model, X, ranking, sigma, background=None, output=None):
    """PG² of every prefix of each row's ranking, one ``xp.pg2`` call per (row, prefix)."""
    n, d = ranking.shape
    out = np.empty((n, d))
    for i in range(n):
        for k in range(d):
            value = xp.pg2(model, X[i:i + 1], ranking[i, :k + 1], sigma=sigma, background=background).value[0]
            out[i, k] = value if output is None else value[output]
    return out


def test_pg2_explainer_gains_are_prefix_differences(diabetes_frame, xgb_regressor):
    X, _ = diabetes_frame
    rows = X.iloc[:4]
    e = PG2Explainer(xgb_regressor, sigma=0.5, background=X)(rows)
    assert isinstance(e, shap.Explanation) and isinstance(PG2Explainer(xgb_regressor), shap.Explainer)
    assert e.values.shape == (4, X.shape[1]) and isinstance(e.base_values, NotAdditive)
    assert list(e.feature_names) == list(X.columns)
    np.testing.assert_array_equal(e.data, rows.to_numpy())
    paths = prefix_pg2(xgb_regressor, rows.to_numpy(), e.ranking, 0.5, background=X)
    for i in range(4):
        gains = np.diff(paths[i], prepend=0.0)
        np.testing.assert_allclose(e.values[i, e.ranking[i]], gains, rtol=1e-10, atol=1e-12)
    # a row's gains add up to PG² with every feature perturbed; PGI² is the mean of the prefixes
    everything = xp.pg2(xgb_regressor, rows, np.arange(X.shape[1]), sigma=0.5, background=X).value
    np.testing.assert_allclose(e.values.sum(axis=1), everything, rtol=1e-10)
    np.testing.assert_allclose(e.pgi2, paths.mean(axis=1), rtol=1e-10)
    # the greedy order really is greedy: each step takes the best remaining feature
    for i in range(4):
        chosen = []
        for _step in range(3):
            rest = [j for j in range(X.shape[1]) if j not in chosen]
            scores = [xp.pg2(xgb_regressor, rows.iloc[[i]], chosen + [j], sigma=0.5, background=X).value[0]
                      for j in rest]
            chosen.append(rest[int(np.argmax(scores))])
        assert list(e.ranking[i, :3]) == chosen


def test_pg2_explainer_classifier_has_one_ranking_per_class(rf_classifier):
    model, X, _ = rf_classifier
    e = PG2Explainer(model, sigma=0.3, background=X)(X.iloc[:3])
    assert e.values.shape == (3, X.shape[1], 2) and e.ranking.shape == (3, X.shape[1], 2)
    assert e.pgi2.shape == (3, 2) and list(e.output_names) == ["0", "1"]
    for c in range(2):
        expected = xp.greedy_pg2_ranking(model, X.iloc[:3], sigma=0.3, background=X, output=c)
        np.testing.assert_array_equal(e.ranking[..., c], expected.ranking)
        paths = prefix_pg2(model, X.iloc[:3].to_numpy(), expected.ranking, 0.3, background=X, output=c)
        np.testing.assert_allclose(e.pgi2[:, c], paths.mean(axis=1), rtol=1e-10)


def test_local_mdi_explainer_mean_is_global_mdi(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=8, bootstrap=False, max_features=0.5, random_state=0).fit(X, y)
    e = LocalMDIExplainer(model)(X)
    assert e.values.shape == X.shape and isinstance(e.base_values, NotAdditive)
    assert e.feature_names == [f"x{j}" for j in range(X.shape[1])]
    np.testing.assert_allclose(e.values.mean(axis=0), xp.global_mdi(model), rtol=1e-12)


def test_acme_explainer_matches_acme(diabetes_frame):
    X, y = diabetes_frame
    model = LinearRegression().fit(X, y)
    e = AcMEExplainer(model, X, n_quantiles=20)(X.iloc[:5])
    np.testing.assert_allclose(e.values, AcME(model, X, n_quantiles=20).explain_local(X.iloc[:5]).values)
    assert isinstance(e.base_values, NotAdditive) and list(e.feature_names) == list(X.columns)


@pytest.mark.parametrize("make", ["pg2", "local_mdi", "acme"])
def test_shap_plots_draw(make, rf_classifier):
    model, X, _ = rf_classifier
    explainer = {"pg2": lambda: PG2Explainer(model, background=X),
                 "local_mdi": lambda: LocalMDIExplainer(model),
                 "acme": lambda: AcMEExplainer(model, X, n_quantiles=10, task="classification")}[make]()
    e = explainer(X.iloc[:12])
    one = e[..., 1] if e.values.ndim == 3 else e
    for plot in (shap.plots.bar, shap.plots.beeswarm, shap.plots.heatmap):
        plot(one, show=False)
        assert plt.gcf().axes, plot.__name__
        plt.close("all")
    shap.plots.scatter(one[:, X.columns[0]], show=False)
    assert plt.gcf().axes
    # not additive: no base values, so shap's waterfall refuses instead of drawing a misleading sum
    with pytest.raises(TypeError):
        shap.plots.waterfall(one[0], show=False)


def test_faithfulness_scores_treeshap_exactly(diabetes_frame, xgb_regressor):
    X, _ = diabetes_frame
    rows = X.iloc[:5]
    explanation = shap.TreeExplainer(xgb_regressor)(rows)
    score = xp.faithfulness(xgb_regressor, explanation, sigma=0.4)
    ranking = np.array([sorted(range(X.shape[1]), key=lambda j: (-abs(v[j]), j)) for v in explanation.values])
    np.testing.assert_allclose(score, prefix_pg2(xgb_regressor, rows.to_numpy(), ranking, 0.4).mean(axis=1),
                               rtol=1e-10)
    # the greedy PG² ranking is built to maximise PG² step by step; its PGI² beats a reversed ranking
    greedy = PG2Explainer(xgb_regressor, sigma=0.4)(rows)
    reversed_ = xp.pgi2(xgb_regressor, rows, greedy.ranking[:, ::-1].copy(), sigma=0.4)
    assert np.all(greedy.pgi2 > reversed_)


def test_faithfulness_per_class(rf_classifier):
    model, X, _ = rf_classifier
    explanation = shap.TreeExplainer(model)(X.iloc[:4])
    score = xp.faithfulness(model, explanation, sigma=0.3, background=X)
    assert score.shape == (4, 2)
    for c in range(2):
        order = np.argsort(-np.abs(explanation.values[..., c]), axis=1, kind="stable")
        np.testing.assert_allclose(score[:, c], xp.pgi2(model, X.iloc[:4], order, sigma=0.3, background=X)[:, c])


def test_faithfulness_bad_input(diabetes_frame, xgb_regressor):
    X, _ = diabetes_frame
    values = np.ones((3, X.shape[1]))
    with pytest.raises(ValueError, match="no data"):
        xp.faithfulness(xgb_regressor, shap.Explanation(values), sigma=0.3)
    with pytest.raises(ValueError, match="rows"):
        xp.faithfulness(xgb_regressor, values, X=X.iloc[:5], sigma=0.3)
    with pytest.raises(ValueError, match="outputs"):
        xp.faithfulness(xgb_regressor, np.ones((3, X.shape[1], 2)), X=X.iloc[:3], sigma=0.3)
    with pytest.raises(ValueError, match="sigma"):
        xp.faithfulness(xgb_regressor, values, X=X.iloc[:3], sigma=0.0)


def test_bad_input(diabetes_frame, xgb_regressor):
    X, y = diabetes_frame
    with pytest.raises(Exception, match="(?i)fitted"):
        PG2Explainer(RandomForestRegressor())
    with pytest.raises(xp.UnsupportedModelError, match="impurit"):
        LocalMDIExplainer(xgb_regressor)
    with pytest.raises(xp.UnsupportedModelError):
        PG2Explainer(LinearRegression().fit(X, y))
    renamed = X.rename(columns={"bmi": "BMI"})
    with pytest.raises(ValueError, match="do not match"):
        PG2Explainer(xgb_regressor)(renamed.iloc[:2])
    with pytest.raises(ValueError, match="columns"):
        PG2Explainer(xgb_regressor)(X.iloc[:2, :5])
    nan_row = X.iloc[:1].copy()
    nan_row.iloc[0, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PG2Explainer(xgb_regressor)(nan_row)


def test_masker_background_warns(diabetes_frame, xgb_regressor):
    X, _ = diabetes_frame
    masker = shap.maskers.Independent(X, max_samples=100)
    with pytest.warns(UserWarning, match="100 rows"):
        explainer = PG2Explainer(xgb_regressor, background=masker)
    assert len(explainer.background) == 100
    frame = pd.DataFrame(explainer.background, columns=X.columns)
    np.testing.assert_allclose(explainer(X.iloc[:2]).values,
                               PG2Explainer(xgb_regressor, background=frame)(X.iloc[:2]).values)
