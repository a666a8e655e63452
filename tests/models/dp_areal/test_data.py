"""The DP-areal model's input (``bayessdc.models.dp_areal.data``): counts, sufficient statistics, bad input."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.categorical import CategoricalDataError
from bayessdc.models.dp_areal import prepare_areal, simulate_areal


def test_counts_and_sufficient_statistics():
    frame, truth = simulate_areal(30, (2, 2), seed=2)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    assert data.counts.sum() == len(frame)
    assert np.all(np.bincount(data.distinct_pattern, weights=data.distinct_weight) == data.n_labels)
    # every cell's distinct pair has the cell's pattern and count
    b = np.repeat(np.arange(data.n_patterns), data.n_labels)
    assert np.all(data.distinct_pattern[data.cell_distinct.ravel()] == b)
    assert np.all(data.distinct_count[data.cell_distinct.ravel()] == data.counts.ravel())
    assert data.design.shape == (4, 4) and np.all(data.design.sum(axis=1) == 2)


def test_bad_input_is_refused_before_sampling():
    frame = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1, 1, 2, 2], "county": [1, 2, 3, 4]})
    with pytest.raises(CategoricalDataError, match="one label column"):
        prepare_areal(frame, ["county", "b"], ["a"])
    with pytest.raises(CategoricalDataError, match="at least one kept column"):
        prepare_areal(frame, "county", [])
    with pytest.raises(CategoricalDataError, match="more than 10.*DPMPM"):
        prepare_areal(frame, "county", ["a", "b"], max_cells=10)
    with pytest.raises(CategoricalDataError, match="missing"):
        prepare_areal(frame.assign(county=[1, None, 3, 4]), "county", ["a"])
    notices: list[str] = []
    categorical = frame.assign(a=pd.Categorical(frame["a"], categories=[1, 2, 3]))
    data = prepare_areal(categorical, "county", ["a"], notices=notices)
    assert data.n_patterns == 2 and "no record" in notices[0] and "'a'" in notices[0]
