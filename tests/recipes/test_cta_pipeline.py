"""``bsd.adjust``: Cox's 4 x 9 table adjusted additively with every protection met, as ``bayessdc cta`` does."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.cta import cox_4x9_frame

TOTAL = "Total"
INTEGER = bsd.AdjustmentSettings(integer=True)


@pytest.fixture(scope="module")
def cox():
    frame = cox_4x9_frame()
    return frame, bsd.adjust(frame, "row,column", "value", protection="protection", settings=INTEGER)


def test_adjusted_table_adds_up_by_hand(cox):
    _, result = cox
    table = result.table.set_index(["row", "column"])["adjusted"]
    rows = [f"R{r}" for r in range(1, 5)]
    columns = [f"C{c}" for c in range(1, 10)]
    for r in rows:
        assert sum(table[(r, c)] for c in columns) == pytest.approx(table[(r, TOTAL)], abs=1e-6)
    for c in columns:
        assert sum(table[(r, c)] for r in rows) == pytest.approx(table[(TOTAL, c)], abs=1e-6)
    grand = table[(TOTAL, TOTAL)]
    assert sum(table[(r, TOTAL)] for r in rows) == pytest.approx(grand, abs=1e-6)
    assert sum(table[(TOTAL, c)] for c in columns) == pytest.approx(grand, abs=1e-6)
    assert result.totals_add_up and result.quality["checks"]["max_additivity_residual"] == pytest.approx(0, abs=1e-6)


def test_every_protection_is_met(cox):
    frame, result = cox
    cells = result.table.merge(frame, on=["row", "column"], validate="one_to_one")
    assert (cells["original"] == cells["value"]).all()
    assert (cells["sensitive"] == (cells["protection_y"] > 0)).all() and cells["sensitive"].sum() == 7
    sensitive = cells[cells["sensitive"]]
    moved = (sensitive["adjusted"] - sensitive["value"]).abs()
    assert (moved >= sensitive["protection_y"] - 1e-6).all()  # Cox's protections p_i, from the input
    assert (cells["adjusted"] >= -1e-9).all()
    assert np.allclose(cells["adjustment"], np.round(cells["adjustment"]))  # integer=True
    assert result.status == "optimal" and result.protection_met and result.passed
    assert result.quality["all_cells"]["total_absolute_adjustment"] == pytest.approx(249250)


def test_adjust_equals_the_cli(cox, tmp_path):
    _, result = cox
    path = tmp_path / "cox.csv"
    cox_4x9_frame().to_csv(path, index=False)
    args = ["cta", "--table", str(path), "--dims", "row,column", "--value", "value", "--protection", "protection"]
    assert main([*args, "--integer", "--out", str(tmp_path / "cli")]) == 0
    cli = pd.read_csv(tmp_path / "cli" / "private" / "cells.csv")
    pd.testing.assert_frame_equal(result.table, cli, check_dtype=False)
    api = result.save(tmp_path / "api")
    for name in ("adjusted.csv", "model.json"):  # the same release, byte for byte
        assert (api / "release" / name).read_bytes() == (tmp_path / "cli" / "release" / name).read_bytes()
    api_quality, cli_quality = (
        json.loads((root / "private" / "quality.json").read_text()) for root in (api, tmp_path / "cli")
    )
    for quality in (api_quality, cli_quality):
        quality["solver"].pop("solve_seconds")
    assert api_quality == cli_quality
    from_file = bsd.adjust(path, "row,column", "value", protection="protection", settings=INTEGER)
    pd.testing.assert_frame_equal(from_file.table, result.table)


def test_input_errors_are_named(cox):
    frame, _ = cox
    with pytest.raises(bsd.InputError, match="protection=COLUMN or rule=RULE"):
        bsd.adjust(frame, "row,column", "value")
    with pytest.raises(bsd.InputError, match="not both"):
        bsd.adjust(frame, "row,column", "value", protection="protection", rule="p%=15")
    with pytest.raises(ValueError, match="column\\(s\\) not in the data: amount"):
        bsd.adjust(frame, "row,column", "amount", protection="protection")


def test_the_settings_reach_the_adjustment_its_release_and_identity(tmp_path):
    """a + b + c = Total, a = 2 sensitive with protection 3 (so it moves up), min sum |y_i| / max(a_i, 1): the
    total (1/72 a unit) takes the 3 when its capacity allows (0.2 x 72 = 14.4, the default); at capacity 0.025 it
    takes its 1.8 and c (1/50 a unit, capacity 1.25) the other 1.2: a 5, b 20, c 48.8, Total 73.8. So narrow a
    capacity lets the intruder who knows the method bound a within [1.436, 8.570], short of its protection range
    [0, 5] (tests/cta/test_audit.py): the policy's audit refuses that release, naming a; private/ holds it."""
    frame = pd.DataFrame({"g": ["a", "b", "c"], "v": [2.0, 20.0, 50.0], "p": [3.0, 0.0, 0.0]})
    default = bsd.adjust(frame, "g", "v", protection="p", settings=bsd.AdjustmentSettings(objective="relative"))
    narrow = bsd.adjust(frame, "g", "v", protection="p",
                        settings=bsd.AdjustmentSettings(objective="relative", capacity=0.025),
                        solver=bsd.SolverSettings(time_limit=60.0, mip_gap=0.01))  # fmt: skip
    assert default.released_table.set_index("g")["v"].to_dict() == pytest.approx(
        {"a": 5.0, "b": 20.0, "c": 50.0, TOTAL: 75.0})  # fmt: skip
    with pytest.raises(bsd.DisclosureRefused, match=r"audited_cells \[g=a\]"):
        narrow.save(tmp_path / "out")
    assert not (tmp_path / "out" / "release").exists()
    adjusted = pd.read_csv(tmp_path / "out" / "private" / "cells.csv").set_index("g")["adjusted"]
    assert adjusted.to_dict() == pytest.approx({"a": 5.0, "b": 20.0, "c": 48.8, TOTAL: 73.8})
    assert narrow.released_table.set_index("g")["v"].to_dict() == adjusted.to_dict()
    assert narrow.description["capacity"] == 0.025 and narrow.description["objective"] == "relative"
    run = json.loads((tmp_path / "out" / "private" / "run.json").read_text())
    assert (run["objective"], run["capacity"], run["time_limit"], run["mip_gap"]) == ("relative", 0.025, 60.0, 0.01)
    # the settings bsd.adjust did not take before they were grouped: in the identity only when set
    assert not {"tie_break", "strengthen", "solver_options"} & set(run)
    tied = bsd.adjust(frame, "g", "v", protection="p", settings=bsd.AdjustmentSettings(tie_break=False))
    assert tied.identity["tie_break"] is False


def test_settings_of_another_type_are_refused_before_the_table_is_read(tmp_path):
    with pytest.raises(TypeError, match=r"solver= takes SolverSettings\(...\), not str 'HIGHS'"):
        bsd.adjust(tmp_path / "absent.csv", "g", "v", protection="p", solver="HIGHS")
