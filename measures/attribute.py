"""Exact attribute disclosures of a partially synthetic release (Hu & Savitsky, Section 4.3, eq. 18).

A record is disclosed exactly in a dataset when all its synthesized values equal its true ones; the figure is
their number per dataset, read against the inherent minimum and maximum (Section 4.1, see
:mod:`bayessdc.measures.identification`). It does not depend on the intruder's knowledge set (subset
``"all"``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register
from .identification import INHERENT_NOTES, inherent_references

__all__ = ["ExactAttributeDisclosures"]


@register
class ExactAttributeDisclosures(Measure):
    """Records whose synthesized values all equal the true ones (eq. 18), per dataset."""

    name = "attribute_disclosures"
    kind = "risk"
    better = "lower"
    title = "exact attribute disclosures"
    unit = "records"
    description = "records whose synthesized values all equal their true ones (eq. 18)"
    references = INHERENT_NOTES

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.partially_synthetic and data.original is not None and data.synthesized)

    def compute(self, data: MeasureInput) -> MeasureResult:
        values = []
        for number, dataset in data.synthetic.groupby("synthetic", sort=True):
            same = np.ones(len(data.original), dtype=bool)
            for col in data.synthesized:
                same &= _equal(dataset[col].to_numpy(), data.original[col].to_numpy())
            values.append({"subset": "all", "dataset": int(number), "value": float(same.sum())})
        return self.result(values, inherent_references(data, "disclosures", None))


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality with a missing value equal to itself."""
    same = a == b
    missing = pd.isna(a) & pd.isna(b)
    return np.asarray(same, dtype=bool) | missing
