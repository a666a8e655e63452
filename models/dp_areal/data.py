"""The DP-areal model's input: the label counts ``c_i^(b)`` of every pattern and their sufficient statistics.

A *pattern* ``b`` is a combination of the kept (non-geographic) variables; ``c_i^(b)`` counts the records of
pattern ``b`` with label ``i`` (the county), zeros included (Section 2.2). In eq. (8) the design ``X^(b)``
depends on the pattern only, so given the cluster parameters the counts of one pattern are independent and
identically distributed over labels: the marginalised likelihood depends on the data only through ``n_{b,c}``,
the number of labels with count ``c`` in pattern ``b`` (the *distinct pairs*).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..cart.rules import Rule
from ..categorical import MAX_NUMERIC_LEVELS, CategoricalData, CategoricalDataError, prepare_categorical
from ..structural_zeros import allowed_records, check_structural_zeros

__all__ = ["MAX_CELLS", "ArealData", "possible_cells", "prepare_areal"]

#: Largest number of label x pattern cells accepted by default (see :func:`prepare_areal`).
MAX_CELLS = 300_000


@dataclass(frozen=True)
class ArealData:
    """Records coded for the DP-areal model: the label counts of every pattern and their sufficient statistics.

    Attributes
    ----------
    records
        The coded records (:class:`bayessdc.models.categorical.CategoricalData`, one synthesized column).
    label
        The synthesized column (for example the county).
    pattern_of_record
        Pattern index ``b`` of every record.
    pattern_codes
        ``(B, p)`` level codes of the kept variables of every pattern.
    counts
        ``(B, G)`` counts ``c_i^(b)``, zeros included (eq. 7).
    design
        ``(B, R)`` one-hot design ``X^(b)`` (eq. 8).
    terms
        Names of the ``R`` design columns (``variable=level``).
    distinct_pattern, distinct_count, distinct_weight
        The distinct ``(b, c)`` pairs and ``n_{b,c}``, how many labels have count ``c`` in pattern ``b``.
    cell_distinct
        ``(B, G)`` index of every cell's distinct pair.
    possible
        ``(B, G)`` False at the cells the structural zeros make impossible: their count is fixed at zero, not
        modelled (left out of ``distinct_weight``, so of the likelihood), and no record is ever given that
        label. With structural zeros, this *is* the truncated model: the counts of the cells are independent
        Poisson given the parameters, so conditioning on the impossible cells being empty removes their factors.
    structural_zeros
        The rules that define ``possible``.
    """

    records: CategoricalData
    label: str
    pattern_of_record: np.ndarray
    pattern_codes: np.ndarray
    counts: np.ndarray
    design: np.ndarray
    terms: tuple[str, ...]
    distinct_pattern: np.ndarray
    distinct_count: np.ndarray
    distinct_weight: np.ndarray
    cell_distinct: np.ndarray
    possible: np.ndarray | None = None
    structural_zeros: tuple[Rule, ...] = ()

    @property
    def n_patterns(self) -> int:
        """Number of patterns ``B``."""
        return int(self.counts.shape[0])

    @property
    def n_labels(self) -> int:
        """Number of labels ``G`` (counties)."""
        return int(self.counts.shape[1])

    @property
    def n_distinct(self) -> int:
        """Number of distinct ``(pattern, count)`` pairs: the size of the likelihood."""
        return int(self.distinct_count.shape[0])

    @property
    def pattern_labels(self) -> list[str]:
        """Readable name of every pattern (``a=1, b=2``)."""
        rec = self.records
        return [
            ", ".join(f"{v}={rec.levels[v][code]}" for v, code in zip(rec.keep, row, strict=True))
            for row in self.pattern_codes
        ]

    @property
    def label_levels(self) -> np.ndarray:
        """The labels (counties), in code order."""
        return self.records.levels[self.label]


def possible_cells(records: CategoricalData, pattern_codes: np.ndarray, rules: Sequence[Rule]) -> np.ndarray:
    """``(B, G)``: whether label ``i`` is possible for pattern ``b`` under the structural zeros ``rules``."""
    label = records.synthesize_index[0]
    n_labels = len(records.levels[records.variables[label]])
    grid = np.zeros((len(pattern_codes), n_labels, len(records.variables)), dtype=np.int64)
    grid[:, :, records.keep_index] = pattern_codes[:, None, :]
    grid[:, :, label] = np.arange(n_labels)[None, :]
    return allowed_records(rules, records, grid)


def _areal_from_records(records: CategoricalData, rules: Sequence[Rule] = ()) -> ArealData:
    label = records.synthesize[0]
    keep_codes = records.codes[:, records.keep_index]
    pattern_codes, pattern_of_record = np.unique(keep_codes, axis=0, return_inverse=True)
    pattern_of_record = pattern_of_record.ravel().astype(np.int64)
    n_labels = len(records.levels[label])
    counts = np.zeros((len(pattern_codes), n_labels), dtype=np.int64)
    np.add.at(counts, (pattern_of_record, records.codes[:, records.synthesize_index[0]]), 1)
    possible = possible_cells(records, pattern_codes, rules)
    blocks, terms = [], []
    for j, v in enumerate(records.keep):
        levels = records.levels[v]
        blocks.append(np.eye(len(levels))[pattern_codes[:, j]])
        terms += [f"{v}={x}" for x in levels]
    design = np.hstack(blocks) if blocks else np.zeros((len(pattern_codes), 0))
    pairs = np.column_stack([np.repeat(np.arange(len(pattern_codes)), n_labels), counts.ravel()])
    distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
    # An impossible cell (a structural zero, count 0) keeps the index of its (pattern, 0) pair, which the
    # synthesis uses, but is left out of that pair's weight: its count is fixed, not Poisson.
    weight = np.bincount(inverse.ravel(), weights=possible.ravel(), minlength=len(distinct))
    return ArealData(
        records=records,
        label=label,
        pattern_of_record=pattern_of_record,
        pattern_codes=pattern_codes.astype(np.int64),
        counts=counts,
        design=design,
        terms=tuple(terms),
        distinct_pattern=distinct[:, 0].astype(np.int64),
        distinct_count=distinct[:, 1].astype(np.int64),
        distinct_weight=weight.astype(np.int64),
        cell_distinct=inverse.reshape(counts.shape).astype(np.int64),
        possible=possible,
        structural_zeros=tuple(rules),
    )


def prepare_areal(
    frame: pd.DataFrame,
    synthesize: str | Sequence[str],
    keep: Sequence[str],
    *,
    max_levels: int = 500,
    max_cells: int = MAX_CELLS,
    missing: str = "refuse",
    notices: list[str] | None = None,
    max_numeric_levels: int | None = MAX_NUMERIC_LEVELS,
    structural_zeros: Sequence[Rule] = (),
) -> ArealData:
    """Check a table and code it for the DP-areal model, refusing bad input before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    synthesize
        The label column to synthesize (one column: the model is for the counts of one label).
    keep
        Kept columns; their combinations are the patterns ``b``.
    max_levels
        Largest number of distinct values of a column.
    max_cells
        Largest number of label x pattern cells: beyond it the counts become too sparse for the areal
        model to add anything and the synthesis arrays too large; the DPMPM is the model for that case.
    missing
        ``"refuse"`` or ``"level"`` (missing values as a level of their own).
    notices
        If given, notices about the input (unused categories dropped) are appended to it.
    max_numeric_levels
        See :func:`bayessdc.models.categorical.check_numeric_levels`.
    structural_zeros
        Rules (:mod:`bayessdc.models.structural_zeros`): the (pattern, label) cells they make impossible are
        left out of the likelihood (``possible``) and never drawn.

    Returns
    -------
    ArealData

    Raises
    ------
    bayessdc.models.categorical.CategoricalDataError
        Everything :func:`bayessdc.models.categorical.prepare_categorical` refuses, plus: more than one or no
        synthesized column, no kept column, too many cells; a structural zero the records violate.
    bayessdc.models.cart.rules.RuleError
        A structural zero naming an unknown column or level (the rule is named).
    """
    synthesize = [synthesize] if isinstance(synthesize, str) else list(synthesize)
    if len(synthesize) != 1:
        raise CategoricalDataError(
            f"the DP-areal model synthesizes one label column, got {len(synthesize)} ({', '.join(synthesize)}): "
            "combine several columns into one label first, or use the DPMPM, which synthesizes several at once"
        )
    if not list(keep):
        raise CategoricalDataError("the DP-areal model needs at least one kept column (keep=) to form patterns")
    notices = notices if notices is not None else []
    for col in [*synthesize, *keep]:
        if col in frame.columns and isinstance(frame[col].dtype, pd.CategoricalDtype):
            unused = [c for c in frame[col].cat.categories if c not in set(frame[col].dropna().unique())]
            if unused:
                notices.append(
                    f"notice: column {col!r} declares {len(unused)} categor{'y' if len(unused) == 1 else 'ies'} "
                    f"with no record ({', '.join(map(str, unused[:5]))}{' ...' if len(unused) > 5 else ''}): "
                    "dropped, a label or pattern with zero records everywhere carries no information"
                )
    records = prepare_categorical(
        frame,
        synthesize,
        keep,
        max_levels=max_levels,
        missing=missing,  # type: ignore[arg-type]
        max_numeric_levels=max_numeric_levels,
    )
    rules = check_structural_zeros(list(structural_zeros), records)
    n_patterns = len(np.unique(records.codes[:, records.keep_index], axis=0))
    n_labels = len(records.levels[synthesize[0]])
    if n_patterns * n_labels > max_cells:
        raise CategoricalDataError(
            f"{n_patterns:,} patterns of {', '.join(keep)} x {n_labels:,} labels of {synthesize[0]!r} = "
            f"{n_patterns * n_labels:,} cells, more than {max_cells:,}: the areal model holds a rate for every "
            "cell and synthesis draws them all for every dataset; with this many cells the counts are almost all "
            "zero and the model adds little. Use the DPMPM (bayessdc dpmpm), whose cost grows with the occupied "
            "cells only, or coarsen the kept columns (or raise max_cells=)"
        )
    return _areal_from_records(records, rules)
