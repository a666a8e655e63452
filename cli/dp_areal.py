"""``bayessdc dp-areal``: synthesize a many-level label (for example the county) with the DP-areal model.

Wiring only: the pipeline is :class:`bayessdc.DPAreal` (Hu & Savitsky, Section 2.2) behind
:func:`bayessdc.synthesize`, whose risk and utility are measured exactly as for ``bayessdc dpmpm``, so the two
synthesizers' outputs compare file by file; this module parses the options, calls it and prints the figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .dpmpm import categorical_lines, gate_verdict, parse_ordered_logit

__all__ = ["add_parser", "demo", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc dp-areal``."""
    p = subparsers.add_parser(
        "dp-areal",
        help="DP-areal synthesis of a many-level label: Poisson-lognormal counts per pattern (Hu & Savitsky)",
        description="Replace the --synthesize label of every record by a draw from the label probabilities of its "
        "pattern (the combination of its --keep values) under a Poisson-lognormal model of the label counts with "
        "Dirichlet-process random effects, fitted by NUTS; measure identification and attribute risk against the "
        "inherent minimum and maximum, and utility, exactly as bayessdc dpmpm does; write release/ (synthetic "
        "data, model description) and private/ (diagnostics, risk, utility).",
    )
    p.add_argument("--data", required=True, type=Path, help="input table, CSV or Parquet")
    p.add_argument("--synthesize", required=True, nargs="+", help="the label column to synthesize (one)")
    p.add_argument("--keep", required=True, nargs="+", help="columns released unchanged; they form the patterns")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--K", type=int, default=50, help="number of mixture components (default 50)")
    p.add_argument(
        "--known",
        action="append",
        default=None,
        help="columns an intruder knows, comma-separated; repeat for several knowledge sets "
        "(default: every kept and synthesized column)",
    )
    p.add_argument("--m", type=int, default=20, help="number of synthetic datasets (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--draws", type=int, default=1000, help="NUTS draws kept per chain (default 1000)")
    p.add_argument("--tune", type=int, default=1000, help="NUTS warm-up iterations per chain (default 1000)")
    p.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    p.add_argument("--target-accept", type=float, default=0.9, help="NUTS target acceptance (default 0.9)")
    p.add_argument(
        "--parameterization",
        "--parametrization",  # the spelling of earlier releases, still accepted
        dest="parameterization",
        default="identified",
        choices=["identified", "identified_centred", "noncentred", "centred"],
        help="how the cluster effects are sampled (default identified: the directions the one-hot design cannot "
        "see are integrated out)",
    )
    p.add_argument("--repetitions", type=int, default=100, help="repetitions S of the inherent scenarios (default 100)")
    p.add_argument(
        "--missing", default="refuse", choices=["refuse", "level"], help="missing values: refuse or treat as a level"
    )
    p.add_argument("--max-levels", type=int, default=500, help="most distinct values a column may have (default 500)")
    p.add_argument(
        "--max-cells", type=int, default=300_000, help="most label x pattern cells (default 300,000; beyond: DPMPM)"
    )
    p.add_argument(
        "--ordered-logit",
        action="append",
        default=None,
        metavar="RESPONSE:PRED1,PRED2",
        help="the analyst's ordered logistic regression, as for bayessdc dpmpm (written to private/utility.json)",
    )
    p.add_argument("--allow-unconverged", action="store_true", help="write release outputs even if the gate fails")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dp-areal`` from parsed arguments."""
    import bayessdc as bsd

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    settings = bsd.SamplerSettings(
        draws=args.draws, tune=args.tune, chains=args.chains, target_accept=args.target_accept
    )
    recipe = bsd.DPAreal(
        K=args.K, settings=settings, parameterization=args.parameterization, known=args.known,
        repetitions=args.repetitions, missing=args.missing, max_levels=args.max_levels, max_cells=args.max_cells,
        ordered_logits=[parse_ordered_logit(spec) for spec in args.ordered_logit or []],
    )  # fmt: skip
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, progress=not args.quiet,
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        print(f"bayessdc dp-areal: {err}\nDiagnostics: {args.out / 'private' / 'diagnostics.json'}", file=sys.stderr)
        return 3
    print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    d, f = release.diagnostics, release.facts
    lines = [
        f"dp-areal: {f['records']} records, {f['patterns']} patterns x {f['labels']} labels, {release.seconds:.1f} s",
        f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
        f"{d['divergences']} divergences; occupied components {d['occupied_components']['mean']:.1f} of "
        f"{d['occupied_components']['K']}",
        *categorical_lines(release, ordered_logit=False),
        f"  written: {out / 'release'} and {out / 'private'}",
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
        settings=bsd.SamplerSettings(draws=300, tune=300, chains=2, target_accept=0.9), repetitions=20,
    )  # fmt: skip
    release = bsd.synthesize(
        table, recipe, synthesize=["county"], keep=["gender", "income", "age"], m=5, seed=seed,
        out=Path(out) / "dp-areal", allow_unconverged=True, progress=False,
    )  # fmt: skip
    d, r, u = release.diagnostics, release.risk(), release.utility()
    ident = r["identification"][1]
    rows = [
        ("records", release.facts["records"]),
        ("convergence gate", gate_verdict(d)),
        ("max r_hat", d["max_r_hat"]),
        ("min bulk ESS", d["min_ess_bulk"]),
        ("divergences", d["divergences"]),
        ("occupied components", d["occupied_components"]["mean"]),
        ("expected match risk (g+a+c)", ident["expected_match_risk"]),
        ("  inherent max", ident["inherent"]["max"]["expected_match_risk"]),
        ("exact attribute disclosures", r["attribute"]["disclosures"]),
        ("one-way table deviation", u["table_deviations"]["one-way"]["mean"]),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "dp-areal", "measure": k, "value": v} for k, v in rows]
