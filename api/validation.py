"""The checks every table passes before anything is fitted or written: names, types, values and magnitudes.

A synthesizer's own checks (its columns' roles, labels, counts, coordinates, rules) come after these, in its
``prepare``. These are the ones no model knows of, and each names the column (and the rows) at fault:

* **names**: every column has a name of its own. A CSV whose header repeats a name is refused from its header
  (pandas would read the second ``education`` as ``education.1`` and a run would release the first without a
  word); a data frame with a repeated name is refused as it is.
* **types**: a released or modelled column holds numbers (integer, float, boolean), text or labels (pandas
  categories). Durations, dates, complex numbers and cells holding lists, dictionaries, bytes or other objects
  are refused, naming the type and how to convert it; a ``float16`` column (Parquet's half precision, which the
  release format cannot write) is read as ``float32``, which holds each of its values exactly.
* **values**: no ``inf`` or ``-inf`` in a numeric column (a model would use it as a number and a release would
  carry it); no whole number beyond what the release format's 64-bit integers hold (``10**30`` read from a CSV).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bayessdc.models.validation import name_rows

from .errors import InputError

__all__ = ["check_header", "check_names", "check_values", "column_list"]

#: Largest magnitude of a whole number the release format holds (signed 64-bit integers).
INT64_MAX = int(np.iinfo(np.int64).max)


def _describe(names: Sequence[object]) -> str:
    """``'education' (columns 3 and 5)`` for every repeated name, columns counted from 1."""
    seen: dict[object, list[int]] = {}
    for position, name in enumerate(names, start=1):
        seen.setdefault(name, []).append(position)
    parts = []
    for name, positions in seen.items():
        if len(positions) > 1:
            where = ", ".join(map(str, positions[:-1])) + f" and {positions[-1]}"
            parts.append(f"{str(name)!r} (columns {where})")
    return "; ".join(parts)


def check_names(columns: Iterable[object], source: str = "the table") -> None:
    """Refuse a table whose columns do not each have a name of their own.

    Parameters
    ----------
    columns
        The column names, in order.
    source
        What the table is, for the message (``"input file persons.csv"``).

    Raises
    ------
    bayessdc.InputError
        A name repeated (naming it and the 1-based positions of its columns).
    """
    names = list(columns)
    if len(set(names)) < len(names):
        raise InputError(
            f"{source}: column names repeat, {_describe(names)}; every column needs a name of its own (a run "
            "would read one of them and drop the other without a word)"
        )


def check_header(path: Path, separator: str) -> None:
    """Refuse a CSV or tab-separated file whose header repeats a name, from the header as written (before
    pandas renames the repeats ``name.1``). Blank names are pandas' ``Unnamed: i`` (an index written by
    ``to_csv``), each a name of its own."""
    try:
        header = pd.read_csv(path, sep=separator, header=None, nrows=1, dtype=str, keep_default_na=False)
    except Exception:  # noqa: BLE001 - the full read that follows says what is wrong with the file
        return
    if len(header):
        names = header.iloc[0].tolist()
        check_names([n if n.strip() else f"Unnamed: {i}" for i, n in enumerate(names)], f"input file {path}")


#: dtype kind -> what it holds and how to make it a column bayessdc can hold.
_REFUSED_KINDS = {
    "m": ("durations (timedelta)", "convert them to numbers first (seconds or days)"),
    "M": ("dates or times", "convert them to numbers (a year, days since a date) or to labels first"),
    "c": ("complex numbers", "keep their real and imaginary parts as two numeric columns"),
    "V": ("raw binary records", "convert them to numbers or text first"),
}


def _refuse_objects(column: object, values: pd.Series) -> None:
    """Refuse an object column with cells that are neither text, numbers nor missing (lists, dictionaries,
    bytes, dates) or whole numbers beyond 64 bits."""
    kinds = values.map(lambda v: "missing" if v is None or (isinstance(v, float) and math.isnan(v)) else
                       "text" if isinstance(v, str) else
                       "boolean" if isinstance(v, bool | np.bool_) else
                       "number" if isinstance(v, numbers.Real) else
                       "list" if isinstance(v, list | tuple | np.ndarray) else type(v).__name__)  # fmt: skip
    odd = ~kinds.isin(["missing", "text", "boolean", "number"])
    if odd.any():
        first = kinds[odd].iloc[0]
        raise InputError(
            f"column {column!r} holds values of type {first} ({name_rows(odd.to_numpy())}); a column must hold "
            "numbers, text or labels: convert it first (for example a list to one column per element)"
        )
    numbers_only = values[kinds.eq("number").to_numpy()]
    whole = numbers_only.map(lambda v: isinstance(v, numbers.Integral) and abs(int(v)) > INT64_MAX)
    if whole.any():
        rows = values.index.isin(whole.index[whole.to_numpy()])
        raise InputError(
            f"column {column!r}: whole numbers beyond what a release holds (64-bit integers, at most "
            f"{INT64_MAX:,} in magnitude) at {name_rows(rows)}; rescale or band the column first"
        )
    infinite = numbers_only.map(lambda v: isinstance(v, float | np.floating) and math.isinf(v))
    if infinite.any():
        rows = values.index.isin(infinite.index[infinite.to_numpy()])
        raise InputError(f"column {column!r}: inf at {name_rows(rows)}; every number must be finite")


def check_values(frame: pd.DataFrame, columns: Iterable[object] | None = None) -> pd.DataFrame:
    """Refuse types and values no synthesizer can hold in the ``columns`` a run reads (every column: None).

    Parameters
    ----------
    frame
        The table as read.
    columns
        The columns the run models or releases; names not in ``frame`` are left to the synthesizer's own
        check (it names them as unknown).

    Returns
    -------
    pandas.DataFrame
        ``frame``, with ``float16`` columns as ``float32`` (the same values; the release format has no half
        precision).

    Raises
    ------
    bayessdc.InputError
        Naming the column, the type or the value and the 1-based data rows.
    """
    check_names(frame.columns)
    chosen = [c for c in (frame.columns if columns is None else columns) if c in frame.columns]
    upcast = {}
    for column in dict.fromkeys(chosen):
        values = frame[column].reset_index(drop=True)
        dtype = values.dtype
        if isinstance(dtype, pd.StringDtype):
            continue  # text
        if isinstance(dtype, pd.CategoricalDtype):  # labels: their values checked as the column's
            values = pd.Series(np.asarray(values, dtype=object))
            dtype = values.dtype
        kind = getattr(dtype, "kind", "O")
        if isinstance(dtype, pd.PeriodDtype | pd.IntervalDtype | pd.SparseDtype) or kind in _REFUSED_KINDS:
            what, fix = _REFUSED_KINDS.get(kind, (f"values of type {dtype}", "convert them to numbers or labels first"))
            raise InputError(f"column {column!r} holds {what} ({dtype}); {fix}")
        if kind == "O":
            _refuse_objects(column, values)
        elif kind == "f":
            if dtype == np.float16:
                upcast[column] = np.float32
            bad = np.isinf(values.to_numpy(dtype=float, na_value=np.nan))
            if bad.any():
                raise InputError(f"column {column!r}: inf at {name_rows(bad)}; every number must be finite")
        elif kind == "u" and len(values) and values.max() > INT64_MAX:
            raise InputError(
                f"column {column!r}: whole numbers beyond what a release holds (64-bit integers, at most "
                f"{INT64_MAX:,}) at {name_rows((values > INT64_MAX).to_numpy())}; rescale or band the column first"
            )
    return frame.astype(upcast) if upcast else frame


def column_list(columns: Sequence[str] | str | None) -> list[str] | None:
    """Columns given as a list, or as one comma-separated string (``None`` stays ``None``)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    out: list[str] = []
    for value in columns:
        out.extend(c.strip() for c in str(value).split(",") if c.strip())
    return out
