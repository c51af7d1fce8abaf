"""The explainer registry (report/explainers/): an explainer registered in one place is run by the
audit, in memory and on Dask alike, and shown by every section that lists explainers."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor

import xai_plugins as xp
from xai_plugins.errors import XaiError
from xai_plugins.report import AuditOptions, audit, explainers

SMALL = dict(mc_pairs=0, n_local=1, progress=False, sigma=[0.3, 1.0], time_budget=None)


class Distance(explainers.Explainer):
    """A tiny per-row explainer: |x_j − mean_j of the training data|, ranked by magnitude."""

    key, label, caption = "distance", "distance to the mean", "mean |x − training mean|"

    def prepare(self, ctx, options):
        return ctx.X_train.to_numpy().mean(axis=0)

    def block(self, state, X):
        values = np.abs(X - state)
        return {"importance": values, **explainers.by_magnitude(values)}

    def limitation(self, ctx, result, options, name):
        return "The distance to the mean says nothing about the model."


@pytest.fixture
def distance():
    explainers.register(Distance)
    yield explainers.get("distance")
    explainers.REGISTRY.pop("distance")


@pytest.fixture(scope="module")
def data():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = GradientBoostingRegressor(n_estimators=8, max_depth=3, random_state=0).fit(X[:300], y[:300])
    return model, X[:300], y[:300], X[300:340], y[300:340]


def _table_text(section) -> str:
    return " ".join(t.frame.to_string() for t in section.tables)


def test_a_registered_explainer_runs_and_is_shown_everywhere(data, distance):
    model, X_train, y_train, X_test, y_test = data
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=["pg2", "distance"],
              sections=["explanations", "faithfulness", "agreement"], max_rows=40, **SMALL)
    result = a.methods["distance"]
    assert result.status == "ok", result.reason
    rows = a.sections["explanations"].result.rows
    assert len(rows) == 40
    # oracle: the distance computed here, independently of the audit's runner
    values = np.abs(X_test.to_numpy()[rows] - X_train.to_numpy().mean(axis=0))
    np.testing.assert_allclose(result.importance.to_numpy(), values.mean(axis=0), rtol=1e-14)
    assert (result.ranking == np.argsort(-values, axis=1, kind="stable")).all()
    np.testing.assert_allclose(result.local_scores, values, rtol=1e-12)
    # the faithfulness table scores its ranking: the exact PGI² of the same rankings, called directly (the
    # two-valued ``sex`` perturbed by the flip law, the audit's default)
    table = a.sections["faithfulness"].data["pgi2"]
    for sigma in SMALL["sigma"]:
        noise = xp.binary_perturbation(model, X_train, sigma, features=["sex"])
        direct = xp.pgi2(model, X_test.iloc[rows], result.ranking, perturbation=noise, verbose=False)
        got = table[(table["method"] == "distance to the mean") & (table["sigma"] == sigma)]["mean"].item()
        assert got == pytest.approx(float(np.mean(direct)), rel=1e-12)
    for name in ("explanations", "faithfulness", "agreement"):
        assert a.sections[name].status == "ok", (name, a.sections[name].reason)
        assert "distance to the mean" in _table_text(a.sections[name]), name
    assert "mean |x − training mean|" in a.sections["explanations"].figures[0].caption
    assert "The distance to the mean says nothing about the model." in a.sections["limitations"].data["items"]
    html = a.to_html()
    assert html.count("distance to the mean") >= 3


def test_a_registered_explainer_runs_on_dask_with_the_same_numbers(data, distance):
    dd = pytest.importorskip("dask.dataframe")
    model, X_train, y_train, X_test, y_test = data
    kw = dict(X_train=X_train, y_train=y_train, explainers=["local_mdi", "distance"],
              sections=["explanations", "faithfulness", "agreement"], max_shap_rows=40, **SMALL)
    frame = dd.from_pandas(X_test[X_test.columns[::-1]], npartitions=3)
    on_dask = audit(model, frame, pd.Series(y_test.to_numpy()), **kw)
    in_memory = audit(model, X_test, y_test, max_rows=40, **kw)
    assert on_dask.methods["distance"].status == "ok", on_dask.methods["distance"].reason
    pd.testing.assert_frame_equal(on_dask.sections["faithfulness"].data["pgi2"],
                                  in_memory.sections["faithfulness"].data["pgi2"], check_exact=True)
    for key in ("distance", "local_mdi"):      # exact means: the same bits whatever the blocks
        pd.testing.assert_series_equal(on_dask.methods[key].importance, in_memory.methods[key].importance,
                                       check_exact=True)


def test_a_broken_block_fails_that_method_only(data, distance, monkeypatch):
    model, X_train, y_train, X_test, y_test = data
    monkeypatch.setattr(Distance, "block", lambda self, state, X: {"importance": np.abs(X - state)})
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=["pg2", "distance"],
              sections=["explanations"], max_rows=10, **SMALL)
    assert a.methods["pg2"].status == "ok"
    assert a.methods["distance"].status == "failed"
    assert "'distance'" in a.methods["distance"].reason and "ranking" in a.methods["distance"].reason


def test_options_and_registration_read_the_registry(distance):
    assert AuditOptions(explainers=["distance"]).explainers == ("distance",)
    assert AuditOptions(explainers=["distance"]).describe()["explanation methods (explainers=)"] == \
        "distance to the mean"
    explainers.REGISTRY.pop("distance")
    with pytest.raises(XaiError, match="distance"):
        AuditOptions(explainers=["distance"])
    explainers.register(Distance)                        # registering the same class again is harmless
    explainers.register(Distance)

    class Other(Distance):
        pass

    with pytest.raises(ValueError, match="registered twice"):
        explainers.register(Other)


def test_every_builtin_explainer_is_registered_with_a_label_and_caption():
    assert explainers.EXPLAINERS == ("shap", "pg2", "local_mdi", "acme", "dt_sampler", "mcr")
    for key in explainers.EXPLAINERS:
        e = explainers.get(key)
        assert e.key == key and e.label and e.caption and e.__doc__
    assert [k for k, e in explainers.REGISTRY.items() if e.reference] == ["pg2"]


def test_dt_sampler_stops_at_three_in_four_predictions(monkeypatch):
    """The audit asks DT-Sampler for trees reaching 90, 85, 80 then 75 % of the model's predictions and calls
    it not applicable below that (at 70 % the issue-22 wine forest's sampling took 277 s)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from xai_plugins.dt_sampler import DTSampler
    from xai_plugins.dt_sampler.samplers import UnsatisfiableError
    from xai_plugins.report import audit

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    model = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X[:300], y[:300])
    tried = []

    def refute(self, *args, **kwargs):
        tried.append(self.min_accuracy)
        raise UnsatisfiableError("no such tree")

    monkeypatch.setattr(DTSampler, "fit", refute)
    result = audit(model, X[300:360], y[300:360], X_train=X[:300], y_train=y[:300], explainers=["dt_sampler"],
                   sections=["explanations"], progress=False)
    assert tried == [0.9, 0.85, 0.8, 0.75]
    method = result.sections["explanations"].data["methods"]["DT-Sampler"]
    assert method["status"] == "not applicable" and "at least 75% of the model's predicted classes" in method["reason"]
