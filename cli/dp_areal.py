"""``bayessdc dp-areal``: synthesize a many-level label (for example the county) with the DP-areal model.

Wiring only: read and check the table, fit the Poisson-lognormal model of the label counts of every pattern
with Dirichlet-process random effects (Hu & Savitsky, Section 2.2) by NUTS, draw m partially synthetic
datasets (eq. 13-14), and measure risk and utility exactly as ``bayessdc dpmpm`` does
(:func:`bayessdc.cli.dpmpm.write_categorical_outputs`), so the two synthesizers' outputs compare file by file.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import UserError
from .dpmpm import (
    _columns,
    _fmt,
    check_ordered_logits,
    check_release_columns,
    gate_verdict,
    parse_ordered_logit,
    write_categorical_outputs,
    write_categorical_release,
)
from .flows import read_table

__all__ = ["ArealJobResult", "add_parser", "demo", "run", "run_dp_areal_job"]


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
        "--parametrization",
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


@dataclass
class ArealJobResult:
    """Figures of a finished DP-areal run (also written under ``private/``)."""

    out: Path
    n_records: int
    n_patterns: int
    n_labels: int
    diagnostics: dict
    risk: dict
    risk_details: dict
    utility: dict
    seconds: float


def run_dp_areal_job(
    table: pd.DataFrame,
    out: Path,
    synthesize: list[str],
    keep: list[str],
    *,
    K: int = 50,
    known_sets: list[list[str]] | None = None,
    m: int = 20,
    seed: int = 0,
    settings: Any = None,
    priors: Any = None,
    parametrization: str = "identified",
    repetitions: int = 100,
    missing: str = "refuse",
    max_levels: int = 500,
    max_cells: int = 300_000,
    ordered_logits: list[tuple[str, list[str]]] | None = None,
    allow_unconverged: bool = False,
    progress: bool = True,
) -> ArealJobResult:
    """Run the whole DP-areal job on a table and write ``out/release`` and ``out/private``.

    Parameters mirror the command-line options; ``settings`` is a :class:`bayessdc.models.sampling.SamplerSettings`
    and ``priors`` a :class:`bayessdc.models.dp_areal.DPArealPriors`. Raises
    :class:`bayessdc.models.dpmpm.CategoricalDataError` for bad input (before any sampling) and
    :class:`bayessdc.models.sampling.ConvergenceError` when the gate fails and ``allow_unconverged`` is false
    (diagnostics are written, release is not).
    """
    from bayessdc.models.dp_areal import DPArealPriors, DPArealSynthesizer, prepare_areal
    from bayessdc.models.sampling import ConvergenceError, SamplerSettings
    from bayessdc.synthesis.datasets import draw_synthetic
    from bayessdc.synthesis.output import OutputFolder, fingerprint_frame

    start = time.perf_counter()
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else (lambda msg: None)
    settings = settings or SamplerSettings(target_accept=0.9)
    priors = priors or DPArealPriors()
    if m < 1:
        raise UserError("--m must be at least 1")
    if m > settings.chains * settings.draws:
        raise UserError(f"--m {m} needs at least {m} posterior draws; raise --draws")
    if repetitions < 1:
        raise UserError("--repetitions must be at least 1")
    notices: list[str] = []
    data = prepare_areal(
        table, synthesize, keep, max_levels=max_levels, max_cells=max_cells, missing=missing, notices=notices
    )
    for notice in notices:
        say(notice)
    original = data.records.frame()
    known_sets, singles = check_release_columns(table, original, synthesize, keep, known_sets, say)
    ordered_logits = check_ordered_logits(ordered_logits, data.records.levels, keep, synthesize)

    synthesizer = DPArealSynthesizer(K=K, priors=priors, settings=settings, parametrization=parametrization)
    folder = OutputFolder(
        out,
        {
            "synthesizer": "dp-areal",
            "input": fingerprint_frame(original),
            "synthesize": synthesize,
            "keep": keep,
            "K": K,
            "priors": asdict(priors),
            "sampler": settings.to_dict(),
            "parametrization": parametrization,
            "known": known_sets,
            "m": m,
            "seed": seed,
            "repetitions": repetitions,
            "missing": missing,
            "ordered_logit": [{"response": r, "predictors": p} for r, p in ordered_logits],
        },
    )
    say(
        f"dp-areal: fitting K = {K} to {data.n_patterns} patterns x {data.n_labels} labels "
        f"({data.n_distinct} distinct pattern/count pairs) ..."
    )
    idata = synthesizer.fit(data, seed)
    report = synthesizer.check(idata, data)
    occupied = idata.posterior["occupied"].to_numpy().ravel()
    diagnostics = {
        **report.to_dict(),
        "monitored": synthesizer.convergence_quantities(),
        "allow_unconverged": allow_unconverged,
        "occupied_components": {
            "mean": float(occupied.mean()),
            "interval_95": [float(np.quantile(occupied, 0.025)), float(np.quantile(occupied, 0.975))],
            "max": float(occupied.max()),
            "K": K,
            "K_large_enough": bool(occupied.max() < K - 1),
            "meaning": "expected number of components holding at least one pattern x label cell, per draw",
        },
        "alpha_mean": float(idata.posterior["alpha"].mean()),
        "tau_lambda_mean": float(idata.posterior["tau_lambda"].mean()),
        "n_records": data.records.n_records,
        "n_patterns": data.n_patterns,
        "n_labels": data.n_labels,
        "n_distinct_pairs": data.n_distinct,
        "single_record_patterns": singles,
        "sampler": idata.attrs.get("sampler_backend"),
        "parametrization": parametrization,
        "divergences": report.divergences,
    }
    folder.write_private_json("diagnostics.json", diagnostics)
    summary = idata.posterior[["alpha", "rho", "tau_lambda", "occupied", "location", "expected_log_rate"]]
    folder.write_private_file("posterior.nc", lambda path: summary.to_netcdf(path, engine="h5netcdf"))
    if not report.passed and not allow_unconverged:
        raise ConvergenceError(report, "the DP-areal posterior")

    say(f"dp-areal: drawing {m} synthetic datasets ...")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
    joint = draw_synthetic(synthesizer, idata, data, m, rng)
    synthetic = synthesizer.release_frame(data, joint)
    risk, details, utility = write_categorical_outputs(
        folder,
        original,
        synthetic,
        synthesize,
        keep,
        known_sets,
        m=m,
        seed=seed,
        repetitions=repetitions,
        ordered_logits=ordered_logits,
        say=lambda msg: say(f"dp-areal: {msg}"),
    )
    write_categorical_release(folder, synthesizer, synthetic, synthesize, keep, m, seed, allow_unconverged)
    return ArealJobResult(
        out=Path(out),
        n_records=data.records.n_records,
        n_patterns=data.n_patterns,
        n_labels=data.n_labels,
        diagnostics=diagnostics,
        risk=risk,
        risk_details=details,
        utility=utility,
        seconds=time.perf_counter() - start,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc dp-areal`` from parsed arguments."""
    from bayessdc.models.sampling import ConvergenceError, SamplerSettings

    table = read_table(args.data)
    try:
        settings = SamplerSettings(
            draws=args.draws, tune=args.tune, chains=args.chains, target_accept=args.target_accept
        )
    except ValueError as err:
        raise UserError(str(err)) from err
    try:
        result = run_dp_areal_job(
            table,
            args.out,
            _columns(args.synthesize),
            _columns(args.keep),
            K=args.K,
            known_sets=[_columns([k]) for k in args.known] if args.known else None,
            m=args.m,
            seed=args.seed,
            settings=settings,
            parametrization=args.parametrization,
            repetitions=args.repetitions,
            missing=args.missing,
            max_levels=args.max_levels,
            max_cells=args.max_cells,
            ordered_logits=[parse_ordered_logit(spec) for spec in args.ordered_logit or []],
            allow_unconverged=args.allow_unconverged,
            progress=not args.quiet,
        )
    except ConvergenceError as err:
        print(f"bayessdc dp-areal: {err}\nDiagnostics: {args.out / 'private' / 'diagnostics.json'}", file=sys.stderr)
        return 3
    print(_report(result))
    return 0


def _report(result: ArealJobResult) -> str:
    d, r, u = result.diagnostics, result.risk, result.utility
    lines = [
        f"dp-areal: {result.n_records} records, {result.n_patterns} patterns x {result.n_labels} labels, "
        f"{result.seconds:.1f} s",
        f"  convergence: max r_hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
        f"{d['divergences']} divergences; occupied components {d['occupied_components']['mean']:.1f} of "
        f"{d['occupied_components']['K']}",
    ]
    for entry in r["identification"]:
        lo, hi = entry["inherent"]["min"], entry["inherent"]["max"]
        lines.append(
            f"  identification [{'+'.join(entry['known'])}]: expected match risk {_fmt(entry['expected_match_risk'])} "
            f"(min {_fmt(lo['expected_match_risk'])}, max {_fmt(hi['expected_match_risk'])}), true match rate "
            f"{_fmt(entry['true_match_rate'])}, false match rate {_fmt(entry['false_match_rate'])}"
        )
    a = r["attribute"]
    lines.append(
        f"  attribute: {_fmt(a['disclosures'])} exact disclosures ({100 * a['share']:.2f}%; min "
        f"{_fmt(a['inherent']['min']['disclosures'])}, max {_fmt(a['inherent']['max']['disclosures'])})"
    )
    td = u["table_deviations"]
    lines.append(
        "  utility: sum |deviation| "
        + ", ".join(f"{k} {v['mean']:.1f}" for k, v in td.items())
        + f"; pMSE ratio {u['pmse']['ratio']:.2f}"
    )
    lines.append(f"  written: {result.out / 'release'} and {result.out / 'private'}")
    return "\n".join(lines)


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """DP-areal on a small table simulated from the model (12 patterns x 40 labels), small settings."""
    from bayessdc.models.dp_areal import simulate_areal
    from bayessdc.models.sampling import SamplerSettings

    table, _ = simulate_areal(40, (2, 2, 3), seed=seed)
    table = table.rename(columns={"v0": "gender", "v1": "income", "v2": "age", "label": "county"})
    result = run_dp_areal_job(
        table,
        Path(out) / "dp-areal",
        ["county"],
        ["gender", "income", "age"],
        K=10,
        known_sets=[["gender", "county"], ["gender", "age", "county"]],
        m=5,
        seed=seed,
        settings=SamplerSettings(draws=300, tune=300, chains=2, target_accept=0.9),
        repetitions=20,
        allow_unconverged=True,
        progress=False,
    )
    ident = result.risk["identification"][1]
    rows = [
        ("records", result.n_records),
        ("convergence gate", gate_verdict(result.diagnostics)),
        ("max r_hat", result.diagnostics["max_r_hat"]),
        ("min bulk ESS", result.diagnostics["min_ess_bulk"]),
        ("divergences", result.diagnostics["divergences"]),
        ("occupied components", result.diagnostics["occupied_components"]["mean"]),
        ("expected match risk (g+a+c)", ident["expected_match_risk"]),
        ("  inherent max", ident["inherent"]["max"]["expected_match_risk"]),
        ("exact attribute disclosures", result.risk["attribute"]["disclosures"]),
        ("one-way table deviation", result.utility["table_deviations"]["one-way"]["mean"]),
        ("seconds", result.seconds),
    ]
    return [{"synthesizer": "dp-areal", "measure": k, "value": v} for k, v in rows]
