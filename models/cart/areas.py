"""Synthesis area by area with the area itself synthesized: each record's columns drawn by its synthetic area's trees.

Issue 51, item 1: a release synthesized area by area (:mod:`bayessdc.models.cart.strata`) keeps every record in its
real area, so each area keeps its real number of records. Here the area is synthesized first. A Bayesian
categorical synthesizer (the DPMPM or the DP-areal model, fitted and gated in the recipe layer) draws each record's
area label, and with it some categorical *area columns*, given the record's kept values; this module's second stage
then draws the other synthesized columns of every record with the trees of its **synthetic** area, fitted on the
real records of that area's group (:class:`~bayessdc.models.cart.strata.StrataPlan`: the areas are the real ones,
so a pooled area is drawn by its pool's trees). The first stage's values play the part of kept values
(:meth:`~bayessdc.models.cart.synthesizer.CartSynthesizer.draw_given`), and synthetic dataset ``l`` of the second
stage reads dataset ``l`` of the first. Row ``i`` of every dataset is still record ``i``: its kept values real, its
area, area columns and synthesized columns drawn. An area's number of records in a dataset is the first stage's
draw; an area the first stage gives no record in a dataset draws nothing there.

The cross-fitted reference (:meth:`SynthesizedAreaCart.cross_fitted`, what the records-copied criteria read) is of
the second stage, given the release's own first-stage datasets: each row is drawn by trees of its synthetic area's
group that never held its record, from the group's folds when the record is one of the group's (each fold's trees
fitted without it, 40 folds by default as :mod:`bayessdc.models.cart.unlearned`), from the group's own trees when
it is not (they never saw it). The first stage's posterior is fitted on every record and is not refitted fold by
fold; its datasets are the same in the release and in its reference, so that a release copying more rows than its
reference copies them through its trees.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .strata import StratifiedCart
from .synthesizer import CartSynthesizer, TemplateSettings, one_by_one, summed_fallbacks
from .unlearned import FOLDS

__all__ = ["SynthesizedAreaCart"]

#: One group's draws: per dataset, the dataset's number, the kept values of the rows drawn (the first stage's values
#: among them) and each row's position among the group's records (-1: a record of another group).
_Draws = list[tuple[int, pd.DataFrame, np.ndarray]]
#: One group's rows: per dataset, its draws (:data:`_Draws`) and the rows' positions in the m datasets.
_Rows = list[tuple[int, pd.DataFrame, np.ndarray, np.ndarray]]


@dataclass
class _DrawGiven:
    """The task drawing a group's rows of every dataset given their kept and first-stage values (a part of
    :meth:`SynthesizedAreaCart.synthesize_datasets`): dataset ``l`` from the group's streams of ``l``, as the group's
    records are drawn in a release that keeps the area."""

    seeds: dict[str, int]

    def __call__(self, name: str, job: tuple[CartSynthesizer, _Draws]) -> tuple[list[pd.DataFrame], dict]:
        synthesizer, draws = job
        fallbacks: dict[str, dict[str, int]] = {}
        frames = []
        for k, kept, own in draws:
            rng = streams.rng(self.seeds[name], Stream.CART_DATASET, k)
            smoothing = streams.rng(self.seeds[name], Stream.CART_SMOOTHING, k)
            frames.append(synthesizer.draw_given(kept, rng, smoothing, fallbacks, own=own))
        return frames, fallbacks


@dataclass
class _CrossFitGiven:
    """The task drawing a group's rows of the cross-fitted release (a part of :meth:`SynthesizedAreaCart.cross_fitted`):
    the rows of the group's own records fold by fold, by trees fitted without the fold; the rows of other groups'
    records by the group's trees, which never saw them (one more fold, numbered after the last)."""

    folds: int

    def __call__(self, name: str, job: tuple[CartSynthesizer, pd.DataFrame, int, _Draws]) -> list[pd.DataFrame]:
        synthesizer, data, seed, draws = job
        n = len(data)
        folds = int(min(self.folds, n))
        if folds < 2:
            raise ValueError(f"cross-fitting group {name!r} needs at least 2 records, got {n}")
        fold_of = np.empty(n, dtype=np.int64)
        order = streams.rng(seed, Stream.CART_UNLEARNED, Stream.FOLDS).permutation(n)
        for k, held in enumerate(np.array_split(order, folds)):
            fold_of[held] = k
        drawn: list[dict[int, pd.DataFrame]] = [{} for _ in draws]
        for k in range(folds + 1):
            if k < folds:
                trees = dataclasses.replace(synthesizer)
                trees.fit(data, seed, learn=np.flatnonzero(fold_of != k))
            else:
                trees = synthesizer  # the records of other groups: this group's trees never saw them
            fold_seed = streams.integer_seed(seed, Stream.CART_UNLEARNED, k)
            for j, (dataset, kept, own) in enumerate(draws):
                if k < folds:  # the group's records of fold k
                    mine = np.flatnonzero((own >= 0) & (fold_of[np.maximum(own, 0)] == k))
                else:
                    mine = np.flatnonzero(own < 0)
                if not len(mine):
                    continue
                rng = streams.rng(fold_seed, Stream.CART_DATASET, dataset)
                smoothing = streams.rng(fold_seed, Stream.CART_SMOOTHING, dataset)
                drawn[j][k] = trees.draw_given(kept.iloc[mine], rng, smoothing).set_axis(mine)
        return [pd.concat(parts.values()).sort_index() for parts in drawn]


@dataclass
class SynthesizedAreaCart(TemplateSettings):
    """The within-area trees of :class:`StratifiedCart` drawing each record by its synthetic area's trees, given a
    first stage's datasets of the area and the area columns (see the module docstring); the interface of a
    :class:`CartSynthesizer` the recipe and the measures read.

    Parameters
    ----------
    stratified
        The trees area by area, their template keeping the area and the area columns (fitted by :meth:`fit`).
    columns
        The first stage's columns: the area (the plan's column) first, then the area columns.

    Notes
    -----
    ``keep`` are the columns released unchanged (the template's kept columns but the first stage's), ``synthesize``
    the first stage's columns and then the template's. The first stage's datasets are given by :meth:`with_areas`.
    """

    stratified: StratifiedCart
    columns: Sequence[str]
    fallbacks: dict[str, dict[str, int]] = field(default_factory=dict, init=False)

    #: Persons within households are not synthesized with the area synthesized.
    household = None
    units = None
    relabel = None

    def __post_init__(self) -> None:
        self.columns = [str(c) for c in self.columns]
        if not self.columns or self.columns[0] != self.stratified.plan.column:
            raise ValueError(f"the first stage's columns start with the area {self.stratified.plan.column!r}")
        missing = [c for c in self.columns if c not in self.stratified.template.keep]
        if missing:
            raise ValueError(f"the within-area trees must keep the first stage's columns, not {', '.join(missing)}")
        #: The first stage's datasets: ``synthetic`` and :attr:`columns`, the records in the data's order in each.
        self.areas: pd.DataFrame | None = None
        #: What is computed once from the fitted trees and the first stage's datasets, shared by every drawing.
        self.cache: dict[Any, Any] = {}
        self._frame: pd.DataFrame | None = None
        self._group = np.zeros(0, dtype=np.int64)
        self._position = np.zeros(0, dtype=np.int64)

    template = property(lambda self: self.stratified.template)
    fit_seconds = property(lambda self: self.stratified.fit_seconds)

    @property
    def keep(self) -> list[str]:
        """The columns released unchanged."""
        return [c for c in self.template.keep if c not in self.columns]

    @property
    def synthesize(self) -> list[str]:
        """The first stage's columns, then the columns the trees synthesize, in order."""
        return [*self.columns, *self.template.synthesize]

    def validate(self, data: pd.DataFrame) -> pd.DataFrame:
        """The released columns of ``data`` (:meth:`CartSynthesizer.validate`)."""
        return self.stratified.validate(data)

    def fit(self, data: pd.DataFrame, seed: int = 0, fan_out: Callable[..., Any] | None = None) -> SynthesizedAreaCart:
        """Fit every group's trees on its real records (:meth:`StratifiedCart.fit`); ``fan_out`` runs the groups."""
        self.stratified.fit(data, seed, fan_out)
        levels = self.stratified.levels
        self._frame = self.validate(data).astype({c: pd.CategoricalDtype(v) for c, v in levels.items()})
        n = len(self._frame)
        self._group, self._position = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        for i, rows in enumerate(self.stratified.group_rows.values()):
            self._group[rows], self._position[rows] = i, np.arange(len(rows))
        return self

    def with_areas(self, areas: pd.DataFrame) -> SynthesizedAreaCart:
        """These fitted trees drawing given the first stage's datasets ``areas`` (a column ``synthetic`` 1..m and
        :attr:`columns`, the records in the data's order in each dataset); the cache is shared.

        Raises
        ------
        ValueError
            Not ``m`` datasets of every record, or an area that is not one of the plan's.
        """
        self._check_fitted()
        n = len(self._frame)
        wanted = ["synthetic", *self.columns]
        if [c for c in wanted if c not in areas.columns] or not n or len(areas) % n:
            raise ValueError(f"the first stage's datasets need the columns {', '.join(wanted)}, every record in each")
        known = {v for values in self.stratified.plan.groups.values() for v in values}
        unknown = set(pd.unique(areas[self.columns[0]])) - known
        if unknown:
            raise ValueError(f"areas {sorted(map(str, unknown))} of the first stage are not areas of the data")
        other = copy.copy(self)
        other.areas = areas[wanted].reset_index(drop=True)
        return other

    def drawing(self, donors: str) -> SynthesizedAreaCart:
        """These trees drawing with other ``donors`` (:meth:`StratifiedCart.drawing`), the same first stage."""
        other = copy.copy(self)
        other.stratified = self.stratified.drawing(donors)
        return other

    def _areas(self, m: int) -> pd.DataFrame:
        self._check_fitted()
        if self.areas is None or len(self.areas) != m * len(self._frame):
            raise RuntimeError(f"give the first stage's {m} datasets first (with_areas)")
        return self.areas

    def _jobs(self, m: int) -> list[tuple[str, _Rows]]:
        """Per group, its rows of every dataset: their kept values (the first stage's in place of the record's) and
        their positions among the group's records."""
        areas, n = self._areas(m), len(self._frame)
        group_of = {v: i for i, values in enumerate(self.stratified.plan.groups.values()) for v in values}
        group = areas[self.columns[0]].map(group_of).to_numpy(dtype=np.int64)
        levels = self.stratified.levels
        jobs = []
        for i, name in enumerate(self.stratified.plan.groups):
            at = np.flatnonzero(group == i)
            draws = []
            for k in range(1, m + 1):
                rows = at[(at >= (k - 1) * n) & (at < k * n)]
                if not len(rows):
                    continue  # no record of this group's areas in dataset k
                records = rows - (k - 1) * n
                kept = self._frame.iloc[records][self.template.keep].reset_index(drop=True)
                for column in self.columns:
                    values = areas[column].to_numpy()[rows]
                    kept[column] = pd.Categorical(values, categories=levels[column]) if column in levels else values
                own = np.where(self._group[records] == i, self._position[records], -1)
                draws.append((k, kept, own, rows))
            jobs.append((name, draws))
        return jobs

    def _assembled(self, m: int, jobs: list[tuple[str, _Rows]], drawn: list[list[pd.DataFrame]]) -> pd.DataFrame:
        """The m datasets: ``synthetic``, then the released columns in the data's order (kept ones real, the first
        stage's and the drawn ones synthetic), every categorical column over the whole file's levels."""
        areas, frame, n = self._areas(m), self._frame, len(self._frame)
        every = np.tile(np.arange(n), m)
        parts = [part.set_axis(draw[3]) for (_, draws), frames in zip(jobs, drawn, strict=True)
                 for draw, part in zip(draws, frames, strict=True)]  # fmt: skip
        synthesized = pd.concat(parts).sort_index()
        out: dict[str, Any] = {"synthetic": np.repeat(np.arange(1, m + 1, dtype=np.int64), n)}
        for column in frame.columns:
            if column in self.columns:
                out[column] = areas[column].to_numpy()
            elif column in self.template.synthesize:
                out[column] = synthesized[column].to_numpy()
            else:
                out[column] = frame[column].to_numpy()[every]
        result = pd.DataFrame(out)
        for column, levels in self.stratified.levels.items():
            if column in result.columns:
                result[column] = pd.Categorical(result[column].astype(object), categories=levels)
        return result

    def synthesize_datasets(
        self, m: int, seed: int | None = None, fan_out: Callable[..., Any] | None = None
    ) -> pd.DataFrame:
        """The ``m`` synthetic datasets: each row drawn by its synthetic area's group's trees given its kept and
        first-stage values, dataset ``k`` from the group's streams of ``k`` (one part of ``fan_out`` per group).

        Returns
        -------
        pandas.DataFrame
            Columns ``synthetic`` then the released columns in the data's order, the records in the data's order in
            every dataset (row ``i``: record ``i``), as :meth:`StratifiedCart.synthesize_datasets` returns them.
        """
        seeds = self.stratified.group_seeds(seed)
        jobs = self._jobs(m)
        parts = self.stratified.parts
        tasks = [(name, (parts[name], [d[:3] for d in draws])) for name, draws in jobs if draws]
        results = iter((fan_out or one_by_one)(_DrawGiven(seeds), tasks))
        drawn, counts = [], []
        for _, draws in jobs:
            if draws:
                frames, fallbacks = next(results)
                drawn.append(frames)
                counts.append(fallbacks)
            else:
                drawn.append([])
        self.fallbacks = summed_fallbacks(counts)
        return self._assembled(m, jobs, drawn)

    def cross_fitted(
        self, data: pd.DataFrame, m: int, seed: int, folds: int = FOLDS, fan_out: Callable[..., Any] | None = None
    ) -> pd.DataFrame:
        """The cross-fitted release given the same first-stage datasets: each row drawn by trees of its synthetic
        area's group that never held its record (see the module docstring), one part of ``fan_out`` per group.

        Parameters
        ----------
        data
            The records the trees were fitted on (their group data is the fit's).
        m, seed
            The datasets (the first stage's ``m``) and the seed of the folds and draws (stream ``"cart-unlearned"``
            below each group's seed of ``seed``).
        folds
            Folds of each group's records.
        fan_out
            Runs the groups.

        Returns
        -------
        pandas.DataFrame
            As :meth:`synthesize_datasets`: the kept and first-stage values the release's, the drawn ones the
            cross-fit's.
        """
        seeds = self.stratified.group_seeds(seed)
        jobs = self._jobs(m)
        parts, rows = self.stratified.parts, self.stratified.group_rows
        tasks = [(name, (parts[name], self._frame.iloc[rows[name]].reset_index(drop=True), seeds[name],
                         [d[:3] for d in draws])) for name, draws in jobs if draws]  # fmt: skip
        results = iter((fan_out or one_by_one)(_CrossFitGiven(folds), tasks))
        drawn = [next(results) if draws else [] for _, draws in jobs]
        return self._assembled(m, jobs, drawn)

    def tree_summary(self) -> dict[str, Any]:
        """Per synthesized column over the groups (:meth:`StratifiedCart.tree_summary`), the fallbacks those of the
        last :meth:`synthesize_datasets`."""
        summary = self.stratified.tree_summary()
        for column, row in summary.items():
            row["fallbacks"] = self.fallbacks.get(column, {})
        return summary

    def group_summary(self) -> pd.DataFrame:
        """Per group: its areas, real records and its trees' leaves (private)."""
        return self.stratified.group_summary()

    def describe(self) -> dict[str, Any]:
        """The within-area trees' description, with no area's number of records: the kept columns those released
        unchanged, the plan's groups their areas only (each area's records in a dataset are the first stage's draw)."""
        description = self.stratified.describe()
        area, others = self.columns[0], self.columns[1:]
        strata = description["strata"]
        strata["groups"] = [{"group": g["group"], "strata": g["strata"]} for g in strata["groups"]]
        strata["records"] = ("drawn: each area's number of records in a dataset is the area model's draw, so no "
                             "area's count of records is stated")  # fmt: skip
        first = f"{area!r}" + (f" with {', '.join(map(repr, others))}" if others else "")
        description.update({
            "kind": "column-partially synthetic (Section 5): kept columns released unchanged; "
            f"{first} synthesized first by the area model, then the other synthesized columns of each record by the "
            "trees of its synthetic area, fitted on that area's (or its pool's) real records",
            "kept": self.keep,
            "area_synthesized": True,
        })  # fmt: skip
        return description

    @property
    def data(self) -> pd.DataFrame:
        """The released columns of the fitted data, in the data's order (confidential)."""
        return self.stratified.data

    def _check_fitted(self) -> None:
        if self._frame is None:
            raise RuntimeError("fit the synthesizer first")
