"""A classifier's margin -> its probabilities: the links the libraries apply after summing the trees.

A boosted classifier's Forest gives its margin (``output_space="margin"``); the model's own ``predict_proba``
applies a link to it. Each library's importer names the link of a model
(:meth:`~xai_plugins.forest.registry.LibraryImporter.probability`), and :func:`probabilities` applies it:

- ``"logistic"``: ``1 / (1 + exp(-m))`` per output (a binary model's one margin gives the probability of its
  last class; ONNX's LOGISTIC post-transform applies it to each class's score);
- ``"softmax"``: ``exp(m_k) / Σ_j exp(m_j)`` over the outputs (multi-class models).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference

LINKS = ("logistic", "softmax")


def probabilities(link: str, margin: np.ndarray) -> np.ndarray:
    """The probabilities (n, k) of the margins ``margin`` (n, k) under ``link`` ("logistic" or "softmax")."""
    margin = np.asarray(margin, dtype=np.float64)
    if link == "logistic":
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-margin))
    if link == "softmax":
        e = np.exp(margin - margin.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    raise InputError(f"unknown link {link!r}; known: {', '.join(LINKS)}")


def default_link(n_outputs: int) -> str:
    """The link of a classifier's margin with ``n_outputs`` outputs: logistic for one, softmax for more."""
    return "logistic" if n_outputs == 1 else "softmax"
