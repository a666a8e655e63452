"""DP-areal synthesizer: Poisson-lognormal county-by-pattern counts with Dirichlet-process random effects.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys* (``../shared/papers/003_f28306c144335c50.txt`` in the development tree), Section 2.2
(eq. 7-14) with the settings of Section 2.3.

A *pattern* ``b`` is a combination of the kept (non-geographic) variables; ``c_i^(b)`` counts the records of
pattern ``b`` with label ``i`` (the county), zeros included:

* eq. (7): ``c_i^(b) ~ Poisson(lambda_i^(b))``;
* eq. (8): ``log lambda_i^(b) ~ Normal(mu + theta*_z + sum_r phi*_{z r} X_r^(b), 1 / tau_lambda)``;
* eq. (9): ``z_i^(b) ~ Categorical(rho)``, ``rho`` from truncated stick breaking with ``K`` components,
  ``v_k ~ Beta(1, alpha)``, ``alpha ~ Gamma(a_alpha, b_alpha)``;
* eq. (10): ``theta*_k ~ Normal(0, 1 / tau_theta)``;
* eq. (11): ``phi*_k ~ MVN_R(mu_phi, Sigma_phi)``, ``Sigma_phi = diag(sigma) Omega diag(sigma)``,
  ``Omega ~ LKJ(2)``, ``sigma_r ~ half-t(3, 0, 1)``, and ``mu_phi ~ MVN_R(0, I / tau_phi)`` (the paper lists
  ``tau_phi`` among the Gamma(1, 1) precisions without printing its role; this is the reading here);
* eq. (12): ``mu ~ Normal(0, 1 / tau_mu)``; Gamma(1, 1) priors on every precision and on ``alpha``.

``X^(b)`` is the one-hot design of the pattern: ``R`` = total number of levels of the kept variables.

How it is computed (the work of the issue). In eq. (8) the design ``X^(b)`` depends on the pattern only, so
given the cluster parameters the counts of one pattern are independent and identically distributed over
counties: the likelihood depends on the data only through ``n_{b,c}``, the number of counties with count
``c`` in pattern ``b``. Both latent layers are integrated out per cell,

    p(c | b, params) = sum_k rho_k  int Poisson(c | e^x) Normal(x | m_kb, 1 / tau_lambda) dx,

the label ``z`` exactly (a sum over ``K``) and the log rate ``x`` by an adaptive trapezoid rule
centred at the mode of the integrand with the Laplace scale (:func:`log_poisson_lognormal`). On the CE-like
data that replaces 5,320 latent log rates and their labels by 350 distinct ``(b, c)`` pairs, so NUTS explores
only the ~730 cluster-level parameters. The log rates and labels are then drawn exactly from their
conditional posterior given each draw of the parameters (labels by their conditional probabilities, log rates
by rejection from a tangent envelope of the log-concave conditional, :func:`draw_log_rates`), which is a
draw from the joint posterior, as the paper's sampler would give.

Synthesis (eq. 13-14): for each record of pattern ``b``, a label drawn with probabilities
``lambda_i^(b) / sum_i lambda_i^(b)`` from one posterior draw.

Label switching: component labels are not identified. The convergence gate monitors label-invariant
quantities only: ``alpha``, ``tau_lambda``, and the posterior mean of every distinct cell's log rate given the
parameters (Rao-Blackwellised, ``expected_log_rate``), which determines the synthesis probabilities.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import arviz as az
import numba
import numpy as np
import pandas as pd
import xarray as xr
from pytensor.graph.op import Op
from scipy import special

from .dpmpm import CategoricalData, CategoricalDataError, prepare_categorical
from .sampling import (
    CompiledModelCache,
    ConvergenceCriteria,
    ConvergenceReport,
    SamplerSettings,
    check_convergence,
    resolve_backend,
    sample_model,
)

__all__ = [
    "ArealData",
    "DPArealPriors",
    "DPArealSynthesizer",
    "build_model",
    "draw_labels_and_log_rates",
    "log_poisson_lognormal",
    "poisson_lognormal_moments",
    "prepare_areal",
    "simulate_areal",
]

#: Compiled nutpie models, keyed by the shapes of the data (one compilation serves every refit).
COMPILED_MODELS = CompiledModelCache()

#: Largest number of label x pattern cells accepted by default (see :func:`prepare_areal`).
MAX_CELLS = 300_000


# --------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class ArealData:
    """Records coded for the DP-areal model: the label counts of every pattern and their sufficient statistics.

    Attributes
    ----------
    records
        The coded records (:class:`bayessdc.models.dpmpm.CategoricalData`, one synthesized column).
    label
        The synthesized column (for example the county).
    pattern_of_record
        Pattern index ``b`` of every record.
    pattern_codes
        ``(B, p)`` level codes of the kept variables of every pattern.
    counts
        ``(B, G)`` counts ``c_i^(b)``, zeros included (eq. 7).
    design
        ``(B, R)`` one-hot design ``X^(b)`` (eq. 8).
    terms
        Names of the ``R`` design columns (``variable=level``).
    distinct_pattern, distinct_count, distinct_weight
        The distinct ``(b, c)`` pairs and ``n_{b,c}``, how many labels have count ``c`` in pattern ``b``.
    cell_distinct
        ``(B, G)`` index of every cell's distinct pair.
    """

    records: CategoricalData
    label: str
    pattern_of_record: np.ndarray
    pattern_codes: np.ndarray
    counts: np.ndarray
    design: np.ndarray
    terms: tuple[str, ...]
    distinct_pattern: np.ndarray
    distinct_count: np.ndarray
    distinct_weight: np.ndarray
    cell_distinct: np.ndarray

    @property
    def n_patterns(self) -> int:
        """Number of patterns ``B``."""
        return int(self.counts.shape[0])

    @property
    def n_labels(self) -> int:
        """Number of labels ``G`` (counties)."""
        return int(self.counts.shape[1])

    @property
    def n_distinct(self) -> int:
        """Number of distinct ``(pattern, count)`` pairs: the size of the likelihood."""
        return int(self.distinct_count.shape[0])

    @property
    def pattern_labels(self) -> list[str]:
        """Readable name of every pattern (``a=1, b=2``)."""
        rec = self.records
        return [
            ", ".join(f"{v}={rec.levels[v][code]}" for v, code in zip(rec.keep, row, strict=True))
            for row in self.pattern_codes
        ]

    @property
    def label_levels(self) -> np.ndarray:
        """The labels (counties), in code order."""
        return self.records.levels[self.label]


def _areal_from_records(records: CategoricalData) -> ArealData:
    label = records.synthesize[0]
    keep_codes = records.codes[:, records.keep_index]
    pattern_codes, pattern_of_record = np.unique(keep_codes, axis=0, return_inverse=True)
    pattern_of_record = pattern_of_record.ravel().astype(np.int64)
    n_labels = len(records.levels[label])
    counts = np.zeros((len(pattern_codes), n_labels), dtype=np.int64)
    np.add.at(counts, (pattern_of_record, records.codes[:, records.synthesize_index[0]]), 1)
    blocks, terms = [], []
    for j, v in enumerate(records.keep):
        levels = records.levels[v]
        blocks.append(np.eye(len(levels))[pattern_codes[:, j]])
        terms += [f"{v}={x}" for x in levels]
    design = np.hstack(blocks) if blocks else np.zeros((len(pattern_codes), 0))
    pairs = np.column_stack([np.repeat(np.arange(len(pattern_codes)), n_labels), counts.ravel()])
    distinct, inverse, weight = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return ArealData(
        records=records,
        label=label,
        pattern_of_record=pattern_of_record,
        pattern_codes=pattern_codes.astype(np.int64),
        counts=counts,
        design=design,
        terms=tuple(terms),
        distinct_pattern=distinct[:, 0].astype(np.int64),
        distinct_count=distinct[:, 1].astype(np.int64),
        distinct_weight=weight.astype(np.int64),
        cell_distinct=inverse.reshape(counts.shape).astype(np.int64),
    )


def prepare_areal(
    frame: pd.DataFrame,
    synthesize: str | Sequence[str],
    keep: Sequence[str],
    *,
    max_levels: int = 500,
    max_cells: int = MAX_CELLS,
    missing: str = "refuse",
    notices: list[str] | None = None,
) -> ArealData:
    """Check a table and code it for the DP-areal model, refusing bad input before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    synthesize
        The label column to synthesize (one column: the model is for the counts of one label).
    keep
        Kept columns; their combinations are the patterns ``b``.
    max_levels
        Largest number of distinct values of a column.
    max_cells
        Largest number of label x pattern cells: beyond it the counts become too sparse for the areal
        model to add anything and the synthesis arrays too large; the DPMPM is the model for that case.
    missing
        ``"refuse"`` or ``"level"`` (missing values as a level of their own).
    notices
        If given, notices about the input (unused categories dropped) are appended to it.

    Returns
    -------
    ArealData

    Raises
    ------
    bayessdc.models.dpmpm.CategoricalDataError
        Everything :func:`bayessdc.models.dpmpm.prepare_categorical` refuses, plus: more than one or no
        synthesized column, no kept column, too many cells.
    """
    synthesize = [synthesize] if isinstance(synthesize, str) else list(synthesize)
    if len(synthesize) != 1:
        raise CategoricalDataError(
            f"the DP-areal model synthesizes one label column, got {len(synthesize)} ({', '.join(synthesize)}): "
            "combine several columns into one label first, or use the DPMPM, which synthesizes several at once"
        )
    if not list(keep):
        raise CategoricalDataError("the DP-areal model needs at least one kept column (--keep) to form patterns")
    notices = notices if notices is not None else []
    for col in [*synthesize, *keep]:
        if col in frame.columns and isinstance(frame[col].dtype, pd.CategoricalDtype):
            unused = [c for c in frame[col].cat.categories if c not in set(frame[col].dropna().unique())]
            if unused:
                notices.append(
                    f"notice: column {col!r} declares {len(unused)} categor{'y' if len(unused) == 1 else 'ies'} "
                    f"with no record ({', '.join(map(str, unused[:5]))}{' ...' if len(unused) > 5 else ''}): "
                    "dropped, a label or pattern with zero records everywhere carries no information"
                )
    records = prepare_categorical(frame, synthesize, keep, max_levels=max_levels, missing=missing)  # type: ignore[arg-type]
    n_patterns = len(np.unique(records.codes[:, records.keep_index], axis=0))
    n_labels = len(records.levels[synthesize[0]])
    if n_patterns * n_labels > max_cells:
        raise CategoricalDataError(
            f"{n_patterns:,} patterns of {', '.join(keep)} x {n_labels:,} labels of {synthesize[0]!r} = "
            f"{n_patterns * n_labels:,} cells, more than {max_cells:,}: the areal model holds a rate for every "
            "cell and synthesis draws them all for every dataset; with this many cells the counts are almost all "
            "zero and the model adds little. Use the DPMPM (bayessdc dpmpm), whose cost grows with the occupied "
            "cells only, or coarsen the kept columns (or raise --max-cells)"
        )
    return _areal_from_records(records)


# --------------------------------------------------------------------------------------------------
# The Poisson-lognormal integral


def _mode_and_rate(count: Any, location: Any, precision: Any, steps: int, xp: Any) -> tuple[Any, Any]:
    """Mode ``x*`` of ``c x - e^x - precision (x - location)^2 / 2`` and ``e^{x*}``, exactly, via Lambert's W.

    The mode solves ``e^x = c + precision (location - x)``; with ``u = location + c / precision - x`` this is
    ``u e^u = e^{location + c / precision} / precision``, so ``x* = location + c / precision - W(z)`` with
    ``log z = location + c / precision - log(precision)`` and ``e^{x*} = precision W(z)``. ``W`` solves
    ``w + log w = log z``, by Newton's method from a lower bound (``log z - log log z`` when ``log z >= 1``,
    else ``max(e^{log z - 1}, e^{log z - e^{log z}})``): the function is concave and increasing, so the
    iterates rise monotonically to the root and never overshoot, whatever the location. (Newton's method on
    the mode itself moves by at most one unit per step from the right, and a fixed number of steps left
    the grid far from the mass for locations far above a small count.)
    """
    log_z = location + count / precision - xp.log(precision)
    tiny = log_z < -30.0  # W(z) = z (1 - z + ...) to double precision
    lz = xp.maximum(log_z, -30.0)
    low = xp.minimum(lz, 1.0)
    w = xp.where(lz >= 1.0, lz - xp.log(xp.maximum(lz, 1.0)), xp.maximum(xp.exp(low - 1.0), xp.exp(low - xp.exp(low))))
    for _ in range(steps):
        w = w * (1.0 + lz - xp.log(w)) / (1.0 + w)
    w = xp.where(tiny, xp.exp(log_z), w)
    return location + count / precision - w, precision * w


#: Half-width of the quadrature grid, in Laplace standard deviations.
HALF_WIDTH = 6.0


def _grid(nodes: int) -> tuple[np.ndarray, float]:
    """Offsets (in Laplace standard deviations) and spacing of the trapezoid grid."""
    offsets = np.linspace(-HALF_WIDTH, HALF_WIDTH, nodes)
    return offsets, float(offsets[1] - offsets[0])


def log_poisson_lognormal(
    count: Any, location: Any, precision: Any, *, nodes: int = 16, newton_steps: int = 4, xp: Any = np
) -> Any:
    """``log int Poisson(count | e^x) Normal(x | location, 1 / precision) dx`` by an adaptive trapezoid rule.

    The integrand is smooth, log-concave and decays like a Gaussian or faster, for which the trapezoid
    rule converges geometrically in the spacing. Its ``nodes`` points span six Laplace standard deviations
    either side of the mode, computed exactly through Lambert's W (:func:`_mode_and_rate`): a grid centred
    anywhere else can miss the mass entirely (``tests/models/test_dp_areal.py``). Written once for numpy
    and PyTensor (``xp=pytensor.tensor``); the sampler's compiled kernel (:class:`PoissonLognormalMixture`)
    evaluates the same rule.

    Parameters
    ----------
    count
        Counts (numpy array; broadcast against ``location``).
    location, precision
        Mean and precision of the normal log rate.
    nodes
        Number of grid points. Accuracy (``tests/models/test_dp_areal.py``, against adaptive scipy quadrature):
        with 16 nodes the error is below 1e-6 nats for ``precision >= 1`` and below 5e-4 nats for
        ``precision >= 0.2`` (a standard deviation of 2.2 on the log scale), for counts 0 to 245.
    newton_steps
        Newton steps of Lambert's W for the mode (4 reach about 1e-12 relative accuracy).
    xp
        ``numpy`` or ``pytensor.tensor``.
    """
    count = np.asarray(count, dtype=float)
    offsets, spacing = _grid(nodes)
    mode, rate = _mode_and_rate(count, location, precision, newton_steps, xp)
    sd = 1.0 / xp.sqrt(rate + precision)
    x = mode[..., None] + sd[..., None] * offsets
    log_f = count[..., None] * x - xp.exp(x) - 0.5 * precision * (x - location[..., None]) ** 2
    top = log_f.max(axis=-1, keepdims=True)
    log_sum = top[..., 0] + xp.log(xp.exp(log_f - top).sum(axis=-1))
    return log_sum + xp.log(sd * spacing) + 0.5 * xp.log(precision / (2.0 * np.pi)) - special.gammaln(count + 1.0)


def poisson_lognormal_moments(
    count: np.ndarray, location: np.ndarray, precision: Any, *, nodes: int = 16, newton_steps: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Log normaliser and posterior mean of the log rate given ``count`` (numpy, same rule as above).

    Returns
    -------
    log_marginal, mean
        ``log p(count)`` as in :func:`log_poisson_lognormal` and ``E[x | count]`` with ``x`` the log rate.
    """
    count = np.asarray(count, dtype=float)
    offsets, spacing = _grid(nodes)
    mode, rate = _mode_and_rate(count, location, precision, newton_steps, np)
    sd = 1.0 / np.sqrt(rate + precision)
    x = mode[..., None] + sd[..., None] * offsets
    log_f = count[..., None] * x - np.exp(x) - 0.5 * precision * (x - location[..., None]) ** 2
    top = log_f.max(axis=-1, keepdims=True)
    f = np.exp(log_f - top)
    total = f.sum(axis=-1)
    log_marginal = (
        top[..., 0]
        + np.log(total * sd * spacing)
        + 0.5 * np.log(precision / (2.0 * np.pi))
        - special.gammaln(count + 1.0)
    )
    return log_marginal, (f * x).sum(axis=-1) / total


# --------------------------------------------------------------------------------------------------
# The likelihood as one compiled PyTensor Op (value and gradient in one pass)


@numba.njit(fastmath=True, cache=True, inline="always")
def _cell_integral(c, m, tau, log_tau, nodes, h, centre, steps):  # pragma: no cover - compiled
    """One cell and component: ``log`` of the unnormalised integral (without constants), ``E[x - m]``,
    ``E[(x - m)^2]`` under ``Poisson(c | e^x) Normal(x | m, 1 / tau)``, by the adaptive trapezoid rule
    centred at the exact mode (:func:`_mode_and_rate`)."""
    shift = m + c / tau
    lz = shift - log_tau
    if lz < -30.0:
        w = math.exp(lz)
    else:
        if lz >= 1.0:
            w = lz - math.log(lz)
        else:
            w = max(math.exp(lz - 1.0), math.exp(lz - math.exp(lz)))
        for _ in range(steps):
            w = w * (1.0 + lz - math.log(w)) / (1.0 + w)
    x = shift - w
    ex = tau * w
    sd = 1.0 / math.sqrt(ex + tau)
    step = sd * h
    ratio = math.exp(step)
    xj = x - centre * step
    exj = ex * math.exp(-centre * step)
    ref = c * x - ex - 0.5 * tau * (x - m) ** 2
    total = 0.0
    first = 0.0
    second = 0.0
    for _ in range(nodes):
        dev = xj - m
        f = math.exp(c * xj - exj - 0.5 * tau * dev * dev - ref)
        total += f
        first += f * dev
        second += f * dev * dev
        xj += step
        exj *= ratio
    return ref + math.log(total * sd), first / total, second / total


@numba.njit(fastmath=True, cache=True)
def _mixture_kernel(  # pragma: no cover - compiled
    location, log_rho, tau, count, pattern, weight, log_fact, nodes, half_width, steps
):
    """Value and gradient of the mixture log-likelihood; see :class:`PoissonLognormalMixture`."""
    K, B = location.shape
    D = count.shape[0]
    g_loc = np.zeros((K, B))
    g_rho = np.zeros(K)
    g_tau = 0.0
    value = 0.0
    a = np.empty(K)
    m1 = np.empty(K)
    m2 = np.empty(K)
    h = 2.0 * half_width / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    for d in range(D):
        c = count[d]
        b = pattern[d]
        best = -np.inf
        for k in range(K):
            log_integral, m1[k], m2[k] = _cell_integral(c, location[k, b], tau, log_tau, nodes, h, centre, steps)
            a[k] = log_rho[k] + log_integral + const - log_fact[d]
            if a[k] > best:
                best = a[k]
        acc = 0.0
        for k in range(K):
            a[k] = math.exp(a[k] - best)
            acc += a[k]
        value += weight[d] * (best + math.log(acc))
        scale = weight[d] / acc
        for k in range(K):
            r = scale * a[k]
            g_rho[k] += r
            g_loc[k, b] += r * tau * m1[k]
            g_tau += r * (0.5 / tau - 0.5 * m2[k])
    return value, g_loc, g_rho, g_tau


class PoissonLognormalMixture(Op):
    """``sum_d n_d log sum_k rho_k int Poisson(c_d | e^x) Normal(x | m_{k b_d}, 1 / tau) dx`` and its gradient.

    One numba pass returns the value and its gradient with respect to the locations ``m`` (component x
    pattern), ``log rho`` and ``tau``. The gradient is that of the exact integral,
    ``d log I / dm = tau E[x - m]`` and ``d log I / dtau = 1 / (2 tau) - E[(x - m)^2] / 2`` under the
    cell's conditional posterior, with the expectations by the same quadrature as the value (so it agrees
    with the derivative of the quadrature value to the quadrature's accuracy, see the tests). Hamiltonian
    Monte Carlo stays exact for the potential it evaluates with any position-dependent force: the
    leapfrog map is reversible and volume preserving whatever the force, and the acceptance uses the value.

    Inputs: ``location`` (K, B), ``log_rho`` (K), ``precision`` (scalar), then the data: ``count``,
    ``pattern`` (int), ``weight``, ``log_factorial`` (all of length D, the distinct pairs).
    """

    __props__ = ("nodes", "newton_steps")

    def __init__(self, nodes: int = 16, newton_steps: int = 4) -> None:
        self.nodes = int(nodes)
        self.newton_steps = int(newton_steps)

    def make_node(self, location, log_rho, precision, count, pattern, weight, log_factorial):  # noqa: D102
        import pytensor.tensor as pt
        from pytensor.graph.basic import Apply

        location = pt.as_tensor_variable(location, dtype="float64")
        log_rho = pt.as_tensor_variable(log_rho, dtype="float64")
        precision = pt.as_tensor_variable(precision, dtype="float64")
        count = pt.as_tensor_variable(count, dtype="float64")
        pattern = pt.as_tensor_variable(pattern, dtype="int64")
        weight = pt.as_tensor_variable(weight, dtype="float64")
        log_factorial = pt.as_tensor_variable(log_factorial, dtype="float64")
        inputs = [location, log_rho, precision, count, pattern, weight, log_factorial]
        outputs = [pt.dscalar(), location.type(), log_rho.type(), pt.dscalar()]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):  # noqa: D102
        location, log_rho, precision, count, pattern, weight, log_factorial = inputs
        value, g_loc, g_rho, g_tau = _mixture_kernel(
            np.ascontiguousarray(location),
            log_rho,
            float(precision),
            count,
            pattern,
            weight,
            log_factorial,
            self.nodes,
            HALF_WIDTH,
            self.newton_steps,
        )
        output_storage[0][0] = np.asarray(value)
        output_storage[1][0] = g_loc
        output_storage[2][0] = g_rho
        output_storage[3][0] = np.asarray(g_tau)

    def connection_pattern(self, node):  # noqa: D102
        return [[True, True, True, True]] * 3 + [[False, False, False, False]] * 4

    def grad(self, inputs, output_grads):  # noqa: D102
        from pytensor.gradient import DisconnectedType

        _, g_loc, g_rho, g_tau = self(*inputs)
        g = output_grads[0]
        return [g * g_loc, g * g_rho, g * g_tau] + [DisconnectedType()() for _ in range(4)]


@numba.njit(fastmath=True, cache=True)
def _allocated_kernel(  # pragma: no cover - compiled
    location, tau, label, cell_distinct, count, pattern, log_fact, nodes, half_width, steps
):
    """Value and gradient of the log-likelihood given every cell's component (:class:`PoissonLognormalGivenLabels`)."""
    K, B = location.shape
    D = count.shape[0]
    allocation = np.zeros((D, K))
    for i in range(label.shape[0]):
        allocation[cell_distinct[i], label[i]] += 1.0
    g_loc = np.zeros((K, B))
    g_tau = 0.0
    value = 0.0
    h = 2.0 * half_width / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    for d in range(D):
        c = count[d]
        b = pattern[d]
        for k in range(K):
            a = allocation[d, k]
            if a == 0.0:
                continue
            log_integral, m1, m2 = _cell_integral(c, location[k, b], tau, log_tau, nodes, h, centre, steps)
            value += a * (log_integral + const - log_fact[d])
            g_loc[k, b] += a * tau * m1
            g_tau += a * (0.5 / tau - 0.5 * m2)
    return value, g_loc, g_tau


class PoissonLognormalGivenLabels(Op):
    """``sum_cells log int Poisson(c | e^x) Normal(x | m_{z b}, 1 / tau) dx`` given every cell's component ``z``.

    The likelihood of eq. (7)-(8) with the log rates integrated out (by the quadrature of
    :class:`PoissonLognormalMixture`) but the labels given: cells sharing a ``(pattern, count)`` pair and a
    component share a term, so the cost is one integral per occupied (pair, component), whatever the number of
    cells. Value and gradient with respect to ``location`` (K, B) and ``tau`` in one numba pass.

    Inputs: ``location`` (K, B), ``precision`` (scalar), ``label`` (int, one per cell), then the data:
    ``cell_distinct`` (int, the distinct pair of every cell), ``count``, ``pattern`` (int), ``log_factorial``
    (length D).
    """

    __props__ = ("nodes", "newton_steps")

    def __init__(self, nodes: int = 16, newton_steps: int = 4) -> None:
        self.nodes = int(nodes)
        self.newton_steps = int(newton_steps)

    def make_node(self, location, precision, label, cell_distinct, count, pattern, log_factorial):  # noqa: D102
        import pytensor.tensor as pt
        from pytensor.graph.basic import Apply

        location = pt.as_tensor_variable(location, dtype="float64")
        precision = pt.as_tensor_variable(precision, dtype="float64")
        label = pt.as_tensor_variable(label).flatten().astype("int64")
        cell_distinct = pt.as_tensor_variable(cell_distinct, dtype="int64")
        count = pt.as_tensor_variable(count, dtype="float64")
        pattern = pt.as_tensor_variable(pattern, dtype="int64")
        log_factorial = pt.as_tensor_variable(log_factorial, dtype="float64")
        inputs = [location, precision, label, cell_distinct, count, pattern, log_factorial]
        return Apply(self, inputs, [pt.dscalar(), location.type(), pt.dscalar()])

    def perform(self, node, inputs, output_storage):  # noqa: D102
        location, precision, label, cell_distinct, count, pattern, log_factorial = inputs
        value, g_loc, g_tau = _allocated_kernel(
            np.ascontiguousarray(location),
            float(precision),
            label,
            cell_distinct,
            count,
            pattern,
            log_factorial,
            self.nodes,
            HALF_WIDTH,
            self.newton_steps,
        )
        output_storage[0][0] = np.asarray(value)
        output_storage[1][0] = g_loc
        output_storage[2][0] = np.asarray(g_tau)

    def connection_pattern(self, node):  # noqa: D102
        return [[True, True, True]] * 2 + [[False, False, False]] * 5

    def grad(self, inputs, output_grads):  # noqa: D102
        from pytensor.gradient import DisconnectedType

        _, g_loc, g_tau = self(*inputs)
        g = output_grads[0]
        return [g * g_loc, g * g_tau] + [DisconnectedType()() for _ in range(5)]


def _register_numba() -> None:
    from pytensor.link.numba.dispatch import numba_funcify

    @numba_funcify.register(PoissonLognormalMixture)
    def _funcify(op, node=None, **kwargs):
        nodes, steps, half_width = op.nodes, op.newton_steps, HALF_WIDTH

        @numba.njit(fastmath=True)
        def mixture(location, log_rho, precision, count, pattern, weight, log_factorial):  # pragma: no cover
            value, g_loc, g_rho, g_tau = _mixture_kernel(
                np.ascontiguousarray(location),
                log_rho,
                precision.item(),
                count,
                pattern,
                weight,
                log_factorial,
                nodes,
                half_width,
                steps,
            )
            return np.array(value), g_loc, g_rho, np.array(g_tau)

        return mixture


_register_numba()


# --------------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True)
class DPArealPriors:
    """Hyperparameters of eq. (9)-(12) (Section 2.3's settings are the defaults).

    Parameters
    ----------
    a_alpha, b_alpha
        Shape and rate of the gamma prior of the stick-breaking concentration ``alpha``.
    tau_theta, tau_phi, tau_mu, tau_lambda
        ``(shape, rate)`` of the gamma priors of the precisions of ``theta*`` (eq. 10), of ``mu_phi``
        (eq. 11), of ``mu`` (eq. 12) and of the log rates (eq. 8).
    lkj_eta
        LKJ parameter of the correlation matrix ``Omega`` of ``phi*`` (2 in the paper).
    sigma_nu, sigma_scale
        Degrees of freedom and scale of the half-t priors of the standard deviations ``sigma`` of ``phi*``.
    """

    a_alpha: float = 1.0
    b_alpha: float = 1.0
    tau_theta: tuple[float, float] = (1.0, 1.0)
    tau_phi: tuple[float, float] = (1.0, 1.0)
    tau_mu: tuple[float, float] = (1.0, 1.0)
    tau_lambda: tuple[float, float] = (1.0, 1.0)
    lkj_eta: float = 2.0
    sigma_nu: float = 3.0
    sigma_scale: float = 1.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            values = value if isinstance(value, tuple | list) else (value,)
            if len(values) not in (1, 2) or not all(float(v) > 0 for v in values):
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


PARAMETRIZATIONS = ("identified", "identified_centred", "noncentred", "centred")


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
    """Covariances of the shared and the own parts of ``w_k`` (:func:`build_model`, ``"identified"``), PyTensor.

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


def _leading(K: int, centred_components: int | None) -> int:
    return min(10, K // 2) if centred_components is None else min(max(int(centred_components), 0), K)


def build_model(
    data: ArealData,
    K: int = 50,
    priors: DPArealPriors = DPArealPriors(),
    *,
    parametrization: str = "identified",
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
        Hyperparameters of eq. (9)-(12).
    parametrization
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
        ``U_k ~ Uniform(0, 1)``, the same Beta(1, alpha) distribution.
    quadrature_nodes
        Grid points of the integral over each log rate (:func:`log_poisson_lognormal`).
    centred_components
        Under ``"identified"``, how many leading components are sampled centred (0: all non-centred; default
        ``min(10, K // 2)``). On the CE-like data (``bench/dp_areal.py``) 10 needed 2.3 times fewer
        gradients than 0 for better ESS; the components holding more than 1% of the cells were among the
        first ten in 99% of the draws.

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
    if parametrization not in PARAMETRIZATIONS:
        raise ValueError(f"parametrization must be one of {PARAMETRIZATIONS}, got {parametrization!r}")
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
        if parametrization == "centred":
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
        chol, _, _ = pm.LKJCholeskyCov(
            "chol_phi",
            n=R,
            eta=priors.lkj_eta,
            sd_dist=pm.HalfStudentT.dist(nu=priors.sigma_nu, sigma=priors.sigma_scale, shape=R),
            compute_corr=True,
        )
        # eq. (12): mu ~ Normal(0, 1 / tau_mu).
        tau_mu = pm.Gamma("tau_mu", alpha=priors.tau_mu[0], beta=priors.tau_mu[1])
        if parametrization.startswith("identified"):
            # (mu + theta*_k, phi*_k) = (mu, mu_phi) + (theta*_k, phi*_k - mu_phi): shared plus own part.
            shared_cov, own_cov = identified_covariances(V, tau_theta, tau_phi, tau_mu, chol)
            shared = pt.linalg.cholesky(shared_cov) @ pm.Normal("shared_raw", 0.0, 1.0, dims="identified")
            own_chol = pt.linalg.cholesky(own_cov)
            if parametrization == "identified":
                # Centred for the leading components, non-centred for the rest: the stick-breaking prior orders
                # the components by size, so the leading ones hold the data (their w is pinned by it, and a
                # non-centred w would have to follow every change of the covariance) and the trailing ones are
                # empty (their w is prior-only, and a centred w would form a funnel with the covariance).
                leading = _leading(K, centred_components)
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
            if parametrization == "noncentred":
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


# --------------------------------------------------------------------------------------------------
# Exact conditional draws of the labels and log rates


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
    mode, rate = _mode_and_rate(count, location, precision, 6, np)
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


@numba.njit(fastmath=True, cache=True)
def _cell_posterior_kernel(
    location, log_rho, tau, count, pattern, log_fact, nodes, half_width, steps
):  # pragma: no cover
    """Per component and distinct pair: ``log p(z = k | c, draw)`` and ``E[x | c, z = k, draw]`` (same rule)."""
    K = location.shape[0]
    D = count.shape[0]
    log_resp = np.empty((K, D))
    mean = np.empty((K, D))
    h = 2.0 * half_width / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    for d in range(D):
        c = count[d]
        b = pattern[d]
        best = -np.inf
        for k in range(K):
            m = location[k, b]
            log_integral, centred_mean, _ = _cell_integral(c, m, tau, log_tau, nodes, h, centre, steps)
            log_resp[k, d] = log_rho[k] + log_integral + const - log_fact[d]
            mean[k, d] = m + centred_mean
            if log_resp[k, d] > best:
                best = log_resp[k, d]
        acc = 0.0
        for k in range(K):
            acc += math.exp(log_resp[k, d] - best)
        norm = best + math.log(acc)
        for k in range(K):
            log_resp[k, d] -= norm
    return log_resp, mean


def cell_posterior(
    location: np.ndarray, rho: np.ndarray, tau_lambda: float, data: ArealData, *, nodes: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """Label probabilities and conditional mean log rates of every distinct ``(pattern, count)`` pair, one draw.

    Returns
    -------
    log_responsibility, mean
        ``(K, D)`` arrays: ``log p(z = k | c_d, draw)`` and ``E[log lambda | c_d, z = k, draw]``.
    """
    with np.errstate(divide="ignore"):
        log_rho = np.log(np.asarray(rho, dtype=float))
    return _cell_posterior_kernel(
        np.ascontiguousarray(location, dtype=float),
        log_rho,
        float(tau_lambda),
        data.distinct_count.astype(float),
        data.distinct_pattern,
        special.gammaln(data.distinct_count + 1.0),
        nodes,
        HALF_WIDTH,
        8,
    )


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
        From :func:`build_model` with ``labels="explicit"``.
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


# --------------------------------------------------------------------------------------------------
# The synthesizer


@dataclass
class DPArealSynthesizer:
    """Fits the DP-areal model with NUTS and synthesizes the label of every record (eq. 13-14).

    Parameters
    ----------
    K
        Truncation level (50 in Section 2.3).
    priors
        Hyperparameters of eq. (9)-(12).
    settings
        NUTS settings (nutpie by default).
    parametrization
        See :func:`build_model` (``"identified"`` by default: the fewest gradients per effective draw of the
        ones tried, see ``bench/dp_areal.py``).
    quadrature_nodes
        Grid points per log-rate integral.
    centred_components
        Leading components sampled centred under the ``"identified"`` parametrization (default
        ``min(10, K // 2)``, :func:`build_model`).
    criteria
        The convergence gate, applied to label-invariant quantities (:meth:`convergence_quantities`).
    labels
        ``"marginal"`` (default): NUTS on the model with the labels summed out. ``"explicit"``: the labels are
        model variables (:func:`build_model`) drawn exactly by a Gibbs step (:func:`label_gibbs_step`) between
        NUTS steps of everything else, with PyMC's sampler. Measured on the CE-like data
        (``bench/dp_areal.py --labels explicit``) it mixes worse per second than the default; see there.
    """

    K: int = 50
    priors: DPArealPriors = field(default_factory=DPArealPriors)
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(target_accept=0.9))
    parametrization: str = "identified"
    quadrature_nodes: int = 16
    centred_components: int | None = None
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    labels: str = "marginal"
    name: str = "dp-areal"

    def __post_init__(self) -> None:
        if self.K < 2:
            raise ValueError("K must be at least 2")
        if self.labels not in ("marginal", "explicit"):
            raise ValueError(f"labels must be 'marginal' or 'explicit', got {self.labels!r}")
        if self.parametrization not in PARAMETRIZATIONS:
            raise ValueError(f"parametrization must be one of {PARAMETRIZATIONS}, got {self.parametrization!r}")

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: ArealData, seed: int) -> az.InferenceData:
        """Sample the posterior; returns InferenceData with ``chain`` and ``draw`` dimensions.

        The posterior holds ``alpha``, ``rho`` (component), ``location`` (component, pattern), the precisions,
        and two label-invariant summaries computed exactly from every draw: ``expected_log_rate``
        (distinct pair: ``E[log lambda | c, parameters]``) and ``occupied`` (the expected number of components
        holding at least one cell, the paper's check that ``K`` is large enough).
        """
        model = build_model(
            data,
            self.K,
            self.priors,
            parametrization=self.parametrization,
            quadrature_nodes=self.quadrature_nodes,
            centred_components=self.centred_components,
            labels=self.labels,
        )
        settings, steps = self.settings, None
        if self.labels == "explicit":
            if settings.backend == "auto":
                settings = replace(settings, backend="pymc")
            nodes = self.quadrature_nodes

            def steps(model: Any) -> list[Any]:
                return [label_gibbs_step(model, data, nodes=nodes)]

        backend = resolve_backend(settings.backend)
        compiled = None
        if backend == "nutpie":
            key = (
                "dp-areal",
                self.K,
                self.parametrization,
                self.centred_components,
                self.quadrature_nodes,
                str(asdict(self.priors)),
                data.counts.tobytes(),
                data.design.tobytes(),
            )
            compiled = COMPILED_MODELS.get(key, lambda: model)
        keep = ["alpha", "stick", "rho", "location", "tau_lambda", "tau_theta", "tau_phi", "tau_mu"]
        idata = sample_model(model, settings, seed, compiled=compiled, var_names=keep, steps=steps)
        start = time.perf_counter()
        self._add_summaries(idata, data)
        idata.attrs.update(
            {
                "parametrization": self.parametrization,
                "labels": self.labels,
                # the number actually centred (netCDF attributes cannot hold None)
                "centred_components": _leading(self.K, self.centred_components)
                if self.parametrization == "identified"
                else 0,
                "quadrature_nodes": self.quadrature_nodes,
                "summary_seconds": time.perf_counter() - start,
                "n_distinct_pairs": data.n_distinct,
            }
        )
        return idata

    def _add_summaries(self, idata: az.InferenceData, data: ArealData) -> None:
        posterior = idata.posterior
        location = posterior["location"].transpose("chain", "draw", "component", "pattern").to_numpy()
        rho = posterior["rho"].transpose("chain", "draw", "component").to_numpy()
        tau = posterior["tau_lambda"].to_numpy()
        chains, draws = tau.shape
        expected = np.empty((chains, draws, data.n_distinct))
        occupied = np.empty((chains, draws))
        weight = data.distinct_weight.astype(float)
        for c in range(chains):
            for d in range(draws):
                log_resp, mean = cell_posterior(location[c, d], rho[c, d], tau[c, d], data, nodes=self.quadrature_nodes)
                resp = np.exp(log_resp)
                expected[c, d] = (resp * mean).sum(axis=0)
                # P(component k holds no cell) = prod_d (1 - r_kd)^{n_d}.
                log_empty = (weight * np.log1p(-np.minimum(resp, 1.0 - 1e-300))).sum(axis=1)
                occupied[c, d] = float((1.0 - np.exp(log_empty)).sum())
        posterior["expected_log_rate"] = (("chain", "draw", "distinct"), expected)
        posterior["occupied"] = (("chain", "draw"), occupied)
        idata.posterior = posterior.assign_coords(distinct=np.arange(data.n_distinct))

    def convergence_quantities(self, idata: az.InferenceData | None = None, data: ArealData | None = None) -> list[str]:
        """Names of the label-invariant posterior quantities the gate monitors."""
        return ["alpha", "tau_lambda", "occupied", "expected_log_rate"]

    def check(self, idata: az.InferenceData, data: ArealData | None = None) -> ConvergenceReport:
        """Apply the convergence gate to the label-invariant quantities."""
        return check_convergence(idata, self.criteria, var_names=self.convergence_quantities())

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: ArealData) -> xr.DataArray:
        """Label code of every record (dimension ``item``)."""
        return xr.DataArray(data.records.joint_code(), dims="item", name="observed")

    def candidates(self, data: ArealData) -> xr.DataArray:
        """Every label code."""
        values = np.arange(data.n_labels)
        return xr.DataArray(values, dims="candidate", coords={"candidate": values})

    def label_probabilities(self, posterior: xr.Dataset, data: ArealData, rng: np.random.Generator) -> np.ndarray:
        """eq. (13): ``p_i^(b) = lambda_i^(b) / sum_i lambda_i^(b)`` for each draw, log rates drawn exactly.

        Returns
        -------
        numpy.ndarray
            ``(sample, B, G)`` probabilities.
        """
        location = posterior["location"].transpose("sample", "component", "pattern").to_numpy()
        rho = posterior["rho"].transpose("sample", "component").to_numpy()
        tau = posterior["tau_lambda"].to_numpy()
        out = np.empty((location.shape[0], data.n_patterns, data.n_labels))
        for s in range(location.shape[0]):
            _, log_rates = draw_labels_and_log_rates(
                location[s], rho[s], tau[s], data, rng, nodes=self.quadrature_nodes
            )
            rates = np.exp(log_rates - log_rates.max(axis=1, keepdims=True))
            out[s] = rates / rates.sum(axis=1, keepdims=True)
        return out

    def candidate_log_prob(self, posterior: xr.Dataset, data: ArealData) -> xr.DataArray:
        """Not defined for this model: the release depends on the label counts of the patterns, not on a
        per-record likelihood, so the per-record importance-sampling attribute risk does not apply (the
        identification and attribute-disclosure measures of :mod:`bayessdc.risk.identification` do)."""
        raise NotImplementedError(
            "the DP-areal model has no per-record likelihood of the label; use the identification and attribute "
            "disclosure measures (bayessdc.risk.identification)"
        )

    def posterior_predictive(self, posterior: xr.Dataset, data: ArealData, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic label codes of every record, one dataset per posterior draw: dims ``(sample, item)``.

        eq. (14): each record of pattern ``b`` gets a label drawn from ``p^(b)`` of the draw; kept values
        never change.
        """
        probs = self.label_probabilities(posterior, data, rng)
        cumulative = np.cumsum(probs, axis=2)
        cumulative[..., -1] = 1.0
        pattern = data.pattern_of_record
        out = np.empty((probs.shape[0], data.records.n_records), dtype=np.int64)
        for s in range(probs.shape[0]):
            u = rng.random(pattern.size)
            rows = cumulative[s][pattern]  # (n, G)
            out[s] = np.minimum((rows < u[:, None]).sum(axis=1), data.n_labels - 1)
        return xr.DataArray(
            out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def release_frame(self, data: ArealData, joint: xr.DataArray) -> pd.DataFrame:
        """Synthetic datasets as one long table of labels with a ``synthetic`` column (1..m)."""
        values = joint.transpose("synthetic", "item").to_numpy()
        records = data.records
        column = records.synthesize_index[0]
        frames = []
        for k in range(values.shape[0]):
            codes = records.codes.copy()
            codes[:, column] = values[k]
            frames.append(records.frame(codes).assign(synthetic=k + 1))
        return pd.concat(frames, ignore_index=True)[["synthetic", *records.variables]]

    def describe(self) -> dict[str, Any]:
        """The public description of the model written to ``release/model.json`` (no estimates)."""
        p = self.priors
        return {
            "synthesizer": self.name,
            "paper": "Hu & Savitsky, Bayesian Data Synthesis and Disclosure Risk Quantification (Section 2.2)",
            "model": {
                "counts": "c_i^(b) ~ Poisson(lambda_i^(b)) for every label i and pattern b, zeros included (eq. 7)",
                "log_rates": "log lambda_i^(b) ~ Normal(mu + theta*_z + phi*_z' X^(b), 1 / tau_lambda) (eq. 8)",
                "clusters": f"z_i^(b) ~ Categorical(rho), truncated stick breaking with K = {self.K} (eq. 9)",
                "K": self.K,
                "priors": {
                    "stick": "Beta(1, alpha)",
                    "alpha": f"Gamma(shape {p.a_alpha:g}, rate {p.b_alpha:g})",
                    "theta*_k": "Normal(0, 1 / tau_theta) (eq. 10)",
                    "phi*_k": "MVN(mu_phi, diag(sigma) Omega diag(sigma)) (eq. 11)",
                    "mu_phi": "MVN(0, I / tau_phi)",
                    "Omega": f"LKJ({p.lkj_eta:g})",
                    "sigma": f"half-t({p.sigma_nu:g}, 0, {p.sigma_scale:g})",
                    "mu": "Normal(0, 1 / tau_mu) (eq. 12)",
                    "precisions": {
                        name: f"Gamma(shape {getattr(p, name)[0]:g}, rate {getattr(p, name)[1]:g})"
                        for name in ("tau_theta", "tau_phi", "tau_mu", "tau_lambda")
                    },
                },
            },
            "computation": {
                "sampler": (
                    "NUTS (nutpie) with the labels z summed out"
                    if self.labels == "marginal"
                    else "NUTS (PyMC) within Gibbs: the labels z drawn exactly from their full conditional "
                    "between NUTS steps of the other parameters"
                )
                + " and each log rate integrated out by an adaptive trapezoid rule on a Laplace-scaled grid "
                f"({self.quadrature_nodes} nodes); labels and log rates then drawn exactly from their conditional "
                "posterior for each draw used",
                "parametrization": self.parametrization,
                "labels": self.labels,
                "centred_components": self.centred_components,
                "settings": self.settings.to_dict(),
            },
            "synthesis": {
                "label": "p_i^(b) = lambda_i^(b) / sum_i lambda_i^(b), one label per record of pattern b (eq. 13-14)",
                "datasets": "each synthetic dataset uses one posterior draw, draws spaced far apart",
            },
        }


# --------------------------------------------------------------------------------------------------
# Simulator


def simulate_areal(
    n_labels: int,
    levels: Sequence[int],
    *,
    component_weights: Sequence[float] = (0.6, 0.4),
    intercepts: Sequence[float] = (-1.0, 1.5),
    effect_scale: float = 0.5,
    tau_lambda: float = 4.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Records simulated from the DP-areal model (eq. 7-9) with a few components.

    Parameters
    ----------
    n_labels
        Number of labels (counties) ``G``.
    levels
        Numbers of levels of the kept variables (columns ``v0, v1, ...``); their combinations are the patterns.
    component_weights, intercepts
        ``rho`` and the component intercepts ``mu + theta*_k``.
    effect_scale
        Standard deviation of the per-component one-hot effects ``phi*_k``.
    tau_lambda
        Precision of the log rates.
    seed
        Random seed.

    Returns
    -------
    frame, truth
        One row per record (columns ``v0, ...`` and ``label``), and ``{"log_rate": (B, G), "label": (B, G),
        "location": (K, B), "rho", "tau_lambda", "patterns": (B, p)}`` with patterns in the order of
        :func:`prepare_areal`.
    """
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.arange(d) for d in levels], indexing="ij")
    patterns = np.column_stack([g.ravel() for g in grids])
    design = np.hstack([np.eye(d)[patterns[:, j]] for j, d in enumerate(levels)])
    rho = np.asarray(component_weights, dtype=float)
    rho = rho / rho.sum()
    phi = rng.normal(0.0, effect_scale, (len(rho), design.shape[1]))
    location = np.asarray(intercepts, dtype=float)[:, None] + phi @ design.T  # (K, B)
    z = rng.choice(len(rho), size=(len(patterns), n_labels), p=rho)
    log_rate = rng.normal(location[z, np.arange(len(patterns))[:, None]], 1.0 / math.sqrt(tau_lambda))
    counts = rng.poisson(np.exp(log_rate))
    rows = []
    for b, pattern in enumerate(patterns):
        labels = np.repeat(np.arange(n_labels), counts[b])
        rows.append(np.column_stack([np.tile(pattern, (len(labels), 1)), labels]))
    table = np.vstack(rows)
    frame = pd.DataFrame(table, columns=[*(f"v{j}" for j in range(len(levels))), "label"])
    truth = {
        "log_rate": log_rate,
        "label": z,
        "location": location,
        "rho": rho,
        "tau_lambda": tau_lambda,
        "patterns": patterns,
        "counts": counts,
    }
    return frame.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True), truth
