"""``bayessdc dp-areal``: synthesize a many-level label (for example the county) with the DP-areal model (Hu &
Savitsky, Section 2.2), measured exactly as ``bayessdc dpmpm`` is, so the two synthesizers' outputs compare file by
file: its options, the lines it prints and its demo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...command import Command, Option, synthesize_options
from ..categorical.command import GROUPS, categorical_lines, demo_release, gate_lines, roles, shared_options

__all__ = ["COMMAND", "sampler_settings"]

#: The settings each sampler has (besides ``chains``), by ``sampler=``.
_OWN = {"gibbs": ("draws", "burn", "thin", "chains"), "nuts": ("draws", "tune", "target_accept", "chains")}


def sampler_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The recipe's options with the settings of the sampler chosen (``sampler``, default ``"gibbs"``): Gibbs's
    (the recipe's default, updated by the options given) or NUTS's (:meth:`bayessdc.DPAreal.nuts_settings`); a
    setting of the other sampler is a ValueError naming it."""
    options = dict(options)
    sampler = options.pop("sampler", "gibbs")
    given = options.get("settings", {})
    other = [f"{n}=" for n in ("burn", "thin", "tune", "target_accept") if n not in _OWN[sampler] and n in given]
    if other:
        raise ValueError(f"{', '.join(other)} set a setting of the other sampler, not of sampler={sampler}")
    if sampler == "nuts":
        from .recipe import DPAreal

        options["settings"] = DPAreal.nuts_settings(**given)
    return options


def summary(release: Any) -> list[str]:
    """The lines printed after a run."""
    f = release.facts
    return [
        f"dp-areal: {f['records']} records, {f['patterns']} patterns x {f['labels']} labels, {release.seconds:.1f} s",
        *gate_lines(release),
        *categorical_lines(release),
    ]


def demo(out: Path, seed: int = 0) -> list[tuple[str, Any]]:
    """DP-areal on a small table simulated from the model (12 patterns x 40 labels), small settings."""
    import bayessdc as bsd

    table = bsd.examples.areal_counts(seed=seed)
    recipe = bsd.DPAreal(
        K=10, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=bsd.DPArealGibbsSettings(draws=250, burn=500, thin=4, chains=4), repetitions=20,
    )  # fmt: skip
    return demo_release(table, recipe, Path(out) / "dp-areal", seed, synthesize=["county"],
                        keep=["gender", "income", "age"])  # fmt: skip


COMMAND = Command(
    name="dp-areal",
    recipe="DPAreal",
    help="DP-areal synthesis of a many-level label: Poisson-lognormal counts per pattern (Hu & Savitsky)",
    description="Replace the synthesize= label of every record by a draw from the label probabilities of its pattern "
    "(the combination of its keep= values) under a Poisson-lognormal model of the label counts with Dirichlet-process "
    "random effects, fitted by a Gibbs sampler (or NUTS); measure identification and attribute risk against the "
    "inherent minimum and maximum, and utility, exactly as bayessdc dpmpm does; write release/ (synthetic data, model "
    "description) and private/ (diagnostics, risk, utility).",
    options=(
        *roles("the label column to synthesize (one)", "columns released unchanged; they form the patterns"),
        Option("DPAreal.K", "number of mixture components (default {default})", type=int),
        *synthesize_options("DPAreal"),
        Option("sampler", "gibbs (default, bsd.DPArealGibbsSettings): the partially collapsed Gibbs sampler; "
               "nuts (bsd.SamplerSettings): NUTS with the labels summed out, on the same posterior",
               choices=("gibbs", "nuts")),
        Option("DPAreal.settings.draws", "draws kept per chain (default {default}; nuts: {nuts})", type=int,
               shows={"default": "DPAreal.settings.draws", "nuts": "SamplerSettings.draws"}),
        Option("DPAreal.settings.burn", "Gibbs sweeps discarded per chain (default {default})", type=int),
        Option("DPAreal.settings.thin", "Gibbs sweeps per kept draw (default {default})", type=int),
        Option("DPAreal.settings.tune", "NUTS warm-up iterations per chain (default {default})", type=int,
               shows="SamplerSettings.tune"),
        Option("DPAreal.settings.chains", "chains, pooled by the release gate (default {default})", type=int),
        Option("DPAreal.settings.target_accept", "NUTS target acceptance (default {default}, measured on the model)",
               type=float, shows="DPAreal.nuts_target_accept"),
        Option("DPAreal.parameterization", "how the cluster effects are sampled (default {default}; identified: the "
               "directions the one-hot design cannot see are integrated out)", aliases=("parametrization",),
               choices=("identified", "identified_centred", "noncentred", "centred")),
        Option("DPAreal.max_cells", "most label x pattern cells (default {default}; beyond: DPMPM)", type=int),
        *shared_options("DPAreal"),
    ),  # fmt: skip
    groups=GROUPS,
    arrange=sampler_settings,
    summary=summary,
    demo=demo,
)
