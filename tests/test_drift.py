"""Train-vs-test drift: PSI by hand, the KS test against scipy, the PSI noise level by simulation, the rule."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from xai_plugins.errors import InputError
from xai_plugins.report import verdict as vd
from xai_plugins.report.sections import drift


def test_psi_by_hand_on_a_tiny_example():
    train = np.arange(10.0)                       # deciles 0, 1, ..., 8: one training value per bin
    test = np.array([0.0] * 5 + [9.0] * 5)        # half in the first bin, half in the last
    edges = drift.bin_edges(train)
    np.testing.assert_array_equal(edges, np.arange(9.0))
    e, a = drift.bin_shares(train, edges), drift.bin_shares(test, edges)
    # by hand: two bins 0.1 -> 0.5, eight bins 0.1 -> 0 (raised to 1e-4), the missing bin 0 -> 0 (no term)
    expected = 2 * (0.5 - 0.1) * math.log(0.5 / 0.1) + 8 * (1e-4 - 0.1) * math.log(1e-4 / 0.1)
    assert drift.psi(e, a) == pytest.approx(expected, rel=1e-12)
    assert drift.psi(e, e) == 0.0


def test_missing_values_are_a_bin_of_their_own():
    train = np.arange(10.0)
    test = np.r_[np.arange(8.0), np.nan, np.nan]   # 20 % missing where training had none
    shares = drift.bin_shares(test, drift.bin_edges(train))
    assert shares[-1] == pytest.approx(0.2) and shares.sum() == pytest.approx(1.0)
    psi = drift.psi(drift.bin_shares(train, drift.bin_edges(train)), shares)
    by_hand = 2 * (1e-4 - 0.1) * math.log(1e-4 / 0.1) + (0.2 - 1e-4) * math.log(0.2 / 1e-4)
    assert psi == pytest.approx(by_hand, rel=1e-12)


def test_ks_matches_scipy_and_is_bonferroni_corrected():
    rng = np.random.default_rng(0)
    X_train = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300), "c": rng.integers(0, 2, 300)})
    X_test = pd.DataFrame({"a": rng.normal(0.3, 1, 200), "b": rng.normal(size=200), "c": rng.integers(0, 2, 200)})
    X_test.loc[:9, "b"] = np.nan
    table = drift.drift_table(X_train, X_test)
    for name in X_test.columns:
        test = X_test[name].dropna().to_numpy(dtype=float)
        ks = stats.ks_2samp(X_train[name].to_numpy(dtype=float), test)
        assert table.loc[name, "test"] == "KS"
        assert table.loc[name, "statistic"] == ks.statistic
        assert table.loc[name, "p-value"] == ks.pvalue
        assert table.loc[name, "p-value (Bonferroni)"] == min(1.0, 3 * ks.pvalue)
    assert table.loc["c", "bins"] == 2                 # a 0/1 column: bins ≤ 0 and > 0
    assert table.loc["b", "test missing"] == pytest.approx(0.05)
    assert list(table["PSI"]) == sorted(table["PSI"], reverse=True)


def test_psi_noise_level_matches_simulation():
    """Two samples of one distribution: the mean PSI over many draws is close to (B − 1)(1/n + 1/m)."""
    rng = np.random.default_rng(1)
    n, m = 600, 300
    values = []
    for _ in range(300):
        train, test = rng.normal(size=n), rng.normal(size=m)
        edges = drift.bin_edges(train)
        values.append(drift.psi(drift.bin_shares(train, edges), drift.bin_shares(test, edges)))
    assert np.mean(values) == pytest.approx(drift.psi_noise(10, n, m), rel=0.15)


def _frames(shift, n_train, n_test, seed=0):
    rng = np.random.default_rng(seed)
    return (pd.DataFrame({"x": rng.normal(size=n_train), "z": rng.normal(size=n_train)}),
            pd.DataFrame({"x": rng.normal(shift, 1, n_test), "z": rng.normal(size=n_test)}))


def test_rule_major_moderate_unconfirmed_and_none():
    X_train, X_test = _frames(1.0, 2000, 2000)
    table = drift.drift_table(X_train, X_test)
    assert table.loc["x", "drift"] == drift.MAJOR and table.loc["z", "drift"] == drift.NONE
    criterion = drift.drift_criterion(table, 2000, 2000)
    assert criterion.status == vd.FAIL and criterion.kind == "drift" and "x" in criterion.implication
    assert criterion.value == table.loc["x", "PSI"]
    # the same shift judged against a higher fail threshold is moderate: warn
    loose = {"drift_fail": 10.0}
    assert drift.drift_table(X_train, X_test, loose).loc["x", "drift"] == drift.MODERATE
    assert drift.drift_criterion(drift.drift_table(X_train, X_test, loose), 2000, 2000, loose).status == vd.WARN
    # no shift, large samples: pass
    X_train, X_test = _frames(0.0, 3000, 3000)
    assert drift.drift_criterion(drift.drift_table(X_train, X_test), 3000, 3000).status == vd.PASS


def test_a_large_psi_the_ks_test_does_not_confirm_is_unconfirmed():
    assert drift.feature_status(0.4, 0.3) == drift.UNCONFIRMED
    assert drift.feature_status(0.4, 0.01) == drift.MAJOR
    assert drift.feature_status(0.15, 0.3) == drift.NONE      # moderate, not confirmed: no finding
    assert drift.feature_status(0.15, 0.01) == drift.MODERATE
    X_train, X_test = _frames(0.0, 30, 8, seed=3)             # tiny test set: PSI is mostly noise
    table = drift.drift_table(X_train, X_test)
    assert (table["drift"] != drift.MAJOR).all()


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(InputError, match="X_train lacks"):
        drift.drift_table(pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"b": [1.0, 2.0]}))
    with pytest.raises(InputError, match="drift_alpha"):
        vd.limits({"drift_alpha": 1.5})
    with pytest.raises(InputError, match="drift_fail"):
        vd.limits({"drift_fail": 0.05})
