import json

import pandas as pd
import pytest

from bayessdc.synthesis.output import OutputFolder, RunMismatchError, atomic_path, fingerprint_frame, write_json


def test_atomic_path_leaves_nothing_when_writing_fails(tmp_path):
    target = tmp_path / "out" / "table.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_atomic_path_replaces_target(tmp_path):
    write_json(tmp_path / "a.json", {"x": 1})
    write_json(tmp_path / "a.json", {"x": float("nan")})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": None}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_output_folder_resumes_same_run_and_refuses_another(tmp_path):
    OutputFolder(tmp_path / "o", {"seed": 1, "input": "abc"})
    OutputFolder(tmp_path / "o", {"seed": 1, "input": "abc"})  # same run: fine
    with pytest.raises(RunMismatchError, match="seed"):
        OutputFolder(tmp_path / "o", {"seed": 2, "input": "abc"})


def test_output_folder_refuses_a_foreign_non_empty_folder(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "notes.txt").write_text("mine")
    with pytest.raises(RunMismatchError, match="not empty"):
        OutputFolder(tmp_path / "o", {"seed": 1})


def test_fingerprint_changes_with_any_value():
    a = pd.DataFrame({"x": [1, 2, 3]})
    assert fingerprint_frame(a) == fingerprint_frame(a.copy())
    assert fingerprint_frame(a) != fingerprint_frame(a.assign(x=[1, 2, 4]))
