"""``bayessdc flows``: synthesize the small counts of an origin-destination flow table (Hawala, Reiter & Wang): its
options, the lines it prints and its demo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...command import Command, Option, synthesize_options

__all__ = ["COMMAND"]


def _priors(text: str) -> Any:
    """``phi_prior=``: a named prior or ``SHAPE,RATE`` (:func:`bayessdc.named_priors`)."""
    from bayessdc.models.flows import named_priors

    return named_priors(text)


def _yes(text: str) -> bool:
    return text == "yes"


def summary(release: Any) -> list[str]:
    """The lines printed after a run: the run, its convergence and every measure
    (:func:`bayessdc.report.text.measure_lines`)."""
    from ...report.text import measure_lines

    d, f = release.diagnostics, release.facts
    sampling = d.summary.get("importance_sampling", {})
    return [
        f"flows: {f['sensitive_cells']} sensitive cells in {f['groups']} group pairs, {release.seconds:.1f} s",
        f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
        f"divergences {d['divergences']}; cells whose importance weights have k-hat > "
        f"{sampling.get('khat_threshold', 0.7)}: {sampling.get('cells_over_threshold', 'n/a')}",
        *measure_lines(release.measured),
    ]


def demo(out: Path, seed: int = 0) -> list[tuple[str, Any]]:
    """The flow synthesizer on the bundled simulated example.

    At the default prior the example is refused (its origins have a few cells a pair, so each cell's count sets
    much of its own rate); the demo then shows the lever the refusal names, stronger pooling (Gamma(100, 1) on
    the precisions), in ``flows-pooled/``."""
    import bayessdc as bsd

    from ...policy import DisclosureRefused
    from ...report.text import measure_rows

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
    d = release.diagnostics
    return [
        *rows,
        ("sensitive cells", release.facts["sensitive_cells"]),
        ("max r_hat", d["max_r_hat"]),
        ("min bulk ESS", d["min_ess_bulk"]),
        ("divergences", d["divergences"]),
        ("cells with k-hat > 0.7", d["importance_sampling"]["cells_over_threshold"]),
        *measure_rows(release),
        ("seconds", release.seconds),
    ]


COMMAND = Command(
    name="flows",
    recipe="Flows",
    help="truncated-Poisson synthesis of small origin-destination counts (Hawala, Reiter & Wang)",
    description="Replace the counts in LOWER..UPPER of an origin-destination table by draws from a truncated-Poisson "
    "model fitted per (origin group, destination group), assess attribute risk by importance sampling, and write "
    "release/ (synthetic data, model description) and private/.",
    options=(
        *synthesize_options("Flows"),
        Option("Flows.settings.draws", "kept draws per chain (default {default})", type=int),
        Option("Flows.settings.tune", "warm-up iterations per chain (default {default})", type=int),
        Option("Flows.settings.chains", "chains per group (default {default})", type=int),
        Option("Flows.settings.backend", "NUTS backend (default {default})",
               choices=("auto", "nutpie", "pymc", "numpyro")),
        Option("Flows.scheduler", "address of a running dask scheduler (default: local)"),
        Option("Flows.workers", "groups fitted at once locally (default: cores)", type=int),
        Option("Flows.lower", "smallest sensitive count (default {default})", type=int),
        Option("Flows.upper", "largest sensitive count (default {default})", type=int),
        Option("Flows.risk_draws", "posterior draws used for risk (default {default})", type=int),
        Option("synthesize.allow_unconverged", "write release outputs even if a group fails the convergence gate "
               "(recorded in the outputs)", action="store_true"),
        *(Option(f"Flows.columns.{name}", f"column of the {name} (default {{default}})")
          for name in ("origin", "destination", "origin_group", "destination_group", "count")),
        Option("Flows.max_extensions", "more sampling for a group that fails the convergence gate: its chains "
               "continued by as many draws again, then refits with 4x the draws or a higher target_accept (default "
               "{default})", type=int),
        Option("Flows.priors", "Gamma prior of the precisions phi_beta, phi_gamma: weakly-informative (Gamma(1, 1)), "
               "paper (the paper's Gamma(0.01, 0.01)) or SHAPE,RATE (default {default})", flag="phi-prior",
               metavar="PHI_PRIOR", show=lambda priors: f"Gamma({priors.phi_shape:g}, {priors.phi_rate:g})",
               parse=_priors),
        Option("Flows.exact_check", "refit the model for the N cells with the largest k-hat, once per candidate "
               "count, to measure the importance-sampling approximation (private/exact_check.json; default "
               "{default})", type=int, metavar="N"),
        Option("Flows.no_knowledge", "also measure the intruder who knows no sensitive count (Section 3.1) beside the "
               "worst case, by m refits of each group pair to its synthetic tables (default {default}; reported, not "
               "judged)", choices=("yes", "no"), parse=_yes),
    ),  # fmt: skip
    records=False,
    summary=summary,
    demo=demo,
)
