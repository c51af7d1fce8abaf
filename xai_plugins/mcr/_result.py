"""The result of RF-MCR: model class reliance ranges per feature, and their plot."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__: list[str] = []      # internal module: the public names are in the API reference


@dataclass
class MCRResult:
    """Model class reliance ranges of one reference forest.

    As returned by :func:`xai_plugins.mcr.model_class_reliance`.

    Parameters
    ----------
    table : pandas.DataFrame
        Indexed by feature (or group) name with columns ``mcr_minus``, ``model_reliance`` (the
        reference forest's MR) and ``mcr_plus``, the boundary forests' own reliances
        ``mr_minus_forest`` / ``mr_plus_forest``, and the Rashomon check: training loss of the
        reference (``reference_loss``) and of the boundary forests (``loss_minus_forest``,
        ``loss_plus_forest``), the largest absolute difference between a boundary forest's
        training predictions and the reference's (``deviation_minus`` / ``deviation_plus``) and
        ``within_rashomon`` (both boundary forests' training losses within ``epsilon`` of the
        reference's; exact prediction equality when ``epsilon == 0``).
    loss : str
        The loss's name (a callable's ``__name__``).
    reliance : {"difference", "ratio"}
        How model reliance compares the losses.
    epsilon : float
        The Rashomon tolerance.
    n_permutations : int
        Permutations per feature.
    n_trees : int
        Trees of the reference forest.
    n_groups : int
        Classes of predictively equivalent trees (ε = 0).
    groups : dict, default {}
        The groups assessed jointly: name -> its feature names.

    Attributes
    ----------
    table, loss, reliance, epsilon, n_permutations, n_trees, n_groups, groups
        As given.

    See Also
    --------
    xai_plugins.mcr.model_class_reliance : Computes it.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from xai_plugins.mcr import fit_rashomon_forest, model_class_reliance
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = fit_rashomon_forest(X, y, task="regression", n_estimators=5, max_depth=3,
    ...                              random_state=0)
    >>> result = model_class_reliance(forest, X, y, features=[2, 8], groups={"s1-s2": [4, 5]},
    ...                               n_permutations=2, progress=False)
    >>> result.table.index.tolist(), result.n_trees, result.groups
    (['s1-s2', 'x2', 'x8'], 5, {'s1-s2': ['x4', 'x5']})
    >>> record = result.to_dict()["features"][0]
    >>> record["name"], sorted(record)[:3]
    ('s1-s2', ['deviation_minus', 'deviation_plus', 'loss_minus_forest'])
    """

    table: object
    loss: str
    reliance: str
    epsilon: float
    n_permutations: int
    n_trees: int
    n_groups: int                      # classes of predictively equivalent trees (ε = 0)
    groups: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-friendly form: settings plus one record per feature (or group)."""
        records = []
        for name, row in self.table.iterrows():
            rec = {"name": str(name)}
            for key, value in row.items():
                rec[key] = bool(value) if isinstance(value, (bool, np.bool_)) else float(value)
            records.append(rec)
        return {"loss": self.loss, "reliance": self.reliance, "epsilon": float(self.epsilon),
                "n_permutations": int(self.n_permutations), "n_trees": int(self.n_trees),
                "n_groups": int(self.n_groups), "groups": {k: list(v) for k, v in self.groups.items()},
                "features": records}

    def plot(self, ax=None):
        """Horizontal bars from MCR- to MCR+ per feature, the reference forest's MR marked; returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.4, 0.45 * len(self.table) + 1.2))
        t = self.table
        pos = np.arange(len(t))[::-1]
        lo, hi = t["mcr_minus"].to_numpy(float), t["mcr_plus"].to_numpy(float)
        ax.barh(pos, hi - lo, left=lo, height=0.5, color="#8fb3d9", edgecolor="#2b5d8c", label="MCR range")
        ax.scatter(np.r_[lo, hi], np.r_[pos, pos], marker="|", s=200, color="#2b5d8c", zorder=3)  # ends
        ax.scatter(t["model_reliance"].to_numpy(float), pos, marker="D", s=30, color="#c0392b", zorder=4,
                   label="reference MR")
        vals = np.r_[lo, hi, t["model_reliance"].to_numpy(float)]
        vals = vals[np.isfinite(vals)]
        if vals.size:
            pad = 0.05 * (np.ptp(vals) or max(abs(vals).max(), 1.0))
            ax.set_xlim(vals.min() - pad, vals.max() + pad)
        ax.set_yticks(pos)
        ax.set_yticklabels([str(i) for i in t.index])
        kind = "ratio" if self.reliance == "ratio" else "difference"
        ax.set_xlabel(f"model reliance ({self.loss}, {kind})")
        ax.set_title(f"RF-MCR, ε = {self.epsilon:g}")
        ax.axvline(1.0 if self.reliance == "ratio" else 0.0, color="grey", lw=0.8)
        ax.legend(loc="best", fontsize="small")
        return ax
