"""``bayessdc dp-areal``: synthesize a many-level label (for example the county) with the DP-areal model.

Wiring only: the pipeline is :class:`bayessdc.DPAreal` (Hu & Savitsky, Section 2.2) behind
:func:`bayessdc.synthesize`, whose risk and utility are measured exactly as for ``bayessdc dpmpm``, so the two
synthesizers' outputs compare file by file; this module parses the options, calls it and prints the figures.
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
    option(p, "--K", to="DPAreal.K", type=int, help="number of mixture components (default {default})")
    synthesize_options(p, "DPAreal")
    p.add_argument("--sampler", choices=["gibbs", "nuts"], default="gibbs",
                   help="gibbs (default, bsd.DPArealGibbsSettings): the partially collapsed Gibbs sampler; nuts "
                   "(bsd.SamplerSettings): NUTS with the labels summed out, on the same posterior")  # fmt: skip
    option(p, "--draws", to="DPAreal.settings.draws", type=int, shows={"default": "DPAreal.settings.draws",
           "nuts": "SamplerSettings.draws"}, help="draws kept per chain (default {default}; nuts: {nuts})")  # fmt: skip
    option(p, "--burn", to="DPAreal.settings.burn", type=int,
           help="Gibbs sweeps discarded per chain (default {default})")  # fmt: skip
    option(p, "--thin", to="DPAreal.settings.thin", type=int, help="Gibbs sweeps per kept draw (default {default})")
    option(p, "--tune", to="DPAreal.settings.tune", type=int, shows="SamplerSettings.tune",
           help="NUTS warm-up iterations per chain (default {default})")  # fmt: skip
    option(p, "--chains", to="DPAreal.settings.chains", type=int,
           help="chains, pooled by the release gate (default {default})")  # fmt: skip
    option(p, "--target-accept", to="DPAreal.settings.target_accept", type=float,
           shows="DPAreal.nuts_target_accept", help="NUTS target acceptance (default {default}, measured on the model)")
    option(
        p, "--parameterization", "--parametrization",  # the spelling of earlier releases, still accepted
        to="DPAreal.parameterization", choices=["identified", "identified_centred", "noncentred", "centred"],
        help="how the cluster effects are sampled (default {default}; identified: the directions the one-hot "
        "design cannot see are integrated out)",
    )  # fmt: skip
    option(p, "--max-cells", to="DPAreal.max_cells", type=int,
           help="most label x pattern cells (default {default}; beyond: DPMPM)")  # fmt: skip
    add_shared_options(p, "DPAreal")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dp-areal`` from parsed arguments."""
    import bayessdc as bsd

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    recipe = build("DPAreal", _sampler(bsd, args.sampler, recipe_options(args, "DPAreal")))
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, out=args.out, policy=args.policy,
            holdout=args.holdout, progress=not args.quiet, **given(args, "synthesize"),
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        return refusal("dp-areal", err, args.out)
    print(summary(release, args.out))
    return 0


def _sampler(bsd: Any, sampler: str, options: dict[str, Any]) -> dict[str, Any]:
    """The recipe's options with the settings of ``--sampler``: Gibbs's (the recipe's default, updated by the
    flags given) or NUTS's (``bsd.SamplerSettings``); a flag of the other sampler is refused (exit status 2)."""
    given_settings = options.get("settings", {})
    own = {"gibbs": ("draws", "burn", "thin", "chains"), "nuts": ("draws", "tune", "target_accept", "chains")}[sampler]
    other = [f"--{n.replace('_', '-')}" for n in ("burn", "thin", "tune", "target_accept")
             if n not in own and n in given_settings]  # fmt: skip
    if other:
        raise ValueError(f"{', '.join(other)} set a setting of the other sampler, not of --sampler {sampler}")
    if sampler == "nuts":
        options["settings"] = bsd.DPAreal.nuts_settings(**given_settings)
    return options


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    f = release.facts
    lines = [
        f"dp-areal: {f['records']} records, {f['patterns']} patterns x {f['labels']} labels, {release.seconds:.1f} s",
        *gate_lines(release),
        *categorical_lines(release),
        f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
    ]
    return "\n".join(lines)


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """DP-areal on a small table simulated from the model (12 patterns x 40 labels), small settings."""
    import bayessdc as bsd

    table = bsd.examples.areal_counts(seed=seed)
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
