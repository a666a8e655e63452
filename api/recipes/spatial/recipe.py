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
import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.models.spatial import (
    SpatialData,
    SpatialPriors,
    fit_two_stage,
    prepare_spatial_data,
    resolve_approximation,
)
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import draw_synthetic
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.recipe import Drawn, Fitted, Lever, Prepared, Recipe, column_list
from ...release import Diagnostics, Release
from .measures import SpatialMeasures, drawn_table

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
        """m synthetic datasets from each stage (the restricted ones released), and what the measures read: the
        at-risk records' true and synthetic values, and the analyst's regression on both stages."""
        fit = fitted.state
        data, response = fit.data, prepared.response
        rng = streams.rng(seed, Stream.DATASETS)
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
        at_risk = np.flatnonzero(fit.restriction.at_risk).tolist()
        measure_input = measures.measure_input()
        return Drawn(
            measures.datasets["restricted"],
            facts={
                "records": data.n, "at_risk_records": len(at_risk),
                "at_risk_rows": at_risk,  # 0-based row positions in the input table
                "outlier_threshold": fit.restriction.threshold,  # the paper's M
                "proximity_bands": {"relative": self.band, "absolute": measures.absolute_band,
                                    "scale": "released (original) scale"},
            },  # fmt: skip
            private_tables={
                "risk_records.parquet": measures.records(),
                "synthetic_unrestricted.parquet": measures.datasets["unrestricted"],
                "drawn.parquet": drawn_table(drawn),
            },
            measures=measures,
            measure_input=measure_input,
        )

    def levers(self) -> list[Lever]:
        """What lowers the proximity of the at-risk records' synthetic values, in words."""
        return [
            Lever("correlation", "a higher correlation threshold: more records count as isolated and are smoothed"),
            Lever("gamma", "a smaller global risk parameter smooths the at-risk records' spatial effect more "
                  "(inf, the default, removes it)"),
            Lever("risk_weights", "'continuous' risk weights smooth every record by its isolation"),
        ]  # fmt: skip


def spatial_report_content(prepared: SpatialPrepared, release: Release) -> Any:
    """What the spatial synthesizer did, for its report (:class:`bayessdc.report.ReportContent`): a map of the
    locations with the outliers it smooths; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, plots

    response, coords = prepared.response, list(prepared.coords)
    original = prepared.frame.reset_index(drop=True)
    at_risk = np.zeros(len(original), bool)
    at_risk[release.facts.get("at_risk_rows", [])] = True
    content = ReportContent(
        original=original,
        synthetic=release.synthetic,
        compared=[response],
        about=[
            f"The response {response} of {len(original):,} geocoded records is replaced, in each of the m = "
            f"{release.m} datasets, by a posterior predictive draw of a spatial Gaussian process (Quick, Holan & "
            f"Wikle). Stage 2 smooths the {int(at_risk.sum())} records the model flags as outliers towards their "
            "neighbours (differential smoothing); the released data are stage 2's. Locations and covariates are "
            "released unchanged.",
        ],
    )
    first = release.synthetic[release.synthetic["synthetic"] == 1][response].to_numpy(float)
    if len(coords) == 2:
        content.comparison.append(Figure(
            partial(plots.location_map, original[coords[0]], original[coords[1]],
                    {"original": original[response].to_numpy(float), "synthetic dataset 1": first},
                    at_risk, coords[0], coords[1], response),
            f"The locations coloured by {response}, original and in the first synthetic dataset; the outliers that "
            "differential smoothing protects are circled in red.",
        ))
    return content


@dataclass(kw_only=True)
class SpatialPrepared(Prepared):
    """The spatial synthesizer's validated input: ``data`` is the model's :class:`SpatialData`.

    Attributes
    ----------
    frame
        The table as given (rows in order; released with the response replaced).
    method
        The Gaussian-process approximation resolved for this many records (``"exact"`` or ``"nngp"``).
    response, coords, covariates, predictors
        The response, the two coordinate columns, the model's covariates and the analyst's predictors.
    """

    frame: pd.DataFrame
    method: str
    response: str
    coords: list[str]
    covariates: list[str]
    predictors: list[str]



def prepare_spatial(
    recipe: Spatial, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
) -> SpatialPrepared:
    """Check ``recipe``'s options and the table (errors name the column or rows), before any sampling."""
    response, covariates = _roles(recipe, synthesize, keep)
    coords = _column_names(recipe.coords)
    if len(coords) != 2:
        raise InputError(f"coords= takes two columns XCOL,YCOL, got {recipe.coords!r}")
    if isinstance(recipe.gamma, bool) or not isinstance(recipe.gamma, numbers.Real) or not recipe.gamma >= 0:
        raise InputError(f"gamma= must be non-negative (or inf), got {recipe.gamma!r}")
    if recipe.risk_weights not in ("binary", "continuous"):
        raise InputError(f"risk_weights= takes binary or continuous, got {recipe.risk_weights!r}")
    if recipe.approximation not in ("auto", "exact", "nngp"):
        raise InputError(f"approximation= takes auto, exact or nngp, got {recipe.approximation!r}")
    neighbours = recipe.neighbours
    if isinstance(neighbours, bool) or not isinstance(neighbours, numbers.Integral) or neighbours < 1:
        raise InputError(f"neighbours= must be a whole number of at least 1, got {recipe.neighbours!r}")
    _check_options(recipe)
    if len(set(coords)) < 2:
        raise InputError(f"coords= names one column twice ({coords[0]!r}); give the x and the y columns")
    if response in coords or response in covariates:
        role = "a coordinate (coords=)" if response in coords else "a covariate (keep=, covariates=)"
        raise InputError(f"the response {response!r} is also {role}: a column is synthesized or kept, not both")
    data = _data(recipe, frame, response, coords, covariates, seed=seed)
    try:
        method = resolve_approximation(recipe.approximation, data.n, recipe.neighbours)
    except ValueError as err:
        raise InputError(f"{err} (approximation=, neighbours=)") from err
    predictors = _column_names(recipe.analysis_predictors) or (covariates or list(coords))
    missing = [c for c in predictors if c not in frame.columns]
    if missing:
        raise InputError(f"analysis predictor(s) {missing} are not columns of the table")
    if math.isinf(recipe.gamma) and recipe.risk_weights == "continuous" and recipe.alpha is None:
        raise InputError(
            "continuous risk weights are positive for every record, so gamma=inf would remove every spatial "
            "effect; give a finite gamma= or a smoothing level alpha="
        )
    identity: dict[str, Any] = {
        "synthesizer": "spatial",
        "input": fingerprint_frame(frame),
        "response": response,
        "coords": coords,
        "covariates": covariates,
        "log_response": recipe.log_response,
        "gamma": "inf" if math.isinf(recipe.gamma) else recipe.gamma,
        "alpha": recipe.alpha,
        "risk_weights": recipe.risk_weights,
        "correlation": recipe.correlation,
        "jitter": recipe.jitter,
        "approximation": method,
        "neighbours": recipe.neighbours if method == "nngp" else None,
        "sampler": {k: v for k, v in recipe.settings.to_dict().items() if k not in ("progressbar", "cores")},
    }
    if recipe.priors is not None:
        identity["priors"] = asdict(recipe.priors)
    return SpatialPrepared(
        data, identity, frame=frame, method=method, response=response, coords=coords, covariates=covariates,
        predictors=predictors,
    )  # fmt: skip

def _positive(value: Any, name: str, upper: float = math.inf, optional: bool = False) -> None:
    """Refuse an option that is not a finite number in ``(0, upper)`` (``None`` allowed when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < upper:
        bound = f"in (0, {upper:g})" if math.isfinite(upper) else "a positive finite number"
        raise InputError(f"{name}= must be {bound}, got {value!r}")


def _check_options(recipe: Spatial) -> None:
    """The options read after the fit, checked before it: the correlation defining spatial isolation, the
    smoothing level (its upper end, sigma^2 / (sigma^2 + tau^2), is known only from the fit), the bands and the
    jitter."""
    _positive(recipe.correlation, "correlation", upper=1.0)
    _positive(recipe.alpha, "alpha", upper=1.0, optional=True)
    _positive(recipe.band, "band")
    _positive(recipe.absolute_band, "absolute_band", optional=True)
    _positive(recipe.jitter, "jitter", optional=True)


def _roles(recipe: Spatial, synthesize: list[str] | None, keep: list[str] | None) -> tuple[str, list[str]]:
    """The response and the covariates from this recipe's arguments or ``synthesize=``/``keep=``."""
    if synthesize is not None and len(synthesize) != 1:
        raise InputError(
            f"the spatial synthesizer replaces one continuous response; synthesize= got {synthesize}. "
            "Name it with bsd.Spatial(response=...) or synthesize=[COLUMN]"
        )
    if recipe.response is not None and synthesize is not None and synthesize != [recipe.response]:
        raise InputError(
            f"synthesize={synthesize} contradicts bsd.Spatial(response={recipe.response!r}); give the response once"
        )
    response = recipe.response if recipe.response is not None else (synthesize[0] if synthesize else None)
    if not response:
        raise InputError("name the response to synthesize: bsd.Spatial(response=...) or synthesize=[COLUMN]")
    covariates = _column_names(recipe.covariates) if recipe.covariates is not None else None
    if covariates is not None and keep is not None and keep != covariates:
        raise InputError(f"keep={keep} contradicts bsd.Spatial(covariates={covariates}); give the covariates once")
    return response, covariates if covariates is not None else list(keep or [])

def _data(
    recipe: Spatial, frame: pd.DataFrame, response: str, coords: list[str], covariates: list[str], seed: int
) -> SpatialData:
    # SpatialDataError is a bayessdc.InputError: the row and column named by the model's own check.
    return prepare_spatial_data(
        frame,
        response,
        (coords[0], coords[1]),
        covariates,
        log_response=recipe.log_response,
        jitter=recipe.jitter,
        seed=seed,
    )


def _column_names(columns: Sequence[str] | str | None) -> list[str]:
    """Column names given as a list, or as one comma-separated string."""
    return column_list(columns) or []
