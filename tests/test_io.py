"""``bayessdc.read_table``: every supported format read back equal, by extension; anything else refused."""

import pandas as pd
import pytest

import bayessdc as bsd

FRAME = pd.DataFrame({"county": [3, 1, 2], "age": [34.5, 61.0, 18.25], "gender": ["f", "m", "f"]})


@pytest.mark.parametrize(
    "name, write",
    [
        ("t.csv", lambda f, p: f.to_csv(p, index=False)),
        ("t.csv.gz", lambda f, p: f.to_csv(p, index=False)),
        ("t.tsv", lambda f, p: f.to_csv(p, index=False, sep="\t")),
        ("t.parquet", lambda f, p: f.to_parquet(p, index=False)),
        ("t.PQ", lambda f, p: f.to_parquet(p, index=False)),
        ("t.dta", lambda f, p: f.to_stata(p, write_index=False)),
    ],
)
def test_each_format_reads_back_the_same_table(tmp_path, name, write):
    write(FRAME, tmp_path / name)
    pd.testing.assert_frame_equal(bsd.read_table(tmp_path / name), FRAME, check_dtype=False)


def test_unknown_extension_is_refused_not_parsed_as_csv(tmp_path):
    path = tmp_path / "t.xlsx"
    FRAME.to_csv(path, index=False)  # readable as CSV, but not what the name says
    with pytest.raises(bsd.InputError, match=r"unknown extension '\.xlsx'.*\.csv, \.tsv, \.parquet, \.pq, \.dta"):
        bsd.read_table(path)
    (tmp_path / "noext").write_text("a,b\n1,2\n")
    with pytest.raises(bsd.InputError, match=r"unknown extension '\(none\)'"):
        bsd.read_table(tmp_path / "noext")


def test_a_file_that_is_not_its_format_is_named(tmp_path):
    (tmp_path / "t.sas7bdat").write_bytes(b"not a SAS file at all" * 10)
    with pytest.raises(bsd.InputError, match=r"cannot read .*t\.sas7bdat as SAS"):
        bsd.read_table(tmp_path / "t.sas7bdat")
    (tmp_path / "t.dta").write_bytes(b"garbage")
    with pytest.raises(bsd.InputError, match=r"cannot read .*t\.dta as Stata"):
        bsd.read_table(tmp_path / "t.dta")
