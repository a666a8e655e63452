"""Options, messages and summary lines that ``bayessdc dpmpm`` and ``bayessdc dp-areal`` share.

Both synthesizers are judged by the release gate (:mod:`bayessdc.synthesis.release_gate`) and measured by the
same risk and utility step, so their options and printed figures are declared once here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import UserError

__all__ = [
    "add_shared_options", "categorical_lines", "gate_lines", "demo_rows", "gate_verdict", "parse_ordered_logit",
    "refusal", "shared_recipe_options",
]  # fmt: skip


def parse_ordered_logit(spec: str) -> tuple[str, list[str]]:
    """``"RESPONSE:PRED1,PRED2"`` as ``(response, [predictors])``."""
    response, sep, rest = spec.partition(":")
    predictors = [c.strip() for c in rest.split(",") if c.strip()]
    if not sep or not response.strip() or not predictors:
        raise UserError(f"--ordered-logit {spec!r}: expected RESPONSE:PRED1,PRED2 (for example income:county,age)")
    return response.strip(), predictors


def add_shared_options(p: argparse.ArgumentParser, gate_datasets: int) -> None:
    """The options both commands take: knowledge sets, inherent repetitions, missing values, level limits,
    structural zeros, ordered logits, the release gate's settings and ``--allow-unconverged`` (``--quiet`` and
    ``--verbose`` are every subcommand's)."""
    p.add_argument(
        "--known", action="append", default=None, help="columns an intruder knows, comma-separated; repeat for "
        "several knowledge sets (default: every kept and synthesized column)",
    )  # fmt: skip
    p.add_argument("--repetitions", type=int, default=100, help="repetitions S of the inherent scenarios (default 100)")
    p.add_argument(
        "--missing", default="refuse", choices=["refuse", "level"], help="missing values: refuse (default) or treat "
        "as a level",
    )  # fmt: skip
    p.add_argument("--max-levels", type=int, default=500, help="most distinct values a column may have (default 500)")
    p.add_argument("--max-numeric-levels", type=int, default=50, help="most distinct values of a numeric column that "
                   "is not a run of codes (default 50; beyond: band it first)")  # fmt: skip
    p.add_argument("--rules", type=Path, default=None, help="structural zeros (combinations that can never occur): "
                   "JSON or YAML in the format of bayessdc cart --rules (models.structural_zeros)")  # fmt: skip
    p.add_argument(
        "--ordered-logit", action="append", default=None, metavar="RESPONSE:PRED1,PRED2",
        help="the analyst's ordered logistic regression of RESPONSE (ordered by its sorted values) on the one-hot "
        "predictors, fitted to the original and to every synthetic dataset and combined with the partially synthetic "
        "rules, written to private/utility.json; repeat for several models (for example income:county,age,gender)",
    )  # fmt: skip
    gate = p.add_argument_group(
        "release gate", "the release figures (risk, utility) of synthetic datasets drawn from every chain must agree "
        "between chains: the between-chain standard error of each pooled figure within its tolerance",
    )  # fmt: skip
    gate.add_argument(
        "--gate-datasets", type=int, default=gate_datasets,
        help=f"synthetic datasets drawn from each chain for the gate (default {gate_datasets}; only --m are released)",
    )  # fmt: skip
    gate.add_argument("--max-chains", type=int, default=32, help="chains added while the gate fails on precision "
                      "alone, up to this many in all (default 32; equal to --chains: judged once)")  # fmt: skip
    gate.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                      help="seconds the fit may take, added chains included (default: no limit)")  # fmt: skip
    gate.add_argument(
        "--risk-tolerance", type=float, default=0.02,
        help="largest between-chain SE of a risk figure, as a share of its inherent min-max range (default 0.02)",
    )  # fmt: skip
    gate.add_argument(
        "--utility-tolerance", type=float, default=0.1,
        help="largest between-chain SE of a figure, as a share of its per-dataset sd (default 0.1)",
    )  # fmt: skip
    p.add_argument(
        "--allow-unconverged", action="store_true", help="write release outputs even if the release gate fails "
        "(recorded in release/model.json)",
    )  # fmt: skip


def shared_recipe_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of ``bsd.DPMPM`` and ``bsd.DPAreal`` from the shared options (a bad value raises
    ValueError: exit status 2)."""
    import bayessdc as bsd

    gate = {"datasets_per_chain": args.gate_datasets, "risk_tolerance": args.risk_tolerance,
            "max_chains": args.max_chains, "time_budget": args.time_budget}  # fmt: skip
    return {
        "known": args.known,
        "repetitions": args.repetitions,
        "missing": args.missing,
        "max_levels": args.max_levels,
        "max_numeric_levels": args.max_numeric_levels,
        "structural_zeros": args.rules,
        "ordered_logits": [parse_ordered_logit(spec) for spec in args.ordered_logit or []],
        "gate": bsd.ReleaseGatePolicy(**gate, utility_tolerance=args.utility_tolerance),
    }


def refusal(command: str, err: Exception, out: Path) -> int:
    """Print a refusal of the gate and return exit status 3."""
    message = str(err).replace("(draws=, tune=)", "(draws=, burn=)") if command == "dpmpm" else str(err)
    print(f"bayessdc {command}: {message}\nDiagnostics: {out / 'private' / 'diagnostics.json'}", file=sys.stderr)
    return 3


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


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def categorical_lines(release: Any, ordered_logit: bool = True) -> list[str]:
    """The risk and utility lines of ``dpmpm`` and ``dp-areal`` (the latter prints no ordered-logit lines)."""
    r, u, details = release.risk_figures, release.utility_figures, release.private_json["risk_details.json"]
    lines = []
    for entry in r["identification"]:
        lo, hi = entry["inherent"]["min"], entry["inherent"]["max"]
        lines.append(
            f"  identification [{'+'.join(entry['known'])}]: expected match risk {_fmt(entry['expected_match_risk'])} "
            f"(min {_fmt(lo['expected_match_risk'])}, max {_fmt(hi['expected_match_risk'])}), true match rate "
            f"{_fmt(entry['true_match_rate'])}, false match rate {_fmt(entry['false_match_rate'])}"
        )
    a, b = r["attribute"], details["attribute"].get("bayesian")
    lines.append(
        f"  attribute: {_fmt(a['disclosures'])} exact disclosures ({100 * a['share']:.2f}%; min "
        f"{_fmt(a['inherent']['min']['disclosures'])}, max {_fmt(a['inherent']['max']['disclosures'])})"
    )
    if b is not None:
        lines.append(
            f"  Bayesian attribute risk ({b['records_assessed']} records): mean probability of the true label "
            f"{b['mean_true_probability']:.3f}, intruder correct {100 * b['share_correct']:.1f}%, "
            f"k-hat > 0.7: {b['khat_over_0_7']}"
        )
    td = u["table_deviations"]
    lines.append(
        "  utility: sum |deviation| "
        + ", ".join(f"{k} {v['mean']:.1f}" for k, v in td.items())
        + f"; pMSE ratio {u['pmse']['ratio']:.2f}"
    )
    for model in u.get("ordered_logit", []) if ordered_logit else []:
        lines.append(
            f"  ordered logit {model['response']} ~ {' + '.join(model['predictors'])}: mean interval overlap of the "
            f"coefficients {_fmt(model['mean_interval_overlap'])}"
        )
    return lines


def demo_rows(release: Any) -> list[tuple[str, Any]]:
    """The demo table's rows for a categorical release: the release gate's verdict first."""
    d, r, u = release.diagnostics, release.risk_figures, release.utility_figures
    gate = d["release_gate"]
    ratios = [f["between_chain_se"] / f["tolerance"] for f in gate["figures"].values() if f.get("tolerance")]
    ident = r["identification"][-1]
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
        (f"expected match risk ({'+'.join(ident['known'])})", ident["expected_match_risk"]),
        ("  inherent min", ident["inherent"]["min"]["expected_match_risk"]),
        ("  inherent max", ident["inherent"]["max"]["expected_match_risk"]),
        ("exact attribute disclosures", r["attribute"]["disclosures"]),
        ("  inherent min", r["attribute"]["inherent"]["min"]["disclosures"]),
        ("  inherent max", r["attribute"]["inherent"]["max"]["disclosures"]),
        ("one-way table deviation", u["table_deviations"]["one-way"]["mean"]),
        ("pMSE ratio", u["pmse"]["ratio"]),
        ("seconds", release.seconds),
    ]
    return rows
