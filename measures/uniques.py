"""Replicated uniques: records unique in the original that a synthetic dataset reproduces whole.

A record whose combination of released values occurs once in the confidential data is the one an intruder
can single out; a synthetic row equal to it tells the intruder that such a person exists with exactly those
values. Two readings, as subsets of one measure (counts of synthetic rows per dataset):

* ``unique in both``: synthetic rows unique within their dataset and equal to an original unique, the rule of
  synthpop's ``replicated.uniques`` and of its removal ``sdc(rm.replicated.uniques = TRUE)`` (Nowok, Raab &
  Dibben 2016); removing these rows is a lever that needs no refit
  (:func:`bayessdc.risk.copies.remove_replicated_uniques`);
* ``original uniques reappearing``: original uniques that reappear in the dataset at all.

A release of persons in households (:attr:`MeasureInput.households`) is judged by its households instead
(:mod:`bayessdc.measures.households`: the unique households reappearing, the household form of this measure): its
rows are members drawn with their household, and removing one would leave a household without it (on the
simulated households of ``bsd.examples.households``, 1,500 households in 4 areas, removing whole households with a
replicated member took 3,427 of 10,611 rows, where the release reproduced 152 original uniques per dataset and its
cross-fitted release, which never saw them, 147).
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, mean_reference, register

__all__ = ["ReplicatedUniques", "SUBSET_BOTH", "SUBSET_REAPPEARING"]

SUBSET_BOTH = "unique in both"
SUBSET_REAPPEARING = "original uniques reappearing"


@register
class ReplicatedUniques(Measure):
    """Original records unique on the released columns that a synthetic dataset reproduces."""

    reads = ("original", "released", "weights", "unlearned", "households")

    name = "replicated_uniques"
    kind = "risk"
    better = "lower"
    title = "replicated uniques"
    unit = "records"
    description = "original records unique on the released columns reproduced whole in a synthetic dataset"
    subsets = f"{SUBSET_BOTH!r} (synthpop's rule) or {SUBSET_REAPPEARING!r}"
    subset_names = (SUBSET_BOTH, SUBSET_REAPPEARING)
    references = {
        "original_uniques": "the records unique on the released columns in the original",
        "unlearned": "the same count for datasets of the same records drawn by fits that never saw them "
        "(cross-fitted): the uniques a release replicates by chance",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and bool(data.record_columns) and data.households is None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.copies import replicated_uniques

        table = replicated_uniques(data.original, data.synthetic, data.record_columns)
        values = []
        for subset, column in ((SUBSET_BOTH, "replicated_unique_in_both"), (SUBSET_REAPPEARING, "replicated")):
            values += [
                {"subset": subset, "dataset": int(d), "value": float(v)}
                for d, v in zip(table["dataset"], table[column], strict=True)
            ]
        uniques = float(table["original_uniques"].iloc[0]) if len(table) else 0.0
        references = [{"subset": s, "reference": "original_uniques", "value": uniques}
                      for s in (SUBSET_BOTH, SUBSET_REAPPEARING)]  # fmt: skip
        if data.unlearned is not None:
            unlearned = replicated_uniques(data.original, data.unlearned, data.record_columns)
            for subset, column in ((SUBSET_BOTH, "replicated_unique_in_both"), (SUBSET_REAPPEARING, "replicated")):
                references.append(mean_reference(subset, "unlearned", unlearned[column]))
        return self.result(values, references)
