"""The bundled examples: small tables simulated as each paper describes its data, for trying every verb.

Nothing is downloaded: each example is drawn from a simulator in ``bayessdc.models`` (or, for CTA, is the
paper's own table), so the same seed gives the same table.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = [
    "acs_persons", "acs_rules", "areal_counts", "ce_like", "cox_table", "flow_table", "household_rules", "households",
    "spatial_homes",
]  # fmt: skip


def flow_table(n_states: int = 3, counties_per_state: float = 12.0, seed: int = 0) -> pd.DataFrame:
    """A county-to-county flow table simulated from the truncated-Poisson model (Hawala, Reiter & Wang).

    Columns ``origin, destination, origin_group, destination_group, count``; the demo's example.
    """
    from bayessdc.models.flows import simulate_flow_table

    return simulate_flow_table(n_states=n_states, counties_per_state=counties_per_state, scale=0.01, seed=seed)


def ce_like(n: int = 6208, n_counties: int = 133, seed: int = 0) -> pd.DataFrame:
    """Consumer-Expenditure-like records: ``gender, income, age, county`` (Hu & Savitsky, Section 5)."""
    from bayessdc.models.dpmpm import simulate_ce_like

    return simulate_ce_like(n=n, n_counties=n_counties, seed=seed)


def areal_counts(n_labels: int = 40, seed: int = 0) -> pd.DataFrame:
    """Records simulated from the DP-areal model (Hu & Savitsky, Section 2.2): ``gender`` (2 levels), ``income``
    (2), ``age`` (3), whose 12 combinations are the patterns, and a ``county`` label of ``n_labels`` levels."""
    from bayessdc.models.dp_areal import simulate_areal

    table, _ = simulate_areal(n_labels, (2, 2, 3), seed=seed)
    return table.rename(columns={"v0": "gender", "v1": "income", "v2": "age", "label": "county"})


def spatial_homes(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Geocoded records with a spatial response and one planted outlier (Quick, Holan & Wikle, Section 4).

    Returns the table (``x, y, response, d1, d2``) and the simulation's truth.
    """
    from bayessdc.models.spatial import simulate_spatial

    return simulate_spatial(n, seed=seed, outlier_latent=-4.0)


def acs_persons(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """ACS-like person records (``age, sex, relationship, enrolled, grade, education, marital``)."""
    from bayessdc.models.cart import simulate_acs_persons

    return simulate_acs_persons(n, seed=seed)


def acs_rules() -> list[dict[str, Any]]:
    """The logical rules the ACS-like persons satisfy (for ``bsd.CART(rules=...)``)."""
    from bayessdc.models.cart import acs_example_rules

    return acs_example_rules()


def household_rules() -> list[dict[str, Any]]:
    """The rules across the members of :func:`households` as ``bsd.CART(households=..., rules=...)`` takes them
    (:func:`bayessdc.models.households.cart_household_rules`)."""
    from bayessdc.models.households import cart_household_rules

    return cart_household_rules()


def households(n_households: int = 2000, n_areas: int = 20, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Persons in households in areas with a known household structure (six household types whose probabilities
    differ by area, members' ages related as in a household, tenure by household, education and employment by
    person): ``area, household, tenure, relationship, sex, age, education, employed``, and the simulation's truth.
    The rules across members every household keeps: :func:`bayessdc.models.households.household_rules`; as
    ``bsd.CART(rules=...)`` takes them: :func:`household_rules`."""
    from bayessdc.models.households import simulate_households

    return simulate_households(n_households, n_areas, seed=seed)


def cox_table() -> pd.DataFrame:
    """Cox's 4 x 9 magnitude table with the protection of its seven sensitive cells (long format)."""
    from bayessdc.cta import cox_4x9_frame

    return cox_4x9_frame()
