"""Reports a disclosure review board reads: one per run (``private/report.html``) and one across runs.

:func:`write_run_report` lays out a release's report from what every release has (its description, the
gate's figures, the posteriors) and from the :class:`ReportContent` its synthesizer supplies (the data to
compare, the risk and utility figures with their reference points). :func:`compare_releases` puts several
runs on one risk-utility plot. Plots are matplotlib images inlined in one HTML file that opens offline.
"""

from .compare import FIGURES_FILE, RunFigures, compare_releases, load_run, run_figures
from .content import Figure, ReportContent, Table, Text
from .plots import BoundsMeasure, RiskUtilityPanel
from .run import gate_verdict, render_run_report, write_run_report

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
    "run_figures",
    "write_run_report",
]
