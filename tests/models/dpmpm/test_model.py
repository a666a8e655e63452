"""The DPMPM as the paper writes it (``model.paper_model``) and as the sampler runs it (``marginal``).

The paper's model (eq. 1-6) has one latent class per record. Summing the class out record by record gives the
likelihood of the sampler's form, ``sum_cells n_cell log sum_k pi_k prod_j theta_k^(j)[x_cell,j]``
(:func:`bayessdc.models.dpmpm.marginal.cell_log_likelihood`, and the potential of ``marginal.build_model``),
and the priors of eq. (4)-(6) are the same (:func:`bayessdc.models.dpmpm.marginal.log_prior` with the
hyperparameters the Gibbs sampler reads back). Densities are compared on the natural scale of the parameters
(``jacobian=False``), at random points.
"""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

from bayessdc.models.dpmpm import (
    DPMPMPriors,
    build_model,
    cell_log_likelihood,
    log_prior,
    model_hyperparameters,
    paper_model,
    prepare_categorical,
    simulate_latent_class,
)

# The declaration and the sampler agree


def test_model_potential_is_the_record_level_likelihood_and_priors_are_read_back():
    frame, _ = simulate_latent_class(200, [2, 3, 4], [0.5, 0.5], seed=1)
    data = prepare_categorical(frame, ["x2"], ["x0", "x1"])
    priors = DPMPMPriors(a_alpha=0.5, b_alpha=2.0, theta_concentration=0.7)
    model = build_model(data, K=5, priors=priors)
    hyper = model_hyperparameters(model, data)
    assert hyper["K"] == 5 and hyper["a_alpha"] == pytest.approx(0.5) and hyper["b_alpha"] == pytest.approx(2.0)
    assert hyper["beta_a"] == 1.0
    assert all(
        np.allclose(c, 0.7) and c.shape == (5, d)
        for c, d in zip(hyper["theta_concentration"], data.n_levels, strict=True)
    )

    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(5))
    thetas = [rng.dirichlet(np.ones(d), size=5) for d in data.n_levels]
    # record by record: sum_i log sum_k pi_k prod_j theta_k^(j)[x_ij]
    per_record = np.log(
        (pi[None, :] * np.prod([t.T[data.codes[:, j]] for j, t in enumerate(thetas)], axis=0)).sum(axis=1)
    ).sum()
    assert cell_log_likelihood(pi, thetas, data) == pytest.approx(per_record, rel=1e-12)
    # the model's potential at the same point
    beta = pi[:-1] / (1 - np.concatenate([[0.0], np.cumsum(pi[:-2])]))
    values = {"alpha": 1.0, "beta": beta, **{f"theta_{v}": t for v, t in zip(data.variables, thetas, strict=True)}}
    point = {}
    for name, value in values.items():
        rv = model[name]
        transform = model.rvs_to_transforms[rv]
        point[model.rvs_to_values[rv].name] = transform.forward(pt.as_tensor(value), *rv.owner.inputs).eval()
    potential = pytensor.function(
        model.value_vars,
        model.replace_rvs_by_values([model.potentials[0]])[0],
        mode="FAST_COMPILE",
        on_unused_input="ignore",
    )
    assert float(potential(**point)) == pytest.approx(per_record, rel=1e-10)


def test_the_papers_model_and_the_samplers_form_have_the_same_log_density_at_random_points():
    frame, _ = simulate_latent_class(60, [2, 3, 4], [0.5, 0.5], seed=2)
    data = prepare_categorical(frame, ["x2"], ["x0", "x1"])
    K, priors = 4, DPMPMPriors(a_alpha=0.5, b_alpha=2.0, theta_concentration=0.7)
    paper, marginal = paper_model(data, K, priors), build_model(data, K, priors)
    assert paper.named_vars_to_dims["z"] == ("record",) and paper.named_vars_to_dims["x_x2"] == ("record",)
    # both declarations give the Gibbs sampler the same priors
    hyper = model_hyperparameters(paper, data)
    from_marginal = model_hyperparameters(marginal, data)
    assert {k: v for k, v in hyper.items() if k != "theta_concentration"} == {
        k: v for k, v in from_marginal.items() if k != "theta_concentration"
    }
    assert all(
        np.array_equal(a, b)
        for a, b in zip(hyper["theta_concentration"], from_marginal["theta_concentration"], strict=True)
    )
    # the paper's model: every term per record (z, x_j) and the priors, at a given value of every z_i
    rvs = [paper[name] for name in ("alpha", "beta", *(f"theta_{v}" for v in data.variables), "z")]
    observed = [paper[f"x_{v}"] for v in data.variables]
    terms = pytensor.function(
        paper.value_vars, paper.logp(vars=rvs + observed, jacobian=False, sum=False), on_unused_input="ignore"
    )
    parameters = pytensor.function(
        paper.value_vars,
        paper.replace_rvs_by_values([paper["pi"], paper["alpha"], paper["beta"], *rvs[2:-1]]),
        on_unused_input="ignore",
    )
    marginal_logp = marginal.compile_logp(jacobian=False)
    rng = np.random.default_rng(7)
    start = marginal.initial_point()
    for _ in range(5):
        point = {name: rng.normal(0.0, 1.5, np.shape(value)) for name, value in start.items()}
        per_class = []
        for k in range(K):
            values = terms(**point, z=np.full(data.n_records, k))
            prior = sum(float(np.sum(t)) for t in values[: 2 + len(data.variables)])
            per_class.append(values[2 + len(data.variables)] + sum(values[3 + len(data.variables) :]))
        # eq. (1)-(2) with each record's class summed out, plus the priors of eq. (4)-(6)
        paper_value = prior + float(special.logsumexp(np.array(per_class), axis=0).sum())
        pi, alpha, beta, *thetas = parameters(**point, z=np.zeros(data.n_records, dtype=np.int64))
        fast = cell_log_likelihood(pi, thetas, data) + log_prior(float(alpha), beta, thetas, hyper)
        assert fast == pytest.approx(paper_value, rel=1e-10)
        assert float(marginal_logp(point)) == pytest.approx(paper_value, rel=1e-10)
