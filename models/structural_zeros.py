"""Structural zeros of categorical records: combinations of levels that cannot occur, declared as rules.

A structural zero is declared in the rules format of :mod:`bayessdc.models.cart.rules` (one format for every
synthesizer): an ``if/then`` rule whose conditions test categorical equality or membership, for example
``{"name": "no married children", "if": {"age": "0-15"}, "then": {"marital": {"not_in": ["married"]}}}``, or
an ``allowed`` rule listing the combinations that may occur. Every record violating a rule is impossible.
The ``min``/``max`` bounds of the format need numeric columns and are refused here: every column of a
categorical synthesizer is categorical.

This module is generic over :class:`bayessdc.models.categorical.CategoricalData`: it validates the rules
against the coded levels (a rule naming an unknown column or level is refused naming the rule), checks that
the confidential records satisfy them (refused naming the rule and the rows), and evaluates them on coded
records or on a grid of (pattern, label) cells. How a model honours them is the model's affair: the DPMPM
redraws impossible synthetic records (exact rejection, :class:`bayessdc.models.dpmpm.DPMPMSynthesizer`), the
DP-areal model leaves impossible (pattern, label) cells out of its likelihood and never draws them
(:func:`bayessdc.models.dp_areal.data.prepare_areal`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .cart.rules import ColumnSchema, Rule, RuleError, load_rules, parse_rules, rule_violations
from .categorical import CategoricalData, CategoricalDataError
from .validation import describe_rows

__all__ = [
    "StructuralZeroSpec",
    "allowed_records",
    "categorical_schema",
    "check_structural_zeros",
    "read_structural_zeros",
    "structural_zeros_dict",
]

#: Rules as objects or their plain form, ``{"rules": [...]}``, or the path of a JSON/YAML rules file.
StructuralZeroSpec = Sequence[Rule | Mapping[str, Any]] | Mapping[str, Any] | str | os.PathLike[str] | None


def read_structural_zeros(spec: StructuralZeroSpec) -> list[Rule]:
    """The rules of ``spec`` (parsed only: see :func:`check_structural_zeros` for the check against the data).

    Parameters
    ----------
    spec
        Rule objects or their plain form (:func:`bayessdc.models.cart.rules.parse_rules`), a mapping
        ``{"rules": [...]}``, the path of a JSON or YAML rules file, or None (no rule).

    Raises
    ------
    bayessdc.models.cart.rules.RuleError
        A rule that cannot be read (its name in the message).
    """
    if spec is None:
        return []
    if isinstance(spec, str | os.PathLike):
        return load_rules(spec)
    return parse_rules(spec if isinstance(spec, Mapping) else list(spec))


def categorical_schema(data: CategoricalData) -> dict[str, ColumnSchema]:
    """Every modelled column as a categorical :class:`~bayessdc.models.cart.rules.ColumnSchema` (its levels)."""
    return {v: ColumnSchema(v, True, np.asarray(data.levels[v])) for v in data.variables}


def check_structural_zeros(rules: Sequence[Rule], data: CategoricalData) -> list[Rule]:
    """Validate ``rules`` against the coded columns and check that every confidential record satisfies them.

    Parameters
    ----------
    rules
        Parsed rules (:func:`read_structural_zeros`).
    data
        The coded records.

    Returns
    -------
    list of Rule
        The rules, in order.

    Raises
    ------
    bayessdc.models.cart.rules.RuleError
        A rule naming a column neither kept nor synthesized, a level the column does not have, or bounding a
        column with ``min``/``max`` (the rule is named).
    bayessdc.models.categorical.CategoricalDataError
        A rule the confidential records violate (the rule and its rows are named).
    """
    schema = categorical_schema(data)
    for rule in rules:
        try:
            rule.validate(schema)
        except RuleError as err:
            if err.categorical_column is not None:
                raise RuleError(
                    f"{err}: a structural zero is a combination of levels (if/then with values, or allowed "
                    "combinations); band a numeric column first and name its bands"
                ) from err
            raise
    violated = rule_violations(rules, _columns(data.codes, data), schema) if rules else {}
    if violated:
        name, rows = next(iter(violated.items()))
        others = f" (and {len(violated) - 1} other rule(s))" if len(violated) > 1 else ""
        raise CategoricalDataError(
            f"structural zero {name!r} is violated by the original data at {describe_rows(rows)}{others}: a "
            "structural zero is a combination that cannot occur; fix the data or the rule"
        )
    return list(rules)


def _columns(codes: np.ndarray, data: CategoricalData) -> dict[str, np.ndarray]:
    return {v: codes[..., j] for j, v in enumerate(data.variables)}


def allowed_records(rules: Sequence[Rule], data: CategoricalData, codes: np.ndarray) -> np.ndarray:
    """Whether each coded record satisfies every rule.

    Parameters
    ----------
    rules
        Rules checked by :func:`check_structural_zeros`.
    data
        The coded records (for the levels and the order of the variables).
    codes
        ``(..., p)`` level codes in the order of ``data.variables``.

    Returns
    -------
    numpy.ndarray
        Boolean, the shape of ``codes`` without its last axis.
    """
    schema = categorical_schema(data)
    env = _columns(codes, data)
    ok = np.ones(codes.shape[:-1], dtype=bool)
    for rule in rules:
        ok &= np.broadcast_to(rule.holds(env.__getitem__, schema), ok.shape)
    return ok


def structural_zeros_dict(rules: Sequence[Rule], method: str, **figures: Any) -> dict[str, Any]:
    """The structural zeros as written to ``release/model.json``: the rules, the method and its figures."""
    return {"rules": [r.to_dict() for r in rules], "method": method, **figures}
