"""A country of persons in households through ``bsd.CART(households=..., strata=...)``: wall time and peak memory
on the local dask runner (one process, threads) and on a two-worker ``LocalCluster`` (processes), in one invocation.

The file is :func:`bayessdc.examples.households` (default 400,000 households of about 2.5 persons, 1,000,000
persons, in 500 areas), with its rules across members (:func:`bayessdc.examples.household_rules`). Tenure, sex,
age, education and employment are synthesized within households, area by area (one household model per area, small
areas pooled), m = 2, under the default disclosure policy: the cross-fitted release of the households (40 folds,
each refitting every area's trees) and every household measure. Printed per runner: the phases' wall times (the
simulation, the run), the peak resident memory of this process (and of the cluster's workers), the verdict, the
households and persons per dataset, and the rules broken (0 by construction).

Below the public API: ``bayessdc.models.households.rule_violations``, the count of households breaking each rule.

    .venv/bin/python bench/households_country.py [--households 400000] [--areas 500] [--m 2] [--runner both]
        [--min-leaf 10]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import bayessdc as bsd  # noqa: E402
from bayessdc.models.households import rule_violations  # noqa: E402

SYNTHESIZE = ["tenure", "sex", "age", "education", "employed"]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_peak_mb() -> float:
    """A worker process's peak resident memory (Linux ``VmHWM``: its own, where ``ru_maxrss`` keeps the peak of the
    process it was started from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _run(persons, scheduler: str | None, m: int, out: Path, min_leaf: int) -> tuple[bsd.Release | None, float, str]:
    recipe = bsd.CART(households="household", relationship="relationship", rules=bsd.examples.household_rules(),
                      strata="area", min_leaf=min_leaf, bootstrap=200, scheduler=scheduler, workers=2)  # fmt: skip
    start = time.perf_counter()
    try:
        release = bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, m=m, seed=1, out=out, progress=False)
    except bsd.DisclosureRefused as refused:
        failed = "; ".join(f"{j.criterion.measure} [{j.subset}] {j.figure:.4g} > {j.threshold:.4g}"
                           for j in refused.verdict.failed())  # fmt: skip
        tried = ", ".join(v.setting_text() for v in refused.tried)
        return None, time.perf_counter() - start, f"refused under {tried}: {failed}"
    return release, time.perf_counter() - start, "met" if release.policy.passed else "failed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, default=400_000)
    parser.add_argument("--areas", type=int, default=500)
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--runner", choices=("local", "cluster", "both"), default="both")
    parser.add_argument("--min-leaf", type=int, default=10, help="the trees' fewest records in a leaf (CART's "
                        "default is 50)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    start = time.perf_counter()
    persons, _ = bsd.examples.households(args.households, args.areas, seed=1)
    print(f"simulated {len(persons):,} persons in {args.households:,} households, {args.areas} areas: "
          f"{time.perf_counter() - start:.1f} s; peak {_peak_mb():,.0f} MB")  # fmt: skip
    runners = ["local", "cluster"] if args.runner == "both" else [args.runner]
    for runner in runners:
        cluster = client = None
        scheduler = None
        if runner == "cluster":
            from dask.distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
            scheduler = cluster.scheduler_address
        with tempfile.TemporaryDirectory() as tmp:
            release, seconds, verdict = _run(persons, scheduler, args.m, Path(tmp) / "run", args.min_leaf)
        workers = ""
        if client is not None:
            memory = client.run(_worker_peak_mb)
            workers = f"; workers' peak {', '.join(f'{v:,.0f}' for v in memory.values())} MB"
            client.close()
            cluster.close()
        print(f"{runner}: {seconds:,.1f} s, policy {verdict}; peak {_peak_mb():,.0f} MB{workers}")
        if release is not None:
            for k, dataset in release.synthetic.groupby("synthetic"):
                print(f"  dataset {k}: {dataset['household'].nunique():,} households, {len(dataset):,} persons, "
                      f"rules broken {sum(rule_violations(dataset).values())}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
