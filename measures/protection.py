"""Protection of the sensitive cells of an adjusted table (Cox, controlled tabular adjustment).

Each sensitive cell must move by at least its protection level (up or down) in the adjusted table, or an
intruder who knows the rule could bound its value closely. The figure is the number of sensitive cells whose
adjustment falls short of its protection (one adjusted table: dataset 1).
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["UnprotectedCells"]


@register
class UnprotectedCells(Measure):
    """Sensitive cells whose adjustment falls short of their protection level."""

    reads = ("cells",)

    name = "unprotected_cells"
    kind = "risk"
    better = "lower"
    title = "sensitive cells short of their protection"
    unit = "cells"
    description = "sensitive cells whose adjustment is smaller than their protection level (Cox)"
    references = {"sensitive_cells": "the sensitive cells of the table"}

    def applies(self, data: MeasureInput) -> bool:
        return data.cells is not None and "protected" in data.cells

    def compute(self, data: MeasureInput) -> MeasureResult:
        protected = data.cells["protected"].astype(bool)
        return self.result(
            [{"subset": "all", "dataset": 1, "value": float((~protected).sum())}],
            [{"subset": "all", "reference": "sensitive_cells", "value": float(len(protected))}],
        )
