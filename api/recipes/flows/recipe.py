"""The flow synthesizer's steps of the pipeline (Hawala, Reiter & Wang).

Each (origin group, destination group) pair is fitted on its own through the group runner (dask.distributed,
resumable), the convergence gate applies to every pair, and the intruder's attribute risk is measured per
sensitive cell by importance sampling (eq. 3-8 of the paper).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.models.flows import (
    FLOW_SAMPLER_SETTINGS,
    WEAKLY_INFORMATIVE_PRIORS,
    FlowColumns,
    FlowPriors,
    FlowSynthesizer,
    split_groups,
    validate_flows,
)
from bayessdc.models.sampling import ConvergenceCriteria, ConvergenceReport, SamplerSettings
from bayessdc.risk.attribute import AttributeRiskAssessor
from bayessdc.synthesis.datasets import stack_datasets
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.runner import GroupTask, log_progress, run_groups

from ...errors import InputError
from ...pipeline.recipe import Drawn, Fitted, Lever, Prepared, Recipe
from ...release import Diagnostics, PosteriorFiles, Release
from .figures import exact_check, flow_risk_cells, importance_diagnostics, intruder_items

__all__ = ["Flows"]

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class FlowsPrepared(Prepared):
    """The flows' validated input: ``data`` holds the whole checked table.

    Attributes
    ----------
    groups
        The (origin group, destination group) pairs with sensitive cells, each fitted on its own.
    skipped
        The pairs without sensitive cells (released unchanged).
    at_lower_bound
        The pairs whose every sensitive count is at the lower bound.
    """

    groups: list[Any]
    skipped: list[tuple[Any, Any]] = field(default_factory=list)
    at_lower_bound: list[list[Any]] = field(default_factory=list)


@dataclass
class Flows(Recipe):
    """Truncated-Poisson synthesis of the small counts of an origin-destination table.

    Parameters
    ----------
    priors
        The precision and mean priors of Section 2.1 (default the weakly informative Gamma(1, 1) on the
        precisions; the paper's Gamma(0.01, 0.01) is ``bayessdc.models.flows.PAPER_PRIORS``).
    settings
        NUTS settings per state pair (default ``FLOW_SAMPLER_SETTINGS``: the compiled sampler, 4 chains of 500
        warm-up and 1,000 kept iterations).
    columns
        The table's origin, destination, group and count columns.
    lower, upper
        Counts in ``lower..upper`` are sensitive and replaced (1..9 in the paper).
    scheduler, workers
        Where the pairs are fitted: ``None`` for a local dask cluster of ``workers`` threads, the address
        of a running scheduler, or ``"synchronous"``.
    risk_draws
        Posterior draws per pair used for the importance-sampling risk.
    max_extensions
        More sampling for a pair that fails the gate, at most this many times: its chains continued by as
        many draws again when r_hat or ESS failed, then refits with 4x the draws (or, after divergences, with
        ``target_accept`` halfway to 1); see :class:`bayessdc.synthesis.runner.GroupTask`.
    exact_check
        Refit the model for this many cells with the largest k-hat, once per candidate count, to measure
        the importance-sampling approximation (``private/exact_check.json``).
    no_knowledge
        Also the intruder who knows no sensitive count (Section 3.1), beside the worst case: each pair refitted
        to each of its m synthetic tables (:mod:`bayessdc.risk.no_knowledge`); reported, not judged.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.Flows()
    >>> recipe.lower, recipe.upper, recipe.default_m  # counts 1..9 are sensitive, as in the paper
    (1, 9, 5)
    """

    priors: FlowPriors = WEAKLY_INFORMATIVE_PRIORS
    settings: SamplerSettings = field(default_factory=lambda: FLOW_SAMPLER_SETTINGS)
    columns: FlowColumns = field(default_factory=FlowColumns)
    lower: int = 1
    upper: int = 9
    scheduler: str | None = None
    workers: int | None = None
    risk_draws: int = 1000
    max_extensions: int = 2
    exact_check: int = 0
    no_knowledge: bool = True
    name: ClassVar[str] = "flows"
    takes_control: ClassVar[bool] = False

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> FlowsPrepared:
        """Check the table (errors name the rows) and split it into group pairs."""
        if synthesize not in (None, [self.columns.count]) or keep is not None:
            raise InputError(
                "bsd.Flows takes its columns from bsd.Flows(columns=FlowColumns(origin=..., destination=..., "
                f"origin_group=..., destination_group=..., count=...)); the count column {self.columns.count!r} "
                "is the one synthesized"
            )
        data = validate_flows(frame, self.columns)
        groups, skipped = split_groups(data, self.columns, self.lower, self.upper)
        if not groups:
            raise InputError(f"no cell has a count in {self.lower}..{self.upper}: nothing to synthesize")
        synthesizer = self.synthesizer()
        identity = {
            "synthesizer": "flows",
            "input": fingerprint_frame(data),
            "columns": asdict(self.columns),
            "bounds": [self.lower, self.upper],
            "priors": asdict(synthesizer.priors),
            "sampler": {k: v for k, v in self.settings.to_dict().items() if k not in ("progressbar", "cores")},
            "risk_draws": self.risk_draws,
            # how a pair that fails the gate gets more sampling (a folder started under another policy
            # would resume into a release that no fresh run gives)
            "gate_policy": {
                "max_extensions": self.max_extensions,
                "first_extension": "continued chains",
                "target_accept_when_all_counts_at_lower_bound": synthesizer.describe()["sampler"][
                    "target_accept_when_all_counts_at_lower_bound"
                ],
            },
        }
        notices = []
        if len(skipped) == 1:
            notices.append(f"group {skipped[0][0]} -> {skipped[0][1]} has no sensitive cells; released unchanged")
        elif skipped:  # one line for them all, not one per pair (74 on the airports' state pairs)
            names = ", ".join(f"{a} -> {b}" for a, b in skipped[:5])
            notices.append(f"{len(skipped)} group pairs have no sensitive cells and are released unchanged "
                           f"({names}{', ...' if len(skipped) > 5 else ''})")  # fmt: skip
        floor = [g for g in groups if not g.y.any()]
        if floor:
            names = ", ".join(f"{a} -> {b}" for a, b in (g.key for g in floor[:5]))
            notices.append(
                f"{len(floor)} group pair(s) ({names}{', ...' if len(floor) > 5 else ''}) have every sensitive count "
                f"at the lower bound {self.lower}: their data say only that the rates are small (the likelihood is "
                "flat as a rate goes to 0), so how small is set by the prior; their synthetic counts will be "
                f"mostly {self.lower}, and their risk figures measure what the prior and the range allow, not the data"
            )
        return FlowsPrepared(
            data, identity, notices, groups=groups, skipped=skipped, at_lower_bound=[list(g.key) for g in floor]
        )

    def synthesizer(self) -> FlowSynthesizer:
        """The model this recipe fits to each group pair (the contract object of ``bayessdc.models.base``)."""
        return FlowSynthesizer(priors=self.priors, settings=self.settings, lower=self.lower, upper=self.upper)

    def fit(self, prepared: FlowsPrepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit every group pair through the group runner (each pair's synthetic counts and per-cell risk are
        drawn in the same task, so that a finished pair is stored whole); the gate applies to each pair.
        State: the group runner's results, in the order of the groups."""
        groups = prepared.groups
        if progress:
            _log.info("fitting %d group pair(s) ...", len(groups))
        scratch = None
        if workdir is None:
            scratch = tempfile.TemporaryDirectory(prefix="bayessdc-flows-")
            workdir = Path(scratch.name)
        task = GroupTask(
            self.synthesizer(),
            Path(workdir) / "groups",
            m=m,
            seed=seed,
            criteria=ConvergenceCriteria(),
            assess=AttributeRiskAssessor(n_draws=self.risk_draws, no_knowledge=self.no_knowledge),
            max_extensions=self.max_extensions,
        )
        results = run_groups(
            task,
            [(g.name, g) for g in groups],
            scheduler=self.scheduler,
            workers=self.workers,
            progress=log_progress,  # INFO per group, WARNING for one that did not converge
        )
        unconverged = [r.name for r in results if not r.converged]
        summary = {
            "max_r_hat": max(r.convergence["max_r_hat"] for r in results),
            "min_ess_bulk": min(r.convergence["min_ess_bulk"] for r in results),
            "divergences": int(sum(r.convergence["divergences"] for r in results)),
            "all_converged": not unconverged,
            "unconverged_groups": unconverged,
            "criteria": asdict(ConvergenceCriteria()),
            "groups": {
                r.name: {
                    **r.convergence,
                    **{k: r.summary.get(k) for k in ("fit_seconds", "fit_attempts", "assess_seconds")},
                }
                for r in results
            },
            "importance_sampling": importance_diagnostics([r.items for r in results]),
        }
        worst = next((r for r in results if not r.converged), results[0]).convergence
        report = ConvergenceReport(
            *(worst[k] for k in ("max_r_hat", "min_ess_bulk", "divergences", "worst_r_hat", "worst_ess_bulk"))
        )
        posteriors = PosteriorFiles(task.folder, [g.name for g in groups], keep_alive=scratch)
        return Fitted(
            Diagnostics(posteriors, summary, passed=not unconverged),
            report,
            what=f"{len(unconverged)} group(s) ({', '.join(unconverged[:5])})",
            hint="Groups with few origins or destinations and mostly minimum counts have a nearly improper "
            "posterior under the paper's Gamma(0.01, 0.01) precision priors; the default weakly informative "
            "prior (phi_prior=weakly-informative, Gamma(1, 1)) makes them proper (recorded in model.json).",
            state=results,
            reports={r.name: r.convergence for r in results},
        )

    def report_content(self, prepared: FlowsPrepared, release: Release) -> Any:
        """The report's material: what was synthesized and the sensitive counts compared by origin."""
        return flows_report_content(self, prepared, release)

    def describe(self, prepared: FlowsPrepared, fitted: Fitted) -> dict[str, Any]:
        """The model per group pair (priors, sampler), the sensitive bounds, the number of pairs, the columns."""
        description = self.synthesizer().describe()
        description.update(
            {"sensitive_bounds": [self.lower, self.upper], "groups_fitted": len(prepared.groups),
             "columns": asdict(self.columns)}
        )  # fmt: skip
        return description

    def draw(self, prepared: FlowsPrepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """The synthetic tables (drawn with each pair's fit), and what the measures read: each sensitive cell's
        intruder figures (eq. 3-8) and its row in the table, the counts and their margins."""
        data, groups, columns, lower = prepared.data, prepared.groups, self.columns, self.lower
        results = fitted.state
        sensitive_rows = np.concatenate([g.rows for g in groups])
        synthetic_values = np.concatenate([r.synthetic_values() for r in results], axis=1) + lower
        cells = pd.concat([r.items for r in results], ignore_index=True)
        original = data.iloc[sensitive_rows].reset_index(drop=True)
        risk_cells = flow_risk_cells(original, cells, columns, lower)
        frames = []
        for k in range(m):
            frame = data.copy()
            counts = frame[columns.count].to_numpy().copy()
            counts[sensitive_rows] = synthetic_values[k]
            frame[columns.count] = counts
            frames.append(frame)
        synthetic = stack_datasets(frames)
        private_json = {}
        if self.exact_check > 0:
            private_json["exact_check.json"] = exact_check(self.synthesizer(), self.exact_check, self.lower, groups,
                                                           results, risk_cells, seed)  # fmt: skip
        return Drawn(
            synthetic,
            facts={
                "groups": len(groups),
                "sensitive_cells": len(sensitive_rows),
                "groups_released_unchanged": [list(k) for k in prepared.skipped],
                "groups_all_at_lower_bound": prepared.at_lower_bound,
            },
            private_json=private_json,
            private_tables={"risk_cells.parquet": risk_cells},
            measure_input=MeasureInput(
                synthetic,
                original=data,
                count_column=columns.count,
                count_margins=[[columns.origin], [columns.destination],
                               [columns.origin_group, columns.destination_group]],
                items=intruder_items(risk_cells, self.lower, self.upper).assign(row=sensitive_rows),
                seed=seed,
            ),
        )

    def levers(self) -> list[Lever]:
        """What lowers the intruder's correct guesses of the sensitive counts, in words."""
        return [
            Lever("priors", "stronger pooling of the effects (FlowPriors of a larger mean precision): each cell's "
                  "own count weighs less in its rate"),
            Lever("m", "fewer synthetic datasets: the intruder reads every one of them"),
            Lever("upper", "a wider sensitive range: more candidate values per cell for the intruder to choose among")]


def flows_report_content(recipe: Flows, prepared: FlowsPrepared, release: Release) -> Any:
    """What the flows synthesizer did, for its report (:class:`bayessdc.report.ReportContent`): the sensitive
    counts compared, by origin; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, plots

    columns, data = recipe.columns, prepared.data
    rows = np.concatenate([g.rows for g in prepared.groups]) if prepared.groups else np.array([], int)
    stacked = release.synthetic
    synthetic = pd.concat(
        [stacked[stacked["synthetic"] == k].iloc[rows] for k in range(1, release.m + 1)], ignore_index=True
    )
    original = data.iloc[rows].reset_index(drop=True)
    content = ReportContent(
        original=original,
        synthetic=synthetic,
        compared=[columns.count],
        about=[
            f"Counts of {columns.count} in {recipe.lower}..{recipe.upper} are sensitive: {len(rows):,} cells in "
            f"{release.facts.get('groups', 0)} {columns.origin_group} x {columns.destination_group} pair(s), each "
            "fitted separately by the truncated-Poisson model (Hawala, Reiter & Wang), are replaced by posterior "
            f"predictive draws in each of the m = {release.m} datasets; other counts are released unchanged.",
        ],
    )
    if len(rows):
        totals = pd.DataFrame({"original": original.groupby(columns.origin)[columns.count].sum()})
        totals["synthetic"] = synthetic.groupby(columns.origin)[columns.count].sum() / release.m
        content.comparison.append(Figure(
            partial(plots.scatter_identity, totals["original"], totals["synthetic"], "original",
                    "synthetic (mean of datasets)", f"sensitive counts by {columns.origin}"),
            f"Each {columns.origin}'s total over its sensitive cells.",
        ))
    return content
