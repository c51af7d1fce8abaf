"""Public Dask names kept from before the row engines (``xai_plugins.distributed.mean_pgi2`` is in
the README): the work itself runs on ``xai_plugins.engines`` (Dask: ``xai_plugins.engines.dask``),
dispatched by the public functions (``xp.pg2``, ``xp.pgi2``, ``xp.greedy_pg2_ranking``,
``xp.local_mdi``, ``xp.global_mdi``, ``xp.faithfulness``, ``xp.mean_pgi2``...) on their inputs.
Nothing here imports dask until a dask collection arrives.
"""

from __future__ import annotations

import numpy as np

from .engines import get
from .prediction_gap import mean_pgi2
from .ranking_faithfulness import random_rankings


def order_statistics(a, columns, ranks, compute=None) -> np.ndarray:
    """Exact order statistics of columns of a dask array, without collecting its rows.

    Returns the exact ``ranks[t]``-th smallest value (0-based) of column ``columns[t]`` of the
    dask array ``a``, by radix selection on the float64 bit patterns: 8 passes of per-block
    256-bin digit counts; nothing but counts leaves the workers.

    Parameters
    ----------
    a : dask.array.Array of shape (n, m)
        The values, rows on axis 0 (best persisted: it is read 8 times).
    columns : sequence of int
        The column of each requested statistic.
    ranks : sequence of int
        The 0-based rank of each requested statistic in its column (0: the minimum, n - 1: the
        maximum).
    compute : callable or None, default None
        How to compute a dask ``Delayed`` (default: ``dask.compute`` on the active scheduler).

    Returns
    -------
    ndarray of shape (len(columns),)
        The requested values.

    See Also
    --------
    xai_plugins.distributed.mean_pgi2 : Exact mean PGI² on the cluster.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from xai_plugins.distributed import order_statistics
    >>> a = da.from_array(np.arange(10.0).reshape(5, 2), chunks=2)
    >>> order_statistics(a, columns=[0, 1, 0], ranks=[0, 4, 2]).tolist()    # min, max, median
    [0.0, 9.0, 4.0]
    """
    return get("dask").order_statistics(a, columns, ranks, compute)


__all__ = ["mean_pgi2", "order_statistics", "random_rankings"]
