"""What an intruder who reads all m datasets learns of each sensitive item (the synthesizer's own posterior).

An intruder who knows the model, every other sensitive value and the released datasets computes the
posterior of an item's true value under a uniform prior over its candidates (Hawala, Reiter & Wang, eq. 3-8;
Hu & Savitsky's Bayesian attribute risk, by importance sampling over posterior draws). The synthesizer gives
these per item in :attr:`~bayessdc.measures.MeasureInput.items`; the figures here read them, whatever the
synthesizer. Each item is one value of the m datasets jointly (dataset 0), so the pooled value is the mean over
the items and the worst is the most exposed item.

* :class:`TrueValueProbability`: ``rho_t``, the intruder's posterior probability of the true value; reference
  ``chance``, the uniform prior's probability (one over the candidates).
* :class:`GuessDistance`: ``d_t``, how far the intruder's most probable value is from the true one (counts);
  reference ``chance``, the mean distance of a uniform guess over the range. Larger protects more.

Pareto k-hat of each item's importance weights (column ``khat``) says whether its estimate can be trusted
(above 0.7 it cannot); the report shows it among the diagnostics.
"""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureResult, register
from .intruder import item_subsets

__all__ = ["GuessDistance", "TrueValueProbability"]


def _per_item(data: MeasureInput, column: str, reference: str | None) -> tuple[list[dict], list[dict]]:
    """Rows ``{subset, dataset 0, value}`` of every item (subsets ``all items`` and ``unique items``) and the
    mean of the ``reference`` column per subset as the reference ``chance``."""
    items = data.items
    value = items[column].to_numpy(dtype=float)
    values, references = [], []
    for subset, mask in item_subsets(items):
        mask = mask & np.isfinite(value)
        if not mask.any():
            continue
        values += [{"subset": subset, "dataset": 0, "value": float(v)} for v in value[mask]]
        if reference is not None and reference in items:
            chance = items[reference].to_numpy(dtype=float)[mask]
            references.append({"subset": subset, "reference": "chance", "value": float(np.mean(chance))})
    return values, references


@register
class TrueValueProbability(Measure):
    """The intruder's posterior probability of each sensitive item's true value (``rho_t``)."""

    reads = ("items",)

    name = "true_value_probability"
    kind = "risk"
    better = "lower"
    title = "intruder's probability of the true value (rho_t)"
    unit = "posterior probability"
    description = (
        "each item's posterior probability of its true value for an intruder who knows the model and every other "
        "value and reads all m datasets (importance sampling; mean over the items, worst the most exposed)"
    )
    subsets = "'all items' or 'unique items'"
    subset_names = ("all items", "unique items")
    references = {"chance": "the uniform prior's probability of the true value: one over the candidates"}

    def applies(self, data: MeasureInput) -> bool:
        return data.items is not None and "true_probability" in data.items and len(data.items) > 0

    def compute(self, data: MeasureInput) -> MeasureResult:
        return self.result(*_per_item(data, "true_probability", "chance"))


@register
class GuessDistance(Measure):
    """How far the intruder's most probable value is from the true one (``d_t``); larger protects more."""

    reads = ("items",)

    name = "guess_distance"
    kind = "risk"
    better = "higher"
    title = "distance of the intruder's guess from the true value (d_t)"
    unit = "|guess - true value|"
    description = "each item's distance between the intruder's most probable value and the true one (0: disclosed)"
    subsets = "'all items' or 'unique items'"
    subset_names = ("all items", "unique items")
    references = {"chance": "the mean distance of a guess drawn uniformly over the sensitive range"}

    def applies(self, data: MeasureInput) -> bool:
        return data.items is not None and "distance" in data.items and len(data.items) > 0

    def compute(self, data: MeasureInput) -> MeasureResult:
        return self.result(*_per_item(data, "distance", "chance_distance"))
