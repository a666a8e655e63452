"""The covariance of eq. (11), ``diag(sigma) Omega diag(sigma)`` with ``Omega ~ LKJ(eta)``, sampled scale-free.

PyMC's ``LKJCholeskyCov`` samples the packed Cholesky factor of the covariance, ``L = diag(sigma) L_Omega``, so
the off-diagonal entries of row ``i`` live within ``sigma_i`` of zero. Where the data say little about a
standard deviation (most of ``Sigma_phi``: the likelihood sees it only through the few directions the design
identifies) the half-t prior lets ``sigma_i`` wander to 0.001, and row ``i`` then forms a funnel that NUTS
crosses with tiny steps. Measured on the demo's table (12 patterns x 40 labels, K = 10, 4 chains x (500 + 250),
target 0.99, seed 0): the chains whose step size fell to 0.007-0.015 had adapted their mass matrix inside such
a row (the unconstrained entries of one row with a posterior standard deviation of 0.04 against 0.18 in the
other chains, and a 24-fold spread of the posterior scale against the mass matrix), and took 930-970 leapfrog
steps per draw.

Here the correlation matrix is sampled through its canonical partial correlations (CPCs), which are independent
under the LKJ distribution (Lewandowski, Kurowicka & Joe 2009, Section 3.2, the C-vine method): the partial
correlation of variables ``i`` and ``j`` given variables ``0 .. j - 1`` (``j < i``, counted from 0) is
``2 Beta(b_j, b_j) - 1`` with ``b_j = eta + (n - 2 - j) / 2``. The Cholesky factor of ``Omega`` follows from
them row by row (the construction of Stan's ``cholesky_factor_corr``):

    L_i0 = y_i0,   L_ij = y_ij sqrt(1 - sum_{k<j} L_ik^2),   L_ii = sqrt(1 - sum_{k<i} L_ik^2),

and the covariance's factor is ``diag(sigma) L``. The standard deviations and the CPCs are separate variables,
so a small ``sigma_i`` no longer squeezes anything. The distribution is the same as ``LKJCholeskyCov``'s
(``tests/models/dp_areal/test_lkj.py`` checks the density against PyMC's LKJ density and the change of
variables, and draws against PyMC's sampler).

References
----------
.. [1] Lewandowski, D., Kurowicka, D., & Joe, H. (2009). Generating random correlation matrices based on vines
    and extended onion method. *Journal of Multivariate Analysis*, 100(9), 1989-2001.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["cholesky_from_partial_correlations", "cpc_beta_parameters", "lkj_cholesky_cov"]


def cpc_beta_parameters(n: int, eta: float) -> np.ndarray:
    """The Beta parameter ``b_j = eta + (n - 2 - j) / 2`` of every canonical partial correlation, packed.

    Packed row by row over the strict lower triangle (``(1, 0), (2, 0), (2, 1), (3, 0), ...``), the order
    :func:`cholesky_from_partial_correlations` reads.
    """
    rows, cols = np.tril_indices(n, k=-1)
    return eta + (n - 2 - cols) / 2.0


def cholesky_from_partial_correlations(cpc: Any, n: int) -> Any:
    """The Cholesky factor of a correlation matrix from its canonical partial correlations (PyTensor or numpy).

    Parameters
    ----------
    cpc
        The ``n (n - 1) / 2`` partial correlations in ``(-1, 1)``, packed as in :func:`cpc_beta_parameters`.
    n
        The dimension.

    Returns
    -------
    The lower-triangular ``(n, n)`` factor ``L`` with unit rows (``L L'`` has a unit diagonal).
    """
    import pytensor.tensor as pt

    xp_stack = np.stack if isinstance(cpc, np.ndarray) else pt.stack
    xp_sqrt = np.sqrt if isinstance(cpc, np.ndarray) else pt.sqrt
    zero = 0.0 * cpc[0] if n > 1 else 0.0
    rows = [[1.0 + zero] + [zero] * (n - 1)]
    k = 0
    for i in range(1, n):
        row, remaining = [], 1.0 + zero
        for _ in range(i):
            entry = cpc[k] * xp_sqrt(remaining)
            row.append(entry)
            remaining = remaining - entry**2
            k += 1
        row.append(xp_sqrt(remaining))
        rows.append(row + [zero] * (n - 1 - i))
    return xp_stack([xp_stack(r) for r in rows])


def lkj_cholesky_cov(name: str, n: int, eta: float, sigma_nu: float, sigma_scale: float) -> Any:
    """Declare ``Sigma = diag(sigma) Omega diag(sigma)``, ``Omega ~ LKJ(eta)``, ``sigma_r ~ half-t``, in PyMC.

    Free variables ``{name}_stds`` (``n``, half-t with ``sigma_nu`` degrees of freedom and scale
    ``sigma_scale``) and ``{name}_cpc`` (the partial correlations, ``2 Beta(b_j, b_j) - 1``); deterministics
    ``{name}`` (the Cholesky factor of ``Sigma``, ``n x n``) and ``{name}_corr`` (``Omega``). Must be called
    inside a model context.

    Returns
    -------
    The Cholesky factor of ``Sigma`` (PyTensor).
    """
    import pymc as pm
    import pytensor.tensor as pt

    stds = pm.HalfStudentT(f"{name}_stds", nu=sigma_nu, sigma=sigma_scale, shape=n)
    if n == 1:
        factor = pt.ones((1, 1))
    else:
        b = cpc_beta_parameters(n, eta)
        cpc = 2.0 * pm.Beta(f"{name}_cpc_unit", alpha=b, beta=b, shape=b.size) - 1.0
        factor = cholesky_from_partial_correlations(cpc, n)
    # Omega = L L', elementwise (a matrix product of the transposed view compiles to a numba np.dot on
    # non-contiguous arrays, which warns)
    pm.Deterministic(f"{name}_corr", (factor[:, None, :] * factor[None, :, :]).sum(axis=-1))
    return pm.Deterministic(name, stds[:, None] * factor)
