"""What the two synthesizers of categorical labels share in the pipeline (Hu & Savitsky).

The DPMPM (:class:`bayessdc.recipes.dpmpm.DPMPM`) and the DP-areal model
(:class:`bayessdc.recipes.dp_areal.DPAreal`) both replace the ``synthesize`` columns of every record by draws
given the ``keep`` columns, and share one release gate and one draw step, so that their outputs compare file
by file: the measures of :mod:`bayessdc.measures` read the same input from both (identification risk per
knowledge set and exact attribute disclosures beside the inherent minimum and maximum, Section 4; table
deviations, pMSE, within-pattern total variation and the analyst's ordered logistic regressions combined over
the m datasets, Section 3), and the per-record tables are :func:`bayessdc.risk.categorical.categorical_risk`'s.

A release's :meth:`bayessdc.Release.risk` with ``known=[...]`` recomputes the identification and attribute
risk for other knowledge sets from the confidential records held in memory
(:class:`bayessdc.recipes.categorical.utility.CategoricalMeasures`); they are never written to ``release/``.

With ``strata=`` the release is synthesized area by area: one posterior and one release gate per group of areas,
the groups' datasets joined into m datasets of the whole file and measured as one release
(:mod:`bayessdc.recipes.categorical.strata`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.measures.utility import within_patterns
from bayessdc.models.base import concat_chains
from bayessdc.models.cart.strata import StrataPlan, default_min_stratum, plan_strata
from bayessdc.risk.categorical import categorical_risk
from bayessdc.risk.release_figures import CategoricalReleaseFigures
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import draw_synthetic
from bayessdc.synthesis.output import table_writer
from bayessdc.synthesis.release_gate import MIN_CHAINS, ReleaseGatePolicy, ReleaseGateReport
from bayessdc.synthesis.runner import run_parts
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.areas import area_counts, area_folder, area_roles, check_area_options, fit_area, prepare_area
from ...pipeline.recipe import Drawn, Fitted, Lever, PosteriorFit, Recipe
from ...release import Release
from .. import area_recipe
from .areas import (
    AREA_GROUP,
    area_description,
    draw_within_areas,
    measured_input,
    measured_roles,
    staged_description,
    staged_fit,
    within_area_prepared,
)
from .gate import categorical_release_gate
from .input import CategoricalPrepared, CategoricalStrata, KnownSets
from .strata import StrataFit, combine_fits, group_table, group_targets, in_data_order
from .utility import CategoricalMeasures, ordered_logit_inputs

__all__ = ["CategoricalFit", "CategoricalRecipe", "stage_messages"]

_log = logging.getLogger(__name__)


@dataclass
class CategoricalFit(PosteriorFit):
    """The posterior of a categorical synthesizer and the inherent risk scenarios, computed once by the release
    gate for its tolerances and read again by the release's risk figures; ``gate_frames`` holds the release
    gate's figures of each chain's datasets (by chain), so that chains added by the stopping rule are the only
    ones measured again."""

    inherent: dict[str, pd.DataFrame] | None = None
    gate_frames: dict[int, pd.DataFrame] = field(default_factory=dict)
    gate_kinds: dict[str, Any] = field(default_factory=dict)


def stage_messages(prefix: str, progress: bool) -> Callable[[str], None]:
    """The stage messages of a run: INFO records of this module's logger (nothing when ``progress`` is false).
    ``prefix`` names the synthesizer in the record's ``synthesizer`` attribute."""
    if not progress:
        return lambda msg: None
    return lambda msg: _log.info("%s", msg, extra={"synthesizer": prefix})


class CategoricalRecipe(Recipe):
    """The steps the two categorical synthesizers share: the release gate, the draw with its risk and utility,
    the description and the report."""

    #: Prefix of progress lines.
    label: ClassVar[str] = ""
    #: Hu & Savitsky release m = 20 synthetic datasets.
    default_m: ClassVar[int] = 20
    known: KnownSets
    repetitions: int

    gate: ReleaseGatePolicy
    strata: str | None
    min_stratum: int | None
    pool_by: str | None
    reads_roles_only: ClassVar[bool] = True
    #: Whether the sampler counts divergences (NUTS): any fails the release gate.
    counts_divergences: ClassVar[bool] = False

    def report_content(self, prepared: CategoricalPrepared, release: Release) -> Any:
        """The report's material: what was synthesized and the synthesized columns compared."""
        return categorical_report_content(self.label, prepared, release)

    def levers(self) -> list[Lever]:
        """What lowers a categorical release's identification and attribute risk, in words."""
        return [
            Lever("keep", "fewer or coarser kept columns: larger patterns, so a synthesized label points to more "
                  "records"),
            Lever("synthesize", "synthesize a coarser label (fewer levels)"),
        ]  # fmt: skip

    def _draws_per_chain(self) -> int:
        """Posterior draws each chain keeps (the sampler's settings)."""
        raise NotImplementedError

    #: How to get more posterior draws per chain, in the words of the recipe's settings.
    more_draws: ClassVar[str] = "raise draws="

    def check_run(self, m: int, allow_unconverged: bool) -> None:
        """Refuse, before sampling, what the release gate or ``m`` cannot be given (and what the area model's own
        checks refuse, when the area is synthesized first).

        Fewer than :data:`~bayessdc.synthesis.release_gate.MIN_CHAINS` chains where the gate decides the release
        (it judges the spread between chain means from at least that many; its stopping rule adds chains beyond
        them); fewer posterior draws per chain than the gate's datasets per chain (each gate dataset from a draw of
        its own, whether the gate decides or only reports); more datasets than draws. Under ``allow_unconverged``
        the gate reports and does not decide, so a study may run fewer chains."""
        chains, draws = int(self.settings.chains), self._draws_per_chain()
        if chains < MIN_CHAINS and not allow_unconverged:
            raise InputError(
                f"chains={chains}: the release gate judges the spread between chain means from at least {MIN_CHAINS} "
                f"chains (its stopping rule adds chains beyond them); start with chains={MIN_CHAINS} or more"
            )
        if draws < self.gate.datasets_per_chain:
            raise InputError(
                f"{draws} posterior draws per chain: the release gate draws {self.gate.datasets_per_chain} datasets "
                f"from each chain, each from a draw of its own; {self.more_draws} or lower the gate's "
                "datasets_per_chain="
            )
        if m > chains * draws:
            raise InputError(f"m={m} needs at least {m} posterior draws; {self.more_draws}")
        area_model = getattr(self, "area_model", None)
        if area_model is not None:
            area_recipe(area_model).check_run(m, allow_unconverged)

    def _check_repetitions(self) -> None:
        if self.repetitions < 1:
            raise InputError("repetitions= must be at least 1")

    def _release_gate(
        self,
        prepared: CategoricalPrepared,
        state: CategoricalFit,
        seed: int,
        say: Callable[[str], None],
        divergences: int | None = None,
    ) -> ReleaseGateReport:
        """The release gate (:mod:`bayessdc.synthesis.release_gate`): ``gate.datasets_per_chain`` synthetic
        datasets from draws spread over each chain, measured by the release's own measure objects (the gate's
        ``measures``, :func:`bayessdc.measures.compute_measures`, on integer keys), and the between-chain
        standard error of every pooled figure against its tolerance. The inherent scenarios are computed here
        once, for the gate's tolerances and the release's risk figures (``state.inherent``)."""
        return categorical_release_gate(self.gate, self.repetitions, prepared, state, seed, say, divergences)

    def fit(self, prepared: CategoricalPrepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """The posterior and its release gate (:meth:`_fit_one`); with ``strata=``, one per group of areas, each
        on the group's records with the group's seed (one after another, or fanned out: :meth:`_fit_groups`), and
        the release gate of them all (:mod:`bayessdc.recipes.categorical.strata`)."""
        strata = prepared.strata
        if strata is None:
            return self._fit_one(prepared, m, seed, workdir, progress)
        first = None
        if prepared.area is not None:  # the area model first (its own seed and release gate)
            first = fit_area(prepared.area, m, workdir, progress, self.label)
        jobs = {name: (part, strata.seed(seed, name), _group_folder(workdir, strata, name), None, 0)
                for name, part in strata.parts.items()}  # fmt: skip
        return self._strata_fitted(prepared, self._fit_groups(strata, jobs, m, progress), first)

    def _fit_groups(self, strata: CategoricalStrata, jobs: dict[str, tuple[Any, ...]], m: int,
                    progress: bool) -> dict[str, Fitted]:  # fmt: skip
        """Each group's fit (a job ``(part, seed, folder, None, 0)``) or its chains brought to ``chains`` (``(part,
        seed, folder, fit, chains)``), in the plan's order.

        With ``scheduler=`` or ``workers=`` (the DPMPM's) and more than one group, the groups are parts of the part
        runner (:func:`bayessdc.synthesis.runner.run_parts`: a local dask cluster of ``workers`` threads, or a
        running scheduler), each group's chains one after another within its part (kept under its folder's
        ``chains/`` as the chains of a run with ``scheduler="synchronous"`` are); otherwise one group after another
        here, each with the recipe's own chains. The posterior of a group is the same on every path (each chain
        draws from its own stream)."""
        say = stage_messages(self.label, progress)
        scheduler, workers = getattr(self, "scheduler", None), getattr(self, "workers", None)
        if len(jobs) < 2 or (scheduler is None and workers is None) or scheduler == "synchronous":
            fits = {}
            for i, (name, job) in enumerate(jobs.items(), start=1):
                if job[3] is None:  # a fit (more chains are announced by more_chains)
                    say(f"group {i} of {len(jobs)} by {strata.column!r}: {name} ({len(strata.rows[name])} records)")
                fits[name] = _GroupFit(self, m, progress)(name, job)
            return fits

        def report(done: int, total: int, name: str, fit: Fitted, resumed: bool) -> None:
            say(f"[{done}/{total}] group {name} by {strata.column!r}: release gate "
                f"{'passed' if fit.release_gate.passed else 'failed'} with {fit.release_gate.chains} chains")

        inner = replace(self, scheduler="synchronous", workers=None)
        fitted = run_parts(_GroupFit(inner, m, False), list(jobs.items()), scheduler=scheduler, workers=workers,
                           progress=report, label="groups")  # fmt: skip
        return dict(zip(jobs, fitted, strict=True))

    def _fit_one(
        self, prepared: CategoricalPrepared, m: int, seed: int, workdir: Path | None, progress: bool
    ) -> Fitted:
        """The posterior of ``prepared``'s records and its release gate (the recipe's own)."""
        raise NotImplementedError

    def _sample(
        self, synthesizer: Any, data: Any, seed: int, workdir: Path | None, say: Callable[[str], None], chains: range
    ) -> Any:
        """The posterior of ``chains`` of the synthesizer's ``settings.chains`` (the recipe's own)."""
        raise NotImplementedError

    def _gate_fit(
        self, prepared: CategoricalPrepared, state: CategoricalFit, seed: int, say: Callable[[str], None]
    ) -> Fitted:
        """The parameter gate's figures, the posterior summary and the release gate's verdict (the recipe's own)."""
        raise NotImplementedError

    def _strata_fitted(self, prepared: CategoricalPrepared, parts: dict[str, Fitted], first: Fitted | None = None
                       ) -> Fitted:  # fmt: skip
        """The groups' fits as the run's, decided by the release gate of them all (every group's must pass); with
        the area synthesized first, the area model's fit ``first`` and its gate among them
        (:func:`~bayessdc.recipes.categorical.areas.staged_fit`)."""
        fitted = combine_fits(prepared.strata, parts, len(prepared.original), prepared.singles)
        # written whatever the verdict, as the posteriors are: a refused run names its failing groups there too
        fitted.private_files["strata.parquet"] = table_writer(group_table(prepared.strata, fitted.state))
        parameter_passed = all(bool(p.parameter_passed) for p in parts.values())
        if first is not None:
            fitted = staged_fit(prepared.area, first, fitted)
            parameter_passed = parameter_passed and bool(first.parameter_passed)
        return self._gated(fitted, fitted.release_gate, parameter_passed)

    def more_chains(self, prepared: CategoricalPrepared, fitted: Fitted, chains: int, seed: int,
                    workdir: Path | None, progress: bool) -> Fitted:  # fmt: skip
        """The fit with chains added up to ``chains`` and the release gate judged again (the pipeline's stopping
        rule asks for them, :mod:`bayessdc.pipeline.stopping`).

        With ``strata=``, the chains go to the groups whose gate failed only, each brought to its own forecast
        (:func:`~bayessdc.recipes.categorical.strata.group_targets`); the groups that passed keep their fit."""
        strata = prepared.strata
        if strata is None:
            return self._more_chains_one(prepared, fitted, chains, seed, workdir, progress)
        say = stage_messages(self.label, progress)
        parts, first = dict(fitted.state.parts), getattr(fitted.state, "first", None)
        jobs = {}
        for name, target in group_targets(fitted.release_gate, chains, self.gate.max_chains).items():
            if name == AREA_GROUP:  # the area model's chains, by its own recipe
                area = prepared.area
                say(f"the area model: {first.release_gate.chains} chains to {target} ...")
                first = area.recipe.more_chains(area.prepared, first, target, area.seed, area_folder(workdir),
                                                progress)  # fmt: skip
                if first is None:
                    return None
                continue
            say(f"group {name} by {strata.column!r}: {parts[name].release_gate.chains} chains to {target} ...")
            jobs[name] = (strata.parts[name], strata.seed(seed, name), _group_folder(workdir, strata, name),
                          parts[name], target)  # fmt: skip
        parts.update(self._fit_groups(strata, jobs, 0, progress))
        return self._strata_fitted(prepared, parts, first)

    def _more_chains_one(self, prepared: CategoricalPrepared, fitted: Fitted, chains: int, seed: int,
                         workdir: Path | None, progress: bool) -> Fitted:  # fmt: skip
        """The fit with chains ``C .. chains - 1`` added (the recipe's ``_sample``) and the release gate judged
        again (``_gate_fit``; the gate datasets of the chains it has are not drawn again)."""
        state: CategoricalFit = fitted.state
        have = int(state.idata.posterior.sizes["chain"])
        synthesizer = replace(state.synthesizer, settings=replace(state.synthesizer.settings, chains=chains))
        say = stage_messages(self.label, progress)
        added = self._sample(synthesizer, prepared.data, seed, workdir, say, range(have, chains))
        idata = concat_chains([state.idata, added])
        return self._gate_fit(prepared, replace(state, idata=idata, synthesizer=synthesizer), seed, say)

    def _gated(self, fitted: Fitted, gate: ReleaseGateReport, parameter_passed: bool) -> Fitted:
        """``fitted`` decided by the release gate: the parameter gate's verdict kept as a diagnostic."""
        fitted.release_gate = gate
        fitted.parameter_passed = bool(parameter_passed)
        fitted.diagnostics = replace(fitted.diagnostics, passed=gate.passed)  # said when written (diagnostics_summary)
        if not gate.passed:
            fitted.report = gate
            needed = gate.chains_needed()
            advice = []
            if gate.failed() or gate.chains < MIN_CHAINS:
                advice.append(
                    f"Run more chains (chains={needed}: the between-chain standard error falls as 1/sqrt(chains))"
                    if needed is not None
                    else "No number of chains meets a zero tolerance; sample longer (draws=)"
                )
            if gate.divergences:
                advice.append("remove the divergences (raise target_accept= and tune=)")
            fitted.failure = "failed the release gate"
            fitted.advice = " and ".join(advice)
            fitted.advice = fitted.advice[0].upper() + fitted.advice[1:]
            fitted.hint = ""  # the parameter gate's advice does not apply to the release figures
        return fitted

    def _fit_summary(
        self, prepared: CategoricalPrepared, state: CategoricalFit, report: Any, occupied: dict[str, Any], **sizes: Any
    ) -> dict[str, Any]:
        """``private/diagnostics.json`` of a fit: the parameter gate's figures, what it monitors, the occupied
        components (mean and interval, and ``occupied``), the mean of alpha, the data's ``sizes``."""
        idata, values = state.idata, state.idata.posterior["occupied"].to_numpy().ravel()
        return {
            **report.to_dict(),
            "monitored": list(report.monitored),  # the names the gate judged (not recomputed: 5 s at 1,000,000)
            "occupied_components": {**_occupied(values), **occupied},
            "alpha_mean": float(idata.posterior["alpha"].mean()),
            **sizes,
            "single_record_patterns": prepared.singles,
        }

    def _facts(self, prepared: CategoricalPrepared) -> dict[str, Any]:
        """The sizes a summary shows (records, cells or patterns and labels)."""
        return {"records": len(prepared.original)}

    def _bayesian_risk(
        self, prepared: CategoricalPrepared, state: CategoricalFit, joint: Any, seed: int, say: Callable[[str], None],
        rows: np.ndarray | None = None,
    ) -> tuple[pd.DataFrame, dict[str, Any]] | None:
        """Per-record Bayesian attribute risk by importance sampling of the records ``rows`` (default
        :meth:`_risk_rows`), where the model offers it (default none)."""
        return None

    def _risk_rows(self, records: int, seed: int) -> np.ndarray | None:
        """The positions of the records whose Bayesian attribute risk is assessed, of ``records`` (default none)."""
        return None

    def _plan_strata(self, frame: pd.DataFrame, synthesize: list[str]) -> StrataPlan | None:
        """The groups of areas of ``strata=`` (:func:`~bayessdc.models.cart.strata.plan_strata`: a missing area or
        a last pool too small refused, naming the rows or areas), before anything is coded; ``None`` without."""
        if self.strata is None:
            return None
        minimum = default_min_stratum(synthesize) if self.min_stratum is None else self.min_stratum
        if isinstance(minimum, bool) or not isinstance(minimum, int | np.integer):
            raise InputError(f"min_stratum= must be a whole number of records, got {minimum!r}")
        return plan_strata(frame, self.strata, int(minimum), self.pool_by)

    def _prepare_group(self, frame: pd.DataFrame, whole: CategoricalPrepared) -> CategoricalPrepared:
        """One group's prepared input: its records ``frame`` coded on their own, the run's columns and knowledge
        sets of ``whole`` (the recipe's own)."""
        raise NotImplementedError

    def _with_strata(self, frame: pd.DataFrame, plan: StrataPlan | None, prepared: CategoricalPrepared) -> None:
        """``prepared`` synthesized by the groups of ``plan`` (nothing without): each group's records prepared on
        their own (:meth:`_prepare_group`; a refusal names the group), and the plan in the run's identity.

        Structural zeros are refused with ``strata=``: a group's model codes only the levels its records take,
        and a rule may name a level an area lacks."""
        if plan is None:
            return
        if prepared.structural_zeros:
            raise InputError(
                f"structural_zeros= with strata={plan.column!r}: each area's model codes only the levels its records "
                "take, and a rule may name a level an area lacks; synthesize without strata= or without the rules"
            )
        rows = plan.rows(frame)
        parts = {}
        for name, positions in rows.items():
            try:
                parts[name] = self._prepare_group(frame.iloc[positions].reset_index(drop=True), prepared)
            except InputError as err:
                what = f"group {name!r} of strata={plan.column!r} ({len(positions)} records)"
                raise InputError(f"{what}: {err}") from None
        prepared.strata = CategoricalStrata(plan, rows, parts, plan.describe(frame))
        prepared.identity["strata"] = {"column": plan.column, "min_stratum": plan.min_size, "pool_by": plan.parent}

    def _area_roles(self, frame: pd.DataFrame, synthesize: list[str], keep: list[str]) -> tuple[list[str], list[str]]:
        """The area model's columns (the area, then the area columns) and the kept columns it draws them given
        (:func:`~bayessdc.pipeline.areas.area_roles`, every column categorical); ``([], [])`` without an area
        model.

        Raises
        ------
        bayessdc.InputError
            ``area_model=``, ``area_columns=`` or ``area_given=`` without ``strata=``, the last two without
            ``area_model=``, and what :func:`~bayessdc.pipeline.areas.area_roles` refuses.
        """
        area_model = getattr(self, "area_model", None)
        area_columns, area_given = getattr(self, "area_columns", ()), getattr(self, "area_given", None)
        if area_model is None and not area_columns and area_given is None:
            return [], []
        check_area_options(self.strata, area_model)
        model = area_recipe(area_model)
        return area_roles(frame, self.strata, area_columns, area_given, synthesize, keep, list(frame.columns),
                          self.pool_by, None, model.name)  # fmt: skip

    def _with_area(self, frame: pd.DataFrame, columns: list[str], given: list[str], seed: int,
                   prepared: CategoricalPrepared) -> None:  # fmt: skip
        """``prepared`` with the area synthesized first (nothing without ``columns``): the area model's input
        (:func:`~bayessdc.pipeline.areas.prepare_area`, its seed the run's stream ``"area-model"``) and each
        group's kept columns on the whole file's levels
        (:func:`~bayessdc.recipes.categorical.areas.within_area_prepared`)."""
        if not columns:
            return
        area = prepare_area(area_recipe(self.area_model), frame, columns, given, seed)
        strata = prepared.strata
        strata.parts = {name: within_area_prepared(part, prepared, area) for name, part in strata.parts.items()}
        prepared.area = area
        prepared.notices = [*prepared.notices, *area.prepared.notices]
        prepared.identity["area_model"] = {"columns": area.columns, "given": area.given,
                                           "model": dict(area.prepared.identity)}  # fmt: skip

    def describe(self, prepared: CategoricalPrepared, fitted: Fitted) -> dict[str, Any]:
        """The model (priors, settings, no estimate), the columns' roles and the release gate's setting."""
        strata = prepared.strata
        if strata is not None:
            return self._describe_strata(prepared, fitted.state)
        state: CategoricalFit = fitted.state
        description = state.synthesizer.describe()
        chains = int(state.idata.posterior.sizes["chain"])
        description.update(
            {"synthesized": prepared.synthesize, "kept": prepared.keep,
             "release_gate": self.gate.describe(chains, divergences=self.counts_divergences)}
        )  # fmt: skip
        return description

    def _describe_strata(self, prepared: CategoricalPrepared, state: StrataFit) -> dict[str, Any]:
        """The description of a release synthesized area by area: the model's (the groups' settings are the
        recipe's), the plan of the groups (:meth:`~bayessdc.models.cart.strata.StrataPlan.describe`) and the
        release gate judged in every group, with each group's chains."""
        strata = prepared.strata
        chains = {name: int(fit.state.idata.posterior.sizes["chain"]) for name, fit in state.parts.items()}
        description = next(iter(state.parts.values())).state.synthesizer.describe()
        sampler = description.get("sampler")
        if isinstance(sampler, dict) and "chains" in sampler:
            sampler["chains"] = max(chains.values())
        gate = self.gate.describe(max(chains.values()), divergences=self.counts_divergences)
        gate.update({
            "by_group": "each group of areas is judged by its own release gate (its datasets, chains and inherent "
            "range); the release passes when every group's gate passes, and chains are added to the failing groups "
            "only",
            "chains_by_group": chains,
        })  # fmt: skip
        description.update({
            "synthesized": prepared.synthesize, "kept": prepared.keep, "release_gate": gate,
            "strata": {**strata.description, "models": "one model per group, fitted on the group's records only "
                       "(the levels they take) with the group's own seed; each record's synthesized values drawn by "
                       "its group's model, every record kept in its area"},
        })  # fmt: skip
        if prepared.area is not None:
            synthesized, kept = measured_roles(prepared, prepared.area)
            description.update(synthesized=synthesized, kept=kept,
                               area_model=staged_description(prepared, state.first))
            description = area_description(description)
        return description

    def draw(self, prepared: CategoricalPrepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """The m datasets, each from one posterior draw (eq. 7 or 13-14), then the risk and utility figures."""
        say = stage_messages(self.label, progress)
        if prepared.strata is not None:
            return self._draw_strata(prepared, fitted.state, m, seed, say)
        state: CategoricalFit = fitted.state
        say(f"drawing {m} synthetic datasets{self._drawing()} ...")
        rng = streams.rng(seed, Stream.DATASETS)
        joint = draw_synthetic(state.synthesizer, state.idata, prepared.data, m, rng)
        synthetic = state.synthesizer.release_frame(prepared.data, joint)
        bayesian = self._bayesian_risk(prepared, state, joint, seed, say)
        return self._measured(prepared, synthetic, bayesian, state.inherent, seed, say)

    def _draw_strata(
        self, prepared: CategoricalPrepared, state: StrataFit, m: int, seed: int, say: Callable[[str], None]
    ) -> Drawn:
        """The m datasets of a release synthesized area by area: each group's drawn from its posterior with its
        own seed, joined in the data's order, measured over the whole file (its inherent scenarios computed once),
        the measures per area; with the area synthesized first, each record's by its synthetic area's group
        (:func:`~bayessdc.recipes.categorical.areas.draw_within_areas`), the area and the area columns measured as
        synthesized (:func:`~bayessdc.recipes.categorical.areas.measured_input`). ``private/strata.parquet`` holds
        each group's fit (also among the fit's private files, so that a refused run has it)."""
        strata = prepared.strata
        say(f"drawing {m} synthetic datasets{self._drawing()} in {len(strata.parts)} groups by {strata.column!r} ...")
        measured, bayesian = prepared, None
        if prepared.area is not None:  # no per-record Bayesian risk: a record is drawn by its synthetic area's model
            synthetic, measured = draw_within_areas(prepared, state, prepared.area, m, seed), measured_input(prepared)
        else:
            frames, joints = {}, {}
            for name, part in strata.parts.items():
                own: CategoricalFit = state.parts[name].state
                rng = streams.rng(strata.seed(seed, name), Stream.DATASETS)
                joints[name] = draw_synthetic(own.synthesizer, own.idata, part.data, m, rng)
                frames[name] = own.synthesizer.release_frame(part.data, joints[name])
            synthetic = in_data_order(frames, strata.rows, m)
            bayesian = self._bayesian_risk_by_group(prepared, state, joints, seed, say)
        if state.inherent is None:
            from bayessdc.risk.identification import inherent_risk

            x = measured
            state.inherent = inherent_risk(x.original, x.synthesize, x.keep, x.known, repetitions=self.repetitions,
                                           seed=seed)  # fmt: skip
        drawn = self._measured(measured, synthetic, bayesian, state.inherent, seed, say)
        drawn.measure_input.strata = strata.column
        drawn.private_tables["strata.parquet"] = group_table(strata, state)
        drawn.facts.update(strata=sum(len(v) for v in strata.plan.groups.values()), strata_groups=len(strata.parts))
        if prepared.area is not None:
            drawn.private_tables["area_counts.parquet"] = area_counts(prepared.original, synthetic, strata.column)
            drawn.facts.update(area_model=prepared.area.name)
        return drawn

    def _bayesian_risk_by_group(
        self, prepared: CategoricalPrepared, state: StrataFit, joints: dict[str, Any], seed: int,
        say: Callable[[str], None],
    ) -> tuple[pd.DataFrame, dict[str, Any]] | None:
        """The Bayesian attribute risk of the records the unstratified run would assess (:meth:`_risk_rows` of the
        whole file), each by its group's posterior and datasets; ``record`` is the record's position in the
        file."""
        strata = prepared.strata
        chosen = self._risk_rows(len(prepared.original), seed)
        if chosen is None:
            return None
        say(f"Bayesian attribute risk of {len(chosen)} records by importance sampling, by group ...")
        found, summary = [], {}
        for name, part in strata.parts.items():
            rows = strata.rows[name]
            local = np.flatnonzero(np.isin(rows, chosen))
            if not len(local):
                continue
            risk = self._bayesian_risk(part, state.parts[name].state, joints[name], strata.seed(seed, name), say,
                                       rows=local)  # fmt: skip
            if risk is not None:
                records, summary = risk
                found.append(records.assign(record=rows[records["record"].to_numpy()]))
        if not found:
            return None
        records = pd.concat(found, ignore_index=True).sort_values("record", kind="stable").reset_index(drop=True)
        khat = records["relevant_khat"].to_numpy(dtype=float)
        return records, {
            "records_assessed": len(records),
            "mean_true_probability": float(records["true_probability"].mean()),
            "max_true_probability": float(records["true_probability"].max()),
            "share_correct": float(records["correct"].mean()),
            "khat_over_0_7": int((khat > 0.7).sum()),
            **({"intruder": summary["intruder"]} if "intruder" in summary else {}),
        }

    def _measured(
        self, prepared: CategoricalPrepared, synthetic: pd.DataFrame, bayesian: Any, inherent: Any, seed: int,
        say: Callable[[str], None],
    ) -> Drawn:
        """The draw's measures of the m datasets ``synthetic`` (and the per-record Bayesian risk ``bayesian``),
        against the inherent scenarios ``inherent``."""
        x = prepared
        say("risk ...")
        # the m datasets measured on integer keys for the per-record tables (the measures compute their figures from
        # the measure input, weighted when the release has survey weights)
        figures = CategoricalReleaseFigures(x.original, x.synthesize, x.keep, x.known, ways=(1, 2, 3), pmse=True)
        measured = figures.measure_datasets(synthetic[["synthetic", *x.keep, *x.synthesize]])
        risk = categorical_risk(
            x.original, synthetic, x.synthesize, x.keep, x.known, repetitions=self.repetitions, seed=seed,
            bayesian=None if bayesian is None else bayesian[0], inherent=inherent, measured=measured,
        )  # fmt: skip
        items, sampling = None, {}
        if bayesian is not None:
            items = bayesian[0].drop(columns="record").rename(columns={"relevant_khat": "khat"})
            # how far the importance sampling can be trusted (its figures are the intruder measures')
            sampling = {"importance_sampling": {
                k: bayesian[1][k] for k in ("records_assessed", "khat_over_0_7", "intruder") if k in bayesian[1]}}
        data = MeasureInput(
            synthetic, x.original, released=x.keep + x.synthesize, synthesized=x.synthesize, kept=x.keep,
            known_sets=x.known, partially_synthetic=True, inherent=inherent, repetitions=self.repetitions,
            seed=seed, items=items, regression=ordered_logit_inputs(x.original, synthetic, x.ordered_logits, x.keep),
        )  # fmt: skip
        cells, _ = within_patterns(data)
        return Drawn(
            synthetic,
            facts={**self._facts(prepared), "single_record_patterns": x.singles},
            private_tables={
                "risk_records.parquet": risk.records,
                "within_pattern.parquet": cells.astype({c: str for c in x.keep + x.synthesize}),
                "risk_inherent.parquet": risk.inherent,
                "risk_by_dataset.parquet": risk.by_dataset,
            },
            measures=CategoricalMeasures(x.original, synthetic, x.synthesize, x.keep, self.repetitions, seed,
                                         ordered_logits=x.ordered_logits),
            measure_input=data,
            diagnostics=sampling,
        )

    def _drawing(self) -> str:
        """How the datasets are drawn, for the progress line (the DPMPM names its conditioning)."""
        return ""


def _occupied(values: np.ndarray) -> dict[str, Any]:
    return {
        "mean": float(values.mean()),
        "interval_95": [float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))],
    }


def categorical_report_content(label: str, prepared: CategoricalPrepared, release: Release) -> Any:
    """What the DPMPM or DP-areal model did, for its report (:class:`bayessdc.report.ReportContent`): the
    synthesized columns compared; risk and utility are laid out from the release's measures."""
    from bayessdc.report import ReportContent

    synthesize, keep = prepared.synthesize, prepared.keep
    description = release.description
    k = description.get("model", {}).get("K", description.get("K"))
    about = [
        f"The {label} model (K = {k}) was fitted to {release.facts.get('records', 0):,} records. "
        f"Each of the m = {release.m} synthetic datasets replaces {', '.join(synthesize)} by a draw from the posterior "
        f"predictive given the kept column(s) {', '.join(keep)}, which are released unchanged.",
    ]
    strata = description.get("strata")
    if strata:
        pooled = [g for g in strata["groups"] if len(g["strata"]) > 1]
        about.append(
            f"Synthesized area by area: the records of each {strata['column']} fitted and drawn by a model of their "
            f"own ({len(strata['groups'])} groups of {sum(len(g['strata']) for g in strata['groups'])} areas; "
            f"{len(pooled)} pool(s) of areas under {strata['min_records']} records), each judged by its own release "
            "gate; each area's records whose own labels are reproduced are judged against the area's inherent maximum "
            "(stratum_attribute_disclosures), and the records copied are reported per area (stratum_copied_records)."
        )
    return ReportContent(
        original=prepared.original, synthetic=release.synthetic, compared=list(synthesize), about=about
    )


@dataclass(frozen=True)
class _GroupFit:
    """The part runner's task of a release synthesized area by area (picklable): ``(name, (part, seed, folder, fit,
    chains)) ->`` the group's fit by ``recipe`` (``fit`` ``None``), or ``fit`` with its chains brought to
    ``chains``."""

    recipe: CategoricalRecipe
    m: int
    progress: bool

    def __call__(self, name: str, job: tuple[Any, ...]) -> Fitted:
        part, seed, folder, fit, chains = job
        if fit is None:
            return self.recipe._fit_one(part, self.m, seed, folder, self.progress)
        return self.recipe._more_chains_one(part, fit, chains, seed, folder, self.progress)


def _group_folder(workdir: Path | None, strata: CategoricalStrata, name: str) -> Path | None:
    """Where a group's finished parts are kept (``private/strata/group-<position>``), when the run has a folder."""
    return None if workdir is None else Path(workdir) / "strata" / strata.fit_name(name)
