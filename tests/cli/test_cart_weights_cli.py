"""``bayessdc cart --weights COL``: the weight column kept and the tables weighted, bad weights refused."""

import json

from bayessdc.cli import main
from tests.pipeline.test_weights import acs_weighted


def _args(path, out):
    return ["cart", "--data", str(path), "--synthesize", "employed,hours", "--keep", "age,sex", "--weights", "wt",
            "--m", "2", "--bootstrap", "10", "--out", str(out)]  # fmt: skip


def test_weights_from_the_command_line(tmp_path, capsys):
    acs_weighted(150).to_csv(tmp_path / "data.csv", index=False)
    assert main(_args(tmp_path / "data.csv", tmp_path / "out")) == 0
    assert "table_tau: tau of the analyst's tables (weighted by wt)" in capsys.readouterr().out
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["weights"]["column"] == "wt" and model["weights"]["role"] == "kept"
    utility = json.loads((tmp_path / "out" / "private" / "utility.json").read_text())
    assert utility["table_tau"]["title"] == "tau of the analyst's tables (weighted by wt)"


def test_a_negative_weight_is_refused_with_its_row(tmp_path, capsys):
    data = acs_weighted(60)
    data.loc[11, "wt"] = -1.0
    data.to_csv(tmp_path / "data.csv", index=False)
    assert main(_args(tmp_path / "data.csv", tmp_path / "out")) == 2
    # the library's weights='wt' said as the flag the user typed
    assert "--weights wt: the survey weight is zero or negative at data row 12 (1 row)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_replicate_weights_from_the_command_line(tmp_path, capsys):
    data = acs_weighted(150)
    for r in range(1, 5):
        data[f"REP{r}"] = data["wt"] * (0.5 + r / 4)
    data.to_csv(tmp_path / "data.csv", index=False)
    assert main([*_args(tmp_path / "data.csv", tmp_path / "out"), "--replicate-weights", "sdr:REP*"]) == 0
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["weights"]["replicates"]["columns"] == ["REP1", "REP2", "REP3", "REP4"]
    assert model["weights"]["replicates"]["factor"] == 1.0
    bad = [*_args(tmp_path / "data.csv", tmp_path / "bad"), "--replicate-weights", "fay=1.5:REP1,REP2"]
    assert main(bad) == 2
    assert "--replicate-weights 'fay=1.5:REP1,REP2': Fay's rho must be in [0, 1)" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
