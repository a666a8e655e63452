"""What every measure is: one figure of a release, computed as a tidy table with its references.

A :class:`Measure` computes one risk or utility figure of the m synthetic datasets from a
:class:`MeasureInput` (what the pipeline knows of any release: the confidential and synthetic records, the
columns' roles, the intruder's knowledge sets, and what a synthesizer measured with its own model). The
result, a :class:`MeasureResult`, holds

* ``values``: one row per (subset, dataset), columns :data:`VALUE_COLUMNS`; a subset is what the figure is
  computed for (a knowledge set, the at-risk records, ``"all"``), a dataset is 1..m, or 0 for a figure of
  the m datasets jointly (an intruder who reads them all);
* ``references``: the figures it is read against, one row per (subset, reference), columns
  :data:`REFERENCE_COLUMNS` (the inherent minimum and maximum of Hu & Savitsky, the share of a held-out
  sample, the unsmoothed stage's value ...), each with the 2.5-97.5% range of its own repetitions where it has
  any, and then the Monte Carlo standard error of its mean and the number of repetitions (``mc_se``,
  ``repetitions``: the disclosure policy allows for both when it judges a release against the reference);
* :meth:`MeasureResult.summary`: per subset the pooled value (the mean over the datasets), its Monte Carlo
  standard error ``sd / sqrt(m)`` (the datasets are independent draws of the release), the 95% interval
  ``pooled +- t(0.975, m - 1) se`` (Student's t: with m = 3 the normal quantile's interval covers about 82%,
  not 95%) and the worst dataset (the largest for a figure where lower is better). With one dataset there is no
  Monte Carlo spread: the interval is the figure's own sampling interval where the measure states one
  (:attr:`MeasureResult.intervals`: an attack's Wilson interval over its targets), else the value itself; with
  several, the Monte Carlo interval widened to the own one where that is wider; the column ``interval`` says
  which; a figure that could not be computed is NaN with the reason in ``note``;
* :meth:`MeasureResult.plot`: every dataset's value beside the references, one panel per subset.

The disclosure policy (:mod:`bayessdc.policy`) judges these summaries, the report lays them out, and
:meth:`bayessdc.Release.measure_table` returns them; none of them knows which synthesizer made the release.
A new measure is one file with one subclass of :class:`Measure` and the decorator :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .attacks import AttackSettings

__all__ = [
    "ALWAYS_READ",
    "DERIVED_READS",
    "MEASURE_INPUT_FIELDS",
    "REFERENCE_COLUMNS",
    "INTERVAL_SOURCES",
    "InputView",
    "SUMMARY_COLUMNS",
    "VALUE_COLUMNS",
    "UndeclaredRead",
    "Measure",
    "MeasureInput",
    "MeasureResult",
    "MeasureSet",
    "compute_measures",
    "mean_reference",
    "range_reference",
    "register",
    "registry",
]

#: Columns of :attr:`MeasureResult.values`.
VALUE_COLUMNS = ("measure", "subset", "dataset", "value")
#: Columns of :attr:`MeasureResult.references`.
REFERENCE_COLUMNS = ("measure", "subset", "reference", "value", "lower", "upper", "mc_se", "repetitions")
#: Columns of :meth:`MeasureResult.summary` (followed by one column per reference).
SUMMARY_COLUMNS = (
    "measure", "kind", "subset", "datasets", "pooled", "mc_se", "lower", "upper", "worst", "interval", "note",
)  # fmt: skip

#: What the summary's 95% interval is, by its source (the column ``interval``).
INTERVAL_SOURCES = {
    "monte carlo": "Monte Carlo: pooled +- t(0.975, m - 1) sd / sqrt(m) over the m datasets, which carries every "
    "source of variation of one dataset's figure (the synthesis, and the measure's own sampling)",
    "own": "the measure's own sampling interval (one dataset: no Monte Carlo spread to estimate)",
    "monte carlo and own": "the union of the Monte Carlo interval and the measure's own sampling interval of the m "
    "datasets pooled, where the datasets' spread is narrower than their sampling allows (an attack's risk bounded "
    "at 0 in every dataset has no spread, yet its interval is not 0 to 0)",
    "joint": "none: a figure of the m datasets jointly, computed once",
    "none": "none: one dataset and no sampling interval of its own (the value itself)",
}

#: Two-sided 95% normal quantile (the limit of :func:`t95` for many datasets).
Z95 = 1.959963984540054


def t95(df: float) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (:data:`Z95` when ``df`` is
    infinite): the half-width of a 95% interval of a mean, in standard errors."""
    if not np.isfinite(df):
        return Z95
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def mean_reference(subset: str, reference: str, values: Iterable[float]) -> dict[str, Any]:
    """A reference that is the mean of repetitions (its ``values``): the mean, the 2.5-97.5% range of the
    repetitions, the mean's Monte Carlo standard error ``sd / sqrt(S)`` and S, as :data:`REFERENCE_COLUMNS` holds
    them (the disclosure policy then judges a release against it by Welch's interval)."""
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"subset": subset, "reference": reference, "value": float("nan")}
    return {
        "subset": subset, "reference": reference, "value": float(v.mean()),
        "lower": float(np.quantile(v, 0.025)), "upper": float(np.quantile(v, 0.975)),
        "mc_se": float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan"), "repetitions": v.size,
    }  # fmt: skip


def range_reference(subset: str, reference: str, values: Iterable[float], z: float = Z95) -> dict[str, Any]:
    """The upper end of the range one repetition shows: ``mean + 1.96 sd`` of the repetitions ``values`` (the
    range itself as ``lower`` and ``upper``; an exact threshold, no Monte Carlo error attached). A release whose
    pooled figure is above it shows more than a single repetition of the reference would in 97.5% of draws;
    unlike the mean's interval, the range does not narrow as the release's m or the repetitions grow. ``z`` widens
    it for several subsets judged at once (:func:`bayessdc.measures.strata.bonferroni_z`)."""
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"subset": subset, "reference": reference, "value": float("nan")}
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    mean = float(v.mean())
    return {"subset": subset, "reference": reference, "value": mean + z * sd, "lower": mean - z * sd,
            "upper": mean + z * sd, "repetitions": v.size}  # fmt: skip


@dataclass
class MeasureInput:
    """What the measures of one release are computed from (held in memory only; never written to ``release/``).

    Attributes
    ----------
    synthetic
        All m datasets in one frame, a column ``synthetic`` = 1..m (:attr:`bayessdc.Release.synthetic`).
    original
        The confidential records on the released columns, in the order of every synthetic dataset when the
        release is partially synthetic (``None`` when the release is not a table of records, as flows).
    released
        The released columns a record is compared on (records copied, replicated uniques).
    synthesized, kept
        The columns replaced by synthetic values and those released unchanged.
    known_sets
        The intruder's knowledge sets (identification risk).
    partially_synthetic
        Whether dataset row ``i`` is original record ``i`` with its synthesized values replaced (identification
        and attribute disclosure are defined on such releases only).
    bands
        Numeric columns the identification figures and the inherent scenarios read on bands, ``{column: edges}``
        (:mod:`bayessdc.risk.banding`: the intruder knows, and matches, a numeric value to its band only); empty:
        every column as it is.
    drawn
        The datasets as drawn (row ``i`` record ``i``) when rows were removed from ``synthetic`` before judging
        (the replicated uniques): the identification figures and attribute disclosures read these, like for like
        with the inherent scenarios, whose datasets no removal touches; ``None``: ``synthetic`` is as drawn.
    inherent
        The inherent scenarios' figures, ``{"min": table, "max": table}`` of
        :func:`bayessdc.risk.identification.inherent_risk` (computed when absent and asked for).
    repetitions
        Repetitions S of the inherent scenarios.
    items
        Per released item, what a synthesizer's own model says of an intruder who reads all m datasets: columns
        ``correct`` (the intruder's most probable value is the true one), ``true_probability`` and
        ``unique`` (the paper's ``a_t``), as the flows' importance-sampling attribute risk gives them.
    proximity
        The true and synthetic values of a continuous released variable with the at-risk records
        (:class:`bayessdc.measures.proximity.ProximityInput`), as the spatial synthesizer gives them.
    cells
        Per sensitive cell of an adjusted table: ``protected`` (its adjustment meets its protection level).
    audit
        A published table as its intruder sees it (:class:`bayessdc.cta.audit.AuditInput`: the cells with their true
        values and additivity equations, the published values, NaN where suppressed, the required protection and
        what the intruder knows of the method): the measure ``audited_cells`` solves the intruder's linear programs
        on it (:func:`bayessdc.cta.audit.audit_table`). ``None``: no table to audit.
    unlearned
        Synthetic datasets of the same records (a column ``synthetic`` = 1..m, the records in the order of
        ``original``) from a release that could not have learned the records it is judged on: each record drawn
        by a fit that never saw it (cross-fitted, as a synthesizer builds it). The record measures read the same
        figure of these datasets as their reference ``unlearned`` (``None``: no such reference).
    removed, unlearned_removed
        Per dataset, the rows removed from the release (and from the ``unlearned`` datasets) as replicated uniques
        before it is judged: the table of :func:`bayessdc.risk.copies.remove_replicated_uniques` (``dataset``,
        ``rows`` before, ``removed``, ``kept``); ``None``: nothing was removed.
    inherent_removed
        Per repetition, the rows the same removal takes from the S datasets of the inherent maximum
        (:func:`bayessdc.risk.copies.inherent_removed`), the same table: the reference of a partially synthetic
        release that has no ``unlearned`` datasets (``None``: not computed).
    holdout
        A held-out real sample on the released columns (a control set), when the user gives one: real records of
        the same population that the synthesizer never saw. The attack measures (:mod:`bayessdc.measures.attacks`)
        apply only when it is given.
    attacks
        What the attack measures use (:class:`bayessdc.measures.attacks.AttackSettings`: the secrets, the
        attacker's auxiliary columns and their split into two sources, attacks per dataset ...); ``None``: the
        defaults (each synthesized column a secret, the released columns known, kept against synthesized columns
        as the two sources).
    tables, bootstrap
        The analyst's count tables (:class:`bayessdc.synthesis.tables.TableSpec`) and the bootstrap replicates of
        the original that set their reference range.
    count_column
        The column of counts of a released table of counts (an origin-destination table).
    count_margins
        Margins of that table whose totals are compared too, each a list of columns (the origin, the
        destination, the pair of groups).
    regression
        The analyst's regression (:class:`bayessdc.measures.regression.RegressionInput`).
    weights
        The survey weight column of the original and of every synthetic dataset (``bsd.synthesize(...,
        weights=)``): the utility measures that have a weighted form compute it (tables of weighted totals), and
        say so in their title; ``None``: unweighted.
    replicates
        The replicate weights carried beside ``weights`` (a :class:`bayessdc.synthesis.replicates.ReplicateDesign`):
        the analyst's regression takes its variances from them.
    categorical
        The synthesized columns that are categories (a classification tree's), whose category counts the relative
        errors compare (:class:`bayessdc.measures.tables.CategoryCountError`); empty: none compared.
    strata
        The released column of areas the release was synthesized by, one by one: the measures that read it give a
        figure per area too (:class:`bayessdc.measures.strata.StratumCopiedRecords`).
    households
        The household id column of a release of persons in households, in the original and in every synthetic and
        ``unlearned`` dataset (a synthetic dataset's ids are its own, unrelated to the original's: the members of
        one synthetic household share an id within their dataset); the household measures apply only when it is
        given (:mod:`bayessdc.measures.households`). ``None``: a release of records, not of households.
    household_known
        The columns of each member an intruder knows about a household (the area, and each member's relationship,
        sex and age): a household is known by its *signature*, the multiset of its members' rows on these columns
        (:func:`bayessdc.measures.households.household_signatures`), a numeric column of :attr:`bands` read on its
        band. Empty: every released column but the household id, the survey weight and the secrets.
    household_secrets
        Household-level columns (the same for every member of a household, such as tenure) an intruder who knows a
        household's signature would like to learn, all of them together
        (:class:`bayessdc.measures.households.HouseholdAttributeInference`); empty: none.
    household_relationship
        The column of each member's relationship to the household's reference person: the household tables count
        households by their composition, the multiset of their members' relationships
        (:class:`bayessdc.measures.household_tables.HouseholdTableTau`); ``None``: by size only.
    seed
        Seed of every random step of a measure (the inherent scenarios).
    details
        Whether the measures compute the tables behind their figures (:attr:`MeasureResult.details`); the release
        gate, which reads the figures of hundreds of datasets and keeps none of their results, sets ``False``.
    """

    synthetic: pd.DataFrame
    original: pd.DataFrame | None = None
    released: list[str] = field(default_factory=list)
    synthesized: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    known_sets: list[list[str]] = field(default_factory=list)
    partially_synthetic: bool = False
    bands: dict[str, np.ndarray] = field(default_factory=dict)
    drawn: pd.DataFrame | None = None
    inherent: dict[str, pd.DataFrame] | None = None
    repetitions: int = 100
    items: pd.DataFrame | None = None
    proximity: Any = None
    cells: pd.DataFrame | None = None
    audit: Any = None
    unlearned: pd.DataFrame | None = None
    removed: pd.DataFrame | None = None
    unlearned_removed: pd.DataFrame | None = None
    inherent_removed: pd.DataFrame | None = None
    holdout: pd.DataFrame | None = None
    attacks: AttackSettings | None = None
    tables: list[Any] = field(default_factory=list)
    bootstrap: int = 0
    count_column: str | None = None
    count_margins: list[list[str]] = field(default_factory=list)
    regression: Any = None
    weights: str | None = None
    replicates: Any = None
    categorical: list[str] = field(default_factory=list)
    strata: str | None = None
    households: str | None = None
    household_known: list[str] = field(default_factory=list)
    household_secrets: list[str] = field(default_factory=list)
    household_relationship: str | None = None
    seed: int = 0
    details: bool = True
    #: Figures shared between measures of this input (computed once).
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def record_columns(self) -> list[str]:
        """The released columns a synthetic row is compared with a confidential record on (records copied,
        replicated uniques): all of them but the survey weight, a design variable whose nearly unique values an
        intruder is not assumed to know (as in the knowledge sets), which would make every record unique."""
        return [c for c in self.released if c != self.weights]

    @property
    def m(self) -> int:
        """Number of synthetic datasets."""
        return int(self.synthetic["synthetic"].nunique()) if "synthetic" in self.synthetic else 0

    def identification_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The original and the datasets as drawn (:attr:`drawn`, else :attr:`synthetic`) that the identification
        figures read, each column of :attr:`bands` replaced by its band (computed once)."""
        if "identification_frames" not in self.cache:
            from bayessdc.risk.banding import banded

            synthetic = self.synthetic if self.drawn is None else self.drawn
            self.cache["identification_frames"] = (banded(self.original, self.bands), banded(synthetic, self.bands))
        return self.cache["identification_frames"]

    def inherent_scenarios(self) -> dict[str, pd.DataFrame]:
        """The inherent minimum and maximum scenarios (computed once, then kept); with survey weights the
        maximum resamples each pattern by weight (Hu & Savitsky's weighted re-sampling), the weight no pattern
        column."""
        if self.inherent is None:
            from bayessdc.risk.identification import inherent_risk

            weights = None if self.weights is None else self.original[self.weights].to_numpy(dtype=float)
            self.inherent = inherent_risk(  # the weight: a design variable, a resampling weight, not a pattern
                self.original, self.synthesized, [c for c in self.kept if c != self.weights],
                self.known_sets or [[c for c in self.kept + self.synthesized if c != self.weights]],
                repetitions=self.repetitions, seed=self.seed, weights=weights, bands=self.bands,
            )  # fmt: skip
        return self.inherent


#: The fields of :class:`MeasureInput`.
MEASURE_INPUT_FIELDS = frozenset(f.name for f in fields(MeasureInput))

#: The fields of :class:`MeasureInput` every measure may read without declaring them: the datasets, the seed of
#: its random steps, the cache shared between measures and whether to compute details.
ALWAYS_READ = frozenset({"synthetic", "seed", "cache", "details"})

#: The fields each derived attribute of :class:`MeasureInput` reads: a measure that uses it declares them.
DERIVED_READS: dict[str, tuple[str, ...]] = {
    "record_columns": ("released", "weights"),
    "m": (),
    "identification_frames": ("original", "bands", "drawn"),
    "inherent_scenarios": ("original", "synthesized", "kept", "weights", "known_sets", "repetitions", "bands",
                           "inherent"),
}  # fmt: skip


class UndeclaredRead(RuntimeError):
    """A measure read a field of its :class:`MeasureInput` that it does not declare in :attr:`Measure.reads`."""


class InputView:
    """A measure's view of a :class:`MeasureInput`: the fields it declares (:attr:`Measure.reads`), those every
    measure reads (:data:`ALWAYS_READ`) and the derived attributes whose fields it declares (:data:`DERIVED_READS`);
    any other field raises :class:`UndeclaredRead`, naming the measure and the field.

    What a measure reads is then its declaration, checked whenever it runs, as SDMetrics' properties take the same
    inputs and say which they use: a new kind of release adds fields, and only the measures that declare them see
    them.
    """

    __slots__ = ("_data", "_allowed", "_name")

    def __init__(self, data: MeasureInput, measure: Measure) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_allowed", ALWAYS_READ | frozenset(measure.reads))
        object.__setattr__(self, "_name", measure.name)

    def __getattr__(self, name: str) -> Any:
        data, allowed = object.__getattribute__(self, "_data"), object.__getattribute__(self, "_allowed")
        needed = DERIVED_READS.get(name, (name,) if name in MEASURE_INPUT_FIELDS else ())
        missing = [n for n in needed if n not in allowed]
        if missing:
            measure = object.__getattribute__(self, "_name")
            raise UndeclaredRead(
                f"measure {measure!r} reads MeasureInput.{name}"
                + (f" (which reads {', '.join(missing)})" if name in DERIVED_READS else "")
                + f" without declaring {', '.join(missing)} in its reads"
            )
        return getattr(data, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a measure's input is read only (it set {name!r})")


@dataclass
class MeasureResult:
    """One measure's figures: per dataset, its references, and how they are read.

    Attributes
    ----------
    measure
        The measure's name (:attr:`Measure.name`).
    kind
        ``"risk"`` or ``"utility"``.
    better
        ``"lower"`` or ``"higher"``: which way the figure improves (risk: lower).
    values, references
        Tidy tables, columns :data:`VALUE_COLUMNS` and :data:`REFERENCE_COLUMNS`.
    title, unit, description
        The figure in words, for the report and the policy's messages.
    reference_notes
        What each reference means, by name.
    details
        A table behind the figure where it has one (the analyst's coefficients and intervals), shown folded in
        the report.
    notes
        Why a subset's figure is missing (NaN), by subset: the summary's ``note``.
    intervals
        The figure's own 95% sampling interval per subset, ``(lower, upper)``, where the measure has one (an
        attack's Wilson interval over its targets, the m datasets pooled): the summary's interval when a single
        dataset gives no Monte Carlo spread, and its lower bound where several give less spread than it.
    bounds
        The range the figure cannot leave (:attr:`Measure.bounds`): the summary's interval is clipped to it.
    """

    measure: str
    kind: Literal["risk", "utility"]
    better: Literal["lower", "higher"]
    values: pd.DataFrame
    references: pd.DataFrame
    title: str = ""
    unit: str = ""
    description: str = ""
    reference_notes: dict[str, str] = field(default_factory=dict)
    details: pd.DataFrame | None = None
    headline: bool | str = False
    notes: dict[str, str] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    bounds: tuple[float, float] | None = None

    def subsets(self) -> list[str]:
        """The subsets, in the order computed."""
        return list(dict.fromkeys(self.values["subset"].astype(str)))

    def shown_subsets(self, most: int = 12) -> list[str]:
        """The subsets a page or a terminal shows: all of them, in the order computed, when there are at most
        ``most``; else the ``most`` worst by the pooled value (the highest where lower is better), worst first, as
        where a release synthesized area by area has hundreds of areas (every subset stays in the summary and in
        ``private/measures.json``)."""
        return [str(s) for s in self.shown_summary(most)["subset"]]

    def shown_summary(self, most: int = 12) -> pd.DataFrame:
        """The rows of :meth:`summary` of the subsets :meth:`shown_subsets` names, in that order."""
        summary = self.summary()
        if len(summary) <= most:
            return summary
        order = summary["pooled"].astype(float).sort_values(ascending=self.better == "higher", na_position="last",
                                                            kind="stable")  # fmt: skip
        return summary.loc[order.index[:most]].reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Per subset: the pooled value over the datasets, its Monte Carlo standard error and 95% interval,
        the worst dataset, and one column per reference (its mean value).

        A figure of the m datasets jointly (dataset 0) is its own pooled value, with no Monte Carlo error
        between datasets (``mc_se`` NaN, the interval the value itself). With one dataset the interval is the
        measure's own (:attr:`intervals`) where it states one. ``interval`` names the interval's source
        (:data:`INTERVAL_SOURCES`); ``note`` says why a figure is NaN.
        """
        rows = []
        for subset in self.subsets():
            v = self.values.loc[self.values["subset"].astype(str) == subset, ["dataset", "value"]]
            values = v["value"].to_numpy(dtype=float)
            finite = values[np.isfinite(values)]
            joint = bool((v["dataset"] == 0).all())
            pooled = float(finite.mean()) if finite.size else float("nan")
            se = float(finite.std(ddof=1) / np.sqrt(finite.size)) if finite.size > 1 and not joint else float("nan")
            half = t95(finite.size - 1) * se if np.isfinite(se) else 0.0
            lower, upper = pooled - half, pooled + half
            source = "joint" if joint else "monte carlo" if np.isfinite(se) else "none"
            own = self.intervals.get(subset)
            if own is not None and np.isfinite(pooled) and all(np.isfinite(own)) and source != "joint":
                if source == "none":
                    (lower, upper), source = (float(min(own[0], pooled)), float(max(own[1], pooled))), "own"
                elif own[0] < lower or own[1] > upper:  # the datasets agree more than their own sampling allows
                    lower, upper, source = float(min(lower, own[0])), float(max(upper, own[1])), "monte carlo and own"
            if self.bounds is not None and np.isfinite(pooled):
                lower, upper = max(lower, self.bounds[0]), min(upper, self.bounds[1])
            worst = (finite.max() if self.better == "lower" else finite.min()) if finite.size else float("nan")
            note = self.notes.get(subset, "" if finite.size else "not computed")
            row = {
                "measure": self.measure, "kind": self.kind, "subset": subset, "datasets": int(values.size),
                "pooled": pooled, "mc_se": se, "lower": lower, "upper": upper, "worst": float(worst),
                "interval": source if finite.size else "", "note": note,
            }  # fmt: skip
            refs = self.references.loc[self.references["subset"].astype(str) == subset]
            for _, ref in refs.iterrows():
                row[str(ref["reference"])] = float(ref["value"])
            rows.append(row)
        return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS) + self.reference_names())

    def reference_names(self) -> list[str]:
        """The references' names, in order."""
        return list(dict.fromkeys(self.references["reference"].astype(str))) if len(self.references) else []

    def statistic(self, subset: str, statistic: str) -> float:
        """One statistic of one subset: ``pooled``, ``upper`` (of the 95% Monte Carlo interval), ``lower``
        or ``worst``."""
        row = self.summary().set_index("subset").loc[subset]
        return float(row[statistic])

    def reference_error(self, subset: str, name: str) -> tuple[float, int] | None:
        """The Monte Carlo standard error of reference ``name``'s mean for ``subset`` and the number of
        repetitions it is the mean of (``None``: an exact reference, or one of a single repetition)."""
        refs = self.references
        hit = refs.loc[(refs["subset"].astype(str) == subset) & (refs["reference"] == name)]
        if not len(hit):
            return None
        se, count = float(hit["mc_se"].iloc[0]), float(hit["repetitions"].iloc[0])
        return (se, int(count)) if np.isfinite(se) and np.isfinite(count) and count > 1 else None

    def reference(self, subset: str, name: str) -> float | None:
        """The value of reference ``name`` for ``subset`` (``None`` when this measure has no such reference)."""
        refs = self.references
        hit = refs.loc[(refs["subset"].astype(str) == subset) & (refs["reference"] == name), "value"]
        return float(hit.iloc[0]) if len(hit) else None

    def plot(self) -> Any:
        """Every dataset's value (points) beside the references (lines, shaded over their interval), one
        panel per subset; returns the matplotlib figure."""
        from bayessdc.report.plots import measure_panels

        return measure_panels(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> MeasureResult:
        """The result :meth:`to_dict` wrote (``private/measures.json``)."""
        values = pd.DataFrame(payload["values"], columns=list(VALUE_COLUMNS))
        values["value"] = values["value"].astype(float)
        references = pd.DataFrame(payload["references"], columns=list(REFERENCE_COLUMNS))
        for column in ("value", "lower", "upper", "mc_se", "repetitions"):  # the last two NaN in older files
            references[column] = references[column].astype(float)
        return cls(
            payload["measure"], payload["kind"], payload["better"], values, references, payload.get("title", ""),
            payload.get("unit", ""), payload.get("description", ""), dict(payload.get("reference_notes", {})),
            headline=payload.get("headline", False), notes=dict(payload.get("notes", {})),
            intervals={k: (float(a), float(b)) for k, (a, b) in payload.get("intervals", {}).items()},
            bounds=_bounds(payload.get("bounds")),
            details=pd.DataFrame(payload["details"]) if payload.get("details") is not None else None,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the summary rows, the values, the references and the details (where the measure has any)."""
        return {
            "measure": self.measure,
            "kind": self.kind,
            "better": self.better,
            "title": self.title,
            "unit": self.unit,
            "description": self.description,
            "reference_notes": self.reference_notes,
            "headline": self.headline,
            "notes": self.notes,
            "intervals": {k: [float(a), float(b)] for k, (a, b) in self.intervals.items()},
            "bounds": None if self.bounds is None else [float(b) if np.isfinite(b) else None for b in self.bounds],
            "summary": _records(self.summary()),
            "values": _records(self.values),
            "references": _records(self.references),
            **({} if self.details is None else {"details": _records(_with_index(self.details))}),
        }


def _bounds(bounds: Sequence[float | None] | None) -> tuple[float, float] | None:
    """A measure's bounds as :meth:`MeasureResult.to_dict` wrote them (an infinite end written as ``None``)."""
    if not bounds:
        return None
    return (-np.inf if bounds[0] is None else float(bounds[0]), np.inf if bounds[1] is None else float(bounds[1]))


def _with_index(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a named index (a regression's coefficients) as its first column."""
    if isinstance(frame.index, pd.RangeIndex):
        return frame
    return frame.rename_axis(frame.index.name or "index").reset_index()


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (NaN as ``None``)."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else _plain(v)) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


class Measure:
    """One risk or utility figure (subclass it, set the class attributes, write :meth:`compute`).

    Class attributes
    ----------------
    name
        The name a policy and :meth:`bayessdc.Release.measure_table` use.
    kind, better
        ``"risk"`` or ``"utility"``; which way the figure improves.
    title, unit, description
        The figure in words.
    references
        The names of the references it reports, with what each means.
    subsets
        What a subset of this measure is (``"knowledge set"``, ``"all"`` ...), for a policy's messages.
    subset_names
        The subsets it can have, when they are fixed (a policy naming another is refused when it is read);
        ``None``: named by the data or the run (tables, coefficients, columns).
    subset_columns
        Whether a subset names columns of the data (joined by ``+``, the two sources split by ``|``): a policy
        naming a column the data lacks is refused at the start of the run.
    headline
        Whether the report sets this measure against the others of the other kind (risk against utility):
        ``True`` for every subset, a subset's name for that one only, ``False`` not at all.
    bounds
        The range the figure cannot leave (``(0, 1)`` for a risk or a share; ``None``: unbounded): the summary's
        interval is clipped to it, so that no interval shows a share below 0.
    reads
        The fields of :class:`MeasureInput` the measure reads besides :data:`ALWAYS_READ` (a derived attribute
        counts as the fields it reads, :data:`DERIVED_READS`): :func:`compute_measures` gives it a view of these
        only (:class:`InputView`). ``None``: the whole input (a measure registered without declaring what it reads;
        every built-in one declares).
    from_release_figures
        Whether the measure reads only the per-dataset release figures
        (:func:`bayessdc.measures.identification.per_dataset_figures`), never the synthetic frame itself: the
        release gate then measures its datasets from their codes, without building their frames.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[Literal["risk", "utility"]] = "risk"
    better: ClassVar[Literal["lower", "higher"]] = "lower"
    title: ClassVar[str] = ""
    unit: ClassVar[str] = ""
    description: ClassVar[str] = ""
    references: ClassVar[Mapping[str, str]] = {}
    subsets: ClassVar[str] = "all"
    subset_names: ClassVar[tuple[str, ...] | None] = ("all",)
    subset_columns: ClassVar[bool] = False
    headline: ClassVar[bool | str] = False
    from_release_figures: ClassVar[bool] = False
    bounds: ClassVar[tuple[float, float] | None] = None
    reads: ClassVar[tuple[str, ...] | None] = None

    def applies(self, data: MeasureInput) -> bool:
        """Whether this release has what the measure needs (a measure that does not apply is not computed)."""
        raise NotImplementedError

    def compute(self, data: MeasureInput) -> MeasureResult:
        """The figures of ``data``'s release."""
        raise NotImplementedError

    def result(
        self, values: Iterable[Mapping[str, Any]], references: Iterable[Mapping[str, Any]] = ()
    ) -> MeasureResult:
        """A :class:`MeasureResult` of this measure from rows ``{subset, dataset, value}`` and
        ``{subset, reference, value[, lower, upper]}``."""
        v = pd.DataFrame([{"measure": self.name, **r} for r in values], columns=list(VALUE_COLUMNS))
        v["value"] = v["value"].astype(float)
        refs = []
        for r in references:
            row = {"measure": self.name, "lower": np.nan, "upper": np.nan, "mc_se": np.nan, "repetitions": np.nan, **r}
            refs.append(row)
        ref = pd.DataFrame(refs, columns=list(REFERENCE_COLUMNS))
        return MeasureResult(
            self.name, self.kind, self.better, v, ref, self.title or self.name, self.unit, self.description,
            {k: v for k, v in self.references.items() if k in set(ref["reference"])}, headline=self.headline,
            bounds=self.bounds,
        )  # fmt: skip


_REGISTRY: dict[str, type[Measure]] = {}


def register(cls: type[Measure]) -> type[Measure]:
    """Class decorator: make ``cls`` a measure every release is measured by (where it applies)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"a measure named {cls.name!r} is already registered ({_REGISTRY[cls.name].__name__})")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Measure]]:
    """The registered measures by name (the built-in ones are loaded first)."""
    from . import builtin  # noqa: F401 - registers the built-in measures

    return dict(_REGISTRY)


class MeasureSet(Mapping[str, MeasureResult]):
    """The measures of one release, by name, with one tidy table and one summary over all of them."""

    def __init__(self, results: Iterable[MeasureResult]) -> None:
        self._results = {r.measure: r for r in results}

    def __getitem__(self, name: str) -> MeasureResult:
        return self._results[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    def table(self, kind: str | None = None) -> pd.DataFrame:
        """Every value of every measure (columns :data:`VALUE_COLUMNS` and ``kind``), optionally of one kind."""
        frames = [r.values.assign(kind=r.kind) for r in self._results.values() if kind in (None, r.kind)]
        if not frames:
            return pd.DataFrame(columns=[*VALUE_COLUMNS, "kind"])
        return pd.concat(frames, ignore_index=True)

    def summary(self, kind: str | None = None) -> pd.DataFrame:
        """Every measure's :meth:`MeasureResult.summary` in one table (reference columns where they apply)."""
        frames = [r.summary() for r in self._results.values() if kind in (None, r.kind)]
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
        return pd.concat(frames, ignore_index=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, by measure name."""
        return {name: r.to_dict() for name, r in self._results.items()}

    def __repr__(self) -> str:
        kinds = [r.kind for r in self._results.values()]
        names = ", ".join(self._results)
        names = names if len(names) <= 160 else names[:157].rstrip(", ") + "..."
        return (f"<MeasureSet: {len(kinds)} measures ({kinds.count('risk')} risk, {kinds.count('utility')} utility)"
                + (f": {names}>" if names else ">"))  # fmt: skip

    def _repr_html_(self) -> str:
        """The summary table (Jupyter shows it; :func:`bayessdc.display.measures_html`)."""
        from bayessdc.display import measures_html

        return measures_html(self)


def compute_measures(
    data: MeasureInput,
    names: Sequence[str] | None = None,
    *,
    kind: str | None = None,
    say: Callable[[str], None] = lambda msg: None,
) -> MeasureSet:
    """Every registered measure that applies to ``data`` (or the ``names`` given; of one ``kind``,
    ``"risk"`` or ``"utility"``, when given), in registration order."""
    measures = registry()
    chosen = list(measures) if names is None else list(names)
    unknown = [n for n in chosen if n not in measures]
    if unknown:
        raise ValueError(f"unknown measure(s) {', '.join(unknown)}; known: {', '.join(measures)}")
    results = []
    for name in chosen:
        measure = measures[name]()
        view: Any = data if measure.reads is None else InputView(data, measure)  # the fields it declares only
        if kind in (None, measure.kind) and measure.applies(view):
            say(f"measure {name} ...")
            results.append(measure.compute(view))
    return MeasureSet(results)
