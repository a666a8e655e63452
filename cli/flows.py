"""``bayessdc flows``: synthesize the small counts of an origin-destination flow table (wiring only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import DATA_HELP, UserError

__all__ = ["add_parser", "demo", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc flows``."""
    p = subparsers.add_parser(
        "flows",
        help="truncated-Poisson synthesis of small origin-destination counts (Hawala, Reiter & Wang)",
        description="Replace the counts in LOWER..UPPER of an origin-destination table by draws from a "
        "truncated-Poisson model fitted per (origin group, destination group), assess attribute risk by "
        "importance sampling, and write release/ (synthetic data, model description) and private/.",
    )
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--out", required=True, type=Path, help="output folder (resumed if it holds the same run)")
    p.add_argument("--m", type=int, default=None, help="synthetic datasets (default 5: the recipe's default_m)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--draws", type=int, default=1000, help="kept draws per chain (default 1000)")
    p.add_argument("--tune", type=int, default=500, help="warm-up iterations per chain (default 500)")
    p.add_argument("--chains", type=int, default=4, help="chains per group (default 4)")
    p.add_argument("--backend", default="auto", choices=["auto", "nutpie", "pymc", "numpyro"])
    p.add_argument("--scheduler", default=None, help="address of a running dask scheduler (default: local)")
    p.add_argument("--workers", type=int, default=None, help="groups fitted at once locally (default: cores)")
    p.add_argument("--lower", type=int, default=1, help="smallest sensitive count (default 1)")
    p.add_argument("--upper", type=int, default=9, help="largest sensitive count (default 9)")
    p.add_argument("--risk-draws", type=int, default=1000, help="posterior draws used for risk (default 1000)")
    p.add_argument(
        "--allow-unconverged",
        action="store_true",
        help="write release outputs even if a group fails the convergence gate (recorded in the outputs)",
    )
    for name in ("origin", "destination", "origin_group", "destination_group", "count"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=f"col_{name}", default=name, help=f"column of the {name}")
    p.add_argument(
        "--max-extensions",
        type=int,
        default=2,
        help="more sampling for a group that fails the convergence gate: its chains continued by as many draws "
        "again, then refits with 4x the draws or a higher target_accept (default 2)",
    )
    p.add_argument(
        "--phi-prior",
        default="weakly-informative",
        help="Gamma prior of the precisions phi_beta, phi_gamma: weakly-informative (Gamma(1, 1), the default), "
        "paper (the paper's Gamma(0.01, 0.01)) or SHAPE,RATE",
    )
    p.add_argument(
        "--exact-check",
        type=int,
        default=0,
        metavar="N",
        help="refit the model for the N cells with the largest k-hat, once per candidate count, to measure "
        "the importance-sampling approximation (private/exact_check.json)",
    )
    p.add_argument(
        "--no-knowledge",
        choices=("yes", "no"),
        default="yes",
        help="also measure the intruder who knows no sensitive count (Section 3.1) beside the worst case, by m "
        "refits of each group pair to its synthetic tables (default yes; reported, not judged)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc flows`` from parsed arguments."""
    import bayessdc as bsd
    from bayessdc.models.flows import FlowColumns, named_priors

    try:
        priors = named_priors(args.phi_prior)
    except ValueError as err:
        raise UserError(f"--phi-prior: {err}") from None
    recipe = bsd.Flows(
        priors=priors,
        settings=bsd.SamplerSettings(
            draws=args.draws, tune=args.tune, chains=args.chains, backend=args.backend, low_rank_mass_matrix=True
        ),
        columns=FlowColumns(
            args.col_origin, args.col_destination, args.col_origin_group, args.col_destination_group, args.col_count
        ),
        lower=args.lower,
        upper=args.upper,
        scheduler=args.scheduler,
        workers=args.workers,
        risk_draws=args.risk_draws,
        max_extensions=args.max_extensions,
        exact_check=args.exact_check,
        no_knowledge=args.no_knowledge == "yes",
    )
    table = bsd.read_table(args.data)
    try:
        release = bsd.synthesize(
            table, recipe, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, policy=args.policy, progress=not args.quiet,
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        print(f"bayessdc flows: {err}\nDiagnostics: {args.out / 'private' / 'diagnostics.json'}", file=sys.stderr)
        return 3
    print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    d, r, u, f = release.diagnostics, release.risk_figures, release.utility_figures, release.facts
    r_unq = "n/a" if r.get("R_unq") is None else f"{r['R_unq']:.3f}"
    return "\n".join(
        [
            f"flows: {f['sensitive_cells']} sensitive cells in {f['groups']} group pairs, {release.seconds:.1f} s",
            f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
            f"divergences {d['divergences']}",
            f"  attribute risk: R_all {r['R_all']:.3f}, R_unq {r_unq}, "
            f"mean d_t {r['d_t']['mean']:.2f}, cells with k-hat > 0.7: {r['khat_over_0_7']}",
            f"  R_all from a release without the cell {r['unlearned']['R_all']['mean']:.3f} (range "
            f"{r['unlearned']['R_all']['range']:.3f})"
            + (f"; the intruder who knows no count: {r['no_knowledge']['R_all']:.3f}" if "no_knowledge" in r else ""),
            f"  utility: tau (all cells) {u['cells']['tau']:.4f}, tau (sensitive cells) "
            f"{u['sensitive_cells']['tau']:.3f}, origin totals tau {u['origin_totals']['tau']:.3f}",
            f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
        ]
    )


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """Run the flow synthesizer on the bundled simulated example; rows of figures for ``bayessdc demo``.

    At the default prior the example is refused (its origins have a few cells a pair, so each cell's count sets
    much of its own rate); the demo then shows the lever the refusal names, stronger pooling (Gamma(100, 1) on
    the precisions), in ``flows-pooled/``."""
    import bayessdc as bsd
    from bayessdc.models.flows import FlowPriors, simulate_flow_table
    from bayessdc.policy import DisclosureRefused

    table = simulate_flow_table(n_states=3, counties_per_state=12, scale=0.01, seed=seed)
    rows: list[tuple[str, Any]] = [("precision prior", "Gamma(1, 1)")]
    try:
        release = bsd.synthesize(table, bsd.Flows(risk_draws=500), m=5, seed=seed, out=Path(out) / "flows",
                                 progress=False)  # fmt: skip
    except DisclosureRefused:
        rows.append(("release", "refused by the disclosure policy (R_all above a release without the cell)"))
        rows.append(("precision prior, pooled", "Gamma(100, 1) (the refusal's lever 'priors')"))
        release = bsd.synthesize(table, bsd.Flows(risk_draws=500, priors=FlowPriors(phi_shape=100.0, phi_rate=1.0)),
                                 m=5, seed=seed, out=Path(out) / "flows-pooled", progress=False)  # fmt: skip
        rows.append(("disclosure policy, pooled", release.policy.sentence()))
    d, r, u = release.diagnostics, release.risk_figures, release.utility_figures
    rows += [
        ("sensitive cells", release.facts["sensitive_cells"]),
        ("max r_hat", d["max_r_hat"]),
        ("min bulk ESS", d["min_ess_bulk"]),
        ("divergences", d["divergences"]),
        ("R_all (attribute risk)", r["R_all"]),
        ("R_all, release without the cell", r["unlearned"]["R_all"]["mean"]),
        ("R_all, intruder who knows no count", r["no_knowledge"]["R_all"]),
        ("R_unq", r["R_unq"]),
        ("cells with k-hat > 0.7", r["khat_over_0_7"]),
        ("tau, all cells", u["cells"]["tau"]),
        ("tau, origin totals", u["origin_totals"]["tau"]),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "flows", "measure": k, "value": v} for k, v in rows]
