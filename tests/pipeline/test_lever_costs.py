"""Issue 49, item 4: what a lever cost in utility is logged, recorded in the verdict (its HTML display, the report,
``private/policy.json``), and bounded by a policy's utility floor.

Every figure here is deterministic by construction: a stub recipe's "posterior" gives each record its own label
(``copied``), one label for all (``constant``) or its pattern neighbour's (``rotated``: every pattern of kept
values keeps its labels, so every table of the original is reproduced exactly), and the policy's thresholds sit
far from every figure (expected match risk 38 / 3.3 / 7.0 against 15; pMSE ratio 0 / 21.5 / 0 against 5).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.levers import LEVER_TABLE_COLUMNS, costs_table, smoothing_cost
from bayessdc.measures import MeasureInput, compute_measures
from bayessdc.pipeline import Prepared, Recipe
from bayessdc.pipeline.recipe import Drawn, Fitted
from bayessdc.pipeline.releasing import build_release, decide
from bayessdc.release import Diagnostics
from bayessdc.synthesis.categorical import pmse, table_deviations

KEPT, SYNTHESIZED = ["region", "sex"], ["job"]
COLUMNS = KEPT + SYNTHESIZED
RISK = bsd.Criterion("expected_match_risk", statistic="pooled", at_most=15)
FLOOR = bsd.Criterion("pmse_ratio", statistic="pooled", at_most=5, source="a utility floor")
REMOVAL = bsd.Criterion("replicated_uniques", subset="unique in both", statistic="worst", at_most=0)


def _original(n: int = 400, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    region, sex = rng.choice(["n", "s", "e", "w"], n), rng.choice(["f", "m"], n)
    usual = np.where(sex == "f", "a", "b")
    job = np.where(rng.random(n) < 0.6, usual, rng.choice(["a", "b", "c", "d", "e"], n))
    return pd.DataFrame({"region": region, "sex": sex, "job": job})


def _labels(original: pd.DataFrame, mode: str) -> np.ndarray:
    job = original["job"].to_numpy()
    if mode == "constant":
        return np.full(len(job), original["job"].mode().iloc[0])
    out = job.copy()
    if mode == "rotated":
        for rows in original.groupby(KEPT).indices.values():
            out[rows] = job[np.roll(rows, 1)]
    return out


@dataclass
class Stub(Recipe):
    """A recipe whose draw is fixed by its ``mode``; its no-refit settings are the other modes, in order."""

    mode: str = "copied"
    name = "dpmpm"

    def prepare(self, frame, synthesize, keep, seed=0):
        return Prepared(frame, {"synthesizer": self.name})

    def fit(self, prepared, m, seed, workdir, progress):
        return Fitted(Diagnostics({}, {"passed": True}, passed=True), None)

    def describe(self, prepared, fitted):
        return {"synthesizer": self.name, "mode": self.mode}

    def draw(self, prepared, fitted, m, seed, progress):
        original = prepared.data
        frames = [original.assign(job=_labels(original, self.mode), synthetic=k) for k in range(1, m + 1)]
        synthetic = pd.concat(frames, ignore_index=True)[["synthetic", *COLUMNS]]
        data = MeasureInput(synthetic, original, released=COLUMNS, synthesized=SYNTHESIZED, kept=KEPT,
                            known_sets=[COLUMNS], partially_synthetic=True, repetitions=5, seed=seed)  # fmt: skip
        return Drawn(synthetic, measure_input=data, facts={"records": len(original)})

    def no_refit_settings(self):
        return [{"mode": "constant"}, {"mode": "rotated"}]

    def under(self, setting, fitted):
        return replace(self, **setting), fitted


def _decide(*criteria: bsd.Criterion, m: int = 2):
    recipe, fitted = Stub(), Fitted(Diagnostics({}, {}, passed=True), None)
    prepared = recipe.prepare(_original(), None, None)
    release = build_release(recipe, prepared, fitted, {}, m, 0, False)
    return decide(recipe, prepared, fitted, release, bsd.Policy("lever test", criteria), m, 0, False)


def _as_drawn(mode: str, m: int = 2) -> pd.DataFrame:
    original = _original()
    return pd.concat([original.assign(job=_labels(original, mode), synthetic=k) for k in range(1, m + 1)],
                     ignore_index=True)[["synthetic", *COLUMNS]]  # fmt: skip


def test_without_a_floor_the_setting_that_trades_utility_away_is_released_and_its_cost_shown(caplog):
    with caplog.at_level(logging.INFO, logger="bayessdc.pipeline"):
        release, tried = _decide(RISK)
    assert [v.setting for v in tried] == [{}, {"mode": "constant"}] and release.policy.passed
    cost = release.policy.lever_costs[0]
    assert cost.lever == "mode = constant" and cost.setting == {"mode": "constant"}
    pmse_ratio = cost.figure("pmse_ratio")
    assert pmse_ratio.before == 0.0  # the run's release copies every label
    assert pmse_ratio.after > 20 and pmse_ratio.worse and cost.figure("table_deviation", "two-way").after == 928
    released = [r for r in caplog.records if r.levelno == logging.WARNING and "released under mode = constant" in
                r.getMessage()]  # fmt: skip
    assert len(released) == 1 and "pMSE ratio 0 -> 21.5" in released[0].getMessage()
    assert "table deviations [two-way] 0 -> 928" in released[0].getMessage()


def test_a_utility_floor_refuses_the_setting_that_trades_utility_away_and_the_next_is_released():
    release, tried = _decide(RISK, FLOOR)
    assert [v.setting for v in tried] == [{}, {"mode": "constant"}, {"mode": "rotated"}]
    first, constant, rotated = tried
    assert [j.criterion.measure for j in first.failed()] == ["expected_match_risk"]
    assert [j.criterion.measure for j in constant.failed()] == ["pmse_ratio"]  # its risk met, its utility not
    assert rotated.passed and release.policy is rotated and release.synthetic["job"].ne(_original()["job"]).any()
    assert constant.lever_costs[0].figure("pmse_ratio").after > FLOOR.at_most
    assert rotated.lever_costs[0].figure("pmse_ratio").after <= FLOOR.at_most


def test_a_floor_no_setting_meets_refuses_naming_the_utility_each_setting_cost(tmp_path):
    impossible = bsd.Criterion("table_deviation", subset="one-way", statistic="pooled", at_most=-1)
    release, tried = _decide(RISK, impossible)
    assert not release.policy.passed and len(tried) == 3
    refusal = bsd.DisclosureRefused(release.policy, [], tried)
    assert "utility under mode = constant (the run's settings -> mode = constant): pMSE ratio 0 -> 21.5" in str(
        refusal)  # fmt: skip
    assert "utility under mode = rotated" in str(refusal)


def test_the_removal_cost_is_the_utility_of_the_datasets_as_drawn_against_the_rows_released():
    """Before: the utility measures of a fresh input of the datasets as drawn; after: pMSE and table deviations
    computed by the data-frame functions on the rows released, and the release's own measures."""
    release, tried = _decide(REMOVAL)
    assert [v.setting for v in tried] == [{}] and release.policy.passed
    (cost,) = release.policy.lever_costs
    assert cost.lever == "replicated uniques removed" and cost.before == "the datasets as drawn"
    removed = release.facts["replicated_uniques_removed"]
    assert removed > 0 and len(release.synthetic) == 2 * 400 - removed and f"{removed} row(s) removed" in cost.note
    original = _original()
    drawn = _as_drawn("copied")
    fresh = MeasureInput(drawn, original, released=COLUMNS, synthesized=SYNTHESIZED, kept=KEPT,
                         known_sets=[COLUMNS], partially_synthetic=True, repetitions=5)  # fmt: skip
    before = compute_measures(fresh, kind="utility").summary().set_index(["measure", "subset"])["pooled"]
    assert {(f.measure, f.subset) for f in cost.figures} == set(before.index)
    for figure in cost.figures:
        assert figure.before == pytest.approx(before[(figure.measure, figure.subset)], abs=1e-12)
        assert figure.after == pytest.approx(release.measured[figure.measure].statistic(figure.subset, "pooled"))
    assert cost.figure("pmse_ratio").before == pytest.approx(
        np.mean(pmse(original, drawn, COLUMNS, SYNTHESIZED)["per_dataset"]["ratio"]))  # fmt: skip
    kept = release.synthetic
    assert cost.figure("pmse_ratio").after == pytest.approx(
        np.mean(pmse(original, kept, COLUMNS, SYNTHESIZED)["per_dataset"]["ratio"]))  # fmt: skip
    deviations = table_deviations(original, kept, SYNTHESIZED, KEPT, ways=(1, 2, 3))
    for name in ("one-way", "two-way", "three-way"):
        assert cost.figure("table_deviation", name).before == 0  # a copy of every table
        assert cost.figure("table_deviation", name).after == pytest.approx(
            float(np.mean(deviations[name]["per_dataset"])))  # fmt: skip
    assert cost.figure("table_deviation", "one-way").after > 0 and cost.figure("pmse_ratio").after > 0


def test_each_setting_tried_records_its_removal_and_its_cost_against_the_run_s_release():
    release, tried = _decide(RISK, FLOOR, REMOVAL)
    first, constant, rotated = tried
    assert [c.lever for c in first.lever_costs] == ["replicated uniques removed"]
    assert [c.lever for c in rotated.lever_costs] == ["mode = rotated", "replicated uniques removed"]
    setting = rotated.lever_costs[0]
    for figure in setting.figures:  # like for like: both after the same removal
        assert figure.before == pytest.approx(first.lever_costs[0].figure(figure.measure, figure.subset).after)
        assert figure.after == pytest.approx(release.measured[figure.measure].statistic(figure.subset, "pooled"))
    assert constant.lever_costs[1].note == "0 row(s) removed"  # one label for all: no unique left to replicate


def test_the_costs_are_shown_in_the_verdict_its_json_the_report_and_after_load(tmp_path):
    """Through ``bsd.synthesize``: ``release.policy`` (its HTML display), ``private/policy.json``, the report and
    ``bsd.load`` give the same costs."""
    out = tmp_path / "run"
    release = bsd.synthesize(_original(), Stub(), m=2, seed=0, out=out, progress=False,
                             policy=bsd.Policy("lever test", (RISK, FLOOR, REMOVAL)))  # fmt: skip
    verdict = release.policy
    assert [c.lever for c in verdict.lever_costs] == ["mode = rotated", "replicated uniques removed"]
    table = costs_table(verdict.lever_costs)
    assert list(table.columns) == list(LEVER_TABLE_COLUMNS)
    assert len(table) == sum(len(c.figures) for c in verdict.lever_costs) == 10
    page = verdict._repr_html_()
    assert "replicated uniques removed" in page and "the datasets as drawn -&gt; the rows released" in page
    assert "what it cost in utility" in page and "utility floor" in page  # the floor's source, in the policy table
    assert "what it cost in utility" in release._repr_html_()
    recorded = json.loads((out / "private" / "policy.json").read_text())
    assert [c["lever"] for c in recorded["lever_costs"]] == ["mode = rotated", "replicated uniques removed"]
    assert [c["lever"] for c in recorded["tried"][1]["lever_costs"]] == ["mode = constant",
                                                                         "replicated uniques removed"]  # fmt: skip
    assert recorded["tried"][1]["lever_costs"][0]["figures"][0] == {
        "measure": "pmse_ratio", "subset": "all", "title": "pMSE ratio", "unit": "pMSE / its null expectation",
        "better": "lower", "before": pytest.approx(0.0554, abs=1e-4), "after": pytest.approx(21.5, abs=0.01),
        "change": pytest.approx(21.45, abs=0.01),
    }  # fmt: skip
    report = (out / "private" / "report.html").read_text()
    assert "what it cost in utility" in report and "mode = rotated" in report
    assert bsd.load(out).policy.lever_costs == verdict.lever_costs


def test_smoothing_cost_reads_a_utility_measure_s_unsmoothed_reference():
    from bayessdc.measures import MeasureSet
    from bayessdc.measures.regression import IntervalOverlap

    result = IntervalOverlap().result(
        [{"subset": "x", "dataset": 0, "value": 0.80}, {"subset": "y", "dataset": 0, "value": 0.90}],
        [{"subset": "x", "reference": "unsmoothed", "value": 0.95}, {"subset": "y", "reference": "unsmoothed",
                                                                    "value": 0.97}],
    )  # fmt: skip
    cost = smoothing_cost(MeasureSet([result]))
    assert cost.lever == "differential smoothing"
    assert [(f.subset, f.before, f.after) for f in cost.figures] == [("x", 0.95, 0.80), ("y", 0.97, 0.90)]
    assert all(f.worse for f in cost.figures)  # an overlap: higher is better
    assert smoothing_cost(MeasureSet([])) is None


def test_a_policy_file_states_utility_floors_as_the_readme_shows(tmp_path):
    path = tmp_path / "floors.toml"
    path.write_text(
        '[policy]\nname = "floors"\n\n'
        '[[criterion]]\nmeasure = "pmse_ratio"\nstatistic = "pooled"\nat_most = 10\n\n'
        '[[criterion]]\nmeasure = "table_deviation"\nsubset = "two-way"\nstatistic = "pooled"\nat_most = 500\n\n'
        '[[criterion]]\nmeasure = "table_tau"\nstatistic = "lower"\nat_least = 0.9\n'
    )
    policy = bsd.load_policy(path)
    assert [(c.measure, c.subset, c.direction, c.threshold) for c in policy.criteria] == [
        ("pmse_ratio", "*", "at_most", 10), ("table_deviation", "two-way", "at_most", 500),
        ("table_tau", "*", "at_least", 0.9),
    ]  # fmt: skip
    release, tried = _decide(RISK, *policy.criteria)  # the stub has no analyst's tables: table_tau not applicable
    assert release.policy.passed and release.policy.setting == {"mode": "rotated"}
    assert [v.setting for v in tried] == [{}, {"mode": "constant"}, {"mode": "rotated"}]
    assert any("table_tau" in text for text in release.policy.not_applicable)
