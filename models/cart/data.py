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

__all__ = [
    "CartDataError",
    "check_rules_hold",
    "decode_categorical",
    "encode_columns",
    "encode_like",
    "is_numeric",
    "validate_columns",
]


class CartDataError(InputError):
    """Bad input found before fitting: columns, missing-value codes and spikes, rules."""


def validate_columns(
    data: pd.DataFrame,
    synthesize: Sequence[str],
    keep: Sequence[str],
    categorical: Sequence[str] = (),
    missing_codes: Mapping[str, Sequence[float]] | None = None,
    spikes: Mapping[str, Sequence[float]] | None = None,
) -> pd.DataFrame:
    """Check the columns of ``data`` before any fitting; return the released columns in the data's order.

    Missing values are accepted in every column (a level of their own in a categorical column, a state
    drawn before the value in a numeric one: :mod:`bayessdc.models.cart.states`).

    Parameters
    ----------
    data
        The confidential records.
    synthesize, keep
        The columns to synthesize (in order) and those kept as observed.
    categorical
        Numeric columns to treat as categorical.
    missing_codes, spikes
        Numeric column -> values that stand for a missing value (e.g. ``[-8, -9]``), and numeric column ->
        values that are spikes of its distribution (e.g. ``[0]``).

    Raises
    ------
    CartDataError
        Unknown or repeated columns, a column both kept and synthesized, a categorical column neither kept nor
        synthesized; a missing-value code or spike for a column that is unknown, not released or categorical,
        or that is not a value of its column, or a value declared twice.
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
    _check_declared_values(frame, categorical, missing_codes or {}, spikes or {})
    return frame


def is_numeric(series: pd.Series, categorical: Sequence[str] = ()) -> bool:
    """Whether a column is encoded as numbers (numeric, not boolean, not declared categorical)."""
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    return numeric and series.name not in categorical


def _check_declared_values(
    frame: pd.DataFrame,
    categorical: Sequence[str],
    missing_codes: Mapping[str, Sequence[float]],
    spikes: Mapping[str, Sequence[float]],
) -> None:
    """Every declared missing-value code and spike: a value of its released numeric column, declared once."""
    declared: dict[str, dict[float, str]] = {}
    for kind, given in (("missing-value code", missing_codes), ("spike", spikes)):
        if not isinstance(given, Mapping):
            raise CartDataError(f"the {kind}s map column names to lists of values, got {given!r}")
        for column, values in given.items():
            if column not in frame.columns:
                raise CartDataError(
                    f"{kind}s given for column {column!r}, which is neither kept nor synthesized "
                    f"(those columns: {', '.join(map(str, frame.columns))})"
                )
            if not is_numeric(frame[column], categorical):
                raise CartDataError(
                    f"{kind}s given for categorical column {column!r}: codes and spikes are for numeric columns "
                    "(a categorical column's missing values are a level of their own; a code is a level like any)"
                )
            values = [values] if np.isscalar(values) else list(values)
            observed = frame[column].to_numpy(dtype=float, na_value=np.nan)
            for value in values:
                if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
                    raise CartDataError(f"{kind} {value!r} of column {column!r} is not a number")
                if float(value) in declared.setdefault(column, {}):
                    first = declared[column][float(value)]
                    raise CartDataError(f"{kind} {value!r} of column {column!r} is already declared as a {first}")
                if not np.any(observed == float(value)):
                    raise CartDataError(
                        f"{kind} {value!r} is not a value of column {column!r} (no record holds it): "
                        "declare only values the data take"
                    )
                declared[column][float(value)] = kind


def _raise_not_numbers(err: RuleError, codes: np.ndarray, schema: ColumnSchema) -> None:
    """Re-raise ``err`` (a rule needing a numeric column that is categorical) naming the records whose values
    are not numbers; returns when every value is a number (a column declared categorical, or booleans)."""
    levels = schema.observed_levels
    text = [k for k, level in enumerate(levels) if pd.isna(pd.to_numeric(level, errors="coerce"))]
    rows = np.flatnonzero(np.isin(codes, text))
    if len(rows):
        shown = ", ".join(repr(schema.levels[k]) for k in text[:5]) + (", ..." if len(text) > 5 else "")
        raise RuleError(f"{err}: not a number ({shown}) at {describe_rows(rows)}; fix those values") from None


def encode_columns(
    frame: pd.DataFrame, categorical: Sequence[str] = ()
) -> tuple[dict[str, ColumnSchema], dict[str, np.ndarray]]:
    """The encoding of every column: numbers for numeric ones, integer codes for categorical ones.

    A column of non-numeric (or boolean) type, or one named in ``categorical``, is categorical: its codes index
    its sorted observed values, and its missing values (NaN, None, pd.NA) are a level of their own, the last
    one. A numeric column keeps its values (as floats, NaN where missing); its levels are its sorted distinct
    values that are not missing.
    """
    schema, codes = {}, {}
    for column in frame.columns:
        series = frame[column]
        if is_numeric(series, categorical):
            values = series.to_numpy(dtype=float, na_value=np.nan)
            schema[column] = ColumnSchema(column, False, np.unique(values[~np.isnan(values)]))
            codes[column] = values
        else:
            as_categorical = pd.Categorical(series)
            levels = np.asarray(as_categorical.categories, dtype=object)
            column_codes = as_categorical.codes.astype(np.int64)
            has_missing = bool((column_codes < 0).any())
            if has_missing:
                levels = np.append(levels, np.array([np.nan], dtype=object))
                column_codes[column_codes < 0] = len(levels) - 1
            schema[column] = ColumnSchema(column, True, levels, has_missing=has_missing)
            codes[column] = column_codes
    return schema, codes


def encode_like(series: pd.Series, spec: ColumnSchema) -> np.ndarray:
    """Encode ``series`` (released layout) with the fitted encoding ``spec``.

    Raises
    ------
    ValueError
        A categorical value the fitted data never take, or a missing value in a column that had none.
    """
    if not spec.categorical:
        return series.to_numpy(dtype=float, na_value=np.nan)
    values = np.asarray(series, dtype=object)
    column_codes = pd.Categorical(values, categories=spec.observed_levels).codes.astype(np.int64)
    missing = pd.isna(values)
    if spec.has_missing:
        column_codes[missing] = spec.missing_code
    if (column_codes < 0).any():
        raise ValueError(f"column {spec.name!r} holds values the fitted data never take")
    return column_codes


def decode_categorical(column_codes: np.ndarray, spec: ColumnSchema) -> pd.Categorical:
    """The categorical of codes ``column_codes`` of ``spec``: NaN where the code is the missing level."""
    column_codes = np.asarray(column_codes, dtype=np.int64)
    if spec.has_missing:
        column_codes = np.where(column_codes == spec.missing_code, -1, column_codes)
    return pd.Categorical.from_codes(column_codes, categories=spec.observed_levels)


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
