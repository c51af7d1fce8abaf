"""Fixtures shared by several test files."""

import pytest

from xai_plugins.forest import Forest


@pytest.fixture
def stump_forest():
    """A factory of one-split Forests built by hand (x <= 0.5 -> 1, else 2; NaN goes left), with any
    field overridden, for the structure checks of the C validator."""

    def make(**overrides):
        arrays = dict(left_child=[1, -1, -1], right_child=[2, -1, -1], feature=[0, 0, 0], threshold=[0.5, 0, 0],
                      missing_left=[1, 0, 0], value=[0.0, 1.0, 2.0], tree_offset=[0, 3], tree_target=[0],
                      base_score=[0.0], n_features=1, split_rule="le", input_float32=False, aggregate="sum",
                      task="regression", output_space="raw", model_type="manual")
        arrays.update(overrides)
        return Forest(**arrays)

    return make
