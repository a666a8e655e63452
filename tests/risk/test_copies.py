"""Copied records and replicated uniques against a plain oracle (python loops over row tuples, pandas merge)."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from bayessdc.risk import copies
from bayessdc.risk.copies import (
    copied_holdout,
    copied_records,
    copied_reference,
    remove_replicated_uniques,
    replicated_uniques,
)


class _Missing:
    """One value standing for every kind of missing value (NaN, None, pd.NA): equal to itself only."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


def rows_of(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """The rows as tuples of python values, missing values replaced by MISSING."""
    return [
        tuple(MISSING if pd.isna(v) else v for v in row) for row in frame[columns].itertuples(index=False, name=None)
    ]


def oracle(original: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str], by: str = "synthetic"):
    """Per dataset (sorted labels): copied, replicated-unique figures, and per synthetic row the two removal masks."""
    original_rows = Counter(rows_of(original, columns))
    uniques = {r for r, c in original_rows.items() if c == 1}
    synthetic_rows = rows_of(synthetic, columns)
    labels = synthetic[by].tolist()
    per_dataset = {}
    for label in sorted(set(labels)):
        mine = [r for r, d in zip(synthetic_rows, labels, strict=True) if d == label]
        counts = Counter(mine)
        per_dataset[label] = {
            "rows": len(mine),
            "copied": sum(1 for r in mine if r in original_rows),
            "original_uniques": len(uniques),
            "replicated": len(uniques & set(mine)),
            "rows_replicating": sum(1 for r in mine if r in uniques),
            "replicated_unique_in_both": sum(1 for r, c in counts.items() if c == 1 and r in uniques),
        }
    counts_in_dataset = Counter(zip(labels, synthetic_rows, strict=True))
    remove_all = np.array([r in uniques for r in synthetic_rows])
    remove_both = np.array(
        [r in uniques and counts_in_dataset[(d, r)] == 1 for r, d in zip(synthetic_rows, labels, strict=True)]
    )
    return per_dataset, remove_all, remove_both


def copied_by_merge(original: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Copied rows per dataset by a left merge on the distinct original rows (missing values spelt out)."""

    def spelt(frame):
        out = frame[columns].astype(object)
        return out.where(out.notna(), MISSING)

    distinct = spelt(original).drop_duplicates().assign(_hit=1)
    merged = spelt(synthetic).assign(_dataset=synthetic["synthetic"].to_numpy()).merge(distinct, how="left")
    return merged["_hit"].notna().groupby(merged["_dataset"]).sum()


def random_frames(seed: int, n: int = 300, sizes: tuple[int, ...] = (250, 40, 400, 1)):
    """An original and interleaved synthetic datasets with strings, ints/floats, categoricals and missing values."""
    rng = np.random.default_rng(seed)

    def draw(size, synthetic):
        strings = np.array(["a", "b", "c", None, np.nan], dtype=object)
        integers = rng.integers(0, 4, size)
        if synthetic:  # ints in the original, floats (with NaN) in the synthetic: 1 and 1.0 are equal
            integers = np.where(rng.random(size) < 0.1, np.nan, integers.astype(float))
        frame = pd.DataFrame(
            {
                "s": strings[rng.choice(5, size, p=[0.4, 0.3, 0.15, 0.1, 0.05])],
                "i": integers,
                "f": np.array([0.5, 1.5, np.nan])[rng.choice(3, size, p=[0.5, 0.4, 0.1])],
                # categories differ between original and synthetic
                "c": pd.Categorical(
                    np.array(["x", "y", "z", None], dtype=object)[rng.choice(4, size, p=[0.5, 0.3, 0.1, 0.1])],
                    categories=["x", "y", "z"] if not synthetic else ["z", "y", "x", "w"],
                ),
                "n": pd.array(np.where(rng.random(size) < 0.1, None, rng.integers(0, 3, size)), dtype="Int64"),
            }
        )
        return frame

    original = draw(n, False)
    parts = []
    for k, size in enumerate(sizes, start=1):
        part = draw(size, True)
        # some rows copied from the original, so that copies and replicated uniques occur often
        copied = rng.random(size) < 0.3
        source = original.iloc[rng.integers(0, n, copied.sum())]
        for column in part.columns:
            values = part[column].astype(object).to_numpy().copy()
            values[copied] = source[column].astype(object).to_numpy()
            part[column] = pd.Series(values).astype(part[column].dtype)
        part["synthetic"] = k
        parts.append(part)
    synthetic = pd.concat(parts, ignore_index=True)
    synthetic = synthetic.iloc[rng.permutation(len(synthetic))]  # datasets interleaved, index labels shuffled
    return original, synthetic


COLUMNS = ["s", "i", "f", "c", "n"]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("key_bound", [None, 7])
def test_fast_functions_agree_with_the_oracle(seed, key_bound, monkeypatch):
    if key_bound is not None:  # a tiny bound: the keys are recoded densely before almost every column
        monkeypatch.setattr(copies, "_KEY_BOUND", key_bound)
    original, synthetic = random_frames(seed)
    expected, remove_all, remove_both = oracle(original, synthetic, COLUMNS)
    labels = sorted(expected)

    copied = copied_records(original, synthetic, COLUMNS)
    assert copied["dataset"].tolist() == labels
    assert copied["rows"].tolist() == [expected[d]["rows"] for d in labels]
    assert copied["copied"].tolist() == [expected[d]["copied"] for d in labels]
    np.testing.assert_allclose(copied["share"], copied["copied"] / copied["rows"])
    assert copied["copied"].tolist() == copied_by_merge(original, synthetic, COLUMNS).loc[labels].tolist()
    assert copied["copied"].sum() > 0

    replicated = replicated_uniques(original, synthetic, COLUMNS)
    assert replicated["dataset"].tolist() == labels
    for name in ("original_uniques", "replicated", "rows_replicating", "replicated_unique_in_both"):
        assert replicated[name].tolist() == [expected[d][name] for d in labels], name
    np.testing.assert_allclose(replicated["share"], replicated["replicated"] / replicated["original_uniques"])
    assert replicated["replicated"].sum() > 0 and replicated["replicated_unique_in_both"].sum() > 0
    assert (replicated["rows_replicating"] > replicated["replicated_unique_in_both"]).any()

    for unique_in_both, remove in ((True, remove_both), (False, remove_all)):
        kept, table = remove_replicated_uniques(original, synthetic, COLUMNS, unique_in_both=unique_in_both)
        pd.testing.assert_frame_equal(kept, synthetic[~remove])  # same rows, order, index labels and dtypes
        assert table["removed"].tolist() == [int(remove[synthetic["synthetic"].to_numpy() == d].sum()) for d in labels]
        assert (table["rows"] - table["removed"] == table["kept"]).all()
        # nothing is left to remove under the same rule
        again = remove_replicated_uniques(original, kept, COLUMNS, unique_in_both=unique_in_both)[1]
        assert again["removed"].sum() == 0


def test_reference_and_holdout_agree_with_the_oracle():
    original, synthetic = random_frames(3)
    rows = rows_of(original, COLUMNS)
    counts = Counter(rows)
    assert copied_reference(original, COLUMNS) == pytest.approx(np.mean([counts[r] >= 2 for r in rows]))
    holdout = synthetic.drop(columns="synthetic")
    assert copied_holdout(original, holdout, COLUMNS) == pytest.approx(
        np.mean([r in counts for r in rows_of(holdout, COLUMNS)])
    )


def test_many_wide_columns_take_the_dense_recoding_path():
    """Eight columns of about 3,000 levels each: the product of level counts passes 2**62."""
    rng = np.random.default_rng(4)
    columns = [f"v{j}" for j in range(8)]
    original = pd.DataFrame({c: rng.integers(0, 3000, 2000) for c in columns})
    original = pd.concat([original, original.iloc[:100]], ignore_index=True)  # some duplicates
    fresh = pd.DataFrame({c: rng.integers(0, 3000, 1500) for c in columns})
    picked = original.iloc[rng.integers(0, len(original), 1500)].reset_index(drop=True)
    synthetic = pd.concat([picked, picked.iloc[:50], fresh], ignore_index=True)
    synthetic["synthetic"] = rng.integers(1, 4, len(synthetic))
    assert np.prod([float(pd.concat([original[c], synthetic[c]]).nunique()) for c in columns]) > 2.0**62
    expected, remove_all, remove_both = oracle(original, synthetic, columns)
    labels = sorted(expected)
    copied = copied_records(original, synthetic, columns)
    assert copied["copied"].tolist() == [expected[d]["copied"] for d in labels]
    replicated = replicated_uniques(original, synthetic, columns)
    for name in ("original_uniques", "replicated", "rows_replicating", "replicated_unique_in_both"):
        assert replicated[name].tolist() == [expected[d][name] for d in labels], name
    kept, _ = remove_replicated_uniques(original, synthetic, columns)
    pd.testing.assert_frame_equal(kept, synthetic[~remove_both])


def test_worked_by_hand():
    original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    synthetic = pd.DataFrame({"x": ["A", "B", "B", "D"], "synthetic": 1})
    copied = copied_records(original, synthetic, ["x"])
    assert copied.to_dict("records") == [{"dataset": 1, "rows": 4, "copied": 3, "share": 0.75}]
    replicated = replicated_uniques(original, synthetic, ["x"]).iloc[0]
    assert replicated["original_uniques"] == 2  # B and C
    assert replicated["replicated"] == 1  # B
    assert replicated["share"] == 0.5
    assert replicated["rows_replicating"] == 2  # both B rows
    assert replicated["replicated_unique_in_both"] == 0  # B occurs twice in the synthetic
    kept, table = remove_replicated_uniques(original, synthetic, ["x"])
    pd.testing.assert_frame_equal(kept, synthetic)
    assert table.to_dict("records") == [{"dataset": 1, "rows": 4, "removed": 0, "kept": 4}]
    kept, table = remove_replicated_uniques(original, synthetic, ["x"], unique_in_both=False)
    assert kept["x"].tolist() == ["A", "D"] and kept.index.tolist() == [0, 3]
    assert table["removed"].tolist() == [2]
    assert copied_reference(original, ["x"]) == 0.5  # the two A's
    assert copied_holdout(original, pd.DataFrame({"x": ["B", "D", "D", "A"]}), ["x"]) == 0.5


def test_missing_values_are_one_value_and_columns_combine():
    """NaN, None and pd.NA all match each other; a row matches only when every column does."""
    original = pd.DataFrame({"x": ["A", None, "A", np.nan], "y": [1.0, 2.0, np.nan, 2.0]})
    # (A,1) once; (missing,2) twice; (A,missing) once
    synthetic = pd.DataFrame(
        {
            "x": pd.array([pd.NA, "A", "A", "A", "B"], dtype="string"),
            "y": [2.0, np.nan, 2.0, 1.0, 1.0],
            "synthetic": [2, 2, 2, 1, 1],
        }
    )
    copied = copied_records(original, synthetic, ["x", "y"])
    assert copied["copied"].tolist() == [1, 2]  # dataset 1: (A,1); dataset 2: (missing,2), (A,missing)
    replicated = replicated_uniques(original, synthetic, ["x", "y"])
    assert replicated["original_uniques"].tolist() == [2, 2]
    assert replicated["replicated"].tolist() == [1, 1]
    assert replicated["replicated_unique_in_both"].tolist() == [1, 1]


def test_dataset_labels_sorted_and_other_by_column():
    original = pd.DataFrame({"x": [1, 2, 3]})
    synthetic = pd.DataFrame({"x": [1, 9, 2, 2], "draw": ["b", "b", "a", "a"]})
    copied = copied_records(original, synthetic, ["x"], by="draw")
    assert copied.to_dict("list") == {"dataset": ["a", "b"], "rows": [2, 2], "copied": [2, 1], "share": [1.0, 0.5]}
    replicated = replicated_uniques(original, synthetic, ["x"], by="draw")
    assert replicated["replicated_unique_in_both"].tolist() == [0, 1]
    kept, table = remove_replicated_uniques(original, synthetic, ["x"], by="draw")
    assert kept.index.tolist() == [1, 2, 3] and table["removed"].tolist() == [0, 1]


def test_no_original_uniques_and_empty_inputs():
    original = pd.DataFrame({"x": ["A", "A"]})
    synthetic = pd.DataFrame({"x": ["A", "B"], "synthetic": [1, 2]})
    replicated = replicated_uniques(original, synthetic, ["x"])
    assert replicated["original_uniques"].tolist() == [0, 0]
    assert replicated["share"].isna().all()
    empty = synthetic.iloc[:0]
    assert len(copied_records(original, empty, ["x"])) == 0
    assert len(replicated_uniques(original, empty, ["x"])) == 0
    kept, table = remove_replicated_uniques(original, empty, ["x"])
    assert len(kept) == 0 and len(table) == 0
    assert np.isnan(copied_reference(original.iloc[:0], ["x"]))
    assert np.isnan(copied_holdout(original, original.iloc[:0], ["x"]))
    assert copied_records(original.iloc[:0], synthetic, ["x"])["copied"].tolist() == [0, 0]


def test_arguments_are_checked():
    original = pd.DataFrame({"x": [1, 2]})
    synthetic = pd.DataFrame({"x": [1, 2], "synthetic": [1, 1]})
    with pytest.raises(KeyError, match="lacks"):
        copied_records(original, synthetic, ["x", "y"])
    with pytest.raises(KeyError, match="dataset column"):
        copied_records(original, synthetic.drop(columns="synthetic"), ["x"])
    with pytest.raises(ValueError, match="cannot be a released column"):
        replicated_uniques(original.assign(synthetic=1), synthetic, ["x", "synthetic"])
    with pytest.raises(ValueError, match="at least one"):
        copied_reference(original, [])
    with pytest.raises(ValueError, match="missing values"):
        copied_records(original, synthetic.assign(synthetic=[1, None]), ["x"])


def test_leave_one_out_reference_estimates_the_holdout_share():
    """Training and holdout samples from one categorical population: the leave-one-out share of the training
    sample and the holdout share agree within a few standard errors, and both agree with their exact
    expectations, sum_k p_k (1 - (1 - p_k)**(n - 1)) and sum_k p_k (1 - (1 - p_k)**n)."""
    rng = np.random.default_rng(5)
    levels = [3, 5, 8, 12, 20]
    margins = [np.random.default_rng(k).dirichlet(np.ones(k)) for k in levels]
    cells = margins[0]
    for margin in margins[1:]:
        cells = np.multiply.outer(cells, margin)
    p = cells.ravel()
    n, repetitions = 2000, 150
    expected_holdout = float(np.sum(p * (1 - (1 - p) ** n)))
    expected_loo = float(np.sum(p * (1 - (1 - p) ** (n - 1))))
    assert 0.2 < expected_holdout < 0.8  # a share far from 0 and 1, so that the comparison says something
    assert 0 < expected_holdout - expected_loo < 1 / n  # the leave-one-out share understates, by less than 1/n

    columns = [f"v{j}" for j in range(len(levels))]

    def sample():
        return pd.DataFrame({c: rng.choice(k, n, p=q) for c, k, q in zip(columns, levels, margins, strict=True)})

    loo, holdout = np.empty(repetitions), np.empty(repetitions)
    for r in range(repetitions):
        training = sample()
        loo[r] = copied_reference(training, columns)
        holdout[r] = copied_holdout(training, sample(), columns)
    difference = loo - holdout
    se = difference.std(ddof=1) / np.sqrt(repetitions)
    assert abs(difference.mean()) < 4 * se
    assert abs(loo.mean() - expected_loo) < 4 * loo.std(ddof=1) / np.sqrt(repetitions)
    assert abs(holdout.mean() - expected_holdout) < 4 * holdout.std(ddof=1) / np.sqrt(repetitions)


def test_the_inherent_maximum_removes_a_lone_pattern_always_and_a_pair_by_chance():
    """Worked by hand: pattern a holds one record (always redrawn to itself: a unique row replicated in every
    repetition), pattern b two records of different labels (each redraws its label from {1, 2}: both removed when
    the draws differ, probability 1/2, none when they agree), pattern c two equal records (never unique). Every
    repetition removes 1 or 3 of the 5 rows, 2 on average."""
    from bayessdc.risk.copies import inherent_removed

    original = pd.DataFrame({"k": ["a", "b", "b", "c", "c"], "y": [1, 1, 2, 1, 1]})
    table = inherent_removed(original, ["y"], ["k"], ["k", "y"], repetitions=400, seed=0)
    assert list(table["dataset"]) == list(range(1, 401)) and (table["rows"] == 5).all()
    assert set(table["removed"]) == {1, 3}
    assert (table["kept"] == 5 - table["removed"]).all()
    assert abs(table["removed"].mean() - 2.0) < 4 * 1.0 / np.sqrt(400)  # sd of one repetition's count is 1
    again = inherent_removed(original, ["y"], ["k"], ["k", "y"], repetitions=400, seed=0)
    pd.testing.assert_frame_equal(table, again)  # the same seed, the same reference
