"""``bayessdc dpmpm``: synthesize categorical columns (for example a many-level geography label) with the DPMPM.

Wiring only: options -> :class:`bayessdc.DPMPM` (Hu & Savitsky, Section 2.1) -> :func:`bayessdc.synthesize`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import DATA_HELP, synthesize_options
from .categorical import add_shared_options, categorical_lines, demo_rows, gate_lines, recipe_options, refusal
from .options import build, given, option

__all__ = ["add_parser", "demo", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc dpmpm``."""
    p = subparsers.add_parser(
        "dpmpm",
        help="DPMPM synthesis of categorical columns such as a many-level geography label (Hu & Savitsky)",
        description="Replace the --synthesize columns of every record by draws from a Dirichlet-process mixture "
        "of products of multinomials fitted to the --synthesize and --keep columns, measure identification and "
        "attribute risk against the inherent minimum and maximum, and utility, and write release/ (synthetic "
        "data, model description) and private/ (diagnostics, risk, utility).",
    )
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--synthesize", required=True, nargs="+", help="columns to synthesize (comma-separated or words)")
    p.add_argument("--keep", required=True, nargs="+", help="columns released unchanged and modelled")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    option(p, "--K", to="DPMPM.K", type=int, help="number of mixture components (default {default})")
    option(
        p, "--conditioning", to="DPMPM.conditioning", choices=["full", "pattern", "prior"],
        help="latent class for synthesis drawn given all of the record's values (full), the kept values only "
        "(pattern) or pi alone (prior); default {default}",
    )  # fmt: skip
    synthesize_options(p, "DPMPM")
    option(p, "--draws", to="DPMPM.settings.draws", type=int,
           help="Gibbs iterations kept per chain (default {default})")  # fmt: skip
    option(p, "--burn", to="DPMPM.settings.burn", type=int, help="burn-in iterations per chain (default {default})")
    option(p, "--chains", to="DPMPM.settings.chains", type=int,
           help="chains, pooled by the release gate (default {default})")  # fmt: skip
    option(p, "--thin", to="DPMPM.settings.thin", type=int, help="store every thin-th iteration (default {default})")
    option(p, "--a-alpha", to="DPMPM.priors.a_alpha", type=float,
           help="shape of alpha's gamma prior (default {default})")  # fmt: skip
    option(p, "--b-alpha", to="DPMPM.priors.b_alpha", type=float,
           help="rate of alpha's gamma prior (default {default})")  # fmt: skip
    option(
        p, "--risk-records", to="DPMPM.risk_records", type=int,
        help="records whose Bayesian attribute risk is computed by importance sampling (default {default}; 0: none)",
    )  # fmt: skip
    option(p, "--risk-draws", to="DPMPM.risk_draws", type=int,
           help="posterior draws used as proposals (default {default})")  # fmt: skip
    add_shared_options(p, "DPMPM")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dpmpm`` from parsed arguments."""
    import bayessdc as bsd

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    recipe = build("DPMPM", recipe_options(args, "DPMPM"))
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, out=args.out, policy=args.policy,
            holdout=args.holdout, progress=not args.quiet, **given(args, "synthesize"),
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        return refusal("dpmpm", err, args.out)
    print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    f = release.facts
    return "\n".join(
        [
            f"dpmpm: {f['records']} records in {f['cells']} cells, {release.seconds:.1f} s",
            *gate_lines(release),
            *categorical_lines(release),
            f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
        ]
    )


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """The DPMPM on the bundled CE-like simulator (n = 6,208, 40 patterns, 133 counties), small settings."""
    import bayessdc as bsd

    recipe = bsd.DPMPM(
        K=40, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=bsd.GibbsSettings(draws=2000, burn=1000, chains=8, thin=4),
        repetitions=20, risk_records=200, risk_draws=100,
    )  # fmt: skip
    roles = {"synthesize": ["county"], "keep": ["gender", "income", "age"]}
    try:
        release = bsd.synthesize(
            bsd.examples.ce_like(seed=seed), recipe, **roles, m=5, seed=seed, out=Path(out) / "dpmpm", progress=False
        )
    except bsd.ConvergenceError as err:  # said in the table, nothing released
        return [{"synthesizer": "dpmpm", "measure": "release gate", "value": f"FAILED: {err}"}]
    return [{"synthesizer": "dpmpm", "measure": k, "value": v} for k, v in demo_rows(release)]
