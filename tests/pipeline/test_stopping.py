"""The release gate's stopping rule (``bayessdc.pipeline.stopping``): chains added until the figures are certain,
the chains fitted kept, within a budget of chains and time."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.dpmpm import GibbsSettings, simulate_latent_class
from bayessdc.synthesis.release_gate import CHAIN_MARGIN, next_chain_count

REPORT_ONLY = bsd.Policy(name="stopping rule test: figures reported, none judged", criteria=())


def _table() -> pd.DataFrame:
    frame, _ = simulate_latent_class(200, [2, 4, 30], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    frame["county"] = "c" + frame["county"].astype(str)
    return frame


def _recipe(chains: int, **gate) -> bsd.DPMPM:
    # a utility tolerance of 0.2 of a figure's per-dataset sd: 4 chains of 10 datasets leave some figures above
    # it, a dozen or two meet it
    gate = {"datasets_per_chain": 10, "utility_tolerance": 0.2, **gate}
    return bsd.DPMPM(K=6, settings=GibbsSettings(draws=200, burn=100, chains=chains, thin=2), repetitions=5,
                     risk_records=0, gate=bsd.ReleaseGatePolicy(**gate))  # fmt: skip


def _synthesize(recipe, **options):
    return bsd.synthesize(_table(), recipe, synthesize=["county"], keep=["gender", "age"], m=3, seed=1,
                          policy=REPORT_ONLY, progress=False, **options)  # fmt: skip


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    out = tmp_path_factory.mktemp("stopping") / "out"
    return _synthesize(_recipe(4), out=out), out


def test_next_chain_count_worked_by_hand():
    assert CHAIN_MARGIN == 1.5
    assert next_chain_count(8, 17, max_chains=32) == 26  # ceil(1.5 x 17)
    assert next_chain_count(8, 9, max_chains=32) == 14  # ceil(13.5)
    assert next_chain_count(8, 8, max_chains=32, margin=1.0) == 9  # at least one more
    assert next_chain_count(20, 30, max_chains=32) == 32  # 45 capped by the budget
    assert next_chain_count(8, 33, max_chains=32) is None  # no round within the budget is forecast to pass
    assert next_chain_count(32, 32, max_chains=32) is None  # the budget is spent
    assert next_chain_count(8, None, max_chains=32) is None  # a zero tolerance: no number of chains


def test_chains_are_added_until_the_gate_passes(extended):
    release, out = extended
    gate = release.diagnostics["release_gate"]
    rule = gate["stopping_rule"]
    assert gate["passed"] is True and rule["started_with"] == 4 and rule["rounds"]
    first = rule["rounds"][0]
    assert first["chains"] == 4 and first["failed"]
    assert first["added"] == max(1, -(-3 * first["forecast"] // 2)) - 4  # ceil(1.5 x forecast) - 4
    assert rule["chains"] == gate["chains"] == 4 + sum(r["added"] for r in rule["rounds"]) <= 32
    assert release.diagnostics.posteriors["all"].posterior.sizes["chain"] == gate["chains"]
    written = json.loads((out / "private" / "diagnostics.json").read_text())["release_gate"]
    assert written["stopping_rule"]["chains"] == gate["chains"]
    model = json.loads((out / "release" / "model.json").read_text())
    assert model["release_gate"]["chains"] == gate["chains"] and "stopping_rule" in model["release_gate"]


def test_a_run_that_added_chains_releases_what_a_run_started_with_them_releases(extended):
    release, _ = extended
    chains = release.diagnostics["release_gate"]["chains"]
    again = _synthesize(_recipe(chains, max_chains=chains))
    assert again.diagnostics["release_gate"]["stopping_rule"]["rounds"] == []
    pd.testing.assert_frame_equal(release.synthetic, again.synthetic)
    for name, figure in release.diagnostics["release_gate"]["figures"].items():
        assert again.diagnostics["release_gate"]["figures"][name]["pooled"] == pytest.approx(figure["pooled"], abs=0)


def test_the_budget_of_chains_refuses_with_the_figures(tmp_path):
    with pytest.raises(bsd.ConvergenceError) as refused:
        _synthesize(_recipe(4, max_chains=5), out=tmp_path / "out")
    message = str(refused.value)
    assert "failed the release gate" in message and "between-chain SE" in message
    assert "chains stopped at 4" in message and "above the budget (max_chains=5)" in message
    gate = json.loads((tmp_path / "out" / "private" / "diagnostics.json").read_text())["release_gate"]
    assert gate["chains"] == 4 and gate["stopping_rule"]["rounds"] == []
    assert "max_chains=5" in gate["stopping_rule"]["stopped"]
    assert not (tmp_path / "out" / "release").exists()


def test_the_time_budget_refuses_before_a_round_it_cannot_finish():
    with pytest.raises(bsd.ConvergenceError, match=r"beyond the time budget \(time_budget=0.001\)") as refused:
        _synthesize(_recipe(4, time_budget=0.001))
    assert refused.value.diagnostics.posteriors["all"].posterior.sizes["chain"] == 4


def test_an_override_takes_the_chains_as_they_are():
    release = _synthesize(_recipe(4), allow_unconverged=True)
    gate = release.diagnostics["release_gate"]
    assert gate["chains"] == 4 and gate["passed"] is False and "stopping_rule" not in gate


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({"max_chains": 3}, "max_chains=3 is below the release gate's minimum of 4 chains"),
        ({"max_chains": 8.5}, "max_chains must be a whole number"),
        ({"time_budget": 0}, "time_budget must be a positive number of seconds"),
        ({"time_budget": -5.0}, "time_budget must be a positive number of seconds"),
    ],
)
def test_a_budget_that_cannot_be_met_is_refused_before_sampling(gate, message):
    with pytest.raises(ValueError, match=message):
        bsd.ReleaseGatePolicy(**gate)


def test_the_command_line_names_the_flag(tmp_path, capsys):
    _table().to_csv(tmp_path / "t.csv", index=False)
    argv = ["dpmpm", "--data", str(tmp_path / "t.csv"), "--synthesize", "county", "--keep", "gender,age",
            "--out", str(tmp_path / "o"), "--max-chains", "2"]  # fmt: skip
    assert main(argv) == 2
    assert "--max-chains 2 is below the release gate's minimum of 4 chains" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["dpmpm", "dp-areal"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--chains", "2"], "--chains 2: the release gate judges the spread between chain means from at least 4"),
        (["--draws", "20", "--thin", "2", "--gate-datasets", "21"], "per chain: the release gate draws 21 datasets"),
    ],
)
def test_chains_or_draws_too_few_for_the_gate_are_refused_before_sampling(command, flags, message, tmp_path,
                                                                          monkeypatch, capsys):  # fmt: skip
    def boom(*args, **kwargs):
        raise AssertionError("sampled")

    monkeypatch.setattr(bsd.DPMPM, "fit", boom)
    monkeypatch.setattr(bsd.DPAreal, "fit", boom)
    _table().to_csv(tmp_path / "t.csv", index=False)
    argv = [command, "--data", str(tmp_path / "t.csv"), "--synthesize", "county", "--keep", "gender,age",
            "--out", str(tmp_path / "o"), *flags]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not (tmp_path / "o").exists()
    # the stored draws per chain are named: 20 // 2 for the DPMPM, the kept draws for the DP-areal
    if "--draws" in flags:
        assert ("10 posterior draws" if command == "dpmpm" else "20 posterior draws") in err


def test_a_refused_run_is_resumed_without_a_refit(extended, monkeypatch):
    with pytest.raises(bsd.ConvergenceError) as refused:
        _synthesize(_recipe(4, max_chains=5))
    fitted = refused.value.fitted
    assert fitted.release_gate.chains == 4
    with pytest.raises(bsd.ConvergenceError) as again:
        _synthesize(_recipe(4, max_chains=4))

    def no_refit(*args, **kwargs):
        raise AssertionError("the resumed run fitted again")

    monkeypatch.setattr(bsd.DPMPM, "fit", no_refit)
    # a larger budget: the 4 chains kept, more added, the release of the run that had the budget from the start
    resumed = _synthesize(_recipe(4), resume=refused.value)
    pd.testing.assert_frame_equal(resumed.synthetic, extended[0].synthetic)
    assert resumed.diagnostics["release_gate"]["chains"] == extended[0].diagnostics["release_gate"]["chains"]
    # an override takes the 4 chains as they are
    forced = _synthesize(_recipe(4, max_chains=4), resume=again.value, allow_unconverged=True)
    assert forced.diagnostics["release_gate"]["chains"] == 4 and forced.diagnostics.allow_unconverged
    # anything but m, the policy and the budget differs: refused before anything is done
    with pytest.raises(bsd.InputError, match="seed differ"):
        bsd.synthesize(_table(), _recipe(4), synthesize=["county"], keep=["gender", "age"], m=3, seed=2,
                       policy=REPORT_ONLY, progress=False, resume=again.value)  # fmt: skip
    with pytest.raises(bsd.InputError, match="resume= takes the bayessdc.ConvergenceError"):
        _synthesize(_recipe(4), resume=ValueError("not a refusal"))

