"""The release figures of one partially synthetic categorical dataset, fast enough for hundreds of datasets.

The release gate (:mod:`bayessdc.synthesis.release_gate`) needs every figure an agency reads before
releasing, for every gate dataset of every chain: the identification measures per knowledge set (Hu &
Savitsky eq. 15-17), the exact attribute disclosures (eq. 18), the sums of absolute deviations of the one-,
two- and three-way tables involving the synthesized columns (Table 2), and the pMSE. The functions of
:mod:`bayessdc.risk.identification` and :mod:`bayessdc.synthesis.categorical` compute the same figures from
data frames, grouping the records anew for every dataset and table. Here every column is coded once to
integers, every table and knowledge set becomes one integer key per record, and a dataset costs a few
``bincount`` passes; the pMSE is fitted on the distinct cells with their counts as weights
(:func:`bayessdc.synthesis.categorical.weighted_pmse`, the same fit :func:`~bayessdc.synthesis.categorical.pmse`
makes). Measured on the CE-like data: see :class:`CategoricalReleaseFigures`. A test checks that
both give the same figures.

With survey weights (``survey_weights=``, scaled to sum to n), the pMSE is weighted: each distinct (cell,
indicator) row carries the sum of its records' weights, so ``pMSE = sum_i w_i (p_i - c)^2 / sum_i w_i`` with the
propensities of a weighted logistic regression; its null expectation is Snoke et al.'s times Kish's design effect
``n sum w^2 / (sum w)^2`` (an approximation of ours: the variance of a weighted estimate grows by about that
factor). The identification figures and table deviations count records, unweighted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.synthesis.categorical import pmse_model, tables_involving, weighted_pmse

from .identification import (
    IDENTIFICATION_MEASURES,
    identification_from_cells,
    identification_from_counts,
    identification_from_keys,
    key_parts,
)

__all__ = ["CategoricalReleaseFigures", "CellLayout", "MeasuredDatasets"]

_WAY_NAMES = {1: "one-way", 2: "two-way", 3: "three-way", 4: "four-way"}


@dataclass
class MeasuredDatasets:
    """The m datasets measured by :meth:`CategoricalReleaseFigures.measure_datasets`.

    Attributes
    ----------
    figures
        One row per dataset: every figure of :meth:`CategoricalReleaseFigures.of_codes` with ``details``.
    exact
        Per record, the datasets in which all its synthesized values are its true ones.
    match_risk
        Per knowledge set and record, the sum over the datasets of ``T_i / c_i``.
    m
        The datasets.
    source
        The :class:`CategoricalReleaseFigures` that measured them (its original, knowledge sets and tables).
    """

    figures: pd.DataFrame
    exact: np.ndarray
    match_risk: dict[str, np.ndarray]
    m: int
    source: CategoricalReleaseFigures


@dataclass(frozen=True)
class CellLayout:
    """What :meth:`CategoricalReleaseFigures.of_cell_counts` reads of datasets given as counts per cell
    (:meth:`CategoricalReleaseFigures.cell_layout`): C cells of identical original records, V joint values of the
    synthesized columns.

    Attributes
    ----------
    records
        ``(C,)`` each cell's records.
    full_key
        ``(C, V)`` the full table's cell of a record of the cell taking the value.
    target
        Per knowledge set, ``(C,)`` the cell of its table holding the cell's true known values.
    own
        Per knowledge set, ``(C, V)`` whether the value's known synthesized columns are the cell's own (``T_i``).
    exact
        ``(C, V)`` whether every synthesized column of the value is the cell's own.
    """

    records: np.ndarray
    full_key: np.ndarray
    target: dict[str, np.ndarray]
    own: dict[str, np.ndarray]
    exact: np.ndarray


class CategoricalReleaseFigures:
    """Per-dataset release figures of partially synthetic categorical data.

    Parameters
    ----------
    original
        The confidential records: the kept and synthesized columns.
    synthesize, keep
        The synthesized and the kept columns.
    known_sets
        The intruder's knowledge sets.
    ways
        Orders of the deviation tables.
    pmse
        Whether to compute the pMSE (a weighted logistic regression per dataset: the costliest figure).

    Notes
    -----
    Figure names: ``expected_match_risk[<known>]``, ``true_match_rate[<known>]``, ``false_match_rate[<known>]``
    (``<known>`` the columns joined by ``+``), ``attribute_disclosures``, ``table_deviation[one-way]`` ...,
    ``pmse``. ``bench/release_figures.py`` measures the cost per dataset against the data-frame functions (the
    figures in the README, "Measured choices in the code").
    """

    def __init__(
        self,
        original: pd.DataFrame,
        synthesize: Sequence[str],
        keep: Sequence[str],
        known_sets: Sequence[Sequence[str]],
        *,
        ways: Sequence[int] = (1, 2, 3),
        pmse: bool = True,
        survey_weights: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        self.synthesize, self.keep = list(synthesize), list(keep)
        #: The records' survey weights scaled to sum to n (``None``: unweighted); the same records, so the same
        #: weights, in every partially synthetic dataset.
        self.survey_weights = None
        if survey_weights is not None:
            w = np.asarray(survey_weights, dtype=float)
            self.survey_weights = w * len(w) / w.sum()
        self.known_sets = [list(k) for k in known_sets]
        self.columns = self.keep + self.synthesize
        self.original = original[self.columns].reset_index(drop=True)
        self.n = len(self.original)
        self.with_pmse = pmse
        self.levels: dict[str, pd.Index] = {}
        self.codes: dict[str, np.ndarray] = {}
        self._key_parts: dict[tuple[str, ...], tuple[np.ndarray, list[tuple[str, int]]]] = {}
        self._dense: dict[tuple[str, ...], np.ndarray] = {}  # the original's counts of every dense table
        for col in self.columns:
            codes, uniques = pd.factorize(self.original[col], sort=True, use_na_sentinel=False)
            self.levels[col] = pd.Index(uniques)
            self.codes[col] = codes.astype(np.int64)
        self.known_keys = {"+".join(k): (k, *self._original_key(k)) for k in self.known_sets}
        self.tables = {
            way: [
                (combo, *self._original_key(combo, counts=True))
                for combo in tables_involving(self.synthesize, self.keep, way)
            ]
            for way in ways
        }
        self.cell_key, self.cell_sizes = self._original_key(self.columns, counts=False)[:2]
        self.cell_counts = self._counts(self.cell_key, self.cell_sizes)

    # ----------------------------------------------------------------------------------------------
    def _sizes(self, columns: Sequence[str]) -> list[int]:
        return [max(len(self.levels[c]), 1) for c in columns]

    def _key(self, columns: Sequence[str], codes: dict[str, np.ndarray]) -> np.ndarray:
        """``np.ravel_multi_index`` of the columns' codes (C order), as the kept columns' part, computed once, plus
        each synthesized column's codes times its stride: the same integers at a third of the cost (1,000,000
        records: 2.5 ms against 7 ms). The kept columns' codes are always the original's (``codes`` gives the
        synthesized ones)."""
        combo = tuple(columns)
        parts = self._key_parts.get(combo)
        if parts is None:
            sizes = self._sizes(columns)
            if float(np.prod(np.asarray(sizes, dtype=float))) >= 2**62:
                raise ValueError(f"the table over {', '.join(columns)} has too many cells for integer keys")
            parts = self._key_parts[combo] = key_parts(columns, sizes, self.codes, self.synthesize)
        base, varying = parts
        key = base
        for column, stride in varying:
            key = key + (codes[column] * stride if stride != 1 else codes[column])
        return key if varying else base.copy()

    def _dense_pass(self, codes: dict[str, np.ndarray]) -> tuple[dict[tuple[str, ...], np.ndarray], dict[str, Any]]:
        """One dataset's counts of every table and the identification figures of every knowledge set, from one
        count of the full table over all the columns: every other table is a margin of it (a sum over the other
        columns' axes), so a dataset costs one ``bincount`` pass over its records, a gather per knowledge set and
        sums over a few thousand cells (1,000,000 CE-like records: a dataset's figures in 30 ms against 64 ms table
        by table, ``bench/release_figures.py``). Empty (the figures table by table) when the full table is too large to
        count densely. The same integers, so the same figures as :meth:`_counts` and
        :func:`~bayessdc.risk.identification.identification_from_keys`."""
        if not self.counts_densely:
            return {}, {}
        cells = int(np.prod(np.asarray(self.cell_sizes, dtype=float)))
        tables = self._margins(np.bincount(self._key(self.columns, codes), minlength=cells))
        identification = {
            name: identification_from_counts(*self._matches(name, codes, tables))
            for name, (known, _, _) in self.known_keys.items()
            if tuple(known) in tables
        }
        return tables, identification

    @property
    def counts_densely(self) -> bool:
        """Whether the full table is small enough to count densely (at most ``4 n + 1,000,000`` cells)."""
        return bool(self.n) and float(np.prod(np.asarray(self.cell_sizes, dtype=float))) <= 4 * self.n + 1_000_000

    def _margins(self, full: np.ndarray) -> dict[tuple[str, ...], np.ndarray]:
        """Every table the figures read (the knowledge sets' and the deviation tables), as sums of the dense
        counts of the full table over the other columns' axes, each raveled in its own columns' order."""
        full = full.reshape(self.cell_sizes)
        combos = [tuple(k) for k, _, _ in self.known_keys.values()]
        combos += [tuple(combo) for tables in self.tables.values() for combo, _, _ in tables]
        tables = {tuple(self.columns): full.ravel()}
        for combo in dict.fromkeys(combos):
            if combo in tables or not set(combo) <= set(self.columns):
                continue
            axes = [self.columns.index(c) for c in combo]
            summed = full.sum(axis=tuple(a for a in range(len(self.columns)) if a not in axes))
            # the summed array's axes are the combo's columns in the order of self.columns; the key's order is combo's
            tables[combo] = np.transpose(summed, np.argsort(np.argsort(axes))).ravel()
        return tables

    def _same(self, codes: dict[str, np.ndarray], columns: Sequence[str]) -> np.ndarray:
        """Per record: its synthesized values among ``columns`` all equal its true ones."""
        same = np.ones(self.n, dtype=bool)
        for col in self.synthesize:
            if col in columns:
                same &= codes[col] == self.codes[col]
        return same

    def _matches(
        self, name: str, codes: dict[str, np.ndarray], tables: dict[tuple[str, ...], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``c_i`` and ``T_i`` of every record for knowledge set ``name``: from the dataset's dense counts of its
        table when counted (``T_i``: the record's synthesized known values are its own), else from its keys."""
        known, target, _ = self.known_keys[name]
        counts = tables.get(tuple(known))
        if counts is not None:
            return counts[target], self._same(codes, known)
        target, released = self._match_keys(name, codes)
        return np.bincount(released, minlength=int(max(target.max(), released.max())) + 1)[target], target == released

    def _original_key(self, columns: Sequence[str], counts: bool = False) -> tuple[np.ndarray, ...]:
        key = self._key(columns, self.codes)
        if not counts:
            return key, self._sizes(columns)
        return key, self._counts(key, self._sizes(columns))

    def _counts(self, key: np.ndarray, sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The distinct keys in order and their counts: one ``bincount`` pass when the table is not much
        larger than the records (at 1,000,000 records 5 ms against 80 ms for sorting), else by sorting."""
        cells = int(np.prod(np.asarray(sizes, dtype=float)))
        if cells <= 4 * self.n + 1_000_000:
            counts = np.bincount(key, minlength=cells)
            present = np.flatnonzero(counts)
            return present, counts[present]
        return np.unique(key, return_counts=True)

    def names(self) -> list[str]:
        """The figures computed per dataset, in order."""
        out = [f"{m}[{k}]" for k in self.known_keys for m in (*IDENTIFICATION_MEASURES, "unique_matches")]
        out.append("attribute_disclosures")
        out += [f"table_deviation[{_WAY_NAMES.get(w, f'{w}-way')}]" for w in self.tables]
        out.append("within_pattern_tv")
        if self.with_pmse:
            out += ["pmse", "pmse_ratio"]
        return out

    # ----------------------------------------------------------------------------------------------
    def synthetic_codes(self, dataset: pd.DataFrame) -> dict[str, np.ndarray]:
        """Codes of every column of one synthetic dataset (same records, same order as the original)."""
        if len(dataset) != self.n:
            raise ValueError(f"a synthetic dataset holds {len(dataset)} records, the original {self.n}")
        codes = dict(self.codes)
        for col in self.synthesize:
            code = self.levels[col].get_indexer(dataset[col].to_numpy())
            if (code < 0).any():
                bad = dataset[col].to_numpy()[code < 0][0]
                raise ValueError(f"synthetic column {col!r} holds {bad!r}, a value the original never takes")
            codes[col] = code.astype(np.int64)
        return codes

    def of_dataset(self, dataset: pd.DataFrame, details: bool = False) -> dict[str, float]:
        """Every figure of one synthetic dataset (see the class notes for the names; :meth:`of_codes`)."""
        return self.of_codes(self.synthetic_codes(dataset), details)

    def recoding(self, column: str, levels: Sequence[Any]) -> np.ndarray:
        """For a synthesized column coded over ``levels`` elsewhere (a synthesizer's coding), the code of every
        level here (-1 for a level the original never takes): ``recoding(column, levels)[codes]`` are codes for
        :meth:`of_codes`."""
        return self.levels[column].get_indexer(pd.Index(levels)).astype(np.int64)

    def _checked(self, synthesized: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The codes of every column of a dataset whose synthesized columns' codes are given (checked)."""
        codes = dict(self.codes)
        for col in self.synthesize:
            code = np.asarray(synthesized[col], dtype=np.int64)
            if len(code) != self.n:
                raise ValueError(f"a synthetic dataset holds {len(code)} records, the original {self.n}")
            if code.size and (code.min() < 0 or code.max() >= len(self.levels[col])):
                raise ValueError(f"synthetic column {col!r} holds a value the original never takes")
            codes[col] = code
        return codes

    def _match_keys(self, name: str, codes: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Keys of the known values of knowledge set ``name``: every record's true ones and its released ones."""
        known, target, sizes = self.known_keys[name]
        released = self._key(known, codes)
        if float(np.prod(np.asarray(sizes, dtype=float))) > 4 * self.n + 1_000_000:  # dense keys first
            inverse = np.unique(np.concatenate([target, released]), return_inverse=True)[1].ravel()
            target, released = inverse[: self.n], inverse[self.n :]
        return target, released

    def record_risk(self, synthesized: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per record of one dataset (synthesized columns' codes as in :meth:`of_codes`): ``exact`` (every
        synthesized value its true one) and, per knowledge set, ``match_risk[<known>]``: ``T_i / c_i`` (0 when
        ``T_i = 0``), as :func:`bayessdc.risk.identification.match_counts` gives ``c`` and ``T``."""
        codes = self._checked(synthesized)
        return self._record_risk(codes, self._dense_pass(codes)[0])

    def _record_risk(self, codes: dict[str, np.ndarray], tables: dict[tuple[str, ...], np.ndarray]) -> dict[str, Any]:
        out = {"exact": self._same(codes, self.synthesize)}
        for name in self.known_keys:
            c, own = self._matches(name, codes, tables)
            out[f"match_risk[{name}]"] = np.where(own, 1.0 / np.maximum(c, 1), 0.0)
        return out

    def _deviation(
        self, columns: Sequence[str], codes: dict[str, np.ndarray], original: tuple[np.ndarray, np.ndarray],
        counted: np.ndarray | None = None,
    ) -> float:  # fmt: skip
        """Sum over the cells of the table over ``columns`` of ``|synthetic - original|`` counts (``original``:
        the original's occupied cells and counts; ``counted``: the dataset's dense counts, when counted). A table
        not much larger than the records is compared densely, a larger one over the union of the occupied cells."""
        sizes = self._sizes(columns)
        cells = int(np.prod(np.asarray(sizes, dtype=float)))
        if cells <= 4 * self.n + 1_000_000:
            dense = self._dense.get(tuple(columns))
            if dense is None:
                dense = self._dense[tuple(columns)] = np.bincount(original[0], original[1], minlength=cells)
            if counted is None:
                counted = np.bincount(self._key(columns, codes), minlength=cells)
            return float(np.abs(counted - dense).sum())
        synthetic_cells, synthetic_counts = self._counts(self._key(columns, codes), sizes)
        union = np.union1d(original[0], synthetic_cells)
        before = np.zeros(len(union))
        before[np.searchsorted(union, original[0])] = original[1]
        after = np.zeros(len(union))
        after[np.searchsorted(union, synthetic_cells)] = synthetic_counts
        return float(np.abs(after - before).sum())

    def of_codes(self, synthesized: dict[str, np.ndarray], details: bool = False) -> dict[str, float]:
        """Every figure of one synthetic dataset given the codes of its synthesized columns (in this object's
        coding, :attr:`levels`; the kept columns are the original's), without a data frame: the release gate's
        path (:meth:`recoding` translates a synthesizer's codes). ``details``: also every table's deviation,
        ``table_deviation[<a x b>]``, and the pMSE's ``pmse_parameters`` and ``pmse_null_expectation``."""
        codes = self._checked(synthesized)
        return self._figures(codes, self._dense_pass(codes), details)

    def cell_layout(
        self, cells: dict[str, tuple[Sequence[Any], np.ndarray]], values: dict[str, tuple[Sequence[Any], np.ndarray]],
        records: np.ndarray,
    ) -> CellLayout:  # fmt: skip
        """What :meth:`of_cell_counts` reads of datasets given as counts per cell: ``cells`` every column's code in
        every cell of identical original records and ``values`` each synthesized column's code in every joint
        value, both ``{column: (levels, codes)}`` in a synthesizer's coding (:meth:`recoding` translates them;
        :class:`bayessdc.models.base.SyntheticCellCounts`), ``records`` each cell's records. Refused, naming the
        column, when a level is not the original's or the cells are not the original's records."""
        if self.survey_weights is not None:
            raise ValueError("datasets as counts per cell have no per-record survey weights: measure their codes")
        if not self.counts_densely:
            raise ValueError("the full table is too large to count densely: measure the datasets' codes")
        records = np.asarray(records, dtype=np.int64)

        def coded(column: str, given: tuple[Sequence[Any], np.ndarray]) -> np.ndarray:
            levels, codes = given
            out = self.recoding(column, levels)[np.asarray(codes, dtype=np.int64)]
            if (out < 0).any():
                raise ValueError(f"column {column!r} holds a value the original never takes")
            return out

        cell = {c: coded(c, cells[c]) for c in self.columns}
        value = {c: coded(c, values[c]) for c in self.synthesize}
        # the full table's key of a (cell, value) pair: the cell's kept part plus the value's synthesized part
        kept, moving = key_parts(self.columns, self._sizes(self.columns), cell, self.synthesize)
        n_values = len(value[self.synthesize[0]])
        varying = sum((value[c] * stride for c, stride in moving), np.zeros(n_values, dtype=np.int64))
        original = kept + sum((cell[c] * stride for c, stride in moving), np.zeros(len(records), dtype=np.int64))
        full = np.bincount(original, weights=records, minlength=int(np.prod(self._sizes(self.columns))))
        present = np.flatnonzero(full)
        if not (np.array_equal(present, self.cell_counts[0]) and np.array_equal(full[present], self.cell_counts[1])):
            raise ValueError("the cells' records are not the original records of these figures")
        same = {c: value[c][None, :] == cell[c][:, None] for c in self.synthesize}  # (C, V): a value is the cell's own
        target, own = {}, {}
        for name, (known, _, known_sizes) in self.known_keys.items():
            target[name] = key_parts(known, known_sizes, cell, ())[0]  # the cell's true known values' key
            mine = [same[c] for c in self.synthesize if c in known]
            own[name] = np.logical_and.reduce(mine) if mine else np.ones((len(records), n_values), dtype=bool)
        return CellLayout(
            records=records, full_key=kept[:, None] + varying[None, :], target=target,
            own=own,
            exact=np.logical_and.reduce([same[c] for c in self.synthesize]),
        )  # fmt: skip

    def of_cell_counts(self, layout: CellLayout, counts: np.ndarray, details: bool = False) -> dict[str, float]:
        """Every figure of one dataset given as counts per cell (``counts`` ``(C, V)``, records of each cell taking
        each joint value, :meth:`cell_layout`), the same as :meth:`of_codes` of any dataset with those counts
        (the integers equal, the expected match risk to the last bits: it is summed by cell); cheaper than from the
        codes where there are fewer (cell, value) pairs than records (README, "Measured choices in the code")."""
        counts = np.asarray(counts)
        if counts.shape != layout.full_key.shape or not np.array_equal(counts.sum(axis=1), layout.records):
            raise ValueError(f"counts of shape {counts.shape} do not hold each cell's records {layout.full_key.shape}")
        cells = int(np.prod(np.asarray(self.cell_sizes, dtype=float)))
        full = np.bincount(layout.full_key.ravel(), weights=counts.ravel(), minlength=cells).astype(np.int64)
        tables = self._margins(full)
        identified = {
            name: identification_from_cells(
                tables[tuple(known)][layout.target[name]], (counts * layout.own[name]).sum(axis=1), layout.records
            )
            for name, (known, _, _) in self.known_keys.items()
        }
        disclosures = int((counts * layout.exact).sum())
        return self._figures(None, (tables, identified), details, disclosures=disclosures)

    def _figures(
        self, codes: dict[str, np.ndarray] | None, dense: tuple[dict[tuple[str, ...], np.ndarray], dict[str, Any]],
        details: bool, disclosures: int | None = None,
    ) -> dict[str, float]:  # fmt: skip
        """:meth:`of_codes` of checked codes with their :meth:`_dense_pass` (``codes`` ``None``: a dataset given by
        its counts, whose tables and identification figures are all in ``dense``, with its ``disclosures``)."""
        counted, identified = dense
        out: dict[str, float] = {}
        for name in self.known_keys:
            measures = identified.get(name) or identification_from_keys(*self._match_keys(name, codes))
            for measure in IDENTIFICATION_MEASURES:
                out[f"{measure}[{name}]"] = measures[measure]
            out[f"unique_matches[{name}]"] = float(measures["unique_matches"])
        if disclosures is None:
            disclosures = int(self._same(codes, self.synthesize).sum())
        out["attribute_disclosures"] = float(disclosures)
        for way, tables in self.tables.items():
            total = 0.0
            for combo, _, original_cells in tables:
                deviation = self._deviation(combo, codes, original_cells, counted.get(tuple(combo)))
                total += deviation
                if details:
                    out[f"table_deviation[{' x '.join(combo)}]"] = deviation
            out[f"table_deviation[{_WAY_NAMES.get(way, f'{way}-way')}]"] = total
        # the share of records whose synthesized values would have to change to give every pattern of kept
        # values its original distribution: total variation of the full table (the patterns' sizes are kept)
        changed = self._deviation(self.columns, codes, self.cell_counts, counted.get(tuple(self.columns)))
        out["within_pattern_tv"] = float(changed / (2 * self.n)) if self.n else float("nan")
        if self.with_pmse:
            fit = self._pmse(codes, counted.get(tuple(self.columns)))
            out["pmse"] = fit["pmse"]
            out["pmse_ratio"] = fit["ratio"]  # not a gate figure: the pMSE over its null expectation
            if details:
                out["pmse_parameters"] = float(fit["parameters"])
                out["pmse_null_expectation"] = fit["null_expectation"]
        return out

    def _pmse(self, codes: dict[str, np.ndarray], counted: np.ndarray | None = None) -> dict[str, Any]:
        """The pMSE fit (:func:`~bayessdc.synthesis.categorical.weighted_pmse`) on the distinct (cell, indicator)
        rows with their counts as weights (``counted``: the dataset's dense counts of the full table)."""
        rows, weights, labels = [], [], []
        for label in (0, 1):
            if self.survey_weights is not None:  # the survey weights of each cell's records in place of their count
                key = self.cell_key if label == 0 else self._key(self.columns, codes)
                cells, inverse = np.unique(key, return_inverse=True)
                counts = np.bincount(inverse.ravel(), weights=self.survey_weights, minlength=len(cells))
            elif label == 0:
                cells, counts = self.cell_counts
            elif counted is not None:
                cells = np.flatnonzero(counted)
                counts = counted[cells]
            else:
                cells, counts = self._counts(self._key(self.columns, codes), self.cell_sizes)
            rows.append(cells)
            weights.append(counts)
            labels.append(np.full(len(cells), label))
        cells, labels, weights = np.concatenate(rows), np.concatenate(labels), np.concatenate(weights)
        # the rows in the order of pmse()'s grouping (columns, then indicator): the same fit to the last digit
        order = np.lexsort((labels, cells))
        cells, labels, weights = cells[order], labels[order], weights[order]
        decoded = np.unravel_index(cells, self.cell_sizes)
        frame = pd.DataFrame({c: decoded[i] for i, c in enumerate(self.columns)})  # codes: the same partition
        fit = weighted_pmse(frame, labels, weights, self.synthesize)
        if self.survey_weights is not None:  # Kish's design effect on the null expectation (an approximation)
            design_effect = float(np.mean(self.survey_weights**2))  # n sum w^2 / (sum w)^2 with sum w = n
            fit["null_expectation"] *= design_effect
            fit["ratio"] = fit["pmse"] / fit["null_expectation"]
        return fit

    def by_dataset(self, synthetic: pd.DataFrame, by: str = "synthetic", details: bool = False) -> pd.DataFrame:
        """The figures of every dataset of a long table (one row per dataset, a column ``by``; ``details`` as
        :meth:`of_codes`)."""
        rows = []
        for number, frame in synthetic.groupby(by, sort=True):
            rows.append({by: number, **self.of_dataset(frame.reset_index(drop=True), details)})
        return pd.DataFrame(rows)

    def table_deviations(self, figures: pd.DataFrame) -> dict[str, Any]:
        """What :func:`bayessdc.synthesis.categorical.table_deviations` gives (per order: ``mean``,
        ``per_dataset``, ``tables``), from the figures of :meth:`by_dataset` with ``details=True``."""
        out: dict[str, Any] = {}
        for way, tables in self.tables.items():
            if not tables:
                continue
            total = figures[f"table_deviation[{_WAY_NAMES.get(way, f'{way}-way')}]"].to_numpy(dtype=float)
            out[_WAY_NAMES.get(way, f"{way}-way")] = {
                "mean": float(total.mean()),
                "per_dataset": [float(v) for v in total],
                "tables": {
                    " x ".join(combo): float(figures[f"table_deviation[{' x '.join(combo)}]"].mean())
                    for combo, _, _ in tables
                },
            }
        return out

    def pmse_summary(self, figures: pd.DataFrame) -> dict[str, Any]:
        """What :func:`bayessdc.synthesis.categorical.pmse` gives, from the figures of :meth:`by_dataset` with
        ``details=True`` (the same fit on the same rows: equal to the last digits, see its test)."""
        per_dataset = {
            "pmse": figures["pmse"].astype(float).tolist(),
            "ratio": figures["pmse_ratio"].astype(float).tolist(),
            "parameters": figures["pmse_parameters"].astype(int).tolist(),
            "null_expectation": figures["pmse_null_expectation"].astype(float).tolist(),
        }
        return {
            "pmse": float(np.mean(per_dataset["pmse"])),
            "ratio": float(np.mean(per_dataset["ratio"])),
            "per_dataset": per_dataset,
            "null_expectation": float(np.mean(per_dataset["null_expectation"])),
            "model": pmse_model(self.columns, self.synthesize),
        }

    def measure_datasets(self, synthetic: pd.DataFrame, by: str = "synthetic") -> MeasuredDatasets:
        """Every dataset of a long table measured in one pass: its figures with ``details`` (one row per dataset,
        a column ``by``) and, per record, the sums over the datasets of ``exact`` and of each knowledge set's
        ``match_risk`` (:meth:`record_risk`)."""
        rows = []
        exact = np.zeros(self.n)
        match_risk = {name: np.zeros(self.n) for name in self.known_keys}
        for number, frame in synthetic.groupby(by, sort=True):
            codes = self.synthetic_codes(frame.reset_index(drop=True))
            dense = self._dense_pass(codes)
            rows.append({by: number, **self._figures(codes, dense, details=True)})
            at_risk = self._record_risk(codes, dense[0])
            exact += at_risk["exact"]
            for name, total in match_risk.items():
                total += at_risk[f"match_risk[{name}]"]
        return MeasuredDatasets(pd.DataFrame(rows), exact, match_risk, len(rows), self)

    def risk_by_dataset(self, synthetic: pd.DataFrame, by: str = "synthetic") -> pd.DataFrame:
        """The identification and attribute figures of every dataset in the long form of
        :func:`bayessdc.risk.identification.risk_by_dataset` (its data-frame oracle): one row per (dataset,
        knowledge set), columns ``by``, ``known``, the three measures, ``unique_matches``, ``disclosures``
        and ``share``."""
        return self.risk_table(self.by_dataset(synthetic, by), by)

    def risk_table(self, figures: pd.DataFrame, by: str = "synthetic") -> pd.DataFrame:
        """:meth:`risk_by_dataset` from the figures of :meth:`by_dataset` (one row per dataset)."""
        rows = []
        for wide in figures.to_dict(orient="records"):  # each column keeps its type
            for name in self.known_keys:
                rows.append({
                    by: wide[by], "known": name, **{m: float(wide[f"{m}[{name}]"]) for m in IDENTIFICATION_MEASURES},
                    "unique_matches": int(wide[f"unique_matches[{name}]"]),
                    "disclosures": int(wide["attribute_disclosures"]),
                    "share": float(wide["attribute_disclosures"]) / self.n if self.n else float("nan"),
                })  # fmt: skip
        return pd.DataFrame(rows)

    def describe(self) -> dict[str, Any]:
        """The figures in words, for the policy in ``release/model.json``."""
        return {
            "identification": {"known": [list(k) for k in self.known_sets], "measures": list(IDENTIFICATION_MEASURES)},
            "attribute": "exact disclosures (count)",
            "table_deviations": [_WAY_NAMES.get(w, f"{w}-way") for w in self.tables],
            "pmse": self.with_pmse,
        }
