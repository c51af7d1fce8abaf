"""Calibration: ECE by hand, Brier score and the reliability table against scikit-learn, intervals, the rule."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from xai_plugins.errors import InputError
from xai_plugins.report import verdict as vd
from xai_plugins.report.sections import calibration


def test_ece_by_hand():
    # one row per bin: ECE is the mean of |y − p|
    y, p = np.array([0, 1, 1, 0]), np.array([0.05, 0.15, 0.95, 0.85])
    assert calibration.expected_calibration_error(y, p) == pytest.approx((0.05 + 0.85 + 0.05 + 0.85) / 4)
    # two rows in one bin [0.3, 0.4): |(0 + 1) − (0.32 + 0.38)| / 2, errors inside a bin cancel
    assert calibration.expected_calibration_error([0, 1], [0.32, 0.38]) == pytest.approx(0.15)
    # a probability of exactly 1 is in the last bin, with 0.95: |2 − 1.95| / 2
    assert calibration.expected_calibration_error([1, 1], [1.0, 0.95]) == pytest.approx(0.025)


def test_brier_and_reliability_match_scikit_learn():
    rng = np.random.default_rng(0)
    p = rng.random(500)
    y = (rng.random(500) < p ** 1.5).astype(int)
    assert calibration.brier_score(y, p) == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    table = calibration.reliability_table(y, p)
    true, pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    np.testing.assert_allclose(table["observed frequency"], true, rtol=1e-12)
    np.testing.assert_allclose(table["mean predicted probability"], pred, rtol=1e-12)
    assert table["test rows"].sum() == 500
    # ECE is the row-weighted mean gap of the reliability table
    gap = np.sum(table["test rows"] * (table["observed frequency"] - table["mean predicted probability"]).abs()) / 500
    assert calibration.expected_calibration_error(y, p) == pytest.approx(gap, rel=1e-12)


def test_vectorised_ece_equals_row_by_row():
    rng = np.random.default_rng(1)
    p = rng.random((4, 50))
    y = (rng.random((4, 50)) < p).astype(float)
    np.testing.assert_allclose(calibration.expected_calibration_error(y, p, axis=-1),
                               [calibration.expected_calibration_error(a, b) for a, b in zip(y, p)], rtol=1e-12)


def test_intervals_and_the_rule():
    rng = np.random.default_rng(2)
    p = rng.random(3000)
    calibrated = calibration.assess((rng.random(3000) < p).astype(int), p, random_state=0)
    assert calibrated.brier_ci.low <= calibrated.brier <= calibrated.brier_ci.high
    assert calibrated.ece_ci.rows == 3000 and calibrated.ece_ci.low < calibrated.ece_ci.high
    assert calibration.calibration_criterion(calibrated, "p").status == vd.PASS
    over = calibration.assess((rng.random(3000) < p ** 4).astype(int), p, random_state=0)   # far too high
    criterion = calibration.calibration_criterion(over, "the predicted probability of class 1")
    assert over.ece_ci.low > 0.15 and criterion.status == vd.FAIL and criterion.kind == "calibration"
    assert criterion.word == "miscalibrated" and "recalibration" in criterion.implication
    # the same result against a looser fail threshold warns: the thresholds are settable
    assert calibration.calibration_criterion(over, "p", {"calibration_fail": 0.9}).status == vd.WARN


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(InputError, match="0 or 1"):
        calibration.assess([0, 2], [0.1, 0.2])
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        calibration.assess([0, 1], [0.1, 1.2])
    with pytest.raises(InputError, match="one probability per label"):
        calibration.assess([0, 1, 1], [0.1, 0.2])
    with pytest.raises(InputError, match="calibration_fail"):
        vd.limits({"calibration_fail": 0.01})
