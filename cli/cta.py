"""``bayessdc cta``: controlled tabular adjustment of a table in long form or as contributor microdata."""

from __future__ import annotations

import argparse
import pathlib
import sys

OBJECTIVE_CHOICES = ("l1", "relative", "weighted", "variance", "compromise")


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
    source.add_argument("--protection", metavar="COL", help="column of protection levels (long form)")
    source.add_argument(
        "--rule", action="append", metavar="RULE", help="sensitivity rule: p%%=15, nk=2,85 or threshold=3 (repeatable)"
    )
    parser.add_argument(
        "--contributor",
        metavar="COL",
        help="the input is microdata: this column identifies contributors; cells are sums",
    )
    parser.add_argument(
        "--kind",
        choices=("magnitude", "count"),
        default="magnitude",
        help="count tables get integer adjustments and the threshold rule on counts",
    )
    parser.add_argument(
        "--objective",
        choices=OBJECTIVE_CHOICES,
        default="l1",
        help="l1: min sum|y|; relative: min sum|y|/value; weighted: min sum cost*|y|; "
        "variance: keep the variance; compromise: min |L(y)| (slope, correlation)",
    )
    parser.add_argument("--preserve-mean", action="store_true", help="net adjustment of the sensitive cells zero")
    parser.add_argument("--zero-l", action="store_true", help="constrain L(y) = Cov(a, y)/Var(a) to zero")
    parser.add_argument("--integer", action="store_true", help="integer adjustments")
    parser.add_argument(
        "--method",
        choices=("milp", "heuristic"),
        default="milp",
        help="milp: solver picks directions; heuristic: directions first, then an LP",
    )
    parser.add_argument(
        "--capacity",
        type=float,
        default=0.2,
        help="capacity of non-sensitive cells as a fraction of their value (default 0.2)",
    )
    parser.add_argument("--capacity-column", metavar="COL", help="column of absolute capacities")
    parser.add_argument("--cost", metavar="COL", help="column of costs for --objective weighted")
    parser.add_argument(
        "--widen",
        type=float,
        help="upper bounds q = widen * p (default 1, or 1.5 with mean/L constraints and statistical objectives)",
    )
    parser.add_argument("--total-label", default="Total", help="label of a total (default Total)")
    parser.add_argument("--solver", default="HIGHS", help="cvxpy solver (default HIGHS)")
    parser.add_argument("--time-limit", type=float, help="solver time limit in seconds")
    parser.add_argument("--mip-gap", type=float, help="relative MIP gap at which to stop")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="output directory")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc cta``; returns the exit status."""
    import bayessdc as bsd
    from bayessdc.cta import InfeasibleError
    from bayessdc.recipes.cta import ProtectionNotMetError
    from bayessdc.synthesis.output import check_output_root

    check_output_root(args.out)  # before the table is solved: an InputError, exit status 2
    try:
        result = bsd.adjust(
            args.table, args.dims, args.value, rule=args.rule, protection=args.protection,
            contributor=args.contributor, kind=args.kind, objective=args.objective, preserve_mean=args.preserve_mean,
            zero_l=args.zero_l, integer=True if args.integer else None, method=args.method, capacity=args.capacity,
            capacity_column=args.capacity_column, cost=args.cost, widen=args.widen, total_label=args.total_label,
            solver=args.solver, time_limit=args.time_limit, mip_gap=args.mip_gap, policy=args.policy,
        )  # fmt: skip
    except InfeasibleError as err:  # no table meets the protection: a refusal, nothing written
        print(f"bayessdc cta: refused: nothing released: {err}", file=sys.stderr)
        return 3
    try:
        result.save(args.out)
    except ProtectionNotMetError as err:
        print(f"bayessdc cta: refused: {err}", file=sys.stderr)
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

    adjustment = bsd.adjust(cta.cox_4x9_frame(), "row,column", "value", protection="protection", integer=True)
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
