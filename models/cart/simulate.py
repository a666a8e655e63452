"""A small ACS-like person file with the logical structure of the paper's example (Rodriguez et al., Section 5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["acs_example_rules", "simulate_acs_persons", "simulate_acs_work"]

_GRADES = ("not attending", "preschool", "grades 1-8", "grades 9-12", "undergraduate", "graduate")
_EDUCATION = ("none", "less than high school", "high school", "some college", "bachelor", "graduate degree")


def simulate_acs_persons(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A small ACS-like person file with the logical structure of the paper's example (Section 5).

    Columns: ``age`` (0-90), ``sex``, ``relationship`` (reference person, spouse, child, other), ``enrolled``
    (school enrolment), ``grade`` (grade attended, ``"not attending"`` for those not enrolled),
    ``education`` (attainment, bounded by age) and ``marital`` (spouses are married, children under 15 never
    married). The values satisfy :func:`acs_example_rules`.
    """
    rng = np.random.default_rng(seed)
    age = np.minimum(rng.gamma(2.2, 17.0, n).astype(int), 90)
    sex = rng.choice(["female", "male"], n)
    child = age < 18
    relationship = np.where(
        child,
        np.where(rng.random(n) < 0.9, "child", "other"),
        rng.choice(["reference person", "spouse", "child", "other"], n, p=[0.5, 0.3, 0.1, 0.1]),
    )
    p_enrolled = np.select([age < 3, age < 5, age < 18, age < 25, age < 35], [0.0, 0.5, 0.97, 0.45, 0.1], default=0.02)
    enrolled = np.where(rng.random(n) < p_enrolled, "yes", "no")
    grade = np.select(
        [age < 6, age < 14, age < 18, age < 23],
        ["preschool", "grades 1-8", "grades 9-12", "undergraduate"],
        default="graduate",
    ).astype(object)
    adult_student = (age >= 23) & (rng.random(n) < 0.5)
    grade[adult_student] = "undergraduate"
    grade[enrolled == "no"] = "not attending"
    level = np.select([age < 6, age < 18, age < 19, age < 22], [0, 1, 2, 3], default=5)
    education_code = np.minimum(rng.integers(0, 6, n), level)
    education_code[(age >= 18) & (education_code < 2) & (rng.random(n) < 0.8)] = 2
    education_code[grade == "graduate"] = np.maximum(education_code[grade == "graduate"], 4)
    education = np.asarray(_EDUCATION, dtype=object)[education_code]
    marital = np.where(
        age < 15, "never married", rng.choice(["never married", "married", "divorced", "widowed"], n)
    ).astype(object)
    marital[relationship == "spouse"] = "married"
    return pd.DataFrame(
        {
            "age": age,
            "sex": sex,
            "relationship": relationship,
            "enrolled": enrolled,
            "grade": grade,
            "education": education,
            "marital": marital,
        }
    )


def simulate_acs_work(persons: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``persons`` with work columns holding values missing by design, a missing-value code and a spike.

    Columns added: ``employed`` (``"yes"`` for about 60% of those aged 18 to 70, ``"no"`` otherwise),
    ``hours`` (usual weekly hours, 1-80, missing exactly for those not employed: no job, no hours) and
    ``income`` (yearly, two decimals; a spike at 0 for about half of those not employed and 5% of the employed,
    and the missing-value code -8, "refused", for 6% of records). Declare them as
    ``missing_codes={"income": [-8]}, spikes={"income": [0]}``.
    """
    rng = np.random.default_rng([seed, 1])
    n, age = len(persons), persons["age"].to_numpy()
    employed = (age >= 18) & (age <= 70) & (rng.random(n) < 0.6)
    hours = np.where(employed, np.round(rng.normal(38, 9, n)).clip(1, 80), np.nan)
    income = np.round(np.exp(rng.normal(9.6 + 0.6 * employed + 0.01 * np.minimum(age, 60), 0.8)), 2)
    zero = np.where(employed, rng.random(n) < 0.05, rng.random(n) < 0.5)
    income[zero] = 0.0
    income[rng.random(n) < 0.06] = -8.0
    return persons.assign(employed=np.where(employed, "yes", "no"), hours=hours, income=income)


def acs_example_rules() -> list[dict[str, Any]]:
    """The logical rules of :func:`simulate_acs_persons`, in the rule-file form."""
    return [
        {
            "name": "grade attended only by those enrolled",
            "allowed": {
                "columns": ["enrolled", "grade"],
                "combinations": [["no", "not attending"]] + [["yes", g] for g in _GRADES[1:]],
            },
        },
        {
            "name": "graduate school only from age 19",
            "if": {"age": {"max": 18}},
            "then": {"grade": {"not_in": ["graduate"]}},
        },
        {"name": "no schooling before age 3", "if": {"age": {"max": 2}}, "then": {"enrolled": "no"}},
        {
            "name": "attainment bounded by age (under 18)",
            "if": {"age": {"max": 17}},
            "then": {"education": {"in": list(_EDUCATION[:3])}},
        },
        {
            "name": "no degree before age 19",
            "if": {"age": {"max": 18}},
            "then": {"education": {"not_in": ["bachelor", "graduate degree"]}},
        },
        {
            "name": "graduate students hold a bachelor's degree",
            "if": {"grade": "graduate"},
            "then": {"education": ["bachelor", "graduate degree"]},
        },
        {"name": "spouses are married", "if": {"relationship": "spouse"}, "then": {"marital": "married"}},
        {"name": "children under 15 never married", "if": {"age": {"max": 14}}, "then": {"marital": "never married"}},
    ]
