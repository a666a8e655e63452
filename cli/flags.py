"""The library's parameter names as the command line's flags: the one table the CLI maps messages with.

The library speaks Python: its messages name a parameter as ``name=`` (``chains=17``, ``allow_unconverged=True``,
``known=``). A command prints the same message with the flag the user typed instead (``--chains 17``,
``--allow-unconverged``, ``--known``), through :func:`as_flags`. A test checks that every flag of the table
is an option of some command, and that no library message names a flag itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["PARAMETER_FLAGS", "as_flags", "flags_on_stderr"]

#: Parameter of the library -> the command line's flag.
PARAMETER_FLAGS: dict[str, str] = {
    "allow_unconverged": "--allow-unconverged",
    "alpha": "--alpha",
    "approximation": "--approximation",
    "band": "--band",
    "bootstrap": "--bootstrap",
    "burn": "--burn",
    "capacity_column": "--capacity-column",
    "chains": "--chains",
    "correlation": "--correlation",
    "contributor": "--contributor",
    "coords": "--coords",
    "cost": "--cost",
    "datasets_per_chain": "--gate-datasets",
    "draws": "--draws",
    "gamma": "--gamma",
    "holdout": "--holdout",
    "jitter": "--jitter",
    "keep": "--keep",
    "known": "--known",
    "log_response": "--log-response",
    "m": "--m",
    "max_cells": "--max-cells",
    "max_chains": "--max-chains",
    "max_levels": "--max-levels",
    "max_numeric_levels": "--max-numeric-levels",
    "missing": "--missing",
    "neighbours": "--neighbours",
    "ordered_logits": "--ordered-logit",
    "out": "--out",
    "phi_prior": "--phi-prior",
    "preserve_mean": "--preserve-mean",
    "protection": "--protection",
    "repetitions": "--repetitions",
    "risk_tolerance": "--risk-tolerance",
    "risk_weights": "--risk-weights",
    "structural_zeros": "--rules",
    "rule": "--rule",
    "synthesize": "--synthesize",
    "tables": "--table",
    "target_accept": "--target-accept",
    "thin": "--thin",
    "time_budget": "--time-budget",
    "time_limit": "--time-limit",
    "tune": "--tune",
    "utility_tolerance": "--utility-tolerance",
}

#: ``name=`` or ``name=value`` where ``name`` is a parameter (not part of a longer name or an attribute).
_PARAMETER = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)=([^\s,;:()]*)")


def as_flags(message: str) -> str:
    """``message`` with every ``name=`` / ``name=value`` of a parameter in :data:`PARAMETER_FLAGS` written as
    its flag (``--flag`` / ``--flag value``; a flag taking no value drops ``True``)."""

    def flag(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if name not in PARAMETER_FLAGS:
            return match.group(0)
        value = value.strip("'\"")
        if value in ("", "True"):
            return PARAMETER_FLAGS[name]
        return f"{PARAMETER_FLAGS[name]} {value}"

    return _PARAMETER.sub(flag, message)


class _FlagStream:
    """A text stream that writes through :func:`as_flags` to ``stream`` (everything else delegated)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(as_flags(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def flags_on_stderr() -> Iterator[None]:
    """For the block, everything written to standard error (errors, refusals, the library's log records) names
    flags instead of parameters; restored afterwards."""
    saved = sys.stderr
    sys.stderr = _FlagStream(saved)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stderr = saved
