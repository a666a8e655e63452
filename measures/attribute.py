"""Exact attribute disclosures of a partially synthetic release (Hu & Savitsky, Section 4.3, eq. 18).

A record is disclosed exactly in a dataset when all its synthesized values equal its true ones; the figure is
their number per dataset, read against the inherent minimum and maximum (Section 4.1, see
:mod:`bayessdc.measures.identification`). It does not depend on the intruder's knowledge set (subset
``"all"``).
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, register
from .identification import INHERENT_NOTES, banding_stated, inherent_references, per_dataset_figures

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
    from_release_figures = True

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.partially_synthetic and data.original is not None and data.synthesized)

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)  # computed once with the identification figures, on integer keys
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["attribute_disclosures"], strict=True)
        ]
        return banding_stated(self.result(values, inherent_references(data, "disclosures", None)), data)
