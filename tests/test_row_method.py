"""A made-up per-row method, declared once as a RowMethod (CONTRIBUTING.md, "a new method") and run by
the one runner: in memory as one block and on Dask block by block, bitwise the same for any chunking
(per-row outputs of any shape and dtype, rows on another axis, an exact count and an exact mean); the
lazy engine's columns are laid out from the declared shapes, and an output the block forgets fails."""

from dataclasses import dataclass

import numpy as np
import pytest

from xai_plugins.engines import MEMORY, engine_for
from xai_plugins.engines.method import Output, Plan, RowMethod, Sum, Total
from xai_plugins.engines.runner import run
from xai_plugins.exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean

da = pytest.importorskip("dask.array")


@dataclass
class Toy:
    scaled: np.ndarray        # (n, d) float
    index: np.ndarray         # (n,) int: each row's position, from the block's start
    pairs: np.ndarray         # (2, n, d) bool, rows on axis 1
    nonzero: int              # exact count over the rows
    mean: np.ndarray          # (d,) correctly rounded mean of ``scaled``


def _prepare(engine, X, weights, scale, forget=False) -> Plan:
    d = X.shape[1]
    rows, _ = engine.rows(X, None, d, lambda x: (np.asarray(x, dtype=np.float64), [str(j) for j in range(d)]))
    outputs = (Output("scaled", (d,)), Output("index", (), np.int64), Output("pairs", (2, d), bool, rows_axis=1),
               Total("nonzero"), Sum("mean", _sums, _mean, of=("scaled",), shape=(d,)))
    return Plan(rows, outputs, shipped=float(scale), ship="value", per_row=(engine.by_rows(weights, rows, "weights"),),
                shared=dict(forget=forget))


def _block(scale, start, X, w, *, forget) -> dict:
    scaled = X * w[:, None] * scale
    out = {"scaled": scaled, "index": start + np.arange(len(X)), "pairs": np.stack([X > 0, X < 0], axis=1),
           "nonzero": int(np.count_nonzero(scaled))}
    if forget:
        del out["pairs"]
    return out


def _sums(scaled) -> list:
    return exact_column_sums(np.asarray(scaled, dtype=np.float64)) + [len(scaled)]


def _mean(total):
    return exact_mean(total[:-1], total[-1] << SUM_SCALE_BITS)


def _finish(plan, cols, engine):
    return engine.result(Toy, **cols)


TOY = RowMethod("toy", _prepare, _block, _finish)


def toy(X, weights, scale=0.5, forget=False):
    """The made-up method's public function: whatever holds X, the same call."""
    return run(TOY, engine_for(X, weights), X, weights, scale, forget)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((23, 4))
    X[3, 2] = 0.0
    return X, rng.random(23)


@pytest.mark.parametrize("chunk", [1, 5, 23])
def test_memory_and_dask_are_bitwise_the_same(data, chunk):
    X, w = data
    here = toy(X, w)
    assert isinstance(here, Toy) and engine_for(X, w) is MEMORY
    assert here.pairs.shape == (2, 23, 4) and here.index.dtype == np.int64
    np.testing.assert_array_equal(here.index, np.arange(23))
    np.testing.assert_allclose(here.mean, (X * w[:, None] * 0.5).mean(axis=0), rtol=1e-15)
    lazy = toy(da.from_array(X, chunks=(chunk, 4)), da.from_array(w, chunks=chunk))
    there = lazy.compute(scheduler="synchronous")
    for name in ("scaled", "index", "pairs", "mean"):
        a, b = np.asarray(getattr(here, name)), np.asarray(getattr(there, name))
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
    assert there.nonzero == here.nonzero == 23 * 4 - 1


def test_an_output_the_block_forgets_fails(data):
    X, w = data
    with pytest.raises(KeyError, match="pairs"):
        toy(da.from_array(X, chunks=(5, 4)), da.from_array(w, chunks=5), forget=True).compute(scheduler="synchronous")
    with pytest.raises(KeyError, match="pairs"):
        toy(X, w, forget=True)


def test_pgi2_sampled_sets_on_dask_are_the_in_memory_bits(diabetes_std):
    """One path for every engine: PGI² with Monte Carlo prefix sets (row i seeded by its index) now runs on a
    row engine too, bitwise the in-memory result for any chunking."""
    from sklearn.ensemble import RandomForestRegressor

    import xai_plugins as xp

    X, y = diabetes_std
    model = RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    rows = np.ascontiguousarray(X[:9])
    ranking = np.argsort(np.random.default_rng(1).random(rows.shape), axis=1)
    here = xp.pgi2(model, rows, ranking, sampled_from=6, n_samples=64, random_state=3)
    there = xp.pgi2(model, da.from_array(rows, chunks=(4, rows.shape[1])), ranking, sampled_from=6, n_samples=64,
                    random_state=3).compute(scheduler="synchronous")
    assert here.tobytes() == np.asarray(there).tobytes()
