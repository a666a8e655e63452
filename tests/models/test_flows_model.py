"""The flow model as the paper writes it (``model.paper_model``) and as the sampler runs it (``marginal.build_model``).

The change of variables of ``bayessdc.models.flows.marginal``: ``beta_i = mu_beta + b_i`` and
``gamma_j = mu_gamma + g_j`` (unit Jacobian), ``mu = mu_beta + mu_gamma`` and ``delta = mu_beta - mu_gamma``
(Jacobian 2; with ``mu_beta, mu_gamma`` independent ``N(0, variance 25)``,
``p(mu_beta, mu_gamma) = 2 N(mu; 0, 50) N(delta; 0, 50)``). The likelihood depends on ``mu + b_i + g_j`` only,
and the sampler's model leaves ``delta`` out. So at every point, with the same ``log lambda`` in both models,

* ``centred``: ``log p_paper = log p_centred(mu, phi, b, g, y) + log N(delta; 0, 50) + log 2``;
* ``noncentred`` (``effect_raw = b sqrt(phi)``, Jacobian ``phi^(n/2)`` per family): the same plus
  ``(B/2) log phi_beta + (G/2) log phi_gamma``;
* ``marginal`` (the precisions integrated out, joint = marginal x full conditional):
  ``log p_paper = log p_marginal(mu, b, g, y) + log Gamma(phi_beta; a + B/2, rate r + |b|^2/2)
  + log Gamma(phi_gamma; a + G/2, rate r + |g|^2/2) + log N(delta; 0, 50) + log 2``.

Densities are compared on the natural scale of the precisions (``jacobian=False``), at random points.
"""

import math

import numpy as np
import pytest
from scipy import stats

from bayessdc.models.flows import FlowPriors, build_model, paper_model, simulate_group


def _random_point(group, rng):
    n_origins, n_destinations = len(group.origins), len(group.destinations)
    mu_beta, mu_gamma = rng.normal(0, 2, 2)
    phi_beta, phi_gamma = np.exp(rng.normal(0, 1, 2))
    beta = mu_beta + rng.normal(0, 1, n_origins) / math.sqrt(phi_beta)
    gamma = mu_gamma + rng.normal(0, 1, n_destinations) / math.sqrt(phi_gamma)
    return {
        "mu_beta": mu_beta,
        "mu_gamma": mu_gamma,
        "phi_beta": phi_beta,
        "phi_gamma": phi_gamma,
        "beta": beta,
        "gamma": gamma,
    }


def _paper_logp(model, p):
    logp = model.compile_logp(jacobian=False)
    return logp(
        {
            "mu_beta": p["mu_beta"],
            "mu_gamma": p["mu_gamma"],
            "phi_beta_log__": math.log(p["phi_beta"]),
            "phi_gamma_log__": math.log(p["phi_gamma"]),
            "beta": p["beta"],
            "gamma": p["gamma"],
        }
    )


def _shifted(p):
    """The sampler's variables: mu = mu_beta + mu_gamma, the effects b, g (one vector), delta."""
    b, g = p["beta"] - p["mu_beta"], p["gamma"] - p["mu_gamma"]
    return p["mu_beta"] + p["mu_gamma"], b, g, p["mu_beta"] - p["mu_gamma"]


@pytest.mark.parametrize("shape", [(3, 4, 8), (6, 5, 20)])
def test_paper_model_and_the_sampled_form_have_the_same_log_density(shape):
    priors = FlowPriors()
    group, _ = simulate_group(*shape, seed=sum(shape))
    paper = paper_model(group, mu_precision=priors.mu_precision, phi_shape=priors.phi_shape, phi_rate=priors.phi_rate)
    sampled = {
        name: build_model(group, priors, parameterization=name) for name in ("marginal", "centred", "noncentred")
    }
    logps = {name: model.compile_logp(jacobian=False) for name, model in sampled.items()}
    a, r = priors.phi_shape, priors.phi_rate
    rng = np.random.default_rng(7)
    for _ in range(5):
        p = _random_point(group, rng)
        mu, b, g, delta = _shifted(p)
        want = _paper_logp(paper, p)
        delta_term = stats.norm.logpdf(delta, 0, math.sqrt(50)) + math.log(2)
        phi = {"phi_beta_log__": math.log(p["phi_beta"]), "phi_gamma_log__": math.log(p["phi_gamma"])}
        effect = np.concatenate([b, g])

        centred = logps["centred"]({"mu": mu, "effect": effect, **phi})
        assert want == pytest.approx(centred + delta_term, rel=1e-10, abs=1e-8)

        raw = np.concatenate([b * math.sqrt(p["phi_beta"]), g * math.sqrt(p["phi_gamma"])])
        jacobian = len(b) / 2 * math.log(p["phi_beta"]) + len(g) / 2 * math.log(p["phi_gamma"])
        noncentred = logps["noncentred"]({"mu": mu, "effect_raw": raw, **phi})
        assert want == pytest.approx(noncentred + jacobian + delta_term, rel=1e-10, abs=1e-8)

        conditional = stats.gamma.logpdf(p["phi_beta"], a + len(b) / 2, scale=1 / (r + (b**2).sum() / 2))
        conditional += stats.gamma.logpdf(p["phi_gamma"], a + len(g) / 2, scale=1 / (r + (g**2).sum() / 2))
        marginal = logps["marginal"]({"mu": mu, "effect": effect})
        assert want == pytest.approx(marginal + conditional + delta_term, rel=1e-10, abs=1e-8)


def test_paper_model_has_named_dims_and_the_same_log_rates():
    group, _ = simulate_group(3, 4, 8, seed=1)
    model = paper_model(group)
    assert model.named_vars_to_dims["beta"] == ("origin",)
    assert model.named_vars_to_dims["gamma"] == ("destination",)
    assert model.named_vars_to_dims["y"] == ("cell",)
    assert list(model.coords["origin"]) == list(group.origins)
    p = _random_point(group, np.random.default_rng(3))
    mu, b, g, _ = _shifted(p)
    log_lambda = model.compile_fn(model["log_lambda"], inputs=[model["beta"], model["gamma"]])(
        {"beta": p["beta"], "gamma": p["gamma"]}
    )
    assert log_lambda == pytest.approx(mu + b[group.origin_index] + g[group.destination_index], rel=1e-12)
