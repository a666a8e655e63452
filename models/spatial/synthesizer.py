"""The spatial synthesizer (the contract of ``models/base.py``) and the two stages of Section 3.3.

:class:`SpatialSynthesizer` fits one stage, unrestricted (eq. 6) or restricted (eq. 7), by NUTS on the form
of :mod:`bayessdc.models.spatial.marginal` or, at large N, on the NNGP grid posterior of
:mod:`bayessdc.models.spatial.nngp`; it draws ``w`` from its full conditional (eq. 2) and the synthetic
responses ``x'beta + w + eps``. :func:`fit_two_stage` runs stage 1, flags the at-risk records
(:func:`bayessdc.models.spatial.smoothing.make_restriction`) and runs stage 2.

With ``gamma = inf`` the outliers' ``w*`` is exactly zero; their synthetic ``w`` is drawn from its
conditional prior given the other locations' ``w`` (Section 3.3). With a finite ``gamma`` the synthetic
values come from the restricted model's own predictive, ``x'beta + w* + eps``, whose conditional mean at an
isolated outlier is ``x'beta + alpha (Y - x'beta)`` (eq. 5).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..base import stack_draws
from ..sampling import CompiledModelCache, SamplerSettings, resolve_backend, sample_model
from .data import SpatialData
from .geometry import exponential_correlation
from .marginal import build_model, correlation_eigen, default_start, draw_beta_and_phi, rotate
from .model import SpatialPriors
from .nngp import (
    draw_latent_nngp,
    draw_nngp_posterior,
    draw_outliers_nngp,
    fit_nngp_grid,
    krige_nngp,
    nearest_earlier_neighbours,
    neighbour_geometry,
)
from .smoothing import Restriction, RiskWeights, make_restriction

__all__ = [
    "AUTO_EXACT_LIMIT",
    "COMPILED_MODELS",
    "Approximation",
    "SpatialSynthesizer",
    "TwoStageFit",
    "fit_two_stage",
    "posterior_summary",
    "resolve_approximation",
]

Approximation = Literal["exact", "nngp", "auto"]

#: ``approximation="auto"`` uses the exact GP up to this many records and the NNGP beyond.
AUTO_EXACT_LIMIT = 3000

#: Compiled stage-1 models of this process, keyed by shape and priors.
COMPILED_MODELS = CompiledModelCache()


def resolve_approximation(approximation: str, n: int, neighbours: int = 15) -> str:
    """``"exact"`` or ``"nngp"`` for ``n`` records (``"auto"``: exact up to :data:`AUTO_EXACT_LIMIT` records).

    Raises
    ------
    ValueError
        An unknown approximation or a number of neighbours below 1.
    """
    if approximation not in ("exact", "nngp", "auto"):
        raise ValueError(f"approximation must be 'exact', 'nngp' or 'auto', got {approximation!r}")
    if not isinstance(neighbours, int | np.integer) or neighbours < 1:
        raise ValueError(f"neighbours must be a positive integer, got {neighbours!r}")
    if approximation == "auto":
        return "exact" if n <= AUTO_EXACT_LIMIT else "nngp"
    return approximation


@dataclass
class SpatialSynthesizer:
    """One stage of the spatial synthesizer: unrestricted (``restriction=None``) or restricted.

    Parameters
    ----------
    priors
        Prior settings.
    settings
        NUTS settings. The default target acceptance is 0.95: the posterior of ``(log sigma, log tau)`` is
        curved when ``tau`` is weakly identified, and at 0.8 a few divergent transitions remained there;
        2,000 draws per chain because ``tau`` mixes slowly in stage 1 (about 0.05 ESS per draw at N = 100).
        Draws are cheap: a gradient costs ``O(G N p^2)``.
    restriction
        Stage-2 restriction from :func:`make_restriction`; ``None`` for the unrestricted model.
    approximation
        ``"exact"`` (the GP above, NUTS), ``"nngp"`` (nearest-neighbour / Vecchia GP with ``neighbours``
        neighbours, a grid posterior with independent draws: :mod:`bayessdc.models.spatial.nngp`; the
        sampler settings then give only the number of draws, ``chains x draws``) or ``"auto"`` (exact up to
        :data:`AUTO_EXACT_LIMIT` records). Resolved when fitting; both stages should use the same.
    neighbours
        Neighbours of each record under the NNGP (``m``; Datta et al. 2016 found 10 to 15 enough for the
        exponential covariance).
    """

    priors: SpatialPriors = field(default_factory=SpatialPriors)
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(draws=2000, target_accept=0.95))
    restriction: Restriction | None = None
    name: str = "spatial"
    approximation: Approximation = "auto"
    neighbours: int = 15
    _eigen_cache: dict[float, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _method: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        resolve_approximation(self.approximation, 0, self.neighbours)  # clear errors before any sampling

    def method(self, data: SpatialData) -> str:
        """``"exact"`` or ``"nngp"`` for ``data`` (the resolved ``approximation``)."""
        return resolve_approximation(self.approximation, data.n, self.neighbours)

    @property
    def stage(self) -> str:
        """``"unrestricted"`` or ``"restricted"``."""
        return "unrestricted" if self.restriction is None else "restricted"

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: SpatialData, seed: int) -> az.InferenceData:
        """Sample this stage's posterior of ``beta, sigma, tau`` and ``phi`` (``w`` is drawn on demand)."""
        self._method = self.method(data)
        if self._method == "nngp":
            return self._fit_nngp(data, seed)
        scales = self.priors.scales(data)
        r = self.restriction
        if r is None:
            grid = self.priors.grid(data)
            rotated = rotate(data, grid)
            start = default_start(data)
        else:
            grid = np.array([r.phi_hat])
            rotated = rotate(data, grid, r.smoothing)
            start = r.initial
        backend = resolve_backend(self.settings.backend)
        if backend == "nutpie":
            key = ("spatial", data.X.shape[1])
            compiled = COMPILED_MODELS.get(
                key, lambda: build_model(rotated, self.priors, scales, data.covariate_names, start)
            )
            swap = {
                "eigenvalues": rotated.eigenvalues,
                "y_rotated": rotated.y,
                "X_rotated": rotated.X,
                "prior_settings": np.array([self.priors.beta_sd, *scales], float),
                "start_log_sd": np.log([start["sigma"], start["tau"]]),
            }
            idata = sample_model(None, self.settings, seed, compiled=compiled, data=swap)
        else:
            model = build_model(rotated, self.priors, scales, data.covariate_names, start)
            idata = sample_model(model, self.settings, seed)
        post = idata.posterior
        rng = streams.rng(seed, Stream.BETA_PHI)
        shape = (post.sizes["chain"], post.sizes["draw"])
        index, beta = draw_beta_and_phi(
            rotated, post["sigma_sq"].to_numpy().ravel(), post["tau_sq"].to_numpy().ravel(), self.priors.beta_sd, rng
        )
        post["phi"] = (("chain", "draw"), grid[index].reshape(shape))
        post["beta"] = xr.DataArray(
            beta.reshape(*shape, -1),
            dims=("chain", "draw", "coefficient"),
            coords={"coefficient": data.covariate_names},
        )
        keep = ["beta", "sigma", "tau", "sigma_sq", "tau_sq", "phi"]
        idata.posterior = post[keep]
        for extra in [g for g in idata.groups() if g not in ("posterior", "sample_stats")]:
            delattr(idata, extra)
        idata.attrs["stage"] = self.stage
        return idata

    def _fit_nngp(self, data: SpatialData, seed: int) -> az.InferenceData:
        """The NNGP posterior on a grid, ``chains x draws`` independent draws (:func:`fit_nngp_grid`)."""
        r = self.restriction
        if r is None:
            grid, scale, refine = self.priors.grid(data), None, self.priors.phi_grid is None
        else:
            grid, scale, refine = np.array([r.phi_hat]), r.smoothing, False
        include = None if scale is None else scale > 0
        neighbours = nearest_earlier_neighbours(data.coords, self.neighbours, include)
        geometry = neighbour_geometry(data.coords, data.y, data.X, neighbours, scale)
        posterior_grid = fit_nngp_grid(
            geometry, grid, beta_sd=self.priors.beta_sd, scales=self.priors.scales(data), refine_phi=refine
        )
        chains, n_draws = self.settings.chains, self.settings.draws
        rng = streams.rng(seed, Stream.NNGP_DRAWS)
        draws = draw_nngp_posterior(posterior_grid, chains * n_draws, rng)
        shape = (chains, n_draws)
        coords = {"chain": np.arange(chains), "draw": np.arange(n_draws), "coefficient": data.covariate_names}
        post = xr.Dataset(
            {
                "beta": (("chain", "draw", "coefficient"), draws["beta"].reshape(*shape, -1)),
                "sigma": (("chain", "draw"), np.sqrt(draws["sigma_sq"]).reshape(shape)),
                "tau": (("chain", "draw"), np.sqrt(draws["tau_sq"]).reshape(shape)),
                "sigma_sq": (("chain", "draw"), draws["sigma_sq"].reshape(shape)),
                "tau_sq": (("chain", "draw"), draws["tau_sq"].reshape(shape)),
                "phi": (("chain", "draw"), draws["phi"].reshape(shape)),
            },
            coords=coords,
        )
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), np.zeros(shape, dtype=bool))},
            coords={"chain": coords["chain"], "draw": coords["draw"]},
        )
        idata = az.InferenceData(posterior=post, sample_stats=stats)
        evaluations, eigen = posterior_grid.n_evaluations
        idata.attrs.update(
            {
                "sampler": "independent draws from the NNGP grid posterior (no MCMC)",
                "sampler_settings": json.dumps({"draws": n_draws, "chains": chains, "neighbours": self.neighbours}),
                "sampler_seed": int(seed),
                "sampling_seconds": float(posterior_grid.seconds),
                "grid_phi_values": int(len(posterior_grid.phi)),
                "grid_evaluations": int(evaluations),
                "grid_eigendecompositions": int(eigen),
                "stage": self.stage,
            }
        )
        return idata

    def convergence_variables(self) -> list[str]:
        """Posterior variables the convergence gate monitors (``phi`` only where it is sampled by NUTS).

        Under the NNGP the draws are independent; ``phi`` is left out there because its grid posterior may sit
        on one or two grid values at large N, where r_hat is undefined.
        """
        base = ["beta", "sigma", "tau"]
        return base + ["phi"] if self.restriction is None and self._method != "nngp" else base

    def convergence_quantities(
        self, idata: az.InferenceData, data: SpatialData | None = None
    ) -> dict[str, xr.DataArray]:
        """The quantities the parameter gate monitors (the contract's form of :meth:`convergence_variables`)."""
        return {name: idata.posterior[name] for name in self.convergence_variables()}

    # -- the latent process -------------------------------------------------------------------------

    def _eigen_for(self, data: SpatialData, phi: float) -> tuple[np.ndarray, np.ndarray]:
        key = float(phi)
        if key not in self._eigen_cache:
            scale = None if self.restriction is None else self.restriction.smoothing
            self._eigen_cache[key] = correlation_eigen(data.coords, key, scale)
        return self._eigen_cache[key]

    def _resolved(self, data: SpatialData) -> str:
        return self._method or self.method(data)

    def draw_latent(self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator) -> xr.DataArray:
        """Draws of ``w*`` = ``A w`` (``w`` itself when unrestricted) from its full conditional (eq. 2).

        One draw per posterior draw in ``posterior`` (dimension ``sample``); dims ``(sample, item)``.
        Exactly 0 at records with ``A_ii = 0``. Under the NNGP: the full conditional under the latent NNGP
        prior (one sparse solve per draw, :func:`bayessdc.models.spatial.nngp.draw_latent_nngp`).
        """
        beta = posterior["beta"].transpose("sample", "coefficient").to_numpy()
        sigma_sq = posterior["sigma_sq"].to_numpy()
        tau_sq = posterior["tau_sq"].to_numpy()
        phi = posterior["phi"].to_numpy()
        inside = np.ones(data.n, bool) if self.restriction is None else self.restriction.smoothing > 0
        out = np.zeros((len(sigma_sq), data.n))
        resid = data.y[None, inside] - beta @ data.X[inside].T
        if self._resolved(data) == "nngp":
            coords = data.coords[inside]
            scale = None if self.restriction is None else self.restriction.smoothing[inside]
            neighbours = nearest_earlier_neighbours(coords, self.neighbours)
            out[:, inside] = draw_latent_nngp(coords, resid, sigma_sq, tau_sq, phi, neighbours, rng, scale)
            return xr.DataArray(out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()})
        for value in np.unique(phi):
            rows = np.flatnonzero(phi == value)
            lam, vectors = self._eigen_for(data, value)
            prior_var = sigma_sq[rows, None] * lam[None, :]
            shrink = prior_var / (prior_var + tau_sq[rows, None])
            mean = shrink * (resid[rows] @ vectors)
            sd = np.sqrt(shrink * tau_sq[rows, None])
            z = mean + sd * rng.standard_normal(mean.shape)
            out[np.ix_(rows, np.flatnonzero(inside))] = z @ vectors.T
        return xr.DataArray(out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()})

    def draw_synthetic_process(
        self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator
    ) -> xr.DataArray:
        """The spatial effect the synthetic values are drawn with, one per posterior draw.

        Unrestricted: ``w``. Restricted with finite ``gamma``: ``w* = A w`` (the restricted model's own
        predictive). Restricted with ``gamma = inf``: ``w*`` where ``A_ii = 1`` and, at the outliers,
        ``w`` drawn from its conditional prior given the others (Section 3.3).
        """
        latent = self.draw_latent(posterior, data, rng)
        r = self.restriction
        if r is None or not math.isinf(r.gamma):
            return latent
        outside = r.smoothing == 0
        if not outside.any():
            return latent
        inside = ~outside
        if self._resolved(data) == "nngp":
            values = latent.to_numpy().copy()
            values[:, outside] = draw_outliers_nngp(
                data.coords[inside],
                data.coords[outside],
                values[:, inside],
                posterior["sigma_sq"].to_numpy(),
                r.phi_hat,
                self.neighbours,
                rng,
            )
            return latent.copy(data=values)
        corr_ii = exponential_correlation(data.coords[inside], None, r.phi_hat)
        corr_oi = exponential_correlation(data.coords[outside], data.coords[inside], r.phi_hat)
        corr_oo = exponential_correlation(data.coords[outside], None, r.phi_hat)
        chol = np.linalg.cholesky(corr_ii)
        solved = np.linalg.solve(chol, corr_oi.T)
        weights = np.linalg.solve(chol.T, solved).T  # R_oi R_ii^-1
        conditional = corr_oo - solved.T @ solved
        cond_chol = np.linalg.cholesky(conditional + 1e-12 * np.eye(len(conditional)))
        values = latent.to_numpy().copy()
        sigma = np.sqrt(posterior["sigma_sq"].to_numpy())
        noise = rng.standard_normal((values.shape[0], int(outside.sum()))) @ cond_chol.T
        values[:, outside] = values[:, inside] @ weights.T + sigma[:, None] * noise
        return latent.copy(data=values)

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: SpatialData) -> xr.DataArray:
        """The response on the modelling scale (dimension ``item``)."""
        return xr.DataArray(data.y, dims="item", name="y")

    def posterior_predictive(self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic responses (modelling scale), one per posterior draw: ``x'beta + w + eps`` (Section 3.3)."""
        process = self.draw_synthetic_process(posterior, data, rng).to_numpy()
        beta = posterior["beta"].transpose("sample", "coefficient").to_numpy()
        tau = np.sqrt(posterior["tau_sq"].to_numpy())
        values = beta @ data.X.T + process + tau[:, None] * rng.standard_normal(process.shape)
        return xr.DataArray(
            values, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def candidates(self, data: SpatialData) -> xr.DataArray:
        """Not used: the response is continuous (risk is measured by proximity, ``risk/proximity.py``)."""
        raise NotImplementedError("continuous response: use bayessdc.risk.proximity")

    def candidate_log_prob(self, posterior: xr.Dataset, data: SpatialData) -> xr.DataArray:
        """Not used: the response is continuous (risk is measured by proximity, ``risk/proximity.py``)."""
        raise NotImplementedError("continuous response: use bayessdc.risk.proximity")

    def predict_surface(
        self, posterior: xr.Dataset, data: SpatialData, new_coords: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Posterior mean of the synthesis process at new locations (kriging each draw's process).

        Returns ``E[w(s_0) | y]`` at ``new_coords`` (shape ``(K,)``), averaged over the draws in ``posterior``;
        add ``x(s_0)'beta`` for the response surface. For the restricted model with ``gamma = inf`` the new
        locations are kriged from the non-outliers only (their process does not depend on the outliers' data).
        """
        process = self.draw_synthetic_process(posterior, data, rng).to_numpy()
        phi = posterior["phi"].to_numpy()
        total = np.zeros(len(new_coords))
        if self._resolved(data) == "nngp":  # NNGP kriging from the nearest records
            for value in np.unique(phi):
                rows = np.flatnonzero(phi == value)
                total += krige_nngp(data.coords, process[rows], new_coords, float(value), self.neighbours).sum(0)
            return total / len(phi)
        for value in np.unique(phi):
            rows = np.flatnonzero(phi == value)
            corr = exponential_correlation(data.coords, None, value) + 1e-10 * np.eye(data.n)
            cross = exponential_correlation(new_coords, data.coords, value)
            weights = np.linalg.solve(corr, cross.T)  # (N, K)
            total += (process[rows] @ weights).sum(axis=0)
        return total / len(phi)

    def describe(self) -> dict[str, Any]:
        """Public description of the model (no estimates)."""
        r = self.restriction
        method = self._method or self.approximation
        if method == "nngp":
            process = (
                "w ~ GP(0, sigma^2 exp(-phi ||s - s'||)), approximated by a nearest-neighbour (Vecchia) GP: each "
                f"record conditioned on its {self.neighbours} nearest earlier records (ordered by the first "
                "coordinate); the response NNGP of the marginal covariance for the parameters, the latent NNGP "
                "with the same neighbour sets for w"
            )
            sampler: dict[str, Any] = {
                "method": "grid posterior of (phi, tau^2/sigma^2, sigma^2), beta integrated out; independent draws",
                "draws": self.settings.chains * self.settings.draws,
            }
        else:
            process = "w ~ GP(0, sigma^2 exp(-phi ||s - s'||)) (exact, marginalised)"
            if method == "auto":
                process += f"; nearest-neighbour (Vecchia) GP beyond {AUTO_EXACT_LIMIT} records"
            sampler = {k: v for k, v in self.settings.to_dict().items() if k != "progressbar"}
        return {
            "synthesizer": self.name,
            "stage": self.stage,
            "approximation": method,
            "paper": "Quick, Holan & Wikle, Generating partially synthetic geocoded public use data with decreased "
            "disclosure risk using differential smoothing",
            "model": {
                "response": "Y(s) = x(s)'beta + w(s) + eps, eps ~ N(0, tau^2)",
                "process": process,
                "priors": {
                    "beta": f"Normal(0, {self.priors.beta_sd:g}^2) each",
                    "sigma, tau": "half-Cauchy, scale the sample sd of the response unless set",
                    "phi": "equal weights on a grid equally spaced in log phi" if r is None else "fixed (stage 2)",
                },
                "differential_smoothing": None
                if r is None
                else {
                    "risk_weights": r.kind,
                    "gamma": "inf" if math.isinf(r.gamma) else "finite",
                    "process_scaling": "A_ii = 1/sqrt(1 + gamma a_i)",
                },
            },
            "synthesis": "partially synthetic: the response is replaced by x'beta + w + eps under one posterior "
            "draw per dataset; locations and covariates are released unchanged",
            "sampler": sampler,
        }


# --------------------------------------------------------------------------------------------------
# The two stages together


@dataclass
class TwoStageFit:
    """Both fits of the differential-smoothing procedure (Section 3.3)."""

    data: SpatialData
    unrestricted: SpatialSynthesizer
    unrestricted_idata: az.InferenceData
    restriction: Restriction
    restricted: SpatialSynthesizer
    restricted_idata: az.InferenceData


def fit_two_stage(
    data: SpatialData,
    *,
    priors: SpatialPriors | None = None,
    settings: SamplerSettings | None = None,
    seed: int = 0,
    risk_weights: RiskWeights = "binary",
    correlation: float = 0.20,
    gamma: float = math.inf,
    alpha: float | None = None,
    approximation: Approximation = "auto",
    neighbours: int = 15,
) -> TwoStageFit:
    """Fit the unrestricted model, flag the at-risk records, fit the restricted model (Section 3.3).

    Parameters
    ----------
    data
        From :func:`prepare_spatial_data` or :func:`simulate_spatial`.
    priors, settings
        Prior and sampler settings (defaults: :class:`SpatialPriors`, :class:`SamplerSettings`).
    seed
        Seed of both stages.
    risk_weights, correlation, gamma, alpha
        See :func:`make_restriction`.
    approximation, neighbours
        ``"exact"``, ``"nngp"`` or ``"auto"`` (exact up to :data:`AUTO_EXACT_LIMIT` records), resolved once for
        both stages; see :class:`SpatialSynthesizer`.
    """
    priors = priors or SpatialPriors()
    settings = settings or SamplerSettings(draws=2000, target_accept=0.95)
    method = resolve_approximation(approximation, data.n, neighbours)
    first = SpatialSynthesizer(priors, settings, approximation=method, neighbours=neighbours)  # type: ignore[arg-type]
    idata1 = first.fit(data, seed)
    restriction = make_restriction(data, idata1, kind=risk_weights, correlation=correlation, gamma=gamma, alpha=alpha)
    second = SpatialSynthesizer(priors, settings, restriction, approximation=method, neighbours=neighbours)  # type: ignore[arg-type]
    idata2 = second.fit(data, streams.integer_seed(seed, Stream.RESTRICTED_FIT))
    return TwoStageFit(data, first, idata1, restriction, second, idata2)


def posterior_summary(
    idata: az.InferenceData, names: tuple[str, ...] = ("beta", "sigma_sq", "tau_sq", "phi")
) -> pd.DataFrame:
    """Posterior medians and 95% equal-tailed intervals (the layout of Table 1)."""
    post = stack_draws(idata.posterior)
    rows = []
    for name in names:
        values = post[name]
        if "coefficient" in values.dims:
            for c in values["coefficient"].to_numpy():
                v = values.sel(coefficient=c).to_numpy()
                rows.append((f"{name}[{c}]", *np.quantile(v, [0.5, 0.025, 0.975])))
        else:
            rows.append((name, *np.quantile(values.to_numpy(), [0.5, 0.025, 0.975])))
    return pd.DataFrame(rows, columns=["parameter", "median", "lower", "upper"]).set_index("parameter")
