"""The intruder's correct guesses of sensitive values (Hawala, Reiter & Wang, Section 3.2, eq. 9-10).

An intruder who knows every other sensitive value and the model reads all m released datasets and guesses
each sensitive item's true value as its most probable one under their posterior (computed by the
synthesizer's own model, by importance sampling). ``R_all`` is the share of items guessed correctly (subset
``"all items"``), ``R_unq`` the same among the items whose identifying units appear once (subset
``"unique items"``); the subsets ``"..., no knowledge"`` are the intruder who knows no confidential value
(Section 3.1, :mod:`bayessdc.risk.no_knowledge`), shown beside the worst case. The figure is one of all m
datasets jointly (dataset 0). References: ``chance``, the
share an intruder guessing uniformly over the sensitive range gets right; ``unlearned`` and
``unlearned_range``, the share the same intruder gets right from a release that never saw the items judged
(each item's released values drawn from the posterior without it, :mod:`bayessdc.risk.unlearned`): its mean,
and its mean + 1.96 sd, the range one such release shows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayessdc.risk.attribute import unlearned_share
from bayessdc.risk.unlearned import REPLICATES

from .base import Z95, Measure, MeasureInput, MeasureResult, register

__all__ = ["IntruderCorrect", "item_subsets"]


def item_subsets(items: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    """The subsets of the sensitive items every intruder measure reports: ``all items`` and, when the items
    say which are unique (``unique``, the paper's ``a_t``), ``unique items``; each with its mask."""
    subsets = [("all items", np.ones(len(items), dtype=bool))]
    if "unique" in items:
        subsets.append(("unique items", items["unique"].to_numpy(dtype=bool)))
    return subsets


@register
class IntruderCorrect(Measure):
    """Share of sensitive items whose true value is the intruder's most probable guess (R_all, R_unq)."""

    reads = ("items",)

    name = "intruder_correct"
    headline = "all items"
    kind = "risk"
    better = "lower"
    title = "intruder's correct guesses"
    unit = "share of items"
    description = (
        "share of sensitive items whose true value is the intruder's most probable one, reading all m datasets "
        "(R_all over all items, R_unq over the unique ones; eq. 9-10)"
    )
    subsets = (
        "'all items' (R_all) or 'unique items' (R_unq), the worst-case intruder's; the same followed by "
        "', no knowledge' for the intruder who knows no confidential value (Section 3.1)"
    )
    subset_names = ("all items", "unique items", "all items, no knowledge", "unique items, no knowledge")
    references = {
        "chance": "the share a uniform guess over the sensitive range gets right",
        "unlearned": "the share guessed from a release that never saw the items (leave-one-out posterior)",
        "unlearned_range": "the range of one release that never saw the items: its mean + 1.96 sd",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.items is not None and "correct" in data.items

    def compute(self, data: MeasureInput) -> MeasureResult:
        items = data.items
        correct = items["correct"].to_numpy(dtype=bool)
        chance = items["chance"].to_numpy(dtype=float) if "chance" in items else None
        unlearned = items["unlearned_correct"].to_numpy(dtype=float) if "unlearned_correct" in items else None
        values, references = [], []
        for subset, mask in item_subsets(items):
            if not mask.any():
                continue
            values.append({"subset": subset, "dataset": 0, "value": float(correct[mask].mean())})
            if chance is not None:
                references.append({"subset": subset, "reference": "chance", "value": float(chance[mask].mean())})
            if unlearned is not None:
                share = unlearned_share(unlearned[mask])
                spread = {"lower": share["mean"] - Z95 * share["sd"], "upper": share["range"]}
                references += [
                    {"subset": subset, "reference": "unlearned", "value": share["mean"], **spread,
                     "mc_se": share["sd"] / np.sqrt(REPLICATES), "repetitions": REPLICATES},
                    {"subset": subset, "reference": "unlearned_range", "value": share["range"], **spread},
                ]  # fmt: skip
        if "no_knowledge_correct" in items:
            guessed = items["no_knowledge_correct"].to_numpy(dtype=bool)
            values += [{"subset": f"{subset}, no knowledge", "dataset": 0, "value": float(guessed[mask].mean())}
                       for subset, mask in item_subsets(items) if mask.any()]  # fmt: skip
        return self.result(values, references)
