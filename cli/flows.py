"""``bayessdc flows``: synthesize the small counts of an origin-destination flow table (wiring only)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import DATA_HELP, UserError, synthesize_options
from .failures import gate_refusal
from .options import build, given, option

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
    synthesize_options(p, "Flows")
    option(p, "--draws", to="Flows.settings.draws", type=int, help="kept draws per chain (default {default})")
    option(p, "--tune", to="Flows.settings.tune", type=int, help="warm-up iterations per chain (default {default})")
    option(p, "--chains", to="Flows.settings.chains", type=int, help="chains per group (default {default})")
    option(p, "--backend", to="Flows.settings.backend", choices=["auto", "nutpie", "pymc", "numpyro"],
           help="NUTS backend (default {default})")  # fmt: skip
    option(p, "--scheduler", to="Flows.scheduler", help="address of a running dask scheduler (default: local)")
    option(p, "--workers", to="Flows.workers", type=int, help="groups fitted at once locally (default: cores)")
    option(p, "--lower", to="Flows.lower", type=int, help="smallest sensitive count (default {default})")
    option(p, "--upper", to="Flows.upper", type=int, help="largest sensitive count (default {default})")
    option(p, "--risk-draws", to="Flows.risk_draws", type=int, help="posterior draws used for risk (default {default})")
    option(
        p, "--allow-unconverged", to="synthesize.allow_unconverged", action="store_true",
        help="write release outputs even if a group fails the convergence gate (recorded in the outputs)",
    )  # fmt: skip
    for name in ("origin", "destination", "origin_group", "destination_group", "count"):
        option(p, f"--{name.replace('_', '-')}", to=f"Flows.columns.{name}",
               help=f"column of the {name} (default {{default}})")  # fmt: skip
    option(
        p, "--max-extensions", to="Flows.max_extensions", type=int,
        help="more sampling for a group that fails the convergence gate: its chains continued by as many draws "
        "again, then refits with 4x the draws or a higher target_accept (default {default})",
    )  # fmt: skip
    option(
        p, "--phi-prior", to="Flows.priors", metavar="PHI_PRIOR",
        show=lambda priors: f"Gamma({priors.phi_shape:g}, {priors.phi_rate:g})",
        help="Gamma prior of the precisions phi_beta, phi_gamma: weakly-informative (Gamma(1, 1)), paper (the "
        "paper's Gamma(0.01, 0.01)) or SHAPE,RATE (default {default})",
    )  # fmt: skip
    option(
        p, "--exact-check", to="Flows.exact_check", type=int, metavar="N",
        help="refit the model for the N cells with the largest k-hat, once per candidate count, to measure "
        "the importance-sampling approximation (private/exact_check.json; default {default})",
    )  # fmt: skip
    option(
        p, "--no-knowledge", to="Flows.no_knowledge", choices=("yes", "no"),
        help="also measure the intruder who knows no sensitive count (Section 3.1) beside the worst case, by m "
        "refits of each group pair to its synthetic tables (default {default}; reported, not judged)",
    )  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc flows`` from parsed arguments."""
    import bayessdc as bsd

    options = given(args, "Flows")
    if "priors" in options:
        try:
            options["priors"] = bsd.named_priors(options["priors"])
        except ValueError as err:
            raise UserError(f"--phi-prior: {err}") from None
    if "no_knowledge" in options:
        options["no_knowledge"] = options["no_knowledge"] == "yes"
    recipe = build("Flows", options)
    table = bsd.read_table(args.data)
    try:
        release = bsd.synthesize(
            table, recipe, out=args.out, policy=args.policy, progress=not args.quiet, **given(args, "synthesize")
        )
    except bsd.ConvergenceError as err:
        return gate_refusal("flows", str(err), args.out)
    print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run: the run, its convergence, and every measure (:func:`measure_lines`)."""
    from bayessdc.report.text import measure_lines

    d, f = release.diagnostics, release.facts
    sampling = d.summary.get("importance_sampling", {})
    return "\n".join(
        [
            f"flows: {f['sensitive_cells']} sensitive cells in {f['groups']} group pairs, {release.seconds:.1f} s",
            f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
            f"divergences {d['divergences']}; cells whose importance weights have k-hat > "
            f"{sampling.get('khat_threshold', 0.7)}: {sampling.get('cells_over_threshold', 'n/a')}",
            *measure_lines(release.measured),
            f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
        ]
    )


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """Run the flow synthesizer on the bundled simulated example; rows of figures for ``bayessdc demo``.

    At the default prior the example is refused (its origins have a few cells a pair, so each cell's count sets
    much of its own rate); the demo then shows the lever the refusal names, stronger pooling (Gamma(100, 1) on
    the precisions), in ``flows-pooled/``."""
    import bayessdc as bsd
    from bayessdc.policy import DisclosureRefused
    from bayessdc.report.text import measure_rows

    table = bsd.examples.flow_table(n_states=3, counties_per_state=12, seed=seed)
    rows: list[tuple[str, Any]] = [("precision prior", "Gamma(1, 1)")]
    try:
        release = bsd.synthesize(table, bsd.Flows(risk_draws=500), m=5, seed=seed, out=Path(out) / "flows",
                                 progress=False)  # fmt: skip
    except DisclosureRefused:
        rows.append(("release", "refused by the disclosure policy (R_all above a release without the cell)"))
        rows.append(("precision prior, pooled", "Gamma(100, 1) (the refusal's lever 'priors')"))
        release = bsd.synthesize(table, bsd.Flows(risk_draws=500, priors=bsd.FlowPriors(phi_shape=100.0, phi_rate=1.0)),
                                 m=5, seed=seed, out=Path(out) / "flows-pooled", progress=False)  # fmt: skip
        rows.append(("disclosure policy, pooled", release.policy.sentence()))
    d = release.diagnostics
    rows += [
        ("sensitive cells", release.facts["sensitive_cells"]),
        ("max r_hat", d["max_r_hat"]),
        ("min bulk ESS", d["min_ess_bulk"]),
        ("divergences", d["divergences"]),
        ("cells with k-hat > 0.7", d["importance_sampling"]["cells_over_threshold"]),
        *measure_rows(release),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "flows", "measure": k, "value": v} for k, v in rows]
