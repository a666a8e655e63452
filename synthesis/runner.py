"""The part runner: independent parts of a fit run as picklable tasks, fanned out over dask, resumably.

Independent parts (the state pairs of the flow model, the chains of an exact sampler, the strata of any
model) are processed by one picklable ``task(name, part)`` each (:func:`run_parts`). Tasks fan out over
dask.distributed: a local cluster of threads by default (threads share the compiled models of the process,
and the samplers release the GIL), or an existing cluster given by its scheduler address. A store
(:class:`PartStore`) keeps each finished part as soon as it arrives; a rerun into the same folder loads the
finished parts instead of recomputing them.

:func:`run_groups` is the flow model's use of it: each group is fitted, checked, synthesized and assessed by
a :class:`GroupTask`, which stores its result under ``private/groups/`` itself (on a cluster, the output
folder must then be on a file system every worker sees).

Progress: a bar over the parts (:mod:`bayessdc.progress`, on a terminal only) and, for the groups, one log
record per group (:func:`log_progress`: INFO with its r_hat, ESS, divergences and time; WARNING for a group
that did not converge).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

import bayessdc.models.progress as _progress
from bayessdc.models.base import SupportsContinuation, SupportsSamplerSettings
from bayessdc.models.sampling import ConvergenceCriteria, check_convergence

from . import streams
from .datasets import draw_synthetic
from .output import atomic_path, write_inference_data, write_json
from .streams import Stream

__all__ = [
    "GroupResult",
    "GroupTask",
    "InferenceDataStore",
    "PartStore",
    "log_progress",
    "run_groups",
    "run_parts",
]

R = TypeVar("R")

_log = logging.getLogger(__name__)

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
        A group that fails the gate is refitted, at most ``max_extensions`` times: with ``extension_factor``
        times the draws (and twice the warm-up) when r_hat or ESS failed, with a higher ``target_accept`` when
        it diverged; the last fit is kept and judged. With ``max_extensions >= 2``, the first extension of a
        group that failed on r_hat or ESS alone continues its chains by as many draws again instead, when the
        synthesizer offers ``continue_fit(idata, data, draws, seed)`` (returning ``None`` where it cannot): the
        chains' own warm-up is kept and only the new draws are paid for; a later refit still gets the longer
        chains. Synthesizers without a ``settings`` dataclass are fitted once.
    """

    synthesizer: Any
    folder: Path
    m: int
    seed: int
    criteria: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    assess: Assessor | None = None
    max_extensions: int = 2
    extension_factor: int = 4

    def share_cores(self, workers: int) -> GroupTask:
        """This task with its sampler given an equal share of the cores, when ``workers`` groups run at once."""
        synthesizer = self.synthesizer
        if not isinstance(synthesizer, SupportsSamplerSettings) or not dataclasses.is_dataclass(synthesizer):
            return self
        settings = synthesizer.settings
        cores = max(1, (os.cpu_count() or 1) // workers)
        shared = dataclasses.replace(synthesizer, settings=dataclasses.replace(settings, cores=cores))
        return dataclasses.replace(self, synthesizer=shared)

    def _extended(self, settings: Any, report: Any, mixed_slowly: bool = False) -> Any:
        """The settings of the next attempt: a slowly mixing group (r_hat, ESS; or ``mixed_slowly`` at an earlier
        attempt, whose chains were continued) gets ``extension_factor`` times the draws and twice the warm-up; a
        group with divergences a smaller step (target_accept halfway to 1, Stan's advice), its draws unchanged
        when they were not also too few."""
        changes: dict[str, Any] = {}
        c = report.criteria
        if mixed_slowly or not (report.max_r_hat <= c.max_r_hat and report.min_ess_bulk >= c.min_ess_bulk):
            changes.update(draws=settings.draws * self.extension_factor, tune=settings.tune * 2)
        if report.divergences > c.max_divergences and hasattr(settings, "target_accept"):
            changes["target_accept"] = min(0.99, 1 - (1 - settings.target_accept) / 2)
        return dataclasses.replace(settings, **changes)

    def _check(self, synthesizer: Any, idata: Any, data: Any) -> Any:
        if hasattr(synthesizer, "convergence_quantities"):
            monitored = synthesizer.convergence_quantities(idata, data)
            return check_convergence(idata, self.criteria, var_names=[], derived=monitored)
        return check_convergence(idata, self.criteria)

    def __call__(self, name: str, data: Any) -> GroupResult:
        """Process one group and store its result; returns the result."""
        # the group's streams (children of stream(seed, name)): one fit seed per attempt, the datasets, the assessment
        fit_seeds = [streams.integer_seed(self.seed, name, Stream.FIT, a) for a in range(self.max_extensions + 1)]
        start = time.perf_counter()
        synthesizer = self.synthesizer
        attempts = []
        sampling_seconds = check_seconds = 0.0
        continued = None
        for attempt in range(self.max_extensions + 1):
            fit_start = time.perf_counter()
            was_continued = continued is not None
            idata = continued if was_continued else synthesizer.fit(data, seed=fit_seeds[attempt])
            check_start = time.perf_counter()
            report = self._check(synthesizer, idata, data)
            sampling_seconds += check_start - fit_start
            check_seconds += time.perf_counter() - check_start
            attempts.append(report.to_dict())
            settings = synthesizer.settings if isinstance(synthesizer, SupportsSamplerSettings) else None
            if report.passed or attempt == self.max_extensions or settings is None:
                break
            continued = None
            # continue only where a refit with fresh starts remains possible afterwards (a chain stuck in one
            # mode keeps its mode when continued)
            if attempt == 0 and self.max_extensions >= 2 and report.divergences <= report.criteria.max_divergences:
                start_more = time.perf_counter()
                if isinstance(synthesizer, SupportsContinuation):
                    continued = synthesizer.continue_fit(idata, data, settings.draws, fit_seeds[attempt + 1])
                sampling_seconds += time.perf_counter() - start_more
            if continued is not None:
                _log.info("group %s: continuing its chains by %d draws each (%s)", name, settings.draws,
                          "; ".join(_problems(attempts[-1])))  # fmt: skip
                continue
            # continued chains that still fail: the refit also gets the longer chains the first fit needed
            extended = self._extended(settings, report, mixed_slowly=was_continued)
            synthesizer = dataclasses.replace(synthesizer, settings=extended)
            _log.info("group %s: refitting with %d draws per chain, target_accept %.3g (%s)", name,
                      synthesizer.settings.draws, synthesizer.settings.target_accept,
                      "; ".join(_problems(attempts[-1])) or "failed the convergence gate")  # fmt: skip
        fit_seconds = time.perf_counter() - start
        write_start = time.perf_counter()
        write_inference_data(idata, self.folder / f"{name}.posterior.nc")
        synth_start = time.perf_counter()
        synthetic = draw_synthetic(synthesizer, idata, data, self.m, streams.rng(self.seed, name, Stream.DATASETS))
        items = pd.DataFrame(
            {f"synthetic_{k}": synthetic.sel(synthetic=k).to_numpy() for k in synthetic["synthetic"].to_numpy()}
        )
        summary: dict[str, Any] = {
            "fit_seconds": fit_seconds,
            "fit_attempts": len(attempts),
            "draws_per_chain": int(idata.posterior.sizes["draw"]),
            "sampling_seconds": idata.attrs.get("sampling_seconds"),
            "stage_seconds": {
                "fit": sampling_seconds,
                "convergence": check_seconds,
                "write_posterior": synth_start - write_start,
                "synthesize": time.perf_counter() - synth_start,
            },
            "posterior_draws_used": synthetic["posterior_draw"].to_numpy().tolist(),
        }
        if self.assess is not None:
            start = time.perf_counter()
            assessment = streams.rng(self.seed, name, Stream.ASSESS)
            table, figures = self.assess(synthesizer, idata, data, synthetic, assessment)
            items = pd.concat([items, table.reset_index(drop=True)], axis=1)
            summary.update(figures)
            summary["assess_seconds"] = time.perf_counter() - start
            summary["stage_seconds"]["risk"] = summary["assess_seconds"]
        result = GroupResult(name, items, report.to_dict(), summary)
        result.save(self.folder)
        return result


def log_progress(done: int, total: int, result: GroupResult, skipped: bool) -> None:
    """Log one finished group: an INFO record with its figures, and a WARNING when it did not converge.

    The INFO record reads ``[done/total] name: r_hat 1.003, ESS 812, div 0, 4.2 s`` (``resumed`` instead of the
    time for a group loaded from an earlier run) and carries the figures as attributes ``group``, ``r_hat``,
    ``ess_bulk``, ``divergences``, ``seconds`` (``None`` when resumed), ``converged`` and ``resumed``.

    Parameters
    ----------
    done, total
        Groups finished so far, and in all.
    result
        The group's result.
    skipped
        Whether the group was loaded from an earlier run rather than fitted.
    """
    conv = result.convergence
    seconds = None if skipped else float(result.summary.get("fit_seconds", 0.0))
    figures = {
        "group": result.name,
        "r_hat": float(conv["max_r_hat"]),
        "ess_bulk": float(conv["min_ess_bulk"]),
        "divergences": int(conv["divergences"]),
        "seconds": seconds,
        "converged": result.converged,
        "resumed": skipped,
    }
    status = "resumed" if skipped else f"{seconds:.1f} s"
    _log.info(
        "[%*d/%d] %s: r_hat %.3f, ESS %.0f, div %d, %s",
        len(str(total)), done, total, result.name, figures["r_hat"], figures["ess_bulk"], figures["divergences"],
        status, extra=figures,
    )  # fmt: skip
    if not result.converged:
        problems = "; ".join(_problems(conv)) or "failed the convergence gate"
        _log.warning("group %s did not converge: %s", result.name, problems, extra=figures)


def _problems(convergence: dict[str, Any]) -> list[str]:
    """The gate's reasons for a group's failure, from its stored figures."""
    criteria = convergence.get("criteria") or {}
    out = []
    if "max_r_hat" in criteria and not convergence["max_r_hat"] <= criteria["max_r_hat"]:
        out.append(f"r_hat {convergence['max_r_hat']:.3f} > {criteria['max_r_hat']}")
    if "min_ess_bulk" in criteria and convergence["min_ess_bulk"] < criteria["min_ess_bulk"]:
        out.append(f"bulk ESS {convergence['min_ess_bulk']:.0f} < {criteria['min_ess_bulk']:.0f}")
    if "max_divergences" in criteria and convergence["divergences"] > criteria["max_divergences"]:
        out.append(f"{convergence['divergences']} divergent transitions")
    return out


class PartStore(Protocol):
    """Where finished parts are kept: :func:`run_parts` loads those it finds and saves the others as they finish."""

    def load(self, name: str) -> Any | None:
        """The stored result of part ``name``, or ``None`` when it has not finished."""

    def save(self, name: str, result: Any) -> None:
        """Keep the result of part ``name`` (called in the client process, as each part arrives)."""


@dataclass(frozen=True)
class InferenceDataStore:
    """Keeps each part's ``InferenceData`` as ``<folder>/<name>.nc`` (written atomically: a file is a finished part).

    Parameters
    ----------
    folder
        Where the parts are kept (created when the first one is saved).
    """

    folder: Path

    def load(self, name: str) -> Any | None:
        """The stored posterior of part ``name`` read into memory, or ``None``."""
        import arviz as az

        path = Path(self.folder) / f"{name}.nc"
        if not path.exists():
            return None
        with az.rc_context({"data.load": "eager"}):
            return az.from_netcdf(str(path), engine="h5netcdf")

    def save(self, name: str, result: Any) -> None:
        """Write ``<folder>/<name>.nc``.

        netCDF cannot hold a coordinate of mixed Python types (levels such as ``1, 2, "<missing>"``): such
        coordinates are written as text, and the caller restores them after :meth:`load`.
        """
        result = result.copy()
        for group in result.groups():
            dataset = getattr(result, group)
            mixed = {k: v.astype(str) for k, v in dataset.coords.items() if v.dtype == object}
            if mixed:
                setattr(result, group, dataset.assign_coords(mixed))
        with atomic_path(Path(self.folder) / f"{name}.nc") as tmp:
            result.to_netcdf(str(tmp), engine="h5netcdf")


def run_parts(
    task: Callable[[str, Any], R],
    parts: Sequence[tuple[str, Any]],
    *,
    store: PartStore | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, str, R, bool], None] | None = None,
    label: str = "parts",
) -> list[R]:
    """Run ``task(name, part)`` on every part not stored yet and return all results, in the order of ``parts``.

    Parameters
    ----------
    task
        A picklable callable. When the parts run at once on a local cluster and the task has a method
        ``share_cores(workers)``, that method's result (the task with its share of the cores) runs instead.
    parts
        ``(name, part)`` pairs with unique names.
    store
        Finished parts from earlier runs (loaded, not recomputed); each new result is saved there as soon
        as it arrives. ``None``: nothing is stored.
    scheduler
        ``None`` for a local dask cluster of threads, ``"synchronous"`` to run in this thread (debugging,
        tests), or the address of a running dask scheduler (``tcp://host:8786``), whose workers must be
        able to import bayessdc.
    workers
        Parts processed at once on the local cluster (default: the number of cores; with one worker or one
        part the tasks run in this thread).
    progress
        Called after each part as ``progress(done, total, name, result, resumed)``; ``None`` for silence.
    label
        What the parts are, for the progress bar (shown on a terminal when :mod:`bayessdc.progress` is on;
        the parts of earlier runs count as done).

    Returns
    -------
    list
        The results of ``task``, one per part.
    """
    names = [name for name, _ in parts]
    if len(set(names)) != len(names):
        raise ValueError("part names must be unique")
    results: dict[str, Any] = {}
    total = len(parts)

    with _progress.bar(total, label) as bar:

        def finished(name: str, result: Any, resumed: bool) -> None:
            results[name] = result
            if store is not None and not resumed:
                store.save(name, result)
            bar.advance()
            if progress:
                progress(len(results), total, name, result, resumed)

        for name in names:
            stored = store.load(name) if store is not None else None
            if stored is not None:
                finished(name, stored, True)
        pending = [(name, part) for name, part in parts if name not in results]
        _log.debug("%d %s: %d done in an earlier run, %d to run", total, label, total - len(pending), len(pending))
        workers = workers or os.cpu_count() or 1
        if scheduler == "synchronous" or (scheduler is None and (workers == 1 or len(pending) == 1)):
            for name, part in pending:
                finished(name, task(name, part), False)
        elif pending:
            share = getattr(task, "share_cores", None)
            for name, result in _run_on_dask(share(workers) if share else task, pending, scheduler, workers):
                finished(name, result, False)
    return [results[name] for name in names]


def _run_on_dask(
    task: Callable[[str, Any], Any], pending: Sequence[tuple[str, Any]], scheduler: str | None, workers: int
) -> Iterator[tuple[str, Any]]:
    """``(name, result)`` of every pending part as it finishes, on a local cluster or at ``scheduler``."""
    from dask.distributed import Client, LocalCluster, as_completed

    if scheduler is None:
        # The scheduler always serves HTTP (health routes); by default on port 8787, warning "Port 8787 is
        # already in use" when another run holds it. A free port on the loopback interface, no dashboard.
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=workers,
            processes=False,
            dashboard_address=None,
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        )
    else:
        cluster = nullcontext(scheduler)
    run = uuid.uuid4().hex[:12]  # task keys unique to this run: a shared scheduler may serve several runs
    with cluster as address, Client(address) as client:
        # The parts go to the workers once, as data (scatter), not inside a task graph of thousands of tasks.
        names_, parts_ = zip(*pending, strict=True)
        # hash=False: a part's key is its own, never its content's token, which dask takes for a dataclass from
        # its fields alone; two groups' fitted synthesizers (the same settings, other trees) would share one key
        # and one of them would draw every group's datasets
        scattered = client.scatter(list(parts_), hash=False)
        futures = client.map(task, names_, scattered, key=[f"part-{name}-{run}" for name in names_], pure=False)
        names = {future.key: name for future, (name, _) in zip(futures, pending, strict=True)}
        for future, result in as_completed(futures, with_results=True):
            yield names[future.key], result


def run_groups(
    task: GroupTask,
    groups: Sequence[tuple[str, Any]],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, GroupResult, bool], None] | None = log_progress,
) -> list[GroupResult]:
    """Run ``task`` on every group not finished yet and return all results, in the order of ``groups``.

    The flow model's use of :func:`run_parts`: the task stores each group's result (and posterior) under
    its folder itself; finished groups found there are loaded, not refitted.

    Parameters
    ----------
    task
        The per-group task; its folder holds finished groups from earlier runs.
    groups
        ``(name, data)`` pairs with unique names.
    scheduler
        ``None`` for a local dask cluster of threads, ``"synchronous"`` to run in this thread (debugging,
        tests), or the address of a running dask scheduler (``tcp://host:8786``; the output folder must be
        on a file system every worker sees).
    workers
        Groups processed at once on the local cluster (default: the number of cores). When several run
        at once, each sampler gets an equal share of the cores.
    progress
        Called after each group as ``progress(done, total, result, resumed)`` (default :func:`log_progress`:
        a log record per group); ``None`` for silence. The bar over the groups is shown either way, on a
        terminal when :mod:`bayessdc.progress` is on.

    Returns
    -------
    list of GroupResult
    """
    if len({name for name, _ in groups}) != len(groups):
        raise ValueError("group names must be unique")
    task.folder.mkdir(parents=True, exist_ok=True)
    each = (lambda done, total, name, result, resumed: progress(done, total, result, resumed)) if progress else None
    store = _GroupStore(task.folder)
    return run_parts(task, groups, store=store, scheduler=scheduler, workers=workers, progress=each, label="groups")


@dataclass(frozen=True)
class _GroupStore:
    """The groups' results as :class:`GroupResult` stores them (the task saves them, in the worker)."""

    folder: Path

    def load(self, name: str) -> GroupResult | None:
        return GroupResult.load(self.folder, name)

    def save(self, name: str, result: GroupResult) -> None:
        """Nothing: :class:`GroupTask` has stored the result beside the group's posterior."""
