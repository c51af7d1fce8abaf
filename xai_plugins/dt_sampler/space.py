"""The space of small accurate trees: encoded as a CNF, checked non-empty, drawn from."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .encoding import encode_trees
from .samplers import UnsatisfiableError, enumerate_projected, is_satisfiable, unigen_samples
from .tree import SampledTree

__all__: list[str] = []      # internal module: the public names are in the API reference


@dataclass(frozen=True)
class TreeDraw:
    """Trees drawn from the space: ``trees`` (:class:`~.tree.SampledTree`), ``min_correct`` (T, the
    training rows an accurate tree classifies correctly at least), ``model_count`` (the
    number of distinct accurate trees: exact, or ApproxMC's estimate for UniGen), ``cnf_stats``
    (variables, clauses, sampling-set size) and ``seconds_per_sample``."""

    trees: list
    min_correct: int
    model_count: int
    cnf_stats: dict
    seconds_per_sample: float


def draw_trees(Xb, y_index, classes, tests, n_branch_nodes: int, min_accuracy: float, *, leaf_labels: str,
               cardinality: str, sampler: str, n_samples: int, rng, time_budget, progress) -> TreeDraw:
    """Draw trees with ``n_branch_nodes`` branch nodes over the binary tests ``tests`` (``Xb`` the
    binarised training rows, ``y_index`` their class index) that classify at least
    ``T = ceil(min_accuracy * n_rows)`` training rows correctly: ``n_samples`` almost-uniform trees
    (``sampler="unigen"``) or all of them (``"exact"``). Raises :class:`UnsatisfiableError` when
    there is none."""
    start = time.perf_counter()
    n_rows, n_tests = Xb.shape
    min_correct = math.ceil(round(min_accuracy * n_rows, 9))
    encoding = encode_trees(Xb, y_index, n_branch_nodes, min_correct, leaf_labels=leaf_labels == "sampled",
                            cardinality=cardinality)
    cnf_stats = {"n_vars": encoding.n_vars, "n_clauses": len(encoding.clauses),
                 "sampling_set_size": len(encoding.sampling_set)}
    if not is_satisfiable(encoding.clauses):
        raise UnsatisfiableError(
            f"no decision tree with {n_branch_nodes} branch nodes over {n_tests} binary tests "
            f"classifies at least {min_correct} of the {n_rows} training rows correctly "
            f"(min_accuracy={min_accuracy}): lower min_accuracy or change n_branch_nodes")
    if sampler == "unigen":
        models, model_count, seconds_per_sample = unigen_samples(
            encoding.clauses, encoding.sampling_set, n_samples, rng, time_budget=time_budget, progress=progress)
    else:
        models = enumerate_projected(encoding.clauses, encoding.sampling_set, time_budget=time_budget,
                                     progress=progress)
        model_count = len(models)
        seconds_per_sample = (time.perf_counter() - start) / len(models)
    default_class = int(np.argmax(np.bincount(y_index, minlength=2)))
    trees = [SampledTree(encoding.decode(m), tests, classes, Xb, y_index, default_class) for m in models]
    return TreeDraw(trees, min_correct, model_count, cnf_stats, seconds_per_sample)
