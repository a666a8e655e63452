"""Hu & Savitsky's identification risk and attribute disclosures of a CART release's categorical synthesized
columns beside their inherent bounds (``release.risk(known=...)``, ``private/risk.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["identification_figures"]


def identification_figures(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    repetitions: int = 100,
    seed: int = 0,
    weights: Any = None,
) -> dict[str, Any]:
    """Identification risk per knowledge set and exact attribute disclosures, beside their inherent bounds.

    Hu & Savitsky, Section 4, through the generic :func:`bayessdc.risk.identification.risk_by_dataset` and
    :func:`~bayessdc.risk.identification.inherent_risk`: the mean over the m datasets of the expected match
    risk, true and false match rates of every knowledge set, and of the records whose ``synthesized`` values
    all equal the true ones; ``inherent`` holds the same means over ``repetitions`` datasets of the minimum
    scenario (each synthesized column uniform over all its levels) and the maximum (the synthesized values
    redrawn from the empirical distribution of each ``pattern``, the combination of the kept columns; weighted
    by the survey ``weights``, one per row of ``original``, when given: Hu & Savitsky's weighted re-sampling).
    """
    from bayessdc.risk.identification import IDENTIFICATION_MEASURES, inherent_risk, risk_by_dataset

    def means(rows: pd.DataFrame, names: Sequence[str]) -> dict[str, float | None]:
        return {k: (None if rows[k].isna().all() else float(rows[k].mean())) for k in names}

    per_dataset = risk_by_dataset(original, synthetic, known_sets, synthesized)
    inherent = inherent_risk(original, synthesized, pattern, known_sets, repetitions=repetitions, seed=seed,
                             weights=weights)  # fmt: skip
    identification = []
    for known in known_sets:
        name = "+".join(known)
        rows = per_dataset[per_dataset["known"] == name]
        identification.append(
            {
                "known": list(known),
                **means(rows, IDENTIFICATION_MEASURES),
                "per_dataset": {k: rows[k].tolist() for k in IDENTIFICATION_MEASURES},
                "inherent": {s: means(t[t["known"] == name], IDENTIFICATION_MEASURES) for s, t in inherent.items()},
            }
        )
    first = per_dataset[per_dataset["known"] == "+".join(known_sets[0])]
    attribute = {
        **means(first, ("disclosures", "share")),
        "per_dataset": first["disclosures"].tolist(),
        "inherent": {s: means(t.drop_duplicates("repetition"), ("disclosures", "share")) for s, t in inherent.items()},
    }
    return {
        "measure": "identification risk (eq. 15-17) and exact attribute disclosures (eq. 18) of Hu & Savitsky, "
        "means over the synthetic datasets; inherent: the minimum and maximum scenarios of Section 4.1",
        "synthesized": list(synthesized),
        "pattern": list(pattern),
        "repetitions": repetitions,
        "identification": identification,
        "attribute": attribute,
    }
