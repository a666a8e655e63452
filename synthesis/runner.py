"""The group runner: fit, check, synthesize and assess independent groups, resumably.

Independent groups (the state pairs of the flow model, the strata of any model) are processed by one
picklable task per group. Tasks fan out over dask.distributed: a local cluster of threads by default
(threads share the compiled models of the process, and the samplers release the GIL), or an existing
cluster given by its scheduler address (the output folder must then be on a file system every worker sees).
Each finished group is stored at once under ``private/groups/``; a rerun into the same folder loads the
finished groups instead of refitting them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.sampling import ConvergenceCriteria, check_convergence

from .datasets import draw_synthetic, group_seed
from .output import atomic_path, write_json

__all__ = ["GroupResult", "GroupTask", "print_progress", "run_groups"]

#: ``assess(synthesizer, idata, data, synthetic, rng) -> (per-item table, summary dict)``.
Assessor = Callable[..., tuple[pd.DataFrame, dict[str, Any]]]


@dataclass
class GroupResult:
    """What one group's task leaves behind (small; the posterior itself stays on disk).

    Attributes
    ----------
    name
        The group's name.
    items
        One row per sensitive item: ``synthetic_1 .. synthetic_m`` (modelled values) and the assessor's
        columns (per-item risk).
    convergence
        The convergence report as a dictionary (``max_r_hat``, ``min_ess_bulk``, ``divergences``, ``passed``).
    summary
        The assessor's summary figures and the timings.
    """

    name: str
    items: pd.DataFrame
    convergence: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        """Whether the group passed the convergence gate."""
        return bool(self.convergence.get("passed"))

    def synthetic_values(self) -> np.ndarray:
        """The ``(m, items)`` array of synthetic modelled values."""
        cols = sorted((c for c in self.items.columns if c.startswith("synthetic_")), key=lambda c: int(c[10:]))
        return self.items[cols].to_numpy().T

    # -- storage ------------------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        """Write ``<name>.items.parquet`` then ``<name>.json`` (the marker of a finished group)."""
        with atomic_path(folder / f"{self.name}.items.parquet") as tmp:
            self.items.to_parquet(tmp, index=False)
        write_json(folder / f"{self.name}.json", {"convergence": self.convergence, "summary": self.summary})

    @classmethod
    def load(cls, folder: Path, name: str) -> GroupResult | None:
        """The stored result of group ``name``, or ``None`` when it has not finished."""
        marker = folder / f"{name}.json"
        if not marker.exists():
            return None
        payload = json.loads(marker.read_text())
        items = pd.read_parquet(folder / f"{name}.items.parquet")
        return cls(name, items, payload["convergence"], payload.get("summary", {}))


@dataclass
class GroupTask:
    """Fit one group, apply the convergence gate, store the posterior, synthesize and assess.

    Parameters
    ----------
    synthesizer
        Any object with the contract of :class:`bayessdc.models.base.Synthesizer`; an optional
        ``convergence_quantities(idata, data)`` names what the gate monitors (default: every posterior
        variable).
    folder
        Where each group's posterior (``<name>.posterior.nc``) and result are stored.
    m
        Number of synthetic datasets.
    seed
        The run's seed; each group's seed is derived from it and the group's name.
    criteria
        The convergence gate.
    assess
        Optional ``assess(synthesizer, idata, data, synthetic, rng)`` returning a per-item table and
        summary figures (the risk layer plugs in here; this module does not import it).
    max_extensions, extension_factor
        A group that fails the gate is refitted with ``extension_factor`` times the draws (and twice the
        warm-up), at most ``max_extensions`` times; the last fit is kept and judged. Synthesizers without a
        ``settings`` dataclass are fitted once.
    """

    synthesizer: Any
    folder: Path
    m: int
    seed: int
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    assess: Assessor | None = None
    max_extensions: int = 2
    extension_factor: int = 4

    def _check(self, synthesizer: Any, idata: Any, data: Any) -> Any:
        if hasattr(synthesizer, "convergence_quantities"):
            monitored = synthesizer.convergence_quantities(idata, data)
            return check_convergence(idata, self.criteria, var_names=[], derived=monitored)
        return check_convergence(idata, self.criteria)

    def __call__(self, name: str, data: Any) -> GroupResult:
        """Process one group and store its result; returns the result."""
        fit_seq, synth_seq, assess_seq = group_seed(self.seed, name).spawn(3)
        fit_seeds = fit_seq.generate_state(self.max_extensions + 1)
        start = time.perf_counter()
        synthesizer = self.synthesizer
        attempts = []
        for attempt in range(self.max_extensions + 1):
            idata = synthesizer.fit(data, seed=int(fit_seeds[attempt]))
            report = self._check(synthesizer, idata, data)
            attempts.append(report.to_dict())
            settings = getattr(synthesizer, "settings", None)
            if report.passed or attempt == self.max_extensions or settings is None:
                break
            # Longer chains for a group that mixes slowly: small groups are cheap to extend.
            longer = dataclasses.replace(settings, draws=settings.draws * self.extension_factor, tune=settings.tune * 2)
            synthesizer = dataclasses.replace(synthesizer, settings=longer)
        fit_seconds = time.perf_counter() - start
        with atomic_path(self.folder / f"{name}.posterior.nc") as tmp:
            idata.to_netcdf(str(tmp), engine="h5netcdf")
        synthetic = draw_synthetic(synthesizer, idata, data, self.m, np.random.default_rng(synth_seq))
        items = pd.DataFrame(
            {f"synthetic_{k}": synthetic.sel(synthetic=k).to_numpy() for k in synthetic["synthetic"].to_numpy()}
        )
        summary: dict[str, Any] = {
            "fit_seconds": fit_seconds,
            "fit_attempts": len(attempts),
            "draws_per_chain": int(idata.posterior.sizes["draw"]),
            "sampling_seconds": idata.attrs.get("sampling_seconds"),
            "posterior_draws_used": synthetic["posterior_draw"].to_numpy().tolist(),
        }
        if self.assess is not None:
            start = time.perf_counter()
            table, figures = self.assess(synthesizer, idata, data, synthetic, np.random.default_rng(assess_seq))
            items = pd.concat([items, table.reset_index(drop=True)], axis=1)
            summary.update(figures)
            summary["assess_seconds"] = time.perf_counter() - start
        result = GroupResult(name, items, report.to_dict(), summary)
        result.save(self.folder)
        return result


def print_progress(done: int, total: int, result: GroupResult, skipped: bool) -> None:
    conv = result.convergence
    status = "resumed" if skipped else f"{result.summary.get('fit_seconds', 0):6.1f} s"
    flag = "" if result.converged else "  NOT CONVERGED"
    print(
        f"[{done:>{len(str(total))}}/{total}] {result.name:<24} r_hat {conv['max_r_hat']:.3f}  "
        f"ESS {conv['min_ess_bulk']:7.0f}  div {conv['divergences']}  {status}{flag}",
        file=sys.stderr,
        flush=True,
    )


def run_groups(
    task: GroupTask,
    groups: Sequence[tuple[str, Any]],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, GroupResult, bool], None] | None = print_progress,
) -> list[GroupResult]:
    """Run ``task`` on every group not finished yet and return all results, in the order of ``groups``.

    Parameters
    ----------
    task
        The per-group task; its folder holds finished groups from earlier runs.
    groups
        ``(name, data)`` pairs with unique names.
    scheduler
        ``None`` for a local dask cluster of threads, ``"synchronous"`` to run in this thread (debugging,
        tests), or the address of a running dask scheduler (``tcp://host:8786``).
    workers
        Groups processed at once on the local cluster (default: the number of cores). When several run
        at once, each sampler gets an equal share of the cores.
    progress
        Called after each group as ``progress(done, total, result, resumed)``; ``None`` for silence.

    Returns
    -------
    list of GroupResult
    """
    names = [name for name, _ in groups]
    if len(set(names)) != len(names):
        raise ValueError("group names must be unique")
    task.folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, GroupResult] = {}
    total = len(groups)
    for name in names:
        stored = GroupResult.load(task.folder, name)
        if stored is not None:
            results[name] = stored
            if progress:
                progress(len(results), total, stored, True)
    pending = [(name, data) for name, data in groups if name not in results]
    if pending:
        workers = workers or os.cpu_count() or 1
        if scheduler == "synchronous" or (scheduler is None and (workers == 1 or len(pending) == 1)):
            for name, data in pending:
                results[name] = task(name, data)
                if progress:
                    progress(len(results), total, results[name], False)
        else:
            for result in _run_on_dask(_share_cores(task, workers), pending, scheduler, workers):
                results[result.name] = result
                if progress:
                    progress(len(results), total, result, False)
    return [results[name] for name in names]


def _share_cores(task: GroupTask, workers: int) -> GroupTask:
    synthesizer = task.synthesizer
    settings = getattr(synthesizer, "settings", None)
    if settings is None or not dataclasses.is_dataclass(synthesizer):
        return task
    cores = max(1, (os.cpu_count() or 1) // workers)
    shared = dataclasses.replace(synthesizer, settings=dataclasses.replace(settings, cores=cores))
    return dataclasses.replace(task, synthesizer=shared)


def _run_on_dask(
    task: GroupTask, pending: Iterable[tuple[str, Any]], scheduler: str | None, workers: int
) -> Iterable[GroupResult]:
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=1, threads_per_worker=workers, processes=False, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futures = [client.submit(task, name, data, key=f"group-{name}", pure=False) for name, data in pending]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
