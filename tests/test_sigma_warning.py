"""A noise level that swamps the model's thresholds warns (NoiseScaleWarning) in every API that
takes σ — once per audit, one line in ``xai-audit`` — and ordinary noise stays silent."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins import errors
from xai_plugins.cli import main
from xai_plugins.report import audit

LIMIT = 100.0     # the documented rule: σ ≥ 100 × the range of the feature's split thresholds and the rows' values


@pytest.fixture(scope="module")
def forest_model():
    X, y = load_diabetes(return_X_y=True)
    X = X[:, :5]
    return RandomForestRegressor(n_estimators=6, max_depth=4, bootstrap=False, random_state=0).fit(X, y), X, y


def _ranges(model, rows):
    """Per feature, the range of sklearn's own split thresholds together with the rows' values
    (NaN where the trees have fewer than two distinct thresholds on it)."""
    out = []
    for j in range(rows.shape[1]):
        t = np.concatenate([e.tree_.threshold[e.tree_.feature == j] for e in model.estimators_])
        both = np.concatenate([t, rows[:, j]])
        out.append(both.max() - both.min() if len(np.unique(t)) > 1 else np.nan)
    return np.array(out)


def _noise_warnings(record):
    return [w for w in record if issubclass(w.category, errors.NoiseScaleWarning)]


def test_huge_sigma_warns_in_every_api(forest_model):
    model, X, _ = forest_model
    rows, ranking = X[:4], np.tile(np.arange(X.shape[1]), (4, 1))
    assert issubclass(errors.NoiseScaleWarning, errors.XaiWarning)
    calls = [lambda: xp.pg2(model, rows, [1, 2], sigma=1e6),
             lambda: xp.pg2(model, rows, [2], sigma=1e6, method="monte_carlo", n_samples=50, random_state=0),
             lambda: xp.pgi2(model, rows, ranking, sigma=1e6),
             lambda: xp.greedy_pg2_ranking(model, rows, sigma=1e6),
             lambda: xp.faithfulness(model, np.abs(rows), sigma=1e6)]
    for call in calls:
        with pytest.warns(errors.NoiseScaleWarning, match="times the range of the model's split thresholds"):
            call()


def test_the_rule_is_per_perturbed_feature(forest_model):
    model, X, _ = forest_model
    d, rows = X.shape[1], X[:3]
    span = _ranges(model, rows)
    assert np.isnan(span[1]) and np.isfinite(np.delete(span, 1)).all()   # the trees never split on feature 1
    below = np.where(np.isnan(span), 1e9, 0.99 * LIMIT * span)  # fewer than two thresholds: not judged
    xp.pg2(model, rows, list(range(d)), sigma=below)           # just below the limit everywhere: silent
    xp.greedy_pg2_ranking(model, rows, sigma=below)
    above = below.copy()
    above[3] = 1.01 * LIMIT * span[3]
    xp.pg2(model, rows, [0, 1, 2, 4], sigma=above)             # the wide feature is not perturbed: silent
    with pytest.warns(errors.NoiseScaleWarning, match="feature 3") as record:
        xp.pg2(model, rows, [3], sigma=above)
    assert "feature 0" not in str(record[0].message)
    xp.pg2(model, rows, [0, 1], sigma=0.3, background=X)     # the usual σ in standard deviations: silent


def test_rows_far_from_the_thresholds_are_judged_with_them(forest_model):
    """A σ far beyond the thresholds' span but not beyond the row's distance to them still matters
    (PG² grows with σ, by Monte Carlo through the model's own predict): no warning."""
    model, X, _ = forest_model
    j = 3
    span = _ranges(model, X[:0])[j]
    x = X[:1].copy()
    x[0, j] = X[:, j].max() + 2 * LIMIT * span           # far above every threshold
    values = []
    for sigma in (1.5 * LIMIT * span, 15 * LIMIT * span):
        values.append(xp.pg2(model, x, [j], sigma=sigma).value[0])
        rng = np.random.default_rng(0)
        z = np.repeat(x, 20_000, axis=0)
        z[:, j] += rng.normal(0.0, sigma, len(z))
        mc = np.mean((model.predict(z) - model.predict(x)[0]) ** 2)
        np.testing.assert_allclose(values[-1], mc, rtol=0.1)
    assert values[1] > 2 * values[0]


def test_warned_noise_is_meaningless(forest_model):
    """Why it warns: beyond the rule's limit, PG² is the two-extremes value (the perturbed feature
    pushed below or above every threshold with probability ½ each), computed here with the model's
    own predict, and no longer depends on σ."""
    model, X, _ = forest_model
    x, j = X[:2], 2
    f = model.predict(x)
    low, high = x.copy(), x.copy()
    low[:, j], high[:, j] = -1e3, 1e3
    extremes = 0.5 * (model.predict(low) - f) ** 2 + 0.5 * (model.predict(high) - f) ** 2
    for sigma in (1e6, 1e8):
        with pytest.warns(errors.NoiseScaleWarning):
            value = xp.pg2(model, x, [j], sigma=sigma).value
        np.testing.assert_allclose(value, extremes, rtol=1e-4)


def test_audit_warns_once(forest_model):
    model, X, y = forest_model
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = audit(model, X[300:340], y[300:340], X_train=X[:300], y_train=y[:300], sigma=[0.3, 1e6],
                       explainers=("pg2",), sections=("faithfulness",), max_rows=3, mc_pairs=0, progress=False)
    noise = _noise_warnings(record)
    assert len(noise) == 1
    assert result.sections["faithfulness"].status == "ok"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        audit(model, X[300:340], y[300:340], X_train=X[:300], y_train=y[:300], sigma=[0.3], explainers=("pg2",),
              sections=("faithfulness",), max_rows=3, mc_pairs=0, progress=False)
    assert not _noise_warnings(record)


def test_cli_prints_the_warning_once(forest_model, tmp_path, capsys):
    import joblib
    import pandas as pd

    model, X, y = forest_model
    joblib.dump(model, tmp_path / "rf.joblib")
    pd.DataFrame(X[300:340]).assign(y=y[300:340]).to_csv(tmp_path / "test.csv", index=False)
    code = main(["--model", str(tmp_path / "rf.joblib"), "--trust-pickle", "--data", str(tmp_path / "test.csv"),
                 "--target", "y", "--out", str(tmp_path / "out"), "--sigma", "0.3", "1e6", "--no-pdf", "--quiet",
                 "--explainers", "pg2", "--sections", "faithfulness", "--max-rows", "3", "--mc-pairs", "0"])
    err = capsys.readouterr().err
    assert code == 0
    lines = [line for line in err.splitlines() if "split thresholds" in line]
    assert len(lines) == 1 and lines[0].startswith("xai-audit: warning: the noise is at least 100 times")
