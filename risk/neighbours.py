"""Nearest records on mixed columns: the Gower-like distance of the attacks and of the distance to closest record.

The distance between two records over columns ``C`` is the sum of one term per column, each between 0 and 1
(Gower 1971; anonymeter's ``gower_distance``, Giomi et al. 2023):

* a numeric column: ``|a - b| / range``, the range taken over every frame coded together (the original, the
  control set and all synthetic datasets), so that one metric serves every comparison;
* a categorical column (anything not numeric, booleans included): 0 when equal, 1 otherwise;
* a missing value is a value of its own: two missing values are 0 apart, a missing and an observed value 1
  (anonymeter counts two missing numeric values 1 apart and a missing against an observed one as undefined).

:class:`MixedFrames` codes the frames once; :func:`nearest` returns each query record's ``k`` nearest
candidates and :func:`two_nearest_distances` the two smallest distances. The search is exact and brute force,
in blocks of query rows against all candidates: the categorical columns of few levels count agreements by one
matrix product of one-hot codes (BLAS), the other columns add their terms elementwise, and each block's
``rows x candidates`` matrix is reduced before the next is computed (memory ``O(block x candidates)``). Ties go
to the first candidate at the smallest distance, or, given a random generator, to one of them drawn at random
for each query record (anonymeter takes its sort's order, which favours the same candidates for every query).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "Coded",
    "MixedFrames",
    "column_term",
    "concat",
    "distance_blocks",
    "is_numeric",
    "nearest",
    "pick_nearest",
    "two_nearest_distances",
]

#: Elements of one block's distance matrix (rows x candidates), about 16 MB in float32.
BLOCK_ELEMENTS = 2**22
#: Categorical columns with at most this many levels count agreements by a product of one-hot codes.
ONE_HOT_LEVELS = 128


def is_numeric(series: pd.Series) -> bool:
    """Whether a column is compared as a number: a numeric dtype that is not boolean."""
    return bool(pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype))


@dataclass(frozen=True)
class Coded:
    """Some records of :class:`MixedFrames`: per column, the scaled values (numeric, float32 with NaN for a
    missing value) or the codes (categorical, int32, a missing value a code of its own)."""

    values: dict[str, np.ndarray]
    rows: int

    def take(self, index: np.ndarray) -> Coded:
        """The records at ``index``, in that order."""
        return Coded({c: v[index] for c, v in self.values.items()}, len(index))


class MixedFrames:
    """Frames coded together on the same columns for the distance of this module.

    Parameters
    ----------
    frames
        The frames (the original, a control set, the synthetic datasets ...), each with ``columns``.
    columns
        The columns compared. A column is numeric when it is numeric in every frame (:func:`is_numeric`).

    Attributes
    ----------
    columns, numeric
        The columns, and per column whether it is numeric.
    levels
        Per categorical column, its number of codes (levels over all frames, a missing value counted as one).
    missing
        Per numeric column, whether some frame has a missing value in it.
    """

    def __init__(self, frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> None:
        self.columns = list(columns)
        for i, frame in enumerate(frames):
            absent = [c for c in self.columns if c not in frame.columns]
            if absent:
                raise KeyError(f"frame {i} lacks the columns {absent}")
        self.sizes = [len(f) for f in frames]
        bounds = np.concatenate([[0], np.cumsum(self.sizes)])
        self.numeric: dict[str, bool] = {}
        self.levels: dict[str, int] = {}
        self.missing: dict[str, bool] = {}
        coded: dict[str, np.ndarray] = {}
        for column in self.columns:
            numeric = all(is_numeric(f[column]) for f in frames)
            values = pd.concat([f[column] for f in frames], ignore_index=True)
            self.numeric[column] = numeric
            if numeric:
                x = values.to_numpy(dtype=float, na_value=np.nan)
                observed = x[~np.isnan(x)]
                low, high = (observed.min(), observed.max()) if observed.size else (0.0, 1.0)
                span = high - low if high > low else 1.0
                coded[column] = ((x - low) / span).astype(np.float32)
                self.missing[column] = bool(observed.size < x.size)
            else:
                codes, uniques = pd.factorize(values, use_na_sentinel=False)
                coded[column] = codes.astype(np.int32, copy=False)
                self.levels[column] = max(len(uniques), 1)
        self._frames = [
            Coded({c: v[bounds[i] : bounds[i + 1]] for c, v in coded.items()}, size)
            for i, size in enumerate(self.sizes)
        ]

    def __getitem__(self, i: int) -> Coded:
        return self._frames[i]


def _one_hot(records: Coded, columns: Sequence[str], levels: dict[str, int]) -> np.ndarray:
    """One-hot codes of ``columns`` side by side (records x total levels), float32."""
    offsets = np.concatenate([[0], np.cumsum([levels[c] for c in columns])])
    out = np.zeros((records.rows, int(offsets[-1])), dtype=np.float32)
    rows = np.arange(records.rows)
    for offset, column in zip(offsets[:-1], columns, strict=True):
        out[rows, offset + records.values[column]] = 1.0
    return out


def column_term(coding: MixedFrames, queries: Coded, candidates: Coded, column: str, out: np.ndarray) -> np.ndarray:
    """One column's term of the distance, queries (rows of ``out``) against candidates (its columns)."""
    q = queries.values[column][:, None]
    c = candidates.values[column][None, :]
    if not coding.numeric[column]:
        np.not_equal(q, c, out=out, casting="unsafe")
        return out
    np.subtract(q, c, out=out)
    np.abs(out, out=out)
    if coding.missing[column]:
        gap = np.isnan(out)
        out[gap] = 1.0
        both = np.isnan(q[:, 0])[:, None] & np.isnan(c[0])[None, :]
        out[both] = 0.0
    return out


def distance_blocks(
    coding: MixedFrames, queries: Coded, candidates: Coded, columns: Sequence[str]
) -> Iterator[tuple[slice, np.ndarray]]:
    """The distances over ``columns`` of blocks of query rows to every candidate: ``(rows, matrix)`` pairs.

    The matrix (rows x candidates, float32) is a buffer reused by the next block: reduce it before asking for
    the next one (the caller may overwrite it).
    """
    columns = list(columns)
    if not columns:
        raise ValueError("at least one column is needed for a distance")
    n = candidates.rows
    if n == 0:
        raise ValueError("there are no candidate records")
    one_hot = [c for c in columns if not coding.numeric[c] and coding.levels[c] <= ONE_HOT_LEVELS]
    others = [c for c in columns if c not in one_hot]
    if one_hot:
        hq = _one_hot(queries, one_hot, coding.levels)
        hc = _one_hot(candidates, one_hot, coding.levels).T
    block = max(1, min(queries.rows, BLOCK_ELEMENTS // n))
    distance = np.empty((block, n), dtype=np.float32)
    term = np.empty((block, n), dtype=np.float32) if others else distance
    for start in range(0, queries.rows, block):
        stop = min(start + block, queries.rows)
        d = distance[: stop - start]
        rows = queries.take(np.arange(start, stop))
        if one_hot:
            np.matmul(hq[start:stop], hc, out=d)  # agreements on the one-hot columns
            np.subtract(np.float32(len(one_hot)), d, out=d)
        else:
            d.fill(0.0)
        for column in others:
            d += column_term(coding, rows, candidates, column, term[: stop - start])
        yield slice(start, stop), d


def pick_nearest(d: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Per row of a distance matrix, the column of its smallest distance: among ties the first (``rng`` None) or
    one drawn uniformly at random, independently for each row."""
    choice = d.argmin(axis=1)
    if rng is None:
        return choice
    best = d[np.arange(d.shape[0]), choice]
    tie = d == best[:, None]
    count = np.count_nonzero(tie, axis=1)
    many = np.flatnonzero(count > 1)
    if many.size:
        draw = rng.integers(count[many])
        position = np.cumsum(tie[many], axis=1, dtype=np.int32)
        choice[many] = np.argmax(position > draw[:, None], axis=1)
    return choice


def nearest(
    coding: MixedFrames,
    queries: Coded,
    candidates: Coded,
    columns: Sequence[str],
    k: int = 1,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The ``k`` nearest candidates of every query record over ``columns`` (query rows x k indices, nearest
    first). Ties go to the first candidate in order, or, given ``rng``, to one drawn at random for each query
    (:func:`pick_nearest`).

    Examples
    --------
    >>> frames = [pd.DataFrame({"x": [0.0, 5.0], "c": ["a", "b"]}),
    ...           pd.DataFrame({"x": [1.0, 4.0, 10.0], "c": ["b", "b", "a"]})]
    >>> coding = MixedFrames(frames, ["x", "c"])
    >>> nearest(coding, coding[0], coding[1], ["x", "c"], k=2).tolist()  # x scaled by the range 10
    [[2, 0], [1, 0]]
    >>> nearest(coding, coding[0], coding[1], ["x"]).tolist()
    [[0], [1]]
    """
    k = min(int(k), candidates.rows)
    if k < 1:
        raise ValueError("k must be at least 1")
    out = np.empty((queries.rows, k), dtype=np.int64)
    for rows, d in distance_blocks(coding, queries, candidates, columns):
        index = np.arange(d.shape[0])
        for j in range(k):
            best = pick_nearest(d, rng)
            out[rows, j] = best
            d[index, best] = np.inf
    return out


def two_nearest_distances(coding: MixedFrames, queries: Coded, candidates: Coded, columns: Sequence[str]) -> np.ndarray:
    """The two smallest distances over ``columns`` of every query record to the candidates (query rows x 2,
    float64; the second is ``inf`` when there is one candidate)."""
    out = np.full((queries.rows, 2), np.inf)
    for rows, d in distance_blocks(coding, queries, candidates, columns):
        if d.shape[1] == 1:
            out[rows, 0] = d[:, 0]
        else:
            out[rows] = np.partition(d, 1, axis=1)[:, :2]
    return out


def concat(parts: Sequence[Coded]) -> Coded:
    """Records of several :class:`Coded` one after another (same coding)."""
    columns = parts[0].values.keys()
    return Coded({c: np.concatenate([p.values[c] for p in parts]) for c in columns}, sum(p.rows for p in parts))
