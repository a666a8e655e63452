"""``bayessdc cta``: controlled tabular adjustment of a table in long form or as contributor microdata."""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from .failures import said
from .options import build, given, option

OBJECTIVE_CHOICES = ("l1", "relative", "weighted", "variance", "compromise")


def table_options(parser: argparse.ArgumentParser, verb: str) -> None:
    """The options that say which table and which of its cells are sensitive, shared by ``cta`` and ``suppress``:
    ``--table``, ``--dims``, ``--value``, ``--protection`` or ``--rule``, ``--contributor`` (each setting the
    parameter of the same name of ``bsd.<verb>``)."""
    parser.add_argument(
        "--table",
        required=True,
        type=pathlib.Path,
        help="CSV, Parquet, Stata or SAS file (by extension): one row per cell (long form) or per contribution",
    )
    parser.add_argument(
        "--dims", required=True, help="dimension columns, comma separated; 'a>b' is a hierarchy (a above b)"
    )
    parser.add_argument("--value", required=True, help="column of cell values (contributions)")
    source = parser.add_mutually_exclusive_group()
    option(source, "--protection", to=f"{verb}.protection", metavar="COL",
           help="column of protection levels (long form)")  # fmt: skip
    option(source, "--rule", to=f"{verb}.rule", action="append", metavar="RULE",
           help="sensitivity rule: p%%=15, nk=2,85 or threshold=3 (repeatable)")  # fmt: skip
    option(parser, "--contributor", to=f"{verb}.contributor", metavar="COL",
           help="the input is microdata: this column identifies contributors; cells are sums")  # fmt: skip


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``cta`` subcommand."""
    parser = subparsers.add_parser(
        "cta",
        help="controlled tabular adjustment: protect sensitive cells, keep totals and statistics",
        description=(
            "Adjust a table so that every sensitive cell moves by at least its protection while every "
            "marginal total still adds up (Cox's controlled tabular adjustment). Writes DIR/release/adjusted.csv "
            "(the adjusted value of every cell and total) and DIR/release/model.json (the rule and objective), and "
            "DIR/private/ (original values, protection levels, quality figures). Exit status: 0 released; 2 bad "
            "input or options; 3 nothing released (no adjustment meets the protection, or a check failed)."
        ),
    )
    table_options(parser, "adjust")
    option(
        parser, "--kind", to="adjust.kind", choices=("magnitude", "count"),
        help="count tables get integer adjustments and the threshold rule on counts (default {default})",
    )  # fmt: skip
    option(
        parser, "--objective", to="AdjustmentSettings.objective", choices=OBJECTIVE_CHOICES,
        help="l1: min sum|y|; relative: min sum|y|/value; weighted: min sum cost*|y|; "
        "variance: keep the variance; compromise: min |L(y)| (slope, correlation); default {default}",
    )  # fmt: skip
    option(parser, "--preserve-mean", to="AdjustmentSettings.preserve_mean", action="store_true",
           help="net adjustment of the sensitive cells zero")  # fmt: skip
    option(parser, "--zero-l", to="AdjustmentSettings.zero_l", action="store_true",
           help="constrain L(y) = Cov(a, y)/Var(a) to zero")  # fmt: skip
    option(parser, "--integer", to="AdjustmentSettings.integer", action="store_true", help="integer adjustments")
    option(
        parser, "--method", to="AdjustmentSettings.method", choices=("milp", "heuristic"),
        help="milp: solver picks directions; heuristic: directions first, then an LP (default {default})",
    )  # fmt: skip
    option(parser, "--capacity", to="AdjustmentSettings.capacity", type=float,
           help="capacity of non-sensitive cells as a fraction of their value (default {default})")  # fmt: skip
    option(parser, "--capacity-column", to="adjust.capacity_column", metavar="COL",
           help="column of absolute capacities")  # fmt: skip
    option(parser, "--cost", to="adjust.cost", metavar="COL", help="column of costs for --objective weighted")
    option(
        parser, "--widen", to="AdjustmentSettings.widen", type=float,
        help="upper bounds q = widen * p (default 1, or 1.5 with mean/L constraints and statistical objectives)",
    )  # fmt: skip
    option(parser, "--total-label", to="adjust.total_label", help="label of a total (default {default})")
    option(parser, "--solver", to="SolverSettings.solver", help="cvxpy solver (default {default})")
    option(parser, "--time-limit", to="SolverSettings.time_limit", type=float, help="solver time limit in seconds")
    option(parser, "--mip-gap", to="SolverSettings.mip_gap", type=float, help="relative MIP gap at which to stop")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="output directory")
    parser.set_defaults(func=run)
    return parser


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The options given for ``bsd.adjust``: its own parameters as they are, and ``settings`` and ``solver`` made
    from the fields given for them (``AdjustmentSettings.capacity``, ``SolverSettings.time_limit``: the other
    fields keep their defaults, and the dataclass checks them); a parameter none of whose options is given is
    left out."""
    options = given(args, "adjust")
    for name, owner in (("settings", "AdjustmentSettings"), ("solver", "SolverSettings")):
        fields = given(args, owner)
        if fields:
            options[name] = build(owner, fields)
    return options


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc cta``; returns the exit status."""
    import bayessdc as bsd
    from bayessdc.cta import InfeasibleError
    from bayessdc.synthesis.output import check_output_root

    check_output_root(args.out)  # before the table is solved: an InputError, exit status 2
    try:
        result = bsd.adjust(args.table, args.dims, args.value, policy=args.policy, **_options(args))
    except InfeasibleError as err:  # no table meets the protection: a refusal, nothing written
        print(f"bayessdc cta: refused: nothing released: {said(err)}", file=sys.stderr)
        return 3
    try:
        result.save(args.out)
    except bsd.ProtectionNotMetError as err:
        print(f"bayessdc cta: refused: {said(err)}", file=sys.stderr)
        return 3
    report, checks = result.quality, result.quality["checks"]
    print(
        f"{checks['n_sensitive']} sensitive of {checks['n_cells']} cells; status {result.status}; "
        f"total |adjustment| {report['all_cells']['total_absolute_adjustment']:g}; "
        f"protection met: {checks['protection_met']}; totals add up: {checks['totals_add_up']}\n"
        f"  written: {args.out / 'release'} and {args.out / 'private'}"
    )
    return 0


def demo(out: pathlib.Path, seed: int) -> list[dict]:
    """Adjust Cox's 4 x 9 table (MILP, min sum |y|) into ``out/cta/`` and return figures for the demo.

    Parameters
    ----------
    out : pathlib.Path
        Demo output directory.
    seed : int
        Unused (the problem is deterministic); kept for the common demo signature.

    Returns
    -------
    list of dict
        Rows ``{"synthesizer": "cta", "measure": name, "value": number}``.
    """
    import bayessdc as bsd
    from bayessdc import cta

    settings = bsd.AdjustmentSettings(integer=True)
    adjustment = bsd.adjust(cta.cox_4x9_frame(), "row,column", "value", protection="protection", settings=settings)
    adjustment.save(pathlib.Path(out) / "cta")
    report = adjustment.quality
    figures = {
        "total_absolute_adjustment": report["all_cells"]["total_absolute_adjustment"],
        "sensitive_correlation": report["sensitive_cells"]["correlation"],
        "sensitive_slope": report["sensitive_cells"]["slope"],
        "sensitive_variance_ratio": report["sensitive_cells"]["variance_ratio"],
        "all_cells_correlation": report["all_cells"]["correlation"],
        "protection_met": float(report["checks"]["protection_met"]),
        "totals_add_up": float(report["checks"]["totals_add_up"]),
        "solve_seconds": adjustment.solution.solve_seconds,
    }
    return [{"synthesizer": "cta", "measure": name, "value": value} for name, value in figures.items()]
