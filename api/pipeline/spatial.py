"""The spatial synthesizer's steps of the pipeline (Quick, Holan & Wikle).

Two stages are fitted (Section 3.3): the unrestricted spatial Gaussian-process model, from which the
spatially isolated (at-risk) records are flagged, and the restricted model whose spatial effect is smoothed
away at those records. The released data come from the restricted model; the unrestricted model's synthetic
data are drawn too, to measure how much the smoothing reduced the proximity risk. Utility is the analyst's
regression on the m datasets combined by Reiter's (2003) rules for partially synthetic data.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.models.spatial import SpatialPriors, fit_two_stage
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import draw_synthetic

from ..errors import InputError
from ..release import Diagnostics, Release
from .recipe import Drawn, Fitted, Lever, Recipe
from .spatial_input import SpatialPrepared, prepare_spatial
from .spatial_measures import SpatialMeasures, drawn_table

__all__ = ["Spatial", "SpatialMeasures", "SpatialPrepared"]

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class Spatial(Recipe):
    """Partially synthetic geocoded data with differential smoothing of spatial outliers.

    A continuous response is replaced by draws from a spatial Gaussian-process model whose spatial effect
    is smoothed away at spatially isolated records; locations, covariates and every other column are
    released unchanged. All arguments are keywords.

    Column roles in :func:`bayessdc.synthesize`: ``synthesize=["income"]`` names the response (the one
    column replaced) and ``keep=["d1", "d2"]`` the covariates of the model, as an alternative to
    ``response=`` and ``covariates=`` here; giving both with different columns, or more than one column to
    synthesize, is refused (:class:`bayessdc.InputError`). The coordinates always come from ``coords=``.
    Columns in no role pass through unchanged.

    Parameters
    ----------
    coords
        The two coordinate columns ``(x, y)`` (or ``"x,y"``); Euclidean distances.
    response
        The continuous response to synthesize (or ``synthesize=[column]``).
    covariates
        Covariate columns of the model (or ``keep=[...]``); an intercept is always included.
    log_response
        Model ``log(response)``; released on the original scale.
    gamma
        Global risk parameter (``inf``, the default: full smoothing at the at-risk records).
    alpha
        Target smoothing level of eq. (5) instead of ``gamma`` (``gamma`` then follows from the
        unrestricted fit).
    risk_weights
        ``"binary"`` or ``"continuous"`` risk weights.
    correlation
        A record is at risk when no neighbour has a correlation above this: ``M = -log(c)/phi_hat``.
    jitter
        Move records that share a location by a random offset of at most this distance (coordinate units;
        seeded by the run's seed); otherwise shared locations are refused.
    approximation, neighbours
        ``"exact"`` Gaussian process, ``"nngp"`` (nearest-neighbour GP with ``neighbours`` neighbours) or
        ``"auto"`` (exact up to 3,000 records).
    priors
        Prior settings (default :class:`bayessdc.models.spatial.SpatialPriors`).
    settings
        NUTS settings of each stage (default 2,000 draws per chain, target acceptance 0.95).
    band, absolute_band
        Relative proximity band, and the absolute band on the released scale (default: a tenth of the
        response's standard deviation).
    analysis_predictors
        Predictors of the analyst's regression (default: the covariates, else the coordinates).

    Notes
    -----
    ``release.risk(band=..., absolute_band=...)`` and ``release.utility(predictors=[...])`` recompute the
    proximity risk and the regression utility with other options (see :class:`SpatialMeasures`).

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.Spatial(response="price", coords=("x", "y"))
    >>> recipe.gamma, recipe.default_m
    (inf, 5)
    """

    coords: Sequence[str] | str
    response: str | None = None
    covariates: Sequence[str] | str | None = None
    log_response: bool = False
    gamma: float = math.inf
    alpha: float | None = None
    risk_weights: str = "binary"
    correlation: float = 0.20
    jitter: float | None = None
    approximation: str = "auto"
    neighbours: int = 15
    priors: SpatialPriors | None = None
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(draws=2000, target_accept=0.95))
    band: float = 0.10
    absolute_band: float | None = None
    analysis_predictors: Sequence[str] | str | None = None
    name: ClassVar[str] = "spatial"

    def check_run(self, m: int, allow_unconverged: bool) -> None:
        """The combining rules need two synthetic datasets."""
        if m < 2:
            raise InputError("m= must be at least 2 (the combining rules need two synthetic datasets)")

    # -- prepare ------------------------------------------------------------------------------------

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> SpatialPrepared:
        """Check the options and the table (errors name the column or rows), before any sampling."""
        return prepare_spatial(self, frame, synthesize, keep, seed)

    # -- fit and gate -------------------------------------------------------------------------------

    def fit(self, prepared: SpatialPrepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit the unrestricted and the restricted model; the parameter gate applies to both (state: the
        two-stage fit)."""
        data, method = prepared.data, prepared.method
        if progress:
            how = "exact GP" if method == "exact" else f"nearest-neighbour GP, {self.neighbours} neighbours"
            _log.info("%d records (%s); fitting the unrestricted and the restricted model ...", data.n, how)
        fit = fit_two_stage(
            data,
            priors=self.priors,
            settings=self.settings,
            seed=seed,
            risk_weights=self.risk_weights,  # type: ignore[arg-type]
            correlation=self.correlation,
            gamma=self.gamma,
            alpha=self.alpha,
            approximation=method,  # type: ignore[arg-type]
            neighbours=self.neighbours,
        )
        stages = {
            "unrestricted": (fit.unrestricted, fit.unrestricted_idata),
            "restricted": (fit.restricted, fit.restricted_idata),
        }
        reports = {
            name: check_convergence(idata, var_names=stage.convergence_variables())
            for name, (stage, idata) in stages.items()
        }
        summary: dict[str, Any] = {name: report.to_dict() for name, report in reports.items()}
        summary["all_converged"] = all(r.passed for r in reports.values())
        summary["restriction"] = fit.restriction.describe()
        failed = [name for name, r in reports.items() if not r.passed]
        posteriors = {name: idata for name, (_, idata) in stages.items()}
        return Fitted(
            Diagnostics(posteriors, summary, passed=not failed),
            reports[failed[0]] if failed else reports["restricted"],
            what=f"the {failed[0]} model" if failed else "the posterior",
            state=fit,
            reports={name: report.to_dict() for name, report in reports.items()},
            private_files={
                f"posterior_{name}.nc": lambda tmp, idata=idata: idata.to_netcdf(str(tmp))
                for name, idata in posteriors.items()
            },
        )

    # -- release ------------------------------------------------------------------------------------

    def report_content(self, prepared: SpatialPrepared, release: Release) -> Any:
        """The report's material: what was synthesized, the response compared and a map of the locations
        with the outliers marked."""
        from .report_content import spatial_report_content

        return spatial_report_content(prepared, release)

    def describe(self, prepared: SpatialPrepared, fitted: Fitted) -> dict[str, Any]:
        """The restricted model (released), the columns' roles and how differential smoothing was set."""
        fit = fitted.state
        model = fit.restricted.describe()
        model.update(
            {
                "response": prepared.response,
                "response_scale": "log" if self.log_response else "original",
                "coords": prepared.coords,
                "covariates": prepared.covariates,
                "differential_smoothing": {
                    "risk_weights": self.risk_weights,
                    "correlation": self.correlation,
                    "gamma": "inf" if math.isinf(fit.restriction.gamma) else "finite",
                    "from_alpha": self.alpha is not None,
                },
                "jittered_duplicate_locations": fit.data.n_jittered > 0,
            }
        )
        return model

    def draw(self, prepared: SpatialPrepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """m synthetic datasets from each stage (the restricted ones released), proximity risk, utility."""
        fit = fitted.state
        data, response = fit.data, prepared.response
        rng = streams.rng(seed, "datasets")
        drawn = {
            "unrestricted": draw_synthetic(fit.unrestricted, fit.unrestricted_idata, data, m, rng),
            "restricted": draw_synthetic(fit.restricted, fit.restricted_idata, data, m, rng),
        }
        values = {name: stage.to_numpy() for name, stage in drawn.items()}
        original = prepared.frame.reset_index(drop=True)
        measures = SpatialMeasures(
            data=data,
            restriction=fit.restriction,
            values=values,
            original=original,
            response=response,
            band=self.band,
            absolute_band=self.absolute_band,
            predictors=prepared.predictors,
        )
        risk, records = measures.proximity(self.band, measures.absolute_band)
        utility = measures.utility()
        overlap = float(np.mean([row["ci_overlap"] for row in utility["regression"]]))
        return Drawn(
            measures.datasets["restricted"],
            facts={"records": data.n, "at_risk_records": len(risk["outliers"]), "mean_ci_overlap": overlap},
            risk_figures=risk,
            utility_figures=utility,
            private_tables={
                "risk_records.parquet": records,
                "synthetic_unrestricted.parquet": measures.datasets["unrestricted"],
                "drawn.parquet": drawn_table(drawn),
            },
            measures=measures,
            measure_input=measures.measure_input(),
        )

    def levers(self) -> list[Lever]:
        """What lowers the proximity of the at-risk records' synthetic values, in words."""
        return [
            Lever("correlation", "a higher correlation threshold: more records count as isolated and are smoothed"),
            Lever("gamma", "a smaller global risk parameter smooths the at-risk records' spatial effect more "
                  "(inf, the default, removes it)"),
            Lever("risk_weights", "'continuous' risk weights smooth every record by its isolation"),
        ]  # fmt: skip
