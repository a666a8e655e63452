"""The DPMPM's simulators (``bayessdc.models.dpmpm.simulate``)."""

from bayessdc.models.dpmpm import simulate_ce_like


def test_ce_like_simulator_has_the_papers_design():
    frame = simulate_ce_like(seed=0)
    assert len(frame) == 6208
    sizes = frame.groupby(["gender", "income", "age"]).size()
    assert len(sizes) == 40 and sizes.min() == 3 and (sizes == 3).sum() == 3 and sizes.max() > 300
    assert frame["county"].nunique() == 133
    # the county distribution differs by pattern: the largest pattern's top county share differs from the file's
    top = frame["county"].value_counts(normalize=True)
    biggest = frame.set_index(["gender", "income", "age"]).loc[sizes.idxmax(), "county"].value_counts(normalize=True)
    assert 0.5 * (top - biggest).abs().reindex(top.index, fill_value=0).sum() > 0.2
