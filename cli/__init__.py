"""The ``bayessdc`` console command.

One module per subcommand in this package, each with ``add_parser(subparsers)`` (which sets
``func`` to its ``run(args) -> int``) and, when it has a bundled example, ``demo(out, seed) -> list[dict]``
returning rows of figures for ``bayessdc demo``. The CLI parses arguments and wires the layers together;
it holds no statistics. Heavy imports happen inside ``run`` so that ``bayessdc --help`` is quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from bayessdc import InputError, __version__

#: Subcommand modules, in the order ``bayessdc --help`` lists them.
SUBCOMMANDS: tuple[str, ...] = ("flows", "spatial", "dpmpm", "dp_areal", "cart", "cta", "demo")


#: An error in the user's input or options: printed without a traceback, exit status 2.
UserError = InputError

#: Help of every subcommand's input option (the formats :func:`bayessdc.read_table` reads).
DATA_HELP = "input table: CSV (also .csv.gz), .tsv, Parquet, Stata .dta or SAS .sas7bdat, by extension"

#: The exit statuses of every subcommand (shown by ``--help``).
EXIT_STATUS = """exit status:
  0  released (or, for demo, every example ran)
  2  bad input or options: the message names the column, row or constraint; nothing is written
  3  refused, nothing released: a gate failed (private/ holds the diagnostics), or for cta no adjustment
     meets the protection"""


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="bayessdc",
        description=("Bayesian synthetic data with measured disclosure risk, and controlled tabular adjustment."),
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"bayessdc {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"bayessdc.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bayessdc`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"bayessdc {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
