"""What a synthesizer contributes to its report: data to compare and items for each section.

A synthesizer's pipeline builds one :class:`ReportContent` from its release (it alone knows what its risk
and utility figures mean); :func:`bayessdc.report.write_run_report` lays out every report the same way from
it and from what every release has (the description, the gate's figures, the posteriors).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from .plots import RiskUtilityPanel

__all__ = ["Figure", "ReportContent", "Table", "Text"]


@dataclass
class Figure:
    """A plot, drawn when the report is written.

    Attributes
    ----------
    draw
        Returns the matplotlib figure (usually a function of :mod:`bayessdc.report.plots` with its data bound).
    caption
        What the reader should see in it.
    """

    draw: Callable[[], MplFigure]
    caption: str = ""


@dataclass
class Table:
    """A table: a DataFrame, or a mapping shown as two columns."""

    data: pd.DataFrame | dict[str, Any]
    caption: str = ""
    index: bool = False


@dataclass
class Text:
    """A paragraph."""

    text: str


Item = Figure | Table | Text


@dataclass
class ReportContent:
    """A release's report material beyond what every release has.

    Attributes
    ----------
    original, synthetic, compared
        The confidential values (in memory only; the report is private) and the stacked synthetic datasets
        (column ``synthetic`` = 1..m) of the ``compared`` columns, whose distributions are compared.
    about
        Sentences on what was synthesized and how.
    diagnostics, comparison, risk, utility
        Further items of those sections (a map of the locations, the risk figures with their reference
        points, the utility figures).
    risk_utility
        The run's risk-utility panels (also written to ``private/risk_utility.json`` for
        ``bayessdc report`` across runs).
    """

    original: pd.DataFrame | None = None
    synthetic: pd.DataFrame | None = None
    compared: list[str] = field(default_factory=list)
    about: list[str] = field(default_factory=list)
    diagnostics: list[Item] = field(default_factory=list)
    comparison: list[Item] = field(default_factory=list)
    risk: list[Item] = field(default_factory=list)
    utility: list[Item] = field(default_factory=list)
    risk_utility: list[RiskUtilityPanel] = field(default_factory=list)
