"""Identification risk of a partially synthetic release (Hu & Savitsky, Section 4.2, eq. 15-17).

An intruder knows the true values of a knowledge set's columns for a target record and matches them against
a released dataset: ``c_i`` released records match, ``T_i = 1`` when the target's own released record is
among them. Per dataset and knowledge set (the subset):

* :class:`ExpectedMatchRisk`: ``sum_i T_i / c_i``;
* :class:`TrueMatchRate`: ``#{i: c_i T_i = 1} / n``;
* :class:`FalseMatchRate`: ``#{i: c_i (1 - T_i) = 1} / s``, ``s`` the unique matches (NaN when ``s = 0``).

References (Section 4.1), each the mean over the S repetitions of a scenario with its 2.5-97.5% range:
``inherent_min`` (every synthesized value drawn uniformly over all the variable's levels: a release that
says nothing of the value beyond its levels) and ``inherent_max`` (every synthesized value redrawn from the
original's own distribution within the record's pattern of kept values: the most a release drawn from the
data distribution reveals). Hu & Savitsky judge a release by where its risk sits between the two.

The two are a range only for the exact attribute disclosures (without survey weights): for the three figures
here the minimum's expectation can exceed the maximum's (a level common in its pattern is rarely a unique match
when the pattern is redrawn from itself; :mod:`bayessdc.risk.identification`, 'Which figures the pair
bounds'). A measure says which in its ``inherent_bound`` and in its ``inherent_min`` note; where the minimum's
mean is beyond the maximum's for a subset (:func:`inherent_crossed`), labels drawn at random would exceed the
maximum there, the pair bounds nothing, the description says so, and no release should be judged against it.

The three figures are computed together, once per release, on integer keys
(:class:`bayessdc.risk.release_figures.CategoricalReleaseFigures`: a dataset costs a few ``bincount``
passes); :func:`bayessdc.risk.identification.identification_risk` on data frames is the tests' oracle.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd

from .base import Z95, Measure, MeasureInput, MeasureResult, mean_reference, register

__all__ = [
    "IDENTIFICATION_READS", "ExpectedMatchRisk", "FalseMatchRate", "TrueMatchRate", "banding_stated",
    "crossing_stated", "inherent_crossed", "inherent_references", "per_dataset_figures",
]

INHERENT_NOTES = {
    "inherent_min": "the synthesized values drawn uniformly over all their levels, S times (Hu & Savitsky 4.1): "
    "a release that says nothing of them beyond their levels",
    "inherent_max": "the synthesized values redrawn from the original's own distribution within each pattern of "
    "kept values, S times (Hu & Savitsky 4.1): the most a release drawn from the data distribution reveals",
}

#: The references' notes of a figure the pair does not bound by construction.
INHERENT_UNORDERED_NOTES = {
    **INHERENT_NOTES,
    "inherent_min": INHERENT_NOTES["inherent_min"] + "; not a lower bound of this figure: its expectation can "
    "exceed the maximum's (bayessdc.risk.identification, 'Which figures the pair bounds'), and where it does the "
    "pair bounds nothing",
}


def per_dataset_figures(data: MeasureInput) -> pd.DataFrame:
    """The release figures of every dataset (one row per dataset, a column ``synthetic``), computed once per
    input on integer keys: ``expected_match_risk[<known>]`` ..., ``attribute_disclosures``,
    ``table_deviation[one-way]`` ..., ``pmse`` and ``pmse_ratio`` (weighted by ``data.weights`` when the release
    has survey weights). A
    :class:`~bayessdc.risk.release_figures.CategoricalReleaseFigures` of the same original in
    ``data.cache["release_figures"]`` is used instead of coding the original anew (the release gate measures
    hundreds of datasets in batches)."""
    cache = data.cache
    if "categorical_figures" not in cache:
        from bayessdc.risk.release_figures import CategoricalReleaseFigures

        original, drawn = data.identification_frames()
        weights = None if data.weights is None else original[data.weights].to_numpy(dtype=float)
        figures = cache.get("release_figures") or CategoricalReleaseFigures(
            original, data.synthesized, data.kept, data.known_sets, ways=(1, 2, 3), pmse=True,
            survey_weights=weights,
        )  # fmt: skip
        columns = data.kept + data.synthesized
        cache["categorical_figures"] = figures.by_dataset(drawn[["synthetic", *columns]])
    return cache["categorical_figures"]


def inherent_references(data: MeasureInput, column: str, known: str | None) -> list[dict[str, object]]:
    """``inherent_min`` and ``inherent_max`` of one figure (``column`` of the scenarios' tables) for one
    knowledge set (``None``: a figure that does not depend on it), each the mean of its S repetitions with their
    2.5-97.5% range, the mean's Monte Carlo standard error ``sd / sqrt(S)`` and S."""
    out = []
    for scenario, table in data.inherent_scenarios().items():
        rows = table if known is None else table[table["known"] == known]
        if known is None:
            rows = rows.drop_duplicates("repetition")
        v = rows[column].to_numpy(dtype=float)
        if np.isfinite(v).any():
            out.append(mean_reference(known or "all", f"inherent_{scenario}", v))
    return out


def inherent_crossed(result: MeasureResult, subset: str) -> str:
    """Why ``result``'s inherent pair bounds nothing for ``subset``: its ``inherent_min`` is beyond its
    ``inherent_max`` in the direction of risk (above it for a risk where lower is better, below it for a
    protection such as the false match rate); ``""`` when ordered or when either is missing or undefined.

    Labels drawn uniformly at random then score worse than the 'perfect' synthesizer, and a criterion ``at most
    inherent_max`` would refuse a release that carries nothing: the disclosure policy should not judge against
    it. Whether the means are apart beyond their Monte Carlo error (``1.96 sqrt(se_min^2 + se_max^2)``) is said;
    :func:`bayessdc.risk.identification.inherent_expectations` settles it exactly.
    """
    low, high = result.reference(subset, "inherent_min"), result.reference(subset, "inherent_max")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return ""
    gap = (low - high) if result.better == "lower" else (high - low)
    if gap <= 0:
        return ""
    errors = [result.reference_error(subset, name) for name in ("inherent_min", "inherent_max")]
    error = ""
    if errors[0] is not None and errors[1] is not None:
        beyond = gap > Z95 * float(np.hypot(errors[0][0], errors[1][0]))
        error = f"{' beyond' if beyond else ' within'} the Monte Carlo error of their repetitions"
    side = "above" if result.better == "lower" else "below"
    return (
        f"the inherent minimum ({low:.4g}) is {side} the inherent maximum ({high:.4g}) for {subset}{error}: labels "
        "drawn at random would fail a criterion against the maximum, so the pair bounds nothing here"
    )


def crossing_stated(result: MeasureResult) -> MeasureResult:
    """``result`` with the subsets whose inherent pair is crossed (:func:`inherent_crossed`) said in its
    description (the report and the policy's readers see it)."""
    crossed = [subset for subset in result.subsets() if inherent_crossed(result, subset)]
    if crossed:
        side = "above" if result.better == "lower" else "below"
        result.description += (
            f"; the inherent minimum is {side} the maximum for {', '.join(crossed)}: the pair bounds nothing there "
            "(labels drawn at random would exceed the maximum)"
        )
    return result


#: What the identification figures, the exact attribute disclosures and the categorical utility figures read (on
#: integer keys, :func:`per_dataset_figures`, beside the inherent scenarios).
IDENTIFICATION_READS = (
    "partially_synthetic", "original", "synthesized", "kept", "known_sets", "weights", "bands", "drawn", "repetitions",
    "inherent",
)  # fmt: skip


class _Identification(Measure):
    """One of the three identification figures (eq. 15-17), per knowledge set."""

    reads = IDENTIFICATION_READS

    figure: ClassVar[str] = ""
    #: Whether the inherent minimum's expectation is at most the maximum's for every data set by construction
    #: (the pair is then a range of the figure). Not for the identification figures: a level common in its
    #: pattern is rarely a unique match when the pattern is redrawn from itself, so the true match rate's minimum
    #: can exceed its maximum, and the expected match risk's and the false match rate's too
    #: (:mod:`bayessdc.risk.identification`, 'Which figures the pair bounds').
    inherent_bound: ClassVar[bool] = False
    kind = "risk"
    better = "lower"
    references = INHERENT_UNORDERED_NOTES
    subsets = "knowledge set (the columns the intruder knows, joined by +)"
    subset_names, subset_columns = None, True
    from_release_figures = True

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.partially_synthetic and data.original is not None and data.known_sets and data.synthesized)

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)
        values, references = [], []
        for known in data.known_sets:
            subset = "+".join(known)
            column = f"{self.figure}[{subset}]"
            values += [
                {"subset": subset, "dataset": int(d), "value": float(v)}
                for d, v in zip(table["synthetic"], table[column], strict=True)
            ]
            references += inherent_references(data, self.figure, subset)
        return crossing_stated(banding_stated(self.result(values, references), data))


def banding_stated(result: MeasureResult, data: MeasureInput) -> MeasureResult:
    """``result`` with the banding of its numeric columns said in its description (the report shows it)."""
    if data.bands:
        said = ", ".join(f"{c} ({len(e) + 1} bands)" for c, e in data.bands.items())
        result.description += f"; numeric columns matched on the original's deciles: {said}"
    return result


@register
class ExpectedMatchRisk(_Identification):
    """Expected match risk ``sum_i T_i / c_i`` (Hu & Savitsky eq. 15): the expected number of records an
    intruder who picks at random among the matches identifies correctly."""

    name = "expected_match_risk"
    headline = True
    figure = "expected_match_risk"
    title = "expected match risk"
    unit = "records"
    description = "sum over records of T_i / c_i: the expected number of correct identifications (eq. 15)"


@register
class TrueMatchRate(_Identification):
    """True match rate ``#{c_i T_i = 1} / n`` (Hu & Savitsky eq. 16): the share of records matched uniquely
    and correctly."""

    name = "true_match_rate"
    figure = "true_match_rate"
    title = "true match rate"
    unit = "share of records"
    description = "share of records whose true known values match only their own released record (eq. 16)"


@register
class FalseMatchRate(_Identification):
    """False match rate ``#{c_i (1 - T_i) = 1} / s`` (Hu & Savitsky eq. 17): the share of unique matches that
    are wrong. Higher means more protection, so the worst dataset is the lowest."""

    name = "false_match_rate"
    figure = "false_match_rate"
    better = "higher"
    title = "false match rate"
    unit = "share of unique matches"
    description = "share of unique matches that point to another record (eq. 17); NaN without unique matches"
