"""``bsd.synthesize`` with ``bsd.CART`` on data with missing values, codes and spikes: nothing dropped."""

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.synthesis.tables import TableSpec, count_table, tau_synthetic
from bayessdc.synthesis.utility import total_variation_by_dataset
from tests.models.test_cart_missing import KEEP, SYNTHESIZE, holes_frame

M = 2


@pytest.fixture(scope="module")
def release():
    data = holes_frame(400, seed=6)
    recipe = bsd.CART(missing_codes={"income": [-8]}, spikes={"income": [0]}, smoothing="density", bootstrap=50)
    return data, bsd.synthesize(data, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=M, seed=0, progress=False)


def test_release_keeps_every_record_and_its_missing_values(release):
    data, result = release
    synthetic = result.synthetic  # every record but the replicated uniques the default policy removes
    assert len(synthetic) == M * len(data) - result.facts["replicated_uniques_removed"]
    assert (synthetic["hours"].isna() == (synthetic["employed"] == "no")).all()
    assert synthetic["marital"].isna().any() and (synthetic["income"] == -8).any()
    missing = result.description["missing_values"]
    assert missing["numeric"]["income"]["states"] == ["value", "code -8", "spike 0"]
    assert missing["categorical_with_missing"] == ["marital"]
    assert result.description["smoothing"]["method"] == "density"


def test_utility_tables_count_missing_values_as_cells(release):
    data, result = release
    tau = result.measured["table_tau"].summary().set_index("subset")
    assert tau.loc["hours x age", "datasets"] == M  # hours (missing for a third) by age deciles
    errors = result.measured["category_count_error"].details
    assert errors.loc[errors["column"] == "marital", "category"].isna().any()  # missing: a category of its own


def test_a_missing_value_is_a_cell_of_its_own_in_generic_tables():
    original = pd.DataFrame({"a": ["x", None, "y", None], "b": [1.0, np.nan, 2.0, 50.0]})
    spec = TableSpec("t", ("a", "b"), bins={"b": [0, 10]})  # 50 lies outside the bins: not counted
    table = count_table(original, spec)
    assert table.sum() == 3
    assert [count for (a, b), count in table.items() if pd.isna(a) and pd.isna(b)] == [1]
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1, 1], "a": ["x", "y", "y", "y"], "b": [1.0, 2.0, 2.0, 2.0]})
    assert tau_synthetic(original, synthetic, spec).iloc[0] == pytest.approx(1 - 3 / 6)  # L1 = 0 + 1 (NaN) + 2
    assert total_variation_by_dataset(original, synthetic, ["a"]).iloc[0] == pytest.approx(1 - 4 / 8)
