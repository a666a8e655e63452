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

__all__ = ["add_parser", "attack_settings", "run"]


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
    a = p.add_argument_group("attacks against the control set (--holdout); unset: the preset's value")
    a.add_argument("--attacks", dest="preset", choices=("bayessdc", "anonymeter"), default=None,
                   help="the attack settings' preset (default bayessdc; anonymeter: anonymeter 1.1's form)")
    a.add_argument("--secret", action="append", default=None, help="a secret the inference attack guesses (repeatable;"
                   " default: every synthesized column)")
    a.add_argument("--auxiliary", default=None, help="the columns the attacker knows, A,B (default: all released)")
    a.add_argument("--link", default=None, help="linkability's two sources, 'A,B|C,D' (default: kept | synthesized)")
    a.add_argument("--n-attacks", type=int, default=None, help="attacks per dataset (targets, predicates)")
    a.add_argument("--neighbours", type=int, default=None, help="nearest synthetic records that may link a target")
    a.add_argument("--predicate-columns", type=int, default=None, help="conditions of a multivariate predicate")
    a.add_argument("--tolerance", type=float, default=None, help="relative tolerance of a numeric secret's guess")
    p.set_defaults(func=run)


def attack_settings(args: argparse.Namespace) -> Any:
    """The attack settings of the flags given: the preset's, with each flag given replacing its field."""
    from dataclasses import replace

    import bayessdc as bsd

    given = {
        "secrets": args.secret, "n_attacks": args.n_attacks, "n_neighbors": args.neighbours,
        "n_cols": args.predicate_columns, "tolerance": args.tolerance,
        "auxiliary": None if args.auxiliary is None else [c.strip() for c in args.auxiliary.split(",") if c.strip()],
        "split": None if args.link is None else [[c.strip() for c in half.split(",") if c.strip()]
                                                 for half in args.link.split("|")],
    }  # fmt: skip
    try:
        return replace(bsd.AttackSettings.preset(args.preset), **{k: v for k, v in given.items() if v is not None})
    except ValueError as error:
        raise bsd.InputError(f"attack flags: {error}") from None


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc evaluate``; exit status 3 when the files evaluated fail the policy (private/ written; an
    evaluation never writes release/)."""
    import bayessdc as bsd

    synthetic = args.synthetic[0] if len(args.synthetic) == 1 else list(args.synthetic)
    release = bsd.evaluate(
        args.original, synthetic, synthesize=args.synthesize, keep=args.keep, holdout=args.holdout,
        known=args.known, tables=args.table, bootstrap=args.bootstrap, name=args.name, policy=args.policy,
        out=args.out, seed=args.seed, progress=not args.quiet, attacks=attack_settings(args),
    )  # fmt: skip
    print(f"{args.name}: {release.m} {release.description['kind']} dataset(s) of {release.facts['records']} records")
    print(f"  {release.policy.sentence()}")
    print(f"  written: {args.out / 'private'} (the report: {args.out / 'private' / 'report.html'}; the files "
          f"evaluated: {args.out / 'private' / 'evaluated'})")  # fmt: skip
    return 0 if release.policy.passed else 3
