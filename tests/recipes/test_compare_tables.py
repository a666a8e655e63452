"""``bsd.compare_tables``: CTA beside cell suppression of Cox's 4 x 9 table (his Example 1a). The figures equal those
worked directly from the two results, the audited intervals are each release's own audit, two releases of different
tables or sensitive cells are refused naming what differs, and the HTML file names every sensitive cell and is
refused inside a ``release/`` folder; the same comparison from the two output folders, and by ``bayessdc report``."""

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main

TOTAL = "Total"


@pytest.fixture(scope="module")
def cox():
    frame = bsd.examples.cox_table()
    adjusted = bsd.adjust(frame, "row,column", "value", protection="protection",
                          settings=bsd.AdjustmentSettings(integer=True))  # fmt: skip
    suppressed = bsd.suppress(frame, "row,column", "value", protection="protection")
    return frame, adjusted, suppressed, bsd.compare_tables(adjusted, suppressed)


def small(values=(10.0, 20, 30, 40), protection=(3.0, 0, 0, 0)) -> pd.DataFrame:
    """A 2 x 2 table with its margins."""
    a, b, c, d = values
    return pd.DataFrame({
        "r": ["a", "a", "b", "b", "a", "b", TOTAL, TOTAL, TOTAL],
        "c": ["x", "y", "x", "y", TOTAL, TOTAL, "x", "y", TOTAL],
        "v": [a, b, c, d, a + b, c + d, a + c, b + d, a + b + c + d],
        "p": [*protection, 0, 0, 0, 0, 0],
    })  # fmt: skip


def _both(frame: pd.DataFrame, dims: str = "r,c", value: str = "v", protection: str = "p"):
    return (bsd.adjust(frame, dims, value, protection=protection),
            bsd.suppress(frame, dims, value, protection=protection))  # fmt: skip


def test_the_figures_are_those_of_the_two_results(cox):
    _, adjusted, suppressed, comparison = cox
    m = comparison.measures
    table = suppressed.solution.table
    x, interior = table.values, table.cells["interior"].to_numpy(bool)
    hidden = suppressed.solution.suppressed
    assert m.loc["cells_changed", "suppression"] == hidden.sum() == 12
    assert m.loc["interior_cells_changed", "suppression"] == (hidden & interior).sum()
    assert m.loc["other_cells_changed", "suppression"] == suppressed.solution.secondary.sum() == 5
    assert m.loc["interior_value_changed", "suppression"] == x[hidden & interior].sum() == 3_077_002
    assert m.loc["interior_value_changed", "suppression"] == suppressed.quality["interior_cells"]["value_suppressed"]
    assert m.loc["interior_value_share", "suppression"] == pytest.approx(3_077_002 / x[interior].sum())
    y = adjusted.solution.adjustment
    assert m.loc["cells_changed", "cta"] == (y != 0).sum()
    assert m.loc["interior_value_changed", "cta"] == np.abs(y[interior]).sum() == 198_225
    assert m.loc["totals_value_changed", "cta"] == np.abs(y[~interior]).sum()
    assert m.loc["interior_value_share", "cta"] == pytest.approx(
        adjusted.quality["interior_cells"]["relative_adjustment"])
    for statistic in ("correlation", "slope", "variance_ratio"):  # Cox's statistics, as cta.quality_report gave them
        for cells in ("interior", "sensitive"):
            assert m.loc[f"{cells}_{statistic}", "cta"] == adjusted.quality[f"{cells}_cells"][statistic]
    assert m.loc["interior_mean", "cta"] == adjusted.quality["interior_cells"]["mean_adjusted"]
    # what suppression leaves: the published interior cells (exact, so correlation and slope 1 over them), and none
    # of the sensitive cells
    shown = interior & ~hidden
    assert m.loc["interior_published", "suppression"] == shown.sum() == 24
    assert m.loc["interior_mean", "suppression"] == pytest.approx(x[shown].mean())
    assert m.loc["interior_variance_ratio", "suppression"] == pytest.approx(x[shown].var() / x[interior].var())
    assert m.loc["interior_correlation", "suppression"] == pytest.approx(1.0)
    assert m.loc["sensitive_published", "suppression"] == 0 and m.loc["sensitive_mean", "suppression"] is None
    assert m.loc["interior_mean", "original"] == pytest.approx(x[interior].mean())
    assert comparison.protected == {"suppression": True, "cta": True}


def test_the_audited_intervals_are_each_releases_own(cox):
    _, adjusted, suppressed, comparison = cox
    cells = comparison.cells
    own = {"suppression": suppressed.audit, "cta": adjusted.measured["audited_cells"].details}
    assert len(cells) == 7
    for method, audit in own.items():
        assert list(cells["name"]) == list(audit["name"])
        for column in ("min", "max", "published", "protected"):
            np.testing.assert_array_equal(cells[f"{method}_{column}"].to_numpy(), audit[column].to_numpy())
    np.testing.assert_array_equal(cells["true"], suppressed.audit["true"])
    np.testing.assert_array_equal(cells["cta_hole_lower"], own["cta"]["hole_lower"])
    assert cells["suppression_published"].isna().all()  # every sensitive cell suppressed


def test_two_releases_of_different_tables_are_refused_naming_what_differs():
    adjusted, suppressed = _both(small())
    assert bsd.compare_tables(adjusted, suppressed).protected == {"suppression": True, "cta": True}
    _, other = _both(small(values=(10.0, 20, 30, 41)))
    with pytest.raises(bsd.InputError, match=r"different tables: 4 cell\(s\) have other original values: r=b, c=y "
                                             r"\(40 in the adjustment, 41 in the suppression\)"):
        bsd.compare_tables(adjusted, other)
    _, more = _both(small(protection=(3.0, 0, 0, 4)))
    with pytest.raises(bsd.InputError, match=r"different sensitive cells: sensitive in the suppression only: r=b, c=y"):
        bsd.compare_tables(adjusted, more)
    _, stronger = _both(small(protection=(4.0, 0, 0, 0)))
    with pytest.raises(bsd.InputError, match=r"different levels: r=a, c=x \(down 3, up 3 in the adjustment; down 4"):
        bsd.compare_tables(adjusted, stronger)
    renamed = small().rename(columns={"c": "col"})
    _, elsewhere = _both(renamed, dims="r,col")
    with pytest.raises(bsd.InputError, match=r"dimensions are \['r', 'c'\], the suppression's \['r', 'col'\]"):
        bsd.compare_tables(adjusted, elsewhere)
    with pytest.raises(TypeError, match="give the adjustment first"):
        bsd.compare_tables(suppressed, adjusted)


def test_the_html_names_every_sensitive_cell_and_is_refused_in_a_release_folder(cox, tmp_path):
    *_, comparison = cox
    out = comparison.save(tmp_path / "cmp.html")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
    for name in comparison.cells["name"]:
        assert name in text
    assert "3.077e+06" in text and "1.982e+05" in text  # the value suppressed, the interior cells' sum |y|
    assert all(name in comparison._repr_html_() for name in comparison.cells["name"])
    with pytest.raises(bsd.InputError, match="outside any release/ folder"):
        comparison.save(tmp_path / "run" / "release" / "cmp.html")
    assert not (tmp_path / "run").exists()


def test_the_same_comparison_from_the_output_folders_and_the_command_line(cox, tmp_path, capsys):
    frame, adjusted, suppressed, comparison = cox
    adjusted.save(tmp_path / "cta")
    suppressed.save(tmp_path / "sup")
    from_folders = bsd.compare_tables(tmp_path / "cta", tmp_path / "sup")
    pd.testing.assert_frame_equal(from_folders.measures, comparison.measures)
    pd.testing.assert_frame_equal(from_folders.cells, comparison.cells, check_dtype=False)
    assert main(["report", str(tmp_path / "sup"), str(tmp_path / "cta"), "--out", str(tmp_path / "cmp.html")]) == 0
    assert "beside cell suppression" in capsys.readouterr().out
    assert "row=R3, column=C8" in (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert main(["report", str(tmp_path / "sup"), "--out", str(tmp_path / "one.html")]) == 2
    assert "one controlled tabular adjustment run (bayessdc cta) and one cell" in capsys.readouterr().err
    with pytest.raises(bsd.InputError, match="not a bayessdc cta run"):
        bsd.compare_tables(tmp_path / "sup", tmp_path / "sup")
