"""DPMPM synthesizer: Dirichlet-process mixture of products of multinomials for categorical data.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys* (``../shared/papers/003_f28306c144335c50.txt`` in the development tree), Section 2.1
and 2.3, following Si & Reiter (2013) and Hu et al. (2014).

Every record ``X_i = (X_i1, ..., X_ip)`` of ``p`` categorical variables belongs to one of ``K`` latent
classes:

* eq. (1): ``X_ij | z_i, theta ~ Categorical(theta_{z_i}^(j))``, independently over ``j``;
* eq. (2): ``z_i | pi ~ Categorical(pi_1, ..., pi_K)``;
* eq. (3)-(4): ``pi_k = beta_k prod_{l<k} (1 - beta_l)``, ``beta_k ~ Beta(1, alpha)`` for ``k < K``,
  ``beta_K = 1`` (truncated stick breaking);
* eq. (5): ``alpha ~ Gamma(a_alpha, b_alpha)`` (shape, rate; 0.25, 0.25 in Section 2.3);
* eq. (6): ``theta_k^(j) ~ Dirichlet(a^(j))`` (all ones in Section 2.3).

Sufficient statistics. With ``z`` summed out, the likelihood of a record depends on its values only, so
records with the same combination of values (a *cell* of the contingency table) contribute identical
factors: ``log p(X | pi, theta) = sum_cells n_cell log sum_k pi_k prod_j theta_k^(j)[x_cell,j]``.
:func:`build_model` declares exactly that (cost proportional to the number of occupied cells, not to
``n``), and the Gibbs sampler allocates the ``n_cell`` records of a cell to components with one
multinomial draw: records of one cell are exchangeable, so the multinomial draw of the allocation counts is
the same conditional as drawing each record's ``z_i`` separately. The theta and stick updates need only the
counts per (component, variable, level), sums over cells of those allocation counts.

Cost per iteration. The multinomial is drawn by conditional binomials, largest component first, until a few
records are left, then one categorical draw for each of those (:func:`_multinomial`); the binomials are exact
and O(1) in ``n`` (:func:`_binomial`: inversion or BTPE; numba's own ``np.random.binomial`` is an inversion
costing O(n p), which made the allocation step grow with the records). Nothing in an iteration grows with
``n`` then, only with the number of occupied cells and how many components share each cell's records: on the
CE-like simulator 1,993 cells at n = 6,208 (mostly 1-3 records, one draw each) against 4,919 at
n = 1,000,000 (about 200 records, 2.6 binomials and 5 single draws each), and all 40 components occupied at
n = 1,000,000. Figures in ``bench/dpmpm.py``. Synthesis works the same way (:func:`_synthesize_cells`):
class counts per cell, values per (cell, class) group, then a seeded random assignment to the records.

Sampler. :func:`build_model` is the single source of truth for the priors: :func:`fit` reads the
hyperparameters back from the declared PyMC random variables (:func:`model_hyperparameters`) and runs a
blocked Gibbs sampler (Ishwaran & James 2001) compiled with numba on the cell counts. The alternative,
NUTS on the declared (marginalised) model, was measured on the CE-like data (``bench/dpmpm.py --nuts``) and
was two to three orders of magnitude slower in ESS per second (:data:`SAMPLER_DECISION`).

Three additions to the textbook sweep, all exact: (i) ``alpha`` is drawn given the allocations with the sticks
integrated out (slice sampling), then the sticks given ``alpha``, a joint draw of ``(alpha, beta) | z``
(about twice the ESS of alpha of the textbook ``Gamma(a + K - 1, b - sum log(1 - beta_k))`` given the
sticks, which stays selectable: ``GibbsSettings(alpha_update="conditional")``);
(ii) label-swap Metropolis moves (Papaspiliopoulos & Roberts 2008) let large components move to the front of
the stick order. Without them ``alpha`` and the number of occupied components mix very slowly, and a chain
started with every component occupied stays near 30-40 occupied components on the CE-like data for thousands
of iterations where the posterior puts 13-22; (iii) level-exchange Metropolis moves (:func:`_level_exchange`):
all records with one level of a synthesized variable swap two components, sticks and theta integrated out.
The allocation step moves records one cell at a time, so a large level whose records can sit in a component
of their own or share one (for example one of the largest counties) switched between the two configurations
only rarely: its marginal probability mixed at 2-12 ESS/s in two of six chains on the CE-like data. The
exchange moves it in one step (no chain stuck in six). Two further exact moves are selectable, off by default
because they did not help on the CE-like data: pattern exchanges (the same exchange for all records of one
pattern of the kept variables) and split-merge moves (Jain & Neal 2004 with a sequentially allocated launch,
:func:`_split_merge`). All moves are validated against the exact posterior of small problems by enumeration
in the tests. The sticks are drawn in logs: clipping ``1 - beta`` away from 0 biased ``alpha`` upwards
(caught by the flat-likelihood prior check in the tests).

Label switching: the component labels are not identified, so the convergence gate monitors label-invariant
quantities only: ``alpha``, the marginal probabilities of the levels of every synthesized variable, the
number of occupied components, and the probabilities of those levels given each pattern with at least
:data:`PATTERN_MONITOR_RECORDS` records (what the synthesis draws from). On the CE-like data the last are
the slowest: the posterior has regimes with 11, 12 or 13 large components (groupings of the patterns) that a
chain changes about once every 20,000 iterations, so the gate fails there unless the chains are very long. The
real VLSS 1997 individuals (commune synthesized) show the same more clearly (``bench/dpmpm.py --gate ... --vlss``).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Literal

import arviz as az
import numba
import numpy as np
import pandas as pd
import xarray as xr

from .sampling import ConvergenceCriteria, ConvergenceReport, check_convergence

__all__ = [
    "CONDITIONINGS",
    "SAMPLER_DECISION",
    "CategoricalData",
    "CategoricalDataError",
    "Conditioning",
    "DPMPMPriors",
    "DPMPMSynthesizer",
    "GibbsSettings",
    "build_model",
    "cell_log_likelihood",
    "model_hyperparameters",
    "prepare_categorical",
    "run_gibbs",
    "simulate_ce_like",
    "simulate_latent_class",
]

Conditioning = Literal["full", "pattern", "prior"]
CONDITIONINGS: tuple[str, ...] = ("full", "pattern", "prior")

#: Measured choice of sampler (see ``bench/dpmpm.py --nuts``); recorded in every posterior's attributes.
SAMPLER_DECISION = (
    "blocked Gibbs on cell counts (numba), chosen by measurement on the CE-like data (n = 6,208, K = 40, "
    "bench/dpmpm.py --nuts): NUTS (nutpie) on the marginalised model needed 251 s to compile and 0.85 s per draw "
    "(mean tree depth 7.4, up to 10), giving 0.6 ESS/s for alpha and 0.6-1.2 ESS/s for the largest counties' "
    "probabilities; the Gibbs sampler runs 0.5-0.65 s per 1,000 iterations with 175-220 ESS/s for alpha and "
    "526-980 ESS/s for the six largest counties' probabilities (bench/dpmpm.py, load average 2-4 on 2 cores)"
)

MISSING_LEVEL = "<missing>"

#: Updates of alpha: ``"collapsed"`` draws alpha given the allocations with the sticks integrated out (slice
#: sampling), ``"conditional"`` the textbook Gamma(a + K - 1, b - sum log(1 - beta_k)) given the sticks.
ALPHA_UPDATES: tuple[str, ...] = ("collapsed", "conditional")

#: Cells (or groups) with at most this many records are allocated one record at a time; larger ones by
#: conditional binomials, largest component first, until this many records are left (:func:`_multinomial`).
SMALL_CELL = 8
#: The convergence gate monitors p(synthesized level | pattern) for the patterns with at least this many records.
PATTERN_MONITOR_RECORDS = 50


class CategoricalDataError(ValueError):
    """The table cannot be modelled as given (the message names the column at fault and what to do)."""


# --------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class CategoricalData:
    """Categorical records coded as integers, with the cells (distinct value combinations) they occupy.

    Attributes
    ----------
    variables
        Modelled columns: the kept ones first, then the synthesized ones.
    keep, synthesize
        Columns released unchanged and columns replaced by synthetic values.
    levels
        The labels of every variable's levels, in code order.
    codes
        ``(n, p)`` level codes of every record.
    cell_codes, cell_counts, record_cell
        Distinct rows of ``codes``, how many records each holds, and each record's cell.
    """

    variables: tuple[str, ...]
    keep: tuple[str, ...]
    synthesize: tuple[str, ...]
    levels: dict[str, np.ndarray]
    codes: np.ndarray
    cell_codes: np.ndarray
    cell_counts: np.ndarray
    record_cell: np.ndarray

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.codes.shape[0])

    @property
    def n_levels(self) -> np.ndarray:
        """Number of levels of every variable, in the order of ``variables``."""
        return np.array([len(self.levels[v]) for v in self.variables], dtype=np.int64)

    @property
    def keep_index(self) -> np.ndarray:
        """Positions of the kept variables in ``variables``."""
        return np.array([self.variables.index(v) for v in self.keep], dtype=np.int64)

    @property
    def synthesize_index(self) -> np.ndarray:
        """Positions of the synthesized variables in ``variables``."""
        return np.array([self.variables.index(v) for v in self.synthesize], dtype=np.int64)

    @property
    def synthesized_shape(self) -> tuple[int, ...]:
        """Numbers of levels of the synthesized variables (their joint code is a ravelled index)."""
        return tuple(len(self.levels[v]) for v in self.synthesize)

    def joint_code(self, codes: np.ndarray | None = None) -> np.ndarray:
        """Joint code of the synthesized variables (ravelled multi-index) of every record."""
        codes = self.codes if codes is None else codes
        return np.ravel_multi_index(tuple(codes[:, j] for j in self.synthesize_index), self.synthesized_shape)

    def frame(self, codes: np.ndarray | None = None) -> pd.DataFrame:
        """The records as labels (``codes`` replaces the stored codes, same shape)."""
        codes = self.codes if codes is None else codes
        return pd.DataFrame({v: self.levels[v][codes[:, j]] for j, v in enumerate(self.variables)})

    @cached_property
    def cell_order(self) -> tuple[np.ndarray, np.ndarray]:
        """Records grouped by cell: ``(order, start)``; cell ``c`` holds ``order[start[c]:start[c + 1]]``."""
        order = np.argsort(self.record_cell, kind="stable")
        start = np.concatenate([[0], np.cumsum(self.cell_counts)]).astype(np.int64)
        return order.astype(np.int64), start

    def take(self, rows: np.ndarray | Sequence[int]) -> CategoricalData:
        """The same variables and levels restricted to ``rows`` (for per-record risk in chunks)."""
        rows = np.asarray(rows, dtype=np.int64)
        return _with_cells(self.variables, self.keep, self.synthesize, self.levels, self.codes[rows])


def _cells(codes: np.ndarray, n_levels: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``codes`` in lexicographic order, each record's row and the counts (``np.unique``).

    The rows are combined into one integer (their ravelled multi-index) when that fits, and counted with
    ``bincount`` when the table of all combinations is not much larger than the data: O(n) instead of a
    sort of the rows, which took seconds at a million records.
    """
    n_levels = [max(int(d), 1) for d in n_levels]
    size = 1.0
    for d in n_levels:
        size *= d
    if codes.shape[0] == 0 or size >= 2.0**62:
        cell_codes, record_cell, cell_counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return cell_codes, record_cell.ravel(), cell_counts
    combined = np.ravel_multi_index(tuple(codes.T), n_levels)
    if size <= 4 * codes.shape[0] + 1_000_000:
        counts = np.bincount(combined, minlength=int(size))
        occupied = np.flatnonzero(counts)
        position = np.zeros(int(size), dtype=np.int64)
        position[occupied] = np.arange(len(occupied))
        record_cell, cell_counts = position[combined], counts[occupied]
    else:
        occupied, record_cell, cell_counts = np.unique(combined, return_inverse=True, return_counts=True)
    cell_codes = np.column_stack(np.unravel_index(occupied, n_levels))
    return cell_codes, record_cell.ravel(), cell_counts


def _with_cells(variables, keep, synthesize, levels, codes) -> CategoricalData:
    cell_codes, record_cell, cell_counts = _cells(codes, [len(levels[v]) for v in variables])
    return CategoricalData(
        variables=tuple(variables),
        keep=tuple(keep),
        synthesize=tuple(synthesize),
        levels=dict(levels),
        codes=np.ascontiguousarray(codes, dtype=np.int64),
        cell_codes=np.ascontiguousarray(cell_codes, dtype=np.int64),
        cell_counts=cell_counts.astype(np.int64),
        record_cell=record_cell.ravel().astype(np.int64),
    )


def prepare_categorical(
    frame: pd.DataFrame,
    synthesize: Sequence[str],
    keep: Sequence[str],
    *,
    max_levels: int = 500,
    missing: Literal["refuse", "level"] = "refuse",
) -> CategoricalData:
    """Check a table and code it for the DPMPM, refusing bad input before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    synthesize
        Columns to replace by synthetic values (at least one).
    keep
        Columns released unchanged; they are modelled and condition the synthesis.
    max_levels
        Largest number of distinct values a column may have.
    missing
        ``"refuse"`` (default) stops at a missing value; ``"level"`` treats missing values as a level
        of their own (``"<missing>"``).

    Returns
    -------
    CategoricalData

    Raises
    ------
    CategoricalDataError
        No column to synthesize, a column both synthesized and kept or named twice, an unknown column,
        a column with too many levels or with non-integer numbers (continuous: bin it first), missing
        values (unless ``missing="level"``), an empty table.
    """
    synthesize, keep = list(synthesize), list(keep)
    if not synthesize:
        raise CategoricalDataError("no column to synthesize: give at least one with --synthesize")
    both = sorted(set(synthesize) & set(keep))
    if both:
        raise CategoricalDataError(
            f"column(s) {', '.join(map(repr, both))} are both synthesized and kept: a column is either replaced "
            "by synthetic values (--synthesize) or released unchanged (--keep), not both"
        )
    for name, cols in (("--synthesize", synthesize), ("--keep", keep)):
        twice = sorted({c for c in cols if cols.count(c) > 1})
        if twice:
            raise CategoricalDataError(f"column(s) {', '.join(map(repr, twice))} named twice in {name}")
    unknown = [c for c in synthesize + keep if c not in frame.columns]
    if unknown:
        raise CategoricalDataError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; the table has "
            f"{', '.join(repr(str(c)) for c in frame.columns)}"
        )
    if len(frame) == 0:
        raise CategoricalDataError("the table has no records")
    if missing not in ("refuse", "level"):
        raise ValueError("missing must be 'refuse' or 'level'")
    variables = keep + synthesize
    levels: dict[str, np.ndarray] = {}
    codes = np.empty((len(frame), len(variables)), dtype=np.int64)
    for j, col in enumerate(variables):
        values = frame[col]
        is_missing = values.isna().to_numpy()
        if is_missing.any():
            if missing == "refuse":
                rows = np.flatnonzero(is_missing)[:5] + 1
                raise CategoricalDataError(
                    f"column {col!r} has {int(is_missing.sum())} missing value(s) (data rows "
                    f"{', '.join(map(str, rows))}{' ...' if is_missing.sum() > 5 else ''}); remove or impute them, "
                    "or treat missing as a level of its own (--missing level)"
                )
            values = values.astype(object).where(~is_missing, MISSING_LEVEL)
        if pd.api.types.is_float_dtype(values.dtype):
            finite = values.to_numpy(dtype=float)
            if not np.all(finite == np.round(finite)):
                raise CategoricalDataError(
                    f"column {col!r} holds non-integer numbers ({values.nunique()} distinct values): it looks "
                    "continuous; the DPMPM models categorical data, so bin it first (for example into quantile "
                    "groups) and pass the binned column"
                )
        uniques = pd.unique(values)
        if len(uniques) > max_levels:
            kind = "numeric" if pd.api.types.is_numeric_dtype(values.dtype) else "categorical"
            raise CategoricalDataError(
                f"column {col!r} ({kind}) has {len(uniques)} distinct values, more than {max_levels}: "
                "bin it into fewer categories first (or raise --max-levels if it really is a label)"
            )
        try:
            ordered = np.sort(np.asarray(uniques))
        except TypeError:
            ordered = np.asarray(sorted(uniques, key=str), dtype=object)
        levels[col] = ordered
        codes[:, j] = pd.Index(ordered).get_indexer(values)
    return _with_cells(variables, keep, synthesize, levels, codes)


# --------------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True)
class DPMPMPriors:
    """Hyperparameters of eq. (5) and (6) (Section 2.3's values are the defaults).

    Parameters
    ----------
    a_alpha, b_alpha
        Shape and rate of the gamma prior of the concentration ``alpha``.
    theta_concentration
        The common value of the Dirichlet parameters ``a_1^(j) = ... = a_dj^(j)``.
    """

    a_alpha: float = 0.25
    b_alpha: float = 0.25
    theta_concentration: float = 1.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not value > 0:
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


def level_dim(variable: str) -> str:
    """Name of the dimension holding the levels of ``variable``."""
    return f"{variable}_level"


def build_model(data: CategoricalData, K: int = 40, priors: DPMPMPriors = DPMPMPriors()) -> Any:
    """Declare the DPMPM of Section 2.1 (eq. 1-6) in PyMC, with the latent class summed out.

    Parameters
    ----------
    data
        Coded records and their cells.
    K
        Truncation level: number of mixture components.
    priors
        Hyperparameters of eq. (5)-(6).

    Returns
    -------
    pymc.Model
        Dimensions ``component`` (K), ``stick`` (K - 1), ``cell`` and ``<variable>_level`` for every
        variable; free variables ``alpha``, ``beta`` (stick), ``theta_<variable>`` (component, level);
        deterministic ``pi``; the likelihood is a potential over the occupied cells weighted by their counts.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if K < 2:
        raise ValueError("K must be at least 2")
    coords: dict[str, Any] = {
        "component": np.arange(K),
        "stick": np.arange(K - 1),
        "cell": np.arange(len(data.cell_counts)),
    }
    for v in data.variables:
        coords[level_dim(v)] = [str(x) for x in data.levels[v]]
    with pm.Model(coords=coords) as model:
        cell_codes = pm.Data("cell_codes", data.cell_codes, dims=("cell", "variable"))
        cell_counts = pm.Data("cell_counts", data.cell_counts, dims="cell")
        # eq. (5): alpha ~ Gamma(a_alpha, b_alpha), shape and rate.
        alpha = pm.Gamma("alpha", alpha=priors.a_alpha, beta=priors.b_alpha)
        # eq. (4): beta_k ~ Beta(1, alpha) for k < K; beta_K = 1.
        beta = pm.Beta("beta", alpha=1.0, beta=alpha, dims="stick")
        # eq. (3): pi_k = beta_k prod_{l<k} (1 - beta_l).
        remaining = pt.concatenate([pt.ones(1), pt.cumprod(1 - beta)])
        pi = pm.Deterministic("pi", pt.concatenate([beta, pt.ones(1)]) * remaining, dims="component")
        # eq. (6): theta_k^(j) ~ Dirichlet(a^(j)), one per component and variable.
        log_cell = pt.log(pi)[None, :]
        for j, v in enumerate(data.variables):
            d = len(data.levels[v])
            theta = pm.Dirichlet(
                f"theta_{v}", a=np.full((K, d), priors.theta_concentration), dims=("component", level_dim(v))
            )
            # eq. (1): the factor theta_k^(j)[x_cj] of every cell c and component k.
            log_cell = log_cell + pt.log(theta).T[cell_codes[:, j]]
        # eq. (2) summed over z_i, records of one cell sharing the factor: sum_c n_c log sum_k (...).
        pm.Potential("cells", (cell_counts * pm.math.logsumexp(log_cell, axis=1).ravel()).sum())
    return model


def model_hyperparameters(model: Any, data: CategoricalData) -> dict[str, Any]:
    """Read the hyperparameters of eq. (5)-(6) back from the declared model (for the Gibbs sampler).

    Returns
    -------
    dict
        ``K``, ``a_alpha``, ``b_alpha`` (shape and rate of alpha's prior), ``beta_a`` (the first Beta
        parameter of the sticks) and ``theta_concentration`` (a list, one ``(K, d_j)`` array per variable).
    """
    import pymc as pm

    alpha_rv = model["alpha"]
    # PyMC's gamma random variable is parametrised by shape and scale = 1 / rate.
    shape, scale = (float(pm.draw(x)) for x in alpha_rv.owner.inputs[-2:])
    beta_rv = model["beta"]
    beta_a = np.asarray(pm.draw(beta_rv.owner.inputs[-2]), dtype=float)
    concentrations = [np.asarray(pm.draw(model[f"theta_{v}"].owner.inputs[-1]), dtype=float) for v in data.variables]
    return {
        "K": int(model.dim_lengths["component"].eval()),
        "a_alpha": shape,
        "b_alpha": 1.0 / scale,
        "beta_a": float(np.broadcast_to(beta_a, (1,))[0]),
        "theta_concentration": concentrations,
    }


def cell_log_likelihood(pi: np.ndarray, thetas: Sequence[np.ndarray], data: CategoricalData) -> float:
    """``sum_c n_c log sum_k pi_k prod_j theta_k^(j)[x_cj]`` in numpy (the potential of :func:`build_model`)."""
    log_cell = np.log(pi)[None, :] + sum(np.log(t).T[data.cell_codes[:, j]] for j, t in enumerate(thetas))
    top = log_cell.max(axis=1, keepdims=True)
    return float((data.cell_counts * (top[:, 0] + np.log(np.exp(log_cell - top).sum(axis=1)))).sum())


# --------------------------------------------------------------------------------------------------
# Blocked Gibbs sampler on the cell counts


@dataclass(frozen=True)
class GibbsSettings:
    """Settings of the blocked Gibbs sampler.

    Parameters
    ----------
    draws
        Iterations kept per chain after burn-in (before thinning).
    burn
        Burn-in iterations per chain.
    chains
        Independent chains (run one after another; r_hat needs at least 2).
    thin
        Keep every ``thin``-th iteration (bounds the memory of the stored ``theta``).
    label_swaps
        K label-swap Metropolis moves per iteration (Papaspiliopoulos & Roberts 2008). Without them the
        sampler keeps the correct target but the stick order, alpha and the number of occupied components
        mix very slowly (kept switchable for that comparison).
    alpha_update
        ``"collapsed"`` (default): alpha given the allocations with the sticks integrated out, by slice
        sampling; ``"conditional"``: alpha given the sticks, Gamma(a_alpha + K - 1, b_alpha - sum log(1 -
        beta_k)). Both exact; kept switchable for the measured comparison in ``bench/dpmpm.py``.
    exchange_moves
        Level-exchange Metropolis moves per iteration, in multiples of K (0: none): all records with one
        level of a synthesized variable swap components ``i`` and ``j`` (:func:`_level_exchange`; the level
        drawn in proportion to its records), so a large level can move between a component of its own and
        a shared one in one step. Measured on the CE-like data (six seeds, one chain of 10,000 iterations
        each): without them the smallest ESS/s over the county probabilities was 2 and 12 in two of the six
        chains (one of the largest counties stuck in one configuration), 469-685 in the others; with K moves
        120-595 in all six, for 10-25% more time per iteration.
    pattern_moves
        Pattern-exchange Metropolis moves per iteration, in multiples of K (0: none, the default): the same
        exchange for all records of one pattern of the kept variables, so the grouping of the patterns into
        components can change in one step. On the CE-like data the posterior has regimes with 11, 12 or 13
        large components (groupings of the 40 patterns). Four chains of 60,000 iterations changed regime 12
        times without these moves and 9 times with them, at about 10% more time per iteration (2026-11-23).
    split_merge_moves
        Split-merge Metropolis-Hastings moves per iteration (:func:`_split_merge`; Jain & Neal 2004 with a
        sequentially allocated launch, Dahl 2003), default off: on the CE-like data 10 of them per iteration
        made each iteration three to five times slower, and the regime changes did not become more frequent.
    launch_scans
        Restricted Gibbs scans that build a split-merge move's launch state.
    likelihood_power
        Sample the power posterior, prior times likelihood to this power (1, the default: the posterior). A
        diagnostic of the posterior's geometry, not for synthesis: the allocation uses ``theta^power`` and
        theta is drawn from ``Dirichlet(a + power * counts)``; the exchange and split-merge moves, whose
        ratios are written for power 1, are skipped below 1. On the CE-like data (``bench/dpmpm.py --powers``)
        flattening the likelihood does not dissolve the regimes of the posterior, it merges components: at
        0.97 the chain changes regime a few times more often than at 1, at 0.9 and below it sits in fewer,
        equally stuck components; so parallel tempering is not the remedy for their slow mixing (2026-11-23).
    """

    draws: int = 4000
    burn: int = 1000
    chains: int = 2
    thin: int = 4
    label_swaps: bool = True
    alpha_update: str = "collapsed"
    exchange_moves: int = 1
    pattern_moves: int = 0
    split_merge_moves: int = 0
    launch_scans: int = 2
    likelihood_power: float = 1.0

    def __post_init__(self) -> None:
        for name in ("draws", "burn", "chains", "thin"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < (0 if name == "burn" else 1):
                raise ValueError(f"Gibbs setting {name!r} must be a positive integer, got {value!r}")
        if self.draws // self.thin < 1:
            raise ValueError("draws / thin must leave at least one stored draw")
        if not isinstance(self.exchange_moves, int | np.integer) or self.exchange_moves < 0:
            raise ValueError(f"exchange_moves must be a non-negative integer, got {self.exchange_moves!r}")
        if not isinstance(self.split_merge_moves, int | np.integer) or self.split_merge_moves < 0:
            raise ValueError(f"split_merge_moves must be a non-negative integer, got {self.split_merge_moves!r}")
        if not isinstance(self.pattern_moves, int | np.integer) or self.pattern_moves < 0:
            raise ValueError(f"pattern_moves must be a non-negative integer, got {self.pattern_moves!r}")
        if not isinstance(self.launch_scans, int | np.integer) or self.launch_scans < 0:
            raise ValueError(f"launch_scans must be a non-negative integer, got {self.launch_scans!r}")
        if not (isinstance(self.likelihood_power, int | float) and 0.0 < self.likelihood_power <= 1.0):
            raise ValueError(f"likelihood_power must be in (0, 1], got {self.likelihood_power!r}")
        if self.alpha_update not in ALPHA_UPDATES:
            raise ValueError(f"alpha_update must be one of {ALPHA_UPDATES}, got {self.alpha_update!r}")

    @property
    def stored(self) -> int:
        """Stored draws per chain."""
        return self.draws // self.thin

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dictionary."""
        return asdict(self)


# --------------------------------------------------------------------------------------------------
# Exact binomial and multinomial draws in compiled code (numba's generator)
#
# numba's own ``np.random.binomial`` (legacy API) is an inversion whose cost grows with ``n p`` and which,
# when ``(1 - p)^n`` underflows, splits ``n`` by ``n >>= 2`` and silently drops up to three trials. The
# draws below are exact and cost O(1) in ``n``: inversion when ``n min(p, 1 - p) <= 30``, BTPE
# (Kachitvichyanukul & Schmeiser 1988, as in numpy) otherwise, with its final acceptance test done with
# exact log-factorials instead of Stirling's series.


_RECIPROCALS = 1.0 / np.maximum(np.arange(256), 1)


@numba.njit(cache=True, nogil=True)
def _binomial_inversion(n: int, p: float) -> int:
    """Binomial(n, p) by inversion, for ``p <= 0.5`` and ``n p <= 30`` (numpy's algorithm)."""
    q = 1.0 - p
    ratio = p / q
    qn = np.exp(n * np.log1p(-p))
    bound = min(float(n), n * p + 10.0 * np.sqrt(n * p * q + 1.0))
    x = 0
    px = qn
    u = np.random.random()  # noqa: NPY002 - numba's generator
    while u > px:
        x += 1
        if x > bound:  # beyond 10 sd (or rounding): start again
            x = 0
            px = qn
            u = np.random.random()  # noqa: NPY002 - numba's generator
        else:
            u -= px
            # P(x) / P(x - 1) = (n - x + 1) / x * p / q, with 1 / x from a table (a division per step was
            # most of the cost)
            px *= (n - x + 1) * ratio * (_RECIPROCALS[x] if x < _RECIPROCALS.shape[0] else 1.0 / x)
    return x


@numba.njit(cache=True, nogil=True)
def _binomial_btpe(n: int, r: float) -> int:
    """Binomial(n, r) by BTPE for ``r <= 0.5`` and ``n r > 30``; exact log-factorials in the last test."""
    q = 1.0 - r
    fm = n * r + r
    m = int(np.floor(fm))
    nrq = n * r * q
    p1 = np.floor(2.195 * np.sqrt(nrq) - 4.6 * q) + 0.5
    xm = m + 0.5
    xl = xm - p1
    xr = xm + p1
    c = 0.134 + 20.5 / (15.3 + m)
    a = (fm - xl) / (fm - xl * r)
    laml = a * (1.0 + a / 2.0)
    a = (xr - fm) / (xr * q)
    lamr = a * (1.0 + a / 2.0)
    p2 = p1 * (1.0 + 2.0 * c)
    p3 = p2 + c / laml
    p4 = p3 + c / lamr
    log_fm = np.nan  # log m! (n - m)!, computed when first needed
    while True:
        u = np.random.random() * p4  # noqa: NPY002 - numba's generator
        v = np.random.random()  # noqa: NPY002 - numba's generator
        if u <= p1:  # triangular region: accepted at once
            return int(np.floor(xm - p1 * v + u))
        if u <= p2:  # parallelograms
            x = xl + (u - p1) / c
            v = v * c + 1.0 - abs(m - x + 0.5) / p1
            if v > 1.0:
                continue
            y = int(np.floor(x))
        elif u <= p3:  # left exponential tail
            y = int(np.floor(xl + np.log(v) / laml))
            if y < 0 or v == 0.0:
                continue
            v = v * (u - p2) * laml
        else:  # right exponential tail
            y = int(np.floor(xr - np.log(v) / lamr))
            if y > n or v == 0.0:
                continue
            v = v * (u - p3) * lamr
        k = abs(y - m)
        if k <= 20 or k >= nrq / 2.0 - 1.0:
            # f(y) / f(m) by the recursion of the probabilities
            s = r / q
            a = s * (n + 1)
            f = 1.0
            if m < y:
                for i in range(m + 1, y + 1):
                    f *= a / i - s
            elif m > y:
                for i in range(y + 1, m + 1):
                    f /= a / i - s
            if v <= f:
                return y
            continue
        # squeeze on log f(y) / f(m), then the exact value
        rho = (k / nrq) * ((k * (k / 3.0 + 0.625) + 0.16666666666666666) / nrq + 0.5)
        t = -k * k / (2.0 * nrq)
        log_v = np.log(v)
        if log_v < t - rho:
            return y
        if log_v > t + rho:
            continue
        if np.isnan(log_fm):
            log_fm = math.lgamma(m + 1.0) + math.lgamma(n - m + 1.0)
        if log_v <= log_fm - math.lgamma(y + 1.0) - math.lgamma(n - y + 1.0) + (y - m) * np.log(r / q):
            return y


@numba.njit(cache=True, nogil=True)
def _binomial(n: int, p: float) -> int:
    """An exact Binomial(n, p) draw from numba's generator, O(1) expected cost in ``n``."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p <= 0.5:
        return _binomial_inversion(n, p) if n * p <= 30.0 else _binomial_btpe(n, p)
    q = 1.0 - p
    return n - (_binomial_inversion(n, q) if n * q <= 30.0 else _binomial_btpe(n, q))


@numba.njit(cache=True, nogil=True)
def _multinomial(
    n: int,
    prob: np.ndarray,
    out: np.ndarray,
    scratch: np.ndarray,
    small: int,
    largest: int = -1,
    total: float = 0.0,
) -> None:
    """``out`` = an exact Multinomial(n, prob / sum(prob)) draw (``prob`` non-negative, not normalised).

    Conditional binomials, largest probability first, while more than ``small`` trials are left; the
    remaining trials are then independent categorical draws over the components not yet drawn (given the
    counts drawn so far, the rest is multinomial over the rest), by ``left`` sorted uniforms and one sweep.
    Cost O(K) per binomial plus O(K + left^2) for the rest, independent of ``n`` when the probabilities are
    concentrated. ``prob`` is overwritten: the entries of the components drawn by binomials are set to zero.
    ``largest`` and ``total``, when given (``largest >= 0``), are the position of the largest probability
    and the sum, known to the caller: the first scan is then skipped.
    """
    K = prob.shape[0]
    for k in range(K):
        out[k] = 0
    left = n
    fallback = -1
    while left > small:
        if largest >= 0:
            best, rest = largest, total
            largest = -1
        else:
            best = 0
            rest = 0.0
            for k in range(K):
                rest += prob[k]
                if prob[k] > prob[best]:
                    best = k
        top = prob[best]
        if not (top > 0.0 and rest > 0.0):
            break
        q = top / rest
        m = left if q >= 1.0 else _binomial(left, q)
        out[best] = m
        left -= m
        prob[best] = 0.0  # drawn: out of the rest
        fallback = best
    if left == 0:
        return
    rest = 0.0
    last = -1
    for k in range(K):
        if prob[k] > 0.0:
            rest += prob[k]
            last = k
    if last < 0:  # nothing left with positive probability (cannot happen with a positive total)
        out[max(fallback, 0)] += left
        return
    if left <= scratch.shape[0]:
        for i in range(left):
            u = np.random.random() * rest  # noqa: NPY002 - numba's generator
            h = i
            while h > 0 and scratch[h - 1] > u:
                scratch[h] = scratch[h - 1]
                h -= 1
            scratch[h] = u
        i = 0
        acc = 0.0
        for k in range(last):
            acc += prob[k]
            while i < left and scratch[i] < acc:
                out[k] += 1
                i += 1
            if i == left:
                return
        out[last] += left - i
        return
    for _ in range(left):
        u = np.random.random() * rest  # noqa: NPY002 - numba's generator
        acc = 0.0
        chosen = last
        for k in range(last):
            acc += prob[k]
            if u < acc:
                chosen = k
                break
        out[chosen] += 1


@numba.njit(cache=True)
def _draw_binomials(n: np.ndarray, p: np.ndarray, seed: int) -> np.ndarray:
    """Vectorised :func:`_binomial` (for tests)."""
    np.random.seed(seed)  # noqa: NPY002 - numba's generator
    out = np.empty(n.shape[0], dtype=np.int64)
    for i in range(n.shape[0]):
        out[i] = _binomial(n[i], p[i])
    return out


@numba.njit(cache=True)
def _draw_multinomials(n: int, prob: np.ndarray, size: int, small: int, seed: int) -> np.ndarray:
    """``size`` draws of :func:`_multinomial` (for tests)."""
    np.random.seed(seed)  # noqa: NPY002 - numba's generator
    K = prob.shape[0]
    out = np.empty((size, K), dtype=np.int64)
    scratch = np.empty(small, dtype=np.float64)
    work = np.empty(K)
    for i in range(size):
        work[:] = prob
        _multinomial(n, work, out[i], scratch, small)
    return out


@numba.njit(cache=True, nogil=True)
def _gamma(shape: float) -> float:
    """A Gamma(shape, 1) draw; shape 1 (an empty level under the Dirichlet(1, ..., 1) prior) as -log U."""
    if shape == 1.0:
        return -np.log(1.0 - np.random.random())  # noqa: NPY002 - numba's generator
    return np.random.gamma(shape, 1.0)  # noqa: NPY002 - numba's generator


@numba.njit(cache=True, nogil=True)
def _log_gamma_draw(shape: float) -> float:
    """``log X`` for ``X ~ Gamma(shape, 1)``, exact for small shapes (``X = Gamma(shape + 1) U^(1/shape)``)."""
    if shape < 1.0:
        return np.log(np.random.gamma(shape + 1.0, 1.0)) + np.log(np.random.random()) / shape  # noqa: NPY002
    return np.log(np.random.gamma(shape, 1.0))  # noqa: NPY002


@numba.njit(cache=True, nogil=True)
def _log_alpha_density(u: float, n_k: np.ndarray, a_alpha: float, b_alpha: float, beta_a: float) -> float:
    """``log p(log alpha = u | z)`` up to a constant: eq. (5) prior, sticks of eq. (3)-(4) integrated out."""
    alpha = np.exp(u)
    K = n_k.shape[0]
    total = a_alpha * u - b_alpha * alpha  # Gamma(a, b) density in log alpha, Jacobian included
    tail = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            # log B(a + n_k, alpha + tail_k) - log B(a, alpha)
            total += math.lgamma(alpha + tail) - math.lgamma(beta_a + n_k[k] + alpha + tail)
            total += math.lgamma(beta_a + alpha) - math.lgamma(alpha)
        tail += n_k[k]
    return total


@numba.njit(cache=True, nogil=True)
def _slice_log_alpha(alpha: float, n_k: np.ndarray, a_alpha: float, b_alpha: float, beta_a: float) -> float:
    """One slice-sampling update (stepping out, shrinkage; Neal 2003) of ``log alpha`` given the allocations."""
    u0 = np.log(alpha)
    level = _log_alpha_density(u0, n_k, a_alpha, b_alpha, beta_a) + np.log(np.random.random())  # noqa: NPY002
    width = 1.0
    left = u0 - width * np.random.random()  # noqa: NPY002
    right = left + width
    for _ in range(50):
        if _log_alpha_density(left, n_k, a_alpha, b_alpha, beta_a) <= level:
            break
        left -= width
    for _ in range(50):
        if _log_alpha_density(right, n_k, a_alpha, b_alpha, beta_a) <= level:
            break
        right += width
    for _ in range(200):
        u = left + (right - left) * np.random.random()  # noqa: NPY002
        if _log_alpha_density(u, n_k, a_alpha, b_alpha, beta_a) > level:
            return np.exp(u)
        if u < u0:
            left = u
        else:
            right = u
    return alpha


@numba.njit(cache=True, nogil=True)
def _log_allocation_prob(n_k: np.ndarray, alpha: float, beta_a: float) -> float:
    """``log p(z | alpha)`` with the sticks integrated out, up to terms that do not depend on the order.

    ``prod_{k<K} B(a + n_k, alpha + sum_{l>k} n_l) / B(a, alpha)`` (eq. 3-4 with beta_k ~ Beta(a, alpha)).
    """
    K = n_k.shape[0]
    tail = 0.0
    total = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            total += (
                math.lgamma(beta_a + n_k[k]) + math.lgamma(alpha + tail) - math.lgamma(beta_a + n_k[k] + alpha + tail)
            )
        tail += n_k[k]
    return total


@numba.njit(cache=True, nogil=True)
def _resize_log_ratio(n_k: np.ndarray, i: int, new_i: int, j: int, new_j: int, alpha: float, beta_a: float) -> float:
    """Change of :func:`_log_allocation_prob` when component ``i`` holds ``new_i`` records and ``j`` ``new_j``.

    Only the factors of the components between the two change (the tail sums above ``max(i, j)`` and below
    ``min(i, j)`` do not, the total being kept), so the cost is O(|i - j|) log-gamma calls rather than O(K).
    """
    K = n_k.shape[0]
    lo, hi = min(i, j), max(i, j)
    tail = 0.0
    for m in range(hi + 1, K):
        tail += n_k[m]
    change = 0.0
    before = tail
    after = tail
    for k in range(hi, lo - 1, -1):
        old = n_k[k]
        new = new_i if k == i else (new_j if k == j else old)
        if k < K - 1:
            change += math.lgamma(beta_a + new) + math.lgamma(alpha + after)
            change -= math.lgamma(beta_a + new + alpha + after)
            change -= math.lgamma(beta_a + old) + math.lgamma(alpha + before)
            change += math.lgamma(beta_a + old + alpha + before)
        before += old
        after += new
    return change


@numba.njit(cache=True, nogil=True)
def _swap_log_ratio(n_k: np.ndarray, j: int, l: int, alpha: float, beta_a: float) -> float:
    """Change of :func:`_log_allocation_prob` when the sizes of components ``j`` and ``l`` are swapped."""
    return _resize_log_ratio(n_k, j, n_k[l], l, n_k[j], alpha, beta_a)


@numba.njit(cache=True, nogil=True)
def _level_exchange(
    level: int,
    i: int,
    j: int,
    allocation: np.ndarray,  # (C, K) records of every cell in every component
    cells: np.ndarray,  # the cells holding ``level``
    cell_index: np.ndarray,
    concentration: np.ndarray,
    total_concentration: np.ndarray,  # (K, p) sum of the Dirichlet parameters of every variable
    counts: np.ndarray,
    n_k: np.ndarray,
    alpha: float,
    beta_a: float,
    change: np.ndarray,  # (L,) work, zero on entry and on exit
    touched: np.ndarray,  # (L,) work
    seen: np.ndarray,  # (L,) work, False on entry and on exit
    cell_counts: np.ndarray,
    last_choice: np.ndarray,  # (C, small) the component of every record of the small cells
) -> bool:
    """Metropolis exchange of the records with ``level`` between components ``i`` and ``j`` (all of them).

    The exchange is its own reverse and is proposed with the same probability from either state, so the
    acceptance ratio is the ratio of ``p(allocations | alpha)`` with the sticks and theta integrated out
    (truncated stick breaking: :func:`_log_allocation_prob`; Dirichlet-multinomial per component and
    variable); the multinomial coefficients of the cells do not change. It moves a level's records from a
    shared component to an empty one (or back) in one step, which the allocation step can only do record by
    record through states of low probability. Returns whether it was accepted (then ``allocation``,
    ``counts`` and ``n_k`` are updated).
    """
    p = cell_index.shape[1]
    moved = 0  # records that go from j to i, net
    n_touched = 0
    for c in cells:
        diff = allocation[c, j] - allocation[c, i]
        if diff == 0:
            continue
        moved += diff
        for v in range(p):
            l = cell_index[c, v]
            if not seen[l]:
                seen[l] = True
                touched[n_touched] = l
                n_touched += 1
            change[l] += diff
    if n_touched == 0:
        return False
    log_ratio = 0.0
    new_i, new_j = n_k[i] + moved, n_k[j] - moved
    for v in range(p):
        log_ratio += math.lgamma(total_concentration[i, v] + n_k[i]) - math.lgamma(total_concentration[i, v] + new_i)
        log_ratio += math.lgamma(total_concentration[j, v] + n_k[j]) - math.lgamma(total_concentration[j, v] + new_j)
    for t in range(n_touched):
        l = touched[t]
        d = change[l]
        if d == 0:
            continue
        a_i, a_j = concentration[i, l] + counts[i, l], concentration[j, l] + counts[j, l]
        log_ratio += math.lgamma(a_i + d) - math.lgamma(a_i) + math.lgamma(a_j - d) - math.lgamma(a_j)
    log_ratio += _resize_log_ratio(n_k, i, new_i, j, new_j, alpha, beta_a)
    accept = np.log(np.random.random()) < log_ratio  # noqa: NPY002 - numba's generator, seeded per chain
    if accept:
        n_k[i], n_k[j] = new_i, new_j
        for c in cells:
            allocation[c, i], allocation[c, j] = allocation[c, j], allocation[c, i]
            if cell_counts[c] <= last_choice.shape[1]:  # a small cell: its records' components, relabelled
                for r in range(cell_counts[c]):
                    if last_choice[c, r] == i:
                        last_choice[c, r] = j
                    elif last_choice[c, r] == j:
                        last_choice[c, r] = i
        for t in range(n_touched):
            l = touched[t]
            counts[i, l] += change[l]
            counts[j, l] -= change[l]
    for t in range(n_touched):
        change[touched[t]] = 0
        seen[touched[t]] = False
    return accept


@numba.njit(cache=True, nogil=True)
def _component_log_marginal(
    k: int, level_counts: np.ndarray, size: int, concentration: np.ndarray, total_concentration: np.ndarray
) -> float:
    """``log`` Dirichlet-multinomial probability of a component's records, theta integrated out (eq. 6).

    ``sum_j [lgamma(A_kj) - lgamma(A_kj + n_k) + sum_{l in j} (lgamma(a_kl + n_kl) - lgamma(a_kl))]``.
    """
    total = 0.0
    for v in range(total_concentration.shape[1]):
        total += math.lgamma(total_concentration[k, v]) - math.lgamma(total_concentration[k, v] + size)
    for l in range(level_counts.shape[0]):
        if level_counts[l] > 0:
            total += math.lgamma(concentration[k, l] + level_counts[l]) - math.lgamma(concentration[k, l])
    return total


@numba.njit(cache=True, nogil=True)
def _predictive_weight(
    c: int, k: int, size: int, level_counts: np.ndarray, cell_index: np.ndarray, concentration: np.ndarray,
    total_concentration: np.ndarray,
) -> float:  # fmt: skip
    """``size * p(x_c | the component's records)``, theta integrated out: the sequential allocation weight."""
    w = float(size)
    for v in range(cell_index.shape[1]):
        l = cell_index[c, v]
        w *= (concentration[k, l] + level_counts[l]) / (total_concentration[k, v] + size)
    return w


@numba.njit(cache=True, nogil=True)
def _move_record(c: int, level_counts: np.ndarray, cell_index: np.ndarray, step: int) -> None:
    for v in range(cell_index.shape[1]):
        level_counts[cell_index[c, v]] += step


@numba.njit(cache=True, nogil=True)
def _split_merge(
    allocation: np.ndarray,  # (C, K) records of every cell in every component
    cell_index: np.ndarray,
    cell_counts: np.ndarray,
    cell_start: np.ndarray,  # (C + 1,) first record of every cell on a 0..n-1 record axis
    concentration: np.ndarray,
    total_concentration: np.ndarray,
    counts: np.ndarray,
    n_k: np.ndarray,
    alpha: float,
    beta_a: float,
    last_choice: np.ndarray,
    launch_scans: int,
    order: np.ndarray,  # (C,) work
    launch: np.ndarray,  # (C,) work: records of the ordered cells in the first component (launch state)
    proposed: np.ndarray,  # (C,) work: the same in the proposed split
    target: np.ndarray,  # (max cell count,) work: one cell's per-record labels (1: first component)
    first_counts: np.ndarray,  # (L,) work
    second_counts: np.ndarray,  # (L,) work
) -> int:
    """One split-merge Metropolis-Hastings move with a restricted-Gibbs launch state (Jain & Neal 2004).

    Two distinct records are drawn uniformly. The other records of their component(s), ``S``, are given a
    launch state over two components that depends on ``S`` only: a sequential allocation (Dahl 2003: cell by
    cell in a random order, one record at a time, with probability proportional to size times the predictive
    probability given the records placed so far, theta integrated out: :func:`_predictive_weight`), then
    ``launch_scans`` restricted Gibbs scans. If the two records share component ``k``, the split is proposed
    by one more restricted Gibbs scan from the launch state, the second record opening an empty component
    ``k'`` drawn uniformly among the ``E`` empty ones. If they sit in different components, the merge into the
    first record's component is proposed, and the reverse split's probability is that of the same final
    scan ending in the current allocation (records of one cell are exchangeable, so which of them sit in each
    component is a uniformly random labelling). The acceptance ratio is the ratio of ``p(allocations | alpha)``
    (sticks and theta integrated out: :func:`_log_allocation_prob`, :func:`_component_log_marginal`) times the
    proposal ratio, with ``1 / E`` for choosing ``k'``. Records are distinguishable in this argument (one label
    per record); the cells' counts follow because every labelling with the same counts is equally probable.

    Returns 1 for an accepted split, -1 for an accepted merge, 0 otherwise.
    """
    n_cells = cell_counts.shape[0]
    K, L = counts.shape
    n = cell_start[n_cells]
    if n < 2:
        return 0
    # two distinct records, each located by (cell, component): records of a cell are ordered by component
    first = np.random.randint(0, n)  # noqa: NPY002 - numba's generator, seeded per chain
    second = np.random.randint(0, n - 1)  # noqa: NPY002 - numba's generator, seeded per chain
    if second >= first:
        second += 1
    cells = np.zeros(2, dtype=np.int64)
    comps = np.zeros(2, dtype=np.int64)
    for t in range(2):
        record = first if t == 0 else second
        lo, hi = 0, n_cells - 1
        while lo < hi:  # the cell c with cell_start[c] <= record < cell_start[c + 1]
            mid = (lo + hi + 1) // 2
            if cell_start[mid] <= record:
                lo = mid
            else:
                hi = mid - 1
        cells[t] = lo
        offset = record - cell_start[lo]
        for k in range(K):
            offset -= allocation[lo, k]
            if offset < 0:
                comps[t] = k
                break
    c1, c2 = cells[0], cells[1]
    k1 = comps[0]
    split = comps[0] == comps[1]
    empty = 0
    for k in range(K):
        if n_k[k] == 0:
            empty += 1
    if split:
        if empty == 0:
            return 0
        pick = np.random.randint(0, empty)  # noqa: NPY002 - numba's generator, seeded per chain
        k2 = -1
        for k in range(K):
            if n_k[k] == 0:
                if pick == 0:
                    k2 = k
                    break
                pick -= 1
    else:
        k2 = comps[1]
    # the cells holding records of S, in a random order
    m = 0
    for c in range(n_cells):
        if allocation[c, k1] + allocation[c, k2] > 0:
            order[m] = c
            m += 1
    for t in range(m - 1, 0, -1):
        s = np.random.randint(0, t + 1)  # noqa: NPY002 - numba's generator, seeded per chain
        order[t], order[s] = order[s], order[t]
    # launch state: the anchors, then S allocated sequentially
    first_counts[:] = 0
    second_counts[:] = 0
    _move_record(c1, first_counts, cell_index, 1)
    _move_record(c2, second_counts, cell_index, 1)
    size1, size2 = 1, 1
    for t in range(m):
        c = order[t]
        in_s = allocation[c, k1] + allocation[c, k2] - (1 if c == c1 else 0) - (1 if c == c2 else 0)
        stay = 0
        for _ in range(in_s):
            w1 = _predictive_weight(c, k1, size1, first_counts, cell_index, concentration, total_concentration)
            w2 = _predictive_weight(c, k2, size2, second_counts, cell_index, concentration, total_concentration)
            if np.random.random() * (w1 + w2) < w1:  # noqa: NPY002 - numba's generator, seeded per chain
                stay += 1
                size1 += 1
                _move_record(c, first_counts, cell_index, 1)
            else:
                size2 += 1
                _move_record(c, second_counts, cell_index, 1)
        launch[t] = stay
    # restricted Gibbs scans: each record of S, in turn, between the two components given all the others;
    # the last one is the proposal (split) or the reverse proposal's probability (merge)
    log_q = 0.0
    for scan in range(launch_scans + 1):
        final = scan == launch_scans
        for t in range(m):
            c = order[t]
            in_s = allocation[c, k1] + allocation[c, k2] - (1 if c == c1 else 0) - (1 if c == c2 else 0)
            if final and not split:  # the current labelling of the cell's records, uniformly random
                left1 = allocation[c, k1] - (1 if c == c1 else 0)
                for r in range(in_s):
                    if np.random.random() * (in_s - r) < left1:  # noqa: NPY002 - numba's generator, seeded per chain
                        target[r] = 1
                        left1 -= 1
                    else:
                        target[r] = 0
            now = 0
            for r in range(in_s):
                # the record's launch label: the cell's first launch[t] records are in the first component
                if r < launch[t]:
                    size1 -= 1
                    _move_record(c, first_counts, cell_index, -1)
                else:
                    size2 -= 1
                    _move_record(c, second_counts, cell_index, -1)
                w1 = _predictive_weight(c, k1, size1, first_counts, cell_index, concentration, total_concentration)
                w2 = _predictive_weight(c, k2, size2, second_counts, cell_index, concentration, total_concentration)
                p1 = w1 / (w1 + w2) if w1 + w2 > 0 else 0.5
                if final and not split:
                    to_first = target[r] == 1
                else:
                    to_first = np.random.random() < p1  # noqa: NPY002 - numba's generator, seeded per chain
                if final:
                    log_q += math.log(max(p1 if to_first else 1.0 - p1, 1e-300))
                if to_first:
                    now += 1
                    size1 += 1
                    _move_record(c, first_counts, cell_index, 1)
                else:
                    size2 += 1
                    _move_record(c, second_counts, cell_index, 1)
            if final:
                proposed[t] = now
            else:
                launch[t] = now
    if split:
        log_ratio = (
            _component_log_marginal(k1, first_counts, size1, concentration, total_concentration)
            + _component_log_marginal(k2, second_counts, size2, concentration, total_concentration)
            - _component_log_marginal(k1, counts[k1], n_k[k1], concentration, total_concentration)
            + _resize_log_ratio(n_k, k1, size1, k2, size2, alpha, beta_a)
            - log_q
            + math.log(empty)
        )
    else:
        for l in range(L):
            first_counts[l] = counts[k1, l] + counts[k2, l]
        merged = n_k[k1] + n_k[k2]
        log_ratio = (
            _component_log_marginal(k1, first_counts, merged, concentration, total_concentration)
            - _component_log_marginal(k1, counts[k1], n_k[k1], concentration, total_concentration)
            - _component_log_marginal(k2, counts[k2], n_k[k2], concentration, total_concentration)
            + _resize_log_ratio(n_k, k1, merged, k2, 0, alpha, beta_a)
            + log_q
            - math.log(empty + 1)
        )
    if not np.log(np.random.random()) < log_ratio:  # noqa: NPY002 - numba's generator, seeded per chain
        return 0
    small = last_choice.shape[1]
    for t in range(m):
        c = order[t]
        total = allocation[c, k1] + allocation[c, k2]
        new1 = proposed[t] + (1 if c == c1 else 0) if split else total
        allocation[c, k1] = new1
        allocation[c, k2] = total - new1
        if cell_counts[c] <= small:  # a small cell: its records' components, rewritten
            given = 0
            for r in range(cell_counts[c]):
                if last_choice[c, r] == k1 or last_choice[c, r] == k2:
                    last_choice[c, r] = k1 if given < new1 else k2
                    given += 1
    if split:
        n_k[k1], n_k[k2] = size1, size2
        for l in range(L):
            counts[k1, l] = first_counts[l]
            counts[k2, l] = second_counts[l]
        return 1
    n_k[k1], n_k[k2] = merged, 0
    for l in range(L):
        counts[k1, l] = first_counts[l]
        counts[k2, l] = 0
    return -1


@numba.njit(cache=True, nogil=True)
def _weighted_index(cdf: np.ndarray) -> int:
    """An index drawn with probabilities proportional to the increments of the cumulative ``cdf``."""
    u = np.random.random() * cdf[-1]  # noqa: NPY002 - numba's generator, seeded per chain
    lo, hi = 0, cdf.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if u < cdf[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True)
def _component_pair(K: int) -> tuple[int, int]:
    """Two distinct components, uniformly."""
    i = np.random.randint(0, K)  # noqa: NPY002 - numba's generator, seeded per chain
    j = np.random.randint(0, K - 1)  # noqa: NPY002 - numba's generator, seeded per chain
    if j >= i:
        j += 1
    return i, j


@numba.njit(cache=True, nogil=True)
def _gibbs_chain(
    cell_index: np.ndarray,  # (C, p) positions in the flat level axis
    cell_counts: np.ndarray,  # (C,)
    var_start: np.ndarray,  # (p + 1,) start of every variable's levels on the flat axis
    concentration: np.ndarray,  # (K, L) Dirichlet parameters, flat level axis
    a_alpha: float,
    b_alpha: float,
    beta_a: float,
    burn: int,
    draws: int,
    thin: int,
    seed: int,
    swap_moves: int,
    small_cell: int,
    alpha_mode: int,
    level_cells: np.ndarray,  # cells grouped by their level of the moved variables (flat level axis)
    level_cell_start: np.ndarray,  # (L + 1,) cells of flat level l: level_cells[start[l]:start[l + 1]]
    move_levels: np.ndarray,  # flat levels whose records the exchange moves act on
    move_cdf: np.ndarray,  # cumulative proposal probabilities of those levels
    pattern_cells: np.ndarray,  # cells grouped by their pattern (values of the kept variables)
    pattern_start: np.ndarray,  # (patterns + 1,) cells of pattern g: pattern_cells[start[g]:start[g + 1]]
    pattern_cdf: np.ndarray,  # cumulative proposal probabilities of the patterns (their records)
    pattern_moves: int,
    exchange_moves: int,
    split_merge_moves: int,
    launch_scans: int,
    power: float,  # the likelihood's power (1: the posterior)
):
    # numba keeps its own random state (the legacy numpy API inside compiled code): seeded here, per chain.
    np.random.seed(seed)  # noqa: NPY002 - numba's generator, seeded per chain
    n_cells, p = cell_index.shape
    K, L = concentration.shape
    stored = draws // thin
    alpha_out = np.empty(stored)
    pi_out = np.empty((stored, K))
    theta_out = np.empty((stored, K, L))
    occupied_out = np.empty(stored, dtype=np.int64)

    # Initial state: alpha = 1, equal weights, theta from its prior.
    alpha = 1.0
    pi = np.full(K, 1.0 / K)
    theta = np.empty((K, L))
    for k in range(K):
        for j in range(p):
            s = 0.0
            for l in range(var_start[j], var_start[j + 1]):
                theta[k, l] = np.random.gamma(concentration[k, l], 1.0)  # noqa: NPY002 - numba's generator, seeded per chain
                s += theta[k, l]
            for l in range(var_start[j], var_start[j + 1]):
                theta[k, l] /= s
    log_w = np.empty(K)
    prob = np.empty(K)
    cdf = np.empty(K)
    drawn = np.zeros(K, dtype=np.int64)
    scratch = np.empty(small_cell, dtype=np.float64)
    # keep every cell's allocation between the steps
    track = exchange_moves > 0 or split_merge_moves > 0 or pattern_moves > 0
    allocation = np.zeros((n_cells if track else 0, K), dtype=np.int64)
    last_choice = np.zeros((n_cells if track else 0, small_cell), dtype=np.int64)
    cell_start = np.zeros(n_cells + 1, dtype=np.int64)
    for c in range(n_cells):
        cell_start[c + 1] = cell_start[c] + cell_counts[c]
    order = np.empty(n_cells, dtype=np.int64)
    launch = np.empty(n_cells, dtype=np.int64)
    proposed = np.empty(n_cells, dtype=np.int64)
    target = np.empty(max(1, cell_counts.max()), dtype=np.int64)
    first_counts = np.zeros(L, dtype=np.int64)
    second_counts = np.zeros(L, dtype=np.int64)
    change = np.zeros(L, dtype=np.int64)
    touched = np.zeros(L, dtype=np.int64)
    seen = np.zeros(L, dtype=np.bool_)
    total_concentration = np.zeros((K, p))
    for k in range(K):
        for j in range(p):
            for l in range(var_start[j], var_start[j + 1]):
                total_concentration[k, j] += concentration[k, l]
    prefix = np.empty((p + 1, K))
    previous = np.empty(p, dtype=np.int64)
    n_k = np.zeros(K, dtype=np.int64)
    counts = np.zeros((K, L), dtype=np.int64)
    log_beta = np.empty(K)
    log_one_minus = np.empty(K)
    kept = 0
    theta_t = np.empty((L, K))  # theta transposed: a level's values over components are contiguous
    for it in range(burn + draws):
        for k in range(K):
            for l in range(L):
                theta_t[l, k] = theta[k, l] if power == 1.0 else theta[k, l] ** power
        n_k[:] = 0
        counts[:, :] = 0
        for k in range(K):
            prefix[0, k] = pi[k]
        # z | pi, theta, X: allocate each cell's records to components (eq. 1-2). Records of a cell are
        # exchangeable, so their allocation counts are one Multinomial(n_c, p(z = k | cell)) draw; only the
        # counts per (component, level) are kept, which is all the theta and stick updates need.
        # prefix[j] = pi * prod_{i<j} theta^(i)[x_ci]: consecutive cells (sorted) share leading values,
        # so only the products from the first differing variable on are recomputed.
        for j in range(p):
            previous[j] = -1
        for c in range(n_cells):
            n_c = cell_counts[c]
            first = p
            for j in range(p):
                if cell_index[c, j] != previous[j]:
                    first = j
                    break
            for j in range(first, p):
                row = cell_index[c, j]
                previous[j] = row
                for k in range(K):
                    prefix[j + 1, k] = prefix[j, k] * theta_t[row, k]
            total = 0.0
            best = 0
            for k in range(K):
                prob[k] = prefix[p, k]
                total += prob[k]
                cdf[k] = total
                if prob[k] > prob[best]:
                    best = k
            if not (total > 1e-280 and total < np.inf):
                # Underflow with many variables: redo this cell in logs.
                top = -np.inf
                for k in range(K):
                    v = np.log(pi[k])
                    for j in range(p):
                        v += np.log(theta_t[cell_index[c, j], k])
                    log_w[k] = v
                    top = max(top, v)
                total = 0.0
                best = 0
                for k in range(K):
                    prob[k] = np.exp(log_w[k] - top)
                    total += prob[k]
                    cdf[k] = total
                    if prob[k] > prob[best]:
                        best = k
            if n_c <= small_cell:
                # A few records: one categorical draw each.
                if track:
                    for r in range(n_c):  # clear last iteration's entries of this cell (cheaper than K)
                        allocation[c, last_choice[c, r]] = 0
                for r in range(n_c):
                    u = np.random.random() * total  # noqa: NPY002 - numba's generator, seeded per chain
                    chosen = K - 1
                    for k in range(K):
                        if u < cdf[k]:
                            chosen = k
                            break
                    n_k[chosen] += 1
                    if track:
                        allocation[c, chosen] += 1
                        last_choice[c, r] = chosen
                    for j in range(p):
                        counts[chosen, cell_index[c, j]] += 1
                continue
            _multinomial(n_c, prob, drawn, scratch, small_cell, best, total)
            for k in range(K):
                m = drawn[k]
                if track:
                    allocation[c, k] = m
                if m > 0:
                    n_k[k] += m
                    for j in range(p):
                        counts[k, cell_index[c, j]] += m
        # Level-exchange moves (theta and the sticks integrated out; see _level_exchange), right after the
        # allocations (the per-cell allocations are not kept up to date by the label swaps). Theta is stale
        # from here until its draw below: the label swaps carry it along without using it.
        for _ in range(exchange_moves if power == 1.0 else 0):
            # a level drawn in proportion to its records (a fixed choice, the same from either state)
            level = move_levels[_weighted_index(move_cdf)]
            i, j = _component_pair(K)
            if counts[i, level] == 0 and counts[j, level] == 0:
                continue
            cells = level_cells[level_cell_start[level] : level_cell_start[level + 1]]
            _level_exchange(
                level, i, j, allocation, cells, cell_index, concentration, total_concentration,
                counts, n_k, alpha, beta_a, change, touched, seen, cell_counts, last_choice,
            )  # fmt: skip
        # Pattern-exchange moves: the same exchange for all records of one pattern (one combination of the
        # kept variables), so whole patterns move between components and the grouping of the patterns into
        # components can change without passing through splits and merges of large components.
        for _ in range(pattern_moves if power == 1.0 else 0):
            pattern = _weighted_index(pattern_cdf)
            i, j = _component_pair(K)
            cells = pattern_cells[pattern_start[pattern] : pattern_start[pattern + 1]]
            _level_exchange(
                -1, i, j, allocation, cells, cell_index, concentration, total_concentration,
                counts, n_k, alpha, beta_a, change, touched, seen, cell_counts, last_choice,
            )  # fmt: skip
        # Split-merge moves (sticks and theta integrated out; see _split_merge): they open and close whole
        # components in one step, which the allocation step does only one record at a time.
        for _ in range(split_merge_moves if power == 1.0 else 0):
            _split_merge(
                allocation, cell_index, cell_counts, cell_start, concentration, total_concentration, counts, n_k,
                alpha, beta_a, last_choice, launch_scans, order, launch, proposed, target, first_counts,
                second_counts,
            )  # fmt: skip
        # Label-swap moves (Papaspiliopoulos & Roberts 2008): relabel components j <-> l (allocations and
        # theta together) with pi integrated out; see _log_allocation_prob. Without them the stick order, and
        # with it alpha, mixes only as fast as large components change places, which they almost never do.
        for move in range(swap_moves):
            j = np.random.randint(0, K)  # noqa: NPY002 - numba's generator, seeded per chain
            if move % 2 == 0:
                l = np.random.randint(0, K - 1)  # noqa: NPY002 - numba's generator, seeded per chain
                if l >= j:
                    l += 1
            else:
                l = j + 1 if j < K - 1 else j - 1
            if n_k[j] == n_k[l]:
                continue
            log_ratio = _swap_log_ratio(n_k, j, l, alpha, beta_a)
            if np.log(np.random.random()) < log_ratio:  # noqa: NPY002 - numba's generator, seeded per chain
                n_k[j], n_k[l] = n_k[l], n_k[j]
                for col in range(L):
                    counts[j, col], counts[l, col] = counts[l, col], counts[j, col]
                    theta[j, col], theta[l, col] = theta[l, col], theta[j, col]
        if alpha_mode == 0:
            # alpha | z with the sticks integrated out (slice sampling on log alpha), then beta | z, alpha
            # below: together an exact draw of (alpha, beta) | z, which mixes alpha about twice as well
            # as alpha | beta (measured: bench/dpmpm.py --configs collapsed,1 conditional,1).
            alpha = _slice_log_alpha(alpha, n_k, a_alpha, b_alpha, beta_a)
        # beta | z, alpha (eq. 4): Beta(a + n_k, alpha + sum_{l>k} n_l), drawn in logs as X / (X + Y) with
        # gamma X, Y: for small alpha, 1 - beta underflows and clipping it would bias alpha upwards.
        tail = 0
        for k in range(K - 1, -1, -1):
            if k < K - 1:
                log_x = _log_gamma_draw(beta_a + n_k[k])
                log_y = _log_gamma_draw(alpha + tail)
                top = max(log_x, log_y)
                norm = top + np.log(np.exp(log_x - top) + np.exp(log_y - top))
                log_beta[k] = log_x - norm
                log_one_minus[k] = log_y - norm
            tail += n_k[k]
        if alpha_mode == 1:
            # alpha | beta (eq. 4-5): Gamma(a_alpha + K - 1, rate b_alpha - sum_{k<K} log(1 - beta_k)).
            rate = b_alpha
            for k in range(K - 1):
                rate -= log_one_minus[k]
            alpha = np.random.gamma(a_alpha + K - 1, 1.0 / rate)  # noqa: NPY002 - numba's generator, seeded per chain
        # pi by eq. (3), in logs.
        running = 0.0
        for k in range(K):
            if k < K - 1:
                pi[k] = max(np.exp(log_beta[k] + running), 1e-300)
                running += log_one_minus[k]
            else:
                pi[k] = max(np.exp(running), 1e-300)
        # theta_k^(j) | z, X (eq. 6): Dirichlet(a + counts) (a + power * counts under a power of the likelihood).
        for k in range(K):
            for j in range(p):
                s = 0.0
                for l in range(var_start[j], var_start[j + 1]):
                    g = _gamma(concentration[k, l] + power * counts[k, l])
                    theta[k, l] = g
                    s += g
                for l in range(var_start[j], var_start[j + 1]):
                    theta[k, l] = max(theta[k, l] / s, 1e-300)
        if it >= burn and (it - burn) % thin == thin - 1 and kept < stored:
            alpha_out[kept] = alpha
            pi_out[kept] = pi
            theta_out[kept] = theta
            occ = 0
            for k in range(K):
                if n_k[k] > 0:
                    occ += 1
            occupied_out[kept] = occ
            kept += 1
    return alpha_out, pi_out, theta_out, occupied_out


def run_gibbs(
    data: CategoricalData,
    hyperparameters: dict[str, Any],
    settings: GibbsSettings,
    seed: int,
    cores: int | None = None,
) -> dict[str, np.ndarray]:
    """Run the blocked Gibbs sampler; arrays with leading ``(chain, draw)`` axes.

    Parameters
    ----------
    data
        Coded records and cells.
    hyperparameters
        From :func:`model_hyperparameters`.
    settings
        Iterations, chains and thinning.
    seed
        Seed of the run: chain ``c`` uses a seed derived from ``(seed, c)``.
    cores
        Chains run at once in threads (default: as many as there are cores and chains).

    Returns
    -------
    dict
        ``alpha`` (chain, draw), ``pi`` (chain, draw, component), ``theta`` (chain, draw, component,
        flat level), ``occupied`` (chain, draw) and ``var_start`` (offsets of the variables on the flat
        level axis).
    """
    n_levels = data.n_levels
    var_start = np.concatenate([[0], np.cumsum(n_levels)]).astype(np.int64)
    cell_index = np.ascontiguousarray(data.cell_codes + var_start[:-1][None, :])
    concentration = np.ascontiguousarray(np.concatenate(hyperparameters["theta_concentration"], axis=1))
    seeds = np.random.SeedSequence([int(seed), 7]).generate_state(settings.chains)
    # cells grouped by their level of every synthesized variable, for the level-exchange moves
    move_levels = np.concatenate(
        [np.arange(var_start[j], var_start[j + 1]) for j in data.synthesize_index] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    flat = cell_index[:, data.synthesize_index]  # (C, J)
    owner = np.repeat(np.arange(len(cell_index)), flat.shape[1])
    order = np.argsort(flat.ravel(), kind="stable")
    level_cells = np.ascontiguousarray(owner[order]).astype(np.int64)
    level_cell_start = np.concatenate([[0], np.cumsum(np.bincount(flat.ravel(), minlength=int(var_start[-1])))])
    level_cell_start = level_cell_start.astype(np.int64)
    exchanges = settings.exchange_moves * hyperparameters["K"] if len(move_levels) else 0
    level_records = np.zeros(int(var_start[-1]))
    for j in data.synthesize_index:
        np.add.at(level_records, cell_index[:, j], data.cell_counts)
    # levels proposed in proportion to their records: the large levels are the slowly mixing ones
    move_cdf = np.cumsum(level_records[move_levels]) if len(move_levels) else np.ones(1)
    # cells grouped by pattern (their values of the kept variables), for the pattern-exchange moves
    if len(data.keep_index):
        _, pattern_of = np.unique(data.cell_codes[:, data.keep_index], axis=0, return_inverse=True)
        pattern_of = pattern_of.ravel()
    else:
        pattern_of = np.zeros(len(cell_index), dtype=np.int64)
    pattern_cells = np.argsort(pattern_of, kind="stable").astype(np.int64)
    pattern_start = np.concatenate([[0], np.cumsum(np.bincount(pattern_of))]).astype(np.int64)
    pattern_cdf = np.cumsum(np.bincount(pattern_of, weights=data.cell_counts)).astype(np.float64)
    pattern_moves = settings.pattern_moves * hyperparameters["K"] if len(data.keep_index) else 0

    def one_chain(chain: int) -> tuple[np.ndarray, ...]:
        return _gibbs_chain(
            cell_index,
            data.cell_counts,
            var_start,
            concentration,
            float(hyperparameters["a_alpha"]),
            float(hyperparameters["b_alpha"]),
            float(hyperparameters["beta_a"]),
            settings.burn,
            settings.draws,
            settings.thin,
            int(seeds[chain] % (2**31 - 1)),
            hyperparameters["K"] if settings.label_swaps else 0,
            SMALL_CELL,
            ALPHA_UPDATES.index(settings.alpha_update),
            level_cells,
            level_cell_start,
            move_levels,
            move_cdf,
            pattern_cells,
            pattern_start,
            pattern_cdf,
            pattern_moves,
            exchanges,
            settings.split_merge_moves,
            settings.launch_scans,
            float(settings.likelihood_power),
        )

    # Chains run in threads (the compiled sweep releases the GIL; numba's random state is per thread and
    # seeded inside each chain, so the draws do not depend on the number of threads).
    workers = max(1, min(settings.chains, cores if cores is not None else (os.cpu_count() or 1)))
    if workers == 1:
        chains = [one_chain(c) for c in range(settings.chains)]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            chains = list(pool.map(one_chain, range(settings.chains)))
    out = {key: [chain[i] for chain in chains] for i, key in enumerate(("alpha", "pi", "theta", "occupied"))}
    result = {key: np.stack(values) for key, values in out.items()}
    result["var_start"] = var_start
    return result


# --------------------------------------------------------------------------------------------------
# Synthesis in compiled code


@numba.njit(cache=True, nogil=True)
def _level_draws(m: int, cdf: np.ndarray, start: int, stop: int, out: np.ndarray, column: int, first: int) -> bool:
    """``m`` independent draws of a level (codes ``0 .. stop - start - 1``) with cumulative probabilities
    ``cdf[start:stop]`` into ``out[first:first + m, column]``. Few draws: one binary search each; many:
    the level counts by conditional binomials, written in level order (then the caller shuffles them).
    Returns whether the values were written in level order.
    """
    d = stop - start
    total = cdf[stop - 1]
    if m <= 8 * d:
        for i in range(m):
            u = np.random.random() * total  # noqa: NPY002 - numba's generator
            lo, hi = start, stop - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if u < cdf[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            out[first + i, column] = lo - start
        return False
    left = m
    position = first
    below = 0.0
    for l in range(start, stop):
        if left == 0:
            break
        rest = total - below
        mass = cdf[l] - below
        below = cdf[l]
        if l == stop - 1 or mass >= rest:
            count = left
        else:
            count = _binomial(left, mass / rest) if rest > 0.0 else 0
        for _ in range(count):
            out[position, column] = l - start
            position += 1
        left -= count
    return True


@numba.njit(cache=True, nogil=True)
def _synthesize_cells(
    order: np.ndarray,  # (n,) records grouped by cell
    cell_start: np.ndarray,  # (C + 1,)
    class_weights: np.ndarray,  # (C, K) p(z = k | the conditioning values of the cell), not necessarily normalised
    theta_cdf: np.ndarray,  # (K, L) cumulative theta of every synthesized variable along its own block of levels
    syn_start: np.ndarray,  # (J + 1,) blocks of the synthesized variables on the level axis of theta_cdf
    seed: int,
    small: int,
) -> np.ndarray:
    """Synthesized level codes ``(n, J)``: per cell, the class counts of its records (one multinomial), per
    (cell, class) group the values of every synthesized variable, then a random assignment to the records.

    The records of a cell are exchangeable (equal in every modelled variable), so this is the same
    distribution as a class and values drawn per record, at a cost that grows with the records only through
    the final assignment.
    """
    np.random.seed(seed)  # noqa: NPY002 - numba's generator, seeded per dataset
    n_cells, K = class_weights.shape
    J = syn_start.shape[0] - 1
    out = np.empty((order.shape[0], J), dtype=np.int64)
    drawn = np.zeros(K, dtype=np.int64)
    weights = np.empty(K)
    scratch = np.empty(small, dtype=np.float64)
    largest = 0
    for c in range(n_cells):
        largest = max(largest, cell_start[c + 1] - cell_start[c])
    slots = np.empty((largest, J), dtype=np.int64)
    for c in range(n_cells):
        first = cell_start[c]
        n_c = cell_start[c + 1] - first
        weights[:] = class_weights[c]
        _multinomial(n_c, weights, drawn, scratch, small)
        position = 0
        for k in range(K):
            m = drawn[k]
            if m == 0:
                continue
            for r in range(J):
                in_order = _level_draws(m, theta_cdf[k], syn_start[r], syn_start[r + 1], slots, r, position)
                if in_order and J > 1:
                    # values of different variables are independent given the class: shuffle within the group
                    for i in range(m - 1, 0, -1):
                        h = np.random.randint(0, i + 1)  # noqa: NPY002 - numba's generator
                        slots[position + i, r], slots[position + h, r] = slots[position + h, r], slots[position + i, r]
            position += m
        # a uniformly random assignment of the cell's synthesized rows to its records
        for i in range(n_c - 1, -1, -1):
            h = np.random.randint(0, i + 1) if i > 0 else 0  # noqa: NPY002 - numba's generator
            record = order[first + i]
            for r in range(J):
                out[record, r] = slots[h, r]
                slots[h, r] = slots[i, r]
    return out


# --------------------------------------------------------------------------------------------------
# The synthesizer


@dataclass
class DPMPMSynthesizer:
    """Fits the DPMPM and synthesizes the chosen variables of every record (partially synthetic).

    Parameters
    ----------
    K
        Truncation level (40 in Section 2.3).
    priors
        Hyperparameters of eq. (5)-(6).
    settings
        Blocked Gibbs settings.
    conditioning
        How each record's latent class is drawn for synthesis: ``"full"`` given all of the record's values
        (the usual DPMPM synthesis, as in NPBayesImputeCat), ``"pattern"`` given only the values that are
        not synthesized, ``"prior"`` from ``pi`` alone (the literal reading of eq. 2).
    criteria
        The convergence gate, applied to label-invariant quantities.
    """

    K: int = 40
    priors: DPMPMPriors = field(default_factory=DPMPMPriors)
    settings: GibbsSettings = field(default_factory=GibbsSettings)
    conditioning: str = "full"
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    name: str = "dpmpm"

    def __post_init__(self) -> None:
        if self.conditioning not in CONDITIONINGS:
            raise ValueError(f"conditioning must be one of {CONDITIONINGS}, got {self.conditioning!r}")
        if self.K < 2:
            raise ValueError("K must be at least 2")
        if self.settings.likelihood_power != 1.0:
            raise ValueError(
                f"likelihood_power {self.settings.likelihood_power} samples the power posterior, a diagnostic that "
                "must not feed a release: run it with run_gibbs (bench/dpmpm.py --powers), not the synthesizer"
            )

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: CategoricalData, seed: int) -> az.InferenceData:
        """Sample the posterior by blocked Gibbs; returns InferenceData with ``chain`` and ``draw`` dims.

        The posterior holds ``alpha``, ``pi`` (component), ``theta_<variable>`` (component, level) for
        every variable, ``occupied`` (components holding at least one record at that iteration) and
        ``marginal_<variable>`` (level) for every synthesized variable: ``sum_k pi_k theta_k^(j)``.
        """
        model = build_model(data, self.K, self.priors)
        hyper = model_hyperparameters(model, data)
        start = time.perf_counter()
        raw = run_gibbs(data, hyper, self.settings, seed)
        seconds = time.perf_counter() - start
        chains, draws = raw["alpha"].shape
        coords: dict[str, Any] = {"chain": np.arange(chains), "draw": np.arange(draws), "component": np.arange(self.K)}
        variables: dict[str, Any] = {
            "alpha": (("chain", "draw"), raw["alpha"]),
            "pi": (("chain", "draw", "component"), raw["pi"]),
            "occupied": (("chain", "draw"), raw["occupied"]),
        }
        start_of = raw["var_start"]
        for j, v in enumerate(data.variables):
            dim = level_dim(v)
            coords[dim] = data.levels[v]
            theta = raw["theta"][..., start_of[j] : start_of[j + 1]]
            variables[f"theta_{v}"] = (("chain", "draw", "component", dim), theta)
            if v in data.synthesize:
                variables[f"marginal_{v}"] = (("chain", "draw", dim), np.einsum("cdk,cdkl->cdl", raw["pi"], theta))
        posterior = xr.Dataset(variables, coords=coords)
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), np.zeros((chains, draws), dtype=bool))},
            coords={"chain": coords["chain"], "draw": coords["draw"]},
        )
        idata = az.InferenceData(posterior=posterior, sample_stats=stats)
        idata.attrs.update(
            {
                "sampler": "blocked Gibbs (numba) on cell counts",
                "sampler_decision": SAMPLER_DECISION,
                "sampler_settings": str(self.settings.to_dict()),
                "sampler_seed": int(seed),
                "sampling_seconds": float(seconds),
                "iterations_per_chain": int(self.settings.burn + self.settings.draws),
                "n_cells": int(len(data.cell_counts)),
            }
        )
        return idata

    def convergence_quantities(self, idata: az.InferenceData, data: CategoricalData) -> list[str]:
        """Names of the label-invariant posterior quantities the gate monitors."""
        return ["alpha", "occupied"] + [f"marginal_{v}" for v in data.synthesize]

    def check(self, idata: az.InferenceData, data: CategoricalData) -> ConvergenceReport:
        """Apply the convergence gate to the label-invariant quantities.

        Besides ``alpha``, ``occupied`` and the marginals, the gate monitors what the synthesis draws from:
        the probabilities of every synthesized variable's levels given each pattern of the kept variables
        holding at least ``PATTERN_MONITOR_RECORDS`` records (:meth:`pattern_conditionals`). On the CE-like
        data two chains could agree on the marginals (r_hat 1.004) while these differed (r_hat 1.07): the
        chains sat in different groupings of the patterns into components.
        """
        derived = {
            f"conditional_{v}": values
            for v, values in self.pattern_conditionals(idata, data, PATTERN_MONITOR_RECORDS).items()
        }
        return check_convergence(
            idata, self.criteria, var_names=self.convergence_quantities(idata, data), derived=derived
        )

    def pattern_conditionals(
        self, idata: az.InferenceData, data: CategoricalData, min_records: int = 1
    ) -> dict[str, xr.DataArray]:
        """Posterior draws of ``p(level of a synthesized variable | pattern)`` for the larger patterns.

        ``sum_k pi_k prod_j theta_k^(j)[x_j] theta_k^(v) / sum_k pi_k prod_j theta_k^(j)[x_j]`` over the kept
        variables ``j`` (eq. 1-2), label-invariant.

        Parameters
        ----------
        idata
            Posterior from :meth:`fit`.
        data
            The coded records.
        min_records
            Only patterns with at least this many records.

        Returns
        -------
        dict
            One DataArray per synthesized variable, dims (chain, draw, pattern, level); the ``pattern``
            coordinate reads ``"gender=1, income=2, age=3"``.
        """
        posterior = idata.posterior
        keep = [data.variables[j] for j in data.keep_index]
        if keep:
            patterns, pattern_of = np.unique(data.cell_codes[:, data.keep_index], axis=0, return_inverse=True)
            sizes = np.bincount(pattern_of.ravel(), weights=data.cell_counts)
        else:
            patterns, sizes = np.zeros((1, 0), dtype=np.int64), np.array([float(data.n_records)])
        chosen = np.flatnonzero(sizes >= min_records)
        labels = [", ".join(f"{v}={data.levels[v][c]}" for v, c in zip(keep, patterns[b], strict=True)) for b in chosen]
        log_w = np.log(np.maximum(posterior["pi"].transpose("chain", "draw", "component").to_numpy(), 1e-300))
        log_w = np.repeat(log_w[:, :, None, :], len(chosen), axis=2)  # (chain, draw, pattern, component)
        for j, v in enumerate(keep):
            theta = posterior[f"theta_{v}"].transpose("chain", "draw", "component", level_dim(v)).to_numpy()
            log_w += np.log(np.maximum(np.moveaxis(theta[..., patterns[chosen, j]], -1, 2), 1e-300))
        log_w -= log_w.max(axis=-1, keepdims=True)
        weight = np.exp(log_w)
        weight /= weight.sum(axis=-1, keepdims=True)
        out = {}
        for v in data.synthesize:
            dim = level_dim(v)
            theta = posterior[f"theta_{v}"].transpose("chain", "draw", "component", dim).to_numpy()
            out[v] = xr.DataArray(
                np.einsum("cdbk,cdkl->cdbl", weight, theta),
                dims=("chain", "draw", "pattern", dim),
                coords={"chain": posterior["chain"], "draw": posterior["draw"], "pattern": labels, dim: data.levels[v]},
            )
        return out

    # -- conditional probabilities -------------------------------------------------------------------

    def _arrays(self, posterior: xr.Dataset, data: CategoricalData) -> tuple[np.ndarray, list[np.ndarray]]:
        pi = posterior["pi"].transpose("sample", "component").to_numpy()
        thetas = [
            posterior[f"theta_{v}"].transpose("sample", "component", level_dim(v)).to_numpy() for v in data.variables
        ]
        return pi, thetas

    def _log_class_weights(
        self, pi: np.ndarray, thetas: list[np.ndarray], codes: np.ndarray, variables: np.ndarray
    ) -> np.ndarray:
        """``log pi_k + sum_{j in variables} log theta_k^(j)[x_j]``: (sample, row, component)."""
        out = np.broadcast_to(np.log(pi)[:, None, :], (pi.shape[0], codes.shape[0], pi.shape[1])).copy()
        for j in variables:
            out += np.log(np.transpose(thetas[j], (0, 2, 1))[:, codes[:, j], :])
        return out

    def _joint_theta(self, thetas: list[np.ndarray], data: CategoricalData) -> np.ndarray:
        """``prod_r theta_k^(r)[c_r]`` over the synthesized variables: (sample, component, joint candidate)."""
        joint = None
        for j in data.synthesize_index:
            t = thetas[j]
            joint = t if joint is None else (joint[..., :, None] * t[..., None, :]).reshape(t.shape[0], t.shape[1], -1)
        return joint

    def _class_weights(self, pi, thetas, data: CategoricalData, codes: np.ndarray, conditioning: str) -> np.ndarray:
        """Normalised p(z = k | the conditioning values): (sample, row, component)."""
        if conditioning == "full":
            variables = np.arange(len(data.variables))
        elif conditioning == "pattern":
            variables = data.keep_index
        else:
            variables = np.array([], dtype=np.int64)
        log_w = self._log_class_weights(pi, thetas, codes, variables)
        log_w -= log_w.max(axis=-1, keepdims=True)
        w = np.exp(log_w)
        return w / w.sum(axis=-1, keepdims=True)

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: CategoricalData) -> xr.DataArray:
        """Joint code of the synthesized variables of every record (dimension ``item``)."""
        return xr.DataArray(data.joint_code(), dims="item", name="observed")

    def candidates(self, data: CategoricalData) -> xr.DataArray:
        """Every joint code of the synthesized variables (one variable: its level codes)."""
        values = np.arange(int(np.prod(data.synthesized_shape)))
        return xr.DataArray(values, dims="candidate", coords={"candidate": values})

    def candidate_log_prob(self, posterior: xr.Dataset, data: CategoricalData) -> xr.DataArray:
        """``log p(synthesized values = c | the record's kept values, draw)``, dims ``(sample, item, candidate)``.

        Equal, up to a term that does not depend on ``c``, to the record's likelihood with its synthesized
        values set to ``c``, which is what the importance weights need. Computed per distinct kept pattern.
        """
        pi, thetas = self._arrays(posterior, data)
        patterns, inverse = np.unique(data.codes[:, data.keep_index], axis=0, return_inverse=True)
        codes = np.zeros((len(patterns), len(data.variables)), dtype=np.int64)
        codes[:, data.keep_index] = patterns
        weights = self._class_weights(pi, thetas, data, codes, "pattern")  # (sample, pattern, K)
        probs = np.einsum("spk,skc->spc", weights, self._joint_theta(thetas, data))
        values = np.log(probs)[:, inverse.ravel(), :]
        return xr.DataArray(
            values,
            dims=("sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": self.candidates(data).to_numpy()},
            name="log_prob",
        )

    def release_log_prob(self, posterior: xr.Dataset, data: CategoricalData, synthetic: xr.DataArray) -> xr.DataArray:
        """``log p(released value of item t | draw, true value = c)``: dims ``(synthetic, sample, item, candidate)``.

        How a released value depends on the true one is set by the conditioning: under ``"full"`` the
        latent class is drawn given the true value ``c``; under ``"pattern"`` and ``"prior"`` it does not
        depend on ``c`` (constant along ``candidate``).
        """
        pi, thetas = self._arrays(posterior, data)
        joint = self._joint_theta(thetas, data)  # (S, K, C)
        released = synthetic.transpose("synthetic", "item").to_numpy()
        n_syn, n_items = released.shape
        n_cand = joint.shape[-1]
        out = np.empty((n_syn, pi.shape[0], n_items, n_cand))
        if self.conditioning == "full":
            log_a = self._log_class_weights(pi, thetas, data.codes, data.keep_index)  # (S, item, K)
            a = np.exp(log_a - log_a.max(axis=-1, keepdims=True))  # the ratio below is invariant to this scale
            norm = np.einsum("stk,skc->stc", a, joint)
            for l in range(n_syn):
                theta_rel = joint[:, :, released[l]]  # theta_k[y~_t]: (S, K, item)
                # p(y~ | c) = sum_k p(k | kept values, c) theta_k[y~] = sum_k a_tk theta_k[c] theta_k[y~] / norm_tc
                num = np.einsum("stk,skt,skc->stc", a, theta_rel, joint)
                out[l] = np.log(num) - np.log(norm)
        else:
            weights = self._class_weights(pi, thetas, data, data.codes, self.conditioning)  # (S, item, K)
            for l in range(n_syn):
                theta_rel = joint[:, :, released[l]]  # (S, K, item)
                p = np.einsum("stk,skt->st", weights, theta_rel)
                out[l] = np.log(p)[..., None]
        return xr.DataArray(
            out,
            dims=("synthetic", "sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": np.arange(n_cand)},
            name="release_log_prob",
        )

    def posterior_predictive(
        self, posterior: xr.Dataset, data: CategoricalData, rng: np.random.Generator
    ) -> xr.DataArray:
        """Synthetic joint codes of every record, one dataset per posterior draw: dims ``(sample, item)``.

        For each draw: a latent class per record from the chosen conditional, then every synthesized
        variable independently from ``theta_z`` (eq. 1); the kept values are never changed.
        """
        pi, thetas = self._arrays(posterior, data)
        out = np.empty((pi.shape[0], data.n_records), dtype=np.int64)
        shape = data.synthesized_shape
        for s in range(pi.shape[0]):
            values = self._synthesize_one(pi[s], [t[s] for t in thetas], data, rng)
            out[s] = np.ravel_multi_index(tuple(values.T), shape) if values.shape[1] > 1 else values[:, 0]
        return xr.DataArray(
            out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def synthesize_codes(self, posterior: xr.Dataset, data: CategoricalData, rng: np.random.Generator) -> np.ndarray:
        """Full coded synthetic records for each draw: ``(sample, n, p)`` with only synthesized columns changed."""
        pi, thetas = self._arrays(posterior, data)
        result = np.repeat(data.codes[None], pi.shape[0], axis=0)
        for s in range(pi.shape[0]):
            result[s][:, data.synthesize_index] = self._synthesize_one(pi[s], [t[s] for t in thetas], data, rng)
        return result

    def _synthesize_one(
        self, pi: np.ndarray, thetas: list[np.ndarray], data: CategoricalData, rng: np.random.Generator
    ) -> np.ndarray:
        """Synthesized level codes ``(n, J)`` from one posterior draw (``pi`` (K,), ``thetas`` [(K, d_j)])."""
        # p(z = k | the conditioning values) per cell: records of one cell share it.
        weights = self._class_weights(pi[None], [t[None] for t in thetas], data, data.cell_codes, self.conditioning)[0]
        synthesized = [thetas[j] for j in data.synthesize_index]
        theta_cdf = np.ascontiguousarray(np.concatenate([np.cumsum(t, axis=1) for t in synthesized], axis=1))
        syn_start = np.concatenate([[0], np.cumsum([t.shape[1] for t in synthesized])]).astype(np.int64)
        order, cell_start = data.cell_order
        seed = int(rng.integers(0, 2**31 - 1))
        return _synthesize_cells(
            order, cell_start, np.ascontiguousarray(weights), theta_cdf, syn_start, seed, SMALL_CELL
        )

    def release_frame(self, data: CategoricalData, joint: xr.DataArray) -> pd.DataFrame:
        """Synthetic datasets as one long table of labels with a ``synthetic`` column (1..m).

        Parameters
        ----------
        data
            The coded records.
        joint
            Joint codes of the synthesized variables, dimensions ``(synthetic, item)`` (from
            :func:`bayessdc.synthesis.datasets.draw_synthetic`).
        """
        values = joint.transpose("synthetic", "item").to_numpy()
        frames = []
        for k in range(values.shape[0]):
            codes = data.codes.copy()
            for j, level_codes in zip(
                data.synthesize_index, np.unravel_index(values[k], data.synthesized_shape), strict=True
            ):
                codes[:, j] = level_codes
            frames.append(data.frame(codes).assign(synthetic=k + 1))
        return pd.concat(frames, ignore_index=True)[["synthetic", *data.variables]]

    def describe(self) -> dict[str, Any]:
        """The public description of the model written to ``release/model.json`` (no estimates)."""
        return {
            "synthesizer": self.name,
            "paper": "Hu & Savitsky, Bayesian Data Synthesis and Disclosure Risk Quantification (Section 2.1)",
            "model": {
                "likelihood": "X_ij | z_i ~ Categorical(theta_{z_i}^(j)) independently over variables j (eq. 1)",
                "latent_class": "z_i ~ Categorical(pi), truncated stick breaking with K components (eq. 2-4)",
                "K": self.K,
                "priors": {
                    "beta_k": "Beta(1, alpha), k < K; beta_K = 1",
                    "alpha": f"Gamma(shape {self.priors.a_alpha:g}, rate {self.priors.b_alpha:g})",
                    "theta_k^(j)": f"Dirichlet({self.priors.theta_concentration:g}, ..., "
                    f"{self.priors.theta_concentration:g})",
                },
            },
            "synthesis": {
                "conditioning": self.conditioning,
                "meaning": {
                    "full": "latent class drawn given all of the record's values",
                    "pattern": "latent class drawn given the record's unsynthesized values",
                    "prior": "latent class drawn from pi alone",
                }[self.conditioning],
                "datasets": "each synthetic dataset uses one posterior draw, draws spaced far apart",
            },
            "sampler": {"method": "blocked Gibbs (Ishwaran & James 2001) on cell counts", **self.settings.to_dict()},
        }


# --------------------------------------------------------------------------------------------------
# Simulators


def simulate_latent_class(
    n: int,
    n_levels: Sequence[int],
    weights: Sequence[float],
    seed: int,
    concentration: float = 0.3,
    names: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Records from a latent-class model (eq. 1-2 with fixed ``pi`` and random ``theta``).

    Returns
    -------
    frame, truth
        The records (integer levels) and ``{"pi", "theta": [per variable (H, d_j)], "cell_probability"}``
        with the joint probability of every cell as an array of shape ``n_levels``.
    """
    rng = np.random.default_rng(seed)
    pi = np.asarray(weights, dtype=float)
    pi = pi / pi.sum()
    names = list(names) if names is not None else [f"x{j}" for j in range(len(n_levels))]
    thetas = [rng.dirichlet(np.full(d, concentration), size=len(pi)) for d in n_levels]
    z = rng.choice(len(pi), size=n, p=pi)
    columns = {}
    for name, theta in zip(names, thetas, strict=True):
        u = rng.random(n)[:, None]
        columns[name] = np.minimum((np.cumsum(theta[z], axis=1) < u).sum(axis=1), theta.shape[1] - 1)
    joint = np.zeros(tuple(n_levels))
    for h, w in enumerate(pi):
        term = np.asarray(w)
        for theta in thetas:
            term = np.multiply.outer(term, theta[h])
        joint += term
    return pd.DataFrame(columns), {"pi": pi, "theta": thetas, "cell_probability": joint}


def simulate_ce_like(n: int = 6208, n_counties: int = 133, seed: int = 0) -> pd.DataFrame:
    """A CE-like table (Section 1.1): gender (2) x income (4) x age (5) = 40 patterns, and a county label.

    Pattern sizes are very unequal (the smallest with 3 records, as in the paper's patterns 6, 11 and 36,
    the largest several hundred); county sizes are skewed and the county distribution differs by pattern
    (each pattern tilts towards its own group of counties).

    Parameters
    ----------
    n
        Number of records (6,208 in the CE sample).
    n_counties
        Number of county labels (133).
    seed
        Random seed.

    Returns
    -------
    pandas.DataFrame
        Columns ``gender``, ``income``, ``age`` (integer codes from 1) and ``county`` (1..n_counties).
    """
    rng = np.random.default_rng(seed)
    genders, incomes, ages = np.meshgrid(np.arange(1, 3), np.arange(1, 5), np.arange(1, 6), indexing="ij")
    patterns = np.column_stack([genders.ravel(), incomes.ravel(), ages.ravel()])  # 40 x 3
    n_patterns = len(patterns)
    # Very unequal pattern sizes: log-normal shares, three patterns fixed at 3 records.
    tiny = np.array([5, 10, 35])
    share = np.exp(rng.normal(0.0, 1.1, n_patterns))
    share[tiny] = 0.0
    sizes = np.zeros(n_patterns, dtype=np.int64)
    sizes[tiny] = 3
    rest = n - sizes.sum()
    sizes += rng.multinomial(rest, share / share.sum())
    # County sizes: skewed (Zipf-like), tilted per pattern by a few latent "regions".
    base = 1.0 / np.arange(1, n_counties + 1) ** 0.8
    base = base[rng.permutation(n_counties)]
    regions = rng.integers(0, 6, n_counties)
    county = np.empty(n, dtype=np.int64)
    start = 0
    for b, size in enumerate(sizes):
        tilt = np.exp(1.5 * (regions == rng.integers(0, 6)) + 0.8 * (regions == (patterns[b, 2] % 6)))
        probs = base * tilt * rng.gamma(4.0, 0.25, n_counties)
        county[start : start + size] = rng.choice(n_counties, size=size, p=probs / probs.sum()) + 1
        start += size
    frame = pd.DataFrame(
        {
            "gender": np.repeat(patterns[:, 0], sizes),
            "income": np.repeat(patterns[:, 1], sizes),
            "age": np.repeat(patterns[:, 2], sizes),
            "county": county,
        }
    )
    return frame.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)
