"""The release gate: do the figures an agency reads before releasing agree between independent chains?

For posteriors with regimes that chains cross rarely (the Dirichlet-process synthesizers), r_hat of the
parameters says that the chains disagree, not whether the disagreement reaches what is released. This gate
judges the release itself. Each of ``C`` chains gives ``n`` synthetic datasets (drawn from posterior draws spread
over that chain); every release figure (a risk or utility measure of one dataset) is averaged per chain, and the
pooled figure is the mean of the ``C`` chain means (equal weights). Its standard error is ``SE = sqrt(B / C)`` with
``B = sum_c (xbar_c - xbar)^2 / (C - 1)``, the between-chain variance of the chain means. Chains are independent
replicates of the whole computation, so this is a batch-means standard error with chains as batches: it is valid
whatever the autocorrelation within a chain and whatever the regimes a chain sits in, and it holds all the Monte
Carlo error of the pooled figure, the disagreement between chains included (a chain stuck in a regime of its own
moves its mean by the regime's effect; nothing averages that away within the chain). Margossian et al.'s nested
R-hat asks the same question of superchains; with one chain per superchain its between-superchain term is ``B`` and
the standard error above is the quantity a release needs, in the figure's own units, beside a tolerance an agency
can state. It falls as ``1 / sqrt(C)`` at a given spread, so a failed gate can say how many chains would meet the
tolerance: ``ceil(C (SE / tolerance)^2)``.

Tolerances (both arguments of :class:`ReleaseGatePolicy`):

* a **risk** figure: a share (default 2%) of its inherent minimum-maximum range (Hu & Savitsky, Section 4.1:
  the mean of the figure under the maximum scenario, every synthesized value redrawn from its pattern's
  empirical distribution, minus its mean under the minimum, every synthesized value drawn uniformly over all
  the levels of its column whatever the pattern), but never below the utility tolerance of the same figure.
  Measured on the CE-like data (n = 6,208, S = 100 repetitions) the two scenarios' expected match risks
  differ by about 3.2 for gender + county and 8 to 9 for gender + age + county, while one synthetic dataset's
  expected match risk varies by about 0.3-0.5 and 1.6-2.3 (sd) from the next; their true match rates hardly
  differ (by under 0.00001 with gender + county known, by about one dataset's sd, 0.0002, with gender + age +
  county). 2% of such a range is at or below what a release can resolve (the released figure, a mean over m
  datasets, carries its own sd / sqrt(m)), and for the match rates it is next to nil, which would refuse
  every release whatever the chains do. A figure judged by the floor says so (``tolerance_rule``).
* a **utility** figure: a share (default 0.1) of its per-dataset standard deviation (the within-chain spread
  of the figure from one synthetic dataset to the next, pooled over chains).

How many datasets per chain: with perfectly mixing chains the standard error is ``sd / sqrt(C n)``, and the
estimate of ``B`` from ``C`` chains is noisy, so the gate must be passed comfortably at ``C n`` datasets or it
would refuse good releases by chance. Simulated (``C n`` independent normal datasets per figure, 12 figures,
4,000 replications): a utility figure fails by chance with probability 5.7% at C = 8, n = 25 (50%
that one of 12 fails), 0.02% at C = 8, n = 50 (0.3% for any of 12); 0.8% at C = 4, n = 100 (9% for any of
12), under 0.01% at C = 4, n = 200 (0.05% for any of 12). Hence the defaults of the synthesizers: 8 chains x
50 datasets (DPMPM) and 4 chains x 200 (DP-areal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = [
    "CHAIN_MARGIN",
    "MIN_CHAINS",
    "FigureKind",
    "ReleaseGatePolicy",
    "ReleaseGateReport",
    "StoppingRecord",
    "StoppingRound",
    "GATED_MEASURES",
    "between_chain_summary",
    "judge_release",
    "measure_figures",
    "next_chain_count",
]

#: The measures (:mod:`bayessdc.measures`) whose figures the gate judges by default: what an agency reads
#: before releasing a partially synthetic categorical release (identification and attribute risk, table
#: deviations, the pMSE ratio). Records copied and replicated uniques are judged by the disclosure policy on
#: the released datasets; their spread between chains adds nothing a review board reads.
GATED_MEASURES = (
    "expected_match_risk",
    "true_match_rate",
    "false_match_rate",
    "attribute_disclosures",
    "table_deviation",
    "pmse_ratio",
)

#: ``("risk", inherent_range)`` or ``("utility", None)``.
FigureKind = tuple[Literal["risk", "utility"], float | None]

#: Fewest chains from which the between-chain variance is judged.
MIN_CHAINS = 4

#: Safety margin of the stopping rule's forecast (:func:`next_chain_count`). Simulated by
#: ``bench/chains_until_certain.py`` (chain means normal, or stuck in one of two regimes; start 8, at most 32
#: chains): with 1.5 the chance of passing with a true SE more than 1.1 x the tolerance is at or below that of a
#: user who reruns from scratch with the advised number of chains in every case (0.32 against 0.35 at 12 chains
#: truly needed, 0.13 against 0.16 at 21; two regimes 0.20 against 0.26, 0.16 against 0.20), at 20-45% fewer
#: chains fitted; with 1.0 or 1.2 it is above it where 21 or more chains are needed (normal, 21: 0.27 and 0.19
#: against 0.16).
CHAIN_MARGIN = 1.5


@dataclass(frozen=True)
class ReleaseGatePolicy:
    """The release gate's settings, stated in ``release/model.json``.

    Parameters
    ----------
    datasets_per_chain
        Synthetic datasets drawn from each chain to estimate its mean figures (only m are released).
    risk_tolerance
        Largest between-chain standard error of a risk figure, as a share of its inherent min-max range.
    utility_tolerance
        Largest between-chain standard error of a utility figure, as a share of its per-dataset sd.
    measures
        The measures judged (names of :func:`bayessdc.measures.registry`): every subset of each is one figure,
        a risk figure when the measure is a risk measure, its range that of its references ``inherent_min``
        and ``inherent_max``.
    max_chains
        The stopping rule's budget of chains: when the gate fails on precision alone (no divergence), the
        pipeline adds the chains :func:`next_chain_count` forecasts, keeps those it has and judges again, up to
        this many in all (a synthesizer that cannot add chains to a fit refuses at once). Set it to the
        sampler's ``chains`` to judge once.
    time_budget
        Seconds the whole fit, added chains included, may take (``None``: no limit): a round forecast (from the
        time per chain so far) to end beyond it is not started, and the run is refused with the figures.
    """

    datasets_per_chain: int = 50
    risk_tolerance: float = 0.02
    utility_tolerance: float = 0.1
    measures: tuple[str, ...] = GATED_MEASURES
    max_chains: int = 32
    time_budget: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.datasets_per_chain, bool) or not isinstance(self.datasets_per_chain, int | np.integer):
            raise ValueError(f"gate datasets per chain must be a whole number, got {self.datasets_per_chain!r}")
        if self.datasets_per_chain < 2:
            raise ValueError("the release gate needs at least 2 datasets per chain (datasets_per_chain=)")
        from bayessdc.measures import registry

        unknown = [name for name in self.measures if name not in registry()]
        if unknown or not self.measures:
            raise ValueError(f"the release gate judges measures {', '.join(registry())}; got {list(self.measures)!r}")
        object.__setattr__(self, "measures", tuple(self.measures))
        for name in ("risk_tolerance", "utility_tolerance"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if isinstance(self.max_chains, bool) or not isinstance(self.max_chains, int | np.integer):
            raise ValueError(f"max_chains must be a whole number, got {self.max_chains!r}")
        if self.max_chains < MIN_CHAINS:
            raise ValueError(
                f"max_chains={self.max_chains} is below the release gate's minimum of {MIN_CHAINS} chains"
            )
        budget = self.time_budget
        if budget is not None and not (isinstance(budget, int | float) and math.isfinite(budget) and budget > 0):
            raise ValueError(f"time_budget must be a positive number of seconds or None, got {budget!r}")

    def describe(self, chains: int, divergences: bool = False) -> dict[str, Any]:
        """The policy in words and numbers (no estimate), for ``release/model.json``."""
        out = {
            "judged": "the release figures (risk and utility of synthetic datasets), pooled over chains",
            "measures": list(self.measures),
            "chains": int(chains),
            "datasets_per_chain": int(self.datasets_per_chain),
            "standard_error": "between-chain: sqrt(B / C), B the variance of the C chain means of a figure",
            "risk_tolerance": f"{self.risk_tolerance:g} of the figure's inherent minimum-maximum range, never below "
            "its utility tolerance",
            "utility_tolerance": f"{self.utility_tolerance:g} of the figure's per-dataset standard deviation",
            "parameter_gate": "r_hat, ESS and divergences of the parameters are diagnostics only",
            "stopping_rule": f"chains added while the gate fails on precision alone: ceil({CHAIN_MARGIN:g} x "
            f"C (SE / tolerance)^2) at a time, the chains fitted kept, at most {self.max_chains} chains"
            + (f" and {self.time_budget:g} s" if self.time_budget is not None else ""),
        }
        if divergences:
            out["divergences"] = "none allowed (NUTS)"
        return out

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dictionary (part of a run's identity)."""
        out = asdict(self)
        out["measures"] = list(self.measures)
        return out


def measure_figures(results: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, FigureKind]]:
    """The gate's figures read from measure results (:class:`bayessdc.measures.MeasureResult` by name).

    Every subset of a measure is one figure, named ``measure[subset]`` (``measure`` alone for the subset
    ``"all"``); a risk measure's figure is a risk figure whose inherent range is the distance between its
    references ``inherent_max`` and ``inherent_min`` (NaN without them: judged by the utility tolerance).

    Returns
    -------
    tuple
        One row per dataset (column ``synthetic``, then one column per figure) and the figures' kinds for
        :func:`judge_release`.
    """
    columns: dict[str, pd.Series] = {}
    kinds: dict[str, FigureKind] = {}
    for name, result in results.items():
        values = result.values
        for subset in result.subsets():
            figure = name if subset == "all" else f"{name}[{subset}]"
            rows = values[values["subset"].astype(str) == subset]
            columns[figure] = pd.Series(rows["value"].to_numpy(float), index=rows["dataset"].to_numpy())
            if result.kind == "risk":
                low, high = result.reference(subset, "inherent_min"), result.reference(subset, "inherent_max")
                kinds[figure] = ("risk", abs(high - low) if low is not None and high is not None else float("nan"))
            else:
                kinds[figure] = ("utility", None)
    table = pd.DataFrame(columns)
    table.index.name = "synthetic"
    return table.reset_index(), kinds


def between_chain_summary(values: np.ndarray, chain: np.ndarray) -> dict[str, float | int | None]:
    """Pooled figure, between-chain standard error and per-dataset sd of one figure.

    Parameters
    ----------
    values
        The figure of every gate dataset (NaN where it is undefined, such as a false match rate without any
        unique match: left out).
    chain
        The chain each dataset was drawn from.

    Returns
    -------
    dict
        ``pooled`` (mean of the chain means), ``between_chain_se`` (``sqrt(B / C)``), ``per_dataset_sd``
        (square root of the mean within-chain variance), ``chains`` (chains with a finite value); ``None``
        values when fewer than two chains have one.
    """
    frame = pd.DataFrame({"value": np.asarray(values, dtype=float), "chain": np.asarray(chain)})
    frame = frame[np.isfinite(frame["value"])]
    grouped = frame.groupby("chain")["value"]
    means = grouped.mean().to_numpy()
    chains = len(means)
    if chains < 2:
        return {"pooled": None, "between_chain_se": None, "per_dataset_sd": None, "chains": chains}
    within = grouped.var(ddof=1).to_numpy()
    within = within[np.isfinite(within)]
    return {
        "pooled": float(means.mean()),
        "between_chain_se": float(np.sqrt(means.var(ddof=1) / chains)),
        "per_dataset_sd": float(np.sqrt(within.mean())) if within.size else 0.0,
        "chains": chains,
    }


@dataclass
class ReleaseGateReport:
    """The release gate's verdict and figures (``private/diagnostics.json`` under ``release_gate``).

    Attributes
    ----------
    passed
        Every judged figure's between-chain standard error within its tolerance, at least
        :data:`MIN_CHAINS` chains, and no divergence where they are counted.
    chains
        Chains pooled.
    figures
        Per figure: ``pooled``, ``between_chain_se``, ``tolerance``, ``kind``, ``per_dataset_sd``,
        ``inherent_range`` (risk figures), ``passed`` and, when it fails, ``chains_needed``.
    divergences
        NUTS divergences over all chains (``None`` for a sampler without them).
    datasets_per_chain
        Gate datasets drawn from each chain.
    notes
        What the reader should know of the figures (a figure not judged, and why).
    stopping_rule
        How the pipeline's stopping rule added chains before this verdict (:class:`StoppingRecord`), once it ran.
    """

    passed: bool
    chains: int
    figures: dict[str, dict[str, Any]]
    divergences: int | None = None
    datasets_per_chain: int = 0
    notes: list[str] = field(default_factory=list)
    stopping_rule: StoppingRecord | None = None

    def failed(self) -> list[str]:
        """Names of the figures outside their tolerance."""
        return [name for name, f in self.figures.items() if f["passed"] is False]

    def chains_needed(self) -> int | None:
        """Chains that would bring every failed figure within tolerance at the measured spread (``None``: no
        number would, a figure with zero tolerance and a nonzero spread)."""
        needed = [self.figures[name].get("chains_needed") for name in self.failed()]
        if any(n is None for n in needed):
            return None
        return max([self.chains, MIN_CHAINS, *needed])

    def problems(self) -> list[str]:
        """Why the gate failed, one sentence each (empty when it passed)."""
        out = []
        if self.chains < MIN_CHAINS:
            out.append(f"{self.chains} chain(s): the release gate needs at least {MIN_CHAINS} (chains=)")
        for name in self.failed():
            f = self.figures[name]
            se, tolerance, need = f["between_chain_se"], f["tolerance"], f.get("chains_needed")
            if tolerance > 0:
                chains = f"{need} chains would meet it at this spread" if need else "no number of chains would"
                out.append(
                    f"{name}: between-chain SE {se:.4g} > tolerance {tolerance:.4g} ({se / tolerance:.2f}x; {chains})"
                )
            else:
                out.append(
                    f"{name}: between-chain SE {se:.4g} > tolerance 0 (no spread within chains, none allowed between)"
                )
        if self.divergences:
            out.append(f"{self.divergences} divergent transition(s); the release gate allows none")
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"passed", "chains", "figures", ...}`` as written to ``private/diagnostics.json``."""
        out: dict[str, Any] = {
            "passed": self.passed,
            "chains": self.chains,
            "datasets_per_chain": self.datasets_per_chain,
            "figures": self.figures,
        }
        if self.divergences is not None:
            out["divergences"] = self.divergences
        if not self.passed:
            out["failed"] = self.failed()
            out["chains_needed"] = self.chains_needed()
            out["problems"] = self.problems()
        if self.notes:
            out["notes"] = self.notes
        if self.stopping_rule is not None:
            out["stopping_rule"] = self.stopping_rule.to_dict()
        return out


@dataclass(frozen=True)
class StoppingRound:
    """One round of the stopping rule: the chains judged, the gate's forecast, the chains added and the figures
    that failed."""

    chains: int
    forecast: int | None
    added: int
    failed: tuple[str, ...]


@dataclass(frozen=True)
class StoppingRecord:
    """How the release gate's stopping rule ran (``private/diagnostics.json`` under
    ``release_gate.stopping_rule``).

    Attributes
    ----------
    started_with, chains
        Chains of the first fit and of the last one judged.
    rounds
        The rounds that added chains, in order.
    max_chains, time_budget, margin
        The rule's budget of chains and seconds and its margin over the forecast.
    seconds
        Time since the fit began, when the rule stopped.
    stopped
        Why the rule stopped while the gate still failed (``""``: it passed, or was never asked to add chains).
    """

    started_with: int
    chains: int
    rounds: tuple[StoppingRound, ...]
    max_chains: int
    time_budget: float | None
    margin: float
    seconds: float
    stopped: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As written to ``private/diagnostics.json``."""
        out: dict[str, Any] = {
            "started_with": self.started_with, "chains": self.chains,
            "rounds": [{"chains": r.chains, "forecast": r.forecast, "added": r.added, "failed": list(r.failed)}
                       for r in self.rounds],
            "max_chains": self.max_chains, "time_budget": self.time_budget, "margin": self.margin,
            "seconds": self.seconds,
        }  # fmt: skip
        if self.stopped:
            out["stopped"] = self.stopped
        return out


def next_chain_count(chains: int, needed: int | None, *, max_chains: int, margin: float = CHAIN_MARGIN) -> int | None:
    """How many chains to have after the next round of the gate's stopping rule (``None``: stop and refuse).

    The gate failed on precision at ``chains`` chains and forecasts ``needed``
    (:meth:`ReleaseGateReport.chains_needed`, ``ceil(C (SE / tolerance)^2)``). The next round brings the chains
    to ``ceil(margin * needed)`` (at least one more), at most ``max_chains``; it stops when ``needed`` itself is
    above ``max_chains`` (no round within the budget is forecast to pass) or ``max_chains`` is reached.

    Parameters
    ----------
    chains
        Chains judged.
    needed
        The forecast (``None``: no number of chains meets a zero tolerance).
    max_chains
        The budget of chains.
    margin
        Safety margin on the forecast (:data:`CHAIN_MARGIN`).

    Examples
    --------
    >>> next_chain_count(8, 17, max_chains=32), next_chain_count(8, 40, max_chains=32)
    (26, None)
    >>> next_chain_count(30, 31, max_chains=32), next_chain_count(32, 33, max_chains=32)
    (32, None)
    """
    if needed is None or needed > max_chains or chains >= max_chains:
        return None
    return int(min(max_chains, max(chains + 1, math.ceil(margin * needed - 1e-9))))


def judge_release(
    by_dataset: pd.DataFrame,
    kinds: Mapping[str, FigureKind],
    policy: ReleaseGatePolicy,
    *,
    divergences: int | None = None,
) -> ReleaseGateReport:
    """Judge the release figures of the gate datasets against their tolerances.

    Parameters
    ----------
    by_dataset
        One row per gate dataset: a column ``chain`` and one column per figure named in ``kinds``.
    kinds
        Per figure: ``("risk", inherent_range)`` or ``("utility", None)``.
    policy
        Tolerances.
    divergences
        NUTS divergences over all chains (any fails the gate), or ``None``.

    Returns
    -------
    ReleaseGateReport
    """
    chain = by_dataset["chain"].to_numpy()
    chains = int(pd.unique(chain).size)
    figures: dict[str, dict[str, Any]] = {}
    notes = []
    for name, (kind, inherent_range) in kinds.items():
        summary = between_chain_summary(by_dataset[name].to_numpy(dtype=float), chain)
        entry: dict[str, Any] = {"kind": kind, **summary}
        if summary["between_chain_se"] is None:
            entry.update({"tolerance": None, "passed": None})
            notes.append(f"{name} is undefined in the datasets of all but {summary['chains']} chain(s): not judged")
            figures[name] = entry
            continue
        floor = policy.utility_tolerance * summary["per_dataset_sd"]
        if kind == "risk":
            width = abs(float(inherent_range)) if inherent_range is not None else float("nan")
            entry["inherent_range"] = width
            by_range = policy.risk_tolerance * width
            tolerance = max(by_range, floor) if math.isfinite(by_range) else floor
            entry["tolerance_rule"] = "inherent range" if by_range >= floor else "per-dataset sd (range too narrow)"
        else:
            tolerance = floor
        if not math.isfinite(tolerance):
            entry.update({"tolerance": None, "passed": None})
            notes.append(f"{name} has no finite inherent range: not judged")
            figures[name] = entry
            continue
        se = summary["between_chain_se"]
        entry["tolerance"] = float(tolerance)
        entry["passed"] = bool(se <= tolerance)
        if not entry["passed"]:
            # (1e-9: a ratio that is whole up to rounding, such as 25.000000000000004, needs 25 chains)
            entry["chains_needed"] = math.ceil(chains * (se / tolerance) ** 2 - 1e-9) if tolerance > 0 else None
        figures[name] = entry
    passed = chains >= MIN_CHAINS and all(f["passed"] is not False for f in figures.values()) and not divergences
    return ReleaseGateReport(
        passed=bool(passed),
        chains=chains,
        figures=figures,
        divergences=divergences,
        datasets_per_chain=int(by_dataset.groupby("chain").size().min()) if len(by_dataset) else 0,
        notes=notes,
    )
