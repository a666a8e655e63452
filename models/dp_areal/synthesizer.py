"""The DP-areal synthesizer: fits the model with NUTS and synthesizes the label of every record (eq. 13-14).

Synthesis (eq. 13-14): for each record of pattern ``b``, a label drawn with probabilities
``lambda_i^(b) / sum_i lambda_i^(b)`` from one posterior draw, the log rates drawn exactly given the draw's
parameters (:func:`bayessdc.models.dp_areal.conditionals.draw_labels_and_log_rates`).

Label switching: component labels are not identified. The convergence gate monitors label-invariant
quantities only (:meth:`DPArealSynthesizer.convergence_quantities`): ``alpha``, ``tau_lambda``, the expected
number of occupied components, and the posterior mean of every distinct cell's log rate given the parameters
(Rao-Blackwellised, ``expected_log_rate``), which determines the synthesis probabilities.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

import bayessdc.models.progress as progress
import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..cart.rules import Rule
from ..categorical import long_frame
from ..sampling import (
    CompiledModelCache,
    ConvergenceCriteria,
    ConvergenceReport,
    SamplerSettings,
    check_convergence,
    resolve_backend,
    sample_model,
)
from ..structural_zeros import structural_zeros_dict
from .conditionals import draw_labels_and_log_rates, label_gibbs_step
from .data import ArealData
from .gibbs import DPArealGibbsSettings, run_chain
from .marginal import PARAMETERIZATIONS, build_model, leading_components
from .model import DEFAULT_K, DPArealPriors
from .quadrature import cell_posterior

__all__ = ["COMPILED_MODELS", "NUTS_TARGET_ACCEPT", "DPArealSynthesizer"]

#: NUTS's target acceptance on this model (the marginal model's funnel of the centred components diverges at
#: :class:`~bayessdc.models.sampling.SamplerSettings`' 0.8; README, "The DP-areal model").
NUTS_TARGET_ACCEPT = 0.9

#: Compiled nutpie models, keyed by the shapes of the data (one compilation serves every refit).
COMPILED_MODELS = CompiledModelCache()


@contextmanager
def _without_c_blas(active: bool) -> Iterator[None]:
    """Compile and sample the nutpie model (when ``active``) without PyTensor's C backend and its BLAS probe.

    Two PyTensor paths read the lazy default of ``config.blas__ldflags``, a search for a C BLAS to link which,
    on a pip install, warns "PyTensor could not link to a BLAS installation", although the model runs in numba:

    * nutpie's initial point is PyMC's ``FAST_COMPILE`` function, which evaluates the LKJ prior draw of
      ``chol`` for its shape; that draw's einsums are ``OpFromGraph`` whose inner graphs compile, on first
      use, in PyTensor's default mode: C, whose ``use_c_gemv`` rewrite reads the flags. Here they compile in
      NUMBA mode, like the model (only the draw's shape is used: the draws are bitwise the same). On a cold
      ``~/.pytensor`` that also saves a C compilation (first sampling of a small model: 8.8 s with C, 0.8 s).
    * the sparse rewrite ``local_usmm`` reads the flags in every mode, NUMBA included, whenever a graph holds
      ``z - a * w`` with a scalar ``a`` (pymc-devs/pytensor#1625, open), as the DP-areal log density does.
      No mode avoids that read; the warning concerns the C backend, which bayessdc does not use, so it is
      ignored, by message, category and module, while the model compiles and samples here.
    """
    if not active:
        yield
        return
    import pytensor

    with pytensor.config.change_flags(mode="NUMBA"), warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message="PyTensor could not link to a BLAS installation",
            category=UserWarning,
            module=r"pytensor\.link\.c\.cmodule",
        )
        yield


@dataclass
class DPArealSynthesizer:
    """Fits the DP-areal model with NUTS and synthesizes the label of every record (eq. 13-14).

    Parameters
    ----------
    K
        Truncation level (50 in Section 2.3).
    priors
        Hyperparameters of eq. (9)-(12).
    settings
        The sampler and its settings: the partially collapsed Gibbs sampler's
        (:class:`bayessdc.models.dp_areal.gibbs.DPArealGibbsSettings`, the default), every chain seeded on its own
        (a run that adds chains equals a run started with them), or NUTS's
        (:class:`bayessdc.models.sampling.SamplerSettings`, nutpie by default, at :data:`NUTS_TARGET_ACCEPT`
        through :meth:`bayessdc.DPAreal.nuts_settings`) on the model with the labels summed out (:mod:`.marginal`),
        the same posterior.
    parameterization
        See :func:`bayessdc.models.dp_areal.marginal.build_model` (``"identified"`` by default: the
        fewest gradients per effective draw of the ones tried, see ``bench/dp_areal.py``).
    quadrature_nodes
        Grid points per log-rate integral.
    centred_components
        Leading components sampled centred under the ``"identified"`` parameterization (default none below
        ``K = 20``, ``min(10, K // 5)`` from there: :func:`bayessdc.models.dp_areal.marginal.leading_components`).
    criteria
        The convergence gate, applied to label-invariant quantities (:meth:`convergence_quantities`).
    labels
        ``"marginal"`` (default): NUTS on the model with the labels summed out. ``"explicit"``: the labels are
        model variables (:func:`bayessdc.models.dp_areal.marginal.build_model`) drawn exactly by a
        Gibbs step (:func:`bayessdc.models.dp_areal.conditionals.label_gibbs_step`) between NUTS steps of
        everything else, with PyMC's sampler. Measured on the CE-like data
        (``bench/dp_areal.py --labels explicit``) it mixes worse per second than the default; see there.
    """

    K: int = DEFAULT_K
    priors: DPArealPriors = field(default_factory=DPArealPriors)
    settings: SamplerSettings | DPArealGibbsSettings = field(default_factory=DPArealGibbsSettings)
    parameterization: str = "identified"
    quadrature_nodes: int = 16
    centred_components: int | None = None
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    labels: str = "marginal"
    structural_zeros: tuple[Rule, ...] = ()
    name: str = "dp-areal"

    def __post_init__(self) -> None:
        if self.K < 2:
            raise ValueError("K must be at least 2")
        if self.labels not in ("marginal", "explicit"):
            raise ValueError(f"labels must be 'marginal' or 'explicit', got {self.labels!r}")
        if self.parameterization not in PARAMETERIZATIONS:
            raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {self.parameterization!r}")
        if not isinstance(self.settings, SamplerSettings | DPArealGibbsSettings):
            raise ValueError(f"settings must be SamplerSettings (NUTS) or DPArealGibbsSettings, got {self.settings!r}")

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: ArealData, seed: int, chains: range | None = None) -> az.InferenceData:
        """Sample the posterior; returns InferenceData with ``chain`` and ``draw`` dimensions.

        The posterior holds ``alpha``, ``rho`` (component), ``location`` (component, pattern), the precisions,
        and two label-invariant summaries computed exactly from every draw: ``expected_log_rate``
        (distinct pair: ``E[log lambda | c, parameters]``) and ``occupied`` (the expected number of components
        holding at least one cell, the paper's check that ``K`` is large enough).

        ``chains``: fit only these chains of ``settings.chains``, labelled by their indices on ``chain`` (default:
        all). NUTS samplers seed their chains together from one seed, so chains ``a .. b - 1`` fitted apart draw
        from the stream ``(seed, "chains", a)``: a fit that added chains is a valid posterior of that many chains
        but not the draws of a fit started with them (the DPMPM's Gibbs chains, seeded one by one, are).
        """
        if self.sampler == "gibbs":
            return self._fit_gibbs(data, seed, chains)
        if chains is not None and chains != range(self.settings.chains):
            part = replace(self, settings=replace(self.settings, chains=len(chains)))
            idata = part.fit(data, streams.integer_seed(seed, Stream.CHAINS, chains.start))
            labels = np.arange(chains.start, chains.stop)
            for group in idata.groups():
                if "chain" in idata[group].dims:
                    setattr(idata, group, idata[group].assign_coords(chain=labels))
            return idata
        model = build_model(
            data,
            self.K,
            self.priors,
            parameterization=self.parameterization,
            quadrature_nodes=self.quadrature_nodes,
            centred_components=self.centred_components,
            labels=self.labels,
        )
        settings, steps = self.settings, None
        if self.labels == "explicit" and data.possible is not None and not data.possible.all():
            raise ValueError(
                "labels='explicit' models every cell's count; with structural zeros use labels='marginal', which "
                "leaves the impossible cells out of the likelihood"
            )
        if self.labels == "explicit":
            if settings.backend == "auto":
                settings = replace(settings, backend="pymc")
            nodes = self.quadrature_nodes

            def steps(model: Any) -> list[Any]:
                return [label_gibbs_step(model, data, nodes=nodes)]

        backend = resolve_backend(settings.backend)
        compiled = None
        if backend == "nutpie":
            key = (
                "dp-areal",
                self.K,
                self.parameterization,
                self.centred_components,
                self.quadrature_nodes,
                str(asdict(self.priors)),
                data.counts.tobytes(),
                data.distinct_weight.tobytes(),
                data.design.tobytes(),
            )
        keep = ["alpha", "stick", "rho", "location", "tau_lambda", "tau_theta", "tau_phi", "tau_mu"]
        with _without_c_blas(backend == "nutpie"):
            if backend == "nutpie":
                compiled = COMPILED_MODELS.get(key, lambda: model)
            idata = sample_model(model, settings, seed, compiled=compiled, var_names=keep, steps=steps)
        start = time.perf_counter()
        self._add_summaries(idata, data)
        idata.attrs.update(
            {
                "parameterization": self.parameterization,
                "labels": self.labels,
                # the number actually centred (netCDF attributes cannot hold None)
                "centred_components": leading_components(self.K, self.centred_components)
                if self.parameterization == "identified"
                else 0,
                "quadrature_nodes": self.quadrature_nodes,
                "summary_seconds": time.perf_counter() - start,
                "n_distinct_pairs": data.n_distinct,
            }
        )
        return idata

    @property
    def sampler(self) -> str:
        """``"gibbs"`` or ``"nuts"``, by the type of ``settings``."""
        return "gibbs" if isinstance(self.settings, DPArealGibbsSettings) else "nuts"

    def _fit_gibbs(self, data: ArealData, seed: int, chains: range | None) -> az.InferenceData:
        """The Gibbs sampler's posterior: chain ``c`` from the stream ``(seed, "chain", c)``, labelled ``c``."""
        settings = self.settings
        chains = range(settings.chains) if chains is None else chains
        start = time.perf_counter()
        sweeps = settings.burn + settings.draws * settings.thin
        done = np.zeros(len(chains), dtype=np.int64)

        def one_chain(i: int) -> dict[str, Any]:
            def advance() -> None:
                done[i] += 1

            return run_chain(data, seed, chains[i], K=self.K, priors=self.priors, settings=settings,
                             nodes=self.quadrature_nodes, advance=advance)  # fmt: skip

        # Chains run in threads (the compiled sweep releases the GIL; each chain draws from its own generator, so
        # the draws do not depend on the number of threads).
        workers = max(1, min(len(chains), os.cpu_count() or 1))
        with progress.bar(len(chains) * sweeps, "DP-areal Gibbs sweeps") as bar, \
                ThreadPoolExecutor(max_workers=workers) as pool:  # fmt: skip
            futures = [pool.submit(one_chain, i) for i in range(len(chains))]
            while wait(futures, timeout=0.25).not_done:
                bar.update(completed=int(done.sum()))
            bar.update(completed=int(done.sum()))
            runs = [future.result() for future in futures]
        seconds = time.perf_counter() - start
        stacked = {name: np.stack([run[name] for run in runs]) for name in ("alpha", "stick", "rho", "location",
                   "tau_lambda", "tau_theta", "tau_phi", "tau_mu")}  # fmt: skip
        dims = {"stick": ("break",), "rho": ("component",), "location": ("component", "pattern")}
        coords = {"chain": np.asarray(list(chains)), "draw": np.arange(settings.draws), "component": np.arange(self.K),
                  "break": np.arange(self.K - 1), "pattern": data.pattern_labels}  # fmt: skip
        posterior = xr.Dataset({name: (("chain", "draw", *dims.get(name, ())), values)
                                for name, values in stacked.items()}, coords=coords)  # fmt: skip
        stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((len(chains), settings.draws), dtype=bool))},
                           coords={"chain": coords["chain"], "draw": coords["draw"]})  # fmt: skip
        idata = az.InferenceData(posterior=posterior, sample_stats=stats)
        self._add_summaries(idata, data)
        idata.attrs.update({
            "sampler_backend": "gibbs", "sampler": "partially collapsed Gibbs (numba), log rates integrated out",
            "sampler_settings": json.dumps(settings.to_dict()), "sampler_seed": int(seed),
            "sampling_seconds": float(seconds), "quadrature_nodes": self.quadrature_nodes,
            "n_distinct_pairs": data.n_distinct,
            "coefficient_acceptance": json.dumps([float(run["acceptance"]) for run in runs]),
        })  # fmt: skip
        return idata

    def _add_summaries(self, idata: az.InferenceData, data: ArealData) -> None:
        posterior = idata.posterior
        location = posterior["location"].transpose("chain", "draw", "component", "pattern").to_numpy()
        rho = posterior["rho"].transpose("chain", "draw", "component").to_numpy()
        tau = posterior["tau_lambda"].to_numpy()
        chains, draws = tau.shape
        expected = np.empty((chains, draws, data.n_distinct))
        occupied = np.empty((chains, draws))
        weight = data.distinct_weight.astype(float)
        with progress.bar(chains * draws, "DP-areal summaries of the draws") as bar:
            for c, d in np.ndindex(chains, draws):
                log_resp, mean = cell_posterior(location[c, d], rho[c, d], tau[c, d], data, nodes=self.quadrature_nodes)
                resp = np.exp(log_resp)
                expected[c, d] = (resp * mean).sum(axis=0)
                # P(component k holds no cell) = prod_d (1 - r_kd)^{n_d}.
                with np.errstate(divide="ignore"):  # a component certain to hold a cell: log(0) = -inf, exact
                    log_empty = (weight * np.log1p(-np.minimum(resp, 1.0))).sum(axis=1)
                occupied[c, d] = float((1.0 - np.exp(log_empty)).sum())
                bar.advance()
        posterior["expected_log_rate"] = (("chain", "draw", "distinct"), expected)
        posterior["occupied"] = (("chain", "draw"), occupied)
        idata.posterior = posterior.assign_coords(distinct=np.arange(data.n_distinct))

    def convergence_quantities(self, idata: az.InferenceData, data: ArealData | None = None) -> dict[str, xr.DataArray]:
        """The label-invariant quantities the gate monitors, each with ``chain`` and ``draw`` dimensions.

        ``alpha``, ``tau_lambda``, ``occupied`` and ``expected_log_rate`` of the posterior (see :meth:`fit`);
        ``data`` is not needed (the summaries were computed by :meth:`fit`).
        """
        posterior = idata.posterior
        return {name: posterior[name] for name in ("alpha", "tau_lambda", "occupied", "expected_log_rate")}

    def check(self, idata: az.InferenceData, data: ArealData | None = None) -> ConvergenceReport:
        """Apply the convergence gate to the label-invariant quantities (:meth:`convergence_quantities`)."""
        return check_convergence(idata, self.criteria, var_names=[], derived=self.convergence_quantities(idata, data))

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: ArealData) -> xr.DataArray:
        """Label code of every record (dimension ``item``)."""
        return xr.DataArray(data.records.joint_code(), dims="item", name="observed")

    def candidates(self, data: ArealData) -> xr.DataArray:
        """Every label code."""
        values = np.arange(data.n_labels)
        return xr.DataArray(values, dims="candidate", coords={"candidate": values})

    def label_probabilities(self, posterior: xr.Dataset, data: ArealData, rng: np.random.Generator) -> np.ndarray:
        """eq. (13): ``p_i^(b) = lambda_i^(b) / sum_i lambda_i^(b)`` for each draw, log rates drawn exactly.

        Under structural zeros the sums run over the possible labels of the pattern only (``data.possible``):
        an impossible (pattern, label) cell has probability exactly zero.

        Returns
        -------
        numpy.ndarray
            ``(sample, B, G)`` probabilities.
        """
        location = posterior["location"].transpose("sample", "component", "pattern").to_numpy()
        rho = posterior["rho"].transpose("sample", "component").to_numpy()
        tau = posterior["tau_lambda"].to_numpy()
        out = np.empty((location.shape[0], data.n_patterns, data.n_labels))
        for s in range(location.shape[0]):
            _, log_rates = draw_labels_and_log_rates(
                location[s], rho[s], tau[s], data, rng, nodes=self.quadrature_nodes
            )
            rates = np.exp(log_rates - log_rates.max(axis=1, keepdims=True))
            if data.possible is not None:
                rates = rates * data.possible  # structural zeros: never drawn
            out[s] = rates / rates.sum(axis=1, keepdims=True)
        return out

    def candidate_log_prob(self, posterior: xr.Dataset, data: ArealData) -> xr.DataArray:
        """Not defined for this model: the release depends on the label counts of the patterns, not on a
        per-record likelihood, so the per-record importance-sampling attribute risk does not apply (the
        identification and attribute-disclosure measures of :mod:`bayessdc.risk.identification` do)."""
        raise NotImplementedError(
            "the DP-areal model has no per-record likelihood of the label; use the identification and attribute "
            "disclosure measures (bayessdc.risk.identification)"
        )

    def posterior_predictive(self, posterior: xr.Dataset, data: ArealData, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic label codes of every record, one dataset per posterior draw: dims ``(sample, item)``.

        eq. (14): each record of pattern ``b`` gets a label drawn from ``p^(b)`` of the draw; kept values
        never change.
        """
        probs = self.label_probabilities(posterior, data, rng)
        cumulative = np.cumsum(probs, axis=2)
        cumulative[..., -1] = 1.0
        pattern = data.pattern_of_record
        out = np.empty((probs.shape[0], data.records.n_records), dtype=np.int64)
        for s in range(probs.shape[0]):
            u = rng.random(pattern.size)
            rows = cumulative[s][pattern]  # (n, G)
            out[s] = np.minimum((rows < u[:, None]).sum(axis=1), data.n_labels - 1)
        return xr.DataArray(
            out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def release_frame(self, data: ArealData, joint: xr.DataArray) -> pd.DataFrame:
        """Synthetic datasets as one long table of labels with a ``synthetic`` column (1..m)."""
        return long_frame(data.records, self.synthesized_codes(data, joint), joint.sizes["synthetic"])

    def synthesized_codes(self, data: ArealData, joint: xr.DataArray) -> dict[str, tuple[Any, np.ndarray]]:
        """The label of every dataset as codes: ``{label: (levels, codes)}``, ``codes`` of dimensions
        ``(synthetic, item)`` over ``levels`` (the release gate measures these, no data frame)."""
        records = data.records
        label = records.variables[records.synthesize_index[0]]
        return {label: (records.levels[label], joint.transpose("synthetic", "item").to_numpy())}

    def describe(self) -> dict[str, Any]:
        """The public description of the model written to ``release/model.json`` (no estimates)."""
        p = self.priors
        return {
            "synthesizer": self.name,
            "paper": "Hu & Savitsky, Bayesian Data Synthesis and Disclosure Risk Quantification (Section 2.2)",
            "model": {
                "counts": "c_i^(b) ~ Poisson(lambda_i^(b)) for every label i and pattern b, zeros included (eq. 7)",
                "log_rates": "log lambda_i^(b) ~ Normal(mu + theta*_z + phi*_z' X^(b), 1 / tau_lambda) (eq. 8)",
                "clusters": f"z_i^(b) ~ Categorical(rho), truncated stick breaking with K = {self.K} (eq. 9)",
                "K": self.K,
                "priors": {
                    "stick": "Beta(1, alpha)",
                    "alpha": f"Gamma(shape {p.a_alpha:g}, rate {p.b_alpha:g})",
                    "theta*_k": "Normal(0, 1 / tau_theta) (eq. 10)",
                    "phi*_k": "MVN(mu_phi, diag(sigma) Omega diag(sigma)) (eq. 11)",
                    "mu_phi": "MVN(0, I / tau_phi)",
                    "Omega": f"LKJ({p.lkj_eta:g})",
                    "sigma": f"half-t({p.sigma_nu:g}, 0, {p.sigma_scale:g})",
                    "mu": "Normal(0, 1 / tau_mu) (eq. 12)",
                    "precisions": {
                        name: f"Gamma(shape {getattr(p, name)[0]:g}, rate {getattr(p, name)[1]:g})"
                        for name in ("tau_theta", "tau_phi", "tau_mu", "tau_lambda")
                    },
                },
            },
            "computation": self._computation(),
            "synthesis": {
                "label": "p_i^(b) = lambda_i^(b) / sum_i lambda_i^(b), one label per record of pattern b (eq. 13-14)",
                "datasets": "each synthetic dataset uses one posterior draw, draws spaced far apart",
            },
            **self._structural_zeros(),
        }

    def _computation(self) -> dict[str, Any]:
        integral = (f"each log rate integrated out by an adaptive trapezoid rule on a Laplace-scaled grid "
                    f"({self.quadrature_nodes} nodes)")  # fmt: skip
        after = "; labels and log rates then drawn exactly from their conditional posterior for each draw used"
        if self.sampler == "gibbs":
            return {
                "sampler": "partially collapsed Gibbs sampler (the cells' allocations to components by multinomial "
                "draws, label swaps, alpha with the sticks integrated out, each occupied component's coefficients by "
                "independence Metropolis-Hastings at the mode, tau_lambda and Sigma_phi by slice sampling, the rest "
                f"conjugate), {integral}{after}",
                "settings": self.settings.to_dict(),
            }
        sampler = ("NUTS (nutpie) with the labels z summed out" if self.labels == "marginal" else
                   "NUTS (PyMC) within Gibbs: the labels z drawn exactly from their full conditional between NUTS "
                   "steps of the other parameters")  # fmt: skip
        return {
            "sampler": f"{sampler} and {integral}{after}",
            "parameterization": self.parameterization,
            "labels": self.labels,
            "centred_components": self.centred_components,
            "settings": self.settings.to_dict(),
        }

    def _structural_zeros(self) -> dict[str, Any]:
        if not self.structural_zeros:
            return {}
        method = (
            "truncated model: the (pattern, label) cells the rules make impossible have their count fixed at zero, "
            "left out of the Poisson likelihood (eq. 7), and probability zero in eq. (13); no rejection, no cost"
        )
        return {"structural_zeros": structural_zeros_dict(self.structural_zeros, method)}
