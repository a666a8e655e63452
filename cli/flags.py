"""The library's parameter names as the command line's flags: the one table the CLI maps messages with.

The library speaks Python: its messages name a parameter as ``name=`` (``chains=17``, ``allow_unconverged=True``,
``known=``). A command prints the same message with the flag the user typed instead (``--chains 17``,
``--allow-unconverged``, ``--known``), through :func:`as_flags`, at two places only: the error or refusal line
of :mod:`bayessdc.cli.failures`, and bayessdc's own log records (:class:`FlagRecords` on the command's log
handler). Nothing else on standard error (another library's warning, a traceback) is rewritten. A test checks
that every flag of the table is an option of some command, and that no library message names a flag itself.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PARAMETER_FLAGS", "FlagRecords", "as_flags", "flags_in_log_records"]

def _declared() -> dict[str, str]:
    """Each parameter a synthesizer's command sets -> its flag, as the command declares it beside its recipe
    (:class:`bayessdc.command.Option`): a new synthesizer's flags join the table with its command."""
    from bayessdc.recipes import commands

    declared: dict[str, str] = {}
    for command in commands():
        for option in command.options:
            declared.setdefault(option.parameter, option.flags[0])
    return declared


#: Parameter of the library -> the command line's flag: the synthesizers' declared options, and the flags of the
#: other commands and of parameters named otherwise.
PARAMETER_FLAGS: dict[str, str] = {
    **_declared(),
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
    "lower": "--lower",
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
    "pattern": "--pattern",
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
    "upper": "--upper",
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


class FlagRecords(logging.Filter):
    """A filter of the command's log handler: a record of bayessdc's own loggers is shown with its parameters
    named as flags (:func:`as_flags`); any other record, and a record's traceback, as it is."""

    def filter(self, record: logging.LogRecord) -> bool | logging.LogRecord:
        """Rewrite the message of a bayessdc record; never drop a record."""
        if record.name != "bayessdc" and not record.name.startswith("bayessdc."):
            return True
        message = record.getMessage()
        flagged = as_flags(message)
        if flagged == message:
            return True
        if sys.version_info >= (3, 12):  # a filter may return the record the handler shows, the original untouched
            record = logging.makeLogRecord(record.__dict__)
        record.msg, record.args = flagged, None
        return record if sys.version_info >= (3, 12) else True


@contextmanager
def flags_in_log_records(*handlers: logging.Handler) -> Iterator[None]:
    """For the block, ``handlers`` (the command's handler on the ``bayessdc`` logger) show bayessdc's records with
    flags instead of parameters (:class:`FlagRecords`)."""
    flags = FlagRecords()
    for handler in handlers:
        handler.addFilter(flags)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(flags)
