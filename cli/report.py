"""``bayessdc report``: several runs on one risk-utility plot, with their gate verdicts, in one HTML file; or a CTA run
beside a cell suppression run of the same table (:func:`bayessdc.compare_tables`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc report``."""
    p = subparsers.add_parser(
        "report",
        help="compare runs: risk against utility with the inherent bounds, or a CTA run beside a suppression run of "
        "the same table, in one HTML file",
        description="Reads each RUN_DIR written by bayessdc flows, spatial, dpmpm, dp-areal or cart (its private/ "
        "risk and utility figures) and writes one self-contained HTML file: the runs' gate verdicts, links to "
        "each run's own report (RUN_DIR/private/report.html) and, for every pair of risk and utility measures "
        "the runs share, one plot of all of them with their inherent bounds (for example the DPMPM against the "
        "DP-areal on the same data). Given the folders of one bayessdc cta run and one bayessdc suppress run of the "
        "same table, it sets the two releases side by side instead: cells and value suppressed against the "
        "adjustments' size, the statistics each keeps, and each sensitive cell's audited interval under both "
        "(bsd.compare_tables). The file shows unpublished figures: it is refused inside a release/ folder.",
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="output folders of bayessdc runs")
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--labels", default=None, help="names of the runs on the plot, comma separated (default: folders)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the comparison."""
    from bayessdc import InputError
    from bayessdc.report import compare_releases
    from bayessdc.tables import compare_tables, table_runs

    tables = table_runs(args.runs)
    if tables is not None:
        if args.labels:
            raise InputError("--labels names runs on a risk-utility plot; a CTA and a suppression run are set side by "
                             "side under their methods' names")  # fmt: skip
        out = compare_tables(*tables).save(args.out)
        print(f"CTA ({tables[0]}) beside cell suppression ({tables[1]}) written to {out}")
        return 0
    labels = [s.strip() for s in args.labels.split(",")] if args.labels else None
    out = compare_releases(args.runs, args.out, labels=labels)
    print(f"report of {len(args.runs)} run(s) written to {out}")
    return 0
