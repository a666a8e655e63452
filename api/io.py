"""Reading the confidential table: CSV, Parquet, Stata and SAS files, chosen by extension."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from .errors import InputError
from .validation import check_header, check_names

__all__ = ["READERS", "read_table"]

#: Extension -> (kind, reader). CSV may be compressed (``.csv.gz``, ``.csv.zip``, ...), as pandas infers.
READERS: dict[str, tuple[str, Callable[[Path], pd.DataFrame]]] = {
    ".csv": ("CSV", pd.read_csv),
    ".tsv": ("tab-separated", lambda path: pd.read_csv(path, sep="\t")),
    ".parquet": ("Parquet", pd.read_parquet),
    ".pq": ("Parquet", pd.read_parquet),
    ".dta": ("Stata", pd.read_stata),
    ".sas7bdat": ("SAS", lambda path: pd.read_sas(path, format="sas7bdat")),
}
COMPRESSION = (".gz", ".bz2", ".zip", ".xz", ".zst")


def _extension(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in COMPRESSION and suffixes[-2] in (".csv", ".tsv"):
        return suffixes[-2]
    return suffixes[-1] if suffixes else ""


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a table from a CSV (optionally compressed), tab-separated, Parquet, Stata or SAS file.

    The format is chosen by the file's extension: ``.csv`` (and ``.csv.gz``, ``.csv.zip``, ...), ``.tsv``,
    ``.parquet`` or ``.pq``, ``.dta`` (Stata), ``.sas7bdat`` (SAS).

    Raises
    ------
    bayessdc.InputError
        The file does not exist, is empty, has an extension of no supported format, is not a readable
        table of its kind, or repeats a column name in its header.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    extension = _extension(path)
    if extension not in READERS:
        raise InputError(
            f"input file {path}: unknown extension {extension or '(none)'!r}; bayessdc reads "
            f"{', '.join(READERS)} (CSV also compressed: .csv.gz, .csv.zip, ...)"
        )
    kind, reader = READERS[extension]
    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"input file {path} is empty (0 bytes): expected a {kind} table with a header row")
    source = f"input file {path}"
    if extension in (".csv", ".tsv"):
        check_header(path, "\t" if extension == ".tsv" else ",")  # before pandas renames a repeat "name.1"
    elif kind == "Parquet":
        _check_parquet_names(path, source)
    try:
        frame = reader(path)
    except Exception as err:  # noqa: BLE001 - any reader failure is the user's file
        raise InputError(f"cannot read {path} as {kind}: {err}") from err
    check_names(frame.columns, source)
    return frame


def _check_parquet_names(path: Path, source: str) -> None:
    """A Parquet file's column names from its schema (pyarrow refuses to read repeats with an opaque message)."""
    try:
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
    except Exception:  # noqa: BLE001 - the full read that follows says what is wrong with the file
        return
    check_names([n for n in names if not n.startswith("__index_level_")], source)
