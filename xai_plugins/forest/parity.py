"""The parity certificate: proof, row by row, that the trees the package reads score as the runtime that serves
the model (SR 11-7's process verification: the model explained is the model in production).

The Forest's C ``predict`` is compared with the model's own predictor (``Forest.predict_fn``: the library's own
``predict``, onnxruntime for ONNX, a PMML evaluator for PMML) in the Forest's output space (the margin of boosted
classifiers), on

- the given rows (the audit's test rows), and
- rows set **on** every split threshold of a numeric feature and one ulp either side (a float32 ulp when the
  model compares float32 inputs), each built from a given row, where a misread threshold or comparison would
  route the row to another leaf.

A row passes when the two outputs differ by at most the rounding the runtime may commit in summing the trees,
``n_trees · u · (|base score| + Σ_t max_l |v_tl|)`` (the standard bound on a sum of ``n_trees`` terms in the
runtime's precision ``u``: 2⁻⁵³ for float64, 2⁻²⁴ for float32 runtimes such as XGBoost's), so that a row routed
to another leaf fails unless its two leaves' values agree to that precision.

The same rows are compared on the model's **output** as well: a classifier whose Forest gives its margin has its
margin mapped to probabilities by the link its library applies (:mod:`.link`, named by the importer's
:meth:`~xai_plugins.forest.registry.LibraryImporter.probability`) and compared with the runtime's own
probabilities (``predict_proba``, onnxruntime's probability output, pypmml's probabilities; a binary model's
probability of its last class). The links are 1-Lipschitz in the largest margin difference, so the output
tolerance is the margin's plus the link's own rounding in the runtime's precision (``16 u``). For regressors and
classifiers whose Forest gives the probabilities themselves (random forests) the output is the Forest's output:
the output check is the margin comparison, recorded as such, not a second one; so it is for a margin whose link
its library does not name (XGBoost ``binary:logitraw``, LightGBM ``multiclassova``, scikit-learn's exponential
loss, ONNX ``SOFTMAX_ZERO``...), said in ``output_runtime``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _native
from ..errors import InputError
from .cache import import_model
from .link import probabilities
from .registry import importer_for

__all__: list[str] = []      # internal module: the audit records the certificate

#: rows scored per call of the two predictors
_BATCH = 50_000


@dataclass(frozen=True)
class ParityCertificate:
    """The outcome of :func:`certify`.

    Attributes
    ----------
    runtime : str
        The runtime the Forest was compared with (library and version).
    output_space : str
        Where the outputs were compared: the Forest's ``output_space`` ("raw", "margin", "probability").
    rows : int
        Given rows checked.
    threshold_rows : int
        Rows on and one ulp either side of the split thresholds checked.
    thresholds : int
        Distinct (feature, threshold) pairs of numeric splits; ``thresholds_checked`` of them were checked.
    thresholds_checked : int
        The pairs whose three rows were scored (all of them unless capped by ``max_thresholds``).
    max_abs_diff : float
        The largest |Forest − runtime| over every checked row and output.
    tolerance : float
        The largest difference the runtime's rounding explains.
    failed_rows : int
        Rows whose difference exceeds ``tolerance``.
    worst : str
        The row of the largest difference, in words.
    output_runtime : str
        What the model's output was compared with: the runtime's probabilities and the link applied to the
        Forest's margin, or "the margin comparison" where the Forest's output is the model's output.
    output_max_abs_diff : float
        The largest |link(Forest) − runtime's output| over the same rows and outputs.
    output_tolerance : float
        The largest output difference the runtime's rounding explains.
    output_failed_rows : int
        Rows whose output difference exceeds ``output_tolerance``.
    passed : bool
        No row failed, on the margin or on the output.
    """

    runtime: str
    output_space: str
    rows: int
    threshold_rows: int
    thresholds: int
    thresholds_checked: int
    max_abs_diff: float
    tolerance: float
    failed_rows: int
    worst: str
    output_runtime: str
    output_max_abs_diff: float
    output_tolerance: float
    output_failed_rows: int
    passed: bool

    @property
    def margin_passed(self) -> bool:
        """No row failed in the Forest's output space."""
        return self.failed_rows == 0

    @property
    def output_passed(self) -> bool:
        """No row failed on the model's output."""
        return self.output_failed_rows == 0

    def to_dict(self) -> dict:
        """The certificate as a JSON-ready dict."""
        return asdict(self)

    def __str__(self) -> str:
        verdict = "passed" if self.passed else \
            f"FAILED on {self.failed_rows} rows (margin) and {self.output_failed_rows} rows (output)"
        return (f"parity with {self.runtime} {verdict}: {self.rows + self.threshold_rows} rows ({self.rows} given, "
                f"{self.threshold_rows} on and beside {self.thresholds_checked} of {self.thresholds} split "
                f"thresholds), max |Δ| {self.max_abs_diff:.3g} on the {self.output_space} output "
                f"(tolerance {self.tolerance:.3g}; worst: {self.worst}); on the model's output "
                f"({self.output_runtime}) max |Δ| {self.output_max_abs_diff:.3g} "
                f"(tolerance {self.output_tolerance:.3g})")


def certify(model: Any, X: Any, *, max_thresholds: int = 20_000, random_state: int = 0) -> ParityCertificate:
    """Check that the model's Forest scores as the model's own runtime, on ``X`` and beside every threshold.

    Parameters
    ----------
    model : fitted model or Forest
        A model :func:`xai_plugins.import_model` reads (a Forest must carry its model's predictor).
    X : array-like or DataFrame of shape (n, d)
        Rows the model takes (a DataFrame is aligned by column name); at least one.
    max_thresholds : int, default 20000
        At most this many distinct (feature, threshold) pairs are checked (a seeded random choice beyond it).
    random_state : int, default 0
        Seed of that choice.

    Returns
    -------
    ParityCertificate
        The comparison's outcome; ``passed`` is False when any row differs beyond the runtime's rounding.

    Raises
    ------
    InputError
        A Forest without its model's predictor, or no rows.
    """
    forest = import_model(model)
    runtime_predict = forest.predict_fn
    if runtime_predict is None:
        raise InputError("the parity certificate compares the Forest with the model's own predictor; this Forest "
                         "carries none (pass the fitted model)")
    rows = forest.rows(X)[0]
    if len(rows) == 0:
        raise InputError("the parity certificate needs at least one row")
    source = getattr(runtime_predict, "_model", lambda: None)()
    importer = importer_for(source) if source is not None else None
    runtime, unit = importer.runtime(source) if importer is not None else ("the model's predictor", 2.0 ** -53)
    pairs = _threshold_pairs(forest)
    chosen = pairs
    if len(pairs) > max_thresholds:
        keep = np.sort(np.random.default_rng(random_state).choice(len(pairs), max_thresholds, replace=False))
        chosen = pairs[keep]
    beside, origin = _beside_thresholds(forest, rows, chosen)
    checked = np.concatenate([rows, beside])
    output = importer.probability(source, forest) if importer is not None else None
    diff, output_diff = np.zeros(len(checked)), np.zeros(len(checked))
    for start in range(0, len(checked), _BATCH):
        block = checked[start:start + _BATCH]
        ours = _native.predict(forest, block)           # rows already read: category codes, not labels
        theirs = np.asarray(runtime_predict(block), dtype=np.float64)
        diff[start:start + len(block)] = np.max(np.abs(ours - theirs.reshape(ours.shape)), axis=1)
        if output is not None:
            output_diff[start:start + len(block)] = _output_diff(output, ours, block)
    tolerance = _tolerance(forest, unit)
    worst = int(np.argmax(diff))
    failed = int(np.sum(~(diff <= tolerance)))
    if output is None:
        why = "no link to the model's probabilities is known for it" if forest.task == "classification" and \
            forest.output_space == "margin" else "the Forest's output is the model's output"
        output_runtime, output_diff, output_tolerance = f"the margin comparison ({why})", diff, tolerance
    else:
        output_runtime, output_tolerance = f"the model's probabilities against the {output[0]} link of the " \
            "Forest's margin", tolerance + 16 * unit
    output_failed = int(np.sum(~(output_diff <= output_tolerance)))
    return ParityCertificate(runtime, forest.output_space, len(rows), len(beside), len(pairs), len(chosen),
                             float(diff[worst]), tolerance, failed,
                             _describe_row(forest, worst, len(rows), chosen, origin), output_runtime,
                             float(np.max(output_diff)), output_tolerance, output_failed,
                             failed == 0 and output_failed == 0)


def _output_diff(output: tuple, margin: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row, the largest |link(margin) − the runtime's probabilities| (``output``: the link and the runtime's
    probability predictor; a binary model's one margin against the probability of its last class)."""
    link, runtime = output
    ours = probabilities(link, margin)
    theirs = np.asarray(runtime(rows), dtype=np.float64).reshape(len(rows), -1)
    if ours.shape[1] == 1 and theirs.shape[1] == 2:
        theirs = theirs[:, 1:]
    return np.max(np.abs(ours - theirs), axis=1)


def _threshold_pairs(forest) -> np.ndarray:
    """The distinct (feature, threshold) pairs of the numeric splits, as an (m, 2) float64 array."""
    inner = forest.left_child >= 0
    if forest.n_categories is not None:
        inner &= forest.n_categories[np.maximum(forest.feature, 0)] == 0
    threshold = forest.threshold[inner]
    pairs = np.stack([forest.feature[inner].astype(np.float64), threshold], axis=1)[np.isfinite(threshold)]
    return np.unique(pairs, axis=0) if len(pairs) else pairs.reshape(0, 2)


def _beside_thresholds(forest, rows: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Three rows per pair (on the threshold, one ulp below, one above), built from the given rows in turn, less
    those holding a value the model's own predict refuses; and each row's position 3 * pair + (0, 1, 2)."""
    origin = np.arange(3 * len(pairs))
    out = rows[origin % len(rows)].copy()
    feature, threshold = pairs[:, 0].astype(np.int64), pairs[:, 1]
    if forest.input_float32:
        t32 = threshold.astype(np.float32)
        below = np.nextafter(t32, np.float32(-np.inf)).astype(np.float64)
        above = np.nextafter(t32, np.float32(np.inf)).astype(np.float64)
    else:
        below, above = np.nextafter(threshold, -np.inf), np.nextafter(threshold, np.inf)
    for k, values in enumerate((threshold, below, above)):
        out[np.arange(k, 3 * len(pairs), 3), feature] = values
    if forest.input_limits is not None:          # the model's own predict refuses values beyond them
        low, high = forest.input_limits[:, 0], forest.input_limits[:, 1]
        taken = np.all((out >= low) & (out <= high) | np.isnan(out), axis=1)
        out, origin = out[taken], origin[taken]
    return out, origin


def _tolerance(forest, unit: float) -> float:
    """The rounding a runtime of unit roundoff ``unit`` may commit in summing the trees (largest over outputs)."""
    values = np.abs(forest.value).reshape(forest.n_nodes, -1)
    is_leaf = forest.left_child < 0
    scale = np.abs(np.asarray(forest.base_score, dtype=np.float64)).max(initial=0.0)
    largest = np.zeros(forest.n_trees)
    for t in range(forest.n_trees):
        lo, hi = forest.tree_offset[t], forest.tree_offset[t + 1]
        largest[t] = values[lo:hi][is_leaf[lo:hi]].max(initial=0.0)
    terms = forest.n_trees + 1
    return float(4 * terms * unit * (scale + largest.sum()))


def _describe_row(forest, index: int, n_given: int, pairs: np.ndarray, origin: np.ndarray) -> str:
    if index < n_given:
        return f"given row {index}"
    pair, where = divmod(int(origin[index - n_given]), 3)
    feature, threshold = int(pairs[pair, 0]), pairs[pair, 1]
    name = forest.feature_names[feature] if forest.feature_names else f"feature {feature}"
    return f"{name} {('on', 'one ulp below', 'one ulp above')[where]} the threshold {threshold!r}"
