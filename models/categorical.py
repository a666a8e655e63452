"""Categorical records coded as integers, with the cells (distinct value combinations) they occupy.

The input of the two categorical synthesizers of Hu & Savitsky: the DPMPM (:mod:`bayessdc.models.dpmpm`,
Section 2.1) models the records through their cells, the DP-areal model (:mod:`bayessdc.models.dp_areal`,
Section 2.2) through the label counts of every pattern of the kept variables. :func:`prepare_categorical`
checks a table and codes it, refusing bad input before any sampling with a message that names the column at
fault and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd

from .errors import InputError
from .validation import name_rows

__all__ = [
    "MAX_NUMERIC_LEVELS",
    "MISSING_LEVEL",
    "CategoricalData",
    "CategoricalDataError",
    "check_numeric_levels",
    "distinct_cells",
    "long_frame",
    "prepare_categorical",
]

#: The level that stands for a missing value under ``prepare_categorical(..., missing="level")``.
MISSING_LEVEL = "<missing>"

#: Most distinct values of a numeric column that is not a run of codes (:func:`check_numeric_levels`).
MAX_NUMERIC_LEVELS = 50


class CategoricalDataError(InputError):
    """The table cannot be modelled as given (the message names the column at fault and what to do)."""


@dataclass(frozen=True)
class CategoricalData:
    """Categorical records coded as integers, with the cells (distinct value combinations) they occupy.

    Attributes
    ----------
    variables
        Modelled columns: the kept ones first, then the synthesized ones.
    keep, synthesize
        Columns released unchanged and columns replaced by synthetic values.
    levels
        The labels of every variable's levels, in code order.
    codes
        ``(n, p)`` level codes of every record.
    cell_codes, cell_counts, record_cell
        Distinct rows of ``codes``, how many records each holds, and each record's cell.
    """

    variables: tuple[str, ...]
    keep: tuple[str, ...]
    synthesize: tuple[str, ...]
    levels: dict[str, np.ndarray]
    codes: np.ndarray
    cell_codes: np.ndarray
    cell_counts: np.ndarray
    record_cell: np.ndarray

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.codes.shape[0])

    @property
    def n_levels(self) -> np.ndarray:
        """Number of levels of every variable, in the order of ``variables``."""
        return np.array([len(self.levels[v]) for v in self.variables], dtype=np.int64)

    @property
    def keep_index(self) -> np.ndarray:
        """Positions of the kept variables in ``variables``."""
        return np.array([self.variables.index(v) for v in self.keep], dtype=np.int64)

    @property
    def synthesize_index(self) -> np.ndarray:
        """Positions of the synthesized variables in ``variables``."""
        return np.array([self.variables.index(v) for v in self.synthesize], dtype=np.int64)

    @property
    def synthesized_shape(self) -> tuple[int, ...]:
        """Numbers of levels of the synthesized variables (their joint code is a ravelled index)."""
        return tuple(len(self.levels[v]) for v in self.synthesize)

    def joint_code(self, codes: np.ndarray | None = None) -> np.ndarray:
        """Joint code of the synthesized variables (ravelled multi-index) of every record."""
        codes = self.codes if codes is None else codes
        return np.ravel_multi_index(tuple(codes[:, j] for j in self.synthesize_index), self.synthesized_shape)

    def frame(self, codes: np.ndarray | None = None) -> pd.DataFrame:
        """The records as labels (``codes`` replaces the stored codes, same shape)."""
        codes = self.codes if codes is None else codes
        return pd.DataFrame({v: self.levels[v][codes[:, j]] for j, v in enumerate(self.variables)})

    @cached_property
    def cell_order(self) -> tuple[np.ndarray, np.ndarray]:
        """Records grouped by cell: ``(order, start)``; cell ``c`` holds ``order[start[c]:start[c + 1]]``."""
        order = np.argsort(self.record_cell, kind="stable")
        start = np.concatenate([[0], np.cumsum(self.cell_counts)]).astype(np.int64)
        return order.astype(np.int64), start

    def take(self, rows: np.ndarray | Sequence[int]) -> CategoricalData:
        """The same variables and levels restricted to ``rows`` (for per-record risk in chunks)."""
        rows = np.asarray(rows, dtype=np.int64)
        return _with_cells(self.variables, self.keep, self.synthesize, self.levels, self.codes[rows])

    def with_levels(self, levels: dict[str, np.ndarray]) -> CategoricalData:
        """The same records with wider levels for some variables (``{variable: levels}``, each holding the
        variable's own levels): a model fitted on them gives the levels its records do not take the probability
        its prior and the other records allow, so that it can be evaluated at records that take them.

        Examples
        --------
        >>> data = prepare_categorical(pd.DataFrame({"x": ["p", "q"], "y": ["u", "v"]}), ["y"], ["x"])
        >>> wide = data.with_levels({"x": np.array(["o", "p", "q"], dtype=object)})
        >>> wide.levels["x"].tolist(), wide.codes[:, 0].tolist(), wide.frame().equals(data.frame())
        (['o', 'p', 'q'], [1, 2], True)
        """
        wide, codes = dict(self.levels), self.codes.copy()
        for variable, values in levels.items():
            values = np.asarray(values)
            position = pd.Index(values).get_indexer(self.levels[variable])
            if (position < 0).any():
                lost = self.levels[variable][position < 0]
                raise ValueError(f"levels of {variable!r} without {', '.join(map(repr, lost.tolist()))}")
            j = self.variables.index(variable)
            codes[:, j], wide[variable] = position[codes[:, j]], values
        return _with_cells(self.variables, self.keep, self.synthesize, wide, codes)

    def code_kept(self, frame: pd.DataFrame) -> CategoricalData:
        """Other records coded by these levels for a draw given their kept values: ``frame``'s kept columns coded,
        each synthesized variable at its first level (a placeholder: a draw given the kept values alone, the
        DPMPM's ``conditioning="pattern"``, never reads it).

        Raises
        ------
        CategoricalDataError
            A kept value these levels do not hold (naming the column and rows).

        Examples
        --------
        >>> data = prepare_categorical(pd.DataFrame({"x": ["p", "q"], "y": ["u", "v"]}), ["y"], ["x"])
        >>> data.code_kept(pd.DataFrame({"x": ["q", "q", "p"]})).codes.tolist()
        [[1, 0], [1, 0], [0, 0]]
        """
        codes = np.zeros((len(frame), len(self.variables)), dtype=np.int64)
        for j in self.keep_index:
            variable = self.variables[j]
            codes[:, j] = pd.Index(self.levels[variable]).get_indexer(frame[variable])
            unknown = codes[:, j] < 0
            if unknown.any():
                raise CategoricalDataError(f"column {variable!r} holds a level the model has no code for at "
                                           f"{name_rows(unknown)}")  # fmt: skip
        return _with_cells(self.variables, self.keep, self.synthesize, self.levels, codes)


def long_frame(data: CategoricalData, synthesized: dict[str, tuple[Any, np.ndarray]], m: int) -> pd.DataFrame:
    """m synthetic datasets as one long table of labels with a first column ``synthetic`` (1..m): the kept
    variables as recorded, every synthesized one from its codes ``(m, records)`` (a synthesizer's
    ``synthesized_codes``). Built column by column over all m datasets, with no frame per dataset to concatenate
    (faster at 1,000,000 records; README, "Measured choices in the code")."""
    n = data.codes.shape[0]
    columns: dict[str, np.ndarray] = {"synthetic": np.repeat(np.arange(1, m + 1, dtype=np.int64), n)}
    for j, variable in enumerate(data.variables):
        codes = synthesized[variable][1].reshape(-1) if variable in synthesized else np.tile(data.codes[:, j], m)
        columns[variable] = data.levels[variable][codes]
    return pd.DataFrame(columns)


def distinct_cells(codes: np.ndarray, n_levels: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``codes`` in lexicographic order, each record's row and the counts (``np.unique``).

    The rows are combined into one integer (their ravelled multi-index) when that fits, and counted with
    ``bincount`` when the table of all combinations is not much larger than the data: O(n) instead of a
    sort of the rows, which took seconds at a million records.

    Parameters
    ----------
    codes
        ``(n, p)`` level codes.
    n_levels
        Number of levels of every column of ``codes``.

    Returns
    -------
    cell_codes, record_cell, cell_counts
        The distinct rows ``(C, p)``, the row of every record ``(n,)`` and the records of every row ``(C,)``.
    """
    n_levels = [max(int(d), 1) for d in n_levels]
    size = 1.0
    for d in n_levels:
        size *= d
    if codes.shape[0] == 0 or size >= 2.0**62:
        cell_codes, record_cell, cell_counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return cell_codes, record_cell.ravel(), cell_counts
    combined = np.ravel_multi_index(tuple(codes.T), n_levels)
    if size <= 4 * codes.shape[0] + 1_000_000:
        counts = np.bincount(combined, minlength=int(size))
        occupied = np.flatnonzero(counts)
        position = np.zeros(int(size), dtype=np.int64)
        position[occupied] = np.arange(len(occupied))
        record_cell, cell_counts = position[combined], counts[occupied]
    else:
        occupied, record_cell, cell_counts = np.unique(combined, return_inverse=True, return_counts=True)
    cell_codes = np.column_stack(np.unravel_index(occupied, n_levels))
    return cell_codes, record_cell.ravel(), cell_counts


def check_numeric_levels(column: str, values: pd.Series, limit: int | None = MAX_NUMERIC_LEVELS) -> None:
    """Refuse a numeric column with more than ``limit`` distinct values that are not codes.

    The categorical synthesizers treat every distinct value as an unordered level: a dollar income with 266
    values would become 266 unrelated categories, each with a handful of records. Numeric label codes (county
    numbers 1..133) are categorical and legitimate, so the limit applies only to a numeric column whose values
    are not a dense run of integers: integers covering less than half of the range they span
    (``distinct < (max - min + 1) / 2``). (Non-integer numbers are refused as continuous by
    :func:`prepare_categorical` itself, with the same advice.) 50 levels is already more than a
    measurement banded for a table usually needs (deciles, five-year age groups) while leaving room for
    genuine many-level numeric labels, which pass as codes. Pandas categoricals and text are never numeric.

    Parameters
    ----------
    column
        The column's name (for the message).
    values
        Its values (missing values already removed or recoded).
    limit
        The largest number of distinct values; None: no limit.

    Raises
    ------
    CategoricalDataError
        Naming the column, its number of distinct values and how to band it.
    """
    if limit is None or not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return
    distinct = np.unique(values.to_numpy(dtype=float))
    if len(distinct) <= limit:
        return
    if not np.all(distinct == np.round(distinct)):
        return  # continuous: refused by prepare_categorical's own check, which names the rows
    if len(distinct) >= (distinct[-1] - distinct[0] + 1) / 2:
        return  # a dense run of integer codes (county numbers): a label
    raise CategoricalDataError(
        f"column {column!r} is numeric with {len(distinct)} distinct values from {distinct[0]:g} to {distinct[-1]:g}"
        f", more than {limit}: the categorical synthesizers would treat each value as an unordered level. Band it "
        f"first, for example frame[{column!r}] = pd.qcut(frame[{column!r}], 10) (deciles) or pd.cut with your "
        "own break points, and pass the banded column; if the numbers really are labels, pass them as text or "
        "a pandas Categorical (or raise max_numeric_levels=)"
    )


def _with_cells(
    variables: Sequence[str],
    keep: Sequence[str],
    synthesize: Sequence[str],
    levels: dict[str, np.ndarray],
    codes: np.ndarray,
) -> CategoricalData:
    """The records ``codes`` of ``variables`` with their cells (:func:`distinct_cells`)."""
    cell_codes, record_cell, cell_counts = distinct_cells(codes, [len(levels[v]) for v in variables])
    return CategoricalData(
        variables=tuple(variables),
        keep=tuple(keep),
        synthesize=tuple(synthesize),
        levels=dict(levels),
        codes=np.ascontiguousarray(codes, dtype=np.int64),
        cell_codes=np.ascontiguousarray(cell_codes, dtype=np.int64),
        cell_counts=cell_counts.astype(np.int64),
        record_cell=record_cell.ravel().astype(np.int64),
    )


def prepare_categorical(
    frame: pd.DataFrame,
    synthesize: Sequence[str],
    keep: Sequence[str],
    *,
    max_levels: int = 500,
    missing: Literal["refuse", "level"] = "refuse",
    max_numeric_levels: int | None = MAX_NUMERIC_LEVELS,
) -> CategoricalData:
    """Check a table and code it for the categorical models, refusing bad input before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    synthesize
        Columns to replace by synthetic values (at least one).
    keep
        Columns released unchanged; they are modelled and condition the synthesis.
    max_levels
        Largest number of distinct values a column may have.
    missing
        ``"refuse"`` (default) stops at a missing value; ``"level"`` treats missing values as a level
        of their own (``"<missing>"``).
    max_numeric_levels
        Largest number of distinct values of a numeric column that does not look like codes (see
        :func:`check_numeric_levels`); None: no limit.

    Returns
    -------
    CategoricalData

    Raises
    ------
    CategoricalDataError
        No column to synthesize, a column both synthesized and kept or named twice, an unknown column,
        a column with too many levels or with non-integer numbers (continuous: bin it first), a numeric column
        with many distinct values that are not codes (:func:`check_numeric_levels`), missing
        values (unless ``missing="level"``), an empty table.
    """
    synthesize, keep = list(synthesize), list(keep)
    if not synthesize:
        raise CategoricalDataError("no column to synthesize: give at least one with synthesize=")
    both = sorted(set(synthesize) & set(keep))
    if both:
        raise CategoricalDataError(
            f"column(s) {', '.join(map(repr, both))} are both synthesized and kept: a column is either replaced "
            "by synthetic values (synthesize=) or released unchanged (keep=), not both"
        )
    for name, cols in (("synthesize=", synthesize), ("keep=", keep)):
        twice = sorted({c for c in cols if cols.count(c) > 1})
        if twice:
            raise CategoricalDataError(f"column(s) {', '.join(map(repr, twice))} named twice in {name}")
    unknown = [c for c in synthesize + keep if c not in frame.columns]
    if unknown:
        raise CategoricalDataError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; the table has "
            f"{', '.join(repr(str(c)) for c in frame.columns)}"
        )
    if len(frame) == 0:
        raise CategoricalDataError("the table has no rows: there are no records to model")
    if missing not in ("refuse", "level"):
        raise ValueError("missing must be 'refuse' or 'level'")
    variables = keep + synthesize
    levels: dict[str, np.ndarray] = {}
    codes = np.empty((len(frame), len(variables)), dtype=np.int64)
    for j, col in enumerate(variables):
        values = frame[col]
        is_missing = values.isna().to_numpy()
        if is_missing.any():
            if missing == "refuse":
                raise CategoricalDataError(
                    f"column {col!r} has {int(is_missing.sum())} missing value(s) at {name_rows(is_missing)}; "
                    "remove or impute them, or treat missing as a level of its own (missing=level)"
                )
        check_numeric_levels(col, values[~is_missing], max_numeric_levels)
        if is_missing.any():
            values = values.astype(object).where(~is_missing, MISSING_LEVEL)
        if pd.api.types.is_float_dtype(values.dtype):
            finite = values.to_numpy(dtype=float)
            fractional = finite != np.round(finite)
            if fractional.any():
                raise CategoricalDataError(
                    f"column {col!r} holds non-integer numbers at {name_rows(fractional)} ({values.nunique()} "
                    "distinct values): it looks continuous; the DPMPM models categorical data, so bin it first (for "
                    "example into quantile groups) and pass the binned column"
                )
        uniques = pd.unique(values)
        if len(uniques) > max_levels:
            kind = "numeric" if pd.api.types.is_numeric_dtype(values.dtype) else "categorical"
            raise CategoricalDataError(
                f"column {col!r} ({kind}) has {len(uniques)} distinct values, more than {max_levels}: "
                "bin it into fewer categories first (or raise max_levels= if it really is a label)"
            )
        try:
            ordered = np.sort(np.asarray(uniques))
        except TypeError:
            ordered = np.asarray(sorted(uniques, key=str), dtype=object)
        levels[col] = ordered
        codes[:, j] = pd.Index(ordered).get_indexer(values)
    return _with_cells(variables, keep, synthesize, levels, codes)
