"""``bayessdc spatial``: partially synthetic geocoded data with differential smoothing of spatial outliers.

Wiring only: parse the options, read the table and call :func:`bayessdc.synthesize` with
:class:`bayessdc.Spatial` (the two stages of Quick, Holan & Wikle, proximity risk and regression utility),
then print the summary.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from . import DATA_HELP, UserError, synthesize_options
from .failures import gate_refusal
from .options import build, given, option

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
    option(p, "--covariates", to="Spatial.covariates", help="covariate columns A,B (default: none; intercept always)")
    option(p, "--log-response", to="Spatial.log_response", action="store_true",
           help="model log(response); released on the original scale")  # fmt: skip
    option(p, "--gamma", to="Spatial.gamma", help="global risk parameter gamma (default {default}: full smoothing "
           "at outliers)")  # fmt: skip
    option(p, "--alpha", to="Spatial.alpha", type=float,
           help="target smoothing level alpha of eq. (5) instead of --gamma (gamma from the unrestricted fit)")
    option(p, "--risk-weights", to="Spatial.risk_weights", choices=["binary", "continuous"],
           help="risk weights of the records (default {default})")  # fmt: skip
    option(p, "--correlation", to="Spatial.correlation", type=float, help="outlier when no neighbour has "
           "correlation above this: M = -log(c)/phi_hat (default {default})")  # fmt: skip
    option(
        p, "--jitter", to="Spatial.jitter", type=float, metavar="DIST",
        help="move records that share a location by a random offset of at most DIST (coordinate units)",
    )  # fmt: skip
    option(
        p, "--approximation", to="Spatial.approximation", choices=["auto", "exact", "nngp"],
        help="exact Gaussian process, or the nearest-neighbour (Vecchia) GP for large data: response NNGP "
        "likelihood with a grid posterior (independent draws, --draws x --chains of them) and latent NNGP draws "
        "of the spatial effect; auto = exact up to 3,000 records, nngp beyond (default {default})",
    )  # fmt: skip
    option(p, "--neighbours", to="Spatial.neighbours", type=int,
           help="neighbours per record under --approximation nngp (default {default})")  # fmt: skip
    synthesize_options(p, "Spatial")
    option(p, "--draws", to="Spatial.settings.draws", type=int, help="kept draws per chain (default {default})")
    option(p, "--tune", to="Spatial.settings.tune", type=int, help="warm-up iterations per chain (default {default})")
    option(p, "--chains", to="Spatial.settings.chains", type=int, help="chains (default {default})")
    option(p, "--backend", to="Spatial.settings.backend", choices=["auto", "nutpie", "pymc", "numpyro"],
           help="NUTS backend (default {default})")  # fmt: skip
    option(p, "--target-accept", to="Spatial.settings.target_accept", type=float,
           help="NUTS target acceptance (default {default})")  # fmt: skip
    option(p, "--band", to="Spatial.band", type=float, help="relative proximity band (default {default})")
    option(p, "--absolute-band", to="Spatial.absolute_band", type=float,
           help="absolute proximity band on the released scale (default: a tenth of the response's sd)")
    option(p, "--analysis-predictors", to="Spatial.analysis_predictors",
           help="predictors of the analyst's regression, A,B (default: the covariates, else the coordinates)")
    option(
        p, "--allow-unconverged", to="synthesize.allow_unconverged", action="store_true",
        help="write release outputs even if a stage fails the convergence gate (recorded in the outputs)",
    )  # fmt: skip
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
    options = given(args, "Spatial")
    for name in ("covariates", "analysis_predictors"):
        if name in options:
            options[name] = _columns(options[name])
    if "gamma" in options:
        options["gamma"] = _gamma(options["gamma"])
    table = bsd.read_table(args.data)
    recipe = build("Spatial", {"response": args.response, "coords": (coords[0], coords[1]), **options})
    try:
        release = bsd.synthesize(
            table, recipe, out=args.out, policy=args.policy, holdout=args.holdout, progress=not args.quiet,
            **given(args, "synthesize"),
        )  # fmt: skip
    except bsd.ConvergenceError as err:
        return gate_refusal("spatial", str(err), args.out)
    print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run: the run, both stages' convergence, and every measure."""
    from bayessdc.report.text import measure_lines

    d, f = release.diagnostics, release.facts
    return "\n".join(
        [
            f"spatial: {f['records']} records, {f['at_risk_records']} at risk, {release.seconds:.1f} s",
            f"  convergence: unrestricted max r_hat {d['unrestricted']['max_r_hat']:.3f}, min bulk ESS "
            f"{d['unrestricted']['min_ess_bulk']:.0f}; restricted max r_hat {d['restricted']['max_r_hat']:.3f}, "
            f"min bulk ESS {d['restricted']['min_ess_bulk']:.0f}",
            *measure_lines(release.measured),
            f"  written: {out / 'release'} and {out / 'private'} (the run's report: {out / 'private' / 'report.html'})",
        ]
    )


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """A small version of the paper's simulation (Section 4); rows of figures for ``bayessdc demo``."""
    import bayessdc as bsd
    from bayessdc.report.text import measure_rows

    frame, truth = bsd.examples.spatial_homes(120, seed=seed)
    recipe = bsd.Spatial(
        response="response",
        coords=("x", "y"),
        covariates=[],  # the paper's model: intercept only (Section 2); eq. (8)'s terms enter the analysis
        analysis_predictors=["d1", "d2"],
        # 1,000 draws per chain: at this size the gate passes with bulk ESS about 800 (2,000 by default)
        settings=bsd.SamplerSettings(draws=1000, tune=1000, chains=4, target_accept=0.95),
    )
    release = bsd.synthesize(frame, recipe, m=5, seed=seed, out=Path(out) / "spatial", progress=False)
    d = release.diagnostics
    rows = [
        ("records", release.facts["records"]),
        ("at-risk records", release.facts["at_risk_records"]),
        ("planted outlier flagged", truth["outlier_index"] in release.facts["at_risk_rows"]),
        ("max r_hat", max(d[s]["max_r_hat"] for s in ("unrestricted", "restricted"))),
        ("min bulk ESS", min(d[s]["min_ess_bulk"] for s in ("unrestricted", "restricted"))),
        *measure_rows(release),
        ("seconds", release.seconds),
    ]
    return [{"synthesizer": "spatial", "measure": k, "value": v} for k, v in rows]
