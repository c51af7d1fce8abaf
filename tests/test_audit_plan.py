"""The audit's run-time plan (``xai_plugins.report.plan``): deterministic (a function of the model, the data
sizes and the options, never of the clock), Monte Carlo where the exact method is estimated dearer, exact where
it is cheaper, estimates of the right order against measured CPU time, recorded in the appendix and the JSON;
and ``pgi2(sampled_from=...)``, the mixed exact / Monte Carlo PGI² the plan uses, against the exact values."""

import itertools
import json
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import RandomForestClassifier

import xai_plugins as xp
from xai_plugins.errors import InputError, InputTypeError
from xai_plugins.forest import import_model
from xai_plugins.report import audit, render
from xai_plugins.report.context import make_context
from xai_plugins.report.options import AuditOptions
from xai_plugins.report.plan import PLAN_RTOL, pg2_work, plan_audit, sample_seconds, samples_for

#: a quick audit: two explainers, the sections that read them, no Monte Carlo comparison, one σ (at which the deep
#: forest's full set is dearer exact than sampled)
QUICK = dict(explainers=("pg2", "shap"), sections=("explanations", "faithfulness"), mc_pairs=0, max_rows=4, sigma=1.0,
             progress=False)


@pytest.fixture(scope="module")
def deep_forest():
    """A fully grown 3-class forest (tens of thousands of leaves: its full set dearer exact than by Monte Carlo) and
    its data."""
    X, y = make_classification(n_samples=1500, n_features=6, n_informative=4, n_classes=3, random_state=0)
    model = RandomForestClassifier(n_estimators=60, bootstrap=False, random_state=0).fit(X[:1200], y[:1200])
    return model, X[1200:], y[1200:], X[:1200], y[:1200]


@pytest.fixture(scope="module")
def small_forest():
    """Ten depth-3 trees: the exact method is cheap."""
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, random_state=1)
    model = RandomForestClassifier(n_estimators=10, max_depth=3, bootstrap=False, random_state=0).fit(X[:400], y[:400])
    return model, X[400:], y[400:], X[:400], y[:400]


def _plan(case, **options):
    model, X_test, y_test, X_train, y_train = case
    options = AuditOptions(**options)
    ctx = make_context(model, X_test, y_test, X_train=X_train, y_train=y_train, random_state=options.random_state)
    return plan_audit(ctx, options), ctx


def test_plan_samples_the_dear_sets_of_a_deep_forest_and_keeps_a_small_forest_exact(deep_forest, small_forest):
    deep, ctx = _plan(deep_forest, cost_target=1.0, sigma=1.0)   # at σ = 1 its full set is dearer exact
    assert deep.sampled_from is not None and deep.n_samples == samples_for(PLAN_RTOL)
    # the sampled sets start at a size whose exact cost the model estimates above a Monte Carlo's
    per_set = deep.n_samples * sample_seconds(ctx.forest, ctx.model)
    from xai_plugins.prediction_gap._exact import PRUNE_RTOL
    from xai_plugins.prediction_gap._output_view import exact_view
    from xai_plugins.report.plan import PLAN_COUNT_ROWS, explained_like

    view = exact_view(ctx.forest, ctx.output).forest        # priced under the noise at σ = 1
    costs = xp.prediction_gap._auto.exact_by_size(view, explained_like(ctx), order="importance",
                                                  noise=ctx.perturbation(1.0), prune_rtol=PRUNE_RTOL,
                                                  max_rows=PLAN_COUNT_ROWS)[1:]
    dearer = [k for k, c in enumerate(costs, start=1) if c > per_set]     # sampling starts at one of them
    assert deep.sampled_from in dearer
    assert "Monte Carlo" in deep.sections["faithfulness"].method
    assert deep.rows >= deep.rows_needed or deep.rows == min(50, len(ctx.complete_rows))
    small, _ = _plan(small_forest, cost_target=1.0)
    assert small.sampled_from is None and small.sections["faithfulness"].method == "PGI² exact"
    assert small.rows == small.rows_needed                  # the target cut the rows, not the exact method
    assert _plan(small_forest, cost_target=60.0)[0].rows == 50


def test_plan_lowers_the_rows_no_further_than_the_verdict_needs(deep_forest):
    plan, _ = _plan(deep_forest, cost_target=1e-6)
    assert plan.rows == plan.rows_needed < 50
    # a looser verdict (a wider gap between the faithfulness thresholds) needs fewer rows
    loose, _ = _plan(deep_forest, cost_target=1e-6, thresholds={"faithfulness_fail": 0.0})
    assert loose.rows_needed < plan.rows_needed
    generous, _ = _plan(deep_forest, cost_target=1e9)
    assert generous.rows == 50 and generous.sampled_from is None


def _crazy_clock(monkeypatch):
    """time.perf_counter jumping by hours at every call (a clock-driven plan would change its mind)."""
    ticks = itertools.count(0.0, 3600.0)
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))


def test_plan_and_numbers_do_not_depend_on_the_clock(deep_forest, monkeypatch):
    model, X_test, y_test, X_train, y_train = deep_forest
    options = dict(QUICK, cost_target=0.05)
    calm = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **options)
    _crazy_clock(monkeypatch)
    crazy = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **options)
    assert calm.plan == crazy.plan and calm.plan.sampled_from is not None
    assert calm.plan.to_dict() == crazy.plan.to_dict()
    first, second = calm.sections["faithfulness"], crazy.sections["faithfulness"]
    assert first.status == second.status == "ok"
    assert first.data["pgi2"].equals(second.data["pgi2"])
    assert "Monte Carlo" in first.data["method"]


def test_mixed_pgi2_agrees_with_the_exact_values(deep_forest):
    model, X_test, *_ = deep_forest
    forest = import_model(model)
    X, d = X_test[:3], forest.n_features
    rng = np.random.default_rng(0)
    rankings = np.stack([np.argsort(rng.random((len(X), d)), axis=1) for _ in range(2)])
    exact = xp.pgi2(forest, X, rankings, sigma=0.5, verbose=False)
    assert np.array_equal(xp.pgi2(forest, X, rankings, sigma=0.5, verbose=False, sampled_from=d + 1), exact)
    mixed = xp.pgi2(forest, X, rankings, sigma=0.5, verbose=False, sampled_from=d - 2, n_samples=20_000,
                    random_state=3)
    again = xp.pgi2(forest, X, rankings, sigma=0.5, verbose=False, sampled_from=d - 2, n_samples=20_000,
                    random_state=3)
    assert np.array_equal(mixed, again)                     # seeded
    assert not np.array_equal(mixed, exact)                 # the large sets were sampled
    # three of d sets sampled at ~1 % relative error each: PGI² within a few % of the exact value
    big = exact > 1e-3 * exact.max()
    assert np.all(np.abs(mixed - exact)[big] <= 0.05 * exact[big])


def test_mixed_pgi2_refuses_bad_settings(deep_forest):
    model, X_test, *_ = deep_forest
    ranking = np.arange(6)
    with pytest.raises(InputTypeError, match="sampled_from"):
        xp.pgi2(model, X_test[:2], ranking, sampled_from="5", verbose=False)
    with pytest.raises(InputError, match="n_samples"):
        xp.pgi2(model, X_test[:2], ranking, sampled_from=3, n_samples=1, verbose=False)
    with pytest.raises(InputError, match="cost_target"):
        AuditOptions(cost_target=-1.0)


@pytest.mark.parametrize("kind", ["xgboost regressor", "3-class forest"])
def test_estimate_within_a_factor_3_of_the_measured_cpu_time(kind, deep_forest):
    """A loose sanity check of the cost model on CPU time (not wall time: other processes do not count),
    the greedy ranking and 3 rankings' PGI² on 4 rows; a random forest's leaves hold every class."""
    if kind == "xgboost regressor":
        xgb = pytest.importorskip("xgboost")
        X, y = make_regression(n_samples=800, n_features=8, random_state=0)
        model = xgb.XGBRegressor(n_estimators=100, max_depth=6, n_jobs=1).fit(X, y)
    else:
        model, X, *_ = deep_forest
    forest = import_model(model)
    rows, d = X[:4], forest.n_features
    rng = np.random.default_rng(0)
    xp.pgi2(forest, rows[:1], np.arange(d), verbose=False)            # warm-up: one-off costs out of the timing
    start = time.process_time()
    greedy = xp.greedy_pg2_ranking(forest, rows, sigma=0.3, verbose=False).ranking
    stacked = np.stack([greedy] + [np.argsort(rng.random(greedy.shape), axis=1) for _ in range(2)])
    xp.pgi2(forest, rows, stacked, sigma=0.3, verbose=False)
    measured = time.process_time() - start
    estimate = pg2_work(forest, len(rows), 3, 1)
    assert estimate / 3 <= measured <= 3 * estimate, (estimate, measured)


def test_the_appendix_and_the_json_show_the_plan(deep_forest, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    checkout = Path(__file__).resolve().parents[1] / "templates"      # this checkout's templates, whichever
    monkeypatch.setattr(render, "_load", lambda name: (checkout / name).read_text(encoding="utf-8"))  # is installed
    model, X_test, y_test, X_train, y_train = deep_forest
    result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **dict(QUICK, cost_target=0.05))
    appendix = result.sections["reproducibility"]
    assert appendix.data["plan"] == result.plan.to_dict()
    table = appendix.tables[0].frame
    assert list(table["section"]) == list(result.plan.sections)
    assert "Monte Carlo" in table.set_index("section").loc["faithfulness", "method"]
    html = result.to_html()
    assert "Run-time plan" in html and f"Monte Carlo from {result.plan.sampled_from}" in html
    assert "by seeded Monte Carlo" in html                       # the faithfulness text says the method changed
    schema = json.loads(resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text("utf-8"))
    document = json.loads(result.to_json())
    jsonschema.validate(document, schema)
    assert document["plan"]["sampled from set size"] == result.plan.sampled_from


@pytest.fixture(scope="module")
def demos():
    from xai_plugins.cli import demo_models

    return {name: (model, X_test, y_test, X_train, y_train)
            for name, _, model, X_test, y_test, X_train, y_train in demo_models()}


def test_the_demo_audits_plans_meet_the_default_cost_target(demos):
    """The whole audit is priced (not the PG² work alone) and the default target holds for every demo with (almost)
    every row;
    a target the breast-cancer forest (30 features: the greedy ranking and PGI² dominate) cannot meet cuts it to
    fewer rows, not below what the verdict needs, and says so."""
    default = AuditOptions().cost_target
    plans = {name: _plan(case)[0] for name, case in demos.items()}
    for name, plan in plans.items():
        assert plan.seconds <= default and plan.rows >= 45, (name, plan.describe())
    cancer = plans["demo_breast_cancer_classification"]
    tight = _plan(demos["demo_breast_cancer_classification"], cost_target=cancer.seconds / 2)[0]
    assert tight.rows_needed <= tight.rows < 50 and tight.sampled_from is None
    assert "the verdict needs" in tight.sections["explanations"].note


def test_plan_prices_dt_sampler_and_the_local_figures(demos):
    """DT-Sampler's sampled trees and each local figure (waterfall, what-if) count in the estimate."""
    case = demos["demo_breast_cancer_classification"]
    generous = dict(cost_target=1e6)
    base = _plan(case, **generous)[0].estimate("explanations")
    assert _plan(case, dt_sampler_samples=40, **generous)[0].estimate("explanations") > base + 1.5
    assert _plan(case, n_local=4, **generous)[0].estimate("explanations") > base + 1.0
    regression = _plan(demos["demo_diabetes_regression"], **generous)[0]
    assert regression.estimate("explanations") == _plan(demos["demo_diabetes_regression"], dt_sampler_samples=40,
                                                        **generous)[0].estimate("explanations")  # not run



@pytest.mark.parametrize("kind", ["xgboost regressor", "forest without bootstrap"])
def test_the_plan_prices_the_rankings_of_the_explainers_that_give_one(kind, small_forest):
    """``Explainer.ranks`` says beforehand which explainers give the faithfulness section a ranking of the model:
    the same as those whose ranking the section scores in an audit with every explainer."""
    from xai_plugins.report.explainers import EXPLAINERS
    from xai_plugins.report.explainers import REGISTRY as explainers
    from xai_plugins.report.plan import DISTINCT_SHARE, _rankings

    if kind == "xgboost regressor":
        xgb = pytest.importorskip("xgboost")
        X, y = make_regression(n_samples=300, n_features=5, random_state=0)
        case = (xgb.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1).fit(X[:200], y[:200]), X[200:], y[200:],
                X[:200], y[:200])
    else:
        case = small_forest
    options = dict(QUICK, explainers=EXPLAINERS)
    _, ctx = _plan(case, **options)
    settings = AuditOptions(**options)
    expected = {key for key in EXPLAINERS if explainers[key].ranks(ctx, settings)}
    model, X_test, y_test, X_train, y_train = case
    result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **options)
    scored = {key for key, m in result.sections["explanations"].result.methods.items()
              if m.status == "ok" and (m.ranking is not None or m.importance is not None)}
    assert scored == expected
    assert (kind == "forest without bootstrap") == (len(expected) == len(EXPLAINERS))
    assert _rankings(ctx, settings) == pytest.approx(1 + DISTINCT_SHARE * (len(expected) - 1))
