"""Reports a disclosure review board reads: one per run (``private/report.html``) and one across runs.

:func:`write_run_report` lays out a release's report from what every release has (its description, the
gate's figures, the posteriors, the measure objects with their references and the disclosure policy's
verdict) and from the :class:`ReportContent` its synthesizer supplies (what it did, the data to compare, its
own diagnostics). :func:`compare_releases` puts several
runs on one risk-utility plot. Plots are matplotlib images inlined in one HTML file that opens offline.
"""

from .compare import FIGURES_FILE, RunFigures, compare_releases, load_run, run_figures
from .content import Figure, ReportContent, Table, Text
from .plots import BoundsMeasure, RiskUtilityPanel
from .run import gate_verdict, render_run_report, risk_utility_panels, write_run_report

__all__ = [
    "FIGURES_FILE",
    "BoundsMeasure",
    "Figure",
    "ReportContent",
    "RiskUtilityPanel",
    "RunFigures",
    "Table",
    "Text",
    "compare_releases",
    "gate_verdict",
    "load_run",
    "render_run_report",
    "risk_utility_panels",
    "run_figures",
    "write_run_report",
]
