"""Exact attribute disclosures of a partially synthetic release (Hu & Savitsky, Section 4.3, eq. 18).

A record is disclosed exactly in a dataset when all its synthesized values equal its true ones; the figure is
their number per dataset, read against the inherent minimum and maximum (Section 4.1, see
:mod:`bayessdc.measures.identification`). It does not depend on the intruder's knowledge set (subset
``"all"``).
"""

from __future__ import annotations

from typing import ClassVar

from .base import Measure, MeasureInput, MeasureResult, register
from .identification import (
    IDENTIFICATION_READS,
    INHERENT_NOTES,
    banding_stated,
    crossing_stated,
    inherent_references,
    per_dataset_figures,
)

#: The ``inherent_min`` note when the maximum resamples the patterns by survey weight.
WEIGHTED_MIN_NOTE = (
    INHERENT_NOTES["inherent_min"] + "; with survey weights not a lower bound by construction: the weighted "
    "maximum gives a heavy record's level to its pattern's light records (bayessdc.risk.identification, 'Which "
    "figures the pair bounds'), and where the minimum is above it the pair bounds nothing"
)

__all__ = ["ExactAttributeDisclosures"]


@register
class ExactAttributeDisclosures(Measure):
    """Records whose synthesized values all equal the true ones (eq. 18), per dataset."""

    reads = IDENTIFICATION_READS

    name = "attribute_disclosures"
    kind = "risk"
    better = "lower"
    title = "exact attribute disclosures"
    unit = "records"
    description = "records whose synthesized values all equal their true ones (eq. 18)"
    references = INHERENT_NOTES
    #: The inherent minimum's expectation is at most the maximum's by construction (``k sum_y p_y^2 >= k / L`` in
    #: every pattern; :mod:`bayessdc.risk.identification`, 'Which figures the pair bounds'), without survey
    #: weights: the weighted maximum is not ordered so (the ``inherent_min`` note of such a release says it).
    inherent_bound: ClassVar[bool] = True
    #: The column of the inherent scenarios' tables it reads.
    figure: ClassVar[str] = "disclosures"
    from_release_figures = True

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.partially_synthetic and data.original is not None and data.synthesized)

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)  # computed once with the identification figures, on integer keys
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["attribute_disclosures"], strict=True)
        ]
        result = banding_stated(self.result(values, inherent_references(data, self.figure, None)), data)
        if data.weights is not None and "inherent_min" in result.reference_notes:
            result.reference_notes["inherent_min"] = WEIGHTED_MIN_NOTE
        return crossing_stated(result)
