"""Persons in households in areas: a simulator with a known household structure.

Agency microdata are persons in households in areas, and a household is recognised by its members together (its
size, and the ages, sexes and relationships of its members) where each member alone is not. The simulator draws
households of six types with known probabilities that differ by area, members whose ages follow the relations of a
household (a child at least 16 years younger than the reference person, a spouse of about the same age, a parent at
least 16 years older), a household-level variable (tenure) and person-level ones (education, employment), so that
a synthesizer of households can be checked against the truth: the type and size distribution of every area, the
rules across members (:func:`household_rules`), the tenure model.

The household types and their members (P(mu) a Poisson count, capped as said):

* single: the reference person (size 1);
* couple: reference person and spouse (2);
* couple with children: reference person, spouse and 1 + min(P(0.8), 5) children (3 to 8);
* lone parent: reference person and 1 + min(P(0.6), 5) children (2 to 7);
* three generations: reference person, spouse, a parent and 1 + min(P(0.5), 4) children (4 to 8);
* shared: reference person and 1 + min(P(0.7), 4) non-relatives (2 to 6).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["HOUSEHOLD_TYPES", "RELATIONSHIPS", "cart_household_rules", "household_rules", "rule_violations",
           "simulate_households"]

#: The household types and their base probabilities (each area's are a Dirichlet draw around them).
HOUSEHOLD_TYPES = {
    "single": 0.28,
    "couple": 0.25,
    "couple with children": 0.24,
    "lone parent": 0.09,
    "three generations": 0.06,
    "shared": 0.08,
}

#: The relationships to the reference person.
RELATIONSHIPS = ("reference person", "spouse", "child", "parent", "non-relative")

#: Poisson means of the members beyond the first of their kind, and the most of them, by type.
_EXTRA = {"couple with children": (0.8, 5), "lone parent": (0.6, 5), "three generations": (0.5, 4), "shared": (0.7, 4)}

_EDUCATION = ("primary", "secondary", "tertiary")


def household_rules() -> list[dict[str, Any]]:
    """The rules across the members of a household that every simulated household keeps, in words and as checks of
    a household's members (a frame of ``relationship, sex, age``): what a synthesizer of households must keep."""
    return [
        {"name": "one reference person", "rule": "exactly one member is the reference person"},
        {"name": "at most one spouse", "rule": "at most one member is the spouse"},
        {"name": "adult reference person", "rule": "the reference person is at least 18"},
        {"name": "adult spouse", "rule": "a spouse is at least 18"},
        {"name": "children younger by 16", "rule": "a child is at least 16 years younger than the reference person"},
        {"name": "parents older by 16", "rule": "a parent is at least 16 years older than the reference person"},
    ]


def cart_household_rules() -> list[dict[str, Any]]:
    """The rules of :func:`household_rules` a synthesizer of members must be told, in the plain form of
    :mod:`bayessdc.models.cart.rules` (a member's age against its reference person's, ``"reference age"``, as
    :class:`bayessdc.models.cart.households.HouseholdCart` names it); one reference person and at most one spouse
    hold by construction there, the households' compositions being drawn whole."""
    return [
        {"name": "adult reference person", "if": {"relationship": "reference person"}, "then": {"age": {"min": 18}}},
        {"name": "adult spouse", "if": {"relationship": "spouse"}, "then": {"age": {"min": 18}}},
        {"name": "children younger by 16", "if": {"relationship": "child"},
         "then": {"age": {"max": {"column": "reference age", "plus": -16}}}},
        {"name": "parents older by 16", "if": {"relationship": "parent"},
         "then": {"age": {"min": {"column": "reference age", "plus": 16}}}},
    ]  # fmt: skip


def rule_violations(persons: pd.DataFrame, household: str = "household") -> dict[str, int]:
    """Per rule of :func:`household_rules`, the number of households of ``persons`` that break it."""
    rel, age = persons["relationship"].astype(str), persons["age"].astype(float)
    by = persons[household]
    ref_age = age.where(rel == "reference person").groupby(by).transform("max")
    count = {name: rel.eq(value).groupby(by).sum() for name, value in (("ref", "reference person"),
                                                                        ("spouse", "spouse"))}  # fmt: skip

    def households(mask: pd.Series) -> int:
        return int(mask.groupby(by).any().sum())

    return {
        "one reference person": int((count["ref"] != 1).sum()),
        "at most one spouse": int((count["spouse"] > 1).sum()),
        "adult reference person": households((rel == "reference person") & (age < 18)),
        "adult spouse": households((rel == "spouse") & (age < 18)),
        "children younger by 16": households((rel == "child") & (age > ref_age - 16)),
        "parents older by 16": households((rel == "parent") & (age < ref_age + 16)),
    }


def simulate_households(
    n_households: int = 2000, n_areas: int = 20, concentration: float = 40.0, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Persons in households in areas, drawn with a known household structure.

    Parameters
    ----------
    n_households
        Households in all; each area's share is a Dirichlet(5, ..., 5) draw, so areas differ in size.
    n_areas
        Areas (``a01``, ``a02``, ...).
    concentration
        Concentration of each area's type probabilities around :data:`HOUSEHOLD_TYPES` (Dirichlet): the smaller,
        the more the areas differ.
    seed
        Seed of every draw.

    Returns
    -------
    persons : pandas.DataFrame
        One row per person: ``area``, ``household`` (an id), ``tenure`` (``own``/``rent``, the household's),
        ``relationship``, ``sex``, ``age``, ``education`` (adults 25 and over; ``none yet`` below), ``employed``
        (``yes``/``no``), the members of a household together, the reference person first.
    truth : dict
        ``types``: the type probabilities of every area (a frame, areas by types); ``household_type``: each
        household's type; ``tenure``: the coefficients of the tenure model (intercept per area, age, couple).
    """
    rng = np.random.default_rng(seed)
    areas = [f"a{i + 1:02d}" for i in range(n_areas)]
    names = list(HOUSEHOLD_TYPES)
    base = np.array(list(HOUSEHOLD_TYPES.values()))
    types = pd.DataFrame(rng.dirichlet(concentration * base, size=n_areas), index=areas, columns=names)
    area_of = rng.choice(n_areas, size=n_households, p=rng.dirichlet(np.full(n_areas, 5.0)))
    kind_of = np.array([rng.choice(len(names), p=types.iloc[a].to_numpy()) for a in area_of])
    tenure_intercept = pd.Series(rng.normal(0.2, 0.5, n_areas), index=areas)
    rows: list[tuple[Any, ...]] = []
    for h, (a, k) in enumerate(zip(area_of, kind_of, strict=True)):
        kind = names[k]
        members = _members(rng, kind)
        ref_age = members[0][2]
        couple = kind in ("couple", "couple with children", "three generations")
        eta = tenure_intercept.iloc[a] + 0.04 * (ref_age - 45) + 0.8 * couple
        tenure = "own" if rng.random() < 1 / (1 + np.exp(-eta)) else "rent"
        for relationship, sex, age in members:
            rows.append((areas[a], f"h{h + 1:06d}", tenure, relationship, sex, age))
    persons = pd.DataFrame(rows, columns=["area", "household", "tenure", "relationship", "sex", "age"])
    age = persons["age"].to_numpy()
    area_effect = pd.Series(rng.normal(0.0, 0.4, n_areas), index=areas)[persons["area"]].to_numpy()
    score = area_effect + rng.logistic(size=len(persons)) - 0.02 * np.maximum(age - 40, 0)
    education = np.select([score < -0.8, score < 1.2], [_EDUCATION[0], _EDUCATION[1]], default=_EDUCATION[2])
    persons["education"] = np.where(age >= 25, education, "none yet")
    working = (age >= 16) & (age < 67) & (rng.random(len(persons)) < np.where(age < 25, 0.45, 0.75))
    persons["employed"] = np.where(working, "yes", "no")
    truth = {
        "types": types,
        "household_type": pd.Series(np.asarray(names)[kind_of], index=[f"h{h + 1:06d}" for h in range(n_households)]),
        "tenure": {"intercept": tenure_intercept, "age": 0.04, "couple": 0.8},
    }
    return persons, truth


def _members(rng: np.random.Generator, kind: str) -> list[tuple[str, str, int]]:
    """The members of one household of type ``kind``: ``(relationship, sex, age)``, the reference person first."""
    sex = str(rng.choice(["female", "male"]))
    other = "male" if sex == "female" else "female"
    if kind in ("couple with children", "lone parent", "three generations"):
        ref_age = int(np.clip(rng.normal(40, 9), 22, 70))
    elif kind == "shared":
        ref_age = int(np.clip(rng.normal(28, 6), 18, 60))
    else:
        ref_age = int(np.clip(18 + rng.gamma(2.0, 14.0), 18, 95))
    members = [("reference person", sex, ref_age)]
    if kind in ("couple", "couple with children", "three generations"):
        spouse_sex = other if rng.random() < 0.95 else sex
        members.append(("spouse", spouse_sex, int(np.clip(ref_age + round(rng.normal(0, 4)), 18, 95))))
    if kind in _EXTRA:
        mean, most = _EXTRA[kind]
        extra = 1 + min(int(rng.poisson(mean)), most)
        relationship = "non-relative" if kind == "shared" else "child"
        for _ in range(extra):
            if relationship == "child":
                age = int(rng.integers(0, min(ref_age - 16, 30) + 1))
            else:
                age = int(np.clip(ref_age + rng.integers(-8, 9), 18, 95))
            members.append((relationship, str(rng.choice(["female", "male"])), age))
    if kind == "three generations":
        members.append(("parent", str(rng.choice(["female", "male"])), int(min(ref_age + rng.integers(18, 36), 100))))
    return members
