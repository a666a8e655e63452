"""The DP-areal model in the pipeline: Poisson-lognormal label counts per pattern with Dirichlet-process random
effects, fitted by NUTS (Hu & Savitsky, Section 2.2); the release gate decides
(:class:`bayessdc.recipes.categorical.CategoricalRecipe`) and counts divergences. With ``strata=`` one model per
group of areas (:mod:`bayessdc.recipes.categorical.strata`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from bayessdc.models.categorical import MAX_NUMERIC_LEVELS
from bayessdc.models.dp_areal import (
    DEFAULT_K,
    NUTS_TARGET_ACCEPT,
    DPArealGibbsSettings,
    DPArealPriors,
    DPArealSynthesizer,
    prepare_areal,
)
from bayessdc.models.sampling import SamplerSettings
from bayessdc.models.structural_zeros import StructuralZeroSpec, read_structural_zeros
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.release_gate import ReleaseGatePolicy

from ...pipeline.recipe import Fitted
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

__all__ = ["DPAreal"]


@dataclass
class DPAreal(CategoricalRecipe):
    """Poisson-lognormal label counts per pattern with Dirichlet-process random effects (Hu & Savitsky,
    Section 2.2), fitted by NUTS.

    Parameters
    ----------
    K
        Truncation level (number of mixture components).
    priors
        Hyperparameters of eq. (9)-(12).
    settings
        The sampler: the Gibbs sampler's settings (``bsd.DPArealGibbsSettings``, the default:
        :mod:`bayessdc.models.dp_areal.gibbs`) or NUTS's (``bsd.SamplerSettings``, on the model with the labels
        summed out), on the same posterior. Gibbs by measurement (``python bench/dp_areal_gibbs.py --table ce
        --K 50 --release``): the CE-like table (40 patterns x 133 labels, K = 50) released through the gate in
        158 s, where NUTS was refused for divergences after 974 s.
    parameterization
        How the cluster effects are sampled (``"identified"``, ``"identified_centred"``, ``"noncentred"``,
        ``"centred"``).
    known, repetitions, missing, max_levels, max_numeric_levels, ordered_logits
        As for :class:`DPMPM`.
    structural_zeros
        (pattern, label) combinations that cannot occur, in the rules format of ``bsd.CART(rules=...)``: rules,
        ``{"rules": [...]}`` or a JSON/YAML file, checked before any fitting. The truncated model: those cells'
        counts are fixed at zero, left out of the likelihood, and never drawn (no rejection).
    max_cells
        Most label x pattern cells (beyond: the DPMPM); with ``strata=``, of each group's model.
    strata, min_stratum, pool_by
        Synthesis area by area, as for :class:`DPMPM`: one DP-areal model per group of areas, each judged by its
        own release gate (:mod:`bayessdc.recipes.categorical.strata`).

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.DPAreal()
    >>> recipe.K, recipe.default_m
    (50, 20)
    """

    K: int = DEFAULT_K
    priors: DPArealPriors = field(default_factory=DPArealPriors)
    settings: SamplerSettings | DPArealGibbsSettings = field(default_factory=DPArealGibbsSettings)
    parameterization: str = "identified"
    known: KnownSets = None
    repetitions: int = 100
    gate: ReleaseGatePolicy = field(default_factory=lambda: ReleaseGatePolicy(datasets_per_chain=200))
    missing: str = "refuse"
    max_levels: int = 500
    max_numeric_levels: int | None = MAX_NUMERIC_LEVELS
    structural_zeros: StructuralZeroSpec = None
    max_cells: int = 300_000
    ordered_logits: OrderedLogits = ()
    strata: str | None = None
    min_stratum: int | None = None
    pool_by: str | None = None

    name: ClassVar[str] = "dp_areal"
    label: ClassVar[str] = "dp-areal"
    counts_divergences: ClassVar[bool] = True

    #: NUTS's target acceptance on this model (:meth:`nuts_settings`).
    nuts_target_accept: ClassVar[float] = NUTS_TARGET_ACCEPT

    @classmethod
    def nuts_settings(cls, **settings: Any) -> SamplerSettings:
        """NUTS's settings for this model (``settings=`` to sample it by NUTS): :class:`SamplerSettings` with the
        target acceptance measured on it (:data:`bayessdc.models.dp_areal.NUTS_TARGET_ACCEPT`) unless given.

        Examples
        --------
        >>> import bayessdc as bsd
        >>> bsd.DPAreal.nuts_settings(draws=500).target_accept
        0.9
        """
        return SamplerSettings(**{"target_accept": cls.nuts_target_accept, **settings})

    def _draws_per_chain(self) -> int:
        """Posterior draws each chain keeps (``draws``, after burn-in and thinning for the Gibbs sampler)."""
        return int(self.settings.draws)

    def synthesizer(self) -> DPArealSynthesizer:
        """The model this recipe fits (the contract object of ``bayessdc.models.base``)."""
        return DPArealSynthesizer(
            K=self.K, priors=self.priors, settings=self.settings, parameterization=self.parameterization
        )

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> CategoricalPrepared:
        """Code the table and count the labels of every pattern (errors name the column or the limit); with
        ``strata=``, plan the groups of areas and prepare each group's records on their own (the cell limit is each
        group's: the whole file's counts are never fitted)."""
        self._check_repetitions()
        synthesize, keep = list(synthesize or []), list(keep or [])
        keep = check_strata_roles(self.strata, self.min_stratum, self.pool_by, synthesize, keep)
        plan = self._plan_strata(frame, synthesize)
        model_notices: list[str] = []
        data = prepare_areal(
            frame,
            synthesize,
            keep,
            max_levels=self.max_levels,
            max_cells=self.max_cells if plan is None else sys.maxsize,
            missing=self.missing,
            notices=model_notices,
            max_numeric_levels=self.max_numeric_levels,
            structural_zeros=read_structural_zeros(self.structural_zeros),
        )
        original = data.records.frame()
        known = check_known_sets(self.known, synthesize, keep)
        notices, singles = release_notices(frame, original, synthesize, keep)
        ordered_logits = check_ordered_logits(self.ordered_logits, data.records.levels, keep, synthesize)
        identity = {
            "synthesizer": "dp-areal",
            "input": fingerprint_frame(original),
            "synthesize": synthesize,
            "keep": keep,
            "K": self.K,
            "priors": asdict(self.priors),
            "sampler": self.settings.to_dict(),
            "parameterization": self.parameterization,
            "release_gate": self.gate.to_dict(),
            "known": known,
            "repetitions": self.repetitions,
            "missing": self.missing,
            "ordered_logit": [{"response": r, "predictors": p} for r, p in ordered_logits],
            "structural_zeros": [r.to_dict() for r in data.structural_zeros],
        }
        notices = [n.removeprefix("notice: ") for n in model_notices] + notices
        prepared = CategoricalPrepared(
            data, identity, notices, original=original, synthesize=synthesize, keep=keep, known=known,
            singles=singles, ordered_logits=ordered_logits, structural_zeros=list(data.structural_zeros),
        )  # fmt: skip
        self._with_strata(frame, plan, prepared)
        return prepared

    def _prepare_group(self, frame: pd.DataFrame, whole: CategoricalPrepared) -> CategoricalPrepared:
        """A group's records coded on their own (the labels and patterns they take) and counted, within
        ``max_cells``."""
        data = prepare_areal(frame, whole.synthesize, whole.keep, max_levels=self.max_levels, max_cells=self.max_cells,
                             missing=self.missing, notices=[], max_numeric_levels=None)  # fmt: skip
        original = data.records.frame()
        _, singles = release_notices(frame, original, whole.synthesize, whole.keep)
        return CategoricalPrepared(
            data, {}, original=original, synthesize=whole.synthesize, keep=whole.keep, known=whole.known,
            singles=singles, ordered_logits=[],
        )  # fmt: skip

    def _fit_one(
        self, prepared: CategoricalPrepared, m: int, seed: int, workdir: Path | None, progress: bool
    ) -> Fitted:
        """NUTS on the model with the labels summed out; the gate monitors label-invariant quantities."""
        data = prepared.data
        synthesizer = replace(self.synthesizer(), structural_zeros=tuple(prepared.structural_zeros))
        say = stage_messages(self.label, progress)
        say(
            f"fitting K = {self.K} to {data.n_patterns} patterns x {data.n_labels} labels "
            f"({data.n_distinct} distinct pattern/count pairs) ..."
        )
        idata = synthesizer.fit(data, seed)
        return self._gate_fit(prepared, CategoricalFit(idata, synthesizer), seed, say)

    def _sample(
        self, synthesizer: DPArealSynthesizer, data: Any, seed: int, workdir: Path | None, say: Callable[[str], None],
        chains: range,
    ) -> Any:
        """The posterior of ``chains`` added by the stopping rule: NUTS from the stream ``(seed, "chains", C)``
        (divergences are then counted over every chain)."""
        say(f"fitting chains {chains.start} to {chains.stop - 1} ...")
        return synthesizer.fit(data, seed, chains=chains)

    def _gate_fit(
        self, prepared: CategoricalPrepared, state: CategoricalFit, seed: int, say: Callable[[str], None]
    ) -> Fitted:
        """The parameter gate's figures (a diagnostic, divergences included), the posterior summary and the
        release gate's verdict."""
        idata, synthesizer, data = state.idata, state.synthesizer, prepared.data
        report = synthesizer.check(idata, data)
        occupied = idata.posterior["occupied"].to_numpy().ravel()
        meaning = "expected number of components holding at least one pattern x label cell, per draw"
        summary = self._fit_summary(
            prepared, state, report,
            {"max": float(occupied.max()), "K": self.K, "K_large_enough": bool(occupied.max() < self.K - 1),
             "meaning": meaning},
            tau_lambda_mean=float(idata.posterior["tau_lambda"].mean()), n_records=data.records.n_records,
            n_patterns=data.n_patterns, n_labels=data.n_labels, n_distinct_pairs=data.n_distinct,
            sampler=idata.attrs.get("sampler_backend"), parameterization=self.parameterization,
            divergences=report.divergences,
        )  # fmt: skip
        posterior = idata.posterior[["alpha", "rho", "tau_lambda", "occupied", "location", "expected_log_rate"]]
        fitted = Fitted(
            Diagnostics({"all": idata}, summary, passed=report.passed),
            report,
            what="the DP-areal model",
            state=state,
            private_files={"posterior.nc": lambda path: posterior.to_netcdf(path, engine="h5netcdf")},
            reports={"all": report.to_dict()},
        )
        gate = self._release_gate(prepared, fitted.state, seed, say, divergences=int(report.divergences))
        return self._gated(fitted, gate, report.passed)

    def _facts(self, prepared: CategoricalPrepared) -> dict[str, Any]:
        data = prepared.data
        return {"records": data.records.n_records, "patterns": data.n_patterns, "labels": data.n_labels}
