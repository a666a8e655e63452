"""Reading the confidential table."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .errors import InputError

__all__ = ["read_table"]


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV or Parquet file, with a clear error when it is missing or cannot be read.

    Raises
    ------
    bayessdc.InputError
        The file does not exist, is empty, or is not a readable table of its kind.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    kind = "Parquet" if path.suffix.lower() in (".parquet", ".pq") else "CSV"
    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"input file {path} is empty (0 bytes): expected a {kind} table with a header row")
    try:
        if kind == "Parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as err:  # noqa: BLE001 - any reader failure is the user's file
        raise InputError(f"cannot read {path} as {kind}: {err}") from err
