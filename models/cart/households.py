"""Persons within households: sequential CART with the household's composition synthesized as one unit.

Agency microdata are persons in households, and a household is recognised by its members together where each
member alone is not (Rodriguez, Freiman, Reiter & Lauger, Section 7, name household structure as the hurdle that
remains). A synthesizer of persons one by one breaks households apart: a synthetic household of two reference
persons, a child older than its parent. Here a household is synthesized as a household, in two stages of the
same sequential CART (:class:`~bayessdc.models.cart.synthesizer.CartSynthesizer`), each tree fitted on the
confidential records and drawn by a Bayesian bootstrap of its leaf:

1. **The households** (one row per household, the reference person's): given the kept household columns (an
   area), the household's *composition* is drawn first, as one categorical value: the multiset of its members'
   relationships to the reference person (``spouse + child + child``: the size and the relationships together,
   so that a drawn household has exactly one reference person and a composition some real household has); then,
   in the order of ``synthesize``, the household columns (constant within every household of the data, as
   tenure) and the reference person's own columns (sex, age ...), each given the composition and the columns
   before it.
2. **The other members** (one row per member but the reference person): given the kept household columns, the
   member's relationship (from the drawn composition), the household's size, its synthetic household columns and
   the reference person's synthetic values (the columns ``"reference <column>"``), the member's own columns in
   the order of ``synthesize``. Rules across members are rules of this stage, written with the reference
   person's columns, as the rules machinery states any rule (:mod:`bayessdc.models.cart.rules`)::

       {"name": "children younger by 16", "if": {"relationship": "child"},
        "then": {"age": {"max": {"column": "reference age", "plus": -16}}}}

   and never broken: the draw of a member's value is restricted to the values the rule admits given its
   household's synthetic values.

A rule is enforced in each stage whose columns it names are all columns of (a rule on the reference person's own
values in the first, a rule naming ``"reference <column>"`` in the second; one naming neither stage's columns is
refused). Each synthetic household stands in the place of a real one (a *slot*: the same kept household
columns), so a dataset holds as many households as the data, each area as many as it has; the number of persons
varies with the sizes drawn. The release's household id is a new one per dataset (``H0000001``, ...), never the
original. The first stage's draws may leave a household's own observation out (``donors="others"``); the second
stage draws for members no real record stands behind, whose donors are always every member of the leaf.

A cross-fitted release of the households (:func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`) leaves
whole households out of a fold (:meth:`HouseholdCart.units`): no member of a household judged is learned from.

References
----------
.. [1] Rodriguez, R. A., Freiman, M. H., Reiter, J. P., & Lauger, A. D. *Preserving privacy in person-level data
    for the American Community Survey*, Sections 5 and 7.
.. [2] Hu, J., Reiter, J. P., & Wang, Q. (2018). Dirichlet process mixture models for modeling and generating
    synthetic versions of nested categorical data. *Bayesian Analysis* 13(1): the household as the unit of
    synthesis, and the rules across its members as structural zeros.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .bootstrap import CartSynthesisError
from .data import CartDataError, is_numeric
from .synthesizer import CartSynthesizer, TemplateSettings, _as_dtype, one_by_one, summed_fallbacks

__all__ = ["COMPOSITION", "SIZE", "HouseholdCart", "reference_column", "relabel_households"]

#: The first stage's categorical column of compositions (the members' relationships as a multiset).
COMPOSITION = "household composition"
#: The second stage's predictor: the household's number of members.
SIZE = "household size"
#: The composition of a household of the reference person alone.
ALONE = "reference person alone"
#: Most members of a household, by default (larger ones are refused, naming the household).
MAX_SIZE = 20
#: Most draws of one household before its rules across members are declared unsatisfiable.
MAX_ATTEMPTS = 100


def reference_column(column: str) -> str:
    """The second stage's column of the reference person's value of ``column`` (``"reference age"``)."""
    return f"reference {column}"


def relabel_households(frame: pd.DataFrame, column: str, part: np.ndarray | None = None) -> pd.DataFrame:
    """``frame`` (synthetic datasets sorted by the column ``synthetic``) with new household ids ``H0000001``, ...
    numbered by first appearance within each dataset: the ids of one dataset owe nothing to the data's or
    another's. ``part``: per row, the part it was drawn in (parts drawn apart number their households alike)."""
    keys = [frame["synthetic"].to_numpy(), frame[column].to_numpy()]
    if part is not None:
        keys.insert(1, np.asarray(part))
    codes = pd.factorize(pd.MultiIndex.from_arrays(keys))[0]
    first = pd.Series(codes).groupby(frame["synthetic"].to_numpy()).transform("min").to_numpy()
    out = frame.copy()
    out[column] = pd.Series(codes - first + 1).map("H{:07d}".format).to_numpy()
    return out


@dataclass
class _Stages:
    """The data of the two stages and how households, members and compositions index each other."""

    household: np.ndarray  # per record: its household's number (0..H-1)
    heads: np.ndarray  # per household: the position of its reference person
    members: np.ndarray  # positions of the other members, by household
    sizes: np.ndarray  # per household: its number of members
    compositions: dict[str, tuple[Any, ...]]  # composition -> the members' relationships (reference person aside)
    household_columns: list[str]  # synthesized columns constant within every household
    person_columns: list[str]  # the other synthesized columns
    first: pd.DataFrame  # the households (reference persons) with their composition
    second: pd.DataFrame  # the other members with their household's values


@dataclass
class HouseholdCart(TemplateSettings):
    """Sequential CART of persons within households (:mod:`bayessdc.models.cart.households`); the same interface
    as a :class:`CartSynthesizer`.

    Parameters
    ----------
    template
        The trees' settings, the columns to synthesize (person and household columns, in order; the relationship
        is synthesized as the composition wherever it stands) and the kept ones, which must be household columns
        (an area): a member's own value cannot be kept when the members are drawn.
    household
        The household id column (released as a new id).
    relationship
        The column of each member's relationship to the reference person.
    reference
        The value of ``relationship`` that marks the reference person (exactly one per household).
    max_size
        Most members of a household; a larger one is refused, naming it.
    areas
        The column of areas the households lie in, if any (named in the message about a household in two).
    """

    template: CartSynthesizer
    household: str
    relationship: str
    reference: Any = "reference person"
    max_size: int = MAX_SIZE
    areas: str | None = None
    fallbacks: dict[str, dict[str, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.relationship not in self.template.synthesize:
            self.template = self.template.with_settings(synthesize=[self.relationship, *self.template.synthesize])
        if isinstance(self.max_size, bool) or not isinstance(self.max_size, int | np.integer) or self.max_size < 1:
            raise CartDataError(f"max_household= must be a whole number of at least 1, got {self.max_size!r}")
        self._first: CartSynthesizer | None = None
        self._second: CartSynthesizer | None = None
        self._stages: _Stages | None = None
        self._frame: pd.DataFrame | None = None
        self._seed = 0
        self._levels: dict[str, pd.CategoricalDtype] = {}
        self.fit_seconds: float | None = None
        self.cache: dict[Any, Any] = {}


    def with_settings(self, **changes: Any) -> HouseholdCart:
        """An unfitted copy whose template has other settings."""
        return HouseholdCart(self.template.with_settings(**changes), self.household, self.relationship,
                             self.reference, self.max_size, self.areas)  # fmt: skip

    def drawing(self, donors: str) -> HouseholdCart:
        """This fitted synthesizer drawing with other ``donors`` (the households' stage; the same trees)."""
        other = copy.copy(self)
        other.template = self.template.drawing(donors)
        other._first = None if self._first is None else self._first.drawing(donors)
        return other

    # -- input -------------------------------------------------------------------------------------------

    def validate(self, data: pd.DataFrame) -> pd.DataFrame:
        """The household id and the released columns of ``data``, its households checked.

        Raises
        ------
        CartDataError
            A missing household id or relationship column, a missing id (the rows are named), a household with no
            reference person or more than one, larger than ``max_size``, or whose members differ in a kept column
            (a household in two areas), each naming the household.
        """
        for column, what in ((self.household, "households="), (self.relationship, "relationship=")):
            if column not in data.columns:
                raise CartDataError(f"{what}{column!r} is not a column of the data")
        if self.household in (*self.keep, *self.synthesize):
            raise CartDataError(f"households={self.household!r} is among the kept or synthesized columns: the "
                                "household id is released as a new id, neither kept nor synthesized")  # fmt: skip
        released = self.template.validate(data)
        ids = data[self.household]
        missing = np.flatnonzero(ids.isna().to_numpy())
        if len(missing):
            rows = ", ".join(str(i + 1) for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise CartDataError(f"households={self.household!r} is missing at data row(s) {rows}: every person "
                                "needs a household")  # fmt: skip
        number = pd.factorize(ids)[0]
        names = pd.Series(ids.to_numpy())
        is_reference = (data[self.relationship] == self.reference).to_numpy()
        heads = np.bincount(number, weights=is_reference, minlength=number.max() + 1)
        wrong = np.flatnonzero(heads != 1)
        if len(wrong):
            h = wrong[0]
            name = names.iloc[np.flatnonzero(number == h)[0]]
            count = int(heads[h])
            raise CartDataError(
                f"household {name!r} has {'no' if count == 0 else count} member(s) whose {self.relationship!r} is "
                f"{self.reference!r} ({len(wrong)} household(s) so): every household has exactly one reference "
                "person"
            )
        sizes = np.bincount(number)
        large = np.flatnonzero(sizes > self.max_size)
        if len(large):
            name = names.iloc[np.flatnonzero(number == large[0])[0]]
            raise CartDataError(f"household {name!r} has {sizes[large[0]]} members, more than max_household="
                                f"{self.max_size} ({len(large)} household(s) so)")  # fmt: skip
        for column in self.keep:
            spread = released[column].groupby(number).nunique(dropna=False).to_numpy()
            if (spread > 1).any():
                h = int(np.flatnonzero(spread > 1)[0])
                rows = np.flatnonzero(number == h)
                values = ", ".join(sorted(map(str, released[column].iloc[rows].unique())))
                name = names.iloc[rows[0]]
                if column == self.areas:
                    raise CartDataError(f"household {name!r} is shared across strata of {column!r} ({values}): a "
                                        "household lies in one area")  # fmt: skip
                raise CartDataError(
                    f"household {name!r} has members of different {column!r} ({values}): a kept column of a "
                    "household release is the household's (the members are drawn), the same for every member"
                )
        taken = [c for c in (COMPOSITION, SIZE, *map(reference_column, self.synthesize)) if c in data.columns]
        if taken:
            raise CartDataError(f"column(s) {', '.join(map(repr, taken))} clash with the columns the households' "
                                "stages add")  # fmt: skip
        return pd.concat([data[[self.household]], released], axis=1)

    def _build(self, frame: pd.DataFrame) -> _Stages:
        """The two stages' records (:class:`_Stages`) of the validated ``frame``."""
        number = pd.factorize(frame[self.household])[0]
        n_households = int(number.max()) + 1
        relationship = frame[self.relationship]
        is_reference = (relationship == self.reference).to_numpy()
        heads = np.empty(n_households, dtype=np.int64)
        heads[number[is_reference]] = np.flatnonzero(is_reference)
        members = np.flatnonzero(~is_reference)
        members = members[np.argsort(number[members], kind="stable")]
        sizes = np.bincount(number, minlength=n_households)
        words = relationship.astype(str).to_numpy()
        composition = np.full(n_households, ALONE, dtype=object)
        lookup: dict[str, tuple[Any, ...]] = {ALONE: ()}
        if len(members):
            keyed = pd.DataFrame({"h": number[members], "word": words[members],
                                  "value": relationship.to_numpy()[members]})  # fmt: skip
            keyed = keyed.sort_values(["h", "word"], kind="stable")
            joined = keyed.groupby("h", sort=True)["word"].agg(" + ".join)
            composition[joined.index.to_numpy()] = joined.to_numpy()
            value_of = dict(zip(keyed["word"], keyed["value"], strict=False))
            for text in pd.unique(joined.to_numpy()):
                lookup[text] = tuple(value_of[w] for w in text.split(" + "))
        synthesized = [c for c in self.synthesize if c != self.relationship]
        constant = {c: bool((frame[c].groupby(number).nunique(dropna=False) <= 1).all()) for c in synthesized}
        household_columns = [c for c in synthesized if constant[c]]
        person_columns = [c for c in synthesized if not constant[c]]
        first = frame.iloc[heads].reset_index(drop=True)
        first.insert(len(first.columns), COMPOSITION, pd.Categorical(composition))
        first = first.drop(columns=[self.household])
        head_of = heads[number[members]]
        second = frame.iloc[members].reset_index(drop=True).drop(columns=[self.household])
        second[SIZE] = sizes[number[members]]
        for column in person_columns:
            second[reference_column(column)] = frame[column].iloc[head_of].to_numpy()
            if isinstance(frame[column].dtype, pd.CategoricalDtype):
                second[reference_column(column)] = second[reference_column(column)].astype(frame[column].dtype)
        return _Stages(number, heads, members, sizes, lookup, household_columns, person_columns, first, second)

    def _stage_synthesizers(self, stages: _Stages) -> tuple[CartSynthesizer, CartSynthesizer | None]:
        """The two stages' synthesizers (unfitted), each with the rules whose columns are all its own.

        Raises
        ------
        CartDataError
            A rule naming columns of neither stage (a member's value beside a household column of another).
        """
        t = self.template
        synthesized = [c for c in self.synthesize if c != self.relationship]
        first_columns = [*self.keep, self.relationship, COMPOSITION, *synthesized]
        person = stages.person_columns
        second_keep = [*self.keep, self.relationship, SIZE, *stages.household_columns,
                       *map(reference_column, person)]  # fmt: skip
        second_columns = {*second_keep, *person}
        first_rules = [r for r in t.rules if r.columns <= set(first_columns)]
        second_rules = [r for r in t.rules if r.columns <= second_columns] if person else []
        orphans = [r for r in t.rules if r not in first_rules and r not in second_rules]
        if orphans:
            r = orphans[0]
            raise CartDataError(
                f"rule {r.name!r} names {', '.join(sorted(r.columns))}: a rule of a household release is on the "
                f"households (their kept and household columns, {self.relationship!r} and the reference person's "
                f"values) or on the other members (their own columns, with their household's and the reference "
                f"person's as {reference_column('<column>')!r})"
            )

        def restricted(setting: dict[str, list[float]], columns: list[str]) -> dict[str, list[float]]:
            return {c: v for c, v in setting.items() if c in columns}

        categorical = [*t.categorical, *(reference_column(c) for c in t.categorical if c in person)]
        first = t.with_settings(synthesize=[COMPOSITION, *synthesized], keep=[*self.keep, self.relationship],
                                rules=first_rules, missing_codes=restricted(t.missing_codes, synthesized),
                                spikes=restricted(t.spikes, synthesized), categorical=list(t.categorical))  # fmt: skip
        second = None
        if person and len(stages.second):
            second = t.with_settings(synthesize=list(person), keep=second_keep, rules=second_rules,
                                     missing_codes=restricted(t.missing_codes, person),
                                     spikes=restricted(t.spikes, person), categorical=categorical)  # fmt: skip
        return first, second

    def _encoded(self, data: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.CategoricalDtype]]:
        """The validated frame, every categorical column over all its levels (both stages hold every level of the
        whole file, so that a rule naming a member's value reads in the households' stage too), and the levels."""
        frame = self.validate(data)
        levels = {c: pd.CategoricalDtype(pd.Categorical(frame[c]).categories)
                  for c in frame.columns if c != self.household and not is_numeric(frame[c], self.categorical)}
        return frame.astype(levels), levels

    def check(self, data: pd.DataFrame) -> None:
        """Check ``data`` as :meth:`fit` does before fitting (the households, the rules of each stage against the
        data), fitting nothing.

        Raises
        ------
        CartDataError
            As :meth:`validate`, or a rule broken by the data or naming columns of neither stage.
        """
        from .data import check_rules_hold, encode_columns

        stages = self._build(self._encoded(data)[0])
        for synthesizer, frame in zip(self._stage_synthesizers(stages), (stages.first, stages.second), strict=True):
            if synthesizer is not None:
                released = synthesizer.validate(frame)
                schema, codes = encode_columns(released, synthesizer.categorical)
                check_rules_hold(synthesizer.rules, codes, schema)

    # -- fitting -----------------------------------------------------------------------------------------

    def relabel(self, frame: pd.DataFrame, part: np.ndarray | None = None) -> pd.DataFrame:
        """``frame`` (datasets of this release; ``part``: per row, the part it was drawn in) with household ids
        renumbered per dataset (:func:`relabel_households`)."""
        return relabel_households(frame, self.household, part)

    def units(self, data: pd.DataFrame) -> np.ndarray:
        """Per record of ``data``, its household's number: the unit a cross-fitted release leaves out whole."""
        return pd.factorize(data[self.household])[0]

    def fit(
        self, data: pd.DataFrame, seed: int = 0, fan_out: Callable[..., Any] | None = None,
        learn: np.ndarray | None = None,
    ) -> HouseholdCart:
        """Fit the households' trees on the reference persons and the members' trees on the other members.

        Parameters
        ----------
        data
            The confidential persons (one row each, with the household id).
        seed
            Seed of the run (each stage's trees and draws on streams of its own).
        fan_out
            Runs each stage's trees as parts (:meth:`CartSynthesizer.fit`).
        learn
            Positions of the records learned from: the households of any of them (all their members) are
            learned; the other households are synthesized by trees that never saw them.
        """
        start = time.perf_counter()
        frame, self._levels = self._encoded(data)
        self._fit_stages(frame, self._build(frame), seed, fan_out, learn)
        self.fit_seconds = time.perf_counter() - start
        return self

    def refitted(self, seed: int, fan_out: Callable[..., Any] | None, learn: np.ndarray) -> HouseholdCart:
        """A copy of this fitted synthesizer fitted again on the records ``learn`` of the same data (their
        households'), its stages' records reused: the fold of a cross-fit
        (:func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`)."""
        if self._stages is None:
            raise RuntimeError("fit the synthesizer first")
        fold = HouseholdCart(self.template, self.household, self.relationship, self.reference, self.max_size,
                             self.areas)  # fmt: skip
        fold._levels = self._levels
        fold._fit_stages(self._frame, self._stages, seed, fan_out, learn)
        return fold

    def _fit_stages(
        self, frame: pd.DataFrame, stages: _Stages, seed: int, fan_out: Callable[..., Any] | None,
        learn: np.ndarray | None,
    ) -> None:
        first, second = self._stage_synthesizers(stages)
        learned = None if learn is None else np.unique(stages.household[np.asarray(learn)])
        self._seed = int(seed)
        first.fit(stages.first, streams.integer_seed(seed, Stream.HOUSEHOLDS, 1), fan_out, learn=learned)
        if second is not None:
            member_learn = None if learned is None else np.flatnonzero(np.isin(stages.household[stages.members],
                                                                                learned))  # fmt: skip
            second.fit(stages.second, streams.integer_seed(seed, Stream.HOUSEHOLDS, 2), fan_out, learn=member_learn)
        self._first, self._second, self._stages, self._frame = first, second, stages, frame
        # per composition (its code in the first stage), the members' relationships as codes of the whole file's
        # levels, flat, with each composition's offset and count
        categories = self._levels[self.relationship].categories
        lists = [np.asarray(categories.get_indexer(list(stages.compositions[str(text)])), dtype=np.int64)
                 for text in first._schema[COMPOSITION].observed_levels]  # fmt: skip
        self._member_count = np.array([len(v) for v in lists], dtype=np.int64)
        self._member_offset = np.concatenate([[0], np.cumsum(self._member_count)[:-1]]).astype(np.int64)
        self._member_codes = np.concatenate([*lists, np.zeros(0, dtype=np.int64)])

    # -- synthesis ---------------------------------------------------------------------------------------

    def synthesize_datasets(
        self, m: int, seed: int | None = None, fan_out: Callable[..., Any] | None = None, rows: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``m`` synthetic datasets of persons in households, a household's members together, its reference
        person first; one household in the place of each of the data's (with ``rows``: of the households of
        those records), ids new per dataset.

        Returns
        -------
        pandas.DataFrame
            Columns ``synthetic``, the household id, then the released columns in the data's order.
        """
        if self._first is None or self._stages is None:
            raise RuntimeError("fit the synthesizer first")
        if m < 1:
            raise ValueError(f"m must be at least 1, got {m}")
        seed = self._seed if seed is None else int(seed)
        slots = None if rows is None else np.unique(self._stages.household[np.asarray(rows)])
        parts = [(f"dataset-{k}", k) for k in range(1, m + 1)]
        results = (fan_out or one_by_one)(_DrawHouseholds(self, seed, slots), parts)
        self.fallbacks = summed_fallbacks(counts for _, counts in results)
        return relabel_households(pd.concat([frame for frame, _ in results], ignore_index=True), self.household)

    def _draw_dataset(self, k: int, seed: int, slots: np.ndarray | None) -> tuple[pd.DataFrame, dict]:
        """Dataset ``k``: the households of ``slots`` (default all), their members drawn from their compositions.

        A household some member of which no observed value admits under the rules (a reference person of 95 drawn
        for a composition with a parent, who must be 16 years older) is impossible: it is rejected and drawn
        again whole, on streams of its own, until it is possible (at most :data:`MAX_ATTEMPTS` times), as Hu,
        Reiter & Wang (2018) and Manrique-Vallier & Reiter sample households outside the structural zeros. The
        households rejected are counted (``fallbacks[COMPOSITION]["rejected"]``).

        The draws stay in codes (a categorical column's level positions, shared by both stages, whose columns
        carry the whole file's levels; -1 missing) until the dataset is decoded once: a frame per attempt cost
        70 ms of pandas per dataset, whatever its size (600 households per group, 40 folds of a cross-fit)."""
        slot = np.arange(len(self._stages.heads)) if slots is None else np.asarray(slots)
        first_counts: dict[str, dict[str, int]] = {}
        member_counts: dict[str, dict[str, int]] = {}
        parts, todo, rejected = [], slot, 0
        for attempt in range(MAX_ATTEMPTS):
            persons, bad = self._draw_households(k, seed, todo, attempt, first_counts, member_counts)
            keep = ~np.isin(persons["_slot"], todo[bad])
            parts.append({c: v[keep] for c, v in persons.items()})
            if not bad.any():
                break
            todo, rejected = todo[bad], rejected + int(bad.sum())
        else:
            raise CartSynthesisError(
                f"{len(todo)} household(s) drew no composition whose members the rules admit in {MAX_ATTEMPTS} "
                f"attempts (dataset {k}): the rules across members may need a value the confidential data never show"
            )
        joined = {c: np.concatenate([part[c] for part in parts]) for c in parts[0]}
        order = np.lexsort((joined["_order"], joined["_slot"]))
        columns: dict[str, Any] = {"synthetic": np.full(len(order), k, dtype=np.int64)}
        for column in self._frame.columns:
            values = joined[column][order]
            if column in self._levels:
                columns[column] = pd.Categorical.from_codes(values, dtype=self._levels[column])
            elif column == self.household:
                columns[column] = values
            else:
                columns[column] = _as_dtype(values, self._frame[column].dtype)
        counts = {self._named(c): v for c, v in first_counts.items()}
        counts.setdefault(COMPOSITION, {"ancestor": 0, "whole_column": 0, "draws": 0})["rejected"] = rejected
        return pd.DataFrame(columns), {**counts, **member_counts}

    def _draw_households(
        self, k: int, seed: int, slot: np.ndarray, attempt: int, first_counts: dict, member_counts: dict
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """One attempt at the households of ``slot``: their persons' columns in codes (with ``_slot``, ``_order``),
        and per household whether a member was impossible (:meth:`_draw_dataset`)."""
        stages, first, second = self._stages, self._first, self._second
        tail = () if attempt == 0 else (attempt,)  # the first attempt's streams are the dataset's own
        values = first._draw(streams.rng(seed, Stream.HOUSEHOLDS, k, 1, *tail),
                             streams.rng(seed, Stream.HOUSEHOLDS, k, 3, *tail), first_counts, slot)  # fmt: skip
        heads = {c: _shared(first._schema[c], values[c]) for c in self._frame.columns if c in first._schema}
        count = self._member_count[values[COMPOSITION]]
        of = np.repeat(np.arange(len(slot)), count)
        within = np.arange(len(of)) - np.repeat(np.cumsum(count) - count, count)
        relationships = self._member_codes[self._member_offset[values[COMPOSITION]][of] + within]
        members = {c: heads[c][of] for c in [*self.keep, *stages.household_columns]}
        members[self.relationship] = relationships
        bad = np.zeros(len(slot), dtype=bool)
        if len(of) and second is not None:
            kept = {c: _staged(second._schema[c], v) for c, v in members.items()}
            kept[SIZE] = (count + 1)[of].astype(float)
            for column in stages.person_columns:
                kept[reference_column(column)] = _staged(second._schema[reference_column(column)], heads[column][of])
            infeasible = np.zeros(len(of), dtype=bool)
            drawn = second._draw(streams.rng(seed, Stream.HOUSEHOLDS, k, 2, *tail),
                                 streams.rng(seed, Stream.HOUSEHOLDS, k, 4, *tail), member_counts,
                                 kept=kept, infeasible=infeasible)  # fmt: skip
            bad[of[infeasible]] = True
            for column in stages.person_columns:
                members[column] = _shared(second._schema[column], drawn[column])
        for column in stages.person_columns:  # no member drawn in this attempt: an empty column
            members.setdefault(column, heads[column][of])
        heads[self.household], members[self.household] = slot, slot[of]
        heads["_slot"], members["_slot"] = slot, slot[of]
        heads["_order"], members["_order"] = np.zeros(len(slot), dtype=np.int64), within + 1
        return {c: np.concatenate([heads[c], members[c]]) for c in heads}, bad

    # -- description -------------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Public description: the two stages (order, predictors, settings, rules), no estimate and no data."""
        if self._first is None or self._stages is None:
            raise RuntimeError("fit the synthesizer first")
        first = self._first.describe()
        second = None if self._second is None else self._second.describe()
        kinds = {self.relationship: "classification (the composition, as one value per household)"}
        for column in self._stages.household_columns:
            kinds[column] = first["trees"][column]
        for column in self._stages.person_columns:
            kinds[column] = (second or first)["trees"][column]
        return {
            **first,
            "kind": "persons within households: each household's composition (its members' relationships as one "
            "value), its household columns and its reference person's columns drawn given the kept household "
            "columns; then the other members' columns given their relationship, the household and the reference "
            "person; kept columns are the household's",
            "synthesized_in_order": list(self.synthesize),
            "kept": list(self.keep),
            "trees": {c: kinds[c] for c in self.synthesize},
            "households": {
                "column": self.household,
                "released_as": "a new id per dataset (H0000001, ...), numbered in order; never the original",
                "relationship": self.relationship,
                "reference": _plain(self.reference),
                "max_members": int(self.max_size),
                "household_columns": list(self._stages.household_columns),
                "person_columns": list(self._stages.person_columns),
                "composition": "the multiset of the members' relationships to the reference person, synthesized "
                "as one categorical value (its size with it), from the compositions real households have",
                "stages": {"households": {"synthesized_in_order": first["synthesized_in_order"],
                                          "kept": first["kept"], "rules": first["rules"]},
                           "members": None if second is None else {
                               "synthesized_in_order": second["synthesized_in_order"], "kept": second["kept"],
                               "rules": second["rules"]}},
                "donors": "households: " + self.donors + "; members: all (a drawn member has no record of its own)",
            },
        }  # fmt: skip

    def tree_summary(self) -> dict[str, Any]:
        """Per tree of both stages: leaves, depth, rules, fallbacks (a person column's first-stage tree, the
        reference persons', is named ``"<column> (reference persons)"``)."""
        if self._first is None:
            raise RuntimeError("fit the synthesizer first")
        out = {}
        for column, tree in self._first.tree_summary().items():
            named = self._named(column)
            out[named] = {**tree, "fallbacks": self.fallbacks.get(named, tree["fallbacks"])}
        if self._second is not None:
            for column, tree in self._second.tree_summary().items():
                out[column] = {**tree, "fallbacks": self.fallbacks.get(column, tree["fallbacks"])}
        return out

    def _named(self, column: str) -> str:
        """A first-stage tree's name: a person column's (or its state's) is the reference persons'."""
        of_state = {states.state_column: c for c, states in self._first.states.items()}
        if of_state.get(column, column) in self._stages.person_columns:
            return f"{column} (reference persons)"
        return column

    @property
    def data(self) -> pd.DataFrame:
        """The household id and released columns of the fitted data, in the data's order (confidential)."""
        if self._frame is None:
            raise RuntimeError("fit the synthesizer first")
        return self._frame


def _shared(spec: Any, values: np.ndarray) -> np.ndarray:
    """A stage's encoded values in the codes both stages share: a categorical column's level positions (its levels
    are the whole file's in both), -1 for missing; a numeric column's numbers as they are."""
    if not spec.categorical:
        return values
    return np.where(values == spec.missing_code, -1, values) if spec.has_missing else values


def _staged(spec: Any, values: np.ndarray) -> np.ndarray:
    """Shared codes (:func:`_shared`) as the stage of ``spec`` encodes them.

    Raises
    ------
    ValueError
        A missing value of a column whose records in that stage have none.
    """
    if not spec.categorical or not (values < 0).any():
        return values
    if not spec.has_missing:
        raise ValueError(f"column {spec.name!r}: a missing value the members' records never take")
    return np.where(values < 0, spec.missing_code, values)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@dataclass
class _DrawHouseholds:
    """The task drawing dataset ``k`` of a :class:`HouseholdCart` (a part of its ``synthesize_datasets``)."""

    synthesizer: HouseholdCart
    seed: int
    slots: np.ndarray | None

    def __call__(self, name: str, k: int) -> tuple[pd.DataFrame, dict]:
        return self.synthesizer._draw_dataset(k, self.seed, self.slots)
