"""The DP-areal model as the paper writes it (``model.paper_model``) and as the sampler runs it (``marginal``).

The paper's model (eq. 7-12) has a label ``z`` and a log rate ``x`` for every pattern x label cell. Integrating
every cell's log rate out (here by a fine trapezoid rule over the paper's own terms) and summing its label out
gives the likelihood of the sampler's form, ``sum_cells log sum_k rho_k int Poisson(c | e^x) Normal(x | m_kb,
1 / tau_lambda) dx``, whose integral ``marginal.build_model`` computes by an adaptive rule on a few nodes
(:class:`bayessdc.models.dp_areal.PoissonLognormalMixture`); with the labels given, the variant with explicit
labels. The priors are the same (the ``"centred"`` parameterization is the equations as printed; the others
are checked against it in distribution). Densities are compared on the natural scale of the parameters
(``jacobian=False``), at random points.
"""

import numpy as np
import pytensor
import pytest
from scipy import special

from bayessdc.models.dp_areal import build_model, paper_model, prepare_areal, simulate_areal


def _paper_terms(paper):
    """The paper's log density term by term: the priors (summed), and per cell the label, log-rate and count terms."""
    priors = [rv for rv in paper.free_RVs if rv.name not in ("z", "log_lambda")]
    cells = [paper["z"], paper["log_lambda"], paper["counts"]]
    terms = pytensor.function(
        paper.value_vars, paper.logp(vars=priors + cells, jacobian=False, sum=False), on_unused_input="ignore"
    )

    def evaluate(point, z, log_lambda):
        values = terms(**point, z=z, log_lambda=log_lambda)
        return sum(float(np.sum(v)) for v in values[: len(priors)]), values[len(priors) :]

    return evaluate


def _integrated(evaluate, point, z, shape, grid):
    """Per cell, ``log p(z) + log int p(x | z) p(c | x) dx`` by the trapezoid rule on ``grid``; and the priors."""
    log_f = []
    for x in grid:
        prior, (z_term, x_term, c_term) = evaluate(point, z, np.full(shape, x))
        log_f.append(x_term + c_term)
    return prior, z_term + special.logsumexp(np.array(log_f), axis=0) + np.log(grid[1] - grid[0])


def test_the_papers_model_and_the_samplers_form_have_the_same_log_density_at_random_points():
    frame, _ = simulate_areal(6, (2, 2), seed=1)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    K, shape = 3, data.counts.shape
    paper = paper_model(data, K)
    assert paper.named_vars_to_dims["log_lambda"] == ("pattern", "label")
    summed = build_model(data, K, parameterization="centred")
    given = build_model(data, K, parameterization="centred", labels="explicit")
    names = {v.name for v in summed.value_vars}
    assert {v.name for v in paper.value_vars} == names | {"z", "log_lambda"}
    assert {v.name for v in given.value_vars} == names | {"component_label"}
    evaluate = _paper_terms(paper)
    summed_logp, given_logp = summed.compile_logp(jacobian=False), given.compile_logp(jacobian=False)
    grid = np.arange(-30.0, 15.0, 0.01)
    rng = np.random.default_rng(3)
    start = summed.initial_point()
    for _ in range(3):
        point = {name: rng.normal(0.0, 0.5, np.shape(value)) for name, value in start.items()}
        # tau_lambda in [1, 4.5]: where the sampler's 16-node rule is accurate to 1e-6 nats per cell
        # (test_quadrature.py); below, the rule's error, up to 5e-4 nats at 0.2, is what would show here
        point["tau_lambda_log__"] = rng.uniform(0.0, 1.5)
        per_label = []
        for k in range(K):
            prior, cells = _integrated(evaluate, point, np.full(shape, k), shape, grid)
            per_label.append(cells)
        # eq. (7)-(9): every cell's log rate integrated out and its label summed out, plus the priors
        expected = prior + float(special.logsumexp(np.array(per_label), axis=0).sum())
        assert float(summed_logp(point)) == pytest.approx(expected, abs=1e-6 * data.counts.size)
        # the labels given: only the log rates integrated out
        labels = rng.integers(0, K, shape)
        prior, cells = _integrated(evaluate, point, labels, shape, grid)
        value = float(given_logp({**point, "component_label": labels}))
        assert value == pytest.approx(prior + cells.sum(), abs=1e-6 * data.counts.size)


def test_identified_parameterization_is_the_same_prior_for_what_the_likelihood_sees():
    """Prior draws of the log-rate means agree in distribution with the equations as printed.

    Quantiles, not moments: the half-t and gamma hyperpriors give heavy tails. Compared are a cell mean, a
    contrast between two patterns of one component and a contrast between two components.
    """
    import pymc as pm

    frame, _ = simulate_areal(20, (2, 3), seed=5)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    summaries = {}
    for parameterization in ("identified", "centred"):
        model = build_model(data, K=3, parameterization=parameterization)
        draws = pm.draw(model["location"], draws=40_000, random_seed=11)  # (draw, component, pattern)
        summaries[parameterization] = np.array(
            [
                np.quantile(draws[:, 0, 0], levels),
                np.quantile(draws[:, 0, 0] - draws[:, 0, 4], levels),
                np.quantile(draws[:, 0, 2] - draws[:, 1, 2], levels),
            ]
        )
    assert np.allclose(summaries["identified"], summaries["centred"], atol=0.15)


def test_leading_components_are_centred_only_for_a_large_truncation():
    from bayessdc.models.dp_areal.marginal import leading_components

    assert [leading_components(K, None) for K in (4, 10, 19, 20, 50, 80)] == [0, 0, 0, 4, 10, 10]
    assert leading_components(10, 3) == 3 and leading_components(10, 30) == 10 and leading_components(10, -1) == 0
