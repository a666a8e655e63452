"""The intruder's success against a release that never learned the item judged (leave-one-out).

The reference of the attribute-risk criterion: for each sensitive item ``t``, the released values of ``t``
are drawn from the posterior *without* item ``t`` (``p(theta | Y_-t)``), so that they carry no information
about ``y_t``; the intruder of :mod:`bayessdc.risk.attribute` (Hawala, Reiter & Wang, eq. 3-8: the model, the
m released values of ``t`` and every other confidential value known) reads them as a release and guesses.
The share of items guessed correctly is what the intruder would get from the model and the other items
alone: a release above it has taught the intruder about the items themselves.

Computation, per item, from the posterior draws ``theta_s ~ p(theta | Y)`` already drawn:

* the intruder's weights ``wbar_s(c)`` (PSIS of ``p(c | theta_s) / p(y_t | theta_s)``, as in
  :func:`bayessdc.risk.attribute.attribute_risk`) give, for every candidate ``c`` and released value ``v``,
  ``Q(c, v) = log sum_s wbar_s(c) p(v | theta_s)``; a release of values ``v_1..v_m`` has
  ``log rho(c) = log prior(c) + sum_l Q(c, v_l)`` (eq. 8 summed over the m datasets, eq. 5);
* the leave-one-out posterior ``p(theta | Y_-t)`` is the same draws with weights ``1 / p(y_t | theta_s)``,
  Pareto-smoothed (PSIS-LOO, Vehtari, Gelman & Gabry 2017); its predictive ``q_t(v) = sum_s v_s p(v | theta_s)``;
* each synthetic dataset takes its own posterior draw, so the m released values of an unlearned release are
  independent draws of ``q_t``; ``replicates`` such releases are drawn, and the item's probability of being
  guessed (with no tie, as the paper's ``r_t``) is their share guessed correctly.

The LOO k-hat of each item says whether its leave-one-out posterior can be trusted: above 0.7 the weights
cannot move the posterior far enough from the one that saw the item, and the item's reference is too close
to the release's (the criterion is then lenient for it, never severe). ``tests/risk/test_unlearned.py``
checks the predictive and the probability against a refit without the item.

References
----------
.. [1] Hawala, S., Reiter, J. P., & Wang, Q. *Synthesizing truncated count data for confidentiality*.
.. [2] Vehtari, A., Gelman, A., & Gabry, J. (2017). Practical Bayesian model evaluation using leave-one-out
   cross-validation and WAIC. *Statistics and Computing*, 27, 1413-1432.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from .attribute import _positions, _prior_log, guessed_correctly
from .psis import pareto_smoothed_log_weights

__all__ = ["REPLICATES", "unlearned_attribute_risk"]

#: Unlearned releases drawn per item: the item's probability is known to within 0.035 (one standard error at
#: worst), the mean over a table's items far better.
REPLICATES = 200


def unlearned_attribute_risk(
    candidate_log_prob: xr.DataArray,
    observed: xr.DataArray,
    m: int,
    rng: np.random.Generator,
    prior: xr.DataArray | None = None,
    *,
    replicates: int = REPLICATES,
    r_eff: float = 1.0,
) -> xr.Dataset:
    """Each item's probability of being guessed by the intruder when its release never saw it.

    Parameters
    ----------
    candidate_log_prob
        ``log p(y_t = c | theta_s)``, dimensions ``(sample, item, candidate)`` (the synthesizer's hook); the
        released values of an item are drawn from the same distribution.
    observed
        The confidential values ``y_t`` (dimension ``item``).
    m
        Synthetic datasets in the release (the intruder reads all of them).
    rng
        The random stream of the replicate releases.
    prior
        The intruder's prior over candidates (uniform by default), as in
        :func:`bayessdc.risk.attribute.attribute_risk`.
    replicates
        Unlearned releases drawn per item.
    r_eff
        Relative efficiency of the posterior draws, for PSIS.

    Returns
    -------
    xarray.Dataset
        ``unlearned_correct`` (item): the probability of a correct guess; ``loo_predictive`` (item, candidate):
        ``q_t``; ``loo_khat`` (item): the k-hat of the leave-one-out weights.
    """
    if m < 1 or replicates < 1:
        raise ValueError("m and replicates must be at least 1")
    lp = candidate_log_prob.transpose("item", "candidate", "sample")
    candidates = lp["candidate"].to_numpy()
    log_p = np.ascontiguousarray(lp.to_numpy(), dtype=float)
    n_items, n_candidates, _ = log_p.shape
    truth = _positions(observed.transpose("item"), candidates, "observed")
    items = np.arange(n_items)
    at_truth = log_p[items, truth]  # (item, sample)
    probabilities = np.exp(log_p)

    # The intruder's weights and Q(c, v) = log sum_s wbar_s(c) p(v | theta_s), (item, candidate c, value v).
    _, _, weights = pareto_smoothed_log_weights(
        log_p - at_truth[:, None, :], r_eff=r_eff, normalize=True, return_weights=True
    )
    with np.errstate(divide="ignore"):
        q_matrix = np.log(np.matmul(weights, np.swapaxes(probabilities, 1, 2)))
    del weights

    # Leave-one-out weights 1 / p(y_t | theta_s) and the predictive of an item's released value.
    _, loo_khat, loo = pareto_smoothed_log_weights(
        -at_truth[:, None, :], r_eff=r_eff, normalize=True, return_weights=True
    )
    predictive = np.einsum("is,ivs->iv", loo[:, 0], probabilities)
    predictive /= predictive.sum(axis=1, keepdims=True)

    # Replicate releases: m independent draws of q_t per item, the intruder's posterior of each.
    cumulative = np.cumsum(predictive, axis=1)
    draws = (rng.random((replicates, m, n_items))[..., None] > cumulative[None, None, :, :-1]).sum(axis=-1)
    log_rho = np.broadcast_to(_prior_log(prior, n_items, n_candidates), (replicates, n_items, n_candidates)).copy()
    for l in range(m):
        log_rho += q_matrix[items[None, :], :, draws[:, l]]
    correct = guessed_correctly(np.exp(log_rho - logsumexp(log_rho, axis=-1, keepdims=True)), truth)  # (rep, item)
    coords = {"candidate": candidates}
    if "item" in observed.coords:
        coords["item"] = observed["item"].to_numpy()
    return xr.Dataset(
        {
            "unlearned_correct": ("item", correct.mean(axis=0)),
            "loo_predictive": (("item", "candidate"), predictive),
            "loo_khat": ("item", loo_khat[:, 0]),
        },
        coords=coords,
        attrs={"replicates": replicates, "m": m},
    )
