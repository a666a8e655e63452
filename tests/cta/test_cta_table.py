"""Tables, their margins and the additivity matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayessdc.cta import link_tables, parse_dimensions, table_from_long, table_from_microdata


def cell(table, **labels):
    mask = np.ones(table.n_cells, dtype=bool)
    for col, label in labels.items():
        mask &= (table.cells[col] == label).to_numpy()
    (index,) = np.flatnonzero(mask)
    return index


def test_two_way_table_has_all_margins_and_adds_up(small_frame):
    table = table_from_long(small_frame, "r,c", "v")
    assert table.n_cells == 9
    assert table.additivity.shape == (6, 9)  # 3 column equations + 3 row equations
    assert table.values[cell(table, r="a", c="Total")] == 30
    assert table.values[cell(table, r="Total", c="y")] == 60
    assert table.values[cell(table, r="Total", c="Total")] == 100
    assert np.all(table.additivity_residuals() == 0)
    # Each equation: its total minus its parts.
    dense = table.additivity.toarray()
    assert set(np.unique(dense)) == {-1.0, 0.0, 1.0}
    assert np.all((dense == 1).sum(axis=1) == 1)


def test_three_way_table_equation_count():
    rng = np.random.default_rng(1)
    grid = pd.MultiIndex.from_product([list("ab"), list("xyz"), list("uv")], names=["d1", "d2", "d3"])
    frame = grid.to_frame(index=False)
    frame["v"] = rng.integers(1, 100, len(frame))
    table = table_from_long(frame, ["d1", "d2", "d3"], "v")
    assert table.n_cells == 3 * 4 * 3
    # For each dimension: one equation per combination of the other dimensions' nodes.
    assert table.additivity.shape[0] == 4 * 3 + 3 * 3 + 3 * 4
    assert np.all(table.additivity_residuals() == 0)
    assert table.values[cell(table, d1="Total", d2="Total", d3="Total")] == frame["v"].sum()


def test_hierarchical_dimension():
    frame = pd.DataFrame({"prov": ["P1", "P1", "P2"], "arr": ["A1", "A2", "A3"], "v": [1.0, 2.0, 4.0]})
    table = table_from_long(frame, "prov>arr", "v")
    assert parse_dimensions("prov>arr") == [("prov", "arr")]
    assert table.n_cells == 3 + 2 + 1
    assert table.values[cell(table, prov="P1", arr="Total")] == 3
    assert table.values[cell(table, prov="Total", arr="Total")] == 7
    assert table.additivity.shape[0] == 3  # P1, P2 and the grand total


def test_given_totals_that_do_not_add_up_are_named(small_frame):
    totals = pd.DataFrame({"r": ["a", "Total"], "c": ["Total", "y"], "v": [31.0, 60.0], "p": [0.0, 0.0]})
    with pytest.raises(ValueError, match=r"1 total\(s\) do not add up") as err:
        table_from_long(pd.concat([small_frame, totals]), "r,c", "v")
    assert "r=a, c=Total: given 31, its cells add up to 30" in str(err.value)
    assert "c=y" not in str(err.value)


def test_custom_total_label_and_correct_totals_pass(small_frame):
    totals = pd.DataFrame({"r": ["a", "All"], "c": ["All", "All"], "v": [30.0, 100.0], "p": [0, 0]})
    table = table_from_long(pd.concat([small_frame, totals]), "r,c", "v", total_label="All")
    assert table.values[cell(table, r="All", c="All")] == 100


def test_negative_values_and_bad_columns_rejected(small_frame):
    bad = small_frame.copy()
    bad.loc[1, "v"] = -5
    with pytest.raises(ValueError, match=r"negative values in column 'v' \(e.g. r=a, c=y\)"):
        table_from_long(bad, "r,c", "v")
    with pytest.raises(ValueError, match="column\\(s\\) not in the data: zz"):
        table_from_long(small_frame, "r,zz", "v")
    with pytest.raises(ValueError, match="appears more than once"):
        table_from_long(pd.concat([small_frame, small_frame]), "r,c", "v")
    with pytest.raises(ValueError, match="whole numbers"):
        table_from_long(small_frame.assign(v=[1.5, 2, 3, 4]), "r,c", "v", kind="count")


def test_microdata_sums_contributions_and_counts_contributors():
    micro = pd.DataFrame({
        "r": ["a", "a", "a", "b"],
        "firm": ["f1", "f1", "f2", "f3"],
        "v": [5.0, 7.0, 3.0, 10.0],
    })
    table = table_from_microdata(micro, "r", "v", "firm")
    a, total = cell(table, r="a"), cell(table, r="Total")
    assert table.values[a] == 15
    assert table.cells["n_contributors"][a] == 2
    assert list(table.top_contributions[a, :3]) == [12.0, 3.0, 0.0]  # f1's two rows are one contributor
    assert table.cells["n_contributors"][total] == 3
    assert list(table.top_contributions[total, :3]) == [12.0, 10.0, 3.0]


def test_linked_tables_share_marginal_cells(small_frame):
    other = pd.DataFrame({"r": list("aabb"), "s": list("mfmf"), "v": [12.0, 18.0, 50.0, 20.0]})
    t1 = table_from_long(small_frame, "r,c", "v")
    t2 = table_from_long(other, "r,s", "v")
    linked = link_tables([t1, t2])
    # 9 + 9 cells, of which the 3 row totals are shared.
    assert linked.n_cells == 15
    assert linked.additivity.shape[0] == 12
    assert np.all(linked.additivity_residuals() == 0)
    other.loc[0, "v"] = 13.0
    with pytest.raises(ValueError, match="disagree on the shared cell r=a, c=Total, s=Total"):
        link_tables([t1, table_from_long(other, "r,s", "v")])
