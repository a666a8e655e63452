"""Exact conditional draws of the DP-areal model's labels and log rates given the parameters.

Given ``(rho, location, tau_lambda)`` the cells are independent: a cell's label ``z`` has probabilities
``rho_k p(c | k) / p(c)`` (by the quadrature of :func:`bayessdc.models.dp_areal.quadrature.cell_posterior`),
and its log rate given ``z`` and the count has a log-concave density, drawn exactly by rejection from a
tangent envelope (:func:`draw_poisson_lognormal_log_rate`). Drawn for every posterior draw of the parameters
of the marginalised model, they give a draw from the joint posterior of eq. (7)-(12). :func:`label_gibbs_step`
is the same label draw as a PyMC step method, for the NUTS-within-Gibbs sampler of the model with the labels
explicit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import ArealData
from .quadrature import cell_posterior, poisson_lognormal_mode

__all__ = ["draw_labels_and_log_rates", "draw_poisson_lognormal_log_rate", "label_gibbs_step"]


def _log_target(x: np.ndarray, count: np.ndarray, location: np.ndarray, precision: np.ndarray) -> np.ndarray:
    return count * x - np.exp(x) - 0.5 * precision * (x - location) ** 2


def _log_target_slope(x: np.ndarray, count: np.ndarray, location: np.ndarray, precision: np.ndarray) -> np.ndarray:
    return count - np.exp(x) - precision * (x - location)


def draw_poisson_lognormal_log_rate(
    count: np.ndarray, location: np.ndarray, precision: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Exact draws of ``x`` from ``p(x | count) ∝ Poisson(count | e^x) Normal(x | location, 1 / precision)``.

    The log density is concave, so the minimum of three of its tangents (at the mode and one curvature
    standard deviation either side) is an envelope: a flat top between two exponential tails. Proposals
    from the envelope are accepted with probability ``exp(log density - envelope)``; about 80% are, and the
    rejected ones are redrawn until every value is accepted. Arrays broadcast together.
    """
    count, location, precision = np.broadcast_arrays(
        np.asarray(count, dtype=float), np.asarray(location, dtype=float), np.asarray(precision, dtype=float)
    )
    shape = count.shape
    count, location, precision = count.ravel(), location.ravel(), precision.ravel()
    mode, rate = poisson_lognormal_mode(count, location, precision, 6, np)
    width = 1.0 / np.sqrt(rate + precision)
    top = _log_target(mode, count, location, precision)
    left, right = mode - width, mode + width
    slope_left = _log_target_slope(left, count, location, precision)  # > 0
    slope_right = _log_target_slope(right, count, location, precision)  # < 0
    # Where the tangents meet the flat top.
    meet_left = left + (top - _log_target(left, count, location, precision)) / slope_left
    meet_right = right + (top - _log_target(right, count, location, precision)) / slope_right
    mass = np.column_stack([1.0 / slope_left, meet_right - meet_left, -1.0 / slope_right])
    cumulative = np.cumsum(mass / mass.sum(axis=1, keepdims=True), axis=1)
    out = np.empty_like(count)
    pending = np.arange(count.size)
    while pending.size:
        u = rng.random(pending.size)
        piece = (u[:, None] > cumulative[pending]).sum(axis=1)
        v = rng.random(pending.size)
        p = pending
        x = np.where(
            piece == 0,
            meet_left[p] + np.log(v) / slope_left[p],
            np.where(
                piece == 1,
                meet_left[p] + v * (meet_right[p] - meet_left[p]),
                meet_right[p] + np.log(v) / slope_right[p],
            ),
        )
        envelope = top[p] + np.where(
            piece == 0,
            slope_left[p] * (x - meet_left[p]),
            np.where(piece == 1, 0.0, slope_right[p] * (x - meet_right[p])),
        )
        accept = np.log(rng.random(pending.size)) < _log_target(x, count[p], location[p], precision[p]) - envelope
        out[p[accept]] = x[accept]
        pending = p[~accept]
    return out.reshape(shape)


def _draw_cell_labels(log_resp: np.ndarray, cell: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One component per cell from its distinct pair's ``log p(z = k | c)`` (``log_resp``, K x D)."""
    cumulative = np.cumsum(np.exp(log_resp), axis=0)
    u = rng.random(cell.size) * cumulative[-1, cell]
    return np.minimum((cumulative[:, cell] < u[None, :]).sum(axis=0), log_resp.shape[0] - 1)


def draw_labels_and_log_rates(
    location: np.ndarray,
    rho: np.ndarray,
    tau_lambda: float,
    data: ArealData,
    rng: np.random.Generator,
    *,
    nodes: int = 16,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact draws of every cell's component label and log rate given one draw of the parameters.

    Given ``(rho, location, tau_lambda)`` the cells are independent: ``z`` has probabilities
    ``rho_k p(c | k) / p(c)`` and ``log lambda | z, c`` is drawn by :func:`draw_poisson_lognormal_log_rate`.

    Returns
    -------
    labels, log_rates
        ``(B, G)`` integer components and log rates of every pattern x label cell.
    """
    log_resp, _ = cell_posterior(location, rho, tau_lambda, data, nodes=nodes)
    cell = data.cell_distinct.ravel()
    labels = _draw_cell_labels(log_resp, cell, rng)
    patterns = np.repeat(np.arange(data.n_patterns), data.n_labels)
    log_rates = draw_poisson_lognormal_log_rate(
        data.counts.ravel().astype(float), location[labels, patterns], np.full(cell.size, float(tau_lambda)), rng
    )
    return labels.reshape(data.counts.shape), log_rates.reshape(data.counts.shape)


def _label_step_class() -> type:
    """The PyMC step method class of :func:`label_gibbs_step` (defined lazily: PyMC imports slowly)."""
    from pymc.step_methods.compound import BlockedStep, StepMethodState
    from pymc.util import get_random_generator

    class ComponentLabelGibbs(BlockedStep):
        """Exact Gibbs update of every cell's component label given the parameters (the blocked Gibbs of
        Ishwaran & James for truncated stick breaking): ``p(z = k | c, params) ∝ rho_k p(c | m_kb, tau)``,
        the log rate integrated out by the same quadrature as the likelihood."""

        name = "component_label_gibbs"
        stats_dtypes_shapes = {"occupied_components": (np.int64, [])}
        _state_class = StepMethodState

        def __init__(self, vars, data, nodes, parameters, rng=None, model=None, blocked=True):  # noqa: A002
            self.vars = vars
            self.data = data
            self.nodes = nodes
            self.parameters = parameters
            self.rng = get_random_generator(rng)

        def step(self, point):
            location, rho, tau = self.parameters(point)
            log_resp, _ = cell_posterior(location, rho, float(tau), self.data, nodes=self.nodes)
            labels = _draw_cell_labels(log_resp, self.data.cell_distinct.ravel(), self.rng)
            new = dict(point)
            name = self.vars[0].name
            new[name] = labels.reshape(point[name].shape).astype(point[name].dtype)
            return new, [{"occupied_components": np.int64(np.unique(labels).size)}]

        @staticmethod
        def competence(var, has_grad):
            from pymc.step_methods.compound import Competence

            return Competence.INCOMPATIBLE

    return ComponentLabelGibbs


def label_gibbs_step(model: Any, data: ArealData, *, nodes: int = 16, rng: Any = None) -> Any:
    """The Gibbs step of the component labels of a model built with ``labels="explicit"``.

    Parameters
    ----------
    model
        From :func:`bayessdc.models.dp_areal.marginal.build_model` with ``labels="explicit"``.
    data
        The data the model was built on.
    nodes
        Quadrature points per log-rate integral (as in the model).
    rng
        Seed or generator (``pymc.sample`` reseeds every chain).

    Returns
    -------
    pymc.step_methods.compound.BlockedStep
        Draws ``component_label`` exactly from its full conditional; combine it with NUTS on the rest.
    """
    import pymc as pm  # noqa: F401

    outputs = model.replace_rvs_by_values([model["location"], model["rho"], model["tau_lambda"]])
    continuous = [v for v in model.value_vars if v.name != "component_label"]
    function = model.compile_fn(outputs, inputs=continuous, on_unused_input="ignore", point_fn=False)
    names = [v.name for v in continuous]

    def parameters(point: dict[str, np.ndarray]) -> list[np.ndarray]:
        return function(*(point[name] for name in names))

    label = model.rvs_to_values[model["component_label"]]
    return _label_step_class()([label], data, nodes, parameters, rng=rng, model=model)
