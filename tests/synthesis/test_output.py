import json
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.errors import InputError
from bayessdc.synthesis.output import (
    OutputFolder,
    RunMismatchError,
    atomic_path,
    fingerprint_frame,
    json_writer,
    read_inference_data,
    table_writer,
    write_inference_data,
    write_json,
)


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


@pytest.mark.parametrize("out", ["release", "a/release", "a/release/b", "release/b/c"])
def test_an_output_folder_named_release_or_inside_one_is_refused_before_anything_is_written(tmp_path, out):
    # issue 46: private/ (posterior draws, observed data, per-record risk) never inside a release folder
    with pytest.raises(InputError, match=r"named release/.*private/"):
        OutputFolder(tmp_path / out, {"run": 1})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", ["a.csv", "a.csv/b"])
def test_an_output_folder_that_is_or_lies_in_an_existing_file_is_refused(tmp_path, out):
    # issue 48: --out naming an existing file ended in a traceback
    (tmp_path / "a.csv").write_text("x\n1\n")
    with pytest.raises(InputError, match=r"a\.csv is a file, not a folder"):
        OutputFolder(tmp_path / out, {"run": 1})
    assert (tmp_path / "a.csv").read_text() == "x\n1\n"


@pytest.mark.parametrize("out", ["releases", "release-2026", "a/my_release/b"])
def test_an_output_folder_merely_containing_the_word_is_accepted(tmp_path, out):
    with OutputFolder(tmp_path / out, {"run": 1}) as folder:
        assert folder.private.is_dir()


def test_fingerprint_changes_with_any_value():
    a = pd.DataFrame({"x": [1, 2, 3]})
    assert fingerprint_frame(a) == fingerprint_frame(a.copy())
    assert fingerprint_frame(a) != fingerprint_frame(a.assign(x=[1, 2, 4]))


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_release_is_renamed_into_place_whole_or_not_at_all(tmp_path):
    identity = {"seed": 1}
    with OutputFolder(tmp_path / "o", identity) as folder:
        assert not folder.release.exists()  # opening a folder does not create release/

        def half(path):
            path.write_text("half")
            raise RuntimeError("interrupted")

        with pytest.raises(RuntimeError):
            folder.write_release({"model.json": json_writer({"m": 1}), "synthetic.parquet": half})
        assert not folder.release.exists()
        assert _files(tmp_path / "o") == ["private", "private/run.json"]

        frame = pd.DataFrame({"x": [1, 2]})
        folder.write_release({"model.json": json_writer({"m": 1}), "synthetic.parquet": table_writer(frame)})
        assert _files(folder.release) == ["model.json", "synthetic.parquet"]
        # a rerun replaces the release whole and leaves nothing beside it
        folder.write_release({"model.json": json_writer({"m": 2}), "synthetic.parquet": table_writer(frame)})
        assert json.loads((folder.release / "model.json").read_text()) == {"m": 2}
        assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["private", "release"]
        mask = os.umask(0)
        os.umask(mask)
        assert stat.S_IMODE((folder.release / "model.json").stat().st_mode) == 0o666 & ~mask


def test_a_killed_write_leaves_no_release_and_the_next_open_removes_its_temporaries(tmp_path):
    """A process killed inside write_release (os._exit: no cleanup runs) leaves only hidden temporaries."""
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from bayessdc.synthesis.output import OutputFolder, json_writer

        def die(path):
            Path(path).write_text("half")
            os._exit(9)

        folder = OutputFolder({str(tmp_path / "o")!r}, {{"seed": 1}})
        with open(folder.private / ".risk.json.abc.tmp", "w") as handle:
            handle.write("half")
        folder.write_release({{"model.json": json_writer({{"m": 1}}), "synthetic.parquet": die}})
        """
    )
    assert subprocess.run([sys.executable, "-c", script]).returncode == 9
    root = tmp_path / "o"
    assert not (root / "release").exists()
    assert [p.name for p in root.iterdir() if p.name.startswith(".release-")]  # the half-built release
    with OutputFolder(root, {"seed": 1}) as folder:
        assert _files(root) == ["private", "private/run.json"]
        assert folder.remove_temporaries() == []


def test_a_folder_in_use_is_refused_until_closed(tmp_path):
    first = OutputFolder(tmp_path / "o", {"seed": 1})
    with pytest.raises(RunMismatchError, match="in use by another bayessdc run"):
        OutputFolder(tmp_path / "o", {"seed": 1})
    first.close()
    with OutputFolder(tmp_path / "o", {"seed": 1}):
        pass


def test_posteriors_are_written_whole_without_a_lock_from_a_dask_scheduler(tmp_path, monkeypatch):
    # in a dask worker, xarray asks the scheduler for a write lock per variable when it writes to a file name
    # (0.3 s a flow pair); the posterior is encoded in memory and written by atomic_path instead
    import arviz as az
    import xarray as xr
    import xarray.backends.scipy_ as scipy_backend

    def no_lock(key):
        raise AssertionError(f"a write lock was asked for {key}")

    monkeypatch.setattr(scipy_backend, "get_write_lock", no_lock)
    rng = np.random.default_rng(0)
    idata = az.InferenceData(
        posterior=xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(2, 50)))}),
        sample_stats=xr.Dataset({"diverging": (("chain", "draw"), np.zeros((2, 50), dtype=bool))}),
    )
    idata.attrs["seed"] = 3
    target = write_inference_data(idata, tmp_path / "group.posterior.nc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["group.posterior.nc"]
    back = read_inference_data(target)
    np.testing.assert_array_equal(back.posterior["mu"].to_numpy(), idata.posterior["mu"].to_numpy())
    assert back.attrs["seed"] == "3"
