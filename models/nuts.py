"""A compiled No-U-Turn sampler for many small posteriors: Stan's algorithm in numba, one chain per call.

What it is: the multinomial NUTS of Stan (Betancourt 2017, "A conceptual introduction to Hamiltonian Monte
Carlo", Appendix A; Stan's ``base_nuts``): trajectories doubled in a random direction, leaves weighted by
``exp(-H)``, uniform (multinomial) sampling within a subtree and biased progressive sampling across doublings,
the generalised no-U-turn criterion on the sharp momenta with Stan's two extra checks across every merge, and
a divergence when the energy error exceeds 1,000. Warm-up is Stan's: dual averaging of the step size towards
``target_accept`` (gamma 0.05, t0 10, kappa 0.75) and a diagonal inverse metric estimated in windows of
25, 50, 100, ... draws after an initial buffer of 75 and before a terminal buffer of 50 (15%/75%/10% of the
warm-up when it is shorter than 150), regularised as ``n/(n+5) var + 1e-3 * 5/(n+5)``, with the step size
re-initialised by Stan's heuristic after each window.

Subtrees are built iteratively, leaf by leaf, with a stack of completed sub-subtrees merged like a binary
counter (two of the same height merge into one of the next), which visits the same merges in the same order
as Stan's recursion. The stack and the current leaf live in work arrays allocated once per chain and written
element by element: allocating them per subtree and per leaf, with row assignments, made a leapfrog step on
a 44-dimensional normal cost 2.7 us instead of 1.9 (the draws are the same to the bit).
``tests/models/test_nuts.py`` checks the sampler against known Gaussian and non-Gaussian posteriors and the
flow model against nutpie.

Why our own sampler (measured, ``bench/flows.py``): the flow synthesizer fits one small posterior per state
pair, 2,601 of them nationally with a median of 45 cells. nutpie spent 75 us per leapfrog step on an
85-cell pair (3.6 s for 4 chains of 2,000 iterations, mean 12 steps) and a second or more of fixed cost per
pair; blackjax's NUTS vectorised over 64 pairs with ``jax.vmap`` (per-pair adaptation) took 0.7 ms per
lockstep leapfrog on the CPU and 25 s to compile. The log density and its gradient written for the model
(:mod:`bayessdc.models.flows.compiled`) and this sampler in one compiled loop cost about 1 us per step on
such a pair and nothing per pair beyond it.

The log density is any numba function ``logp_grad(theta, data) -> (logp, gradient)`` with ``data`` a tuple
of arrays; it is passed as an argument and compiled into the sampler. Every random number comes from the chain's
``numpy.random.Generator`` (``bayessdc.synthesis.streams.rng(seed, "chain", c)``), passed into the compiled chain:
the same seed gives the same draws, at no cost beyond the noise against numba's hidden random state (the
gradient is the cost, not the draws; README, "Measured choices in the code"; ``bench/flows.py`` times the sampler).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

__all__ = ["ChainDraws", "run_chain", "sample_chains"]

_MAX_DELTA_H = 1000.0


@njit(nogil=True, cache=True)
def _kinetic(p: np.ndarray, inv_metric: np.ndarray) -> float:
    return 0.5 * np.sum(p * p * inv_metric)


@njit(nogil=True, cache=True)
def _criterion(p_sharp_minus: np.ndarray, p_sharp_plus: np.ndarray, rho: np.ndarray, extra: np.ndarray) -> bool:
    """Stan's generalised no-U-turn criterion along ``rho + extra``: both ends still move apart."""
    plus = minus = 0.0
    for k in range(rho.size):
        r = rho[k] + extra[k]
        plus += p_sharp_plus[k] * r
        minus += p_sharp_minus[k] * r
    return plus > 0 and minus > 0


@njit(nogil=True, cache=True)
def _log_add_exp(a: float, b: float) -> float:
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + math.log(math.exp(a - top) + math.exp(b - top))


@njit(nogil=True)
def _copy_row(dest, row, src):  # noqa: ANN001, ANN202
    for k in range(src.size):
        dest[row, k] = src[k]


@njit(nogil=True)
def _criterion_rows(sharp_a, row_a, sharp_b, row_b, rho, row_r, extra, row_e):  # noqa: ANN001, ANN202
    """:func:`_criterion` on rows of the work arrays (no views)."""
    plus = minus = 0.0
    for k in range(rho.shape[1]):
        r = rho[row_r, k] + extra[row_e, k]
        plus += sharp_b[row_b, k] * r
        minus += sharp_a[row_a, k] * r
    return plus > 0 and minus > 0


@njit(nogil=True)
def _build_subtree(logp_grad, data, q, p, grad, step, depth, h0, inv_metric, work, rng):  # noqa: ANN001, ANN202
    """``2**depth`` leapfrog steps from ``(q, p)``; merges of equal-height sub-subtrees checked as they complete.

    ``work`` holds the chain's work arrays (:func:`_new_workspace`), reused by every subtree: nothing is
    allocated per leapfrog step but the gradient. Returns ``valid, divergent, n_leapfrog, sum_accept,
    log_weight, proposal (q, logp, grad), rho, p and p_sharp at the first leaf, the last leaf's
    (q, p, grad, p_sharp)``.
    """
    levels, log_w, prop_logp, rho, p_beg, p_sharp_beg, p_end, p_sharp_end, prop_q, prop_grad, leaf = work
    dim = q.size
    top = 0
    n_leapfrog = 0
    sum_accept = 0.0
    logp = 0.0
    half = 0.5 * step
    # leaf[0], leaf[1]: q and p of the current leaf; leaf[2]: its p_sharp
    for k in range(dim):
        leaf[0, k] = q[k]
        leaf[1, k] = p[k]
    q_now = leaf[0]
    p_now = leaf[1]
    sharp = leaf[2]
    for _ in range(1 << depth):
        for k in range(dim):  # leapfrog, written out: no temporaries
            p_half = p_now[k] + half * grad[k]
            p_now[k] = p_half
            q_now[k] = q_now[k] + step * inv_metric[k] * p_half
        logp, grad = logp_grad(q_now, data)
        kinetic = 0.0
        for k in range(dim):
            p_now[k] += half * grad[k]
            kinetic += p_now[k] * p_now[k] * inv_metric[k]
        n_leapfrog += 1
        h = -logp + 0.5 * kinetic
        if math.isnan(h):
            h = np.inf
        if h - h0 > _MAX_DELTA_H:
            return (False, True, n_leapfrog, sum_accept, 0.0, q_now.copy(), logp, grad, rho[0].copy(),
                    p_beg[0].copy(), p_sharp_beg[0].copy(), q_now.copy(), p_now.copy(), grad,
                    p_sharp_end[0].copy())  # fmt: skip
        sum_accept += 1.0 if h0 - h > 0 else math.exp(h0 - h)
        for k in range(dim):
            sharp[k] = inv_metric[k] * p_now[k]
        levels[top] = 0
        log_w[top] = h0 - h
        _copy_row(rho, top, p_now)
        _copy_row(p_beg, top, p_now)
        _copy_row(p_sharp_beg, top, sharp)
        _copy_row(p_end, top, p_now)
        _copy_row(p_sharp_end, top, sharp)
        _copy_row(prop_q, top, q_now)
        _copy_row(prop_grad, top, grad)
        prop_logp[top] = logp
        top += 1
        while top >= 2 and levels[top - 1] == levels[top - 2]:
            a, b = top - 2, top - 1  # a was built first (init subtree), b after it (final subtree)
            persist = _criterion_rows(p_sharp_beg, a, p_sharp_end, b, rho, a, rho, b)
            persist = persist and _criterion_rows(p_sharp_beg, a, p_sharp_beg, b, rho, a, p_beg, b)
            persist = persist and _criterion_rows(p_sharp_end, a, p_sharp_end, b, rho, b, p_end, a)
            if not persist:
                return (False, False, n_leapfrog, sum_accept, 0.0, q_now.copy(), logp, grad, rho[0].copy(),
                        p_beg[0].copy(), p_sharp_beg[0].copy(), q_now.copy(), p_now.copy(), grad,
                        p_sharp_end[0].copy())  # fmt: skip
            log_w_ab = _log_add_exp(log_w[a], log_w[b])
            if math.log(rng.random()) < log_w[b] - log_w_ab:  # uniform within a subtree
                for k in range(dim):
                    prop_q[a, k] = prop_q[b, k]
                    prop_grad[a, k] = prop_grad[b, k]
                prop_logp[a] = prop_logp[b]
            log_w[a] = log_w_ab
            for k in range(dim):
                rho[a, k] += rho[b, k]
                p_end[a, k] = p_end[b, k]
                p_sharp_end[a, k] = p_sharp_end[b, k]
            levels[a] += 1
            top -= 1
    return (True, False, n_leapfrog, sum_accept, log_w[0], prop_q[0].copy(), prop_logp[0], prop_grad[0].copy(),
            rho[0].copy(), p_beg[0].copy(), p_sharp_beg[0].copy(), q_now.copy(), p_now.copy(), grad,
            p_sharp_end[0].copy())  # fmt: skip


@njit(nogil=True)
def _new_workspace(max_depth, dim):  # noqa: ANN001, ANN202
    """The work arrays of :func:`_build_subtree` for trees up to ``max_depth``: a stack of ``max_depth + 1``
    completed sub-subtrees and the current leaf."""
    height = max_depth + 1
    return (
        np.zeros(height, dtype=np.int64), np.zeros(height), np.zeros(height),
        np.zeros((height, dim)), np.zeros((height, dim)), np.zeros((height, dim)), np.zeros((height, dim)),
        np.zeros((height, dim)), np.zeros((height, dim)), np.zeros((height, dim)), np.zeros((3, dim)),
    )  # fmt: skip


@njit(nogil=True)
def _transition(logp_grad, data, q0, logp0, grad0, step_size, inv_metric, max_depth, work, rng):  # noqa: ANN001, ANN202
    """One NUTS transition from ``q0``; returns ``q, logp, grad, depth, n_leapfrog, accept_stat, divergent``."""
    dim = q0.size
    p0 = rng.standard_normal(dim) / np.sqrt(inv_metric)
    h0 = -logp0 + _kinetic(p0, inv_metric)
    q_fwd, p_fwd, g_fwd = q0, p0, grad0
    q_bck, p_bck, g_bck = q0, p0, grad0
    p_sharp_fwd = inv_metric * p0
    p_sharp_bck = p_sharp_fwd
    rho = p0.copy()
    log_w = 0.0
    q_new, logp_new, grad_new = q0, logp0, grad0
    zero = np.zeros(dim)
    depth = 0
    n_leapfrog = 0
    sum_accept = 0.0
    divergent = False
    while depth < max_depth:
        forward = rng.random() > 0.5
        if forward:
            out = _build_subtree(logp_grad, data, q_fwd, p_fwd, g_fwd, step_size, depth, h0, inv_metric, work, rng)
        else:
            out = _build_subtree(logp_grad, data, q_bck, p_bck, g_bck, -step_size, depth, h0, inv_metric, work, rng)
        valid, diverged, n_sub, accept_sub, log_w_sub = out[0], out[1], out[2], out[3], out[4]
        n_leapfrog += n_sub
        sum_accept += accept_sub
        if diverged:
            divergent = True
            break
        if not valid:
            break
        depth += 1
        sub_q, sub_logp, sub_grad, sub_rho = out[5], out[6], out[7], out[8]
        sub_p_beg, sub_p_sharp_beg = out[9], out[10]
        end_q, end_p, end_grad, end_p_sharp = out[11], out[12], out[13], out[14]
        if log_w_sub > log_w or math.log(rng.random()) < log_w_sub - log_w:  # biased progressive
            q_new, logp_new, grad_new = sub_q, sub_logp, sub_grad
        log_w = _log_add_exp(log_w, log_w_sub)
        rho_old = rho
        rho = rho + sub_rho
        if forward:
            far_p_sharp, near_p, near_p_sharp = p_sharp_bck, p_fwd, p_sharp_fwd
            q_fwd, p_fwd, g_fwd, p_sharp_fwd = end_q, end_p, end_grad, end_p_sharp
        else:
            far_p_sharp, near_p, near_p_sharp = p_sharp_fwd, p_bck, p_sharp_bck
            q_bck, p_bck, g_bck, p_sharp_bck = end_q, end_p, end_grad, end_p_sharp
        persist = _criterion(far_p_sharp, end_p_sharp, rho, zero)
        persist = persist and _criterion(far_p_sharp, sub_p_sharp_beg, rho_old, sub_p_beg)
        persist = persist and _criterion(near_p_sharp, end_p_sharp, sub_rho, near_p)
        if not persist:
            break
    accept = sum_accept / n_leapfrog if n_leapfrog else 0.0
    return q_new, logp_new, grad_new, depth, n_leapfrog, accept, divergent


@njit(nogil=True)
def _initial_step_size(logp_grad, data, q, logp, grad, step_size, inv_metric, rng):  # noqa: ANN001, ANN202
    """Stan's heuristic: double or halve the step until one leapfrog's acceptance crosses 0.8."""
    dim = q.size
    direction = 0
    for _ in range(100):
        p = rng.standard_normal(dim) / np.sqrt(inv_metric)
        h0 = -logp + _kinetic(p, inv_metric)
        p1 = p + 0.5 * step_size * grad
        q1 = q + step_size * inv_metric * p1
        logp1, grad1 = logp_grad(q1, data)
        p1 = p1 + 0.5 * step_size * grad1
        h = -logp1 + _kinetic(p1, inv_metric)
        if math.isnan(h):
            h = np.inf
        delta = h0 - h
        if direction == 0:
            direction = 1 if delta > math.log(0.8) else -1
        if direction == 1 and not delta > math.log(0.8):
            break
        if direction == -1 and not delta < math.log(0.8):
            break
        step_size = step_size * 2.0 if direction == 1 else step_size * 0.5
        if step_size > 1e7 or step_size < 1e-12:
            break
    return step_size


@njit(nogil=True, cache=True)
def _windows(tune: int) -> tuple[int, int, int]:
    """Stan's warm-up buffers: (initial buffer, first window, terminal buffer)."""
    init_buffer, base_window, term_buffer = 75, 25, 50
    if init_buffer + base_window + term_buffer > tune:
        init_buffer = int(0.15 * tune)
        term_buffer = int(0.1 * tune)
        base_window = tune - (init_buffer + term_buffer)
    return init_buffer, base_window, term_buffer


@njit(nogil=True)
def run_chain(  # noqa: ANN201
    logp_grad, data, q_init, tune, draws, rng, target_accept, max_depth, step_size_init, inv_metric_init  # noqa: ANN001
):  # fmt: skip
    """One chain: ``tune`` warm-up iterations (step size and diagonal metric adapted) and ``draws`` kept ones.

    With ``step_size_init > 0`` the chain starts from that step size and ``inv_metric_init`` (a chain's
    adapted state, to continue it with ``tune = 0``); otherwise from the unit metric and Stan's heuristic step.
    Returns the draws ``(draws, dim)``, their log densities, tree depths, leapfrog steps, acceptance
    statistics, divergence flags, the adapted step size and the inverse metric.
    """
    dim = q_init.size
    q = q_init.copy()
    logp, grad = logp_grad(q, data)
    if step_size_init > 0:
        inv_metric = inv_metric_init.copy()
        step_size = step_size_init
    else:
        inv_metric = np.ones(dim)
        step_size = _initial_step_size(logp_grad, data, q, logp, grad, 1.0, inv_metric, rng)
    # dual averaging (Stan's stepsize_adaptation)
    gamma, t0, kappa = 0.05, 10.0, 0.75
    mu_da = math.log(10 * step_size)
    s_bar, x_bar, counter = 0.0, 0.0, 0
    # windowed metric adaptation (Stan's windowed_adaptation)
    init_buffer, window_size, term_buffer = _windows(tune)
    next_window = init_buffer + window_size - 1
    n_window = 0
    mean = np.zeros(dim)
    m2 = np.zeros(dim)
    out_q = np.empty((draws, dim))
    out_logp = np.empty(draws)
    out_depth = np.empty(draws, dtype=np.int64)
    out_steps = np.empty(draws, dtype=np.int64)
    out_accept = np.empty(draws)
    out_divergent = np.zeros(draws, dtype=np.bool_)
    work = _new_workspace(max_depth, dim)
    for it in range(tune + draws):
        q, logp, grad, depth, n_leapfrog, accept, divergent = _transition(
            logp_grad, data, q, logp, grad, step_size, inv_metric, max_depth, work, rng
        )
        if it < tune:
            if tune >= 20:
                counter += 1
                eta = 1.0 / (counter + t0)
                s_bar = (1 - eta) * s_bar + eta * (target_accept - min(1.0, accept))
                x = mu_da - s_bar * math.sqrt(counter) / gamma
                x_eta = counter ** (-kappa)
                x_bar = (1 - x_eta) * x_bar + x_eta * x
                step_size = math.exp(x)
                if init_buffer <= it < tune - term_buffer:  # Welford over the window
                    n_window += 1
                    delta = q - mean
                    mean += delta / n_window
                    m2 += delta * (q - mean)
                if it == next_window and it != tune:
                    # Stan's compute_next_window
                    if next_window != tune - term_buffer - 1:
                        window_size *= 2
                        next_window = it + window_size
                        if next_window != tune - term_buffer - 1:
                            if next_window + 2 * window_size >= tune - term_buffer:
                                next_window = tune - term_buffer - 1
                    n = n_window
                    variance = m2 / max(n - 1, 1)
                    inv_metric = (n / (n + 5.0)) * variance + 1e-3 * (5.0 / (n + 5.0))
                    n_window = 0
                    mean[:] = 0.0
                    m2[:] = 0.0
                    step_size = _initial_step_size(logp_grad, data, q, logp, grad, step_size, inv_metric, rng)
                    mu_da = math.log(10 * step_size)
                    s_bar, x_bar, counter = 0.0, 0.0, 0
            if it == tune - 1 and tune >= 20:
                step_size = math.exp(x_bar)
        else:
            k = it - tune
            out_q[k] = q
            out_logp[k] = logp
            out_depth[k] = depth
            out_steps[k] = n_leapfrog
            out_accept[k] = accept
            out_divergent[k] = divergent
    return out_q, out_logp, out_depth, out_steps, out_accept, out_divergent, step_size, inv_metric


@dataclass
class ChainDraws:
    """The kept draws of several chains and their sampler statistics.

    Attributes
    ----------
    position
        ``(chain, draw, dim)`` draws of the unconstrained parameter vector.
    logp
        ``(chain, draw)`` log density at each draw.
    tree_depth, n_steps, accept, diverging
        ``(chain, draw)`` tree depth, leapfrog steps, mean acceptance statistic and divergence flag.
    step_size
        ``(chain,)`` adapted step sizes.
    inv_metric
        ``(chain, dim)`` adapted diagonal inverse metrics.
    """

    position: np.ndarray
    logp: np.ndarray
    tree_depth: np.ndarray
    n_steps: np.ndarray
    accept: np.ndarray
    diverging: np.ndarray
    step_size: np.ndarray
    inv_metric: np.ndarray

    @classmethod
    def adapted_state(cls, last_position: np.ndarray, step_size: np.ndarray, inv_metric: np.ndarray) -> ChainDraws:
        """The state that :func:`sample_chains` needs to continue chains (``resume``): each chain's last draw
        ``(chain, dim)``, step size ``(chain,)`` and inverse metric ``(chain, dim)``; no statistics."""
        last_position = np.asarray(last_position, dtype=np.float64)
        chains = last_position.shape[0]
        empty = np.empty((chains, 0))
        return cls(
            last_position[:, None, :], empty, empty.astype(np.int64), empty.astype(np.int64), empty,
            empty.astype(bool), np.asarray(step_size, dtype=np.float64), np.asarray(inv_metric, dtype=np.float64),
        )  # fmt: skip


def sample_chains(
    runner: Callable[..., Any],
    data: tuple[np.ndarray, ...],
    dim: int,
    *,
    chains: int = 4,
    tune: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    target_accept: float = 0.8,
    max_depth: int = 10,
    cores: int = 1,
    init_radius: float = 2.0,
    resume: ChainDraws | None = None,
) -> ChainDraws:
    """Run ``chains`` NUTS chains of a compiled chain runner.

    Parameters
    ----------
    runner
        ``runner(data, q_init, tune, draws, rng, target_accept, max_depth, step_size, inv_metric)``: a numba
        function that returns
        :func:`run_chain` of the model's compiled ``logp_grad`` (one per model, so that numba caches it on
        disk; for example :func:`bayessdc.models.flows.compiled.run_flow_chain`).
    data
        The tuple of arrays passed to the model's ``logp_grad``.
    dim
        Length of ``theta``.
    chains, tune, draws
        Chains, warm-up iterations and kept draws per chain.
    seed
        Seed of the whole run: chain ``c`` draws its initial values and then its transitions from
        ``bayessdc.synthesis.streams.rng(seed, "chain", c)`` (the same seed, the same draws whatever ``cores``).
    target_accept
        Target of the step-size adaptation.
    max_depth
        Largest tree depth (1,023 leapfrog steps at 10).
    cores
        Chains run at once in threads (the compiled chain releases the GIL).
    init_radius
        Initial values are uniform on ``(-init_radius, init_radius)`` (Stan's default 2).
    resume
        Continue these chains instead (usually with ``tune=0``): chain ``c`` starts from its last draw with its
        adapted step size and metric. The result holds the new draws only. Kept draws of a chain after its
        warm-up come from one fixed Markov kernel, so continuing a chain is the same as having run it longer.

    Returns
    -------
    ChainDraws
    """
    if resume is not None:
        if resume.position.shape[0] != chains:
            raise ValueError(f"resume holds {resume.position.shape[0]} chains, not {chains}")
        if resume.position.shape[-1] != dim or np.shape(resume.inv_metric) != (chains, dim):
            raise ValueError(f"resume's positions and metrics must have {dim} coordinates per chain")
        step = np.asarray(resume.step_size, dtype=float)
        if step.shape != (chains,) or not (np.isfinite(step).all() and (step > 0).all()):
            raise ValueError("resume's step sizes must be one finite positive number per chain")
        metric = np.asarray(resume.inv_metric, dtype=float)
        if not (np.isfinite(metric).all() and (metric > 0).all()):
            raise ValueError("resume's inverse metrics must be finite and positive")
    starts = []
    for c in range(chains):
        generator = streams.rng(seed, Stream.CHAIN, c)  # the chain's one stream: its initial values, then its kernel
        if resume is None:
            init = generator.uniform(-init_radius, init_radius, dim)
            adapted = (0.0, np.ones(dim))
        else:
            init = np.ascontiguousarray(resume.position[c, -1], dtype=np.float64)
            adapted = (float(resume.step_size[c]), np.ascontiguousarray(resume.inv_metric[c], dtype=np.float64))
        starts.append((init, generator, adapted))

    def one(start: tuple[np.ndarray, np.random.Generator, tuple[float, np.ndarray]]) -> tuple:
        init, generator, (step_size, inv_metric) = start
        return runner(data, init, tune, draws, generator, target_accept, max_depth, step_size, inv_metric)

    if cores > 1 and chains > 1:
        with ThreadPoolExecutor(max_workers=min(cores, chains)) as pool:
            results = list(pool.map(one, starts))
    else:
        results = [one(s) for s in starts]
    stacked = [np.stack([r[k] for r in results]) for k in range(8)]
    return ChainDraws(*stacked)
