"""One release pipeline for every synthesizer: prepare, fit, gate, draw m, release frame, risk, utility, write.

:func:`synthesize` runs the steps in that order for any :class:`Recipe`. A recipe (``bsd.Flows``,
``bsd.Spatial``, ``bsd.DPMPM``, ``bsd.DPAreal``, ``bsd.CART``) holds a synthesizer's priors and settings and
supplies the steps that differ between papers:

``prepare(frame, synthesize, keep, seed)``
    validated model input; bad input raises :class:`bayessdc.InputError` (or a model's ``...DataError``)
    naming the column, row or constraint, before any sampling;
``fit(prepared, m, seed, workdir, progress)``
    the posterior of every independent part (fanned out through the group runner where there are several)
    and the gate's figures, as :class:`Fitted` (a part's synthetic values may be drawn with its fit, so
    that a finished part is stored whole and a rerun resumes it);
``release(prepared, fitted, m, seed, progress)``
    the m synthetic datasets as one frame, the model's public description, risk and utility, as a
    :class:`bayessdc.Release`.

The pipeline applies the gate the same way for all: the diagnostics are written (when an output folder is
given) whatever the verdict, and a failed gate raises :class:`bayessdc.ConvergenceError` unless
``allow_unconverged`` is true, which the release records.
"""

from __future__ import annotations

import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bayessdc import progress as _progress
from bayessdc.models.sampling import ConvergenceCriteria, ConvergenceError, ConvergenceReport
from bayessdc.synthesis.output import OutputFolder

from ..errors import InputError
from ..release import Diagnostics, Release

__all__ = ["Fitted", "Prepared", "Recipe", "column_list", "synthesize"]

_log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """A recipe's validated input.

    Attributes
    ----------
    data
        The model input (recipe-specific).
    identity
        What defines the run besides m and seed (input fingerprint, columns, priors, settings).
    notices
        Messages for the user (dropped columns, groups released unchanged).
    extra
        Anything else the recipe's later steps need.
    """

    data: Any
    identity: dict[str, Any]
    notices: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fitted:
    """The posterior of every part and the gate's figures.

    Attributes
    ----------
    diagnostics
        The posterior per fit and the summary written to ``private/diagnostics.json``.
    report
        The worst part's convergence report (what a refusal prints).
    what
        What did not converge, in words (``"the DPMPM posterior"``, ``"3 group(s) (A, B, C)"``).
    hint
        Advice printed with a refusal.
    state
        Anything the recipe's release step needs (fitted parts, results of the group runner).
    reports
        The parameter gate's figures of every fit, by fit name (``report.to_dict()`` form); written to
        ``private/diagnostics.json`` under ``parameter_gate``, the one part of it every synthesizer shares.
    private_files
        Private files written whatever the verdict (for example a posterior summary).
    release_gate
        The release gate's figures (``private/diagnostics.json`` under ``release_gate``) when it, not the
        parameter gate, decides the release (the Dirichlet-process synthesizers).
    parameter_passed
        The parameter gate's verdict when the release gate decides (then only a diagnostic).
    failure, advice
        How a refusal words the failure and what to do (default: did not converge; sample longer).
    """

    diagnostics: Diagnostics
    report: ConvergenceReport | None
    what: str = "the posterior"
    hint: str = ""
    state: Any = None
    private_files: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    release_gate: dict[str, Any] | None = None
    parameter_passed: bool | None = None
    failure: str = "did not converge"
    advice: str = ""


class Recipe(ABC):
    """A synthesizer's part of the pipeline (see the module docstring)."""

    #: Short name used in outputs and the command line.
    name: str = ""

    @abstractmethod
    def prepare(
        self, frame: pd.DataFrame, synthesize: Sequence[str] | None, keep: Sequence[str] | None, seed: int = 0
    ) -> Prepared:
        """Validate ``frame`` and the column roles; nothing is sampled. ``seed`` is the run's seed, for any
        random step of the preparation (such as jittering shared locations)."""

    @abstractmethod
    def fit(self, prepared: Prepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit every part; ``workdir`` (when given) stores finished parts so that a rerun resumes."""

    @abstractmethod
    def release(self, prepared: Prepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Release:
        """Draw the m synthetic datasets and measure their risk and utility."""

    def synthesizer(self) -> Any:
        """The model object this recipe fits (the contract of ``bayessdc.models.base``), built from its
        priors and settings."""
        raise NotImplementedError(f"{type(self).__name__} has no single model object")

    def report_content(self, prepared: Prepared, release: Release) -> Any:
        """The synthesizer's material for the run's report (:class:`bayessdc.report.ReportContent`): the data
        to compare, its risk and utility figures with their reference points. By default none."""
        from bayessdc.report import ReportContent

        return ReportContent()

    def check_m(self, m: int) -> None:  # noqa: B027 - optional hook, nothing to check by default
        """Refuse an ``m`` the recipe cannot deliver (before sampling)."""


def synthesize(
    frame: pd.DataFrame,
    synthesizer: Recipe,
    *,
    synthesize: Sequence[str] | str | None = None,
    keep: Sequence[str] | str | None = None,
    m: int = 5,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
    allow_unconverged: bool = False,
    progress: bool = True,
) -> Release:
    """Fit ``synthesizer`` to ``frame`` and draw ``m`` synthetic datasets with their risk and utility.

    Parameters
    ----------
    frame
        The confidential table.
    synthesizer
        A recipe: ``bsd.Flows(...)``, ``bsd.Spatial(...)``, ``bsd.DPMPM(...)``, ``bsd.DPAreal(...)`` or
        ``bsd.CART(...)``.
    synthesize, keep
        The columns replaced by synthetic values, and the columns released unchanged and used by the model
        (a comma-separated string or a list). Flows take their columns from ``bsd.Flows(columns=...)``.
    m
        Number of synthetic datasets.
    seed
        Seed of the whole run: the same seed gives the same release.
    out
        Optional output folder, written as the run goes: finished parts are stored there (a rerun of the
        same run resumes them, a different run is refused) and the outputs are saved at the end, as
        :meth:`Release.save` would.
    allow_unconverged
        Release although the gate fails (recorded in ``release/model.json``).
    progress
        Progress bars (on a terminal or in a notebook, see :mod:`bayessdc.progress`) and the stages of the run
        as INFO messages of the ``bayessdc`` logger. ``False``: neither, for this call; notices (columns
        dropped, groups released unchanged) are WARNING messages and still shown. When logging is not
        configured at all (no handler on the ``bayessdc`` logger nor on the root logger, as in a fresh
        notebook), a handler writing ``bayessdc: message`` lines to standard error is attached for the call
        and removed after it; a program that configures :mod:`logging` decides itself what is shown.

    Returns
    -------
    Release

    Raises
    ------
    bayessdc.InputError
        Bad input or options, before any sampling.
    bayessdc.ConvergenceError
        The gate failed and ``allow_unconverged`` is false (``out/private/diagnostics.json`` is written);
        the error's ``diagnostics`` attribute holds the posteriors and figures.
    """
    if not isinstance(synthesizer, Recipe):
        raise InputError(
            f"synthesizer must be one of bsd.Flows, bsd.Spatial, bsd.DPMPM, bsd.DPAreal, bsd.CART; "
            f"got {type(synthesizer).__name__}"
        )
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InputError(f"m must be a whole number of at least 1 (--m), got {m!r}")
    start = time.perf_counter()
    try:
        synthesizer.check_m(m)
        prepared = synthesizer.prepare(frame, column_list(synthesize), column_list(keep), seed)
    except InputError:
        raise
    except ValueError as err:  # a model's own check of an option (K, conditioning, ...): the user's input too
        raise InputError(str(err)) from err
    identity = {**prepared.identity, "m": m, "seed": seed}
    folder = OutputFolder(out, identity) if out is not None else None
    try:
        with _progress.call_logging(progress):
            return _run(synthesizer, prepared, identity, folder, m, seed, allow_unconverged, progress, start)
    finally:
        if folder is not None:
            folder.close()


def _run(
    synthesizer: Recipe,
    prepared: Prepared,
    identity: dict[str, Any],
    folder: OutputFolder | None,
    m: int,
    seed: int,
    allow_unconverged: bool,
    progress: bool,
    start: float,
) -> Release:
    """Fit, gate, release and write (the steps of :func:`synthesize` after its checks)."""
    for notice in prepared.notices:  # what is dropped or released unchanged is said even when quiet
        _log.warning("%s", notice)
    _log.debug("%s run: %s", synthesizer.name, {k: v for k, v in identity.items() if k != "input"})
    fit_start = time.perf_counter()
    fitted = synthesizer.fit(prepared, m, seed, folder.private if folder else None, progress)
    _log.debug("%s: fitted in %.1f s", synthesizer.name, time.perf_counter() - fit_start)
    fitted.diagnostics.allow_unconverged = allow_unconverged
    fitted.diagnostics.summary["allow_unconverged"] = allow_unconverged
    release_gate = fitted.release_gate is not None
    fitted.diagnostics.summary["parameter_gate"] = {
        "passed": fitted.parameter_passed if release_gate else fitted.diagnostics.passed,
        "decides_release": not release_gate,
        "criteria": asdict(ConvergenceCriteria()),
        "fits": fitted.reports,
    }
    if release_gate:
        fitted.diagnostics.summary["release_gate"] = fitted.release_gate
    if folder is not None:
        folder.write_private_json("diagnostics.json", fitted.diagnostics.summary)
        for name, write in fitted.private_files.items():
            folder.write_private_file(name, write)
    if not fitted.diagnostics.passed and not allow_unconverged:
        refusal = ConvergenceError(
            fitted.report, fitted.what, hint=fitted.hint, failure=fitted.failure, advice=fitted.advice
        )
        refusal.diagnostics = fitted.diagnostics  # the posteriors and figures, for a notebook without out=
        if folder is not None:
            _write_refusal_report(folder, synthesizer, identity, fitted, m, seed, time.perf_counter() - start)
        raise refusal
    release_start = time.perf_counter()
    release = synthesizer.release(prepared, fitted, m, seed, progress)
    _log.debug("%s: %d datasets, risk and utility in %.1f s", synthesizer.name, m, time.perf_counter() - release_start)
    release.identity = identity
    # What every release/model.json states, written here once for all synthesizers.
    release.description.update({"m": m, "seed": seed, "allow_unconverged": allow_unconverged})
    release.private_files = {**fitted.private_files, **release.private_files}
    release.report_content = synthesizer.report_content(prepared, release)
    release.seconds = time.perf_counter() - start
    if folder is not None:
        release.write_to(folder, written=set(fitted.private_files))
    return release


def _write_refusal_report(
    folder: OutputFolder, synthesizer: Recipe, identity: dict[str, Any], fitted: Fitted, m: int, seed: int,
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


def column_list(columns: Sequence[str] | str | None) -> list[str] | None:
    """Columns given as a list, or as one comma-separated string (``None`` stays ``None``)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    out: list[str] = []
    for value in columns:
        out.extend(c.strip() for c in str(value).split(",") if c.strip())
    return out

