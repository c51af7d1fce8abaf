"""AcME: paper identities, brute-force oracles written from §4.1-4.3 and the released code, bad input."""

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402
from sklearn.ensemble import IsolationForest, RandomForestClassifier, RandomForestRegressor  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import ndcg_score  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from xai_plugins.acme import AcME  # noqa: E402
from xai_plugins.errors import (  # noqa: E402
    FeatureMismatchError,
    InputError,
    InputIndexError,
    InputTypeError,
    UnsupportedModelError,
    XaiWarning,
)


# ----------------------------------------------------------------------------- models
class Fn:
    """A model given by a function of the (n, d) array; counts its calls and rows."""

    def __init__(self, fn):
        self.fn, self.calls, self.rows = fn, 0, []

    def predict(self, X):
        self.calls += 1
        self.rows.append(len(X))
        return self.fn(np.asarray(X, dtype=float))


def nonlinear(X):
    return np.sin(X[:, 0]) + X[:, 1] ** 2 + X[:, 0] * X[:, 2] + 0.0 * X[:, 3]


def data(n=60, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# ----------------------------------------------------------------------------- oracles
def paper_oracle(f, X, Q, baseline, robust=False, categorical=()):
    """Loop over features, one model call per Z_j: eq. 2 and 3 exactly as printed."""
    levels = np.linspace(0.05, 0.95, Q) if robust else np.linspace(0, 1, Q)
    fb = f(baseline[None])[0]
    out = []
    for j in range(X.shape[1]):
        grid = np.unique(X[:, j]) if j in categorical else np.quantile(X[:, j], levels)
        Z = np.tile(baseline, (grid.size, 1))
        Z[:, j] = grid
        y = f(Z)
        delta = np.zeros_like(y) if np.ptp(y) == 0 else (y - fb) / np.std(y) * np.ptp(y)
        out.append(np.mean(np.abs(delta)))
    return np.array(out)


def reference_grid(X, j, Q, center):
    levels = np.linspace(0, 1, Q - 1) if Q > 2 else np.array([0.0, 1.0])
    levels = np.sort(np.append(levels, stats.percentileofscore(X[:, j], center) / 100))
    return np.quantile(X[:, j], levels)


def reference_global_oracle(f, X, Q):
    """The released code's computeACME loop: centred effects, padded variance, own level added."""
    xb = X.mean(axis=0)
    fb = f(xb[None])[0]
    out = []
    for j in range(X.shape[1]):
        Z = np.tile(xb, (Q, 1))
        Z[:, j] = reference_grid(X, j, Q, xb[j])
        y = f(Z)
        e = y - fb
        out.append(np.mean(np.abs((e - e.mean()) / np.sqrt(e.var() + 1e-4) * (y.max() - y.min()))))
    return np.array(out)


def reference_local_oracle(f, X, Q, row):
    """The released predictACME: the global grid plus the row's own value, mean |f(z) - f(x)|."""
    fx = f(row[None])[0]
    out = []
    for j in range(X.shape[1]):
        grid = np.append(reference_grid(X, j, Q, X[:, j].mean()), row[j])
        Z = np.tile(row, (grid.size, 1))
        Z[:, j] = grid
        out.append(np.mean(np.abs(f(Z) - fx)))
    return np.array(out)


# ----------------------------------------------------------------------------- identities
def test_linear_identical_marginals_importance_proportional_to_abs_beta():
    v = np.random.default_rng(1).gamma(2.0, size=300)          # skewed on purpose
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.permutation(v) for _ in range(5)])
    beta = np.array([3.0, -1.5, 0.5, 0.0, -7.0])
    g = AcME(Fn(lambda Z: Z @ beta + 4.0), X, n_quantiles=50).explain_global()
    nz = beta != 0
    ratio = g.values[nz] / np.abs(beta[nz])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-3)
    assert g.values[~nz] == 0.0


def synthetic(mu, sigma2, seed):
    """Paper §5.1: N = 200 rows of N(mu, diag(sigma2)), y = X beta + eps, a fitted linear model."""
    beta = np.array([10, 20, -10, 0.3, 1, 0, 0, -0.5])
    rng = np.random.default_rng(seed)
    X = rng.normal(mu, np.sqrt(sigma2), size=(200, 8))
    y = X @ beta + rng.normal(0, np.sqrt(10), size=200)
    return X, LinearRegression().fit(X, y), np.abs(beta) * np.sqrt(sigma2)


@pytest.mark.parametrize("mu, sigma2", [
    (np.full(8, 10.0), np.full(8, 10.0)),                                        # experiment 1
    (np.array([100, 10, 10, 10, 100, 10, 10, 100.0]),
     np.array([100, 10, 10, 10, 100, 10, 10, 100.0])),                           # experiment 2
])
@pytest.mark.parametrize("variant", ["paper", "reference"])
def test_paper_synthetic_experiments_recover_ranking(mu, sigma2, variant):
    X, model, true_scores = synthetic(mu, sigma2, seed=0)
    g = AcME(model, X, n_quantiles=50, variant=variant).explain_global()
    assert ndcg_score(true_scores[None], g.values[None]) >= 0.99


def test_shift_and_scale_invariance():
    X = data()
    base = AcME(Fn(nonlinear), X, 20).explain_global()
    shifted = AcME(Fn(lambda Z: nonlinear(Z) + 123.0), X, 20).explain_global()
    scaled = AcME(Fn(lambda Z: 3.5 * nonlinear(Z)), X, 20).explain_global()
    np.testing.assert_allclose(shifted.values, base.values, rtol=1e-9)
    np.testing.assert_allclose(scaled.values, 3.5 * base.values, rtol=1e-12)
    rows = X[:3]
    local = AcME(Fn(nonlinear), X, 20).explain_local(rows)
    local_scaled = AcME(Fn(lambda Z: 3.5 * nonlinear(Z)), X, 20).explain_local(rows)
    np.testing.assert_allclose(local_scaled.values, 3.5 * local.values, rtol=1e-12)


@pytest.mark.parametrize("variant", ["paper", "reference"])
def test_ignored_feature_and_constant_curve_give_zero(variant):
    X = data()
    acme = AcME(Fn(nonlinear), X, 15, variant=variant)
    g, loc = acme.explain_global(), acme.explain_local(X[:4])
    assert g.values[3] == 0.0 and np.all(g.values[:3] > 0)
    assert np.all(loc.values[:, 3] == 0.0)
    assert np.all(np.isfinite(g.effects)) and np.all(np.isfinite(loc.effects))


def test_paper_global_and_local_match_brute_force():
    X = data(n=40)
    acme = AcME(Fn(nonlinear), X, 12, robust=True)
    np.testing.assert_allclose(acme.explain_global().values,
                               paper_oracle(nonlinear, X, 12, X.mean(axis=0), robust=True), rtol=1e-12)
    rows = data(n=3, seed=9)
    loc = acme.explain_local(rows)
    for i, row in enumerate(rows):
        np.testing.assert_allclose(loc.values[i], paper_oracle(nonlinear, X, 12, row, robust=True), rtol=1e-12)
        np.testing.assert_allclose(loc.row_predictions[i], nonlinear(row[None])[0])
        for j in range(X.shape[1]):                      # what-if grid = f(row with x_j := value)
            table = loc.what_if(i, j)
            Z = np.tile(row, (len(table), 1))
            Z[:, j] = table["value"]
            np.testing.assert_allclose(table["prediction"], nonlinear(Z), rtol=1e-14)


def test_reference_variant_matches_released_code_loops():
    X = data(n=35)
    acme = AcME(Fn(nonlinear), X, 9, variant="reference")
    np.testing.assert_allclose(acme.explain_global().values, reference_global_oracle(nonlinear, X, 9), rtol=1e-12)
    rows = data(n=2, seed=5)
    loc = acme.explain_local(rows)
    for i, row in enumerate(rows):
        np.testing.assert_allclose(loc.values[i], reference_local_oracle(nonlinear, X, 9, row), rtol=1e-12)
    assert AcME(Fn(nonlinear), X, 2, variant="reference").grid_.sizes.tolist() == [3] * 4


def test_worked_example_in_docstring():
    X = np.arange(5.0)[:, None]
    square = Fn(lambda Z: Z[:, 0] ** 2)
    paper = AcME(square, X, 3).explain_global()
    sd = np.sqrt(416 / 9)                                   # population sd of (0, 4, 16)
    np.testing.assert_allclose(paper.grid.values, [0, 2, 4])
    np.testing.assert_allclose(paper.effects, np.array([-4, 0, 12]) * 16 / sd)
    np.testing.assert_allclose(paper.values, [16 * 16 / (3 * sd)])
    assert round(float(paper.values[0]), 2) == 12.55
    ref = AcME(square, X, 3, variant="reference").explain_global()
    np.testing.assert_allclose(ref.grid.values, [0, 2.4, 4])   # level 0.6 = percentileofscore / 100
    e = np.array([-4, 1.76, 12])
    np.testing.assert_allclose(ref.effects, (e - e.mean()) / np.sqrt(e.var() + 1e-4) * 16)
    assert round(float(ref.values[0]), 2) == 14.10
    ref2 = AcME(Fn(lambda Z: 2 * Z[:, 0] ** 2), X, 3, variant="reference").explain_global()
    assert 2 < ref2.values[0] / ref.values[0] < 2.00001            # not exactly 2: the 1e-4 padding


# ----------------------------------------------------------------------------- classification / scores
def three_classes():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    return X, LogisticRegression().fit(X, y)


def test_per_class_importances_sum_to_total_and_match_each_probability():
    X, clf = three_classes()
    acme = AcME(clf, X, 10, task="classification")
    g, loc = acme.explain_global(), acme.explain_local(X[:2])
    assert g.values.shape == (3, 3) and loc.values.shape == (2, 3, 3)
    np.testing.assert_allclose(g.total, g.values.sum(axis=1))
    np.testing.assert_allclose(g.importances.loc[g.feature_names, "importance"], g.total)
    np.testing.assert_array_equal(loc.total, loc.values[..., 0] + loc.values[..., 1] + loc.values[..., 2])
    np.testing.assert_array_equal(loc.importances.to_numpy(), loc.total)
    assert g.output_names == loc.output_names == ["0", "1", "2"] and loc.feature_names == g.feature_names
    single = AcME(Fn(lambda Z: clf.predict_proba(Z)[:, 0]), X, 10)
    one_g, one_l = single.explain_global(), single.explain_local(X[:2])
    assert one_g.output_names is None and one_g.total.shape == (3,) and one_l.total.shape == (2, 3)
    np.testing.assert_array_equal(one_l.total, one_l.values)
    for c in range(3):
        one = AcME(Fn(lambda Z, c=c: clf.predict_proba(Z)[:, c]), X, 10)
        np.testing.assert_allclose(g.values[:, c], one.explain_global().values, rtol=1e-12)
        np.testing.assert_allclose(loc.values[:, :, c], one.explain_local(X[:2]).values, rtol=1e-12)


def test_score_function_matches_model_wrapper():
    X = data(n=80)
    iso = IsolationForest(n_estimators=20, random_state=0).fit(X)
    g = AcME(None, X, 10, score_function=iso.score_samples).explain_global()
    expected = AcME(Fn(iso.score_samples), X, 10).explain_global()
    np.testing.assert_allclose(g.values, expected.values)
    assert g.output_names is None


def test_categorical_feature_uses_mode_and_levels():
    rng = np.random.default_rng(4)
    cat = np.repeat([0.0, 1.0, 5.0], [10, 6, 24])
    X = np.column_stack([rng.normal(size=40), rng.permutation(cat)])
    f = lambda Z: Z[:, 0] * (Z[:, 1] == 1.0) + 2 * Z[:, 1]  # noqa: E731
    acme = AcME(Fn(f), X, 8, categorical_features=[1])
    g = acme.explain_global()
    assert g.baseline[1] == 5.0 and X[:, 1].mean() != 5.0
    np.testing.assert_array_equal(g.grid.values[g.grid.segment(1)], [0.0, 1.0, 5.0])
    np.testing.assert_allclose(g.values, paper_oracle(f, X, 8, g.baseline, categorical=(1,)), rtol=1e-12)
    loc = acme.explain_local(X[:2])
    np.testing.assert_allclose(loc.values[1], paper_oracle(f, X, 8, X[1], categorical=(1,)), rtol=1e-12)
    with pytest.raises(InputError, match="unseen in X_background"):
        acme.explain_local(np.array([[0.3, 2.0]]))


# ----------------------------------------------------------------------------- speed property
def test_one_predict_call_global_and_one_per_batch_local():
    X = data(n=50)
    model = Fn(nonlinear)
    acme = AcME(model, X, 25)
    acme.explain_global()
    assert model.calls == 1 and model.rows == [4 * 25 + 1]
    rows = data(n=7, seed=2)
    model.calls, model.rows = 0, []
    whole = acme.explain_local(rows)
    assert model.calls == 1 and model.rows == [7 * (4 * 25 + 1)]
    batched = AcME(model, X, 25, batch_size=3)
    model.calls = 0
    parts = batched.explain_local(rows)
    assert model.calls == 3
    np.testing.assert_array_equal(parts.values, whole.values)


def test_dataframe_model_gets_named_columns_and_rows_are_reordered():
    X, y = data(n=60), data(n=60, d=1, seed=8)[:, 0]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = LinearRegression().fit(frame, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # sklearn warns on missing feature names
        acme = AcME(model, frame, 10)
        g = acme.explain_global()
        loc = acme.explain_local(frame.iloc[:3][["d", "c", "b", "a"]])
        AcME(LinearRegression().fit(X, y), frame, 10).explain_global()   # fitted without names
    assert list(g.importances.columns) == ["importance"] and g.feature_names == ["a", "b", "c", "d"]
    np.testing.assert_allclose(loc.values, acme.explain_local(X[:3]).values)
    assert acme.explain_local(frame.iloc[0]).values.shape == (1, 4)
    np.testing.assert_allclose(g.variable_quantile_matrix("b")["b"].to_numpy(),
                               np.quantile(X[:, 1], np.linspace(0, 1, 10)))
    assert len(g.quantile_table()) == 40


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("q", [1, 0, 2.5, True])
def test_bad_n_quantiles(q):
    with pytest.raises(InputError, match="n_quantiles"):
        AcME(Fn(nonlinear), data(), q)


def test_bad_background():
    X = data()
    Xc = X.copy()
    Xc[:, 2] = 1.0
    with pytest.raises(InputError, match="constant column"):
        AcME(Fn(nonlinear), Xc)
    Xn = X.copy()
    Xn[5, 1] = np.nan
    with pytest.raises(InputError, match="NaN"):
        AcME(Fn(nonlinear), Xn)


def test_bad_model_and_options():
    X, y = data(), data(d=1)[:, 0]
    with pytest.raises(UnsupportedModelError, match="predict_proba"):
        AcME(LinearRegression().fit(X, y), X, task="classification")
    with pytest.raises(InputTypeError, match="model is None"):
        AcME(None, X)
    with pytest.raises(InputTypeError, match="score_function must be callable"):
        AcME(None, X, score_function=3)
    with pytest.raises(InputError, match="task"):
        AcME(Fn(nonlinear), X, task="ranking")
    with pytest.raises(InputError, match="variant"):
        AcME(Fn(nonlinear), X, variant="shap")
    with pytest.raises(InputError, match="batch_size"):
        AcME(Fn(nonlinear), X, batch_size=0)
    with pytest.raises(InputError, match="unknown feature 'zz'"):
        AcME(Fn(nonlinear), X, categorical_features=["zz"])
    with pytest.raises(InputIndexError, match="out of range"):
        AcME(Fn(nonlinear), X, categorical_features=[4])
    with pytest.raises(InputError, match="non-finite"):
        AcME(Fn(lambda Z: np.where(Z[:, 0] > 0, Z[:, 0], np.nan)), X).explain_global()


def test_mismatched_columns():
    X, y = data(), data(d=1)[:, 0]
    frame = pd.DataFrame(X, columns=list("abcd"))
    acme = AcME(LinearRegression().fit(frame, y), frame)
    with pytest.raises(FeatureMismatchError, match="missing \\['d'\\], unexpected \\['e'\\]"):
        acme.explain_local(frame.rename(columns={"d": "e"}))
    with pytest.raises(InputError, match="columns"):
        acme.explain_local(X[:, :3])
    with pytest.raises(InputError, match="expects 4 features"):
        AcME(LinearRegression().fit(X, y), X[:, :3])
    with pytest.raises(FeatureMismatchError, match="missing \\['a'\\], unexpected \\['z'\\]"):
        AcME(LinearRegression().fit(frame, y), frame.rename(columns={"a": "z"}))


# ----------------------------------------------------------------------------- plots
def test_global_plots():
    X = data()
    g = AcME(Fn(nonlinear), X, 10).explain_global()
    ax = g.plot()
    assert ax.collections[0].get_offsets().shape == (40, 2)
    assert any(line.get_linestyle() == "--" and line.get_xdata()[0] == 0 for line in ax.lines)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == g.importances.index[0] and labels[0] == g.importances.index[-1]
    tick_y = dict(zip(labels, ax.get_yticks()))
    point_y = ax.collections[0].get_offsets()[:, 1]
    for j, name in enumerate(g.feature_names):                 # each feature's points on its own tick
        np.testing.assert_array_equal(point_y[g.grid.segment(j)], tick_y[name])
    ax = g.plot(kind="bar")
    assert len(ax.patches) == 4
    with pytest.raises(InputError, match="kind"):
        g.plot(kind="pie")
    plt.close("all")


def test_classification_and_local_plots():
    X, clf = three_classes()
    acme = AcME(clf, X, 10, task="classification")
    g, loc = acme.explain_global(), acme.explain_local(X[:2])
    assert len(g.plot().patches) == 3 * 3                     # stacked bars by default
    g.plot(kind="summary", output="2")
    with pytest.raises(InputError, match="choose one with output"):
        g.plot(kind="summary")
    ax = loc.plot(row=1, output=0)
    fx = loc.row_predictions[1, 0]
    own = ax.collections[1].get_offsets()
    np.testing.assert_allclose(own[:, 0], fx)                 # the row's own value sits at f(x)
    assert any(line.get_linestyle() == "--" and line.get_xdata()[0] == fx for line in ax.lines)
    assert len(loc.plot(row=0).patches) == 9
    with pytest.raises(InputIndexError):
        loc.plot(row=5)
    with pytest.raises(InputError, match="'whatif' or 'bar'"):
        loc.plot(kind="summary")
    plt.close("all")


# ----------------------------------------------------------------------------- task inference
def labelled_classes(labels=(0, 1, 2), n=150, d=4, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X @ rng.normal(size=(d, len(labels)))
    return X, np.asarray(labels)[np.argmax(score, axis=1)]


def class_column_oracle(model, X, c, rows, **options):
    """AcME local values of one probability column, computed through a score function."""
    return AcME(None, X, score_function=lambda Z: model.predict_proba(Z)[:, c], **options).explain_local(rows).values


def test_classifier_defaults_to_per_class_probabilities():
    X, y = labelled_classes()
    rf = RandomForestClassifier(n_estimators=15, random_state=0).fit(X, y)
    acme = AcME(rf, X, 10)
    assert acme.task == "classification"
    loc = acme.explain_local(X[:5])
    assert loc.values.shape == (5, 4, 3) and loc.output_names == ["0", "1", "2"]
    for c in range(3):
        np.testing.assert_allclose(loc.values[..., c], class_column_oracle(rf, X, c, X[:5], n_quantiles=10),
                                   rtol=1e-12)
    binary = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y == 1)
    assert AcME(binary, X, 10).explain_local(X[:3]).values.shape == (3, 4, 2)
    assert AcME(binary, X, 10).explain_global().output_names == ["False", "True"]


def test_explicit_regression_on_classifier_warns_and_explains_labels():
    X, y = labelled_classes()
    rf = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    with pytest.warns(XaiWarning, match="predicted labels"):
        acme = AcME(rf, X, 10, task="regression")
    assert acme.task == "regression" and acme.explain_local(X[:2]).values.shape == (2, 4)
    np.testing.assert_allclose(acme.explain_global().values, AcME(Fn(rf.predict), X, 10).explain_global().values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a score_function or an inferred task: no warning
        AcME(rf, X, 10, task="regression", score_function=rf.predict)
        AcME(rf, X, 10)


def test_task_inference_for_other_models():
    X, y = labelled_classes()

    class Proba(Fn):                           # not a scikit-learn estimator, but it has predict_proba
        def predict_proba(self, Z):
            p = 1 / (1 + np.exp(-Z[:, :1]))
            return np.hstack([1 - p, p])

    assert AcME(Proba(nonlinear), X, 5).task == "classification"
    assert AcME(Proba(nonlinear), X, 5, score_function=nonlinear).task == "regression"
    assert AcME(Fn(nonlinear), X, 5).task == "regression"
    assert AcME(None, X, 5, score_function=nonlinear).task == "regression"
    svc = LinearSVC().fit(X, y)                  # a classifier without predict_proba
    with pytest.raises(UnsupportedModelError, match="decision_function"):
        AcME(svc, X, 5)
    scored = AcME(svc, X, 5, score_function=svc.decision_function).explain_local(X[:2])
    assert scored.values.shape == (2, 4, 3) and scored.output_names == ["0", "1", "2"]


def small_model(kind, X, y, classifier=True):
    """A small fitted model of each library: a random forest, XGBoost or LightGBM."""
    if kind == "rf":
        forest = RandomForestClassifier if classifier else RandomForestRegressor
        return forest(n_estimators=15 if classifier else 10, random_state=0).fit(X, y)
    if kind == "xgboost":
        xgb = pytest.importorskip("xgboost")
        booster = xgb.XGBClassifier if classifier else xgb.XGBRegressor
        return booster(n_estimators=8 if classifier else 10, max_depth=3, n_jobs=1).fit(X, y)
    lgb = pytest.importorskip("lightgbm")
    booster = lgb.LGBMClassifier if classifier else lgb.LGBMRegressor
    return booster(n_estimators=8 if classifier else 10, num_leaves=7, min_child_samples=5, verbose=-1).fit(X, y)


@pytest.mark.parametrize("kind", ["rf", "xgboost", "lightgbm"])
def test_shap_explainer_classifier_slices_classes(kind):
    pytest.importorskip("shap")
    from xai_plugins.shap import AcMEExplainer

    X, y = labelled_classes()
    model = small_model(kind, X, y)
    e = AcMEExplainer(model, X)(X[:5])
    assert e.values.shape == (5, 4, 3) and list(e.output_names) == ["0", "1", "2"]
    np.testing.assert_allclose(e[..., 1].values, class_column_oracle(model, X, 1, X[:5]), rtol=1e-12)
    np.testing.assert_allclose(e[..., 2].values, class_column_oracle(model, X, 2, X[:5]), rtol=1e-12)


@pytest.mark.parametrize("kind", ["rf", "xgboost", "lightgbm"])
def test_interpret_explainer_classifier_output_by_index_or_label(kind):
    pytest.importorskip("interpret")
    from xai_plugins.interpret import AcMEExplainer

    X, y = labelled_classes()
    model = small_model(kind, X, y)
    expected = class_column_oracle(model, X, 1, X[:5], n_quantiles=10)
    for output in (1, "1"):
        local = AcMEExplainer(model, X, n_quantiles=10, output=output).explain_local(X[:5])
        for i in range(5):
            np.testing.assert_allclose(local.data(i)["scores"], expected[i], rtol=1e-12)
    if kind == "rf":                          # string labels: the name picks the class
        named = RandomForestClassifier(n_estimators=15, random_state=0).fit(X, np.array(["a", "b", "c"])[y])
        local = AcMEExplainer(named, X, n_quantiles=10, output="b").explain_local(X[:5])
        expected = class_column_oracle(named, X, 1, X[:5], n_quantiles=10)
        for i in range(5):
            np.testing.assert_allclose(local.data(i)["scores"], expected[i], rtol=1e-12)


# ----------------------------------------------------------------------------- column alignment
@pytest.mark.parametrize("kind", ["rf", "xgboost", "lightgbm"])
def test_dataframe_columns_aligned_by_name_to_the_model(kind):
    X = data(n=80)
    frame = pd.DataFrame(X, columns=list("abcd"))
    model = small_model(kind, frame, nonlinear(X), classifier=False)
    reverse = frame[list("dcba")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no missing-feature-name warnings from the model
        ordered, reversed_ = AcME(model, frame, 10), AcME(model, reverse, 10)
        assert reversed_.feature_names_ == list("abcd")
        np.testing.assert_array_equal(reversed_.background_, X)
        np.testing.assert_array_equal(reversed_.explain_global().values, ordered.explain_global().values)
        expected = ordered.explain_local(frame.iloc[:5]).values
        np.testing.assert_array_equal(reversed_.explain_local(reverse.iloc[:5]).values, expected)
        np.testing.assert_array_equal(ordered.explain_local(reverse.iloc[:5]).values, expected)
        np.testing.assert_array_equal(ordered.explain_local(reverse.iloc[0]).values, expected[:1])
    with pytest.raises(FeatureMismatchError, match="missing \\['c'\\]"):
        AcME(model, frame.drop(columns="c"), 10)
    with pytest.raises(FeatureMismatchError, match="missing \\['c'\\]"):
        ordered.explain_local(reverse.iloc[:5].drop(columns="c"))


def test_categorical_and_feature_arguments_use_the_model_order():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.integers(0, 3, 60).astype(float),
                          "c": rng.normal(size=60)})
    model = LinearRegression().fit(frame, frame["a"] + 2 * frame["b"] - frame["c"])
    reverse = frame[["c", "b", "a"]]
    by_name = AcME(model, reverse, 8, categorical_features=["b"])
    by_index = AcME(model, reverse, 8, categorical_features=[1])      # index 1 of the model's a, b, c
    np.testing.assert_array_equal(by_name.grid_.categorical, [False, True, False])
    np.testing.assert_array_equal(by_index.grid_.categorical, by_name.grid_.categorical)
    g = by_name.explain_global()
    np.testing.assert_array_equal(g.variable_quantile_matrix("c"), g.variable_quantile_matrix(2))
    np.testing.assert_array_equal(g.grid.values[g.grid.segment("b")], [0.0, 1.0, 2.0])
    assert len(by_name.explain_local(frame.iloc[:2]).what_if(0, "a")) == 8
    with pytest.raises(InputError, match="unknown feature"):
        g.grid.segment("z")
    with pytest.raises(InputIndexError):
        g.grid.segment(3)


def test_linear_model_recovers_coefficient_order():
    v = np.random.default_rng(6).normal(size=400)
    rng = np.random.default_rng(7)
    X = np.column_stack([rng.permutation(v) for _ in range(6)])    # identical marginals
    beta = np.array([0.5, -4.0, 2.0, 0.0, -1.0, 8.0])
    model = LinearRegression().fit(X, X @ beta + rng.normal(0, 0.1, size=400))
    for variant in ("paper", "reference"):
        g = AcME(model, X, 30, variant=variant).explain_global()
        np.testing.assert_array_equal(np.argsort(-g.values, kind="stable"),
                                      np.argsort(-np.abs(model.coef_), kind="stable"))
    g = AcME(model, X, 30).explain_global()
    np.testing.assert_allclose(g.values / np.abs(model.coef_), g.values[0] / abs(model.coef_[0]), rtol=1e-9)
