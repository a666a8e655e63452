"""Benchmark of the convergence diagnostics (``bayessdc.models.diagnostics``): prints figures, is not a test.

Below the public API: times the diagnostics kernel itself against ArviZ on the same draws.

The convergence gate computes, for every monitored quantity, ArviZ's rank-normalised split r_hat and bulk ESS.
A national flow run gates about 300,000 quantities (every cell's log-rate). This script times
``split_rhat_and_bulk_ess`` on 300,000 quantities of 4 chains x 1,000 draws, simulated a block of quantities at
a time so that memory stays small, and ``az.rhat`` + ``az.ess(method="bulk")`` on the first 3,000 of them in
the same run (the ratio, and the largest relative difference between the two).

The draws: stationary AR(1) chains, the coefficient of each quantity uniform on (-0.3, 0.7) (antithetic to
well-mixing, as NUTS draws log-rates); 1% of the quantities with coefficient 0.95 (slowly mixing: Geyer's
sequence runs past the directly summed lags, every lag by FFT) and 1% with one chain shifted by one standard
deviation (not converged).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/diagnostics.py
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/diagnostics.py --quantities 30000 --workers 1 2

Prints the wall and CPU seconds of the diagnostics alone (the simulation is timed apart), ArviZ's seconds on
its share and their ratio, the peak memory of the process and the load average (other work on the machine
slows every figure, ArviZ's as well).

Latest run (``bench/diagnostics.py --workers 1 2``, 2 cores, load average 3.0-3.5 from other work throughout)::

    300,000 quantities of 4 chains x 1,000 draws
      simulating them: 31.1 s (not counted below)
      split_rhat_and_bulk_ess, 1 worker(s): 62.8 s wall, 61.1 s CPU (209 us per quantity, 51 ns CPU per draw)
      split_rhat_and_bulk_ess, 2 worker(s): 63.3 s wall, 61.7 s CPU (211 us per quantity, 51 ns CPU per draw)
      peak memory of the process: 0.64 GB; load average 3.1 -> 3.5
    ArviZ on the first 3,000 of them: az.rhat 10.4 s + az.ess(bulk) 6.8 s
      -> 1,720 s (29 min) for 300,000, 27 times the fastest of ours
      largest relative difference: r_hat 0.0e+00, ESS 1.3e-14

(The second worker found no free core there. An earlier version of the code at load ~7: two workers 53 s, one 67 s.)
"""

from __future__ import annotations

import argparse
import os
import resource
import time

# One BLAS thread per process, as the package's sampler sets it.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def simulate(rng, chains: int, draws: int, quantities: int):
    """AR(1) draws (chain, draw, quantity) as described in the module docstring."""
    import numpy as np

    phi = rng.uniform(-0.3, 0.7, quantities)
    slow = rng.random(quantities) < 0.01
    phi[slow] = 0.95
    scale = np.sqrt(1.0 - phi**2)
    x = rng.standard_normal((chains, draws, quantities))
    for t in range(1, draws):  # in place: x[:, t] = phi x[:, t - 1] + sqrt(1 - phi^2) e_t
        x[:, t] *= scale
        x[:, t] += phi * x[:, t - 1]
    apart = rng.random(quantities) < 0.01
    x[-1, :, apart] += 1.0
    return x


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantities", type=int, default=300_000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1_000)
    parser.add_argument("--block", type=int, default=3_000, help="quantities simulated at a time")
    parser.add_argument("--arviz", type=int, default=3_000, help="quantities also given to ArviZ")
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="thread counts to time")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import arviz as az
    import numpy as np
    import xarray as xr

    from bayessdc.models.diagnostics import split_rhat_and_bulk_ess

    load_start = os.getloadavg()
    start = time.perf_counter()
    split_rhat_and_bulk_ess(np.random.default_rng(0).standard_normal((args.chains, args.draws, 4)))
    print(f"first call (numba kernels compiled or loaded from their cache): {time.perf_counter() - start:.1f} s")

    rng = np.random.default_rng(args.seed)
    wall = dict.fromkeys(args.workers, 0.0)
    cpu = dict.fromkeys(args.workers, 0.0)
    simulating = 0.0
    kept = []  # the first quantities and our figures for them, for ArviZ
    done = 0
    while done < args.quantities:
        count = min(args.block, args.quantities - done)
        t0 = time.perf_counter()
        x = simulate(rng, args.chains, args.draws, count)
        simulating += time.perf_counter() - t0
        for workers in args.workers:
            t0, c0 = time.perf_counter(), time.process_time()
            r_hat, ess = split_rhat_and_bulk_ess(x, workers=workers)
            wall[workers] += time.perf_counter() - t0
            cpu[workers] += time.process_time() - c0
        if sum(len(k[0]) for k in kept) < args.arviz:
            take = min(count, args.arviz - sum(len(k[0]) for k in kept))
            kept.append((r_hat[:take], ess[:take], x[:, :, :take].copy()))
        done += count
    peak_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    load_ours = os.getloadavg()

    n_draws = args.chains * args.draws
    print(f"{args.quantities:,} quantities of {args.chains} chains x {args.draws:,} draws")
    print(f"  simulating them: {simulating:.1f} s (not counted below)")
    for workers in args.workers:
        print(
            f"  split_rhat_and_bulk_ess, {workers} worker(s): {wall[workers]:.1f} s wall, {cpu[workers]:.1f} s CPU"
            f" ({wall[workers] / args.quantities * 1e6:.0f} us per quantity,"
            f" {cpu[workers] / args.quantities / n_draws * 1e9:.0f} ns CPU per draw)"
        )
    print(f"  peak memory of the process: {peak_ours:.2f} GB; load average {load_start[0]:.1f} -> {load_ours[0]:.1f}")

    ours_r_hat = np.concatenate([k[0] for k in kept])
    ours_ess = np.concatenate([k[1] for k in kept])
    x = np.concatenate([k[2] for k in kept], axis=2)
    data = xr.Dataset({"v": (("chain", "draw", "quantity"), x)})
    t0 = time.perf_counter()
    arviz_r_hat = az.rhat(data)["v"].to_numpy()
    t_rhat = time.perf_counter() - t0
    t0 = time.perf_counter()
    arviz_ess = az.ess(data, method="bulk")["v"].to_numpy()
    t_ess = time.perf_counter() - t0
    n = x.shape[2]
    arviz_total = (t_rhat + t_ess) / n * args.quantities
    best = min(wall.values())
    print(f"ArviZ on the first {n:,} of them: az.rhat {t_rhat:.1f} s + az.ess(bulk) {t_ess:.1f} s")
    print(
        f"  -> {arviz_total:,.0f} s ({arviz_total / 60:.0f} min) for {args.quantities:,},"
        f" {arviz_total / best:.0f} times the fastest of ours"
    )
    print(
        f"  largest relative difference: r_hat {np.max(np.abs(ours_r_hat / arviz_r_hat - 1)):.1e},"
        f" ESS {np.max(np.abs(ours_ess / arviz_ess - 1)):.1e}"
    )
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
