"""``bayessdc dpmpm``: synthesize categorical columns (for example a many-level geography label) with the DPMPM.

Wiring only: options -> :class:`bayessdc.DPMPM` (Hu & Savitsky, Section 2.1) -> :func:`bayessdc.synthesize`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import UserError

__all__ = ["add_parser", "categorical_lines", "demo", "gate_verdict", "parse_ordered_logit", "run"]


def parse_ordered_logit(spec: str) -> tuple[str, list[str]]:
    """``"RESPONSE:PRED1,PRED2"`` as ``(response, [predictors])``."""
    response, sep, rest = spec.partition(":")
    predictors = [c.strip() for c in rest.split(",") if c.strip()]
    if not sep or not response.strip() or not predictors:
        raise UserError(f"--ordered-logit {spec!r}: expected RESPONSE:PRED1,PRED2 (for example income:county,age)")
    return response.strip(), predictors


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc dpmpm``."""
    p = subparsers.add_parser(
        "dpmpm",
        help="DPMPM synthesis of categorical columns such as a many-level geography label (Hu & Savitsky)",
        description="Replace the --synthesize columns of every record by draws from a Dirichlet-process mixture "
        "of products of multinomials fitted to the --synthesize and --keep columns, measure identification and "
        "attribute risk against the inherent minimum and maximum, and utility, and write release/ (synthetic "
        "data, model description) and private/ (diagnostics, risk, utility).",
    )
    p.add_argument("--data", required=True, type=Path, help="input table, CSV or Parquet")
    p.add_argument("--synthesize", required=True, nargs="+", help="columns to synthesize (comma-separated or words)")
    p.add_argument("--keep", required=True, nargs="+", help="columns released unchanged and modelled")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--K", type=int, default=40, help="number of mixture components (default 40)")
    p.add_argument(
        "--conditioning", default="full", choices=["full", "pattern", "prior"],
        help="latent class for synthesis drawn given all of the record's values (full, default), "
        "the kept values only (pattern) or pi alone (prior)",
    )  # fmt: skip
    p.add_argument(
        "--known", action="append", default=None, help="columns an intruder knows, comma-separated; repeat for "
        "several knowledge sets (default: every kept and synthesized column)",
    )  # fmt: skip
    p.add_argument("--m", type=int, default=20, help="number of synthetic datasets (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--draws", type=int, default=4000, help="Gibbs iterations kept per chain (default 4000)")
    p.add_argument("--burn", type=int, default=1000, help="burn-in iterations per chain (default 1000)")
    p.add_argument("--chains", type=int, default=2, help="chains (default 2)")
    p.add_argument("--thin", type=int, default=4, help="store every thin-th iteration (default 4)")
    p.add_argument("--a-alpha", type=float, default=0.25, help="shape of alpha's gamma prior (default 0.25)")
    p.add_argument("--b-alpha", type=float, default=0.25, help="rate of alpha's gamma prior (default 0.25)")
    p.add_argument("--repetitions", type=int, default=100, help="repetitions S of the inherent scenarios (default 100)")
    p.add_argument(
        "--risk-records", type=int, default=500,
        help="records whose Bayesian attribute risk is computed by importance sampling (default 500; 0: none)",
    )  # fmt: skip
    p.add_argument("--risk-draws", type=int, default=200, help="posterior draws used as proposals (default 200)")
    p.add_argument(
        "--missing", default="refuse", choices=["refuse", "level"], help="missing values: refuse (default) or treat "
        "as a level",
    )  # fmt: skip
    p.add_argument("--max-levels", type=int, default=500, help="most distinct values a column may have (default 500)")
    p.add_argument(
        "--ordered-logit", action="append", default=None, metavar="RESPONSE:PRED1,PRED2",
        help="the analyst's ordered logistic regression of RESPONSE (ordered by its sorted values) on the one-hot "
        "predictors, fitted to the original and to every synthetic dataset and combined with the partially synthetic "
        "rules, written to private/utility.json; repeat for several models (for example income:county,age,gender)",
    )  # fmt: skip
    p.add_argument("--allow-unconverged", action="store_true", help="write release outputs even if the gate fails")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dpmpm`` from parsed arguments."""
    import bayessdc as bsd
    from bayessdc.models.dpmpm import DPMPMPriors, GibbsSettings

    table = bsd.read_table(args.data)
    # A bad setting raises ValueError: bayessdc.cli.main prints it and exits with status 2.
    settings = GibbsSettings(draws=args.draws, burn=args.burn, chains=args.chains, thin=args.thin)
    priors = DPMPMPriors(a_alpha=args.a_alpha, b_alpha=args.b_alpha)
    recipe = bsd.DPMPM(
        K=args.K, conditioning=args.conditioning, priors=priors, settings=settings, known=args.known,
        repetitions=args.repetitions, risk_records=args.risk_records, risk_draws=args.risk_draws,
        missing=args.missing, max_levels=args.max_levels,
        ordered_logits=[parse_ordered_logit(spec) for spec in args.ordered_logit or []],
    )  # fmt: skip
    try:
        release = bsd.synthesize(
            table, recipe, synthesize=args.synthesize, keep=args.keep, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, progress=not args.quiet,
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        message = str(err).replace("(--draws, --tune)", "(--draws, --burn)")
        print(f"bayessdc dpmpm: {message}\nDiagnostics: {args.out / 'private' / 'diagnostics.json'}", file=sys.stderr)
        return 3
    print(summary(release, args.out))
    return 0


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def categorical_lines(release: Any, ordered_logit: bool = True) -> list[str]:
    """The risk and utility lines of ``dpmpm`` and ``dp-areal`` (the latter prints no ordered-logit lines)."""
    r, u, details = release.risk(), release.utility(), release.private_json["risk_details.json"]
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


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    d, f, oc = release.diagnostics, release.facts, release.diagnostics["occupied_components"]
    return "\n".join(
        [
            f"dpmpm: {f['records']} records in {f['cells']} cells, {release.seconds:.1f} s",
            f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f} (alpha, marginals, "
            f"occupied); occupied components {oc['mean']:.1f} (95% {oc['interval_95']}) of {oc['K']}",
            *categorical_lines(release),
            f"  written: {out / 'release'} and {out / 'private'}",
        ]
    )


def gate_verdict(diagnostics: Any) -> str:
    """The demo table's word on the convergence gate: a failed gate is said, not left to the r_hat figure."""
    return "passed" if diagnostics["passed"] else "FAILED (the demo releases anyway)"


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """The DPMPM on the bundled CE-like simulator (n = 6,208, 40 patterns, 133 counties), small settings."""
    import bayessdc as bsd
    from bayessdc.models.dpmpm import GibbsSettings, simulate_ce_like

    recipe = bsd.DPMPM(
        K=40, known=[["gender", "county"], ["gender", "age", "county"]],
        settings=GibbsSettings(draws=4000, burn=2000, chains=2, thin=4),
        repetitions=20, risk_records=200, risk_draws=100,
    )  # fmt: skip
    release = bsd.synthesize(
        simulate_ce_like(seed=seed), recipe, synthesize=["county"], keep=["gender", "income", "age"], m=5,
        seed=seed, out=Path(out) / "dpmpm", allow_unconverged=True, progress=False,
    )  # fmt: skip
    d, r, u = release.diagnostics, release.risk(), release.utility()
    ident = r["identification"][1]
    rows = [
        ("records", release.facts["records"]),
        ("convergence gate", gate_verdict(d)),
        ("max r_hat", d["max_r_hat"]),
        ("min bulk ESS", d["min_ess_bulk"]),
        ("occupied components", d["occupied_components"]["mean"]),
        ("expected match risk (g+a+c)", ident["expected_match_risk"]),
        ("  inherent max", ident["inherent"]["max"]["expected_match_risk"]),
        ("exact attribute disclosures", r["attribute"]["disclosures"]),
        ("  inherent min", r["attribute"]["inherent"]["min"]["disclosures"]),
        ("  inherent max", r["attribute"]["inherent"]["max"]["disclosures"]),
        ("one-way table deviation", u["table_deviations"]["one-way"]["mean"]),
        ("pMSE ratio", u["pmse"]["ratio"]),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "dpmpm", "measure": k, "value": v} for k, v in rows]
