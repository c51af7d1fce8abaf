"""``xai-audit`` command line: clear errors (exit status 2) and a working run."""

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.cli import demo_models, main

xgboost = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    train = X.iloc[:250].assign(y=y.iloc[:250])
    test = X.iloc[250:330].assign(y=y.iloc[250:330])
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    model = xgboost.XGBRegressor(n_estimators=8, max_depth=3).fit(X.iloc[:250], y.iloc[:250])
    model.save_model(root / "model.json")
    forest = RandomForestRegressor(n_estimators=5, max_depth=3, bootstrap=False, random_state=0)
    joblib.dump(forest.fit(X.iloc[:250], y.iloc[:250]), root / "model.joblib")
    (root / "broken.json").write_text("{not a model")
    test.rename(columns={"bmi": "body mass"}).to_csv(root / "renamed.csv", index=False)
    return root


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_missing_target_column(files, capsys):
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "nope")
    assert code == 2
    assert "target column 'nope' is not in --data test.csv" in err


def test_unreadable_model(files, capsys):
    code, _, err = _run(capsys, "--model", files / "broken.json", "--data", files / "test.csv", "--target", "y")
    assert code == 2 and "cannot read model file broken.json" in err
    code, _, err = _run(capsys, "--model", files / "absent.json", "--data", files / "test.csv", "--target", "y")
    assert code == 2 and "does not exist" in err


def test_mismatched_features(files, capsys):
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "renamed.csv", "--target", "y")
    assert code == 2
    assert "columns do not match the model's features" in err and "body mass" in err


def test_pickle_needs_trust(files, capsys):
    code, _, err = _run(capsys, "--model", files / "model.joblib", "--data", files / "test.csv", "--target", "y",
                        "--out", files / "out_pickle")
    assert code == 2 and "--trust-pickle" in err
    assert not (files / "out_pickle").exists()


def test_incomplete_arguments(capsys):
    code, _, err = _run(capsys, "--model", "model.json")
    assert code == 2 and "--data, --target missing" in err


def test_xgboost_json_run_writes_the_report(files, capsys):
    out = files / "out"
    code, stdout, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                             "--train", files / "train.csv", "--out", out, "--sections", "explanations", "agreement",
                             "--explainers", "shap", "pg2", "--sigma", "0.2", "--no-pdf", "--quiet")
    assert code == 0, err
    html = (out / "model.html").read_text()
    assert "Explanation audit of model.json" in html
    assert "Not computed (skipped by user)." in html
    assert "model.json (sha256 " in html
    assert "wrote" in stdout


def test_trusted_pickle_run_writes_pdf(files, capsys):
    out = files / "out_trusted"
    code, _, err = _run(capsys, "--model", files / "model.joblib", "--data", files / "test.csv", "--target", "y",
                        "--trust-pickle", "--out", out, "--sections", "mcr", "--explainers", "local_mdi", "--quiet")
    assert code == 0, err
    assert (out / "model.pdf").read_bytes().startswith(b"%PDF")


def test_demo_models_cover_every_section():
    models = demo_models()
    assert [m[0] for m in models] == ["demo_diabetes_regression", "demo_breast_cancer_classification",
                                      "demo_diabetes_categorical_pipeline"]
    for _, _, model, X_test, y_test, X_train, y_train in models[:2]:
        assert type(model).__name__.startswith("RandomForest") and model.bootstrap is False
        assert model.n_estimators == 100 and len(X_test) + len(X_train) == len(y_test) + len(y_train)
        assert np.isfinite(X_test.to_numpy()).all() and isinstance(X_train, pd.DataFrame)


def test_the_categorical_demo_is_a_pipeline_on_text_sex_labels():
    """The third demo: the diabetes data in its own units with sex as neutral text labels, a one-hot Pipeline
    whose Forest has sex as its one categorical feature, predicting as the pipeline does."""
    from sklearn.datasets import load_diabetes

    from xai_plugins.forest import import_model

    _, _, model, X_test, _, X_train, _ = demo_models()[2]
    assert type(model).__name__ == "Pipeline"
    assert set(X_train["sex"]) == {"sex 1", "sex 2"}
    raw = load_diabetes(as_frame=True, scaled=False).data
    np.testing.assert_array_equal(X_test.drop(columns="sex").to_numpy(), raw.loc[X_test.index].drop(columns="sex"))
    assert (X_test["sex"] == raw.loc[X_test.index, "sex"].map({1.0: "sex 1", 2.0: "sex 2"})).all()
    forest = import_model(model)
    assert [forest.feature_names[j] for j in np.flatnonzero(forest.n_categories)] == ["sex"]
    np.testing.assert_allclose(forest.predict(X_test)[:, 0], model.predict(X_test), rtol=1e-12, atol=1e-9)


def test_unwritable_out_fails_before_any_work(files, capsys, monkeypatch):
    import xai_plugins.cli as cli

    monkeypatch.setattr(cli, "load_model", lambda *a: pytest.fail("the model was loaded before --out was checked"))
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--out", files / "test.csv" / "reports")
    assert code == 2 and "output folder" in err and "not a writable folder" in err
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--out", files / "test.csv")
    assert code == 2 and "is a file" in err


def test_json_that_is_not_a_model(files, capsys):
    (files / "config.json").write_text('{"learning_rate": 0.1, "trees": []}')
    code, _, err = _run(capsys, "--model", files / "config.json", "--data", files / "test.csv", "--target", "y")
    assert code == 2
    assert "it is JSON but not an XGBoost model" in err and "save_model" in err
    assert "Stack trace" not in err and "[bt]" not in err and "Invalid cast" not in err


def test_separator_is_suggested_and_used(files, capsys):
    test = pd.read_csv(files / "test.csv")
    test.to_csv(files / "semicolon.csv", sep=";", index=False)
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "semicolon.csv", "--target", "y")
    assert code == 2 and "pass --sep ';'" in err
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "semicolon.csv", "--target", "y",
                        "--sep", ";", "--out", files / "out_sep", "--explainers", "pg2", "--sections", "faithfulness",
                        "--mc-pairs", "0", "--max-rows", "4", "--no-pdf", "--quiet")
    assert code == 0, err


def test_target_must_fit_the_task(files, capsys):
    test = pd.read_csv(files / "test.csv").assign(label=lambda f: np.where(f["y"] > 150, "high", "low"))
    test.to_csv(files / "labelled.csv", index=False)
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "labelled.csv",
                        "--target", "label")
    assert code == 2 and "regressor" in err and "not numeric" in err
    X = test[["age", "sex", "bmi", "bp", "s1"]]
    clf = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(X, (test["y"] > 150).astype(int))
    clf.save_model(files / "clf.json")
    code, _, err = _run(capsys, "--model", files / "clf.json", "--data", files / "labelled.csv", "--target", "y")
    assert code == 2 and "classifier of classes ['0', '1']" in err


def test_protected_columns_and_model_card_are_checked(files, capsys):
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--protected", "race")
    assert code == 2 and "--protected column(s) ['race'] not in --data test.csv" in err
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--model-card", files / "absent.yaml")
    assert code == 2 and "--model-card file" in err and "does not exist" in err


def test_option_errors_name_the_flag(files, capsys):
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--time-budget", "-1")
    assert code == 2 and "--time-budget must be a positive number" in err
    code, _, err = _run(capsys, "--model", files / "model.json", "--data", files / "test.csv", "--target", "y",
                        "--positive-class", "1")
    assert code == 2 and "--positive-class applies to classifiers" in err


def test_flags_and_defaults_come_from_audit_options():
    from xai_plugins.cli import build_parser
    from xai_plugins.report import AuditOptions
    from xai_plugins.report.options import cli_fields

    parser = build_parser()
    flags = {a.dest: a for a in parser._actions}
    assert {f.name for f in cli_fields()} <= set(flags)
    assert f"(default: {AuditOptions().max_rows})" in flags["max_rows"].help
    args = parser.parse_args(["--model", "m.json"])
    assert not any(hasattr(args, f.name) for f in cli_fields())     # unset flags leave AuditOptions' defaults
    from xai_plugins.cli import audit_options

    argv = ["--sigma", "0.2", "--max-rows", "7", "--strict", "--quiet"]
    options = audit_options(parser.parse_args(argv), argv)
    assert options == AuditOptions(sigma=(0.2,), max_rows=7, strict=True, progress=False, heartbeat=60.0,
                                   command_line="xai-audit " + " ".join(argv))
