"""What the pipeline writes besides the release: the report of a run the gate refused, and the control set in words."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayessdc.synthesis.output import OutputFolder

from ..release import Release
from .recipe import Fitted, Recipe

__all__ = ["control_sentence", "write_refusal_report"]


def write_refusal_report(
    folder: OutputFolder,
    synthesizer: Recipe,
    identity: dict[str, Any],
    fitted: Fitted,
    m: int,
    seed: int,
    seconds: float,
) -> None:
    """``private/report.html`` of a refused run: the verdict and the posterior diagnostics (nothing released,
    so nothing to compare); the run's settings stand in for the model description."""
    from bayessdc.report import render_run_report
    from bayessdc.report.html import html_writer

    refused = Release(
        synthesizer=synthesizer.name,
        synthetic=pd.DataFrame(),
        description={k: v for k, v in identity.items() if k != "input"},
        diagnostics=fitted.diagnostics,
        identity=identity,
        m=m,
        seed=seed,
        seconds=seconds,
    )
    folder.write_private_file("report.html", html_writer(lambda: render_run_report(refused)))


def control_sentence(control_set: dict[str, Any]) -> str:
    """What the report says of the control set."""
    if control_set["given"]:
        return (f"The attack measures use a control set of {control_set['records']:,} real records given apart from "
                "the input; the model was fitted on every input record.")  # fmt: skip
    return (f"Evaluation run: {control_set['records']:,} records ({control_set['share']:.0%}) were held out as the "
            f"control set of the attack measures, and the model was fitted on the other {control_set['fitted_on']:,}. "
            "These figures describe this fit; a release fitted on every record is another run.")  # fmt: skip
