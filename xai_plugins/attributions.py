"""Per-row feature scores of every explainer in one container, shared by the SHAP and
InterpretML adapters (``xai_plugins.shap``, ``xai_plugins.interpret``) and the audit report.

An :class:`Attribution` holds ``values`` (n, d) or (n, d, k) for k model outputs, the rows they
explain, names, and method-specific extras (the PG² ranking, PGI²). None of the scores here is
additive to the model output, so none carries a base value. A categorical feature (a LightGBM
category column, a Pipeline's one-hot encoded text column) is one feature with one score; its
values in ``display_data`` are the user's labels (``race`` = "Caucasian"), in ``data`` the codes.

- :func:`pg2_attribution`: greedy PG² gains. Row i's greedy order π_i adds, at step p, the
  feature maximising PG²; the feature entering at step p gets
  ``PG²(x_i, π_i(1..p)) − PG²(x_i, π_i(1..p−1))`` — how much the squared prediction gap grows
  when that feature is perturbed too. The gains of a row sum to PG²(x_i, all features). With
  k outputs each output gets its own greedy order.
- :func:`local_mdi_attribution`: local MDI (one impurity, so (n, d) for any task).
- :func:`acme_attribution`: AcME local importances of a fitted :class:`~xai_plugins.acme.AcME`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _native
from .engines import engine_for
from .engines.method import Output, Plan, RowMethod
from .engines.runner import run
from .forest import Forest, import_model
from .forest.layout import category_values
from .mdi import require_impurities
from .prediction_gap._greedy import GREEDY
from .prediction_gap._noise import _noise, _portable
from .prediction_gap._pgi2 import _scores
from .treeshap import tree_shap

__all__: list[str] = []      # the adapters' shared container and per-row scores (shap.py, interpret.py)

#: what the values of each method are, for plot axes (in place of shap's "SHAP value")
VALUE_LABELS = {"pg2": "PG² gain", "local_mdi": "local MDI", "acme": "AcME importance", "treeshap": "SHAP value"}


@dataclass
class Attribution:
    """Feature scores of ``n`` rows: ``values`` (n, d) or (n, d, k); ``data`` (n, d) the rows;
    ``feature_names``; ``output_names`` (None for one output); ``method``; ``extras`` a dict of
    method-specific arrays (PG²: ``ranking`` and ``pgi2``); ``categorical`` (d,) which features
    are categorical, ``labels`` per feature its category labels (position = code) or None."""

    values: np.ndarray
    data: np.ndarray
    feature_names: list
    output_names: list | None
    method: str
    extras: dict = field(default_factory=dict)
    categorical: np.ndarray | None = None
    labels: list | None = None

    @property
    def display_data(self) -> np.ndarray:
        """``data`` with each labelled feature's codes read back to its labels (an object array),
        ``data`` itself when no feature has labels."""
        return category_values(self.data, self.labels)

    @property
    def feature_types(self) -> list:
        """Per feature, InterpretML's type: "nominal" (categorical) or "continuous"."""
        return feature_types(self.categorical, len(self.feature_names))

    @property
    def value_label(self) -> str:
        """What the values are, in words (:data:`VALUE_LABELS`), e.g. "PG² gain"."""
        return VALUE_LABELS[self.method]


def feature_types(categorical, d: int) -> list:
    """InterpretML's feature types of ``d`` features, "nominal" where ``categorical`` (bool per
    feature, or None for none) says so, "continuous" elsewhere."""
    categorical = np.zeros(d, dtype=bool) if categorical is None else np.asarray(categorical, dtype=bool)
    return ["nominal" if c else "continuous" for c in categorical]


def background_data(background):
    """The rows of a background given as data, or as a shap masker holding data.

    A shap ``Independent``/``Partition`` masker built from a dataset keeps only a 100-row
    subsample of it; we warn, because the background defines σ units (PG²) or quantiles (AcME).
    """
    data = getattr(background, "data", None)
    if data is not None and not isinstance(background, np.ndarray) and not hasattr(background, "columns"):
        warnings.warn(f"{type(background).__name__} masker: shap keeps only a subsample (100 rows by default) "
                      f"of the data given to a masker; using its {len(data)} rows. Pass the dataset itself "
                      "to use all of it.", UserWarning, stacklevel=3)
        return data
    return background


def _output_names(forest) -> list | None:
    return None if forest.n_outputs == 1 else list(forest.output_names)


def _categories(forest: Forest) -> dict:
    """The categorical features and their labels of ``forest``, as :class:`Attribution` fields."""
    return {"categorical": forest.categorical, "labels": forest.category_labels}


def greedy_gains(ranking: np.ndarray, path: np.ndarray) -> np.ndarray:
    """(n, d) gain of each feature at the step it enters the greedy order (see module docstring)."""
    steps = np.diff(path, axis=1, prepend=0.0)
    gains = np.empty_like(path)
    np.put_along_axis(gains, ranking, steps, axis=1)
    return gains


def pg2_attribution(model, X, sigma=0.3, *, perturbation=None, background=None, n_jobs=None) -> Attribution:
    """Greedy PG² gains, ranking (n, d[, k]) and exact PGI² of that ranking (n[, k]).
    ``model`` is imported once (a Forest is used as is); ``X`` is aligned to its features by name.
    An engine's ``X`` (dask...) is computed block by block by that engine (the row method
    :data:`PG2_ATTRIBUTION`) and returned in memory: bitwise this result on the same rows."""
    return run(PG2_ATTRIBUTION, engine_for(X), model, X, sigma, perturbation, background, n_jobs)


def local_mdi_attribution(model, X, *, n_jobs=None) -> Attribution:
    """Local MDI (n, d) of each row: one impurity per node, so no per-class value for classifiers."""
    return run(LOCAL_MDI_ATTRIBUTION, engine_for(X), model, X, n_jobs)


def treeshap_attribution(model, X, *, background=None, n_jobs=None) -> Attribution:
    """Exact TreeSHAP values (n, d[, k]) of :func:`xai_plugins.tree_shap` (interventional with ``background``,
    else path-dependent), in memory, with ``extras["base_values"]`` the value of the empty coalition per row."""
    forest = import_model(model)
    rows, names = forest.rows(X)
    found = tree_shap(forest, rows, background=background, n_jobs=n_jobs)      # rows in memory: in memory
    base = np.broadcast_to(np.asarray(found.base_values, dtype=float), (len(rows),) + np.shape(found.base_values))
    return Attribution(np.asarray(found.values), rows, names, _output_names(forest), "treeshap",
                       {"base_values": np.array(base), "algorithm": found.method}, **_categories(forest))


def acme_attribution(acme, X) -> Attribution:
    """AcME local importances (n, d[, k]) of the rows ``X`` (see :class:`~xai_plugins.acme.AcMELocal`)."""
    local = acme.explain_local(X)
    if getattr(local, "compute", None) is not None:     # lazy on a row engine: computed in one pass
        local = local.compute()
    return Attribution(local.values, local.X, list(local.feature_names), local.output_names, "acme",
                       {"row_predictions": local.row_predictions}, categorical=local.grid.categorical,
                       labels=local.grid.labels)


def _prepare_pg2(engine, model, X, sigma, perturbation, background, n_jobs) -> Plan:
    forest = import_model(model)
    rows, names = engine.rows(X, forest.feature_names, forest.n_features, lambda x: forest.rows(x, allow_nan=False),
                              forest=forest)
    noise = _portable(forest, _noise(forest, sigma, perturbation, background))
    d, k = forest.n_features, forest.n_outputs
    per_output = (d,) if k == 1 else (d, k)
    return Plan(rows, (Output("data", (d,)), Output("values", per_output), Output("ranking", per_output, np.int64),
                       Output("pgi2", () if k == 1 else (k,))),
                shipped=forest, shared=dict(noise=noise, n_jobs=n_jobs), progress=True, state=names)


def _pg2_block(forest, start, X, *, noise, n_jobs, progress=False) -> dict:
    """Per output c, the greedy PG² order of output c (its gains), and each order's PGI² on its own
    output (the k orders scored together: the prefix sets they share computed once)."""
    n, d, k = len(X), forest.n_features, forest.n_outputs
    ranking = np.empty((n, d, k), dtype=np.int64)
    values = np.empty((n, d, k))
    for c in range(k):
        greedy = GREEDY.block(forest, start, X, output=None if k == 1 else c, noise=noise, prune=True, n_jobs=n_jobs,
                              progress=progress)
        ranking[..., c], values[..., c] = greedy["ranking"], greedy_gains(greedy["ranking"], greedy["pg2_path"])
    scores = _scores(forest, start, X, np.moveaxis(ranking, 2, 1), ranking=None, stacked=True, names=None,
                     noise=noise, prune=True, n_jobs=n_jobs, sampled_from=None, n_samples=0, root=None,
                     progress=progress)
    scores = np.reshape(scores, (n, k, k))
    quality = np.stack([scores[:, c, c] for c in range(k)], axis=1)
    squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
    return {"data": X, "values": squeeze(values), "ranking": squeeze(ranking), "pgi2": squeeze(quality)}


def _pg2_finish(plan: Plan, cols: dict, engine) -> Attribution:
    forest = plan.shipped
    data, values, ranking, quality = engine.compute(cols["data"], cols["values"], cols["ranking"], cols["pgi2"])
    return Attribution(values, data, plan.state, _output_names(forest), "pg2", {"ranking": ranking, "pgi2": quality},
                       **_categories(forest))


#: greedy PG² gains as a row method (its result always in memory: an Attribution)
PG2_ATTRIBUTION = RowMethod("pg2-attribution", _prepare_pg2, _pg2_block, _pg2_finish)


def _prepare_mdi(engine, model, X, n_jobs) -> Plan:
    forest = require_impurities(model)
    rows, names = engine.rows(X, forest.feature_names, forest.n_features, forest.rows, forest=forest)
    d = forest.n_features
    return Plan(rows, (Output("data", (d,)), Output("values", (d,))), shipped=forest, shared=dict(n_jobs=n_jobs),
                state=names)


def _mdi_block(forest, start, X, *, n_jobs) -> dict:
    return {"data": X, "values": _native.local_mdi(forest, X, n_jobs=n_jobs)}


def _mdi_finish(plan: Plan, cols: dict, engine) -> Attribution:
    data, values = engine.compute(cols["data"], cols["values"])
    return Attribution(values, data, plan.state, None, "local_mdi", **_categories(plan.shipped))


#: local MDI as a row method of attributions (its result always in memory)
LOCAL_MDI_ATTRIBUTION = RowMethod("local-mdi-attribution", _prepare_mdi, _mdi_block, _mdi_finish)
