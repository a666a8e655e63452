"""The one place where bayessdc samples a posterior.

Every synthesizer declares a PyMC model and hands it here. This module

* chooses the NUTS backend (nutpie by default, PyMC's own sampler or numpyro on request),
* seeds every chain from one integer so that the same seed gives the same posterior,
* keeps compiled models for reuse across groups (compilation costs seconds, a small group's sampling
  less than that),
* applies the convergence gate (split r_hat, bulk ESS, divergences) and
* records the sampler settings and the wall time in the returned :class:`arviz.InferenceData`,
* shows the backend's own progress bar when :mod:`bayessdc.progress` allows it (switch on, standard error a
  terminal or a notebook, no bayessdc bar already showing).

The backends were measured on the truncated-Poisson flow model (``bench/flows.py``): nutpie and numpyro
were several times faster than PyMC's own sampler; nutpie needs no JAX and caches compiled models across
groups, so ``backend="auto"`` means nutpie when it is importable, PyMC otherwise.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import arviz as az
import numpy as np
import xarray as xr

import bayessdc.models.progress as progress
import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .diagnostics import split_rhat_and_bulk_ess


def _exact_floating_point() -> None:
    """Compile PyTensor's numba code without fast-math, so that the same seed gives the same posterior.

    With fast-math (PyTensor's default) LLVM may reorder floating-point operations differently when a
    function is compiled afresh and when it is loaded from PyTensor's cache in ``~/.pytensor``: measured on
    the flow model, the gradient differed in the last bit (3.6e-15 of 96) between a cold and a warm cache,
    NUTS trajectories then diverged, and ``bayessdc flows`` with the same seed released different counts on
    a fresh machine and on one that had run it before. Without fast-math the cold and warm gradients are
    bitwise equal, and a logp-and-gradient evaluation of a 60 x 70 flow model took 107 us against 115 us
    with it (``bench/flows.py``'s model, 3,000 evaluations each).
    """
    import pytensor

    pytensor.config.numba__fastmath = False


def _load_numba_dispatch() -> None:
    """Register PyTensor's numba implementations now, in the importing thread, before any thread compiles.

    PyTensor registers them on the first numba compilation, by importing ``pytensor.link.numba.dispatch``,
    whose ``basic`` module is in ``sys.modules`` before the others (elemwise, subtensor, ...) have registered.
    A second thread compiling meanwhile (the flow groups compile their size classes in parallel) found no
    implementation for Add, Sum, Subtensor, Join, ... and ran them in numba's object mode ("Numba will use
    object mode to run ...'s perform method"): every one of them then waits for the GIL at each gradient
    evaluation, 61 ms instead of 26-60 us for the flow demo's largest group, and the flow demo did not end.
    """
    import pytensor.link.numba.dispatch  # noqa: F401


_exact_floating_point()
_load_numba_dispatch()

_log = logging.getLogger(__name__)

Backend = Literal["auto", "nutpie", "pymc", "numpyro"]

__all__ = [
    "Backend",
    "CompiledModelCache",
    "ConvergenceCriteria",
    "ConvergenceError",
    "ConvergenceReport",
    "SamplerSettings",
    "check_convergence",
    "resolve_backend",
    "sample_model",
]


@dataclass(frozen=True)
class SamplerSettings:
    """Settings of one NUTS run.

    Parameters
    ----------
    draws, tune, chains
        Kept draws per chain, warm-up iterations per chain, number of chains.
    cores
        Chains run in parallel on this many threads (nutpie) or processes (PyMC).
    backend
        ``"auto"`` (nutpie if installed, else PyMC), ``"nutpie"``, ``"pymc"`` or ``"numpyro"``.
    target_accept
        NUTS target acceptance rate of the step-size adaptation (every backend; 0.8 is nutpie's own default).
    low_rank_mass_matrix
        nutpie's low-rank modified mass-matrix adaptation (helps strongly correlated posteriors).
    progressbar
        Show the sampler's own progress bar even when bayessdc's progress switch is off (still only on a
        terminal or in a notebook). By default it follows the switch (:mod:`bayessdc.progress`): shown when
        progress is on, standard error is a terminal or a notebook, and no bayessdc bar is already showing.
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    cores: int = 2
    backend: Backend = "auto"
    target_accept: float = 0.8
    low_rank_mass_matrix: bool = False
    progressbar: bool = False

    def __post_init__(self) -> None:
        for name in ("draws", "tune", "chains", "cores"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < (0 if name == "tune" else 1):
                raise ValueError(f"sampler setting {name!r} must be a positive integer, got {value!r}")
        if self.backend not in ("auto", "nutpie", "pymc", "numpyro"):
            raise ValueError(f"unknown NUTS backend {self.backend!r}: use auto, nutpie, pymc or numpyro")
        if not 0.5 <= self.target_accept < 1:
            raise ValueError(f"target_accept must be in [0.5, 1), got {self.target_accept}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dictionary (for JSON and InferenceData attributes)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ConvergenceCriteria:
    """The convergence gate: every monitored quantity must pass all three tests.

    Parameters
    ----------
    max_r_hat
        Largest acceptable rank-normalised split r_hat (Vehtari et al. 2021).
    min_ess_bulk
        Smallest acceptable bulk effective sample size.
    max_divergences
        Largest acceptable number of divergent transitions after warm-up.
    """

    max_r_hat: float = 1.01
    min_ess_bulk: float = 400.0
    max_divergences: int = 0


@dataclass
class ConvergenceReport:
    """Convergence figures of one posterior and whether it passes the gate."""

    max_r_hat: float
    min_ess_bulk: float
    divergences: int
    worst_r_hat: str
    worst_ess_bulk: str
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    sampling_seconds: float | None = None
    #: The quantities the gate judged (posterior variables, then the derived ones), in order.
    monitored: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when r_hat, bulk ESS and divergences all meet the criteria."""
        c = self.criteria
        return (
            np.isfinite(self.max_r_hat)
            and self.max_r_hat <= c.max_r_hat
            and self.min_ess_bulk >= c.min_ess_bulk
            and self.divergences <= c.max_divergences
        )

    @property
    def ess_per_second(self) -> float | None:
        """Minimum bulk ESS per second of sampling wall time (``None`` when the time is unknown)."""
        if not self.sampling_seconds:
            return None
        return self.min_ess_bulk / self.sampling_seconds

    def problems(self) -> list[str]:
        """Plain-language reasons why the gate failed (empty when it passed)."""
        c = self.criteria
        out = []
        if not (np.isfinite(self.max_r_hat) and self.max_r_hat <= c.max_r_hat):
            out.append(f"r_hat {self.max_r_hat:.3f} > {c.max_r_hat} (worst: {self.worst_r_hat})")
        if self.min_ess_bulk < c.min_ess_bulk:
            out.append(f"bulk ESS {self.min_ess_bulk:.0f} < {c.min_ess_bulk:.0f} (worst: {self.worst_ess_bulk})")
        if self.divergences > c.max_divergences:
            out.append(f"{self.divergences} divergent transitions")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures: ``max_r_hat``, ``min_ess_bulk``, ``divergences``, ``passed`` and the rest."""
        return {
            "max_r_hat": float(self.max_r_hat),
            "min_ess_bulk": float(self.min_ess_bulk),
            "divergences": int(self.divergences),
            "worst_r_hat": self.worst_r_hat,
            "worst_ess_bulk": self.worst_ess_bulk,
            "passed": bool(self.passed),
            "sampling_seconds": self.sampling_seconds,
            "criteria": dataclasses.asdict(self.criteria),
        }


class ConvergenceError(RuntimeError):
    """Raised when a posterior fails the convergence gate and the caller did not allow it.

    Attributes
    ----------
    report
        The gate's report (its ``problems()`` make the message).
    diagnostics
        The run's posteriors and figures, for a notebook without an output folder (``None`` outside the
        pipeline).
    fitted, identity
        The run's fit and identity, which ``bsd.synthesize(..., resume=error)`` takes up (``None`` outside the
        pipeline).
    """

    def __init__(
        self, report: Any, what: str = "posterior", hint: str = "", failure: str = "did not converge", advice: str = "",
        *, diagnostics: Any = None, fitted: Any = None, identity: dict[str, Any] | None = None,
    ) -> None:
        self.report = report
        self.diagnostics, self.fitted, self.identity = diagnostics, fitted, identity
        advice = advice or "Sample longer (draws=, tune=)"
        super().__init__(
            f"{what} {failure}: {'; '.join(report.problems())}. {advice} "
            "or pass allow_unconverged=True to write outputs anyway (recorded in the outputs)."
            + (f" {hint}" if hint else "")
        )


def resolve_backend(backend: Backend) -> str:
    """Return the concrete backend for ``backend``, checking that it is installed."""
    if backend == "auto":
        return "nutpie" if importlib.util.find_spec("nutpie") is not None else "pymc"
    if backend == "nutpie" and importlib.util.find_spec("nutpie") is None:
        raise ValueError("backend 'nutpie' is not installed: pip install nutpie")
    if backend == "numpyro" and importlib.util.find_spec("numpyro") is None:
        raise ValueError("backend 'numpyro' is not installed: pip install numpyro")
    return backend


class CompiledModelCache:
    """Compiled models kept for reuse, keyed by whatever makes two models share compiled code.

    A model module chooses the key (for example padded dimension sizes) and gives a function that builds
    the model to compile on a miss. One cache lives in each process: dask workers each keep their own.
    """

    def __init__(self) -> None:
        self._compiled: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self.compile_seconds = 0.0
        self.misses = 0
        self.hits = 0

    def get(self, key: Hashable, build: Callable[[], Any], backend: str = "nutpie") -> Any:
        """Return the compiled model for ``key``, compiling ``build()`` on the first request.

        Threads asking for the same key wait for one compilation; other keys compile in parallel.
        """
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key in self._compiled:
                with self._lock:
                    self.hits += 1
                return self._compiled[key]
            start = time.perf_counter()
            compiled = _compile(build(), backend)
            with self._lock:
                self.compile_seconds += time.perf_counter() - start
                self.misses += 1
                self._compiled[key] = compiled
            return compiled

    def __len__(self) -> int:
        return len(self._compiled)


_pymc_quiet = {"lock": threading.Lock(), "count": 0, "level": logging.NOTSET}


@contextmanager
def _pymc_messages() -> Iterator[None]:
    """PyMC's own INFO lines ("Sampling 4 chains ...", through the handler PyMC attaches on import) are shown
    only when bayessdc's INFO messages are: held back under ``--quiet`` or ``progress=False``."""
    if _log.isEnabledFor(logging.INFO):
        yield
        return
    pymc_log = logging.getLogger("pymc")
    with _pymc_quiet["lock"]:  # groups sampled at once in threads: the first sets the level, the last restores it
        _pymc_quiet["count"] += 1
        if _pymc_quiet["count"] == 1:
            _pymc_quiet["level"] = pymc_log.level
            pymc_log.setLevel(max(pymc_log.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        with _pymc_quiet["lock"]:
            _pymc_quiet["count"] -= 1
            if _pymc_quiet["count"] == 0:
                pymc_log.setLevel(_pymc_quiet["level"])


def _compile(model: Any, backend: str) -> Any:
    if backend != "nutpie":
        raise ValueError("only nutpie models are compiled ahead of sampling; PyMC compiles in pm.sample")
    import nutpie

    return nutpie.compile_pymc_model(model)


def sample_model(
    model: Any,
    settings: SamplerSettings,
    seed: int,
    *,
    compiled: Any | None = None,
    data: Mapping[str, np.ndarray] | None = None,
    var_names: Iterable[str] | None = None,
    steps: Callable[[Any], list[Any]] | None = None,
) -> az.InferenceData:
    """Sample the posterior of ``model`` with NUTS.

    Parameters
    ----------
    model
        A ``pymc.Model``. Ignored by nutpie when ``compiled`` is given.
    settings
        Draws, warm-up, chains and backend.
    seed
        Seed of the fit: the sampler is seeded by ``integer_seed(seed, "nuts")``
        (:mod:`bayessdc.synthesis.streams`); the same seed gives the same draws.
    compiled
        A nutpie compiled model (from :class:`CompiledModelCache`) to reuse instead of compiling ``model``.
    data
        New values of the model's ``pm.Data`` containers, applied to ``compiled`` before sampling.
    var_names
        Variables to keep in the posterior (default: all free variables and deterministics).
    steps
        Builds step methods for some of the model's variables (called inside the model's context, given the
        model); PyMC assigns NUTS, with the settings' ``target_accept``, to the rest. PyMC backend only.

    Returns
    -------
    arviz.InferenceData
        With ``posterior`` and ``sample_stats``; ``attrs`` hold the backend, the settings, the seed and the
        sampling wall time in seconds (``sampling_seconds``).
    """
    backend = resolve_backend(settings.backend)
    if steps is not None and backend != "pymc":
        raise ValueError(f"custom step methods need the PyMC sampler, not {backend!r}: set backend='pymc'")
    bar = progress.sampler_bars(force=settings.progressbar)
    _log.debug(
        "NUTS (%s): %d chains x (%d warm-up + %d draws), target_accept %s, seed %d",
        backend, settings.chains, settings.tune, settings.draws, settings.target_accept, seed,
    )  # fmt: skip
    sampler_seed = streams.integer_seed(seed, Stream.NUTS)  # the sampler's own stream of the fit's seed
    start = time.perf_counter()
    if backend == "nutpie":
        import nutpie

        if compiled is None:
            compiled = _compile(model, "nutpie")
        if data:
            compiled = compiled.with_data(**data)
        idata = nutpie.sample(
            compiled,
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.cores,
            seed=sampler_seed,
            progress_bar=bar,
            low_rank_modified_mass_matrix=settings.low_rank_mass_matrix,
            target_accept=settings.target_accept,
            save_warmup=False,
        )
    else:
        import pymc as pm

        if data:
            with model:
                pm.set_data(dict(data))
        step = None
        if steps is not None:
            with model:
                step = list(steps(model))
                others = [v for v in model.value_vars if all(v not in s.vars for s in step)]
                if others:
                    step.append(pm.NUTS(others, target_accept=settings.target_accept))
        with _pymc_messages():
            idata = pm.sample(
                step=step,
                draws=settings.draws,
                tune=settings.tune,
                chains=settings.chains,
                cores=min(settings.cores, settings.chains),
                random_seed=sampler_seed,
                progressbar=bar,
                nuts_sampler=backend,
                compute_convergence_checks=False,
                model=model,
                var_names=list(var_names) if var_names is not None else None,
                # the NUTS of explicit steps has its target already (and pm.sample refuses it then)
                **({} if step is not None else {"target_accept": settings.target_accept}),
            )
    seconds = time.perf_counter() - start
    _log.debug("NUTS (%s): sampled in %.1f s", backend, seconds)
    if var_names is not None:
        keep = [v for v in var_names if v in idata.posterior]
        idata.posterior = idata.posterior[keep]
    for group in ("warmup_posterior", "warmup_sample_stats"):
        if group in idata.groups():
            delattr(idata, group)
    idata.attrs.update(
        {
            "sampler_backend": backend,
            "sampler_settings": json.dumps(settings.to_dict()),
            "sampler_seed": int(seed),
            "sampling_seconds": float(seconds),
        }
    )
    return idata


def rank_r_hat(values: xr.DataArray) -> np.ndarray:
    """Rank-normalised split r_hat of every element of ``values`` (``az.rhat``), its degenerate cases decided here.

    ``az.rhat`` is the larger of a bulk r_hat (of the ranks of the split chains) and a tail r_hat (of the ranks
    of their distances from the median), each ``sqrt((B / W + n - 1) / n)`` (Vehtari et al. 2021). ``W``, the
    mean variance within the split chains, is 0 when each split chain is constant, and ``B / W`` is then 0/0 if
    they all hold the same value (a quantity constant over every draw: the DPMPM's occupied components when all
    are in use; the distance from the median of a 0/1 quantity drawn as often 0 as 1) and B/0 otherwise. ArviZ
    warns ("invalid value encountered in scalar divide") and returns NaN, which the gate read as r_hat inf: a
    constant quantity failed it. Such a part is not computed here: it is 1 when constant over every draw (all
    chains agree exactly) and inf when its split chains are each constant at different values (stuck chains).

    Computed by :func:`bayessdc.models.diagnostics.split_rhat_and_bulk_ess` (ArviZ's numbers, bitwise, without
    its loop over the elements in Python).

    Returns
    -------
    numpy.ndarray
        One r_hat per element (the dimensions other than ``chain`` and ``draw``, flattened in order); NaN,
        as ArviZ gives it, for values holding NaN or fewer than 2 chains or 4 draws.
    """
    values = values.transpose("chain", "draw", ...)
    x = values.to_numpy()
    n_chain, n_draw = x.shape[:2]
    x = x.reshape(n_chain, n_draw, int(np.prod(x.shape[2:])))  # (0 elements: -1 cannot say)
    if x.shape[2] == 0:
        return np.empty(0)
    r_hat, _ = split_rhat_and_bulk_ess(x)
    if n_chain >= 2 and n_draw >= 4:
        constant = x.max(axis=(0, 1)) == x.min(axis=(0, 1))
        if constant.any():
            _log.debug("%s: %d element(s) constant over every draw, r_hat 1", values.name, int(constant.sum()))
    return r_hat


def check_convergence(
    idata: az.InferenceData,
    criteria: ConvergenceCriteria | None = None,
    *,
    var_names: Iterable[str] | None = None,
    derived: Mapping[str, xr.DataArray] | None = None,
) -> ConvergenceReport:
    """Apply the convergence gate to a posterior.

    Parameters
    ----------
    idata
        Posterior with ``chain`` and ``draw`` dimensions and ``sample_stats.diverging``.
    criteria
        Thresholds (default r_hat <= 1.01, bulk ESS >= 400, no divergences).
    var_names
        Posterior variables to monitor (default: all). Leave out quantities the likelihood does not
        identify; monitor identified functions of them through ``derived`` instead.
    derived
        Further quantities with ``chain`` and ``draw`` dimensions (for example the log rates of every
        cell), monitored like posterior variables.

    Returns
    -------
    ConvergenceReport
    """
    criteria = criteria or ConvergenceCriteria()
    posterior = idata.posterior
    names = list(var_names) if var_names is not None else list(posterior.data_vars)
    monitored = xr.Dataset({name: posterior[name] for name in names})
    for name, values in (derived or {}).items():
        monitored[name] = values
    worst_r, max_r = "", -np.inf
    worst_e, min_e = "", np.inf
    for name in monitored.data_vars:
        # rank_r_hat's r_hat and az.ess(method="bulk") of every element, in one pass over its draws
        x = monitored[name].transpose("chain", "draw", ...).to_numpy()
        x = x.reshape(x.shape[0], x.shape[1], int(np.prod(x.shape[2:])))
        r_values, e_values = split_rhat_and_bulk_ess(x)
        r_here = np.inf if np.isnan(r_values).any() else float(r_values.max(initial=-np.inf))
        e_here = 0.0 if np.isnan(e_values).any() else float(e_values.min(initial=np.inf))
        if r_here > max_r:
            max_r, worst_r = r_here, name
        if e_here < min_e:
            min_e, worst_e = e_here, name
    divergences = 0
    if "sample_stats" in idata.groups() and "diverging" in idata.sample_stats:
        divergences = int(idata.sample_stats["diverging"].sum())
    seconds = idata.attrs.get("sampling_seconds")
    return ConvergenceReport(
        max_r_hat=float(max_r),
        min_ess_bulk=float(min_e),
        divergences=divergences,
        worst_r_hat=worst_r,
        worst_ess_bulk=worst_e,
        criteria=criteria,
        sampling_seconds=float(seconds) if seconds is not None else None,
        monitored=tuple(str(name) for name in monitored.data_vars),
    )
