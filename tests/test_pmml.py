"""The PMML importer (xai_plugins/forest/pmml.py): PMML documents written by sklearn2pmml (scikit-learn, XGBoost,
LightGBM) imported as a Forest and checked against two PMML evaluators, pypmml (PMML4S) and, where installed,
jpmml-evaluator (JPMML, the reference implementation), on random rows, on rows on every threshold and one
float64 ulp either side, and on rows with missing values; exact PG² against the original Python model and a
Monte Carlo estimate through pypmml; hand-written documents for each predicate kind, missing-value strategy and
refused construct.

Tolerances: the documents hold thresholds and leaf values as decimal text that reads back to the model's own
numbers (JPMML writes shortest round-trip decimals: float32 thresholds for scikit-learn / XGBoost, float64 for
LightGBM), so parity and PG² are checked to 1e-12 (relative and absolute; what differs is the order of additions:
the evaluators apply the Targets rescaling and the chain's coefficient after the trees, the Forest folds them
into the leaves). The exceptions, each named where it is set: XGBoost's ``x-mathContext="float"`` documents (JPMML
adds in float32: 2e-6; pypmml reads the float32 scores as doubles: 1e-7; XGBoost's own importer reads its float32
base score's decimal as a float64: 1e-9), and pypmml's reading of float fields as doubles (compared with the
Forest read with ``float_fields="double"``).
"""

import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import xai_plugins as xp
from xai_plugins.errors import InputError, UnsupportedModelError
from xai_plugins.forest import _pmml_trees, import_model, library_of
from xai_plugins.forest._pmml_trees import float32_of
from xai_plugins.forest.parity import certify
from xai_plugins.forest.pmml import PMMLImporter, PMMLModel, pmml_forest

NAMES = ["x1", "x2", "x3", "x4"]
RTOL = 1e-12


def parity_gap(forest, model, X) -> float:
    """The largest ``|forest.predict(X) - evaluator(X)|`` (the evaluator: ``pypmml`` in the Forest's output
    space), NaN where either gives NaN counted as a mismatch (inf)."""
    rows = forest.rows(X)[0]            # in the Forest's feature order, categories as codes
    ours = forest.predict(rows)
    theirs = PMMLImporter().predictor(model)(rows)
    gap = np.abs(ours - theirs)
    return float(np.where(np.isnan(ours) != np.isnan(theirs), np.inf, np.nan_to_num(gap, nan=0.0)).max(initial=0.0))


# --------------------------------------------------------------------------- converted models (sklearn2pmml)

def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n)
    return X, y


def _models():
    import lightgbm
    import xgboost
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    X, y = _data()
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    y2 = (y > np.median(y)).astype(int)
    Xn = X.copy()
    Xn[::9, 0] = np.nan                     # missing values in training: XGBoost / LightGBM learn their direction
    Xn[::13, 2] = np.nan
    frame, frame_n = pd.DataFrame(X, columns=NAMES), pd.DataFrame(Xn, columns=NAMES)
    return {
        "dtr": (DecisionTreeRegressor(max_depth=5, random_state=0).fit(frame, y), frame),
        "dtc": (DecisionTreeClassifier(max_depth=5, random_state=0).fit(frame, y3), frame),
        "rfr": (RandomForestRegressor(n_estimators=6, max_depth=4, random_state=0).fit(frame, y), frame),
        "rfc": (RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(frame, y3), frame),
        "gbr": (GradientBoostingRegressor(n_estimators=8, max_depth=3, random_state=0).fit(frame, y), frame),
        "gbc2": (GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0).fit(frame, y2), frame),
        "gbc3": (GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0).fit(frame, y3), frame),
        "xgbr": (xgboost.XGBRegressor(n_estimators=8, max_depth=3, random_state=0).fit(frame_n, y), frame_n),
        "xgbc3": (xgboost.XGBClassifier(n_estimators=5, max_depth=3, random_state=0).fit(frame_n, y3), frame_n),
        "lgbr": (lightgbm.LGBMRegressor(n_estimators=8, num_leaves=6, min_child_samples=5, verbose=-1,
                                        random_state=0).fit(frame_n, y), frame_n),
        "lgbc2": (lightgbm.LGBMClassifier(n_estimators=8, num_leaves=6, min_child_samples=5, verbose=-1,
                                          random_state=0).fit(frame_n, y2), frame_n),
        "scaled": (make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=3)).fit(frame, y), frame),
    }


def _convert(estimator, path):
    """``estimator`` as a PMML file through sklearn2pmml (a JVM per call). The JPMML converter checks scikit-learn's
    exact version in the pickle it reads; a patch release newer than it knows changes no pickled layout, so the
    pickle is tagged with the minor release (x.y.0)."""
    import sklearn
    import sklearn.base
    from sklearn2pmml import make_pmml_pipeline, sklearn2pmml

    pipeline = make_pmml_pipeline(estimator, active_fields=NAMES, target_fields=["y"])
    minor = ".".join(sklearn.__version__.split(".")[:2]) + ".0"
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setattr(sklearn.base, "__version__", minor)
        sklearn2pmml(pipeline, str(path))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """name -> (Python model, its PMMLModel, the training frame): every model converted once (Java start-up is
    slow)."""
    pytest.importorskip("sklearn2pmml")
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    if shutil.which("java") is None:
        pytest.skip("sklearn2pmml needs Java")
    folder = tmp_path_factory.mktemp("pmml")
    out = {}
    for name, (estimator, frame) in _models().items():
        path = folder / f"{name}.pmml"
        _convert(estimator, path)
        out[name] = (estimator, PMMLModel.load(path), frame)
    return out


def test_a_pipeline_with_a_scaler_is_refused_by_name(converted):
    """sklearn2pmml writes a StandardScaler as float32 ``Apply`` derived fields in ``LocalTransformations``: refused
    (its float32 arithmetic would have to be compiled into the thresholds)."""
    _, model, _ = converted["scaled"]
    with pytest.raises(UnsupportedModelError, match="LocalTransformations"):
        import_model(model)


@pytest.fixture(scope="module")
def jpmml():
    """The JPMML evaluator of a PMMLModel's document (jpmml-evaluator), or a skip."""
    pytest.importorskip("jpmml_evaluator")
    from jpmml_evaluator import make_evaluator

    def evaluate(model, frame, folder):
        path = os.path.join(folder, "model.pmml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(model.text)
        out = make_evaluator(path).evaluateAll(frame)
        return out
    return evaluate


def _threshold_rows(model, frame, limit=400):
    """Rows with one column ON a threshold of the document (as the evaluator reads it: float32 for float fields)
    and one float64 ulp either side; NaN elsewhere in a row is replaced by the column's median."""
    base = frame.fillna(frame.median()).to_numpy()
    rows = []
    for k, predicate in enumerate(model.root.iter("SimplePredicate")):
        field, text = predicate.get("field"), predicate.get("value")
        if text is None:
            continue
        j = model.feature_names.index(field)
        t = float32_of(text) if model.fields[field].get("dataType") == "float" else float(text)
        for value in (t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)):
            row = base[k % len(base)].copy()
            row[j] = value
            rows.append(row)
    rows = np.array(rows)[:limit]
    return pd.DataFrame(rows[:, [NAMES.index(n) for n in model.feature_names]], columns=model.feature_names)


def _pypmml():
    return pytest.importorskip("pypmml")


#: JPMML's XGBoost documents are ``x-mathContext="float"``: their scores, base score and coefficients are float32
#: numbers, read as such by the Forest (and JPMML), as doubles by pypmml (|Δ| <= 3e-8 seen), and XGBoost's own
#: importer reads the base score's float32 decimal as a float64 (|Δ| <= 1.5e-10 seen)
PYPMML_TOL = {"xgbr": 1e-7, "xgbc3": 1e-7}
ORIGINAL_TOL = {"xgbr": 1e-9, "xgbc3": 1e-9}


KINDS = ["dtr", "dtc", "rfr", "rfc", "gbr", "gbc2", "gbc3", "xgbr", "xgbc3", "lgbr", "lgbc2"]


@pytest.mark.parametrize("kind", ["dtc", "rfc", "gbc2", "gbc3", "xgbc3", "lgbc2"])
def test_classifiers_pass_the_certificate_on_the_margin_and_the_probabilities(converted, kind):
    """pypmml's probabilities against the logit / softmax of the Forest's margin (a chain's normalizationMethod);
    classifiers in probability space: the margin comparison. Random rows only: pypmml reads float fields as
    doubles (see :func:`test_parity_with_pypmml`), so rows on a float32 threshold are not its rows."""
    _pypmml()
    _, model, _ = converted[kind]
    rows = pd.DataFrame(np.random.default_rng(2).normal(size=(80, model.n_features_in_)) * 1.5,
                        columns=model.feature_names)
    certificate = certify(model, rows, max_thresholds=0)
    assert certificate.passed and certificate.output_passed, str(certificate)
    forest = import_model(model)
    assert ("link" in certificate.output_runtime) == (forest.output_space == "margin")


@pytest.mark.parametrize("kind", KINDS)
def test_parity_with_pypmml(converted, kind):
    """Random rows: the Forest equals pypmml in the Forest's output space (a chain's margin through each chained
    model evaluated alone). Rows on every threshold and one float64 ulp either side: pypmml 1.5 (PMML4S) reads a
    ``dataType="float"`` field and its thresholds as doubles, so it equals the Forest imported with
    ``float_fields="double"``; the default Forest compares float32 as the PMML specification, JPMML and the
    original model do (:func:`test_parity_with_jpmml_on_thresholds_and_missing`)."""
    _pypmml()
    _, model, frame = converted[kind]
    forest = import_model(model)
    rng = np.random.default_rng(1)
    random = pd.DataFrame(rng.normal(size=(200, model.n_features_in_)) * 1.5, columns=model.feature_names)
    tol = PYPMML_TOL.get(kind, RTOL)
    np.testing.assert_allclose(forest.predict(random), forest.predict_fn(random), rtol=tol, atol=tol)
    rows = _threshold_rows(model, frame)
    as_doubles = pmml_forest(model, forest.predict_fn, float_fields="double")
    np.testing.assert_allclose(as_doubles.predict(rows), forest.predict_fn(rows), rtol=tol, atol=tol)
    assert parity_gap(as_doubles, model, rows) <= tol
    if hasattr(model, "classes_"):                  # the evaluator's own probabilities and labels
        probabilities = _probabilities(forest, forest.predict(random))
        np.testing.assert_allclose(model.predict_proba(random), probabilities, rtol=1e-7, atol=1e-7)  # float32 outputs
        assert (model.predict(random) == model.classes_[probabilities.argmax(axis=1)]).mean() > 0.99
    floats = any(model.fields[f].get("dataType") == "float" for f in model.feature_names)
    assert forest.input_float32 == floats
    assert library_of(model) == "pmml"


@pytest.mark.parametrize("kind", KINDS)
def test_predictions_equal_the_original_model_on_thresholds(converted, kind):
    """On the threshold rows the imported Forest equals the original model's own Forest (itself parity-tested
    against its library): the float32 reading of float fields is the original model's."""
    estimator, model, frame = converted[kind]
    rows = _threshold_rows(model, frame)
    original = import_model(estimator).predict(rows[NAMES] if model.n_features_in_ == 4 else rows)
    tol = ORIGINAL_TOL.get(kind, RTOL)
    np.testing.assert_allclose(import_model(model).predict(rows), original, rtol=tol, atol=tol)


#: JPMML adds the scores of a ``x-mathContext="float"`` tree (its XGBoost trees) in float32
JPMML_RTOL = {"xgbr": 2e-6, "xgbc3": 2e-6}


def _probabilities(forest, values):
    if forest.output_space != "margin":
        return values
    if values.shape[1] == 1:
        p = 1 / (1 + np.exp(-values[:, 0]))
        return np.column_stack((1 - p, p))
    e = np.exp(values - values.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("kind", KINDS)
def test_parity_with_jpmml_on_thresholds_and_missing(converted, jpmml, kind, tmp_path):
    """The reference evaluator (JPMML) agrees on thresholds and, where the model's missing-value strategy routes a
    missing value (XGBoost / LightGBM: ``none``), on rows with NaN; scikit-learn's ``nullPrediction`` documents are
    refused on such rows by the Forest (JPMML returns no prediction where the path tests the missing field)."""
    _, model, frame = converted[kind]
    forest = import_model(model)
    rows = _threshold_rows(model, frame)
    rng = np.random.default_rng(2)
    missing = pd.DataFrame(rng.normal(size=(120, model.n_features_in_)), columns=model.feature_names)
    missing.iloc[::2, 0] = np.nan
    missing.iloc[::3, -1] = np.nan
    names = [str(c) for c in getattr(model, "classes_", [])]
    columns = [f"probability({c})" for c in names] if names else [model.target_name]
    for data in (rows, missing):
        out = jpmml(model, data, tmp_path)
        theirs = out[columns].apply(pd.to_numeric).to_numpy(dtype=np.float64)
        if data is missing and forest.nan_refused is not None:
            with pytest.raises(InputError, match="refuses a missing value"):
                forest.predict(data)
            assert np.isnan(theirs).any()      # nullPrediction: no prediction where the path tests the field
            continue
        ours = _probabilities(forest, forest.predict(data))
        np.testing.assert_allclose(ours, theirs, rtol=JPMML_RTOL.get(kind, RTOL), atol=JPMML_RTOL.get(kind, RTOL))


@pytest.mark.parametrize("kind", ["xgbr", "xgbc3", "lgbr", "lgbc2"])
def test_missing_values_match_pypmml_and_the_original_model(converted, kind):
    """XGBoost / LightGBM documents route a missing value through their operators (strategy ``none``): on training
    rows with NaN (XGBoost's thresholds are float32 training values: rows on them), pypmml equals the Forest read
    with double float fields, and the Forest equals the original model's own."""
    _pypmml()
    estimator, model, frame = converted[kind]
    forest = import_model(model)
    rows = frame.iloc[:150].copy()
    rows.iloc[::2, 0] = np.nan          # x1 had missing values in training (LightGBM reads NaN as 0 in a column that
    assert np.isnan(rows.to_numpy()).any(axis=1).mean() > 0.4       # had none; its PMML document routes it as missing)
    as_doubles = pmml_forest(model, forest.predict_fn, float_fields="double")
    tol = PYPMML_TOL.get(kind, RTOL)
    np.testing.assert_allclose(as_doubles.predict(rows), forest.predict_fn(rows), rtol=tol, atol=tol)
    tol = ORIGINAL_TOL.get(kind, RTOL)
    np.testing.assert_allclose(forest.predict(rows), import_model(estimator).predict(rows), rtol=tol, atol=tol)


# --------------------------------------------------------------------------- PG²



@pytest.mark.parametrize("kind", KINDS)
def test_exact_pg2_equals_the_original_model(converted, kind):
    estimator, model, frame = converted[kind]
    X = frame.fillna(frame.median()).iloc[:25]
    ours = xp.pg2(model, X[model.feature_names], S=[0, 1], sigma=0.4).value
    names = model.feature_names
    original = xp.pg2(estimator, X, S=[NAMES.index(names[0]), NAMES.index(names[1])], sigma=0.4).value
    assert np.ptp(original) > 0
    np.testing.assert_allclose(ours, original, rtol=RTOL, atol=1e-14)


@pytest.mark.parametrize("kind", ["rfr", "gbc2", "lgbr"])
def test_exact_pg2_within_monte_carlo_through_pypmml(converted, kind):
    _pypmml()
    _, model, frame = converted[kind]
    X = frame.fillna(frame.median())[model.feature_names].iloc[:4]
    exact = xp.pg2(model, X, S=[0, 1], sigma=0.4).value
    mc = xp.pg2(model, X, S=[0, 1], sigma=0.4, method="monte_carlo", n_samples=1500, random_state=0)
    assert np.all(np.abs(mc.value - exact) <= 4 * mc.stderr + 1e-12)


# --------------------------------------------------------------------------- corruption detected

def test_a_corrupted_threshold_is_detected_by_parity(converted, monkeypatch):
    """A threshold moved by one ulp passes random rows but not the rows on the thresholds (LightGBM's document:
    double fields, read alike by pypmml and the Forest)."""
    _pypmml()
    _, model, frame = converted["lgbr"]
    honest = pmml_forest(model, PMMLImporter().predictor(model))
    rows = _threshold_rows(model, frame)
    assert parity_gap(honest, model, rows) <= 1e-12
    original = _pmml_trees.Trees.threshold
    state = {"done": False}

    def shifted(self, field, text, op):
        t = original(self, field, text, op)
        if not state["done"]:
            state["done"] = True
            return float(np.nextafter(t, -np.inf))
        return t
    monkeypatch.setattr(_pmml_trees.Trees, "threshold", shifted)
    corrupted = pmml_forest(model, PMMLImporter().predictor(model))
    rng = np.random.default_rng(3)
    random = pd.DataFrame(rng.normal(size=(200, model.n_features_in_)), columns=model.feature_names)
    assert parity_gap(corrupted, model, random) <= 1e-12           # random rows miss it
    assert parity_gap(corrupted, model, rows) > 1e-3                # the threshold rows catch it


# --------------------------------------------------------------------------- hand-written documents
HEAD = """<PMML xmlns="http://www.dmg.org/PMML-4_4" version="4.4"><Header/>
<DataDictionary><DataField name="y" optype="continuous" dataType="double"/>
<DataField name="a" optype="continuous" dataType="{a}"/><DataField name="b" optype="continuous" dataType="double"/>
<DataField name="c" optype="categorical" dataType="string"><Value value="u"/><Value value="v"/><Value value="w"/>
</DataField>
</DataDictionary>"""
SCHEMA = """<MiningSchema><MiningField name="y" usageType="target"/><MiningField name="a"/><MiningField name="b"/>
<MiningField name="c"/></MiningSchema>"""


def _tree(body, strategy="none", no_true="returnLastPrediction", a="double", extra="", root=""):
    return (HEAD.format(a=a) + f'<TreeModel functionName="regression" missingValueStrategy="{strategy}" '
            f'noTrueChildStrategy="{no_true}">' + SCHEMA + extra + f'<Node score="1" {root}><True/>{body}</Node>'
            "</TreeModel></PMML>")


def _forest(doc):
    return pmml_forest(PMMLModel.load(doc))


def _predict(doc, rows):
    return _forest(doc).predict(np.array(rows, dtype=np.float64))[:, 0]


def _split(op, value="0.5", field="a"):
    return (f'<Node score="2"><SimplePredicate field="{field}" operator="{op}" value="{value}"/></Node>'
            '<Node score="3"><True/></Node>')


@pytest.mark.parametrize("op, below, at, above", [
    ("lessOrEqual", 2, 2, 3), ("lessThan", 2, 3, 3), ("greaterThan", 3, 3, 2), ("greaterOrEqual", 3, 2, 2)])
@pytest.mark.parametrize("a", ["double", "float"])
def test_simple_predicates(op, below, at, above, a):
    """Each comparison at, and one ulp (of the field's precision) around, its threshold."""
    doc = _tree(_split(op, "0.1"), a=a)
    t = float32_of("0.1") if a == "float" else 0.1
    ulp = (lambda v, d: float(np.nextafter(np.float32(v), np.float32(d)))) if a == "float" else np.nextafter
    rows = [[ulp(t, -np.inf), 0, 0], [t, 0, 0], [ulp(t, np.inf), 0, 0]]
    assert _predict(doc, rows).tolist() == [below, at, above]
    if a == "float":            # float32 semantics: one float64 ulp above the threshold is the threshold
        assert _predict(doc, [[np.nextafter(t, np.inf), 0, 0]]).tolist() == [at]


def test_true_false_is_missing_and_one_operand_compound():
    doc = _tree('<Node score="7"><False/></Node>'
                '<Node score="2"><SimplePredicate field="a" operator="isMissing"/></Node>'
                '<Node score="4"><CompoundPredicate booleanOperator="and">'
                '<SimplePredicate field="b" operator="isNotMissing"/></CompoundPredicate>'
                '<Node score="5"><SimplePredicate field="b" operator="lessOrEqual" value="0"/></Node></Node>'
                '<Node score="3"><True/></Node>')
    assert _predict(doc, [[np.nan, 1, 0], [0, -1, 0], [0, 1, 0], [0, np.nan, 0], [1e308, -1e308, 0]]).tolist() \
        == [2, 5, 4, 3, 5]


# the rows of the missing-value documents: a missing, b missing under "a <= 0.5", b missing under "a > 0.5", none
MISSING_ROWS = [[np.nan, 1.0, 0], [0.0, np.nan, 0], [1.0, np.nan, 0], [0.0, 1.0, 0]]
MISSING_BODY = ('<Node id="L" score="2" {inner}><SimplePredicate field="a" operator="lessOrEqual" value="0.5"/>'
                '<Node id="LL" score="4"><SimplePredicate field="b" operator="greaterThan" value="0"/></Node>'
                '<Node score="5"><True/></Node></Node><Node id="R" score="3"><True/></Node>')


@pytest.mark.parametrize("strategy, expected", [
    ("none", [3, 5, 3, 4]),              # a missing predicate is false: the next child
    ("defaultChild", [4, 4, 3, 4]),      # the default child (L at the root, LL under L)
    ("lastPrediction", [1, 2, 3, 4]),    # the score of the node whose child's predicate was unknown
])
def test_missing_value_strategies(strategy, expected, tmp_path):
    """The PMML 4.4 semantics, checked by hand and against JPMML where installed (pypmml 1.5 evaluates every
    strategy as ``none``)."""
    inner = 'defaultChild="LL"' if strategy == "defaultChild" else ""
    root = 'defaultChild="L"' if strategy == "defaultChild" else ""
    doc = _tree(MISSING_BODY.format(inner=inner), strategy, root=root)
    assert _predict(doc, MISSING_ROWS).tolist() == expected
    try:
        from jpmml_evaluator import make_evaluator
    except ImportError:
        return
    path = tmp_path / "m.pmml"
    path.write_text(doc)
    frame = pd.DataFrame(np.array(MISSING_ROWS)[:, :2], columns=["a", "b"]).assign(c="u")
    assert make_evaluator(str(path)).evaluateAll(frame)["y"].astype(float).tolist() == expected


def test_null_prediction_refuses_missing_values_of_tested_features():
    forest = _forest(_tree(MISSING_BODY.format(inner=""), "nullPrediction"))
    assert forest.nan_refused.tolist() == [True, True, False]
    assert forest.predict(np.array([[0.0, 1.0, 0.0]]))[0, 0] == 4
    with pytest.raises(InputError, match="refuses a missing value"):
        forest.predict(np.array([[np.nan, 1.0, 0.0]]))


def test_no_true_child_strategies():
    body = '<Node score="2"><SimplePredicate field="a" operator="lessOrEqual" value="0"/></Node>'
    assert _predict(_tree(body), [[-1, 0, 0], [1, 0, 0]]).tolist() == [2, 1]
    with pytest.raises(UnsupportedModelError, match="returnNullPrediction"):
        _forest(_tree(body, no_true="returnNullPrediction"))
    assert _predict(_tree(_split("lessOrEqual"), no_true="returnNullPrediction"), [[1, 0, 0]]).tolist() == [3]


ENSEMBLE = HEAD.format(a="double") + """<MiningModel functionName="{function}">""" + SCHEMA + """{targets}
<Segmentation multipleModelMethod="{method}">
<Segment weight="1"><True/><TreeModel functionName="{function}">{schema}<Node score="{s1}"><True/>
  <Node score="{s2}"><SimplePredicate field="a" operator="lessOrEqual" value="0"/></Node>
  <Node score="{s1}"><True/></Node></Node></TreeModel></Segment>
<Segment weight="3"><True/><TreeModel functionName="{function}">{schema}<Node score="{s2}"><True/>
  <Node score="{s1}"><SimplePredicate field="b" operator="lessOrEqual" value="0"/></Node>
  <Node score="{s2}"><True/></Node></Node></TreeModel></Segment>
</Segmentation></MiningModel></PMML>"""


@pytest.mark.parametrize("method, expected", [
    ("sum", [2 * 21 + 5, 2 * 21 + 5]),                          # segment values (20, 1) and (1, 20), weights 1, 3
    ("weightedSum", [2 * 23 + 5, 2 * 61 + 5]),
    ("average", [2 * 21 / 2 + 5, 2 * 21 / 2 + 5]),
    ("weightedAverage", [2 * 23 / 4 + 5, 2 * 61 / 4 + 5]),
])
def test_additive_segmentations_and_targets(method, expected):
    doc = ENSEMBLE.format(function="regression", method=method, s1="1", s2="20", schema=SCHEMA,
                          targets='<Targets><Target field="y" rescaleFactor="2" rescaleConstant="5"/></Targets>')
    forest = _forest(doc)
    assert forest.aggregate == ("mean" if "verage" in method else "sum")
    np.testing.assert_allclose(_predict(doc, [[-1, -1, 0], [1, 1, 0]]), expected, rtol=1e-15)


NESTED = ('<Node score="2"><SimplePredicate field="a" operator="lessOrEqual" value="0"/>'
          '<Node score="4"><SimplePredicate field="b" operator="lessOrEqual" value="0"/></Node></Node>')
REFUSED = [
    (_tree('<Node score="2"><SimpleSetPredicate field="a" booleanOperator="isIn"><Array type="real">1</Array>'
           '</SimpleSetPredicate></Node>'), "SimpleSetPredicate operator='isIn' (on field 'a', not categorical)"),
    (_tree(_split("equal", "1")), "operator='equal'"),
    (_tree(_split("notEqual")), "operator='notEqual'"),
    (_tree('<Node score="2"><CompoundPredicate booleanOperator="or"><SimplePredicate field="a" operator="lessThan" '
           'value="0"/><SimplePredicate field="b" operator="lessThan" value="0"/></CompoundPredicate></Node>'),
     "CompoundPredicate booleanOperator='or' with 2 operands"),
    (_tree('<Node score="2"><CompoundPredicate booleanOperator="surrogate"><SimplePredicate field="a" '
           'operator="lessThan" value="0"/><True/></CompoundPredicate></Node>'), "booleanOperator='surrogate'"),
    (_tree(_split("lessOrEqual"), "aggregateNodes"), "missingValueStrategy='aggregateNodes'"),
    (_tree(_split("lessOrEqual"), "weightedConfidence"), "missingValueStrategy='weightedConfidence'"),
    (_tree(MISSING_BODY.format(inner=""), "defaultChild", root='defaultChild="R"'), "defaultChild="),
    (_tree(_split("lessOrEqual", field="c"), ), "operator='lessOrEqual' on categorical field 'c'"),
    (_tree(_split("equal", "u", "c")).replace('<MiningField name="c"/>',
                                              '<MiningField name="c" invalidValueTreatment="asMissing"/>'),
     "invalidValueTreatment='asMissing'"),
    (_tree(_split("lessOrEqual", field="z")), "no active field"),
    (_tree(NESTED, a="float"), "both float and double"),
    (_tree(_split("lessOrEqual"), extra='<LocalTransformations><DerivedField name="z" optype="continuous" '
           'dataType="double"><FieldRef field="a"/></DerivedField></LocalTransformations>'), "LocalTransformations"),
    (_tree(_split("lessOrEqual")).replace('<MiningField name="a"/>',
                                          '<MiningField name="a" missingValueReplacement="0"/>'),
     "missingValueReplacement"),
    (_tree(_split("lessOrEqual")).replace('<MiningField name="a"/>',
                                          '<MiningField name="a" outliers="asExtremeValues"/>'), "outliers="),
    (_tree(_split("lessOrEqual"), extra='<Targets><Target field="y" min="0"/></Targets>'), "Target min"),
    (ENSEMBLE.format(function="regression", method="majorityVote", s1="1", s2="2", schema=SCHEMA, targets=""),
     "multipleModelMethod='majorityVote'"),
    (ENSEMBLE.format(function="regression", method="weightedMajorityVote", s1="1", s2="2", schema=SCHEMA,
                     targets=""), "multipleModelMethod='weightedMajorityVote'"),
    (ENSEMBLE.format(function="regression", method="median", s1="1", s2="2", schema=SCHEMA, targets=""),
     "multipleModelMethod='median'"),
    (_tree(_split("lessOrEqual")).replace("<Node score=\"1\" ><True/>", "<Node score=\"1\" >"
                                          "<SimplePredicate field=\"a\" operator=\"lessThan\" value=\"9\"/>"),
     "root Node has a predicate other than True"),
]


@pytest.mark.parametrize("doc, name", REFUSED, ids=[name for _, name in REFUSED])
def test_unsupported_constructs_are_refused_by_name(doc, name):
    with pytest.raises(UnsupportedModelError, match=name.replace("(", r"\(").replace(")", r"\)")):
        _forest(doc)


CATEGORICAL = ('<Node score="2"><SimpleSetPredicate field="c" booleanOperator="isIn"><Array type="string" n="2">u "w"'
               '</Array></SimpleSetPredicate><Node score="5"><SimplePredicate field="c" operator="equal" value="u"/>'
               '</Node></Node><Node score="7"><SimpleSetPredicate field="c" booleanOperator="isNotIn">'
               '<Array type="string">v</Array></SimpleSetPredicate></Node>'
               '<Node score="8"><SimplePredicate field="a" operator="lessOrEqual" value="0"/></Node>'
               '<Node score="3"><SimplePredicate field="c" operator="notEqual" value="u"/></Node>')
CATEGORY_ROWS = pd.DataFrame({"a": [0.0, 0.0, 0.0, -1.0, 1.0, 1.0, 1.0], "b": 0.0,
                              "c": ["u", "w", "v", "v", "v", None, "u"]})


@pytest.mark.parametrize("strategy, expected", [
    ("none", [5, 2, 8, 8, 3, 1, 5]),            # c missing: every test on it is false, a > 0: no child (the root)
    ("lastPrediction", [5, 2, 8, 8, 3, 1, 5]),  # c missing at the first test: the root's score
])
def test_categorical_set_and_equality_splits(strategy, expected, tmp_path):
    """``SimpleSetPredicate`` isIn / isNotIn and ``equal`` / ``notEqual`` on a categorical field are set splits of
    the Forest over the DataDictionary's values (their positions are the codes); a text column is read by label.
    Checked by hand, against pypmml and against JPMML where installed."""
    doc = _tree(CATEGORICAL, strategy)
    model = PMMLModel.load(doc)
    forest = pmml_forest(model, PMMLImporter().predictor(model))
    assert forest.n_categories.tolist() == [0, 0, 3] and list(forest.category_labels[2]) == ["u", "v", "w"]
    assert forest.predict(CATEGORY_ROWS)[:, 0].tolist() == expected
    with pytest.raises(InputError, match="declares the values"):
        forest.predict(CATEGORY_ROWS.assign(c="z"))
    if strategy == "none":
        _pypmml()
        assert parity_gap(forest, model, CATEGORY_ROWS) == 0
    try:
        from jpmml_evaluator import make_evaluator
    except ImportError:
        return
    path = tmp_path / "m.pmml"
    path.write_text(doc)
    assert make_evaluator(str(path)).evaluateAll(CATEGORY_ROWS)["y"].astype(float).tolist() == expected


def test_exact_pg2_of_a_categorical_document_within_monte_carlo():
    _pypmml()
    model = PMMLModel.load(_tree(CATEGORICAL))
    X = CATEGORY_ROWS.dropna().iloc[:4]
    exact = xp.pg2(model, X, S=[0, 2], sigma=0.5).value
    mc = xp.pg2(model, X, S=[0, 2], sigma=0.5, method="monte_carlo", n_samples=1500, random_state=0)
    assert np.ptp(exact) > 0
    assert np.all(np.abs(mc.value - exact) <= 4 * mc.stderr + 1e-12)


def test_documents_read_from_text_bytes_and_paths(tmp_path):
    doc = _tree(_split("lessOrEqual"))
    path = tmp_path / "m.pmml"
    path.write_text(doc)
    models = [PMMLModel.load(doc), PMMLModel.load(doc.encode()), PMMLModel.load(path), PMMLModel.load(str(path))]
    assert {tuple(m.feature_names) for m in models} == {("a", "b", "c")}
    assert models[0].n_features_in_ == 3 and models[0].target_name == "y"
    assert "TreeModel" in repr(models[0]) and "regression" in repr(models[0])
    import pickle
    import weakref

    assert weakref.ref(models[0])() is models[0]
    copy = pickle.loads(pickle.dumps(models[0]))
    assert copy.feature_names == models[0].feature_names and copy.text == doc
    with pytest.raises(InputError, match="DOCTYPE"):
        PMMLModel.load('<!DOCTYPE x [<!ENTITY e "e">]>' + doc)
    with pytest.raises(InputError, match="not a PMML document"):
        PMMLModel.load("<html/>")
    with pytest.raises(InputError, match="does not exist"):
        PMMLModel.load(tmp_path / "none.pmml")


def test_classification_leaves_and_chains_in_hand_written_documents():
    head = HEAD.format(a="double").replace(
        '<DataField name="y" optype="continuous" dataType="double"/>',
        '<DataField name="y" optype="categorical" dataType="string"><Value value="p"/><Value value="q"/></DataField>')
    tree = head + """<TreeModel functionName="classification">""" + SCHEMA + """<Node><True/>
      <Node score="q"><SimplePredicate field="a" operator="lessOrEqual" value="0"/>
        <ScoreDistribution value="p" recordCount="1"/><ScoreDistribution value="q" recordCount="3"/></Node>
      <Node score="p"><True/></Node></Node></TreeModel></PMML>"""
    model = PMMLModel.load(tree)
    assert model.classes_.tolist() == ["p", "q"]
    np.testing.assert_allclose(pmml_forest(model).predict(np.array([[-1.0, 0, 0], [1.0, 0, 0]])),
                               [[0.25, 0.75], [1.0, 0.0]])
    chain = head + """<MiningModel functionName="classification">""" + SCHEMA + """
      <Segmentation multipleModelMethod="modelChain">
      <Segment><True/><TreeModel functionName="regression"><MiningSchema><MiningField name="a"/></MiningSchema>
        <Output><OutputField name="f" isFinalResult="false"/></Output>
        <Node score="0.5"><True/><Node score="-1"><SimplePredicate field="a" operator="lessOrEqual" value="0"/>
        </Node><Node score="2"><True/></Node></Node></TreeModel></Segment>
      <Segment><True/><RegressionModel functionName="classification" normalizationMethod="{norm}">
        <MiningSchema><MiningField name="y" usageType="target"/><MiningField name="f"/></MiningSchema>
        <RegressionTable intercept="0.25" targetCategory="{first}"><NumericPredictor name="f" coefficient="3"/>
        </RegressionTable><RegressionTable intercept="0" targetCategory="{second}"/></RegressionModel></Segment>
      </Segmentation></MiningModel></PMML>"""
    for first, sign in (("q", 1), ("p", -1)):
        forest = pmml_forest(PMMLModel.load(chain.format(norm="logit", first=first, second="pq".replace(first, ""))))
        assert forest.output_space == "margin" and forest.output_names == ["margin"]
        np.testing.assert_allclose(forest.predict(np.array([[-1.0, 0, 0], [1.0, 0, 0]]))[:, 0],
                                   [sign * (0.25 - 3), sign * (0.25 + 6)])
    with pytest.raises(UnsupportedModelError, match="normalizationMethod='probit'"):
        pmml_forest(PMMLModel.load(chain.format(norm="probit", first="q", second="p")))
