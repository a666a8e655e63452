"""Issue 49, item 3: every inherent (minimum, maximum) pair the measures present as a bound is one, on the bundled
CE-like table and on a banded CPS 1988 sample; the pairs that are not bounds by definition say so, and a pair
crossed in a release is named (:func:`bayessdc.measures.identification.inherent_crossed`)."""

import json

import numpy as np
import pytest

from bayessdc import examples
from bayessdc.measures import MeasureInput, compute_measures, registry
from bayessdc.measures.identification import FalseMatchRate, TrueMatchRate, inherent_crossed
from bayessdc.risk.identification import inherent_datasets, inherent_expectations
from tests.risk.test_inherent_bounds import CE_ROLES, banded_cps, cps_roles

#: The measures carrying both inherent references.
PAIRED = [name for name, cls in registry().items() if {"inherent_min", "inherent_max"} <= set(cls.references)]
ISSUE_KEEP = ["wage", "experience", "region"]  # the banded CPS sample's true match rate crosses (0.0175 > 0.0107)


def _measured(original, synthesized, kept, known, weights=None):
    """The measures of a stand-in release: 3 datasets of the inherent maximum's draw, S = 40 repetitions."""
    frames = inherent_datasets(original, synthesized, kept, "max", 3, np.random.default_rng(5))
    synthetic = frames.rename(columns={"repetition": "synthetic"})
    released = [c for c in original.columns]
    data = MeasureInput(
        synthetic, original, released=released, synthesized=synthesized, kept=[c for c in released if c not in
        synthesized], known_sets=known, partially_synthetic=True, repetitions=40, seed=1, weights=weights,
    )  # fmt: skip
    return compute_measures(data, PAIRED)


def _cases():
    ce = examples.ce_like(n=2000, seed=1)
    yield "ce_like", ce, *CE_ROLES
    cps = banded_cps(5000)
    for keep in (ISSUE_KEEP, ["education", "smsa", "region"], ["ethnicity", "smsa", "parttime"]):
        yield "cps+" + "+".join(keep), cps, *cps_roles(cps, keep)


@pytest.fixture(scope="module")
def measured():
    return {name: (original, synthesized, kept, known, _measured(original, synthesized, kept, known))
            for name, original, synthesized, kept, known in _cases()}  # fmt: skip


def test_every_pair_presented_as_a_bound_is_ordered(measured):
    bounds = {name: cls for name, cls in registry().items() if getattr(cls, "inherent_bound", False)}
    assert "attribute_disclosures" in bounds  # not vacuous
    unordered = {name for name, cls in registry().items() if "inherent_min" in cls.references} - set(bounds)
    assert {"expected_match_risk", "true_match_rate", "false_match_rate"} <= unordered
    for case, (original, synthesized, kept, known, results) in measured.items():
        exact = inherent_expectations(original, synthesized, kept, known)
        for name, cls in bounds.items():
            result = results[name]
            for subset in result.subsets():
                # by construction: the exact expectations, with no Monte Carlo error
                rows = {s: exact[s] if subset == "all" else exact[s][exact[s]["known"] == subset] for s in exact}
                assert rows["min"][cls.figure].iloc[0] <= rows["max"][cls.figure].iloc[0], (case, name, subset)
                # the references the policy reads: within 1.96 of their joint Monte Carlo standard error at most
                low, high = result.reference(subset, "inherent_min"), result.reference(subset, "inherent_max")
                errors = [result.reference_error(subset, r)[0] for r in ("inherent_min", "inherent_max")]
                assert low <= high + 1.96 * np.hypot(*errors), (case, name, subset)
        for name in unordered & set(results):
            assert "not a lower bound of this figure" in results[name].reference_notes["inherent_min"], name


def test_a_crossed_pair_is_named_and_a_bound_never_is(measured):
    results = measured["cps+" + "+".join(ISSUE_KEEP)][-1]
    subset = results["true_match_rate"].subsets()[0]
    said = inherent_crossed(results["true_match_rate"], subset)
    assert "is above the inherent maximum" in said and "beyond the Monte Carlo error" in said
    assert "the inherent minimum is above the maximum for " + subset in results["true_match_rate"].description
    assert inherent_crossed(results["expected_match_risk"], subset) == ""  # 118 against 286 here
    for case, (*_, results) in measured.items():
        assert inherent_crossed(results["attribute_disclosures"], "all") == "", case
        assert "inherent minimum is above" not in results["attribute_disclosures"].description, case


def test_a_protection_is_crossed_when_its_minimum_is_below_the_maximum():
    def pair(low, high):
        refs = [{"subset": "k", "reference": "inherent_min", "value": low, "mc_se": 0.001, "repetitions": 50},
                {"subset": "k", "reference": "inherent_max", "value": high, "mc_se": 0.001, "repetitions": 50}]
        return [{"subset": "k", "dataset": 1, "value": 0.9}], refs

    assert inherent_crossed(FalseMatchRate().result(*pair(0.95, 0.90)), "k") == ""  # random labels protect more
    said = inherent_crossed(FalseMatchRate().result(*pair(0.90, 0.95)), "k")
    assert "is below the inherent maximum" in said and "beyond the Monte Carlo error" in said
    assert "within the Monte Carlo error" in inherent_crossed(TrueMatchRate().result(*pair(0.9005, 0.90)), "k")
    assert inherent_crossed(TrueMatchRate().result(*pair(float("nan"), 0.90)), "k") == ""


def test_the_attribute_pair_under_survey_weights_says_it_is_no_bound_by_construction():
    ce = examples.ce_like(n=600, n_counties=20, seed=3)
    ce["weight"] = np.random.default_rng(0).lognormal(0, 1, len(ce))
    synthesized, kept, known = CE_ROLES
    results = _measured(ce, synthesized, kept, known, weights="weight")
    assert "with survey weights not a lower bound" in results["attribute_disclosures"].reference_notes["inherent_min"]
    unweighted = _measured(ce.drop(columns="weight"), synthesized, kept, known)
    assert "survey weights" not in unweighted["attribute_disclosures"].reference_notes["inherent_min"]


def test_the_release_figures_carry_the_notes_through_json(measured):
    from bayessdc.measures.base import MeasureResult

    result = measured["cps+" + "+".join(ISSUE_KEEP)][-1]["true_match_rate"]
    again = MeasureResult.from_dict(json.loads(json.dumps(result.to_dict())))
    subset = result.subsets()[0]
    assert inherent_crossed(again, subset) == inherent_crossed(result, subset) != ""
    assert again.reference_notes == result.reference_notes
