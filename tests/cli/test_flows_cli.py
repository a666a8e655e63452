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
    risk = json.loads((out / "private" / "risk.json").read_text())
    assert {"R_all", "R_unq", "d_t", "khat_over_0_7"} <= set(risk)
    cells = pd.read_parquet(out / "private" / "risk_cells.parquet")
    assert len(cells) == 120
    # R_all (eq. 9) is the share of the 120 sensitive cells whose count the intruder guesses exactly; R_unq
    # (eq. 10) the same among cells whose origin and destination each appear once among the sensitive cells
    hit = (cells["intruder_guess"] == cells["count"]).to_numpy()
    assert np.array_equal(cells["correct"].to_numpy(), hit)
    assert risk["n_items"] == 120 and risk["R_all"] == pytest.approx(hit.sum() / 120, abs=1e-12)
    once = [cells[c].map(cells[c].value_counts()).to_numpy() == 1 for c in ("origin", "destination")]
    unique = once[0] & once[1]
    assert np.array_equal(cells["unique"].to_numpy(), unique) and risk["n_unique"] == unique.sum()
    assert risk["R_unq"] == (pytest.approx(hit[unique].mean(), abs=1e-12) if unique.any() else None)
    # tau = 1 - L1 / (2 n) per synthetic table against the confidential one, worked from the released file
    utility = json.loads((out / "private" / "utility.json").read_text())
    synthetic = pd.read_parquet(out / "release" / "synthetic.parquet")
    original = table["count"].to_numpy()
    released = [synthetic.loc[synthetic["synthetic"] == k, "count"].to_numpy() for k in (1, 2, 3)]
    taus = [1 - np.abs(counts - original).sum() / (2 * original.sum()) for counts in released]
    assert utility["cells"]["per_dataset"] == pytest.approx(taus, abs=1e-12)
    assert utility["cells"]["tau"] == pytest.approx(np.mean(taus), abs=1e-12)
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


def test_exact_check_measures_the_importance_sampling_approximation(run):
    folder, _, _ = run
    args = ["flows", "--data", str(folder / "flows.csv"), "--out", str(folder / "out"), "--m", "3", *FAST]
    assert main([*args, "--exact-check", "2"]) == 0  # resumes the fitted groups, then refits 2 x 9 times
    check = json.loads((folder / "out" / "private" / "exact_check.json").read_text())
    assert len(check["cells"]) == 2
    for cell in check["cells"]:
        assert sum(cell["rho_exact"]) == pytest.approx(1.0)
        assert 1 <= cell["guess_exact"] <= 9
        # importance sampling and refitting estimate the same probability
        assert abs(cell["true_probability_exact"] - cell["true_probability_importance_sampling"]) < 0.3
    risk = json.loads((folder / "out" / "private" / "risk.json").read_text())
    differences = [abs(c["true_probability_exact"] - c["true_probability_importance_sampling"]) for c in check["cells"]]
    assert risk["exact_check"]["max_abs_difference_true_probability"] == pytest.approx(max(differences), abs=1e-12)
    agreement = np.mean([c["guess_exact"] == c["guess_importance_sampling"] for c in check["cells"]])
    assert risk["exact_check"]["guess_agreement"] == pytest.approx(agreement, abs=1e-12)
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
