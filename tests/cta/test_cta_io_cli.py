"""Outputs written atomically, the quality report, and ``bayessdc cta`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc.cli as cli
from bayessdc.cta import adjust_table, cell_statistics, cox_4x9_frame, write_outputs


@pytest.fixture
def cta_main(monkeypatch):
    """``bayessdc`` restricted to the cta subcommand (other subcommands live on other branches)."""
    monkeypatch.setattr(cli, "SUBCOMMANDS", ("cta",))
    return cli.main


def test_cell_statistics_by_hand():
    stats = cell_statistics(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
    assert stats["slope"] == pytest.approx(2.0)
    assert stats["intercept"] == pytest.approx(0.0)
    assert stats["correlation"] == pytest.approx(1.0)
    assert stats["variance_ratio"] == pytest.approx(4.0)
    assert stats["total_absolute_adjustment"] == 6.0
    assert stats["relative_adjustment"] == pytest.approx(1.0)
    assert cell_statistics(np.array([5.0]), np.array([6.0]))["slope"] is None


def test_cli_end_to_end(tmp_path, cta_main):
    table_file = tmp_path / "cox.csv"
    cox_4x9_frame().to_csv(table_file, index=False)
    out = tmp_path / "out"
    status = cta_main(["cta", "--table", str(table_file), "--dims", "row,column", "--value", "value",
                       "--protection", "protection", "--integer", "--out", str(out)])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["adjusted.csv", "quality.json"]
    adjusted = pd.read_csv(out / "adjusted.csv")
    assert list(adjusted.columns) == ["row", "column", "original", "adjusted", "adjustment", "sensitive",
                                      "protection"]
    assert len(adjusted) == 50 and adjusted["sensitive"].sum() == 7
    interior = adjusted[(adjusted["row"] != "Total") & (adjusted["column"] != "Total")]
    row_sums = interior.groupby("row")["adjusted"].sum()
    totals = adjusted[(adjusted["column"] == "Total") & (adjusted["row"] != "Total")].set_index("row")
    assert np.allclose(row_sums, totals.loc[row_sums.index, "adjusted"])
    quality = json.loads((out / "quality.json").read_text())
    assert quality["checks"]["protection_met"] and quality["checks"]["totals_add_up"]
    assert quality["solver"]["status"] == "optimal"
    assert quality["solver"]["optimality_gap"] == pytest.approx(0.0, abs=1e-9)
    assert quality["solver"]["solve_seconds"] > 0


def test_cli_microdata_with_rules(tmp_path, cta_main):
    rng = np.random.default_rng(0)
    micro = pd.DataFrame({
        "region": rng.choice(list("NSEW"), 120),
        "sector": rng.choice(["agri", "ind", "serv"], 120),
        "firm": np.arange(120),
        "turnover": rng.lognormal(3, 1.5, 120).round(1),
    })
    micro.loc[0, ["region", "sector", "turnover"]] = ["N", "agri", 5000.0]  # a dominant firm
    path = tmp_path / "micro.csv"
    micro.to_csv(path, index=False)
    out = tmp_path / "out"
    status = cta_main(["cta", "--table", str(path), "--dims", "region,sector", "--value", "turnover",
                       "--contributor", "firm", "--rule", "p%=15", "--rule", "nk=2,85",
                       "--objective", "compromise", "--capacity", "1", "--widen", "3", "--out", str(out)])
    assert status == 0
    adjusted = pd.read_csv(out / "adjusted.csv")
    dominated = adjusted[(adjusted["region"] == "N") & (adjusted["sector"] == "agri")].iloc[0]
    assert dominated["sensitive"] and abs(dominated["adjustment"]) >= dominated["protection"] - 1e-6


def test_cli_bad_totals_exit_2_and_write_nothing(tmp_path, cta_main, capsys):
    frame = cox_4x9_frame()
    frame.loc[(frame["row"] == "R2") & (frame["column"] == "Total"), "value"] += 1
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    status = cta_main(["cta", "--table", str(path), "--dims", "row,column", "--value", "value",
                       "--protection", "protection", "--out", str(out)])
    assert status == 2
    assert "row=R2, column=Total: given 6584257, its cells add up to 6584256" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_cli_needs_protection_and_names_missing_columns(tmp_path, cta_main, capsys):
    path = tmp_path / "cox.csv"
    cox_4x9_frame().to_csv(path, index=False)
    base = ["cta", "--table", str(path), "--dims", "row,column", "--out", str(tmp_path / "o")]
    assert cta_main(base + ["--value", "value"]) == 2
    assert "--protection COL or --rule RULE" in capsys.readouterr().err
    assert cta_main(base + ["--value", "amount", "--protection", "protection"]) == 2
    assert "column(s) not in the data: amount" in capsys.readouterr().err


def test_failed_write_leaves_nothing_half_written(tmp_path, cox_table, monkeypatch):
    result = adjust_table(cox_table)
    out = tmp_path / "out"
    write_outputs(result, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad_report = {"not json": object()}  # json.dump fails half-way
    with pytest.raises(TypeError):
        write_outputs(result, out, bad_report)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporaries, old files intact


def test_demo_rows(tmp_path):
    from bayessdc.cli.cta import demo

    rows = demo(tmp_path, seed=1)
    assert (tmp_path / "cta" / "adjusted.csv").exists() and (tmp_path / "cta" / "quality.json").exists()
    measures = {row["measure"]: row["value"] for row in rows}
    assert all(row["synthesizer"] == "cta" for row in rows)
    assert measures["total_absolute_adjustment"] == pytest.approx(249250)
    assert measures["protection_met"] == 1.0
