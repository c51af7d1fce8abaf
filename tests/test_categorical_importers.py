"""Categorical features of XGBoost (``enable_categorical``), scikit-learn HistGradientBoosting
(``categorical_features``) and numeric category labels (issue 21): predict parity with the library's
own predict on random rows, unseen categories, NaN and rows on thresholds; exact PG² against an
independent enumeration and against Monte Carlo through the model's own predict on raw labels."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

from xai_plugins import pg2
from xai_plugins.forest import import_model

LABELS = np.array([3.0, 7.0, 11.0, 20.0])        # numeric categories that are not the codes 0 .. K-1


def _numeric_category_data(seed=0, n=500):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.choice(LABELS, n), rng.normal(size=n)])
    y = (X[:, 0] == 7.0) * 2.0 - (X[:, 0] == 20.0) + X[:, 1]
    return X, y


def test_numeric_labels_of_an_encoder_are_looked_up_in_arrays_and_frames():
    """A pipeline's OrdinalEncoder reads the number 7 as the category 7 (its code 1), in an array as in
    a DataFrame: the Forest must too (it read numbers as codes, so 7 was an unseen category)."""
    X, y = _numeric_category_data()
    pipe = make_pipeline(make_column_transformer((OrdinalEncoder(handle_unknown="use_encoded_value",
                                                                 unknown_value=-1), [0]), remainder="passthrough"),
                         GradientBoostingRegressor(n_estimators=10, random_state=0)).fit(X, y)
    forest = import_model(pipe)
    rows = X[:50].copy()
    rows[:5, 0] = [5.0, -1.0, 0.0, 1.0, np.nan]                 # unseen labels (0 and 1 are not codes here)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = pipe.predict(rows)
    np.testing.assert_allclose(forest.predict(rows)[:, 0], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(forest.predict(pd.DataFrame(rows, columns=["x0", "x1"]))[:, 0], expected,
                               rtol=0, atol=1e-12)
    # the background's category frequencies are read through the same map: an enumeration over the labels
    rho = 0.5
    q = np.array([np.mean(X[:, 0] == c) for c in LABELS])
    for x in rows[5:9]:
        draws = np.repeat(x[None, :], len(LABELS), axis=0)
        draws[:, 0] = LABELS
        gaps = (pipe.predict(draws) - pipe.predict(x[None, :])[0]) ** 2
        want = rho * q @ gaps            # keeping x (prob 1 - rho) adds no gap
        got = pg2(pipe, x[None, :], [0], background=X, rho=rho).value[0]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
