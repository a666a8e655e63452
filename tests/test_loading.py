"""``bsd.load``: a saved run read back into the release it was (``bayessdc.loading``)."""

import json

import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.synthesis.output import to_jsonable


def test_a_cart_run_loads_back_with_its_measures_and_verdict(tmp_path):
    from bayessdc.models.cart import simulate_acs_persons

    policy = bsd.Policy(name="copies", criteria=(bsd.Criterion("copied_records", statistic="upper", at_most=1.0),))
    persons = simulate_acs_persons(300, seed=2)
    release = bsd.synthesize(persons, bsd.CART(bootstrap=20), synthesize="education", keep="age,sex", m=3, seed=4,
                             policy=policy, out=tmp_path / "run", progress=False)  # fmt: skip
    loaded = bsd.load(tmp_path / "run")
    pd.testing.assert_frame_equal(loaded.synthetic, release.synthetic)
    assert loaded.description == json.loads(json.dumps(to_jsonable(release.description)))
    assert (loaded.synthesizer, loaded.m, loaded.seed) == ("cart", 3, 4)
    assert loaded.facts == to_jsonable(release.facts)
    assert loaded.diagnostics.summary == to_jsonable(release.diagnostics.summary) and not loaded.diagnostics.posteriors
    pd.testing.assert_frame_equal(loaded.risk(), release.risk())
    pd.testing.assert_frame_equal(loaded.utility(), release.utility())
    # the verdict of the policy the run was judged by (a policy built in Python: its name and digest kept)
    assert loaded.policy.policy.name == "copies" and loaded.policy.policy.digest == policy.digest
    assert loaded.policy.to_dict() == release.policy.to_dict()
    assert loaded.measured.to_dict() == json.loads(json.dumps(to_jsonable(release.measured.to_dict())))
    details = release.measured["table_tau"].details  # the bootstrap replicates behind the reference, read back
    pd.testing.assert_frame_equal(loaded.measured["table_tau"].details, details, check_dtype=False)
    # recomputing with options needs the confidential records, which a saved run does not hold
    with pytest.raises(bsd.NotApplicableError, match="loaded from .* holds no confidential records"):
        loaded.risk(known=[["age", "sex", "education"]])
