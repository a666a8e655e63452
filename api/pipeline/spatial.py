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
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.measures import MeasureInput, ProximityInput, RegressionInput
from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.models.spatial import (
    Restriction,
    SpatialData,
    SpatialPriors,
    fit_two_stage,
    prepare_spatial_data,
    resolve_approximation,
)
from bayessdc.risk.proximity import proximity_shares, proximity_summary, relative_reduction
from bayessdc.synthesis.datasets import draw_synthetic, stack_datasets
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.regression import regression_utility

from ..errors import InputError
from ..release import Diagnostics, Measures, Release
from .recipe import Drawn, Fitted, Lever, Prepared, Recipe, column_list

__all__ = ["Spatial", "SpatialMeasures"]

_log = logging.getLogger(__name__)

#: The two stages, in the order they are fitted and their synthetic data drawn.
STAGES: tuple[str, str] = ("unrestricted", "restricted")


def _names(columns: Sequence[str] | str | None) -> list[str]:
    """Column names given as a list, or as one comma-separated string."""
    return column_list(columns) or []


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

    def check_m(self, m: int) -> None:
        """The combining rules need two synthetic datasets."""
        if m < 2:
            raise InputError("m= must be at least 2 (the combining rules need two synthetic datasets)")

    # -- prepare ------------------------------------------------------------------------------------

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> SpatialPrepared:
        """Check the options and the table (errors name the column or rows), before any sampling."""
        response, covariates = self._roles(synthesize, keep)
        coords = _names(self.coords)
        if len(coords) != 2:
            raise InputError(f"coords= takes two columns XCOL,YCOL, got {self.coords!r}")
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, numbers.Real) or not self.gamma >= 0:
            raise InputError(f"gamma= must be non-negative (or inf), got {self.gamma!r}")
        if self.risk_weights not in ("binary", "continuous"):
            raise InputError(f"risk_weights= takes binary or continuous, got {self.risk_weights!r}")
        if not 0 < self.band:
            raise InputError("band= must be positive")
        if self.approximation not in ("auto", "exact", "nngp"):
            raise InputError(f"approximation= takes auto, exact or nngp, got {self.approximation!r}")
        if self.neighbours < 1:
            raise InputError(f"neighbours= must be at least 1, got {self.neighbours}")
        data = self._data(frame, response, coords, covariates, seed=seed)
        try:
            method = resolve_approximation(self.approximation, data.n, self.neighbours)
        except ValueError as err:
            raise InputError(f"{err} (approximation=, neighbours=)") from err
        predictors = _names(self.analysis_predictors) or (covariates or list(coords))
        missing = [c for c in predictors if c not in frame.columns]
        if missing:
            raise InputError(f"analysis predictor(s) {missing} are not columns of the table")
        if math.isinf(self.gamma) and self.risk_weights == "continuous" and self.alpha is None:
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
            "log_response": self.log_response,
            "gamma": "inf" if math.isinf(self.gamma) else self.gamma,
            "alpha": self.alpha,
            "risk_weights": self.risk_weights,
            "correlation": self.correlation,
            "jitter": self.jitter,
            "approximation": method,
            "neighbours": self.neighbours if method == "nngp" else None,
            "sampler": {k: v for k, v in self.settings.to_dict().items() if k not in ("progressbar", "cores")},
        }
        if self.priors is not None:
            identity["priors"] = asdict(self.priors)
        return SpatialPrepared(
            data, identity, frame=frame, method=method, response=response, coords=coords, covariates=covariates,
            predictors=predictors,
        )  # fmt: skip

    def _roles(self, synthesize: list[str] | None, keep: list[str] | None) -> tuple[str, list[str]]:
        """The response and the covariates from this recipe's arguments or ``synthesize=``/``keep=``."""
        if synthesize is not None and len(synthesize) != 1:
            raise InputError(
                f"the spatial synthesizer replaces one continuous response; synthesize= got {synthesize}. "
                "Name it with bsd.Spatial(response=...) or synthesize=[COLUMN]"
            )
        if self.response is not None and synthesize is not None and synthesize != [self.response]:
            raise InputError(
                f"synthesize={synthesize} contradicts bsd.Spatial(response={self.response!r}); give the response once"
            )
        response = self.response if self.response is not None else (synthesize[0] if synthesize else None)
        if not response:
            raise InputError("name the response to synthesize: bsd.Spatial(response=...) or synthesize=[COLUMN]")
        covariates = _names(self.covariates) if self.covariates is not None else None
        if covariates is not None and keep is not None and keep != covariates:
            raise InputError(f"keep={keep} contradicts bsd.Spatial(covariates={covariates}); give the covariates once")
        return response, covariates if covariates is not None else list(keep or [])

    def _data(
        self, frame: pd.DataFrame, response: str, coords: list[str], covariates: list[str], seed: int
    ) -> SpatialData:
        # SpatialDataError is a bayessdc.InputError: the row and column named by the model's own check.
        return prepare_spatial_data(
            frame,
            response,
            (coords[0], coords[1]),
            covariates,
            log_response=self.log_response,
            jitter=self.jitter,
            seed=seed,
        )

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
        """m synthetic datasets from each stage (the restricted ones released), proximity risk, utility."""
        fit = fitted.state
        data, response = fit.data, prepared.response
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 3]))
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


def drawn_table(drawn: dict[str, Any]) -> pd.DataFrame:
    """What each stage drew (``private/drawn.parquet``): one row per stage, synthetic dataset and record.

    Columns ``stage``, ``synthetic`` (1..m), ``posterior_draw`` (the stacked posterior draw the dataset came
    from), ``row`` (0-based position in the input table) and ``value``, the synthetic response on the
    modelling scale (its log under ``log_response``). The released response is the restricted stage's
    ``value`` on the released scale.
    """
    frames = []
    for stage, values in drawn.items():
        table = values.transpose("synthetic", "item")
        m, n = table.shape
        frames.append(
            pd.DataFrame(
                {
                    "stage": stage,
                    "synthetic": np.repeat(table["synthetic"].to_numpy(), n),
                    "posterior_draw": np.repeat(table["posterior_draw"].to_numpy(), n),
                    "row": np.tile(np.arange(n), m),
                    "value": table.to_numpy().ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


class SpatialMeasures(Measures):
    """Proximity risk and regression utility of a spatial release, recomputed with other options.

    Holds the confidential response (in memory only) and the synthetic values of both stages.

    Parameters
    ----------
    data
        The model input the stages were fitted to.
    restriction
        The restriction of stage 2 (at-risk records, risk weights, threshold).
    values
        Synthetic responses on the modelling scale per stage, shape ``(m, n)``.
    original
        The input table (rows in order).
    response
        The response column.
    band, absolute_band
        The run's relative band and absolute band (``None``: a tenth of the response's sd).
    predictors
        The run's regression predictors.
    """

    risk_options = ("band", "absolute_band")
    utility_options = ("predictors",)

    def __init__(
        self,
        *,
        data: SpatialData,
        restriction: Restriction,
        values: dict[str, np.ndarray],
        original: pd.DataFrame,
        response: str,
        band: float,
        absolute_band: float | None,
        predictors: list[str],
    ) -> None:
        self.data, self.restriction, self.values = data, restriction, values
        self.original, self.response, self.band, self.predictors = original, response, band, predictors
        self.truth = data.released(data.y)
        self.absolute_band = absolute_band if absolute_band is not None else 0.1 * float(np.std(self.truth, ddof=1))
        self.datasets: dict[str, pd.DataFrame] = {}
        self.analysed: dict[str, pd.DataFrame] = {}
        for name, stage_values in values.items():
            released, modelled = [], []
            for k in range(len(stage_values)):
                frame = original.copy()
                frame[response] = data.released(stage_values[k])
                released.append(frame)
                modelled.append(frame.assign(**{response: stage_values[k]}))
            self.datasets[name] = stack_datasets(released)
            self.analysed[name] = stack_datasets(modelled)

    def proximity(self, band: float, absolute: float) -> tuple[dict[str, Any], pd.DataFrame]:
        """The risk figures (``private/risk.json``) and the per-record shares (``risk_records.parquet``)."""
        at_risk = self.restriction.at_risk
        risk: dict[str, Any] = {
            "outliers": np.flatnonzero(at_risk).tolist(),
            "outliers_are": "0-based row positions in the input table",
            "threshold_M": self.restriction.threshold,
            "bands": {"relative": band, "absolute": absolute, "scale": "released (original) scale"},
            "within_band": {},
            "within_absolute": {},
        }
        records = pd.DataFrame(
            {"row": np.arange(self.data.n), "at_risk": at_risk, "risk_weight": self.restriction.weights}
        )
        for name in STAGES:
            shares = proximity_shares(
                self.truth, self.data.released(self.values[name]), relative=band, absolute=absolute
            )
            for column in ("within_band", "within_absolute"):
                risk[column][name] = proximity_summary(shares, at_risk, column)
            records[f"{name}_within_band"] = shares["within_band"].to_numpy()
            records[f"{name}_within_absolute"] = shares["within_absolute"].to_numpy()
        risk["reduction"] = {
            column: relative_reduction(risk[column]["unrestricted"], risk[column]["restricted"])
            for column in ("within_band", "within_absolute")
        }
        return risk, records

    def risk(self, band: float | None = None, absolute_band: float | None = None) -> dict[str, Any]:
        """Proximity risk of both stages with another relative ``band`` and/or ``absolute_band``."""
        band = self.band if band is None else band
        if not 0 < band:
            raise InputError("band= must be positive")
        return self.proximity(band, self.absolute_band if absolute_band is None else absolute_band)[0]

    def measure_input(
        self, band: float | None = None, absolute_band: float | None = None,
        predictors: Sequence[str] | str | None = None,
    ) -> MeasureInput:
        """What the measures read: the proximity of the at-risk records within ``band`` (and ``absolute_band``)
        and the analyst's regression on ``predictors`` (default: the run's)."""
        band = self.band if band is None else band
        if not 0 < band:
            raise InputError(f"band must be positive, got {band!r}")
        predictors = self._predictors(predictors)
        return MeasureInput(
            self.datasets["restricted"],
            proximity=ProximityInput(
                truth=self.truth, released=self.data.released(self.values["restricted"]),
                at_risk=self.restriction.at_risk, band=band,
                reference=self.data.released(self.values["unrestricted"]),
                absolute=self.absolute_band if absolute_band is None else absolute_band,
            ),
            regression=RegressionInput(
                self.original.assign(**{self.response: self.data.y}), self.analysed["restricted"], self.response,
                predictors, reference=self.analysed["unrestricted"],
            ),
        )  # fmt: skip

    def _predictors(self, predictors: Sequence[str] | str | None) -> list[str]:
        predictors = _names(predictors) or self.predictors
        missing = [c for c in predictors if c not in self.original.columns]
        if missing:
            raise InputError(f"analysis predictor(s) {missing} are not columns of the table")
        return list(predictors)

    def utility(self, predictors: Sequence[str] | str | None = None) -> dict[str, Any]:
        """The analyst's OLS on the m datasets of each stage, combined by Reiter's rules, against the original."""
        predictors = self._predictors(predictors)
        scale = "log " if self.data.log_response else ""
        utility: dict[str, Any] = {
            "analysis": f"OLS of {scale}{self.response} on {', '.join(predictors)}",
            "combining_rules": "Reiter (2003), partially synthetic",
            "m": len(self.values["restricted"]),
        }
        analysed_original = self.original.assign(**{self.response: self.data.y})
        for name in ("restricted", "unrestricted"):
            table = regression_utility(analysed_original, self.analysed[name], self.response, predictors)
            key = "regression" if name == "restricted" else "regression_unrestricted"
            utility[key] = table.reset_index().to_dict(orient="records")
        return utility


def spatial_report_content(prepared: SpatialPrepared, release: Release) -> Any:
    """What the spatial synthesizer did, for its report (:class:`bayessdc.report.ReportContent`): a map of the
    locations with the outliers it smooths; risk and utility are laid out from the release's measures."""
    from functools import partial

    from bayessdc.report import Figure, ReportContent, plots

    response, coords = prepared.response, list(prepared.coords)
    original = prepared.frame.reset_index(drop=True)
    risk = release.risk_figures or {}
    at_risk = np.zeros(len(original), bool)
    at_risk[risk.get("outliers", [])] = True
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
