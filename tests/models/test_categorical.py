"""The shared categorical input of the DPMPM and the DP-areal model (``bayessdc.models.categorical``)."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.categorical import CategoricalDataError, distinct_cells, prepare_categorical

# ---------------------------------------------------------------------------------------------------
# Input checks


def _small_frame():
    return pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "x", "y"], "g": [10, 11, 10, 12, 11]})


def test_a_column_both_synthesized_and_kept_is_refused():
    with pytest.raises(CategoricalDataError, match="both synthesized and kept"):
        prepare_categorical(_small_frame(), ["g"], ["a", "g"])


def test_continuous_and_many_level_columns_are_refused_with_a_binning_hint():
    frame = _small_frame().assign(income=[1.5, 2.25, 3.0, 4.1, 5.0])
    with pytest.raises(CategoricalDataError, match="continuous.*bin it"):
        prepare_categorical(frame, ["g"], ["a", "income"])
    frame = pd.DataFrame({"g": np.arange(50) % 3, "id": np.arange(50)})
    with pytest.raises(CategoricalDataError, match="50 distinct values, more than 20.*bin"):
        prepare_categorical(frame, ["g"], ["id"], max_levels=20)


def test_missing_values_are_refused_or_become_a_level():
    frame = _small_frame().astype({"b": object})
    frame.loc[3, "b"] = None
    with pytest.raises(CategoricalDataError, match="'b' has 1 missing value.*data row 4"):
        prepare_categorical(frame, ["g"], ["a", "b"])
    data = prepare_categorical(frame, ["g"], ["a", "b"], missing="level")
    assert "<missing>" in list(data.levels["b"])
    assert data.frame()["b"].tolist() == ["x", "y", "x", "<missing>", "y"]


def test_cells_count_the_distinct_records_and_a_single_record_pattern_is_allowed():
    data = prepare_categorical(_small_frame(), ["g"], ["a", "b"])
    assert data.variables == ("a", "b", "g")
    assert data.cell_counts.sum() == 5
    # (1,x,10) (1,y,11) (2,x,10) (2,x,12) (3,y,11): all distinct; pattern (3, y) has one record
    assert len(data.cell_counts) == 5
    assert np.array_equal(data.cell_codes[data.record_cell], data.codes)
    assert data.frame().equals(_small_frame()[["a", "b", "g"]].astype({"a": data.frame()["a"].dtype}))


def test_cells_are_the_sorted_distinct_rows_whichever_the_counting_path():
    rng = np.random.default_rng(0)
    for shape, n in (([3, 4, 5], 1000), ([3, 1000, 1000], 400), ([2], 3)):
        codes = rng.integers(0, shape, size=(n, len(shape)))
        expected = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        got = distinct_cells(codes, shape)
        for e, g in zip(expected, got, strict=True):
            assert np.array_equal(e.ravel(), np.asarray(g).ravel())
