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


def test_kept_columns_that_do_not_match_record_by_record_make_the_data_fully_synthetic(persons):
    shuffled = persons.sample(frac=1, random_state=1).reset_index(drop=True)
    release = bsd.evaluate(persons, shuffled, synthesize="education", keep="age,sex", progress=False)
    assert release.description["kind"] == "fully synthetic"
    assert "expected_match_risk" not in set(release.risk()["measure"])  # defined on partially synthetic data only


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
