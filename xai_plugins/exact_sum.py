"""Exactly rounded sums and means of float64 columns, independent of summation order.

Chunked computations (a dask reduction over blocks of rows) and in-memory ones must give the
same float: float addition is not associative, so both sum exactly — as Python integers in units
of 2^-SUM_SCALE_BITS, which add up exactly in any order — and round once at the end. (``math.fsum``
rounds each call's result, so partial fsums of blocks cannot be merged exactly.)
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

__all__: list[str] = []      # internal module: the public names are in the API reference

#: exact sums are integers in units of 2^-SUM_SCALE_BITS (the smallest float64 is 2^-1074,
#: and frexp's 53-bit mantissas bring another 2^-53)
SUM_SCALE_BITS = 1127


def exact_column_sums(a) -> list:
    """The exact sum of each column of a 2-D float64 array, as Python ints in units of
    2^-:data:`SUM_SCALE_BITS` (a column holding NaN or ±inf gives its float sum instead).

    Exact sums add up exactly (partial sums of blocks of rows give the same total in any order),
    so a mean rounded once at the end (:func:`exact_mean`) is the same float for any chunking.
    Each value is split into its binary exponent and its 53-bit integer mantissa, the mantissa into
    three limbs of at most 18 bits, and the limbs summed per (column, exponent) with ``bincount``:
    float64 sums of integers below 2^53 are exact up to 2^35 rows.
    """
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise InputError(f"exact_column_sums needs a 2-D array; got shape {a.shape}")
    n, c = a.shape
    out: list = [0] * c
    finite = np.isfinite(a).all(axis=0)
    for j in np.flatnonzero(~finite):
        out[j] = float(a[:, j].sum())
    if n == 0 or not finite.any():
        return out
    mant, expo = np.frexp(np.where(finite, a, 0.0))
    mi = (mant * 2.0 ** 53).astype(np.int64)                     # exact: |mant| < 1
    key = (expo.astype(np.int64) + 1074) + 2100 * np.arange(c)   # frexp exponents lie in [-1073, 1024]
    key = key.ravel()
    limbs = (mi & 0x3FFFF, (mi >> 18) & 0x3FFFF, mi >> 36)       # mi = l0 + l1 2^18 + l2 2^36, |l2| < 2^17
    sums = [np.bincount(key, weights=limb.ravel().astype(np.float64), minlength=2100 * c) for limb in limbs]
    for b in np.flatnonzero((sums[0] != 0) | (sums[1] != 0) | (sums[2] != 0)):
        j, e = divmod(int(b), 2100)
        if finite[j]:
            mantissa_sum = int(sums[0][b]) + (int(sums[1][b]) << 18) + (int(sums[2][b]) << 36)
            out[j] += mantissa_sum << e    # value = mi * 2^(e - 1074 - 53)
    return out


def exact_mean(sums, denominator) -> np.ndarray:
    """Correctly rounded ``sums / denominator`` of exact sums (:func:`exact_column_sums`, same
    units); a float sum (a column with NaN or ±inf) divides in floating point."""
    if isinstance(denominator, int) and denominator <= 0:
        raise InputError("the weights sum to zero: sample_weight must not be all zero")
    unit = 1 << SUM_SCALE_BITS
    out = []
    for s in sums:
        if isinstance(s, int) and isinstance(denominator, int):
            out.append(s / denominator)                    # int / int is correctly rounded
        else:
            num = s / unit if isinstance(s, int) else float(s)
            den = denominator / unit if isinstance(denominator, int) else float(denominator)
            out.append(num / den)
    return np.asarray(out, dtype=np.float64)
