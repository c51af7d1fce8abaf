"""Drawing trees from the CNF: uniform samples with UniGen3 (pyunigen) or exact enumeration (pysat)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._extras import needs, require, tqdm
from ..errors import InputError, XaiWarning

__all__: list[str] = []      # internal module: the public names are in the API reference

with needs("dt-sampler", "DT-Sampler"):
    from pysat.solvers import Solver

#: Seconds before a progress bar appears (quick runs stay silent).
PROGRESS_DELAY = 2.0
#: The UniGen run is split into at most this many calls (one progress step each), each drawing at least
#: ``MIN_CHUNK`` trees: a call costs about as much as one tree on top of its trees (the sampler is set up again,
#: 0.09 s against 0.12 s per tree on the breast-cancer demo), so twenty one-tree calls nearly doubled the cost
N_CHUNKS, MIN_CHUNK = 20, 10


class UnsatisfiableError(InputError):
    """No tree of the requested size reaches the accuracy threshold on the training data.

    Raised by ``DTSampler.fit``: lower ``min_accuracy`` or change ``n_branch_nodes``. An
    :class:`xai_plugins.errors.InputError` (and so a ``ValueError``).

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Raises it.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from xai_plugins.dt_sampler import DTSampler
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> X, y = X.iloc[:60, :4], y[:60]                 # 60 rows, 4 features: a small space
    >>> from xai_plugins.dt_sampler import UnsatisfiableError
    >>> try:
    ...     DTSampler(n_branch_nodes=1, min_accuracy=1.0, sampler="exact", progress=False).fit(X, y)
    ... except UnsatisfiableError as exc:
    ...     print(str(exc).split(" (")[0])
    no decision tree with 1 branch nodes over 12 binary tests classifies at least 60 of the 60 ...
    """


class TimeBudgetWarning(XaiWarning):
    """The run is expected to take longer than the ``time_budget`` the user allowed.

    Warned by ``DTSampler.fit`` (and ``emergence_path``) after timing the first sample; the run
    goes on. An :class:`xai_plugins.errors.XaiWarning`.

    See Also
    --------
    xai_plugins.dt_sampler.DTSampler : Its ``time_budget`` parameter.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_breast_cancer
    >>> from xai_plugins.dt_sampler import DTSampler
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> X, y = X.iloc[:60, :4], y[:60]                 # 60 rows, 4 features: a small space
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = DTSampler(n_branch_nodes=2, min_accuracy=0.8, n_samples=10, random_state=0,
    ...                   time_budget=1e-6, progress=False).fit(X, y)
    >>> [type(w.message).__name__ for w in caught]
    ['TimeBudgetWarning']
    """


def is_satisfiable(clauses) -> bool:
    """Whether the CNF has a model (pysat; pyunigen would end the process on an unsatisfiable CNF)."""
    with Solver(name="minisat22", bootstrap_with=clauses) as solver:
        return solver.solve()


def _unigen(clauses, sampling_set, num: int, seed: int, cell_hash_count=None):
    Sampler = require("pyunigen", "dt-sampler", "DT-Sampler's UniGen3 sampler").Sampler

    sampler = Sampler(seed=int(seed))
    for clause in clauses:
        sampler.add_clause(clause)
    if cell_hash_count is None:
        return sampler.sample(num=num, sampling_set=list(sampling_set))
    return sampler.sample(num=num, sampling_set=list(sampling_set), cell_hash_count=cell_hash_count)


def _warn_budget(what: str, estimate: float, budget: float | None, advice: str) -> None:
    if budget is not None and estimate > budget:
        warnings.warn(f"{what} is estimated to take {estimate:.0f} s, more than time_budget={budget:g} s; "
                      f"{advice}", TimeBudgetWarning, stacklevel=5)  # the caller of DTSampler.fit


def unigen_samples(clauses, sampling_set, n_samples: int, rng: np.random.Generator, *,
                   time_budget: float | None = None, progress: bool = True):
    """``n_samples`` almost-uniform, independent projected models from UniGen3.

    ApproxMC counts the projected models once; the samples are then drawn in at most
    ``N_CHUNKS + 1`` calls (a first single sample times the run for the ``time_budget``
    estimate, then equal chunks of at least ``MIN_CHUNK``) with seeds drawn from ``rng``, so a
    seeded run is reproducible.  Returns ``(samples, approximate_count, seconds_per_sample)``.
    """
    rest = n_samples - 1
    chunks = [1]
    if rest:
        chunks += [len(c) for c in np.array_split(np.arange(rest), min(N_CHUNKS, max(1, rest // MIN_CHUNK)))]
    seeds = rng.integers(1, 2**31 - 1, size=len(chunks) + 1)
    start = time.perf_counter()
    cell, hashes, _ = _unigen(clauses, sampling_set, 0, seeds[0])
    samples = []
    with tqdm(total=n_samples, desc="UniGen samples", unit="tree", delay=PROGRESS_DELAY,
              disable=not progress) as bar:
        for k, (size, seed) in enumerate(zip(chunks, seeds[1:])):
            t0 = time.perf_counter()
            samples.extend(_unigen(clauses, sampling_set, size, seed, (cell, hashes))[2])
            bar.update(size)
            if k == 0:
                _warn_budget(f"drawing {n_samples} trees",
                             time.perf_counter() - start + (time.perf_counter() - t0) * rest,
                             time_budget, "lower n_branch_nodes or n_samples, or raise time_budget")
    seconds = time.perf_counter() - start
    return samples, cell * 2**hashes, seconds / n_samples


def enumerate_projected(clauses, projection, *, time_budget: float | None = None, progress: bool = True,
                        pilot_seconds: float = 2.0):
    """Every projected model, once (pysat with blocking clauses over ``projection``).

    When the enumeration is still running after ``pilot_seconds``, ApproxMC estimates the
    number of models and a ``TimeBudgetWarning`` is raised if the estimated time exceeds
    ``time_budget``.  Returns the list of models as signed literals over ``projection``.
    """
    projection = list(projection)
    models = []
    start = time.perf_counter()
    checked = False
    with Solver(name="minisat22", bootstrap_with=clauses) as solver, \
            tqdm(desc="exact enumeration", unit="tree", delay=PROGRESS_DELAY, disable=not progress) as bar:
        while solver.solve():
            model = solver.get_model()
            lits = [model[v - 1] if v <= len(model) else -v for v in projection]
            models.append(lits)
            solver.add_clause([-lit for lit in lits])
            bar.update(1)
            if not checked and time.perf_counter() - start > pilot_seconds:
                checked = True
                cell, hashes, _ = _unigen(clauses, projection, 0, 1)
                total = cell * 2**hashes
                bar.total = total
                rate = len(models) / (time.perf_counter() - start)
                _warn_budget(f"enumerating about {total} trees exactly", total / rate, time_budget,
                             "use sampler='unigen', lower n_branch_nodes or raise time_budget")
    return models
