"""Options, messages and summary lines that ``bayessdc dpmpm`` and ``bayessdc dp-areal`` share.

Both synthesizers are judged by the release gate (:mod:`bayessdc.synthesis.release_gate`) and measured by the
same risk and utility step, so their options and printed figures are declared once here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import UserError
from .failures import gate_refusal
from .options import given, option

__all__ = [
    "add_shared_options", "categorical_lines", "gate_lines", "demo_rows", "gate_verdict", "parse_ordered_logit",
    "recipe_options", "refusal",
]  # fmt: skip


def parse_ordered_logit(spec: str) -> tuple[str, list[str]]:
    """``"RESPONSE:PRED1,PRED2"`` as ``(response, [predictors])``."""
    response, sep, rest = spec.partition(":")
    predictors = [c.strip() for c in rest.split(",") if c.strip()]
    if not sep or not response.strip() or not predictors:
        raise UserError(f"--ordered-logit {spec!r}: expected RESPONSE:PRED1,PRED2 (for example income:county,age)")
    return response.strip(), predictors


def add_shared_options(p: argparse.ArgumentParser, recipe: str) -> None:
    """The options both commands take, fields of ``bsd.<recipe>`` (``"DPMPM"``, ``"DPAreal"``): knowledge sets,
    inherent repetitions, missing values, level limits, structural zeros, ordered logits, the release gate's
    settings and ``--allow-unconverged`` (``--quiet`` and ``--verbose`` are every subcommand's)."""
    option(
        p, "--known", to=f"{recipe}.known", action="append", metavar="KNOWN", help="columns an intruder knows, "
        "comma-separated; repeat for several knowledge sets (default: every kept and synthesized column)",
    )  # fmt: skip
    option(p, "--repetitions", to=f"{recipe}.repetitions", type=int,
           help="repetitions S of the inherent scenarios (default {default})")  # fmt: skip
    option(p, "--missing", to=f"{recipe}.missing", choices=["refuse", "level"],
           help="missing values: refuse or treat as a level (default {default})")  # fmt: skip
    option(p, "--max-levels", to=f"{recipe}.max_levels", type=int,
           help="most distinct values a column may have (default {default})")  # fmt: skip
    option(p, "--max-numeric-levels", to=f"{recipe}.max_numeric_levels", type=int, help="most distinct values of a "
           "numeric column that is not a run of codes (default {default}; beyond: band it first)")  # fmt: skip
    option(p, "--rules", to=f"{recipe}.structural_zeros", type=Path, metavar="RULES", help="structural zeros "
           "(combinations that can never occur): JSON or YAML in the format of bayessdc cart --rules "
           "(models.structural_zeros)")  # fmt: skip
    option(
        p, "--ordered-logit", to=f"{recipe}.ordered_logits", action="append", metavar="RESPONSE:PRED1,PRED2",
        help="the analyst's ordered logistic regression of RESPONSE (ordered by its sorted values) on the one-hot "
        "predictors, fitted to the original and to every synthetic dataset and combined with the partially synthetic "
        "rules (the measure ci_overlap); repeat for several models (for example income:county,age,gender)",
    )  # fmt: skip
    gate = p.add_argument_group(
        "release gate", "the release figures (risk, utility) of synthetic datasets drawn from every chain must agree "
        "between chains: the between-chain standard error of each pooled figure within its tolerance",
    )  # fmt: skip
    option(gate, "--gate-datasets", to=f"{recipe}.gate.datasets_per_chain", type=int, help="synthetic datasets "
           "drawn from each chain for the gate (default {default}; only --m are released)")  # fmt: skip
    option(gate, "--max-chains", to=f"{recipe}.gate.max_chains", type=int, help="chains added while the gate "
           "fails on precision alone, up to this many in all (default {default}; equal to --chains: judged once)")
    option(gate, "--time-budget", to=f"{recipe}.gate.time_budget", type=float, metavar="SECONDS",
           help="seconds the fit may take, added chains included (default: no limit)")  # fmt: skip
    option(gate, "--risk-tolerance", to=f"{recipe}.gate.risk_tolerance", type=float, help="largest between-chain "
           "SE of a risk figure, as a share of its inherent min-max range (default {default})")  # fmt: skip
    option(gate, "--utility-tolerance", to=f"{recipe}.gate.utility_tolerance", type=float,
           help="largest between-chain SE of a figure, as a share of its per-dataset sd (default {default})")
    option(
        p, "--allow-unconverged", to="synthesize.allow_unconverged", action="store_true",
        help="write release outputs even if the release gate fails (recorded in release/model.json)",
    )  # fmt: skip


def recipe_options(args: argparse.Namespace, recipe: str) -> dict[str, Any]:
    """The options given for ``bsd.<recipe>`` as its keyword arguments (``--ordered-logit`` parsed)."""
    options = given(args, recipe)
    if "ordered_logits" in options:
        options["ordered_logits"] = [parse_ordered_logit(spec) for spec in options["ordered_logits"]]
    return options


def refusal(command: str, err: Exception, out: Path) -> int:
    """Print a refusal of the gate (parameters named as flags) and return exit status 3."""
    message = str(err).replace("(draws=, tune=)", "(draws=, burn=)") if command == "dpmpm" else str(err)
    return gate_refusal(command, message, out)


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
    return [
        f"  release gate: {d.verdict} ({gate['chains']} chains x {gate['datasets_per_chain']} datasets, "
        f"{len(gate['figures'])} figures{ratio})",
        f"  parameter gate (diagnostic): {'passed' if p['passed'] else 'failed'}, max r_hat {d['max_r_hat']:.3f}, "
        f"min bulk ESS {d['min_ess_bulk']:.0f}; occupied components {oc['mean']:.1f} of {oc['K']}",
    ]


def categorical_lines(release: Any) -> list[str]:
    """The measure lines of ``dpmpm`` and ``dp-areal`` (:func:`bayessdc.report.text.measure_lines`) and the Bayesian
    attribute risk's reliability where it was assessed."""
    from bayessdc.report.text import measure_lines

    lines = measure_lines(release.measured)
    sampling = release.diagnostics.summary.get("importance_sampling")
    if sampling:
        lines.append(f"  Bayesian attribute risk of {sampling['records_assessed']} records: importance weights with "
                     f"k-hat > 0.7 for {sampling['khat_over_0_7']}")  # fmt: skip
    return lines


def demo_rows(release: Any) -> list[tuple[str, Any]]:
    """The demo table's rows for a categorical release: the release gate's verdict first."""
    from bayessdc.report.text import measure_rows

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
