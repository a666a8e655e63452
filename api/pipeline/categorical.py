"""The two synthesizers of categorical labels in the pipeline: the DPMPM and the DP-areal model (Hu & Savitsky).

Both replace the ``synthesize`` columns of every record by draws given the ``keep`` columns, and share one
risk-and-utility step, so that their outputs compare file by file: identification risk per knowledge set
and exact attribute disclosures beside the inherent minimum and maximum (Section 4,
:func:`bayessdc.risk.categorical.categorical_risk`), and utility (Section 3): table deviations, pMSE,
within-pattern distributions and the analyst's ordered logistic regressions combined over the m datasets.

:class:`DPMPM`
    Dirichlet-process mixture of products of multinomials fitted by blocked Gibbs (Section 2.1); the gate
    monitors label-invariant quantities, including the synthesized levels' probabilities given a pattern,
    and the per-record Bayesian attribute risk is measured by importance sampling.
:class:`DPAreal`
    Poisson-lognormal model of the label counts of every pattern with Dirichlet-process random effects,
    fitted by NUTS (Section 2.2).

A release's :meth:`bayessdc.Release.risk` with ``known=[...]`` recomputes the identification and attribute
risk for other knowledge sets from the confidential records held in memory (:class:`CategoricalMeasures`);
they are never written to ``release/``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayessdc import progress as _progress
from bayessdc.measures import MeasureInput, RegressionInput
from bayessdc.models.categorical import prepare_categorical
from bayessdc.models.dp_areal import DPArealPriors, DPArealSynthesizer, prepare_areal
from bayessdc.models.dpmpm import DPMPMPriors, DPMPMSynthesizer, GibbsSettings, level_dim
from bayessdc.models.sampling import SamplerSettings
from bayessdc.risk.categorical import categorical_risk
from bayessdc.risk.release_figures import CategoricalReleaseFigures
from bayessdc.synthesis.datasets import draw_synthetic
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.release_gate import MIN_CHAINS, ReleaseGatePolicy, ReleaseGateReport, judge_release
from bayessdc.synthesis.runner import InferenceDataStore, run_parts

from ..errors import InputError
from ..release import Diagnostics, Measures, Release
from . import Fitted, Lever, Prepared, Recipe

__all__ = [
    "DPAreal",
    "DPMPM",
    "CategoricalMeasures",
    "categorical_utility",
    "check_known_sets",
    "check_ordered_logits",
    "ordered_logit_summary",
]

_log = logging.getLogger(__name__)

#: An intruder's knowledge sets: each a list of columns or one comma-separated string.
KnownSets = Sequence[Sequence[str] | str] | None
#: The analyst's ordered logistic regressions as ``(response, predictors)``.
OrderedLogits = Sequence[tuple[str, Sequence[str]]]


# --------------------------------------------------------------------------------------------------
# Checks before sampling


def check_known_sets(known: KnownSets, synthesize: Sequence[str], keep: Sequence[str]) -> list[list[str]]:
    """The intruder's knowledge sets as lists of columns (default: every kept and synthesized column).

    Parameters
    ----------
    known
        Knowledge sets, each a list of columns or one comma-separated string (``"gender,county"``).
    synthesize, keep
        The released columns.

    Raises
    ------
    bayessdc.InputError
        A column that is neither kept nor synthesized, or an empty knowledge set.
    """
    variables = list(keep) + list(synthesize)
    if isinstance(known, str):
        known = [known]
    sets = []
    for entry in known or []:
        columns = [c.strip() for c in entry.split(",") if c.strip()] if isinstance(entry, str) else list(entry)
        if not columns:
            raise InputError("known=: an empty knowledge set; give the columns an intruder knows")
        sets.append(columns)
    sets = sets or [variables]
    for columns in sets:
        unknown = [c for c in columns if c not in variables]
        if unknown:
            raise InputError(
                f"known= column(s) {', '.join(map(repr, unknown))} are neither kept nor synthesized "
                f"(the release holds {', '.join(map(str, variables))})"
            )
    return sets


def check_ordered_logits(
    ordered_logits: OrderedLogits | None,
    levels: dict[str, Any],
    keep: Sequence[str],
    synthesize: Sequence[str],
) -> list[tuple[str, list[str]]]:
    """Check the analyst's ordered logistic regressions ``(response, predictors)`` before any sampling.

    Raises
    ------
    bayessdc.InputError
        A column neither kept nor synthesized, a column named twice, no synthesized column involved, or a
        response with a single level.
    """
    variables = list(keep) + list(synthesize)
    checked = [(str(r), [str(c) for c in preds]) for r, preds in (ordered_logits or [])]
    for response, predictors in checked:
        name = f"ordered_logits= ({response!r}, {predictors!r})"
        unknown = [c for c in [response, *predictors] if c not in variables]
        if unknown:
            raise InputError(
                f"{name}: column(s) {', '.join(map(repr, unknown))} are neither kept nor synthesized "
                f"(the release holds {', '.join(variables)})"
            )
        if response in predictors or len(set(predictors)) < len(predictors):
            raise InputError(f"{name}: a column appears twice (response and predictors must be distinct)")
        if not {response, *predictors} & set(synthesize):
            raise InputError(
                f"{name}: involves no synthesized column, so its estimates are the same on every synthetic "
                f"dataset; include one of {', '.join(synthesize)}"
            )
        if len(levels[response]) < 2:
            raise InputError(f"{name}: the response {response!r} has a single level")
    return checked


def _release_notices(
    frame: pd.DataFrame, original: pd.DataFrame, synthesize: list[str], keep: list[str]
) -> tuple[list[str], int]:
    """Notices on dropped columns and single-record patterns, and the number of records alone in their pattern."""
    variables = keep + synthesize
    notices = []
    dropped = [c for c in frame.columns if c not in variables]
    if dropped:
        notices.append(f"column(s) {', '.join(map(str, dropped))} are neither kept nor synthesized: not released")
    pattern_size = original.groupby(keep, observed=True)[keep[0]].transform("size").to_numpy()
    singles = int((pattern_size == 1).sum())
    if singles:
        notices.append(f"{singles} pattern(s) of the kept columns hold a single record; their risk is reported")
    return notices, singles


# --------------------------------------------------------------------------------------------------
# The shared risk-and-utility step


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def ordered_logit_summary(
    original: pd.DataFrame, synthetic: pd.DataFrame, response: str, predictors: list[str]
) -> dict[str, Any]:
    """One ordered logit, original vs combined over the synthetic datasets, as JSON-ready figures.

    The coefficients of :func:`bayessdc.synthesis.categorical.ordered_logit_combined` and the mean interval
    overlap of the identified slopes (a level seen with one response value only has no finite estimate: it
    is listed in ``not_identified``, not averaged).
    """
    from bayessdc.synthesis.categorical import ordered_logit_combined

    table = ordered_logit_combined(original, synthetic, response, predictors)
    columns = ["original", "original_lower", "original_upper", "q_bar", "T_p", "df", "lower", "upper"]
    coefficients = {
        str(name): {**{c: _finite(row[c]) for c in columns}, "interval_overlap": _finite(row["interval_overlap"])}
        for name, row in table.iterrows()
    }
    overlap = table["interval_overlap"].to_numpy(dtype=float)
    thresholds = original[response].nunique() - 1  # the last rows of the table
    slopes = np.arange(len(table)) < len(table) - thresholds
    # A level seen with one response value only (separation) has no finite estimate: its fitted coefficient
    # drifts with a standard error in the hundreds or more. Such coefficients are listed, not averaged.
    width = (table["original_upper"] - table["original_lower"]).to_numpy(dtype=float)
    identified = np.isfinite(width) & (width < 2 * 1.96 * 10)
    chosen = slopes & identified & np.isfinite(overlap)
    return {
        "response": response,
        "predictors": predictors,
        "model": "cumulative logit, one-hot predictors (first level the reference); thresholds as statsmodels' "
        "OrderedModel (first cut point, then log increments); combined with Reiter's (2003) partially synthetic rules",
        "mean_interval_overlap": _finite(overlap[chosen].mean()) if chosen.any() else None,
        "not_identified": [str(name) for name in table.index[~identified]],
        "averaged": [str(name) for name in table.index[chosen]],
        "coefficients": coefficients,
    }


def categorical_utility(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesize: list[str],
    keep: list[str],
    *,
    seed: int,
    ordered_logits: OrderedLogits = (),
    say: Callable[[str], None] = lambda msg: None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Utility of m partially synthetic categorical datasets (Hu & Savitsky, Section 3).

    Returns
    -------
    utility, within_pattern
        ``private/utility.json`` (``table_deviations``, ``pmse``, ``within_pattern`` and, when asked,
        ``ordered_logit``) and the within-pattern distributions per cell (``private/within_pattern.parquet``).
    """
    from bayessdc.synthesis.categorical import pmse, table_deviations, within_pattern_distributions

    deviations = table_deviations(original, synthetic, synthesize, keep)
    cells, patterns = within_pattern_distributions(original, synthetic, synthesize, keep)
    utility: dict[str, Any] = {
        "table_deviations": deviations,
        "pmse": pmse(original, synthetic, keep + synthesize, synthesize, seed=seed),
        "within_pattern": {
            "mean_total_variation": float(patterns["total_variation"].mean()),
            "weighted_total_variation": float(np.average(patterns["total_variation"], weights=patterns["records"])),
            "patterns": len(patterns),
        },
    }
    if ordered_logits:
        m = synthetic["synthetic"].nunique()
        say(f"{len(ordered_logits)} ordered logistic regression(s), original and {m} synthetic datasets ...")
        utility["ordered_logit"] = [
            ordered_logit_summary(original, synthetic, response, list(predictors))
            for response, predictors in ordered_logits
        ]
    return utility, cells.astype({c: str for c in keep + synthesize})


@dataclass
class CategoricalMeasures(Measures):
    """Risk of a categorical release recomputed for other knowledge sets, from the records held in memory.

    ``release.risk(known=[["gender", "county"]])`` gives the identification and attribute figures of
    ``private/risk.json`` for those knowledge sets, with the run's inherent scenarios (same repetitions and
    seed: a knowledge set of the run gives exactly its stored figures). The confidential records stay here,
    never in ``release/``.
    """

    original: pd.DataFrame = field(repr=False)
    synthetic: pd.DataFrame = field(repr=False)
    synthesize: list[str]
    keep: list[str]
    repetitions: int
    seed: int

    risk_options = ("known",)

    def measure_input(self, known: KnownSets = None) -> MeasureInput:
        """What the measures read, with the knowledge sets ``known`` (the run's inherent scenarios: same
        repetitions and seed)."""
        return MeasureInput(
            self.synthetic, self.original, released=self.keep + self.synthesize, synthesized=self.synthesize,
            kept=self.keep, known_sets=check_known_sets(known, self.synthesize, self.keep), partially_synthetic=True,
            repetitions=self.repetitions, seed=self.seed,
        )  # fmt: skip

    def risk(self, known: KnownSets = None) -> dict[str, Any]:
        """``identification`` per knowledge set and ``attribute``, as :meth:`bayessdc.Release.risk` stores them."""
        known_sets = check_known_sets(known, self.synthesize, self.keep)
        return categorical_risk(
            self.original,
            self.synthetic,
            self.synthesize,
            self.keep,
            known_sets,
            repetitions=self.repetitions,
            seed=self.seed,
        ).figures


def _say(prefix: str, progress: bool) -> Callable[[str], None]:
    """The stage messages of a run: INFO records of this module's logger (nothing when ``progress`` is false).
    ``prefix`` names the synthesizer in the record's ``synthesizer`` attribute."""
    if not progress:
        return lambda msg: None
    return lambda msg: _log.info("%s", msg, extra={"synthesizer": prefix})


class _CategoricalRecipe(Recipe):
    """The steps the two categorical synthesizers share: the column checks and the risk-and-utility step."""

    #: Prefix of progress lines.
    label: ClassVar[str] = ""
    #: Hu & Savitsky release m = 20 synthetic datasets.
    default_m: ClassVar[int] = 20
    known: KnownSets
    repetitions: int

    gate: ReleaseGatePolicy
    #: Whether the sampler counts divergences (NUTS): any fails the release gate.
    counts_divergences: ClassVar[bool] = False

    def report_content(self, prepared: Prepared, release: Release) -> Any:
        """The report's material: what was synthesized and the synthesized columns compared."""
        return categorical_report_content(self.label, prepared, release)

    def levers(self) -> list[Lever]:
        """What lowers a categorical release's identification and attribute risk, in words."""
        return [
            Lever("keep", "fewer or coarser kept columns: larger patterns, so a synthesized label points to more "
                  "records"),
            Lever("synthesize", "synthesize a coarser label (fewer levels)"),
        ]  # fmt: skip

    def _check_repetitions(self) -> None:
        if self.repetitions < 1:
            raise InputError("repetitions= must be at least 1")

    def _release_gate(
        self,
        prepared: Prepared,
        synthesizer: Any,
        idata: Any,
        seed: int,
        say: Callable[[str], None],
        divergences: int | None = None,
    ) -> ReleaseGateReport:
        """The release gate (:mod:`bayessdc.synthesis.release_gate`): ``gate.datasets_per_chain`` synthetic
        datasets from draws spread over each chain, measured by the release's own measure objects (the gate's
        ``measures``, :func:`bayessdc.measures.compute_measures`, on integer keys), and the between-chain
        standard error of every pooled figure against its tolerance."""
        from bayessdc.measures import compute_measures
        from bayessdc.models.base import stack_draws
        from bayessdc.risk.identification import inherent_risk
        from bayessdc.synthesis.release_gate import measure_figures

        x = prepared.extra
        columns = x["keep"] + x["synthesize"]
        figures = CategoricalReleaseFigures(
            x["original"], x["synthesize"], x["keep"], x["known"], ways=(1, 2, 3), pmse=True, seed=seed
        )
        # the inherent scenarios, computed once for the gate's tolerances and the release's risk figures
        x["inherent"] = inherent_risk(
            x["original"], x["synthesize"], x["keep"], x["known"], repetitions=self.repetitions, seed=seed
        )
        posterior = idata.posterior
        chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
        per_chain = self.gate.datasets_per_chain
        say(f"release gate: {per_chain} synthetic datasets from each of {chains} chains ...")
        stacked = stack_draws(posterior)
        records = max(len(x["original"]), 1)
        batch = max(1, min(per_chain, 20_000_000 // records))  # bounds the memory of one batch of datasets
        frames, kinds = [], {}
        with _progress.bar(chains * per_chain, "release gate datasets") as bar:
            for chain in range(chains):
                rng = np.random.default_rng(np.random.SeedSequence([int(seed), 5, chain]))
                positions = chain * draws + np.linspace(0, draws - 1, per_chain).round().astype(int)
                for start in range(0, per_chain, batch):
                    chosen = positions[start : start + batch]
                    values = synthesizer.posterior_predictive(stacked.isel(sample=chosen), prepared.data, rng)
                    joint = values.rename(sample="synthetic").assign_coords(synthetic=np.arange(1, len(chosen) + 1))
                    frame = synthesizer.release_frame(prepared.data, joint)
                    data = MeasureInput(
                        frame[["synthetic", *columns]], x["original"], released=columns, synthesized=x["synthesize"],
                        kept=x["keep"], known_sets=x["known"], partially_synthetic=True, inherent=x["inherent"],
                        repetitions=self.repetitions, seed=seed, cache={"release_figures": figures},
                    )  # fmt: skip
                    table, kinds = measure_figures(compute_measures(data, self.gate.measures))
                    frames.append(table.drop(columns="synthetic").assign(chain=chain))
                    bar.advance(len(chosen))
        return judge_release(pd.concat(frames, ignore_index=True), kinds, self.gate, divergences=divergences)

    def _gated(self, fitted: Fitted, gate: ReleaseGateReport, parameter_passed: bool) -> Fitted:
        """``fitted`` decided by the release gate: the parameter gate's verdict kept as a diagnostic."""
        fitted.release_gate = gate.to_dict()
        fitted.parameter_passed = bool(parameter_passed)
        fitted.diagnostics.passed = gate.passed
        fitted.diagnostics.summary["passed"] = gate.passed
        fitted.diagnostics.summary["gate"] = "release"
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

    def _gate_description(self, chains: int) -> dict[str, Any]:
        return self.gate.describe(chains, divergences=self.counts_divergences)

    def _release(
        self,
        prepared: Prepared,
        fitted: Fitted,
        synthetic: pd.DataFrame,
        m: int,
        seed: int,
        progress: bool,
        facts: dict[str, Any],
        bayesian: tuple[pd.DataFrame, dict[str, Any]] | None = None,
    ) -> Release:
        """Risk and utility of the synthetic datasets, the public description, as a :class:`Release`."""
        say = _say(self.label, progress)
        x = prepared.extra
        original, synthesize, keep = x["original"], x["synthesize"], x["keep"]
        say("risk ...")
        risk = categorical_risk(
            original,
            synthetic,
            synthesize,
            keep,
            x["known"],
            repetitions=self.repetitions,
            seed=seed,
            bayesian=bayesian,
            inherent=x.get("inherent"),
        )
        say("utility ...")
        utility, within_pattern = categorical_utility(
            original, synthetic, synthesize, keep, seed=seed, ordered_logits=x["ordered_logits"], say=say
        )
        description = fitted.state["synthesizer"].describe()
        description.update(
            {
                "synthesized": synthesize,
                "kept": keep,
                "release_gate": self._gate_description(int(fitted.state["idata"].posterior.sizes["chain"])),
            }
        )
        return Release(
            synthesizer=self.name,
            synthetic=synthetic,
            description=description,
            diagnostics=fitted.diagnostics,
            identity={},
            m=m,
            seed=seed,
            facts={**facts, "single_record_patterns": x["singles"]},
            risk_figures=risk.figures,
            utility_figures=utility,
            private_json={"risk_details.json": risk.details},
            private_tables={
                "risk_records.parquet": risk.records,
                "within_pattern.parquet": within_pattern,
                "risk_inherent.parquet": risk.inherent,
                "risk_by_dataset.parquet": risk.by_dataset,
            },
            measures=CategoricalMeasures(original, synthetic, synthesize, keep, self.repetitions, seed),
            measure_input=MeasureInput(
                synthetic, original, released=keep + synthesize, synthesized=synthesize, kept=keep,
                known_sets=x["known"], partially_synthetic=True, inherent=x.get("inherent"),
                repetitions=self.repetitions, seed=seed,
                items=None if bayesian is None else bayesian[0].drop(columns="record").rename(
                    columns={"relevant_khat": "khat"}),
                regression=[_ordered_logit_input(original, synthetic, fit) for fit in utility.get("ordered_logit", [])],
            ),
        )


def _ordered_logit_input(original: pd.DataFrame, synthetic: pd.DataFrame, fit: dict[str, Any]) -> RegressionInput:
    """An ordered logit of the utility figures as the generic interval-overlap measure reads it: the slopes
    averaged in its ``mean_interval_overlap`` (identified, thresholds left out), fitted once."""
    table = pd.DataFrame.from_dict(fit["coefficients"], orient="index").loc[fit["averaged"]]
    table = table.rename(columns={"q_bar": "estimate", "lower": "ci_lower", "upper": "ci_upper",
                                  "interval_overlap": "ci_overlap"}).astype(float)  # fmt: skip
    return RegressionInput(original, synthetic, fit["response"], list(fit["predictors"]), model="ordered_logit",
                           coefficients=table)  # fmt: skip


def _occupied(values: np.ndarray) -> dict[str, Any]:
    return {
        "mean": float(values.mean()),
        "interval_95": [float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))],
    }


def _draw(synthesizer: Any, fitted: Fitted, data: Any, m: int, seed: int) -> tuple[Any, pd.DataFrame]:
    """The m datasets' synthesized codes (each from one posterior draw) and the stacked release frame."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
    joint = draw_synthetic(synthesizer, fitted.state["idata"], data, m, rng)
    return joint, synthesizer.release_frame(data, joint)


# --------------------------------------------------------------------------------------------------
# The DPMPM


@dataclass
class DPMPM(_CategoricalRecipe):
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
    ordered_logits
        The analyst's ordered logistic regressions ``(response, predictors)``, fitted to the original and
        every synthetic dataset and combined with the partially synthetic rules (``utility()["ordered_logit"]``).
    scheduler, workers
        Where the chains run. Both ``None`` (the default): at once in threads of this process. Otherwise
        each chain is a part of :func:`bayessdc.synthesis.runner.run_parts`: ``scheduler="synchronous"``
        one after another in this thread, ``scheduler=None`` with ``workers`` on a local dask cluster of that
        many threads, or the address of a running dask scheduler (``tcp://host:8786``); finished chains are
        then kept under ``private/chains/`` of the output folder, and a rerun into it loads them. The
        posterior is the same on every path.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.DPMPM(K=20, conditioning="pattern")
    >>> recipe.K, recipe.conditioning, recipe.default_m, recipe.settings.chains
    (20, 'pattern', 20, 8)
    >>> [(lever.parameter, lever.refit) for lever in recipe.levers()][0]  # lowered without a refit
    ('conditioning', False)
    """

    K: int = 40
    conditioning: str = "full"
    priors: DPMPMPriors = field(default_factory=DPMPMPriors)
    settings: GibbsSettings = field(default_factory=lambda: GibbsSettings(chains=8))
    known: KnownSets = None
    repetitions: int = 100
    gate: ReleaseGatePolicy = field(default_factory=lambda: ReleaseGatePolicy(datasets_per_chain=50))
    risk_records: int = 500
    risk_draws: int = 200
    missing: str = "refuse"
    max_levels: int = 500
    ordered_logits: OrderedLogits = ()
    scheduler: str | None = None
    workers: int | None = None

    name: ClassVar[str] = "dpmpm"
    label: ClassVar[str] = "dpmpm"

    def check_m(self, m: int) -> None:
        """Refuse more datasets than stored draws."""
        if m > self.settings.chains * self.settings.stored:
            raise InputError(f"m={m} needs at least {m} stored draws; raise draws= or lower thin=")

    def synthesizer(self) -> DPMPMSynthesizer:
        """The model this recipe fits (the contract object of ``bayessdc.models.base``)."""
        return DPMPMSynthesizer(K=self.K, priors=self.priors, settings=self.settings, conditioning=self.conditioning)

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> Prepared:
        """Code the table (errors name the column), check the knowledge sets and the ordered logits."""
        self._check_repetitions()
        synthesize, keep = list(synthesize or []), list(keep or [])
        data = prepare_categorical(frame, synthesize, keep, max_levels=self.max_levels, missing=self.missing)
        if not keep:
            raise InputError("the DPMPM needs at least one kept column (keep=): the patterns the risk is measured in")
        ordered_logits = check_ordered_logits(self.ordered_logits, data.levels, keep, synthesize)
        original = data.frame()
        known = check_known_sets(self.known, synthesize, keep)
        notices, singles = _release_notices(frame, original, synthesize, keep)
        synthesizer = self.synthesizer()
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
        }
        extra = {
            "original": original,
            "synthesize": synthesize,
            "keep": keep,
            "known": known,
            "singles": singles,
            "ordered_logits": ordered_logits,
            "synthesizer": synthesizer,
        }
        return Prepared(data, identity, notices, extra)

    def fit(self, prepared: Prepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Blocked Gibbs; the gate monitors alpha, the occupied components, the marginals and the pattern
        conditionals of the synthesized levels (the posterior summary is written to ``private/posterior.nc``)."""
        data, synthesizer = prepared.data, prepared.extra["synthesizer"]
        say = _say(self.label, progress)
        say(f"fitting K = {self.K} to {data.n_records} records in {len(data.cell_counts)} cells ...")
        if self.scheduler is None and self.workers is None:
            idata = synthesizer.fit(data, seed)
        else:
            idata = self._fit_chains(synthesizer, data, seed, workdir, say)
        report = synthesizer.check(idata, data)
        occupied = idata.posterior["occupied"].to_numpy().ravel()
        summary = {
            **report.to_dict(),
            "monitored": list(synthesizer.convergence_quantities(idata, data)),
            "occupied_components": {
                **_occupied(occupied),
                "max": int(occupied.max()),
                "K": self.K,
                "K_large_enough": bool(occupied.max() < self.K),
            },
            "alpha_mean": float(idata.posterior["alpha"].mean()),
            "n_records": data.n_records,
            "n_cells": int(len(data.cell_counts)),
            "single_record_patterns": prepared.extra["singles"],
            "sampler": idata.attrs["sampler"],
            "sampler_decision": idata.attrs["sampler_decision"],
        }
        synthesize = prepared.extra["synthesize"]
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
            state={"idata": idata, "synthesizer": synthesizer},
            private_files={"posterior.nc": lambda path: posterior.to_netcdf(path, engine="h5netcdf")},
            reports={"all": report.to_dict()},
        )
        gate = self._release_gate(prepared, synthesizer, idata, seed, say)
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
        return [{"conditioning": c} for c in order[order.index(self.conditioning) + 1 :]]

    def release_under(
        self, setting: dict[str, Any], prepared: Prepared, fitted: Fitted, m: int, seed: int, progress: bool
    ) -> Release:
        """The release drawn with another ``conditioning`` from the same posterior draws."""
        from dataclasses import replace

        recipe = replace(self, **setting)
        state = {**fitted.state, "synthesizer": replace(fitted.state["synthesizer"], **setting)}
        return recipe.release(prepared, replace(fitted, state=state), m, seed, progress)

    def _fit_chains(
        self,
        synthesizer: DPMPMSynthesizer,
        data: Any,
        seed: int,
        workdir: Path | None,
        say: Callable[[str], None],
    ) -> Any:
        """Every chain as a part of the part runner (kept under ``workdir / "chains"``), stacked in chain order."""

        def report(done: int, total: int, name: str, idata: Any, resumed: bool) -> None:
            took = "resumed" if resumed else f"{idata.attrs['sampling_seconds']:.1f} s"
            say(f"[{done}/{total}] {name} {took}")

        parts = run_parts(
            _FitChain(synthesizer, data, seed),
            [(f"chain-{c}", c) for c in range(self.settings.chains)],
            store=InferenceDataStore(Path(workdir) / "chains") if workdir is not None else None,
            scheduler=self.scheduler,
            workers=self.workers,
            progress=report,
            label="chains",
        )
        # Chains read back from the store carry text level coordinates (netCDF's limit): the data's own.
        levels = {level_dim(v): data.levels[v] for v in data.variables}
        for idata in parts:
            idata.posterior = idata.posterior.assign_coords(
                {k: v for k, v in levels.items() if k in idata.posterior.coords}
            )
        return DPMPMSynthesizer.combine_chains(parts)

    def release(self, prepared: Prepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Release:
        """Draw the m datasets, the Bayesian attribute risk of ``risk_records`` records, then the shared
        risk-and-utility step."""
        data, synthesizer = prepared.data, fitted.state["synthesizer"]
        say = _say(self.label, progress)
        say(f"drawing {m} synthetic datasets ({self.conditioning} conditioning) ...")
        joint, synthetic = _draw(synthesizer, fitted, data, m, seed)
        bayesian = None
        if self.risk_records > 0:
            records = min(self.risk_records, data.n_records)
            say(f"Bayesian attribute risk of {records} records by importance sampling ...")
            bayesian = self._bayesian_risk(synthesizer, fitted.state["idata"], data, joint, seed)
        facts = {"records": data.n_records, "cells": int(len(data.cell_counts))}
        return self._release(prepared, fitted, synthetic, m, seed, progress, facts, bayesian)

    def _bayesian_risk(
        self, synthesizer: Any, idata: Any, data: Any, joint: Any, seed: int
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Per-record attribute risk by importance sampling (the intruder knows every other value)."""
        import xarray as xr

        from bayessdc.models.base import stack_draws
        from bayessdc.risk.identification import label_attribute_risk

        posterior = stack_draws(idata.posterior)
        total = posterior.sizes["sample"]
        posterior = posterior.isel(sample=np.linspace(0, total - 1, min(self.risk_draws, total)).round().astype(int))
        chosen = np.sort(
            np.random.default_rng(np.random.SeedSequence([int(seed), 3])).choice(
                data.n_records, size=min(self.risk_records, data.n_records), replace=False
            )
        )
        released = xr.DataArray(joint.to_numpy(), dims=("synthetic", "item"))
        records, summary = label_attribute_risk(synthesizer, posterior, data, released, chosen)
        intruder = (
            "knows every other value and the model; uniform prior over the labels (eq. 3-8 of the "
            "foundation's attribute-risk module)"
        )
        records = records.assign(chance=1.0 / len(synthesizer.candidates(data)))  # the intruder's uniform prior
        return records[["record", "true_probability", "correct", "relevant_khat", "chance"]], {
            **summary, "intruder": intruder}  # fmt: skip


@dataclass(frozen=True)
class _FitChain:
    """The part runner's task for the DPMPM: ``(name, chain) ->`` that chain's posterior (picklable)."""

    synthesizer: DPMPMSynthesizer
    data: Any
    seed: int

    def __call__(self, name: str, chain: int) -> Any:
        return self.synthesizer.fit(self.data, self.seed, chains=[chain])


# --------------------------------------------------------------------------------------------------
# The DP-areal model


@dataclass
class DPAreal(_CategoricalRecipe):
    """Poisson-lognormal label counts per pattern with Dirichlet-process random effects (Hu & Savitsky,
    Section 2.2), fitted by NUTS.

    Parameters
    ----------
    K
        Truncation level (number of mixture components).
    priors
        Hyperparameters of eq. (9)-(12).
    settings
        NUTS settings.
    parameterization
        How the cluster effects are sampled (``"identified"``, ``"identified_centred"``, ``"noncentred"``,
        ``"centred"``).
    known, repetitions, missing, max_levels, ordered_logits
        As for :class:`DPMPM`.
    max_cells
        Most label x pattern cells (beyond: the DPMPM).

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.DPAreal()
    >>> recipe.K, recipe.default_m
    (50, 20)
    """

    K: int = 50
    priors: DPArealPriors = field(default_factory=DPArealPriors)
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(target_accept=0.9, chains=4))
    parameterization: str = "identified"
    known: KnownSets = None
    repetitions: int = 100
    gate: ReleaseGatePolicy = field(default_factory=lambda: ReleaseGatePolicy(datasets_per_chain=200))
    missing: str = "refuse"
    max_levels: int = 500
    max_cells: int = 300_000
    ordered_logits: OrderedLogits = ()

    name: ClassVar[str] = "dp_areal"
    label: ClassVar[str] = "dp-areal"
    counts_divergences: ClassVar[bool] = True

    def check_m(self, m: int) -> None:
        """Refuse more datasets than posterior draws."""
        if m > self.settings.chains * self.settings.draws:
            raise InputError(f"m={m} needs at least {m} posterior draws; raise draws=")

    def synthesizer(self) -> DPArealSynthesizer:
        """The model this recipe fits (the contract object of ``bayessdc.models.base``)."""
        return DPArealSynthesizer(
            K=self.K, priors=self.priors, settings=self.settings, parameterization=self.parameterization
        )

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> Prepared:
        """Code the table and count the labels of every pattern (errors name the column or the limit)."""
        self._check_repetitions()
        synthesize, keep = list(synthesize or []), list(keep or [])
        model_notices: list[str] = []
        data = prepare_areal(
            frame,
            synthesize,
            keep,
            max_levels=self.max_levels,
            max_cells=self.max_cells,
            missing=self.missing,
            notices=model_notices,
        )
        original = data.records.frame()
        known = check_known_sets(self.known, synthesize, keep)
        notices, singles = _release_notices(frame, original, synthesize, keep)
        ordered_logits = check_ordered_logits(self.ordered_logits, data.records.levels, keep, synthesize)
        synthesizer = self.synthesizer()
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
        }
        extra = {
            "original": original,
            "synthesize": synthesize,
            "keep": keep,
            "known": known,
            "singles": singles,
            "ordered_logits": ordered_logits,
            "synthesizer": synthesizer,
        }
        notices = [n.removeprefix("notice: ") for n in model_notices] + notices
        return Prepared(data, identity, notices, extra)

    def fit(self, prepared: Prepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """NUTS on the model with the labels summed out; the gate monitors label-invariant quantities."""
        data, synthesizer = prepared.data, prepared.extra["synthesizer"]
        say = _say(self.label, progress)
        say(
            f"fitting K = {self.K} to {data.n_patterns} patterns x {data.n_labels} labels "
            f"({data.n_distinct} distinct pattern/count pairs) ..."
        )
        idata = synthesizer.fit(data, seed)
        report = synthesizer.check(idata, data)
        occupied = idata.posterior["occupied"].to_numpy().ravel()
        summary = {
            **report.to_dict(),
            "monitored": list(synthesizer.convergence_quantities(idata, data)),
            "occupied_components": {
                **_occupied(occupied),
                "max": float(occupied.max()),
                "K": self.K,
                "K_large_enough": bool(occupied.max() < self.K - 1),
                "meaning": "expected number of components holding at least one pattern x label cell, per draw",
            },
            "alpha_mean": float(idata.posterior["alpha"].mean()),
            "tau_lambda_mean": float(idata.posterior["tau_lambda"].mean()),
            "n_records": data.records.n_records,
            "n_patterns": data.n_patterns,
            "n_labels": data.n_labels,
            "n_distinct_pairs": data.n_distinct,
            "single_record_patterns": prepared.extra["singles"],
            "sampler": idata.attrs.get("sampler_backend"),
            "parameterization": self.parameterization,
            "divergences": report.divergences,
        }
        posterior = idata.posterior[["alpha", "rho", "tau_lambda", "occupied", "location", "expected_log_rate"]]
        fitted = Fitted(
            Diagnostics({"all": idata}, summary, passed=report.passed),
            report,
            what="the DP-areal model",
            state={"idata": idata, "synthesizer": synthesizer},
            private_files={"posterior.nc": lambda path: posterior.to_netcdf(path, engine="h5netcdf")},
            reports={"all": report.to_dict()},
        )
        gate = self._release_gate(prepared, synthesizer, idata, seed, say, divergences=int(report.divergences))
        return self._gated(fitted, gate, report.passed)

    def release(self, prepared: Prepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Release:
        """Draw the m datasets (eq. 13-14), then the shared risk-and-utility step."""
        data, synthesizer = prepared.data, fitted.state["synthesizer"]
        _say(self.label, progress)(f"drawing {m} synthetic datasets ...")
        _, synthetic = _draw(synthesizer, fitted, data, m, seed)
        facts = {"records": data.records.n_records, "patterns": data.n_patterns, "labels": data.n_labels}
        return self._release(prepared, fitted, synthetic, m, seed, progress, facts)


# --------------------------------------------------------------------------------------------------
# The report


def categorical_report_content(label: str, prepared: Prepared, release: Release) -> Any:
    """What the DPMPM or DP-areal model did, for its report (:class:`bayessdc.report.ReportContent`): the
    synthesized columns compared; risk and utility are laid out from the release's measures."""
    from bayessdc.report import ReportContent

    x = prepared.extra
    synthesize, keep = x["synthesize"], x["keep"]
    description = release.description
    k = description.get("model", {}).get("K", description.get("K"))
    about = [
        f"The {label} model (K = {k}) was fitted to {release.facts.get('records', 0):,} records. "
        f"Each of the m = {release.m} synthetic datasets replaces {', '.join(synthesize)} by a draw from the posterior "
        f"predictive given the kept column(s) {', '.join(keep)}, which are released unchanged.",
    ]
    return ReportContent(original=x["original"], synthetic=release.synthetic, compared=list(synthesize), about=about)
