import json
import re

import numpy as np
import pandas as pd
import pytest

from bayessdc.cli import main
from bayessdc.models.flows import simulate_group
from bayessdc.synthesis.output import read_inference_data
from tests.release_digest import assert_pinned, release_digest

FAST = ["--draws", "400", "--tune", "400", "--chains", "4", "--risk-draws", "400", "--quiet"]


def _table(seed=0):
    """Two state pairs simulated from the model, plus large (non-sensitive) flows that pass through."""
    frames = []
    for k, key in enumerate((("S1", "S2"), ("S2", "S1"))):
        group, _ = simulate_group(10, 10, 60, seed=seed + k, mu=0.9, key=key)
        frames.append(
            pd.DataFrame(
                {
                    "origin": [f"{key[0]}-{o}" for o in group.origins[group.origin_index]],
                    "destination": [f"{key[1]}-{d}" for d in group.destinations[group.destination_index]],
                    "origin_group": key[0],
                    "destination_group": key[1],
                    "count": group.y + 1,
                }
            )
        )
    big = pd.DataFrame(
        {
            "origin": ["S1-o000", "S1-o001", "S2-o000"],
            "destination": ["S1-o005", "S1-o007", "S2-o003"],
            "origin_group": ["S1", "S1", "S2"],
            "destination_group": ["S1", "S1", "S2"],
            "count": [25, 140, 12],
        }
    )
    return pd.concat(frames + [big], ignore_index=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flows")
    table = _table()
    table.to_csv(folder / "flows.csv", index=False)
    status = main(["flows", "--data", str(folder / "flows.csv"), "--out", str(folder / "out"), "--m", "3", *FAST])
    return folder, table, status


def test_outputs_are_written(run):
    folder, table, status = run
    assert status == 0
    out = folder / "out"
    assert sorted(p.name for p in (out / "release").iterdir()) == ["model.json", "synthetic.parquet"]
    diagnostics = json.loads((out / "private" / "diagnostics.json").read_text())
    assert diagnostics["all_converged"] and diagnostics["divergences"] == 0
    assert diagnostics["max_r_hat"] <= 1.01 and diagnostics["min_ess_bulk"] >= 400
    measures = json.loads((out / "private" / "measures.json").read_text())
    risk = {(name, r["subset"]): r for name, m in measures.items() for r in m["summary"]}
    assert {"intruder_correct", "true_value_probability", "guess_distance"} <= {name for name, _ in risk}
    sampling = diagnostics["importance_sampling"]  # k-hat > 0.7: the cells whose estimate is unreliable
    assert sampling["cells"] == 120 and 0 <= sampling["cells_over_threshold"] <= 120
    cells = pd.read_parquet(out / "private" / "risk_cells.parquet")
    assert sampling["cells_over_threshold"] == int((cells["relevant_khat"] > 0.7).sum())
    assert len(cells) == 120
    # R_all (eq. 9) is the share of the 120 sensitive cells whose count the intruder guesses exactly; R_unq
    # (eq. 10) the same among cells whose origin and destination each appear once among the sensitive cells
    hit = (cells["intruder_guess"] == cells["count"]).to_numpy()
    assert np.array_equal(cells["correct"].to_numpy(), hit)
    all_items = risk[("intruder_correct", "all items")]
    assert all_items["pooled"] == pytest.approx(hit.sum() / 120, abs=1e-12)
    once = [cells[c].map(cells[c].value_counts()).to_numpy() == 1 for c in ("origin", "destination")]
    unique = once[0] & once[1]
    assert np.array_equal(cells["unique"].to_numpy(), unique)
    if unique.any():
        assert risk[("intruder_correct", "unique items")]["pooled"] == pytest.approx(hit[unique].mean(), abs=1e-12)
    else:
        assert ("intruder_correct", "unique items") not in risk
    # tau = 1 - L1 / (2 n) per synthetic table against the confidential one, worked from the released file
    synthetic = pd.read_parquet(out / "release" / "synthetic.parquet")
    original = table["count"].to_numpy()
    released = [synthetic.loc[synthetic["synthetic"] == k, "count"].to_numpy() for k in (1, 2, 3)]
    taus = [1 - np.abs(counts - original).sum() / (2 * original.sum()) for counts in released]
    values = {(r["subset"], r["dataset"]): r["value"] for r in measures["count_tau"]["values"]}
    assert [values[("all cells", k)] for k in (1, 2, 3)] == pytest.approx(taus, abs=1e-12)
    assert risk[("count_tau", "all cells")]["pooled"] == pytest.approx(np.mean(taus), abs=1e-12)
    deviation = {(r["subset"], r["dataset"]): r["value"] for r in measures["count_deviation"]["values"]}
    assert [deviation[("all cells", k)] for k in (1, 2, 3)] == [np.abs(c - original).sum() for c in released]
    # the sensitive cells are the only ones that change: their L1 is the table's
    assert [deviation[("sensitive cells", k)] for k in (1, 2, 3)] == [deviation[("all cells", k)] for k in (1, 2, 3)]
    # risk.json and utility.json are the measures' summaries by kind
    for kind in ("risk", "utility"):
        written = json.loads((out / "private" / f"{kind}.json").read_text())
        assert set(written) == {name for name, m in measures.items() if m["kind"] == kind}
        for name, figures in written.items():
            assert {s: f["pooled"] for s, f in figures["subsets"].items()} == {
                r["subset"]: r["pooled"] for r in measures[name]["summary"]}
    # only the 120 cells with counts 1..9 change, each by at most 8: tau cannot fall below this
    assert min(taus) >= 1 - 8 * 120 / (2 * original.sum())
    assert (out / "private" / "groups" / "S1__S2.posterior.nc").exists()
    assert not list(out.rglob("*.tmp"))


def test_release_holds_only_synthetic_data_and_no_estimates(run):
    folder, table, _ = run
    out = folder / "out"
    synthetic = pd.read_parquet(out / "release" / "synthetic.parquet")
    assert list(synthetic.columns) == ["synthetic", *table.columns]
    assert sorted(synthetic["synthetic"].unique()) == [1, 2, 3]
    sensitive = table["count"].between(1, 9).to_numpy()
    stored = pd.concat(
        [pd.read_parquet(out / "private" / "groups" / f"{name}.items.parquet") for name in ("S1__S2", "S2__S1")]
    )
    agree = []
    for k in (1, 2, 3):
        released = synthetic.loc[synthetic["synthetic"] == k, "count"].to_numpy()
        # non-sensitive cells pass through unchanged, sensitive ones are the synthetic draws (1..9)
        assert np.array_equal(released[~sensitive], table["count"].to_numpy()[~sensitive])
        assert np.array_equal(released[sensitive], stored[f"synthetic_{k}"].to_numpy() + 1)
        assert released[sensitive].min() >= 1 and released[sensitive].max() <= 9
        agree.append((released[sensitive] == table["count"].to_numpy()[sensitive]).mean())
    assert max(agree) < 0.8  # the confidential counts are not what was released
    # the model description carries no estimate: no posterior number appears in it
    text = (out / "release" / "model.json").read_text()
    model = json.loads(text)
    assert model["m"] == 3 and model["synthesizer"] == "flows"

    posterior = read_inference_data(out / "private" / "groups" / "S1__S2.posterior.nc").posterior
    for name in ("mu", "phi_beta", "phi_gamma"):
        for value in np.quantile(posterior[name].to_numpy(), [0.1, 0.5, 0.9]):
            token = f"{value:.3g}"
            if float(token).is_integer():
                continue  # a whole number cannot be told apart from the description's own (1..9, 0..8)
            assert not re.search(rf"(?<![\d.]){re.escape(token)}(?!\d)", text), (name, token)
    # no posterior file in release/: exactly the two release files, none named after a posterior or netCDF
    names = sorted(p.relative_to(out / "release").as_posix() for p in (out / "release").rglob("*"))
    assert names == ["model.json", "synthetic.parquet"]
    assert not [name for name in names if "posterior" in name or ".nc" in name]


def test_rerun_resumes_and_same_seed_gives_same_synthetic_data(run, tmp_path):
    folder, table, _ = run
    out = folder / "out"
    marker = out / "private" / "groups" / "S1__S2.json"
    before = marker.stat().st_mtime_ns
    args = ["flows", "--data", str(folder / "flows.csv"), "--m", "3", *FAST]
    assert main([*args, "--out", str(out)]) == 0
    assert marker.stat().st_mtime_ns == before  # not refitted
    assert main([*args, "--out", str(tmp_path / "fresh")]) == 0
    a = pd.read_parquet(out / "release" / "synthetic.parquet")
    b = pd.read_parquet(tmp_path / "fresh" / "release" / "synthetic.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_a_different_run_into_the_same_folder_is_refused(run, capsys):
    folder, _, _ = run
    args = ["flows", "--data", str(folder / "flows.csv"), "--out", str(folder / "out"), "--m", "3", "--seed", "9"]
    status = main([*args, *FAST])
    assert status == 2
    assert "different run (differs in: seed)" in capsys.readouterr().err


def test_bad_input_fails_before_sampling_naming_the_rows(tmp_path, capsys):
    table = _table()
    table.loc[4, "count"] = -2
    table.to_csv(tmp_path / "bad.csv", index=False)
    status = main(["flows", "--data", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "out"), *FAST])
    assert status == 2
    assert "negative counts at data row 5" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["flows", "--data", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o2")]) == 2
    (tmp_path / "garbage.parquet").write_bytes(b"not parquet")
    assert main(["flows", "--data", str(tmp_path / "garbage.parquet"), "--out", str(tmp_path / "o3")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_unconverged_run_writes_diagnostics_but_no_release_unless_allowed(tmp_path, capsys):
    table = _table(seed=5)
    table.to_csv(tmp_path / "flows.csv", index=False)
    # 30 draws cannot reach a bulk ESS of 400; no extension either (the gate must refuse)
    args = [
        "flows",
        "--data",
        str(tmp_path / "flows.csv"),
        "--draws",
        "30",
        "--tune",
        "200",
        "--chains",
        "2",
        "--risk-draws",
        "60",
        "--quiet",
        "--max-extensions",
        "0",
    ]
    assert main([*args, "--out", str(tmp_path / "out")]) == 3
    assert "did not converge" in capsys.readouterr().err
    assert (tmp_path / "out" / "private" / "diagnostics.json").exists()
    assert not (tmp_path / "out" / "release").exists()  # release/ appears whole or not at all
    assert main([*args, "--out", str(tmp_path / "out2"), "--allow-unconverged"]) == 0
    model = json.loads((tmp_path / "out2" / "release" / "model.json").read_text())
    assert model["allow_unconverged"] is True
    assert json.loads((tmp_path / "out2" / "private" / "diagnostics.json").read_text())["all_converged"] is False


def _exact_check(folder):
    """The fixture's run again with ``--exact-check 2``: it resumes the fitted groups, then refits 2 x 9 times."""
    if not (folder / "out" / "private" / "exact_check.json").exists():
        args = ["flows", "--data", str(folder / "flows.csv"), "--out", str(folder / "out"), "--m", "3", *FAST]
        assert main([*args, "--exact-check", "2"]) == 0
    return json.loads((folder / "out" / "private" / "exact_check.json").read_text())


def test_exact_check_measures_the_importance_sampling_approximation(run):
    folder, _, _ = run
    check = _exact_check(folder)
    assert len(check["cells"]) == 2
    for cell in check["cells"]:
        assert sum(cell["rho_exact"]) == pytest.approx(1.0)
        assert 1 <= cell["guess_exact"] <= 9
        # importance sampling and refitting estimate the same probability
        assert abs(cell["true_probability_exact"] - cell["true_probability_importance_sampling"]) < 0.3
    differences = [abs(c["true_probability_exact"] - c["true_probability_importance_sampling"]) for c in check["cells"]]
    assert check["max_abs_difference_true_probability"] == pytest.approx(max(differences), abs=1e-12)
    agreement = np.mean([c["guess_exact"] == c["guess_importance_sampling"] for c in check["cells"]])
    assert check["guess_agreement"] == pytest.approx(agreement, abs=1e-12)
    # the two cells checked are those with the largest relevant k-hat of the run
    cells = pd.read_parquet(folder / "out" / "private" / "risk_cells.parquet")
    top = cells["relevant_khat"].sort_values(ascending=False, kind="stable").to_numpy()[:2]
    assert [c["relevant_khat"] for c in check["cells"]] == pytest.approx(top, abs=1e-12)


#: Digest of the release of the fixture's run. Re-pinned on purpose for issue 21: the groups are now sampled by
#: the compiled NUTS of bayessdc.models.nuts under the weakly informative default prior (before: nutpie,
#: digest 3087c5a7fbf82210, pinned before the restructuring of issue 18).
#: Per platform (see tests.release_digest): this was taken on an AVX2 machine. Re-pinned on purpose again
#: (96ea09ed58168b88 before): both pairs miss r_hat narrowly at 400 draws (1.011, 1.014) and now continue their
#: chains by 400 draws instead of being refitted with 1,600. Re-pinned again (1be56c07cf4fa030 before): the
#: sampler's log density now takes log Z from an interpolation table (within 1e-12 of the exact per cell), which
#: moves every trajectory in the last digits.
#: The AVX-512 pin was taken at b1b57ac on an AMD EPYC machine whose OpenBLAS picks SkylakeX kernels (the same
#: digest after 023dd2f).
#: Re-pinned on purpose when every random number moved to the named streams of bayessdc.synthesis.streams
#: (issue 32, item 2; a00288b002ddade7 before on this platform). Only this machine's platform is pinned: the other
#: platforms' pins (Haswell X86_V3 554172688d358910, SkylakeX X86_V4 a00288b002ddade7) predate the
#: streams and cannot hold any more; a run there skips, naming its digest.
PINNED_RELEASE = {
    "openblas Haswell, X86_V4": "6a8e278949bd906f",
}


def test_release_is_the_pinned_one(run):
    assert_pinned(release_digest(run[0] / "out"), PINNED_RELEASE)


def _quantile(values, q):
    return float(np.quantile(values, q))


#: Where each figure of the old risk.json and utility.json (before the measurement redesign, issue 50) is now.
MOVED = {
    "risk.json:n_items": lambda f, p: len(f.values("guess_distance", "all items")),
    "risk.json:R_all": lambda f, p: f.summary("intruder_correct", "all items")["pooled"],
    "risk.json:n_unique": lambda f, p: len(f.values("guess_distance", "unique items")),
    "risk.json:R_unq": lambda f, p: None,  # no unique cell in this table: the subset 'unique items' is absent
    "risk.json:d_t.mean": lambda f, p: f.summary("guess_distance", "all items")["pooled"],
    "risk.json:d_t.quantiles.*": lambda f, p: _quantile(f.values("guess_distance", "all items"), float(p[-1])),
    "risk.json:d_t.counts.*": lambda f, p: sum(v == float(p[-1]) for v in f.values("guess_distance", "all items")),
    "risk.json:khat_over_0_7": lambda f, p: f["diagnostics.json"]["importance_sampling"]["cells_over_threshold"],
    "risk.json:khat_over_0_7_any_candidate":
        lambda f, p: f["diagnostics.json"]["importance_sampling"]["cells_over_threshold_any_candidate"],
    "risk.json:khat_threshold": lambda f, p: f["diagnostics.json"]["importance_sampling"]["khat_threshold"],
    "risk.json:mean_true_probability": lambda f, p: f.summary("true_value_probability", "all items")["pooled"],
    "risk.json:unlearned.R_all.mean": lambda f, p: f.reference("intruder_correct", "all items", "unlearned")["value"],
    "risk.json:unlearned.R_all.sd": lambda f, p: f.reference("intruder_correct", "all items", "unlearned")["mc_se"]
        * np.sqrt(f.reference("intruder_correct", "all items", "unlearned")["repetitions"]),
    "risk.json:unlearned.R_all.range":
        lambda f, p: f.reference("intruder_correct", "all items", "unlearned_range")["value"],
    "risk.json:unlearned.loo_khat_over_0_7":
        lambda f, p: f["diagnostics.json"]["importance_sampling"]["unlearned_cells_over_threshold"],
    "risk.json:no_knowledge.R_all": lambda f, p: f.summary("intruder_correct", "all items, no knowledge")["pooled"],
    "risk.json:intruder": "the intruder in words: the description of the measure intruder_correct",
    "risk.json:per_group_seconds": "a timing: each pair's assess_seconds in diagnostics.json",
    "risk.json:exact_check.*": lambda f, p: f["exact_check.json"][p[1]] if len(p) == 2
        else f["exact_check.json"][p[1]][int(p[2])][p[3]],
    "utility.json:cells.tau": lambda f, p: f.summary("count_tau", "all cells")["pooled"],
    "utility.json:cells.per_dataset": lambda f, p: f.values("count_tau", "all cells"),
    "utility.json:sensitive_cells.tau": lambda f, p: f.summary("count_tau", "sensitive cells")["pooled"],
    "utility.json:*_totals.by": "the margin's columns: the subset's name, 'totals by <columns>'",
    "utility.json:*_totals.tau": lambda f, p: f.summary("count_tau", _margin(p))["pooled"],
    "utility.json:*_totals.per_dataset.tau": lambda f, p: f.values("count_tau", _margin(p)),
    "utility.json:*_totals.total_absolute_deviation": lambda f, p: f.summary("count_deviation", _margin(p))["pooled"],
    "utility.json:*_totals.per_dataset.total_absolute_deviation": lambda f, p: f.values("count_deviation", _margin(p)),
    "utility.json:*_totals.relative_deviation": lambda f, p: 2 * (1 - f.summary("count_tau", _margin(p))["pooled"]),
}

#: The differences of the other files, each with its reason.
NAMED = {
    "measures.json": {
        "count_tau.*": "count_tau has the subset 'sensitive cells' too (its rows follow 'all cells')",
        "count_deviation.*": "new measure: the total absolute deviation L1 (utility.json's total_absolute_deviation)",
    },
    "diagnostics.json": {"importance_sampling.*": "new: the k-hat counts risk.json held"},
    "policy.json": {"reported_not_judged": "names count_deviation too: a measure the default policy reports"},
}


def _margin(path):
    return {"origin_totals": "totals by origin", "destination_totals": "totals by destination",
            "group_pair_totals": "totals by origin_group+destination_group"}[path[0]]  # fmt: skip


def test_every_figure_of_the_old_files_is_reported_as_a_measure(run):
    """Issue 50's acceptance: the private JSON of this run equals the one of commit 23a1ef3 (before the flows'
    figure dictionaries were replaced by measures) key by key to 1e-12, every old figure found as a measure,
    or the difference named."""
    from tests.parity import assert_figures_kept

    folder, _, _ = run
    _exact_check(folder)
    assert_figures_kept("flows", folder / "out", MOVED, NAMED)
