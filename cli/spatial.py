"""``bayessdc spatial``: partially synthetic geocoded data with differential smoothing of spatial outliers.

Wiring only: parse the options, read the table and call :func:`bayessdc.synthesize` with
:class:`bayessdc.Spatial` (the two stages of Quick, Holan & Wikle, proximity risk and regression utility
live in :mod:`bayessdc.recipes.spatial`), then print the summary.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from . import DATA_HELP, UserError

__all__ = ["add_parser", "demo", "run", "summary"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc spatial``."""
    p = subparsers.add_parser(
        "spatial",
        help="spatial Gaussian-process synthesis with differential smoothing of outliers (Quick, Holan & Wikle)",
        description="Replace a continuous response by draws from a spatial Gaussian-process model whose "
        "spatial effect is smoothed away at spatially isolated records (two-stage differential smoothing); "
        "locations and covariates pass through. Writes release/ (synthetic data, model description) and "
        "private/ (posteriors, diagnostics, proximity risk, regression utility).",
    )
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--response", required=True, help="column of the continuous response to synthesize")
    p.add_argument("--coords", required=True, help="the two coordinate columns, XCOL,YCOL")
    p.add_argument("--covariates", default="", help="covariate columns A,B (default: none; intercept always)")
    p.add_argument("--log-response", action="store_true", help="model log(response); released on the original scale")
    p.add_argument(
        "--gamma", default="inf", help="global risk parameter gamma (default inf: full smoothing at outliers)"
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="target smoothing level alpha of eq. (5) instead of --gamma (gamma from the unrestricted fit)",
    )
    p.add_argument("--risk-weights", choices=["binary", "continuous"], default="binary")
    p.add_argument(
        "--correlation",
        type=float,
        default=0.20,
        help="outlier when no neighbour has correlation above this: M = -log(c)/phi_hat (default 0.20)",
    )
    p.add_argument(
        "--jitter", type=float, default=None, metavar="DIST",
        help="move records that share a location by a random offset of at most DIST (coordinate units)",
    )  # fmt: skip
    p.add_argument(
        "--approximation",
        choices=["auto", "exact", "nngp"],
        default="auto",
        help="exact Gaussian process, or the nearest-neighbour (Vecchia) GP for large data: response NNGP "
        "likelihood with a grid posterior (independent draws, --draws x --chains of them) and latent NNGP draws "
        "of the spatial effect; auto (default) = exact up to 3,000 records, nngp beyond",
    )
    p.add_argument(
        "--neighbours", type=int, default=15, help="neighbours per record under --approximation nngp (default 15)"
    )
    p.add_argument("--m", type=int, default=None, help="synthetic datasets (default 5: the recipe's default_m)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--draws", type=int, default=2000, help="kept draws per chain (default 2000)")
    p.add_argument("--tune", type=int, default=1000, help="warm-up iterations per chain (default 1000)")
    p.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    p.add_argument("--backend", default="auto", choices=["auto", "nutpie", "pymc", "numpyro"])
    p.add_argument("--target-accept", type=float, default=0.95, help="NUTS target acceptance (default 0.95)")
    p.add_argument("--band", type=float, default=0.10, help="relative proximity band (default 0.10)")
    p.add_argument(
        "--absolute-band",
        type=float,
        default=None,
        help="absolute proximity band on the released scale (default: a tenth of the response's sd)",
    )
    p.add_argument(
        "--analysis-predictors",
        default=None,
        help="predictors of the analyst's regression, A,B (default: the covariates, else the coordinates)",
    )
    p.add_argument(
        "--allow-unconverged",
        action="store_true",
        help="write release outputs even if a stage fails the convergence gate (recorded in the outputs)",
    )
    p.set_defaults(func=run)


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _gamma(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--gamma takes a non-negative number or inf, got {text!r}") from None
    if math.isnan(value) or value < 0:
        raise UserError(f"--gamma must be non-negative (or inf), got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc spatial`` from parsed arguments."""
    import bayessdc as bsd

    coords = _columns(args.coords)
    if len(coords) != 2:
        raise UserError(f"--coords takes two columns XCOL,YCOL, got {args.coords!r}")
    table = bsd.read_table(args.data)
    recipe = bsd.Spatial(
        response=args.response,
        coords=(coords[0], coords[1]),
        covariates=_columns(args.covariates),
        log_response=args.log_response,
        gamma=_gamma(args.gamma),
        alpha=args.alpha,
        risk_weights=args.risk_weights,
        correlation=args.correlation,
        jitter=args.jitter,
        approximation=args.approximation,
        neighbours=args.neighbours,
        settings=bsd.SamplerSettings(
            draws=args.draws, tune=args.tune, chains=args.chains, backend=args.backend, target_accept=args.target_accept
        ),
        band=args.band,
        absolute_band=args.absolute_band,
        analysis_predictors=_columns(args.analysis_predictors) or None,
    )
    try:
        release = bsd.synthesize(
            table, recipe, m=args.m, seed=args.seed, out=args.out,
            allow_unconverged=args.allow_unconverged, policy=args.policy, holdout=args.holdout, progress=not args.quiet,
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        print(f"bayessdc spatial: {err}\nDiagnostics: {args.out / 'private' / 'diagnostics.json'}", file=sys.stderr)
        return 3
    print(summary(release, args.out))
    return 0


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run."""
    d, r, f = release.diagnostics, release.risk_figures, release.facts
    band_u, band_r = r["within_band"]["unrestricted"], r["within_band"]["restricted"]
    return "\n".join(
        [
            f"spatial: {f['records']} records, {f['at_risk_records']} at risk, {release.seconds:.1f} s",
            f"  convergence: unrestricted max r_hat {d['unrestricted']['max_r_hat']:.3f}, min bulk ESS "
            f"{d['unrestricted']['min_ess_bulk']:.0f}; restricted max r_hat {d['restricted']['max_r_hat']:.3f}, "
            f"min bulk ESS {d['restricted']['min_ess_bulk']:.0f}",
            f"  within {r['bands']['relative']:.0%}: at-risk {_fmt(band_u['at_risk'])} -> {_fmt(band_r['at_risk'])}, "
            f"others {_fmt(band_u['other'])} -> {_fmt(band_r['other'])} (unrestricted -> restricted)",
            f"  utility: mean CI overlap of the analyst's regression {f['mean_ci_overlap']:.3f}",
            f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
        ]
    )


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """A small version of the paper's simulation (Section 4); rows of figures for ``bayessdc demo``."""
    import bayessdc as bsd
    from bayessdc.models.spatial import simulate_spatial

    frame, truth = simulate_spatial(120, seed=seed, outlier_latent=-4.0)
    recipe = bsd.Spatial(
        response="response",
        coords=("x", "y"),
        covariates=[],  # the paper's model: intercept only (Section 2); eq. (8)'s terms enter the analysis
        analysis_predictors=["d1", "d2"],
        # 1,000 draws per chain: at this size the gate passes with bulk ESS about 800 (2,000 by default)
        settings=bsd.SamplerSettings(draws=1000, tune=1000, chains=4, target_accept=0.95),
    )
    release = bsd.synthesize(frame, recipe, m=5, seed=seed, out=Path(out) / "spatial", progress=False)
    d, r = release.diagnostics, release.risk_figures
    rows = [
        ("records", release.facts["records"]),
        ("at-risk records", release.facts["at_risk_records"]),
        ("planted outlier flagged", truth["outlier_index"] in r["outliers"]),
        ("max r_hat", max(d[s]["max_r_hat"] for s in ("unrestricted", "restricted"))),
        ("min bulk ESS", min(d[s]["min_ess_bulk"] for s in ("unrestricted", "restricted"))),
        ("within 10%, at-risk, unrestricted", r["within_band"]["unrestricted"]["at_risk"]),
        ("within 10%, at-risk, restricted", r["within_band"]["restricted"]["at_risk"]),
        ("within 10%, others, restricted", r["within_band"]["restricted"]["other"]),
        ("mean CI overlap (regression)", release.facts["mean_ci_overlap"]),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "spatial", "measure": k, "value": v} for k, v in rows]
