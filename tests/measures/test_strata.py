"""Each area of a categorical release synthesized area by area (issue 51), judged against its own inherent maximum:
``stratum_attribute_disclosures`` (the share of an area's records whose synthesized values are their own) with the
same share in the inherent maximum's datasets, and the default policy's criterion on it at the Bonferroni level for
the areas judged together. The release inputs are built by hand (no MCMC)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t

from bayessdc.measures import MeasureInput, MeasureSet, compute_measures
from bayessdc.measures.strata import StratumAttributeDisclosures, inherent_stratum_disclosures
from bayessdc.policy import Criterion, DisclosureRefused, Policy, default_policy, judge
from bayessdc.risk.identification import inherent_risk, inherent_sources
from bayessdc.synthesis import streams
from bayessdc.synthesis.streams import Stream

NAME = "stratum_attribute_disclosures"
KEEP, SYNTHESIZE = ["area", "x", "z"], ["y"]


def _input(original: pd.DataFrame, synthetic: pd.DataFrame, repetitions: int, seed: int) -> MeasureInput:
    """A categorical release synthesized area by area, as the DPMPM's draw states it (``strata="area"``)."""
    return MeasureInput(synthetic, original, released=KEEP + SYNTHESIZE, synthesized=SYNTHESIZE, kept=KEEP,
                        partially_synthetic=True, strata="area", repetitions=repetitions, seed=seed)  # fmt: skip


def _like_the_maximum(original: pd.DataFrame, m: int, rng: np.random.Generator) -> pd.DataFrame:
    """m datasets drawn exactly as the inherent maximum draws its repetitions (labels redrawn within each pattern
    of kept values), from ``rng``."""
    frames = []
    for k, source in enumerate(inherent_sources(original, SYNTHESIZE, KEEP, "max", m, rng)):
        frame = original.copy()
        for column in SYNTHESIZE:
            frame[column] = original[column].to_numpy()[source[column]]
        frames.append(frame.assign(synthetic=k + 1))
    return pd.concat(frames, ignore_index=True)


def _areas(sizes: dict[str, int], seed: int = 3) -> pd.DataFrame:
    """Areas of the given sizes; in each, four patterns of kept values (x, z) and a label y of u or v at random:
    every pattern holds both labels, about half each, so the inherent maximum keeps about half the labels."""
    rng = np.random.default_rng(seed)
    area = np.repeat(list(sizes), list(sizes.values()))
    n = len(area)
    return pd.DataFrame({"area": area, "x": rng.choice(["p", "q"], n), "z": rng.choice(["r", "s"], n),
                         "y": rng.choice(["u", "v"], n)})  # fmt: skip


def test_the_inherent_maximum_per_stratum_worked_by_hand():
    # area a: every pattern one record, so the maximum redraws each record's own label; area b: the pattern p holds
    # u and v (each record keeps its own label with probability 1/2), the pattern q one record (kept for sure)
    original = pd.DataFrame({"area": ["a", "a", "a", "b", "b", "b"], "x": ["p", "q", "p", "p", "p", "q"],
                             "z": ["r", "r", "s", "r", "r", "r"], "y": ["u", "v", "v", "u", "v", "w"]})  # fmt: skip
    table = inherent_stratum_disclosures(original, SYNTHESIZE, KEEP, "area", repetitions=200, seed=5)
    a, b = (table[table["stratum"] == s].set_index("repetition") for s in "ab")
    assert (a["records"] == 3).all() and (a["disclosed"] == 3).all() and (a["share"] == 1.0).all()
    # b discloses its record of pattern q always and each of the other two with probability 1/2: 1/3, 2/3 or 1
    assert set(b["disclosed"]) <= {1, 2, 3} and set(b["disclosed"]) == {1, 2, 3}
    assert b["share"].mean() == pytest.approx((0.5 + 0.5 + 1) / 3, abs=0.05)
    # the very datasets of the whole file's maximum (same stream): the areas' counts add up to its disclosures
    whole = inherent_risk(original, SYNTHESIZE, KEEP, [KEEP + SYNTHESIZE], repetitions=200, seed=5)["max"]
    assert (table.groupby("repetition")["disclosed"].sum().to_numpy() == whole["disclosures"].to_numpy()).all()
    assert table.equals(inherent_stratum_disclosures(original, SYNTHESIZE, KEEP, "area", repetitions=200, seed=5))
    assert not table.equals(inherent_stratum_disclosures(original, SYNTHESIZE, KEEP, "area", repetitions=200, seed=6))

    # the release: dataset 1 the original itself, dataset 2 with the labels of b's pattern p swapped
    swapped = original.assign(y=["u", "v", "v", "v", "u", "w"])
    synthetic = pd.concat([original.assign(synthetic=1), swapped.assign(synthetic=2)], ignore_index=True)
    result = compute_measures(_input(original, synthetic, 200, 5), [NAME])[NAME]
    values = result.values.set_index(["subset", "dataset"])["value"]
    assert values.to_dict() == {("stratum a", 1): 1.0, ("stratum a", 2): 1.0, ("stratum b", 1): 1.0,
                                ("stratum b", 2): 1 / 3}  # fmt: skip
    assert result.reference("stratum a", "inherent_max") == 1.0
    assert result.reference("stratum b", "inherent_max") == pytest.approx(b["share"].mean(), abs=1e-15)
    # area a: no Monte Carlo error on either side, so its threshold is its maximum, 1, and a copy meets it
    assert result.reference("stratum a", "inherent_max_bonferroni") == 1.0
    # area b by hand: Welch's standard error and degrees of freedom, t of 1 - 0.025/2 (two areas judged together)
    se_release, se_maximum = np.std([1.0, 1 / 3], ddof=1) / np.sqrt(2), b["share"].std(ddof=1) / np.sqrt(200)
    se = np.hypot(se_release, se_maximum)
    df = se**4 / (se_release**4 / 1 + se_maximum**4 / 199)
    bound = b["share"].mean() + t.ppf(1 - 0.025 / 2, df) * se
    assert result.reference("stratum b", "inherent_max_bonferroni") == pytest.approx(bound, rel=1e-12)


def test_a_stratum_whose_datasets_are_its_records_is_refused_naming_it():
    original = _areas({"a": 400, "b": 400, "c": 400})
    synthetic = _like_the_maximum(original, 5, np.random.default_rng(11))
    in_b = synthetic["area"] == "b"  # area b's model copies its records: each of its rows is its own record
    synthetic.loc[in_b, "y"] = np.tile(original.loc[original["area"] == "b", "y"].to_numpy(), 5)
    measures = compute_measures(_input(original, synthetic, 100, 7), [NAME])
    result = measures[NAME]
    summary = result.summary().set_index("subset")
    assert summary.loc["stratum b", "pooled"] == 1.0
    # the maximum of area b keeps about half its labels (its patterns hold u and v), so its threshold is far below
    assert result.reference("stratum b", "inherent_max") == pytest.approx(0.5, abs=0.05)
    # its datasets are all alike (sd 0): the release's sd is taken as the maximum's, with its S - 1 degrees of freedom
    shares = inherent_stratum_disclosures(original, SYNTHESIZE, KEEP, "area", repetitions=100, seed=7)
    sd = shares.loc[shares["stratum"] == "b", "share"].std(ddof=1)
    se_release, se_maximum = sd / np.sqrt(5), sd / np.sqrt(100)
    df = (se_release**2 + se_maximum**2) ** 2 / ((se_release**4 + se_maximum**4) / 99)
    bound = result.reference("stratum b", "inherent_max") + t.ppf(1 - 0.025 / 3, df) * np.hypot(se_release, se_maximum)
    assert result.reference("stratum b", "inherent_max_bonferroni") == pytest.approx(bound, rel=1e-12) and bound < 0.6

    verdict = judge(default_policy(), measures, "dpmpm")
    judged = [j for j in verdict.judgements if j.criterion.measure == NAME]
    assert [j.subset for j in judged] == ["stratum a", "stratum b", "stratum c"]
    assert [j.subset for j in verdict.failed()] == ["stratum b"] and not verdict.passed
    assert verdict.failed()[0].threshold_name == "inherent_max_bonferroni"
    assert "stratum_attribute_disclosures [stratum b]" in str(DisclosureRefused(verdict, []))
    assert judge(default_policy(), measures, "dp_areal").failed() == verdict.failed()
    # CART is judged per area by its cross-fitted release (stratum_copied_records), not by this criterion
    assert not [j for j in judge(default_policy(), measures, "cart").judgements if j.criterion.measure == NAME]


def test_a_release_at_the_inherent_maximum_passes_far_from_the_edge():
    original = _areas({"a": 600, "b": 300, "c": 150})
    # the maximum's own datasets (its stream): every area's pooled share is its maximum exactly
    own = _like_the_maximum(original, 100, streams.rng(7, Stream.INHERENT, Stream.MAXIMUM))
    result = compute_measures(_input(original, own, 100, 7), [NAME])[NAME]
    summary = result.summary().set_index("subset")
    for subset in summary.index:
        maximum, bound = (result.reference(subset, r) for r in ("inherent_max", "inherent_max_bonferroni"))
        assert summary.loc[subset, "pooled"] == pytest.approx(maximum, abs=1e-12) and bound > maximum
    assert judge(default_policy(), MeasureSet([result]), "dpmpm").passed

    # 20 datasets drawn as the maximum draws, from another stream: each area's pooled share lies within half the
    # Bonferroni margin of its maximum (the seeds are fixed; the margin is asserted, not left to chance)
    other = _like_the_maximum(original, 20, np.random.default_rng(1))
    result = compute_measures(_input(original, other, 100, 7), [NAME])[NAME]
    summary = result.summary().set_index("subset")
    for subset in summary.index:
        maximum, bound = (result.reference(subset, r) for r in ("inherent_max", "inherent_max_bonferroni"))
        assert bound - summary.loc[subset, "pooled"] > 0.5 * (bound - maximum) > 0
    verdict = judge(default_policy(), MeasureSet([result]), "dpmpm")
    assert verdict.passed and len([j for j in verdict.judgements if j.criterion.measure == NAME]) == 3


@pytest.mark.parametrize(("base", "step", "passed"), [(0.0, 0.02, True), (0.0, 0.1, True), (0.2, 0.05, False)])
def test_with_one_stratum_the_threshold_is_the_whole_files_welch_test(base, step, passed):
    # one area, and a release whose datasets vary more than the maximum's repetitions (dataset k sets each label to
    # the record's own with probability base + (k - 1) step): Bonferroni for one is no correction, and the pooled
    # share against inherent_max_bonferroni is the policy's 'lower' statistic against inherent_max, number for number
    original = _areas({"a": 500})
    synthetic = _like_the_maximum(original, 4, np.random.default_rng(1))
    own = np.tile(original["y"].to_numpy(), 4)
    moved = np.random.default_rng(2).random(len(synthetic)) < base + step * (synthetic["synthetic"].to_numpy() - 1)
    synthetic.loc[moved, "y"] = own[moved]
    result = compute_measures(_input(original, synthetic, 60, 3), [NAME])[NAME]
    repetitions = inherent_stratum_disclosures(original, SYNTHESIZE, KEEP, "area", repetitions=60, seed=3)["share"]
    assert result.values["value"].std(ddof=1) > repetitions.std(ddof=1)  # the release's own sd, not the floor
    lower = Policy(name="lower", criteria=(Criterion(NAME, subset="*", statistic="lower", at_most="inherent_max"),))
    bound = Policy(name="bound", criteria=(Criterion(NAME, subset="*", at_most="inherent_max_bonferroni"),))
    (welch,) = judge(lower, MeasureSet([result]), "dpmpm").judgements
    (bonferroni,) = judge(bound, MeasureSet([result]), "dpmpm").judgements
    assert welch.passed == bonferroni.passed == passed
    assert welch.figure - welch.threshold == pytest.approx(bonferroni.figure - bonferroni.threshold, abs=1e-12)


def test_records_copied_bound_nothing_at_the_inherent_maximum():
    # why a categorical release's records copied are reported, not judged against the inherent maximum: each row of
    # the maximum is the record whose label it took (same pattern of kept values), so its share copied is 1
    original = _areas({"a": 200, "b": 50})
    maximum = _like_the_maximum(original, 10, streams.rng(0, Stream.INHERENT, Stream.MAXIMUM))
    copied = compute_measures(_input(original, maximum, 10, 0), ["stratum_copied_records"])["stratum_copied_records"]
    assert (copied.values["value"] == 1.0).all()
    assert StratumAttributeDisclosures.references.keys() == {"inherent_max", "inherent_max_bonferroni"}
