"""Issue 46: every CART release is judged by the default policy on its records, each refusal or release by
construction: records copied against a cross-fitted release that never saw them, the replicated uniques removed
first, at least 100 records in every dataset, and only the levels drawn in the released file."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.cart import simulate_acs_persons

ROLES = {"synthesize": "education,marital,enrolled,grade", "keep": "age,sex,relationship"}


@pytest.mark.parametrize("records", [1, 3])
def test_a_file_of_one_or_three_records_is_refused_naming_the_criterion(records, tmp_path, capsys):
    """A one-record file was released as itself: now refused (exit 3) by the records every dataset must keep."""
    simulate_acs_persons(400, seed=3).head(records).to_csv(tmp_path / "few.csv", index=False)
    argv = ["cart", "--quiet", "--data", str(tmp_path / "few.csv"), "--synthesize", ROLES["synthesize"],
            "--keep", ROLES["keep"], "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "released_records [all] worst" in err and "'at least 100'" in err and "nothing was released" in err
    assert "min_leaf" in err and "donors" in err  # the levers, in words
    assert not (tmp_path / "out" / "release").exists()
    verdict = json.loads((tmp_path / "out" / "private" / "policy.json").read_text())
    assert not verdict["passed"]
    assert [j["criterion"] for j in verdict["judgements"] if j["passed"] is False] == ["released_records [all] worst"]


def test_a_release_that_copies_its_records_is_refused_naming_records_copied_and_the_levers():
    """Leaves of one record: the paper's bootstrap gives every row its own record's values, a share of 1 against a
    release that never saw the records; the pipeline then tries donors='others' before refusing."""
    data = simulate_acs_persons(400, seed=2)
    with pytest.raises(bsd.DisclosureRefused) as refused:
        bsd.synthesize(data, bsd.CART(min_leaf=1, bootstrap=10), m=3, seed=0, progress=False, **ROLES)
    first, *others = refused.value.tried
    assert first.setting == {} and [v.setting for v in others] == [{"donors": "others"}]
    copied = next(j for j in first.judgements if j.criterion.measure == "copied_records")
    assert copied.figure == 1.0 and copied.threshold < 1.0 and copied.threshold_name == "unlearned_range"
    assert not copied.passed
    message = str(refused.value)
    assert "copied_records [all] pooled" in message and "unlearned_range" in message
    for lever in ("min_leaf", "ccp_alpha", "smoothing", "keep", "donors"):
        assert f"{lever}:" in message


def test_donors_others_is_tried_without_a_refit_and_released_when_it_meets_the_policy(tmp_path):
    """Every record unique in its kept x and its synthesized y: a row can equal a record only by being given that
    record's own y. The paper's bootstrap gives some rows their own (replicated uniques, removed: a share above
    the none removed from the release that never saw them); donors='others' gives none, and is released."""
    data = pd.DataFrame({"x": np.arange(150.0), "y": [f"v{i:03d}" for i in range(150)]})
    release = bsd.synthesize(data, bsd.CART(bootstrap=10), synthesize="y", keep="x", m=3, seed=0, progress=False,
                             out=tmp_path / "out")  # fmt: skip
    first, last = release.policy_tried
    assert first.setting == {} and not first.passed
    assert [j.criterion.measure for j in first.failed()] == ["removed_records"]
    assert last.setting == {"donors": "others"} and last.passed and release.policy is last
    assert release.facts["replicated_uniques_removed"] == 0 and len(release.synthetic) == 3 * len(data)
    for _, frame in release.synthetic.groupby("synthetic"):
        assert (frame["y"].astype(str).to_numpy() != data["y"].to_numpy()).all()
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["donors"] == "others" and model["disclosure_policy"]["released_under"] == {"donors": "others"}


def test_the_released_file_lists_only_the_levels_drawn(tmp_path):
    """A marital status held by one confidential record, admissible (by a rule) for that record alone and left out
    of its own draw (donors='others'): never drawn, so not in the released file's categories, nor in memory."""
    data = simulate_acs_persons(400, seed=5)
    data["age"] = data["age"].clip(upper=90)
    data.loc[7, ["age", "relationship", "marital"]] = [97, "householder", "annulled"]
    rules = [{"name": "annulled only at 97", "if": {"age": {"max": 96}}, "then": {"marital": {"not_in": ["annulled"]}}}]
    recipe = bsd.CART(rules=rules, donors="others", bootstrap=10)
    release = bsd.synthesize(data, recipe, synthesize="education,marital", keep="age,sex,relationship", m=2, seed=0,
                             out=tmp_path / "out", progress=False)  # fmt: skip
    assert "annulled" not in set(release.synthetic["marital"].astype(str))
    released = pd.read_parquet(tmp_path / "out" / "release" / "synthetic.parquet")
    for column in ("education", "marital", "sex", "relationship"):
        drawn = set(released[column].dropna().astype(str))
        assert set(released[column].cat.categories) == drawn  # every level listed was drawn
        assert list(release.synthetic[column].cat.categories) == list(released[column].cat.categories)
    assert "annulled" in set(data["marital"])
    assert bsd.load(tmp_path / "out").synthetic.equals(released)
