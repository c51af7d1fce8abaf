"""Champion/challenger audits: the comparison section's deltas, reliance shifts, faithfulness and agreement on the
same rows, and the promotion verdict; checked against direct computations (scikit-learn's scores, the models'
own PG²) and against what the data were built to show (a challenger that cannot use a feature moves its reliance
to that feature's proxy)."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.metrics import r2_score

import xai_plugins as xp
from xai_plugins.cli import main
from xai_plugins.errors import FeatureMismatchError, InputError
from xai_plugins.report import audit

FAST = dict(explainers=("shap", "pg2", "local_mdi"), max_rows=30, sigma=(0.3, 1.0), mc_pairs=0, n_local=0,
            progress=False)


@pytest.fixture(scope="module")
def proxy_data():
    """y = 2 a + c; b is a noisy copy of a (its proxy), d is noise. The champion sees every column; the challenger
    was trained with a held constant, so it cannot use a and must use b instead."""
    rng = np.random.default_rng(0)
    n = 600
    a = rng.normal(size=n)
    X = pd.DataFrame({"a": a, "b": a + rng.normal(scale=0.3, size=n), "c": rng.normal(size=n),
                      "d": rng.normal(size=n)})
    y = 2 * X.a + X.c + rng.normal(scale=0.1, size=n)
    champion = RandomForestRegressor(n_estimators=20, max_depth=5, bootstrap=False, max_features=0.75,
                                     random_state=0).fit(X[:400], y[:400])
    blind = X[:400].assign(a=0.0)
    challenger = RandomForestRegressor(n_estimators=20, max_depth=5, bootstrap=False, max_features=0.75,
                                       random_state=0).fit(blind, y[:400])
    return X, y, champion, challenger


def _audit(champion, challenger, X, y, **options):
    return audit(champion, X[400:], y[400:], X_train=X[:400], y_train=y[:400], challenger=challenger,
                 **{**FAST, **options})


def test_an_identical_challenger_changes_nothing_and_passes(proxy_data):
    X, y, champion, _ = proxy_data
    twin = RandomForestRegressor(**champion.get_params()).fit(X[:400], y[:400])      # refitted: the same trees
    a = _audit(champion, twin, X, y, protected=["a"])
    found = a.sections["comparison"].result
    for table in (found.deltas, found.reliance, found.faithfulness):
        assert (table["Δ"] == 0).all(), table
        assert ((table["Δ low"] <= 0) & (table["Δ high"] >= 0)).all(), table
    assert (found.agreement["Kendall τ"] == 1).all()
    assert a.promotion.status == "pass", a.promotion.headline
    assert {c.kind for c in a.promotion.criteria} == {"promotion: performance", "promotion: fairness",
                                                      "promotion: explanations", "promotion: reliance"}


def test_a_challenger_that_cannot_use_a_feature_moves_its_reliance_to_the_proxy(proxy_data):
    X, y, champion, challenger = proxy_data
    a = _audit(champion, challenger, X, y, protected=["a"])
    reliance = a.sections["comparison"].result.reliance
    assert reliance.loc["a", "challenger"] == 0                 # never split on: no movement at all
    assert reliance.loc["a", "Δ high"] < 0 < reliance.loc["b", "Δ low"]
    assert reliance.loc["b", "Δ"] > 0.2
    # b is a proxy of the protected a: its reliance moved by far more than the margin, so promotion fails on it
    judged = [c for c in a.promotion.criteria if c.kind == "promotion: reliance"]
    assert len(judged) == 1 and judged[0].status == "fail" and "b" in judged[0].explanation
    assert a.promotion.status == "fail"
    assert any("Reliance on b rises" in text for text in a.sections["comparison"].result.findings)


def test_shares_and_scores_equal_direct_computations(proxy_data):
    X, y, champion, challenger = proxy_data
    a = _audit(champion, challenger, X, y)
    found = a.sections["comparison"].result
    r2 = found.deltas.loc["test R²"]
    assert r2["champion"] == pytest.approx(r2_score(y[400:], champion.predict(X[400:])), rel=1e-12)
    assert r2["challenger"] == pytest.approx(r2_score(y[400:], challenger.predict(X[400:])), rel=1e-12)
    rows = X[400:].to_numpy()[a.sections["explanations"].result.rows]
    noise = dict(sigma=1.0, background=X[:400].to_numpy())
    every = xp.pg2(challenger, rows, [0, 1, 2, 3], verbose=False, **noise).value.mean()
    for j, name in enumerate(X.columns):
        share = xp.pg2(challenger, rows, [j], verbose=False, **noise).value.mean() / every
        assert found.reliance.loc[name, "challenger"] == pytest.approx(share, rel=1e-12)


def test_a_probability_champion_and_a_margin_challenger_compare_by_shares():
    """An RF classifier (probability output) against gradient boosting (margin): the shares of each model are those
    of its own explained output, and the performance delta is balanced accuracy's."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import balanced_accuracy_score

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    champion = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X[:350], y[:350])
    challenger = GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0).fit(X[:350], y[:350])
    a = audit(champion, X[350:], y[350:], X_train=X[:350], y_train=y[:350], challenger=challenger, **FAST)
    section = a.sections["comparison"]
    assert section.data["explained output"]["challenger"].startswith("the margin")
    accuracy = section.result.deltas.loc["test balanced accuracy"]
    assert accuracy["challenger"] == pytest.approx(balanced_accuracy_score(y[350:], challenger.predict(X[350:])))
    rows = X[350:].to_numpy()[a.sections["explanations"].result.rows]
    noise = dict(sigma=1.0, background=X[:350].to_numpy())
    every = xp.pg2(challenger, rows, list(range(5)), verbose=False, **noise).value.mean()
    share = xp.pg2(challenger, rows, [2], verbose=False, **noise).value.mean() / every
    assert section.result.reliance.iloc[2]["challenger"] == pytest.approx(share, rel=1e-12)
    brier = section.result.deltas.loc["Brier score of class 1 (lower is better)"]
    p = challenger.predict_proba(X[350:])[:, 1]
    assert brier["challenger"] == pytest.approx(np.mean((p - (y[350:] == 1)) ** 2))


def test_models_that_cannot_be_compared_are_refused(proxy_data):
    X, y, champion, _ = proxy_data
    other_columns = RandomForestRegressor(n_estimators=3, random_state=0).fit(X[["a", "b", "c"]][:400], y[:400])
    with pytest.raises(FeatureMismatchError):
        _audit(champion, other_columns, X, y)
    classifier = RandomForestClassifier(n_estimators=3, random_state=0).fit(X[:400], y[:400] > 0)
    with pytest.raises(InputError, match="classification"):
        _audit(champion, classifier, X, y)


def test_the_json_carries_the_promotion_and_validates(proxy_data):
    from importlib import resources

    import jsonschema

    X, y, champion, challenger = proxy_data
    a = _audit(champion, challenger, X, y)
    data = json.loads(a.to_json())
    schema = json.loads(resources.files("xai_plugins.report").joinpath("audit.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    promotion = data["sections"]["comparison"]["data"]["promotion"]
    assert promotion["status"] == a.promotion.status
    without = audit(champion, X[400:], y[400:], X_train=X[:400], y_train=y[:400], **FAST)
    assert without.promotion is None and without.sections["comparison"].status == "skipped"


def test_the_cli_compares_two_model_files_and_gates_on_promotion(tmp_path, proxy_data, capsys):
    import skops.io

    X, y, champion, challenger = proxy_data
    for name, model in (("champion", champion), ("challenger", challenger)):
        skops.io.dump(model, tmp_path / f"{name}.skops")
    X.assign(y=y)[400:].to_csv(tmp_path / "test.csv", index=False)
    X.assign(y=y)[:400].to_csv(tmp_path / "train.csv", index=False)
    common = ["--model", str(tmp_path / "champion.skops"), "--data", str(tmp_path / "test.csv"), "--train",
              str(tmp_path / "train.csv"), "--target", "y", "--out", str(tmp_path / "out"), "--no-pdf", "--quiet",
              "--max-rows", "20", "--sigma", "0.3", "1.0", "--explainers", "shap", "pg2", "--mc-pairs", "0",
              "--protected", "a"]
    assert main([*common, "--challenger", str(tmp_path / "challenger.skops"), "--fail-on", "promotion:fail"]) == 1
    captured = capsys.readouterr()
    assert "promotion: FAIL" in captured.out and "--fail-on promotion:fail" in captured.err
    manifest = json.loads((tmp_path / "out" / "champion.manifest.json").read_text())
    assert "challenger" in {entry["role"] for entry in manifest["inputs"]}
    # without a challenger the promotion gate cannot pass
    assert main([*common, "--fail-on", "promotion:fail"]) == 1
    assert "no promotion verdict was computed" in capsys.readouterr().err
