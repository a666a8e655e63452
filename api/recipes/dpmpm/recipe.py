"""The DPMPM in the pipeline: a Dirichlet-process mixture of products of multinomials fitted by blocked Gibbs
(Hu & Savitsky, Section 2.1).

The gate monitors label-invariant quantities, including the synthesized levels' probabilities given a pattern;
the release gate decides (:class:`bayessdc.recipes.categorical.CategoricalRecipe`), and the per-record
Bayesian attribute risk is measured by importance sampling. With ``strata=`` one DPMPM per group of areas
(:mod:`bayessdc.recipes.categorical.strata`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc.models.categorical import MAX_NUMERIC_LEVELS, prepare_categorical
from bayessdc.models.dpmpm import DEFAULT_K, DPMPMPriors, DPMPMSynthesizer, GibbsSettings
from bayessdc.models.structural_zeros import StructuralZeroSpec, check_structural_zeros, read_structural_zeros
from bayessdc.synthesis import streams
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.release_gate import ReleaseGatePolicy
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.recipe import Fitted, Lever
from ...release import Diagnostics
from ..categorical import CategoricalFit, CategoricalRecipe, stage_messages
from ..categorical.input import (
    CategoricalPrepared,
    KnownSets,
    OrderedLogits,
    check_known_sets,
    check_ordered_logits,
    check_strata_roles,
    release_notices,
)
from ..categorical.strata import StrataFit
from .chains import fit_chains_apart

__all__ = ["DPMPM"]


@dataclass
class DPMPM(CategoricalRecipe):
    """Dirichlet-process mixture of products of multinomials (Hu & Savitsky, Section 2.1), blocked Gibbs.

    Parameters
    ----------
    K
        Truncation level (number of mixture components).
    conditioning
        The latent class for synthesis drawn given all of the record's values (``"full"``), the kept values
        only (``"pattern"``) or ``pi`` alone (``"prior"``).
    priors
        Hyperparameters of eq. (5)-(6).
    settings
        Blocked Gibbs settings (draws, burn-in, chains, thinning).
    known
        The intruder's knowledge sets, each a list of columns or a comma-separated string (default: every
        kept and synthesized column).
    repetitions
        Repetitions S of the inherent risk scenarios.
    risk_records
        Records whose Bayesian attribute risk is computed by importance sampling (0: none).
    risk_draws
        Posterior draws used as importance-sampling proposals.
    missing
        Missing values: ``"refuse"`` or ``"level"`` (a level of their own).
    max_levels
        Most distinct values a column may have.
    max_numeric_levels
        Most distinct values of a numeric column that is not a run of codes (a dollar income): beyond it the
        column is refused with how to band it (:func:`bayessdc.models.categorical.check_numeric_levels`).
    structural_zeros
        Combinations of levels that cannot occur, in the rules format of ``bsd.CART(rules=...)``
        (:mod:`bayessdc.models.structural_zeros`): rules, ``{"rules": [...]}`` or a JSON/YAML file. Checked
        before any fitting; honoured by exact rejection of the synthetic records (the rate in model.json).
    ordered_logits
        The analyst's ordered logistic regressions ``(response, predictors)``, fitted to the original and
        every synthetic dataset and combined with the partially synthetic rules (``utility()["ordered_logit"]``).
    scheduler, workers
        Where the chains run. Both ``None`` (the default): at once in threads of this process. Otherwise
        each chain is a part of :func:`bayessdc.synthesis.runner.run_parts`: ``scheduler="synchronous"``
        one after another in this thread, ``scheduler=None`` with ``workers`` on a local dask cluster of that
        many threads, or the address of a running dask scheduler (``tcp://host:8786``); finished chains are
        then kept under ``private/chains/`` of the output folder, and a rerun into it loads them. With
        ``strata=`` the groups of areas are the parts (each group's chains one after another within it, kept under
        ``private/strata/group-<i>/chains/``). The posterior is the same on every path.
    strata
        A column of areas (``strata=``): the records of each area are fitted and synthesized by a DPMPM of their
        own, each group judged by its own release gate (the release passes when every group's does; added chains
        go to the failing groups only), the groups one after another or fanned out with ``scheduler``/``workers``
        (:mod:`bayessdc.recipes.categorical.strata`).
        The column is kept (added to the kept columns when it is not among them; refused among the synthesized):
        every record stays in its area. The measures read the whole file, and each area is judged on its records'
        own labels reproduced against its inherent maximum (``stratum_attribute_disclosures``). Not with
        ``structural_zeros``.
    min_stratum
        The fewest records an area's model is fitted on (default 10 + 10 per synthesized column, synthpop's
        ``minstratumsize``, as ``bsd.CART``); a smaller area is pooled with the other small areas of its
        ``pool_by`` area, and what is left pooled together (a last pool still smaller is refused).
    pool_by
        A coarser area holding each area whole, within which the small areas are pooled.
    area_model
        The area synthesized first (with ``strata``): ``"dpmpm"`` or ``"dp_areal"`` (``bsd.DPMPM()``,
        ``bsd.DPAreal()``), or such a recipe with settings of its own, draws each record's area (and the
        ``area_columns``) given its kept values (``area_given``), its posterior judged by its own release gate; then
        each record's synthesized columns are drawn by the DPMPM of its synthetic area's group given its kept values
        and its synthetic area (:mod:`bayessdc.recipes.categorical.areas`). Each area's number of records is then
        synthetic, and ``release/model.json`` states none. ``None`` (the default): every record keeps its real area.
    area_columns
        Categorical columns synthesized with the area by the area model (the DPMPM only), then kept values of the
        within-area models.
    area_given
        The kept columns the area model draws the area given (default every kept column).

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.DPMPM(K=20, conditioning="pattern")
    >>> recipe.K, recipe.conditioning, recipe.default_m, recipe.settings.chains
    (20, 'pattern', 20, 8)
    >>> [(lever.parameter, lever.refit) for lever in recipe.levers()][0]  # lowered without a refit
    ('conditioning', False)
    """

    K: int = DEFAULT_K
    conditioning: str = "full"
    priors: DPMPMPriors = field(default_factory=DPMPMPriors)
    settings: GibbsSettings = field(default_factory=GibbsSettings)
    known: KnownSets = None
    repetitions: int = 100
    gate: ReleaseGatePolicy = field(default_factory=lambda: ReleaseGatePolicy(datasets_per_chain=50))
    risk_records: int = 500
    risk_draws: int = 200
    missing: str = "refuse"
    max_levels: int = 500
    max_numeric_levels: int | None = MAX_NUMERIC_LEVELS
    structural_zeros: StructuralZeroSpec = None
    ordered_logits: OrderedLogits = ()
    scheduler: str | None = None
    workers: int | None = None
    strata: str | None = None
    min_stratum: int | None = None
    pool_by: str | None = None
    area_model: str | CategoricalRecipe | None = None
    area_columns: Sequence[str] = ()
    area_given: Sequence[str] | None = None

    name: ClassVar[str] = "dpmpm"
    label: ClassVar[str] = "dpmpm"

    more_draws: ClassVar[str] = "raise draws= or lower thin="

    def _draws_per_chain(self) -> int:
        """Stored draws per chain (``draws // thin``)."""
        return int(self.settings.stored)

    def synthesizer(self) -> DPMPMSynthesizer:
        """The model this recipe fits (the contract object of ``bayessdc.models.base``)."""
        return DPMPMSynthesizer(K=self.K, priors=self.priors, settings=self.settings, conditioning=self.conditioning)

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> CategoricalPrepared:
        """Code the table (errors name the column), check the knowledge sets and the ordered logits; with
        ``strata=``, plan the groups of areas and prepare each group's records on their own."""
        self._check_repetitions()
        synthesize, keep = list(synthesize or []), list(keep or [])
        keep = check_strata_roles(self.strata, self.min_stratum, self.pool_by, synthesize, keep)
        columns, given = self._area_roles(frame, synthesize, keep)
        keep = [*keep, *columns[1:]]  # the area columns: kept by the within-area models, drawn by the area model
        plan = self._plan_strata(frame, synthesize)
        data = prepare_categorical(frame, synthesize, keep, max_levels=self.max_levels, missing=self.missing,
                                   max_numeric_levels=self.max_numeric_levels)  # fmt: skip
        rules = check_structural_zeros(read_structural_zeros(self.structural_zeros), data)
        if not keep:
            raise InputError("the DPMPM needs at least one kept column (keep=): the patterns the risk is measured in")
        ordered_logits = check_ordered_logits(self.ordered_logits, data.levels, keep, synthesize)
        original = data.frame()
        known = check_known_sets(self.known, [*columns, *synthesize], [c for c in keep if c not in columns])
        notices, singles = release_notices(frame, original, synthesize, keep)
        identity = {
            "synthesizer": "dpmpm",
            "input": fingerprint_frame(original),
            "synthesize": synthesize,
            "keep": keep,
            "K": self.K,
            "conditioning": self.conditioning,
            "priors": asdict(self.priors),
            "sampler": self.settings.to_dict(),
            "known": known,
            "repetitions": self.repetitions,
            "risk_records": self.risk_records,
            "risk_draws": self.risk_draws,
            "release_gate": self.gate.to_dict(),
            "missing": self.missing,
            "ordered_logit": [{"response": r, "predictors": p} for r, p in ordered_logits],
            "structural_zeros": [r.to_dict() for r in rules],
        }
        prepared = CategoricalPrepared(
            data, identity, notices, original=original, synthesize=synthesize, keep=keep, known=known,
            singles=singles, ordered_logits=ordered_logits, structural_zeros=rules,
        )  # fmt: skip
        self._with_strata(frame, plan, prepared)
        self._with_area(frame, columns, given, seed, prepared)
        return prepared

    def _prepare_group(self, frame: pd.DataFrame, whole: CategoricalPrepared) -> CategoricalPrepared:
        """A group's records coded on their own (the levels they take; the whole file's level checks done)."""
        data = prepare_categorical(frame, whole.synthesize, whole.keep, max_levels=self.max_levels,
                                   missing=self.missing, max_numeric_levels=None)  # fmt: skip
        original = data.frame()
        _, singles = release_notices(frame, original, whole.synthesize, whole.keep)
        return CategoricalPrepared(
            data, {}, original=original, synthesize=whole.synthesize, keep=whole.keep, known=whole.known,
            singles=singles, ordered_logits=[],
        )  # fmt: skip

    def _fit_one(
        self, prepared: CategoricalPrepared, m: int, seed: int, workdir: Path | None, progress: bool
    ) -> Fitted:
        """Blocked Gibbs; the gate monitors alpha, the occupied components, the marginals and the pattern
        conditionals of the synthesized levels (the posterior summary is written to ``private/posterior.nc``)."""
        data = prepared.data
        synthesizer = replace(self.synthesizer(), structural_zeros=tuple(prepared.structural_zeros))
        if prepared.area is not None:  # a group of areas whose records are placed by the area model
            synthesizer = replace(synthesizer, conditioning="pattern")
        say = stage_messages(self.label, progress)
        say(f"fitting K = {self.K} to {data.n_records} records in {len(data.cell_counts)} cells ...")
        idata = self._sample(synthesizer, data, seed, workdir, say, range(self.settings.chains))
        return self._gate_fit(prepared, CategoricalFit(idata, synthesizer), seed, say)

    def _sample(
        self, synthesizer: DPMPMSynthesizer, data: Any, seed: int, workdir: Path | None, say: Callable[[str], None],
        chains: range,
    ) -> Any:
        """The posterior of ``chains`` (of the synthesizer's ``settings.chains``): in threads, or as parts. Each
        chain draws from its own stream, so chains added by the stopping rule are those of a run started with
        them."""
        if self.scheduler is None and self.workers is None:
            every = chains == range(synthesizer.settings.chains)
            return synthesizer.fit(data, seed) if every else synthesizer.fit(data, seed, chains=list(chains))
        return fit_chains_apart(synthesizer, data, seed, workdir, say, chains, self.scheduler, self.workers)

    def _gate_fit(
        self, prepared: CategoricalPrepared, state: CategoricalFit, seed: int, say: Callable[[str], None]
    ) -> Fitted:
        """The parameter gate's figures (a diagnostic), the posterior summary and the release gate's verdict."""
        idata, synthesizer, data = state.idata, state.synthesizer, prepared.data
        report = synthesizer.check(idata, data)
        occupied = idata.posterior["occupied"].to_numpy().ravel()
        summary = self._fit_summary(
            prepared, state, report,
            {"max": int(occupied.max()), "K": self.K, "K_large_enough": bool(occupied.max() < self.K)},
            n_records=data.n_records, n_cells=int(len(data.cell_counts)), sampler=idata.attrs["sampler"],
            sampler_decision=idata.attrs["sampler_decision"],
        )  # fmt: skip
        synthesize = prepared.synthesize
        posterior = idata.posterior[["alpha", "pi", "occupied"] + [f"marginal_{v}" for v in synthesize]]
        for v in synthesize:
            posterior = posterior.assign_coords({f"{v}_level": [str(x) for x in data.levels[v]]})
        hint = ""
        if report.worst_r_hat.startswith("conditional_"):
            hint = (
                "The slowest quantities are the synthesized levels' probabilities given a pattern: the chains sit in "
                "different groupings of the patterns into components, which they cross rarely. More and longer chains "
                "help; check the occupied components in private/diagnostics.json."
            )
        fitted = Fitted(
            Diagnostics({"all": idata}, summary, passed=report.passed),
            report,
            what="the DPMPM",
            hint=hint,
            advice="Sample longer (draws=, burn=)",  # a Gibbs sampler: burn-in, no tuning
            state=state,
            private_files={"posterior.nc": lambda path: posterior.to_netcdf(path, engine="h5netcdf")},
            reports={"all": report.to_dict()},
        )
        gate = self._release_gate(prepared, fitted.state, seed, say)
        return self._gated(fitted, gate, report.passed)

    def levers(self) -> list[Lever]:
        """The conditioning of synthesis first (no refit), then the shared levers."""
        return [
            Lever("conditioning", "draw each record's latent class given its kept values only ('pattern') or "
                  "from pi alone ('prior'), so that its synthetic label carries less of its true one", refit=False),
            *super().levers(),
        ]  # fmt: skip

    def no_refit_settings(self) -> list[dict[str, Any]]:
        """The conditionings after the run's own, from most to least informative: each draws from the same
        posterior."""
        order = ["full", "pattern", "prior"]
        own = "pattern" if self.area_model is not None else self.conditioning  # the within-area models' own
        return [{"conditioning": c} for c in order[order.index(own) + 1 :]]

    def under(self, setting: dict[str, Any], fitted: Fitted) -> tuple[DPMPM, Fitted]:
        """This recipe and its fit with another ``conditioning``: the same posterior draws (of every group, with
        ``strata=``)."""

        def drawing(fit: Fitted) -> Fitted:
            return replace(fit, state=replace(fit.state, synthesizer=replace(fit.state.synthesizer, **setting)))

        if isinstance(fitted.state, StrataFit):
            parts = {name: drawing(fit) for name, fit in fitted.state.parts.items()}
            return replace(self, **setting), replace(fitted, state=replace(fitted.state, parts=parts))
        return replace(self, **setting), drawing(fitted)

    def _drawing(self) -> str:
        if self.area_model is not None:
            return " (pattern conditioning, the area synthesized first)"
        return f" ({self.conditioning} conditioning)"

    def _facts(self, prepared: CategoricalPrepared) -> dict[str, Any]:
        return {"records": prepared.data.n_records, "cells": int(len(prepared.data.cell_counts))}

    def _risk_rows(self, records: int, seed: int) -> np.ndarray | None:
        """``risk_records`` of the ``records`` chosen at random (stream ``"risk-records"``), in order; ``None``
        when ``risk_records`` is 0."""
        if self.risk_records <= 0:
            return None
        return np.sort(
            streams.rng(seed, Stream.RISK_RECORDS).choice(records, size=min(self.risk_records, records), replace=False)
        )

    def _bayesian_risk(
        self, prepared: CategoricalPrepared, state: CategoricalFit, joint: Any, seed: int, say: Callable[[str], None],
        rows: np.ndarray | None = None,
    ) -> tuple[pd.DataFrame, dict[str, Any]] | None:
        """Per-record attribute risk of ``risk_records`` records (or of ``rows``) by importance sampling (the
        intruder knows every other value)."""
        import xarray as xr

        from bayessdc.models.base import stack_draws
        from bayessdc.risk.identification import label_attribute_risk

        if self.risk_records <= 0:
            return None
        synthesizer, data = state.synthesizer, prepared.data
        if rows is None:
            say(f"Bayesian attribute risk of {min(self.risk_records, data.n_records)} records by importance "
                "sampling ...")  # fmt: skip
        posterior = stack_draws(state.idata.posterior)
        total = posterior.sizes["sample"]
        posterior = posterior.isel(sample=np.linspace(0, total - 1, min(self.risk_draws, total)).round().astype(int))
        chosen = self._risk_rows(data.n_records, seed) if rows is None else np.asarray(rows)
        released = xr.DataArray(joint.to_numpy(), dims=("synthetic", "item"))
        records, summary = label_attribute_risk(synthesizer, posterior, data, released, chosen)
        intruder = (
            "knows every other value and the model; uniform prior over the labels (eq. 3-8 of the "
            "foundation's attribute-risk module)"
        )
        records = records.assign(chance=1.0 / len(synthesizer.candidates(data)))  # the intruder's uniform prior
        return records[["record", "true_probability", "correct", "relevant_khat", "chance"]], {
            **summary, "intruder": intruder}  # fmt: skip
