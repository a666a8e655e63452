"""The disclosure policy: files read or refused with the line at fault, criteria judged as worked by hand, and
the built-in policy's criteria each with a source."""

import json
import re

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.control import MIN_TRAINING_RECORDS
from bayessdc.measures import Measure, MeasureSet
from bayessdc.policy import default_policy, default_policy_text, judge, load_policy


class _Risk(Measure):
    name, kind, better = "expected_match_risk", "risk", "lower"


def _measures(values, maximum=2.0, subset="sex+area"):
    result = _Risk().result(
        [{"subset": subset, "dataset": d + 1, "value": v} for d, v in enumerate(values)],
        [{"subset": subset, "reference": "inherent_max", "value": maximum}],
    )
    return MeasureSet([result])


def _policy(tmp_path, body, name="test"):
    path = tmp_path / f"policy-{len(list(tmp_path.glob('policy-*.toml')))}.toml"
    path.write_text(f'[policy]\nname = "{name}"\n\n{body}')
    return path


def test_the_builtin_policy_names_a_source_for_every_criterion():
    policy = default_policy()
    assert policy.builtin and policy.name == "bayessdc-default"
    assert policy.criteria and all(c.source for c in policy.criteria)
    judged = {c.measure for c in policy.criteria}
    assert {"expected_match_risk", "true_match_rate", "attribute_disclosures"} <= judged
    thresholds = {(c.measure, c.statistic, c.direction, c.threshold, c.applies_to) for c in policy.criteria}
    for measure in ("expected_match_risk", "true_match_rate", "attribute_disclosures"):  # Hu & Savitsky's bound
        assert (measure, "lower", "at_most", "inherent_max", ()) in thresholds
    # a release of records against one that never saw them (the range of its datasets), the replicated uniques
    # removed (synthpop), and at least the smallest fit's records in every dataset
    assert ("copied_records", "pooled", "at_most", "unlearned_range", ("cart",)) in thresholds
    assert ("removed_records", "pooled", "at_most", "unlearned_range", ("cart",)) in thresholds
    records = ("cart", "dpmpm", "dp_areal")  # every synthesizer of records: the categorical ones too
    assert ("replicated_uniques", "worst", "at_most", 0, records) in thresholds
    assert ("released_records", "worst", "at_least", MIN_TRAINING_RECORDS, records) in thresholds
    # a categorical release's removal against Hu & Savitsky's inherent maximum (it has no cross-fitted release)
    assert ("removed_records", "lower", "at_most", "inherent_max", ("dpmpm", "dp_areal")) in thresholds
    assert ("unprotected_cells", "worst", "at_most", 0, ()) in thresholds
    # the spatial at-risk records against the others (Quick, Holan & Wikle)
    assert ("proximity", "lower", "at_most", "other_records", ("spatial",)) in thresholds
    assert set(policy.reported).isdisjoint(judged)


def test_judged_as_worked_by_hand(tmp_path):
    pooled = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nat_most = "inherent_max"\n')
    upper = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nstatistic = "upper"\n'
                              'at_most = "inherent_max"\n')  # fmt: skip
    worst = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nstatistic = "worst"\nat_most = 2.5\n')
    measures = _measures([1.0, 2.0, 3.0])  # pooled 2, sd 1, se 1/sqrt(3), worst 3
    assert judge(load_policy(pooled), measures, "dpmpm").passed  # 2 <= 2
    verdict = judge(load_policy(upper), measures, "dpmpm")
    assert not verdict.passed  # 2 + t(0.975, 2) / sqrt(3) > 2
    (failed,) = verdict.failed()
    assert failed.figure == pytest.approx(2 + 4.302652729911275 / 3**0.5)  # Student's t, 2 degrees of freedom
    assert failed.threshold == 2.0 and failed.threshold_name == "inherent_max"
    assert "fails 'at most 2' (inherent_max)" in failed.sentence()
    assert not judge(load_policy(worst), measures, "dpmpm").passed  # 3 > 2.5


def _against_repetitions(values, repetitions):
    """A release's figures against an inherent maximum that is the mean of simulated repetitions."""
    reps = np.asarray(repetitions, dtype=float)
    reference = {"subset": "sex+area", "reference": "inherent_max", "value": reps.mean(),
                 "mc_se": reps.std(ddof=1) / np.sqrt(reps.size), "repetitions": reps.size}  # fmt: skip
    result = _Risk().result([{"subset": "sex+area", "dataset": d + 1, "value": v} for d, v in enumerate(values)],
                            [reference])  # fmt: skip
    return MeasureSet([result])


def test_a_reference_of_repetitions_is_judged_with_its_own_monte_carlo_error(tmp_path):
    lower = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nstatistic = "lower"\n'
                                          'at_most = "inherent_max"\n'))  # fmt: skip
    # one record matched in each of 3 datasets against 1, 1, 0 in the 3 repetitions: the release's own interval
    # has zero width, but the reference's mean 2/3 has a standard error of 1/3 on 2 degrees of freedom
    (judgement,) = judge(lower, _against_repetitions([1.0, 1.0, 1.0], [1.0, 1.0, 0.0]), "dpmpm").judgements
    assert judgement.passed and judgement.threshold == pytest.approx(2 / 3)
    assert judgement.figure == pytest.approx(1 - 4.302652729911275 / 3)  # Welch: df = 2, se = 1/3
    assert "Welch, 2.0 degrees of freedom" in judgement.sentence() and "3 repetitions" in judgement.sentence()
    # against an exact reference of the same value the same release fails: 1 > 2/3 with no error at all
    assert not judge(lower, _measures([1.0, 1.0, 1.0], maximum=2 / 3), "dpmpm").passed
    # a release well above its reference fails beyond both errors; worked by hand with Welch-Satterthwaite
    values, reps = [3.0, 3.2, 2.8], [1.9, 2.1] * 5
    se_release, se_reference = 0.2 / 3**0.5, np.std(reps, ddof=1) / 10**0.5
    se = np.hypot(se_release, se_reference)
    df = se**4 / (se_release**4 / 2 + se_reference**4 / 9)
    from scipy.stats import t

    (judgement,) = judge(lower, _against_repetitions(values, reps), "dpmpm").judgements
    assert judgement.passed is False
    assert judgement.figure == pytest.approx(3.0 - t.ppf(0.975, df) * se)
    assert judgement.interval == pytest.approx((3.0 - t.ppf(0.975, df) * se, 3.0 + t.ppf(0.975, df) * se))
    row = judgement.row()  # the figure, not the judged end, and the difference 3 - 2 apart with its own test
    assert row["figure"] == pytest.approx(3.0) and row["reference"] == "inherent_max 2" and row["verdict"] == "FAILS"
    half = t.ppf(0.975, df) * se
    assert row["test"] == (f"difference 1, Welch 95% interval {1 - half:.4g} to {1 + half:.4g}: lower end > 0 "
                           "(above the reference)")  # fmt: skip
    # the pooled statistic is judged against the reference's mean, as the policy file says
    pooled = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\n'
                                           'at_most = "inherent_max"\n'))  # fmt: skip
    assert not judge(pooled, _against_repetitions([1.0, 1.0, 1.0], [1.0, 1.0, 0.0]), "dpmpm").passed


def test_a_criterion_a_release_has_no_measure_for_is_not_judged_never_passed(tmp_path):
    path = _policy(tmp_path, '[[criterion]]\nmeasure = "proximity"\nat_most = 0.5\n')
    verdict = judge(load_policy(path), _measures([1.0]), "dpmpm")
    assert verdict.judgements == [] and "a dpmpm release has no proximity" in verdict.not_applicable[0]
    assert "no criterion of it applies" in verdict.sentence()
    other = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nsubset = "age+area"\nat_most = 1\n')
    (judgement,) = judge(load_policy(other), _measures([1.0]), "dpmpm").judgements
    assert judgement.passed is None and "has no subset 'age+area'" in judgement.note
    restricted = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nat_most = 0\n'
                                   'applies_to = ["cart"]\n')  # fmt: skip
    assert judge(load_policy(restricted), _measures([1.0]), "dpmpm").judgements == []


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ('[[criterion]]\nmeasure = "match_risk"\nat_most = 1\n', 5, "unknown measure 'match_risk'; accepted: "),
        ('[[criterion]]\nmeasure = "expected_match_risk"\nstatistic = "mean"\nat_most = 1\n', 6,
         "unknown statistic 'mean'; accepted: pooled, upper, lower, worst"),
        ('[[criterion]]\nmeasure = "expected_match_risk"\nat_most = "maximum"\n', 6,
         "has no reference 'maximum'; its references: inherent_min, inherent_max"),
        ('[[criterion]]\nmeasure = "expected_match_risk"\n', 4, "give exactly one threshold"),
        ('[[criterion]]\nmeasure = "copied_records"\nat_most = 1\nwhen = "always"\n', 7, "unknown key(s) when"),
        ('[[criterion]]\nmeasure = "copied_records"\nat_most = 1\napplies_to = ["sdv"]\n', 7,
         "unknown synthesizer(s) sdv"),
    ],
)
def test_a_bad_policy_names_the_line_and_the_accepted_names(tmp_path, body, line, message):
    path = _policy(tmp_path, body)
    with pytest.raises(bsd.InputError, match=f"line {line}: .*{re.escape(message[:30])}") as err:
        load_policy(path)
    assert message in str(err.value)


def test_a_malformed_file_is_refused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[policy]\nname = "x"\n[[criterion]\n')
    with pytest.raises(bsd.InputError, match=r"not valid TOML: .*line 3"):
        load_policy(path)
    with pytest.raises(bsd.InputError, match="does not exist"):
        load_policy(tmp_path / "missing.toml")


def test_policy_command_prints_the_builtin_policy_and_checks_a_file(tmp_path, capsys):
    assert main(["policy"]) == 0
    assert capsys.readouterr().out == default_policy_text()
    path = _policy(tmp_path, '[[criterion]]\nmeasure = "copied_records"\nat_most = "held_out"\n', name="board")
    assert main(["policy", "--check", str(path)]) == 0
    assert "copied_records[*] pooled at most held_out" in capsys.readouterr().out
    bad = _policy(tmp_path, '[[criterion]]\nmeasure = "nope"\nat_most = 1\n')
    assert main(["policy", "--check", str(bad)]) == 2
    assert "line 5: unknown measure 'nope'" in capsys.readouterr().err


def test_a_subset_a_measure_has_not_got_is_refused_when_the_policy_is_read(tmp_path, capsys):
    """Issue 46: a criterion on a fixed subset the measure never has would never apply; refused naming the line."""
    typo = _policy(tmp_path, '[[criterion]]\nmeasure = "replicated_uniques"\nsubset = "unique"\nat_most = 0\n')
    assert main(["policy", "--check", str(typo)]) == 2
    err = capsys.readouterr().err
    assert "line 6: replicated_uniques has no subset 'unique'" in err and "'unique in both'" in err
    for measure, subset in (("intruder_correct", "unique items"), ("copied_records", "all"),
                            ("expected_match_risk", "sex+any+columns")):  # fmt: skip
        fine = _policy(tmp_path, f'[[criterion]]\nmeasure = "{measure}"\nsubset = "{subset}"\nat_most = 1\n')
        assert load_policy(fine).criteria[0].subset == subset  # columns are checked against the data, at the run
    policy = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "true_match_rate"\nsubset = "sex+wage"\n'
                                           'at_most = 1\napplies_to = ["dpmpm"]\n'))  # fmt: skip
    policy.check_columns(["sex", "wage"], "dpmpm")
    policy.check_columns(["sex"], "cart")  # the criterion applies to the DPMPM only
    with pytest.raises(bsd.InputError, match=r"names column\(s\) 'wage' the data has not got"):
        policy.check_columns(["sex", "age"], "dpmpm")


def test_a_bad_policy_is_refused_before_any_sampling(tmp_path, capsys):
    data = tmp_path / "flows.csv"
    bsd.examples.flow_table().to_csv(data, index=False)
    bad = _policy(tmp_path, '[[criterion]]\nmeasure = "expected_match_risk"\nstatistic = "median"\nat_most = 1\n')
    out = tmp_path / "out"
    assert main(["flows", "--data", str(data), "--out", str(out), "--policy", str(bad)]) == 2
    assert "line 6: unknown statistic 'median'" in capsys.readouterr().err
    assert not out.exists()


def test_cart_release_refused_by_a_policy_its_example_cannot_meet(tmp_path, capsys):
    """End to end on the command line: exit status 3, no release/, the message names the criterion, its figure
    with its interval, the threshold and the levers; private/policy.json holds the verdict."""
    from bayessdc.models.cart import simulate_acs_persons

    data = tmp_path / "persons.csv"
    simulate_acs_persons(300, seed=2).to_csv(data, index=False)
    policy = _policy(tmp_path, '[[criterion]]\nmeasure = "copied_records"\nat_most = 0.01\n'
                               'source = "a board that allows no copies"\n', name="no-copies")  # fmt: skip
    out = tmp_path / "out"
    status = main(["cart", "--data", str(data), "--synthesize", "education", "--keep", "age,sex", "--m", "2",
                   "--bootstrap", "20", "--out", str(out), "--policy", str(policy)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 3
    assert not (out / "release").exists()
    assert "fails 1 criterion(s) of the disclosure policy 'no-copies'" in err
    assert "copied_records [all] pooled" in err and "95% interval" in err and "'at most 0.01'" in err
    assert "min_leaf: larger leaves" in err
    verdict = json.loads((out / "private" / "policy.json").read_text())
    assert verdict["passed"] is False and verdict["policy"]["name"] == "no-copies"
    assert verdict["judgements"][0]["verdict"] == "FAILS"


def test_a_policy_of_ones_own_is_recorded_by_name_and_digest(tmp_path):
    from bayessdc.models.cart import simulate_acs_persons

    policy = _policy(tmp_path, '[[criterion]]\nmeasure = "copied_records"\nat_most = 1\n', name="lenient")
    release = bsd.synthesize(
        simulate_acs_persons(200, seed=1), bsd.CART(bootstrap=10), synthesize="education", keep="age,sex", m=2,
        seed=0, policy=policy, out=tmp_path / "out", progress=False,
    )  # fmt: skip
    described = json.loads((tmp_path / "out" / "release" / "model.json").read_text())["disclosure_policy"]
    assert described["name"] == "lenient" and not described["builtin"]
    assert described["digest"] == f"sha256:{load_policy(policy).digest}"
    assert described["criteria"] == [{"measure": "copied_records", "subset": "*", "statistic": "pooled", "at_most": 1}]
    assert release.policy.passed
    assert isinstance(release.measure_table(), pd.DataFrame)
    # the same measures judged by another policy, without changing what was released
    strict = _policy(tmp_path, '[[criterion]]\nmeasure = "copied_records"\nstatistic = "worst"\nat_most = 0\n')
    verdict = release.judge(strict)
    assert not verdict.passed and verdict.failed()[0].figure == release.risk().set_index("measure").loc[
        "copied_records", "worst"]
    default = release.judge()  # the default judges a CART release's records; nothing was removed under 'lenient'
    assert {j.criterion.measure for j in default.judgements} == {
        "copied_records", "replicated_uniques", "expected_match_risk", "true_match_rate", "attribute_disclosures"}
    assert all(j.passed is not None for j in default.judgements) and release.policy.passed
    assert {n.split("[")[0] for n in default.not_applicable} >= {"removed_records", "released_records"}
    built = bsd.Policy(name="built in Python", criteria=())
    assert built.digest and built.digest != bsd.Policy(name="other", criteria=(), reported={"proximity": ""}).digest


# ----------------------------------------------------------------------------------------------------
# The policy's table (issue 49, item 5): the figure, the reference and the test of their difference apart


class _Count(Measure):
    name, kind, better, unit = "attribute_disclosures", "risk", "lower", "records"


class _Rate(Measure):
    name, kind, better, unit = "true_match_rate", "risk", "lower", "share of records"


def _with_reference(measure, values, repetitions, subset="all"):
    reps = np.asarray(repetitions, dtype=float)
    reference = {"subset": subset, "reference": "inherent_max", "value": reps.mean(),
                 "mc_se": reps.std(ddof=1) / np.sqrt(reps.size), "repetitions": reps.size}  # fmt: skip
    return MeasureSet([measure.result([{"subset": subset, "dataset": d + 1, "value": v} for d, v in enumerate(values)],
                                      [reference])])  # fmt: skip


def _row(verdict):
    (row,) = verdict.table().to_dict(orient="records")
    return row


def test_the_table_shows_the_figure_the_reference_and_the_welch_difference_apart(tmp_path):
    """Worked by hand: 25, 50, 75 records in the m = 3 datasets (pooled 50, sd 25, se 25 / sqrt(3) = 14.43) against
    an inherent maximum of 25, 25, 50, 50 in S = 4 repetitions (mean 37.5, sd 14.43, se 7.217). Welch: se =
    sqrt(14.43^2 + 7.217^2) = 16.14 on se^4 / (14.43^4 / 2 + 7.217^4 / 3) = 3 degrees of freedom, t = 3.182, half
    width 51.36: the difference 12.5 has the interval -38.86 to 63.86, whose lower end is below 0 (met). The figure's
    own interval, 50 +- 4.303 x 14.43 = -12.10 to 112.1, is shown from 0: a count is never negative; the reference's,
    37.5 +- 3.182 x 7.217, is 14.53 to 60.47. The old table showed the judged end, 50 - 51.36 = -1.357 records."""
    policy = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "attribute_disclosures"\nstatistic = "lower"\n'
                                           'at_most = "inherent_max"\nsource = "Hu & Savitsky"\n'))  # fmt: skip
    verdict = judge(policy, _with_reference(_Count(), [25.0, 50.0, 75.0], [25.0, 25.0, 50.0, 50.0]), "dpmpm")
    (judgement,) = verdict.judgements
    assert judgement.passed is True
    assert judgement.figure == pytest.approx(50 - 51.3565064, abs=1e-6)  # the judged end: unchanged
    assert judgement.difference == 12.5 and judgement.df == pytest.approx(3.0)
    assert judgement.difference_interval == pytest.approx((-38.8565064, 63.8565064), abs=1e-6)
    assert judgement.pooled_interval == pytest.approx((-12.1034428, 112.1034428), abs=1e-6)
    assert judgement.figure_interval == pytest.approx((0.0, 112.1034428), abs=1e-6)
    assert judgement.reference_interval == pytest.approx((14.5326721, 60.4673279), abs=1e-6)
    assert list(verdict.table().columns) == ["criterion", "figure", "95% interval", "unit", "reference",
                                             "reference 95% interval", "test", "verdict", "source"]  # fmt: skip
    assert _row(verdict) == {
        "criterion": "attribute_disclosures [all] lower", "figure": 50.0, "95% interval": "0 to 112.1",
        "unit": "records", "reference": "inherent_max 37.5", "reference 95% interval": "14.53 to 60.47 (4 repetitions)",
        "test": "difference 12.5, Welch 95% interval -38.86 to 63.86: lower end <= 0 (not above the reference)",
        "verdict": "meets", "source": "Hu & Savitsky",
    }  # fmt: skip
    sentence = judgement.sentence()
    assert sentence.startswith("attribute_disclosures [all] lower: figure 50 (records; 95% interval 0 to 112.1) "
                               "meets 'at most 37.5' (inherent_max, 95% interval 14.53 to 60.47 over 4 repetitions): "
                               "difference 12.5, Welch 95% interval -38.86 to 63.86")  # fmt: skip
    assert "Welch, 3.0 degrees of freedom" in sentence and "-1.357" not in sentence
    assert "-1.357" not in repr(judgement) and "figure 50" in repr(judgement)
    # private/policy.json: the row, the numbers, and the keys other code reads (figure: the one shown)
    record = verdict.to_dict()["judgements"][0]
    assert record["figure"] == 50.0 and record["threshold_value"] == 37.5 and record["passed"] is True
    assert record["judged_value"] == pytest.approx(-1.3565064, abs=1e-6) and record["statistic"] == "lower"
    assert record["difference_interval"] == pytest.approx([-38.8565064, 63.8565064], abs=1e-6)


def test_a_rate_whose_welch_lower_end_is_negative_shows_a_figure_of_at_least_0(tmp_path):
    """The DPMPM demo's true match rate [gender+county]: no unique match in any dataset (0, 0, 0) against an
    inherent maximum of 0, 0.0002, 0, 0.0002 (mean 0.0001, se 0.0001155 / 2 = 5.774e-05 on 3 degrees of freedom, t =
    3.182, half width 0.0001837). The judged end is 0 - 0.0001837 < 0, which the old table showed as the figure."""
    policy = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "true_match_rate"\nstatistic = "lower"\n'
                                           'at_most = "inherent_max"\n'))  # fmt: skip
    measures = _with_reference(_Rate(), [0.0, 0.0, 0.0], [0.0, 2e-4, 0.0, 2e-4], subset="gender+county")
    verdict = judge(policy, measures, "dpmpm")
    (judgement,) = verdict.judgements
    assert judgement.passed and judgement.figure == pytest.approx(-1.8373862e-4)  # judged as before
    row = _row(verdict)
    assert row["figure"] == 0.0 and row["95% interval"] == "0 to 0" and row["unit"] == "share of records"
    assert row["reference"] == "inherent_max 0.0001"
    assert row["reference 95% interval"] == "0 to 0.0002837 (4 repetitions)"  # 0.0001 - 0.0001837 shown as 0
    assert row["test"] == ("difference -0.0001, Welch 95% interval -0.0002837 to 8.374e-05: lower end <= 0 "
                           "(not above the reference)")  # fmt: skip
    number = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
    text = " ".join([row["95% interval"], row["reference"], row["reference 95% interval"]])
    shown = [row["figure"], *(float(x) for x in re.findall(number, text))]
    assert min(shown) >= 0  # the figure, the reference and their intervals: never negative


def test_a_fixed_threshold_shows_the_end_judged_against_the_number(tmp_path):
    """Worked by hand: shares 0.01, 0.02, 0.03 (pooled 0.02, se 0.01 / sqrt(3), t(0.975, 2) = 4.303: interval
    0.02 +- 0.02484 = -0.004841 to 0.04484, shown from 0)."""
    rate = MeasureSet([_Rate().result([{"subset": "all", "dataset": d + 1, "value": v}
                                       for d, v in enumerate([0.01, 0.02, 0.03])])])  # fmt: skip

    def row(body):
        return _row(judge(load_policy(_policy(tmp_path, f'[[criterion]]\nmeasure = "true_match_rate"\n{body}')),
                          rate, "dpmpm"))  # fmt: skip

    upper = row('statistic = "upper"\nat_most = 0.05\n')
    assert upper["figure"] == pytest.approx(0.02) and upper["95% interval"] == "0 to 0.04484"
    assert upper["reference"] == "fixed 0.05" and upper["reference 95% interval"] == "n/a"
    assert upper["test"] == "upper end 0.04484 <= 0.05" and upper["verdict"] == "meets"
    assert row('statistic = "upper"\nat_most = 0.04\n')["test"] == "upper end 0.04484 > 0.04"
    assert row('statistic = "worst"\nat_least = 0.02\n')["test"] == "worst dataset 0.03 >= 0.02"
    # the judged lower end -0.004841 is shown as 0 when that reads the same verdict, never when it would not
    assert row('statistic = "lower"\nat_most = 0.01\n')["test"] == "lower end 0 <= 0.01"
    unmet = row('statistic = "lower"\nat_least = 0\n')
    assert unmet["test"] == "lower end -0.004841 < 0" and unmet["verdict"] == "FAILS"


def test_a_crossed_inherent_pair_is_judged_against_its_less_strict_end(tmp_path):
    """Issue 49: the true match rate's inherent minimum (labels drawn at random) can exceed its maximum
    (bayessdc.risk.identification). A release at 0.015 against a minimum of 0.0175 and a maximum of 0.0107 would fail
    'at most inherent_max' though labels drawn at random give more: judged against the minimum, the larger end, it
    passes, and the judgement says why. Ordered, the same pair judges against the maximum as stated."""
    policy = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "true_match_rate"\nat_most = "inherent_max"\n'))

    def measures(low, high):
        result = _Rate().result([{"subset": "all", "dataset": d + 1, "value": v} for d, v in enumerate([0.015] * 3)],
                                [{"subset": "all", "reference": "inherent_min", "value": low},
                                 {"subset": "all", "reference": "inherent_max", "value": high}])  # fmt: skip
        return MeasureSet([result])

    (crossed,) = judge(policy, measures(0.0175, 0.0107), "dpmpm").judgements
    assert crossed.passed is True and crossed.threshold == 0.0175 and crossed.threshold_name == "inherent_min"
    assert "the inherent pair is crossed for this subset (minimum 0.0175 above maximum 0.0107" in crossed.note
    (ordered,) = judge(policy, measures(0.0107, 0.0175), "dpmpm").judgements
    assert ordered.passed is True and ordered.threshold == 0.0175 and ordered.threshold_name == "inherent_max"
    assert ordered.note == ""
    (strict,) = judge(policy, measures(0.001, 0.0107), "dpmpm").judgements  # ordered and below the release: fails
    assert strict.passed is False and strict.threshold_name == "inherent_max"
    at_least = load_policy(_policy(tmp_path, '[[criterion]]\nmeasure = "true_match_rate"\nat_least = "inherent_min"\n'))
    (low,) = judge(at_least, measures(0.0175, 0.0107), "dpmpm").judgements  # at least: the smaller end, the maximum
    assert low.passed is True and low.threshold_name == "inherent_max"
