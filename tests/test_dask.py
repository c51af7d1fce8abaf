"""Dask scale-out (xai_plugins.distributed) on a real LocalCluster: lazy results whose compute()
is bitwise identical to the in-memory result on the same rows, for any chunking."""

import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
xgb = pytest.importorskip("xgboost")

from conftest import same_greedy_and_mdi, section_json  # noqa: E402
from sklearn.ensemble import RandomForestRegressor  # noqa: E402

import xai_plugins as xp  # noqa: E402
from xai_plugins import distributed as xd  # noqa: E402
from xai_plugins.errors import InputError, InputTypeError, UnsupportedModelError  # noqa: E402

N, D = 37, 5


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=40)
        c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    y = X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] ** 2
    names = list("abcde")
    model = xgb.XGBRegressor(n_estimators=12, max_depth=3, random_state=0).fit(pd.DataFrame(X, columns=names), y)
    rf = RandomForestRegressor(n_estimators=6, max_depth=4, bootstrap=False, random_state=0).fit(X, y)
    return X, y, names, model, rf


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=True) and a.tobytes() == b.tobytes()


CHUNKS = [10, 1, N]     # 37 rows: blocks of 10 (not dividing), single rows, one block


@pytest.mark.parametrize("rows", CHUNKS)
def test_pg2_exact_and_greedy_bitwise(client, data, rows):
    X, _, _, model, _ = data
    Xd = da.from_array(X, chunks=(rows, D))
    lazy = xp.pg2(model, Xd, [0, "c", 4])
    assert isinstance(lazy.value, da.Array) and isinstance(lazy, xp.PG2Estimate)
    got, ref = lazy.compute(), xp.pg2(model, X, [0, 2, 4])
    same(got.value, ref.value)
    same(got.stderr, ref.stderr)
    assert got.pair_terms == ref.pair_terms and got.method == "exact"
    S = np.random.default_rng(1).random((N, D)) < 0.5          # one set per row
    same(xp.pg2(model, Xd, S).value.compute(), xp.pg2(model, X, S).value)
    g, gref = xp.greedy_pg2_ranking(model, Xd).compute(), xp.greedy_pg2_ranking(model, X)
    same(g.ranking, gref.ranking)
    same(g.pg2_path, gref.pg2_path)


@pytest.mark.parametrize("method", ["monte_carlo", "qmc"])
def test_pg2_seeded_sampling_bitwise(client, data, method):
    X, _, _, model, _ = data
    ref = xp.pg2(model, X, [1, 3], method=method, n_samples=64, random_state=7)
    for rows in (10, 4):
        got = xp.pg2(model, da.from_array(X, chunks=(rows, D)), [1, 3], method=method, n_samples=64,
                     random_state=7).compute()
        same(got.value, ref.value)
        same(got.stderr, ref.stderr)
    # row i's draws do not depend on the other rows: a slice keeps its rows' estimates
    sub = xp.pg2(model, X[:5], [1, 3], method=method, n_samples=64, random_state=7)
    same(sub.value, ref.value[:5])


def test_pgi2_and_faithfulness_bitwise(client, data):
    X, _, _, model, _ = data
    rng = np.random.default_rng(2)
    Xd = da.from_array(X, chunks=(10, D))
    greedy = xp.greedy_pg2_ranking(model, X).ranking
    same(xp.pgi2(model, Xd, greedy).compute(), xp.pgi2(model, X, greedy))
    same(xp.pgi2(model, Xd, ["e", "d", "c", "b", "a"]).compute(), xp.pgi2(model, X, [4, 3, 2, 1, 0]))
    stack = np.stack([greedy, greedy[:, ::-1], np.argsort(rng.random((N, D)), axis=1)])
    ref = xp.pgi2(model, X, stack)
    same(xp.pgi2(model, Xd, da.from_array(stack, chunks=(2, 7, D))).compute(), ref)     # stacked dask ranking
    same(xp.pgi2(model, X, da.from_array(stack, chunks=(3, 9, D))).compute(), ref)      # dask ranking only
    values = rng.standard_normal((N, D))
    same(xp.faithfulness(model, da.from_array(values, chunks=(9, D)), X=Xd).compute(),
         xp.faithfulness(model, values, X=X))
    same(xd.mean_pgi2(model, Xd, greedy).compute(), xd.mean_pgi2(model, X, greedy))
    assert abs(xd.mean_pgi2(model, X, greedy) - xp.pgi2(model, X, greedy).mean()) < 1e-12


def test_dataframe_columns_aligned_by_name(client, data):
    X, _, names, model, _ = data
    df = pd.DataFrame(X, columns=names)
    shuffled = dd.from_pandas(df[["e", "c", "a", "d", "b"]], npartitions=4)
    same(xp.pg2(model, shuffled, ["a", "d"]).value.compute(), xp.pg2(model, df, ["a", "d"]).value)
    same(xp.greedy_pg2_ranking(model, shuffled).ranking.compute(), xp.greedy_pg2_ranking(model, df).ranking)
    with pytest.raises(xp.errors.FeatureMismatchError if hasattr(xp, "errors") else InputError):
        xp.pg2(model, dd.from_pandas(df.rename(columns={"a": "zz"}), npartitions=2), [1])


def test_local_and_global_mdi_bitwise(client, data):
    X, _, _, _, rf = data
    for rows in (10, 1):
        Xd = da.from_array(X, chunks=(rows, D))
        same(xp.local_mdi(rf, Xd).compute(), xp.local_mdi(rf, X))
        same(xp.global_mdi(rf, Xd).compute(), xp.global_mdi(rf, X))
    w = np.random.default_rng(3).random(N)
    same(xp.global_mdi(rf, da.from_array(X, chunks=(8, D)), da.from_array(w, chunks=5)).compute(),
         xp.global_mdi(rf, X, w))
    np.testing.assert_allclose(xp.global_mdi(rf, X), xp.global_mdi(rf), rtol=1e-12, atol=1e-16)
    with pytest.raises(InputError, match="in_bag"):
        xp.global_mdi(rf, da.from_array(X, chunks=10), in_bag=True)


@pytest.mark.parametrize("kind", ["lightgbm", "pipeline"])
def test_categorical_model_bitwise(client, categorical_models, kind):
    """A model with categorical features on a dask DataFrame of pandas categories (LightGBM) or text
    (a one-hot Pipeline), an unseen category included: PG², greedy and local MDI bitwise the
    in-memory results (the previous main refused the non-numeric columns)."""
    model, frame = categorical_models[kind]
    X = frame.drop(columns=["id"])
    Xd = dd.from_pandas(X, npartitions=3)
    same(xp.pg2(model, Xd, ["city", "age"]).compute().value, xp.pg2(model, X, ["city", "age"]).value)
    mc = dict(method="monte_carlo", n_samples=16, random_state=3)      # the model's own predict, shipped
    same(xp.pg2(model, Xd, ["sex"], **mc).compute().value, xp.pg2(model, X, ["sex"], **mc).value)
    same_greedy_and_mdi(model, Xd, X, same, kind)
    if kind != "pipeline":       # LightGBM stores no node impurity: refused as in memory
        with pytest.raises(UnsupportedModelError, match="impurities"):
            xp.local_mdi(model, Xd)
    with pytest.raises(InputTypeError, match="age"):         # text in a numeric feature: refused, as in memory
        xp.pg2(model, dd.from_pandas(X.astype({"age": str}), npartitions=2), ["city"])


def test_model_is_one_graph_key(data):
    X, _, _, model, _ = data
    Xd = da.from_array(X, chunks=(5, D))
    graph = dict(xp.pg2(model, Xd, [0]).value.__dask_graph__())
    forest_keys = [k for k in graph if isinstance(k, str) and k.startswith("xai-forest-")]
    assert len(forest_keys) == 1
    again = dict(xp.greedy_pg2_ranking(model, Xd).ranking.__dask_graph__())
    assert forest_keys[0] in again          # the same key for every call on this model


def test_in_memory_does_not_import_dask():
    code = ("import sys, numpy as np; import xai_plugins as xp; "
            "from sklearn.ensemble import RandomForestRegressor as R; X = np.random.rand(30, 3); "
            "m = R(n_estimators=3, max_depth=3).fit(X, X[:, 0]); xp.pg2(m, X, [0]); xp.local_mdi(m, X); "
            "xp.global_mdi(m, X); xp.pgi2(m, X, [0, 1, 2]); "
            "xp.pg2(m, X, [0], method='monte_carlo', n_samples=10, random_state=0); "
            "assert not [k for k in sys.modules if k == 'dask' or k.startswith('dask.')], 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_worker_killed_mid_computation(client, data):
    """One worker process dies while blocks are running: the nanny restarts it, the scheduler
    re-runs the lost blocks, and the result still equals the in-memory one."""
    X, _, _, model, _ = data
    big = np.tile(X, (4, 1))
    kw = dict(method="monte_carlo", n_samples=100_000, random_state=5)
    ref = xp.pg2(model, big, [0, 1, 2], **kw)
    lazy = xp.pg2(model, da.from_array(big, chunks=(4, D)), [0, 1, 2], **kw)
    futures = client.compute([lazy.value, lazy.stderr])
    deadline = time.time() + 20
    busy = []
    while not busy and time.time() < deadline:
        busy = [w for w, tasks in client.processing().items() if tasks]
        time.sleep(0.02)
    assert busy, "no block started"
    assert not all(f.done() for f in futures)
    killer = threading.Thread(target=_kill, args=(client, busy[0]), daemon=True)
    killer.start()
    killer.join(30)
    assert not all(f.done() for f in futures), "the computation ended before the worker died"
    value, stderr = client.gather(futures)
    assert busy[0] not in client.scheduler_info()["workers"]      # that worker process is gone
    same(value, ref.value)
    same(stderr, ref.stderr)


def _kill(client, address):
    try:
        client.run(os._exit, 1, workers=[address])
    except Exception:  # noqa: BLE001 - the worker dies before answering
        pass


def test_bad_dask_input(client, data):
    X, _, _, model, _ = data
    with pytest.raises(InputError, match="columns"):
        xp.pg2(model, da.from_array(X[:, :3], chunks=10), [0])
    with pytest.raises(InputError, match="method"):
        xp.pg2(model, da.from_array(X, chunks=10), [0], method="nope")
    with pytest.raises(InputError, match="n_samples"):
        xp.pg2(model, da.from_array(X, chunks=10), [0], method="monte_carlo", n_samples=1)
    with pytest.raises(InputError, match="rows"):
        xp.pgi2(model, da.from_array(X, chunks=10), np.tile(np.arange(D), (N - 1, 1)))


# --------------------------------------------------------------------------------------------
# shap explainers, AcME local, the audit and xai-audit --scheduler on the cluster
# --------------------------------------------------------------------------------------------

def test_acme_local_is_lazy_and_bitwise(client, data):
    from sklearn.ensemble import RandomForestClassifier

    from xai_plugins.acme import AcME, AcMELocal

    X, y, names, model, _ = data
    clf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y > 0)     # k = 2 outputs
    shuffled = dd.from_pandas(pd.DataFrame(X, columns=names)[["d", "a", "e", "b", "c"]], npartitions=3)
    for m, rows, variant in ((model, shuffled, "paper"), (clf, da.from_array(X, chunks=(8, D)), "reference")):
        acme = AcME(m, pd.DataFrame(X, columns=names) if m is model else X, n_quantiles=7, variant=variant)
        lazy = acme.explain_local(rows)
        assert isinstance(lazy, AcMELocal) and isinstance(lazy.values, da.Array)
        got, ref = lazy.compute(), acme.explain_local(pd.DataFrame(X, columns=names) if m is model else X)
        assert type(got) is AcMELocal and got.output_names == ref.output_names
        for field in ("X", "row_levels", "row_predictions", "predictions", "effects", "values"):
            same(getattr(got, field), getattr(ref, field))


def test_shap_explainers_on_dask_bitwise(client, data):
    from xai_plugins.shap import AcMEExplainer, LocalMDIExplainer, PG2Explainer

    X, _, names, model, rf = data
    df = pd.DataFrame(X, columns=names)
    shuffled = dd.from_pandas(df[["e", "c", "a", "d", "b"]], npartitions=4)
    explainer = PG2Explainer(model, sigma=0.5, background=df)
    got, ref = explainer(shuffled), explainer(df)
    assert isinstance(got.values, np.ndarray)          # computed on the cluster, returned in memory
    for a, b in ((got.values, ref.values), (got.data, ref.data), (got.ranking, ref.ranking), (got.pgi2, ref.pgi2)):
        same(a, b)
    assert got.feature_names == ref.feature_names
    mdi = LocalMDIExplainer(rf)
    same(mdi(da.from_array(X, chunks=(6, D))).values, mdi(X).values)
    acme = AcMEExplainer(rf, X, n_quantiles=9)
    got, ref = acme(da.from_array(X, chunks=(10, D))), acme(X)
    same(got.values, ref.values)
    same(got.data, ref.data)


def test_random_rankings_and_order_statistics(client):
    rng = np.random.default_rng(4)
    X = da.from_array(rng.random((53, 7)), chunks=(11, 7))
    same(xd.random_rankings(X, 9).compute(), np.argsort(np.random.default_rng(9).random((53, 7)), axis=1))
    v = rng.standard_normal((301, 2))
    v[:40, 1] = 0.25                                            # ties
    v[7, 0] = -1e300
    picked = xd.order_statistics(da.from_array(v, chunks=(37, 2)), [0, 0, 1, 1, 1], [0, 150, 0, 39, 300])
    same(picked, np.array([np.sort(v[:, 0])[0], np.sort(v[:, 0])[150], np.sort(v[:, 1])[0],
                           np.sort(v[:, 1])[39], np.sort(v[:, 1])[300]]))


@pytest.fixture(scope="module")
def audit_data():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    X_train, y_train, X_test, y_test = X.iloc[:300], y.iloc[:300], X.iloc[300:420], y.iloc[300:420]
    model = RandomForestClassifier(n_estimators=10, max_depth=3, bootstrap=False, random_state=0).fit(X_train, y_train)
    return model, X_train, y_train, X_test, y_test


def test_audit_with_client_explains_every_row(client, audit_data):
    from xai_plugins.report import audit

    model, X_train, y_train, X_test, y_test = audit_data
    kw = dict(X_train=X_train, y_train=y_train, explainers=["shap", "pg2", "local_mdi", "acme"],
              sections=["explanations", "faithfulness", "agreement"], mc_pairs=1, max_shap_rows=40, progress=False)
    frame = dd.from_pandas(X_test[X_test.columns[::-1]].assign(target=y_test.to_numpy()), npartitions=3)
    on_cluster = audit(model, frame.drop(columns=["target"]), frame["target"], client=client, **kw)
    in_memory = audit(model, X_test, y_test, max_rows=120, time_budget=None, **kw)
    assert on_cluster.rows_explained == 120 and in_memory.rows_explained == 120
    for s in ("explanations", "faithfulness", "agreement"):
        assert on_cluster.sections[s].status == "ok", (s, on_cluster.sections[s].reason)
    assert all(on_cluster.methods[k].status == "ok" for k in ("shap", "pg2", "local_mdi", "acme"))
    a, b = on_cluster.sections["faithfulness"].data, in_memory.sections["faithfulness"].data
    # bitwise: every block is scored by the in-memory pgi2, and both audits reduce with exact sums
    # (correctly rounded means, sd from them, win rates) and exact order statistics (medians)
    pd.testing.assert_frame_equal(a["pgi2"], b["pgi2"], check_exact=True)
    assert a["win rate"] == b["win rate"] and a["winners"] == b["winners"] and a["rows"] == 120
    assert "ignored" in str(on_cluster.parameters["max_rows"])
    html = on_cluster.to_html()
    assert "explain 120 test rows: every complete test row" in html and "max_rows and time_budget" in html
    assert on_cluster.to_dict()["rows explained"] == 120
    assert on_cluster.sections["model"].data["card"]["test rows"] == 120


@pytest.fixture(scope="module")
def in_memory_audits(audit_data):
    """The test rows in a shuffled order (dask sorts a pandas frame by its index) and the in-memory
    audits of those rows, in that order and in index order."""
    from xai_plugins.report import audit

    model, X_train, y_train, X_test, y_test = audit_data
    shuffled = np.random.default_rng(3).permutation(len(X_test))
    X, y = X_test.iloc[shuffled], y_test.iloc[shuffled]
    kw = dict(X_train=X_train, y_train=y_train, explainers=["pg2", "local_mdi"], mc_pairs=0, max_shap_rows=len(X),
              sections=["explanations", "faithfulness"], progress=False)
    memory = dict(max_rows=len(X), time_budget=None, **kw)
    return X, y, kw, audit(model, X, y, **memory), audit(model, X.sort_index(), y.sort_index(), **memory)


@pytest.mark.parametrize("partitions", [1, 3])
def test_cluster_audit_gives_the_in_memory_verdict_and_faithfulness(client, audit_data, in_memory_audits, partitions):
    """A Dask audit assesses faithfulness and stability (the per-row PGI² come back from the cluster) and
    gives the verdict and the faithfulness section of the in-memory audit of the same rows, bit for bit
    (on the previous main both criteria were "not assessed"); the random floor of a row does not depend on
    where the row is, so the faithfulness section is also that of the rows in their original order (on the
    previous main its random rows differed)."""
    from xai_plugins.report import audit

    model = audit_data[0]
    X, y, kw, shuffled, ordered = in_memory_audits
    on_cluster = audit(model, dd.from_pandas(X, npartitions=partitions), dd.from_pandas(y, npartitions=partitions),
                       client=client, **kw)
    by_kind = {c.kind: c for c in on_cluster.verdict.criteria}
    assert by_kind["faithfulness"].status != "not assessed" and by_kind["stability"].status != "not assessed"
    assert section_json(on_cluster, "verdict") == section_json(ordered, "verdict")
    assert section_json(on_cluster, "faithfulness") == section_json(ordered, "faithfulness")
    assert section_json(on_cluster, "faithfulness") == section_json(shuffled, "faithfulness")
    for s in shuffled.sections["faithfulness"].data["sigmas"]:
        for key, values in ordered.sections["faithfulness"].result.pgi2[s].items():
            same(on_cluster.sections["faithfulness"].result.pgi2[s][key], values)


@pytest.mark.parametrize("kind", ["lightgbm", "pipeline"])
def test_audit_of_a_categorical_model_on_dask(client, categorical_models, kind):
    """The audit of a model with categorical features on a dask DataFrame of categories / text:
    the faithfulness table and the importances bitwise those of the in-memory audit (on the previous
    main the frame was refused; the Pipeline's scorer did not pickle)."""
    from xai_plugins.report import audit

    model, frame = categorical_models[kind]
    X = frame.drop(columns=["id"])
    y = pd.Series(X.age / 10 + np.random.default_rng(0).normal(size=len(X)))
    kw = dict(X_train=X.iloc[:60], y_train=y.iloc[:60], explainers=["pg2", "local_mdi"], mc_pairs=0,
              sections=["explanations", "faithfulness"], max_shap_rows=30, progress=False)
    on_cluster = audit(model, dd.from_pandas(X, npartitions=3), dd.from_pandas(y, npartitions=3), client=client, **kw)
    in_memory = audit(model, X, y, max_rows=len(X), time_budget=None, **kw)
    assert on_cluster.rows_explained == in_memory.rows_explained == len(X)
    assert on_cluster.sections["faithfulness"].status == "ok", on_cluster.sections["faithfulness"].reason
    pd.testing.assert_frame_equal(on_cluster.sections["faithfulness"].data["pgi2"],
                                  in_memory.sections["faithfulness"].data["pgi2"], check_exact=True)
    for key in ("pg2", "local_mdi"):
        assert on_cluster.methods[key].status == in_memory.methods[key].status
        if in_memory.methods[key].status == "ok":
            pd.testing.assert_series_equal(on_cluster.methods[key].importance, in_memory.methods[key].importance,
                                           check_exact=True)
    assert (on_cluster.methods["local_mdi"].status == "ok") == (kind == "pipeline")    # LightGBM: no impurities


def test_cli_scheduler_reads_a_csv_glob(client, tmp_path):
    import json

    from sklearn.datasets import load_diabetes

    from xai_plugins.cli import main

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = xgb.XGBRegressor(n_estimators=8, max_depth=3).fit(X.iloc[:250], y.iloc[:250])
    model.save_model(tmp_path / "model.json")
    test = X.iloc[250:340].assign(y=y.iloc[250:340].to_numpy())
    test.iloc[5, 1] = np.nan                                   # not explained (PG² cannot perturb it)
    for i, start in enumerate((0, 30, 60)):
        test.iloc[start:start + 30].to_csv(tmp_path / f"part-{i}.csv", index=False)
    X.iloc[:250].assign(y=y.iloc[:250]).to_csv(tmp_path / "train.csv", index=False)
    code = main(["--model", str(tmp_path / "model.json"), "--data", str(tmp_path / "part-*.csv"), "--target", "y",
                 "--train", str(tmp_path / "train.csv"), "--scheduler", client.scheduler.address, "--out",
                 str(tmp_path / "out"), "--explainers", "pg2", "--sections", "explanations", "faithfulness",
                 "--no-pdf", "--quiet", "--max-rows", "20"])
    assert code == 0
    report = json.loads((tmp_path / "out" / "model.json").read_text())
    assert report["rows explained"] == 89                       # every complete row, not --max-rows
    assert report["sections"]["faithfulness"]["data"]["rows"] == 89
    assert report["sections"]["data"]["data"]["missing values"] == 1
    assert "3 file(s)" in report["sections"]["reproducibility"]["data"]["hashes"]["test files"]
    assert main(["--model", str(tmp_path / "model.json"), "--data", str(tmp_path / "none-*.csv"), "--target", "y",
                 "--scheduler", client.scheduler.address, "--quiet"]) == 2
