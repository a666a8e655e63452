"""Random malformed input to every command (issue 48): exit 2 with one message line, or accepted; never a
traceback, never an exit 1; and what CART releases from an accepted file holds only values the file justifies.

Hypothesis draws, for a command, a file (CSV or Parquet) made from its valid table (:data:`COMMANDS` of
``test_bad_input``) by a few corruptions: a cell set to a value from :data:`ODD_VALUES`, a column dropped,
renamed to another's name, filled with durations, or the rows removed. The samplers are replaced by a function
that raises :class:`~tests.cli.test_bad_input.Sampled` (an accepted input reaches it). A second property runs
CART for real (no sampler to replace) on a larger table, whose release must hold only values the input had.
"""

from __future__ import annotations

import datetime
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayessdc.cli import main

from .test_bad_input import COMMANDS, Command, Sampled, stub_samplers

#: Values a cell of a hand-made or exported file can hold that a column may not: missing, infinite, text, a
#: fraction, a negative number, a whole number beyond 64 bits, a blank, a boolean, a date.
ODD_VALUES = [np.nan, np.inf, -np.inf, "many", 2.5, -3, 10**30, "", True, datetime.date(2020, 1, 1)]

CORRUPTIONS = ("cell", "drop", "rename", "durations", "no rows")


@st.composite
def malformed(draw: st.DrawFn) -> tuple[Command, pd.DataFrame, str]:
    """A command, its valid table corrupted one to three times, and the file's format."""
    command = draw(st.sampled_from(COMMANDS))
    frame = command.table()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(CORRUPTIONS))
        column = draw(st.sampled_from(list(frame.columns)))
        if kind == "cell":
            row = draw(st.integers(0, len(frame) - 1)) if len(frame) else 0
            frame = frame.astype({column: object})
            if len(frame):
                frame.loc[row, column] = draw(st.sampled_from(ODD_VALUES))
        elif kind == "drop" and frame.shape[1] > 1:
            frame = frame.drop(columns=column)
        elif kind == "rename" and any(c != column for c in frame.columns):
            other = draw(st.sampled_from([c for c in frame.columns if c != column]))
            frame = frame.set_axis([other if c == column else c for c in frame.columns], axis=1)
        elif kind == "durations":
            frame = frame.assign(**{column: pd.to_timedelta(np.arange(len(frame)), unit="s")})
        elif kind == "no rows":
            frame = frame.iloc[:0]
    return command, frame, draw(st.sampled_from(["csv", "parquet"]))


def _write(frame: pd.DataFrame, path: Path) -> bool:
    """The frame as a CSV or Parquet file (False: Parquet cannot hold it, such as mixed types in a column)."""
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
        return True
    try:
        frame.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001 - pyarrow refuses a frame no Parquet file can be made of; nothing to test
        return False
    return True


def _argv(command: Command, data: Path, folder: Path) -> list[str]:
    args = [a.format(rules=str(folder / "rules.json"), tmp=str(folder)) for a in command.args]
    return [command.name, command.data_flag, str(data), *args, "--out", str(folder / "out")]


#: The same examples in every run (a suite's verdict does not rest on the draw), no example database left behind.
SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.function_scoped_fixture]}  # fmt: skip


@settings(max_examples=150, **SETTINGS)
@given(case=malformed())
def test_a_malformed_file_is_refused_in_one_line_or_accepted(case, tmp_path_factory, capsys, monkeypatch):
    stub_samplers(monkeypatch)  # the samplers replaced (the same over the examples)
    command, frame, suffix = case
    folder = tmp_path_factory.mktemp(command.name)
    for name, content in command.files.items():
        (folder / f"{name}.json").write_text(content)
    data = folder / f"input.{suffix}"
    if not _write(frame, data):
        return
    capsys.readouterr()
    try:
        status = main(_argv(command, data, folder))
    except Sampled:
        return  # accepted: the input reached the sampler
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"bayessdc {command.name}: error: ") and "Traceback" not in err, err
    assert not (folder / "out").exists(), "a refused input left an output folder"


def _persons(n: int = 160) -> pd.DataFrame:
    from bayessdc.models.cart import simulate_acs_persons

    return simulate_acs_persons(n, seed=1)[["age", "sex", "enrolled", "grade"]]


CART_VALUES = [np.nan, np.inf, "many", 2.5, -3, 10**30, "", True]


@st.composite
def cart_files(draw: st.DrawFn) -> pd.DataFrame:
    """The persons table with one to five cells changed."""
    frame = _persons().astype(object)
    for _ in range(draw(st.integers(1, 5))):
        row, column = draw(st.integers(0, len(frame) - 1)), draw(st.sampled_from(list(frame.columns)))
        frame.loc[row, column] = draw(st.sampled_from(CART_VALUES))
    return frame


@settings(max_examples=5, **SETTINGS)
@given(frame=cart_files())
def test_what_cart_releases_from_an_accepted_file_the_file_justifies(frame, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("cart")
    frame.to_csv(folder / "input.csv", index=False)
    status = main(["cart", "--data", str(folder / "input.csv"), "--synthesize", "enrolled,grade", "--keep", "age,sex",
                   "--m", "2", "--bootstrap", "5", "--out", str(folder / "out"), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert status in (0, 2, 3), err
    assert "Traceback" not in err and "unexpected error" not in err, err
    if status != 0:
        assert not (folder / "out" / "release").exists()
        return
    read = pd.read_csv(folder / "input.csv")
    released = pd.read_parquet(folder / "out" / "release" / "synthetic.parquet")
    for column in ("age", "sex", "enrolled", "grade"):
        given = read[column]
        values = released[column]
        assert values.isna().sum() == 0 or given.isna().any(), f"{column}: missing values the input lacks"
        if pd.api.types.is_numeric_dtype(given):
            assert np.isfinite(values.dropna().to_numpy(float)).all(), column
            assert values.min() >= given.min() and values.max() <= given.max(), column
        else:
            assert set(values.dropna().astype(str)) <= set(given.dropna().astype(str)), column
    given = Counter(read[["age", "sex"]].astype(str).itertuples(index=False, name=None))
    for _, dataset in released.groupby("synthetic"):  # kept columns as given (some rows removed: replicated uniques)
        kept = Counter(dataset[["age", "sex"]].astype(str).itertuples(index=False, name=None))
        assert not kept - given, f"kept values the input lacks: {list((kept - given).items())[:3]}"
