"""Several runs on one risk-utility plot (``bayessdc report RUN_DIR ... --out FILE``, :func:`compare_releases`).

Each run's ``private/risk_utility.json`` names its risk and utility measures; runs naming the same two
measures (the DPMPM and the DP-areal on the same data, say) share a plot, with each run's inherent bounds,
as Hu & Savitsky's comparison does. The page also lists each run's gate verdict and links its own report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import plots
from .html import Document, write_html

__all__ = ["FIGURES_FILE", "RunFigures", "compare_releases", "load_run", "render_comparison", "run_figures"]

#: The file under ``private/`` holding what the comparison needs of a run.
FIGURES_FILE = "risk_utility.json"


@dataclass
class RunFigures:
    """What a comparison shows of one run.

    Attributes
    ----------
    label
        The run's name on the plot.
    synthesizer, m, seed
        As in ``release/model.json``.
    verdict, passed
        The gate's verdict in words and whether it passed.
    panels
        The run's risk-utility panels.
    report
        The run's own report, when it has one.
    """

    label: str
    synthesizer: str
    m: int
    seed: int
    verdict: str
    passed: bool
    panels: list[plots.RiskUtilityPanel] = field(default_factory=list)
    report: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``private/risk_utility.json``; the label and report path are the reader's)."""
        return {
            "synthesizer": self.synthesizer,
            "m": self.m,
            "seed": self.seed,
            "verdict": self.verdict,
            "passed": self.passed,
            "panels": [p.to_dict() for p in self.panels],
        }


def load_run(folder: str | os.PathLike[str], label: str | None = None) -> RunFigures:
    """The figures of a run folder written by bayessdc (its ``private/risk_utility.json``).

    Raises
    ------
    bayessdc.InputError
        The folder is not a finished bayessdc run with risk and utility figures.
    """
    from bayessdc.errors import InputError

    folder = Path(folder)
    path = folder / "private" / FIGURES_FILE
    if not path.is_file():
        raise InputError(
            f"{folder}: not a finished bayessdc synthesis run (no private/{FIGURES_FILE}); give the output folder "
            "of bayessdc flows, spatial, dpmpm, dp-areal or cart"
        )
    payload = json.loads(path.read_text(encoding="utf-8"))
    report = folder / "private" / "report.html"
    return RunFigures(
        label=label or folder.resolve().name,
        synthesizer=payload["synthesizer"],
        m=int(payload["m"]),
        seed=int(payload["seed"]),
        verdict=payload["verdict"],
        passed=bool(payload["passed"]),
        panels=[plots.RiskUtilityPanel.from_dict(p) for p in payload["panels"]],
        report=report if report.is_file() else None,
    )


def render_comparison(runs: Sequence[RunFigures], out: Path | None = None) -> str:
    """The HTML text of the comparison of ``runs`` (links to their reports relative to ``out``)."""
    doc = Document(f"bayessdc: {len(runs)} runs compared")
    doc.paragraph(
        "Confidential: risk and utility figures of unpublished runs. Keep this file with the runs' private/ folders.",
        css="private",
    )
    doc.heading("The runs")
    rows = []
    for run in runs:
        link = ""
        if run.report is not None:
            base = out.parent if out is not None else Path.cwd()
            link = os.path.relpath(run.report.resolve(), base.resolve())
        rows.append({"run": run.label, "synthesizer": run.synthesizer, "m": run.m, "seed": run.seed,
                     "gate": "passed" if run.passed else "FAILED", "report": link})
    doc.table(pd.DataFrame(rows))
    for run in runs:
        doc.paragraph(f"{run.label}: {run.verdict}")
    groups: dict[tuple[str, str], list[tuple[str, plots.RiskUtilityPanel]]] = {}
    for run in runs:
        for panel in run.panels:
            groups.setdefault((panel.risk_measure, panel.utility_measure), []).append((run.label, panel))
    doc.heading("Risk against utility")
    if not groups:
        doc.paragraph("None of these runs has risk and utility figures.")
    for (risk, utility), members in groups.items():
        doc.heading(f"{risk} against {utility}", 3)
        doc.figure(
            plots.risk_utility(members),
            "Each run in its colour: the release (filled circle), reference stages (open squares) and its reference "
            "risks (vertical lines: the inherent minimum and maximum where the synthesizer has them).",
        )
        points = [
            {"run": label, "point": p["label"], "risk": p.get("risk"), "utility": p.get("utility"),
             **{f"risk: {k}": v for k, v in panel.risk_bounds.items()}}
            for label, panel in members
            for p in panel.points
        ]
        doc.table(pd.DataFrame(points))
    return doc.render()


def compare_releases(
    runs: Sequence[Any],
    out: str | os.PathLike[str],
    labels: Sequence[str] | None = None,
) -> Path:
    """Put several runs on one risk-utility plot with their inherent bounds, in one HTML file.

    Parameters
    ----------
    runs
        Releases (:class:`bayessdc.Release`) or their output folders, in any mix.
    out
        The HTML file to write. It shows unpublished risk figures: it may not lie in a ``release/`` folder.
    labels
        Names of the runs (default: the folder's name, or the synthesizer's with its position).

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    bayessdc.InputError
        A folder is not a finished run, the labels do not match the runs, or ``out`` lies in a
        ``release/`` folder.
    """
    from bayessdc.errors import InputError

    if not runs:
        raise InputError("give at least one run to report on")
    if labels is not None and len(labels) != len(runs):
        raise InputError(f"{len(labels)} labels for {len(runs)} runs")
    out = Path(out)
    if any(part == "release" for part in out.resolve().parent.parts):
        raise InputError(f"{out}: a report holds unpublished risk figures; write it outside any release/ folder")
    figures = []
    for k, run in enumerate(runs):
        label = labels[k] if labels is not None else None
        if isinstance(run, str | os.PathLike):
            figures.append(load_run(run, label))
        else:
            figures.append(run_figures(run, label or f"{run.synthesizer} ({k + 1})"))
    return write_html(out, render_comparison(figures, out))


def run_figures(release: Any, label: str = "") -> RunFigures:
    """The comparison's figures of an in-memory release."""
    from .run import gate_verdict, risk_utility_panels

    verdict, passed = gate_verdict(release.diagnostics.summary, release.diagnostics.allow_unconverged)
    return RunFigures(
        label=label or release.synthesizer,
        synthesizer=release.synthesizer,
        m=release.m,
        seed=release.seed,
        verdict=verdict,
        passed=passed,
        panels=risk_utility_panels(release),
    )

