"""The DPMPM synthesizer: fits the model by blocked Gibbs and synthesizes the chosen variables of every record.

Synthesis follows Section 2.1: for each posterior draw used, a latent class per record from the chosen
conditional (eq. 2), then every synthesized variable independently from ``theta_z`` (eq. 1); kept values never
change.

Label switching: the component labels are not identified, so the convergence gate monitors label-invariant
quantities only (:meth:`DPMPMSynthesizer.convergence_quantities`): ``alpha``, the marginal probabilities of the
levels of every synthesized variable, the number of occupied components, and the probabilities of those levels
given each pattern with at least :data:`PATTERN_MONITOR_RECORDS` records (what the synthesis draws from). On the
CE-like data the last are the slowest: the posterior has regimes with 11, 12 or 13 large components (groupings
of the patterns) that a chain changes about once every 20,000 iterations, so the gate fails there unless the
chains are very long. The real VLSS 1997 individuals (commune synthesized) show the same more clearly
(``bench/dpmpm.py --gate ... --vlss``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from ..base import SyntheticCellCounts, concat_chains
from ..cart.rules import Rule
from ..categorical import CategoricalData, long_frame
from ..sampling import ConvergenceCriteria, ConvergenceReport, check_convergence
from ..structural_zeros import allowed_records, structural_zeros_dict
from .gibbs import SAMPLER_DECISION, SMALL_CELL, GibbsSettings, run_gibbs
from .marginal import build_model, model_hyperparameters
from .model import DEFAULT_K, DPMPMPriors, level_dim
from .predictive import synthesize_cell_counts, synthesize_cells

__all__ = ["CONDITIONINGS", "PATTERN_MONITOR_RECORDS", "Conditioning", "DPMPMSynthesizer"]

Conditioning = Literal["full", "pattern", "prior"]
CONDITIONINGS: tuple[str, ...] = ("full", "pattern", "prior")

#: The convergence gate monitors p(synthesized level | pattern) for the patterns with at least this many records.
PATTERN_MONITOR_RECORDS = 50


@dataclass
class DPMPMSynthesizer:
    """Fits the DPMPM and synthesizes the chosen variables of every record (partially synthetic).

    Parameters
    ----------
    K
        Truncation level (40 in Section 2.3).
    priors
        Hyperparameters of eq. (5)-(6).
    settings
        Blocked Gibbs settings.
    conditioning
        How each record's latent class is drawn for synthesis: ``"full"`` given all of the record's values
        (the usual DPMPM synthesis, as in NPBayesImputeCat), ``"pattern"`` given only the values that are
        not synthesized, ``"prior"`` from ``pi`` alone (the literal reading of eq. 2).
    criteria
        The convergence gate, applied to label-invariant quantities.
    structural_zeros
        Rules declaring impossible records (:mod:`bayessdc.models.structural_zeros`), checked against the data
        beforehand. Honoured by exact rejection at synthesis: a synthetic record violating a rule has its latent
        class and synthesized values drawn again, given the same conditioning values, until it satisfies every
        rule. The released values of a record are then a draw from the posterior predictive conditioned on the
        allowed set, ``p(y | kept, allowed) ∝ sum_k w_k prod_j theta_k^(j)[y_j] 1{allowed}``. The model itself
        is the untruncated DPMPM: it is fitted as if impossible cells could occur, so it puts posterior mass on
        them that the rejection renormalises away; this is not the posterior of the truncated model of
        Manrique-Vallier & Reiter (2014), which augments the data with the impossible records in the sampler.
        The cost is the redraws: ``rejections`` counts the records drawn and rejected, reported in
        :meth:`describe`.
    max_rejection_rounds
        Most rounds of redraws of one dataset before giving up (a record whose allowed values have almost no
        probability under the model).
    rejections
        Running counts ``{"drawn": ..., "rejected": ...}`` of synthetic records over every draw of this object
        (shared by its copies), for the rejection rate in :meth:`describe`.
    """

    K: int = DEFAULT_K
    priors: DPMPMPriors = field(default_factory=DPMPMPriors)
    settings: GibbsSettings = field(default_factory=GibbsSettings)
    conditioning: str = "full"
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    name: str = "dpmpm"
    structural_zeros: tuple[Rule, ...] = ()
    max_rejection_rounds: int = 1000
    rejections: dict[str, int] = field(default_factory=lambda: {"drawn": 0, "rejected": 0}, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.conditioning not in CONDITIONINGS:
            raise ValueError(f"conditioning must be one of {CONDITIONINGS}, got {self.conditioning!r}")
        if self.K < 2:
            raise ValueError("K must be at least 2")
        if self.settings.likelihood_power != 1.0:
            raise ValueError(
                f"likelihood_power {self.settings.likelihood_power} samples the power posterior, a diagnostic that "
                "must not feed a release: run it with run_gibbs (bench/dpmpm.py --powers), not the synthesizer"
            )

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: CategoricalData, seed: int, chains: Sequence[int] | None = None) -> az.InferenceData:
        """Sample the posterior by blocked Gibbs; returns InferenceData with ``chain`` and ``draw`` dims.

        The posterior holds ``alpha``, ``pi`` (component), ``theta_<variable>`` (component, level) for
        every variable, ``occupied`` (components holding at least one record at that iteration) and
        ``marginal_<variable>`` (level) for every synthesized variable: ``sum_k pi_k theta_k^(j)``.

        Parameters
        ----------
        data
            The coded records.
        seed
            Seed of the run; chain ``c`` draws from the stream ``(seed, "chain", c)``
            (:mod:`bayessdc.synthesis.streams`).
        chains
            Fit only these of the ``settings.chains`` chains (default: all, at once in threads). Chain ``c``
            gives exactly the draws it gives in the fit of all chains, under its own index on the ``chain``
            coordinate, so chains fitted apart (for example as parts of
            :func:`bayessdc.synthesis.runner.run_parts`) and stacked by :meth:`combine_chains` give the
            posterior of the fit of all chains.
        """
        model = build_model(data, self.K, self.priors)
        hyper = model_hyperparameters(model, data)
        start = time.perf_counter()
        raw = run_gibbs(data, hyper, self.settings, seed, chains=chains)
        seconds = time.perf_counter() - start
        n_chains, draws = raw["alpha"].shape
        chain = np.arange(n_chains) if chains is None else np.asarray(chains, dtype=np.int64)
        coords: dict[str, Any] = {"chain": chain, "draw": np.arange(draws), "component": np.arange(self.K)}
        variables: dict[str, Any] = {
            "alpha": (("chain", "draw"), raw["alpha"]),
            "pi": (("chain", "draw", "component"), raw["pi"]),
            "occupied": (("chain", "draw"), raw["occupied"]),
        }
        start_of = raw["var_start"]
        for j, v in enumerate(data.variables):
            dim = level_dim(v)
            coords[dim] = data.levels[v]
            theta = raw["theta"][..., start_of[j] : start_of[j + 1]]
            variables[f"theta_{v}"] = (("chain", "draw", "component", dim), theta)
            if v in data.synthesize:
                variables[f"marginal_{v}"] = (("chain", "draw", dim), np.einsum("cdk,cdkl->cdl", raw["pi"], theta))
        posterior = xr.Dataset(variables, coords=coords)
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), np.zeros((n_chains, draws), dtype=bool))},
            coords={"chain": coords["chain"], "draw": coords["draw"]},
        )
        idata = az.InferenceData(posterior=posterior, sample_stats=stats)
        idata.attrs.update(
            {
                "sampler_backend": "gibbs",
                "sampler": "blocked Gibbs (numba) on cell counts",
                "sampler_decision": SAMPLER_DECISION,
                "sampler_settings": json.dumps(self.settings.to_dict()),
                "sampler_seed": int(seed),
                "sampling_seconds": float(seconds),
                "iterations_per_chain": int(self.settings.burn + self.settings.draws),
                "n_cells": int(len(data.cell_counts)),
            }
        )
        return idata

    @staticmethod
    def combine_chains(parts: Sequence[az.InferenceData]) -> az.InferenceData:
        """Stack posteriors of chains fitted apart (:meth:`fit` with ``chains``) into one, in chain order.

        Every group is concatenated along ``chain`` (the values are copied, not recomputed: the result is
        bitwise the fit of those chains together); the attributes are the first part's, with
        ``sampling_seconds`` summed over the parts.
        """
        return concat_chains(parts)

    def convergence_quantities(self, idata: az.InferenceData, data: CategoricalData) -> dict[str, xr.DataArray]:
        """The label-invariant quantities the gate monitors, each with ``chain`` and ``draw`` dimensions.

        ``alpha``, ``occupied``, ``marginal_<variable>`` for every synthesized variable, and what the
        synthesis draws from: ``conditional_<variable>``, the probabilities of every synthesized variable's
        levels given each pattern of the kept variables holding at least ``PATTERN_MONITOR_RECORDS`` records
        (:meth:`pattern_conditionals`). On the CE-like data two chains could agree on the marginals (r_hat
        1.004) while these differed (r_hat 1.07): the chains sat in different groupings of the patterns into
        components.
        """
        posterior = idata.posterior
        names = ["alpha", "occupied"] + [f"marginal_{v}" for v in data.synthesize]
        quantities = {name: posterior[name] for name in names}
        for v, values in self.pattern_conditionals(idata, data, PATTERN_MONITOR_RECORDS).items():
            quantities[f"conditional_{v}"] = values
        return quantities

    def check(self, idata: az.InferenceData, data: CategoricalData) -> ConvergenceReport:
        """Apply the convergence gate to the label-invariant quantities (:meth:`convergence_quantities`)."""
        return check_convergence(idata, self.criteria, var_names=[], derived=self.convergence_quantities(idata, data))

    def pattern_conditionals(
        self, idata: az.InferenceData, data: CategoricalData, min_records: int = 1
    ) -> dict[str, xr.DataArray]:
        """Posterior draws of ``p(level of a synthesized variable | pattern)`` for the larger patterns.

        ``sum_k pi_k prod_j theta_k^(j)[x_j] theta_k^(v) / sum_k pi_k prod_j theta_k^(j)[x_j]`` over the kept
        variables ``j`` (eq. 1-2), label-invariant.

        Parameters
        ----------
        idata
            Posterior from :meth:`fit`.
        data
            The coded records.
        min_records
            Only patterns with at least this many records.

        Returns
        -------
        dict
            One DataArray per synthesized variable, dims (chain, draw, pattern, level); the ``pattern``
            coordinate reads ``"gender=1, income=2, age=3"``.
        """
        posterior = idata.posterior
        keep = [data.variables[j] for j in data.keep_index]
        if keep:
            patterns, pattern_of = np.unique(data.cell_codes[:, data.keep_index], axis=0, return_inverse=True)
            sizes = np.bincount(pattern_of.ravel(), weights=data.cell_counts)
        else:
            patterns, sizes = np.zeros((1, 0), dtype=np.int64), np.array([float(data.n_records)])
        chosen = np.flatnonzero(sizes >= min_records)
        labels = [", ".join(f"{v}={data.levels[v][c]}" for v, c in zip(keep, patterns[b], strict=True)) for b in chosen]
        # per chain, the log weights from a gather of log theta (the same values as gathering theta first) and the
        # mixture by a batched matmul, without the (chain, draw, pattern, component) array of the whole posterior at
        # once (the same values to 1e-16, less than half the time of one einsum; README, "Measured choices")
        log_pi = np.log(np.maximum(posterior["pi"].transpose("chain", "draw", "component").to_numpy(), 1e-300))
        log_theta = [
            np.log(np.maximum(posterior[f"theta_{v}"].transpose("chain", "draw", "component", level_dim(v)).to_numpy(),
                              1e-300))
            for v in keep
        ]  # fmt: skip
        synthesized = {
            v: posterior[f"theta_{v}"].transpose("chain", "draw", "component", level_dim(v)).to_numpy()
            for v in data.synthesize
        }
        values = {v: np.empty((*log_pi.shape[:2], len(chosen), theta.shape[-1])) for v, theta in synthesized.items()}
        for c in range(log_pi.shape[0]):
            log_w = np.repeat(log_pi[c][:, None, :], len(chosen), axis=1)  # (draw, pattern, component)
            for j, lt in enumerate(log_theta):
                log_w += np.moveaxis(lt[c][..., patterns[chosen, j]], -1, 1)
            log_w -= log_w.max(axis=-1, keepdims=True)
            weight = np.exp(log_w)
            weight /= weight.sum(axis=-1, keepdims=True)
            for v, theta in synthesized.items():
                np.matmul(weight, theta[c], out=values[v][c])
        out = {}
        for v in data.synthesize:
            dim = level_dim(v)
            out[v] = xr.DataArray(
                values[v],
                dims=("chain", "draw", "pattern", dim),
                coords={"chain": posterior["chain"], "draw": posterior["draw"], "pattern": labels, dim: data.levels[v]},
            )
        return out

    # -- conditional probabilities -------------------------------------------------------------------

    def _arrays(self, posterior: xr.Dataset, data: CategoricalData) -> tuple[np.ndarray, list[np.ndarray]]:
        pi = posterior["pi"].transpose("sample", "component").to_numpy()
        thetas = [
            posterior[f"theta_{v}"].transpose("sample", "component", level_dim(v)).to_numpy() for v in data.variables
        ]
        return pi, thetas

    def _log_class_weights(
        self, pi: np.ndarray, thetas: list[np.ndarray], codes: np.ndarray, variables: np.ndarray
    ) -> np.ndarray:
        """``log pi_k + sum_{j in variables} log theta_k^(j)[x_j]``: (sample, row, component)."""
        out = np.broadcast_to(np.log(pi)[:, None, :], (pi.shape[0], codes.shape[0], pi.shape[1])).copy()
        for j in variables:
            out += np.log(np.transpose(thetas[j], (0, 2, 1))[:, codes[:, j], :])
        return out

    def _joint_theta(self, thetas: list[np.ndarray], data: CategoricalData) -> np.ndarray:
        """``prod_r theta_k^(r)[c_r]`` over the synthesized variables: (sample, component, joint candidate)."""
        joint = None
        for j in data.synthesize_index:
            t = thetas[j]
            joint = t if joint is None else (joint[..., :, None] * t[..., None, :]).reshape(t.shape[0], t.shape[1], -1)
        return joint

    def _class_weights(self, pi, thetas, data: CategoricalData, codes: np.ndarray, conditioning: str) -> np.ndarray:
        """Normalised p(z = k | the conditioning values): (sample, row, component)."""
        if conditioning == "full":
            variables = np.arange(len(data.variables))
        elif conditioning == "pattern":
            variables = data.keep_index
        else:
            variables = np.array([], dtype=np.int64)
        log_w = self._log_class_weights(pi, thetas, codes, variables)
        log_w -= log_w.max(axis=-1, keepdims=True)
        w = np.exp(log_w)
        return w / w.sum(axis=-1, keepdims=True)

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: CategoricalData) -> xr.DataArray:
        """Joint code of the synthesized variables of every record (dimension ``item``)."""
        return xr.DataArray(data.joint_code(), dims="item", name="observed")

    def candidates(self, data: CategoricalData) -> xr.DataArray:
        """Every joint code of the synthesized variables (one variable: its level codes)."""
        values = np.arange(int(np.prod(data.synthesized_shape)))
        return xr.DataArray(values, dims="candidate", coords={"candidate": values})

    def candidate_log_prob(self, posterior: xr.Dataset, data: CategoricalData) -> xr.DataArray:
        """``log p(synthesized values = c | the record's kept values, draw)``, dims ``(sample, item, candidate)``.

        Equal, up to a term that does not depend on ``c``, to the record's likelihood with its synthesized
        values set to ``c``, which is what the importance weights need. Computed per distinct kept pattern.
        """
        pi, thetas = self._arrays(posterior, data)
        patterns, inverse = np.unique(data.codes[:, data.keep_index], axis=0, return_inverse=True)
        codes = np.zeros((len(patterns), len(data.variables)), dtype=np.int64)
        codes[:, data.keep_index] = patterns
        weights = self._class_weights(pi, thetas, data, codes, "pattern")  # (sample, pattern, K)
        probs = np.einsum("spk,skc->spc", weights, self._joint_theta(thetas, data))
        values = np.log(probs)[:, inverse.ravel(), :]
        return xr.DataArray(
            values,
            dims=("sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": self.candidates(data).to_numpy()},
            name="log_prob",
        )

    def release_log_prob(self, posterior: xr.Dataset, data: CategoricalData, synthetic: xr.DataArray) -> xr.DataArray:
        """``log p(released value of item t | draw, true value = c)``: dims ``(synthetic, sample, item, candidate)``.

        How a released value depends on the true one is set by the conditioning: under ``"full"`` the
        latent class is drawn given the true value ``c``; under ``"pattern"`` and ``"prior"`` it does not
        depend on ``c`` (constant along ``candidate``). Under structural zeros the rejection divides by the
        probability that a draw is allowed, ``sum_k p(k | ...) M_tk`` with ``M_tk`` the mass of ``theta_k`` on the
        synthesized values allowed with item ``t``'s kept values (an impossible candidate keeps its value: the
        intruder is not assumed to exclude it).
        """
        pi, thetas = self._arrays(posterior, data)
        joint = self._joint_theta(thetas, data)  # (S, K, C)
        released = synthetic.transpose("synthetic", "item").to_numpy()
        n_syn, n_items = released.shape
        n_cand = joint.shape[-1]
        out = np.empty((n_syn, pi.shape[0], n_items, n_cand))
        mass = None  # M: (S, item, K), the mass of theta_k on the allowed values of each item
        if self.structural_zeros:
            mass = np.einsum("skc,tc->stk", joint, self._allowed_candidates(data).astype(float))
        if self.conditioning == "full":
            log_a = self._log_class_weights(pi, thetas, data.codes, data.keep_index)  # (S, item, K)
            a = np.exp(log_a - log_a.max(axis=-1, keepdims=True))  # the ratio below is invariant to this scale
            norm = np.einsum("stk,skc->stc", a, joint) if mass is None else np.einsum("stk,skc->stc", a * mass, joint)
            for l in range(n_syn):
                theta_rel = joint[:, :, released[l]]  # theta_k[y~_t]: (S, K, item)
                # p(y~ | c) = sum_k p(k | kept values, c) theta_k[y~] = sum_k a_tk theta_k[c] theta_k[y~] / norm_tc
                num = np.einsum("stk,skt,skc->stc", a, theta_rel, joint)
                out[l] = np.log(num) - np.log(norm)
        else:
            weights = self._class_weights(pi, thetas, data, data.codes, self.conditioning)  # (S, item, K)
            allowed = 1.0 if mass is None else np.einsum("stk,stk->st", weights, mass)
            for l in range(n_syn):
                theta_rel = joint[:, :, released[l]]  # (S, K, item)
                p = np.einsum("stk,skt->st", weights, theta_rel) / allowed
                out[l] = np.log(p)[..., None]
        return xr.DataArray(
            out,
            dims=("synthetic", "sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": np.arange(n_cand)},
            name="release_log_prob",
        )

    def _allowed_candidates(self, data: CategoricalData) -> np.ndarray:
        """``(item, candidate)``: whether each joint candidate of the synthesized values is allowed with the
        item's kept values (the structural zeros)."""
        n_cand = int(np.prod(data.synthesized_shape))
        grid = np.repeat(data.codes[:, None, :], n_cand, axis=1)
        levels = np.unravel_index(np.arange(n_cand), data.synthesized_shape)
        for j, codes in zip(data.synthesize_index, levels, strict=True):
            grid[:, :, j] = codes[None, :]
        return allowed_records(self.structural_zeros, data, grid)

    def posterior_predictive(
        self, posterior: xr.Dataset, data: CategoricalData, rng: np.random.Generator
    ) -> xr.DataArray:
        """Synthetic joint codes of every record, one dataset per posterior draw: dims ``(sample, item)``.

        For each draw: a latent class per record from the chosen conditional, then every synthesized
        variable independently from ``theta_z`` (eq. 1); the kept values are never changed.
        """
        pi, thetas = self._arrays(posterior, data)
        out = np.empty((pi.shape[0], data.n_records), dtype=np.int64)
        shape = data.synthesized_shape
        for s in range(pi.shape[0]):
            values = self._synthesize_one(pi[s], [t[s] for t in thetas], data, rng)
            out[s] = np.ravel_multi_index(tuple(values.T), shape) if values.shape[1] > 1 else values[:, 0]
        return xr.DataArray(
            out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def synthesize_codes(self, posterior: xr.Dataset, data: CategoricalData, rng: np.random.Generator) -> np.ndarray:
        """Full coded synthetic records for each draw: ``(sample, n, p)`` with only synthesized columns changed."""
        pi, thetas = self._arrays(posterior, data)
        result = np.repeat(data.codes[None], pi.shape[0], axis=0)
        for s in range(pi.shape[0]):
            result[s][:, data.synthesize_index] = self._synthesize_one(pi[s], [t[s] for t in thetas], data, rng)
        return result

    def _synthesize_one(
        self, pi: np.ndarray, thetas: list[np.ndarray], data: CategoricalData, rng: np.random.Generator,
        reject: bool = True,
    ) -> np.ndarray:  # fmt: skip
        """Synthesized level codes ``(n, J)`` from one posterior draw (``pi`` (K,), ``thetas`` [(K, d_j)]);
        ``reject``: redraw the records that violate a structural zero (:meth:`_reject_impossible`)."""
        order, cell_start = data.cell_order
        values = synthesize_cells(order, cell_start, *self._kernel_inputs(pi, thetas, data), rng, SMALL_CELL)
        if reject and self.structural_zeros:
            values = self._reject_impossible(values, pi, thetas, data, rng)
        return values

    def _kernel_inputs(
        self, pi: np.ndarray, thetas: list[np.ndarray], data: CategoricalData
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The synthesis kernels' class weights per cell ``(C, K)``, cumulative theta of the synthesized variables
        ``(K, L)`` and their blocks on its level axis ``(J + 1,)``, for one posterior draw."""
        # p(z = k | the conditioning values) per cell: records of one cell share it.
        weights = self._class_weights(pi[None], [t[None] for t in thetas], data, data.cell_codes, self.conditioning)[0]
        synthesized = [thetas[j] for j in data.synthesize_index]
        theta_cdf = np.ascontiguousarray(np.concatenate([np.cumsum(t, axis=1) for t in synthesized], axis=1))
        syn_start = np.concatenate([[0], np.cumsum([t.shape[1] for t in synthesized])]).astype(np.int64)
        return np.ascontiguousarray(weights), theta_cdf, syn_start

    def synthesized_cell_counts(
        self, posterior: xr.Dataset, data: CategoricalData, rng: np.random.Generator
    ) -> SyntheticCellCounts | None:
        """One dataset per draw of ``posterior`` as counts per cell of :attr:`CategoricalData.cell_codes`
        (:func:`~bayessdc.models.dpmpm.predictive.synthesize_cell_counts`): the class counts and values of
        :meth:`posterior_predictive`, drawn the same way, without assigning them to records. ``None`` under
        structural zeros (their rejection redraws records)."""
        if self.structural_zeros:
            return None
        pi, thetas = self._arrays(posterior, data)
        shape = data.synthesized_shape
        _, cell_start = data.cell_order
        counts = np.empty((pi.shape[0], len(data.cell_counts), int(np.prod(shape))), dtype=np.int64)
        for s in range(pi.shape[0]):
            inputs = self._kernel_inputs(pi[s], [t[s] for t in thetas], data)
            synthesize_cell_counts(cell_start, *inputs, rng, SMALL_CELL, counts[s])
        joint = np.unravel_index(np.arange(counts.shape[-1]), shape)
        return SyntheticCellCounts(
            cells={v: (data.levels[v], data.cell_codes[:, j]) for j, v in enumerate(data.variables)},
            values={
                data.variables[j]: (data.levels[data.variables[j]], codes)
                for j, codes in zip(data.synthesize_index, joint, strict=True)
            },
            records=np.asarray(data.cell_counts, dtype=np.int64),
            counts=counts,
        )

    def _reject_impossible(
        self, values: np.ndarray, pi: np.ndarray, thetas: list[np.ndarray], data: CategoricalData,
        rng: np.random.Generator,
    ) -> np.ndarray:  # fmt: skip
        """Exact rejection: the records whose synthetic values violate a structural zero drawn again (class and
        values, given the same conditioning values) until none does; counted in ``rejections``."""
        self.rejections["drawn"] += data.n_records
        rows = np.arange(data.n_records)
        for _ in range(self.max_rejection_rounds):
            codes = data.codes[rows].copy()
            codes[:, data.synthesize_index] = values[rows]
            bad = rows[~allowed_records(self.structural_zeros, data, codes)]
            if bad.size == 0:
                return values
            self.rejections["drawn"] += bad.size
            self.rejections["rejected"] += bad.size
            values[bad] = self._synthesize_one(pi, thetas, data.take(bad), rng, reject=False)
            rows = bad
        raise RuntimeError(
            f"after {self.max_rejection_rounds} rounds of redraws, {rows.size} synthetic record(s) still violate a "
            "structural zero: the model gives their allowed values almost no probability"
        )

    def release_frame(self, data: CategoricalData, joint: xr.DataArray) -> pd.DataFrame:
        """Synthetic datasets as one long table of labels with a ``synthetic`` column (1..m).

        Parameters
        ----------
        data
            The coded records.
        joint
            Joint codes of the synthesized variables, dimensions ``(synthetic, item)`` (from
            :func:`bayessdc.synthesis.datasets.draw_synthetic`).
        """
        return long_frame(data, self.synthesized_codes(data, joint), joint.sizes["synthetic"])

    def synthesized_codes(self, data: CategoricalData, joint: xr.DataArray) -> dict[str, tuple[Any, np.ndarray]]:
        """Every synthesized variable of every dataset as codes: ``{variable: (levels, codes)}``, ``codes`` of
        dimensions ``(synthetic, item)`` over ``levels`` (the release gate measures these, no data frame)."""
        values = joint.transpose("synthetic", "item").to_numpy()
        parts = np.unravel_index(values, data.synthesized_shape)
        return {
            data.variables[j]: (data.levels[data.variables[j]], part)
            for j, part in zip(data.synthesize_index, parts, strict=True)
        }

    def describe(self) -> dict[str, Any]:
        """The public description of the model written to ``release/model.json`` (no estimates)."""
        return {
            "synthesizer": self.name,
            "paper": "Hu & Savitsky, Bayesian Data Synthesis and Disclosure Risk Quantification (Section 2.1)",
            "model": {
                "likelihood": "X_ij | z_i ~ Categorical(theta_{z_i}^(j)) independently over variables j (eq. 1)",
                "latent_class": "z_i ~ Categorical(pi), truncated stick breaking with K components (eq. 2-4)",
                "K": self.K,
                "priors": {
                    "beta_k": "Beta(1, alpha), k < K; beta_K = 1",
                    "alpha": f"Gamma(shape {self.priors.a_alpha:g}, rate {self.priors.b_alpha:g})",
                    "theta_k^(j)": f"Dirichlet({self.priors.theta_concentration:g}, ..., "
                    f"{self.priors.theta_concentration:g})",
                },
            },
            "synthesis": {
                "conditioning": self.conditioning,
                "meaning": {
                    "full": "latent class drawn given all of the record's values",
                    "pattern": "latent class drawn given the record's unsynthesized values",
                    "prior": "latent class drawn from pi alone",
                }[self.conditioning],
                "datasets": "each synthetic dataset uses one posterior draw, draws spaced far apart",
            },
            "sampler": {"method": "blocked Gibbs (Ishwaran & James 2001) on cell counts", **self.settings.to_dict()},
            **self._structural_zeros(),
        }

    def _structural_zeros(self) -> dict[str, Any]:
        if not self.structural_zeros:
            return {}
        drawn, rejected = self.rejections["drawn"], self.rejections["rejected"]
        method = (
            "exact rejection at synthesis: a synthetic record violating a rule is drawn again (latent class and "
            "values, same conditioning) until it satisfies every rule; the model is fitted untruncated, so the "
            "rejection renormalises the posterior predictive over the allowed records (not the truncated model of "
            "Manrique-Vallier & Reiter 2014)"
        )
        return {
            "structural_zeros": structural_zeros_dict(
                self.structural_zeros,
                method,
                records_drawn=drawn,
                records_rejected=rejected,
                rejection_rate=rejected / drawn if drawn else None,
            )
        }
