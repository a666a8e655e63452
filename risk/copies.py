"""Copied records and replicated uniques: two record-level disclosure measures of any synthesizer.

A synthetic row that equals an original record on every released column discloses that record outright if the
record is the only one with those values; a synthesizer that copies training records shows it as more such rows
than a sample from the same population would give. Two measures, computed per synthetic dataset:

* **Copied records** (:func:`copied_records`): the share of a dataset's rows equal to some original record on
  all released columns. SDMetrics' NewRowSynthesis (DataCebo 2022) reports the complement (the share of new
  rows). It is read beside what a sample from the same population would give: the leave-one-out share of the
  original itself (:func:`copied_reference`), or the share of a held-out real sample (:func:`copied_holdout`).
* **Replicated uniques** (:func:`replicated_uniques`): original records unique on the released columns that
  reappear in a dataset. synthpop's ``replicated.uniques`` (Nowok, Raab & Dibben 2016) counts the stricter
  case of synthetic rows unique in their dataset as well; both counts are returned, and
  :func:`remove_replicated_uniques` drops such rows as synthpop's ``sdc(rm.replicated.uniques = TRUE)`` does.

Rows are compared on values: every released column is coded to integers shared by the original and the
synthetic rows (missing values, however written, are one value equal to itself), the codes of a row are
combined into one 64-bit key, and the per-dataset figures are counts over those keys. Time and memory are linear
in the number of rows, original and synthetic (hashing, no sort of the rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "copied_holdout",
    "copied_records",
    "copied_reference",
    "inherent_removed",
    "remove_replicated_uniques",
    "replicated_uniques",
    "row_keys",
    "rows_in_original",
]

# Combined keys stay below this bound, so that ``key * levels + code`` cannot overflow int64.
_KEY_BOUND = 2**62


def _columns(columns: Sequence[str], frames: dict[str, pd.DataFrame], by: str | None = None) -> list[str]:
    """The released columns as a list, checked to be non-empty, free of ``by`` and present in every frame."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    if not columns:
        raise ValueError("at least one released column is needed")
    if by is not None and by in columns:
        raise ValueError(f"the dataset column {by!r} cannot be a released column")
    for name, frame in frames.items():
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise KeyError(f"{name} lacks the released columns {missing}")
    return columns


def row_keys(frames: Sequence[pd.DataFrame], columns: list[str]) -> list[np.ndarray]:
    """One int64 key per row of every frame; two rows (of any frames) have equal keys iff equal on ``columns``.

    Each column is factorized once over all frames together (``use_na_sentinel=False``: missing values, be they
    NaN, None, pd.NA or NaT, are one value), and the codes are folded row-major, ``key * levels + code`` --
    the same key as ``np.ravel_multi_index`` while the product of the level counts stays below 2**62, built
    column by column so that only one column's codes are held at a time. When the next column would pass that
    bound, the keys so far are first recoded densely (at most as many values as rows), which keeps the fold exact
    whatever the number of columns and levels.
    """
    sizes = [len(f) for f in frames]
    key = np.zeros(sum(sizes), dtype=np.int64)
    bound = 1  # keys lie in [0, bound)
    for column in columns:
        values = pd.concat([f[column] for f in frames], ignore_index=True)
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        levels = max(len(uniques), 1)
        if bound * levels >= _KEY_BOUND:
            key, dense = pd.factorize(key)
            key = key.astype(np.int64, copy=False)
            bound = max(len(dense), 1)
        key *= levels
        key += codes
        bound *= levels
    return np.split(key, np.cumsum(sizes)[:-1])


class _Matches(NamedTuple):
    """Synthetic rows against the original: the datasets, and per synthetic row its key and original count."""

    labels: np.ndarray  # the values of ``by``, sorted: dataset j is labels[j]
    dataset: np.ndarray  # per synthetic row, its dataset's index j
    key: np.ndarray  # per synthetic row, its dense key (0..U-1, shared with the original rows)
    n_keys: int  # U
    in_original: np.ndarray  # per synthetic row, how many original records equal it
    original_uniques: int  # original records whose combination occurs once in the original


def _matches(original: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str], by: str) -> _Matches:
    if by not in synthetic.columns:
        raise KeyError(f"synthetic lacks the dataset column {by!r}")
    columns = _columns(columns, {"original": original, "synthetic": synthetic}, by)
    if synthetic[by].isna().any():
        raise ValueError(f"the dataset column {by!r} has missing values")
    dataset, labels = pd.factorize(synthetic[by], sort=True)
    original_key, synthetic_key = row_keys([original, synthetic], columns)
    dense, uniques = pd.factorize(np.concatenate([original_key, synthetic_key]))
    n_keys = len(uniques)
    count = np.bincount(dense[: len(original)], minlength=n_keys)
    key = dense[len(original) :].astype(np.int64, copy=False)
    return _Matches(
        labels=np.asarray(labels),
        dataset=dataset.astype(np.intp, copy=False),
        key=key,
        n_keys=n_keys,
        in_original=count[key],
        original_uniques=int(np.count_nonzero(count == 1)),
    )


def _per_dataset(matches: _Matches, rows: np.ndarray | None = None) -> np.ndarray:
    """Number of synthetic rows of each dataset (only the rows selected by the boolean ``rows`` if given)."""
    dataset = matches.dataset if rows is None else matches.dataset[rows]
    return np.bincount(dataset, minlength=len(matches.labels))


def _replicating(matches: _Matches) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic rows equal to an original unique, and per dataset the distinct uniques they replicate.

    Returns the boolean per row (equal to an original unique), the boolean per row (that, and unique in its
    dataset), and per dataset the number of distinct original uniques that reappear in it.
    """
    replicating = matches.in_original == 1
    rows = np.flatnonzero(replicating)
    # (dataset, key) pairs of the replicating rows; every row of a dataset with such a key replicates it, so a
    # pair's count among these rows is the key's count in the whole dataset.
    pair = matches.dataset[rows].astype(np.int64) * matches.n_keys + matches.key[rows]
    pair_code, pairs = pd.factorize(pair)
    in_dataset = np.bincount(pair_code, minlength=len(pairs))
    unique_in_both = np.zeros(len(replicating), dtype=bool)
    unique_in_both[rows[in_dataset[pair_code] == 1]] = True
    distinct = np.bincount(np.asarray(pairs, dtype=np.int64) // matches.n_keys, minlength=len(matches.labels))
    return replicating, unique_in_both, distinct


def copied_records(
    original: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str], by: str = "synthetic"
) -> pd.DataFrame:
    """Per synthetic dataset, the rows equal to some original record on all released columns.

    The share of a dataset's rows that copy an original record (SDMetrics' NewRowSynthesis, DataCebo 2022,
    reports its complement, with exact matching on every column here). Read it beside
    :func:`copied_reference` (or :func:`copied_holdout`): a synthesizer that only learnt the population would
    copy at about that rate, one that memorised training records at a higher one.

    Parameters
    ----------
    original
        The confidential records, with the released columns.
    synthetic
        The m synthetic datasets in one frame, numbered by the column ``by``; any number of rows each.
    columns
        The released columns compared. Values compare as equal when equal (1 and 1.0 alike); a missing value
        (NaN, None, pd.NA, NaT) equals any other missing value.
    by
        The column numbering the synthetic datasets.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, in sorted order of ``by``: ``dataset`` (the value of ``by``), ``rows``, ``copied``
        (rows equal to some original record) and ``share`` (``copied / rows``).

    Examples
    --------
    >>> original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    >>> synthetic = pd.DataFrame({"x": ["A", "B", "B", "D", "C", "E"], "synthetic": [1, 1, 1, 1, 2, 2]})
    >>> copied_records(original, synthetic, ["x"])
       dataset  rows  copied  share
    0        1     4       3   0.75
    1        2     2       1   0.50
    """
    matches = _matches(original, synthetic, columns, by)
    rows = _per_dataset(matches)
    copied = _per_dataset(matches, matches.in_original > 0)
    return pd.DataFrame({"dataset": matches.labels, "rows": rows, "copied": copied, "share": copied / rows})


def copied_reference(original: pd.DataFrame, columns: Sequence[str]) -> float:
    """The share of original records equal to some other original record on all columns (leave-one-out).

    What :func:`copied_records` would give for a sample from the original's population that never saw the
    original, estimated from the original alone. A held-out record drawn from the same distribution ``p`` as the
    ``n`` training records equals some of them with probability ``sum_k p_k (1 - (1 - p_k)**n)``. Leave one
    training record out: it is itself a draw from ``p`` independent of the other ``n - 1``, so it equals one of
    them with probability ``sum_k p_k (1 - (1 - p_k)**(n - 1))``, and the share of training records with a
    duplicate is the average of these n indicators -- an unbiased estimate of the held-out probability for
    ``n - 1`` training records. Against ``n`` it is slightly low: the difference is
    ``sum_k p_k**2 (1 - p_k)**(n - 1)``, at most ``max_x x (1 - x)**(n - 1) < 1/n``, so the reference
    understates the held-out share by less than one record in ``n``.

    Parameters
    ----------
    original
        The confidential records.
    columns
        The released columns compared (missing values equal each other, as in :func:`copied_records`).

    Returns
    -------
    float
        The share (NaN for an empty original).

    Examples
    --------
    >>> copied_reference(pd.DataFrame({"x": ["A", "A", "B", "C"]}), ["x"])
    0.5
    """
    columns = _columns(columns, {"original": original})
    if len(original) == 0:
        return float("nan")
    (key,) = row_keys([original], columns)
    code, uniques = pd.factorize(key)
    count = np.bincount(code, minlength=len(uniques))
    return float(np.mean(count[code] >= 2))


def copied_holdout(original: pd.DataFrame, holdout: pd.DataFrame, columns: Sequence[str]) -> float:
    """The share of rows of a held-out real sample equal to some original record on all columns.

    The reference of :func:`copied_records` when a control set is supplied: real records of the same population
    that were not used for training. :func:`copied_reference` estimates it without one.

    Parameters
    ----------
    original
        The confidential (training) records.
    holdout
        The held-out real records, with the same columns.
    columns
        The released columns compared (missing values equal each other).

    Returns
    -------
    float
        The share (NaN for an empty holdout).

    Examples
    --------
    >>> original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    >>> copied_holdout(original, pd.DataFrame({"x": ["B", "D", "D", "A"]}), ["x"])
    0.5
    """
    if len(holdout) == 0:
        _columns(columns, {"original": original, "holdout": holdout})
        return float("nan")
    return float(np.mean(rows_in_original(original, holdout, columns)))


def rows_in_original(original: pd.DataFrame, other: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Per row of ``other``, whether some original record equals it on all ``columns`` (missing values equal
    each other, as in :func:`copied_records`).

    Examples
    --------
    >>> rows_in_original(pd.DataFrame({"x": ["A", "B"]}), pd.DataFrame({"x": ["B", "C"]}), ["x"]).tolist()
    [True, False]
    """
    columns = _columns(columns, {"original": original, "other": other})
    original_key, other_key = row_keys([original, other], columns)
    return np.isin(other_key, original_key)


def replicated_uniques(
    original: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str], by: str = "synthetic"
) -> pd.DataFrame:
    """Per synthetic dataset, the original records unique on the released columns that reappear in it.

    An original record whose combination of released values occurs once in the original is identified by
    those values; a synthetic row with the same values points at it. ``replicated`` counts the original uniques
    that reappear in the dataset (in one or more rows); ``replicated_unique_in_both`` counts synthetic rows that
    are unique in their dataset too, what synthpop's ``replicated.uniques`` counts (Nowok, Raab & Dibben
    2016).

    Parameters
    ----------
    original
        The confidential records, with the released columns.
    synthetic
        The m synthetic datasets in one frame, numbered by the column ``by``; any number of rows each.
    columns
        The released columns compared (missing values equal each other, as in :func:`copied_records`).
    by
        The column numbering the synthetic datasets.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, in sorted order of ``by``: ``dataset``, ``original_uniques`` (original records
        unique on ``columns``, the same for every dataset), ``replicated`` (of those, the ones some row of the
        dataset equals), ``share`` (``replicated / original_uniques``, NaN when there are no uniques),
        ``rows_replicating`` (rows of the dataset equal to an original unique) and
        ``replicated_unique_in_both`` (such rows that are also unique within their dataset).

    Examples
    --------
    Original A, A, B, C has the uniques B and C; the synthetic A, B, B, D replicates B, twice:

    >>> original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    >>> synthetic = pd.DataFrame({"x": ["A", "B", "B", "D"], "synthetic": 1})
    >>> table = replicated_uniques(original, synthetic, ["x"])
    >>> table[["dataset", "original_uniques", "replicated", "share"]]
       dataset  original_uniques  replicated  share
    0        1                 2           1    0.5
    >>> table[["rows_replicating", "replicated_unique_in_both"]]
       rows_replicating  replicated_unique_in_both
    0                 2                          0
    """
    matches = _matches(original, synthetic, columns, by)
    replicating, unique_in_both, distinct = _replicating(matches)
    uniques = matches.original_uniques
    share = distinct / uniques if uniques else np.full(len(matches.labels), np.nan)
    return pd.DataFrame(
        {
            "dataset": matches.labels,
            "original_uniques": np.full(len(matches.labels), uniques, dtype=np.int64),
            "replicated": distinct,
            "share": share,
            "rows_replicating": _per_dataset(matches, replicating),
            "replicated_unique_in_both": _per_dataset(matches, unique_in_both),
        }
    )


def remove_replicated_uniques(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Sequence[str],
    by: str = "synthetic",
    unique_in_both: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The synthetic datasets without the rows that replicate an original unique.

    By default synthpop's rule (``sdc(rm.replicated.uniques = TRUE)``, Nowok, Raab & Dibben 2016): a row is
    removed when it is unique in its dataset and equals an original record unique in the original. With
    ``unique_in_both=False`` every row equal to an original unique is removed. Nothing is refitted; the kept
    rows keep their order and index labels.

    Parameters
    ----------
    original
        The confidential records, with the released columns.
    synthetic
        The m synthetic datasets in one frame, numbered by the column ``by``.
    columns
        The released columns compared (missing values equal each other, as in :func:`copied_records`).
    by
        The column numbering the synthetic datasets.
    unique_in_both
        Remove only the replicating rows unique within their dataset (synthpop), or all of them.

    Returns
    -------
    kept : pandas.DataFrame
        ``synthetic`` without the removed rows (all its columns, same order, same index labels).
    removed : pandas.DataFrame
        One row per dataset, in sorted order of ``by``: ``dataset``, ``rows`` (before), ``removed`` and
        ``kept``.

    Examples
    --------
    >>> original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    >>> synthetic = pd.DataFrame({"x": ["A", "B", "B", "D", "C", "E"], "synthetic": [1, 1, 1, 1, 2, 2]})
    >>> kept, removed = remove_replicated_uniques(original, synthetic, ["x"])
    >>> kept["x"].tolist()
    ['A', 'B', 'B', 'D', 'E']
    >>> removed
       dataset  rows  removed  kept
    0        1     4        0     4
    1        2     2        1     1
    >>> kept, _ = remove_replicated_uniques(original, synthetic, ["x"], unique_in_both=False)
    >>> kept["x"].tolist()
    ['A', 'D', 'E']
    """
    matches = _matches(original, synthetic, columns, by)
    replicating, unique_both, _ = _replicating(matches)
    drop = unique_both if unique_in_both else replicating
    rows = _per_dataset(matches)
    removed = _per_dataset(matches, drop)
    table = pd.DataFrame({"dataset": matches.labels, "rows": rows, "removed": removed, "kept": rows - removed})
    return synthetic.iloc[np.flatnonzero(~drop)], table


def inherent_removed(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    columns: Sequence[str],
    *,
    repetitions: int = 100,
    seed: int = 0,
) -> pd.DataFrame:
    """What :func:`remove_replicated_uniques` takes from each of the S datasets of Hu & Savitsky's inherent
    maximum (Section 4.1): every record's ``synthesized`` values redrawn from its ``pattern``'s empirical
    distribution in the original (:func:`bayessdc.risk.identification.inherent_sources`, the random stream
    ``bayessdc.synthesis.streams.rng(seed, "inherent", "removal")``), one repetition at a time.

    A record alone in its pattern always receives its own values, so it reappears, unique, in every repetition:
    the maximum removes at least the records unique on ``pattern``, and a synthesizer that draws from the data
    distribution removes as many. A release whose removal takes a larger share replicates unique records more
    often than such a 'perfect' synthesizer would.

    Returns
    -------
    pandas.DataFrame
        One row per repetition, as the ``removed`` table of :func:`remove_replicated_uniques`: ``dataset`` (the
        repetition, 1..S), ``rows``, ``removed`` and ``kept``.
    """
    from bayessdc.synthesis import streams
    from bayessdc.synthesis.streams import Stream

    from .identification import inherent_sources

    synthesized, columns = list(synthesized), list(columns)
    rng = streams.rng(seed, Stream.INHERENT, Stream.REMOVAL)
    tables = []
    for s, source in enumerate(inherent_sources(original, synthesized, list(pattern), "max", repetitions, rng)):
        frame = original[columns].copy()
        for column in synthesized:
            frame[column] = original[column].to_numpy()[source[column]]
        frame["synthetic"] = s + 1
        tables.append(remove_replicated_uniques(original, frame, columns)[1])
    return pd.concat(tables, ignore_index=True)
