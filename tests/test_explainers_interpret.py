"""xai_plugins.interpret: InterpretML greybox/blackbox explainers, their registration and rendering."""

import numpy as np
import plotly.graph_objects as go
import pytest
from interpret.api.templates import FeatureValueExplanation
from sklearn.datasets import load_iris
from sklearn.ensemble import ExtraTreesRegressor, RandomForestClassifier
from sklearn.linear_model import LinearRegression

import xai_plugins as xp
from xai_plugins.acme import AcME
from xai_plugins.interpret import AcMEExplainer, LocalMDIExplainer, PG2Explainer


def test_entry_points_register_the_explainers():
    from interpret.ext.blackbox import AcMEExplainer as registered_acme
    from interpret.ext.greybox import LocalMDIExplainer as registered_mdi
    from interpret.ext.greybox import PG2Explainer as registered_pg2

    assert (registered_pg2, registered_mdi, registered_acme) == (PG2Explainer, LocalMDIExplainer, AcMEExplainer)
    assert PG2Explainer.explainer_type == "specific" and AcMEExplainer.explainer_type == "blackbox"


def test_pg2_local_and_global(diabetes_frame, xgb_regressor):
    X, y = diabetes_frame
    explainer = PG2Explainer(xgb_regressor, X, sigma=0.3, max_global_rows=40)
    local = explainer.explain_local(X.iloc[:3], y.iloc[:3])
    assert isinstance(local, FeatureValueExplanation) and local.explanation_type == "local"
    greedy = xp.greedy_pg2_ranking(xgb_regressor, X.iloc[:3], sigma=0.3, background=X)
    for i in range(3):
        row = local.data(i)
        assert row["names"] == list(X.columns)
        np.testing.assert_allclose(row["scores"][greedy.ranking[i]], np.diff(greedy.pg2_path[i], prepend=0.0),
                                   rtol=1e-12)
        assert isinstance(local.visualize(i), go.Figure)
    assert list(local.selector["actual"]) == list(y.iloc[:3])
    overall = explainer.explain_global()
    assert overall.explanation_type == "global" and isinstance(overall.visualize(), go.Figure)
    assert isinstance(overall.visualize(2), go.Figure)
    rows = explainer.explain_local(X.iloc[np.sort(np.random.default_rng(0).choice(len(X), 40, replace=False))])
    np.testing.assert_allclose(overall.data()["scores"], np.mean([rows.data(i)["scores"] for i in range(40)], axis=0))


def test_local_mdi_global_is_global_mdi(diabetes_frame):
    X, y = diabetes_frame
    model = ExtraTreesRegressor(n_estimators=5, max_depth=5, random_state=0).fit(X, y)  # no bootstrap
    overall = LocalMDIExplainer(model, X, max_global_rows=len(X)).explain_global()
    np.testing.assert_allclose(overall.data()["scores"], xp.global_mdi(model), rtol=1e-12)
    assert isinstance(overall.visualize(0), go.Figure)


def test_acme_global_is_acme(diabetes_frame):
    X, y = diabetes_frame
    model = LinearRegression().fit(X, y)
    overall = AcMEExplainer(model, X, n_quantiles=10).explain_global()
    np.testing.assert_allclose(overall.data()["scores"], AcME(model, X, n_quantiles=10).explain_global().values)
    assert isinstance(overall.visualize(), go.Figure) and isinstance(overall.visualize(1), go.Figure)


def test_multiclass_needs_an_output():
    X, y = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="output="):
        PG2Explainer(model, X).explain_local(X[:2])
    local = PG2Explainer(model, X, output="2").explain_local(X[:2])
    greedy = xp.greedy_pg2_ranking(model, X[:2], background=X, output=2)
    np.testing.assert_allclose(local.data(0)["scores"][greedy.ranking[0]], np.diff(greedy.pg2_path[0], prepend=0.0),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="unknown output"):
        PG2Explainer(model, X, output="setosa").explain_local(X[:1])


def test_show_and_preserve_render(tmp_path, diabetes_frame, xgb_regressor):
    import interpret
    from interpret.provider import InlineProvider

    X, y = diabetes_frame
    explainer = PG2Explainer(xgb_regressor, X, max_global_rows=20)
    local, overall = explainer.explain_local(X.iloc[:2], y.iloc[:2]), explainer.explain_global()
    interpret.preserve(local, 0, file_name=str(tmp_path / "local.html"))
    interpret.preserve(overall, None, file_name=str(tmp_path / "global.html"))
    for name in ("local.html", "global.html"):
        assert "plotly" in (tmp_path / name).read_text()[:200_000].lower()
    interpret.set_visualize_provider(InlineProvider())
    interpret.show(overall)
    interpret.show(local)


def test_bad_input(diabetes_frame, xgb_regressor):
    X, y = diabetes_frame
    with pytest.raises(xp.UnsupportedModelError):
        LocalMDIExplainer(xgb_regressor, X)
    with pytest.raises(ValueError, match="background data"):
        PG2Explainer(xgb_regressor).explain_global()
    with pytest.raises(ValueError, match="y has"):
        PG2Explainer(xgb_regressor, X).explain_local(X.iloc[:2], y.iloc[:3])
    with pytest.raises(ValueError, match="sigma_units"):
        PG2Explainer(xgb_regressor, X, sigma_units="percent")
    with pytest.raises(ValueError, match="single output"):
        PG2Explainer(xgb_regressor, X, output=1).explain_local(X.iloc[:1])
