"""Wall time, ESS per second and peak memory of the two-stage spatial synthesizer: exact GP and NNGP.

Below the public API: times each stage's sampler and the paper's simulation apart from the pipeline.

The paper's simulation (Quick, Holan & Wikle, Section 4: tau^2 = 0.0625, sigma^2 = 4, phi = 12.7, mean of
eq. 8, an isolated record at (0.51, 0.01) with w = -4), intercept and the two covariates of eq. (8), both
stages, then m = 20 synthetic datasets from each stage. ESS/s is the smallest bulk ESS over the gated
quantities divided by the stage's sampling time. Targets on this 2-core machine: N = 500 both stages in
under 2 minutes; N = 20,000 in under 15.

* Exact GP (``--approximation exact``, and ``auto`` up to 3,000 records): NUTS (nutpie), 4 chains x (1,000
  warm-up + 2,000 draws); compilation is timed apart (once per process).
* NNGP (``--approximation nngp``, and ``auto`` beyond 3,000 records): 15 neighbours, the grid posterior of
  :mod:`bayessdc.models.spatial.nngp`, 8,000 independent draws (no MCMC, so no warm-up and no
  divergences; r_hat and ESS are those of independent draws). Beyond 3,000 records the simulated ``w``
  comes from an NNGP with 30 neighbours (the exact simulator factors an N x N matrix).

A comma list of sizes runs each in its own process (so that each peak memory is its own).

Measured here (2026-11-22, load average 2-3 from other sessions on the 2 cores)::

    .venv/bin/python bench/spatial.py --n 500,5000,20000            # --approximation auto

    N = 500, exact:  compile 38 s once; unrestricted 99.2 s (sampling 88.6 s, about 1.1 ms per gradient,
                     max r_hat 1.001, min bulk ESS 1,716, 19 ESS/s, no divergences); restricted 4.4 s
                     (330 ESS/s); both stages 103.6 s; + 2 x 20 datasets 104.4 s; peak RSS 650 MB.
    N = 5,000, NNGP: unrestricted 27.4 s (30 phi values, 7,298 (phi, delta) evaluations, 90 neighbour
                     eigendecompositions; max r_hat 1.001, min bulk ESS 7,862, 296 ESS/s); restricted 0.7 s
                     (13,792 ESS/s); both stages 28.0 s; + 2 x 20 datasets 30.8 s; peak RSS 440 MB.
    N = 20,000, NNGP: unrestricted 92.6 s (30 phi values, 8,200 evaluations, 90 eigendecompositions;
                     max r_hat 1.000, min bulk ESS 7,602, 83 ESS/s); restricted 1.4 s (8,173 ESS/s); both
                     stages 94.0 s (target < 900 s); + 2 x 20 datasets 104.1 s; peak RSS 782 MB.

Posterior at N = 20,000 (unrestricted, median and 95% interval): sigma^2 4.63 [3.61, 6.46], tau^2 0.0631
[0.0583, 0.0682], phi 10.7 [7.86, 14.6]. At N = 5,000 (seed 0) tau^2 0.079 [0.064, 0.095] misses 0.0625;
the same data with 30 neighbours give the same interval (it is the dataset, not the approximation), and
seeds 1 and 2 cover it. The N = 500 exact figures of an earlier run at lower load: stage 1 79.5 s, 22 ESS/s.
PyMC's pm.gp.Marginal on the same data (``--reference``): about 38 ms per gradient, about 40 times the
cost of one stage-1 gradient of the exact model here.

    .venv/bin/python bench/spatial.py [--n 500[,5000,...]] [--approximation auto|exact|nngp]
                                      [--neighbours 15] [--grid 60] [--m 20] [--seed 0] [--reference]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from bayessdc.models.sampling import SamplerSettings, check_convergence  # noqa: E402
from bayessdc.models.spatial import (  # noqa: E402
    AUTO_EXACT_LIMIT,
    COMPILED_MODELS,
    SpatialPriors,
    SpatialSynthesizer,
    make_restriction,
    posterior_summary,
    prepare_spatial_data,
    resolve_approximation,
    simulate_spatial,
)
from bayessdc.synthesis.datasets import draw_synthetic  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="500", help="number of records; a comma list runs each in its own process")
    parser.add_argument(
        "--approximation",
        default="auto",
        choices=["exact", "nngp", "auto"],
        help="exact GP, nearest-neighbour GP, or auto (exact up to 3,000 records; default)",
    )
    parser.add_argument("--neighbours", type=int, default=15, help="NNGP neighbours (default 15)")
    parser.add_argument("--grid", type=int, default=60, help="grid values of phi (default 60)")
    parser.add_argument("--m", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also time PyMC's exact marginal GP (pm.gp.Marginal, phi continuous) per gradient with nutpie",
    )
    args = parser.parse_args()
    sizes = [int(v) for v in args.n.split(",")]
    if len(sizes) > 1:  # one process per size, so that each peak memory is its own
        for n in sizes:
            command = [sys.executable, __file__, "--n", str(n), *_passed_on(args)]
            if subprocess.run(command, check=False).returncode:
                return 1
        return 0
    n = sizes[0]
    method = resolve_approximation(args.approximation, n, args.neighbours)
    # the exact GP simulator factors an N x N matrix: beyond 3,000 records w is simulated from an NNGP
    # with 30 neighbours (then the data are not exactly from the exact GP)
    sim_neighbours = None if n <= AUTO_EXACT_LIMIT else 30
    frame, truth = simulate_spatial(n, seed=args.seed, outlier_latent=-4.0, simulation_neighbours=sim_neighbours)
    data = prepare_spatial_data(frame, "response", ("x", "y"), ["d1", "d2"])
    settings = SamplerSettings(draws=2000, tune=1000, chains=4, target_accept=0.95)
    priors = SpatialPriors(n_phi_grid=args.grid)
    common = {"approximation": method, "neighbours": args.neighbours}

    compile_seconds = 0.0
    if method == "exact":  # compile once (a tiny dataset of the same structure): the stages time sampling only
        start = time.perf_counter()
        small, _ = simulate_spatial(30, seed=1)
        warm = prepare_spatial_data(small, "response", ("x", "y"), ["d1", "d2"])
        SpatialSynthesizer(priors, SamplerSettings(draws=10, tune=10, chains=1), approximation="exact").fit(warm, 0)
        compile_seconds = time.perf_counter() - start

    rows = []
    total = time.perf_counter()
    stage_start = time.perf_counter()
    first = SpatialSynthesizer(priors, settings, **common)
    idata1 = first.fit(data, args.seed)
    rows.append(("unrestricted", first, idata1, time.perf_counter() - stage_start))
    stage_start = time.perf_counter()
    restriction = make_restriction(data, idata1)
    second = SpatialSynthesizer(priors, settings, restriction, **common)
    idata2 = second.fit(data, args.seed + 1)
    rows.append(("restricted", second, idata2, time.perf_counter() - stage_start))
    both_stages = time.perf_counter() - total
    rng = np.random.default_rng(args.seed)
    synth_start = time.perf_counter()
    for _, synthesizer, idata, _ in rows:
        draw_synthetic(synthesizer, idata, data, args.m, rng)
    synth_seconds = time.perf_counter() - synth_start
    both = time.perf_counter() - total
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if method == "exact":
        how = f"exact GP, {args.grid} grid values of phi, NUTS 4 chains x (1000 + 2000)"
    else:
        how = f"NNGP, {args.neighbours} neighbours, grid posterior, 8000 independent draws"
    simulated = "exact GP" if sim_neighbours is None else f"NNGP with {sim_neighbours} neighbours"
    print(f"spatial bench: N = {data.n} ({how}); w simulated from the {simulated}")
    if method == "exact":
        print(f"  compile (once per process): {compile_seconds:.1f} s (cache misses {COMPILED_MODELS.misses})")
    for name, synthesizer, idata, seconds in rows:
        report = check_convergence(idata, var_names=synthesizer.convergence_variables())
        sampling = idata.attrs["sampling_seconds"]
        if method == "exact":
            # warm-up steps are not stored: count them at the kept draws' rate (an approximation)
            gradients = int(idata.sample_stats["n_steps"].sum()) * 1.5 if "n_steps" in idata.sample_stats else None
            detail = f", about {1000 * sampling / gradients:.2f} ms per gradient" if gradients else ""
        else:
            detail = (
                f"; {idata.attrs['grid_phi_values']} phi values, {idata.attrs['grid_evaluations']} (phi, delta) "
                f"evaluations, {idata.attrs['grid_eigendecompositions']} neighbour eigendecompositions"
            )
        print(
            f"  {name:<12} wall {seconds:6.1f} s (sampling {sampling:.1f} s{detail}); "
            f"max r_hat {report.max_r_hat:.3f}, min bulk ESS {report.min_ess_bulk:.0f} ({report.worst_ess_bulk}), "
            f"ESS/s {report.min_ess_bulk / sampling:.0f}, divergences {report.divergences}"
        )
    summary = posterior_summary(idata1)
    estimates = ", ".join(
        f"{k} {summary.loc[k, 'median']:.3g} [{summary.loc[k, 'lower']:.3g}, {summary.loc[k, 'upper']:.3g}]"
        for k in ("sigma_sq", "tau_sq", "phi")
    )
    print(f"  unrestricted posterior (truth sigma_sq 4, tau_sq 0.0625, phi 12.7): {estimates}")
    print(f"  at-risk records: {int(restriction.at_risk.sum())}; phi_hat {restriction.phi_hat:.2f}")
    print(f"  m = {args.m} synthetic datasets from each stage: {synth_seconds:.1f} s")
    target = 120 if data.n <= 500 else 900
    print(
        f"  both stages {both_stages:.1f} s, + synthesis {both:.1f} s (target < {target} s); "
        f"peak memory (max RSS) {peak_mb:.0f} MB"
    )
    if args.reference:
        _reference(data, args.seed)
    return 0


def _passed_on(args: argparse.Namespace) -> list[str]:
    out = ["--approximation", args.approximation, "--neighbours", str(args.neighbours), "--grid", str(args.grid)]
    out += ["--m", str(args.m), "--seed", str(args.seed)]
    return out + (["--reference"] if args.reference else [])


def _reference(data, seed: int) -> None:
    """Per-gradient time of the exact GP as PyMC declares it (the ANCHORS.md reference), same data, same run."""
    import pymc as pm

    from bayessdc.models.sampling import sample_model

    with pm.Model() as model:
        beta0 = pm.Normal("beta0", 0, 100)
        sigma = pm.HalfCauchy("sigma", 1.0)
        tau = pm.HalfCauchy("tau", 1.0)
        phi = pm.Uniform("phi", 1.0, 100.0)
        cov = sigma**2 * pm.gp.cov.Matern12(2, ls=1 / phi)  # sigma^2 exp(-phi d)
        gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(beta0), cov_func=cov)
        gp.marginal_likelihood("y", X=data.coords, y=data.y, sigma=tau)
    start = time.perf_counter()
    idata = sample_model(model, SamplerSettings(draws=20, tune=20, chains=2), seed)
    wall = time.perf_counter() - start
    steps = int(idata.sample_stats["n_steps"].sum()) * 2  # warm-up counted at the kept draws' rate
    per_gradient = 1000 * idata.attrs["sampling_seconds"] / steps
    print(f"  reference pm.gp.Marginal (nutpie, 2 chains x (20 + 20)): about {per_gradient:.1f} ms per gradient "
          f"(wall incl. compile {wall:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
