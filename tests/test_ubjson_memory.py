"""Memory of the XGBoost import's UBJSON decoder: the document is read in place (no copy of
``save_raw``'s bytes) and nothing holds the bytes after the call, even before a garbage collection;
members named in ``skip`` are left out."""

import gc
import tracemalloc

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from xai_plugins.forest._ubjson import decode_ubjson  # noqa: E402


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
    unused = frozenset({"loss_changes", "sum_hessian", "base_weights", "parents"})
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
