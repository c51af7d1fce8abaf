"""
PG² on Dask: the same bits as in memory
=======================================

Scoring every row of a large table (all customers of a portfolio, every claim of a year) does not
fit a notebook. Pass a ``dask.dataframe.DataFrame`` to :func:`~xai_plugins.pg2`,
:func:`~xai_plugins.greedy_pg2_ranking` or :func:`~xai_plugins.pgi2` and the result is lazy,
computed on whatever Dask scheduler is active, block by block by the very functions that run in
memory. The results are therefore **bitwise identical** to the in-memory ones, for any number of
partitions: an audit trail can mix both without "small numerical differences" to explain away.

Here the scheduler is Dask's local thread pool (no cluster needed); a ``distributed.Client``
would be used the same way.
"""

# %%
# Model and data
# --------------
import time

import dask
import dask.dataframe as dd
import matplotlib.pyplot as plt
import numpy as np
import xgboost
from sklearn.datasets import load_diabetes

import xai_plugins as xp
from xai_plugins.distributed import mean_pgi2

data, y = load_diabetes(return_X_y=True, as_frame=True)
model = xgboost.XGBRegressor(n_estimators=40, max_depth=4, learning_rate=0.1, random_state=0, n_jobs=1).fit(data, y)
X = data.iloc[:160]                             # the rows to score (kept small for the documentation build)
ddf = dd.from_pandas(X, npartitions=4)          # columns aligned to the model's features by name
print(f"{len(X)} rows in {ddf.npartitions} partitions of {list(ddf.map_partitions(len).compute())} rows")

S = ["bmi", "s5", "bp"]
SIGMA = 0.3

# %%
# Lazy results, computed on the threaded scheduler
# ------------------------------------------------
# Each call returns at once; ``.compute()`` runs the blocks. The model enters the task graph once.
lazy = xp.pg2(model, ddf, S=S, sigma=SIGMA, background=data)
print(type(lazy).__name__, type(lazy.value).__name__)


def timed(function, repeat=3):
    """The result of ``function()`` and its best wall time over ``repeat`` runs."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        out = function()
        best = min(best, time.perf_counter() - start)
    return out, best


timings = {}
with dask.config.set(scheduler="threads", num_workers=2):
    in_memory_pg2, timings["PG², in memory"] = timed(lambda: xp.pg2(model, X, S=S, sigma=SIGMA, background=data))
    dask_pg2, timings["PG², dask"] = timed(lambda: xp.pg2(model, ddf, S=S, sigma=SIGMA, background=data).compute())

    in_memory_greedy, timings["greedy, in memory"] = timed(
        lambda: xp.greedy_pg2_ranking(model, X, sigma=SIGMA, background=data, verbose=False), repeat=1)
    dask_greedy, timings["greedy, dask"] = timed(
        lambda: xp.greedy_pg2_ranking(model, ddf, sigma=SIGMA, background=data, verbose=False).compute(), repeat=1)

    in_memory_pgi2 = xp.pgi2(model, X, in_memory_greedy.ranking, sigma=SIGMA, background=data, verbose=False)
    dask_pgi2 = xp.pgi2(model, ddf, dask_greedy.ranking, sigma=SIGMA, background=data, verbose=False).compute()
    dask_mean = mean_pgi2(model, ddf, in_memory_greedy.ranking, sigma=SIGMA, background=data).compute()

# %%
# Bit for bit
# -----------
# ``np.array_equal`` compares exactly (no tolerance): every value, every ranking.
print("PG² values identical:        ", np.array_equal(dask_pg2.value, in_memory_pg2.value))
print("greedy rankings identical:   ", np.array_equal(dask_greedy.ranking, in_memory_greedy.ranking))
print("greedy PG² paths identical:  ", np.array_equal(dask_greedy.pg2_path, in_memory_greedy.pg2_path))
print("PGI² of the rankings identical:", np.array_equal(dask_pgi2, in_memory_pgi2))
print("mean PGI² (exact reduction) identical:",
      dask_mean == mean_pgi2(model, X, in_memory_greedy.ranking, sigma=SIGMA, background=data))

# %%
# Any chunking gives the same bits, since every block is computed by the in-memory function on its
# own rows:
with dask.config.set(scheduler="threads", num_workers=2):
    for partitions in (1, 3, 7):
        again = xp.pg2(model, dd.from_pandas(X, npartitions=partitions), S=S, sigma=SIGMA, background=data).compute()
        print(partitions, "partitions:", np.array_equal(again.value, in_memory_pg2.value))

# %%
# Timing
# ------
print({name: f"{seconds * 1e3:.1f} ms" for name, seconds in timings.items()})

# %%
# Wall-clock times of the same work on this machine (the documentation is built on a small, shared
# machine, so take the bars as an illustration, not a benchmark; see ``benchmarks/bench_dask.py``).
# In memory the C core runs one thread (``n_jobs=None``); the threaded scheduler runs two partitions
# at a time.
fig, ax = plt.subplots(figsize=(7, 3.5))
names = list(timings)
ax.barh(names, [timings[n] * 1e3 for n in names], color=["#1f77b4", "#ff7f0e"] * 2)
for i, name in enumerate(names):
    ax.text(timings[name] * 1e3, i, f" {timings[name] * 1e3:.0f} ms", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("wall time (ms)")
ax.set_title(f"{len(X)} rows, {ddf.npartitions} partitions: identical results")
ax.set_xlim(0, max(timings.values()) * 1e3 * 1.2)
fig.tight_layout()
