"""Synthesis area by area: one sequential-CART synthesizer per stratum (synthpop's ``syn.strata``).

The records of each stratum (an area, a kept column) are fitted and synthesized by trees of their own, so that the
relations between the columns may differ from area to area, as they do (Rodriguez, Freiman, Reiter & Lauger,
Section 3: "the strength of the relationship among a given set of variables can vary widely geographically").
A stratum too small for trees of its own is pooled (:func:`plan_strata`): with a parent area, with the other small
strata of its parent; the rest together. Every record keeps its stratum, so each synthetic dataset holds as many
records of every stratum as the original (unless the area is synthesized first, each record then drawn by its
synthetic area's trees: :mod:`bayessdc.models.cart.areas`).

synthpop's ``syn.strata`` refuses a stratum below ``minstratumsize = 10 + 10 * (number of synthesized columns)``;
here that size is the default of ``min_size`` and a smaller stratum is pooled, never dropped.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .data import CartDataError, encode_columns
from .synthesizer import CartSynthesizer, TemplateSettings, one_by_one, summed_fallbacks

__all__ = ["StrataPlan", "StratifiedCart", "default_min_stratum", "plan_strata", "without_counts"]

#: The name of the group that pools the small strata left over (no parent, or a parent's pool still too small).
POOLED = "pooled small strata"


def default_min_stratum(synthesize: Sequence[str]) -> int:
    """synthpop's ``minstratumsize``: ``10 + 10`` records per synthesized column."""
    return 10 + 10 * len(synthesize)


@dataclass(frozen=True)
class StrataPlan:
    """Which strata are fitted together: one group per stratum large enough, pools of the small ones.

    Attributes
    ----------
    column
        The stratum column (kept: every record stays in its stratum).
    groups
        Group name -> the stratum values fitted together (a large stratum alone; a pool of small ones).
    min_size
        The smallest number of records a group is fitted on.
    parent
        The column of the parent areas the small strata were pooled within, if any.
    """

    column: str
    groups: dict[str, tuple[Any, ...]]
    min_size: int
    parent: str | None = None

    def rows(self, data: pd.DataFrame) -> dict[str, np.ndarray]:
        """Group name -> the positions of its records in ``data``, in order."""
        group_of = {value: i for i, values in enumerate(self.groups.values()) for value in values}
        codes = data[self.column].map(group_of).to_numpy(dtype=float)  # NaN: a stratum of no group
        order = np.argsort(codes, kind="stable")  # one sort, not a scan of every record per group
        bounds = np.searchsorted(codes[order], np.arange(len(self.groups) + 1))
        return {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(self.groups)}

    def describe(self, data: pd.DataFrame) -> dict[str, Any]:
        """The plan as the public description states it: the rule and each group's strata and records."""
        sizes = data[self.column].value_counts()
        return {
            "column": self.column,
            "min_records": self.min_size,
            "parent": self.parent,
            "rule": "one model per stratum of at least min_records records; smaller strata pooled"
            + (f" with the other small strata of their {self.parent}," if self.parent else "")
            + " and what is left pooled together",
            "groups": [
                {"group": name, "strata": [_plain(v) for v in values], "records": int(sizes.loc[list(values)].sum())}
                for name, values in self.groups.items()
            ],
        }


def without_counts(description: dict[str, Any]) -> dict[str, Any]:
    """The plan's description (:meth:`StrataPlan.describe`) with no area's count of records, for a release whose area
    is synthesized first: each area's records in a dataset are the area model's draw. Changed in place and returned.

    Examples
    --------
    >>> plan = StrataPlan("area", {"a": ("a",)}, 1)
    >>> described = without_counts(plan.describe(pd.DataFrame({"area": ["a", "a"]})))
    >>> described["groups"], described["records"][:5]
    ([{'group': 'a', 'strata': ['a']}], 'drawn')
    """
    description["groups"] = [{"group": g["group"], "strata": g["strata"]} for g in description["groups"]]
    description["records"] = ("drawn: each area's number of records in a dataset is the area model's draw, so no "
                              "area's count of records is stated")  # fmt: skip
    return description


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def plan_strata(data: pd.DataFrame, column: str, min_size: int, parent: str | None = None) -> StrataPlan:
    """The groups of strata fitted together, each of at least ``min_size`` records.

    A stratum of at least ``min_size`` records is a group of its own. The smaller ones are pooled: with ``parent``
    (a coarser area holding each stratum, constant within it), the small strata of one parent together when they
    reach ``min_size``; the rest in one pool (:data:`POOLED`).

    Parameters
    ----------
    data
        The records (the stratum and parent columns are read).
    column
        The stratum column.
    min_size
        The fewest records a group may be fitted on.
    parent
        The column of the parent areas, or None.

    Returns
    -------
    StrataPlan

    Raises
    ------
    CartDataError
        A stratum or parent column that is not a column of the data, a missing stratum (the rows are named), a
        stratum lying in two parents, or a last pool still smaller than ``min_size`` (its strata are named).
    """
    for name, what in ((column, "strata="), (parent, "pool_by=")):
        if name is not None and name not in data.columns:
            raise CartDataError(f"{what}{name!r} is not a column of the data")
    if min_size < 1:
        raise CartDataError(f"min_stratum= must be at least 1, got {min_size}")
    missing = np.flatnonzero(data[column].isna().to_numpy())
    if len(missing):
        rows = ", ".join(str(i + 1) for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CartDataError(f"strata={column!r} is missing at data row(s) {rows} ({len(missing)} rows): every record "
                            "needs its stratum")  # fmt: skip
    sizes = data[column].value_counts(sort=False).sort_index()
    groups: dict[str, tuple[Any, ...]] = {}
    small: list[Any] = []
    for value, n in sizes.items():
        if n >= min_size:
            groups[str(value)] = (value,)
        else:
            small.append(value)
    if parent is not None and small:
        parents = data.loc[data[column].isin(small), [column, parent]].drop_duplicates()
        split = parents[column][parents[column].duplicated()]
        if len(split):
            value = split.iloc[0]
            held = sorted(map(str, parents.loc[parents[column] == value, parent]))
            raise CartDataError(
                f"stratum {value!r} of {column!r} lies in {len(held)} {parent!r} areas ({', '.join(held)}): pool_by= "
                "must name an area holding each stratum whole"
            )
        left: list[Any] = []
        for area, members in parents.groupby(parent, sort=True)[column]:
            values = tuple(members)
            if sizes.loc[list(values)].sum() >= min_size:
                groups[f"{parent}={area} (pooled: {', '.join(map(str, values))})"] = values
            else:
                left.extend(values)
        small = left
    if small:
        pooled = int(sizes.loc[small].sum())
        if pooled < min_size:
            named = ", ".join(f"{v!r} ({int(sizes.loc[v])})" for v in small[:8]) + (" ..." if len(small) > 8 else "")
            raise CartDataError(
                f"stratum/strata {named} of {column!r} have fewer than min_stratum={min_size} records and pool to "
                f"{pooled}: lower min_stratum=, or give pool_by= a parent area to pool them within"
            )
        groups[POOLED] = tuple(small)
    return StrataPlan(column, groups, int(min_size), parent)


@dataclass
class _FitGroup:
    """The task fitting one group's synthesizer (a part of :meth:`StratifiedCart.fit`): the part is the group's
    records, its seed and the positions it learns from."""

    template: CartSynthesizer

    def __call__(self, name: str, job: tuple[pd.DataFrame, int, np.ndarray | None]) -> CartSynthesizer:
        data, seed, learn = job
        present = {}  # the missing-value codes and spikes the group's records take (another area's may be absent)
        for setting in ("missing_codes", "spikes"):
            values = getattr(self.template, setting)
            present[setting] = {c: [v for v in vs if (data[c] == v).any()] for c, vs in values.items()}
            present[setting] = {c: vs for c, vs in present[setting].items() if vs}
        return self.template.with_settings(**present).fit(data, seed, learn=learn)


@dataclass
class _DrawGroup:
    """The task drawing a group's m datasets (a part of :meth:`StratifiedCart.synthesize_datasets`)."""

    m: int
    seeds: dict[str, int]

    def __call__(self, name: str, job: tuple[CartSynthesizer, np.ndarray | None]) -> tuple[pd.DataFrame, dict]:
        synthesizer, rows = job
        frame = synthesizer.synthesize_datasets(self.m, seed=self.seeds[name], rows=rows)
        return frame, synthesizer.fallbacks


@dataclass
class _CrossFitGroup:
    """The task cross-fitting one group's records (a part of :meth:`StratifiedCart.cross_fitted`)."""

    m: int
    folds: int

    def __call__(self, name: str, job: tuple[Any, pd.DataFrame, int]) -> pd.DataFrame:
        from .unlearned import cross_fitted_datasets

        synthesizer, data, seed = job
        return cross_fitted_datasets(synthesizer, data, self.m, seed, folds=self.folds)


@dataclass
class StratifiedCart(TemplateSettings):
    """Sequential CART fitted stratum by stratum: the :class:`CartSynthesizer` ``template``'s settings, one fitted
    copy per group of :class:`StrataPlan`; the same interface as a :class:`CartSynthesizer`.

    Each group's trees learn from its records only, its seed is the run's seed and the group's position in the plan
    (stream ``"stratum"``), and its records are drawn by them; dataset ``k`` is every group's dataset ``k``, the
    records in the data's order.
    """

    template: CartSynthesizer
    plan: StrataPlan
    fallbacks: dict[str, dict[str, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._parts: dict[str, CartSynthesizer] = {}
        self._rows: dict[str, np.ndarray] = {}
        self._levels: dict[str, pd.Index] = {}
        self._seed: int | None = None
        self._n = 0
        self.fit_seconds: float | None = None
        self.cache: dict[Any, Any] = {}

    #: Persons within households (a :class:`~bayessdc.models.cart.households.HouseholdCart` template): the household
    #: id column, the cross-fit's units and the renumbering of ids, the template's; ``None`` otherwise.
    household = property(lambda self: getattr(self.template, "household", None))
    units = property(lambda self: getattr(self.template, "units", None))
    relabel = property(lambda self: getattr(self.template, "relabel", None))

    def validate(self, data: pd.DataFrame) -> pd.DataFrame:
        """The released columns of ``data`` (:meth:`CartSynthesizer.validate`)."""
        return self.template.validate(data)

    def drawing(self, donors: str) -> StratifiedCart:
        """This fitted synthesizer drawing with other ``donors``: every group's trees drawing so."""
        other = copy.copy(self)  # the same groups, rows and cache, shared (as CartSynthesizer.drawing)
        other.template = self.template.drawing(donors)
        other._parts = {name: part.drawing(donors) for name, part in self._parts.items()}
        return other

    def _seeds(self, seed: int) -> dict[str, int]:
        return {name: streams.integer_seed(seed, Stream.STRATUM, i) for i, name in enumerate(self.plan.groups)}

    def group_seeds(self, seed: int | None = None) -> dict[str, int]:
        """Group name -> the group's seed: of ``seed`` (default the fit's), stream ``"stratum"`` and the group's
        position in the plan (what its trees were fitted and its records are drawn with)."""
        return self._seeds(self._seed if seed is None else int(seed))

    @property
    def parts(self) -> dict[str, CartSynthesizer]:
        """Group name -> the group's fitted synthesizer (after :meth:`fit`)."""
        return dict(self._parts)

    @property
    def group_rows(self) -> dict[str, np.ndarray]:
        """Group name -> the positions of its records in the fitted data, in order (after :meth:`fit`)."""
        return dict(self._rows)

    @property
    def levels(self) -> dict[str, pd.Index]:
        """Every categorical column's levels in the whole file: each group's encoding of it (after :meth:`fit`)."""
        return dict(self._levels)

    def fit(
        self, data: pd.DataFrame, seed: int = 0, fan_out: Callable[..., Any] | None = None,
        learn: np.ndarray | None = None,
    ) -> StratifiedCart:
        """Fit every group's trees on its own records (``learn``: positions of the records learned from, as
        :meth:`CartSynthesizer.fit`); ``fan_out`` runs the groups as parts."""
        start = time.perf_counter()
        frame = self.validate(data)
        schema, _ = encode_columns(frame, list(self.categorical))
        self._levels = {c: pd.Index(s.observed_levels) for c, s in schema.items()
                        if s.categorical and c != self.household}  # fmt: skip
        # every group encodes a categorical column by the whole file's levels, so that a rule naming a value its
        # records do not take still reads; its trees draw only the values its records take
        frame = frame.astype({c: pd.CategoricalDtype(levels) for c, levels in self._levels.items()})
        self._rows, self._seed, self._n = self.plan.rows(frame), int(seed), len(frame)
        seeds = self._seeds(seed)
        jobs = []
        for name, rows in self._rows.items():
            local = None if learn is None else np.flatnonzero(np.isin(rows, learn))
            if local is not None and not len(local):
                raise CartDataError(f"group {name!r} of strata={self.plan.column!r} has no record to learn from")
            jobs.append((name, (frame.iloc[rows].reset_index(drop=True), seeds[name], local)))
        fitted = (fan_out or one_by_one)(_FitGroup(self.template), jobs)
        self._parts = dict(zip(self._rows, fitted, strict=True))
        self.fit_seconds = time.perf_counter() - start
        return self

    def synthesize_datasets(
        self, m: int, seed: int | None = None, fan_out: Callable[..., Any] | None = None, rows: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``m`` synthetic datasets, every group's drawn by its own trees, the records in the data's order (or,
        with ``rows``, those records in that order), as :meth:`CartSynthesizer.synthesize_datasets`."""
        if not self._parts:
            raise RuntimeError("fit the synthesizer first")
        seeds = self._seeds(self._seed if seed is None else int(seed))
        wanted = np.arange(self._n) if rows is None else np.asarray(rows)
        jobs, where = [], {}
        for name, group_rows in self._rows.items():
            held = np.flatnonzero(np.isin(group_rows, wanted))
            if len(held):
                jobs.append((name, (self._parts[name], None if rows is None else held)))
                where[name] = group_rows[held]
        results = (fan_out or one_by_one)(_DrawGroup(m, seeds), jobs)
        self.fallbacks = summed_fallbacks(counts for _, counts in results)
        if self.household is None:
            frames = [frame.assign(_row=np.tile(where[name], m))
                      for (name, _), (frame, _) in zip(jobs, results, strict=True)]  # fmt: skip
        else:  # households: a group's datasets hold its households' persons, as many as drawn, group after group
            frames = [frame.assign(_row=where[name][0]) for (name, _), (frame, _) in zip(jobs, results, strict=True)]
        frame = pd.concat(frames, ignore_index=True).sort_values(["synthetic", "_row"], kind="stable")
        part = frame.pop("_row").to_numpy()
        frame = frame.reset_index(drop=True)
        if self.household is not None:
            frame = self.relabel(frame, part)
        for column, levels in self._levels.items():  # each group's categories are its own; the release's all
            if column in frame.columns:
                frame[column] = pd.Categorical(frame[column].astype(object), categories=levels)
        return frame

    def cross_fitted(
        self, data: pd.DataFrame, m: int, seed: int, folds: int = 40, fan_out: Callable[..., Any] | None = None
    ) -> pd.DataFrame:
        """The cross-fitted release of the records (:func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`),
        area by area: each group's records cross-fitted by its own folds, from the group's seed, one part per group.

        Each record is drawn by trees of its group fitted without it, as in a cross-fit of the whole file, whose
        folds would refit every group's trees in every fold; here a group is one part of ``fan_out`` that fits its
        ``folds`` folds, so the runner is called once (500 areas: one call instead of 80, each starting its workers).
        The datasets hold the records in the data's order (households: a household in the place of each, group after
        group, ids renumbered).
        """
        if not self._parts:
            raise RuntimeError("fit the synthesizer first")
        frame = self.validate(data).astype({c: pd.CategoricalDtype(v) for c, v in self._levels.items()})
        seeds = self._seeds(seed)
        jobs = [(name, (self._parts[name], frame.iloc[rows].reset_index(drop=True), seeds[name]))
                for name, rows in self._rows.items()]  # fmt: skip
        results = (fan_out or one_by_one)(_CrossFitGroup(m, folds), jobs)
        if self.household is None:
            frames = [part.assign(_row=np.tile(self._rows[name], m)) for (name, _), part in zip(jobs, results,
                                                                                                strict=True)]
        else:
            frames = [part.assign(_row=self._rows[name][0]) for (name, _), part in zip(jobs, results, strict=True)]
        out = pd.concat(frames, ignore_index=True).sort_values(["synthetic", "_row"], kind="stable")
        part = out.pop("_row").to_numpy()
        out = out.reset_index(drop=True)
        for column, levels in self._levels.items():
            if column in out.columns:
                out[column] = pd.Categorical(out[column].astype(object), categories=levels)
        return out if self.household is None else self.relabel(out, part)

    def tree_summary(self) -> dict[str, Any]:
        """Per synthesized column over the groups: the leaves (summed), the largest depth, the rules enforced, the
        fallbacks of the last synthesis (per group: :meth:`group_summary`)."""
        parts = {name: part.tree_summary() for name, part in self._parts.items()}
        out: dict[str, Any] = {}
        for trees in parts.values():
            for column, tree in trees.items():
                row = out.setdefault(column, {"leaves": 0, "depth": 0, "rules_enforced": tree["rules_enforced"],
                                              "fallbacks": self.fallbacks.get(column, {})})  # fmt: skip
                row["leaves"] += tree["leaves"]
                row["depth"] = max(row["depth"], tree["depth"])
        return out

    def group_summary(self) -> pd.DataFrame:
        """Per group: its strata, records and its trees' leaves in all (private: the fit's figures)."""
        return pd.DataFrame([
            {"group": name, "strata": len(self.plan.groups[name]), "records": len(self._rows[name]),
             "leaves": sum(t["leaves"] for t in self._parts[name].tree_summary().values())}
            for name in self._parts
        ])  # fmt: skip

    def describe(self) -> dict[str, Any]:
        """The template's description (the trees of every group have its settings) with the strata's plan."""
        if not self._parts:
            raise RuntimeError("fit the synthesizer first")
        first = next(iter(self._parts.values())).describe()
        return {**first, "kind": first["kind"] + "; synthesized stratum by stratum, each by trees of its own",
                "strata": self.plan.describe(self.data)}  # fmt: skip

    @property
    def data(self) -> pd.DataFrame:
        """The released columns of the fitted data, in the data's order (confidential)."""
        parts = [p.data.set_index(self._rows[name]) for name, p in self._parts.items()]
        return pd.concat(parts).sort_index()

