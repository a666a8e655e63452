"""One release pipeline for every synthesizer: prepare, fit, gate, draw m, measure, judge, write.

:func:`synthesize` runs the steps in that order for any :class:`Recipe` (the contract is
:mod:`bayessdc.pipeline.recipe`): the recipe prepares its typed input, fits and describes itself, and draws
the m datasets with what the measures read (:class:`Drawn`); everything else is done here once, the same way
for every synthesizer.

The gate: the diagnostics are written (when an output folder is given) whatever the verdict, and a failed gate
raises :class:`bayessdc.ConvergenceError` unless ``allow_unconverged`` is true, which the release records. The
:class:`bayessdc.Release` is then built here from the recipe's draw and description, every measure that applies
is computed (:mod:`bayessdc.measures`) and judged by the disclosure policy (:mod:`bayessdc.policy`): a release
that fails is drawn again under the synthesizer's settings that need no refit (:meth:`Recipe.no_refit_settings`
and :meth:`Recipe.under`; for a release of whole records, the removal of replicated uniques when a criterion on
them fails), and refused (:class:`bayessdc.DisclosureRefused`) when none meets the policy.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import pandas as pd

from bayessdc import progress as _progress
from bayessdc.models.sampling import ConvergenceCriteria, ConvergenceError
from bayessdc.synthesis.output import OutputFolder, check_output_root, drawn_levels
from bayessdc.synthesis.replicates import ReplicateDesign

from ..control import hold_out
from ..errors import InputError
from ..policy import DisclosureRefused, Policy, load_policy
from ..release import Release
from ..validation import check_values
from .recipe import Drawn, Fitted, Lever, PosteriorFit, Prepared, Recipe, column_list
from .refusal import control_sentence, write_refusal_report
from .releasing import build_release, decide
from .resuming import resumed_fit
from .stopping import add_chains_until_certain
from .weighting import check_replicates, check_weights, weight_roles, weights_sentence

__all__ = [
    "Drawn", "Fitted", "Lever", "PosteriorFit", "Prepared", "Recipe", "column_list", "decide", "synthesize",
]  # fmt: skip

_log = logging.getLogger(__name__)


def diagnostics_summary(fitted: Fitted, allow_unconverged: bool) -> dict[str, Any]:
    """What ``private/diagnostics.json`` holds, composed in one place once the fit is final: the recipe's own
    figures (its fits' r_hat and ESS, the trees ...), the verdict (``passed``; ``gate``: ``"release"`` where the
    release gate decides), ``allow_unconverged``, the parameter gate (a diagnostic where the release gate decides)
    and the release gate's report (:meth:`~bayessdc.synthesis.release_gate.ReleaseGateReport.to_dict`)."""
    gate = fitted.release_gate
    summary = {**fitted.diagnostics.summary, "passed": fitted.diagnostics.passed}
    if gate is not None:
        summary["gate"] = "release"
    summary["allow_unconverged"] = allow_unconverged
    summary["parameter_gate"] = {
        "passed": fitted.parameter_passed if gate is not None else fitted.diagnostics.passed,
        "decides_release": gate is None,
        "criteria": asdict(ConvergenceCriteria()),
        "fits": fitted.reports,
    }
    if gate is not None:
        summary["release_gate"] = gate.to_dict()
    return summary


def synthesize(
    frame: pd.DataFrame,
    synthesizer: Recipe,
    *,
    synthesize: Sequence[str] | str | None = None,
    keep: Sequence[str] | str | None = None,
    m: int | None = None,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
    allow_unconverged: bool = False,
    policy: Policy | str | os.PathLike[str] | None = None,
    holdout: float | pd.DataFrame | str | os.PathLike[str] | None = None,
    resume: ConvergenceError | None = None,
    progress: bool = True,
    weights: str | None = None,
    replicate_weights: ReplicateDesign | None = None,
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
        Number of synthetic datasets (default the synthesizer's ``default_m``: 20 for the DPMPM and the
        DP-areal model, as Hu & Savitsky release, 5 for the others).
    seed
        Seed of the whole run: the same seed gives the same release.
    out
        Optional output folder, written as the run goes: finished parts are stored there (a rerun of the
        same run resumes them, a different run is refused) and the outputs are saved at the end, as
        :meth:`Release.save` would.
    allow_unconverged
        Release although the gate fails (recorded in ``release/model.json``). It never overrides the
        disclosure policy.
    policy
        The disclosure policy every release is judged by: a TOML file (:mod:`bayessdc.policy`) or a
        :class:`bayessdc.Policy`; ``None``: bayessdc's default (:func:`bayessdc.default_policy`). Read before
        any sampling; its name and digest are recorded in ``release/model.json``.
    holdout
        A control set for the attack measures: a share of ``frame``'s records (``0.2``) held out before the fit,
        or a frame (or file) of real records of the same population that are not in ``frame``. A share makes an
        *evaluation run*: the release is fitted on the other records, and ``release/model.json`` and the report
        say so (``control_set``); its attack figures describe that fit. To publish a release fitted on every
        record, run again at the same settings without ``holdout`` (its report shows no attack figures: the
        evaluation run's are never presented as its own; ``bayessdc report`` puts the two runs side by side), or
        give a control frame of records from outside ``frame``, which leaves the fit on every record.
    resume
        A refusal of the gate (:class:`bayessdc.ConvergenceError`) of an earlier call on the same data, columns,
        model and seed: its fit is taken instead of fitting again, so that an override (``allow_unconverged=
        True``) or a larger budget of chains (``gate=ReleaseGatePolicy(max_chains=...)``; the chains it fitted are
        kept and more added) costs no refit. The release is the one a run without ``resume`` gives. Refused
        (before anything is done) when anything but ``m``, the policy and the release gate's budget differs.
    progress
        Progress bars (on a terminal or in a notebook, see :mod:`bayessdc.progress`) and the stages of the run
        as INFO messages of the ``bayessdc`` logger. ``False``: neither, for this call; notices (columns
        dropped, groups released unchanged) are WARNING messages and still shown. When logging is not
        configured at all (no handler on the ``bayessdc`` logger nor on the root logger, as in a fresh
        notebook), a handler writing ``bayessdc: message`` lines to standard error is attached for the call
        and removed after it; a program that configures :mod:`logging` decides itself what is shown.
    weights
        The column of survey weights (checked before anything is fitted: positive numbers on every row). Kept,
        and a predictor of every synthesized column, when other columns are kept (partially synthetic);
        synthesized first when ``keep`` is empty (fully synthetic: no real record's weight is released). The
        utility figures are then weighted, and ``release/model.json`` says so (:mod:`bayessdc.pipeline.weighting`).
        Recipes whose ``takes_weights`` is true (``bsd.CART``).
    replicate_weights
        The file's replicate weights (:class:`bsd.ReplicateDesign`: columns and method), with ``weights`` in a
        partially synthetic release: released with the records they belong to, beside the kept weights, and no
        predictor of any column; the analyst's regression then takes its variances from them
        (:mod:`bayessdc.synthesis.replicates`). Refused in a fully synthetic release.

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
    bayessdc.DisclosureRefused
        The release fails the disclosure policy under every setting tried (``out/private/policy.json`` and
        the report are written, nothing to ``release/``); the message names each failing criterion, its
        figure with its interval, the threshold and the synthesizer's levers.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> persons = bsd.examples.acs_persons(300, seed=1)
    >>> release = bsd.synthesize(persons, bsd.CART(bootstrap=10), synthesize="education", keep="age,sex", m=2,
    ...                          seed=0, progress=False)
    >>> release.m, release.synthetic["synthetic"].nunique(), release.policy.passed
    (2, 2, True)
    >>> again = bsd.synthesize(persons, bsd.CART(bootstrap=10), synthesize="education", keep="age,sex", m=2,
    ...                        seed=0, progress=False)
    >>> again.synthetic.equals(release.synthetic)  # the same seed gives the same release
    True
    """
    if not isinstance(synthesizer, Recipe):
        raise InputError(
            f"synthesizer must be one of bsd.Flows, bsd.Spatial, bsd.DPMPM, bsd.DPAreal, bsd.CART; "
            f"got {type(synthesizer).__name__}"
        )
    m = synthesizer.default_m if m is None else m
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InputError(f"m= must be a whole number of at least 1, got {m!r}")
    if out is not None:
        check_output_root(out)  # before anything is read or fitted
    start = time.perf_counter()
    disclosure_policy = load_policy(policy)
    if holdout is not None and not synthesizer.takes_control:
        raise InputError(f"holdout= applies to tables of records; {synthesizer.name} releases no such table")
    synthesize, keep, weight_role = column_list(synthesize), column_list(keep), None
    if weights is not None:  # before the hold-out, so that the rows named are the user's
        if not synthesizer.takes_weights:
            raise InputError(f"weights= applies to tables of records synthesized by bsd.CART, not {synthesizer.name}")
        kept = synthesizer.kept_columns(list(keep or []))  # a column of areas is kept: partially synthetic
        synthesize, keep, weight_role = weight_roles(check_weights(frame, weights), synthesize, kept)
    frame = check_values(frame, [*(synthesize or []), *(keep or [])] if synthesizer.reads_roles_only else None)
    if replicate_weights is not None:
        check_replicates(frame, replicate_weights, weights, weight_role, synthesize, keep)
    frame, control, control_set = hold_out(frame, holdout, seed)
    try:
        synthesizer.check_run(m, allow_unconverged)
        design = {} if weights is None else {"weights": weights}  # left out of the default figures
        prepared = synthesizer.prepare(frame, synthesize, keep, seed, **design)
    except InputError:
        raise
    except ValueError as err:  # a model's own check of an option (K, conditioning, ...): the user's input too
        raise InputError(str(err)) from err
    disclosure_policy.check_columns(frame.columns, synthesizer.name)  # a criterion on columns it lacks: refused
    identity = {**prepared.identity, "m": m, "seed": seed}
    if weights is not None:
        prepared.weights, prepared.weight_role = weights, weight_role
        identity["weights"] = {"column": weights, "role": weight_role}
    if replicate_weights is not None:
        prepared.replicates = (replicate_weights, frame[list(replicate_weights.columns)].reset_index(drop=True))
        identity["weights"]["replicates"] = replicate_weights.to_dict()
    if control_set is not None:
        identity["control_set"] = control_set
    if not disclosure_policy.builtin:
        identity["policy"] = {"name": disclosure_policy.name, "digest": disclosure_policy.digest}
    resumed = resumed_fit(resume, identity)
    folder = OutputFolder(out, identity) if out is not None else None
    try:
        with _progress.call_logging(progress):
            return _run(synthesizer, prepared, identity, folder, m, seed, allow_unconverged, disclosure_policy,
                        progress, start, control, resumed)  # fmt: skip
    except InputError:  # refused for its input before writing anything: a corrected rerun is no "different run"
        if folder is not None:
            folder.abandon()
        raise
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
    policy: Policy,
    progress: bool,
    start: float,
    control: pd.DataFrame | None = None,
    resumed: Fitted | None = None,
) -> Release:
    """Fit, gate, release, measure, judge and write (the steps of :func:`synthesize` after its checks);
    ``resumed``: the fit of a refused run, taken instead of fitting again."""
    for notice in prepared.notices:  # what is dropped or released unchanged is said even when quiet
        _log.warning("%s", notice)
    _log.debug("%s run: %s", synthesizer.name, {k: v for k, v in identity.items() if k != "input"})
    fit_start = time.perf_counter()
    if resumed is None:
        fitted = synthesizer.fit(prepared, m, seed, folder.private if folder else None, progress)
    else:
        _log.info("%s", "the refused run's fit, resumed (no refit)", extra={"synthesizer": synthesizer.name})
        fitted = resumed
    if not allow_unconverged:  # chains until the release gate's figures are certain (an override takes them as is)
        fitted = add_chains_until_certain(
            synthesizer, prepared, fitted, seed, folder.private if folder else None, progress, fit_start
        )
    _log.debug("%s: fitted in %.1f s", synthesizer.name, time.perf_counter() - fit_start)
    fitted.diagnostics = replace(fitted.diagnostics, summary=diagnostics_summary(fitted, allow_unconverged),
                                 allow_unconverged=allow_unconverged)  # fmt: skip
    if folder is not None:
        folder.write_private_json("diagnostics.json", fitted.diagnostics.summary)
        for name, write in fitted.private_files.items():
            folder.write_private_file(name, write)
    if not fitted.diagnostics.passed and not allow_unconverged:
        refusal = ConvergenceError(  # with the fit and identity that synthesize(..., resume=refusal) takes up
            fitted.report, fitted.what, hint=fitted.hint, failure=fitted.failure, advice=fitted.advice,
            diagnostics=fitted.diagnostics, fitted=fitted, identity=identity,
        )  # fmt: skip
        if folder is not None:
            folder.withdraw_release()  # an earlier run's release/ never stands beside this refusal
            write_refusal_report(folder, synthesizer, identity, fitted, m, seed, time.perf_counter() - start)
        raise refusal
    release_start = time.perf_counter()
    release = build_release(synthesizer, prepared, fitted, identity, m, seed, progress, control)
    _log.debug("%s: %d datasets drawn in %.1f s", synthesizer.name, m, time.perf_counter() - release_start)
    release, tried = decide(synthesizer, prepared, fitted, release, policy, m, seed, progress)
    description = {**release.description, "allow_unconverged": allow_unconverged,
                   "disclosure_policy": {**policy.describe(), "released_under": release.policy.setting},
                   **({"control_set": identity["control_set"]} if "control_set" in identity else {})}  # fmt: skip
    release = replace(  # no level of the confidential data that was not drawn
        release, synthetic=drawn_levels(release.synthetic), policy_tried=tried, description=description
    )
    content = synthesizer.report_content(prepared, release)
    if "control_set" in identity:
        content.about.append(control_sentence(identity["control_set"]))
    if prepared.weights is not None:
        content.about.append(weights_sentence(prepared.weights, prepared.weight_role or "kept", prepared.households))
    release = replace(release, report_content=content, seconds=time.perf_counter() - start)
    if not release.policy.passed:
        refusal = DisclosureRefused(release.policy, [lever.sentence() for lever in synthesizer.levers()], tried)
        if folder is not None:
            folder.withdraw_release()
            folder.write_private_json("policy.json", release.policy_record())
            from bayessdc.report import render_run_report
            from bayessdc.report.html import html_writer

            folder.write_private_file("report.html", html_writer(lambda: render_run_report(release)))
        raise refusal
    if folder is not None:
        release.write_to(folder, written=set(fitted.private_files))
    return release
