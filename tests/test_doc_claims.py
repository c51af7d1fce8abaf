"""The documentation says what the code does: LightGBM ``boosting_type="rf"`` matches
``predict()`` (not ``predict(raw_score=True)``), ``global_mdi(..., in_bag=True)`` accepts a
bootstrap forest fitted with ``sample_weight`` and returns its MDI, ``rho=`` works on Dask input as in
memory, and ``benchmarks/bench_dask.py`` names the data it measured."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins
import xai_plugins as xp
from xai_plugins.mdi import global_mdi

SUPPORTED_MODELS = Path(xai_plugins.__file__).resolve().parents[1] / "docs" / "user_guide" / "supported_models.md"


def _sentence_about(text: str, needle: str) -> str:
    flat = " ".join(text.split())
    return " ".join(s for s in re.split(r"(?<=[.;])\s", flat) if needle in s)


def test_lightgbm_rf_matches_predict_as_documented():
    lightgbm = pytest.importorskip("lightgbm")
    X, y = load_diabetes(return_X_y=True)
    model = lightgbm.LGBMRegressor(boosting_type="rf", n_estimators=15, subsample=0.7, subsample_freq=1,
                                   verbose=-1).fit(X, y)
    ours = np.asarray(xp.import_model(model).predict(X)).ravel()
    np.testing.assert_allclose(ours, model.predict(X), rtol=1e-12, atol=1e-9)
    assert np.abs(ours - model.predict(X, raw_score=True)).max() > 1.0        # the raw score is the sum
    if not SUPPORTED_MODELS.is_file():
        pytest.skip("the docs are not beside the package (installed wheel)")
    claim = _sentence_about(SUPPORTED_MODELS.read_text(encoding="utf-8"), 'boosting_type="rf"')
    assert "`predict()`" in claim and "not `predict(raw_score=True)`" in claim


def test_in_bag_with_sample_weight_is_accepted_and_right():
    X, y = load_diabetes(return_X_y=True)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(X))
    model = RandomForestRegressor(n_estimators=8, max_depth=4, random_state=0).fit(X, y, sample_weight=w)
    expected = np.mean([t.tree_.compute_feature_importances(normalize=False) for t in model.estimators_], axis=0)
    np.testing.assert_allclose(global_mdi(model, X, in_bag=True), expected, rtol=1e-10, atol=1e-12 * expected.max())
    doc = " ".join(global_mdi.__doc__.split())
    assert "fit without ``sample_weight``" not in doc
    assert "fitted with ``sample_weight`` or ``class_weight``" in doc and "is accepted" in doc


def test_rho_works_on_dask_input_as_documented():
    """The categorical redraw probability ``rho=`` is accepted on Dask rows (once documented as refused) and
    gives the in-memory numbers bit for bit."""
    lightgbm = pytest.importorskip("lightgbm")
    da = pytest.importorskip("dask.array")
    import dask
    import pandas as pd

    rng = np.random.default_rng(0)
    codes, x = rng.integers(0, 4, 300), rng.normal(size=300)
    frame = pd.DataFrame({"c": pd.Categorical(codes), "x": x})
    model = lightgbm.LGBMRegressor(n_estimators=5, min_child_samples=5, verbose=-1).fit(frame, codes + x)
    rows = np.column_stack([codes, x])[:20].astype(float)
    lazy = da.from_array(rows, chunks=(7, 2))
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(xp.pg2(model, lazy, [0, 1], rho=0.4).value.compute(),
                                      xp.pg2(model, rows, [0, 1], rho=0.4).value)
        ranking = xp.greedy_pg2_ranking(model, lazy, rho=0.4).compute().ranking
    np.testing.assert_array_equal(ranking, xp.greedy_pg2_ranking(model, rows, rho=0.4).ranking)
    docs = [p for p in SUPPORTED_MODELS.parents[2].glob("**/*.md") if "_build" not in p.parts]
    assert not any("not yet with dask" in p.read_text(encoding="utf-8") for p in docs)


def test_bench_dask_names_the_data_it_measured(tmp_path):
    """Without the California housing file the benchmark measures scikit-learn's diabetes, and its result
    lines (which carry the data's name) say so."""
    script = SUPPORTED_MODELS.parents[2] / "benchmarks" / "bench_dask.py"
    if not script.is_file():
        pytest.skip("the benchmarks are not beside the package (installed wheel)")
    spec = importlib.util.spec_from_file_location("bench_dask", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    name, X, _ = bench.load(tmp_path / "california_housing.csv")
    assert name.startswith("diabetes (fallback: California housing not found at ") and X.shape == (442, 10)
    assert script.read_text(encoding="utf-8").count('print(f"[{name}] ') == 4     # every result line
