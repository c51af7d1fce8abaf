"""The row engines (xai_plugins.engines): dispatch, the in-memory engine, and the interface itself,
proven generic by a third engine written here (rows as a list of numpy blocks, everything shipped
through pickle): the public functions run on it unchanged and give the in-memory bits."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestRegressor

import xai_plugins as xp
from xai_plugins import engines
from xai_plugins.engines.base import Engine, add_all, call_block, from_keys, order_keys, plain_forest
from xai_plugins.errors import InputError
from xai_plugins.ranking_faithfulness import random_rankings


class Blocks:
    """Rows cut into numpy blocks (rows on ``axis`` once computed)."""

    def __init__(self, blocks, axis=0):
        self.blocks, self.axis = list(blocks), axis

    @property
    def shape(self):
        return (sum(len(b) for b in self.blocks),) + self.blocks[0].shape[1:]

    def whole(self):
        return np.moveaxis(np.concatenate(self.blocks), 0, self.axis)


def _cut(a, sizes):
    return np.split(a, np.cumsum(sizes)[:-1])


class BlockEngine(Engine):
    """A test engine: each block through the block function, each shipped object pickled."""

    name = "blocks"

    def handles(self, obj):
        return isinstance(obj, Blocks)

    def rows(self, X, names, d, in_memory, what="X", like=None, *, forest=None):    # blocks read by in_memory
        if isinstance(X, Blocks):
            parts = [in_memory(b) for b in X.blocks]
            return Blocks([p[0] for p in parts]), parts[0][1]
        rows, names = in_memory(X)
        sizes = [len(b) for b in like[0].blocks] if like is not None and isinstance(like[0], Blocks) else [len(rows)]
        return Blocks(_cut(rows, sizes)), names

    def n_rows(self, rows):
        return rows.shape[0]

    def by_rows(self, a, rows, what, *, axis=0, transform=None, width=None, dtype=None):
        sizes = [len(b) for b in rows.blocks]
        if isinstance(a, Blocks):
            parts = [transform(b) if transform else np.moveaxis(b, axis, 0) for b in a.blocks]
            a = np.concatenate(parts)
        else:
            a = transform(a) if transform else np.moveaxis(np.asarray(a), axis, 0)
        if len(a) != sum(sizes):
            raise InputError(f"{what} has {len(a)} rows but X has {sum(sizes)}")
        return Blocks(_cut(a if dtype is None else a.astype(dtype), sizes))

    def head(self, a, n):
        return a.whole()[:n]

    def ship(self, obj, prefix="xai-object", *, cache=True):
        return pickle.loads(pickle.dumps(obj))

    def ship_forest(self, forest, *, with_model=False):
        return pickle.loads(pickle.dumps(plain_forest(forest, with_model=with_model)))

    def map_rows(self, block_fn, rows, shipped, per_row, width, **shared):
        out, start = [], 0
        for i, X in enumerate(rows.blocks):
            out.append(call_block(block_fn, shipped, start, X, [p.blocks[i] for p in per_row], shared))
            start += len(X)
        return Blocks(out)

    def columns(self, out, start, stop, *, shape=None, dtype=None, rows_axis=0):
        shape = (stop - start,) if shape is None else shape
        parts = [b[:, start:stop].reshape((len(b),) + tuple(shape)) for b in out.blocks]
        return Blocks([p if dtype is None else p.astype(dtype) for p in parts], rows_axis)

    def reduce(self, block_fn, arrays, *args, finish=None, shape=(), dtype=np.float64):
        total = add_all([block_fn(*bs, *args) for bs in zip(*(a.blocks for a in arrays))])
        return total if finish is None else finish(total)

    def order_statistics(self, a, columns, ranks, compute=None):
        whole = a.whole()
        return from_keys(np.array([np.sort(order_keys(whole[:, c]))[r] for c, r in zip(columns, ranks)],
                                  dtype=np.uint64))

    def compute(self, *objs):
        return tuple(o.whole() if isinstance(o, Blocks) else o for o in objs)

    def result(self, cls, *, timed=None, **fields):
        engine = self

        class Lazy:
            def compute(self):
                return cls(**{k: engine.compute(v)[0] for k, v in fields.items()})

        return Lazy()


@pytest.fixture(scope="module")
def blocks_engine():
    engine = engines.register(BlockEngine())
    yield engine
    engines._ENGINES[:] = [e for e in engines._ENGINES if e.name != "blocks"]


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((23, 4))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    rf = RandomForestRegressor(n_estimators=5, max_depth=4, bootstrap=False, random_state=0).fit(X, y)
    return X, rf


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert a.tobytes() == b.tobytes()


def split(X, sizes):
    return Blocks(_cut(X, sizes))


def test_dispatch():
    assert engines.engine_for(np.ones((2, 2)), None, [1, 2]) is engines.MEMORY
    assert engines.get("dask").name == "dask" and engines.engines()[-1] is engines.MEMORY
    with pytest.raises(InputError, match="no engine named"):
        engines.get("nope")
    with pytest.raises(InputError, match="subclass"):
        engines.register(object())


def test_mixed_engines_refused(blocks_engine, models):
    da = pytest.importorskip("dask.array")
    X, rf = models
    with pytest.raises(InputError, match="mix"):
        xp.pgi2(rf, split(X, [23]), da.from_array(np.tile(np.arange(4), (23, 1)), chunks=5))


def test_handles_never_imports_dask():
    code = ("import sys, numpy as np; from xai_plugins import engines; "
            "assert engines.engine_for(np.ones(3), [1]).name == 'memory'; "
            "assert 'dask' not in sys.modules, 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("sizes", [[23], [5, 5, 13], [1] * 23])
def test_methods_run_unchanged_on_another_engine(blocks_engine, models, sizes):
    X, rf = models
    Xb = split(X, sizes)
    S = np.random.default_rng(1).random(X.shape) < 0.5
    same(xp.pg2(rf, Xb, [0, 2]).compute().value, xp.pg2(rf, X, [0, 2]).value)
    same(xp.pg2(rf, Xb, S).compute().value, xp.pg2(rf, X, S).value)
    kw = dict(method="monte_carlo", n_samples=32, random_state=3)
    same(xp.pg2(rf, Xb, [1], **kw).compute().stderr, xp.pg2(rf, X, [1], **kw).stderr)
    greedy = xp.greedy_pg2_ranking(rf, X)
    got = xp.greedy_pg2_ranking(rf, Xb).compute()
    same(got.ranking, greedy.ranking)
    same(got.pg2_path, greedy.pg2_path)
    stack = np.stack([greedy.ranking, greedy.ranking[:, ::-1]])
    same(xp.pgi2(rf, Xb, stack).whole(), xp.pgi2(rf, X, stack))
    same(xp.pgi2(rf, X, split(greedy.ranking, sizes)).whole(), xp.pgi2(rf, X, greedy.ranking))
    same(xp.mean_pgi2(rf, Xb, greedy), xp.mean_pgi2(rf, X, greedy))
    same(xp.local_mdi(rf, Xb).whole(), xp.local_mdi(rf, X))
    same(xp.global_mdi(rf, Xb), xp.global_mdi(rf, X))
    w = np.linspace(0.5, 2.0, len(X))
    same(xp.global_mdi(rf, Xb, w), xp.global_mdi(rf, X, w))
    values = np.random.default_rng(2).standard_normal(X.shape)
    same(xp.faithfulness(rf, split(values, sizes), X=X).whole(), xp.faithfulness(rf, values, X=X))
    same(random_rankings(Xb, 9).whole(), np.argsort(np.random.default_rng(9).random(X.shape), axis=1))


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(1, 22), max_size=6, unique=True))
def test_any_blocking_gives_the_in_memory_bits(cuts):
    """Property: for any cut of the rows into blocks, the engine's PG² / PGI² are the in-memory bits."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((23, 4))
    rf = _MODEL.setdefault("rf", RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, X[:, 0]))
    engine = BlockEngine()
    edges = [0] + sorted(cuts) + [23]
    Xb = Blocks([X[a:b] for a, b in zip(edges[:-1], edges[1:])])
    from xai_plugins.engines.runner import run
    from xai_plugins.prediction_gap._pg2 import PG2
    from xai_plugins.prediction_gap._pgi2 import PGI2

    got = run(PG2, engine, rf, Xb, [0, 3], 0.3, None, None, "exact", 0, 0.01, None, True, False, None, None).compute()
    same(got.value, xp.pg2(rf, X, [0, 3]).value)
    ranking = np.argsort(rng.random(X.shape), axis=1)
    same(run(PGI2, engine, rf, Xb, ranking, 0.3, None, None, True, False, None, None, None, 2000, None).whole(),
         xp.pgi2(rf, X, ranking))


_MODEL: dict = {}


def test_memory_engine_blocks_and_reductions(models):
    X, rf = models
    m = engines.MEMORY
    out = m.map_rows(lambda s, start, b, w: b * w[:, None] + start, X, None, [np.arange(len(X))], 4)
    same(out, X * np.arange(len(X))[:, None] + 0)
    same(m.columns(out, 1, 3, shape=(2,), dtype=np.float32), out[:, 1:3].astype(np.float32))
    assert m.reduce(lambda a: [int(a.sum())], [np.arange(10)], finish=lambda t: t[0] * 2) == 90
    v = np.array([[3.0], [-0.0], [0.0], [-2.5], [np.inf]])
    same(m.order_statistics(v, [0, 0, 0, 0], [0, 1, 2, 4]), np.array([-2.5, -0.0, 0.0, np.inf]))
    with pytest.raises(InputError, match="rows"):
        m.by_rows(np.ones(3), X, "w")
