"""``bayessdc evaluate``: synthetic data made elsewhere, judged by the same measures, policy and report.

Wiring only: read the files and run :func:`bayessdc.evaluate`, which checks the columns and levels against the
original (and the control set against the training records) before anything is measured, computes every measure
that needs no posterior, judges them by the disclosure policy and writes private/ (an evaluation writes no release/);
then print the verdict.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc evaluate``."""
    p = subparsers.add_parser(
        "evaluate",
        help="judge synthetic data made elsewhere (synthpop, SDV, ...) by the same measures, policy and report",
        description="Read the original table and synthetic datasets made by another tool (one file with a "
        "'synthetic' column numbering the datasets, or one file per dataset), compute every measure that needs no "
        "posterior (records copied, replicated uniques, identification risk and attribute disclosures beside their "
        "inherent bounds for partially synthetic data, tau of the tables, pMSE, and the attacks against a control "
        "set when one is given), judge them by the disclosure policy and write the run's report to private/ "
        "and the files judged to private/evaluated/; an evaluation writes no release/. bayessdc report puts the "
        "folder beside bayessdc runs.",
    )
    p.add_argument("--original", required=True, type=Path, help="the confidential table (CSV, Parquet, ...)")
    p.add_argument("--synthetic", required=True, nargs="+", type=Path, help="the synthetic dataset file(s)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--synthesize", default=None, help="columns the other tool synthesized, A,B (default: all)")
    p.add_argument("--keep", default=None, help="columns it released unchanged, C,D (default: none)")
    p.add_argument("--holdout", type=Path, default=None, help="a control set: real records the tool never saw")
    p.add_argument("--name", default="external", help="the method's name on the report and plots")
    p.add_argument("--known", action="append", default=None, help="an intruder's knowledge set A,B (repeatable)")
    p.add_argument("--table", action="append", default=None, help="a table A,B of the utility check (repeatable)")
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates of the original (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of the measures' random steps (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc evaluate``; exit status 3 when the files evaluated fail the policy (private/ written; an
    evaluation never writes release/)."""
    import bayessdc as bsd

    synthetic = args.synthetic[0] if len(args.synthetic) == 1 else list(args.synthetic)
    release = bsd.evaluate(
        args.original, synthetic, synthesize=args.synthesize, keep=args.keep, holdout=args.holdout,
        known=args.known, tables=args.table, bootstrap=args.bootstrap, name=args.name, policy=args.policy,
        out=args.out, seed=args.seed, progress=not args.quiet,
    )  # fmt: skip
    print(f"{args.name}: {release.m} {release.description['kind']} dataset(s) of {release.facts['records']} records")
    print(f"  {release.policy.sentence()}")
    print(f"  written: {args.out / 'private'} (the report: {args.out / 'private' / 'report.html'}; the files "
          f"evaluated: {args.out / 'private' / 'evaluated'})")  # fmt: skip
    return 0 if release.policy.passed else 3
