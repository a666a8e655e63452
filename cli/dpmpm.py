"""``bayessdc dpmpm``: synthesize categorical columns (for example a many-level geography label) with the DPMPM.

Wiring only: options -> :class:`bayessdc.DPMPM` (Hu & Savitsky, Section 2.1) -> :func:`bayessdc.synthesize`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import DATA_HELP
from .categorical import add_shared_options, categorical_lines, demo_rows, gate_lines, refusal, shared_recipe_options

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
    p.add_argument("--K", type=int, default=40, help="number of mixture components (default 40)")
    p.add_argument(
        "--conditioning", default="full", choices=["full", "pattern", "prior"],
        help="latent class for synthesis drawn given all of the record's values (full, default), "
        "the kept values only (pattern) or pi alone (prior)",
    )  # fmt: skip
    p.add_argument("--m", type=int, default=None, help="synthetic datasets (default 20: the recipe's default_m)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--draws", type=int, default=4000, help="Gibbs iterations kept per chain (default 4000)")
    p.add_argument("--burn", type=int, default=1000, help="burn-in iterations per chain (default 1000)")
    p.add_argument("--chains", type=int, default=8, help="chains, pooled by the release gate (default 8)")
    p.add_argument("--thin", type=int, default=4, help="store every thin-th iteration (default 4)")
    p.add_argument("--a-alpha", type=float, default=0.25, help="shape of alpha's gamma prior (default 0.25)")
    p.add_argument("--b-alpha", type=float, default=0.25, help="rate of alpha's gamma prior (default 0.25)")
    p.add_argument(
        "--risk-records", type=int, default=500,
        help="records whose Bayesian attribute risk is computed by importance sampling (default 500; 0: none)",
    )  # fmt: skip
    p.add_argument("--risk-draws", type=int, default=200, help="posterior draws used as proposals (default 200)")
    add_shared_options(p, gate_datasets=50)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dpmpm`` from parsed arguments."""
    import bayessdc as bsd
    from bayessdc.models.dpmpm import DPMPMPriors, GibbsSettings

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    settings = GibbsSettings(draws=args.draws, burn=args.burn, chains=args.chains, thin=args.thin)
    priors = DPMPMPriors(a_alpha=args.a_alpha, b_alpha=args.b_alpha)
    recipe = bsd.DPMPM(
        K=args.K, conditioning=args.conditioning, priors=priors, settings=settings, risk_records=args.risk_records,
        risk_draws=args.risk_draws, **shared_recipe_options(args),
    )  # fmt: skip
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, policy=args.policy, holdout=args.holdout, progress=not args.quiet,
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
    from bayessdc.models.dpmpm import GibbsSettings, simulate_ce_like

    recipe = bsd.DPMPM(
        K=40, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=GibbsSettings(draws=2000, burn=1000, chains=8, thin=4),
        repetitions=20, risk_records=200, risk_draws=100,
    )  # fmt: skip
    roles = {"synthesize": ["county"], "keep": ["gender", "income", "age"]}
    try:
        release = bsd.synthesize(
            simulate_ce_like(seed=seed), recipe, **roles, m=5, seed=seed, out=Path(out) / "dpmpm", progress=False
        )
    except bsd.ConvergenceError as err:  # said in the table, nothing released
        return [{"synthesizer": "dpmpm", "measure": "release gate", "value": f"FAILED: {err}"}]
    return [{"synthesizer": "dpmpm", "measure": k, "value": v} for k, v in demo_rows(release)]
