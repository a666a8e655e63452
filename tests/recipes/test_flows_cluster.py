"""National-scale plumbing: the flow groups fanned out over a dask cluster of processes give the same release."""

from __future__ import annotations

import numpy as np
import pandas as pd

import bayessdc as bsd
from bayessdc.models.flows import simulate_flow_table

#: The subject is the plumbing (the same release from a cluster), not the verdict: every figure reported, none judged.
REPORT_ONLY = bsd.Policy(name="cluster test: every figure reported, none judged", criteria=())


def _run(table: pd.DataFrame, out, scheduler: str | None, workers: int | None) -> bsd.Release:
    recipe = bsd.Flows(
        settings=bsd.SamplerSettings(draws=150, tune=150, chains=2),
        scheduler=scheduler,
        workers=workers,
        risk_draws=100,
        max_extensions=0,
    )
    return bsd.synthesize(table, recipe, m=2, seed=7, out=out, allow_unconverged=True, progress=False,
                          policy=REPORT_ONLY)


def test_a_cluster_of_two_worker_processes_gives_the_single_process_release(tmp_path):
    from dask.distributed import LocalCluster

    table = simulate_flow_table(n_states=2, counties_per_state=5, scale=0.02, seed=3)
    single = _run(table, tmp_path / "single", "synchronous", None)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
    ) as cluster:  # fmt: skip
        assert len({w.pid for w in cluster.workers.values()}) == 2  # two processes besides this one
        clustered = _run(table, tmp_path / "cluster", cluster.scheduler_address, None)
        worker_pids = set(cluster.scheduler_info["workers"].keys())
    assert len(worker_pids) == 2
    # the groups were fitted in the workers, yet the release is the single-process one, value for value
    assert single.facts["groups"] == clustered.facts["groups"] == 4
    pd.testing.assert_frame_equal(single.synthetic, clustered.synthetic)
    a = single.private_tables["risk_cells.parquet"]
    b = clustered.private_tables["risk_cells.parquet"]
    pd.testing.assert_frame_equal(a, b)
    assert (tmp_path / "cluster" / "release" / "synthetic.parquet").read_bytes() == (
        tmp_path / "single" / "release" / "synthetic.parquet"
    ).read_bytes()
    pd.testing.assert_frame_equal(single.measure_table(), clustered.measure_table())
    assert np.isfinite(clustered.measure_table().set_index(["measure", "subset"]).loc[
        ("intruder_correct", "all items"), "pooled"])
