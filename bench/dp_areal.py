"""Benchmark of the DP-areal synthesizer: wall time, ESS per second, peak memory, on the CE-like data.

Below the public API: times the sampler (``DPArealSynthesizer``), its compiled log density and its ESS per second,
which the pipeline does not report apart.

Usage::

    python bench/dp_areal.py                              # the default fit: 4 chains, identified parameterization
    python bench/dp_areal.py --parameterization noncentred # the equations with every coefficient sampled
    python bench/dp_areal.py --draws 500 --tune 500 --chains 2

Data: the bundled CE-like simulator (n = 6,208 records, 40 patterns of gender x income x age, 133 counties),
K = 50 and the paper's priors. Reference (ANCHORS.md / the issue): the model as written in Stan, 5,320 latent
log rates with the label marginalised, took about 20 s per iteration early in warm-up on this machine (most
of a day for the paper's 4,000 iterations). Target: a converged posterior (r_hat <= 1.01, bulk ESS >= 400,
no divergences on the label-invariant quantities) in under 30 minutes.

Printed: compile time, sampling time, the gate's figures, ESS per second of alpha, tau_lambda, the number of
occupied components and the slowest expected log rate, leapfrog steps and the cost of one gradient, the
post-processing time, the same-run cost of one gradient of the likelihood written naively in PyTensor
(log rates integrated by the same quadrature, autodiff) as a baseline, and the peak memory.

Measured here (2026-11-22, second session, ``python bench/dp_areal.py``, defaults: 4 chains x (1,000 + 1,000),
target_accept 0.9, identified parameterization with the first 10 components centred; load average 1.8 at the
start, the bench alone on the machine afterwards): compile 51 s; sampling 2,455 s (41 min, 471,840 leapfrog steps
after warm-up, mean tree depth 6.3); post-processing 26 s; synthesis of m = 20 datasets 0.26 s; peak memory
1.22 GB. **0 divergent transitions** (556 before the quadrature fix). NOT converged: max r_hat 1.15 and min
bulk ESS 19 (an expected log rate); ESS/s alpha 0.11, tau_lambda 0.018, occupied components 0.05; occupied
components 8-22 (95%), alpha 1.54, tau_lambda 2.71. What is left is slow mixing of the mixture's configuration
(how many components hold the cells, traded against tau_lambda), which NUTS on the label-marginalised model
crosses slowly; see issue 5's closing note.

NUTS within Gibbs (2026-11-23, ``--labels explicit``: the labels are model variables drawn exactly by a Gibbs
step, PyMC's NUTS for the rest, a probe with 2 chains x (400 + 600)): 228 s, 0 divergences, tree depth 7.0 (128
leapfrog steps per iteration, about 0.2 s), but worse mixing than the default: max r_hat 2.2, min ESS 3, r_hat of
tau_lambda 1.25, the chains' tau_lambda ranging over 1.3-3.1. Conditioning on the labels couples them to tau_lambda
and to the cluster locations; not a way forward on its own.

Low-rank mass matrix (2026-11-23, ``--low-rank --chains 2 --draws 300 --tune 300``): stopped after 21 minutes
of sampling, unfinished, where the diagonal mass matrix needs about 5-7 minutes with the same settings; not pursued.

Leading sticks centred (2026-11-24, a trial not kept): the first 10 sticks sampled as ``v_k ~ Beta(1, alpha)``
with the leading components, the trailing ones through ``U_k``, on the reasoning that a non-centred stick
pinned by the data must move with every change of alpha. Same settings as the probe below (2 chains x (300 +
300)): sampling 1,194 s against 427 s, mean tree depth 7.8, max r_hat 2.32, min ESS 2.6 (alpha ESS 98, occupied
35 of 600); one chain took 3 minutes, the other 20. Worse on every figure, as was centring every stick
(2026-11-22); the code was reverted.

Where the mixing is slow (2026-11-23, the default settings with 2 chains x (300 + 300), 427 s): ESS of alpha 12,
of the occupied count 9, of tau_lambda 35 (of 600). The slowest expected log rates are those of small non-zero
counts (counts 1-13: ESS 5-6, r_hat 1.25-1.36), whose shrinkage depends on which components sit near them; the
zero-count pairs have a median ESS of 42 against 89 for the non-zero ones. The slowest rate correlates with alpha
(0.32) and the occupied count (0.29) more than with tau_lambda (0.13): the slow direction is the number and
placement of the components. In the label-marginalised model a component is born or dies only by its stick and
its location moving together through low density, which NUTS does in small steps.

The covariance's funnel, found and removed (2026-11-28, second session; scratch scripts storing nutpie's
unconstrained draws and mass matrices). On the demo's table (4 chains x (500 + 250), target 0.99, seed 0) the
chains whose step size had fallen to 0.007-0.015 (930-970 leapfrog steps per draw, 263 s of sampling) had
adapted inside one row of PyMC's packed Cholesky factor of ``Sigma_phi``: those entries' posterior standard
deviation was 0.04 against 0.18 in the other chains, their posterior scale 24 times their mass matrix's, and the
row's standard deviation had visited 0.000-0.002 (the half-t prior allows it; the likelihood sees most of
``Sigma_phi`` not at all). An off-diagonal entry of the packed factor is bounded by its row's standard deviation,
so a small one squeezes the whole row: a funnel. Sampling the standard deviations and the LKJ partial
correlations as separate variables (:mod:`bayessdc.models.dp_areal.lkj`, the same distribution) gave 130-177
steps per draw in every chain and 55 s of sampling on the same seed. What was left, 1-6 divergences per fit at
0.99 on the tests' and the demo's tables, came from centred components the data leave empty; with none centred
(the default below K = 20 since) six fits on both tables (seeds 0-3) had zero divergences at 0.99, 131-173 steps
per draw, the step sizes 0.040-0.048 in every chain. At 0.95 the demo's table had 4 divergences (70-105 steps).
On the CE-like data (``--chains 2 --draws 300 --tune 300``, load 2-3 from another session): 10 centred, 423 s of
sampling, 153 steps per draw, ESS per second alpha 0.29, tau_lambda 0.14, occupied components 0.17, slowest
expected log rate 0.032, max r_hat 1.11, min ESS 13, 0 divergences; none centred, 481 s, 88 steps per draw, 0.11,
0.063, 0.098, 0.013, r_hat 1.25, min ESS 6. Against the first session's default run above (ESS per second 0.11,
0.018, 0.05) that is 2.6, 7.8 and 3.4 times, but the CE-like table is still far from the issue's 5 minutes:
each chain's draws cost about 0.45 s (153 gradients of 3 ms).

The small tables of the demo and the tests (2026-11-28, scratch scripts; the demo's table of 12 patterns x 40
labels, K = 10, nutpie; the first two runs on an idle machine, the others beside two other sessions, load average
4-8, where only the step counts compare). The cost is the tree depth, and it is a lottery of the chain's seed: at the
demo's settings (4 chains x (500 + 250), target 0.99, the default 5 centred components) the mean leapfrog steps
per draw were 922, 651, 484 and 1,023 (the last chain at the depth limit of 10, step size 0.005 against 0.026 in
the third), 188 s of sampling after a 26 s compile on an idle machine; the demo itself took 502 s here that day
(458 s of sampling) against 200 s in the previous session's fresh clone. At target 0.9, seed 1, 2 chains:
203 and 111 steps, no divergence, 41 s. At target 0.8, seed 3, 2 chains: over 17 CPU-minutes for 2 x 900
iterations, stopped. Fewer centred components on the same seed 3, 4 chains x (300 + 200): 2 centred at target
0.8, 70-104 steps and 12 divergences; 2 centred at 0.95, 148-593 steps (one chain at step size 0.027, the others
0.045-0.068), no divergence; 0 centred at 0.95, 215-383 steps and 20 divergences. The default
``min(10, K // 2)`` centred components (measured on the CE-like data, K = 50, 12-20 occupied) centres about as
many components as the demo's posterior occupies (5.2 of 10), so some centred components are empty and form a
funnel with the covariance; fewer centred components shorten the trees but do not remove the chain-to-chain
lottery, which points at a second funnel not yet found (a diagnostic run storing the mass matrix and
divergences, ``nutpie.sample(..., store_mass_matrix=True, store_divergences=True)``, ran over 25 minutes on
seed 3 and was stopped). Nothing was changed: the defaults and the tests' settings stand.

Before (first session, target 0.95, all components non-centred, the old quadrature): sampling 3,840 s, 556
divergences, max r_hat 1.12, min ESS 26; the divergences came from the quadrature grid missing the mass for
locations far above small counts (fixed: the grid is now centred at the exact mode).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402


def naive_gradient_seconds(data, K: int, repeats: int = 5) -> float:
    """Seconds per value + gradient of the same likelihood written with PyTensor ops and autodiff (C backend)."""
    import pytensor
    import pytensor.tensor as pt

    from bayessdc.models.dp_areal import log_poisson_lognormal

    location, log_rho, tau = pt.dmatrix("location"), pt.dvector("log_rho"), pt.dscalar("tau")
    per_cell = log_poisson_lognormal(
        data.distinct_count[None, :], location[:, data.distinct_pattern], tau, nodes=16, xp=pt
    )
    value = (data.distinct_weight * pt.logsumexp(log_rho[:, None] + per_cell, axis=0)).sum()
    f = pytensor.function([location, log_rho, tau], [value, *pytensor.grad(value, [location, log_rho, tau])])
    rng = np.random.default_rng(0)
    args = (rng.normal(-1, 1.5, (K, data.n_patterns)), np.log(rng.dirichlet(np.ones(K))), 3.0)
    f(*args)
    start = time.perf_counter()
    for _ in range(repeats):
        f(*args)
    return (time.perf_counter() - start) / repeats


def compiled_gradient_seconds(data, K: int, repeats: int = 50) -> float:
    """Seconds per value + gradient of the compiled likelihood kernel alone."""
    from scipy import special

    from bayessdc.models.dp_areal import HALF_WIDTH, mixture_value_and_grad

    rng = np.random.default_rng(0)
    args = (
        rng.normal(-1, 1.5, (K, data.n_patterns)),
        np.log(rng.dirichlet(np.ones(K))),
        3.0,
        data.distinct_count.astype(float),
        data.distinct_pattern,
        data.distinct_weight.astype(float),
        special.gammaln(data.distinct_count + 1.0),
        16,
        HALF_WIDTH,
        4,
    )
    mixture_value_and_grad(*args)
    start = time.perf_counter()
    for _ in range(repeats):
        mixture_value_and_grad(*args)
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--K", type=int, default=50)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--target-accept", type=float, default=0.9)
    parser.add_argument("--centred-components", type=int, default=None)
    parser.add_argument("--parameterization", default="identified")
    parser.add_argument(
        "--labels", default="marginal", choices=("marginal", "explicit"), help="explicit: NUTS within Gibbs (PyMC)"
    )
    parser.add_argument("--low-rank", action="store_true", help="nutpie's low-rank modified mass matrix")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=str, default=None, help="also write the figures to this file")
    args = parser.parse_args()

    from bayessdc.models.dp_areal import COMPILED_MODELS, DPArealSynthesizer, prepare_areal
    from bayessdc.models.dpmpm import simulate_ce_like
    from bayessdc.models.sampling import SamplerSettings

    frame = simulate_ce_like(seed=args.seed)
    data = prepare_areal(frame, "county", ["gender", "income", "age"])
    figures: dict = {
        "records": len(frame),
        "patterns": data.n_patterns,
        "labels": data.n_labels,
        "cells": data.n_patterns * data.n_labels,
        "distinct_pairs": data.n_distinct,
        "K": args.K,
        "parameterization": args.parameterization,
        "label_sampling": args.labels,
        "centred_components": args.centred_components,
        "low_rank_mass_matrix": args.low_rank,
        "load_average_at_start": os.getloadavg()[0],
    }
    figures["kernel_ms_per_gradient"] = 1000 * compiled_gradient_seconds(data, args.K)
    figures["naive_pytensor_ms_per_gradient"] = 1000 * naive_gradient_seconds(data, args.K)
    print(json.dumps(figures, indent=1), flush=True)

    settings = SamplerSettings(
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        target_accept=args.target_accept,
        cores=2,
        low_rank_mass_matrix=args.low_rank,
    )
    synthesizer = DPArealSynthesizer(
        K=args.K,
        settings=settings,
        parameterization=args.parameterization,
        centred_components=args.centred_components,
        labels=args.labels,
    )
    compiled_before = COMPILED_MODELS.compile_seconds
    start = time.perf_counter()
    idata = synthesizer.fit(data, seed=args.seed)
    # the fit compiles through the module's cache, which times the compilation
    figures["compile_seconds"] = COMPILED_MODELS.compile_seconds - compiled_before
    figures["fit_seconds"] = time.perf_counter() - start - figures["compile_seconds"]
    figures["sampling_seconds"] = float(idata.attrs["sampling_seconds"])
    figures["summary_seconds"] = float(idata.attrs["summary_seconds"])
    report = synthesizer.check(idata, data)
    figures.update({f"gate_{k}": v for k, v in report.to_dict().items()})
    steps = int(idata.sample_stats["n_steps"].sum()) if "n_steps" in idata.sample_stats else -1
    figures["leapfrog_steps_after_warmup"] = steps
    depth = "depth" if "depth" in idata.sample_stats else "tree_depth"
    figures["mean_tree_depth"] = float(idata.sample_stats[depth].mean())
    ess = az.ess(idata.posterior[["alpha", "tau_lambda", "occupied", "expected_log_rate"]], method="bulk")
    seconds = figures["sampling_seconds"]
    figures["ess_per_second"] = {
        "alpha": float(ess["alpha"]) / seconds,
        "tau_lambda": float(ess["tau_lambda"]) / seconds,
        "occupied": float(ess["occupied"]) / seconds,
        "slowest_expected_log_rate": float(ess["expected_log_rate"].min()) / seconds,
    }
    pair_ess = ess["expected_log_rate"].to_numpy()
    pair_rhat = az.rhat(idata.posterior[["expected_log_rate"]])["expected_log_rate"].to_numpy()
    zero = data.distinct_count == 0
    figures["median_ess_expected_log_rate"] = {
        "zero_counts": float(np.median(pair_ess[zero])),
        "non_zero_counts": float(np.median(pair_ess[~zero])),
    }
    figures["slowest_expected_log_rates"] = [
        {"pattern": int(data.distinct_pattern[d]), "count": int(data.distinct_count[d]), "ess": float(pair_ess[d]),
         "r_hat": float(pair_rhat[d])}
        for d in np.argsort(pair_ess)[:5]
    ]  # fmt: skip
    occupied = idata.posterior["occupied"].to_numpy().ravel()
    figures["occupied_components_95"] = [float(np.quantile(occupied, q)) for q in (0.025, 0.5, 0.975)]
    figures["alpha_mean"] = float(idata.posterior["alpha"].mean())
    figures["tau_lambda_mean"] = float(idata.posterior["tau_lambda"].mean())
    start = time.perf_counter()
    from bayessdc.synthesis.datasets import draw_synthetic

    draw_synthetic(synthesizer, idata, data, 20, np.random.default_rng(1))
    figures["synthesis_m20_seconds"] = time.perf_counter() - start
    figures["converged_within_30_minutes"] = bool(
        report.passed and figures["compile_seconds"] + figures["fit_seconds"] < 1800
    )
    figures["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()
