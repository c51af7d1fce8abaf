"""Certified reason codes: protected attributes are never reasons, the certificate equals a direct computation
(PG² of the reasons over PG² of a greedy set found here row by row), an unfaithful explanation is flagged."""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingClassifier

import xai_plugins as xp
from xai_plugins.errors import InputError


@pytest.fixture(scope="module")
def credit():
    rng = np.random.default_rng(8)
    n = 500
    frame = pd.DataFrame({"income": rng.normal(size=n), "debt": rng.normal(size=n), "sex": rng.integers(0, 2, n)
                          .astype(float), "zip_area": rng.normal(size=n), "noise": rng.normal(size=n)})
    frame["zip_area"] += 1.5 * frame["sex"]                           # a proxy of sex
    y = 1.5 * frame["income"] - frame["debt"] + 2.0 * frame["sex"] + 0.1 * rng.normal(size=n)
    model = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(frame, y)
    return model, frame


def _direct_greedy(model, x, allowed, size, sigma):
    """PG² of the greedy set of ``size`` allowed features for one row, step by step with xp.pg2."""
    chosen: list[int] = []
    value = 0.0
    for _ in range(size):
        scores = {j: float(xp.pg2(model, x[None], [*chosen, j], sigma).value[0]) for j in allowed if j not in chosen}
        j = max(scores, key=lambda f: (scores[f], -f))
        chosen.append(j)
        value = scores[j]
    return value


def test_a_protected_attribute_is_never_a_reason_even_when_it_matters_most(credit):
    model, frame = credit
    explained = xp.tree_shap(model, frame[:30])
    assert (np.abs(explained.values[:, 2]) > 0.5).mean() > 0.5             # sex drives the score
    codes = xp.reason_codes(model, frame[:30], k=3, protected=["sex"], proxies={"zip_area": "sex"})
    assert "sex" not in set(codes.reasons["feature"]) and codes.protected == ["sex"]
    flagged = codes.reasons[codes.reasons["feature"] == "zip_area"]
    assert (flagged["proxy"] == "sex").all() and (codes.reasons[codes.reasons["feature"] != "zip_area"]["proxy"]
                                                   == "").all()


def test_the_certificate_equals_a_direct_computation(credit):
    model, frame = credit
    X = frame.to_numpy()
    codes = xp.reason_codes(model, frame[:6], k=2, protected=["sex"], sigma=0.5)
    allowed = [0, 1, 3, 4]
    for i, row in codes.rows.iterrows():
        reasons = codes.reasons[codes.reasons["row"] == i].sort_values("rank")
        features = [list(frame.columns).index(f) for f in reasons["feature"]]
        assert len(features) == row["reasons"] == 2
        direct = float(xp.pg2(model, X[i][None], features, 0.5).value[0])
        assert row["reasons_pg2"] == pytest.approx(direct, rel=1e-12)
        assert reasons["pg2_contribution"].sum() == pytest.approx(direct, rel=1e-12)
        best = _direct_greedy(model, X[i], allowed, 2, 0.5)
        assert row["best_pg2"] == pytest.approx(best, rel=1e-12)
        assert row["certificate"] == pytest.approx(direct / best, rel=1e-12)


def test_a_faithful_explanation_is_certified_and_an_unfaithful_one_is_flagged(credit):
    model, frame = credit
    faithful = xp.reason_codes(model, frame[:40], k=2, protected=["sex"])
    assert faithful.rows["certified"].mean() > 0.9
    wrong = np.zeros((40, 5))
    wrong[:, 4], wrong[:, 3] = 10.0, 5.0                                # "noise" and "zip_area" as the reasons
    unfaithful = xp.reason_codes(model, frame[:40], k=2, explanation=wrong, protected=["sex"])
    assert set(unfaithful.reasons["feature"]) == {"noise", "zip_area"}
    assert unfaithful.rows["certified"].mean() < 0.1
    assert (unfaithful.rows["certificate"] < faithful.rows["certificate"]).mean() > 0.9
    summary = unfaithful.summary([0.5, 0.8])
    assert list(summary["threshold"]) == [0.5, 0.8] and summary["share"].iloc[1] == pytest.approx(
        unfaithful.rows["certified"].mean())


def test_directions_values_and_categories(credit):
    model, frame = credit
    codes = xp.reason_codes(model, frame[:10], k=1, protected=["sex"])
    explained = xp.tree_shap(model, frame[:10]).values
    for _, line in codes.reasons.iterrows():
        j = list(frame.columns).index(line["feature"])
        assert line["value"] == frame.iloc[line["row"], j]
        assert line["direction"] == ("raises" if explained[line["row"], j] > 0 else "lowers")
    rng = np.random.default_rng(3)
    cats = pd.DataFrame({"grade": pd.Categorical(rng.choice(["A", "B", "C"], 300)), "x": rng.normal(size=300)})
    y = (cats["grade"] == "C") | (cats["x"] > 1)
    hgb = HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype", random_state=0).fit(cats, y)
    coded = xp.reason_codes(hgb, cats[:10], k=2)
    assert set(coded.reasons[coded.reasons["feature"] == "grade"]["value"]) <= {"A", "B", "C"}


def test_a_missing_value_is_not_a_reason(credit):
    from sklearn.ensemble import HistGradientBoostingRegressor

    _, frame = credit
    model = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(frame, frame["income"] - frame["debt"])
    rows = frame[:5].copy()
    rows.loc[rows.index[0], "income"] = np.nan
    codes = xp.reason_codes(model, rows, k=4, protected=["sex"])
    assert "income" not in set(codes.reasons[codes.reasons["row"] == 0]["feature"])
    assert codes.rows["reasons"].iloc[0] >= 1 and np.isfinite(codes.rows["certificate"].iloc[0])


def test_bad_input_is_refused(credit):
    model, frame = credit
    with pytest.raises(InputError, match="k must be"):
        xp.reason_codes(model, frame[:3], k=0)
    with pytest.raises(InputError, match="certify_at"):
        xp.reason_codes(model, frame[:3], certify_at=1.5)
    with pytest.raises(InputError, match="every feature is protected"):
        xp.reason_codes(model, frame[:3], protected=list(frame.columns))
    with pytest.raises(InputError, match="shape"):
        xp.reason_codes(model, frame[:3], explanation=np.zeros((3, 2)))


def test_xai_audit_reasons_writes_one_line_per_reason(credit, tmp_path, capsys):
    from xai_plugins.cli import main

    lightgbm = pytest.importorskip("lightgbm")
    model, frame = credit
    booster = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1).fit(frame, model.predict(frame)).booster_
    booster.save_model(tmp_path / "model.txt")
    frame[:40].assign(customer=np.arange(40) + 1000, y=0.0).to_csv(tmp_path / "data.csv", index=False)
    argv = ["reasons", "--model", str(tmp_path / "model.txt"), "--data", str(tmp_path / "data.csv"), "--target", "y",
            "--id-cols", "customer", "--k", "2", "--protected", "sex", "--proxy", "zip_area=sex", "--out",
            str(tmp_path / "reasons.csv")]
    assert main(argv) == 0
    written = pd.read_csv(tmp_path / "reasons.csv")
    assert len(written) == 80 and set(written["customer"]) == set(range(1000, 1040))
    assert "sex" not in set(written["feature"])
    assert (written.loc[written["feature"] == "zip_area", "proxy"] == "sex").all()
    assert "certified at 0.8" in capsys.readouterr().out
    strict = 1 if (written["certificate"] < 1.0).any() else 0           # a certificate below 1 fails at 1.0
    assert main([*argv[:-2], "--out", str(tmp_path / "r2.csv"), "--certify-at", "1.0", "--fail-uncertified"]) == strict
    assert main([*argv[:-2], "--out", str(tmp_path / "r2.csv"), "--certify-at", "0.01", "--fail-uncertified"]) == 0
    assert main([*argv[:-4], "--proxy", "zip_area", "--out", str(tmp_path / "r3.csv")]) == 2
    assert "COL=ATTR" in capsys.readouterr().err
    assert main([*argv[:-2], "--out", str(tmp_path / "data.csv")]) == 2
    assert "one of the input files" in capsys.readouterr().err


def test_the_audit_decisions_section_scores_every_shap_and_certifies_the_reasons(credit):
    import json

    from xai_plugins.report import audit

    model, frame = credit
    y = model.predict(frame)
    result = audit(model, frame[400:], y[400:], X_train=frame[:400], y_train=y[:400], protected=["sex"],
                   sections=("explanations", "decisions"), explainers=("shap", "pg2"), progress=False)
    section = result.sections["decisions"]
    assert section.status == "ok", section.reason
    scored = set(section.data["which shap"])
    assert {"path-dependent TreeSHAP", "interventional TreeSHAP", "shap TreeExplainer"} <= scored
    assert set(section.data["certified share"]) == {"0.5", "0.8", "0.9", "0.95"}
    shares = list(section.data["certified share"].values())
    assert shares == sorted(shares, reverse=True) and 0.0 <= shares[-1] <= shares[0] <= 1.0
    assert json.loads(result.to_json())["sections"]["decisions"]["data"]["reasons by"] == section.data["reasons by"]
