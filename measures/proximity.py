"""Proximity of synthetic values to the true ones (Quick, Holan & Wikle, Section 4).

For a continuous released value (a home's price at its location), the share of records whose synthetic value
lies within a relative band (default 10%) of the true one, per dataset: among the spatially isolated,
at-risk records (subset ``"at-risk records"``), whose values differential smoothing protects, and among the
others (``"other records"``). Reference ``unsmoothed``: the same share from the model without the
restriction (the first stage), pooled over its m datasets: how much the smoothing removed. Reference
``other_records`` of the at-risk subsets: the other records' share in the same datasets (the mean over the m
datasets, with its Monte Carlo error). Quick, Holan & Wikle smooth the isolated records so that they are no easier
to learn than the rest (their San Francisco homes: the at-risk records' share cut by 50%, the others' by 11%); the
disclosure policy judges a spatial release by it: an isolated record no more exposed than a typical one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Measure, MeasureInput, MeasureResult, mean_reference, register

__all__ = ["ProximityInput", "ProximityShare"]


@dataclass
class ProximityInput:
    """The values a proximity measure reads.

    Attributes
    ----------
    truth
        The confidential values, shape ``(n,)``, on the released scale.
    released
        The released synthetic values, shape ``(m, n)``.
    reference
        The reference stage's synthetic values, shape ``(m, n)`` (``None``: no reference).
    at_risk
        The records whose value the release protects, shape ``(n,)``.
    band
        Half-width of the band as a share of the true value's magnitude.
    absolute
        Half-width of an absolute band on the released scale (``None``: none); its shares are the subsets
        ``"at-risk records, absolute band"`` and ``"other records, absolute band"``.
    """

    truth: np.ndarray
    released: np.ndarray
    at_risk: np.ndarray
    band: float = 0.10
    reference: np.ndarray | None = None
    absolute: float | None = None


@register
class ProximityShare(Measure):
    """Share of records whose synthetic value lies within ``band`` of the true one, per dataset."""

    reads = ("proximity",)

    name = "proximity"
    headline = "at-risk records"
    kind = "risk"
    better = "lower"
    title = "synthetic values within the band of the true one"
    unit = "share of records"
    description = "share of records whose synthetic value is within the relative band of its true value"
    subsets = "'at-risk records' or 'other records' (and ', absolute band' of each)"
    subset_names = ("at-risk records", "other records", "at-risk records, absolute band",
                    "other records, absolute band")
    references = {
        "unsmoothed": "the same share from the model without differential smoothing (first stage)",
        "other_records": "of the at-risk records: the share of the other records, in the same datasets",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.proximity is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        p: ProximityInput = data.proximity
        truth = np.asarray(p.truth, dtype=float)
        at_risk = np.asarray(p.at_risk, dtype=bool)

        def within(values: np.ndarray, width: np.ndarray) -> np.ndarray:
            return np.abs(np.asarray(values, dtype=float) - truth[None, :]) <= width[None, :]

        widths = [("", p.band * np.abs(truth))]
        if p.absolute is not None:
            widths.append((", absolute band", np.full(len(truth), float(p.absolute))))
        values, references = [], []
        for suffix, width in widths:
            released = within(p.released, width)
            reference = within(p.reference, width) if p.reference is not None else None
            for group, mask in (("at-risk records", at_risk), ("other records", ~at_risk)):
                if not mask.any():
                    continue
                subset = group + suffix
                shares = released[:, mask].mean(axis=1)
                values += [{"subset": subset, "dataset": k + 1, "value": float(s)} for k, s in enumerate(shares)]
                if reference is not None:
                    share = float(reference[:, mask].mean())
                    references.append({"subset": subset, "reference": "unsmoothed", "value": share})
            if at_risk.any() and (~at_risk).any():
                typical = released[:, ~at_risk].mean(axis=1)
                references.append(mean_reference("at-risk records" + suffix, "other_records", typical))
        return self.result(values, references)
