"""Records copied from the original, and records disclosed, stratum by stratum: where a release synthesized area
by area reveals.

A release synthesized area by area (``strata=``) fits each stratum's records by models of their own, so a small
area's models learn from few records and may copy them where the whole file's share does not show it.

Records copied (``stratum_copied_records``)
    For each stratum and dataset, the share of the stratum's released rows equal to some original record on every
    released column (:func:`bayessdc.risk.copies.rows_in_original`; the stratum is a released column, so a row can
    only equal a record of its own stratum). Its references are those of :mod:`bayessdc.measures.copies`, per
    stratum: the same share for the cross-fitted datasets of the stratum's records (drawn by fits that never saw
    them), its mean (``unlearned``) and the upper end of the range one of those datasets shows
    (``unlearned_range``).

    With S strata judged at once, a release that never saw its records would cross one stratum's 95% range by
    chance alone in about 1 - 0.975^S of releases (39% at S = 20). ``unlearned_range`` here is therefore the mean
    plus ``z`` standard deviations with ``z`` the normal quantile of 1 - 0.025 / S (Bonferroni): the chance that a
    release that could not have learned its records crosses any stratum's range stays below 2.5%. The standard
    deviation of one dataset's share is estimated from the m cross-fitted datasets, which for a stratum of a few
    dozen rows and m of 2 to 5 can be 0 (no dataset copied a row) where the share of any release varies by a row or
    two. It is therefore never taken below the binomial standard deviation of a share of the stratum's ``n`` rows,
    ``sqrt(p (1 - p) / n)`` at the cross-fitted mean ``p`` smoothed as ``(x + 1/2) / (n + 1)`` (Jeffreys), ``x``
    its mean number of rows copied: a stratum's range admits the row or two that chance copies, and no more.

    A categorical release (the DPMPM, the DP-areal) has no cross-fitted datasets (a refit of the MCMC per fold is
    too costly), and its share is not set against Hu & Savitsky's inherent maximum either: the maximum gives every
    record the label of a record of its own pattern of kept values, so each of its rows *is* that record on every
    released column, and its share copied is 1 in every stratum and repetition, a bound no release can cross. The
    share is reported for a categorical release, not judged; what such a release reveals of a record is judged by
    the next figure.

Records disclosed (``stratum_attribute_disclosures``)
    For each stratum and dataset, the share of the stratum's records whose synthesized values all equal their own
    (Hu & Savitsky's exact attribute disclosure, eq. 18, :mod:`bayessdc.measures.attribute`): in a partially
    synthetic release row ``i`` is record ``i``, so this is the share of the stratum's records copied into their
    own row, read on the datasets as drawn (before any removal of replicated uniques, like for like with the
    inherent scenarios) and on the bands of :attr:`~bayessdc.measures.MeasureInput.bands`, as the whole file's
    figure. Its reference ``inherent_max`` is the same share in the S datasets of the inherent maximum
    (:func:`inherent_stratum_disclosures`): the very datasets of the whole file's maximum
    (:func:`bayessdc.risk.identification.inherent_sources`, stream ``(seed, "inherent", "maximum")``; the same
    seed gives the same figures, and the strata's counts add up to the whole file's ``disclosures`` of each
    repetition). The area is a kept column, so the maximum redraws each label within the patterns of its own area:
    a stratum whose every pattern holds one record (or one label) has 1 there; a pattern whose labels are in
    shares ``p`` keeps ``sum_y p_y^2`` of its records' labels on average. A record's stratum is its own area in the
    original; where the area is synthesized first (``area_model=``) it is among the synthesized values, so a record
    is disclosed when its drawn area and labels are all its own, and the maximum redraws them together within the
    patterns of the other kept values.

Judging S strata at once
    With S strata judged at once, a release that sits at every stratum's inherent maximum would be refused in some
    stratum by chance alone in about 1 - 0.975^S of releases (39% at S = 20) by the whole file's test (the lower
    end of Welch's 95% interval of the pooled share less the maximum above 0). ``inherent_max_bonferroni`` is that
    test at the Bonferroni level, as a threshold of the pooled share (:func:`bonferroni_welch_bound`): the
    maximum's mean plus ``t`` standard errors of the difference, the release's ``sd / sqrt(m)`` and the maximum's
    ``sd / sqrt(S_rep)`` together, ``t`` the quantile of 1 - 0.025 / S of Student's t on Welch's degrees of
    freedom. The release's sd is never taken below the maximum's (a release at the maximum varies as its
    repetitions do): Welch's test on the m = 3 to 5 datasets' own sd refuses several times too often in the far
    tail Bonferroni reads (a release drawn as the maximum, 10 areas: 13.5% of releases refused in some area at
    m = 3, 5% at m = 5; with the floor, 1.5%). A pooled share above the threshold is above the stratum's maximum
    beyond the Monte Carlo error of both, at the Bonferroni level, so a release drawn from every area's own
    distribution is refused in any stratum in under 2.5% of releases. The threshold carries no Monte Carlo error of
    its own (it already holds both), so a policy judges the ``pooled`` statistic against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, mean_reference, register

__all__ = [
    "StratumAttributeDisclosures", "StratumCopiedRecords", "bonferroni_welch_bound", "bonferroni_z",
    "inherent_stratum_disclosures", "stratum_range",
]  # fmt: skip


def bonferroni_z(strata: int) -> float:
    """The normal quantile of ``1 - 0.025 / strata``: 1.96 for one stratum, 3.02 for 20, 3.66 for 194."""
    from scipy.stats import norm

    return float(norm.ppf(1 - 0.025 / max(int(strata), 1)))


def stratum_range(subset: str, shares: np.ndarray, rows: float, z: float) -> dict[str, object]:
    """``unlearned_range`` of one stratum: the mean of the cross-fitted datasets' ``shares`` plus ``z`` standard
    deviations of one dataset's share, the larger of their own and the binomial one of ``rows`` rows at the
    Jeffreys-smoothed mean.

    Examples
    --------
    >>> round(stratum_range("stratum a", np.array([0.0, 0.0]), 14, 1.96)["value"], 4)  # no copy in 2 datasets
    0.094
    """
    v = np.asarray(shares, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size or rows <= 0:
        return {"subset": subset, "reference": "unlearned_range", "value": float("nan")}
    mean = float(v.mean())
    own = float(v.std(ddof=1)) if v.size > 1 else 0.0
    p = (mean * rows + 0.5) / (rows + 1)
    sd = max(own, float(np.sqrt(p * (1 - p) / rows)))
    return {"subset": subset, "reference": "unlearned_range", "value": mean + z * sd, "lower": mean - z * sd,
            "upper": mean + z * sd, "repetitions": v.size}  # fmt: skip


def _shares(original: pd.DataFrame, frame: pd.DataFrame, columns: list[str], strata: str) -> pd.DataFrame:
    """Per (stratum, dataset): the share of the stratum's rows equal to some original record, and its rows."""
    from bayessdc.risk.copies import rows_in_original

    copied = rows_in_original(original, frame, columns)
    keyed = pd.DataFrame({"stratum": frame[strata].astype(str).to_numpy(), "synthetic": frame["synthetic"].to_numpy(),
                          "copied": copied})  # fmt: skip
    return keyed.groupby(["stratum", "synthetic"], sort=True)["copied"].agg(["mean", "size"])


@register
class StratumCopiedRecords(Measure):
    """Per stratum of a release synthesized area by area: the share of its rows equal to some original record."""

    reads = ("original", "released", "weights", "unlearned", "strata")

    name = "stratum_copied_records"
    kind = "risk"
    better = "lower"
    title = "records copied from the original, per stratum"
    unit = "share of the stratum's released rows"
    description = "share of each stratum's released rows equal to some original record on every released column"
    subsets = "stratum"
    subset_names = None
    references = {
        "unlearned": "the same share for the stratum's records in datasets drawn by fits that never saw them "
        "(cross-fitted)",
        "unlearned_range": "the upper end of the range one such dataset shows, widened for the number of strata "
        "judged at once (mean + z sd, z the normal quantile of 1 - 0.025/S)",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.strata is not None and data.original is not None and bool(data.record_columns)

    def compute(self, data: MeasureInput) -> MeasureResult:
        columns = data.record_columns
        shares = _shares(data.original, data.synthetic, columns, data.strata)
        values = [{"subset": f"stratum {s}", "dataset": int(d), "value": float(v)}
                  for (s, d), v in shares["mean"].items()]  # fmt: skip
        references = []
        records = data.original[data.strata].astype(str).value_counts().rename("records")
        details = pd.DataFrame({"records": records}).rename_axis("stratum").sort_index()
        details["copied"] = shares["mean"].groupby(level="stratum").mean()
        if data.unlearned is not None:
            unlearned = _shares(data.original, data.unlearned, columns, data.strata)
            strata = unlearned.index.get_level_values("stratum").unique()
            z = bonferroni_z(len(strata))
            for stratum in strata:
                own = unlearned.loc[stratum]
                references.append(mean_reference(f"stratum {stratum}", "unlearned", own["mean"]))
                references.append(stratum_range(f"stratum {stratum}", own["mean"].to_numpy(float),
                                                float(own["size"].mean()), z))  # fmt: skip
            details["unlearned"] = unlearned["mean"].groupby(level="stratum").mean()
            details["unlearned_range"] = pd.Series({r["subset"].removeprefix("stratum "): r["value"]
                                                    for r in references if r["reference"] == "unlearned_range"})
            details["z"] = z
        result = self.result(values, references)
        result.details = details
        return result


def inherent_stratum_disclosures(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    strata: str,
    *,
    repetitions: int = 100,
    seed: int = 0,
    weights: np.ndarray | None = None,
    bands: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Per repetition of Hu & Savitsky's inherent maximum and per stratum: the stratum's records whose
    synthesized values all equal their own (exact attribute disclosures, eq. 18).

    The S datasets are the whole file's maximum of :func:`bayessdc.risk.identification.inherent_risk`, drawn by
    :func:`bayessdc.risk.identification.inherent_sources` from the same stream (``(seed, "inherent",
    "maximum")``) with the same patterns, ``weights`` and ``bands``: each record's synthesized values redrawn
    jointly from its pattern of ``pattern`` values in ``original``, compared on their bands. A stratum's counts
    over the strata add up to that function's ``disclosures`` of the repetition.

    Parameters
    ----------
    original
        The confidential records.
    synthesized, pattern
        The synthesized columns, and the kept columns whose combinations are the patterns (the stratum among them
        for a release that keeps it: the labels are then redrawn within the stratum).
    strata
        The column of strata; a record's stratum is its value there, as a string.
    repetitions, seed
        S, and the seed of the stream.
    weights
        Survey weights: each pattern resampled by weight (:func:`~bayessdc.risk.identification.inherent_sources`).
    bands
        Numeric columns compared on their bands (:mod:`bayessdc.risk.banding`).

    Returns
    -------
    pandas.DataFrame
        One row per repetition and stratum (strata sorted): ``repetition`` (1..S), ``stratum``, ``records``,
        ``disclosed`` and ``share`` (``disclosed / records``).

    Examples
    --------
    Stratum ``a``: every pattern one record, each record redraws its own label. Stratum ``b``: one pattern of the
    labels u and v, each record keeps its own with probability 1/2:

    >>> original = pd.DataFrame({"area": ["a", "a", "b", "b"], "x": ["p", "q", "p", "p"], "y": ["u", "v", "u", "v"]})
    >>> table = inherent_stratum_disclosures(original, ["y"], ["area", "x"], "area", repetitions=400)
    >>> table.query("stratum == 'a'")["share"].unique().tolist()
    [1.0]
    >>> round(float(table.query("stratum == 'b'")["share"].mean()), 1)
    0.5
    """
    from bayessdc.risk.banding import banded
    from bayessdc.risk.identification import inherent_sources
    from bayessdc.synthesis import streams
    from bayessdc.synthesis.streams import Stream

    synthesized, pattern = list(synthesized), list(pattern)
    matched = banded(original, dict(bands or {}))
    codes = {c: pd.factorize(matched[c], use_na_sentinel=False)[0] for c in synthesized}
    stratum, names = pd.factorize(original[strata].astype(str).to_numpy(), sort=True)
    records = np.bincount(stratum, minlength=len(names))
    rng = streams.rng(seed, Stream.INHERENT, Stream.MAXIMUM)  # the whole file's maximum: inherent_risk's stream
    frames = []
    for s, source in enumerate(inherent_sources(original, synthesized, pattern, "max", repetitions, rng, weights)):
        same = np.ones(len(original), dtype=bool)
        for column in synthesized:
            same &= codes[column][source[column]] == codes[column]
        disclosed = np.bincount(stratum, weights=same, minlength=len(names)).astype(np.int64)
        frames.append(pd.DataFrame({"repetition": s + 1, "stratum": np.asarray(names, dtype=str), "records": records,
                                    "disclosed": disclosed, "share": disclosed / records}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def bonferroni_welch_bound(
    subset: str, values: Sequence[float] | np.ndarray, reference: Mapping[str, Any], strata: int
) -> dict[str, Any]:
    """``inherent_max_bonferroni`` of one stratum: the largest pooled figure of the release's ``values`` (one per
    dataset) that Welch's test of ``pooled - reference`` still puts at or below the ``reference`` (a
    :func:`~bayessdc.measures.base.mean_reference` of S repetitions: its mean, ``mc_se`` and ``repetitions``) at the
    Bonferroni level for ``strata`` strata judged at once.

    The bound is ``reference + t se``: ``se = sqrt(sd_m^2 / m + sd_S^2 / S)``, the standard error of the
    difference of the release's m datasets' mean and the reference's S repetitions' mean; ``t`` the quantile of
    ``1 - 0.025 / strata`` of Student's t on Welch-Satterthwaite's degrees of freedom (the policy's ``lower``
    statistic, ``bayessdc.policy._against_reference``, at 0.975). The release's ``sd_m`` is never taken below the
    repetitions' ``sd_S``, and is then counted with their ``S - 1`` degrees of freedom: a release at the maximum
    varies as its repetitions do, and with m of 3 to 5 datasets a sample ``sd_m`` below it by chance makes Welch's
    test refuse two to ten times as often as its level in the far tail that Bonferroni asks for (a release drawn as
    the maximum, 10 areas, m = 3: 13.5% of releases refused somewhere instead of at most 2.5%; with the floor,
    1.5%). A release whose datasets are all alike (copies) is then judged against the maximum's own spread.

    An exact threshold (no ``mc_se``: it holds both errors already), judged with the ``pooled`` statistic. With one
    stratum and a release varying at least as much as the repetitions, ``pooled <= bound`` exactly when the
    ``lower`` statistic meets ``at_most = reference``.

    Examples
    --------
    Five datasets pooled at 0.54 (sd 0.0316) against a maximum of 0.5 over 100 repetitions of sd 0.02 (se 0.002):
    above it for one stratum judged alone, within it for one of twenty; five datasets all at 0.54 (a release of
    copies varies less than the maximum) are judged on the repetitions' sd, and are above it for twenty too:

    >>> maximum = {"value": 0.5, "mc_se": 0.002, "repetitions": 100}
    >>> shares = [0.50, 0.52, 0.54, 0.56, 0.58]
    >>> [round(bonferroni_welch_bound("stratum a", shares, maximum, s)["value"], 4) for s in (1, 20)]
    [0.5391, 0.593]
    >>> [round(bonferroni_welch_bound("stratum a", [0.54] * 5, maximum, s)["value"], 4) for s in (1, 20)]
    [0.5182, 0.5284]
    """
    from scipy.stats import t

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    mean = float(reference.get("value", float("nan")))
    if not v.size or not np.isfinite(mean):
        return {"subset": subset, "reference": "inherent_max_bonferroni", "value": float("nan")}
    repetitions = int(reference.get("repetitions", 1) or 1)
    se_reference = float(reference.get("mc_se", float("nan")))
    se_reference = se_reference if np.isfinite(se_reference) and repetitions > 1 else 0.0
    spread = se_reference * np.sqrt(repetitions)  # one repetition's sd
    own = float(v.std(ddof=1)) if v.size > 1 else 0.0
    floored = spread > own
    se_release = float(max(own, spread) / np.sqrt(v.size))
    df_release = repetitions - 1 if floored else v.size - 1
    se = float(np.hypot(se_release, se_reference))
    parts = (se_release**4 / df_release if df_release > 0 else 0.0) + (
        se_reference**4 / (repetitions - 1) if repetitions > 1 else 0.0
    )
    df = se**4 / parts if parts > 0 else np.inf
    quantile = 1 - 0.025 / max(int(strata), 1)
    half = float(t.ppf(quantile, df)) * se if se > 0 else 0.0
    return {"subset": subset, "reference": "inherent_max_bonferroni", "value": mean + half, "lower": mean - half,
            "upper": mean + half, "repetitions": repetitions}  # fmt: skip


def _own_values(original: pd.DataFrame, drawn: pd.DataFrame, synthesized: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The datasets ``drawn`` (row ``i`` of each record ``i``): their numbers, and per dataset and record whether
    its synthesized values all equal the record's own (an ``(m, n)`` array)."""
    n = len(original)
    drawn = drawn.sort_values("synthetic", kind="stable")
    datasets, sizes = np.unique(drawn["synthetic"].to_numpy(), return_counts=True)
    if (sizes != n).any():
        raise ValueError(f"every dataset as drawn must hold the {n} records in order (sizes {sizes.tolist()})")
    same = np.ones(len(drawn), dtype=bool)
    for column in synthesized:
        codes, _ = pd.factorize(pd.concat([original[column], drawn[column]], ignore_index=True),
                                use_na_sentinel=False)  # fmt: skip
        same &= np.tile(codes[:n], len(datasets)) == codes[n:]
    return datasets, same.reshape(len(datasets), n)


@register
class StratumAttributeDisclosures(Measure):
    """Per stratum of a partially synthetic release synthesized area by area: the share of its records whose
    synthesized values all equal their own (Hu & Savitsky's exact attribute disclosure, eq. 18)."""

    reads = ("original", "synthesized", "kept", "weights", "bands", "drawn", "repetitions", "strata",
             "partially_synthetic")  # fmt: skip

    name = "stratum_attribute_disclosures"
    kind = "risk"
    better = "lower"
    title = "exact attribute disclosures, per stratum"
    unit = "share of the stratum's records"
    description = ("share of each stratum's records whose synthesized values all equal their own (Hu & Savitsky "
                   "eq. 18): the record copied into its own row")  # fmt: skip
    subsets = "stratum"
    subset_names = None
    bounds = (0.0, 1.0)
    references = {
        "inherent_max": "the same share in the inherent maximum's datasets (the synthesized values redrawn from the "
        "original's own distribution within each pattern of kept values, the stratum among them where it is kept), S "
        "times",
        "inherent_max_bonferroni": "the largest pooled share above the stratum's inherent maximum within the Monte "
        "Carlo error of the release and of the maximum together (Welch, the release's sd never below the "
        "maximum's), at the Bonferroni level for the strata judged at once (t of 1 - 0.025/S)",
    }

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.strata is not None and data.partially_synthetic and data.original is not None
                    and data.synthesized and data.strata in data.original.columns)  # fmt: skip

    def compute(self, data: MeasureInput) -> MeasureResult:
        original, drawn = data.identification_frames()  # banded; the datasets as drawn, row i record i
        datasets, same = _own_values(original, drawn, list(data.synthesized))
        stratum, names = pd.factorize(data.original[data.strata].astype(str).to_numpy(), sort=True)
        records = np.bincount(stratum, minlength=len(names))
        shares = np.stack([np.bincount(stratum, weights=row, minlength=len(names)) for row in same]) / records
        weights = None if data.weights is None else data.original[data.weights].to_numpy(dtype=float)
        maximum = inherent_stratum_disclosures(
            data.original, data.synthesized, [c for c in data.kept if c != data.weights], data.strata,
            repetitions=data.repetitions, seed=data.seed, weights=weights, bands=data.bands,
        )  # fmt: skip
        by_stratum = dict(tuple(maximum.groupby("stratum", sort=True)["share"]))
        values, references, rows = [], [], []
        for j, name in enumerate(names):
            subset = f"stratum {name}"
            values += [{"subset": subset, "dataset": int(d), "value": float(v)}
                       for d, v in zip(datasets, shares[:, j], strict=True)]  # fmt: skip
            reference = mean_reference(subset, "inherent_max", by_stratum[name].to_numpy(float))
            bound = bonferroni_welch_bound(subset, shares[:, j], reference, len(names))
            references += [reference, bound]
            rows.append({"stratum": name, "records": int(records[j]), "disclosed": float(shares[:, j].mean()),
                         "inherent_max": reference["value"], "inherent_max_bonferroni": bound["value"]})  # fmt: skip
        result = self.result(values, references)
        if data.details:
            result.details = pd.DataFrame(rows).set_index("stratum")
        return result
