"""Identification and attribute risk of m partially synthetic categorical datasets, beside the inherent bounds.

Hu & Savitsky, Section 4, gathered into the figures every
synthesizer of categorical labels reports (the DPMPM and the DP-areal model), so that their outputs compare
file by file: per knowledge set the expected match risk, true and false match rates (eq. 15-17) of the m
datasets, and the exact attribute disclosures (eq. 18), each beside the inherent minimum and maximum
(Section 4.1; a range for the attribute disclosures only: the identification figures' minimum can lie above
their maximum, see :mod:`bayessdc.risk.identification`) and placed among their S repetitions; per record the
exact-disclosure share and match risk, with records alone in their pattern singled out. Generic: nothing here
knows the synthesizer; the per-record Bayesian attribute risk (importance sampling), which needs the model, is
passed in when there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .identification import IDENTIFICATION_MEASURES, inherent_risk, place_among
from .release_figures import CategoricalReleaseFigures, MeasuredDatasets

__all__ = ["CategoricalRisk", "categorical_risk"]


@dataclass
class CategoricalRisk:
    """The risk figures and tables of a categorical release.

    Attributes
    ----------
    figures
        What ``private/risk.json`` holds: ``identification`` (per knowledge set: ``known``, the three measures
        averaged over the m datasets, ``inherent`` ``min``/``max``) and ``attribute`` (``disclosures``,
        ``share``, ``inherent``).
    details
        What ``private/risk_details.json`` holds: per-dataset values, placements among the inherent
        repetitions, single-record patterns, the Bayesian attribute risk summary, ``repetitions`` and ``m``.
    records
        Per record (``private/risk_records.parquet``): ``record``, ``pattern_size``,
        ``exact_disclosure_share``, ``match_risk[<known>]`` per knowledge set, and the Bayesian columns when
        given.
    inherent
        The S repetitions of both inherent scenarios (``private/risk_inherent.parquet``, column ``scenario``).
    by_dataset
        The measures of every synthetic dataset and knowledge set (``private/risk_by_dataset.parquet``).
    """

    figures: dict[str, Any]
    details: dict[str, Any]
    records: pd.DataFrame
    inherent: pd.DataFrame
    by_dataset: pd.DataFrame


def _mean(values: Any) -> float | None:
    """Mean of the finite values (``None`` when there is none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else None


def categorical_risk(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesize: Sequence[str],
    keep: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    repetitions: int,
    seed: int,
    bayesian: tuple[pd.DataFrame, dict[str, Any]] | None = None,
    inherent: dict[str, pd.DataFrame] | None = None,
    measured: MeasuredDatasets | None = None,
) -> CategoricalRisk:
    """Identification and attribute risk of the synthetic datasets against the inherent bounds.

    Parameters
    ----------
    original
        The confidential records (labels), the kept and synthesized columns.
    synthetic
        The m synthetic datasets stacked with a first column ``synthetic`` = 1..m, every dataset holding the
        records in the original order.
    synthesize, keep
        The synthesized columns and the kept columns (whose combinations are the patterns).
    known_sets
        The intruder's knowledge sets (at least one; the attribute figures are reported with the first).
    repetitions
        Repetitions S of each inherent scenario.
    seed
        Seed of the inherent scenarios' draws (the same seed gives the same figures, whatever the knowledge
        sets).
    bayesian
        Optional per-record Bayesian attribute risk (columns ``record``, ``true_probability``,
        ``relevant_khat``) and its summary, merged into ``records`` and ``details``.
    inherent
        The inherent scenarios' figures when already computed with the same arguments
        (:func:`bayessdc.risk.identification.inherent_risk`; the release gate computes them first).
    measured
        The datasets already measured (:meth:`CategoricalReleaseFigures.measure_datasets` on the same original,
        knowledge sets and datasets; the pipeline measures them once for risk and utility).

    Returns
    -------
    CategoricalRisk
    """
    synthesize, keep = list(synthesize), list(keep)
    known_sets = [list(k) for k in known_sets]
    n_records = len(original)
    m = int(synthetic["synthetic"].nunique())
    pattern_size = original.groupby(keep, observed=True)[keep[0]].transform("size").to_numpy()
    # one implementation of the figures: the integer-key one (its data-frame oracle is
    # bayessdc.risk.identification.risk_by_dataset, which tests/risk/test_release_figures.py checks it against)
    # one pass over the datasets: their figures and, per record, matches and exact disclosures on integer keys
    # (the data-frame oracle of the records' figures is bayessdc.risk.identification.match_counts)
    if measured is None:
        figures = CategoricalReleaseFigures(original, synthesize, keep, known_sets, ways=(), pmse=False)
        measured = figures.measure_datasets(synthetic[["synthetic", *keep, *synthesize]])
    per_dataset = measured.source.risk_table(measured.figures)
    if inherent is None:
        inherent = inherent_risk(original, synthesize, keep, known_sets, repetitions=repetitions, seed=seed)
    identification = []
    for known in known_sets:
        name = "+".join(known)
        rows = per_dataset[per_dataset["known"] == name]
        entry: dict[str, Any] = {"known": known}
        entry.update({k: _mean(rows[k]) for k in IDENTIFICATION_MEASURES})
        entry["inherent"] = {}
        for scenario in ("min", "max"):
            ref = inherent[scenario][inherent[scenario]["known"] == name]
            entry["inherent"][scenario] = {k: _mean(ref[k]) for k in IDENTIFICATION_MEASURES}
        entry["per_dataset"] = {k: rows[k].tolist() for k in IDENTIFICATION_MEASURES}
        entry["placement"] = {
            scenario: place_among(
                rows["expected_match_risk"],
                inherent[scenario].loc[inherent[scenario]["known"] == name, "expected_match_risk"],
            )
            for scenario in ("min", "max")
        }
        identification.append(entry)
    first = per_dataset[per_dataset["known"] == "+".join(known_sets[0])]
    attribute: dict[str, Any] = {
        "disclosures": _mean(first["disclosures"]),
        "share": _mean(first["share"]),
        "inherent": {
            scenario: {
                "disclosures": _mean(inherent[scenario].drop_duplicates("repetition")["disclosures"]),
                "share": _mean(inherent[scenario].drop_duplicates("repetition")["share"]),
            }
            for scenario in ("min", "max")
        },
        "per_dataset": first["disclosures"].tolist(),
        "placement": {
            scenario: place_among(first["disclosures"], inherent[scenario].drop_duplicates("repetition")["disclosures"])
            for scenario in ("min", "max")
        },
    }

    # Per record: matches and exact disclosures over the m datasets; single-record patterns singled out.
    records = pd.DataFrame({"record": np.arange(n_records), "pattern_size": pattern_size})
    records["exact_disclosure_share"] = measured.exact / m
    for name, share in measured.match_risk.items():
        records[f"match_risk[{name}]"] = share / m
    single = records[records["pattern_size"] == 1]
    attribute["single_record_patterns"] = {
        "records": len(single),
        "exact_disclosure_share": _mean(single["exact_disclosure_share"]) if len(single) else None,
        "match_risk": {
            "+".join(k): (_mean(single[f"match_risk[{'+'.join(k)}]"]) if len(single) else None) for k in known_sets
        },
    }
    if bayesian is not None:
        records = records.merge(bayesian[0], on="record", how="left")
        for column in [c for c in bayesian[0].columns if pd.api.types.is_bool_dtype(bayesian[0][c])]:
            records[column] = records[column].astype("boolean")  # missing for the records not assessed
        attribute["bayesian"] = bayesian[1]

    # risk.json holds exactly the figures of the layout; everything else goes to risk_details.json.
    details = {
        "identification": [
            {"known": e["known"], "per_dataset": e.pop("per_dataset"), "placement": e.pop("placement")}
            for e in identification
        ],
        "attribute": {
            key: attribute.pop(key)
            for key in ("per_dataset", "placement", "single_record_patterns", "bayesian")
            if key in attribute
        },
        "repetitions": repetitions,
        "m": m,
    }
    inherent_table = pd.concat(
        [inherent["min"].assign(scenario="min"), inherent["max"].assign(scenario="max")], ignore_index=True
    )
    return CategoricalRisk(
        figures={"identification": identification, "attribute": attribute},
        details=details,
        records=records,
        inherent=inherent_table,
        by_dataset=per_dataset,
    )
