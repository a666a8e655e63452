"""Figures of the categorical synthesizers' releases worked by hand from the tables (the CLI tests check
the written figures against them)."""

import numpy as np
import pandas as pd


def keep_probabilities(table, pattern):
    """The chance that record i's released county is its true one, worked from the table, when the county is
    drawn from its marginal share ignoring the pattern (p_{c_i}), from the record's pattern (the inherent
    maximum scenario: n_{pattern, c_i} / n_pattern) or uniformly over all the counties of the table, whatever
    the pattern (the inherent minimum scenario: 1 / L)."""
    size = table.groupby(pattern)["county"].transform("size").to_numpy()
    return {
        "marginal": table["county"].map(table["county"].value_counts(normalize=True)).to_numpy(),
        "max": table.groupby([*pattern, "county"])["county"].transform("size").to_numpy() / size,
        "min": np.full(len(table), 1 / table["county"].nunique()),
    }


def kept_county_bounds(table, pattern, m):
    """Bounds on how many of the m * n released records keep their true county: above a marginal draw's
    expectation by 3 standard deviations, below the inherent maximum's by 4."""
    q = keep_probabilities(table, pattern)
    low = m * q["marginal"].sum() + 3 * np.sqrt(m * (q["marginal"] * (1 - q["marginal"])).sum())
    high = m * q["max"].sum() + 4 * np.sqrt(m * (q["max"] * (1 - q["max"])).sum())
    return low, high


def identification_by_hand(original, synthetic, known):
    """Eq. 15-17 from the two tables: c_i released records carry record i's true known values, T_i says its
    own released record is one of them; a unique match is c_i = 1."""
    target = original[known].astype(str).agg("|".join, axis=1).to_numpy()
    released = synthetic[known].astype(str).agg("|".join, axis=1).to_numpy()
    c = pd.Series(target).map(pd.Series(released).value_counts()).fillna(0).to_numpy()
    t = target == released
    unique = c == 1
    return {
        "expected_match_risk": float((1 / c[t]).sum()),
        "true_match_rate": float((unique & t).sum() / len(original)),
        "false_match_rate": float((unique & ~t).sum() / unique.sum()) if unique.any() else None,
    }
