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

A record whose synthetic area's trees hold no value a rule admits given its kept and first-stage values (a child
placed in an area of no child, whose trees draw nothing but "employed", when the rules forbid a child's employment)
cannot be drawn there. Its first-stage draw is rejected and drawn again, as the households' compositions are
(:mod:`bayessdc.models.cart.households`): the recipe layer gives :meth:`SynthesizedAreaCart.with_areas` the area
model's draw of one record's area and area columns (:data:`AreaRedraw`, the record's posterior predictive under its
dataset's posterior draw, on a stream of its own), and the record's other columns are drawn again by its new area's
trees, at most :data:`MAX_REDRAWS` times (:meth:`SynthesizedAreaCart.synthesize_datasets`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .bootstrap import CartSynthesisError
from .strata import StratifiedCart, without_counts
from .synthesizer import CartSynthesizer, TemplateSettings, one_by_one, summed_fallbacks
from .unlearned import FOLDS

__all__ = ["MAX_REDRAWS", "AreaRedraw", "SynthesizedAreaCart"]

#: Most redraws of one record's first stage (its area and area columns) before its rules are declared unsatisfiable
#: in every area the area model draws for it.
MAX_REDRAWS = 100

#: The first stage drawn again for some records: ``redraw(k, records, attempt)`` -> the area and the area columns
#: (:attr:`SynthesizedAreaCart.columns`) of ``records`` (positions in the data) in dataset ``k``, in their order,
#: drawn for the ``attempt``-th time (1, 2, ...) from a stream of their own.
AreaRedraw = Callable[[int, np.ndarray, int], pd.DataFrame]

#: One group's draws: per dataset, the dataset's number, the kept values of the rows drawn (the first stage's values
#: among them) and each row's position among the group's records (-1: a record of another group).
_Draws = list[tuple[int, pd.DataFrame, np.ndarray]]
#: One group's rows: per dataset, its draws (:data:`_Draws`) and the rows' positions in the m datasets.
_Rows = list[tuple[int, pd.DataFrame, np.ndarray, np.ndarray]]


@dataclass
class _DrawGiven:
    """The task drawing a group's rows of every dataset given their kept and first-stage values (a part of
    :meth:`SynthesizedAreaCart.synthesize_datasets`): dataset ``l`` from the group's streams of ``l``, as the group's
    records are drawn in a release that keeps the area; the rows of a redraw (``attempt`` 1, 2, ...) from streams of
    their own below those. A row no value of a column admits under the rules is marked, not refused."""

    seeds: dict[str, int]
    attempt: int = 0

    def __call__(
        self, name: str, job: tuple[CartSynthesizer, _Draws]
    ) -> tuple[list[pd.DataFrame], dict, list[np.ndarray]]:
        synthesizer, draws = job
        fallbacks: dict[str, dict[str, int]] = {}
        frames, unmet = [], []
        tail = () if self.attempt == 0 else (self.attempt,)  # the first draw's streams are the dataset's own
        for k, kept, own in draws:
            rng = streams.rng(self.seeds[name], Stream.CART_DATASET, k, *tail)
            smoothing = streams.rng(self.seeds[name], Stream.CART_SMOOTHING, k, *tail)
            infeasible = np.zeros(len(kept), dtype=bool)
            frames.append(synthesizer.draw_given(kept, rng, smoothing, fallbacks, infeasible=infeasible, own=own))
            unmet.append(infeasible)
        return frames, fallbacks, unmet


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
    the first stage's columns and then the template's. The first stage's datasets are given by :meth:`with_areas`,
    with the first stage's draw of single records when a record's draw is rejected (:meth:`synthesize_datasets`).
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
        #: The first stage's datasets: ``synthetic`` and :attr:`columns`, the records in the data's order in each
        #: (after :meth:`synthesize_datasets`, with the records it drew again in their drawn areas).
        self.areas: pd.DataFrame | None = None
        #: The first stage's draw of single records again (:data:`AreaRedraw`); ``None``: a record none of whose
        #: synthetic area's values the rules admit is refused at once.
        self.redraw: AreaRedraw | None = None
        #: The redraws of the last :meth:`synthesize_datasets`: ``rows`` (records of a dataset whose first stage was
        #: drawn again), ``rejected`` (first-stage draws rejected), ``most`` (most redraws of one row).
        self.redrawn: dict[str, int] = {"rows": 0, "rejected": 0, "most": 0}
        #: What is computed once from the fitted trees and the first stage's datasets, shared by every drawing (of
        #: the same first stage: a drawing that drew records again reads the cache of its own first stage).
        self.cache: dict[Any, Any] = {}
        #: The caches by first stage: ``()`` the first stage as given, else a digest of the records drawn again.
        self._caches: dict[Any, dict[Any, Any]] = {(): self.cache}
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

    def with_areas(self, areas: pd.DataFrame, redraw: AreaRedraw | None = None) -> SynthesizedAreaCart:
        """These fitted trees drawing given the first stage's datasets ``areas`` (a column ``synthetic`` 1..m and
        :attr:`columns`, the records in the data's order in each dataset); the cache is shared.

        Parameters
        ----------
        areas
            The first stage's m datasets.
        redraw
            The first stage's draw of single records of a dataset again (:data:`AreaRedraw`), for the records whose
            synthetic area's trees hold no value the rules admit (:meth:`synthesize_datasets`); ``None``: such a
            record is refused.

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
        other.redraw = redraw
        other.redrawn = {"rows": 0, "rejected": 0, "most": 0}
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

    def _jobs(
        self, m: int, areas: pd.DataFrame | None = None, rows: np.ndarray | None = None
    ) -> list[tuple[str, _Rows]]:
        """Per group, its rows of every dataset (of ``rows``, positions in the m datasets: default all): their kept
        values (the first stage's of ``areas``, default :attr:`areas`, in place of the record's) and their positions
        among the group's records."""
        areas = self._areas(m) if areas is None else areas
        n = len(self._frame)
        every = np.arange(len(areas)) if rows is None else np.sort(np.asarray(rows, dtype=np.int64))
        group_of = {v: i for i, values in enumerate(self.stratified.plan.groups.values()) for v in values}
        group = areas[self.columns[0]].iloc[every].map(group_of).to_numpy(dtype=np.int64)
        levels = self.stratified.levels
        jobs = []
        for i, name in enumerate(self.stratified.plan.groups):
            at = every[group == i]
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

    @staticmethod
    def _parts(jobs: list[tuple[str, _Rows]], drawn: list[list[pd.DataFrame]]) -> list[pd.DataFrame]:
        """The drawn frames of ``jobs`` indexed by their rows' positions in the m datasets."""
        return [part.set_axis(draw[3]) for (_, draws), frames in zip(jobs, drawn, strict=True)
                for draw, part in zip(draws, frames, strict=True)]  # fmt: skip

    def _assembled(self, areas: pd.DataFrame, parts: list[pd.DataFrame]) -> pd.DataFrame:
        """The m datasets: ``synthetic``, then the released columns in the data's order (kept ones real, the first
        stage's of ``areas`` and the drawn ones of ``parts``, every row once, synthetic), every categorical column
        over the whole file's levels."""
        frame, n = self._frame, len(self._frame)
        m = len(areas) // n
        every = np.tile(np.arange(n), m)
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

        A row for which a column's trees hold no value the rules admit given its kept and first-stage values cannot be
        drawn in its synthetic area (its area's records never show such a value with such kept values). Its
        first-stage draw is rejected, as a household's composition is (:mod:`bayessdc.models.cart.households`): its
        area and area columns are drawn again (:attr:`redraw`: the area model's posterior predictive of the record
        under its dataset's posterior draw, on a stream of the dataset and the attempt), then its other columns by
        its new area's trees from the group's streams of its dataset and the attempt; at most :data:`MAX_REDRAWS`
        times. The released rows are then draws of the two stages' joint distribution restricted to the values the
        rules admit, as the DPMPM's structural zeros restrict its own draws by rejection. Every stream is named by the
        seed, the dataset and the attempt, so the same seed gives the same release; a release none of whose rows is
        rejected is the one drawn without this. The redraws are counted in :attr:`redrawn` (and each redrawn row's
        draws in :attr:`fallbacks`); :attr:`areas` holds the first stage's values of the release (what
        :meth:`cross_fitted` draws given).

        Returns
        -------
        pandas.DataFrame
            Columns ``synthetic`` then the released columns in the data's order, the records in the data's order in
            every dataset (row ``i``: record ``i``), as :meth:`StratifiedCart.synthesize_datasets` returns them.

        Raises
        ------
        CartSynthesisError
            A row still drawn into an area whose trees admit none of its values after :data:`MAX_REDRAWS` redraws (at
            once without :attr:`redraw`), naming the record, its dataset, its area and the rules its group's trees
            enforce.
        """
        seeds = self.stratified.group_seeds(seed)
        areas = self._areas(m).copy()
        n = len(self._frame)
        parts, counts, bad = self._draw_rows(m, areas, None, seeds, 0, fan_out)
        rejected, attempt = np.zeros(len(areas), dtype=np.int64), 0
        while bad.size:
            if self.redraw is None or attempt == MAX_REDRAWS:
                raise self._unsatisfiable(m, areas, bad, seeds, attempt)
            attempt += 1
            rejected[bad] += 1
            for k in np.unique(bad // n) + 1:
                rows = bad[bad // n == k - 1]
                drawn = self.redraw(int(k), rows - (k - 1) * n, attempt)
                for column in self.columns:
                    values = areas[column].to_numpy().copy()
                    values[rows] = drawn[column].to_numpy()
                    areas[column] = values
            more, again, bad = self._draw_rows(m, areas, bad, seeds, attempt, fan_out)
            parts.extend(more)
            counts.extend(again)
        self.fallbacks = summed_fallbacks(counts)
        self.redrawn = {"rows": int((rejected > 0).sum()), "rejected": int(rejected.sum()),
                        "most": int(rejected.max(initial=0))}  # fmt: skip
        self.areas = areas
        self.cache = self._caches.setdefault(self._first_stage_key(areas, np.flatnonzero(rejected)), {})
        return self._assembled(areas, parts)

    def _first_stage_key(self, areas: pd.DataFrame, redrawn: np.ndarray) -> Any:
        """The key of the cache of a first stage: ``()`` as given, else a digest of the records drawn again and their
        values (another drawing, e.g. ``donors="others"``, may draw other records again: the cross-fitted reference,
        drawn given the first stage, is then its own)."""
        if not redrawn.size:
            return ()
        digest = hashlib.sha256(redrawn.astype(np.int64).tobytes())
        for column in self.columns:
            digest.update("\x1f".join(map(str, areas[column].to_numpy()[redrawn])).encode())
        return digest.hexdigest()

    def _draw_rows(
        self, m: int, areas: pd.DataFrame, rows: np.ndarray | None, seeds: dict[str, int], attempt: int,
        fan_out: Callable[..., Any] | None,
    ) -> tuple[list[pd.DataFrame], list[dict], np.ndarray]:  # fmt: skip
        """One draw of ``rows`` (positions in the m datasets; default all) given the first stage's ``areas``: the
        frames of the rows drawn (indexed by their positions), the groups' fallback counts, and the positions of the
        rows no value of a column admitted under the rules (sorted), left out of the frames."""
        jobs = self._jobs(m, areas, rows)
        parts = self.stratified.parts
        tasks = [(name, (parts[name], [d[:3] for d in draws])) for name, draws in jobs if draws]
        results = iter((fan_out or one_by_one)(_DrawGiven(seeds, attempt), tasks))
        frames, counts, bad = [], [], []
        for _, draws in jobs:
            if not draws:
                continue
            drawn, fallbacks, unmet = next(results)
            counts.append(fallbacks)
            for draw, frame, infeasible in zip(draws, drawn, unmet, strict=True):
                frame = frame.set_axis(draw[3])
                frames.append(frame.iloc[np.flatnonzero(~infeasible)] if infeasible.any() else frame)
                bad.append(draw[3][infeasible])
        return frames, counts, np.sort(np.concatenate([np.zeros(0, dtype=np.int64), *bad]))

    def _unsatisfiable(
        self, m: int, areas: pd.DataFrame, bad: np.ndarray, seeds: dict[str, int], attempt: int
    ) -> CartSynthesisError:
        """The refusal of the first row of ``bad`` after ``attempt`` redraws: its record, dataset and area, the rules
        its group's trees enforce, and the trees' own words when its draw alone fails again."""
        n, row = len(self._frame), int(bad[0])
        k, record, area = row // n + 1, row % n, areas[self.columns[0]].iloc[row]
        ((name, draws),) = [job for job in self._jobs(m, areas, bad[:1]) if job[1]]
        trees = self.stratified.parts[name]
        enforced = [f"{rule!r} (drawing {column!r})" for column, summary in trees.tree_summary().items()
                    for rule in summary["rules_enforced"]]  # fmt: skip
        _, kept, own, _ = draws[0]
        tail = () if attempt == 0 else (attempt,)
        why = ""
        try:
            trees.draw_given(kept, streams.rng(seeds[name], Stream.CART_DATASET, int(k), *tail),
                             streams.rng(seeds[name], Stream.CART_SMOOTHING, int(k), *tail), own=own)  # fmt: skip
        except CartSynthesisError as err:
            why = f" ({err})"
        tries = f"in {attempt + 1} draws of its area" if self.redraw is not None else "its area not drawn again"
        pooled = f" (drawn by the trees of its pool {name!r})" if len(self.stratified.plan.groups[name]) > 1 else ""
        return CartSynthesisError(
            f"the record at row {record} of the data, in synthetic dataset {k}: no value of its synthetic area "
            f"{area!r}{pooled} satisfies the rules {', '.join(enforced) or 'enforced'} given its kept and first-stage "
            f"values, {tries}{why}. The area model places it in areas whose records never show a value the rules "
            "admit with its kept values: give the area model the kept columns the rules read (area_given=), or a "
            "structural zero keeping such records out of such areas (bsd.DPMPM(structural_zeros=...) as area_model=)"
        )

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
        return self._assembled(self._areas(m), self._parts(jobs, drawn))

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
        without_counts(description["strata"])
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
