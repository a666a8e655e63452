"""Attribute disclosure risk by importance sampling, for any synthesizer with discrete sensitive values.

The intruder of Hawala, Reiter & Wang (Section 3) knows the model ``M``, the released synthetic datasets
``D~ = (D~(1), ..., D~(m))`` and, in the worst case, every confidential value except the one of item ``t``
(``A = Y_-t``). For each candidate value ``c`` of item ``t`` they compute (eq. 3, 5)

    rho_t^c = P(y_t = c | D~, A, M)  ∝  P(y_t = c | A, M) * prod_l P(D~(l) | D_t^c, M),

``D_t^c`` being the data with ``y_t`` replaced by ``c``, and guess the ``c`` of largest ``rho_t^c``.

Importance weights (the printed eq. 7 is garbled; derived here). ``P(D~(l) | D_t^c, M)`` is an expectation
over ``theta ~ p(theta | D_t^c)``. The posterior draws ``theta_s ~ p(theta | D)`` serve as proposals. The
two posteriors share the prior and every likelihood term but item ``t``'s, so

    p(theta | D_t^c) / p(theta | D)  ∝  p(y_t = c | theta) / p(y_t = y_t^obs | theta),

i.e. ``log w_s(c) = log p(c | theta_s) - log p(y_t^obs | theta_s)``; the unknown normalising constants
cancel in the self-normalised estimate (eq. 4)

    P(D~(l) | D_t^c, M)  ≈  sum_s wbar_s(c) p(D~(l) | theta_s),     wbar_s = w_s / sum_s' w_s'.

For the flow model ``log w_s(c) = (c - y_t^obs) log lambda_t^(s) + log y_t^obs! - log c!``: the sum over
``h`` in the printed eq. 7 should run over the draws ``s``. The weights are Pareto-smoothed (PSIS) and
their k-hat reported: above 0.7 the estimate for that item and candidate cannot be trusted (compare with
:func:`exact_attribute_risk`, which refits the model).

The release likelihood ``p(D~(l) | theta_s)``. By default only item ``t``'s own term is kept (the paper's
eq. 8): ``p(y~_t(l) | theta_s)``. Keeping every item's term (``release_likelihood="full"``) is the exact
expectation of eq. 6, but its log varies across draws by the order of the square root of the number of
items, so one draw takes all the weight and the estimate degenerates; eq. 8 is what the paper computes and
what this module does by default.

References
----------
.. [1] Hawala, S., Reiter, J. P., & Wang, Q. *Synthesizing truncated count data for confidentiality*. U.S. Census
    Bureau and Duke University, manuscript (undated; its latest reference is of 2010).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import logsumexp

import bayessdc.models.progress as progress
from bayessdc.models.base import stack_draws
from bayessdc.synthesis import streams
from bayessdc.synthesis.streams import Stream

from .psis import pareto_smoothed_log_weights

__all__ = [
    "AttributeRiskAssessor",
    "attribute_risk",
    "attribute_risk_summary",
    "exact_attribute_risk",
    "guessed_correctly",
    "intruder_guess",
    "log_weighted_sum",
    "refit_attribute_risk",
    "thinned",
    "unlearned_share",
]


def _prior_log(prior: xr.DataArray | None, n_items: int, n_candidates: int) -> np.ndarray:
    if prior is None:
        return np.full((n_items, n_candidates), -np.log(n_candidates))
    values = np.asarray(prior.transpose(*[d for d in ("item", "candidate") if d in prior.dims]), dtype=float)
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("the intruder's prior must be finite and non-negative")
    values = np.broadcast_to(values, (n_items, n_candidates))
    with np.errstate(divide="ignore"):
        return np.log(values / values.sum(axis=-1, keepdims=True))


def _positions(values: xr.DataArray, candidates: np.ndarray, what: str) -> np.ndarray:
    lookup = {v: k for k, v in enumerate(candidates.tolist())}
    flat = np.asarray(values).ravel().tolist()
    try:
        pos = np.array([lookup[v] for v in flat], dtype=np.int64)
    except KeyError as err:
        raise ValueError(f"{what} value {err.args[0]!r} is not among the candidate values") from None
    return pos.reshape(np.shape(values))


def log_weighted_sum(weights: np.ndarray, log_weights: np.ndarray, log_values: np.ndarray) -> np.ndarray:
    """``log sum_s w_s v_s`` over the last axis, for normalised weights ``w = exp(log_weights)`` and ``log v``.

    The same as ``scipy.special.logsumexp(log_weights + log_values, axis=-1)``, computed as a weighted sum of
    ``v / max_s v`` (a matrix product where ``v`` is shared by every candidate, see :func:`_log_weighted_sums`)
    instead of exponentials of every sum: on a pair of 311 cells, 9 candidates and 1,000 draws the five release
    terms took 0.40 of the risk step's 0.91 s through logsumexp. Rows whose sum underflows (the weights sitting
    where ``v`` is below ``1e-250`` of its maximum) are recomputed by ``logsumexp``.

    Parameters
    ----------
    weights, log_weights
        Normalised weights and their logarithms, ``(..., n)``; each row of ``weights`` sums to 1.
    log_values
        ``log v``, broadcastable to ``log_weights``.
    """
    log_values = np.asarray(log_values, dtype=float)
    if weights.ndim >= 2 and log_values.ndim == weights.ndim and log_values.shape[-2:] == (1, weights.shape[-1]):
        return _log_weighted_sums(weights, log_weights, log_values)[..., 0]
    top = log_values.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.exp(log_values - top)
    total = np.einsum("...s,...s->...", weights, np.broadcast_to(scaled, weights.shape))
    top = np.broadcast_to(top[..., 0], total.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(total) + top
    redo = ~(total > 1e-250) | ~np.isfinite(top)
    if redo.any():
        full = np.broadcast_to(log_values, log_weights.shape)
        out[redo] = logsumexp(log_weights[redo] + full[redo], axis=-1)
    return out


def _log_weighted_sums(weights: np.ndarray, log_weights: np.ndarray, log_values: np.ndarray) -> np.ndarray:
    """``log sum_s w_{..cs} v_{..ls}`` for every candidate ``c`` and value row ``l`` (a synthetic dataset).

    :func:`log_weighted_sum` for ``L`` rows of values shared by every candidate, in one matrix product per
    leading index (weights ``(..., candidate, sample)`` times scaled values ``(..., L, sample)``, transposed),
    reading the weights once for all ``L``: the m = 5 release terms of a 30-cell pair took 12 us a cell so,
    19 one dataset at a time. Sums that underflow are recomputed by ``logsumexp``. Returns ``(..., candidate, L)``.
    """
    top = log_values.max(axis=-1, keepdims=True)  # (..., L, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.exp(log_values - top)
    total = np.matmul(weights, np.swapaxes(scaled, -1, -2))  # (..., candidate, L)
    top = np.broadcast_to(np.swapaxes(top, -1, -2), total.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(total) + top
    redo = ~(total > 1e-250) | ~np.isfinite(top)
    if redo.any():
        lead = total.shape[:-2]
        full_weights = np.broadcast_to(log_weights, (*lead, *log_weights.shape[-2:]))
        full_values = np.broadcast_to(log_values, (*lead, *log_values.shape[-2:]))
        for index in zip(*np.nonzero(redo), strict=True):
            *at, c, l = index
            out[index] = logsumexp(full_weights[(*at, c)] + full_values[(*at, l)])
    return out


def attribute_risk(
    candidate_log_prob: xr.DataArray,
    observed: xr.DataArray,
    synthetic: xr.DataArray,
    prior: xr.DataArray | None = None,
    *,
    release_likelihood: Literal["item", "full"] = "item",
    r_eff: float = 1.0,
    relevant: float = 0.01,
    release_log_prob: xr.DataArray | None = None,
) -> xr.Dataset:
    """The intruder's posterior ``rho_t^c`` for every sensitive item, by importance sampling.

    Parameters
    ----------
    candidate_log_prob
        ``log p(y_t = c | theta_s)``, dimensions ``(sample, item, candidate)``, with the candidate values
        as the ``candidate`` coordinate (the synthesizer's ``candidate_log_prob`` hook).
    observed
        The confidential values ``y_t`` (dimension ``item``).
    synthetic
        The released values (dimensions ``(synthetic, item)``), all ``m`` datasets.
    prior
        The intruder's prior over candidates (dimension ``candidate``, optionally ``item``); uniform by
        default (Skinner and Shlomo's recommendation, as in the paper).
    release_likelihood
        ``"item"`` (eq. 8, default) or ``"full"`` (eq. 6, every item's term; see the module docstring).
    r_eff
        Relative efficiency of the posterior draws, for PSIS.
    relevant
        Candidates with ``rho`` at least this large count for ``relevant_khat``.
    release_log_prob
        For synthesizers whose released value of item ``t`` depends on its true value (for example a
        latent class drawn given the record's own values): ``log p(y~_t(l) | theta_s, y_t = c)`` at the
        released values, dimensions ``(synthetic, sample, item, candidate)``. It replaces item ``t``'s
        release term ``log p(y~_t(l) | theta_s)`` of eq. 8, which otherwise is read from
        ``candidate_log_prob`` at the released value. Only with ``release_likelihood="item"``.

    Returns
    -------
    xarray.Dataset
        ``rho`` (item, candidate), ``khat`` (item, candidate; k-hat of the smoothed weights), ``guess``
        (the candidate of largest rho), ``correct`` (the guess is the true value and the maximum is not tied:
        the paper's ``r_t``), ``distance`` (|guess - true value|, the paper's d_t on the count scale),
        ``true_probability`` (rho at the true value), ``max_khat`` (over all candidates) and
        ``relevant_khat`` (over the candidates with ``rho >= relevant``: the weights of far-off candidates,
        ``lambda^(c - y)`` with ``|c - y|`` large, are heavy-tailed, but those candidates carry almost no
        probability; k-hat above 0.7 among the relevant ones means the intruder's posterior itself is
        uncertain). At the observed value the weights are exactly equal and k-hat is ``-inf``.
    """
    # (item, candidate, sample): each row of draws contiguous, as PSIS and the weighted sums read them (a
    # synthesizer whose hook returns this order is not copied)
    lp = candidate_log_prob.transpose("item", "candidate", "sample")
    candidates = lp["candidate"].to_numpy()
    log_p = np.ascontiguousarray(lp.to_numpy(), dtype=float)
    n_items, n_candidates, n_samples = log_p.shape
    observed_pos = _positions(observed.transpose("item"), candidates, "observed")
    synthetic_pos = _positions(synthetic.transpose("synthetic", "item"), candidates, "synthetic")
    if observed_pos.shape != (n_items,) or synthetic_pos.shape[1] != n_items:
        raise ValueError("observed, synthetic and candidate_log_prob must describe the same items")
    if release_likelihood not in ("item", "full"):
        raise ValueError("release_likelihood must be 'item' or 'full'")
    item_axis = np.arange(n_items)

    # log w_s(c) = log p(c | theta_s) - log p(y_obs | theta_s), arranged (item, candidate, sample).
    log_w = log_p - log_p[item_axis, observed_pos][:, None, :]
    smoothed, khat, weights = pareto_smoothed_log_weights(log_w, r_eff=r_eff, normalize=True, return_weights=True)
    del log_w
    # At the observed value the weights are exactly equal (no approximation): no tail to fit.
    khat[item_axis, observed_pos] = -np.inf

    log_rho = _prior_log(prior, n_items, n_candidates).copy()
    if release_log_prob is not None:
        if release_likelihood != "item":
            raise ValueError("release_log_prob needs release_likelihood='item'")
        by_candidate = np.asarray(
            release_log_prob.transpose("synthetic", "item", "candidate", "sample").to_numpy(), dtype=float
        )
        if by_candidate.shape != (synthetic_pos.shape[0], n_items, n_candidates, n_samples):
            raise ValueError("release_log_prob must have dimensions (synthetic, sample, item, candidate) as the rest")
        for l in range(by_candidate.shape[0]):
            # sum_s wbar_s(c) p(y~_t(l) | theta_s, y_t = c), in logs.
            log_rho += log_weighted_sum(weights, smoothed, by_candidate[l])
    else:
        # log p(D~(l) | theta_s), arranged (item, synthetic, sample): item t's own term (eq. 8), or every
        # item's (eq. 6); then sum_l log sum_s wbar_s(c) p(D~(l) | theta_s).
        release = log_p[item_axis[:, None], synthetic_pos.T]
        if release_likelihood == "full":
            release = np.broadcast_to(release.sum(axis=0, keepdims=True), release.shape)
        log_rho += _log_weighted_sums(weights, smoothed, release).sum(axis=-1)
    log_rho -= logsumexp(log_rho, axis=-1, keepdims=True)
    rho = np.exp(log_rho)

    guess_pos = rho.argmax(axis=-1)
    correct = guessed_correctly(rho, observed_pos)
    guess = candidates[guess_pos]
    coords = {"candidate": candidates}
    if "item" in observed.coords:
        coords["item"] = observed["item"].to_numpy()
    return xr.Dataset(
        {
            "rho": (("item", "candidate"), rho),
            "khat": (("item", "candidate"), khat),
            "max_khat": ("item", khat.max(axis=-1)),
            "relevant_khat": ("item", np.where(rho >= relevant, khat, -np.inf).max(axis=-1)),
            "guess": ("item", guess),
            "correct": ("item", correct),
            "distance": ("item", np.abs(guess.astype(float) - candidates[observed_pos].astype(float))),
            "true_probability": ("item", rho[item_axis, observed_pos]),
        },
        coords=coords,
        attrs={"release_likelihood": release_likelihood, "n_samples": n_samples},
    )


def guessed_correctly(rho: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """``r_t`` of eq. 9 for intruder posteriors ``rho`` (..., item, candidate): the largest is at the true
    position ``truth`` (item,) and is not tied."""
    top = rho.max(axis=-1, keepdims=True)
    tied = np.isclose(rho, top, rtol=1e-12, atol=0).sum(axis=-1) > 1
    return (rho.argmax(axis=-1) == truth) & ~tied


def thinned(posterior: xr.Dataset, n_draws: int) -> xr.Dataset:
    """At most ``n_draws`` of the stacked ``posterior``'s draws, evenly spaced over the chains."""
    total = posterior.sizes["sample"]
    if total > n_draws:
        posterior = posterior.isel(sample=np.linspace(0, total - 1, n_draws).round().astype(int))
    return posterior


def intruder_guess(rho: xr.DataArray) -> xr.DataArray:
    """The intruder's best guess per item: the candidate with the largest ``rho``."""
    return rho["candidate"][rho.argmax("candidate")].drop_vars("candidate")


def attribute_risk_summary(
    risk: xr.Dataset,
    unique: Sequence[bool] | np.ndarray | None = None,
    khat_threshold: float = 0.7,
) -> dict[str, Any]:
    """File-level figures of Section 3.2 from per-item results.

    Parameters
    ----------
    risk
        Output of :func:`attribute_risk` (or a concatenation over groups along ``item``).
    unique
        The paper's ``a_t``: items whose identifying units appear only once among the sensitive items.
    khat_threshold
        Items whose largest k-hat exceeds this are counted as unreliable.

    Returns
    -------
    dict
        ``R_all`` (eq. 9), ``R_unq`` (eq. 10; ``None`` without unique items), ``n_items``, ``n_unique``,
        ``d_t`` (mean, quantiles and the count of each distance), ``khat_over_0_7`` (items whose
        ``relevant_khat`` exceeds the threshold; the key keeps its name whatever the threshold),
        ``khat_over_0_7_any_candidate`` (the same over all candidates), ``khat_threshold``,
        ``mean_true_probability``; with the leave-one-out reference (``unlearned_correct`` per item,
        :mod:`bayessdc.risk.unlearned`) ``unlearned``: ``R_all`` and ``R_unq`` of a release that never saw the
        items, each its mean and its range (mean + 1.96 sd of one such release), and ``loo_khat_over_0_7``;
        with ``no_knowledge_correct`` per item, ``no_knowledge``: ``R_all`` and ``R_unq`` of the intruder who
        knows no confidential value (Section 3.1).
    """
    correct = np.asarray(risk["correct"], dtype=bool)
    distance = np.asarray(risk["distance"], dtype=float)
    n = len(correct)
    out: dict[str, Any] = {"n_items": n, "R_all": float(correct.mean()) if n else None}
    if unique is not None:
        a = np.asarray(unique, dtype=bool)
        out["n_unique"] = int(a.sum())
        out["R_unq"] = float(correct[a].mean()) if a.any() else None
    values, counts = np.unique(distance, return_counts=True)
    out["d_t"] = {
        "mean": float(distance.mean()) if n else None,
        "quantiles": {q: float(np.quantile(distance, q)) for q in (0.25, 0.5, 0.75, 0.9)} if n else {},
        "counts": {f"{v:g}": int(c) for v, c in zip(values, counts, strict=True)},
    }
    out["khat_over_0_7"] = int((np.asarray(risk["relevant_khat"]) > khat_threshold).sum())
    out["khat_over_0_7_any_candidate"] = int((np.asarray(risk["max_khat"]) > khat_threshold).sum())
    out["khat_threshold"] = khat_threshold
    out["mean_true_probability"] = float(np.mean(risk["true_probability"])) if n else None
    subsets = {"R_all": np.ones(n, dtype=bool)}
    if unique is not None and np.asarray(unique, dtype=bool).any():
        subsets["R_unq"] = np.asarray(unique, dtype=bool)
    if "unlearned_correct" in risk and n:
        p = np.asarray(risk["unlearned_correct"], dtype=float)
        out["unlearned"] = {name: unlearned_share(p[mask]) for name, mask in subsets.items()}
        out["unlearned"]["loo_khat_over_0_7"] = int((np.asarray(risk["loo_khat"]) > khat_threshold).sum())
    if "no_knowledge_correct" in risk and n:
        guessed = np.asarray(risk["no_knowledge_correct"], dtype=bool)
        out["no_knowledge"] = {name: float(guessed[mask].mean()) for name, mask in subsets.items()}
    return out


def unlearned_share(probabilities: np.ndarray) -> dict[str, float]:
    """The share of items guessed correctly from a release that never saw them, given each item's probability
    of being guessed (independent items): its ``mean``, ``sd`` and ``range`` (mean + 1.96 sd)."""
    p = np.asarray(probabilities, dtype=float)
    mean = float(p.mean())
    sd = float(np.sqrt(np.sum(p * (1 - p))) / len(p))
    return {"mean": mean, "sd": sd, "range": mean + 1.959963984540054 * sd}


def exact_attribute_risk(
    refit_log_prob: Callable[[int, Any], xr.DataArray],
    items: Sequence[int],
    candidate_values: Sequence[Any],
    synthetic: xr.DataArray,
    prior: xr.DataArray | None = None,
) -> xr.DataArray:
    """``rho_t^c`` computed the slow, exact way: refit the model once per item and candidate.

    Parameters
    ----------
    refit_log_prob
        ``refit_log_prob(t, c)`` refits the model to the data with item ``t``'s value replaced by ``c`` and
        returns ``log p(y_t = . | theta_s)`` for the new posterior draws, dimensions ``(sample, candidate)``.
    items
        Positions of the items to check.
    candidate_values
        The candidate values, in the order of the ``candidate`` coordinate.
    synthetic
        Released values, dimensions ``(synthetic, item)``.
    prior
        The intruder's prior (as in :func:`attribute_risk`).

    Returns
    -------
    xarray.DataArray
        ``rho`` with dimensions ``(item, candidate)`` for the chosen items, the release likelihood being
        item ``t``'s own term (eq. 8) as in :func:`attribute_risk`'s default.
    """
    candidates = np.asarray(candidate_values)
    synth = synthetic.transpose("synthetic", "item").to_numpy()
    log_prior = _prior_log(prior, 1, len(candidates))[0] if prior is None or "item" not in prior.dims else None
    rows = []
    with progress.bar(len(items) * len(candidates), "exact attribute risk, refits") as bar:
        for t in items:
            prior_t = log_prior if log_prior is not None else _prior_log(prior.isel(item=[t]), 1, len(candidates))[0]
            log_rho = prior_t.copy()
            released = _positions(xr.DataArray(synth[:, t]), candidates, "synthetic")
            for k, c in enumerate(candidates):
                lp = refit_log_prob(int(t), c).transpose("sample", "candidate").to_numpy()
                n = lp.shape[0]
                # P(D~(l) | D_t^c) = mean_s p(y~_t(l) | theta_s), theta_s ~ p(theta | D_t^c).
                log_rho[k] += sum(logsumexp(lp[:, released[l]]) - np.log(n) for l in range(len(released)))
                bar.advance()
            log_rho -= logsumexp(log_rho)
            rows.append(np.exp(log_rho))
    return xr.DataArray(
        np.array(rows), dims=("item", "candidate"), coords={"item": list(items), "candidate": candidates}, name="rho"
    )


@dataclass(frozen=True)
class AttributeRiskAssessor:
    """Per-group attribute-risk step for the group runner (``GroupTask(assess=...)``).

    Parameters
    ----------
    n_draws
        Posterior draws used as importance-sampling proposals, evenly spaced over the chains.
    prior
        The intruder's prior over candidates (uniform by default).
    release_likelihood
        ``"item"`` (eq. 8) or ``"full"`` (eq. 6), see :func:`attribute_risk`.
    unlearned
        Also each item's probability of a correct guess when its release never saw it (the criterion's
        reference, :func:`bayessdc.risk.unlearned.unlearned_attribute_risk`): columns ``unlearned_correct``
        and ``loo_khat``.
    no_knowledge
        Also the guesses of the intruder who knows no confidential value (Section 3.1,
        :func:`bayessdc.risk.no_knowledge.no_knowledge_attribute_risk`; m refits of the group): column
        ``no_knowledge_correct``.
    """

    n_draws: int = 1000
    prior: xr.DataArray | None = None
    release_likelihood: Literal["item", "full"] = "item"
    unlearned: bool = True
    no_knowledge: bool = False

    def __call__(
        self, synthesizer: Any, idata: Any, data: Any, synthetic: xr.DataArray, rng: np.random.Generator
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Risk of every sensitive item of one group: a per-item table and summary figures."""
        posterior = thinned(stack_draws(idata.posterior), self.n_draws)
        log_prob, observed = synthesizer.candidate_log_prob(posterior, data), synthesizer.observed(data)
        risk = attribute_risk(
            log_prob,
            observed,
            synthetic,
            self.prior,
            release_likelihood=self.release_likelihood,
        )
        table = pd.DataFrame(
            {
                name: risk[name].to_numpy()
                for name in ("guess", "correct", "distance", "true_probability", "max_khat", "relevant_khat")
            }
        )
        if self.unlearned:
            from .unlearned import unlearned_attribute_risk

            reference = unlearned_attribute_risk(
                log_prob, observed, synthetic.sizes["synthetic"], rng, self.prior
            )
            table["unlearned_correct"] = reference["unlearned_correct"].to_numpy()
            table["loo_khat"] = reference["loo_khat"].to_numpy()
        if self.no_knowledge:
            from .no_knowledge import no_knowledge_attribute_risk

            seed = int(rng.integers(2**31))
            guessed = no_knowledge_attribute_risk(synthesizer, data, synthetic, seed, self.n_draws, self.prior)
            table["no_knowledge_correct"] = guessed["correct"].to_numpy()
        return table, {"attribute_risk": attribute_risk_summary(risk)}


def refit_attribute_risk(
    synthesizer: Any,
    data: Any,
    synthetic: xr.DataArray,
    items: Sequence[int],
    seed: int,
    prior: xr.DataArray | None = None,
) -> xr.DataArray:
    """:func:`exact_attribute_risk` for a synthesizer: one refit per chosen item and candidate value.

    The synthesizer must offer ``replace_value(data, item, value)`` (the data with one confidential value
    replaced) besides the contract hooks. Costs ``len(items) * n_candidates`` fits.

    Returns
    -------
    xarray.DataArray
        ``rho`` with dimensions ``(item, candidate)`` for the chosen items.
    """
    candidates = synthesizer.candidates(data)["candidate"].to_numpy()

    def refit(t: int, c: Any) -> xr.DataArray:
        replaced = synthesizer.replace_value(data, t, c)
        fit_seed = streams.integer_seed(seed, Stream.ATTRIBUTE_REFIT, int(t), int(np.searchsorted(candidates, c)))
        posterior = stack_draws(synthesizer.fit(replaced, seed=fit_seed).posterior)
        return synthesizer.candidate_log_prob(posterior, replaced).isel(item=t)

    return exact_attribute_risk(refit, items, candidates, synthetic, prior)
