"""The release gate's stopping rule, simulated: chains added until the figures are certain.

Below the public API: simulates :func:`bayessdc.synthesis.release_gate.next_chain_count` on chain means drawn
without any MCMC, so that the rule's operating characteristics can be read in seconds.

The release gate pools C independent chains and judges the between-chain standard error ``SE = sd(chain means) /
sqrt(C)`` of each figure against its tolerance (:mod:`bayessdc.synthesis.release_gate`). When it fails on
precision alone the pipeline runs the chains it forecasts, ``ceil(margin C (SE / tolerance)^2)``, keeps the chains
it has, and judges again, up to ``max_chains``. Judging again after looking is a sequential test (Jones, Haran,
Caffo & Neath 2006; Flegal, Haran & Jones 2008): the chance of stopping when the estimated SE is by chance small
is higher than for a gate judged once. This script measures that effect.

Chain means are drawn from three distributions with the same between-chain sd sigma (so the true SE at C chains
is ``sigma / sqrt(C)``, and ``C* = ceil((sigma / tolerance)^2)`` chains are truly enough):

* ``normal``: chains that mix (the figure's chain means normal);
* ``two regimes``: chains that do not mix, each stuck for its whole length in one of two regimes of a figure,
  the second with probability 0.2 (a Bernoulli chain mean, plus 10% of sigma of within-regime noise);
* ``rare regime``: the second regime with probability 0.05 (most sets of 8 chains never see it).

For each C* and margin it prints: the chance the gate passes within ``max_chains`` (32), the chance it passes
with too few chains (the final C below C*: true SE above the tolerance), the same chance for a gate judged once
at the same final number of chains (the reference a user who reruns with the advised ``--chains`` gets), the
mean final C and the mean number of rounds (each round is a batch of chains fitted in parallel).

    .venv/bin/python bench/chains_until_certain.py [--replications 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from bayessdc.synthesis.release_gate import next_chain_count


def chain_means(kind: str, sigma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` chain means of between-chain sd ``sigma`` (mean 0 in the normal case)."""
    if kind == "normal":
        return rng.normal(0.0, sigma, size)
    p = {"two regimes": 0.2, "rare regime": 0.05}[kind]
    noise = 0.1 * sigma
    shift = math.sqrt(sigma**2 - noise**2) / math.sqrt(p * (1 - p))  # Bernoulli(p) * shift has sd sqrt(s^2 - noise^2)
    return shift * (rng.random(size) < p) + rng.normal(0.0, noise, size)


def se_of(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / np.sqrt(x.size))


def run_rule(kind: str, sigma: float, margin: float, start: int, max_chains: int, keep: bool,
             rng: np.random.Generator) -> tuple[bool, int, int, int]:
    """One run of the stopping rule: ``(passed, final chains, chains fitted in all, rounds)``. ``keep``: the
    chains fitted are kept and more added (the pipeline's rule); otherwise each round starts afresh with the
    forecast number of chains (a user rerunning with the advised ``--chains``)."""
    x = chain_means(kind, sigma, start, rng)
    spent, rounds = start, 1
    while True:
        se = se_of(x)
        if se <= 1.0:
            return True, x.size, spent, rounds
        target = next_chain_count(x.size, math.ceil(x.size * se**2 - 1e-9), max_chains=max_chains, margin=margin)
        if target is None:
            return False, x.size, spent, rounds
        fresh = chain_means(kind, sigma, target - x.size if keep else target, rng)
        x = np.concatenate([x, fresh]) if keep else fresh
        spent += fresh.size
        rounds += 1


def simulate(kind: str, needed: int, margin: float, keep: bool, reps: int, seed: int) -> dict:
    """The rule run ``reps`` times at a true C* of ``needed`` (tolerance 1, sigma^2 = needed - 0.5): the chance
    it passes, the chance it passes with a true SE more than 10% above the tolerance, mean chains fitted and
    rounds."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(needed - 0.5)
    runs = [run_rule(kind, sigma, margin, 8, 32, keep, rng) for _ in range(reps)]
    passed = np.array([r[0] for r in runs])
    true_se = sigma / np.sqrt([r[1] for r in runs])
    return {
        "pass": passed.mean(), "pass_loose": (passed & (true_se > 1.1)).mean(),
        "spent": float(np.mean([r[2] for r in runs])), "rounds": float(np.mean([r[3] for r in runs])),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replications", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start_time = time.perf_counter()
    print(f"start 8 chains, max 32, {args.replications} replications per row; tolerance 1, sigma^2 = C* - 0.5")
    print("pass: the gate passes within 32 chains; loose: it passes with a true SE more than 1.1 x the tolerance;")
    print("chains: fitted in all (a rerun fits its chains afresh); rounds: batches of chains fitted one after another")
    print(f"{'chain means':<12} {'C*':>3} {'rule':<12} {'pass':>6} {'loose':>6} {'chains':>7} {'rounds':>6}")
    for kind in ("normal", "two regimes", "rare regime"):
        for needed in (6, 12, 21, 28):
            rules = [("rerun 1.0", 1.0, False), ("extend 1.0", 1.0, True), ("extend 1.2", 1.2, True),
                     ("extend 1.5", 1.5, True)]  # fmt: skip
            for label, margin, keep in rules:
                r = simulate(kind, needed, margin, keep, args.replications, args.seed)
                print(f"{kind:<12} {needed:>3} {label:<12} {r['pass']:>6.3f} {r['pass_loose']:>6.3f} "
                      f"{r['spent']:>7.1f} {r['rounds']:>6.2f}")  # fmt: skip
    print(f"wall time {time.perf_counter() - start_time:.1f} s")


if __name__ == "__main__":
    main()
