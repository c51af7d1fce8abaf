"""The checks behind ``xai-audit``'s refusals, in the Python API too: verdict thresholds outside the range
of the quantity they bound, boolean noise levels, NaN attributions, and a Monte Carlo sample count that
cannot fit in memory; each a typed :class:`~xai_plugins.errors.XaiError` saying what is accepted."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins._validation import MAX_SAMPLES
from xai_plugins.errors import InputError, InputTypeError
from xai_plugins.report import AuditOptions
from xai_plugins.report.verdict import THRESHOLD_RANGES, THRESHOLDS


@pytest.fixture(scope="module")
def model_rows():
    X, y = load_diabetes(return_X_y=True)
    return RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y), X[:4]


def test_every_threshold_has_a_range_holding_its_default():
    assert set(THRESHOLD_RANGES) == set(THRESHOLDS)
    for name, (low, high, _) in THRESHOLD_RANGES.items():
        assert low <= THRESHOLDS[name].default <= high, name


@pytest.mark.parametrize("thresholds, message", [
    ({"faithfulness_pass": 2.0}, r"faithfulness_pass must lie in \[-inf, 1\] \(F ≤ 1 by construction\); got 2.0"),
    ({"adequacy_warn": -1}, r"adequacy_warn must lie in \[0, inf\]"),
    ({"agreement_fail": -1.5}, r"agreement_fail must lie in \[-1, 1\]"),
    ({"proxy_auc": 1.2}, r"proxy_auc must lie in \[0, 1\]"),
])
def test_thresholds_out_of_range_are_refused(thresholds, message):
    with pytest.raises(InputError, match=message):
        AuditOptions(thresholds=thresholds)


def test_thresholds_in_range_are_kept():
    assert AuditOptions(thresholds={"faithfulness_fail": -0.2, "agreement_pass": 1.0}).thresholds == \
        {"faithfulness_fail": -0.2, "agreement_pass": 1.0}


@pytest.mark.parametrize("sigma", [True, (0.3, True), np.bool_(True)])
def test_boolean_noise_levels_are_refused(model_rows, sigma):
    model, X = model_rows
    with pytest.raises(InputTypeError, match="not a boolean"):
        xp.pg2(model, X, [0], sigma=sigma)
    with pytest.raises(InputTypeError, match="not booleans"):
        AuditOptions(sigma=sigma)


def test_nan_attributions_are_refused(model_rows):
    model, X = model_rows
    values = np.ones((len(X), X.shape[1]))
    values[2, 5] = np.nan
    with pytest.raises(InputError, match=r"1 NaN attribution value\(s\) \(the first: row 2, feature 5\)"):
        xp.faithfulness(model, values, X=X)


def test_a_sample_count_beyond_memory_is_refused_up_front(model_rows):
    model, X = model_rows
    for call in (lambda n: xp.pg2(model, X, [0], method="monte_carlo", n_samples=n),
                 lambda n: xp.pgi2(model, X, np.arange(X.shape[1]), sampled_from=1, n_samples=n)):
        with pytest.raises(InputError, match=f"n_samples must be at most {MAX_SAMPLES:,}") as info:
            call(10**12)
        assert isinstance(info.value, ValueError)
