"""A failing method or section is visible (section status, summary, HTML, CLI stderr, --strict exit
status); limitations follow what ran; AcME runs on data with missing values (LightGBM)."""

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import xai_plugins as xp
from xai_plugins.cli import main
from xai_plugins.report import audit, explainers
from xai_plugins.report import sections as registry

SMALL = dict(max_rows=6, max_shap_rows=30, mc_pairs=1, acme_quantiles=6, n_local=1, progress=False)


@pytest.fixture(scope="module")
def data():
    from sklearn.ensemble import RandomForestRegressor

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5].assign(smoker=(X["s5"] > 0).astype(float))         # one 0/1 column the model splits on
    y = y + 150 * X["smoker"]
    model = RandomForestRegressor(n_estimators=6, max_depth=3, bootstrap=False, random_state=0).fit(X[:300], y[:300])
    assert model.feature_importances_[-1] > 0.1
    return model, X[:300], y[:300], X[300:380], y[300:380]


def _boom(*args, **kwargs):
    raise RuntimeError("boom")


def test_a_failing_method_is_visible(data, monkeypatch):
    model, X_train, y_train, X_test, y_test = data
    monkeypatch.setattr(type(explainers.get("acme")), "block", _boom)
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=["pg2", "acme"],
              sections=["explanations"], **SMALL)
    assert a.methods["acme"].status == "failed" and "boom" in a.methods["acme"].reason
    assert a.sections["explanations"].status == "warn" and "AcME failed" in a.sections["explanations"].reason
    assert a.failed and any(p["what"] == "method AcME" for p in a.problems)
    assert a.sections["summary"].status == "warn"
    html = a.to_html()
    assert "This audit is incomplete" in html and "method AcME failed: RuntimeError: boom" in html


def test_a_failing_section_is_caught_and_shown(data, monkeypatch):
    model, X_train, y_train, X_test, y_test = data
    failing = dataclasses.replace(registry.REGISTRY["agreement"], build=_boom)
    monkeypatch.setitem(registry.REGISTRY, "agreement", failing)
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=["pg2", "local_mdi"],
              sections=["explanations", "agreement"], **SMALL)
    assert a.sections["agreement"].status == "failed" and a.sections["agreement"].reason == "RuntimeError: boom"
    assert a.sections["explanations"].status == "ok"
    assert a.failed and "Failed: RuntimeError: boom" in a.to_html()


def test_cli_prints_failures_and_strict_exits_1(data, tmp_path, capsys, monkeypatch):
    import joblib

    model, X_train, y_train, X_test, y_test = data
    joblib.dump(model, tmp_path / "model.joblib")
    X_test.assign(y=y_test).to_csv(tmp_path / "test.csv", index=False)
    monkeypatch.setattr(type(explainers.get("acme")), "block", _boom)
    argv = ["--model", str(tmp_path / "model.joblib"), "--trust-pickle", "--data", str(tmp_path / "test.csv"),
            "--target", "y", "--explainers", "pg2", "acme", "--sections", "explanations", "--no-pdf", "--quiet",
            "--max-rows", "6", "--mc-pairs", "0"]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "xai-audit: warning:" in err and "method AcME failed: RuntimeError: boom" in err
    assert main(argv + ["--out", str(tmp_path / "b"), "--strict"]) == 1


def test_acme_runs_on_lightgbm_data_with_missing_values():
    lightgbm = pytest.importorskip("lightgbm")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5].copy()
    X.iloc[::7, 2] = np.nan                                    # LightGBM fits through NaN; AcME's grid cannot
    model = lightgbm.LGBMRegressor(n_estimators=10, max_depth=3, verbose=-1).fit(X[:300], y[:300])
    a = audit(model, X[300:360], y[300:360], X_train=X[:300], y_train=y[:300], explainers=["acme"],
              sections=["explanations"], **SMALL)
    acme = a.methods["acme"]
    assert acme.status == "ok", acme.reason
    left_out = int(X[:300].isna().any(axis=1).sum())
    assert acme.params["background rows"] == f"{300 - left_out} ({left_out} with missing values left out)"
    assert a.sections["explanations"].status == "ok" and not a.problems


def test_limitations_follow_what_ran(data):
    model, X_train, y_train, X_test, y_test = data
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, explainers=["pg2"],
              sections=["faithfulness"], **SMALL)
    text = " ".join(a.sections["limitations"].data["items"])
    for absent in ("Local MDI", "DT-Sampler", "Model class reliance", "TreeSHAP", "Kendall"):
        assert absent not in text, absent
    assert "greedy PG² ranking" in text
    assert "take only two values (sex, smoker): they were perturbed by a flip" in text


@pytest.mark.parametrize("flip", [False, True])
def test_binary_sigma_perturbs_binary_columns_less(data, flip):
    """``binary_sigma`` is the σ of the two-valued columns: of their Gaussian noise, or (the default flip) the σ
    whose ρ = 2Φ(−1/(2σ)) is their flip probability."""
    model, X_train, y_train, X_test, y_test = data
    kw = dict(X_train=X_train, y_train=y_train, explainers=["pg2"], sections=["faithfulness"], sigma=[0.3],
              binary_flip=flip, **SMALL)
    a = audit(model, X_test, y_test, binary_sigma=0.05, **kw)
    rows = a.sections["faithfulness"].result.rows
    greedy = a.methods["pg2"].ranking
    sigma = np.where(X_train.columns.isin(["sex", "smoker"]), 0.05, 0.3)  # oracle: the per-feature σ directly
    noise = (dict(perturbation=xp.binary_perturbation(model, X_train, sigma, features=["sex", "smoker"])) if flip
             else dict(sigma=sigma, background=X_train))
    expected = xp.pgi2(model, X_test.iloc[rows], greedy, **noise)
    np.testing.assert_allclose(a.sections["faithfulness"].result.pgi2[0.3]["greedy"], expected, rtol=1e-12)
    plain = audit(model, X_test, y_test, **kw).sections["faithfulness"].result.pgi2[0.3]["random"]
    assert not np.allclose(plain, a.sections["faithfulness"].result.pgi2[0.3]["random"])
    assert "σ = 0.05 (binary_sigma=)" in " ".join(a.sections["limitations"].data["items"])


def test_dt_sampler_skips_features_constant_on_its_rows():
    """A count feature that is almost always 0 (COMPAS' juvenile counts) is constant on DT-Sampler's row
    sample: the audit leaves it out of the sampled trees (emergence 0, named) instead of failing."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5].copy()
    X["rare count"] = 0.0
    X.loc[X.index[:3], "rare count"] = 1.0                    # non-zero on 3 training rows only
    model = RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False, random_state=0).fit(X[:300], y[:300])
    a = audit(model, X[300:360], y[300:360], X_train=X[300:], y_train=y[300:], explainers=["dt_sampler"],
              sections=["explanations"], dt_sampler_samples=4, dt_sampler_rows=30, **SMALL)
    dts = a.methods["dt_sampler"]
    assert dts.status == "ok", dts.reason
    assert dts.params["constant on the sampled rows (emergence 0)"] == "rare count"
    assert "rare count" not in dts.extras["features"] and dts.importance["rare count"] == 0
    assert dts.importance.sum() > 0
