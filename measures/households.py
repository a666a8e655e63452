"""Households: unique households reappearing, and household secrets inferred from a household's members.

A release of persons in households (:attr:`MeasureInput.households`) discloses what no record alone does: a
household is recognised by its members together, its size and the area, relationships, sexes and ages of its
members, where each member alone is common. An intruder who knows these of a real household (a neighbour, a
register of addresses) reads the household's *signature*: the multiset of its members' rows on the known columns
(:attr:`MeasureInput.household_known`; a numeric one, such as age, read on its band of :attr:`MeasureInput.bands`,
:mod:`bayessdc.risk.banding`), the same whatever the order of the members and whatever the household ids
(:func:`household_signatures`: members sorted on their codes; a missing value equal to any other missing value).
Two figures, each per synthetic dataset:

* ``household_uniques_reappearing``: the share of the original's households unique in the original on their
  signature (the only household with those members) whose signature appears among the dataset's households: the
  replicated uniques of synthpop (``replicated.uniques``; Nowok, Raab & Dibben 2016) for households, as the subset
  ``original uniques reappearing`` of :mod:`bayessdc.measures.uniques` counts them for records (RepU, Raab, Nowok &
  Dibben 2024, "Practical privacy metrics for synthetic data", synthpop's ``disclosure``, counts only those unique
  in the synthetic data too). A synthetic household equal to the only real household of its kind tells the
  intruder that household was in the data, with its members' values. Subsets ``all`` and, by the original
  household's size, ``size 1`` to ``size 6+``.
* ``household_attribute_inference``: the intruder knows a real household's signature, finds the dataset's
  households with the same signature and guesses the household's secrets (:attr:`MeasureInput.household_secrets`,
  household-level columns such as tenure, all of them together) as the most common secret value among them, and a
  signature no synthetic household has as the most common secret value of the whole dataset's households. A tie is
  broken by a seeded draw (seed :attr:`MeasureInput.seed`): each (signature, secret value) pair draws a uniform
  number from the seed and the pair alone, and the largest of the tied wins, so that the same households are
  guessed alike in any dataset (a dataset equal to the original scores exactly ``inherent_max``). The figure is the
  share of the original's households whose secrets are guessed right: the inference attack of anonymeter (Giomi et
  al. 2023, "A unified framework for quantifying privacy risk in synthetic data", PoPETs), every target guessed,
  for a household known by its members (DiSCO, disclosive in synthetic and correct in original, Raab, Nowok &
  Dibben 2024, counts only the targets whose matches all share one value).

A fully synthetic household release, whose households are drawn whole (their size and members synthesized, as
Hu, Reiter & Wang 2018 synthesize nested categorical data, "Dirichlet process mixture models for modeling and
generating synthetic versions of nested categorical data", Bayesian Analysis 13(1)), has no row ``i`` that is
record ``i``: a synthetic household is not any real household, and the number of persons of a dataset may differ
from the original's. Hu & Savitsky's expected match risk and its inherent bounds, defined on a partially synthetic
release whose row ``i`` is record ``i`` (:mod:`bayessdc.measures.identification`), do not apply; what an intruder
can do is infer what a household is like from the households of the release that look like the one known to the
intruder: that is why the second figure is an inference, as anonymeter's is, and not Hu & Savitsky's expected match
risk.

The references, each the same figure computed otherwise:

* ``unlearned`` and ``unlearned_range`` (both figures): the same figure on the datasets of a cross-fitted release
  (:attr:`MeasureInput.unlearned`), whose every household was drawn by a fit that never saw it: what a release
  that could not have learned the households judged shows by chance. ``unlearned`` is the mean of its datasets
  (:func:`~bayessdc.measures.base.mean_reference`), ``unlearned_range`` the upper end of the range one of them
  shows, mean + 1.96 sd (:func:`~bayessdc.measures.base.range_reference`), which the default policy judges the
  pooled figure against, as for the records copied (:mod:`bayessdc.measures.copies`).
* ``prior`` (the inference): what the intruder knows with no release. The share of the original's households whose
  secrets equal the most common secret value among the original's households of their *area*; the area is the
  household's values on the known columns that are the same for every member of every household of the original
  (``area`` in :func:`bayessdc.examples.households`; any column is trivially the same within a household of one
  member), and with no such column every household's guess is the most common secret value of all the original's
  households (ties broken by the seeded draw). It supposes the intruder knows the original's table of the secrets
  by area, as a published table would give it.
* ``inherent_max`` (the inference): the same inference with the original file itself in place of a synthetic
  dataset, its households guessed from the real households of the same signature: what releasing the real
  households would reveal. It stands where Hu & Savitsky's inherent maximum does, as an upper bound of what a
  release can be expected to reveal (a synthesizer that overfits can pass it, guessing right a household that
  shares its signature with others of another secret).

A household's secret is its first member's value (in the order of the frame); the persons of a frame whose
household id is missing are one household. The figures read the datasets as :attr:`MeasureInput.synthetic` holds
them. With :attr:`MeasureInput.household_known` empty, a household is known by every released column but the
household id, the survey weight and the secrets (:func:`known_columns`).

The signatures (:func:`household_signatures`) are computed once for both figures (the input's cache) and grow
with the persons: 1,000,000 persons in 400,000 households of 1 to 11 members, known by four columns (500 areas,
relationship, sex, age on its deciles) with one secret carried, take 0.4 to 1.3 s; the original with m = 2
synthetic and 2 unlearned datasets of as many persons (5,000,000 persons) 4.8 to 8.8 s, and both figures with
their references 5.2 to 10.3 s (measured 2026-12-06 on the two cores of the development machine, shared with other
runs: the spread is theirs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, mean_reference, range_reference, register

__all__ = [
    "HouseholdAttributeInference",
    "HouseholdUniquesReappearing",
    "SIZE_SUBSETS",
    "household_level_columns",
    "household_signatures",
    "known_columns",
    "size_label",
]

#: The subsets of :class:`HouseholdUniquesReappearing` by the original household's size (its members).
SIZE_SUBSETS = ("size 1", "size 2", "size 3", "size 4", "size 5", "size 6+")


def size_label(size: np.ndarray | pd.Series) -> np.ndarray:
    """The size subset of each household size: ``size 1`` .. ``size 5``, ``size 6+``.

    Examples
    --------
    >>> size_label(np.array([1, 5, 6, 9])).tolist()
    ['size 1', 'size 5', 'size 6+', 'size 6+']
    """
    size = np.asarray(size, dtype=np.int64)
    return np.asarray(SIZE_SUBSETS, dtype=object)[np.clip(size, 1, len(SIZE_SUBSETS)) - 1]


def _combine(codes: Sequence[np.ndarray], dense: bool = True) -> np.ndarray:
    """One code per row for the tuple of ``codes`` (each non-negative), equal exactly when every code is: the codes
    in mixed radix, factorized on the way only where the radix would pass 2**62 (a factorized code and another code
    below ``n`` stay below it), and at the end when ``dense`` (numbered 0, 1, ... in order of first appearance)."""
    out = np.asarray(codes[0], dtype=np.int64)
    radix = int(out.max(initial=0)) + 1
    for code in codes[1:]:
        code = np.asarray(code, dtype=np.int64)
        base = int(code.max(initial=0)) + 1
        if radix * base >= 2**62:
            out = pd.factorize(out)[0].astype(np.int64)
            radix = int(out.max(initial=0)) + 1
        out, radix = out * base + code, radix * base
    return pd.factorize(out)[0].astype(np.int64) if dense else out


def _column_codes(frames: Sequence[pd.DataFrame], column: str, edges: np.ndarray | None) -> np.ndarray:
    """The codes of ``column`` over the rows of all ``frames`` in turn: equal values, or bands (``edges``), equal
    codes; a missing value equal to every other missing value. Each frame's column is factorized alone and the
    frames' distinct values once together (no copy of the columns end to end)."""
    from bayessdc.risk.banding import banded

    codes, uniques = [], []
    for frame in frames:
        values = frame[column] if edges is None else banded(frame[[column]], {column: edges})[column]
        code, unique = pd.factorize(values, use_na_sentinel=False)
        codes.append(code)
        uniques.append(pd.Series(unique))
    common = pd.factorize(pd.concat(uniques, ignore_index=True), use_na_sentinel=False)[0].astype(np.int64)
    ends = np.cumsum([0, *(len(u) for u in uniques)])
    return np.concatenate([common[a:b][c] for c, a, b in zip(codes, ends[:-1], ends[1:], strict=True)])


def household_signatures(
    frames: Sequence[pd.DataFrame],
    household: str,
    columns: Sequence[str],
    bands: Mapping[str, np.ndarray] | None = None,
    dataset: str = "synthetic",
    carry: Sequence[str] = (),
) -> list[pd.DataFrame]:
    """Each household of each frame, per dataset, with its signature: an integer id equal for two households of any
    of ``frames`` exactly when their members' rows on ``columns`` are the same multiset.

    The rows' values are coded over all frames together (a column's equal values, or its bands where ``bands``
    has edges for it, one code; missing values one code), a row's codes combined into one row code, the members of
    every household sorted on it, and the sorted sequences of the households of each size numbered position by
    position (one factorization of the households still that long per position): exact, no hashing, and vectorised
    (1,000,000 persons in 400,000 households on four columns, one banded: 0.4 to 1.3 s).

    Parameters
    ----------
    frames
        Frames of persons (the original, the m synthetic datasets in one frame ...); signatures are comparable
        across all of them.
    household
        The household id column: the persons of one household share it (within a dataset).
    columns
        The known columns of each member; none: a household is known by its size alone.
    bands
        Edges of the numeric columns read on their band (:func:`bayessdc.risk.banding.banded`).
    dataset
        The column numbering the datasets of a frame that holds several (a frame without it is one dataset, 0).
    carry
        Columns whose value for each household is its first member's (in the frame's order): household-level
        values, such as the secrets.

    Returns
    -------
    list of pandas.DataFrame
        Per frame, one row per household, in the order of their first member: ``dataset``, ``household`` (its id),
        ``size`` (its members), ``signature`` and the ``carry`` columns.

    Examples
    --------
    >>> a = pd.DataFrame({"household": [1, 1, 2], "sex": ["f", "m", "f"], "age": [30, 32, 30]})
    >>> b = pd.DataFrame({"household": ["x", "x", "y"], "sex": ["m", "f", "m"], "age": [32, 30, 32]})
    >>> first, second = household_signatures([a, b], "household", ["sex", "age"])
    >>> first["signature"].tolist(), second["signature"].tolist()  # members in another order: the same household
    ([0, 1], [0, 2])
    """
    bands = bands or {}
    lengths = [len(f) for f in frames]
    columns_out = ["dataset", "household", "size", "signature", *carry]
    if not sum(lengths):
        return [pd.DataFrame(columns=columns_out) for _ in frames]
    frame_of = np.repeat(np.arange(len(frames), dtype=np.int64), lengths)
    datasets = np.concatenate([f[dataset].to_numpy(dtype=np.int64) if dataset in f.columns
                               else np.zeros(len(f), dtype=np.int64) for f in frames])  # fmt: skip
    ids = np.concatenate([pd.factorize(f[household], use_na_sentinel=False)[0] for f in frames])
    # the household of each row, numbered in order of first appearance: each frame's households one block
    group = _combine([frame_of, pd.factorize(datasets)[0], ids])
    row = _combine([_column_codes(frames, c, bands.get(c)) for c in columns], dense=False) if columns \
        else np.zeros_like(group)
    size = np.bincount(group)
    width = int(row.max(initial=0)) + 1
    if width >= 2**62 // group.size:  # a household's code times the width must stay in 64 bits
        row = pd.factorize(row)[0].astype(np.int64)
        width = int(row.max(initial=0)) + 1
    members = np.sort(group * width + row) % width  # each household's members by their row code: the multiset
    start = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64)
    code = np.zeros(size.size, dtype=np.int64)  # each household's members so far, numbered among those as long
    longest = np.argsort(-size, kind="stable")  # the households still that long at position k lead
    still = np.cumsum(np.bincount(size)[::-1])[::-1]  # still[k]: the households of at least k members
    for k in range(int(size.max())):
        active = longest[: int(still[k + 1])]
        code[active] = pd.factorize(code[active] * width + members[start[active] + k])[0]
    # the households of one size end at the same position, so their codes are numbered together: size and code
    signature = _combine([size, code])
    first = np.flatnonzero(np.r_[True, group[1:] > np.maximum.accumulate(group)[:-1]])  # each household's first row
    offsets = np.cumsum([0, *lengths])
    out = []
    for f, frame in enumerate(frames):
        mine = slice(*np.searchsorted(first, offsets[f : f + 2]))
        local = first[mine] - offsets[f]
        table = pd.DataFrame({"dataset": datasets[first[mine]], "household": frame[household].iloc[local].to_numpy(),
                              "size": size[mine], "signature": signature[mine]})  # fmt: skip
        for column in carry:
            table[column] = frame[column].iloc[local].to_numpy()
        out.append(table)
    return out


def known_columns(data: MeasureInput) -> list[str]:
    """The columns a household is known by: :attr:`MeasureInput.household_known`, or with none given, every
    released column but the household id, the survey weight and the secrets."""
    if data.household_known:
        return list(data.household_known)
    skip = {data.households, data.weights, *data.household_secrets}
    return [c for c in data.released if c not in skip]


def _tables(data: MeasureInput) -> dict[str, object]:
    """The households of the original, the synthetic and the unlearned datasets with their signatures and their
    secrets' joint code (``secret``), the original's area (``area``, for the prior), computed once per input."""
    known = known_columns(data)
    key = ("household_signatures", data.households, tuple(known), tuple(data.household_secrets))
    if key in data.cache:
        return data.cache[key]
    original = data.original
    bands = {c: e for c, e in data.bands.items() if c in known}
    level = household_level_columns(original, data.households, known, bands)
    frames = [original, data.synthetic] + ([data.unlearned] if data.unlearned is not None else [])
    carry = list(dict.fromkeys([*data.household_secrets, *level]))
    tables = household_signatures(frames, data.households, known, bands, carry=carry)
    if data.household_secrets:
        codes = [pd.factorize(pd.concat([t[c] for t in tables], ignore_index=True), use_na_sentinel=False)[0]
                 for c in data.household_secrets]  # fmt: skip
        joint = _combine(codes)
        ends = np.cumsum([0, *(len(t) for t in tables)])
        for t, a, b in zip(tables, ends[:-1], ends[1:], strict=True):
            t["secret"] = joint[a:b]
    if level:  # the area of each original household, its level columns read on their bands as they were checked
        from bayessdc.risk.banding import banded

        areas = banded(tables[0][level], bands)
        tables[0]["area"] = _combine([pd.factorize(areas[c], use_na_sentinel=False)[0] for c in level])
    else:
        tables[0]["area"] = 0
    out = {"original": tables[0], "synthetic": tables[1], "unlearned": tables[2] if len(tables) > 2 else None,
           "known": known, "level": level}  # fmt: skip
    data.cache[key] = out
    return out


def household_level_columns(
    original: pd.DataFrame, household: str, columns: Sequence[str], bands: Mapping | None = None
) -> list[str]:
    """The ``columns`` the same for every member of every household of ``original`` (numeric ones of ``bands`` read
    on their bands): the household's own columns, such as its area or tenure.

    Examples
    --------
    >>> persons = pd.DataFrame({"h": [1, 1, 2], "area": ["a", "a", "b"], "age": [40, 9, 30]})
    >>> household_level_columns(persons, "h", ["area", "age"])
    ['area']
    """
    from bayessdc.risk.banding import banded

    columns = list(columns)
    if not columns or not len(original):
        return []
    frame = banded(original[[household, *columns]], dict(bands or {}))
    spread = frame.groupby(household, sort=False, dropna=False)[columns].nunique(dropna=False).max()
    return [c for c in columns if int(spread[c]) <= 1]


def _draws(seed: int, pairs: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) for each integer of ``pairs``, a function of ``seed`` and the integer alone
    (splitmix64's finalizer of their mix): the same (signature, secret) pair draws the same number in every frame."""
    with np.errstate(over="ignore"):
        z = np.asarray(pairs, dtype=np.int64).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z ^= np.uint64(int(seed) % 2**64)
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            z = (z ^ (z >> np.uint64(shift))) * np.uint64(factor)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) / float(2**53)


def _modes(keys: np.ndarray, secrets: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct key (ascending), the most common secret among its rows; a tie is broken by a seeded draw
    (:func:`_draws`: each (key, secret) pair a uniform number given by the seed and the pair, the largest of the
    tied chosen), so that rows alike are guessed alike in any frame."""
    keys, secrets = np.asarray(keys, dtype=np.int64), np.asarray(secrets, dtype=np.int64)
    if not keys.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    width = int(secrets.max()) + 1
    pairs, counts = np.unique(keys * width + secrets, return_counts=True)
    key, secret = pairs // width, pairs % width
    order = np.lexsort((-_draws(seed, pairs), -counts, key))  # per key: the largest count, then the largest draw
    key, secret = key[order], secret[order]
    first = np.r_[True, key[1:] != key[:-1]]
    return key[first], secret[first]


def _guessed(targets: np.ndarray, truth: np.ndarray, keys: np.ndarray, secrets: np.ndarray, seed: int) -> np.ndarray:
    """Whether each target (its key) is guessed its ``truth``: the most common secret among the rows of ``keys``
    with its key, else the most common of all rows (ties broken by seeded draws, :func:`_modes`)."""
    if not targets.size:
        return np.zeros(0, dtype=bool)
    if not keys.size:  # nothing to guess from: no guess is right
        return np.zeros(targets.size, dtype=bool)
    known, guess = _modes(keys, secrets, seed)
    fallback = _modes(np.zeros(secrets.size, dtype=np.int64), secrets, seed)[1][0]
    pos = np.minimum(np.searchsorted(known, targets), known.size - 1)
    return np.where(known[pos] == targets, guess[pos], fallback) == truth


def _share(hits: dict[int, np.ndarray], mask: np.ndarray | slice = slice(None)) -> float:
    """The mean over datasets of the share of ``hits`` (per dataset, one boolean per target) within ``mask`` (NaN:
    no dataset, or no target)."""
    shares = [float(h[mask].mean()) for h in hits.values() if h[mask].size]
    return float(np.mean(shares)) if shares else float("nan")


def _per_target(hits: dict[int, np.ndarray], targets: int) -> np.ndarray:
    """The share of datasets in which each target is hit (NaN: no dataset)."""
    return np.mean(list(hits.values()), axis=0) if hits else np.full(targets, np.nan)


def _stated(result: MeasureResult, known: list[str], data: MeasureInput, secrets: bool = False) -> MeasureResult:
    """``result`` with the columns a household is known by (and banded), and the secrets, said in its
    description."""
    said = ", ".join(f"{c} ({len(data.bands[c]) + 1} bands)" if c in data.bands else c for c in known)
    result.description += f"; a household known by its members' {said or 'count alone'}"
    if secrets:
        result.description += f"; secrets: {', '.join(data.household_secrets)}"
    return result


@register
class HouseholdUniquesReappearing(Measure):
    """The share of the original's households unique on their signature whose signature a synthetic dataset has."""

    reads = ("original", "unlearned", "bands", "released", "weights", "households", "household_known",
             "household_secrets")  # fmt: skip

    name = "household_uniques_reappearing"
    kind = "risk"
    better = "lower"
    bounds = (0.0, 1.0)
    title = "unique households reappearing"
    unit = "share of the original's unique households"
    description = ("share of the households unique in the original on their members' known values (their "
                   "signature) whose signature appears among a synthetic dataset's households")  # fmt: skip
    subsets = "'all', or the original households of one size ('size 1' .. 'size 6+')"
    subset_names = ("all", *SIZE_SUBSETS)
    references = {
        "unlearned": "the same share for datasets of a release whose every household was drawn by a fit that never "
        "saw it (cross-fitted): what a release that could not have learned the households judged shows",
        "unlearned_range": "the upper end of the range one dataset of that release shows (mean + 1.96 sd): a "
        "release above it reproduces more unique households than a release that never saw them could by chance",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.households is not None and data.original is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        tables = _tables(data)
        original = tables["original"]
        unique = original[~original["signature"].duplicated(keep=False)]
        labels = pd.Series(size_label(unique["size"]), index=unique.index)
        subsets = {"all": np.ones(len(unique), dtype=bool)}
        subsets |= {s: (labels == s).to_numpy() for s in SIZE_SUBSETS if (labels == s).any()}

        def reappearing(frame: pd.DataFrame) -> dict[int, np.ndarray]:
            """Per dataset, whether each unique household's signature is among its households'."""
            return {int(d): np.isin(unique["signature"].to_numpy(), t["signature"].to_numpy())
                    for d, t in frame.groupby("dataset", sort=True)}  # fmt: skip

        release = reappearing(tables["synthetic"])
        values, references, notes = [], [], {}
        for subset, mask in subsets.items():
            for d, hit in release.items():
                values.append({"subset": subset, "dataset": d, "value": float(hit[mask].mean()) if mask.any()
                               else float("nan")})  # fmt: skip
        if not len(unique):
            notes["all"] = "no household of the original is unique on its signature"
        unlearned = reappearing(tables["unlearned"]) if tables["unlearned"] is not None else None
        if unlearned is not None:
            for subset, mask in subsets.items():
                shares = [float(hit[mask].mean()) if mask.any() else float("nan") for hit in unlearned.values()]
                references.append(mean_reference(subset, "unlearned", shares))
                references.append(range_reference(subset, "unlearned_range", shares))
        result = self.result(values, references)
        result.notes = notes
        if data.details:
            sizes = pd.Series(size_label(original["size"]), name="size")
            details = pd.DataFrame({"households": sizes.value_counts(),
                                    "unique": labels.value_counts()}).reindex(SIZE_SUBSETS).dropna(how="all")
            details = details.fillna(0).astype(int)
            details["reappearing"] = pd.Series({s: _share(release, subsets[s]) for s in subsets if s != "all"})
            if unlearned is not None:
                details["unlearned"] = pd.Series({s: _share(unlearned, subsets[s]) for s in subsets if s != "all"})
            result.details = details.rename_axis("size")
        return _stated(result, tables["known"], data)


@register
class HouseholdAttributeInference(Measure):
    """The share of the original's households whose secrets an intruder knowing their signature guesses right from
    a synthetic dataset's households of the same signature."""

    reads = ("original", "unlearned", "bands", "released", "weights", "households", "household_known",
             "household_secrets")  # fmt: skip

    name = "household_attribute_inference"
    kind = "risk"
    better = "lower"
    bounds = (0.0, 1.0)
    title = "household secrets inferred"
    unit = "share of the original's households"
    description = ("share of the original's households whose secrets an intruder who knows their members' known "
                   "values (their signature) guesses right, as the most common among a synthetic dataset's "
                   "households of the same signature")  # fmt: skip
    references = {
        "unlearned": "the same share guessed from datasets of a release whose every household was drawn by a fit "
        "that never saw it (cross-fitted): what a release that could not have learned the households judged reveals",
        "unlearned_range": "the upper end of the range one dataset of that release shows (mean + 1.96 sd)",
        "prior": "the share guessed right with no release: each household guessed the original's most common secret "
        "among the households of its area (the known columns the same for every member of every household; with "
        "none, the most common secret of all households)",
        "inherent_max": "the same inference from the original households themselves in place of a synthetic "
        "dataset: what releasing the real households would reveal",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.households is not None and data.original is not None and bool(data.household_secrets)

    def compute(self, data: MeasureInput) -> MeasureResult:
        tables = _tables(data)
        original = tables["original"]
        targets, truth = original["signature"].to_numpy(), original["secret"].to_numpy()

        def right(frame: pd.DataFrame) -> dict[int, np.ndarray]:
            """Per dataset, whether each original household is guessed right from the dataset's households."""
            return {int(d): _guessed(targets, truth, t["signature"].to_numpy(), t["secret"].to_numpy(), data.seed)
                    for d, t in frame.groupby("dataset", sort=True)}  # fmt: skip

        release = right(tables["synthetic"])
        values = [{"subset": "all", "dataset": d, "value": float(hit.mean()) if hit.size else float("nan")}
                  for d, hit in release.items()]  # fmt: skip
        references = []
        unlearned = right(tables["unlearned"]) if tables["unlearned"] is not None else None
        if unlearned is not None:
            shares = [float(hit.mean()) for hit in unlearned.values() if hit.size]
            references += [mean_reference("all", "unlearned", shares),
                           range_reference("all", "unlearned_range", shares)]
        area = original["area"].to_numpy()
        prior = _guessed(area, truth, area, truth, data.seed)
        maximum = _guessed(targets, truth, targets, truth, data.seed)
        for name, hit in (("prior", prior), ("inherent_max", maximum)):
            references.append({"subset": "all", "reference": name,
                               "value": float(hit.mean()) if hit.size else float("nan")})  # fmt: skip
        result = self.result(values, references)
        if not len(original):
            result.notes = {"all": "the original has no households"}
        if data.details:
            sizes = size_label(original["size"])
            frame = pd.DataFrame({"size": sizes, "release": _per_target(release, len(original))})
            if unlearned is not None:
                frame["unlearned"] = _per_target(unlearned, len(original))
            frame["prior"], frame["inherent_max"] = prior, maximum
            details = frame.groupby("size").mean().reindex(SIZE_SUBSETS).dropna(how="all")
            details.insert(0, "households", frame["size"].value_counts().reindex(details.index).astype(int))
            result.details = details
        result = _stated(result, tables["known"], data, secrets=True)
        level = tables["level"]
        result.reference_notes["prior"] += f"; here the area is {', '.join(level)}" if level else "; here no area"
        return result
