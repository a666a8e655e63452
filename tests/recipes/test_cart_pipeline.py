"""``bsd.synthesize`` with ``bsd.CART``: the release in memory is the command line's, and its measures."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.measures import compute_measures
from bayessdc.models.cart import CartDataError, acs_example_rules, simulate_acs_persons
from bayessdc.synthesis.output import to_jsonable
from tests.cart_rows import kept_rows_in_order, rows_per_dataset

SYNTHESIZE = ["education", "marital"]
KEEP = ["age", "sex"]
#: The example's rules on the columns used here.
RULES = [
    r
    for r in acs_example_rules()
    if r["name"]
    in ("attainment bounded by age (under 18)", "no degree before age 19", "children under 15 never married")
]
M, BOOTSTRAP = 4, 100


@pytest.fixture(scope="module")
def persons(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cart_pipeline")
    simulate_acs_persons(400, seed=2).to_csv(folder / "persons.csv", index=False)
    (folder / "rules.json").write_text(json.dumps({"rules": RULES}))
    return folder, bsd.read_table(folder / "persons.csv")


@pytest.fixture(scope="module")
def release(persons):
    _, data = persons
    recipe = bsd.CART(rules=RULES, bootstrap=BOOTSTRAP)
    return bsd.synthesize(data, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=M, seed=0, progress=False)


def _json(payload):
    return json.loads(json.dumps(to_jsonable(payload)))


def test_api_release_equals_the_cli_release(persons, release, tmp_path):
    folder, _ = persons
    args = ["cart", "--quiet", "--data", str(folder / "persons.csv"), "--synthesize", ",".join(SYNTHESIZE)]
    args += ["--keep", ",".join(KEEP), "--rules", str(folder / "rules.json"), "--m", str(M), "--seed", "0"]
    assert main([*args, "--bootstrap", str(BOOTSTRAP), "--out", str(tmp_path / "cli")]) == 0
    cli = tmp_path / "cli"
    pd.testing.assert_frame_equal(release.synthetic, pd.read_parquet(cli / "release" / "synthetic.parquet"))
    assert _json(release.description) == json.loads((cli / "release" / "model.json").read_text())
    assert _json(release.measured.to_dict()) == json.loads((cli / "private" / "measures.json").read_text())
    cli_diagnostics = json.loads((cli / "private" / "diagnostics.json").read_text())
    assert _json(release.diagnostics.summary)["trees"] == cli_diagnostics["trees"]

    release.save(tmp_path / "api")  # the same files as the command line's
    for part in ("release", "private"):
        names = sorted(p.name for p in (tmp_path / "api" / part).iterdir())
        assert names == sorted(p.name for p in (cli / part).iterdir())
    for name in ("release/model.json", "private/run.json", "private/utility.json", "private/measures.json"):
        assert (tmp_path / "api" / name).read_text() == (cli / name).read_text()
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "api" / "release" / "synthetic.parquet"),
        pd.read_parquet(cli / "release" / "synthetic.parquet"),
    )


def test_release_in_memory(persons, release):
    _, data = persons
    synthetic = release.synthetic
    assert list(synthetic.columns) == ["synthetic", *[c for c in data.columns if c in KEEP + SYNTHESIZE]]
    assert sorted(synthetic["synthetic"].unique()) == list(range(1, M + 1))
    assert release.facts["records"] == len(data) and release.m == M
    kept = rows_per_dataset(release)  # the replicated uniques removed by the default policy: rows only taken away
    assert sum(len(data) - k for k in kept.values()) == release.facts["replicated_uniques_removed"] > 0
    for k, frame in synthetic.groupby("synthetic"):
        assert len(frame) == kept[k] and kept_rows_in_order(frame, data, KEEP)
        young = frame["age"].to_numpy() <= 14  # a rule: never violated
        assert (frame["marital"].astype(str).to_numpy()[young] == "never married").all()
    assert release.description["synthesized_in_order"] == SYNTHESIZE and release.description["m"] == M


def test_diagnostics_say_what_was_fitted_and_pass(persons, release):
    _, data = persons
    d = release.diagnostics
    assert len(d.posteriors) == 0 and d.passed and d.verdict == "passed"
    assert list(d["trees"]) == SYNTHESIZE
    for tree in d["trees"].values():
        assert tree["fallbacks"]["draws"] == M * len(data)
        # a binary tree of depth d has d + 1 to 2^d leaves, each of at least min_leaf = 5 records; these split
        assert tree["depth"] >= 1
        assert tree["depth"] + 1 <= tree["leaves"] <= min(2 ** tree["depth"], len(data) // 5)
    assert d["n_records"] == len(data)
    assert d["dropped_columns"] == [c for c in data.columns if c not in KEEP + SYNTHESIZE]
    assert d["synthesis_seconds"] > 0


def test_risk_without_options_is_the_records_copied_the_replicated_uniques_and_the_identification(persons, release):
    """CART has no model-based risk; every release of records has the copies measures, and the removal's; a
    partially synthetic one Hu & Savitsky's identification figures too, numeric columns on bands."""
    _, data = persons
    risk = release.risk().set_index(["measure", "subset"])
    assert set(risk.index.get_level_values("measure")) == {
        "copied_records", "replicated_uniques", "removed_records", "released_records", "expected_match_risk",
        "true_match_rate", "false_match_rate", "attribute_disclosures"}
    assert risk.loc[("replicated_uniques", "unique in both"), "worst"] == 0  # removed before release
    kept = rows_per_dataset(release)
    assert risk.loc[("released_records", "all"), "worst"] == min(kept.values())
    assert risk.loc[("removed_records", "all"), "pooled"] == pytest.approx(np.mean([1 - k / len(data)
                                                                                   for k in kept.values()]))
    released = KEEP + SYNTHESIZE
    originals = set(map(tuple, data[released].astype(str).to_numpy()))
    shares = [np.mean([tuple(row) in originals for row in frame[released].astype(str).to_numpy()])
              for _, frame in release.synthetic.groupby("synthetic")]  # fmt: skip
    assert risk.loc[("copied_records", "all"), "pooled"] == pytest.approx(np.mean(shares))
    assert risk.loc[("copied_records", "all"), "worst"] == pytest.approx(max(shares))
    tau = release.utility().set_index("subset")
    values = release.measured["table_tau"].values
    for name in release.identity["tables"]:  # tau: higher is better, the worst dataset the lowest
        assert tau.loc[name, "worst"] == pytest.approx(values.loc[values["subset"] == name, "value"].min())
    with pytest.raises(bsd.NotApplicableError, match="takes known, repetitions"):
        release.risk(alpha=0.1)
    with pytest.raises(bsd.InputError, match="kept or categorical synthesized columns"):
        release.risk(known=[["age", "income"]])


def test_identification_by_default_matches_the_datasets_as_drawn_on_the_original_deciles(persons, release):
    """The intruder knows every kept and synthesized column, the numeric age to its decile band of the original;
    the figure is of the datasets as drawn (row i record i), before the replicated uniques were removed."""
    from bayessdc.risk.identification import identification_risk

    _, data = persons
    known = KEEP + SYNTHESIZE
    edges = np.unique(np.quantile(data["age"].to_numpy(float), np.arange(1, 10) / 10))
    original = data[known].reset_index(drop=True).assign(age=np.searchsorted(edges, data["age"], side="right"))
    drawn = release.measure_input.drawn
    assert len(drawn) == len(data) * release.m > len(release.synthetic)  # rows were removed after drawing
    by_hand = []
    for _, frame in drawn.groupby("synthetic"):
        frame = frame[known].reset_index(drop=True).assign(age=lambda f: np.searchsorted(edges, f["age"], side="right"))
        by_hand.append(identification_risk(original, frame, known)["expected_match_risk"])
    risk = release.risk().set_index(["measure", "subset"])
    assert risk.loc[("expected_match_risk", "+".join(known)), "pooled"] == pytest.approx(np.mean(by_hand))
    assert "age (10 bands)" in release.measured["expected_match_risk"].description
    # the categorical utility figures read the datasets as drawn: not computed for a release rows were removed from
    assert not {"table_deviation", "pmse_ratio", "within_pattern_tv"} & set(release.measured)


def _by_hand(original, frame, known):
    """Expected match risk, true and false match rates (eq. 15-17), counted record by record."""
    true_keys = [tuple(row) for row in original[known].astype(str).to_numpy()]
    released_keys = [tuple(row) for row in frame[known].astype(str).to_numpy()]
    counts = pd.Series(released_keys).value_counts().to_dict()
    expected = true_unique = false_unique = 0
    for mine, released in zip(true_keys, released_keys, strict=True):
        c, t = counts.get(mine, 0), mine == released
        expected += t / c if t else 0.0
        true_unique += c == 1 and t
        false_unique += c == 1 and not t
    unique = true_unique + false_unique
    return expected, true_unique / len(original), (false_unique / unique if unique else np.nan)


def test_identification_risk_is_counted_as_by_hand(persons, release):
    _, data = persons  # the risk of the datasets as drawn (row i record i), before the replicated uniques' removal
    known_sets = [["age", "sex", "marital"], ["sex", "education", "marital"]]
    known = [",".join(known_sets[0]), known_sets[1]]
    measured = compute_measures(release.measures.measure_input(known=known, repetitions=10), kind="risk")
    table = release.risk(known=known, repetitions=10).set_index(["measure", "subset"])
    for known in known_sets:
        drawn = release.measures.synthetic.groupby("synthetic")
        hand = [_by_hand(data, frame.reset_index(drop=True), known) for _, frame in drawn]
        hand = np.array(hand, dtype=float)
        subset = "+".join(known)
        for column, measure in enumerate(("expected_match_risk", "true_match_rate", "false_match_rate")):
            values = measured[measure].values.query("subset == @subset")["value"].to_numpy()
            np.testing.assert_allclose(values, hand[:, column])
            assert table.loc[(measure, subset), "pooled"] == pytest.approx(np.nanmean(hand[:, column]))
    disclosures = [
        int(((frame["education"].astype(str).to_numpy() == data["education"].to_numpy())
             & (frame["marital"].astype(str).to_numpy() == data["marital"].to_numpy())).sum())
        for _, frame in release.measures.synthetic.groupby("synthetic")
    ]  # fmt: skip
    assert measured["attribute_disclosures"].values["value"].tolist() == disclosures
    assert table.loc[("attribute_disclosures", "all"), "pooled"] == pytest.approx(np.mean(disclosures))
    assert 0 < disclosures[0] < len(data)  # a synthesized pair is neither always nor never the true one


def test_knowing_only_kept_columns_every_record_matches_its_pattern(persons, release):
    """With only kept columns known, each record's released row matches and c_i is its pattern's size, in the
    synthetic datasets and in both inherent scenarios alike: the expected match risk is the number of patterns."""
    _, data = persons
    table = release.risk(known=[KEEP], repetitions=5).set_index(["measure", "subset"])
    sizes = data.groupby(KEEP).size()
    subset = "+".join(KEEP)
    for column in ("pooled", "inherent_min", "inherent_max"):
        assert table.loc[("expected_match_risk", subset), column] == pytest.approx(len(sizes))
        assert table.loc[("true_match_rate", subset), column] == pytest.approx((sizes == 1).sum() / len(data))
        assert table.loc[("false_match_rate", subset), column] == pytest.approx(0.0)
    # A record whose pattern shows one (education, marital) pair gets it back in every repetition of the maximum
    # (redrawn from the pattern's records).
    labels = data.groupby(KEEP)[SYNTHESIZE].transform(lambda c: c.nunique())
    fixed = int(((labels == 1).all(axis=1)).sum())
    assert fixed > 0.2 * len(data)
    assert table.loc[("attribute_disclosures", "all"), "inherent_max"] >= fixed
    # The minimum draws education and marital status each uniformly over all its levels, whatever the pattern:
    # a record keeps both with probability 1 / (L_education L_marital), binomial over the records; the mean of
    # the 5 repetitions within 4 standard errors of it, far below the records the maximum always discloses
    p = 1 / (data["education"].nunique() * data["marital"].nunique())  # 1 / 24
    expected, se = len(data) * p, np.sqrt(len(data) * p * (1 - p) / 5)
    assert abs(table.loc[("attribute_disclosures", "all"), "inherent_min"] - expected) < 4 * se
    assert expected + 4 * se < fixed


def test_utility_with_other_tables(release):
    table = release.utility(tables=["sex,education"], bootstrap=50)
    tau = table[table["measure"] == "table_tau"]
    assert list(tau["subset"]) == ["sex x education"] and tau["datasets"].item() == M
    measured = release.measures.measure_input(tables=["sex,education"], bootstrap=50)
    from bayessdc.measures import compute_measures

    details = compute_measures(measured, ["table_tau"])["table_tau"].details
    assert len(details) == 50 and set(details["subset"]) == {"sex x education"}  # every bootstrap replicate
    with pytest.raises(bsd.InputError, match="unknown column"):
        release.utility(tables=["sex,colour"])


def test_bad_input_is_refused_before_anything_is_written(persons, tmp_path):
    _, data = persons
    violated = [{"name": "old enough", "then": {"age": {"min": 18}}}]
    out = tmp_path / "out"
    with pytest.raises(CartDataError, match="rule 'old enough' is violated by the original data at data rows"):
        bsd.synthesize(data, bsd.CART(rules=violated), synthesize=SYNTHESIZE, keep=KEEP, out=out, progress=False)
    with pytest.raises(bsd.InputError, match="neither kept nor synthesized"):
        bsd.synthesize(data, bsd.CART(tables=["grade"]), synthesize=SYNTHESIZE, keep=KEEP, out=out, progress=False)
    with pytest.raises(bsd.InputError, match="bootstrap= must be at least 1"):
        bsd.synthesize(data, bsd.CART(bootstrap=0), synthesize=SYNTHESIZE, keep=KEEP, out=out, progress=False)
    assert not out.exists()
