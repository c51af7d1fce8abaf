"""Fixtures shared by several test files: data sets, small models, predictors, figure cleanup.

Session-scoped data are read-only, so that no test can change what the next one sees.
"""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from hypothesis import settings
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor

import xai_plugins
from xai_plugins.forest import Forest, import_model

#: column names of the ``named_frame`` data and of the models fitted on it
NAMES = ["a", "b", "c", "d"]


def _read_only(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def pytest_report_header(config):
    """Which xai_plugins the session tests: the checkout's source or an installed wheel."""
    return f"xai_plugins {xai_plugins.__version__} from {Path(xai_plugins.__file__).parent}"


#: test files that `make test-fast` leaves out (each takes seconds to tens of seconds: clusters, whole audits, many
#: random models); `make test` and CI run them
SLOW_FILES = frozenset({
    "test_spark_audit.py", "test_spark.py", "test_doc_examples.py", "test_dask.py",
    "test_report_determinism.py", "test_mlflow.py", "test_properties.py", "test_audit_categorical.py",
    "test_pg2_prune.py", "test_fairness.py", "test_categorical_importers.py", "test_report.py",
    "test_input_fidelity_properties.py", "test_governance.py", "test_pmml.py", "test_treeshap.py",
    "test_comparison.py", "test_audit_plan.py", "test_parity.py", "test_pdfa.py", "test_pipeline.py",
    "test_cli_gates.py", "test_model_files.py", "test_verdict_split.py", "test_verdict_evidence.py",
    "test_deployer.py", "test_report_failures.py", "test_cli.py", "test_import_parity.py", "test_onnx.py",
    "test_dt_sampler.py",
})

#: `--hypothesis-profile fast` (`make test-fast`): fewer examples where a test does not set its own count
settings.register_profile("fast", max_examples=10)


def pytest_configure(config):
    """Draw figures off screen, whatever the user's default matplotlib backend."""
    plt.switch_backend("Agg")


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_FILES` ``slow``."""
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def close_figures():
    """Close every matplotlib figure a test opened."""
    yield
    plt.close("all")


@pytest.fixture(scope="session")
def diabetes():
    """The diabetes data as numpy arrays (X (442, 10), y), as scikit-learn ships them."""
    return _read_only(*load_diabetes(return_X_y=True))


@pytest.fixture(scope="session")
def diabetes_std(diabetes):
    """The diabetes data with each column standardised to mean 0, standard deviation 1."""
    X, y = diabetes
    return _read_only((X - X.mean(0)) / X.std(0), y.copy())


@pytest.fixture(scope="session")
def diabetes_frame():
    """The diabetes data as a DataFrame and a Series (named columns: age, sex, bmi, ...)."""
    return load_diabetes(return_X_y=True, as_frame=True)


@pytest.fixture(scope="session")
def xgb_regressor(diabetes_frame):
    """A small XGBoost regressor (15 trees, depth 3) fitted on ``diabetes_frame``."""
    xgboost = pytest.importorskip("xgboost")
    X, y = diabetes_frame
    return xgboost.XGBRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y)


@pytest.fixture(scope="session")
def named_frame():
    """(X, y, y2, labels): a 160-row DataFrame with columns a, b, c, d, two regression targets and
    three string classes cut from y."""
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.normal(size=(160, 4)), columns=NAMES)
    y = (2 * X.a + X.b ** 2 - X.c + 0.5 * X.d * X.a + 0.1 * rng.normal(size=160)).to_numpy()
    y2 = (X.d ** 2 - X.a + 0.1 * rng.normal(size=160)).to_numpy()
    labels = np.array(["cat", "dog", "eel"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    return X, *_read_only(y, y2, labels)


@pytest.fixture(scope="session")
def small_model():
    """A factory of small unfitted models by kind ("rf", "rf_clf", "gb", "xgb", "lgbm"), seeded and
    single-threaded, with any hyperparameter overridden."""

    def make(kind, **overrides):
        if kind == "xgb":
            return pytest.importorskip("xgboost").XGBRegressor(
                **{"n_estimators": 6, "max_depth": 3, "random_state": 0, "n_jobs": 1, **overrides})
        if kind == "lgbm":
            return pytest.importorskip("lightgbm").LGBMRegressor(
                **{"n_estimators": 6, "num_leaves": 8, "min_child_samples": 5, "random_state": 0, "n_jobs": 1,
                   "verbose": -1, **overrides})
        sklearn = {"rf": RandomForestRegressor, "rf_clf": RandomForestClassifier, "gb": GradientBoostingRegressor}
        depth = 3 if kind == "gb" else 4
        return sklearn[kind](**{"n_estimators": 6, "max_depth": depth, "random_state": 0, **overrides})

    return make


@pytest.fixture(scope="session")
def oracle_predictor():
    """``oracle_predictor(model, kind)``: the f the grid oracle integrates. The library's own float64
    output where it has one (kind "model": predict, "proba": predict_proba, "decision":
    decision_function); otherwise ("forest": XGBoost float32 sums, LightGBM) the C predict, whose
    parity with the libraries is tested in test_forest."""

    def predictor(model, kind):
        if kind == "model":
            return lambda Z: np.asarray(model.predict(Z), dtype=np.float64).reshape(len(Z), -1)
        if kind == "proba":
            return model.predict_proba
        if kind == "decision":
            return lambda Z: np.asarray(model.decision_function(Z), dtype=np.float64).reshape(len(Z), -1)
        return import_model(model).predict

    return predictor


@pytest.fixture
def stump_forest():
    """A factory of one-split Forests built by hand (x <= 0.5 -> 1, else 2; NaN goes left), with any
    field overridden, for the structure checks of the C validator."""

    def make(**overrides):
        arrays = dict(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[0, 0, 0], threshold=[0.5, 0, 0],
                      missing_left=[1, 0, 0], value=[0.0, 1.0, 2.0], tree_offset=[0, 3], tree_target=[0],
                      base_score=[0.0], n_features=1, split_rule="le", input_float32=False, aggregate="sum",
                      task="regression", output_space="raw", model_type="manual")
        arrays.update(overrides)
        return Forest(**arrays)

    return make


def local_spark(master: str, app: str, partitions: int):
    """A local Spark session (``master``: ``local[THREADS]`` or ``local[THREADS,MAX_FAILURES]``) without its
    web UI and console progress, logging errors only; the caller stops it."""
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(partitions)).getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="session")
def categorical_models():
    """{kind: (model, frame)}: a LightGBM regressor fitted on pandas ``category`` columns and a
    Pipeline (one-hot city and sex, age passed through, a random forest) fitted on text columns;
    ``frame``: 90 rows as each model reads them (the first row's city is a category the models never
    saw), with a unique integer ``id`` column in shuffled order."""
    import lightgbm as lgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(5)
    n = 300
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "city": rng.choice(["paris", "rome", "oslo", "lima"], n),
                      "sex": rng.choice(["f", "m"], n)})
    y = X.age / 10 + X.city.map({"paris": 3.0, "rome": 1.0, "oslo": -2.0, "lima": 0.0}) + 2.0 * (X.sex == "f")
    y = (y + 0.1 * rng.normal(size=n)).to_numpy()
    front = ColumnTransformer([("enc", OneHotEncoder(handle_unknown="ignore"), ["city", "sex"])],
                              remainder="passthrough")
    pipe = Pipeline([("front", front), ("model", RandomForestRegressor(n_estimators=6, max_depth=5, bootstrap=False,
                                                                       random_state=0))]).fit(X, y)
    kinds = {"city": "category", "sex": "category"}
    lgbm = lgb.LGBMRegressor(n_estimators=10, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                             cat_smooth=1.0, verbose=-1, random_state=0).fit(X.astype(kinds), y)
    test = X.iloc[:90].copy()
    test.loc[0, "city"] = "tokyo"
    test.insert(0, "id", rng.permutation(len(test)) * 5 + 2)
    return {"lightgbm": (lgbm, test.astype(kinds)), "pipeline": (pipe, test)}


def same_greedy_and_mdi(model, rows, reference, same, kind: str) -> None:
    """The greedy ranking (and, for the one-hot Pipeline of ``categorical_models``, local and global MDI) of
    ``rows`` on a row engine, compared by ``same`` with those of the in-memory ``reference`` rows."""
    greedy, greedy_ref = xai_plugins.greedy_pg2_ranking(model, rows).compute(), xai_plugins.greedy_pg2_ranking(
        model, reference)
    same(greedy.ranking, greedy_ref.ranking)
    same(greedy.pg2_path, greedy_ref.pg2_path)
    if kind == "pipeline":
        same(xai_plugins.local_mdi(model, rows).compute(), xai_plugins.local_mdi(model, reference))
        same(xai_plugins.global_mdi(model, rows).compute(), xai_plugins.global_mdi(model, reference))


def section_json(audit, name: str) -> dict:
    """The JSON of an audit's section ``name`` without its timing, and without the phrase of a table caption
    naming the row engine that scored every row: what an in-memory audit of the same rows must give."""
    text = json.dumps(audit.to_dict()["sections"][name])
    if "computed on" in audit.parameters:
        text = text.replace(f" (every complete test row, computed on {audit.parameters['computed on']})", "")
    out = json.loads(text)
    out.pop("seconds")
    return out
