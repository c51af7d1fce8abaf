"""The agreement rule shared by the reproduced tables, fixed before any number was looked at.

A paper's figure is printed rounded, and most figures are averages over random rows (or random
Monte Carlo draws), so ours can differ from it by sampling error alone. A row agrees when

    |ours − paper| ≤ 2 · SE + ½ unit of the paper's last printed digit,

where SE is the standard error of the difference: ours estimated from our own sample, and the
paper's assumed to have the same per-row spread at the paper's sample size (so
SE = se_ours · sqrt(1 + n_ours / n_paper)). Differences of protocol (another random split, other
library versions) are *not* in the tolerance: where they matter the row disagrees and its
``reason`` says so.
"""
from __future__ import annotations

from decimal import Decimal

import numpy as np


def half_unit(printed: str) -> float:
    """Half a unit of the last digit of a number as the paper prints it ("0.132" → 0.0005,
    "1.32e+05" → 500, "72.47" → 0.005)."""
    return 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent


def check(ours: float, printed: str, se: float, n_ours: int | None = None,
          n_paper: int | None = None) -> tuple[bool, str]:
    """(agrees, tolerance text) for ``ours`` against the paper's ``printed`` figure; ``se`` is
    our standard error, widened by sqrt(1 + n_ours / n_paper) for the paper's own sampling error
    when both sizes are given."""
    if n_ours and n_paper:
        se = se * np.sqrt(1.0 + n_ours / n_paper)
    tol = 2.0 * se + half_unit(printed)
    return bool(abs(ours - float(printed)) <= tol), f"±{tol:.3g} (2 SE + ½ printed unit)"


def mean_se(values: np.ndarray) -> float:
    """Standard error of the mean of ``values``."""
    values = np.asarray(values, dtype=np.float64)
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def std_se(values: np.ndarray) -> float:
    """Standard error of the sample standard deviation, sd · sqrt((kurtosis − 1) / (4n))
    (delta method; no normality assumed)."""
    values = np.asarray(values, dtype=np.float64)
    sd = values.std(ddof=1)
    if len(values) < 3 or sd == 0:
        return 0.0
    kurtosis = np.mean((values - values.mean()) ** 4) / values.var() ** 2
    return float(sd * np.sqrt(max(kurtosis - 1.0, 0.0) / (4 * len(values))))


def proportion_se(p: float, n: int) -> float:
    """Binomial standard error of a share ``p`` of ``n`` rows."""
    return float(np.sqrt(max(p * (1.0 - p), 0.0) / n))


def rmse_se(errors: np.ndarray) -> float:
    """Standard error of RMSE = sqrt(mean e²) by the delta method."""
    sq = np.asarray(errors, dtype=np.float64) ** 2
    rmse = np.sqrt(sq.mean())
    return float(mean_se(sq) / (2 * rmse)) if rmse > 0 else 0.0


def paired_difference_se(a: np.ndarray, b: np.ndarray, stat, n_boot: int = 400, seed: int = 0) -> float:
    """Bootstrap standard error of stat(a) − stat(b) over rows resampled jointly (a and b are
    per-row values of the same rows, e.g. two rankings' errors)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    return float(np.std([stat(a[i]) - stat(b[i]) for i in idx], ddof=1))


def check_order(ours_diff: float, paper_diff: float, se: float) -> tuple[bool, str]:
    """A paper's ordering of two methods holds when our difference has the paper's sign, or is
    within 2 SE of zero (no significant reversal)."""
    agrees = bool(np.sign(ours_diff) == np.sign(paper_diff) or abs(ours_diff) <= 2 * se)
    return agrees, f"same sign as the paper, or |ours| ≤ 2 SE = {2 * se:.3g} (paired bootstrap)"
