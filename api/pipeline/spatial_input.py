"""The checks of a spatial release's input before any sampling, and its typed prepared input."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from bayessdc.models.spatial import SpatialData, prepare_spatial_data, resolve_approximation
from bayessdc.synthesis.output import fingerprint_frame

from ..errors import InputError
from .recipe import Prepared
from .spatial_measures import _names

if TYPE_CHECKING:
    from .spatial import Spatial

__all__ = ["SpatialPrepared", "prepare_spatial"]


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
    coords = _names(recipe.coords)
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
    predictors = _names(recipe.analysis_predictors) or (covariates or list(coords))
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
    covariates = _names(recipe.covariates) if recipe.covariates is not None else None
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
