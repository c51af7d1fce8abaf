"""Memory of the XGBoost import and its UBJSON decoder: the document is read in place (no copy of
``save_raw``'s bytes) and nothing holds the bytes after the call, even before a garbage collection;
members named in ``skip`` are left out; ``views`` gives typed arrays as views into the bytes; the
import reads XGBoost's own output buffer and keeps its peak near the Forest it builds."""

import gc
import tracemalloc

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from xai_plugins.forest._ubjson import decode_ubjson  # noqa: E402

_UNUSED = frozenset({"loss_changes", "sum_hessian", "base_weights", "parents"})


@pytest.fixture(scope="module")
def raw():
    """save_raw of a model whose node arrays dwarf the decoder's own bookkeeping (about 1 MiB)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20_000, 6))
    y = X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2]) + rng.standard_normal(20_000)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=10, tree_method="hist", n_jobs=1).fit(X, y)
    out = model.get_booster().save_raw(raw_format="ubj")
    assert len(out) > 400_000
    return bytes(out)


def array_bytes(doc) -> int:
    """Bytes of the numpy arrays a decoded document holds."""
    if isinstance(doc, np.ndarray):
        return doc.nbytes
    if isinstance(doc, dict):
        return sum(array_bytes(v) for v in doc.values())
    if isinstance(doc, list):
        return sum(array_bytes(v) for v in doc)
    return 0


def test_decoder_neither_copies_nor_keeps_the_bytes(raw):
    data = bytearray(raw)
    gc.collect()
    gc.disable()                                        # a reference cycle would keep what it holds
    try:
        tracemalloc.start()
        doc = decode_ubjson(data)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        gc.enable()
    arrays, size = array_bytes(doc), len(raw)
    # beyond the arrays it returns, the decoder's bookkeeping is small beside the bytes it read
    assert peak - arrays < size / 4, (peak, arrays, size)
    assert held - arrays < size / 4, (held, arrays, size)
    data.extend(b"\0")                                  # no buffer export is left open on the input


def test_skipped_members_are_left_out_and_the_rest_is_unchanged(raw):
    full = decode_ubjson(raw)
    unused = _UNUSED
    lean = decode_ubjson(raw, skip=unused)
    trees_full = full["learner"]["gradient_booster"]["model"]["trees"]
    trees_lean = lean["learner"]["gradient_booster"]["model"]["trees"]
    assert len(trees_full) == len(trees_lean) == 40
    for a, b in zip(trees_full, trees_lean):
        assert set(a) - set(b) == unused
        for key in b:
            if isinstance(b[key], np.ndarray):
                np.testing.assert_array_equal(a[key], b[key])
                assert a[key].dtype == b[key].dtype
            else:
                assert a[key] == b[key]
    assert lean["learner"]["learner_model_param"] == full["learner"]["learner_model_param"]


def test_views_are_read_only_big_endian_views_into_the_bytes(raw):
    data = bytearray(raw)
    copied = decode_ubjson(raw, skip=_UNUSED)
    gc.collect()
    gc.disable()
    try:
        tracemalloc.start()
        viewed = decode_ubjson(data, skip=_UNUSED, views=True)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        gc.enable()
    assert array_bytes(viewed) > len(raw) / 2                 # the arrays are most of the document...
    assert peak < len(raw) / 4, (peak, len(raw))              # ...and none of them was copied
    trees_copied = copied["learner"]["gradient_booster"]["model"]["trees"]
    trees_viewed = viewed["learner"]["gradient_booster"]["model"]["trees"]
    for a, b in zip(trees_copied, trees_viewed):
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                assert not b[key].flags.writeable
                assert not len(value) or np.shares_memory(b[key], np.frombuffer(data, np.uint8))
                np.testing.assert_array_equal(value, b[key])
                assert value.tobytes() == b[key].astype(value.dtype).tobytes()
    del viewed, trees_viewed, b
    data.extend(b"\0")                          # with the views gone, no buffer export is left open (no cycle)


def test_the_import_reads_xgboosts_own_buffer_and_holds_no_copy():
    """XGBoost's output buffer holds save_raw's bytes; the import's peak of Python allocations stays
    near the Forest it builds (the previous import concatenated int64 / float64 copies: 4.4 x the
    model's UBJSON bytes on this model; now 1.5 x)."""
    from xai_plugins.forest import import_model
    from xai_plugins.forest.xgboost import _model_buffer

    rng = np.random.default_rng(1)
    X = rng.standard_normal((20_000, 6))
    y = X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2]) + rng.standard_normal(20_000)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=10, tree_method="hist", n_jobs=1).fit(X, y)
    booster = model.get_booster()
    size = len(booster.save_raw(raw_format="ubj"))
    assert bytes(_model_buffer(booster)) == bytes(booster.save_raw(raw_format="ubj"))
    import_model(xgb.XGBRegressor(n_estimators=2, max_depth=2).fit(X[:100], y[:100]))   # lazy imports done
    gc.collect()
    tracemalloc.start()
    forest = import_model(model)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert forest.n_nodes > 30_000
    assert peak < 2.5 * size, (peak, size)
    np.testing.assert_allclose(forest.predict(X[:500])[:, 0], model.predict(X[:500], output_margin=True),
                               rtol=1e-6, atol=1e-5)


def test_without_xgboosts_c_api_the_import_reads_save_raws_copy_to_the_same_forest(monkeypatch):
    from xai_plugins.forest import clear_model_cache, import_model
    from xai_plugins.forest import xgboost as importer

    rng = np.random.default_rng(2)
    X = rng.standard_normal((2_000, 4))
    model = xgb.XGBRegressor(n_estimators=5, max_depth=4, n_jobs=1).fit(X, X[:, 0] - X[:, 1] ** 2)
    direct = import_model(model)
    clear_model_cache()
    monkeypatch.setattr(importer, "_save_api", lambda: None)
    copied = import_model(model)
    assert copied is not direct
    for name in ("left_child", "right_child", "feature", "threshold", "missing_left", "value", "tree_offset"):
        assert getattr(copied, name).tobytes() == getattr(direct, name).tobytes(), name
