"""holdout= in bsd.synthesize: a control set the fit never sees, stated in model.json and the report."""

from __future__ import annotations

import json

import pytest

import bayessdc as bsd
from bayessdc.control import split_holdout
from bayessdc.risk.copies import copied_holdout

ROLES = {"synthesize": "education", "keep": "age,sex"}


@pytest.fixture(scope="module")
def persons():
    return bsd.examples.acs_persons(1000, seed=1)


def test_an_evaluation_run_is_fitted_on_the_other_records_and_says_so(persons, tmp_path):
    release = bsd.synthesize(persons, bsd.CART(bootstrap=10), **ROLES, m=2, seed=3, holdout=0.2, out=tmp_path / "run",
                             progress=False)  # fmt: skip
    training, control = split_holdout(persons, 0.2, seed=3)  # the same seed holds out the same records
    data = release.measure_input
    assert len(data.original) == len(training) == 800 and len(data.holdout) == len(control) == 200
    assert data.original.reset_index(drop=True).equals(training[data.released].reset_index(drop=True))
    # the records-copied reference is the control set's share, worked out on the same records
    row = release.risk().set_index("measure").loc["copied_records"]
    assert row["held_out"] == pytest.approx(copied_holdout(training, control, data.released))
    described = json.loads((tmp_path / "run" / "release" / "model.json").read_text())
    assert described["control_set"] == {"given": False, "share": 0.2, "records": 200, "fitted_on": 800}
    report = (tmp_path / "run" / "private" / "report.html").read_text()
    assert "Evaluation run: 200 records (20%) were held out" in report
    # a run without a control set is another run: its folder is not this one
    with pytest.raises(bsd.RunMismatchError):
        bsd.synthesize(persons, bsd.CART(bootstrap=10), **ROLES, m=2, seed=3, out=tmp_path / "run", progress=False)


def test_a_control_frame_leaves_the_fit_on_every_record(persons):
    inside, outside = persons.iloc[:700], persons.iloc[700:]
    release = bsd.synthesize(inside, bsd.CART(bootstrap=10), **ROLES, m=2, seed=3, holdout=outside, progress=False)
    assert len(release.measure_input.original) == 700 and len(release.measure_input.holdout) == 300
    assert release.description["control_set"]["given"] and release.description["control_set"]["fitted_on"] == 700


def test_a_control_set_that_cannot_serve_is_refused_before_any_fitting(persons):
    with pytest.raises(bsd.InputError, match="repeats training records"):
        bsd.synthesize(persons, bsd.CART(), **ROLES, holdout=persons.iloc[:200], progress=False)
    with pytest.raises(bsd.InputError, match="holdout=0.34 or more"):
        bsd.synthesize(persons.iloc[:300], bsd.CART(), **ROLES, holdout=0.1, progress=False)
    with pytest.raises(bsd.InputError, match="holdout= applies to tables of records; flows"):
        bsd.synthesize(bsd.examples.flow_table(), bsd.Flows(), holdout=0.2, progress=False)


def test_the_command_line_holds_out_a_share(persons, tmp_path):
    from bayessdc.cli import main

    persons.to_csv(tmp_path / "persons.csv", index=False)
    assert main(["cart", "--data", str(tmp_path / "persons.csv"), "--synthesize", "education", "--keep", "age,sex",
                 "--bootstrap", "10", "--m", "2", "--holdout", "0.25", "--out", str(tmp_path / "out"),
                 "-q"]) == 0  # fmt: skip
    described = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert described["control_set"] == {"given": False, "share": 0.25, "records": 250, "fitted_on": 750}
