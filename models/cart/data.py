"""The input of the CART synthesizer: checks before any fitting, and the encoding of the columns.

Every check names the column, the rows and the constraint; the rules are checked against the confidential
data too (a rule the data violate cannot be enforced on the synthetic data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..validation import describe_rows
from .rules import ColumnSchema, Rule, RuleError, rule_violations

__all__ = ["CartDataError", "check_rules_hold", "encode_columns", "validate_columns"]


class CartDataError(InputError):
    """Bad input found before fitting: columns, missing values, rules."""


def validate_columns(
    data: pd.DataFrame, synthesize: Sequence[str], keep: Sequence[str], categorical: Sequence[str] = ()
) -> pd.DataFrame:
    """Check the columns of ``data`` before any fitting; return the released columns in the data's order.

    Parameters
    ----------
    data
        The confidential records.
    synthesize, keep
        The columns to synthesize (in order) and those kept as observed.
    categorical
        Numeric columns to treat as categorical.

    Raises
    ------
    CartDataError
        Unknown or repeated columns, a column both kept and synthesized, a categorical column neither kept nor
        synthesized, or missing values (the rows are named).
    """
    if not isinstance(data, pd.DataFrame):
        raise CartDataError("the data must be a pandas DataFrame")
    if not synthesize:
        raise CartDataError("name at least one column to synthesize")
    if len(data) == 0:
        raise CartDataError("the data have no rows")
    for role, columns in (("synthesize", synthesize), ("keep", keep)):
        unknown = [c for c in columns if c not in data.columns]
        if unknown:
            have = ", ".join(map(str, data.columns))
            raise CartDataError(f"unknown column(s) to {role}: {', '.join(unknown)} (the data have: {have})")
        repeated = sorted({c for c in columns if list(columns).count(c) > 1})
        if repeated:
            raise CartDataError(f"column(s) listed twice to {role}: {', '.join(repeated)}")
    both = [c for c in synthesize if c in keep]
    if both:
        raise CartDataError(f"column(s) both synthesized and kept: {', '.join(both)}; a column is one or the other")
    not_used = [c for c in categorical if c not in synthesize and c not in keep]
    if not_used:
        raise CartDataError(f"categorical column(s) neither kept nor synthesized: {', '.join(not_used)}")
    used = [c for c in data.columns if c in keep or c in synthesize]
    frame = data[used].reset_index(drop=True)
    for column in used:
        missing = np.flatnonzero(frame[column].isna().to_numpy())
        if len(missing):
            raise CartDataError(
                f"column {column!r} has missing values at {describe_rows(missing)}: every kept or synthesized "
                "column is a predictor of the trees; code missing values as an explicit category "
                "(e.g. 'not reported') or drop those rows"
            )
    return frame


def _raise_not_numbers(err: RuleError, codes: np.ndarray, schema: ColumnSchema) -> None:
    """Re-raise ``err`` (a rule needing a numeric column that is categorical) naming the records whose values
    are not numbers; returns when every value is a number (a column declared categorical, or booleans)."""
    text = [k for k, level in enumerate(schema.levels) if pd.isna(pd.to_numeric(level, errors="coerce"))]
    rows = np.flatnonzero(np.isin(codes, text))
    if len(rows):
        shown = ", ".join(repr(schema.levels[k]) for k in text[:5]) + (", ..." if len(text) > 5 else "")
        raise RuleError(f"{err}: not a number ({shown}) at {describe_rows(rows)}; fix those values") from None


def encode_columns(
    frame: pd.DataFrame, categorical: Sequence[str] = ()
) -> tuple[dict[str, ColumnSchema], dict[str, np.ndarray]]:
    """The encoding of every column: numbers for numeric ones, integer codes for categorical ones.

    A column of non-numeric (or boolean) type, or one named in ``categorical``, is categorical: its codes index
    its sorted observed values. A numeric column keeps its values (as floats); its levels are its sorted distinct
    values.
    """
    schema, codes = {}, {}
    for column in frame.columns:
        series = frame[column]
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
        if numeric and column not in categorical:
            values = series.to_numpy(dtype=float)
            schema[column] = ColumnSchema(column, False, np.unique(series.to_numpy()))
            codes[column] = values
        else:
            as_categorical = pd.Categorical(series)
            schema[column] = ColumnSchema(column, True, np.asarray(as_categorical.categories, dtype=object))
            codes[column] = as_categorical.codes.astype(np.int64)
    return schema, codes


def check_rules_hold(
    rules: Sequence[Rule], codes: Mapping[str, np.ndarray], schema: Mapping[str, ColumnSchema]
) -> None:
    """Validate ``rules`` against the columns and check that the confidential data satisfy them.

    Raises
    ------
    RuleError
        A rule naming an unknown column or value, or bounding a column that holds text (its rows are named).
    CartDataError
        A rule the data violate (the first such rule and its rows are named).
    """
    for rule in rules:
        try:
            rule.validate(schema)
        except RuleError as err:
            column = err.categorical_column
            if column is None or column not in codes:
                raise
            _raise_not_numbers(err, codes[column], schema[column])
            raise
    violated = rule_violations(rules, codes, schema)
    if violated:
        name, rows = next(iter(violated.items()))
        others = f" (and {len(violated) - 1} other rule(s))" if len(violated) > 1 else ""
        raise CartDataError(
            f"rule {name!r} is violated by the original data at {describe_rows(rows)}{others}: fix the data or the rule"
        )
