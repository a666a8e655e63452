"""The tables behind the identification and attribute risk of m partially synthetic categorical datasets.

Hu & Savitsky, Section 4: per record the exact-disclosure share and match risk over the m datasets (records
alone in their pattern are those of ``pattern_size`` 1), per dataset and knowledge set the expected match risk,
true and false match rates (eq. 15-17) and exact attribute disclosures (eq. 18), and the S repetitions of the
inherent minimum and maximum (Section 4.1). The figures themselves are the registered measures'
(:mod:`bayessdc.measures.identification`, :mod:`bayessdc.measures.attribute`). Generic: nothing here knows the
synthesizer; the per-record Bayesian attribute risk (importance sampling), which needs the model, is passed in
when there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .identification import inherent_risk
from .release_figures import CategoricalReleaseFigures, MeasuredDatasets

__all__ = ["CategoricalRisk", "categorical_risk"]


@dataclass
class CategoricalRisk:
    """The per-record and per-repetition tables of a categorical release's risk (its figures are the measures'
    of :mod:`bayessdc.measures.identification` and :mod:`bayessdc.measures.attribute`).

    Attributes
    ----------
    records
        Per record (``private/risk_records.parquet``): ``record``, ``pattern_size``,
        ``exact_disclosure_share``, ``match_risk[<known>]`` per knowledge set, and the Bayesian columns when
        given.
    inherent
        The S repetitions of both inherent scenarios (``private/risk_inherent.parquet``, column ``scenario``).
    by_dataset
        The figures of every synthetic dataset and knowledge set (``private/risk_by_dataset.parquet``).
    """

    records: pd.DataFrame
    inherent: pd.DataFrame
    by_dataset: pd.DataFrame


def categorical_risk(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesize: Sequence[str],
    keep: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    repetitions: int,
    seed: int,
    bayesian: pd.DataFrame | None = None,
    inherent: dict[str, pd.DataFrame] | None = None,
    measured: MeasuredDatasets | None = None,
) -> CategoricalRisk:
    """The per-record, per-dataset and per-repetition tables of the identification and attribute risk.

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
        The intruder's knowledge sets.
    repetitions
        Repetitions S of each inherent scenario.
    seed
        Seed of the inherent scenarios' draws.
    bayesian
        Optional per-record Bayesian attribute risk (columns ``record``, ``true_probability``, ...), merged
        into ``records``.
    inherent
        The inherent scenarios' figures when already computed with the same arguments
        (:func:`bayessdc.risk.identification.inherent_risk`; the release gate computes them first).
    measured
        The datasets already measured (:meth:`CategoricalReleaseFigures.measure_datasets` on the same original,
        knowledge sets and datasets).

    Returns
    -------
    CategoricalRisk
    """
    synthesize, keep = list(synthesize), list(keep)
    known_sets = [list(k) for k in known_sets]
    m = int(synthetic["synthetic"].nunique())
    # one pass over the datasets on integer keys: their figures and, per record, matches and exact disclosures
    # (the data-frame oracles are bayessdc.risk.identification.risk_by_dataset and match_counts)
    if measured is None:
        figures = CategoricalReleaseFigures(original, synthesize, keep, known_sets, ways=(), pmse=False)
        measured = figures.measure_datasets(synthetic[["synthetic", *keep, *synthesize]])
    if inherent is None:
        inherent = inherent_risk(original, synthesize, keep, known_sets, repetitions=repetitions, seed=seed)
    pattern_size = original.groupby(keep, observed=True)[keep[0]].transform("size").to_numpy()
    records = pd.DataFrame({"record": np.arange(len(original)), "pattern_size": pattern_size})
    records["exact_disclosure_share"] = measured.exact / m
    for name, share in measured.match_risk.items():
        records[f"match_risk[{name}]"] = share / m
    if bayesian is not None:
        records = records.merge(bayesian, on="record", how="left")
        for column in [c for c in bayesian.columns if pd.api.types.is_bool_dtype(bayesian[c])]:
            records[column] = records[column].astype("boolean")  # missing for the records not assessed
    inherent_table = pd.concat(
        [inherent["min"].assign(scenario="min"), inherent["max"].assign(scenario="max")], ignore_index=True
    )
    return CategoricalRisk(records, inherent_table, measured.source.risk_table(measured.figures))
