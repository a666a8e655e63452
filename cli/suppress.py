"""``bayessdc suppress``: complementary cell suppression of a table in long form or as contributor microdata."""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from .cta import table_options
from .failures import said
from .options import build, given, option


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``suppress`` subcommand."""
    parser = subparsers.add_parser(
        "suppress",
        help="complementary cell suppression: suppress sensitive cells and the least-cost cells that protect them",
        description=(
            "Suppress every sensitive (primary) cell of a table and, by a MILP, the least-cost set of other "
            "(secondary) cells that keeps each primary cell from being recomputed from the published cells and "
            "totals to within its protection; or audit a pattern made elsewhere (--pattern). The published table is "
            "audited as an intruder would audit it. Writes DIR/release/suppressed.csv (every cell and total, a "
            "suppressed cell empty) and DIR/release/model.json (the rule, cost and method), and DIR/private/ "
            "(original values, protection levels, audited intervals, information loss). Exit status: 0 released; 2 "
            "bad input or options; 3 nothing released (a primary cell the audit narrows below its protection, or no "
            "pattern protects it)."
        ),
    )
    table_options(parser, "suppress")
    option(
        parser, "--kind", to="suppress.kind", choices=("magnitude", "count"),
        help="count tables hold whole numbers, and the threshold rule counts them (default {default})",
    )  # fmt: skip
    option(
        parser, "--cost", to="suppress.cost", metavar="values|cells|COL",
        help="what a suppression costs: values (the value suppressed), cells (the number of cells), or a column of "
        "costs per cell (default {default})",
    )  # fmt: skip
    option(parser, "--pattern", to="suppress.pattern", metavar="COL",
           help="column marking cells suppressed elsewhere (true/false): audited, released as given")  # fmt: skip
    option(parser, "--lower", to="suppress.lower", metavar="COL",
           help="column of the intruder's a-priori lower bounds of each cell (empty: 0)")  # fmt: skip
    option(parser, "--upper", to="suppress.upper", metavar="COL",
           help="column of the intruder's a-priori upper bounds of each cell (empty: none)")  # fmt: skip
    option(parser, "--total-label", to="suppress.total_label", help="label of a total (default {default})")
    option(parser, "--solver", to="SolverSettings.solver", help="solver named in the record (default {default})")
    option(parser, "--time-limit", to="SolverSettings.time_limit", type=float, help="solver time limit in seconds")
    option(parser, "--mip-gap", to="SolverSettings.mip_gap", type=float, help="relative MIP gap at which to stop")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="output directory")
    parser.set_defaults(func=run)
    return parser


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The options given for ``bsd.suppress``: its own parameters as they are, and ``solver`` made from the fields
    given for it; a parameter none of whose options is given is left out."""
    options = given(args, "suppress")
    fields = given(args, "SolverSettings")
    if fields:
        options["solver"] = build("SolverSettings", fields)
    return options


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc suppress``; returns the exit status."""
    import bayessdc as bsd
    from bayessdc.cta import InfeasibleError
    from bayessdc.synthesis.output import check_output_root

    check_output_root(args.out)  # before the table is solved: an InputError, exit status 2
    try:
        result = bsd.suppress(args.table, args.dims, args.value, policy=args.policy, **_options(args))
    except InfeasibleError as err:  # no pattern protects a primary cell: a refusal, nothing written
        print(f"bayessdc suppress: refused: nothing released: {said(err)}", file=sys.stderr)
        return 3
    try:
        result.save(args.out)
    except bsd.SuppressionNotSafeError as err:
        print(f"bayessdc suppress: refused: {said(err)}", file=sys.stderr)
        return 3
    loss, solver = result.quality["all_cells"], result.quality["solver"]
    print(
        f"{loss['suppressed']} of {loss['cells']} cells suppressed ({loss['primary']} primary, {loss['secondary']} "
        f"secondary); status {result.status}; value suppressed {loss['value_suppressed']:g}; every primary cell "
        f"protected: {result.protected}; {solver['seconds']:.2f} s\n"
        f"  written: {args.out / 'release'} and {args.out / 'private'}"
    )
    return 0


def demo(out: pathlib.Path, seed: int) -> list[dict]:
    """Suppress Cox's 4 x 9 table (least value suppressed) into ``out/suppress/`` and return figures for the demo.

    Parameters
    ----------
    out : pathlib.Path
        Demo output directory.
    seed : int
        Unused (the problem is deterministic); kept for the common demo signature.

    Returns
    -------
    list of dict
        Rows ``{"synthesizer": "suppress", "measure": name, "value": number}``.
    """
    import bayessdc as bsd
    from bayessdc import cta

    result = bsd.suppress(cta.cox_4x9_frame(), "row,column", "value", protection="protection")
    result.save(pathlib.Path(out) / "suppress")
    loss, interior = result.quality["all_cells"], result.quality["interior_cells"]
    figures = {
        "cells_suppressed": loss["suppressed"],
        "primary_cells": loss["primary"],
        "secondary_cells": loss["secondary"],
        "interior_value_suppressed_share": interior["share_suppressed"],
        "primary_cells_protected": float(result.protected),
        "solve_seconds": result.quality["solver"]["seconds"],
    }
    return [{"synthesizer": "suppress", "measure": name, "value": value} for name, value in figures.items()]
