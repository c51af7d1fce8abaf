"""The documentation says what the code does: LightGBM ``boosting_type="rf"`` matches
``predict()`` (not ``predict(raw_score=True)``), and ``global_mdi(..., in_bag=True)`` accepts a
bootstrap forest fitted with ``sample_weight`` and returns its MDI."""

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
