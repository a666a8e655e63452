"""The flow synthesizer: fit one group pair, draw its synthetic counts, score its risk (the contract).

Hawala, Reiter & Wang, *Synthesizing truncated count data for confidentiality*. The posterior is sampled in
the form of :mod:`bayessdc.models.flows.marginal` (one compiled model per size class, shared by every group of
that size); the sensitive counts are redrawn from eq. (1) under one posterior draw of ``lambda`` per
synthetic dataset.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import arviz as az
import numpy as np
import xarray as xr

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..base import sample_candidates
from ..nuts import ChainDraws, sample_chains
from ..sampling import CompiledModelCache, SamplerSettings, resolve_backend, sample_model
from .compiled import candidate_log_probabilities, flow_data, run_flow_chain
from .data import FlowGroup
from .marginal import build_model, draw_precision, effect_layout, padded_size
from .model import WEAKLY_INFORMATIVE_PRIORS, FlowPriors, describe_priors

__all__ = ["COMPILED_MODELS", "FLOW_SAMPLER_SETTINGS", "FlowSynthesizer"]


#: The flow model's default sampler settings: the compiled NUTS (``backend="auto"``), 4 chains of 500 warm-up and
#: 1,000 kept iterations. Stan's warm-up schedule fits 500 exactly (buffers 75 and 50, windows 25 to 200); on the
#: 1,009-cell pair of ``bench/flows.py`` it gave the minimum ESS of 1,000 warm-up iterations in three quarters
#: of the time (3,995 against 3,776 over every log-rate, 0 divergences). ``low_rank_mass_matrix`` applies when
#: nutpie is chosen.
FLOW_SAMPLER_SETTINGS = SamplerSettings(tune=500, draws=1000, chains=4, low_rank_mass_matrix=True)

#: Compiled models of this process, shared by all groups (and all FlowSynthesizer objects).
COMPILED_MODELS = CompiledModelCache()


@dataclass
class FlowSynthesizer:
    """Fits, synthesizes and scores one group pair at a time (the model: :mod:`bayessdc.models.flows.marginal`).

    Parameters
    ----------
    priors
        Hyperparameters of Section 2.1 (default the weakly informative Gamma(1, 1) on the precisions,
        :data:`~bayessdc.models.flows.model.WEAKLY_INFORMATIVE_PRIORS`; the paper's are ``PAPER_PRIORS``).
    settings
        NUTS settings (default :data:`FLOW_SAMPLER_SETTINGS`). ``backend="auto"`` runs the compiled sampler of
        :mod:`bayessdc.models.nuts`; with ``"nutpie"`` its low-rank mass matrix is used when
        ``low_rank_mass_matrix`` is set.
    lower, upper
        Counts in ``lower..upper`` are sensitive and replaced.
    parameterization
        See :func:`bayessdc.models.flows.marginal.build_model`.
    pad
        Pad the model to a size class (factor 1.5) so that one compiled model serves many groups; without
        padding each distinct size compiles anew (sampling a large single group is then a little faster).
    gate_precisions
        Also apply the convergence gate to ``phi_beta`` and ``phi_gamma`` (see :meth:`convergence_quantities`).
    lower_bound_acceptance_factor
        A group whose every count is at the lower bound samples with ``target_accept`` moved this many times
        closer to 1, ``1 - (1 - target_accept) / factor`` (0.95 from the default 0.8; 1 leaves it). Its
        likelihood is flat as the rates go to 0, so only the prior bounds the effects from below, a funnel in
        which NUTS diverges. Measured on the 12 such groups of the 8-state simulation of ``bench/flows.py``
        (2 seeds, 24 fits): with 0.8 12 fits had divergences (44 in all), with 0.9 5 (8), with 0.95 none, in
        about the time of 0.9. Starting there spares the refit that the gate would ask for (its rule, halfway to
        1 each time, would reach 0.95 only on the third attempt).
    """

    priors: FlowPriors = WEAKLY_INFORMATIVE_PRIORS
    settings: SamplerSettings = field(default_factory=lambda: FLOW_SAMPLER_SETTINGS)
    lower: int = 1
    upper: int = 9
    parameterization: str = "marginal"
    pad: bool = True
    gate_precisions: bool = False
    lower_bound_acceptance_factor: float = 4.0
    name: str = "flows"

    def __post_init__(self) -> None:
        if not self.lower_bound_acceptance_factor >= 1:
            raise ValueError(
                f"lower_bound_acceptance_factor must be at least 1, got {self.lower_bound_acceptance_factor}"
            )

    def settings_for(self, group: FlowGroup) -> SamplerSettings:
        """The sampler settings of one group: :attr:`settings`, with ``target_accept`` moved towards 1 when every
        count of the group is at the lower bound (``lower_bound_acceptance_factor``)."""
        if group.y.any() or self.lower_bound_acceptance_factor == 1:
            return self.settings
        return replace(self.settings, target_accept=self._lower_bound_target_accept())

    def _lower_bound_target_accept(self) -> float:
        target = 1 - (1 - self.settings.target_accept) / self.lower_bound_acceptance_factor
        return min(max(target, self.settings.target_accept), 0.999)

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: FlowGroup, seed: int) -> az.InferenceData:
        """Sample the posterior of one group; returns InferenceData with real origin/destination labels.

        With ``settings.backend="auto"`` (the default) and the marginal parameterization the compiled sampler
        of :mod:`bayessdc.models.nuts` runs on :func:`bayessdc.models.flows.compiled.flow_logp_grad`;
        ``"nutpie"`` or ``"pymc"`` sample the PyMC model of :func:`bayessdc.models.flows.marginal.build_model`
        instead (the same posterior, ``tests/models/test_flows_compiled.py``).
        """
        group = data
        settings = self.settings_for(group)
        if settings.backend == "auto" and self.parameterization == "marginal":
            return self._finish(self._fit_compiled(group, seed, settings), group, seed)
        backend = resolve_backend(settings.backend)
        if backend == "nutpie":
            n_effects = len(group.origins) + len(group.destinations)
            size = padded_size(n_effects) if self.pad else n_effects
            key = ("flows", group.upper, self.parameterization, size, *asdict(self.priors).values())
            compiled = COMPILED_MODELS.get(
                key,
                lambda: build_model(group, self.priors, padded_effects=size, parameterization=self.parameterization),
            )
            family, origin_position, destination_position = effect_layout(group, size)
            swap = {
                "origin_index": origin_position,
                "destination_index": destination_position,
                "effect_family": family,
                "y_observed": group.y,
            }
            idata = sample_model(None, settings, seed, compiled=compiled, data=swap)
        else:
            model = build_model(group, self.priors, parameterization=self.parameterization)
            idata = sample_model(model, settings, seed)
        return self._finish(idata, group, seed)

    def _fit_compiled(
        self, group: FlowGroup, seed: int, settings: SamplerSettings, resume: ChainDraws | None = None
    ) -> az.InferenceData:
        """The posterior of the effects (in one ``effect`` vector, as the PyMC model names it) by the compiled NUTS;
        ``sample_stats`` keeps each chain's adapted inverse metric (``inv_metric``) so that it can be continued."""
        data, dim = flow_data(group, self.priors)
        start = time.perf_counter()
        draws = sample_chains(
            run_flow_chain, data, dim, chains=settings.chains, tune=settings.tune, draws=settings.draws,
            seed=int(seed), target_accept=settings.target_accept, cores=settings.cores, resume=resume,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        chain_draw = ("chain", "draw")
        posterior = xr.Dataset(
            {"mu": (chain_draw, draws.position[..., 0]), "effect": ((*chain_draw, "unit"), draws.position[..., 1:])}
        )
        sample_stats = xr.Dataset(
            {
                "diverging": (chain_draw, draws.diverging),
                "tree_depth": (chain_draw, draws.tree_depth),
                "n_steps": (chain_draw, draws.n_steps),
                "acceptance_rate": (chain_draw, draws.accept),
                "lp": (chain_draw, draws.logp),
                "step_size": (chain_draw, np.broadcast_to(draws.step_size[:, None], draws.logp.shape).copy()),
                "inv_metric": (("chain", "theta"), draws.inv_metric),
            }
        )
        coords = {"chain": np.arange(settings.chains), "draw": np.arange(settings.draws)}
        idata = az.InferenceData(
            posterior=posterior.assign_coords(coords), sample_stats=sample_stats.assign_coords(coords)
        )
        idata.attrs.update(
            {
                "sampler_backend": "bayessdc.models.nuts (compiled, Stan's diagonal-metric NUTS)",
                "sampler_settings": json.dumps(settings.to_dict()),
                "sampler_seed": int(seed),
                "sampling_seconds": float(seconds),
            }
        )
        return idata

    def continue_fit(self, idata: az.InferenceData, data: FlowGroup, draws: int, seed: int) -> az.InferenceData | None:
        """The fit with every chain continued by ``draws`` more draws, without a new warm-up (``None`` when the fit
        was not made by the compiled sampler, whose adapted state it needs).

        Each chain restarts at its last draw with its adapted step size and metric: after warm-up a chain is
        one fixed Markov kernel, so the result is the same chain run longer. The group runner uses it for a
        group whose r_hat or ESS missed the gate: the longer chains cost the new draws only, where a refit with
        four times the draws and twice the warm-up cost 3.3 times the first fit.
        """
        group = data
        state = self.adapted_state(idata)
        if state is None:
            return None
        settings = self.settings_for(group)
        posterior, stats = idata.posterior, idata.sample_stats
        more = self._finish(
            self._fit_compiled(group, seed, replace(settings, tune=0, draws=int(draws)), resume=state), group, seed
        )
        total = posterior.sizes["draw"] + int(draws)
        joined = az.InferenceData(
            posterior=xr.concat([posterior, more.posterior], dim="draw").assign_coords(draw=np.arange(total)),
            sample_stats=xr.concat(
                [stats.drop_vars("inv_metric"), more.sample_stats.drop_vars("inv_metric")], dim="draw"
            ).assign_coords(draw=np.arange(total)),
        )
        joined.sample_stats["inv_metric"] = more.sample_stats["inv_metric"]
        joined.attrs.update(idata.attrs)
        joined.attrs.update(
            {
                "sampler_settings": json.dumps(replace(settings, draws=total).to_dict()),
                "sampling_seconds": float(idata.attrs["sampling_seconds"]) + float(more.attrs["sampling_seconds"]),
                "continued": f"{int(draws)} draws per chain added to {posterior.sizes['draw']} (seed {int(seed)})",
            }
        )
        return joined

    def adapted_state(self, idata: az.InferenceData) -> ChainDraws | None:
        """Each chain's last draw of ``theta = (mu, beta, gamma)`` (the compiled sampler's order), step size and
        inverse metric, for :meth:`continue_fit`; ``None`` for a fit that did not come from the compiled sampler."""
        if "inv_metric" not in idata.sample_stats or self.parameterization != "marginal":
            return None
        posterior, stats = idata.posterior, idata.sample_stats
        last = np.concatenate(
            [
                posterior["mu"].to_numpy()[:, -1, None],
                posterior["beta_effect"].to_numpy()[:, -1],
                posterior["gamma_effect"].to_numpy()[:, -1],
            ],
            axis=1,
        )
        return ChainDraws.adapted_state(last, stats["step_size"].to_numpy()[:, -1], stats["inv_metric"].to_numpy())

    def _finish(self, idata: az.InferenceData, group: FlowGroup, seed: int) -> az.InferenceData:
        """Split ``effect`` into the origin and destination effects, draw the precisions, keep what is used."""
        n_origins, n_destinations = len(group.origins), len(group.destinations)
        effect = idata.posterior["effect"].drop_vars("unit", errors="ignore")
        idata.posterior["beta_effect"] = effect.isel(unit=slice(0, n_origins)).rename(unit="origin")
        idata.posterior["gamma_effect"] = effect.isel(unit=slice(n_origins, n_origins + n_destinations)).rename(
            unit="destination"
        )
        idata.posterior = idata.posterior.assign_coords(origin=group.origins, destination=group.destinations)
        posterior = idata.posterior
        if self.parameterization == "marginal":
            rng = streams.rng(seed, Stream.PRECISIONS)
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
        """Eq. (1) for every candidate value: ``log p(y_t = c | lambda_t)``, dims ``(item, candidate, sample)``.

        ``log lambda`` is gathered in numpy rather than by :meth:`log_rate`'s xarray broadcasting, and the
        result is laid out as the risk step reads it; on 100 simulated state pairs (26,108 cells, 1,000 draws)
        the xarray gather took 0.40 s and a transposing copy 0.55 s of a 11.6 s risk step.
        """
        mu = posterior["mu"].transpose("sample").to_numpy()
        beta = posterior["beta_effect"].transpose("origin", "sample").to_numpy()
        gamma = posterior["gamma_effect"].transpose("destination", "sample").to_numpy()
        log_rate = beta[data.origin_index] + gamma[data.destination_index]
        log_rate += mu
        r = np.arange(data.upper + 1)
        return xr.DataArray(
            candidate_log_probabilities(np.ascontiguousarray(log_rate, dtype=np.float64), int(data.upper)),
            dims=("item", "candidate", "sample"),
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

    def replace_values(self, data: FlowGroup, values: np.ndarray) -> FlowGroup:
        """The group with every cell's modelled value replaced (a released table as data: the no-knowledge
        intruder's refits)."""
        return data.with_values(np.asarray(values))

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
                "precision_prior": describe_priors(self.priors),
                "fitted_separately_for": "each (origin_group, destination_group) pair",
            },
            "synthesis": "each synthetic dataset replaces every sensitive count by a draw from the model "
            "under one posterior draw of lambda; all other counts are released unchanged",
            "sampler": {
                **{k: v for k, v in self.settings.to_dict().items() if k != "progressbar"},
                "target_accept_when_all_counts_at_lower_bound": round(self._lower_bound_target_accept(), 6),
            },
        }
