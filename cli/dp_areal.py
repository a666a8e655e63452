"""``bayessdc dp-areal``: synthesize a many-level label (for example the county) with the DP-areal model.

Wiring only: the pipeline is :class:`bayessdc.DPAreal` (Hu & Savitsky, Section 2.2) behind
:func:`bayessdc.synthesize`, whose risk and utility are measured exactly as for ``bayessdc dpmpm``, so the two
synthesizers' outputs compare file by file; this module parses the options, calls it and prints the figures.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import DATA_HELP
from .categorical import add_shared_options, categorical_lines, demo_rows, gate_lines, refusal, shared_recipe_options

__all__ = ["add_parser", "demo", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc dp-areal``."""
    p = subparsers.add_parser(
        "dp-areal",
        help="DP-areal synthesis of a many-level label: Poisson-lognormal counts per pattern (Hu & Savitsky)",
        description="Replace the --synthesize label of every record by a draw from the label probabilities of its "
        "pattern (the combination of its --keep values) under a Poisson-lognormal model of the label counts with "
        "Dirichlet-process random effects, fitted by a Gibbs sampler (or NUTS); measure identification and "
        "attribute risk against the inherent minimum and maximum, and utility, exactly as bayessdc dpmpm does; "
        "write release/ (synthetic data, model description) and private/ (diagnostics, risk, utility).",
    )
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--synthesize", required=True, nargs="+", help="the label column to synthesize (one)")
    p.add_argument("--keep", required=True, nargs="+", help="columns released unchanged; they form the patterns")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--K", type=int, default=50, help="number of mixture components (default 50)")
    p.add_argument("--m", type=int, default=None, help="synthetic datasets (default 20: the recipe's default_m)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--sampler", choices=["gibbs", "nuts"], default="gibbs",
                   help="gibbs (default): the partially collapsed Gibbs sampler; nuts: NUTS with the labels summed "
                   "out, on the same posterior")  # fmt: skip
    p.add_argument("--draws", type=int, default=None, help="draws kept per chain (default 500; nuts: 1000)")
    p.add_argument("--burn", type=int, default=None, help="Gibbs sweeps discarded per chain (default 1000)")
    p.add_argument("--thin", type=int, default=None, help="Gibbs sweeps per kept draw (default 4)")
    p.add_argument("--tune", type=int, default=None, help="NUTS warm-up iterations per chain (default 1000)")
    p.add_argument("--chains", type=int, default=4, help="chains, pooled by the release gate (default 4)")
    p.add_argument("--target-accept", type=float, default=None, help="NUTS target acceptance (default 0.9)")
    p.add_argument(
        "--parameterization",
        "--parametrization",  # the spelling of earlier releases, still accepted
        dest="parameterization",
        default="identified",
        choices=["identified", "identified_centred", "noncentred", "centred"],
        help="how the cluster effects are sampled (default identified: the directions the one-hot design cannot "
        "see are integrated out)",
    )
    p.add_argument(
        "--max-cells", type=int, default=300_000, help="most label x pattern cells (default 300,000; beyond: DPMPM)"
    )
    add_shared_options(p, gate_datasets=200)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dp-areal`` from parsed arguments."""
    import bayessdc as bsd

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    settings = _settings(bsd, args)
    recipe = bsd.DPAreal(
        K=args.K, settings=settings, parameterization=args.parameterization, max_cells=args.max_cells,
        **shared_recipe_options(args),
    )  # fmt: skip
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, policy=args.policy, holdout=args.holdout, progress=not args.quiet,
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        return refusal("dp-areal", err, args.out)
    print(summary(release, args.out))
    return 0


def _settings(bsd: Any, args: argparse.Namespace) -> Any:
    """The sampler's settings from the flags; a flag of the other sampler is refused (exit status 2)."""
    own = {"gibbs": ("draws", "burn", "thin"), "nuts": ("draws", "tune", "target_accept")}[args.sampler]
    other = [f"--{n.replace('_', '-')}" for n in ("burn", "thin", "tune", "target_accept")
             if n not in own and getattr(args, n) is not None]  # fmt: skip
    if other:
        raise ValueError(f"{', '.join(other)} set a setting of the other sampler, not of --sampler {args.sampler}")
    given = {n: getattr(args, n) for n in own if getattr(args, n) is not None}
    if args.sampler == "gibbs":
        return bsd.DPArealGibbsSettings(chains=args.chains, **given)
    return bsd.SamplerSettings(**{"draws": 1000, "tune": 1000, "target_accept": 0.9, **given}, chains=args.chains)


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    f = release.facts
    lines = [
        f"dp-areal: {f['records']} records, {f['patterns']} patterns x {f['labels']} labels, {release.seconds:.1f} s",
        *gate_lines(release),
        *categorical_lines(release, ordered_logit=False),
        f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
    ]
    return "\n".join(lines)


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """DP-areal on a small table simulated from the model (12 patterns x 40 labels), small settings."""
    import bayessdc as bsd
    from bayessdc.models.dp_areal import simulate_areal

    table, _ = simulate_areal(40, (2, 2, 3), seed=seed)
    table = table.rename(columns={"v0": "gender", "v1": "income", "v2": "age", "label": "county"})
    recipe = bsd.DPAreal(
        K=10, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=bsd.DPArealGibbsSettings(draws=250, burn=500, thin=4, chains=4), repetitions=20,
    )  # fmt: skip
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=["county"], keep=["gender", "income", "age"], m=5, seed=seed,
            out=Path(out) / "dp-areal", progress=False,
        )  # fmt: skip
    except bsd.ConvergenceError as err:  # said in the table, nothing released
        return [{"synthesizer": "dp-areal", "measure": "release gate", "value": f"FAILED: {err}"}]
    return [{"synthesizer": "dp-areal", "measure": k, "value": v} for k, v in demo_rows(release)]
