"""Chains until the figures are certain: the release gate's stopping rule (issue 35).

The release gate (:mod:`bayessdc.synthesis.release_gate`) judges the between-chain standard error of every
release figure against its tolerance, and it falls as ``1 / sqrt(C)``. When the gate fails on precision alone
(too few chains, or a figure's SE above its tolerance, and no divergence), :func:`add_chains_until_certain` runs
the chains it forecasts, ``ceil(margin x C (SE / tolerance)^2)`` (:func:`~bayessdc.synthesis.release_gate.
next_chain_count`), keeps the chains it has and judges again, until the gate passes or the budget of the
recipe's ``gate`` (``max_chains``, ``time_budget``) is spent; then the run is refused with the figures. This is
fixed-width stopping with chains as batches (Jones, Haran, Caffo & Neath 2006; Flegal, Haran & Jones 2008;
Vats, Flegal & Jones 2019); its effect on the chance of passing is simulated in
``bench/chains_until_certain.py`` (see :data:`~bayessdc.synthesis.release_gate.CHAIN_MARGIN`).

Chain ``c`` draws from the stream ``(seed, "chain", c)`` and its gate datasets from ``(seed, "gate", c)``, so a
run that added chains up to ``C`` releases exactly what a run started with ``C`` chains releases.

A recipe takes part by implementing :meth:`bayessdc.pipeline.recipe.Recipe.more_chains`; one that cannot add
chains to a fit (the default) is refused at once, as before.

References
----------
Jones, G. L., Haran, M., Caffo, B. S. & Neath, R. (2006). Fixed-width output analysis for Markov chain Monte
Carlo. *JASA* 101, 1537-1547.
Flegal, J. M., Haran, M. & Jones, G. L. (2008). Markov chain Monte Carlo: can we trust the third significant
figure? *Statistical Science* 23, 250-260.
Vats, D., Flegal, J. M. & Jones, G. L. (2019). Multivariate output analysis for Markov chain Monte Carlo.
*Biometrika* 106, 321-337.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from bayessdc.synthesis.release_gate import CHAIN_MARGIN, StoppingRecord, StoppingRound, next_chain_count

from .recipe import Fitted, Prepared, Recipe

__all__ = ["add_chains_until_certain"]

_log = logging.getLogger(__name__)


def add_chains_until_certain(
    recipe: Recipe,
    prepared: Prepared,
    fitted: Fitted,
    seed: int,
    workdir: Path | None,
    progress: bool,
    started: float,
) -> Fitted:
    """``fitted`` with chains added until the release gate passes or its budget is spent.

    Parameters
    ----------
    recipe, prepared, fitted
        The run's recipe, its prepared input and its fit (returned unchanged when its release gate passed, or
        when no release gate decides it).
    seed, workdir, progress
        As the recipe's ``fit`` took them.
    started
        ``time.perf_counter()`` when the fit began (the time budget counts from it).

    Returns
    -------
    Fitted
        The last fit; its ``release_gate.stopping_rule`` (:class:`~bayessdc.synthesis.release_gate.StoppingRecord`)
        records the rounds (chains judged, forecast, added) and, when the gate still fails, why the rule stopped
        (also added to the refusal's advice).
    """
    policy = getattr(recipe, "gate", None)
    if fitted.release_gate is None or policy is None:
        return fitted
    rounds: list[StoppingRound] = []
    first = fitted.release_gate.chains
    stopped = ""
    while not fitted.diagnostics.passed:
        gate = fitted.release_gate
        chains, needed = gate.chains, gate.chains_needed()
        if gate.divergences:
            stopped = "the sampler diverged: more chains do not remove divergences"
            break
        target = next_chain_count(chains, needed, max_chains=policy.max_chains)
        if target is None:
            if needed is None:
                stopped = "no number of chains meets a zero tolerance"
            elif chains >= policy.max_chains:
                stopped = f"{chains} chains is the budget (max_chains={policy.max_chains}); the gate forecasts {needed}"
            else:
                stopped = f"the gate forecasts {needed} chains, above the budget (max_chains={policy.max_chains})"
            break
        spent = time.perf_counter() - started
        forecast = spent / chains * (target - chains)
        if policy.time_budget is not None and spent + forecast > policy.time_budget:
            stopped = (
                f"{target - chains} more chains are forecast to take {forecast:.0f} s after {spent:.0f} s, beyond the "
                f"time budget (time_budget={policy.time_budget:g})"
            )
            break
        why = ", ".join(gate.failed()) or f"fewer than the gate's minimum of chains ({chains})"
        if progress:
            _log.info(
                "%s", f"release gate: {chains} chains leave the between-chain SE above tolerance ({why}); it forecasts "
                f"{needed} chains: adding {target - chains} (x{CHAIN_MARGIN:g} margin) ...",
                extra={"synthesizer": recipe.name},
            )  # fmt: skip
        more = recipe.more_chains(prepared, fitted, target, seed, workdir, progress)
        if more is None:
            stopped = f"{recipe.name} cannot add chains to a fit"
            break
        rounds.append(StoppingRound(chains, needed, target - chains, tuple(gate.failed())))
        fitted = more
    last = fitted.release_gate.chains
    stopped = stopped if not fitted.diagnostics.passed else ""
    record = StoppingRecord(
        started_with=first, chains=last, rounds=tuple(rounds), max_chains=policy.max_chains,
        time_budget=policy.time_budget, margin=CHAIN_MARGIN, seconds=time.perf_counter() - started, stopped=stopped,
    )  # fmt: skip
    if stopped:
        if rounds or policy.max_chains > first:
            said = f"chains stopped at {last}: {stopped}"
            fitted.advice = f"{fitted.advice}; {said}" if fitted.advice else said
    elif rounds and progress:
        _log.info(
            "%s", f"release gate passed with {last} chains (started with {first}, {len(rounds)} round(s) "
            "added)", extra={"synthesizer": recipe.name},
        )  # fmt: skip
    fitted.release_gate.stopping_rule = record
    return fitted
