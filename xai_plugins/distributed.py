"""Public Dask names kept from before the row engines (``xai_plugins.distributed.mean_pgi2`` is in
the README): the work itself runs on :mod:`xai_plugins.engines` (Dask: :mod:`xai_plugins.engines.dask`),
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
    """The exact ``ranks[t]``-th smallest value (0-based) of column ``columns[t]`` of the dask array
    ``a`` (see :meth:`xai_plugins.engines.dask.DaskEngine.order_statistics`)."""
    return get("dask").order_statistics(a, columns, ranks, compute)


__all__ = ["mean_pgi2", "order_statistics", "random_rankings"]
