"""The ``bayessdc`` console command.

Every synthesizer's subcommand is built from the command its recipe package declares
(:mod:`bayessdc.cli.synthesizer`); each other subcommand is a module of this package with ``add_parser(subparsers)``
(which sets ``func`` to its ``run(args) -> int``). The CLI parses arguments and wires the layers together; it
holds no statistics and no synthesizer. Heavy imports happen inside ``run`` so that ``bayessdc --help`` is quick. Every
subcommand takes ``-q/--quiet`` and ``-v/--verbose`` (:func:`common_options`, added by ``build_parser``), and
:func:`main` configures logging accordingly for the run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bayessdc import __version__
from bayessdc.command import Command
from bayessdc.progress import cli_logging, logger

from . import synthesizer
from .failures import run_handled
from .flags import flags_in_log_records
from .synthesizer import commands

#: The commands of the synthesizers, by name (declared beside their recipes, :mod:`bayessdc.cli.synthesizer`).
SYNTHESIZERS: dict[str, Command] = {c.name: c for c in commands()}

#: The modules of the other subcommands.
MODULES: tuple[str, ...] = ("cta", "suppress", "evaluate", "report", "policy", "demo")

#: Every subcommand, in the order ``bayessdc --help`` lists them: the synthesizers', then the others.
SUBCOMMANDS: tuple[str, ...] = (*SYNTHESIZERS, *MODULES)

#: The subcommands that release something, each judged by a disclosure policy (``--policy``).
RELEASING: frozenset[str] = frozenset({*SYNTHESIZERS, "cta", "suppress", "evaluate"})

#: The subcommands that release tables of records, which a control set (``--holdout``) can be compared with.
RECORDS: frozenset[str] = frozenset(name for name, c in SYNTHESIZERS.items() if c.records)

#: Help of ``--holdout``.
HOLDOUT_HELP = (
    "a control set for the attack measures: a share of the records held out before the fit (0.2: an evaluation "
    "run, fitted on the rest, as release/model.json and the report say) or a file of real records not in the data"
)


def _holdout(text: str) -> float | Path:
    """``--holdout``: a share (a number) or a file."""
    try:
        return float(text)
    except ValueError:
        return Path(text)


#: Help of ``--policy``.
POLICY_HELP = (
    "disclosure policy (TOML) every release is judged by; default: bayessdc's own (`bayessdc policy` prints it). "
    "A release that fails it is refused (exit status 3); the policy's name and digest go to release/model.json"
)


#: Help of the options every subcommand takes (:func:`common_options`).
MESSAGES_HELP = """messages: stages of the run and each group's figures go to standard error, with progress bars when it
is a terminal; -q/--quiet: no bars, warnings and errors only; -v/--verbose: debug messages too"""

#: The exit statuses of every subcommand (shown by ``--help``).
EXIT_STATUS = """exit status:
  0  released (or, for demo, every example ran)
  2  bad input or options: the message names the column, row or constraint; nothing is written
  3  refused, nothing released: a gate failed (private/ holds the diagnostics), the release fails its
     disclosure policy (private/policy.json says which criterion), or for cta (suppress) no adjustment
     (pattern) meets the protection"""


def common_options() -> argparse.ArgumentParser:
    """The options every subcommand takes (a parent parser): ``-q/--quiet`` and ``-v/--verbose``."""
    common = argparse.ArgumentParser(add_help=False)
    level = common.add_mutually_exclusive_group()
    level.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars and no messages but warnings and errors"
    )
    level.add_argument(
        "-v", "--verbose", action="store_true", help="debug messages too (sampler settings, timings, every part)"
    )
    return common


class _KeepBlocksFormatter(argparse.HelpFormatter):
    """Wraps a description as usual, but prints a block of indented lines (the exit statuses) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n  " in text:
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


class _Subcommands:
    """The subparsers action as the subcommand modules see it: every ``add_parser`` gets :func:`common_options`."""

    def __init__(self, action: Any) -> None:
        self._action = action
        self._common = common_options()

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """Register subcommand ``name`` (keyword arguments as :meth:`argparse._SubParsersAction.add_parser`); its
        ``--help`` ends with the exit statuses."""
        kwargs["parents"] = [*kwargs.get("parents", []), self._common]
        kwargs["epilog"] = f"{kwargs['epilog']}\n\n{EXIT_STATUS}" if kwargs.get("epilog") else EXIT_STATUS
        kwargs.setdefault("formatter_class", _KeepBlocksFormatter)
        parser = self._action.add_parser(name, **kwargs)
        if name in RELEASING:
            parser.add_argument("--policy", type=Path, default=None, metavar="FILE", help=POLICY_HELP)
        if name in RECORDS:
            parser.add_argument("--holdout", type=_holdout, default=None, metavar="SHARE|FILE", help=HOLDOUT_HELP)
        return parser

    def __getattr__(self, name: str) -> Any:
        return getattr(self._action, name)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="bayessdc",
        description=("Bayesian synthetic data with measured disclosure risk, and controlled tabular adjustment."),
        epilog=f"{MESSAGES_HELP}\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"bayessdc {__version__}")
    subparsers = _Subcommands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    for name in SUBCOMMANDS:
        if name in SYNTHESIZERS:
            synthesizer.add_parser(subparsers, SYNTHESIZERS[name])
        else:
            importlib.import_module(f"bayessdc.cli.{name}").add_parser(subparsers)
    return parser


@contextmanager
def _no_arviz_announcement() -> Iterator[None]:
    """ArviZ 0.23 announces at its first import each day (FutureWarning "ArviZ is undergoing a major refactor
    ... Some upcoming changes may be backward incompatible") its 1.0 rewrite. Nothing in a run can act on it
    (bayessdc pins arviz < 1), so a command ignores that one warning, by message, category and module."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning, module=r"arviz\Z"
        )
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bayessdc`` command; returns the exit status.

    The library's messages name parameters (``chains=17``); its errors (:func:`bayessdc.cli.failures.said`) and
    its log records (:class:`bayessdc.cli.flags.FlagRecords`, on the command's handler) name the flags
    (``--chains 17``) instead, through the one table of :mod:`bayessdc.cli.flags`. Configures logging for the run
    (:func:`bayessdc.progress.cli_logging`: INFO messages of the ``bayessdc``
    logger on standard error as ``bayessdc COMMAND: message``, WARNING and above with ``--quiet``, DEBUG with
    ``--verbose``; progress bars on a terminal unless ``--quiet``) and restores the previous configuration when
    the command ends.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    before = set(logger.handlers)
    with cli_logging(quiet=quiet, verbose=verbose, prefix=f"bayessdc {args.command}"), _no_arviz_announcement():
        with flags_in_log_records(*(h for h in logger.handlers if h not in before)):  # the command's handler
            return run_handled(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
