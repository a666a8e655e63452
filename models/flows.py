"""Truncated-Poisson synthesizer for small origin-destination counts.

Hawala, Reiter & Wang, *Synthesizing truncated count data for confidentiality* (the paper behind this
module; ``../shared/papers/000_a0ee0433da4e693a.txt`` in the development tree).

Cells of a county-to-county flow table whose count ``n`` lies in ``lower..upper`` (1..9 in the paper) are
sensitive. Their shifted counts ``y = n - lower`` (0..8) are modelled, one model per (origin group,
destination group), for example per pair of states, by

* eq. (1): ``y_ij | lambda_ij ~ Poisson(lambda_ij)`` truncated to ``0..upper-lower``,
* Section 2.1: ``log lambda_ij = beta_i + gamma_j``, ``beta_i ~ N(mu_beta, phi_beta)``,
  ``gamma_j ~ N(mu_gamma, phi_gamma)``, ``mu_beta, mu_gamma ~ N(0, 1/25)``,
  ``phi_beta, phi_gamma ~ Gamma(0.01, 0.01)``, the second argument of ``N`` being a precision.

Parameterisation. ``log lambda`` is unchanged when a constant moves from ``gamma`` to ``beta`` and from
``mu_gamma`` to ``mu_beta``, so ``mu_beta - mu_gamma`` is not identified by the data (sampled as written its
chains never mix: r_hat above 2 in every sampler). Writing ``beta_i = mu_beta + b_i`` and
``gamma_j = mu_gamma + g_j`` is a shift with unit Jacobian, and because ``mu_beta`` and ``mu_gamma`` are
independent ``N(0, variance 25)``, their sum ``mu = mu_beta + mu_gamma ~ N(0, variance 50)`` and their
difference ``delta ~ N(0, variance 50)`` are independent too. The likelihood involves only
``mu + b_i + g_j``, so ``delta`` has posterior equal to its prior and is integrated out exactly. The model
sampled here is therefore the paper's model, with the same prior on every ``lambda``:

``log lambda_ij = mu + b_i + g_j``, ``mu ~ N(0, precision 1/50)``, ``b_i ~ N(0, phi_beta)``,
``g_j ~ N(0, phi_gamma)``, ``phi ~ Gamma(0.01, 0.01)``.

Every sampled quantity is identified, so the convergence gate applies to all of them (and to every
``log lambda``). The paper's ``beta_i`` and ``gamma_j`` follow, if wanted, by drawing ``delta`` from its prior.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from .base import sample_candidates
from .sampling import CompiledModelCache, SamplerSettings, resolve_backend, sample_model

__all__ = [
    "FlowColumns",
    "FlowDataError",
    "FlowGroup",
    "FlowPriors",
    "FlowSynthesizer",
    "build_model",
    "simulate_flow_table",
    "simulate_group",
    "split_groups",
    "truncated_poisson_log_normaliser",
    "truncated_poisson_logp",
    "validate_flows",
]


class FlowDataError(ValueError):
    """The flow table cannot be modelled as given (the message names the column or rows at fault)."""


@dataclass(frozen=True)
class FlowColumns:
    """Names of the input columns."""

    origin: str = "origin"
    destination: str = "destination"
    origin_group: str = "origin_group"
    destination_group: str = "destination_group"
    count: str = "count"

    def as_list(self) -> list[str]:
        """All five column names, in the order above."""
        return [self.origin, self.destination, self.origin_group, self.destination_group, self.count]


@dataclass(frozen=True)
class FlowPriors:
    """Hyperparameters of Section 2.1 (the paper's values are the defaults).

    Parameters
    ----------
    mu_precision
        Precision of the normal priors of ``mu_beta`` and ``mu_gamma`` (1/25).
    phi_shape, phi_rate
        Shape and rate of the gamma priors of the precisions ``phi_beta`` and ``phi_gamma`` (0.01, 0.01).
    """

    mu_precision: float = 1 / 25
    phi_shape: float = 0.01
    phi_rate: float = 0.01

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not value > 0:
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


# --------------------------------------------------------------------------------------------------
# Input checks and groups


def _rows(mask: np.ndarray | pd.Series, limit: int = 5) -> str:
    """Describe the offending rows as 1-based data row numbers (row 1 is the first line after a header)."""
    positions = np.flatnonzero(np.asarray(mask)) + 1
    shown = ", ".join(str(p) for p in positions[:limit])
    more = f" and {len(positions) - limit} more" if len(positions) > limit else ""
    return f"data row{'s' if len(positions) > 1 else ''} {shown}{more}"


def validate_flows(data: pd.DataFrame, columns: FlowColumns = FlowColumns()) -> pd.DataFrame:
    """Check a flow table and return it with a clean integer count column.

    Parameters
    ----------
    data
        One row per origin-destination pair, with origin, destination, their groups and the count.
    columns
        Names of those columns.

    Returns
    -------
    pandas.DataFrame
        The same rows (same order and index) with ``count`` as int64.

    Raises
    ------
    FlowDataError
        Missing columns, missing values, counts that are not non-negative integers, duplicate
        origin-destination rows, or an origin (destination) listed in two groups; the message names the
        column and the data rows.
    """
    missing = [c for c in columns.as_list() if c not in data.columns]
    if missing:
        raise FlowDataError(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; the table has "
            f"{', '.join(repr(str(c)) for c in data.columns)} (rename with --origin, --count, ...)"
        )
    out = data.reset_index(drop=True).copy()
    for col in columns.as_list():
        na = out[col].isna().to_numpy()
        if na.any():
            raise FlowDataError(f"column {col!r} has missing values at {_rows(na)}")
    counts = pd.to_numeric(out[columns.count], errors="coerce")
    bad = counts.isna().to_numpy()
    if bad.any():
        raise FlowDataError(f"column {columns.count!r} is not numeric at {_rows(bad)}")
    values = counts.to_numpy(dtype=float)
    negative = values < 0
    if negative.any():
        raise FlowDataError(f"column {columns.count!r} has negative counts at {_rows(negative)}")
    fractional = values != np.round(values)
    if fractional.any():
        raise FlowDataError(f"column {columns.count!r} has non-integer counts at {_rows(fractional)}")
    out[columns.count] = values.astype(np.int64)
    duplicated = out.duplicated([columns.origin, columns.destination], keep=False).to_numpy()
    if duplicated.any():
        raise FlowDataError(
            f"origin-destination pairs appear more than once ({columns.origin!r}, {columns.destination!r}) "
            f"at {_rows(duplicated)}"
        )
    for unit, group in ((columns.origin, columns.origin_group), (columns.destination, columns.destination_group)):
        n_groups = out.groupby(unit, sort=False)[group].nunique()
        split = n_groups[n_groups > 1]
        if len(split):
            name = split.index[0]
            raise FlowDataError(
                f"{unit} {name!r} belongs to more than one {group} "
                f"({sorted(map(str, out.loc[out[unit] == name, group].unique()))}); each unit needs one group"
            )
    return out


@dataclass
class FlowGroup:
    """The sensitive cells of one (origin group, destination group) pair: the data of one model.

    Attributes
    ----------
    key
        ``(origin_group, destination_group)``.
    rows
        Positions of the sensitive cells in the validated table.
    origins, destinations
        Labels of the origins and destinations that have at least one sensitive cell.
    origin_index, destination_index
        For every cell, the position of its origin in ``origins`` (destination in ``destinations``).
    y
        Shifted counts ``count - lower`` (the modelled values, 0..upper-lower).
    upper
        Largest modelled value, ``upper - lower`` (8 in the paper).
    """

    key: tuple[Any, Any]
    rows: np.ndarray
    origins: np.ndarray
    destinations: np.ndarray
    origin_index: np.ndarray
    destination_index: np.ndarray
    y: np.ndarray
    upper: int

    @property
    def n_cells(self) -> int:
        """Number of sensitive cells."""
        return len(self.y)

    @property
    def name(self) -> str:
        """A file-system-safe name for the group."""
        text = f"{self.key[0]}__{self.key[1]}"
        return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)

    def with_values(self, y: np.ndarray) -> FlowGroup:
        """The same group with other modelled values (for exact risk checks and simulations)."""
        y = np.asarray(y, dtype=np.int64)
        if y.shape != self.y.shape or y.min(initial=0) < 0 or y.max(initial=0) > self.upper:
            raise ValueError(f"values must be {self.n_cells} integers in 0..{self.upper}")
        return FlowGroup(
            self.key,
            self.rows,
            self.origins,
            self.destinations,
            self.origin_index,
            self.destination_index,
            y,
            self.upper,
        )


def split_groups(
    data: pd.DataFrame,
    columns: FlowColumns = FlowColumns(),
    lower: int = 1,
    upper: int = 9,
) -> tuple[list[FlowGroup], list[tuple[Any, Any]]]:
    """Split a validated flow table into one :class:`FlowGroup` per group pair.

    Parameters
    ----------
    data
        Output of :func:`validate_flows`.
    columns
        Column names.
    lower, upper
        Counts in ``lower..upper`` are sensitive (1 and 9 in the paper).

    Returns
    -------
    groups
        Group pairs with at least one sensitive cell, sorted by key.
    skipped
        Keys of group pairs without sensitive cells (they pass through unchanged).
    """
    if not (isinstance(lower, int) and isinstance(upper, int) and 0 <= lower < upper):
        raise ValueError(f"sensitive bounds must be integers with 0 <= lower < upper, got {lower}..{upper}")
    sensitive = data[columns.count].between(lower, upper).to_numpy()
    keys = [columns.origin_group, columns.destination_group]
    groups: list[FlowGroup] = []
    skipped: list[tuple[Any, Any]] = []
    positions = pd.Series(np.arange(len(data)), index=data.index)
    for key, frame in data.groupby(keys, sort=True):
        mask = sensitive[positions.loc[frame.index].to_numpy()]
        if not mask.any():
            skipped.append(tuple(key))
            continue
        cells = frame[mask]
        origin_codes, origins = pd.factorize(cells[columns.origin], sort=True)
        destination_codes, destinations = pd.factorize(cells[columns.destination], sort=True)
        groups.append(
            FlowGroup(
                key=tuple(key),
                rows=positions.loc[cells.index].to_numpy(),
                origins=np.asarray(origins),
                destinations=np.asarray(destinations),
                origin_index=origin_codes.astype(np.int64),
                destination_index=destination_codes.astype(np.int64),
                y=(cells[columns.count].to_numpy() - lower).astype(np.int64),
                upper=upper - lower,
            )
        )
    return groups, skipped


# --------------------------------------------------------------------------------------------------
# The model


def truncated_poisson_log_normaliser(log_rate: Any, upper: int) -> Any:
    """``log sum_{r=0}^{upper} lambda^r / r!`` as a PyTensor expression of ``log lambda``.

    The denominator of eq. (1). Evaluated by Horner's rule, in powers of ``lambda`` when
    ``lambda <= 1`` and in powers of ``1 / lambda`` otherwise, so it neither overflows nor loses accuracy
    for any rate; one exponential per cell instead of ``upper + 1``.
    """
    import pytensor.tensor as pt

    rate = pt.exp(log_rate)
    small = 1.0 + rate / upper
    for k in range(upper - 1, 0, -1):
        small = 1.0 + small * rate / k
    inverse = pt.exp(-log_rate)
    # lambda^u/u! * sum_{k=0}^{u} u!/(u-k)! lambda^-k, by Horner in 1/lambda.
    large = 1.0 + inverse
    for k in range(upper - 1, 0, -1):
        large = 1.0 + (upper - k + 1) * inverse * large
    log_large = upper * log_rate - math.lgamma(upper + 1) + pt.log(large)
    return pt.switch(log_rate <= 0, pt.log(small), log_large)


def truncated_poisson_logp(value: Any, log_rate: Any, upper: int) -> Any:
    """Log of eq. (1): ``y log lambda - log y! - log sum_{r=0}^{upper} lambda^r/r!``."""
    import pytensor.tensor as pt

    return value * log_rate - pt.gammaln(value + 1.0) - truncated_poisson_log_normaliser(log_rate, upper)


def _log_normaliser_numpy(log_rate: np.ndarray, upper: int) -> np.ndarray:
    r = np.arange(upper + 1)
    terms = log_rate[..., None] * r - _log_factorials(upper)
    top = terms.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(terms - top).sum(axis=-1, keepdims=True)))[..., 0]


def _log_factorials(upper: int) -> np.ndarray:
    return np.array([math.lgamma(r + 1) for r in range(upper + 1)])


def _padded_size(n: int, minimum: int = 16, factor: float = 1.5) -> int:
    """The smallest size ``minimum * factor**k`` (rounded up) that holds ``n``: few compiled models, little waste."""
    size = minimum
    while size < n:
        size = math.ceil(size * factor)
    return size


def build_model(
    group: FlowGroup,
    priors: FlowPriors = FlowPriors(),
    *,
    padded_effects: int | None = None,
    parameterization: str = "marginal",
) -> Any:
    """Declare the truncated-Poisson model of one group pair (eq. 1 and Section 2.1).

    The origin effects ``beta_i`` and the destination effects ``gamma_j`` are held in one vector ``effect``
    (origins first, then destinations), each family with its own hierarchical prior, so that the model's
    size is one number: this lets one compiled model serve every group of similar size.

    Parameters
    ----------
    group
        The sensitive cells of one (origin group, destination group) pair.
    priors
        Hyperparameters; the paper's values by default.
    padded_effects
        Declare this many effects, the surplus ones being independent standard normals that no cell uses
        and that do not enter the hierarchical priors: their posterior is exactly N(0, 1) and the others' is
        unchanged. The data are ``pm.Data`` containers that can be swapped for another group's.
    parameterization
        ``"marginal"`` (default: the precisions integrated out analytically, see the module docstring),
        ``"centred"`` (effects and precisions sampled as written) or ``"noncentred"`` (effects as standard
        normals times ``phi**-0.5``). The same model every way; they differ in how well NUTS samples it.

    Returns
    -------
    pymc.Model
        Dimensions ``unit`` (the origins, then the destinations, then any padding) and ``cell``; free
        variables ``mu`` (= mu_beta + mu_gamma) and ``effect``
        (``beta_i - mu_beta`` for the origins, ``gamma_j - mu_gamma`` for the destinations), plus
        ``phi_beta`` and ``phi_gamma`` unless marginal; observed ``y``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    n_effects = len(group.origins) + len(group.destinations)
    size = padded_effects or n_effects
    if parameterization not in PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {parameterization!r}")
    if size < n_effects:
        raise ValueError("padding cannot be smaller than the group")
    labels = (
        [f"origin {o}" for o in group.origins]
        + [f"destination {d}" for d in group.destinations]
        + [f"<unused {k}>" for k in range(size - n_effects)]
    )
    coords = {"unit": labels, "cell": np.arange(group.n_cells)}
    family, origin_position, destination_position = _effect_layout(group, size)
    upper = group.upper
    with pm.Model(coords=coords) as model:
        origin_index = pm.Data("origin_index", origin_position, dims="cell")
        destination_index = pm.Data("destination_index", destination_position, dims="cell")
        effect_family = pm.Data("effect_family", family, dims="unit")
        y_observed = pm.Data("y_observed", group.y, dims="cell")
        is_origin, is_destination = pt.eq(effect_family, ORIGIN), pt.eq(effect_family, DESTINATION)

        # Section 2.1: mu_beta, mu_gamma ~ N(0, precision 1/25), so mu = mu_beta + mu_gamma has precision 1/50.
        mu = pm.Normal("mu", mu=0.0, tau=priors.mu_precision / 2)
        if parameterization == "marginal":
            # Section 2.1 with phi integrated out: b ~ N(0, precision phi), phi ~ Gamma(a, r) gives
            # p(b) ∝ (r + sum b_i^2 / 2)^-(a + B/2), a multivariate Student t (nu = 2a, scale^2 = r/a).
            effect = pm.Flat("effect", dims="unit")
            pm.Potential("beta_effect_prior", hierarchical_effect_logp(effect, is_origin, priors))
            pm.Potential("gamma_effect_prior", hierarchical_effect_logp(effect, is_destination, priors))
            pm.Potential("unused_effect_prior", unused_effect_logp(effect, pt.eq(effect_family, UNUSED)))
        else:
            # Section 2.1: phi_beta, phi_gamma ~ Gamma(0.01, 0.01), precisions.
            phi_beta = pm.Gamma("phi_beta", alpha=priors.phi_shape, beta=priors.phi_rate)
            phi_gamma = pm.Gamma("phi_gamma", alpha=priors.phi_shape, beta=priors.phi_rate)
            precision = pt.switch(is_origin, phi_beta, pt.switch(is_destination, phi_gamma, 1.0))
            # Section 2.1: beta_i - mu_beta ~ N(0, phi_beta), gamma_j - mu_gamma ~ N(0, phi_gamma).
            if parameterization == "centred":
                effect = pm.Normal("effect", mu=0.0, tau=precision, dims="unit")
            else:  # the same distribution: standard normals times the standard deviation
                effect_raw = pm.Normal("effect_raw", mu=0.0, sigma=1.0, dims="unit")
                effect = pm.Deterministic("effect", effect_raw * precision**-0.5, dims="unit")
        # Section 2.1: log lambda_ij = beta_i + gamma_j.
        log_lambda = mu + effect[origin_index] + effect[destination_index]
        # Eq. (1): y_ij ~ Poisson(lambda_ij) truncated to 0..upper.
        pm.CustomDist(
            "y",
            log_lambda,
            logp=lambda value, log_rate: truncated_poisson_logp(value, log_rate, upper),
            observed=y_observed,
            dims="cell",
        )
    return model


ORIGIN, DESTINATION, UNUSED = 0, 1, 2


def _effect_layout(group: FlowGroup, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Family of each effect (origin, destination, unused) and each cell's two positions in ``effect``."""
    n_origins, n_destinations = len(group.origins), len(group.destinations)
    family = np.full(size, UNUSED, dtype=np.int64)
    family[:n_origins] = ORIGIN
    family[n_origins : n_origins + n_destinations] = DESTINATION
    return family, group.origin_index, group.destination_index + n_origins


def unused_effect_logp(effect: Any, unused: Any) -> Any:
    """Independent standard normal log density of the padding effects flagged in ``unused``."""
    import pytensor.tensor as pt

    unused = pt.cast(unused, "float64")
    return pt.sum(unused * (-0.5 * effect**2 - 0.5 * math.log(2 * math.pi)))


PARAMETERIZATIONS = ("marginal", "centred", "noncentred")


def hierarchical_effect_logp(effect: Any, member: Any, priors: FlowPriors) -> Any:
    """Log density of effects ``b ~ N(0, precision phi)``, ``phi ~ Gamma(a, r)``, with ``phi`` integrated out.

    ``log p(b) = log G(a + n/2) - log G(a) + a log r - (n/2) log(2 pi) - (a + n/2) log(r + sum b^2 / 2)``
    over the ``n`` effects flagged in ``member`` (``G`` the gamma function); the others do not enter.
    """
    import pytensor.tensor as pt

    a, r = priors.phi_shape, priors.phi_rate
    member = pt.cast(member, "float64")
    n = pt.sum(member)
    sum_sq = pt.sum(member * effect**2)
    return (
        pt.gammaln(a + n / 2)
        - math.lgamma(a)
        + a * math.log(r)
        - n / 2 * math.log(2 * math.pi)
        - (a + n / 2) * pt.log(r + sum_sq / 2)
    )


def draw_precision(effects: np.ndarray, priors: FlowPriors, rng: np.random.Generator) -> np.ndarray:
    """Draws of ``phi`` from its full conditional ``Gamma(a + n/2, rate r + sum b^2/2)``, one per row of effects.

    With the ``marginal`` parameterisation this turns draws of the effects into exact posterior draws of
    the precision (the conditional is conjugate; Section 2.1's Gibbs steps 5 and 6).
    """
    effects = np.asarray(effects, dtype=float)
    n = effects.shape[-1]
    rate = priors.phi_rate + 0.5 * (effects**2).sum(axis=-1)
    return rng.gamma(priors.phi_shape + n / 2, 1.0 / rate)


# --------------------------------------------------------------------------------------------------
# The synthesizer


#: Compiled models of this process, shared by all groups (and all FlowSynthesizer objects).
COMPILED_MODELS = CompiledModelCache()


@dataclass
class FlowSynthesizer:
    """Fits, synthesizes and scores one group pair at a time (see the module docstring).

    Parameters
    ----------
    priors
        Hyperparameters of Section 2.1.
    settings
        NUTS settings; nutpie with its low-rank mass matrix by default, which brought every group tried
        to r_hat 1.00 with several times the ESS per second of the diagonal adaptation.
    lower, upper
        Counts in ``lower..upper`` are sensitive and replaced.
    parameterization
        See :func:`build_model`.
    pad
        Pad the model to a size class (factor 1.5) so that one compiled model serves many groups; without
        padding each distinct size compiles anew (sampling a large single group is then a little faster).
    gate_precisions
        Also apply the convergence gate to ``phi_beta`` and ``phi_gamma`` (see :meth:`convergence_quantities`).
    """

    priors: FlowPriors = field(default_factory=FlowPriors)
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(low_rank_mass_matrix=True))
    lower: int = 1
    upper: int = 9
    parameterization: str = "marginal"
    pad: bool = True
    gate_precisions: bool = False
    name: str = "flows"

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: FlowGroup, seed: int) -> az.InferenceData:
        """Sample the posterior of one group; returns InferenceData with real origin/destination labels."""
        group = data
        backend = resolve_backend(self.settings.backend)
        if backend == "nutpie":
            n_effects = len(group.origins) + len(group.destinations)
            size = _padded_size(n_effects) if self.pad else n_effects
            key = ("flows", group.upper, self.parameterization, size, *asdict(self.priors).values())
            compiled = COMPILED_MODELS.get(
                key,
                lambda: build_model(group, self.priors, padded_effects=size, parameterization=self.parameterization),
            )
            family, origin_position, destination_position = _effect_layout(group, size)
            swap = {
                "origin_index": origin_position,
                "destination_index": destination_position,
                "effect_family": family,
                "y_observed": group.y,
            }
            idata = sample_model(None, self.settings, seed, compiled=compiled, data=swap)
        else:
            model = build_model(group, self.priors, parameterization=self.parameterization)
            idata = sample_model(model, self.settings, seed)
        n_origins, n_destinations = len(group.origins), len(group.destinations)
        effect = idata.posterior["effect"].drop_vars("unit", errors="ignore")
        idata.posterior["beta_effect"] = effect.isel(unit=slice(0, n_origins)).rename(unit="origin")
        idata.posterior["gamma_effect"] = effect.isel(unit=slice(n_origins, n_origins + n_destinations)).rename(
            unit="destination"
        )
        idata.posterior = idata.posterior.assign_coords(origin=group.origins, destination=group.destinations)
        posterior = idata.posterior
        if self.parameterization == "marginal":
            rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2]))
            for name, effect in (("phi_beta", "beta_effect"), ("phi_gamma", "gamma_effect")):
                values = draw_precision(posterior[effect].to_numpy(), self.priors, rng)
                posterior[name] = (("chain", "draw"), values)
        keep = ["mu", "phi_beta", "phi_gamma", "beta_effect", "gamma_effect"]
        idata.posterior = posterior[keep].drop_dims("unit", errors="ignore")
        for extra in [g for g in idata.groups() if g not in ("posterior", "sample_stats")]:
            delattr(idata, extra)
        idata.attrs["group"] = str(group.key)
        return idata

    def log_rate(self, posterior: xr.Dataset, data: FlowGroup) -> xr.DataArray:
        """``log lambda`` of every cell for every draw in ``posterior`` (keeps its draw dimensions)."""
        group = data
        origin = xr.DataArray(group.origin_index, dims="item")
        destination = xr.DataArray(group.destination_index, dims="item")
        beta = posterior["beta_effect"].isel(origin=origin).drop_vars("origin", errors="ignore")
        gamma = posterior["gamma_effect"].isel(destination=destination).drop_vars("destination", errors="ignore")
        return (posterior["mu"] + beta + gamma).rename("log_lambda")

    def convergence_quantities(self, idata: az.InferenceData, data: FlowGroup) -> dict[str, xr.DataArray]:
        """The quantities the convergence gate monitors: every cell's ``log lambda``.

        ``log lambda`` is what the likelihood identifies and all that synthesis and risk use. The split of
        ``log lambda`` into ``mu`` and the effects is identified only through the priors, and the precisions
        (drawn from their conditional given the effects) inherit that slowly mixing direction: on an 8-state
        simulation gating on them sent 15 of 19 state pairs into longer chains although every ``log lambda``
        had converged. With ``gate_precisions=True`` the precisions of dimensions with at least three levels
        are gated too.
        """
        posterior = idata.posterior
        monitored = {"log_lambda": self.log_rate(posterior, data)}
        if self.gate_precisions and len(data.origins) >= 3:
            monitored["phi_beta"] = posterior["phi_beta"]
        if self.gate_precisions and len(data.destinations) >= 3:
            monitored["phi_gamma"] = posterior["phi_gamma"]
        return monitored

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: FlowGroup) -> xr.DataArray:
        """The modelled values ``y = count - lower`` of the sensitive cells (dimension ``item``)."""
        return xr.DataArray(data.y, dims="item", name="y")

    def candidates(self, data: FlowGroup) -> xr.DataArray:
        """Possible modelled values 0..upper-lower."""
        values = np.arange(data.upper + 1)
        return xr.DataArray(values, dims="candidate", coords={"candidate": values})

    def candidate_log_prob(self, posterior: xr.Dataset, data: FlowGroup) -> xr.DataArray:
        """Eq. (1) for every candidate value: ``log p(y_t = c | lambda_t)``, dims ``(sample, item, candidate)``."""
        log_rate = self.log_rate(posterior, data).transpose("sample", "item").to_numpy()
        upper = data.upper
        r = np.arange(upper + 1)
        log_p = log_rate[..., None] * r - _log_factorials(upper) - _log_normaliser_numpy(log_rate, upper)[..., None]
        return xr.DataArray(
            log_p,
            dims=("sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": r},
            name="log_prob",
        )

    def posterior_predictive(self, posterior: xr.Dataset, data: FlowGroup, rng: np.random.Generator) -> xr.DataArray:
        """One draw of every sensitive cell's modelled value per posterior draw (dims ``(sample, item)``)."""
        return sample_candidates(self.candidate_log_prob(posterior, data), rng)

    def replace_value(self, data: FlowGroup, item: int, value: int) -> FlowGroup:
        """The group with cell ``item``'s modelled value replaced by ``value`` (for exact risk checks)."""
        y = data.y.copy()
        y[item] = value
        return data.with_values(y)

    def release_values(self, modelled: np.ndarray) -> np.ndarray:
        """Counts as released: modelled value plus ``lower`` (so 1..9 in the paper)."""
        return np.asarray(modelled) + self.lower

    def describe(self) -> dict[str, Any]:
        """The public description of the model written to ``release/model.json`` (no estimates)."""
        return {
            "synthesizer": self.name,
            "paper": "Hawala, Reiter & Wang, Synthesizing truncated count data for confidentiality",
            "sensitive_cells": f"origin-destination cells with {self.lower} <= count <= {self.upper}",
            "model": {
                "likelihood": f"count - {self.lower} ~ Poisson(lambda) truncated to 0..{self.upper - self.lower}",
                "log_rate": "log lambda_ij = beta_i + gamma_j (origin and destination effects)",
                "priors": {
                    "beta_i": "Normal(mu_beta, precision phi_beta)",
                    "gamma_j": "Normal(mu_gamma, precision phi_gamma)",
                    "mu_beta, mu_gamma": f"Normal(0, precision {self.priors.mu_precision:g})",
                    "phi_beta, phi_gamma": f"Gamma({self.priors.phi_shape:g}, {self.priors.phi_rate:g})",
                },
                "fitted_separately_for": "each (origin_group, destination_group) pair",
            },
            "synthesis": "each synthetic dataset replaces every sensitive count by a draw from the model "
            "under one posterior draw of lambda; all other counts are released unchanged",
            "sampler": {k: v for k, v in self.settings.to_dict().items() if k != "progressbar"},
        }


# --------------------------------------------------------------------------------------------------
# Simulators: data from the model itself (for recovery tests) and a realistic national example


def simulate_group(
    n_origins: int,
    n_destinations: int,
    n_cells: int,
    *,
    mu: float = 0.6,
    beta_sd: float = 0.6,
    gamma_sd: float = 0.5,
    upper: int = 8,
    seed: int = 0,
    key: tuple[Any, Any] = ("A", "B"),
) -> tuple[FlowGroup, dict[str, np.ndarray]]:
    """Simulate one group pair from the model of eq. (1) and Section 2.1 with known parameters.

    Returns the group and the true values: ``mu``, ``beta_effect``, ``gamma_effect``, ``log_lambda``,
    ``phi_beta`` (= 1/beta_sd^2), ``phi_gamma``. Every origin and destination has at least one cell.
    """
    rng = np.random.default_rng(seed)
    if n_cells < max(n_origins, n_destinations) or n_cells > n_origins * n_destinations:
        raise ValueError("n_cells must be between max(n_origins, n_destinations) and n_origins * n_destinations")
    beta = rng.normal(0.0, beta_sd, n_origins)
    gamma = rng.normal(0.0, gamma_sd, n_destinations)
    # a cover of every origin and destination, then further distinct pairs at random
    k = max(n_origins, n_destinations)
    base = {(i % n_origins, i % n_destinations) for i in range(k)}
    others = [p for p in np.ndindex(n_origins, n_destinations) if p not in base]
    extra = rng.choice(len(others), size=n_cells - len(base), replace=False)
    pairs = np.array(sorted(base) + [others[e] for e in extra])
    oi, dj = pairs[:, 0], pairs[:, 1]
    log_lambda = mu + beta[oi] + gamma[dj]
    r = np.arange(upper + 1)
    log_p = log_lambda[:, None] * r - _log_factorials(upper)
    p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random(len(oi))[:, None]).sum(axis=1)
    group = FlowGroup(
        key=key,
        rows=np.arange(len(y)),
        origins=np.array([f"o{i:03d}" for i in range(n_origins)]),
        destinations=np.array([f"d{j:03d}" for j in range(n_destinations)]),
        origin_index=oi.astype(np.int64),
        destination_index=dj.astype(np.int64),
        y=y.astype(np.int64),
        upper=upper,
    )
    truth = {
        "mu": np.array(mu),
        "beta_effect": beta,
        "gamma_effect": gamma,
        "log_lambda": log_lambda,
        "phi_beta": np.array(1 / beta_sd**2),
        "phi_gamma": np.array(1 / gamma_sd**2),
    }
    return group, truth


def simulate_flow_table(
    n_states: int = 6,
    counties_per_state: float = 12.0,
    *,
    scale: float = 0.002,
    seed: int = 0,
) -> pd.DataFrame:
    """A realistic county-to-county migration table (the bundled example).

    Counties get log-normal populations and positions around their state's centre; the expected flow
    from county i to county j (i != j) follows a gravity law, ``scale * P_i * P_j / (d_ij + 0.05)^2``
    (populations in thousands), with extra-Poisson variation; only pairs with at least one mover are
    listed, as in the IRS-based tables. With the defaults most listed pairs are below 10.

    Parameters
    ----------
    n_states
        Number of states (origin and destination groups).
    counties_per_state
        Mean number of counties per state (Poisson, at least 1).
    scale
        Overall level of migration.
    seed
        Random seed.

    Returns
    -------
    pandas.DataFrame
        Columns ``origin, destination, origin_group, destination_group, count``.
    """
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, rng.poisson(counties_per_state, n_states))
    state_of = np.repeat(np.arange(n_states), sizes)
    n = len(state_of)
    centres = rng.uniform(0, 10, (n_states, 2))
    position = centres[state_of] + rng.normal(0, 0.6, (n, 2))
    population = np.exp(rng.normal(3.0, 1.1, n))  # thousands
    states = [f"S{s:02d}" for s in range(n_states)]
    county = np.array([f"{states[s]}C{k:03d}" for s, size in enumerate(sizes) for k in range(size)])
    rows = []
    for start in range(0, n, 500):  # blocks of origins keep memory small for national sizes
        block = slice(start, min(n, start + 500))
        distance = np.sqrt(((position[block, None, :] - position[None, :, :]) ** 2).sum(-1))
        mean = scale * population[block, None] * population[None, :] / (distance + 0.05) ** 2
        mean *= rng.gamma(2.0, 0.5, mean.shape)  # extra-Poisson variation
        counts = rng.poisson(mean)
        idx = np.arange(block.start, block.stop)
        counts[idx - block.start, idx] = 0
        oi, dj = np.nonzero(counts)
        rows.append(
            pd.DataFrame(
                {
                    "origin": county[oi + block.start],
                    "destination": county[dj],
                    "origin_group": np.array(states)[state_of[oi + block.start]],
                    "destination_group": np.array(states)[state_of[dj]],
                    "count": counts[oi, dj].astype(np.int64),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)
