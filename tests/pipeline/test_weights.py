"""``bsd.synthesize(..., weights=)`` with ``bsd.CART``: the ACS-like shape with a weight column released whole, the
weights kept or synthesized, the figures weighted, and bad weights refused before any fitting."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.models.cart import simulate_acs_work
from tests.cart_rows import kept_positions

M = 2
SYNTHESIZE = "employed,hours,income"


def acs_weighted(n: int = 300, seed: int = 4) -> pd.DataFrame:
    """The ACS-like shape: hours missing by design, income with a code and a spike, and an informative weight
    (the old undersampled: weight 3 times the others')."""
    persons = simulate_acs_work(bsd.examples.acs_persons(n, seed=seed), seed=seed)
    rng = np.random.default_rng(seed)
    return persons.assign(wt=np.round(np.where(persons["age"] >= 60, 300.0, 100.0) * rng.uniform(0.9, 1.1, n), 2))


def _recipe() -> bsd.CART:
    return bsd.CART(missing_codes={"income": [-8]}, spikes={"income": [0]}, bootstrap=30)


@pytest.fixture(scope="module")
def releases():
    data = acs_weighted()
    partial = bsd.synthesize(data, _recipe(), synthesize=SYNTHESIZE, keep="age,sex,wt", m=M, seed=0, progress=False,
                             weights="wt")  # fmt: skip
    full = bsd.synthesize(data, _recipe(), synthesize=SYNTHESIZE, keep=[], m=M, seed=0, progress=False, weights="wt")
    return data, partial, full


def test_partially_synthetic_release_keeps_every_record_and_exactly_its_weights(releases):
    """Every record but the replicated uniques removed (compared without the weight, a design variable), each
    with exactly its own weight, in order."""
    data, partial, _ = releases
    synthetic = partial.synthetic
    assert len(synthetic) == M * len(data) - partial.facts["replicated_uniques_removed"]
    for _, dataset in synthetic.groupby("synthetic"):
        rows = kept_positions(dataset, data, ["age", "sex", "wt"])
        assert rows is not None and len(rows) == len(dataset)
        assert dataset["wt"].to_numpy() == pytest.approx(data["wt"].to_numpy()[rows], abs=0)
    assert (synthetic["hours"].isna() == (synthetic["employed"] == "no")).all()  # missing by design, kept so
    assert partial.description["weights"]["role"] == "kept"
    assert partial.description["combining_rules"] == "partial"
    assert partial.identity["weights"] == {"column": "wt", "role": "kept"}


def test_fully_synthetic_release_synthesizes_the_weights_first(releases):
    data, _, full = releases
    assert len(full.synthetic) == M * len(data) - full.facts["replicated_uniques_removed"]
    assert full.description["synthesized_in_order"] == ["wt", *SYNTHESIZE.split(",")]
    assert full.description["kept"] == []
    assert full.description["combining_rules"] == "simple"  # Raab, Nowok & Dibben's simple synthesis
    weights = full.description["weights"]
    assert weights["role"] == "synthesized" and "design stratum" in weights["why"]
    first = full.synthetic[full.synthetic["synthetic"] == 1]["wt"].to_numpy()
    assert not np.array_equal(first, data["wt"].to_numpy())  # not the records' own weights
    assert set(first) <= set(data["wt"])  # donors' values (no smoothing)
    json.dumps(full.description)  # model.json is plain data


def test_the_tables_are_weighted_and_say_so(releases):
    data, partial, _ = releases
    tau = partial.measured["table_tau"]
    assert "weighted by wt" in tau.title
    assert "weighted by wt" in partial.measured["category_count_error"].title
    sentence = " ".join(partial.report_content.about)
    assert "Survey weights" in sentence and "unweighted" in sentence  # which figures are weighted, which not
    # tau of "employed x sex" for dataset 1 from the weighted totals by hand
    first = partial.synthetic[partial.synthetic["synthetic"] == 1]
    original = data.groupby(["employed", "sex"])["wt"].sum()
    synthetic = first.groupby(["employed", "sex"], observed=True)["wt"].sum().reindex(original.index, fill_value=0)
    by_hand = 1 - np.abs(original - synthetic).sum() / (2 * original.sum())
    values = tau.values[(tau.values["subset"] == "employed x sex") & (tau.values["dataset"] == 1)]["value"]
    assert values.iloc[0] == pytest.approx(by_hand)


def _bad(data: pd.DataFrame, rows: list[int], value: object) -> pd.DataFrame:
    data = data.copy()
    data["wt"] = data["wt"].astype(object)
    data.loc[rows, "wt"] = value
    return data


@pytest.mark.parametrize(
    ("change", "options", "message"),
    [
        (lambda d: _bad(d, [2, 9], None), {}, "weights='wt': the survey weight is missing at data rows 3, 10 (2 rows)"),
        (lambda d: d.assign(wt=d["wt"].where(d.index != 4, 0.0)), {}, "is zero or negative at data row 5 (1 row)"),
        (lambda d: d.assign(wt=d["wt"].where(d.index != 0, -2.0)), {}, "is zero or negative at data row 1 (1 row)"),
        (lambda d: _bad(d, [7], "heavy"), {}, "is not a number at data row 8 (1 row)"),
        (lambda d: d.assign(wt=d["wt"].astype(str)), {}, "stored as text"),
        (lambda d: d.assign(wt=d["wt"].where(d.index != 1, np.inf)), {}, "is infinite at data row 2"),
        (lambda d: d, {"weights": "weight"}, "weights='weight': no such column"),
        (lambda d: d, {"synthesize": "wt,income"}, "listed to synthesize while age, sex are kept"),
    ],
)
def test_bad_weights_are_refused_before_any_fitting(tmp_path, monkeypatch, change, options, message):
    def no_fit(*args, **kwargs):
        raise AssertionError("fitted")

    monkeypatch.setattr(bsd.CART, "fit", no_fit)
    data = change(acs_weighted(40))
    arguments = {"synthesize": SYNTHESIZE, "keep": "age,sex", "weights": "wt", **options}
    with pytest.raises(bsd.InputError) as refusal:
        bsd.synthesize(data, _recipe(), m=M, progress=False, out=tmp_path / "out", **arguments)
    assert message in str(refusal.value)
    assert not (tmp_path / "out").exists()


def test_a_synthesizer_without_weights_refuses_them():
    with pytest.raises(bsd.InputError, match="weights= applies to tables of records synthesized by bsd.CART"):
        bsd.synthesize(acs_weighted(40), bsd.DPMPM(), synthesize="employed", keep="sex", weights="wt", progress=False)


def test_the_weight_is_in_no_default_table_but_a_named_table_takes_it(releases):
    _, partial, full = releases
    for release in (partial, full):
        dimensions = [spec["by"] for spec in release.identity["tables"].values()]
        assert dimensions and all("wt" not in by for by in dimensions)  # a design variable, not an analysis one
        assert "left out of the default utility tables" in release.description["weights"]["left_out_of_defaults"]
        assert "left out of the default utility tables" in " ".join(release.report_content.about)
        assert "wt" not in " ".join(release.measured["table_tau"].subsets())
    assert set(partial.identity["tables"]) == {f"{s} x {k}" for s in SYNTHESIZE.split(",") for k in ("age", "sex")} | {
        "employed x hours x income"}  # fmt: skip
    assert set(full.identity["tables"]) == {"employed x hours x income"}
    named = partial.utility(tables=["employed,wt"], bootstrap=5)  # named explicitly: cut into deciles, weighted
    assert set(named[named["measure"] == "table_tau"]["subset"]) == {"employed x wt"}
    default = partial.utility(bootstrap=5)
    assert all("wt" not in subset for subset in default.loc[default["measure"] == "table_tau", "subset"])


def test_the_weight_is_in_no_default_knowledge_set_but_a_named_set_takes_it(releases, monkeypatch):
    import bayessdc.risk.identification as identification

    data, partial, _ = releases
    calls, inherent_risk = [], identification.inherent_risk
    monkeypatch.setattr(identification, "inherent_risk",
                        lambda *a, **k: calls.append({**k, "pattern": list(a[2])}) or inherent_risk(*a, **k))
    default = partial.risk(repetitions=2)
    assert calls[0]["weights"] == pytest.approx(data["wt"].to_numpy())  # the weighted inherent maximum
    assert list(default.loc[default["measure"] == "expected_match_risk", "subset"]) == ["age+sex+employed"]
    assert calls[0]["pattern"] == ["age", "sex"]  # the weight resamples the patterns, it is none of their columns
    named = partial.risk(known=[["age", "sex", "wt"]], repetitions=2)
    assert "age+sex+wt" in set(named["subset"])


def test_a_release_by_area_keeps_its_areas_and_so_its_weights():
    """``strata=`` keeps the column of areas, so a release with nothing else kept is partially synthetic: the weight
    is kept with the records (not synthesized as in a fully synthetic release)."""
    data = acs_weighted(200).assign(area=lambda d: np.where(np.arange(len(d)) % 2, "north", "south"))
    release = bsd.synthesize(data, bsd.CART(strata="area", bootstrap=10, min_leaf=10), synthesize="employed,income",
                             keep=[], m=M, seed=0, progress=False, weights="wt")  # fmt: skip
    assert release.description["weights"]["role"] == "kept" and release.description["kept"] == ["area", "wt"]
    for _, dataset in release.synthetic.groupby("synthetic"):
        rows = kept_positions(dataset, data, ["area", "wt"])
        assert rows is not None and (dataset["wt"].to_numpy() == data["wt"].to_numpy()[rows]).all()
