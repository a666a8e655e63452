"""The release steps of the pipeline after the gate: build the :class:`bayessdc.Release` of a recipe's draw, once
for every synthesizer, then measure it and judge it by the disclosure policy, trying the settings that need
no refit when it fails."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..control import align_control
from ..levers import removal_cost, setting_cost, smoothing_cost
from ..policy import Policy, Verdict, judge
from ..release import Release
from .recipe import Drawn, Fitted, Prepared, Recipe
from .weighting import attach_replicates, weights_description

if TYPE_CHECKING:
    from bayessdc.measures import MeasureInput, MeasureSet

__all__ = ["build_release", "decide", "measure_and_judge", "remove_uniques", "utility_as_drawn"]

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
        description["weights"] = weights_description(prepared.weights, prepared.weight_role or "kept",
                                                     prepared.households)  # fmt: skip
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
        diagnostics=replace(fitted.diagnostics, summary={**fitted.diagnostics.summary, **drawn.diagnostics}),
        identity=identity,
        m=m,
        seed=seed,
        facts=drawn.facts,
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

    What every lever applied cost in utility is logged and kept in each verdict's ``lever_costs``
    (:class:`bayessdc.levers.LeverCost`): the removal (the utility measures of the datasets as drawn, computed before
    it, against those of the rows released), each setting (the release under the run's settings against the
    release under the setting, both as judged) and differential smoothing (a utility measure's ``unsmoothed``
    reference against its figure). Only utility measures are computed beyond the judging; nothing is refitted. A
    policy's criterion on a utility measure (a utility floor) is judged like any other: a setting whose release
    crosses it fails, and the next one is tried.

    Each step returns a new release (a candidate: drawn, its uniques removed, measured, judged); none is changed
    once made.

    Returns
    -------
    release, tried
        The release with ``measured`` and ``policy`` set, and the verdicts of every setting tried, in order.
    """
    name = synthesizer.name
    removing = _removes_uniques(policy, name, release)
    release = _judge_with_removal(release, policy, name, {}, removing, progress)
    verdict, first = release.policy, release.measured
    tried = [verdict]
    if verdict.passed:
        return release, tried
    for setting in synthesizer.no_refit_settings():
        _log.warning(
            "%s: the release fails the disclosure policy under %s; drawing it under %s from the same posterior",
            name, tried[-1].setting_text(), ", ".join(f"{k} = {v}" for k, v in setting.items()),
        )  # fmt: skip
        recipe, under = synthesizer.under(setting, fitted)
        control = release.measure_input.holdout if release.measure_input is not None else None
        candidate = build_release(recipe, prepared, under, release.identity, m, seed, progress, control)
        candidate = _judge_with_removal(candidate, policy, name, setting, removing, progress)
        verdict = candidate.policy
        cost = setting_cost(first, candidate.measured, setting)
        verdict.lever_costs.insert(0, cost)  # drawn under the setting first, then anything removed
        tried.append(verdict)
        release = candidate
        if verdict.passed:
            _log.warning("%s: released under %s, which meets the disclosure policy %r; its utility: %s", name,
                         verdict.setting_text(), policy.name, cost.sentence())  # fmt: skip
            return release, tried
        _log.info("%s: under %s the release still fails the disclosure policy; its utility: %s", name,
                  verdict.setting_text(), cost.sentence())  # fmt: skip
    return release, tried


def _judge_with_removal(
    release: Release, policy: Policy, name: str, setting: dict[str, Any], removing: bool, progress: bool
) -> Release:
    """:func:`measure_and_judge` of ``release``, its replicated uniques removed first when ``removing``; the
    verdict's ``lever_costs`` hold what the removal and any differential smoothing cost in utility (logged)."""
    drawn = release.measure_input
    if removing:
        release = remove_uniques(release, name)
    release = measure_and_judge(release, policy, name, setting, progress)
    verdict = release.policy
    if removing:
        removed = int(release.facts.get("replicated_uniques_removed", 0))
        before = utility_as_drawn(drawn, release.measure_input) if removed else release.measured  # nothing removed
        verdict.lever_costs.append(removal_cost(before, release.measured, removed))
    smoothing = smoothing_cost(release.measured)
    if smoothing is not None:
        verdict.lever_costs.append(smoothing)
    for cost in verdict.lever_costs:
        _log.info("%s: %s", name, cost.sentence())
    return release


def utility_as_drawn(drawn: MeasureInput, released: MeasureInput | None = None) -> MeasureSet:
    """The utility measures of the datasets as drawn (``drawn``, the measure input before any removal): what a
    lever applied after the draw is set against. Only utility measures (no attack, no inherent scenario), and a
    table's bootstrap reference is not recomputed (its pooled figure does not need it). ``released``: the input
    after the removal, whose figures of the datasets as drawn (the identification measures', computed on integer
    keys, :data:`_DRAWN_CACHE`) are taken instead of computed again."""
    from bayessdc.measures import compute_measures

    cache = dict(drawn.cache)
    if released is not None:
        cache.update({k: v for k, v in released.cache.items() if k in _DRAWN_CACHE})
    return compute_measures(replace(drawn, bootstrap=0, cache=cache, details=False), kind="utility")


def _removes_uniques(policy: Policy, name: str, release: Release) -> bool:
    """Whether the release's replicated uniques are removed before it is judged: a release of records judged by
    a policy with a criterion on ``replicated_uniques`` that applies to this synthesizer. The identification
    figures, whose row ``i`` is record ``i``, read the datasets as drawn (``MeasureInput.drawn``)."""
    data = release.measure_input
    if data is None or data.original is None or not data.released or data.households is not None:
        return False  # a household release: no member is taken from its household (measures.households)
    return any(c.measure == "replicated_uniques" and (not c.applies_to or name in c.applies_to)
               for c in policy.criteria)  # fmt: skip


def remove_uniques(release: Release, name: str) -> Release:
    """Remove the replicated uniques of ``release`` (synthpop's ``sdc(rm.replicated.uniques = TRUE)``: rows unique
    in their dataset equal to a record unique in the original, on the released columns), and the same rows of
    the measures' ``unlearned`` datasets, so that both are judged after the same removal; nothing is refitted.

    The rows removed per dataset go to ``measure_input.removed`` (the measures ``removed_records`` and
    ``released_records``) and their total to ``facts["replicated_uniques_removed"]``. The datasets as drawn, the
    rows the identification and attribute figures describe, stay in ``private/synthetic_as_drawn.parquet``.

    Returns
    -------
    Release
        A new release; ``release`` is left as drawn."""
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
    synthetic = kept.reset_index(drop=True)
    drawn = data.synthetic if data.drawn is None else data.drawn  # row i record i: the identification figures'
    regression = data.regression  # the analyst's regressions refitted on the rows released
    if regression:
        regression = [replace(r, synthetic=synthetic, coefficients=None)
                      for r in (regression if isinstance(regression, list | tuple) else [regression])]  # fmt: skip
    measure_input = replace(data, synthetic=synthetic, drawn=drawn, unlearned=unlearned, removed=removed,
                            unlearned_removed=unlearned_removed, inherent_removed=inherent, regression=regression,
                            cache={})  # fmt: skip
    if release.measures is not None:  # recomputing with other options measures the rows released
        release.measures.replace_synthetic(synthetic)
    return replace(
        release, synthetic=synthetic, measure_input=measure_input,
        facts={**release.facts, "replicated_uniques_removed": count},
        private_tables={**release.private_tables, "synthetic_as_drawn.parquet": drawn.reset_index(drop=True)},
    )  # fmt: skip


#: Cache entries of a measure input that depend on the original and the datasets as drawn only (the identification
#: figures on integer keys): the input after a removal computes them from ``drawn``, and :func:`utility_as_drawn`
#: takes them from it.
_DRAWN_CACHE = ("identification_frames", "categorical_figures", "release_figures")


def measure_and_judge(
    release: Release, policy: Policy, name: str, setting: dict[str, Any], progress: bool
) -> Release:
    """``release`` measured (``measured``) and judged by ``policy`` (``policy``, the verdict): a new release."""
    from bayessdc.measures import MeasureSet, compute_measures

    say = (lambda msg: _log.debug("%s", msg)) if progress else (lambda msg: None)
    data = release.measure_input
    measured = compute_measures(data, say=say) if data is not None else MeasureSet([])
    verdict = judge(policy, measured, name, setting)
    _log.info("%s", verdict.sentence())
    return replace(release, measured=measured, policy=verdict)
