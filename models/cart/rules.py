"""Declared logical rules ("strict logical requirements", Rodriguez et al., Section 5) for synthesizers.

A rule is a statement about the values of one record that the confidential data satisfy and that the
synthetic data must satisfy too, for example "grade attended only for those enrolled" or "educational
attainment bounded by age". Two kinds of rule:

``if/then``
    ``{"name": ..., "if": {CONDITIONS}, "then": {CONDITIONS}}``: every record meeting all ``if`` conditions
    meets all ``then`` conditions (no ``if`` means every record).
``allowed``
    ``{"name": ..., "allowed": {"columns": [A, B], "combinations": [[a1, b1], [a2, b2], ...]}}``: the values
    of ``A, B`` in every record are one of the listed combinations.

A condition names one column and says which values it may take:

* a scalar (``"No"``, ``3``): equal to it;
* a list: one of its values;
* a mapping with any of ``in`` (list), ``not_in`` (list), ``min`` and ``max`` (inclusive bounds on a numeric
  column; a bound is a number or ``{"column": OTHER, "plus": K}`` meaning the value of the numeric column
  ``OTHER`` in the same record plus ``K``, as in "years of schooling <= age - 3").

Rules are read from JSON or YAML (:func:`load_rules`) or built as Python objects. In YAML quote words such as
``"No"`` and ``"Yes"``, which YAML 1.1 would otherwise read as booleans.

Rules are evaluated on *encoded* values: integer codes into the column's levels for a categorical column,
floats for a numeric one (see :class:`ColumnSchema`); arrays broadcast, so one call checks every record
against every candidate value at once.

Missing values: a condition on a missing value is false, whatever it says (``in``, ``not_in``, ``min``,
``max``, or a bound read from a column whose value is missing), as a comparison with NULL in SQL. So a
missing value in an ``if`` column means the rule does not apply to that record, and a missing value in a
``then`` or ``allowed`` column violates the rule: ``{"if": {"employed": "yes"}, "then": {"hours": {"min": 1}}}``
requires hours to be reported for the employed. A rule cannot name the missing value itself (no value of a
rule matches it). Declared missing-value codes and spikes of a numeric column are numbers like any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..validation import describe_rows

__all__ = [
    "AllowedCombinations",
    "ColumnBound",
    "ColumnSchema",
    "Condition",
    "IfThen",
    "Rule",
    "RuleError",
    "describe_rows",
    "frame_of_rules",
    "load_rules",
    "parse_rules",
    "rule_violations",
]

#: ``env(column) -> array`` of encoded values (codes or floats), broadcastable across the columns asked for.
Environment = Callable[[str], np.ndarray]


class RuleError(InputError):
    """A rule that cannot be read, names an unknown column or value, or is violated by the data.

    ``categorical_column`` names the column when the rule needs it numeric and it is categorical (so that the
    check against the data can name the records whose values are not numbers).
    """

    categorical_column: str | None = None


def _needs_numeric(message: str, column: str) -> RuleError:
    err = RuleError(message)
    err.categorical_column = column
    return err


@dataclass(frozen=True)
class ColumnSchema:
    """How a column is encoded: categorical (integer codes into ``levels``) or numeric (float values).

    Parameters
    ----------
    name
        The column.
    categorical
        True for a categorical column.
    levels
        The distinct observed values (categorical: the value of code ``k`` is ``levels[k]``; numeric: the
        distinct values that are not missing).
    has_missing
        Categorical only: missing values are a level of their own, the last (``levels[-1]`` is NaN).
    fill
        Numeric only: the number standing for a missing value or a missing-value code in the trees' predictor
        matrix (None: the column has neither).
    filled
        Numeric only: the declared missing-value codes, replaced by ``fill`` as predictors like NaN.
    """

    name: str
    categorical: bool
    levels: np.ndarray
    has_missing: bool = False
    fill: float | None = None
    filled: tuple[float, ...] = ()

    @property
    def missing_code(self) -> int | None:
        """Categorical: the code of the missing level (None without one)."""
        return len(self.levels) - 1 if self.has_missing else None

    @property
    def observed_levels(self) -> np.ndarray:
        """The levels that are values (without the missing level)."""
        return self.levels[:-1] if self.has_missing else self.levels

    def predictor(self, values: np.ndarray) -> np.ndarray:
        """Numeric: the values as a predictor, missing values and missing-value codes replaced by ``fill``."""
        if self.fill is None:
            return values
        values = np.asarray(values, dtype=float)
        return np.where(np.isnan(values) | np.isin(values, self.filled), self.fill, values)

    def codes_of(self, values: Sequence[Any], rule: str) -> np.ndarray:
        """Codes of ``values`` (a :class:`RuleError` naming ``rule`` for a value the column never takes)."""
        levels = self.observed_levels
        known = {_plain(v): k for k, v in enumerate(levels)}  # the missing level is no value a rule can name
        codes = []
        for value in values:
            if _plain(value) not in known:
                shown = ", ".join(repr(_plain(v)) for v in levels[:20])
                more = f", ... ({len(levels)} values)" if len(levels) > 20 else ""
                raise RuleError(
                    f"rule {rule!r}: {value!r} is not a value of column {self.name!r} (its values: {shown}{more})"
                )
            codes.append(known[_plain(value)])
        return np.asarray(codes, dtype=np.int64)


def _plain(value: Any) -> Any:
    """A hashable plain-Python version of a scalar, so that 3, 3.0 and np.int64(3) compare equal."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class ColumnBound:
    """A bound equal to the value of another numeric column of the same record plus ``plus``."""

    column: str
    plus: float = 0.0


Bound = float | ColumnBound | None


@dataclass(frozen=True)
class Condition:
    """Which values one column may take: ``in``/``not_in`` value lists and inclusive ``min``/``max`` bounds."""

    column: str
    values_in: tuple[Any, ...] | None = None
    values_not_in: tuple[Any, ...] | None = None
    minimum: Bound = None
    maximum: Bound = None

    @property
    def columns(self) -> set[str]:
        """Every column the condition reads (its own and those its bounds refer to)."""
        out = {self.column}
        for bound in (self.minimum, self.maximum):
            if isinstance(bound, ColumnBound):
                out.add(bound.column)
        return out

    def validate(self, schema: Mapping[str, ColumnSchema], rule: str) -> None:
        """Check the columns and values against ``schema`` (raises :class:`RuleError`)."""
        for column in self.columns:
            if column not in schema:
                raise RuleError(f"rule {rule!r} names column {column!r}, which is neither kept nor synthesized")
        own = schema[self.column]
        for values in (self.values_in, self.values_not_in):
            if values is not None:
                if own.categorical:
                    own.codes_of(values, rule)
                elif not all(isinstance(_plain(v), int | float) for v in values):
                    raise RuleError(f"rule {rule!r}: column {self.column!r} is numeric but the rule lists {values!r}")
        for bound in (self.minimum, self.maximum):
            if bound is None:
                continue
            if own.categorical:
                raise _needs_numeric(
                    f"rule {rule!r}: min/max bounds need a numeric column, {self.column!r} is categorical", self.column
                )
            if isinstance(bound, ColumnBound) and schema[bound.column].categorical:
                raise _needs_numeric(
                    f"rule {rule!r}: the bound refers to categorical column {bound.column!r}", bound.column
                )

    def holds(self, env: Environment, schema: Mapping[str, ColumnSchema], rule: str = "") -> np.ndarray:
        """Boolean array: where the condition holds (broadcast over the arrays ``env`` returns)."""
        own = schema[self.column]
        values = env(self.column)
        result: np.ndarray | bool = True
        if own.categorical:
            if self.values_in is not None:
                mask = np.zeros(len(own.levels), dtype=bool)
                mask[own.codes_of(self.values_in, rule)] = True
                result = result & mask[values]
            if self.values_not_in is not None:
                mask = np.ones(len(own.levels), dtype=bool)
                mask[own.codes_of(self.values_not_in, rule)] = False
                if own.has_missing:
                    mask[own.missing_code] = False  # a condition on a missing value is false
                result = result & mask[values]
            return np.asarray(result)
        if self.values_in is not None:
            result = result & np.isin(values, np.asarray(self.values_in, dtype=float))
        if self.values_not_in is not None:
            present = ~np.isnan(np.asarray(values, dtype=float))  # a condition on a missing value is false
            result = result & ~np.isin(values, np.asarray(self.values_not_in, dtype=float)) & present
        if self.minimum is not None:
            result = result & (values >= _bound_value(self.minimum, env))
        if self.maximum is not None:
            result = result & (values <= _bound_value(self.maximum, env))
        return np.asarray(result)

    def to_dict(self) -> Any:
        """The condition in the rule-file form."""
        out: dict[str, Any] = {}
        if self.values_in is not None:
            out["in"] = list(self.values_in)
        if self.values_not_in is not None:
            out["not_in"] = list(self.values_not_in)
        for key, bound in (("min", self.minimum), ("max", self.maximum)):
            if isinstance(bound, ColumnBound):
                out[key] = {"column": bound.column, "plus": bound.plus}
            elif bound is not None:
                out[key] = bound
        return out


def _bound_value(bound: float | ColumnBound, env: Environment) -> Any:
    if isinstance(bound, ColumnBound):
        return env(bound.column) + bound.plus
    return bound


class Rule:
    """Base of the rule kinds: a name, the columns read, validation and evaluation."""

    name: str

    @property
    def columns(self) -> set[str]:
        """Every column the rule reads."""
        raise NotImplementedError

    def validate(self, schema: Mapping[str, ColumnSchema]) -> None:
        """Check columns and values against ``schema`` (raises :class:`RuleError`)."""
        raise NotImplementedError

    def holds(self, env: Environment, schema: Mapping[str, ColumnSchema]) -> np.ndarray:
        """Boolean array: where the rule is satisfied."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The rule in the rule-file form."""
        raise NotImplementedError


@dataclass(frozen=True)
class IfThen(Rule):
    """Records meeting every ``when`` condition meet every ``then`` condition."""

    name: str
    then: tuple[Condition, ...]
    when: tuple[Condition, ...] = ()

    @property
    def columns(self) -> set[str]:
        return set().union(*(c.columns for c in (*self.when, *self.then)))

    def validate(self, schema: Mapping[str, ColumnSchema]) -> None:
        for condition in (*self.when, *self.then):
            condition.validate(schema, self.name)

    def holds(self, env: Environment, schema: Mapping[str, ColumnSchema]) -> np.ndarray:
        applies: np.ndarray | bool = True
        for condition in self.when:
            applies = applies & condition.holds(env, schema, self.name)
        met: np.ndarray | bool = True
        for condition in self.then:
            met = met & condition.holds(env, schema, self.name)
        return np.asarray(~np.asarray(applies) | met)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.when:
            out["if"] = {c.column: c.to_dict() for c in self.when}
        out["then"] = {c.column: c.to_dict() for c in self.then}
        return out


@dataclass(frozen=True)
class AllowedCombinations(Rule):
    """The values of ``columns`` in every record are one of ``combinations``."""

    name: str
    columns_: tuple[str, ...]
    combinations: tuple[tuple[Any, ...], ...] = field(default=())

    @property
    def columns(self) -> set[str]:
        return set(self.columns_)

    def validate(self, schema: Mapping[str, ColumnSchema]) -> None:
        for column in self.columns_:
            if column not in schema:
                raise RuleError(f"rule {self.name!r} names column {column!r}, which is neither kept nor synthesized")
        for combination in self.combinations:
            if len(combination) != len(self.columns_):
                raise RuleError(
                    f"rule {self.name!r}: combination {list(combination)!r} has {len(combination)} values for "
                    f"{len(self.columns_)} columns"
                )
            for column, value in zip(self.columns_, combination, strict=True):
                Condition(column, values_in=(value,)).validate(schema, self.name)

    def holds(self, env: Environment, schema: Mapping[str, ColumnSchema]) -> np.ndarray:
        allowed: np.ndarray | bool = False
        for combination in self.combinations:
            match: np.ndarray | bool = True
            for column, value in zip(self.columns_, combination, strict=True):
                match = match & Condition(column, values_in=(value,)).holds(env, schema, self.name)
            allowed = allowed | match
        return np.asarray(allowed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "allowed": {"columns": list(self.columns_), "combinations": [list(c) for c in self.combinations]},
        }


# -- reading -------------------------------------------------------------------------------------------


def _parse_bound(value: Any, rule: str) -> Bound:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if set(value) - {"column", "plus"} or "column" not in value:
            raise RuleError(f"rule {rule!r}: a column bound is {{'column': NAME, 'plus': NUMBER}}, got {value!r}")
        return ColumnBound(str(value["column"]), float(value.get("plus", 0.0)))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RuleError(f"rule {rule!r}: a bound must be a number or {{'column': ..., 'plus': ...}}, got {value!r}")
    return float(value)


def _parse_condition(column: str, spec: Any, rule: str) -> Condition:
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"in", "not_in", "min", "max"}
        if unknown:
            raise RuleError(
                f"rule {rule!r}: unknown keys {sorted(unknown)} for column {column!r} (use in, not_in, min, max)"
            )
        listed = {}
        for key in ("in", "not_in"):
            if key in spec:
                value = spec[key]
                listed[key] = tuple(value) if isinstance(value, list | tuple) else (value,)
        return Condition(
            column,
            values_in=listed.get("in"),
            values_not_in=listed.get("not_in"),
            minimum=_parse_bound(spec.get("min"), rule),
            maximum=_parse_bound(spec.get("max"), rule),
        )
    if isinstance(spec, list | tuple):
        return Condition(column, values_in=tuple(spec))
    return Condition(column, values_in=(spec,))


def _parse_conditions(spec: Any, rule: str, part: str) -> tuple[Condition, ...]:
    if not isinstance(spec, Mapping) or not spec:
        raise RuleError(f"rule {rule!r}: {part!r} must map column names to conditions, got {spec!r}")
    return tuple(_parse_condition(str(column), value, rule) for column, value in spec.items())


def parse_rules(spec: Any) -> list[Rule]:
    """Rules from their plain form: a list of rule mappings, or ``{"rules": [...]}``.

    Raises
    ------
    RuleError
        For anything that is not a rule (names of the offending rule and key in the message).
    """
    if isinstance(spec, Mapping):
        spec = spec.get("rules")
    if not isinstance(spec, list):
        raise RuleError("a rules file holds a list of rules, or a mapping with the key 'rules'")
    rules: list[Rule] = []
    for k, item in enumerate(spec, start=1):
        if isinstance(item, Rule):
            rules.append(item)
            continue
        if not isinstance(item, Mapping):
            raise RuleError(f"rule {k} is not a mapping: {item!r}")
        name = str(item.get("name", f"rule {k}"))
        unknown = set(item) - {"name", "if", "then", "allowed"}
        if unknown:
            raise RuleError(f"rule {name!r}: unknown keys {sorted(unknown)} (use name, if, then or allowed)")
        if "allowed" in item:
            allowed = item["allowed"]
            if "then" in item or "if" in item or not isinstance(allowed, Mapping):
                raise RuleError(f"rule {name!r}: 'allowed' takes {{columns, combinations}} and no if/then")
            columns = allowed.get("columns")
            combinations = allowed.get("combinations")
            if not isinstance(columns, list) or not isinstance(combinations, list) or not combinations:
                raise RuleError(f"rule {name!r}: 'allowed' needs a list of columns and a list of combinations")
            rules.append(
                AllowedCombinations(
                    name,
                    tuple(str(c) for c in columns),
                    tuple(tuple(c) if isinstance(c, list | tuple) else (c,) for c in combinations),
                )
            )
        elif "then" in item:
            when = _parse_conditions(item["if"], name, "if") if "if" in item else ()
            rules.append(IfThen(name, _parse_conditions(item["then"], name, "then"), when))
        else:
            raise RuleError(f"rule {name!r} has neither 'then' nor 'allowed'")
    names = [r.name for r in rules]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise RuleError(f"rule names must be unique: {duplicated}")
    return rules


def load_rules(path: str | Path) -> list[Rule]:
    """Read rules from a JSON (``.json``) or YAML (``.yaml``, ``.yml``) file; see the module docstring."""
    path = Path(path)
    if not path.exists():
        raise RuleError(f"rules file {path} does not exist")
    text = path.read_text()
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            spec = yaml.safe_load(text)
        else:
            spec = json.loads(text)
    except Exception as err:  # noqa: BLE001 - any parser failure is the user's file
        raise RuleError(f"cannot read rules file {path}: {err}") from err
    return parse_rules(spec)


def rule_violations(
    rules: Sequence[Rule], codes: Mapping[str, np.ndarray], schema: Mapping[str, ColumnSchema]
) -> dict[str, np.ndarray]:
    """Positions (0-based) of the records violating each rule; rules without violations are left out.

    Parameters
    ----------
    rules
        Validated rules.
    codes
        Encoded values of every column the rules read, one array per column over the same records.
    schema
        The encoding of those columns.
    """
    out = {}
    for rule in rules:
        ok = np.broadcast_to(rule.holds(codes.__getitem__, schema), next(iter(codes.values())).shape)
        if not ok.all():
            out[rule.name] = np.flatnonzero(~ok)
    return out


def frame_of_rules(rules: Sequence[Rule]) -> pd.DataFrame:
    """One line per rule (name, kind, columns): a readable summary for notebooks and reports."""
    return pd.DataFrame(
        [
            {
                "rule": r.name,
                "kind": "allowed combinations" if isinstance(r, AllowedCombinations) else "if/then",
                "columns": ", ".join(sorted(r.columns)),
            }
            for r in rules
        ]
    )
