"""The audit's default perturbation of two-valued features: the binary flip law, wired in
``AuditContext.noise``, recorded in the settings and the limitations, off with ``binary_flip=False`` /
``--no-binary-flip``; exact PG² against a Monte Carlo through the model's own predict with the flip drawn
here, for a DataFrame whose columns come in another order than the model's too."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins.report import audit
from xai_plugins.report.context import make_context
from xai_plugins.report.pgi2_of_rankings import monte_carlo_convergence

SMALL = dict(explainers=["pg2"], sections=["faithfulness"], max_rows=8, mc_pairs=0, progress=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n = 400
    X = pd.DataFrame({"age": rng.normal(50, 10, n), "smoker": rng.choice([0.0, 1.0], n, p=[0.7, 0.3]),
                      "bmi": rng.normal(25, 4, n)})
    y = 0.05 * X["age"] + 3 * X["smoker"] + 0.2 * X["bmi"] + X["smoker"] * (X["bmi"] > 26) + 0.1 * rng.normal(size=n)
    model = RandomForestRegressor(n_estimators=20, max_depth=5, random_state=0).fit(X[:300], y[:300])
    return model, X[:300], y[:300].to_numpy(), X[300:], y[300:].to_numpy()


def _monte_carlo(model, X_train, x, S, sigma, n, seed):
    """PG² of row ``x`` (a one-row DataFrame in the model's column order) by Monte Carlo through
    ``model.predict``: the 0/1 column keeps its value with probability ρ = 2Φ(−1/(2σ)) and is otherwise drawn
    from its training frequencies, the others get Gaussian noise of σ training standard deviations."""
    rng = np.random.default_rng(seed)
    rho = 2 * stats.norm.cdf(-0.5 / sigma)
    Z = pd.DataFrame(np.repeat(x.to_numpy(), n, axis=0), columns=x.columns)
    for name in S:
        if name == "smoker":
            redraw = rng.random(n) < rho
            fresh = (rng.random(n) < X_train["smoker"].mean()).astype(float)
            Z[name] = np.where(redraw, fresh, Z[name])
        else:
            Z[name] = Z[name] + rng.normal(0.0, sigma * X_train[name].std(ddof=0), n)
    gaps = (model.predict(Z) - model.predict(x)[0]) ** 2
    return gaps.mean(), gaps.std(ddof=1) / np.sqrt(n)


@pytest.mark.parametrize("order", [["age", "smoker", "bmi"], ["bmi", "age", "smoker"]])
def test_binary_column_gets_the_flip_exactly(data, order):
    """Exact PG² of the audit's noise (default: the flip on ``smoker``) within 4.5 standard errors of the Monte
    Carlo oracle, and far from Gaussian noise on ``smoker``; the same numbers whatever the column order."""
    model, X_train, y_train, X_test, y_test = data
    ctx = make_context(model, X_test[order], y_test, X_train=X_train[order], y_train=y_train, progress=False)
    assert [n for n, b in zip(ctx.feature_names, ctx.binary_features) if b] == ["smoker"]
    sigma = 0.4
    noise = ctx.noise(sigma)
    for S in (["smoker"], ["smoker", "bmi"], ["age", "smoker", "bmi"]):
        idx = [ctx.feature_names.index(name) for name in S]
        for i in range(3):
            x = X_test.iloc[[i]]
            exact = float(xp.pg2(ctx.forest, ctx.X_test.iloc[[i]], idx, **noise).value[0])
            mc, se = _monte_carlo(model, X_train, x, S, sigma, 40000, seed=i)
            assert abs(exact - mc) <= 4.5 * se + 1e-12, (S, i, exact, mc, se)
    x = X_test.iloc[[0]]
    gaussian = float(xp.pg2(model, x, ["smoker"], sigma=sigma, background=X_train).value[0])
    flip = float(xp.pg2(ctx.forest, ctx.X_test.iloc[[0]], [ctx.feature_names.index("smoker")], **noise).value[0])
    assert abs(gaussian - flip) > 0.1 * max(gaussian, flip)


def test_monte_carlo_comparison_draws_the_same_flip(data):
    """The faithfulness section's exact-vs-Monte-Carlo comparison reads the same perturbation: its Monte Carlo
    values agree with exact to within their standard errors on every pair."""
    model, X_train, y_train, X_test, y_test = data
    ctx = make_context(model, X_test, y_test, X_train=X_train, y_train=y_train, progress=False)
    table, _ = monte_carlo_convergence(ctx, np.arange(10), 1.0, 6, seed=5)
    largest = table[table["n_samples"] == table["n_samples"].max()]
    assert (np.abs(largest["mc"] - largest["exact"]) <= 5 * largest["stderr"] + 1e-12).all(), largest


def test_audit_records_the_flip_and_can_turn_it_off(data):
    model, X_train, y_train, X_test, y_test = data
    kw = dict(X_train=X_train, y_train=y_train, sigma=[0.3], **SMALL)
    flip = audit(model, X_test, y_test, **kw)
    off = audit(model, X_test, y_test, binary_flip=False, **kw)
    assert flip.parameters["binary_flip"] is True and off.parameters["binary_flip"] is False
    rows = flip.sections["faithfulness"].result.rows
    greedy = flip.methods["pg2"].ranking
    want = xp.pgi2(model, X_test.iloc[rows], greedy, perturbation=xp.binary_perturbation(model, X_train, 0.3,
                                                                                          features=["smoker"]))
    np.testing.assert_allclose(flip.sections["faithfulness"].result.pgi2[0.3]["greedy"], want, rtol=1e-12)
    rows, greedy = off.sections["faithfulness"].result.rows, off.methods["pg2"].ranking
    want = xp.pgi2(model, X_test.iloc[rows], greedy, sigma=0.3, background=X_train)
    np.testing.assert_allclose(off.sections["faithfulness"].result.pgi2[0.3]["greedy"], want, rtol=1e-12)
    said = " ".join(flip.sections["limitations"].data["items"])
    assert "take only two values (smoker)" in said and "perturbed by a flip" in said and "binary_flip=False" in said
    assert "Gaussian noise of σ (the flip perturbation was turned off)" in " ".join(
        off.sections["limitations"].data["items"])
    assert "flip law" in flip.to_html()


def test_cli_turns_the_flip_off():
    from xai_plugins.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["--no-binary-flip"]).binary_flip is False
    assert parser.parse_args(["--binary-flip"]).binary_flip is True
    assert not hasattr(parser.parse_args([]), "binary_flip")          # left to AuditOptions' default (on)
