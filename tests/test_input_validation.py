"""Targets, labels and missing values checked once for the API and the CLI.

Labels the classifier was not trained on, missing targets and feature columns with no value are
refused with an :class:`~xai_plugins.errors.InputError` saying what is wrong, instead of a report
that scores a FAIL, calls a column "constant" or fails inside SHAP.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import xai_plugins as xp
from xai_plugins.cli import main
from xai_plugins.errors import InputError, InputTypeError
from xai_plugins.report import audit

#: the cheapest audit that still builds the sections reading the targets
CHEAP = dict(explainers=("local_mdi",), sections=(), max_rows=4, progress=False, random_state=0)


@pytest.fixture(scope="module")
def binary():
    """(X, y, model): 0/1 labels and a small random forest classifier fitted on them."""
    rng = np.random.default_rng(11)
    X = pd.DataFrame(rng.normal(size=(90, 3)), columns=["a", "b", "c"])
    y = (X.a - X.b > 0).astype(int)
    return X, y, RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)


def _cli(tmp_path, capsys, model, frame, *extra):
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(model))
    frame.to_csv(tmp_path / "data.csv", index=False)
    code = main(["--model", str(tmp_path / "model.pkl"), "--trust-pickle", "--data", str(tmp_path / "data.csv"),
                 "--target", "y", "--out", str(tmp_path / "out"), "--quiet", "--no-pdf", *map(str, extra)])
    return code, capsys.readouterr().err


def test_unknown_labels_get_the_same_error_from_audit_and_the_cli(binary, tmp_path, capsys):
    X, y, model = binary
    letters = y.map({0: "n", 1: "y"})
    with pytest.raises(InputError, match=r"classes \['0', '1'\].*\['n', 'y'\]") as caught:
        audit(model, X, letters, **CHEAP)
    code, err = _cli(tmp_path, capsys, model, X.assign(y=letters))
    assert code == 2 and str(caught.value) in err


def test_missing_targets_get_the_same_error_from_audit_and_the_cli(binary, tmp_path, capsys):
    X, y, model = binary
    holed = y.astype(float).where(y.index != 5)
    with pytest.raises(InputError, match="1 missing target.*first at row 5") as caught:
        audit(model, X, holed, **CHEAP)
    code, err = _cli(tmp_path, capsys, model, X.assign(y=holed))
    assert code == 2 and str(caught.value) in err
    with pytest.raises(InputError, match="missing target"):
        audit(model, X, y, X_train=X, y_train=pd.array(list(y[:-1]) + [None], dtype="Int64"), **CHEAP)


def test_labels_written_as_the_classes_are_read_as_them(binary):
    from xai_plugins._validation import check_target

    X, y, model = binary
    for given in (y.astype(str), y.astype(float), y.astype("Int64"), y.astype("category")):
        np.testing.assert_array_equal(check_target(given, model.classes_), y.to_numpy())
        assert check_target(given, model.classes_).dtype == model.classes_.dtype
    ok = audit(model, X, y.astype(str), **CHEAP)
    reference = audit(model, X, y, **CHEAP)
    assert ok.to_dict()["sections"]["model"]["data"] == reference.to_dict()["sections"]["model"]["data"]


def test_regression_targets_must_be_numeric_and_present():
    from xai_plugins._validation import check_target

    with pytest.raises(InputTypeError, match="regressor but y_test is not numeric"):
        check_target(["low", "high"], None, what="y_test")
    with pytest.raises(InputError, match="has 3 values but the data has 2 rows"):
        check_target([1.0, 2.0, 3.0], None, n_rows=2, what="y_test")
    np.testing.assert_array_equal(check_target(pd.array([1, 2], dtype="Int64"), None), [1.0, 2.0])


def test_mcr_refuses_missing_targets():
    from xai_plugins.mcr import model_class_reliance

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = pd.Series(X[:, 0], dtype="Float64")
    model = RandomForestRegressor(n_estimators=3, bootstrap=False, max_depth=3, random_state=0).fit(X, y)
    y[3] = pd.NA
    with pytest.raises(InputError, match="missing target.*first at row 3"):
        model_class_reliance(model, X, y, n_permutations=1, progress=False)


def test_feature_columns_with_no_value_are_refused_saying_so(binary):
    X, y, model = binary
    empty = X.assign(b=np.nan)
    with pytest.raises(InputError, match=r"X_test column\(s\) \['b'\] are entirely missing"):
        audit(model, empty, y, **CHEAP)
    with pytest.raises(InputError, match=r"X_train column\(s\) \['b'\] are entirely missing"):
        audit(model, X, y, X_train=empty, y_train=y, **CHEAP)
    holes = X.to_numpy().copy()
    holes[np.arange(len(X)), np.arange(len(X)) % 3] = np.nan               # a NaN in every row, none empty
    scattered = pd.DataFrame(holes, columns=X.columns)
    with pytest.raises(InputError, match="X_test has no complete row"):
        audit(model, scattered, y, **CHEAP)
    with pytest.raises(InputError, match=r"background features \[1\] have no value") as caught:
        xp.pg2(model, X.iloc[:2], S=[0], background=empty)
    assert "constant" not in str(caught.value)
