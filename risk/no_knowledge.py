"""The intruder who knows no confidential value (Hawala, Reiter & Wang, Section 3.1, ``A`` empty).

The worst-case intruder of :mod:`bayessdc.risk.attribute` knows every confidential value but the one guessed.
An intruder with no knowledge has to impute all of them; the paper's "rough approximation" takes each released
dataset ``D~(l)`` as a draw of the other values and averages the m resulting ``rho_t``. Computed here as written:
the model is refitted to each released dataset (its values taken as the data), ``rho_t^(l)`` is the worst-case
intruder's posterior with that fit's draws as proposals and ``y~_t(l)`` as the item's own value (the same
importance weights, eq. 7 derived), reading all m datasets (eq. 5, 8); the guess is the candidate of largest
``(1/m) sum_l rho_t^(l)``. It costs m refits per group, no more than the release's own fit m times.

The refits are not gated: they are the intruder's computation, not a release, and a fit of a synthetic table
that mixes poorly makes the intruder's guesses noisier, never the release riskier.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from bayessdc.models.base import stack_draws
from bayessdc.synthesis import streams
from bayessdc.synthesis.streams import Stream

from .attribute import _positions, attribute_risk, guessed_correctly, thinned

__all__ = ["no_knowledge_attribute_risk"]


def no_knowledge_attribute_risk(
    synthesizer: Any,
    data: Any,
    synthetic: xr.DataArray,
    seed: int,
    n_draws: int = 1000,
    prior: xr.DataArray | None = None,
) -> xr.Dataset:
    """The no-knowledge intruder's posterior and guess for every item of one group.

    Parameters
    ----------
    synthesizer
        The synthesizer of the release, with the contract hooks (``fit``, ``candidate_log_prob``, ``observed``,
        ``candidates``) and ``replace_values(data, values)`` (the data with every item's value replaced).
    data
        The group's confidential data (its true values judge the guesses).
    synthetic
        The released values, dimensions ``(synthetic, item)``.
    seed
        Seed of the refits (one stream per dataset).
    n_draws
        Posterior draws of each refit used as proposals, evenly spaced.
    prior
        The intruder's prior over candidates (uniform by default).

    Returns
    -------
    xarray.Dataset
        ``rho`` (item, candidate): the mean of the m posteriors; ``correct`` (item): its largest candidate is the
        true value, with no tie.
    """
    candidates = synthesizer.candidates(data)["candidate"].to_numpy()
    released = synthetic.transpose("synthetic", "item")
    rho = np.zeros((released.sizes["item"], len(candidates)))
    for l in range(released.sizes["synthetic"]):
        replaced = synthesizer.replace_values(data, released.isel(synthetic=l).to_numpy())
        fit = synthesizer.fit(replaced, seed=streams.integer_seed(seed, Stream.NO_KNOWLEDGE, l))
        posterior = thinned(stack_draws(fit.posterior), n_draws)
        risk = attribute_risk(
            synthesizer.candidate_log_prob(posterior, replaced), synthesizer.observed(replaced), released, prior
        )
        rho += risk["rho"].to_numpy() / released.sizes["synthetic"]
    truth = _positions(synthesizer.observed(data), candidates, "observed")
    correct = guessed_correctly(rho, truth)
    return xr.Dataset(
        {"rho": (("item", "candidate"), rho), "correct": ("item", correct)}, coords={"candidate": candidates}
    )
