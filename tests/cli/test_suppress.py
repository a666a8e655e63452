"""``bayessdc suppress`` end to end: Cox's 4 x 9 table released as ``bsd.suppress`` releases it; a pattern that
leaves a primary cell recomputable, and a primary no pattern protects, refused with exit status 3 naming the cell;
bad input refused with exit status 2 naming the cell, nothing written."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main

TOTAL = "Total"


@pytest.fixture
def cox_file(tmp_path):
    path = tmp_path / "cox.csv"
    bsd.examples.cox_table().to_csv(path, index=False)
    return path


def _small(tmp_path, **columns):
    """A 2 x 2 table with its margins, a/x = 10 sensitive (protection 3), written as CSV; extra columns by row."""
    frame = pd.DataFrame({
        "r": ["a", "a", "b", "b", "a", "b", TOTAL, TOTAL, TOTAL],
        "c": ["x", "y", "x", "y", TOTAL, TOTAL, "x", "y", TOTAL],
        "v": [10, 20, 30, 40, 30, 70, 40, 60, 100],
        "p": [3, 0, 0, 0, 0, 0, 0, 0, 0],
    }).assign(**columns)  # fmt: skip
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return ["suppress", "--table", str(path), "--dims", "r,c", "--value", "v", "--protection", "p"]


def test_cli_releases_what_the_library_releases(cox_file, tmp_path, capsys):
    args = ["suppress", "--table", str(cox_file), "--dims", "row,column", "--value", "value", "--protection",
            "protection"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "cli")]) == 0
    assert "12 of 50 cells suppressed (7 primary, 5 secondary)" in capsys.readouterr().out
    release = tmp_path / "cli" / "release"
    assert sorted(p.name for p in release.iterdir()) == ["model.json", "suppressed.csv"]
    api = bsd.suppress(cox_file, "row,column", "value", protection="protection").save(tmp_path / "api")
    for name in ("suppressed.csv", "model.json"):  # the same release, byte for byte
        assert (api / "release" / name).read_bytes() == (release / name).read_bytes()
    assert main([*args, "--out", str(tmp_path / "again")]) == 0  # and the same again
    assert (tmp_path / "again" / "release" / "suppressed.csv").read_bytes() == (release / "suppressed.csv").read_bytes()
    run = json.loads((tmp_path / "cli" / "private" / "run.json").read_text())
    assert run["synthesizer"] == "suppress" and run["cost"] == "values"
    # another cost is another run: refused in the same folder
    assert main([*args, "--cost", "cells", "--out", str(tmp_path / "cli")]) == 2
    assert "different run (differs in: cost)" in capsys.readouterr().err


def test_a_pattern_leaving_a_primary_recomputable_is_refused_naming_it(tmp_path, capsys):
    args = _small(tmp_path, s=[1, 0, 0, 0, 0, 0, 0, 0, 0])
    assert main([*args, "--pattern", "s", "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "refused" in err and "audited_cells [r=a, c=x]" in err
    assert not (tmp_path / "out" / "release").exists()
    audit = pd.read_csv(tmp_path / "out" / "private" / "audit.csv")
    assert audit[["name", "min", "max", "protected"]].to_numpy().tolist() == [["r=a, c=x", 10.0, 10.0, False]]


def test_a_primary_no_pattern_protects_is_refused_naming_it(tmp_path, capsys):
    values = np.array([10.0, 20, 30, 40, 30, 70, 40, 60, 100])
    bound = np.where(np.arange(9) == 0, np.nan, values)  # the intruder knows every cell but a/x
    args = _small(tmp_path, lo=bound, hi=bound)
    assert main([*args, "--lower", "lo", "--upper", "hi", "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "refused: nothing released: no suppression pattern protects r=a, c=x" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("columns", "options", "message"),
    [
        ({"v": [10, 20, 30, 40, 31, 70, 40, 60, 100]}, [], "r=a, c=Total: given 31, its cells add up to 30"),
        ({"k": [1, 1, 1, 1, -1, 1, 1, 1, 1]}, ["--cost", "k"], "r=a, c=Total has a negative cost"),
        (
            {"lo": [None, None, None, 41, None, None, None, None, None]},
            ["--lower", "lo"],
            r"a-priori range [41, inf] of r=b, c=y excludes its value (40)",
        ),
        ({}, ["--cost", "k"], "column(s) not in the data: k"),
    ],
)
def test_bad_input_is_refused_naming_the_cell_and_nothing_is_written(tmp_path, capsys, columns, options, message):
    args = _small(tmp_path, **columns)
    assert main([*args, *options, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bayessdc suppress: error:") and message in err
    assert not (tmp_path / "out").exists()


def test_the_demo_suppresses_coxs_table(tmp_path):
    from bayessdc.cli import suppress

    rows = {r["measure"]: r["value"] for r in suppress.demo(tmp_path, 0)}
    assert rows["primary_cells"] == 7 and rows["primary_cells_protected"] == 1.0
    assert (tmp_path / "suppress" / "release" / "suppressed.csv").exists()
