"""bsd.evaluate and bayessdc evaluate: synthetic data made elsewhere judged by the same measures, policy and report,
and put beside a bayessdc release in one comparison."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.control import MIN_CONTROL_RECORDS, check_control, split_holdout

COLUMNS = ["age", "sex", "education"]


@pytest.fixture(scope="module")
def persons():
    return bsd.examples.acs_persons(600, seed=4)[COLUMNS]


def synthpop_style(original: pd.DataFrame, m: int, seed: int) -> list[pd.DataFrame]:
    """m fully synthetic datasets as synthpop's write.syn gives them (one CSV per dataset): each column drawn in
    turn given the one before it (a sequential synthesizer; education given the age decade)."""
    rng = np.random.default_rng(seed)
    decade = original["age"] // 10
    frames = []
    for _ in range(m):
        age = rng.choice(original["age"].to_numpy(), size=len(original))
        sex = rng.choice(original["sex"].to_numpy(), size=len(original))
        by_decade = original.groupby(decade)["education"]
        education = [rng.choice(by_decade.get_group(a // 10).to_numpy()) for a in age]
        frames.append(pd.DataFrame({"age": age, "sex": sex, "education": education}))
    return frames


def sdv_style(original: pd.DataFrame, seed: int) -> pd.DataFrame:
    """One synthetic table as SDV's sample() gives it: every column drawn independently from its marginal."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.choice(original[c].to_numpy(), size=len(original)) for c in original.columns})


def test_partially_synthetic_data_get_the_identification_risk_and_an_exact_copy_fails_the_policy(persons):
    copy = bsd.evaluate(persons, [persons, persons], synthesize="education", keep="age,sex", name="copy",
                        progress=False)  # fmt: skip
    assert copy.m == 2 and copy.description["kind"] == "partially synthetic"
    risk = copy.risk().set_index(["measure", "subset"])
    # every record's synthetic row is itself: all attribute values disclosed, every record copied
    assert risk.loc[("attribute_disclosures", "all"), "pooled"] == len(persons)
    assert risk.loc[("copied_records", "all"), "pooled"] == 1.0
    # an exact copy is above the inherent maximum of Hu & Savitsky: the default policy refuses it
    assert not copy.policy.passed
    assert {j.criterion.measure for j in copy.policy.failed()} >= {"expected_match_risk", "attribute_disclosures"}


def test_kept_columns_are_decided_from_the_data_and_a_keep_that_does_not_hold_is_refused(persons):
    shuffled = persons.sample(frac=1, random_state=1).reset_index(drop=True)
    # issue 49: keep= was warned about and then obeyed by the attacks; now refused, naming the rows
    with pytest.raises(bsd.InputError, match=r"keep= age, sex: 'age' of dataset 1 differs from the original at data "
                       r"rows 1, 2, 3"):  # fmt: skip
        bsd.evaluate(persons, shuffled, synthesize="education", keep="age,sex", progress=False)
    with pytest.raises(bsd.InputError, match=r"dataset 2 has 1 rows fewer than the original, and from data row \d+ on"):
        bsd.evaluate(persons, [persons, shuffled.iloc[1:]], keep="age", progress=False)
    with pytest.raises(bsd.InputError, match="dataset 1 has 601 rows, more than the original's 600"):
        bsd.evaluate(persons, pd.concat([persons, persons.iloc[:1]]), keep="age", progress=False)
    release = bsd.evaluate(persons, shuffled, progress=False)  # no keep: fully synthetic
    assert release.description["kind"] == "fully synthetic" and release.description["kept"] == []
    assert "expected_match_risk" not in set(release.risk()["measure"])  # defined on partially synthetic data only
    # without keep=, the columns that are the original's record by record in every dataset are the kept ones
    redrawn = persons.assign(education=persons["education"].sample(frac=1, random_state=2).to_numpy())
    found = bsd.evaluate(persons, [redrawn, redrawn], progress=False)
    assert found.description["kind"] == "partially synthetic"
    assert (found.description["kept"], found.description["synthesized"]) == (["age", "sex"], ["education"])
    named = bsd.evaluate(persons, redrawn, synthesize="sex", progress=False)  # a column named is synthesized
    assert (named.description["kept"], named.description["synthesized"]) == (["age"], ["sex", "education"])
    # rows removed (synthpop's sdc, bayessdc's replicated uniques), the rest in order: still partially synthetic,
    # without the figures that compare record i with row i
    removed = bsd.evaluate(persons, [redrawn.drop(index=[3, 10]), redrawn], keep="age,sex", progress=False)
    assert removed.description["kind"] == "partially synthetic" and removed.description["rows_removed"]["rows"] == 2
    assert not {"expected_match_risk", "attribute_disclosures"} & set(removed.risk()["measure"])
    with pytest.raises(bsd.InputError, match="'age' are given as both kept and synthesized"):
        bsd.evaluate(persons, redrawn, synthesize="age", keep="age", progress=False)


def partially_synthetic(n: int, seed: int) -> pd.DataFrame:
    """Records with two kept columns that tell people apart (a continuous x and a group) and two synthesized
    ones, a numeric income and a colour, each drawn given x and the group."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    group = np.where(x + rng.normal(scale=0.5, size=n) > 0, "high", "low")
    return pd.DataFrame({"x": x, "group": group, **redrawn_secrets(x, group, rng)})


def redrawn_secrets(x: np.ndarray, group: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    income = np.exp(10 + 0.5 * x + rng.normal(scale=0.6, size=len(x)))
    colour = np.where(rng.random(len(x)) < np.where(group == "high", 0.6, 0.2), "red", "blue")
    return {"income": income, "colour": colour}


@pytest.fixture(scope="module")
def secrets():
    training, control = partially_synthetic(600, 1), partially_synthetic(600, 2)
    rng = np.random.default_rng(3)
    independent = [training.assign(**redrawn_secrets(training["x"].to_numpy(), training["group"].to_numpy(), rng))
                   for _ in range(2)]  # fmt: skip
    return training, control, independent


SMALL = bsd.AttackSettings(n_attacks=200, max_rows=400)


def test_a_copied_numeric_secret_scores_near_the_maximum_and_its_independent_draw_near_zero(secrets):
    """Issue 49: the attacks read only the categorical synthesized columns, so a numeric secret was never
    attacked and the distance was taken over the categorical columns alone."""
    training, control, independent = secrets
    copied = bsd.evaluate(training, [training, training], keep="x,group", holdout=control, attacks=SMALL,
                          progress=False)  # fmt: skip
    drawn = bsd.evaluate(training, independent, keep="x,group", holdout=control, attacks=SMALL, progress=False)
    for release in (copied, drawn):
        assert release.description["synthesized"] == ["income", "colour"]
        assert release.measured["inference"].subsets() == ["income", "colour"]
    risk = {name: r.measured["inference"].references.set_index(["subset", "reference"])
            for name, r in (("copied", copied), ("drawn", drawn))}  # fmt: skip
    # the copy: the nearest synthetic record on x, group and colour is the target's own row, income right
    assert risk["copied"].loc[("income", "pooled_risk"), "value"] > 0.9
    assert risk["copied"].loc[("income", "training"), "value"] > 0.95
    # the independent draw reveals no more of a training record's income than of a control record's
    drawn_income = risk["drawn"].loc[("income", "pooled_risk")]
    assert drawn_income["lower"] == 0.0 and drawn_income["value"] < 0.1
    # the interval carries the attacks' own sampling: never narrower than the pooled attacks' interval (two
    # datasets whose risks are both bounded at 0 have no spread, yet the figure is not known to be 0 exactly)
    shown = drawn.measured.summary().set_index(["measure", "subset"]).loc[("inference", "income")]
    assert shown["lower"] <= drawn_income["lower"] and shown["upper"] >= drawn_income["upper"] > 0
    assert shown["interval"] in ("monte carlo", "monte carlo and own")
    # the distance over the synthesized columns, the numeric income with them, separates the two
    share = {name: r.measured["distance_to_closest_record"] for name, r in (("copied", copied), ("drawn", drawn))}
    assert share["copied"].statistic("holdout 5th percentile", "worst") == 1.0
    holdout = share["drawn"].references.set_index(["subset", "reference"]).loc[("holdout 5th percentile", "holdout")]
    assert share["drawn"].statistic("holdout 5th percentile", "pooled") < holdout["upper"] + 0.06
    assert copied.measured["distance_ratio"].statistic("all", "worst") == 0.0
    assert drawn.measured["distance_ratio"].statistic("all", "pooled") > 0.5


def test_one_dataset_carries_its_attacks_own_interval_and_a_missing_figure_says_why(secrets):
    training, control, independent = secrets
    release = bsd.evaluate(training, independent[0], keep="x,group", holdout=control, attacks=SMALL, progress=False)
    summary = release.measured.summary().set_index(["measure", "subset"])
    inference = summary.loc[("inference", "income")]
    pooled = release.measured["inference"].references.set_index(["subset", "reference"]).loc[("income", "pooled_risk")]
    # one dataset: no Monte Carlo spread; the interval is the attack's own Wilson interval, not lower = upper
    assert inference["interval"] == "own" and inference["datasets"] == 1
    assert (inference["lower"], inference["upper"]) == (min(pooled["lower"], inference["pooled"]), pooled["upper"])
    assert inference["upper"] > inference["pooled"]
    share = summary.loc[("distance_to_closest_record", "holdout median")]
    assert share["interval"] == "own" and share["lower"] < share["pooled"] < share["upper"]
    # colour alone has two levels, each shared by hundreds of records: no univariate predicate singles one out
    columns = ["x", "group", "colour"]
    alone = bsd.evaluate(training[columns], independent[0][columns], keep="x,group", holdout=control[columns],
                         attacks=SMALL, progress=False)  # fmt: skip
    univariate = alone.measured.summary().set_index(["measure", "subset"]).loc[("singling_out", "univariate")]
    assert np.isnan(univariate["pooled"]) and univariate["note"].startswith("not computed: no univariate predicate")
    assert univariate["interval"] == "" and "note" in alone.risk().columns


def test_attack_settings_are_checked_and_the_cli_builds_them_from_its_flags(secrets, tmp_path, capsys):
    training, control, independent = secrets
    with pytest.raises(bsd.InputError, match="attacks= secrets column\\(s\\) 'wage' are not released columns"):
        bsd.evaluate(training, independent, holdout=control, attacks=bsd.AttackSettings(secrets=("wage",)),
                     progress=False)  # fmt: skip
    with pytest.raises(bsd.InputError, match="unknown attack preset 'sdv'"):
        bsd.evaluate(training, independent, holdout=control, attacks="sdv", progress=False)
    assert bsd.AttackSettings.preset("anonymeter") == bsd.AttackSettings(n_neighbors=10, compatibility="anonymeter")
    for name, frame in (("original", training), ("control", control), ("synthetic", independent[0])):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    files = ["--original", str(tmp_path / "original.csv"), "--synthetic", str(tmp_path / "synthetic.csv"),
             "--holdout", str(tmp_path / "control.csv")]  # fmt: skip
    assert main(["evaluate", *files, "--out", str(tmp_path / "run"), "--attacks", "anonymeter", "--neighbours", "3",
                 "--n-attacks", "120", "--secret", "income", "--link", "x|income,colour", "-q"]) in (0, 3)  # fmt: skip
    described = json.loads((tmp_path / "run" / "private" / "evaluated" / "model.json").read_text())["attacks"]
    assert described["compatibility"] == "anonymeter" and (described["n_neighbors"], described["n_attacks"]) == (3, 120)
    assert described["secrets"] == ["income"] and described["split"] == [["x"], ["income", "colour"]]
    assert main(["evaluate", *files, "--out", str(tmp_path / "bad"), "--secret", "wage", "-q"]) == 2
    assert "'wage' are not released columns" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_a_synthetic_file_with_other_columns_or_levels_is_refused_naming_them(persons):
    with pytest.raises(bsd.InputError, match="'income' are not columns of the original"):
        bsd.evaluate(persons, persons.assign(income=1), progress=False)
    with pytest.raises(bsd.InputError, match="column 'education' has level\\(s\\) the original lacks: 'doctorate'"):
        bsd.evaluate(persons, persons.assign(education="doctorate"), progress=False)
    with pytest.raises(bsd.InputError, match="keep= column\\(s\\) 'region'"):
        bsd.evaluate(persons, persons, keep="region", progress=False)


def test_a_control_set_that_repeats_training_records_or_is_too_small_is_refused(persons):
    training, control = split_holdout(persons, 0.3, seed=1)
    assert len(control) == 180 and not set(training.index) & set(control.index)
    assert len(check_control(training, control, COLUMNS)) == len(control)  # records the fit never saw
    with pytest.raises(bsd.InputError, match="the control set repeats training records: 180 of its 180 rows"):
        check_control(training, training.iloc[:180], COLUMNS)
    with pytest.raises(bsd.InputError, match=f"at least {MIN_CONTROL_RECORDS}"):
        check_control(training, control.iloc[:50], COLUMNS)
    with pytest.raises(bsd.InputError, match="holdout=0.34 or more"):
        split_holdout(persons.iloc[:300], 0.1, seed=1)
    # issue 46: holdout=0.999 fitted on one record and released it; the training records have a minimum too
    with pytest.raises(bsd.InputError, match=r"leaves 1 of 600 records to fit on.*at least 100.*holdout=0.83 or less"):
        split_holdout(persons, 0.999, seed=1)
    with pytest.raises(bsd.InputError, match="too few records for 100 control and 100 training"):
        split_holdout(persons.iloc[:150], 0.9, seed=1)
    training, control = split_holdout(persons, 0.8, seed=1)  # 120 left: accepted
    assert (len(training), len(control)) == (120, 480)


def test_synthpop_and_sdv_files_and_a_bayessdc_release_are_compared_in_one_report(persons, tmp_path):
    persons.to_csv(tmp_path / "original.csv", index=False)
    files = []
    for k, frame in enumerate(synthpop_style(persons, m=3, seed=2), start=1):
        files.append(tmp_path / f"syn_{k}.csv")
        frame.to_csv(files[-1], index=False)
    sdv_style(persons, seed=3).to_csv(tmp_path / "sdv.csv", index=False)

    assert main(["evaluate", "--original", str(tmp_path / "original.csv"), "--synthetic", *map(str, files),
                 "--name", "synthpop-style", "--table", "age,education", "--out", str(tmp_path / "synthpop"),
                 "-q"]) == 0  # fmt: skip
    assert main(["evaluate", "--original", str(tmp_path / "original.csv"), "--synthetic", str(tmp_path / "sdv.csv"),
                 "--name", "SDV-style", "--table", "age,education", "--out", str(tmp_path / "sdv"),
                 "-q"]) == 0  # fmt: skip
    described = json.loads((tmp_path / "synthpop" / "private" / "evaluated" / "model.json").read_text())
    assert (described["m"], described["kind"], described["synthesizer"]) == (3, "fully synthetic", "synthpop-style")
    bsd.synthesize(persons, bsd.CART(bootstrap=20), synthesize="education", keep="age,sex", m=2, seed=1,
                   out=tmp_path / "cart", progress=False)  # fmt: skip
    report = tmp_path / "compared.html"
    assert main(["report", str(tmp_path / "synthpop"), str(tmp_path / "sdv"), str(tmp_path / "cart"),
                 "--out", str(report)]) == 0  # fmt: skip
    text = report.read_text()
    assert all(label in text for label in ("synthpop-style", "SDV-style", "cart"))
    # the independent marginals of the SDV-style file lose the education-by-age table that the sequential
    # synthpop-style draw keeps: its tau of that table is lower
    tau = {name: bsd.load(tmp_path / name).utility().set_index("measure").loc["table_tau", "pooled"]
           for name in ("synthpop", "sdv")}  # fmt: skip
    assert tau["sdv"] < tau["synthpop"]


def test_an_evaluation_writes_no_release_even_of_the_original_given_as_synthetic(persons, tmp_path, capsys):
    # issue 46: given the original file as the "synthetic" one, fully synthetic (no column kept, so no criterion
    # of the default policy applies), the evaluation used to write the original into release/, exit 0
    persons.to_csv(tmp_path / "original.csv", index=False)
    out = tmp_path / "evaluated"
    status = main(["evaluate", "--original", str(tmp_path / "original.csv"), "--synthetic",
                   str(tmp_path / "original.csv"), "--name", "the original", "--out", str(out), "-q"])  # fmt: skip
    printed = capsys.readouterr().out
    assert status in (0, 3)
    assert not (out / "release").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["private"]
    kept = pd.read_parquet(out / "private" / "evaluated" / "synthetic.parquet")
    assert len(kept) == len(persons)  # the files judged, kept privately
    assert "an evaluation releases nothing" in printed and "nothing released" not in printed
    loaded = bsd.load(out)
    assert loaded.policy.evaluation and "an evaluation releases nothing" in loaded.policy.sentence()
    pd.testing.assert_frame_equal(loaded.synthetic, kept)
    report = (out / "private" / "report.html").read_text()
    assert "an evaluation releases nothing" in report and "; released." not in report


def _numbered(frame: pd.DataFrame, numbers: list) -> pd.DataFrame:
    return frame.assign(synthetic=(numbers * len(frame))[: len(frame)])


@pytest.mark.parametrize(
    ("synthetic", "extra", "expect"),
    [
        (lambda f: _numbered(f, ["a", "b"]), [], r"numbers the synthetic datasets .* data rows 1, 2"),
        (lambda f: _numbered(f, [1.0, np.nan]), [], r"column 'synthetic' .* not a whole number at data rows 2, 4"),
        (lambda f: f.iloc[:0], [], r"the synthetic data has no rows"),
        (lambda f: f, ["--known", "sex,zip"], r"known= column\(s\) 'zip' are not columns of the synthetic data"),
        (lambda f: f.assign(age=f["age"].astype(float).where(f.index != 3, np.inf)), [],
         r"column 'age': inf at data row 4"),
    ],
    ids=["numbered by text", "numbering missing", "header only", "known names an absent column", "inf"],
)  # fmt: skip
def test_bad_synthetic_files_are_refused_before_measuring(persons, synthetic, extra, expect, tmp_path, capsys):
    """Issue 48: each refused with exit 2 and one line naming the column or rows; nothing written."""
    persons.to_csv(tmp_path / "original.csv", index=False)
    synthetic(sdv_style(persons, 1)).to_csv(tmp_path / "synthetic.csv", index=False)
    status = main(["evaluate", "--original", str(tmp_path / "original.csv"), "--synthetic",
                   str(tmp_path / "synthetic.csv"), "--out", str(tmp_path / "out"), "-q", *extra])  # fmt: skip
    err = capsys.readouterr().err.replace("--known", "known=")
    assert status == 2, err
    assert re.search(expect, err), err
    assert not (tmp_path / "out").exists()
