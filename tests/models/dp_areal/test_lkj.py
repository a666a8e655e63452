"""The scale-free LKJ covariance of :mod:`bayessdc.models.dp_areal.lkj` is PyMC's LKJ distribution."""

import numpy as np
import pytest
from scipy import stats

from bayessdc.models.dp_areal.lkj import cholesky_from_partial_correlations, cpc_beta_parameters, lkj_cholesky_cov
from bayessdc.models.dp_areal.synthesizer import _without_c_blas


def _correlations(cpc: np.ndarray, n: int) -> np.ndarray:
    """The strict upper triangle of ``L L'``, in the order of PyMC's ``LKJCorr`` value."""
    factor = cholesky_from_partial_correlations(cpc, n)
    return (factor @ factor.T)[np.triu_indices(n, k=1)]


@pytest.mark.parametrize(("n", "eta"), [(2, 1.0), (3, 2.0), (5, 2.0), (4, 0.7)])
def test_the_partial_correlations_density_is_the_lkj_density_times_the_change_of_variables(n, eta):
    """At random points: the product of the partial correlations' Beta densities equals PyMC's LKJ density of the
    correlation matrix they build times the Jacobian determinant of the map (by central differences), up to one
    constant: compared are the differences between points, since PyMC 5.28's ``LKJCorr`` adds the log of the
    normalizing integral where it should subtract it (``n = 2, eta = 1`` gives ``log 2``, the uniform density on
    (-1, 1) being 1/2). A wrong Beta parameter or ordering of the partial correlations fails."""
    import pymc as pm

    rng = np.random.default_rng(n)
    b = cpc_beta_parameters(n, eta)
    lkj = pm.LKJCorr.dist(n=n, eta=eta)
    ours, theirs = [], []
    for _ in range(6):
        cpc = rng.uniform(-0.9, 0.9, size=b.size)
        ours.append(float(np.sum(stats.beta.logpdf((cpc + 1) / 2, b, b) - np.log(2.0))))
        step = 1e-6
        jacobian = np.column_stack(
            [(_correlations(cpc + step * e, n) - _correlations(cpc - step * e, n)) / (2 * step) for e in np.eye(b.size)]
        )
        theirs.append(float(pm.logp(lkj, _correlations(cpc, n)).eval()) + np.log(abs(np.linalg.det(jacobian))))
    assert np.allclose(np.diff(ours), np.diff(theirs), atol=1e-6)
    if n == 2:  # one correlation, the partial correlation itself: Beta(eta, eta) on (-1, 1), normalized
        assert b[0] == eta and ours[-1] == pytest.approx(stats.beta.logpdf((cpc[0] + 1) / 2, eta, eta) - np.log(2))


def test_the_factor_is_a_correlation_cholesky_and_the_declared_covariance_draws_like_pymcs():
    """The factor is lower triangular with unit rows; draws of the declared covariance (half-t standard deviations,
    LKJ correlations) match PyMC's ``LKJCholeskyCov`` in the quantiles of a correlation, a standard deviation
    and a covariance entry."""
    import pymc as pm

    factor = cholesky_from_partial_correlations(np.array([0.3, -0.5, 0.8]), 3)
    assert np.allclose(np.triu(factor, 1), 0) and np.allclose((factor**2).sum(1), 1) and (np.diag(factor) > 0).all()
    assert factor[1, 0] == pytest.approx(0.3)
    assert factor[2, 1] == pytest.approx(0.8 * np.sqrt(1 - 0.5**2))  # y_21 sqrt(1 - L_20^2)

    n, eta, levels = 4, 2.0, [0.1, 0.25, 0.5, 0.75, 0.9]
    with pm.Model():
        ours = lkj_cholesky_cov("ours", n, eta, 3.0, 1.0)
        theirs, _, _ = pm.LKJCholeskyCov(
            "theirs", n=n, eta=eta, sd_dist=pm.HalfStudentT.dist(nu=3.0, sigma=1.0, shape=n), compute_corr=True
        )
    with _without_c_blas(True):  # compiled in NUMBA mode, as the sampler's graphs are
        a, b = pm.draw([ours @ ours.T, theirs @ theirs.T], draws=40_000, random_seed=3)
    for cov in (a, b):
        assert np.allclose(cov, np.swapaxes(cov, 1, 2))

    def summary(cov):
        sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
        corr = cov[:, 3, 1] / (sd[:, 3] * sd[:, 1])
        return np.array([np.quantile(corr, levels), np.quantile(sd[:, 2], levels), np.quantile(cov[:, 2, 0], levels)])

    assert np.allclose(summary(a), summary(b), atol=0.03)
    # the marginal of one correlation under LKJ(eta) in n dimensions is 2 Beta(eta - 1 + n / 2, same) - 1
    corr = summary(a)[0]
    beta = eta - 1 + n / 2
    assert np.allclose(corr, 2 * stats.beta.ppf(levels, beta, beta) - 1, atol=0.02)
