"""The record the compiled flow model's log density takes (a numba ``NamedTuple`` argument).

:func:`bayessdc.models.flows.compiled.flow_logp_grad` reads its data by field name (``data.n_origins``,
``data.phi_rate``), never by position, so two fields of the same type cannot be swapped silently. Built by
:func:`bayessdc.models.flows.compiled.flow_data` only, and passed unchanged through the compiled NUTS of
:mod:`bayessdc.models.nuts` (whose ``data`` is any tuple).

Notation as in :mod:`bayessdc.models.flows.compiled`: ``C`` modelled cells of one group pair, ``I`` origins, ``J``
destinations, ``theta = (mu, b_1..b_I, g_1..g_J)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["FlowData"]


class FlowData(NamedTuple):
    """One group pair's cells, sizes and priors, what the log density of the marginal flow model reads."""

    #: ``(C,)`` int64: the position of every cell's origin effect ``b_i`` in ``theta`` (``1 .. I``).
    origin: np.ndarray
    #: ``(C,)`` int64: the position of its destination effect ``g_j`` in ``theta`` (``I + 1 .. I + J``).
    destination: np.ndarray
    #: ``(C,)`` float: its modelled value ``y``.
    y: np.ndarray
    #: ``(C,)`` float: ``log y!``.
    log_y_factorial: np.ndarray
    #: Number of origins ``I``.
    n_origins: int
    #: Number of destinations ``J``.
    n_destinations: int
    #: The truncation ``U`` of the truncated Poisson (eq. 1).
    upper: int
    #: Precision of ``mu``'s normal prior (``mu = mu_beta + mu_gamma``).
    mu_precision: float
    #: Shape of the Gamma prior of each family's precision.
    phi_shape: float
    #: Rate of that Gamma prior.
    phi_rate: float
    #: The interpolation table of ``log Z`` (:func:`bayessdc.models.flows.compiled.truncated_poisson_table`).
    table: np.ndarray
