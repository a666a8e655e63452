"""Records copied from the original: the share of released rows equal to some original record.

A synthesizer that overfits (a deep tree, a leaf of one record) releases real records whole. For each
dataset, the share of its rows equal to some confidential record on every released column; its reference,
``held_out``, is the share a held-out real sample from the same population would show: the share of a
control set given with the release input, or else the leave-one-out share of the original (its records
equal to some *other* original record), which estimates it without spending data
(:func:`bayessdc.risk.copies.copied_reference`). A release well above its reference copies records; one
near it copies no more than chance coincidence of real records does.

``held_out`` is the right reading for a fully synthetic release only: in a partially synthetic one every row keeps
its record's kept values, so a row can copy its own record where no other record shares them, as no held-out
record can (on the simulated ACS persons with three of seven columns kept, the held-out share is 0.555 and a
release that never saw the records copies 0.615). The like-for-like reference of any release is ``unlearned``,
the same share for synthetic datasets of the same records drawn by fits that never saw them
(:attr:`MeasureInput.unlearned`, cross-fitted by the synthesizer): ``unlearned`` is the mean of its datasets with
its Monte Carlo error, ``unlearned_range`` the upper end of the range one of its datasets shows. A release that
learned its records always copies a little more than one that did not, and the difference is shown beyond Monte
Carlo error once m is large enough; the disclosure policy therefore judges a CART release's pooled share against
the range, which does not narrow as m grows: the release must not copy more than a release that never saw the
records could by chance. The same figure as SDMetrics'
NewRowSynthesis (one minus it) and synthpop's share of replicated records.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, mean_reference, range_reference, register

__all__ = ["CopiedRecords"]


@register
class CopiedRecords(Measure):
    """Share of each dataset's rows equal to some original record on all released columns."""

    reads = ("original", "holdout", "released", "weights", "unlearned")

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
        "unlearned": "the same share for datasets of the same records drawn by fits that never saw them "
        "(cross-fitted): what a release that could not have learned the records judged copies",
        "unlearned_range": "the upper end of the range one dataset of that release shows (mean + 1.96 sd): a "
        "release copying more than it stands out from a release that never saw the records",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and bool(data.record_columns)

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.copies import copied_holdout, copied_records, copied_reference

        table = copied_records(data.original, data.synthetic, data.record_columns)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["dataset"], table["share"], strict=True)
        ]
        if data.holdout is not None:
            reference = copied_holdout(data.original, data.holdout, data.record_columns)
        else:
            reference = copied_reference(data.original, data.record_columns)
        references = [{"subset": "all", "reference": "held_out", "value": float(reference)}]
        if data.unlearned is not None:
            unlearned = copied_records(data.original, data.unlearned, data.record_columns)["share"]
            references.append(mean_reference("all", "unlearned", unlearned))
            references.append(range_reference("all", "unlearned_range", unlearned))
        return self.result(values, references)
