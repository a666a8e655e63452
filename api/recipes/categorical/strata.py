"""A categorical release synthesized area by area: ``bsd.DPMPM(strata="area")``, ``bsd.DPAreal(strata="area")``.

As CART's ``strata=`` (:mod:`bayessdc.models.cart.strata`), so that the relation between the synthesized label and
the kept columns may differ from area to area: the areas are grouped by
:func:`~bayessdc.models.cart.strata.plan_strata` (an area of at least ``min_stratum`` records alone, the smaller
ones pooled within their ``pool_by`` area, what is left pooled together), and each group gets a model of its own.

The fit
    One posterior per group, fitted on the group's records only, coded on their own (a model draws only the
    levels its records take, as the model of the whole file draws only the file's), with the group's own seed:
    the run's seed and the group's position in the plan, stream ``"stratum"``
    (:meth:`~bayessdc.recipes.categorical.input.CategoricalStrata.seed`). Within the group everything is as in an
    unstratified run seeded by that seed: its chains, its gate datasets, its m datasets. The groups are fitted one
    after another, or, with the DPMPM's ``scheduler=`` or ``workers=``, fanned out as parts of the part runner (a
    local dask cluster or a running scheduler; each group's chains one after another within its part), the same
    posteriors either way.
The release gate
    Each group's posterior is judged by its own release gate (Hu & Savitsky's figures of its datasets, pooled over
    its chains, each between-chain standard error against its tolerance, the risk tolerances from the group's own
    inherent range). The release passes only when every group's gate passes (:class:`StrataGateReport`).
More chains
    The pipeline's stopping rule (:func:`bayessdc.pipeline.stopping.add_chains_until_certain`) sees one gate: the
    :class:`StrataGateReport`, whose ``chains`` and ``chains_needed()`` are those of the failing groups at their
    worst (the most chains any failing group has, the most it forecasts). So the rule stops, and the run is
    refused, as soon as one group cannot pass within the budget (``max_chains``, ``time_budget``): the release
    needs every group. Otherwise it asks the recipe for more chains, and the recipe adds them to the failing groups
    only, each brought to its own forecast (:func:`group_targets`: ``next_chain_count`` of the group's chains and
    forecast, never above the pipeline's target); the groups that passed keep their fit, and every group is
    judged again. A group's added chains draw from their own streams below the group's seed, so a run that added
    chains releases what a run started with them releases, group by group. The stopping record
    (``release_gate.stopping_rule``) states each round in the failing groups' worst terms; each group's chains
    are in ``release_gate.groups`` and ``private/strata.parquet``.
The draw
    Each group's m datasets are drawn from its posterior (stream ``"datasets"`` below the group's seed) and the
    groups' datasets joined into m datasets over the whole file, the records in the data's order
    (:func:`in_data_order`): every record keeps its area. The measures read the whole file, as for an
    unstratified release (identification and attribute risk against the whole file's inherent bounds, whose
    patterns hold the area; utility), and per area ``stratum_attribute_disclosures`` (each area's records whose own
    labels their row reproduces, judged by the default policy against the area's inherent maximum, Bonferroni over
    the areas; :mod:`bayessdc.measures.strata`) and ``stratum_copied_records`` (reported).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.synthesis.release_gate import ReleaseGateReport, next_chain_count

from ...pipeline.recipe import Fitted
from ...release import Diagnostics
from .input import CategoricalStrata

__all__ = ["StrataFit", "StrataGateReport", "combine_fits", "group_table", "group_targets", "in_data_order"]


@dataclass
class StrataFit:
    """The fit of a release synthesized area by area (the draw step's state).

    Attributes
    ----------
    parts
        Group name -> the group's own fit (its state a :class:`~bayessdc.recipes.categorical.CategoricalFit`), in
        the plan's order.
    inherent
        The whole file's inherent risk scenarios, computed once by the first draw (the measures' bounds).
    """

    parts: dict[str, Fitted]
    inherent: dict[str, pd.DataFrame] | None = None


@dataclass
class StrataGateReport(ReleaseGateReport):
    """The release gate of a release synthesized area by area: every group's gate, one verdict.

    ``passed`` when every group's gate passed. ``figures`` are every group's, named ``"<group>: <figure>"``;
    ``chains`` is the most chains of a failing group (of any group when none fails) and :meth:`chains_needed` the
    most chains a failing group forecasts, so that the pipeline's stopping rule stops when one group cannot pass
    within its budget (see the module's docstring). ``divergences`` are summed over the groups.

    Attributes
    ----------
    groups
        Group name -> its own :class:`~bayessdc.synthesis.release_gate.ReleaseGateReport`.
    """

    groups: dict[str, ReleaseGateReport] = field(default_factory=dict)

    @classmethod
    def of(cls, groups: Mapping[str, ReleaseGateReport]) -> StrataGateReport:
        """The one gate of the groups' gates (``groups`` by name, in the plan's order)."""
        failing = [g for g in groups.values() if not g.passed]
        counted = [g.divergences for g in groups.values() if g.divergences is not None]
        return cls(
            passed=not failing,
            chains=max(g.chains for g in (failing or groups.values())),
            figures={f"{name}: {figure}": entry for name, g in groups.items() for figure, entry in g.figures.items()},
            divergences=sum(counted) if counted else None,
            datasets_per_chain=min(g.datasets_per_chain for g in groups.values()),
            notes=[f"{name}: {note}" for name, g in groups.items() for note in g.notes],
            groups=dict(groups),
        )

    def failing(self) -> list[str]:
        """The groups whose gate failed, in the plan's order."""
        return [name for name, g in self.groups.items() if not g.passed]

    def chains_needed(self) -> int | None:
        """The most chains a failing group forecasts (``None`` when one of them cannot pass at any number)."""
        needed = [self.groups[name].chains_needed() for name in self.failing()]
        if any(n is None for n in needed):
            return None
        return max(needed, default=self.chains)

    def problems(self) -> list[str]:
        """Why the gate failed: each failing group's problems, named by the group."""
        return [f"{name}: {problem}" for name in self.failing() for problem in self.groups[name].problems()]

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`ReleaseGateReport.to_dict`, with each group's chains and its own report."""
        out = super().to_dict()
        out["chains_by_group"] = {name: g.chains for name, g in self.groups.items()}
        out["groups"] = {name: g.to_dict() for name, g in self.groups.items()}
        if not self.passed:
            out["failing_groups"] = self.failing()
        return out


def group_targets(gate: StrataGateReport, chains: int, max_chains: int) -> dict[str, int]:
    """The chains each failing group is brought to when the pipeline asks for ``chains``.

    A failing group gets the round its own gate forecasts (:func:`~bayessdc.synthesis.release_gate.
    next_chain_count` of its chains and :meth:`~ReleaseGateReport.chains_needed`), which is never above the
    pipeline's ``chains`` (the failing groups' worst); a group that passed gets none.

    Examples
    --------
    >>> from bayessdc.synthesis.release_gate import ReleaseGateReport
    >>> failed = {"passed": False, "between_chain_se": 2.0, "tolerance": 1.0, "chains_needed": 16}
    >>> gate = StrataGateReport.of({
    ...     "a": ReleaseGateReport(True, 4, {}),
    ...     "b": ReleaseGateReport(False, 4, {"pmse_ratio": failed}),
    ... })
    >>> gate.chains, gate.chains_needed(), group_targets(gate, 24, 32)
    (4, 16, {'b': 24})
    """
    targets = {}
    for name in gate.failing():
        own = gate.groups[name]
        target = next_chain_count(own.chains, own.chains_needed(), max_chains=max_chains)
        targets[name] = min(int(chains), target) if target is not None else int(chains)
    return targets


def in_data_order(frames: Mapping[str, pd.DataFrame], rows: Mapping[str, np.ndarray], m: int) -> pd.DataFrame:
    """The groups' m datasets (each a release frame: column ``synthetic`` = 1..m, then the group's records in
    order) as m datasets of the whole file, the records in the data's order (``rows``: each group's positions)."""
    frame = pd.concat(list(frames.values()), ignore_index=True)
    position = np.concatenate([np.tile(np.asarray(rows[name]), m) for name in frames])
    order = np.lexsort((position, frame["synthetic"].to_numpy()))
    return frame.iloc[order].reset_index(drop=True)


def combine_fits(strata: CategoricalStrata, parts: dict[str, Fitted], records: int, singles: int) -> Fitted:
    """The run's fit of the groups' fits (not yet decided by the gate: the recipe's ``_gated`` does that).

    ``private/diagnostics.json`` holds the parameter gate's figures at their worst over the groups (largest r_hat,
    smallest bulk ESS, summed divergences; the fit they are from under ``worst_fit``), the occupied components of
    the group occupying the most, ``records`` and ``singles`` of the whole file, and every group's own summary
    under ``strata``; each group's posterior is the fit ``group-<position>`` (``private/posterior_group-0.nc``
    ...).
    """
    names = {name: strata.fit_name(name) for name in parts}
    summaries = {name: fit.diagnostics.summary for name, fit in parts.items()}
    worst = max(summaries, key=lambda n: summaries[n]["max_r_hat"])
    fewest = min(summaries, key=lambda n: summaries[n]["min_ess_bulk"])
    busiest = max(summaries, key=lambda n: summaries[n]["occupied_components"]["mean"])
    seconds = [s.get("sampling_seconds") for s in summaries.values()]
    summary = {
        "max_r_hat": summaries[worst]["max_r_hat"],
        "min_ess_bulk": summaries[fewest]["min_ess_bulk"],
        "divergences": int(sum(s.get("divergences", 0) for s in summaries.values())),
        "worst_r_hat": summaries[worst].get("worst_r_hat"),
        "worst_ess_bulk": summaries[fewest].get("worst_ess_bulk"),
        "worst_fit": names[worst],
        "passed": all(bool(s["passed"]) for s in summaries.values()),
        "sampling_seconds": None if any(s is None for s in seconds) else float(sum(seconds)),
        "criteria": summaries[worst].get("criteria"),
        "monitored": summaries[worst].get("monitored", []),
        "occupied_components": {**summaries[busiest]["occupied_components"], "group": busiest},
        "n_records": int(records),
        "single_record_patterns": int(singles),
        "strata": {
            "column": strata.column,
            "groups": {names[name]: {"group": name, "records": len(strata.rows[name]), **summaries[name]}
                       for name in parts},
        },
    }  # fmt: skip
    gate = StrataGateReport.of({name: fit.release_gate for name, fit in parts.items()})
    first = next(iter(parts.values()))
    failing = gate.failing()
    what = first.what
    if failing:
        shown = ", ".join(failing[:5]) + (" ..." if len(failing) > 5 else "")
        what = f"{first.what} by {strata.column!r} ({len(failing)} of {len(parts)} groups: {shown})"
    private_files = {f"posterior_{names[name]}.nc": fit.private_files["posterior.nc"]
                     for name, fit in parts.items() if "posterior.nc" in fit.private_files}  # fmt: skip
    fitted = Fitted(
        Diagnostics({names[name]: fit.diagnostics.posteriors["all"] for name, fit in parts.items()}, summary,
                    passed=gate.passed),
        parts[worst].report,
        what=what,
        state=StrataFit(parts),
        private_files=private_files,
        reports={names[name]: fit.reports["all"] for name, fit in parts.items()},
    )  # fmt: skip
    fitted.release_gate = gate
    return fitted


def group_table(strata: CategoricalStrata, state: StrataFit) -> pd.DataFrame:
    """``private/strata.parquet``: per group its areas, records, chains, the release gate's verdict (figures failed,
    the largest between-chain SE over its tolerance) and the parameter gate's (a diagnostic: largest r_hat,
    smallest bulk ESS), and the components its records occupy."""
    rows = []
    for name, fit in state.parts.items():
        gate, summary = fit.release_gate, fit.diagnostics.summary
        ratios = [f["between_chain_se"] / f["tolerance"] for f in gate.figures.values()
                  if f.get("tolerance") and f.get("between_chain_se") is not None]  # fmt: skip
        rows.append({
            "group": name,
            "fit": strata.fit_name(name),
            "strata": ", ".join(map(str, strata.plan.groups[name])),
            "records": len(strata.rows[name]),
            "chains": int(gate.chains),
            "release_gate_passed": bool(gate.passed),
            "figures_failed": len(gate.failed()),
            "largest_se_over_tolerance": max(ratios) if ratios else math.nan,
            "parameter_gate_passed": bool(fit.parameter_passed),
            "max_r_hat": float(summary["max_r_hat"]),
            "min_ess_bulk": float(summary["min_ess_bulk"]),
            "occupied_components": float(summary["occupied_components"]["mean"]),
        })  # fmt: skip
    return pd.DataFrame(rows)
