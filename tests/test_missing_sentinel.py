"""XGBoost's ``missing=`` sentinel and GradientBoosting ``init=`` estimators.

An ``XGBRegressor(missing=-999.0)`` reads -999 as missing, as it reads NaN: the Forest records the
sentinel and turns it into NaN wherever rows enter, so predict, PG² (exact and sampled), the
background's standard deviations and AcME see what the model sees. The oracles are XGBoost's own:
``model.predict``, and its own routing (``pred_leaf``) summed in float64 (``oracle.xgboost_leaf_sum``).
A GradientBoosting model whose ``init`` is an estimator adds an x-dependent baseline that no leaf
sum holds: it is refused by name (a constant init keeps working)."""

import numpy as np
import pytest
from scipy import stats

import xai_plugins as xp
from xai_plugins.acme import AcME
from xai_plugins.errors import InputError, UnsupportedModelError
from xai_plugins.forest import import_model

from oracle import xgboost_leaf_sum

xgb = pytest.importorskip("xgboost")

SENTINEL = -999.0


def sentinel_data(sentinel=SENTINEL, n=400, seed=0):
    """Four features; the first three have ~20% cells missing (set to ``sentinel``), and the target
    depends on which are missing, so every tree routes the sentinel by its default direction."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    missing = rng.random((n, 4)) < 0.2
    missing[:, 3] = False
    y = 2 * X[:, 0] + X[:, 1] ** 2 - X[:, 2] + 0.5 * X[:, 3] + 3.0 * missing[:, 0] - 2.0 * missing[:, 1]
    X[missing] = sentinel
    return X, y


def fit(kind, sentinel=SENTINEL):
    X, y = sentinel_data(sentinel)
    common = dict(n_estimators=25, max_depth=3, learning_rate=0.3, random_state=0, n_jobs=1, missing=sentinel)
    if kind == "reg":
        return xgb.XGBRegressor(**common).fit(X, y), X
    if kind == "binary":
        return xgb.XGBClassifier(**common).fit(X, (y > np.median(y)).astype(int)), X
    return xgb.XGBClassifier(**common).fit(X, np.digitize(y, np.quantile(y, [0.33, 0.66]))), X


def margin(model, X):
    return np.asarray(model.predict(X, output_margin=True), dtype=np.float64).reshape(len(X), -1)


@pytest.mark.parametrize("kind", ["reg", "binary", "multiclass"])
@pytest.mark.parametrize("sentinel", [SENTINEL, -999.1, 0.0])
def test_forest_predict_reads_the_sentinel_as_missing(kind, sentinel):
    model, X = fit(kind, sentinel)
    forest = import_model(model)
    rows = X[np.isin(X, [sentinel]).sum(axis=1) >= 1][:60].copy()
    assert (np.sum(rows == sentinel, axis=1) >= 2).any()         # several features missing in one row
    # a float64 value one step beside the sentinel is the same float32: XGBoost reads it as missing too
    rows[0, 3] = np.nextafter(np.float64(sentinel), np.inf)
    ref = margin(model, rows)
    tol = 2e-6 * max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(forest.predict(rows), ref, rtol=0, atol=tol)
    np.testing.assert_allclose(forest.predict_fn(rows), ref, rtol=0, atol=tol)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rows, columns=[f"f{j}" for j in range(4)])
    np.testing.assert_allclose(forest.predict(frame), ref, rtol=0, atol=tol)
    assert forest.missing_value == sentinel


def test_user_rows_are_not_changed():
    model, X = fit("reg")
    X = np.ascontiguousarray(X[:20])
    before = X.copy()
    import_model(model).predict(X)
    xp.pg2(model, X[np.all(X[:, :1] != SENTINEL, axis=1)], [0], sigma=0.5)
    np.testing.assert_array_equal(X, before)


def monte_carlo_pg2(model, x, S, sigma, n=40_000, seed=0):
    """PG² by Monte Carlo through the model's own ``predict`` (output margin): (mean, stderr) per output."""
    rng = np.random.default_rng(seed)
    Z = np.repeat(x[None, :], n, axis=0)
    Z[:, S] += rng.normal(0.0, sigma, size=(n, len(S)))
    gap = (margin(model, Z) - margin(model, x[None, :])) ** 2
    return gap.mean(axis=0), gap.std(axis=0, ddof=1) / np.sqrt(n)


@pytest.mark.parametrize("kind", ["reg", "binary"])
def test_exact_pg2_matches_monte_carlo_through_the_models_own_predict(kind):
    model, X = fit(kind)
    S = [2, 3]
    # rows whose perturbed features are present and whose other features hold the sentinel
    rows = X[(X[:, 2] != SENTINEL) & ((X[:, 0] == SENTINEL) | (X[:, 1] == SENTINEL))][:4]
    assert len(rows) == 4
    exact = np.asarray(xp.pg2(model, rows, S, sigma=0.8).value).reshape(len(rows), -1)
    for i, x in enumerate(rows):
        mean, se = monte_carlo_pg2(model, x, S, 0.8, seed=i)
        assert np.all(np.abs(exact[i] - mean) <= 4 * se + 1e-9), (i, exact[i], mean, se)
    # the package's own Monte Carlo calls the model with its sentinel too
    sampled = xp.pg2(model, rows, S, sigma=0.8, method="monte_carlo", n_samples=20_000, random_state=0)
    value, se = (np.asarray(a).reshape(len(rows), -1) for a in (sampled.value, sampled.stderr))
    assert np.all(np.abs(exact - value) <= 4 * se + 1e-9)


def test_exact_pg2_equals_the_grid_of_xgboosts_own_routing():
    """Exact PG² of one perturbed feature against a dense quadrature of the model's own leaf sums."""
    model, X = fit("reg")
    x = X[(X[:, 3] != SENTINEL) & (X[:, 0] == SENTINEL) & (X[:, 1] == SENTINEL)][0]
    u = np.linspace(-9.0, 9.0, 200_001)         # standard-normal nodes for feature 3, sigma = 0.5
    Z = np.repeat(x[None, :], len(u), axis=0)
    Z[:, 3] = x[3] + 0.5 * u
    f = xgboost_leaf_sum(model, Z, SENTINEL)[:, 0]
    fx = xgboost_leaf_sum(model, x[None, :], SENTINEL)[0, 0]
    w = stats.norm.pdf(u) * (u[1] - u[0])
    reference = float(np.sum(w * (f - fx) ** 2))
    exact = float(np.asarray(xp.pg2(model, x[None, :], [3], sigma=0.5).value)[0])
    assert exact == pytest.approx(reference, rel=2e-3, abs=1e-9)


def test_perturbing_the_sentinel_is_refused_naming_it():
    model, X = fit("reg")
    row = X[X[:, 0] == SENTINEL][:1]
    with pytest.raises(InputError, match="sentinel -999.0"):
        xp.pg2(model, row, [0])
    with pytest.raises(InputError, match="sentinel -999.0"):           # one rule: pgi2 / greedy perturb every feature
        xp.pgi2(model, row, [0, 1, 2, 3])
    with pytest.raises(InputError, match="sentinel -999.0"):
        xp.greedy_pg2_ranking(model, row)


def test_background_sentinel_is_left_out_of_the_standard_deviations():
    model, X = fit("reg")
    rows = X[(X[:, 1] != SENTINEL)][:3]
    as_nan = np.where(X == SENTINEL, np.nan, X)
    with_sentinel = xp.pg2(model, rows, [1], sigma=0.3, background=X).value
    with_nan = xp.pg2(model, rows, [1], sigma=0.3, background=as_nan).value
    np.testing.assert_array_equal(with_sentinel, with_nan)


def test_acme_refuses_the_sentinel_like_nan():
    model, X = fit("reg")
    with pytest.raises(InputError, match=r"X_background contains the model's missing value -999\.0"):
        AcME(model, X, n_quantiles=5)
    clean = X[np.all(X != SENTINEL, axis=1)]
    explainer = AcME(model, clean, n_quantiles=5)
    with pytest.raises(InputError, match=r"X_rows contains the model's missing value -999\.0"):
        explainer.explain_local(X[X[:, 2] == SENTINEL][:2])


def test_a_bare_booster_reads_only_nan_as_missing():
    """A Booster carries no sentinel (it lives in the DMatrix): NaN is missing, -999 a value."""
    model, X = fit("reg")
    booster = model.get_booster()
    forest = import_model(booster)
    rows = X[:40]
    as_nan = np.where(rows == SENTINEL, np.nan, rows)
    for Z in (rows, as_nan):
        ref = np.asarray(booster.inplace_predict(Z, predict_type="margin"), dtype=np.float64).reshape(-1, 1)
        np.testing.assert_allclose(forest.predict(Z), ref, rtol=0, atol=2e-6 * max(1.0, np.abs(ref).max()))
    np.testing.assert_allclose(forest.predict(as_nan), margin(model, rows), rtol=0, atol=1e-4)


def test_changing_the_sentinel_imports_the_model_again():
    model, X = fit("reg")
    rows = X[:40].copy()
    rows[::2, 1] = -1.0
    np.testing.assert_allclose(import_model(model).predict(rows), margin(model, rows), rtol=0, atol=1e-4)
    model.set_params(missing=-1.0)          # now -1 is missing and -999 a value
    np.testing.assert_allclose(import_model(model).predict(rows), margin(model, rows), rtol=0, atol=1e-4)
    assert import_model(model).missing_value == -1.0


def _numbers(tree, path=""):
    """The leaves of an audit's ``to_dict()`` by path, timings and dates left out."""
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, list):
        items = enumerate(tree)
    else:
        return {} if any(w in path for w in ("seconds", "timings", "created", "Date")) else {path: tree}
    return {k: v for key, sub in items for k, v in _numbers(sub, f"{path}/{key}").items()}


def test_the_audit_reads_the_sentinel_as_it_reads_nan():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("jinja2")
    from xai_plugins.report import audit

    X, y = sentinel_data(n=260)
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, missing=SENTINEL, random_state=0, n_jobs=1).fit(X, y)

    def run(data):
        return audit(model, data[200:], y[200:], X_train=data[:200], y_train=y[:200], random_state=0,
                     sections=["explanations", "faithfulness"], explainers=["pg2"], max_rows=8, progress=False)

    with_sentinel, with_nan = run(X), run(X.mask(X == SENTINEL))
    assert with_sentinel.sections["faithfulness"].status == "ok"
    assert _numbers(with_sentinel.to_dict()) == _numbers(with_nan.to_dict())


# ----------------------------------------------------------------------------- GradientBoosting init=

def gb_models():
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = 3 * X[:, 0] + X[:, 1] + rng.normal(size=200)
    return X, y, (y > 0).astype(int), GradientBoostingRegressor, GradientBoostingClassifier


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_gradient_boosting_with_an_estimator_init_is_refused(task):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LinearRegression, LogisticRegression

    X, y, yc, Reg, Clf = gb_models()
    inits = [LinearRegression()] if task == "regression" else [LogisticRegression(),
                                                                 DummyClassifier(strategy="stratified")]
    for init in inits:
        model = (Reg(n_estimators=5, init=init).fit(X, y) if task == "regression"
                 else Clf(n_estimators=5, init=init).fit(X, yc))
        with pytest.raises(UnsupportedModelError, match=rf"init={type(init).__name__}.*init=None"):
            import_model(model)
        with pytest.raises(UnsupportedModelError, match="init"):
            xp.pg2(model, X[:2], [0])
