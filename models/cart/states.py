"""Missing values, missing-value codes and spikes of numeric columns: the "state" synthesized before the value.

Agencies' files hold values missing by design (no job, no hours), declared missing-value codes (-8 "refused",
-9 "not asked") and spikes (an income of exactly 0). As R synthpop does with ``cont.na`` and ``semicont``, a
numeric column with any of these is synthesized in two steps:

1. its *state*, a categorical column with the levels ``"value"``, ``"missing"`` (when the column has missing
   values), ``"code <c>"`` for each declared missing-value code and ``"spike <s>"`` for each declared spike, is
   drawn first by a classification tree on the same predictors;
2. the number is drawn only for the records whose synthetic state is ``"value"``, by a regression tree fitted
   on the confidential records in that state (so a drawn value is never a code nor a spike, and never
   missing); the other states put their value back: NaN, the code or the spike itself.

As a predictor of the later columns, such a column enters as two columns: its number, with missing values
and missing-value codes replaced by a fill constant (the median of the column's values in the ``"value"``
state; any constant would do), and its state one-hot encoded, so that a tree can split on missingness and on
each code. Spikes keep their number (0 is a genuine income) and their state.

A categorical column needs none of this: its missing values are a level of their own
(:func:`bayessdc.models.cart.data.encode_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .rules import ColumnSchema

__all__ = ["STATE_MISSING", "STATE_VALUE", "NumericStates", "numeric_states", "state_column_name"]

#: The state of a record whose value is a number drawn by the column's regression tree.
STATE_VALUE = "value"
#: The state of a missing value.
STATE_MISSING = "missing"


def state_column_name(column: str) -> str:
    """The name of the state column of ``column`` in the trees and their summaries."""
    return f"{column} [state]"


@dataclass(frozen=True)
class NumericStates:
    """The states of one numeric column: ``"value"`` (code 0), then missing, codes and spikes.

    Parameters
    ----------
    column
        The numeric column.
    levels
        The state labels, ``"value"`` first.
    numbers
        Per state, the number it puts back in the column (NaN for ``"value"``, drawn later, and ``"missing"``).
    codes, spikes
        The declared missing-value codes and spikes of the column.
    fill
        The number standing for a missing value or a code in the predictor matrix.
    """

    column: str
    levels: tuple[str, ...]
    numbers: np.ndarray
    codes: tuple[float, ...]
    spikes: tuple[float, ...]
    fill: float

    @property
    def state_column(self) -> str:
        """The name of the state column."""
        return state_column_name(self.column)

    def state_of(self, values: np.ndarray) -> np.ndarray:
        """The state code of each value (0 for a number that is neither missing nor a code nor a spike)."""
        values = np.asarray(values, dtype=float)
        state = np.zeros(len(values), dtype=np.int64)
        for k, label in enumerate(self.levels):
            if label == STATE_MISSING:
                state[np.isnan(values)] = k
            elif k:
                state[values == self.numbers[k]] = k
        return state

    def numbers_of(self, states: np.ndarray) -> np.ndarray:
        """The column's values put back by the states (NaN where the state is ``"value"``: drawn next)."""
        return self.numbers[np.asarray(states, dtype=np.int64)].astype(float)

    def schema(self) -> ColumnSchema:
        """The encoding of the state column (categorical, no missing level)."""
        return ColumnSchema(self.state_column, True, np.asarray(self.levels, dtype=object))

    def describe(self) -> dict[str, Any]:
        """Public description: the states and how the column enters as a predictor (no figure of the data)."""
        return {
            "states": list(self.levels),
            "missing_value_codes": list(self.codes),
            "spikes": list(self.spikes),
            "state_tree": "classification tree on the column's predictors, drawn before the value",
            "value_tree": "regression tree fitted on the records in the 'value' state only, drawn for the "
            "records whose synthetic state is 'value'",
            "as_predictor": "its number (missing values and codes replaced by the median of the column's values) "
            "and its state one-hot",
        }


def _label(prefix: str, number: float) -> str:
    return f"{prefix} {int(number) if float(number).is_integer() else number}"


def numeric_states(
    codes: Mapping[str, np.ndarray],
    schema: Mapping[str, ColumnSchema],
    missing_codes: Mapping[str, Sequence[float]],
    spikes: Mapping[str, Sequence[float]],
) -> dict[str, NumericStates]:
    """The states of every numeric column with missing values, declared codes or declared spikes.

    Parameters
    ----------
    codes, schema
        The encoded columns and their encoding (:func:`bayessdc.models.cart.data.encode_columns`).
    missing_codes, spikes
        Column -> declared missing-value codes, and column -> declared spikes (checked beforehand by
        :func:`bayessdc.models.cart.data.validate_columns`).
    """
    out = {}
    for column, spec in schema.items():
        if spec.categorical:
            continue
        values = codes[column]
        column_codes = tuple(float(c) for c in missing_codes.get(column, ()))
        column_spikes = tuple(float(s) for s in spikes.get(column, ()))
        has_missing = bool(np.isnan(values).any())
        if not (has_missing or column_codes or column_spikes):
            continue
        labels = [STATE_VALUE] + ([STATE_MISSING] if has_missing else [])
        labels += [_label("code", c) for c in column_codes] + [_label("spike", s) for s in column_spikes]
        numbers = np.array([np.nan] * (1 + has_missing) + [*column_codes, *column_spikes], dtype=float)
        plain = values[~np.isnan(values) & ~np.isin(values, numbers)]
        fill = float(np.median(plain)) if len(plain) else 0.0
        out[column] = NumericStates(column, tuple(labels), numbers, column_codes, column_spikes, fill)
    return out
