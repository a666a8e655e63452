"""Shared fixtures for the controlled tabular adjustment tests."""

from __future__ import annotations

import pandas as pd
import pytest

from bayessdc.cta import cox_4x9_frame, table_from_long


@pytest.fixture(scope="session")
def cox_table():
    """Cox's 4 x 9 table with its seven protections."""
    return table_from_long(cox_4x9_frame(), "row,column", "value", protection="protection")


@pytest.fixture
def small_frame() -> pd.DataFrame:
    """A 2 x 2 table: rows a, b; columns x, y; cell (a, x) sensitive with protection 3."""
    return pd.DataFrame({
        "r": ["a", "a", "b", "b"],
        "c": ["x", "y", "x", "y"],
        "v": [10.0, 20.0, 30.0, 40.0],
        "p": [3.0, 0.0, 0.0, 0.0],
    })
