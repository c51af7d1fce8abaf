"""Model files read through their library's own loader (``xp.load_model``, ``xai-audit --model``), without
unpickling: the model read back predicts as the model that was saved, through its own library and through the
Forest, and its exact PG² is that of the original model; what is not a supported format is refused by name."""

import zipfile

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import xai_plugins as xp
from xai_plugins.cli import main
from xai_plugins.errors import InputError, UnsupportedModelError
from xai_plugins.forest.files import model_format

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")
catboost = pytest.importorskip("catboost")
sio = pytest.importorskip("skops.io")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=300) > 0).astype(int)
    return X, y


def _lightgbm_text(X, y, path):
    model = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=7, verbose=-1).fit(X, y)
    model.booster_.save_model(path)
    return model, "lightgbm-text"


def _xgboost_json(X, y, path):
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(X, y)
    model.save_model(path)
    return model, "xgboost-json"


def _xgboost_ubj(X, y, path):
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=3).fit(X, y.astype(float))
    model.save_model(path)
    return model, "xgboost-ubj"


def _catboost_cbm(X, y, path):
    model = catboost.CatBoostClassifier(iterations=20, depth=3, verbose=0, random_seed=0).fit(X, y)
    model.save_model(path)
    return model, "catboost-cbm"


def _catboost_json(X, y, path):
    model = catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, random_seed=0).fit(X, y.astype(float))
    model.save_model(path, format="json")
    return model, "catboost-json"


def _skops_pipeline(X, y, path):
    model = Pipeline([("scale", StandardScaler()), ("rf", RandomForestClassifier(n_estimators=10, max_depth=4,
                                                                                 random_state=0))]).fit(X, y)
    sio.dump(model, path)
    return model, "skops"


def _skops_hgb(X, y, path):
    model = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X, y)
    sio.dump(model, path)
    return model, "skops"


def _onnx_forest(X, y, path):
    skl2onnx = pytest.importorskip("skl2onnx")
    model = RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0).fit(X.astype(np.float32), y)
    proto = skl2onnx.to_onnx(model, X[:1].astype(np.float32), options={"zipmap": False})
    with open(path, "wb") as handle:
        handle.write(proto.SerializeToString())
    return model, "onnx"


#: a PMML regression tree on x0 and x2 (as JPMML writes one: children tried in order, a True child last)
PMML_TREE = """<?xml version="1.0" encoding="UTF-8"?>
<PMML xmlns="http://www.dmg.org/PMML-4_4" version="4.4"><Header/>
<DataDictionary><DataField name="y" optype="continuous" dataType="double"/>
<DataField name="x0" optype="continuous" dataType="double"/><DataField name="x1" optype="continuous" dataType="double"/>
<DataField name="x2" optype="continuous" dataType="double"/><DataField name="x3" optype="continuous" dataType="double"/>
</DataDictionary>
<TreeModel functionName="regression" missingValueStrategy="none" noTrueChildStrategy="returnLastPrediction">
<MiningSchema><MiningField name="y" usageType="target"/><MiningField name="x0"/><MiningField name="x1"/>
<MiningField name="x2"/><MiningField name="x3"/></MiningSchema>
<Node score="0.5"><True/>
<Node score="-1.25"><SimplePredicate field="x0" operator="lessOrEqual" value="0.1"/>
<Node score="-2"><SimplePredicate field="x2" operator="lessOrEqual" value="-0.3"/></Node>
<Node score="-0.5"><True/></Node>
</Node>
<Node score="1.5"><True/></Node>
</Node></TreeModel></PMML>"""


def test_a_pmml_document_is_read_by_content_and_audited(data, tmp_path, capsys):
    X, y = data
    (tmp_path / "tree.xml").write_text(PMML_TREE)
    assert model_format(tmp_path / "tree.xml") == "pmml"
    model = xp.load_model(tmp_path / "tree.xml")
    rows = np.array([[0.1, 0, -0.3, 0], [np.nextafter(0.1, 1), 0, 0, 0], [0.0, 0, -0.29, 0]])
    assert xp.import_model(model).predict(rows)[:, 0].tolist() == [-2.0, 1.5, -0.5]
    (tmp_path / "other.xml").write_text("<note>not a model</note>")
    with pytest.raises(UnsupportedModelError, match="root is not <PMML>"):
        xp.load_model(tmp_path / "other.xml")
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)]).assign(y=y.astype(float))
    frame.iloc[:60].to_csv(tmp_path / "test.csv", index=False)
    code = main(["--model", str(tmp_path / "tree.xml"), "--data", str(tmp_path / "test.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), "--sections", "faithfulness", "--explainers", "pg2", "--no-pdf",
                 "--quiet", "--max-rows", "20"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "tree.json").is_file()


SAVERS = {"model.onnx": _onnx_forest, "model.txt": _lightgbm_text, "model.json": _xgboost_json,
          "model.ubj": _xgboost_ubj, "model.cbm": _catboost_cbm, "catboost.json": _catboost_json,
          "pipeline.skops": _skops_pipeline, "hgb.skops": _skops_hgb}


def _margin(model, X):
    """The original model's own output on the Forest's scale (margin for boosted classifiers)."""
    name = type(model).__name__
    if name.startswith("LGBM") and name.endswith("Classifier"):
        return model.predict(X, raw_score=True)
    if name == "XGBClassifier":
        return model.predict(X, output_margin=True)
    if name == "CatBoostClassifier":
        return model.predict(X, prediction_type="RawFormulaVal")
    if name == "HistGradientBoostingClassifier":
        return model.decision_function(X)
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return model.predict(X)


@pytest.mark.parametrize("filename", list(SAVERS))
def test_a_saved_model_reads_back_as_the_model_that_was_saved(data, tmp_path, filename):
    X, y = data
    path = tmp_path / filename
    original, fmt = SAVERS[filename](X, y, str(path))
    assert model_format(path) == fmt
    loaded = xp.load_model(path)
    forest, reference = xp.import_model(loaded), xp.import_model(original)
    if fmt == "catboost-json":            # CatBoost's JSON keeps fewer digits than its model: read as CatBoost reads it
        original = catboost.CatBoostRegressor().load_model(str(path), format="json")
        reference = xp.import_model(original)
    margin = _margin(original, X)
    values = forest.predict(X)
    values = values[:, -1] if values.shape[1] > 1 else values[:, 0]
    tol = 1e-5 if fmt.startswith(("xgboost", "onnx")) else 1e-9      # XGBoost and onnxruntime sum in float32
    assert np.allclose(values, margin, rtol=0, atol=tol * max(1.0, np.abs(margin).max()))
    on_threshold = X.copy()                      # rows on every split threshold the model uses
    thresholds = [t for t in np.unique(forest.threshold[forest.feature >= 0])][:50]
    for i, t in enumerate(thresholds):
        on_threshold[i % len(X), forest.feature[forest.feature >= 0][0]] = t
    if fmt == "onnx":           # ONNX stores the leaf values in float32: the same routes, values within its rounding
        assert np.allclose(forest.predict(on_threshold), reference.predict(on_threshold), rtol=0, atol=1e-6)
        assert np.allclose(xp.pg2(loaded, X[:20], [0, 2], 0.4).value, xp.pg2(original, X[:20], [0, 2], 0.4).value,
                           rtol=1e-5, atol=1e-12)
        return
    assert np.array_equal(forest.predict(on_threshold), reference.predict(on_threshold))
    assert np.array_equal(xp.pg2(loaded, X[:20], [0, 2], 0.4).value, xp.pg2(original, X[:20], [0, 2], 0.4).value)


def _doubled(X):
    return 2 * X


def test_an_untrusted_type_in_a_skops_file_is_refused_by_name(data, tmp_path):
    X, y = data
    model = Pipeline([("f", FunctionTransformer(_doubled)), ("rf", RandomForestClassifier(n_estimators=3))])
    model.fit(X, y)
    sio.dump(model, tmp_path / "m.skops")
    with pytest.raises(UnsupportedModelError, match="does not trust.*_doubled"):
        xp.load_model(tmp_path / "m.skops")


@pytest.mark.parametrize("content, match", [
    (b"PK\x03\x04" + b"\x00" * 40, "zip archive but not a skops file"),
    (b"hello, this is not a model", "none of"),
    (b'{"learning_rate": 0.1}', "JSON but not an XGBoost model"),
    (b"{not json", "not valid JSON"),
])
def test_content_of_no_supported_format_is_refused(tmp_path, content, match):
    path = tmp_path / "model.bin"
    if content.startswith(b"PK"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("other.txt", "x")
    else:
        path.write_bytes(content)
    with pytest.raises(UnsupportedModelError, match=match):
        xp.load_model(path)


def test_a_pickle_is_read_only_when_trusted(data, tmp_path):
    import joblib

    X, y = data
    joblib.dump(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y), tmp_path / "m.joblib")
    with pytest.raises(InputError, match="trust_pickle"):
        xp.load_model(tmp_path / "m.joblib")
    assert type(xp.load_model(tmp_path / "m.joblib", trust_pickle=True)).__name__ == "RandomForestClassifier"
    with pytest.raises(InputError, match="does not exist"):
        xp.load_model(tmp_path / "absent.txt")


def test_the_format_is_told_by_content_not_extension(data, tmp_path):
    X, y = data
    _lightgbm_text(X, y, str(tmp_path / "model.json"))          # a LightGBM text model named .json
    assert model_format(tmp_path / "model.json") == "lightgbm-text"
    assert type(xp.load_model(tmp_path / "model.json")).__name__ == "Booster"


@pytest.mark.parametrize("filename", ["model.txt", "model.cbm", "pipeline.skops", "model.onnx"])
def test_xai_audit_reads_each_format_without_trust_pickle(data, tmp_path, filename, capsys):
    X, y = data
    SAVERS[filename](X, y, str(tmp_path / filename))
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    names = xp.import_model(xp.load_model(tmp_path / filename)).feature_names
    if names is not None:                     # the library files name their features Column_0 ...
        frame.columns = [*names, "y"]
    frame.iloc[:80].to_csv(tmp_path / "test.csv", index=False)
    code = main(["--model", str(tmp_path / filename), "--data", str(tmp_path / "test.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), "--sections", "faithfulness", "--explainers", "pg2", "--no-pdf",
                 "--quiet", "--max-rows", "20"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "out" / f"{tmp_path.joinpath(filename).stem}.json").is_file()


@pytest.mark.parametrize("filename", ["model.onnx", "model.txt"])
def test_a_model_read_from_a_file_runs_on_a_row_engine_bitwise(data, tmp_path, filename):
    da = pytest.importorskip("dask.array")
    X, y = data
    SAVERS[filename](X, y, str(tmp_path / filename))
    model = xp.load_model(tmp_path / filename)
    rows = da.from_array(X[:40], chunks=(13, 4))
    lazy = xp.pg2(model, rows, [0, 1], 0.4).compute()
    assert np.array_equal(lazy.value, xp.pg2(model, X[:40], [0, 1], 0.4).value)
    output = None if xp.import_model(model).n_outputs == 1 else 1
    ranking = xp.greedy_pg2_ranking(model, rows, 0.4, output=output).compute()
    assert np.array_equal(ranking.ranking, xp.greedy_pg2_ranking(model, X[:40], 0.4, output=output).ranking)
