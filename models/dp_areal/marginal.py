"""The DP-areal model with the labels summed out and the log rates integrated out: the sampler's form.

In eq. (8) the design ``X^(b)`` depends on the pattern only, so given the cluster parameters the counts of one
pattern are independent and identically distributed over labels: the likelihood depends on the data only
through ``n_{b,c}``, the number of labels with count ``c`` in pattern ``b``. Both latent layers of
:func:`bayessdc.models.dp_areal.model.paper_model` are integrated out per cell,

    p(c | b, params) = sum_k rho_k  int Poisson(c | e^x) Normal(x | m_kb, 1 / tau_lambda) dx,

the label ``z`` exactly (a sum over ``K``) and the log rate ``x`` by an adaptive trapezoid rule
(:mod:`bayessdc.models.dp_areal.quadrature`). On the CE-like data that replaces 5,320 latent log rates and
their labels by 350 distinct ``(b, c)`` pairs, so NUTS explores only the ~730 cluster-level parameters. The
labels and log rates are then drawn exactly from their conditional posterior given each draw of the parameters
(:mod:`bayessdc.models.dp_areal.conditionals`), which is a draw from the joint posterior, as the paper's
sampler would give.

:func:`build_model` also offers reparameterizations of ``mu``, ``theta*`` and ``phi*`` that leave the
joint distribution of everything the likelihood sees unchanged (:data:`PARAMETERIZATIONS`; ``"centred"`` is
the equations as printed), and a variant with the labels explicit (``labels="explicit"``) for a
NUTS-within-Gibbs sampler. ``tests/models/dp_areal/test_model.py`` checks at random points that the centred
form, with the labels summed out or given, equals the paper's model with the log rates integrated out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from .data import ArealData
from .lkj import lkj_cholesky_cov
from .model import DEFAULT_K, DPArealPriors
from .quadrature import PoissonLognormalGivenLabels, PoissonLognormalMixture

__all__ = [
    "PARAMETERIZATIONS",
    "build_model",
    "identified_basis",
    "identified_covariances",
    "leading_components",
]

PARAMETERIZATIONS = ("identified", "identified_centred", "noncentred", "centred")


def identified_basis(design: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal basis of the directions of ``(mu + theta*_k, phi*_k)`` that the likelihood sees.

    The log-rate mean of eq. (8) is ``x_b' (mu + theta*_k, phi*_k)`` with ``x_b = (1, X^(b))``; the
    one-hot blocks and the intercept make ``R + 1`` coefficients with only ``rank([1, X])`` identified
    combinations (9 of 12 for gender x income x age).

    Returns
    -------
    V, basis
        ``V`` (R + 1, r) orthonormal basis of the row space of ``[1, X]`` and ``basis = [1, X] V`` (B, r), so
        the means are ``w_k @ basis.T`` with ``w_k = V' (mu + theta*_k, phi*_k)``.
    """
    full = np.hstack([np.ones((design.shape[0], 1)), design])
    _, singular, vt = np.linalg.svd(full, full_matrices=False)
    rank = int((singular > singular[0] * 1e-10).sum())
    V = vt[:rank].T
    return V, full @ V


def identified_covariances(V: np.ndarray, tau_theta: Any, tau_phi: Any, tau_mu: Any, chol_phi: Any) -> tuple[Any, Any]:
    """Covariances of the shared and own parts of ``w_k`` (:func:`build_model`, ``"identified"``), PyTensor.

    Returns
    -------
    shared_cov, own_cov
        ``V' diag(1 / tau_mu, I / tau_phi) V`` (the prior of ``s = V' (mu, mu_phi)``, eq. 11-12) and
        ``V' blockdiag(1 / tau_theta, Sigma_phi) V`` with ``Sigma_phi = chol_phi chol_phi'`` (eq. 10-11).
    """
    import pytensor.tensor as pt

    R = V.shape[0] - 1
    Vt = pt.as_tensor_variable(V.T)
    shared_cov = Vt @ pt.diag(pt.concatenate([pt.stack([1.0 / tau_mu]), pt.ones(R) / tau_phi])) @ Vt.T
    own_block = pt.zeros((R + 1, R + 1))
    own_block = pt.set_subtensor(own_block[0, 0], 1.0 / tau_theta)
    own_block = pt.set_subtensor(own_block[1:, 1:], chol_phi @ chol_phi.T)
    return shared_cov, Vt @ own_block @ Vt.T


def leading_components(K: int, centred_components: int | None) -> int:
    """How many leading components the ``"identified"`` parameterization samples centred.

    ``centred_components`` as given to :func:`build_model`, clipped to ``[0, K]``; ``None`` means none below
    ``K = 20`` and ``min(10, K // 5)`` from there (10 at the paper's ``K = 50``).

    Why: a centred component the data leave empty forms a funnel with the covariance, so small tables (few
    components occupied) sample best with none centred; on the CE-like data (``K = 50``, 12-20 occupied) centring
    the leading ten gives more effective draws per second. ``bench/dp_areal.py`` measures it; the figures are in
    the README ("Measured choices in the code").
    """
    if centred_components is None:
        return 0 if K < 20 else min(10, K // 5)
    return min(max(int(centred_components), 0), K)


def build_model(
    data: ArealData,
    K: int = DEFAULT_K,
    priors: DPArealPriors | None = None,
    *,
    parameterization: str = "identified",
    quadrature_nodes: int = 16,
    centred_components: int | None = None,
    labels: str = "marginal",
) -> Any:
    """Declare the DP-areal model of Section 2.2 (eq. 7-12) in PyMC, labels and log rates integrated out.

    Parameters
    ----------
    data
        Counts and their sufficient statistics.
    K
        Truncation level of the stick breaking (50 in Section 2.3).
    priors
        Hyperparameters of eq. (9)-(12) (default: Section 2.3's, :class:`DPArealPriors`).
    parameterization
        How ``mu``, ``theta*`` and ``phi*`` are sampled; the joint distribution of everything the likelihood
        sees is the same in all three.

        * ``"identified"`` (default): the likelihood depends on ``(mu + theta*_k, phi*_k)`` only through
          ``w_k = V' (mu + theta*_k, phi*_k)``, the ``r`` combinations that the one-hot design identifies
          (:func:`identified_basis`). Given the precisions and ``Sigma_phi`` these are Gaussian:
          ``w_k = s + chol(V' S_0 V) z_k`` with ``S_0 = blockdiag(1 / tau_theta, Sigma_phi)`` and the shared
          ``s = V' (mu, mu_phi) = chol(V' S_1 V) z_s``, ``S_1 = diag(1 / tau_mu, I / tau_phi)``. The
          ``R + 1 - r`` unidentified directions of every component, which only the prior informs, are thereby
          integrated out exactly instead of being explored by NUTS. The first ``centred_components`` ``w_k``
          are sampled centred (``w_k ~ MVN(s, V' S_0 V)``), the others non-centred through ``z_k``.
        * ``"noncentred"``: every coefficient of eq. (10)-(12), scaled by its precision or Cholesky factor.
        * ``"centred"``: the equations as printed.

        Except under ``"centred"``, the sticks are sampled as ``1 - v_k = U_k^(1 / alpha)`` with
        ``U_k ~ Uniform(0, 1)``, the same Beta(1, alpha) distribution, and the covariance of eq. (11) as its
        standard deviations and the partial correlations of ``Omega``
        (:func:`bayessdc.models.dp_areal.lkj.lkj_cholesky_cov`, the same distribution as PyMC's
        ``LKJCholeskyCov`` without its funnel: 5 times fewer gradients per draw on the demo's table).
    quadrature_nodes
        Grid points of the integral over each log rate
        (:func:`bayessdc.models.dp_areal.quadrature.log_poisson_lognormal`).
    centred_components
        Under ``"identified"``, how many leading components are sampled centred (0: all non-centred; default
        :func:`leading_components`: none below ``K = 20``, ``min(10, K // 5)`` from there). On the CE-like
        data (``bench/dp_areal.py``, ``K = 50``) 10 gave 2.5 times the ESS per second of 0; the components
        holding more than 1% of the cells were among the first ten in 99% of the draws. On small tables with
        few occupied components, centred empty components form funnels (divergences) and 0 is best.
    labels
        ``"marginal"`` (default): the labels summed out (:class:`PoissonLognormalMixture`). ``"explicit"``: one
        label per cell, ``component_label`` (pattern, label), drawn by the Gibbs step of
        :func:`bayessdc.models.dp_areal.conditionals.label_gibbs_step`, the likelihood given the labels
        (:class:`PoissonLognormalGivenLabels`).

    Returns
    -------
    pymc.Model
        Dimensions ``component`` (K), ``break`` (K - 1), ``pattern`` (B), and ``identified`` (r) or ``term``
        (R). Deterministic ``rho`` (component) and ``location`` (component, pattern), the mean of eq. (8); the
        likelihood is the potential ``counts`` over the distinct ``(pattern, count)`` pairs weighted by how
        many labels share them (:class:`PoissonLognormalMixture`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    if K < 2:
        raise ValueError("K must be at least 2")
    priors = DPArealPriors() if priors is None else priors
    if parameterization not in PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {parameterization!r}")
    if labels not in ("marginal", "explicit"):
        raise ValueError(f"labels must be 'marginal' or 'explicit', got {labels!r}")
    R = data.design.shape[1]
    V, basis = identified_basis(data.design)
    coords = {
        "component": np.arange(K),
        "break": np.arange(K - 1),
        "term": list(data.terms),
        "pattern": data.pattern_labels,
        "identified": np.arange(V.shape[1]),
        "label": [str(level) for level in data.label_levels],
    }
    with pm.Model(coords=coords) as model:
        design = pm.Data("design", data.design, dims=("pattern", "term"))
        # eq. (9): rho by truncated stick breaking, v_k ~ Beta(1, alpha), v_K = 1.
        alpha = pm.Gamma("alpha", alpha=priors.a_alpha, beta=priors.b_alpha)
        if parameterization == "centred":
            stick = pm.Beta("stick", alpha=1.0, beta=alpha, dims="break")
            log_remainder = pt.log1p(-stick)
            log_stick = pt.log(stick)
        else:
            # v_k ~ Beta(1, alpha) as 1 - v_k = U_k^(1 / alpha), U_k ~ Uniform(0, 1): the sticks of the many
            # components that hold few cells stay uniform whatever alpha, instead of forming a funnel with it.
            uniform = pm.Uniform("stick_uniform", 0.0, 1.0, dims="break")
            log_remainder = pt.log(uniform) / alpha
            log_stick = pt.log(-pt.expm1(log_remainder))
            pm.Deterministic("stick", -pt.expm1(log_remainder), dims="break")
        log_rho = pt.concatenate([log_stick, pt.zeros(1)]) + pt.concatenate([pt.zeros(1), pt.cumsum(log_remainder)])
        pm.Deterministic("rho", pt.exp(log_rho), dims="component")
        # eq. (10): theta*_k ~ Normal(0, 1 / tau_theta).
        tau_theta = pm.Gamma("tau_theta", alpha=priors.tau_theta[0], beta=priors.tau_theta[1])
        # eq. (11): phi*_k ~ MVN_R(mu_phi, diag(sigma) Omega diag(sigma)), Omega ~ LKJ(eta), sigma ~ half-t;
        # mu_phi ~ MVN_R(0, I / tau_phi).
        tau_phi = pm.Gamma("tau_phi", alpha=priors.tau_phi[0], beta=priors.tau_phi[1])
        if parameterization == "centred":
            chol, _, _ = pm.LKJCholeskyCov(
                "chol_phi",
                n=R,
                eta=priors.lkj_eta,
                sd_dist=pm.HalfStudentT.dist(nu=priors.sigma_nu, sigma=priors.sigma_scale, shape=R),
                compute_corr=True,
            )
        else:  # the same distribution, the standard deviations apart from the correlations (funnel-free)
            chol = lkj_cholesky_cov("chol_phi", R, priors.lkj_eta, priors.sigma_nu, priors.sigma_scale)
        # eq. (12): mu ~ Normal(0, 1 / tau_mu).
        tau_mu = pm.Gamma("tau_mu", alpha=priors.tau_mu[0], beta=priors.tau_mu[1])
        if parameterization.startswith("identified"):
            # (mu + theta*_k, phi*_k) = (mu, mu_phi) + (theta*_k, phi*_k - mu_phi): shared plus own part.
            shared_cov, own_cov = identified_covariances(V, tau_theta, tau_phi, tau_mu, chol)
            shared = pt.linalg.cholesky(shared_cov) @ pm.Normal("shared_raw", 0.0, 1.0, dims="identified")
            own_chol = pt.linalg.cholesky(own_cov)
            if parameterization == "identified":
                # Centred for the leading components, non-centred for the rest: the stick-breaking prior orders
                # the components by size, so the leading ones hold the data (their w is pinned by it, and a
                # non-centred w would have to follow every change of the covariance) and the trailing ones are
                # empty (their w is prior-only, and a centred w would form a funnel with the covariance).
                leading = leading_components(K, centred_components)
                model.add_coords({"leading": np.arange(leading), "trailing": np.arange(leading, K)})
                parts = []
                if leading:
                    parts.append(pm.MvNormal("w_leading", mu=shared, chol=own_chol, dims=("leading", "identified")))
                if leading < K:
                    own = pm.Normal("own_raw", 0.0, 1.0, dims=("trailing", "identified")) @ own_chol.T
                    parts.append(shared[None, :] + own)
                w = pm.Deterministic("w", pt.concatenate(parts, axis=0), dims=("component", "identified"))
            else:
                w = pm.MvNormal("w", mu=shared, chol=own_chol, dims=("component", "identified"))
            mean = w @ pt.as_tensor_variable(basis.T)
        else:
            if parameterization == "noncentred":
                theta = pm.Normal("theta_raw", 0.0, 1.0, dims="component") / pt.sqrt(tau_theta)
                mu_phi = pm.Normal("mu_phi_raw", 0.0, 1.0, dims="term") / pt.sqrt(tau_phi)
                phi = mu_phi[None, :] + pm.Normal("phi_raw", 0.0, 1.0, dims=("component", "term")) @ chol.T
                mu = pm.Normal("mu_raw", 0.0, 1.0) / pt.sqrt(tau_mu)
            else:
                theta = pm.Normal("theta", 0.0, tau=tau_theta, dims="component")
                mu_phi = pm.Normal("mu_phi", 0.0, tau=tau_phi, dims="term")
                phi = pm.MvNormal("phi", mu=mu_phi, chol=chol, dims=("component", "term"))
                mu = pm.Normal("mu", 0.0, tau=tau_mu)
            # eq. (8): the mean of the log rate of a cell of pattern b in component k.
            mean = mu + theta[:, None] + phi @ design.T
        location = pm.Deterministic("location", mean, dims=("component", "pattern"))
        tau_lambda = pm.Gamma("tau_lambda", alpha=priors.tau_lambda[0], beta=priors.tau_lambda[1])
        if labels == "marginal":
            # eq. (7)-(9) with log lambda and z integrated out, one term per distinct (pattern, count) pair.
            value, *_ = PoissonLognormalMixture(nodes=quadrature_nodes)(
                location,
                log_rho,
                tau_lambda,
                data.distinct_count.astype(float),
                data.distinct_pattern,
                data.distinct_weight.astype(float),
                special.gammaln(data.distinct_count + 1.0),
            )
        else:
            # eq. (9): z_i^(b) ~ Categorical(rho), one label per cell; eq. (7)-(8) given z, log lambda
            # integrated out, one term per occupied (distinct pair, component).
            label = pm.Categorical("component_label", logit_p=log_rho, dims=("pattern", "label"))
            value, *_ = PoissonLognormalGivenLabels(nodes=quadrature_nodes)(
                location,
                tau_lambda,
                label,
                data.cell_distinct.ravel(),
                data.distinct_count.astype(float),
                data.distinct_pattern,
                special.gammaln(data.distinct_count + 1.0),
            )
        pm.Potential("counts", value)
    return model
