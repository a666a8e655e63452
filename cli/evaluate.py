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

from .options import given, library_default, option

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
    option(p, "--synthesize", to="evaluate.synthesize", help="columns the other tool synthesized, A,B (default: all)")
    option(p, "--keep", to="evaluate.keep", help="columns it released unchanged, C,D (default: none)")
    option(p, "--holdout", to="evaluate.holdout", type=Path, help="a control set: real records the tool never saw")
    option(p, "--name", to="evaluate.name", help="the method's name on the report and plots (default {default})")
    option(p, "--known", to="evaluate.known", action="append", help="an intruder's knowledge set A,B (repeatable)")
    option(p, "--table", to="evaluate.tables", action="append", help="a table A,B of the utility check (repeatable)")
    option(p, "--bootstrap", to="evaluate.bootstrap", type=int,
           help="bootstrap replicates of the original (default {default})")  # fmt: skip
    option(p, "--seed", to="evaluate.seed", type=int, help="seed of the measures' random steps (default {default})")
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
    options = given(args, "evaluate")
    release = bsd.evaluate(
        args.original, synthetic, policy=args.policy, out=args.out, progress=not args.quiet,
        attacks=attack_settings(args), **options,
    )  # fmt: skip
    name = options.get("name", library_default("evaluate.name"))
    print(f"{name}: {release.m} {release.description['kind']} dataset(s) of {release.facts['records']} records")
    print(f"  {release.policy.sentence()}")
    print(f"  written: {args.out / 'private'} (the report: {args.out / 'private' / 'report.html'}; the files "
          f"evaluated: {args.out / 'private' / 'evaluated'})")  # fmt: skip
    return 0 if release.policy.passed else 3
