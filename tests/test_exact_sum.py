"""The exact column sums behind order-independent means, against Python's Fraction arithmetic."""

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from xai_plugins.exact_sum import SUM_SCALE_BITS, exact_column_sums, exact_mean

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(1, 3)), elements=finite),
       st.integers(1, 29))
def test_exact_sums_are_exact_and_merge_across_blocks(a, cut):
    cut = min(cut, len(a))
    whole = exact_column_sums(a)
    merged = [x + y for x, y in zip(exact_column_sums(a[:cut]), exact_column_sums(a[cut:]))]
    assert whole == merged
    for j in range(a.shape[1]):
        truth = sum((Fraction(float(v)) for v in a[:, j]), Fraction(0))
        assert Fraction(whole[j], 1 << SUM_SCALE_BITS) == truth
        mean = exact_mean([whole[j]], len(a) << SUM_SCALE_BITS)[0]
        if math.isfinite(float(truth / len(a))):
            assert mean == float(truth / len(a))      # correctly rounded, as Fraction -> float is


def test_non_finite_columns_fall_back_to_float_sums():
    a = np.array([[1.0, np.inf], [2.0, 1.0]])
    sums = exact_column_sums(a)
    assert sums[1] == np.inf and Fraction(sums[0], 1 << SUM_SCALE_BITS) == 3
