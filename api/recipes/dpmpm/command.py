"""``bayessdc dpmpm``: synthesize categorical columns (for example a many-level geography label) with the DPMPM
(Hu & Savitsky, Section 2.1): its options, the lines it prints and its demo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...command import Command, Option, columns, synthesize_options
from ..categorical.command import GROUPS, categorical_lines, demo_release, gate_lines, roles, shared_options

__all__ = ["COMMAND"]


def summary(release: Any) -> list[str]:
    """The lines printed after a run."""
    f = release.facts
    return [
        f"dpmpm: {f['records']} records in {f['cells']} cells, {release.seconds:.1f} s",
        *gate_lines(release),
        *categorical_lines(release),
    ]


def demo(out: Path, seed: int = 0) -> list[tuple[str, Any]]:
    """The DPMPM on the bundled CE-like simulator (n = 6,208, 40 patterns, 133 counties), small settings."""
    import bayessdc as bsd

    recipe = bsd.DPMPM(
        K=40, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=bsd.GibbsSettings(draws=2000, burn=1000, chains=8, thin=4),
        repetitions=20, risk_records=200, risk_draws=100,
    )  # fmt: skip
    return demo_release(bsd.examples.ce_like(seed=seed), recipe, Path(out) / "dpmpm", seed, synthesize=["county"],
                        keep=["gender", "income", "age"])  # fmt: skip


COMMAND = Command(
    name="dpmpm",
    recipe="DPMPM",
    help="DPMPM synthesis of categorical columns such as a many-level geography label (Hu & Savitsky)",
    description="Replace the synthesize= columns of every record by draws from a Dirichlet-process mixture of "
    "products of multinomials fitted to the synthesize= and keep= columns, measure identification and attribute risk "
    "against the inherent minimum and maximum, and utility, and write release/ (synthetic data, model description) "
    "and private/ (diagnostics, risk, utility).",
    options=(
        *roles("columns to synthesize (comma-separated or words)", "columns released unchanged and modelled"),
        Option("DPMPM.K", "number of mixture components (default {default})", type=int),
        Option("DPMPM.conditioning", "latent class for synthesis drawn given all of the record's values (full), the "
               "kept values only (pattern) or pi alone (prior); default {default}",
               choices=("full", "pattern", "prior")),
        *synthesize_options("DPMPM"),
        Option("DPMPM.settings.draws", "Gibbs iterations kept per chain (default {default})", type=int),
        Option("DPMPM.settings.burn", "burn-in iterations per chain (default {default})", type=int),
        Option("DPMPM.settings.chains", "chains, pooled by the release gate (default {default})", type=int),
        Option("DPMPM.settings.thin", "store every thin-th iteration (default {default})", type=int),
        Option("DPMPM.priors.a_alpha", "shape of alpha's gamma prior (default {default})", type=float),
        Option("DPMPM.priors.b_alpha", "rate of alpha's gamma prior (default {default})", type=float),
        Option("DPMPM.risk_records", "records whose Bayesian attribute risk is computed by importance sampling "
               "(default {default}; 0: none)", type=int),
        Option("DPMPM.risk_draws", "posterior draws used as proposals (default {default})", type=int),
        *shared_options("DPMPM"),
        Option("DPMPM.area_model", "with strata=: synthesize the area first, each record's area drawn by this model "
               "(its defaults; gated by its release gate) given its kept values, then its synthesized columns by the "
               "DPMPM of its synthetic area; each area's number of records is then synthetic",
               choices=("dpmpm", "dp_areal")),
        Option("DPMPM.area_columns", "comma-separated columns the area model synthesizes with the area (dpmpm only)",
               parse=columns, metavar="A,B"),
        Option("DPMPM.area_given", "comma-separated kept columns the area model draws the area given (default: every "
               "kept column)", parse=columns, metavar="A,B"),
    ),  # fmt: skip
    groups=GROUPS,
    summary=summary,
    demo=demo,
)
