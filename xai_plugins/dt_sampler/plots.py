"""DT-Sampler's figures: emergence probabilities with intervals, and their path over min_accuracy."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []      # internal module: the public names are in the API reference


def plot_emergence(table, uniform, n_trees: int, n_branch_nodes: int, min_accuracy: float, confidence: float,
                   ax=None):
    """Horizontal bars of the emergence ``table`` with their intervals, ticks at the ``uniform``
    (``min_accuracy = 0``) level of each feature; returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.35 * len(table) + 1.5))
    table = table.assign(uniform=uniform).sort_values("probability")
    y = np.arange(len(table))
    err = np.vstack([table["probability"] - table["ci_low"], table["ci_high"] - table["probability"]])
    ax.barh(y, table["probability"], xerr=err, color="tab:blue", alpha=0.8, capsize=2,
            label=f"emergence ({confidence:.0%} interval)")
    ax.scatter(table["uniform"], y, marker="|", s=200, color="tab:red", label="min_accuracy = 0")
    ax.set_yticks(y, [str(v) for v in table.index])
    ax.set_xlabel("share of branch nodes testing the feature")
    ax.set_title(f"DT-Sampler: {n_trees} trees, {n_branch_nodes} branch nodes, "
                 f"accuracy >= {min_accuracy:g}", fontsize="medium")
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_emergence_path(path, ax=None):
    """Emergence probability of each feature against ``min_accuracy`` (the long table ``path``),
    with interval bands; returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, frame in path.groupby("feature", sort=False):
        line, = ax.plot(frame["min_accuracy"], frame["probability"], marker="o", label=str(name))
        ax.fill_between(frame["min_accuracy"], frame["ci_low"], frame["ci_high"],
                        color=line.get_color(), alpha=0.15)
    ax.set_xlabel("min_accuracy")
    ax.set_ylabel("emergence probability")
    ax.legend(fontsize="small", ncol=2)
    return ax
