"""A release's measures as lines of text: what ``bayessdc <synthesizer>`` prints after a run, and the demo's table.

One formatter for every synthesizer: it reads the measure table (:meth:`bayessdc.Release.measure_table`), never a
synthesizer's own figures, so a figure printed is a figure the policy judged and the report shows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayessdc.measures.base import SUMMARY_COLUMNS

from .html import format_value

__all__ = ["measure_lines", "measure_rows"]



def _references(row: pd.Series) -> list[tuple[str, float]]:
    return [(str(k), float(v)) for k, v in row.items()
            if k not in SUMMARY_COLUMNS and isinstance(v, float | int | np.floating) and np.isfinite(v)]  # fmt: skip


def measure_lines(measured: Any, kind: str | None = None, indent: str = "  ") -> list[str]:
    """The measures of a release as lines of text: per measure its kind, name and title, then one line per subset
    with the pooled figure, its 95% interval, the worst dataset when there are several, and the references.

    Parameters
    ----------
    measured
        :attr:`bayessdc.Release.measured` (a :class:`bayessdc.measures.MeasureSet`; ``None``: no line).
    kind
        ``"risk"`` or ``"utility"`` for one kind only; ``None`` for both.
    indent
        Put before every line.

    Returns
    -------
    list of str
        For example ``"  risk intruder_correct: intruder's correct guesses"`` and
        ``"    [all items] 0.264; chance 0.111, unlearned 0.228"``.
    """
    lines = []
    for name, result in (measured or {}).items():
        if kind not in (None, result.kind):
            continue
        lines.append(f"{indent}{result.kind} {name}: {result.title}")
        shown = result.shown_summary()
        for _, row in shown.iterrows():
            figure = format_value(float(row["pooled"]))
            lower, upper = float(row["lower"]), float(row["upper"])
            if row["interval"] not in ("", "joint", "none") and np.isfinite(lower) and np.isfinite(upper):
                figure += f" (95% {format_value(lower)} to {format_value(upper)})"
            if int(row["datasets"]) > 1 and row["interval"] != "joint":
                figure += f", worst {format_value(float(row['worst']))}"
            references = ", ".join(f"{ref} {format_value(value)}" for ref, value in _references(row))
            note = f" [{row['note']}]" if row["note"] else ""
            lines.append(f"{indent}  [{row['subset']}] {figure}" + (f"; {references}" if references else "") + note)
        every = len(result.subsets())
        if every > len(shown):
            lines.append(f"{indent}  ... the {len(shown)} worst of {every} subsets shown; all in "
                         "private/measures.json")  # fmt: skip
    return lines


def measure_rows(release: Any, headline: bool = True) -> list[tuple[str, Any]]:
    """The demo table's rows of a release's measures: ``(measure [subset], pooled)`` and each reference beside it
    (``"  <reference>"``), for the headline measures only (``headline=True``) or every one."""
    rows: list[tuple[str, Any]] = []
    measured = release.measured or {}
    for name, result in measured.items():
        if headline and not result.headline:
            continue
        for _, row in result.summary().iterrows():
            if headline and isinstance(result.headline, str) and row["subset"] != result.headline:
                continue
            rows.append((f"{name} [{row['subset']}]", float(row["pooled"])))
            rows += [(f"  {reference}", value) for reference, value in _references(row)]
    return rows
