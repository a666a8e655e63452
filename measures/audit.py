"""The intruder's audit of a published table: sensitive cells whose audited interval is narrower than their
protection (Cox; sdcTable ``attack()``; tau-ARGUS's audit).

:func:`bayessdc.cta.audit.audit_table` solves, for every sensitive cell of a published table (adjusted,
suppressed or both), the intruder's two linear programs: the smallest and largest true value consistent with the
published cells, the additivity equations, the a-priori bounds and what the intruder knows of the method. A cell is
protected when that interval covers its protection range ``[x - LPL, x + UPL]``. The figure is the number of
sensitive cells that are not (subset ``all``, one published table: dataset 1), and one subset per such cell, named
as the table names it (``row=R4, column=C9``) with the value 1, so that a policy's verdict names every failing
cell. The audit's frame, true values included, is the result's :attr:`~bayessdc.measures.MeasureResult.details`
(private, as the measures are).
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["AuditedCells"]


@register
class AuditedCells(Measure):
    """Sensitive cells whose interval, as the intruder's linear programs derive it, is narrower than their
    protection."""

    reads = ("audit",)

    name = "audited_cells"
    kind = "risk"
    better = "lower"
    title = "sensitive cells the intruder's audit narrows below their protection"
    unit = "cells"
    description = (
        "sensitive cells whose interval derived by the intruder's linear programs (published cells, additivity, "
        "a-priori bounds, the method) does not cover their protection range (Cox; sdcTable attack(); tau-ARGUS audit)"
    )
    references = {"sensitive_cells": "the sensitive cells of the table"}
    subsets = "all, or a sensitive cell the audit finds unprotected"
    subset_names = None

    def applies(self, data: MeasureInput) -> bool:
        return data.audit is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        audit = data.audit.run()
        failing = audit.loc[~audit["protected"].astype(bool)]
        values = [{"subset": "all", "dataset": 1, "value": float(len(failing))}]
        values += [{"subset": str(name), "dataset": 1, "value": 1.0} for name in failing["name"]]
        result = self.result(values, [{"subset": "all", "reference": "sensitive_cells", "value": float(len(audit))}])
        ends = {"lower": "the lower end", "upper": "the upper end", "both": "both ends"}
        for row in failing[["name", "min", "max", "fails"]].itertuples(index=False):
            result.notes[str(row.name)] = (f"audited interval [{row.min:.6g}, {row.max:.6g}] misses {ends[row.fails]} "
                                           "of the protection range")  # fmt: skip
        if data.details:
            result.details = audit.drop(columns=["cell"])
        return result
