"""Experiment (not the library's sampler): data-augmentation Gibbs for the DP-areal model, NUTS for the scales.

Below the public API: an experiment with another sampler built from the model's own pieces.

Usage::

    python bench/dp_areal_augmented_gibbs.py 3000 1000 2            # sweeps, burn-in, chains on the CE-like data
    python bench/dp_areal_augmented_gibbs.py 2000 500 1 --simulated  # counts simulated from the model (tau 2)
    python bench/dp_areal_augmented_gibbs.py                         # the same (what ``make bench`` runs)
    python bench/dp_areal_augmented_gibbs.py 2000 200 2 --init-from posterior.nc  # start at another sampler's draws
    python bench/dp_areal_augmented_gibbs.py 2000 200 2 --save-state state.npz    # keep the chains' last states

One sweep: the labels and the log rates drawn jointly given the parameters (labels with the log rate integrated
out, :func:`bayessdc.models.dp_areal.cell_posterior`, then log rates exactly); sticks and alpha (conjugate);
tau_lambda by slice sampling with the log rates integrated out (given the labels), then the log rates again;
every cluster's identified coefficients w_k (conjugate normal given the log rates); the scale hyperparameters
(tau_theta, tau_phi, tau_mu, the LKJ Cholesky covariance) by one PyMC NUTS step every fifth sweep given the
occupied components' w_k, then their mean s (conjugate) and the empty components' w_k from the prior.

Measured here (2026-11-23, a numpy prototype; ``python bench/dp_areal_augmented_gibbs.py 6000 1000 4``, K = 50, CE-like
data, 4 chains on 2 cores): 20-40 ms per sweep when the NUTS step of the scales is cheap, but one chain's NUTS took
631 of its 719 s (deep trees); 967 s wall. NOT converged: max r_hat 1.43 (tau_lambda), 2.07 (expected log rates);
min bulk ESS 8 (tau_lambda), 16 (alpha). The chains' mean tau_lambda 2.0, 2.6, 3.0, 3.5 and occupied components
12-20, the same range as NUTS on the label-marginalised model (2.3 and 3.7 in two chains), so the samplers agree
on where the posterior is but all cross it slowly. Within one chain tau_lambda wanders over 2.3-5.9 in a few
thousand sweeps (integrated autocorrelation about 70 sweeps in a 2 x 1,500 run).

On counts simulated from the model (``--simulated``: 133 labels x 40 patterns, tau_lambda 2, K = 20) a chain of
2,000 sweeps (36 s) covers the true tau_lambda.

An earlier version of this script computed the scales from fresh prior draws instead of the NUTS state (a
``compile_fn`` of Deterministics without ``replace_rvs_by_values``) and settled at tau_lambda 0.7-1.2: any
check of this sampler should start by comparing it with the marginal model, as ``--init-from`` allows.

Printed: wall time, per-chain seconds, bulk ESS and r_hat of alpha, tau_lambda, occupied components and the
expected log rates, per-chain means.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from bayessdc.models import dp_areal as A  # noqa: E402
from bayessdc.models.dpmpm import simulate_ce_like  # noqa: E402

HYPER_EVERY = 5
SIMULATED = ((133, (2, 4, 5)), {"tau_lambda": 2.0, "seed": 3})


def log_gamma_draw(shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``log`` of Gamma(shape, 1) draws, exact for small shapes."""
    shape = np.asarray(shape, float)
    small = shape < 1.0
    out = np.log(rng.standard_gamma(np.where(small, shape + 1.0, shape)))
    u = rng.random(shape.shape)
    return np.where(small, out + np.log(u) / np.where(small, shape, 1.0), out)


def hyper_model(K: int, r: int, V: np.ndarray, R: int, priors: A.DPArealPriors):
    """The scales given the occupied components' w_k and their mean s (PyMC)."""
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model() as model:
        w = pm.Data("w", np.zeros((K, r)))
        s = pm.Data("s", np.zeros(r))
        occupied = pm.Data("occ", np.zeros(K))
        tau_theta = pm.Gamma("tau_theta", alpha=priors.tau_theta[0], beta=priors.tau_theta[1])
        tau_phi = pm.Gamma("tau_phi", alpha=priors.tau_phi[0], beta=priors.tau_phi[1])
        chol, _, _ = pm.LKJCholeskyCov(
            "chol_phi",
            n=R,
            eta=priors.lkj_eta,
            sd_dist=pm.HalfStudentT.dist(nu=priors.sigma_nu, sigma=priors.sigma_scale, shape=R),
            compute_corr=True,
        )
        tau_mu = pm.Gamma("tau_mu", alpha=priors.tau_mu[0], beta=priors.tau_mu[1])
        shared_cov, own_cov = A.identified_covariances(V, tau_theta, tau_phi, tau_mu, chol)
        own_chol = pt.linalg.cholesky(own_cov)
        shared_chol = pt.linalg.cholesky(shared_cov)
        pm.Deterministic("own_chol", own_chol)
        pm.Deterministic("shared_chol", shared_chol)
        dev = pt.linalg.solve_triangular(own_chol, (w - s[None, :]).T, lower=True)
        logdet = pt.log(pt.diag(own_chol)).sum()
        pm.Potential("w_lik", (occupied * (-0.5 * (dev**2).sum(axis=0) - logdet)).sum())
        ds = pt.linalg.solve_triangular(shared_chol, s, lower=True)
        pm.Potential("s_lik", -0.5 * (ds**2).sum() - pt.log(pt.diag(shared_chol)).sum())
    return model


def slice_log_tau(log_density, start: float, rng: np.random.Generator, width: float = 0.3) -> float:
    """One slice-sampling update (stepping out, shrinkage) of ``log tau``, kept within [-7, 7]."""
    level = log_density(start) + np.log(rng.random())
    lo = start - width * rng.random()
    hi = lo + width
    while lo > -7 and log_density(lo) > level:
        lo -= width
    while hi < 7 and log_density(hi) > level:
        hi += width
    while True:
        new = lo + (hi - lo) * rng.random()
        if log_density(new) > level:
            return new
        if new < start:
            lo = new
        else:
            hi = new


def run_chain(
    seed: int,
    sweeps: int,
    burn: int,
    K: int = 50,
    simulated: bool = False,
    verbose: bool = False,
    init: dict | None = None,
):
    import pymc as pm

    rng = np.random.default_rng(seed)
    if simulated:
        frame, _ = A.simulate_areal(*SIMULATED[0], **SIMULATED[1])
        data = A.prepare_areal(frame, "label", [c for c in frame.columns if c != "label"])
    else:
        data = A.prepare_areal(simulate_ce_like(seed=0), "county", ["gender", "income", "age"])
    priors = A.DPArealPriors()
    R = data.design.shape[1]
    V, basis = A.identified_basis(data.design)
    r = V.shape[1]
    B, G = data.counts.shape
    cells = data.counts.ravel().astype(float)
    cell_pattern = np.repeat(np.arange(B), G)
    cell = data.cell_distinct.ravel()
    N = cells.size
    log_fact = special.gammaln(data.distinct_count + 1.0)
    distinct_count = data.distinct_count.astype(float)
    hyper = hyper_model(K, r, V, R, priors)
    with hyper:
        step = pm.NUTS(target_accept=0.85, rng=np.random.default_rng([seed, 1]))  # seeded: the runs reproduce
    point = hyper.initial_point(random_seed=seed)
    names = [v.name for v in hyper.value_vars]
    scales = hyper.compile_fn(
        hyper.replace_rvs_by_values([hyper["own_chol"], hyper["shared_chol"]]),
        inputs=hyper.value_vars,
        on_unused_input="ignore",
        point_fn=False,
    )
    own_chol, shared_chol = scales(*(point[n] for n in names))
    alpha, tau = 1.0, 2.0
    s = shared_chol @ rng.normal(size=r)
    w = s + rng.normal(size=(K, r)) @ own_chol.T
    log_v = np.log(rng.beta(1, alpha, K - 1))
    log_1mv = np.log1p(-np.exp(log_v))
    if init is not None:
        # a state of another sampler: w from the locations, the sticks from rho
        w = np.linalg.lstsq(basis, init["location"].T, rcond=None)[0].T
        alpha, tau = float(init["alpha"]), float(init["tau_lambda"])
        rho = np.maximum(init["rho"], 1e-300)
        remaining = 1.0 - np.concatenate([[0.0], np.cumsum(rho)[:-1]])
        stick = np.clip(rho[:-1] / np.maximum(remaining[:-1], 1e-300), 1e-300, 1.0 - 1e-16)
        log_v, log_1mv = np.log(stick), np.log1p(-stick)
        s = w[:10].mean(axis=0)
    keep = {"alpha": [], "tau_lambda": [], "occupied": [], "expected_log_rate": []}
    start = time.perf_counter()
    nuts_seconds = 0.0
    for it in range(sweeps):
        log_rho = np.concatenate([log_v, [0.0]]) + np.concatenate([[0.0], np.cumsum(log_1mv)])
        location = w @ basis.T
        # (z, x) | parameters
        log_resp, mean = A.cell_posterior(location, np.exp(log_rho), tau, data)
        if it >= burn:
            resp = np.exp(log_resp)
            keep["expected_log_rate"].append((resp * mean).sum(0))
            keep["alpha"].append(alpha)
            keep["tau_lambda"].append(tau)
            log_empty = (data.distinct_weight * np.log1p(-np.minimum(resp, 1 - 1e-12))).sum(1)
            keep["occupied"].append(float((1 - np.exp(log_empty)).sum()))
        cumulative = np.cumsum(np.exp(log_resp), axis=0)
        u = rng.random(N) * cumulative[-1, cell]
        z = np.minimum((cumulative[:, cell] < u[None, :]).sum(0), K - 1)
        # sticks and alpha | z
        n_k = np.bincount(z, minlength=K).astype(float)
        rest = np.cumsum(n_k[::-1])[::-1]
        l1, l2 = log_gamma_draw(1 + n_k[:-1], rng), log_gamma_draw(alpha + rest[1:], rng)
        top = np.maximum(l1, l2)
        total = top + np.log(np.exp(l1 - top) + np.exp(l2 - top))
        log_v, log_1mv = l1 - total, l2 - total
        alpha = rng.gamma(priors.a_alpha + K - 1, 1.0 / (priors.b_alpha - log_1mv.sum()))

        # tau | z, w with the log rates integrated out, then x | z, w, tau
        def log_density(log_tau, location=location, z=z):
            value = A.given_labels_value_and_grad(
                np.ascontiguousarray(location), np.exp(log_tau), z, cell, distinct_count,
                data.distinct_pattern, log_fact, 16, A.HALF_WIDTH, 4,
            )[0]  # fmt: skip
            return value + priors.tau_lambda[0] * log_tau - priors.tau_lambda[1] * np.exp(log_tau)

        tau = float(np.exp(slice_log_tau(log_density, np.log(tau), rng)))
        x = A.draw_poisson_lognormal_log_rate(cells, location[z, cell_pattern], np.full(N, tau), rng)
        # w_k | x, z, tau, s, C
        precision_prior = np.linalg.inv(own_chol @ own_chol.T)
        n_kb, sum_kb = np.zeros((K, B)), np.zeros((K, B))
        np.add.at(n_kb, (z, cell_pattern), 1.0)
        np.add.at(sum_kb, (z, cell_pattern), x)
        precision = precision_prior[None] + tau * np.einsum("kb,bi,bj->kij", n_kb, basis, basis)
        rhs = (precision_prior @ s)[None] + tau * sum_kb @ basis
        factor = np.linalg.cholesky(precision)
        w = np.linalg.solve(precision, rhs[..., None])[..., 0]
        w += np.linalg.solve(np.transpose(factor, (0, 2, 1)), rng.normal(size=(K, r))[..., None])[..., 0]
        occupied = (n_k > 0).astype(float)
        # scales | occupied w_k, s (NUTS)
        tick = time.perf_counter()
        if it % HYPER_EVERY == 0:
            hyper["w"].set_value(w)
            hyper["s"].set_value(s)
            hyper["occ"].set_value(occupied)
            point, _ = step.step(point)
        if it == burn:
            step.stop_tuning()
        nuts_seconds += time.perf_counter() - tick
        own_chol, shared_chol = scales(*(point[n] for n in names))
        # s | occupied w_k, scales; empty w_k | s, scales
        precision_prior = np.linalg.inv(own_chol @ own_chol.T)
        precision_s = np.linalg.inv(shared_chol @ shared_chol.T) + occupied.sum() * precision_prior
        s = np.linalg.solve(precision_s, precision_prior @ (occupied @ w))
        s += np.linalg.solve(np.linalg.cholesky(precision_s).T, rng.normal(size=r))
        empty = occupied == 0
        w[empty] = s + rng.normal(size=(empty.sum(), r)) @ own_chol.T
        if verbose and it % 250 == 0:
            seconds = time.perf_counter() - start
            print(f"{it} {seconds:.1f}s tau {tau:.2f} alpha {alpha:.2f} occupied {int(occupied.sum())}", flush=True)
    final = {"w": w, "s": s, "alpha": alpha, "log_1mv": log_1mv, "tau_lambda": tau, "own_chol": own_chol}
    final["shared_chol"] = shared_chol
    final.update({f"hyper:{name}": point[name] for name in names})
    draws = {k: np.asarray(v) for k, v in keep.items()}
    return draws, time.perf_counter() - start, nuts_seconds, final


def main() -> None:
    import arviz as az
    import xarray as xr

    # sweeps, burn-in, chains; without them (``make bench``) the short simulated check of the docstring
    positional = [a for a in sys.argv[1:4] if a.isdigit()]
    given = len(positional) == 3
    sweeps, burn, chains = map(int, positional) if given else (2000, 500, 1)
    simulated = "--simulated" in sys.argv or not given
    K = 20 if simulated else 50
    inits = [None] * chains
    if "--init-from" in sys.argv:
        # start chain c at the last draw of chain c (modulo their number) of a saved posterior (netCDF)
        posterior = az.from_netcdf(sys.argv[sys.argv.index("--init-from") + 1]).posterior
        K = posterior.sizes["component"]
        inits = [
            {
                name: posterior[name].isel(chain=c % posterior.sizes["chain"], draw=-1).to_numpy()
                for name in ("location", "rho", "alpha", "tau_lambda")
            }
            for c in range(chains)
        ]
    start = time.perf_counter()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(run_chain, seed, sweeps, burn, K, simulated, seed == 1, inits[seed - 1])
            for seed in range(1, chains + 1)
        ]
        results = [f.result() for f in futures]
    wall = time.perf_counter() - start
    draws = {k: np.stack([res[0][k] for res in results]) for k in results[0][0]}
    ds = xr.Dataset({k: (("chain", "draw", *(f"{k}_dim" for _ in range(v.ndim - 2))), v) for k, v in draws.items()})
    ess, r_hat = az.ess(ds), az.rhat(ds)
    figures = {
        "wall_seconds": wall,
        "chain_seconds": [res[1] for res in results],
        "nuts_seconds": [res[2] for res in results],
        "ess_bulk_min": {k: float(ess[k].min()) for k in ds},
        "r_hat_max": {k: float(r_hat[k].max()) for k in ds} if chains > 1 else None,
        "tau_lambda_by_chain": [float(np.mean(res[0]["tau_lambda"])) for res in results],
        "alpha_by_chain": [float(np.mean(res[0]["alpha"])) for res in results],
        "occupied_by_chain": [float(np.mean(res[0]["occupied"])) for res in results],
    }
    print(json.dumps(figures, indent=1))
    if "--save-state" in sys.argv:
        # the last state of every chain, to start other samplers there
        path = sys.argv[sys.argv.index("--save-state") + 1]
        np.savez(path, **{f"{c}/{k}": v for c, res in enumerate(results) for k, v in res[3].items()})


if __name__ == "__main__":
    main()
