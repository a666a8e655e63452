"""The release steps of the pipeline after the gate: build the :class:`bayessdc.Release` of a recipe's draw, once
for every synthesizer, then measure it and judge it by the disclosure policy, trying the settings that need
no refit when it fails."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pandas as pd

from ..control import align_control
from ..policy import Policy, Verdict, judge
from ..release import Release
from .recipe import Drawn, Fitted, Prepared, Recipe
from .weighting import attach_replicates, weights_description

__all__ = ["build_release", "decide", "measure_and_judge"]

_log = logging.getLogger("bayessdc.pipeline")


def build_release(
    recipe: Recipe, prepared: Prepared, fitted: Fitted, identity: dict[str, Any], m: int, seed: int, progress: bool,
    control: pd.DataFrame | None = None,
) -> Release:
    """The :class:`bayessdc.Release` of the recipe's draw and description (not yet measured nor judged): built
    here, once, for every synthesizer. ``release/model.json`` states the model's description with m and seed.
    ``control`` (real records the fit never saw) becomes the measures' control set."""
    drawn: Drawn = recipe.draw(prepared, fitted, m, seed, progress)
    data = drawn.measure_input
    if control is not None and data is not None and data.original is not None:
        data.holdout = align_control(control, data.original)
    description = {**recipe.describe(prepared, fitted), "m": m, "seed": seed}
    if prepared.weights is not None:
        description["weights"] = weights_description(prepared.weights, prepared.weight_role or "kept")
        if data is not None:
            data.weights = prepared.weights
    if prepared.replicates is not None:
        design, values = prepared.replicates
        description["weights"]["replicates"] = {**design.to_dict(), "kept": "released with the records they belong "
                                                "to, beside the kept weights; no predictor of any column"}
        drawn.synthetic = attach_replicates(drawn.synthetic, values)
        if data is not None:
            data.synthetic, data.replicates = drawn.synthetic, design
            data.original = data.original.join(values.set_axis(data.original.index))
    return Release(
        synthesizer=recipe.name,
        synthetic=drawn.synthetic,
        description=description,
        diagnostics=fitted.diagnostics,
        identity=identity,
        m=m,
        seed=seed,
        facts=drawn.facts,
        risk_figures=drawn.risk_figures,
        utility_figures=drawn.utility_figures,
        private_json=drawn.private_json,
        private_tables=drawn.private_tables,
        private_files=dict(fitted.private_files),
        measures=drawn.measures,
        measure_input=drawn.measure_input,
    )


def decide(
    synthesizer: Recipe, prepared: Prepared, fitted: Fitted, release: Release, policy: Policy, m: int, seed: int,
    progress: bool,
) -> tuple[Release, list[Verdict]]:
    """Measure ``release`` and judge it by ``policy``; when it fails, try the settings that need no refit.

    A release of records judged by a policy with a criterion on replicated uniques has them removed first (synthpop's
    ``sdc(rm.replicated.uniques = TRUE)``, :func:`remove_uniques`), and so has every setting tried. The
    synthesizer's own settings (:meth:`Recipe.no_refit_settings`, such as the DPMPM's conditioning) are tried in
    order. The first release that meets the policy is
    returned; when none does, the last one tried, with its verdict (the caller refuses it).

    Returns
    -------
    release, tried
        The release with ``measured`` and ``policy`` set, and the verdicts of every setting tried, in order.
    """
    removing = _removes_uniques(policy, synthesizer.name, release)
    if removing:
        remove_uniques(release, synthesizer.name)
    verdict = measure_and_judge(release, policy, synthesizer.name, {}, progress)
    tried = [verdict]
    if verdict.passed:
        return release, tried
    for setting in synthesizer.no_refit_settings():
        _log.warning(
            "%s: the release fails the disclosure policy under %s; drawing it under %s from the same posterior",
            synthesizer.name, tried[-1].setting_text(), ", ".join(f"{k} = {v}" for k, v in setting.items()),
        )  # fmt: skip
        recipe, under = synthesizer.under(setting, fitted)
        control = release.measure_input.holdout if release.measure_input is not None else None
        candidate = build_release(recipe, prepared, under, release.identity, m, seed, progress, control)
        if removing:
            remove_uniques(candidate, synthesizer.name)
        verdict = measure_and_judge(candidate, policy, synthesizer.name, setting, progress)
        tried.append(verdict)
        release = candidate
        if verdict.passed:
            _log.warning("%s: released under %s, which meets the disclosure policy %r", synthesizer.name,
                         verdict.setting_text(), policy.name)
            return release, tried
    return release, tried


def _removes_uniques(policy: Policy, name: str, release: Release) -> bool:
    """Whether the release's replicated uniques are removed before it is judged: a release of records judged by
    a policy with a criterion on ``replicated_uniques`` that applies to this synthesizer. The identification
    figures, whose row ``i`` is record ``i``, read the datasets as drawn (``MeasureInput.drawn``)."""
    data = release.measure_input
    if data is None or data.original is None or not data.released:
        return False
    return any(c.measure == "replicated_uniques" and (not c.applies_to or name in c.applies_to)
               for c in policy.criteria)  # fmt: skip


def remove_uniques(release: Release, name: str) -> None:
    """Remove the replicated uniques of ``release`` (synthpop's ``sdc(rm.replicated.uniques = TRUE)``: rows unique
    in their dataset equal to a record unique in the original, on the released columns), and the same rows of
    the measures' ``unlearned`` datasets, so that both are judged after the same removal; nothing is refitted.

    The rows removed per dataset go to ``measure_input.removed`` (the measures ``removed_records`` and
    ``released_records``) and their total to ``facts["replicated_uniques_removed"]``. The datasets as drawn, the
    rows the identification and attribute figures describe, stay in ``private/synthetic_as_drawn.parquet``."""
    from bayessdc.risk.copies import remove_replicated_uniques

    data = release.measure_input
    kept, removed = remove_replicated_uniques(data.original, release.synthetic, data.record_columns)
    unlearned, unlearned_removed = data.unlearned, None
    if unlearned is not None:
        unlearned, unlearned_removed = remove_replicated_uniques(data.original, unlearned, data.record_columns)
        unlearned = unlearned.reset_index(drop=True)
    inherent = None
    if unlearned is None and data.partially_synthetic and data.synthesized and data.kept:
        from bayessdc.risk.copies import inherent_removed

        inherent = inherent_removed(data.original, data.synthesized, data.kept, data.record_columns,
                                    repetitions=data.repetitions, seed=data.seed)  # fmt: skip
    count = int(removed["removed"].sum())
    _log.info("%s: %d replicated unique row(s) removed from the synthetic datasets (no refit)", name, count)
    release.synthetic = kept.reset_index(drop=True)
    drawn = data.synthetic if data.drawn is None else data.drawn  # row i record i: the identification figures'
    regression = data.regression  # the analyst's regressions refitted on the rows released
    if regression:
        regression = [replace(r, synthetic=release.synthetic, coefficients=None)
                      for r in (regression if isinstance(regression, list | tuple) else [regression])]  # fmt: skip
    release.measure_input = replace(data, synthetic=release.synthetic, drawn=drawn, unlearned=unlearned,
                                    removed=removed, unlearned_removed=unlearned_removed, inherent_removed=inherent,
                                    regression=regression, cache={})  # fmt: skip
    release.facts["replicated_uniques_removed"] = count
    release.private_tables = {**release.private_tables, "synthetic_as_drawn.parquet": drawn.reset_index(drop=True)}
    if release.measures is not None and (removed["kept"] > 0).all():  # an emptied dataset has no table to compare
        figures = release.measures.replace_synthetic(release.synthetic)
        if figures is not None:
            release.utility_figures = figures


def measure_and_judge(release: Release, policy: Policy, name: str, setting: dict[str, Any], progress: bool) -> Verdict:
    """Compute the release's measures (kept in ``release.measured``) and its policy verdict (``release.policy``)."""
    from bayessdc.measures import MeasureSet, compute_measures

    say = (lambda msg: _log.debug("%s", msg)) if progress else (lambda msg: None)
    data = release.measure_input
    release.measured = compute_measures(data, say=say) if data is not None else MeasureSet([])
    release.policy = judge(policy, release.measured, name, setting)
    _log.info("%s", release.policy.sentence())
    return release.policy
