"""Synthesis area by area (issue 51, item 1): the plan of the strata fitted together, worked by hand, and the
stratified synthesizer's invariants: each record keeps its stratum, each stratum's values come from its own
records, the same seed gives the same datasets however the groups run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.cart import CartSynthesizer
from bayessdc.models.cart.data import CartDataError
from bayessdc.models.cart.strata import POOLED, StratifiedCart, default_min_stratum, plan_strata
from bayessdc.models.cart.unlearned import cross_fitted_datasets
from bayessdc.synthesis.runner import run_parts


def _areas(sizes: dict[str, int], parents: dict[str, str] | None = None) -> pd.DataFrame:
    area = np.repeat(list(sizes), list(sizes.values()))
    frame = pd.DataFrame({"area": area, "x": np.arange(len(area)) % 2})
    if parents:
        frame["region"] = frame["area"].map(parents)
    return frame


def test_the_plan_pools_small_strata_within_their_parent_then_together_worked_by_hand():
    sizes = {"a": 30, "b": 25, "c": 6, "d": 7, "e": 12, "f": 9, "g": 5}
    parents = {"a": "N", "b": "N", "c": "N", "d": "N", "e": "S", "f": "S", "g": "W"}
    # no parent: a, b alone; c, d, e, f, g (39 records) pooled together
    plan = plan_strata(_areas(sizes), "area", 20)
    assert plan.groups == {"a": ("a",), "b": ("b",), POOLED: ("c", "d", "e", "f", "g")}
    # within parents: N's small strata c + d = 13 < 20 stay; S's e + f = 21 pool; c, d, g (18) left: below 20
    with pytest.raises(CartDataError, match=r"'c' \(6\), 'd' \(7\), 'g' \(5\).*pool to 18"):
        plan_strata(_areas(sizes, parents), "area", 20, parent="region")
    # at 12: e alone; N's c + d = 13 pool; f (S) and g (W) are left and pool together to 14
    plan = plan_strata(_areas(sizes, parents), "area", 12, parent="region")
    assert plan.groups == {"a": ("a",), "b": ("b",), "e": ("e",), "region=N (pooled: c, d)": ("c", "d"),
                           POOLED: ("f", "g")}  # fmt: skip
    rows = plan.rows(_areas(sizes, parents))
    assert [len(rows[g]) for g in plan.groups] == [30, 25, 12, 13, 14]
    assert default_min_stratum(["x", "y", "z"]) == 40  # synthpop's minstratumsize = 10 + 10 * 3


def test_the_plan_refuses_missing_strata_and_a_stratum_split_across_parents():
    frame = _areas({"a": 30, "b": 5}, {"a": "N", "b": "S"})
    frame.loc[3, "area"] = None
    with pytest.raises(CartDataError, match="missing at data row"):
        plan_strata(frame, "area", 10)
    frame = _areas({"a": 30, "b": 5}, {"a": "N", "b": "S"})
    frame.loc[frame.index[-1], "region"] = "N"
    with pytest.raises(CartDataError, match="stratum 'b' of 'area' lies in 2 'region' areas"):
        plan_strata(frame, "area", 10, parent="region")


@pytest.fixture(scope="module")
def two_worlds():
    """Two areas whose columns relate in opposite ways, and a level ('z') only one of them has."""
    rng = np.random.default_rng(4)
    n = 400
    area = np.repeat(["A", "B"], n // 2)
    x = rng.integers(0, 2, n)
    flip = rng.random(n) < 0.05
    y = np.where(area == "A", x, 1 - x) ^ flip
    job = np.where(area == "A", rng.choice(["p", "q"], n), rng.choice(["p", "z"], n))
    return pd.DataFrame({"area": area, "x": x.astype(str), "y": y.astype(str), "job": job})


def _stratified(frame, **settings):
    template = CartSynthesizer(["y", "job"], ["area", "x"], min_samples_leaf=10, **settings)
    return StratifiedCart(template, plan_strata(frame, "area", 50))


def test_each_stratum_is_synthesized_by_its_own_trees(two_worlds):
    synthesizer = _stratified(two_worlds).fit(two_worlds, seed=3)
    synthetic = synthesizer.synthesize_datasets(4)
    assert len(synthetic) == 4 * len(two_worlds)
    for _, dataset in synthetic.groupby("synthetic"):
        # each record keeps its area and kept value, in the data's order
        assert dataset["area"].astype(str).tolist() == two_worlds["area"].tolist()
        assert dataset["x"].astype(str).tolist() == two_worlds["x"].tolist()
    # a level of area B only is never drawn in area A: A's trees never saw it (one model would draw it there)
    assert not ((synthetic["area"] == "A") & (synthetic["job"] == "z")).any()
    assert ((synthetic["area"] == "B") & (synthetic["job"] == "z")).any()
    # the opposite relations of the two areas are both kept: y = x in A, y = 1 - x in B, up to the 5% noise
    same = synthetic["x"].astype(str) == synthetic["y"].astype(str)
    assert same[synthetic["area"] == "A"].mean() > 0.85 and same[synthetic["area"] == "B"].mean() < 0.15
    # the release's categories are the whole file's
    assert list(synthetic["job"].cat.categories) == ["p", "q", "z"]
    summary = synthesizer.group_summary()
    assert summary["records"].tolist() == [200, 200]
    assert synthesizer.describe()["strata"]["groups"] == [
        {"group": "A", "strata": ["A"], "records": 200}, {"group": "B", "strata": ["B"], "records": 200}]


def test_the_same_seed_gives_the_same_datasets_however_the_groups_run(two_worlds):
    here = _stratified(two_worlds).fit(two_worlds, seed=5).synthesize_datasets(3)
    fanned = _stratified(two_worlds)

    def fan_out(task, parts):
        return run_parts(task, parts, scheduler="synchronous")

    fanned.fit(two_worlds, seed=5, fan_out=fan_out)
    pd.testing.assert_frame_equal(fanned.synthesize_datasets(3, fan_out=fan_out), here)

    def on_dask(task, parts):  # a local dask cluster: the groups' synthesizers travel as scattered data
        return run_parts(task, parts, scheduler=None, workers=2)

    # the two groups' fitted synthesizers have the same settings (their dataclass fields) and other trees: each
    # must draw its own group, not one of them both (a scatter keyed by content would make them one)
    dasked = _stratified(two_worlds).fit(two_worlds, seed=5, fan_out=on_dask)
    pd.testing.assert_frame_equal(dasked.synthesize_datasets(3, fan_out=on_dask), here)
    other = _stratified(two_worlds).fit(two_worlds, seed=6).synthesize_datasets(3)
    assert not other.equals(here)


def test_cross_fitted_datasets_of_a_stratified_release_keep_the_records_order(two_worlds):
    synthesizer = _stratified(two_worlds).fit(two_worlds, seed=1)
    unlearned = cross_fitted_datasets(synthesizer, two_worlds, 2, seed=1, folds=5)
    assert len(unlearned) == 2 * len(two_worlds)
    for _, dataset in unlearned.groupby("synthetic"):
        assert dataset["area"].astype(str).tolist() == two_worlds["area"].tolist()
    assert not ((unlearned["area"] == "A") & (unlearned["job"] == "z")).any()
