"""What ``bayessdc dpmpm`` and ``bayessdc dp-areal`` share: their options of the categorical recipe, and the lines
and demo rows of a release the release gate decides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...command import Option, columns

__all__ = [
    "categorical_lines", "demo_release", "demo_rows", "gate_lines", "gate_verdict", "ordered_logit", "roles",
    "shared_options",
]  # fmt: skip


def ordered_logit(spec: str) -> tuple[str, list[str]]:
    """``"RESPONSE:PRED1,PRED2"`` as ``(response, [predictors])``; anything else is a ValueError."""
    response, sep, rest = spec.partition(":")
    predictors = columns(rest)
    if not sep or not response.strip() or not predictors:
        raise ValueError("expected RESPONSE:PRED1,PRED2 (for example income:county,age)")
    return response.strip(), predictors


def roles(synthesize: str, keep: str) -> tuple[Option, ...]:
    """``synthesize=`` and ``keep=`` of ``bsd.synthesize``, required, with their help (comma-separated or as words:
    ``bsd.synthesize`` reads either)."""
    return (
        Option("synthesize.synthesize", synthesize, nargs="+", required=True),
        Option("synthesize.keep", keep, nargs="+", required=True),
    )


def shared_options(recipe: str) -> tuple[Option, ...]:
    """The options both commands take, fields of ``bsd.<recipe>`` (``"DPMPM"``, ``"DPAreal"``): knowledge sets,
    inherent repetitions, missing values, level limits, structural zeros, ordered logits, the release gate's
    settings, synthesis area by area (``strata=``, ``min_stratum=``, ``pool_by=``) and ``allow_unconverged=``."""
    gate = "release gate"
    return (
        Option(f"{recipe}.known", "columns an intruder knows, comma-separated; repeat for several knowledge sets "
               "(default: every kept and synthesized column)", action="append", metavar="KNOWN"),
        Option(f"{recipe}.repetitions", "repetitions S of the inherent scenarios (default {default})", type=int),
        Option(f"{recipe}.missing", "missing values: refuse or treat as a level (default {default})",
               choices=("refuse", "level")),
        Option(f"{recipe}.max_levels", "most distinct values a column may have (default {default})", type=int),
        Option(f"{recipe}.max_numeric_levels", "most distinct values of a numeric column that is not a run of codes "
               "(default {default}; beyond: band it first)", type=int),
        Option(f"{recipe}.structural_zeros", "structural zeros (combinations that can never occur): JSON or YAML in "
               "the format of bayessdc cart's rules= (models.structural_zeros)", flag="rules", type=Path,
               metavar="RULES"),
        Option(f"{recipe}.ordered_logits", "the analyst's ordered logistic regression of RESPONSE (ordered by its "
               "sorted values) on the one-hot predictors, fitted to the original and to every synthetic dataset and "
               "combined with the partially synthetic rules (the measure ci_overlap); repeat for several models (for "
               "example income:county,age,gender)", flag="ordered-logit", action="append",
               metavar="RESPONSE:PRED1,PRED2", parse=ordered_logit),
        Option(f"{recipe}.gate.datasets_per_chain", "synthetic datasets drawn from each chain for the gate (default "
               "{default}; only m= are released)", flag="gate-datasets", type=int, group=gate),
        Option(f"{recipe}.gate.max_chains", "chains added while the gate fails on precision alone, up to this many in "
               "all (default {default}; equal to chains=: judged once)", type=int, group=gate),
        Option(f"{recipe}.gate.time_budget", "seconds the fit may take, added chains included (default: no limit)",
               type=float, metavar="SECONDS", group=gate),
        Option(f"{recipe}.gate.risk_tolerance", "largest between-chain SE of a risk figure, as a share of its inherent "
               "min-max range (default {default})", type=float, group=gate),
        Option(f"{recipe}.gate.utility_tolerance", "largest between-chain SE of a figure, as a share of its "
               "per-dataset sd (default {default})", type=float, group=gate),
        Option(f"{recipe}.strata", "a column of areas: each area's records fitted and synthesized by a model of their "
               "own (small areas pooled), each group judged by its own release gate (released when every group's "
               "passes), the column kept; records copied reported per area", metavar="COLUMN"),
        Option(f"{recipe}.min_stratum", "fewest records an area's model is fitted on; smaller areas are pooled "
               "(default: 10 + 10 per synthesized column, synthpop's minstratumsize)", type=int, metavar="N"),
        Option(f"{recipe}.pool_by", "a coarser area holding each area whole, within which the small areas are "
               "pooled", metavar="COLUMN"),
        Option("synthesize.allow_unconverged", "write release outputs even if the release gate fails (recorded in "
               "release/model.json)", action="store_true"),
    )  # fmt: skip


#: The help's group of the release gate's options.
GROUPS = {
    "release gate": "the release figures (risk, utility) of synthetic datasets drawn from every chain must agree "
    "between chains: the between-chain standard error of each pooled figure within its tolerance",
}


def gate_verdict(diagnostics: Any) -> str:
    """The demo table's word on the gate that decides the release: a failed gate is said, not left to a figure."""
    return "passed" if diagnostics["passed"] else "FAILED (the demo releases anyway)"


def gate_lines(release: Any) -> list[str]:
    """The release gate's verdict and the parameter gate's figures (a diagnostic), as printed after a run."""
    d = release.diagnostics
    gate = d["release_gate"]
    worst = max(
        (f for f in gate["figures"].values() if f.get("tolerance")),
        key=lambda f: f["between_chain_se"] / f["tolerance"],
        default=None,
    )
    ratio = f"; largest SE / tolerance {worst['between_chain_se'] / worst['tolerance']:.2f}" if worst else ""
    oc, p = d["occupied_components"], d["parameter_gate"]
    chains = f"{gate['chains']} chains"
    by_group = gate.get("chains_by_group")  # synthesized area by area: each group's gate
    if by_group:
        low, high = min(by_group.values()), max(by_group.values())
        chains = f"{len(by_group)} groups of {low if low == high else f'{low} to {high}'} chains"
    return [
        f"  release gate: {d.verdict} ({chains} x {gate['datasets_per_chain']} datasets, "
        f"{len(gate['figures'])} figures{ratio})",
        f"  parameter gate (diagnostic): {'passed' if p['passed'] else 'failed'}, max r_hat {d['max_r_hat']:.3f}, "
        f"min bulk ESS {d['min_ess_bulk']:.0f}; occupied components {oc['mean']:.1f} of {oc['K']}",
    ]


def categorical_lines(release: Any) -> list[str]:
    """The measure lines (:func:`bayessdc.report.text.measure_lines`) and the Bayesian attribute risk's reliability
    where it was assessed."""
    from ...report.text import measure_lines

    lines = measure_lines(release.measured)
    sampling = release.diagnostics.summary.get("importance_sampling")
    if sampling:
        lines.append(f"  Bayesian attribute risk of {sampling['records_assessed']} records: importance weights with "
                     f"k-hat > 0.7 for {sampling['khat_over_0_7']}")  # fmt: skip
    return lines


def demo_release(table: Any, recipe: Any, out: Path, seed: int, **roles: Any) -> list[tuple[str, Any]]:
    """The demo table's rows of ``recipe`` released from ``table`` (m = 5, into ``out``): the gate's failure said in
    the table when it refuses, nothing released (:func:`demo_rows` otherwise)."""
    import bayessdc as bsd

    try:
        release = bsd.synthesize(table, recipe, **roles, m=5, seed=seed, out=out, progress=False)
    except bsd.ConvergenceError as err:
        return [("release gate", f"FAILED: {err}")]
    return demo_rows(release)


def demo_rows(release: Any) -> list[tuple[str, Any]]:
    """The demo table's rows for a categorical release: the release gate's verdict first."""
    from ...report.text import measure_rows

    d = release.diagnostics
    gate = d["release_gate"]
    ratios = [f["between_chain_se"] / f["tolerance"] for f in gate["figures"].values() if f.get("tolerance")]
    rows = [
        ("records", release.facts["records"]),
        ("release gate", gate_verdict(d)),
        ("  chains x gate datasets", f"{gate['chains']} x {gate['datasets_per_chain']}"),
        ("  largest SE / tolerance", max(ratios) if ratios else None),
        ("parameter gate (diagnostic)", "passed" if d["parameter_gate"]["passed"] else "failed"),
        ("  max r_hat", d["max_r_hat"]),
    ]
    if "divergences" in gate:
        rows.append(("  divergences", gate["divergences"]))
    rows += [
        ("occupied components", d["occupied_components"]["mean"]),
        *measure_rows(release),
        ("seconds", release.seconds),
    ]
    return rows
