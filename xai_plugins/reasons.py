r"""Certified reason codes: per decision, the main reasons an attribution gives, and proof of how much the model
actually responds to them.

For each row the top-k features by |attribution| (never a protected attribute) are the reasons, each with its
value, the direction in which it moved the score (the attribution's sign) and its exact PG² contribution (how
much the squared prediction gap grows when it joins the reasons before it). The row's **certificate** is the
normalised faithfulness of its reason set R against the best set of the same size found by greedy PG² over the
features that may be reasons:

.. math::

    c(x) = \frac{\mathrm{PG}^2(x, R)}{\mathrm{PG}^2(x, G_{|R|})},

1 when the reasons given move the model as much as the best set found, near 0 when the model hardly responds to
them. A row is *certified* when c(x) reaches the threshold (0.8 by default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import resolve_output
from .errors import InputError
from .forest import import_model
from .prediction_gap import pg2
from .treeshap import tree_shap

__all__: list[str] = []      # internal module: public as xai_plugins.reason_codes and ReasonCodes

#: the thresholds :meth:`ReasonCodes.summary` reports by default
SUMMARY_THRESHOLDS = (0.5, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class ReasonCodes:
    """The outcome of :func:`reason_codes`.

    Parameters
    ----------
    reasons : DataFrame
        One line per (row, reason): ``row``, ``rank`` (1 first), ``feature``, ``value`` (the row's value, a
        category's label), ``direction`` ("raises" / "lowers" the score), ``attribution``, ``pg2_contribution``
        and ``proxy`` (the protected attribute it is a proxy of, or "").
    rows : DataFrame
        One line per row: ``reasons_pg2`` (PG² of the reason set), ``best_pg2`` (of the greedy set of the same
        size), ``certificate`` (their ratio; NaN when the model responds to none of the allowed features) and
        ``certified``.
    certify_at : float
        The certificate a row needs to be certified.
    protected : list of str
        The features never given as reasons.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = 2 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=300)
    >>> model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X, y)
    >>> codes = xp.reason_codes(model, X[:10], k=2)
    >>> codes.reasons.columns.tolist()[:4]
    ['row', 'rank', 'feature', 'value']
    >>> bool(codes.rows["certified"].all())
    True
    """

    reasons: pd.DataFrame
    rows: pd.DataFrame
    certify_at: float
    protected: list

    def summary(self, thresholds=SUMMARY_THRESHOLDS) -> pd.DataFrame:
        """The share of rows whose reasons are certified at each threshold.

        Parameters
        ----------
        thresholds : sequence of float, default (0.5, 0.8, 0.9, 0.95)
            Certificate thresholds.

        Returns
        -------
        DataFrame
            ``threshold``, ``certified rows`` and ``share``; rows without a certificate count as not certified.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.ensemble import RandomForestRegressor
        >>> import xai_plugins as xp
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(200, 3)); y = X[:, 0] + 0.1 * rng.normal(size=200)
        >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
        >>> xp.reason_codes(model, X[:8], k=1).summary([0.5]).columns.tolist()
        ['threshold', 'certified rows', 'share']
        """
        certificate = self.rows["certificate"].to_numpy()
        counts = [int(np.sum(certificate >= t)) for t in thresholds]
        return pd.DataFrame({"threshold": list(thresholds), "certified rows": counts,
                             "share": [c / max(len(certificate), 1) for c in counts]})


def reason_codes(model, X, k=4, *, explanation=None, background=None, sigma=0.3, output=None, protected=(),
                 proxies=None, certify_at=0.8, n_jobs=None) -> ReasonCodes:
    """The top-``k`` reasons of each row's decision, with their exact PG² contributions and a certificate.

    Parameters
    ----------
    model : fitted tree ensemble or Forest
        Any model :func:`xai_plugins.import_model` reads.
    X : array-like of shape (n, d) or DataFrame
        The decisions' rows (a DataFrame is aligned by column name to the model's features).
    k : int, default 4
        Reasons per row (fewer where fewer allowed features have a non-zero attribution).
    explanation : array-like of shape (n, d), TreeSHAPValues, shap.Explanation or None, default None
        Signed attributions of the rows in the model's feature order (a ``shap.Explanation`` with feature
        names is aligned by name); None: the package's TreeSHAP (interventional with ``background``, else
        path-dependent).
    background : array-like, DataFrame or None, default None
        Background rows for the default interventional TreeSHAP.
    sigma : float or array-like of shape (d,), default 0.3
        Noise scale of PG², as in :func:`xai_plugins.pg2`.
    output : int, str or None, default None
        The output explained, for a model with several.
    protected : sequence of str, default ()
        Features never given as reasons (protected attributes; names that are not model features are allowed
        and have no effect).
    proxies : dict of str to str or None, default None
        Features known to be proxies of a protected attribute (feature -> the attribute): they may be reasons,
        and are flagged when they are.
    certify_at : float, default 0.8
        The certificate a row needs to be certified, in (0, 1].
    n_jobs : int or None, default None
        Threads of the C core.

    Returns
    -------
    ReasonCodes
        ``reasons`` (one line per reason), ``rows`` (one line per row), ``summary()``.

    Raises
    ------
    InputError
        ``k`` < 1, ``certify_at`` outside (0, 1], an explanation of the wrong shape, or every feature protected.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(2)
    >>> X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["income", "debt", "age"])
    >>> y = (X["income"] - X["debt"] > 0).astype(int)
    >>> model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    >>> codes = xp.reason_codes(model, X[:5], k=2, output=1, protected=["age"])
    >>> "age" in set(codes.reasons["feature"])
    False
    """
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise InputError(f"k must be an integer >= 1; got {k!r}")
    if not 0.0 < float(certify_at) <= 1.0:
        raise InputError(f"certify_at must lie in (0, 1]; got {certify_at!r}")
    forest = import_model(model)
    rows, names = forest.rows(X)
    col = resolve_output(forest.output_names, output)
    d = forest.n_features
    allowed = np.array([name not in set(protected) for name in names])
    if not allowed.any():
        raise InputError("every feature is protected: no feature may be a reason")
    values = _attributions(forest, rows, names, explanation, background, col, n_jobs)
    usable = allowed[None, :] & ~_missing(forest, rows)       # a missing numeric value has no PG² (not perturbed)
    order = np.argsort(-np.where(usable, np.abs(values), -1.0), axis=1, kind="stable")[:, :k]
    taken = (np.take_along_axis(values, order, axis=1) != 0.0) & np.take_along_axis(usable, order, axis=1)
    taken &= np.cumprod(taken, axis=1).astype(bool)          # reasons are a prefix of the order
    counts = taken.sum(axis=1)

    def gap(mask):
        out = pg2(forest, rows, mask, sigma, verbose=False, n_jobs=n_jobs).value
        return out if col is None else out[:, col]

    prefix = np.zeros((len(rows), d), dtype=bool)
    prefix_pg2 = np.zeros((len(rows), k + 1))
    for r in range(k):
        step = taken[:, r]
        prefix[np.flatnonzero(step), order[step, r]] = True
        prefix_pg2[:, r + 1] = gap(prefix)
    best = _greedy_best(gap, usable, int(counts.max(initial=0)))
    reasons_pg2 = prefix_pg2[np.arange(len(rows)), counts]
    best_pg2 = best[np.arange(len(rows)), counts]
    with np.errstate(invalid="ignore", divide="ignore"):
        certificate = np.where(best_pg2 > 0, reasons_pg2 / np.where(best_pg2 > 0, best_pg2, 1.0), np.nan)
    table = _reason_table(forest, X, rows, names, values, order, taken, prefix_pg2, proxies or {})
    per_row = pd.DataFrame({"reasons": counts, "reasons_pg2": reasons_pg2, "best_pg2": best_pg2,
                            "certificate": certificate, "certified": certificate >= certify_at})
    return ReasonCodes(table, per_row, float(certify_at), [n for n in names if n in set(protected)])


def _attributions(forest, rows, names, explanation, background, col, n_jobs) -> np.ndarray:
    """(n, d) signed attributions of the chosen output, in the model's feature order."""
    if explanation is None:
        values = tree_shap(forest, rows, background=background, n_jobs=n_jobs).values
    else:
        values = np.asarray(getattr(explanation, "values", explanation), dtype=np.float64)
        given = getattr(explanation, "feature_names", None)
        if given is not None and list(given) != list(names):
            if sorted(map(str, given)) != sorted(map(str, names)):
                raise InputError(f"the explanation's features {list(given)[:8]} are not the model's {names[:8]}")
            values = values[:, [list(map(str, given)).index(str(n)) for n in names]]
    if values.ndim == 3:
        values = values[:, :, 0 if col is None else col]
    if values.shape != (len(rows), len(names)):
        raise InputError(f"the explanation must hold one attribution per row and feature, shape "
                         f"({len(rows)}, {len(names)}); got {values.shape}")
    if not np.isfinite(values).all():
        raise InputError("the explanation holds NaN or infinite attributions")
    return values


def _missing(forest, rows: np.ndarray) -> np.ndarray:
    """(n, d): the numeric entries the model reads as missing (NaN, or its missing= sentinel)."""
    numeric = np.ones(forest.n_features, dtype=bool) if forest.n_categories is None else forest.n_categories == 0
    missing = np.isnan(rows) | (rows == forest.missing_value)
    return missing & numeric[None, :]


def _greedy_best(gap, usable: np.ndarray, steps: int) -> np.ndarray:
    """(n, steps + 1): per row the PG² of the greedy set of each size over its usable features (column 0: 0; a
    row with no usable feature left keeps its last value)."""
    n, d = usable.shape
    best = np.zeros((n, steps + 1))
    chosen = np.zeros((n, d), dtype=bool)
    for s in range(steps):
        candidates = np.full((n, d), -np.inf)
        for j in np.flatnonzero(usable.any(axis=0)):
            free = usable[:, j] & ~chosen[:, j]
            if free.any():
                mask = chosen.copy()
                mask[free, j] = True
                candidates[free, j] = gap(mask)[free]
        pick = np.argmax(candidates, axis=1)                  # ties: the lowest feature index
        found = np.isfinite(candidates[np.arange(n), pick])
        chosen[np.flatnonzero(found), pick[found]] = True
        best[:, s + 1] = np.where(found, candidates[np.arange(n), pick], best[:, s])
    return best


def _reason_table(forest, X, rows, names, values, order, taken, prefix_pg2, proxies) -> pd.DataFrame:
    frame = X if isinstance(X, pd.DataFrame) else None
    lines = []
    for i, r in zip(*np.nonzero(taken)):
        j = int(order[i, r])
        shown = frame[names[j]].iloc[i] if frame is not None and names[j] in frame.columns else rows[i, j]
        if frame is None and forest.category_labels is not None and forest.category_labels[j] is not None:
            labels = forest.category_labels[j]
            shown = labels[int(rows[i, j])] if 0 <= rows[i, j] < len(labels) else rows[i, j]
        lines.append({"row": int(i), "rank": int(r) + 1, "feature": names[j], "value": shown,
                      "direction": "raises" if values[i, j] > 0 else "lowers", "attribution": float(values[i, j]),
                      "pg2_contribution": float(prefix_pg2[i, r + 1] - prefix_pg2[i, r]),
                      "proxy": proxies.get(names[j], "")})
    return pd.DataFrame(lines, columns=["row", "rank", "feature", "value", "direction", "attribution",
                                        "pg2_contribution", "proxy"])
