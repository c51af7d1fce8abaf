"""The section units (report/section.py): a section registered in its own module (with a partial) is built in
the order its declared reads give, reads other sections' typed results only, declares its thresholds, and is
shown; a cycle, a read of an unknown section or an undeclared read is refused. The audit context holds more than
one model by role."""

import ast
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

from xai_plugins.errors import FeatureMismatchError, InputError
from xai_plugins.report import audit, render
from xai_plugins.report import criteria as crit
from xai_plugins.report import section as sec
from xai_plugins.report.context import CHALLENGER, CHAMPION, make_context
from xai_plugins.report.sections.explanations import Explained

SMALL = dict(explainers=["local_mdi", "shap"], sections=["explanations"], max_rows=12, mc_pairs=0, n_local=0,
             progress=False, sigma=[0.3])


@dataclass
class Spread(crit.Evidence):
    """The made-up section's typed result: its criterion (the verdict gathers it) and the largest global
    importance of each explainer."""

    top: dict


@dataclass
class Echo:
    """A second made-up section's result, read from the first."""

    explainers: int


SPREAD_LIMIT = crit.Threshold("spread_limit", 1.0, "spread: a made-up limit", "made up for a test", "spread",
                              0.0, float("inf"), "a number ≥ 0")
SPREAD = crit.Kind("spread", crit.MODEL_FITNESS, {"pass": "narrow", "fail": "wide"},
                   lambda t: f"pass when every top importance lies ≤ {crit.named('spread_limit', t)}")


def _spread(ctx, results, options):
    """Reads the explanations section's typed result (declared)."""
    section = sec.new("spread")
    methods = results["explanations"].result.methods
    top = {m.label: float(m.importance.max()) for m in methods.values() if m.status == "ok"}
    t = options.limits
    status = crit.PASS if max(top.values()) <= t["spread_limit"] else crit.FAIL
    criterion = crit.Criterion("Spread of the importances", status, max(top.values()), None, crit.rule("spread", t),
                               f"Largest top importance {max(top.values()):.3g}.", "spread")
    section.result = Spread(criterion, top)
    section.data = {"top": top, "limit": t["spread_limit"]}
    return section


def _echo(ctx, results, options):
    """Reads the spread section's typed result (declared), built after it whatever its stage says."""
    section = sec.new("echo")
    section.result = Echo(len(results["spread"].result.top))
    section.data = {"explainers": section.result.explainers}
    return section


def _nosy(ctx, results, options):
    """Reads a section it does not declare."""
    results["model"]
    return sec.new("nosy")


@pytest.fixture
def made_up(monkeypatch):
    """The two made-up sections registered as a section module would, and their partials."""
    sec.register("echo", "Echo of the spread", reads=("spread",), result=Echo, position=125, stage=-10)(_echo)
    sec.register("spread", "Spread of the importances", reads=("explanations",), result=Spread,
                 thresholds=(SPREAD_LIMIT,), kinds=(SPREAD,), seconds=0.1, position=124, stage=-20)(_spread)
    partials = {"sections/spread.html": "<p>Top: {{ sec.data.top | fmt }}; limit {{ sec.data.limit }}.</p>",
                "sections/echo.html": "<p>{{ sec.data.explainers }} explainers echoed.</p>"}
    load = render._load
    monkeypatch.setattr(render, "_load", lambda name: partials[name] if name in partials else load(name))
    yield
    for name in ("echo", "spread"):
        sec.unregister(name)


@pytest.fixture(scope="module")
def data():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = GradientBoostingRegressor(n_estimators=6, max_depth=3, random_state=0).fit(X[:300], y[:300])
    return model, X[:300], y[:300], X[300:340], y[300:340]


def test_a_made_up_section_is_built_after_what_it_reads_and_shown(data, made_up):
    model, X_train, y_train, X_test, y_test = data
    order = sec.compute_order()
    # the stages (−20, −10) would put them first; their reads put them after the explanations, echo after spread
    assert order.index("explanations") < order.index("spread") < order.index("echo")
    assert sec.render_order().index("spread") == sec.render_order().index("fairness") + 1
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, thresholds={"spread_limit": 2.5}, **SMALL)
    spread, echo = a.sections["spread"], a.sections["echo"]
    assert spread.status == "ok" and echo.status == "ok", (spread.reason, echo.reason)
    assert spread.result.top == {m.label: float(m.importance.max()) for m in a.methods.values() if m.status == "ok"}
    assert echo.data["explainers"] == len(spread.result.top) == 2
    assert spread.data["limit"] == 2.5 and a.verdict.thresholds["spread_limit"] == 2.5
    # its criterion joins the model-fitness verdict, with its words, without a change to the verdict section
    judged = a.verdict.criterion("spread")
    assert judged == [spread.result.criterion] and judged[0] in a.verdict.model_fitness.criteria
    assert judged[0].word == {"pass": "narrow", "fail": "wide"}[judged[0].status]
    assert sec.compute_order().index("spread") < sec.compute_order().index("verdict")
    assert a.plan.estimate("spread") == pytest.approx(0.1)
    assert list(a.sections).index("spread") < list(a.sections).index("echo") < list(a.sections).index("limitations")
    html = a.to_html()
    assert "2 explainers echoed." in html and "Spread of the importances" in html
    assert a.to_dict()["sections"]["spread"]["data"]["limit"] == 2.5


def test_a_made_up_sections_threshold_leaves_with_it(made_up):
    assert crit.limits({"spread_limit": 3})["spread_limit"] == 3
    with pytest.raises(InputError, match="spread_limit must lie in"):
        crit.limits({"spread_limit": -1})
    sec.unregister("spread")
    sec.register("spread", "Spread", reads=("explanations",), position=124, stage=0)(_spread)   # for the fixture
    with pytest.raises(InputError, match="unknown threshold"):
        crit.limits({"spread_limit": 3})
    assert "spread" not in crit.VERDICT_OF_KIND and "spread" not in crit.WORDS


def test_an_undeclared_read_raises_through_the_audit(data):
    model, X_train, y_train, X_test, y_test = data
    sec.register("nosy", "Nosy", position=200, stage=0)(_nosy)
    try:
        with pytest.raises(sec.UndeclaredRead, match="'nosy' reads 'model' without declaring it"):
            audit(model, X_test, y_test, **SMALL)
    finally:
        sec.unregister("nosy")


def test_a_cycle_or_an_unknown_read_has_no_compute_order():
    def unit(name, *reads):
        return sec.Unit(name, name, _echo, tuple(reads))

    with pytest.raises(sec.SectionOrderError, match="cycle among a, b"):
        sec.compute_order({"a": unit("a", "b"), "b": unit("b", "a"), "c": unit("c")})
    with pytest.raises(sec.SectionOrderError, match=r"'a' reads \['z'\]"):
        sec.compute_order({"a": unit("a", "z")})
    with pytest.raises(sec.SectionOrderError, match="each read every other section"):
        sec.compute_order({"a": unit("a", sec.EVERY), "b": unit("b", sec.EVERY)})
    assert sec.compute_order({"b": unit("b", "a"), "a": unit("a"), "c": unit("c", sec.EVERY)}) == ("a", "b", "c")


def _literal_reads(fn: ast.AST) -> set:
    """The section names a module reads as ``results["x"]`` or ``results.get("x")``."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "results":
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "results" and node.args):
            key = node.args[0]
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            out.add(key.value)
    return out


def test_every_section_declares_what_it_reads():
    import xai_plugins.report.sections as package

    root = Path(package.__file__).parent
    for name in sec.REGISTRY:
        module = root / f"{name}.py" if (root / f"{name}.py").exists() else root / name / "__init__.py"
        read = _literal_reads(ast.parse(module.read_text(encoding="utf-8")))
        assert read <= sec.dependencies()[name], (name, read - sec.dependencies()[name])
    assert sec.compute_order() == package.COMPUTE_ORDER
    assert sec.REGISTRY["explanations"].result is Explained


def test_the_context_holds_models_by_role(data):
    model, X_train, y_train, X_test, y_test = data
    ctx = make_context(model, X_test, y_test, X_train=X_train, y_train=y_train)
    assert list(ctx.models) == [CHAMPION]
    assert ctx.models[CHAMPION].model is ctx.model and ctx.models[CHAMPION].forest is ctx.forest
    challenger = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X_train, y_train)
    held = ctx.add_model(CHALLENGER, challenger)
    assert list(ctx.models) == [CHAMPION, CHALLENGER] and held.model is challenger
    np.testing.assert_allclose(held.forest.predict_fn(X_test).ravel(), challenger.predict(X_test))
    with pytest.raises(InputError, match="already holds"):
        ctx.add_model(CHALLENGER, challenger)
    narrow = RandomForestRegressor(n_estimators=2, random_state=0).fit(X_train.iloc[:, :3], y_train)
    with pytest.raises(FeatureMismatchError):
        ctx.add_model("other", narrow)
