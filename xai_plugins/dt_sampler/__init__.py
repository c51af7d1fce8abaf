"""DT-Sampler: feature importance from uniformly sampled small, accurate decision trees.

``DTSampler(n_branch_nodes, min_accuracy, n_samples, sampler="unigen" | "exact").fit(X, y)``
exposes ``emergence_probability_`` (DataFrame indexed by original feature name, columns
``probability, ci_low, ci_high``), ``tree_fraction_``, ``trees_`` and ``plot()``.
Modules: ``.binarize`` (binary tests), ``.encoding`` (the CNF), ``.samplers``
(UniGen3 / exact enumeration), ``.space`` (encode, check and draw the accurate trees),
``.tree`` (a sampled tree), ``.emergence`` (importances and their intervals),
``.plots``, ``.estimator`` (the scikit-learn estimator shell).
"""

from .binarize import BinaryTest
from .emergence import wilson_interval
from .encoding import encode_trees
from .estimator import DTSampler
from .samplers import TimeBudgetWarning, UnsatisfiableError
from .tree import SampledTree

__all__ = ["BinaryTest", "DTSampler", "SampledTree", "TimeBudgetWarning", "UnsatisfiableError",
           "encode_trees", "wilson_interval"]
