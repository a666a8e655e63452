"""Records copied from the original: the share of released rows equal to some original record.

A synthesizer that overfits (a deep tree, a leaf of one record) releases real records whole. For each
dataset, the share of its rows equal to some confidential record on every released column; its reference,
``held_out``, is the share a held-out real sample from the same population would show: the share of a
control set given with the release input, or else the leave-one-out share of the original (its records
equal to some *other* original record), which estimates it without spending data
(:func:`bayessdc.risk.copies.copied_reference`). A release well above its reference copies records; one
near it copies no more than chance coincidence of real records does. The same figure as SDMetrics'
NewRowSynthesis (one minus it) and synthpop's share of replicated records.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["CopiedRecords"]


@register
class CopiedRecords(Measure):
    """Share of each dataset's rows equal to some original record on all released columns."""

    name = "copied_records"
    headline = True
    kind = "risk"
    better = "lower"
    title = "records copied from the original"
    unit = "share of released rows"
    description = "share of released rows equal to some original record on every released column"
    references = {
        "held_out": "the share of a held-out real sample equal to some original record (a control set when given, "
        "else the original's leave-one-out share)",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and bool(data.released)

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.copies import copied_holdout, copied_records, copied_reference

        table = copied_records(data.original, data.synthetic, data.released)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["dataset"], table["share"], strict=True)
        ]
        if data.holdout is not None:
            reference = copied_holdout(data.original, data.holdout, data.released)
        else:
            reference = copied_reference(data.original, data.released)
        return self.result(values, [{"subset": "all", "reference": "held_out", "value": float(reference)}])
