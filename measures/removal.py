"""What removing replicated uniques takes from a release: the share of rows removed, and the rows left.

A release of records has its replicated uniques removed before it is judged (synthpop's
``sdc(rm.replicated.uniques = TRUE)``; :mod:`bayessdc.measures.uniques`). Removal needs no refit, but it is not
free: the removed rows are the release's rarest combinations, and a release that must lose many of them copies
unique records as a habit, not by chance. Two measures, computed where rows were removed
(:attr:`~bayessdc.measures.MeasureInput.removed`):

* ``removed_records``, the share of each dataset's rows removed, read against ``unlearned``, the share the same
  rule removes from datasets of the same records drawn by fits that never saw them (the chance a release
  reproduces a unique record it could not have learned), or, for a partially synthetic release with no such
  datasets, against ``inherent_max``, the share it removes from Hu & Savitsky's inherent maximum (every
  synthesized value redrawn from its pattern's distribution in the original: a record alone in its pattern
  always reappears, so this is the most a synthesizer drawing from the data distribution replicates);
* ``released_records``, the rows each dataset keeps: a release of a handful of records is the records.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, mean_reference, range_reference, register

__all__ = ["ReleasedRecords", "RemovedRecords"]


@register
class RemovedRecords(Measure):
    """Share of each dataset's rows removed as replicated uniques."""

    reads = ("removed", "unlearned_removed", "inherent_removed")

    name = "removed_records"
    kind = "risk"
    better = "lower"
    title = "rows removed as replicated uniques"
    unit = "share of the dataset's rows"
    description = "share of each synthetic dataset's rows removed as replicated uniques before release"
    references = {
        "unlearned": "the share the same removal takes from datasets of the same records drawn by fits that never "
        "saw them (cross-fitted)",
        "unlearned_range": "the upper end of the range one dataset of that release shows (mean + 1.96 sd)",
        "inherent_max": "the share the same removal takes from the inherent maximum's datasets (the synthesized "
        "values redrawn from the original's own distribution within each pattern of kept values)",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.removed is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = data.removed
        values = [
            {"subset": "all", "dataset": int(d), "value": (r / n if n else 1.0)}
            for d, r, n in zip(table["dataset"], table["removed"], table["rows"], strict=True)
        ]
        references = []
        if data.unlearned_removed is not None:
            u = data.unlearned_removed
            shares = [r / n if n else 1.0 for r, n in zip(u["removed"], u["rows"], strict=True)]
            references.append(mean_reference("all", "unlearned", shares))
            references.append(range_reference("all", "unlearned_range", shares))
        if data.inherent_removed is not None:
            u = data.inherent_removed
            shares = [r / n if n else 1.0 for r, n in zip(u["removed"], u["rows"], strict=True)]
            references.append(mean_reference("all", "inherent_max", shares))
        return self.result(values, references)


@register
class ReleasedRecords(Measure):
    """Rows each synthetic dataset keeps after its replicated uniques are removed."""

    reads = ("removed", "unlearned_removed", "inherent_removed")

    name = "released_records"
    kind = "risk"
    better = "higher"
    title = "rows released per dataset"
    unit = "rows"
    description = "rows of each synthetic dataset after the removal of its replicated uniques"

    def applies(self, data: MeasureInput) -> bool:
        return data.removed is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = data.removed
        values = [{"subset": "all", "dataset": int(d), "value": float(k)}
                  for d, k in zip(table["dataset"], table["kept"], strict=True)]  # fmt: skip
        return self.result(values)
