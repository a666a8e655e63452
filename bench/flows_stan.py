"""Stan (PyStan 3) as the like-for-like reference for the truncated-Poisson flow model: prints figures, is not a test.

Below the public API: the model's own simulator makes the data Stan fits.

Fits Hawala, Reiter & Wang's model (eq. 1 and Section 2.1) centred, as the paper writes it, to one group
pair -- the first row of ``../shared/ANCHORS.md``: 60 origins x 70 destinations, 1,009 cells with counts
1..7, simulated from the model -- with 4 chains x (1,000 warm-up + 1,000), chains one after another on
one core. Reports compile seconds, sampling wall and CPU seconds, divergences, and (ArviZ, chain x draw)
the minimum bulk ESS and maximum r_hat over every cell's log-rate ``beta_i + gamma_j`` and over the two
precisions ``phi_beta``, ``phi_gamma``, with ESS per wall second and per CPU second.

PyStan 3 is not a dependency of bayessdc: ``.venv/bin/pip install pystan`` to include Stan (it compiles
models with the system g++).

How PyStan 3 uses the cores: ``stan.Model.sample`` posts one fit per chain to the in-process httpstan
server at once, and httpstan runs each in ``httpstan.services_stub.executor``, a
``ProcessPoolExecutor`` with the default ``max_workers = os.cpu_count()`` -- so on this 2-core machine
two chains run at a time in two forked worker processes. :func:`run_stan` swaps in a one-worker
executor for the call, so the chains run one after another in one child process and the figures are per
core; the CPU seconds are those of this process and its children (``getrusage`` SELF + CHILDREN, the
worker is reaped before the second reading).

httpstan caches fits on disk whenever a random seed is given and then returns the cached fit without
sampling; :func:`run_stan` deletes this model's cached fits before and after sampling so that every run
samples. The compiled model is cached too (``~/.cache/httpstan``): a second run reports the build as
cached (``--recompile`` removes this model's build first to time a fresh compile).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/flows_stan.py --seed 0
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import sys
import time
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 - after the thread settings above

SKIP_MESSAGE = "Stan (PyStan 3) is not installed: skipped (pip install pystan to include Stan)"

#: Hawala, Reiter & Wang, eq. (1) and Section 2.1, centred, every precision a precision.
STAN_PROGRAM = """
// Hawala, Reiter & Wang: truncated-Poisson model of one (origin group, destination group) pair.
// eq. (1):     Pr(y_ij = y | 0 <= y_ij <= U) = lambda_ij^y / (y! sum_{r=0}^{U} lambda_ij^r / r!),
//              y_ij = n_ij - 1 (U = 8 in the paper);
// Sec. 2.1:    log lambda_ij = beta_i + gamma_j,
//              beta_i ~ N(mu_beta, phi_beta), gamma_j ~ N(mu_gamma, phi_gamma)   (phi: precisions),
//              mu_beta, mu_gamma ~ N(0, 1/25)                                     (1/25: a precision),
//              phi_beta, phi_gamma ~ Gamma(0.01, 0.01)                            (shape, rate).
// Centred, as written.
data {
  int<lower=1> N;                               // sensitive cells
  int<lower=1> I;                               // origins
  int<lower=1> J;                               // destinations
  int<lower=1> U;                               // largest modelled value (upper)
  array[N] int<lower=1, upper=I> origin;        // origin of each cell (1-based)
  array[N] int<lower=1, upper=J> destination;   // destination of each cell (1-based)
  array[N] int<lower=0, upper=U> y;             // count - 1
  real<lower=0> mu_precision;                   // Sec. 2.1: 1/25
  real<lower=0> phi_shape;                      // Sec. 2.1: 0.01
  real<lower=0> phi_rate;                       // Sec. 2.1: 0.01
}
transformed data {
  vector[U + 1] r;                              // 0..U
  vector[U + 1] log_r_factorial;                // log r!
  vector[N] y_real = to_vector(y);
  real sum_log_y_factorial = 0;                 // sum_ij log y_ij!
  real mu_sd = inv_sqrt(mu_precision);
  for (k in 0:U) {
    r[k + 1] = k;
    log_r_factorial[k + 1] = lgamma(k + 1);
  }
  for (n in 1:N) {
    sum_log_y_factorial += lgamma(y[n] + 1);
  }
}
parameters {
  real mu_beta;
  real mu_gamma;
  real<lower=0> phi_beta;
  real<lower=0> phi_gamma;
  vector[I] beta;
  vector[J] gamma;
}
model {
  vector[N] log_lambda = beta[origin] + gamma[destination];   // Sec. 2.1: log lambda_ij = beta_i + gamma_j
  real log_normaliser = 0;                                     // sum_ij log sum_{r=0}^{U} lambda_ij^r / r!
  mu_beta ~ normal(0, mu_sd);                                  // Sec. 2.1: mu_beta ~ N(0, 1/25)
  mu_gamma ~ normal(0, mu_sd);                                 // Sec. 2.1: mu_gamma ~ N(0, 1/25)
  phi_beta ~ gamma(phi_shape, phi_rate);                       // Sec. 2.1: phi_beta ~ Gamma(.01, .01)
  phi_gamma ~ gamma(phi_shape, phi_rate);                      // Sec. 2.1: phi_gamma ~ Gamma(.01, .01)
  beta ~ normal(mu_beta, inv_sqrt(phi_beta));                  // Sec. 2.1: beta_i ~ N(mu_beta, phi_beta)
  gamma ~ normal(mu_gamma, inv_sqrt(phi_gamma));               // Sec. 2.1: gamma_j ~ N(mu_gamma, phi_gamma)
  for (n in 1:N) {
    log_normaliser += log_sum_exp(log_lambda[n] * r - log_r_factorial);
  }
  // eq. (1), summed over the cells: y log lambda - log y! - log sum_{r=0}^{U} lambda^r / r!
  target += dot_product(y_real, log_lambda) - sum_log_y_factorial - log_normaliser;
}
"""


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its terminated, reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _worker_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of the live worker processes, read with psutil (a cross-check; NaN without psutil)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return math.nan
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:  # pragma: no cover - the worker already exited
            return math.nan
        total += times.user + times.system
    return total


def _stan_data(group: Any, *, phi_shape: float, phi_rate: float, mu_precision: float) -> dict[str, Any]:
    return {
        "N": int(group.n_cells),
        "I": len(group.origins),
        "J": len(group.destinations),
        "U": int(group.upper),
        "origin": (np.asarray(group.origin_index) + 1).astype(int).tolist(),
        "destination": (np.asarray(group.destination_index) + 1).astype(int).tolist(),
        "y": np.asarray(group.y).astype(int).tolist(),
        "mu_precision": float(mu_precision),
        "phi_shape": float(phi_shape),
        "phi_rate": float(phi_rate),
    }


def _delete_cached_fits(model_name: str) -> None:
    """Remove httpstan's cached fits of this model (fits are cached whenever a seed is given)."""
    import httpstan.cache

    shutil.rmtree(httpstan.cache.model_directory(model_name) / "fits", ignore_errors=True)


def run_stan(
    group: Any,
    *,
    phi_shape: float = 0.01,
    phi_rate: float = 0.01,
    mu_precision: float = 1 / 25,
    chains: int = 4,
    draws: int = 1000,
    tune: int = 1000,
    seed: int = 0,
    recompile: bool = False,
) -> dict[str, Any]:
    """Fit the paper's centred model with Stan (NUTS, diagonal mass matrix), chains one after another.

    Parameters
    ----------
    group
        A :class:`bayessdc.models.flows.FlowGroup`.
    phi_shape, phi_rate, mu_precision
        Section 2.1's ``Gamma(0.01, 0.01)`` (shape, rate) and ``1/25`` (a precision).
    chains, draws, tune
        Chains, kept draws and warm-up iterations per chain.
    seed
        Stan's random seed (non-negative).
    recompile
        Remove this model's compiled build from httpstan's cache first, so ``compile_seconds`` is a fresh
        compile.

    Returns
    -------
    dict
        ``compile_seconds``, ``compile_cached``, ``compile_cpu_seconds``, ``sampling_seconds`` (wall),
        ``cpu_seconds`` (this process and its children during sampling), ``workers`` (1),
        ``worker_cpu_seconds`` (the worker's own CPU seconds by psutil, a cross-check), ``divergences``,
        ``min_ess_log_rate``, ``max_rhat_log_rate`` (over all cells' ``beta_i + gamma_j``),
        ``min_ess_precision``, ``min_ess_precision_name``, ``max_rhat_precision`` (``phi_beta``,
        ``phi_gamma``), ``ess_per_second_*`` and ``ess_per_cpu_second_*`` for both minima, ``ess_phi_beta``,
        ``ess_phi_gamma``, ``max_rhat_mu`` (raw ``mu_beta``, ``mu_gamma``: not identified), ``n_cells``.

    Raises
    ------
    ImportError
        PyStan 3 is not installed (the message says ``pip install pystan``).
    """
    try:
        import stan
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(SKIP_MESSAGE) from error
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    import arviz as az
    import httpstan.cache
    import httpstan.models
    import httpstan.services_stub as services_stub

    data = _stan_data(group, phi_shape=phi_shape, phi_rate=phi_rate, mu_precision=mu_precision)
    model_name = httpstan.models.calculate_model_name(STAN_PROGRAM)
    if recompile:
        httpstan.cache.delete_model_directory(model_name)
    compile_cached = model_name in httpstan.cache.list_model_names()

    cpu0, start = _cpu_seconds(), time.perf_counter()
    posterior = stan.build(STAN_PROGRAM, data=data, random_seed=int(seed))
    compile_seconds = time.perf_counter() - start
    compile_cpu = _cpu_seconds() - cpu0

    # httpstan runs every chain in its module-level ProcessPoolExecutor (max_workers = os.cpu_count()):
    # swap in a one-worker pool so the chains run one after another in one child process.
    default_executor = services_stub.executor
    one_core = ProcessPoolExecutor(
        max_workers=1, mp_context=mp.get_context("fork"), initializer=services_stub.init_worker
    )
    services_stub.executor = one_core
    _delete_cached_fits(posterior.model_name)
    try:
        cpu0, start = _cpu_seconds(), time.perf_counter()
        fit = posterior.sample(num_chains=chains, num_samples=draws, num_warmup=tune)
        worker_pids = list(one_core._processes)  # noqa: SLF001 - the pool's worker processes
        worker_cpu = _worker_cpu_seconds(worker_pids)
        one_core.shutdown(wait=True)  # reap the worker so RUSAGE_CHILDREN includes it
        sampling_seconds = time.perf_counter() - start
        cpu_seconds = _cpu_seconds() - cpu0
    finally:
        services_stub.executor = default_executor
        one_core.shutdown(wait=True)
        _delete_cached_fits(posterior.model_name)

    idata = az.from_pystan(posterior=fit, posterior_model=posterior)
    post = idata.posterior
    divergences = int(idata.sample_stats["diverging"].sum())
    beta = post["beta"].to_numpy()  # (chain, draw, origin)
    gamma = post["gamma"].to_numpy()  # (chain, draw, destination)
    log_rate = beta[:, :, group.origin_index] + gamma[:, :, group.destination_index]  # (chain, draw, cell)
    rates = az.from_dict(posterior={"log_rate": log_rate}).posterior
    ess_rate = az.ess(rates, method="bulk")["log_rate"].to_numpy()
    rhat_rate = az.rhat(rates)["log_rate"].to_numpy()
    precisions = post[["phi_beta", "phi_gamma"]]
    ess_prec = az.ess(precisions, method="bulk")
    rhat_prec = az.rhat(precisions)
    ess_phi = {name: float(ess_prec[name]) for name in ("phi_beta", "phi_gamma")}
    min_prec_name = min(ess_phi, key=ess_phi.__getitem__)
    rhat_mu = az.rhat(post[["mu_beta", "mu_gamma"]])

    min_ess_rate = float(ess_rate.min())
    min_ess_prec = ess_phi[min_prec_name]
    return {
        "n_cells": int(group.n_cells),
        "chains": chains,
        "draws": draws,
        "tune": tune,
        "compile_seconds": compile_seconds,
        "compile_cached": compile_cached,
        "compile_cpu_seconds": compile_cpu,
        "sampling_seconds": sampling_seconds,
        "cpu_seconds": cpu_seconds,
        "workers": len(worker_pids),
        "worker_cpu_seconds": worker_cpu,
        "divergences": divergences,
        "min_ess_log_rate": min_ess_rate,
        "max_rhat_log_rate": float(rhat_rate.max()),
        "min_ess_precision": min_ess_prec,
        "min_ess_precision_name": min_prec_name,
        "ess_phi_beta": ess_phi["phi_beta"],
        "ess_phi_gamma": ess_phi["phi_gamma"],
        "max_rhat_precision": float(max(float(rhat_prec[name]) for name in ("phi_beta", "phi_gamma"))),
        "max_rhat_mu": float(max(float(rhat_mu[name]) for name in ("mu_beta", "mu_gamma"))),
        "ess_per_second_log_rate": min_ess_rate / sampling_seconds,
        "ess_per_cpu_second_log_rate": min_ess_rate / cpu_seconds,
        "ess_per_second_precision": min_ess_prec / sampling_seconds,
        "ess_per_cpu_second_precision": min_ess_prec / cpu_seconds,
    }


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min; {os.cpu_count()} cores)"


def _fmt(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if math.isfinite(value) else "n/a"


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
    line = "  ".join(h.ljust(w) if k == 0 else h.rjust(w) for k, (h, w) in enumerate(zip(header, widths, strict=True)))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths, strict=True))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated pair and of Stan")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--recompile", action="store_true", help="time a fresh compile (drop the cached build)")
    args = parser.parse_args(argv)

    try:
        import stan  # noqa: F401
    except ImportError:
        print(SKIP_MESSAGE)
        return 0
    from bayessdc.models.flows.simulate import simulate_group

    group, _ = simulate_group(60, 70, 1009, seed=args.seed)
    counts_low, counts_high = int(group.y.min()) + 1, int(group.y.max()) + 1
    print(
        f"pair: {len(group.origins)} origins x {len(group.destinations)} destinations, {group.n_cells:,} cells, "
        f"counts {counts_low}..{counts_high} (simulate_group(60, 70, 1009, seed={args.seed}))"
    )
    if (counts_low, counts_high) != (1, 7):
        print(f"note: the anchor's pair has counts 1..7; this one has {counts_low}..{counts_high}")
    print(f"load average before: {_load()}", flush=True)

    res = run_stan(
        group, chains=args.chains, draws=args.draws, tune=args.tune, seed=args.seed, recompile=args.recompile
    )

    import httpstan
    import stan

    print(
        f"\nStan via PyStan {stan.__version__} (httpstan {httpstan.__version__}), centred model as written, "
        f"{res['chains']} chains x ({res['tune']:,} warm-up + {res['draws']:,}), one after another in "
        f"{res['workers']} worker process"
    )
    compile_note = " (cached build)" if res["compile_cached"] else ""
    print(
        f"compile {_fmt(res['compile_seconds'])} s{compile_note}, CPU {_fmt(res['compile_cpu_seconds'])} s; "
        f"sampling {_fmt(res['sampling_seconds'])} s wall, {_fmt(res['cpu_seconds'])} s CPU "
        f"(this process + children; CPU/wall {res['cpu_seconds'] / res['sampling_seconds']:.2f}; "
        f"worker alone {_fmt(res['worker_cpu_seconds'])} s by psutil); "
        f"{res['divergences']} divergences"
    )
    _print_table(
        ["quantity", "min bulk ESS", "max r_hat", "ESS/s", "ESS/CPU-s"],
        [
            [
                f"log-rates beta_i + gamma_j (all {res['n_cells']:,})",
                _fmt(res["min_ess_log_rate"], 0),
                _fmt(res["max_rhat_log_rate"], 3),
                _fmt(res["ess_per_second_log_rate"]),
                _fmt(res["ess_per_cpu_second_log_rate"]),
            ],
            [
                f"precisions phi_beta, phi_gamma (min: {res['min_ess_precision_name']})",
                _fmt(res["min_ess_precision"], 0),
                _fmt(res["max_rhat_precision"], 3),
                _fmt(res["ess_per_second_precision"]),
                _fmt(res["ess_per_cpu_second_precision"]),
            ],
        ],
    )
    print(
        f"bulk ESS phi_beta {_fmt(res['ess_phi_beta'], 0)}, phi_gamma {_fmt(res['ess_phi_gamma'], 0)}; "
        f"raw mu_beta, mu_gamma max r_hat {res['max_rhat_mu']:.2f} (not identified)"
    )
    print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
