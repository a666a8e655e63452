"""``bayessdc report``: several runs on one risk-utility plot, with their gate verdicts, in one HTML file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc report``."""
    p = subparsers.add_parser(
        "report",
        help="compare runs: risk against utility with the inherent bounds, in one HTML file",
        description="Reads each RUN_DIR written by bayessdc flows, spatial, dpmpm, dp-areal or cart (its private/ "
        "risk and utility figures) and writes one self-contained HTML file: the runs' gate verdicts, links to "
        "each run's own report (RUN_DIR/private/report.html) and, for every pair of risk and utility measures "
        "the runs share, one plot of all of them with their inherent bounds (for example the DPMPM against the "
        "DP-areal on the same data). The file shows unpublished figures: it is refused inside a release/ folder.",
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="output folders of bayessdc runs")
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--labels", default=None, help="names of the runs on the plot, comma separated (default: folders)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the comparison."""
    from bayessdc.report import compare_releases

    labels = [s.strip() for s in args.labels.split(",")] if args.labels else None
    out = compare_releases(args.runs, args.out, labels=labels)
    print(f"report of {len(args.runs)} run(s) written to {out}")
    return 0
