"""``bayessdc spatial``: partially synthetic geocoded data with differential smoothing of spatial outliers (the two
stages of Quick, Holan & Wikle, proximity risk and regression utility): its options, the lines it prints and its
demo."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...command import Command, Option, columns, synthesize_options, two_columns

__all__ = ["COMMAND", "gamma"]


def gamma(text: str) -> float:
    """``gamma=`` as a number: non-negative, or ``inf``; anything else is a ValueError."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError("takes a non-negative number or inf") from None
    if math.isnan(value) or value < 0:
        raise ValueError("must be non-negative (or inf)")
    return value


def summary(release: Any) -> list[str]:
    """The lines printed after a run: the run, both stages' convergence and every measure."""
    from ...report.text import measure_lines

    d, f = release.diagnostics, release.facts
    return [
        f"spatial: {f['records']} records, {f['at_risk_records']} at risk, {release.seconds:.1f} s",
        f"  convergence: unrestricted max r_hat {d['unrestricted']['max_r_hat']:.3f}, min bulk ESS "
        f"{d['unrestricted']['min_ess_bulk']:.0f}; restricted max r_hat {d['restricted']['max_r_hat']:.3f}, "
        f"min bulk ESS {d['restricted']['min_ess_bulk']:.0f}",
        *measure_lines(release.measured),
    ]


def demo(out: Path, seed: int = 0) -> list[tuple[str, Any]]:
    """A small version of the paper's simulation (Section 4)."""
    import bayessdc as bsd

    from ...report.text import measure_rows

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
    return [
        ("records", release.facts["records"]),
        ("at-risk records", release.facts["at_risk_records"]),
        ("planted outlier flagged", truth["outlier_index"] in release.facts["at_risk_rows"]),
        ("max r_hat", max(d[s]["max_r_hat"] for s in ("unrestricted", "restricted"))),
        ("min bulk ESS", min(d[s]["min_ess_bulk"] for s in ("unrestricted", "restricted"))),
        *measure_rows(release),
        ("seconds", release.seconds),
    ]


COMMAND = Command(
    name="spatial",
    recipe="Spatial",
    help="spatial Gaussian-process synthesis with differential smoothing of outliers (Quick, Holan & Wikle)",
    description="Replace a continuous response by draws from a spatial Gaussian-process model whose spatial effect is "
    "smoothed away at spatially isolated records (two-stage differential smoothing); locations and covariates pass "
    "through. Writes release/ (synthetic data, model description) and private/ (posteriors, diagnostics, proximity "
    "risk, regression utility).",
    options=(
        Option("Spatial.response", "column of the continuous response to synthesize", required=True),
        Option("Spatial.coords", "the two coordinate columns, XCOL,YCOL", required=True, parse=two_columns),
        Option("Spatial.covariates", "covariate columns A,B (default: none; intercept always)", parse=columns),
        Option("Spatial.log_response", "model log(response); released on the original scale", action="store_true"),
        Option("Spatial.gamma", "global risk parameter gamma (default {default}: full smoothing at outliers)",
               parse=gamma),
        Option("Spatial.alpha", "target smoothing level alpha of eq. (5) instead of gamma= (gamma from the "
               "unrestricted fit)", type=float),
        Option("Spatial.risk_weights", "risk weights of the records (default {default})",
               choices=("binary", "continuous")),
        Option("Spatial.correlation", "outlier when no neighbour has correlation above this: M = -log(c)/phi_hat "
               "(default {default})", type=float),
        Option("Spatial.jitter", "move records that share a location by a random offset of at most DIST (coordinate "
               "units)", type=float, metavar="DIST"),
        Option("Spatial.approximation", "exact Gaussian process, or the nearest-neighbour (Vecchia) GP for large "
               "data: response NNGP likelihood with a grid posterior (independent draws, draws= x chains= of them) "
               "and latent NNGP draws of the spatial effect; auto = exact up to 3,000 records, nngp beyond (default "
               "{default})", choices=("auto", "exact", "nngp")),
        Option("Spatial.neighbours", "neighbours per record under approximation=nngp (default {default})", type=int),
        *synthesize_options("Spatial"),
        Option("Spatial.settings.draws", "kept draws per chain (default {default})", type=int),
        Option("Spatial.settings.tune", "warm-up iterations per chain (default {default})", type=int),
        Option("Spatial.settings.chains", "chains (default {default})", type=int),
        Option("Spatial.settings.backend", "NUTS backend (default {default})",
               choices=("auto", "nutpie", "pymc", "numpyro")),
        Option("Spatial.settings.target_accept", "NUTS target acceptance (default {default})", type=float),
        Option("Spatial.band", "relative proximity band (default {default})", type=float),
        Option("Spatial.absolute_band", "absolute proximity band on the released scale (default: a tenth of the "
               "response's sd)", type=float),
        Option("Spatial.analysis_predictors", "predictors of the analyst's regression, A,B (default: the covariates, "
               "else the coordinates)", parse=columns),
        Option("synthesize.allow_unconverged", "write release outputs even if a stage fails the convergence gate "
               "(recorded in the outputs)", action="store_true"),
    ),  # fmt: skip
    summary=summary,
    demo=demo,
)
