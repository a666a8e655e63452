"""Benchmark of the truncated-Poisson flow synthesizer: prints figures, is not a test.

Below the public API: times the flow sampler per group pair and its compiled models, apart from the group runner.

Part ``pair``: one state pair with about 1,000 sensitive cells (the anchor of ``../shared/ANCHORS.md``: 60
origins x 70 destinations, 1,009 cells, counts 1..7, simulated from the model), fitted by every NUTS
backend and set-up (nutpie low-rank / diagonal, PyMC's own sampler, numpyro if installed, the three
parameterizations with nutpie), 4 chains x (1,000 warm-up + 1,000). Prints compile and sampling seconds,
convergence on the identified quantities, ESS per second and the ratios to Stan and to PyMC's sampler.

Part ``national``: a simulated national table (about 3,000 counties in 51 states, 2,601 state pairs,
about 300,000 sensitive cells) through the whole pipeline, ``bsd.synthesize(table, bsd.Flows(...))`` with
default settings; total wall time, peak memory, fitting against risk time, compiled models, convergence.
``--states 15`` measures a smaller national-like table and extrapolates to the national size (labelled as an
extrapolation).

Part ``gate``: every pair of a smaller simulation fitted and gated under the gate policy before and after
(refits only, against lower-bound pairs at target_accept 0.95 and continued chains), in one run.

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/flows.py --part pair
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/flows.py --part national --states 15
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/flows.py --part gate --prior-states 8
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python bench/flows.py --part all

numpyro is not a dependency of bayessdc: ``.venv/bin/pip install numpyro`` to include it.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# One BLAS thread per process (parallelism comes from chains and groups). numpyro runs its chains in
# parallel only with one JAX device per chain: ask for four host devices before JAX is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

#: Stan 2.35 (PyStan 3.10), centred model, 4 chains x (1,000 + 1,000) one after another (ANCHORS.md).
STAN_ESS, STAN_SECONDS = 554.0, 69.0
STAN_ESS_PER_SECOND = STAN_ESS / STAN_SECONDS
NATIONAL = {"states": 51, "counties_per_state": 59.0, "scale": 0.00027}  # ~3,000 counties, ~300,000 cells
TARGET_TOTAL_SECONDS, TARGET_RISK_SECONDS = 30 * 60, 2 * 60


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min; {os.cpu_count()} cores)"


def _rule(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 100 - len(title)), flush=True)


def _table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]
    line = "  ".join(h.ljust(w) if k == 0 else h.rjust(w) for k, (h, w) in enumerate(zip(header, widths, strict=True)))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths, strict=True))))
    sys.stdout.flush()


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


# --------------------------------------------------------------------------------------------------
# Part 1: one state pair


def _fit_setup(label: str, group: Any, args: argparse.Namespace, **options: Any) -> dict[str, Any]:
    """Fit ``group`` with one backend/set-up through FlowSynthesizer.fit; return the figures."""
    from bayessdc.models.flows import COMPILED_MODELS, FlowSynthesizer
    from bayessdc.models.sampling import SamplerSettings, check_convergence

    backend = options.get("backend", "nutpie")
    settings = SamplerSettings(
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=args.cores,
        backend=backend,
        low_rank_mass_matrix=options.get("low_rank", True),
    )
    synthesizer = FlowSynthesizer(settings=settings, parameterization=options.get("parameterization", "marginal"))
    misses, compile_before = COMPILED_MODELS.misses, COMPILED_MODELS.compile_seconds
    compile_note = ""
    jit_seconds = 0.0
    if backend == "numpyro":
        # pm.sample's numpyro timer includes JAX's compilation: estimate it with a tiny run first.
        import dataclasses

        tiny = dataclasses.replace(synthesizer, settings=dataclasses.replace(settings, draws=10, tune=10))
        idata = tiny.fit(group, seed=args.seed)
        jit_seconds = _recorded_sampling_time(idata)
    start = time.perf_counter()
    idata = synthesizer.fit(group, seed=args.seed)
    wall = time.perf_counter() - start
    report = check_convergence(idata, var_names=[], derived=synthesizer.convergence_quantities(idata, group))
    if backend == "nutpie":
        compile_seconds = COMPILED_MODELS.compile_seconds - compile_before
        sampling = float(idata.attrs["sampling_seconds"])
        if COMPILED_MODELS.misses == misses:
            compile_note = "cached"
    else:
        # PyMC records the time of its sampling loop; the rest of pm.sample is compilation and set-up.
        sampling = _recorded_sampling_time(idata)
        compile_seconds = float(idata.attrs["sampling_seconds"]) - sampling
        if backend == "numpyro":
            sampling = max(sampling - jit_seconds, 1e-9)
            compile_seconds += jit_seconds
            compile_note = "est."
    return _pair_row(label, compile_seconds, compile_note, sampling, wall, report, idata)


def _recorded_sampling_time(idata: Any) -> float:
    """The sampling-loop time pm.sample records (sample_stats for PyMC, posterior/attrs for the JAX samplers)."""
    for attrs in (idata.sample_stats.attrs, idata.posterior.attrs, idata.attrs):
        if "sampling_time" in attrs:
            return float(attrs["sampling_time"])
    return float(idata.attrs["sampling_seconds"])


def _fit_unpadded(label: str, group: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The default model without the padding that lets groups share compiled code (nutpie, low-rank)."""
    from bayessdc.models.flows import COMPILED_MODELS, FlowSynthesizer
    from bayessdc.models.sampling import SamplerSettings, check_convergence

    settings = SamplerSettings(
        draws=args.draws, tune=args.tune, chains=args.chains, cores=args.cores, low_rank_mass_matrix=True
    )
    before = COMPILED_MODELS.compile_seconds
    start = time.perf_counter()
    synthesizer = FlowSynthesizer(settings=settings, pad=False)
    idata = synthesizer.fit(group, seed=args.seed)
    wall = time.perf_counter() - start
    compile_seconds = COMPILED_MODELS.compile_seconds - before
    quantities = FlowSynthesizer().convergence_quantities(idata, group)
    report = check_convergence(idata, var_names=[], derived=quantities)
    return _pair_row(label, compile_seconds, "", float(idata.attrs["sampling_seconds"]), wall, report, idata)


def _pair_row(
    label: str, compile_seconds: float, note: str, sampling: float, wall: float, report: Any, idata: Any
) -> dict[str, Any]:
    row = {
        "setup": label,
        "compile": compile_seconds,
        "compile_note": note,
        "sampling": sampling,
        "wall": wall,
        "max_r_hat": report.max_r_hat,
        "worst_r_hat": report.worst_r_hat,
        "min_ess": report.min_ess_bulk,
        "worst_ess": report.worst_ess_bulk,
        "divergences": report.divergences,
        "ess_per_s": report.min_ess_bulk / sampling,
        "passed": report.passed,
    }
    print(
        f"  {label}: compile {compile_seconds:.1f} s{' (' + note + ')' if note else ''}, sampling {sampling:.1f} s, "
        f"max r_hat {report.max_r_hat:.3f} ({report.worst_r_hat}), min bulk ESS {report.min_ess_bulk:.0f} "
        f"({report.worst_ess_bulk}), {report.divergences} divergences  [load {_load()}]",
        flush=True,
    )
    return row


def part_pair(args: argparse.Namespace) -> None:
    import importlib.util

    from bayessdc.models.flows import COMPILED_MODELS, padded_size, simulate_group

    _rule("Part 1: one state pair")
    group, _ = simulate_group(args.origins, args.destinations, args.cells, seed=args.seed)
    counts = group.y + 1
    print(
        f"group: {len(group.origins)} origins x {len(group.destinations)} destinations, {group.n_cells} sensitive "
        f"cells, counts {counts.min()}..{counts.max()} (mean {counts.mean():.2f}); simulate_group(seed={args.seed})"
    )
    print(
        f"sampling: {args.chains} chains x ({args.tune} warm-up + {args.draws}), {args.cores} cores for the chains "
        "(nutpie threads, PyMC processes, numpyro one JAX host device per chain); Stan ran its chains one after "
        "another on one core"
    )
    print(
        f"padding of the cached models: {len(group.origins)} origins + {len(group.destinations)} destinations "
        f"-> {padded_size(len(group.origins) + len(group.destinations))} effects"
    )
    print("convergence on the identified quantities (FlowSynthesizer.convergence_quantities: every cell's")
    print("log lambda, phi_beta, phi_gamma); compile = nutpie compile_pymc_model (COMPILED_MODELS), or the part of")
    print("pm.sample outside its sampling loop for PyMC / numpyro (numpyro adds JAX's jit, estimated by a 10+10 run)")
    print(f"load average at start of part 1: {_load()}", flush=True)

    have_numpyro = importlib.util.find_spec("numpyro") is not None
    setups: list[tuple[str, dict[str, Any]]] = [
        ("nutpie low-rank, marginal (default)", {}),
        ("nutpie diagonal, marginal", {"low_rank": False}),
        ("pymc NUTS, marginal", {"backend": "pymc"}),
    ]
    if have_numpyro:
        setups.append(("numpyro NUTS, marginal", {"backend": "numpyro"}))
    setups += [
        ("nutpie low-rank, centred", {"parameterization": "centred"}),
        ("nutpie low-rank, noncentred", {"parameterization": "noncentred"}),
    ]
    if args.setups:
        wanted = [s.strip() for s in args.setups.split(",")]
        setups = [(label, opt) for label, opt in setups if any(w in label for w in wanted)]
    rows = []
    for label, options in setups:
        try:
            rows.append(_fit_setup(label, group, args, **options))
        except Exception as err:  # noqa: BLE001 - a failing backend is a figure too
            print(f"  {label}: FAILED: {type(err).__name__}: {err}", flush=True)
    if not args.setups or "unpadded" in args.setups:
        rows.append(_fit_unpadded("nutpie low-rank, marginal, unpadded", group, args))

    pymc_rate = next((r["ess_per_s"] for r in rows if r["setup"].startswith("pymc")), None)
    header = [
        "setup",
        "compile s",
        "sampling s",
        "max r_hat",
        "min bulk ESS",
        "div",
        "ESS/s",
        "x Stan",
        "x PyMC",
        "gate",
    ]
    table = []
    for r in rows:
        table.append(
            [
                r["setup"],
                _fmt(r["compile"]) + (f" ({r['compile_note']})" if r["compile_note"] else ""),
                _fmt(r["sampling"]),
                f"{r['max_r_hat']:.3f}",
                f"{r['min_ess']:.0f} ({r['worst_ess']})",
                str(r["divergences"]),
                _fmt(r["ess_per_s"]),
                _fmt(r["ess_per_s"] / STAN_ESS_PER_SECOND),
                _fmt(r["ess_per_s"] / pymc_rate) if pymc_rate else "n/a",
                "pass" if r["passed"] else "FAIL",
            ]
        )
    _rule("Part 1 results (figures taken under load: 2 cores shared with other engineers)")
    _table(header, table)
    print(
        f"Stan anchor: {STAN_ESS:.0f} ESS / {STAN_SECONDS:.0f} s = {STAN_ESS_PER_SECOND:.1f} ESS/s (ANCHORS.md, "
        f"chains sequential on one core; the issue rounds it to 'about 10'); issue target: 10 x Stan = "
        f"{10 * STAN_ESS_PER_SECOND:.0f} ESS/s"
    )
    if not have_numpyro:
        print("numpyro: not installed (not a dependency): pip install numpyro to include it")

    # Compile reuse: a second group of similar size takes the compiled model from the cache.
    _rule("Compile reuse: a second group of similar size, same padded shape")
    other, _ = simulate_group(
        args.origins - 2, args.destinations - 2, args.cells - 30, seed=args.seed + 1, key=("C", "D")
    )
    print(
        f"second group: {len(other.origins)} origins x {len(other.destinations)} destinations, {other.n_cells} "
        f"cells; cache before: {COMPILED_MODELS.misses} compiled models, {COMPILED_MODELS.hits} hits"
    )
    first = next((r for r in rows if r["setup"].startswith("nutpie low-rank, marginal (default)")), None)
    second = _fit_setup("nutpie low-rank, marginal, 2nd group", other, args)
    rows_reuse = []
    for r in [x for x in (first, second) if x is not None]:
        rows_reuse.append(
            [
                r["setup"],
                _fmt(r["compile"]) + (f" ({r['compile_note']})" if r["compile_note"] else ""),
                _fmt(r["sampling"]),
                _fmt(r["wall"]),
                f"{r['max_r_hat']:.3f}",
                f"{r['min_ess']:.0f}",
                _fmt(r["ess_per_s"]),
            ]
        )
    _table(["fit", "compile s", "sampling s", "fit wall s", "max r_hat", "min ESS", "ESS/s"], rows_reuse)
    print(
        f"cache after: {COMPILED_MODELS.misses} compiled models ({COMPILED_MODELS.compile_seconds:.1f} s compiling), "
        f"{COMPILED_MODELS.hits} hits"
    )
    print(f"load average at end of part 1: {_load()}", flush=True)


def part_stan(args: argparse.Namespace) -> None:
    """Like for like with Stan on one simulated pair: the same model and prior, chains one after another on one
    core for both, the minimum bulk ESS over every cell's log-rate and over the two precisions, per CPU-second."""
    import dataclasses

    import arviz as az

    from bayessdc.models.flows import FLOW_SAMPLER_SETTINGS, FlowSynthesizer, named_priors, simulate_group

    _rule("Part 1b: against Stan, like for like (same pair, model and prior; one core each; CPU-seconds)")
    group, _ = simulate_group(args.origins, args.destinations, args.cells, seed=args.seed)
    print(f"pair: {len(group.origins)} x {len(group.destinations)}, {group.n_cells} cells, counts "
          f"{group.y.min() + 1}..{group.y.max() + 1}; load average {_load()}", flush=True)
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from flows_stan import run_stan
    except ImportError as err:  # pragma: no cover - depends on the machine
        print(f"Stan: {err}")
        run_stan = None

    def ours(prior: str, tune: int, draws: int) -> dict[str, Any]:
        settings = dataclasses.replace(FLOW_SAMPLER_SETTINGS, tune=tune, draws=draws, cores=1)
        synthesizer = FlowSynthesizer(priors=named_priors(prior), settings=settings)
        synthesizer.fit(simulate_group(4, 4, 8, seed=1)[0], seed=0)  # compile outside the timing
        cpu, wall = time.process_time(), time.perf_counter()
        idata = synthesizer.fit(group, seed=args.seed)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rates = synthesizer.log_rate(idata.posterior, group)
        ess_rate = az.ess(rates.to_dataset(), method="bulk")["log_lambda"].to_numpy()
        ess_prec = az.ess(idata.posterior[["phi_beta", "phi_gamma"]], method="bulk")
        return {
            "label": f"bayessdc compiled NUTS, {prior}, 4 x ({tune} + {draws})",
            "cpu": cpu, "wall": wall, "ess_rate": float(ess_rate.min()),
            "ess_prec": float(min(float(ess_prec[v]) for v in ("phi_beta", "phi_gamma"))),
            "divergences": int(idata.sample_stats["diverging"].sum()),
        }  # fmt: skip

    def stan(prior: str) -> dict[str, Any] | None:
        if run_stan is None:
            return None
        chosen = named_priors(prior)
        out = run_stan(group, phi_shape=chosen.phi_shape, phi_rate=chosen.phi_rate, seed=args.seed)
        return {
            "label": f"Stan (PyStan 3), centred, {prior}, 4 x (1000 + 1000)", "cpu": out["cpu_seconds"],
            "wall": out["sampling_seconds"], "ess_rate": out["min_ess_log_rate"], "ess_prec": out["min_ess_precision"],
            "divergences": out["divergences"],
        }  # fmt: skip

    runs = {}
    for prior in ("paper", "weakly-informative"):
        runs[("stan", prior)] = stan(prior)
        runs[("same", prior)] = ours(prior, 1000, 1000)
        runs[("default", prior)] = ours(prior, FLOW_SAMPLER_SETTINGS.tune, FLOW_SAMPLER_SETTINGS.draws)
    rows = []
    for (_kind, prior), r in runs.items():
        if r is None:
            continue
        reference = runs.get(("stan", prior))
        per_cpu_rate, per_cpu_prec = r["ess_rate"] / r["cpu"], r["ess_prec"] / r["cpu"]
        rows.append([
            r["label"], _fmt(r["cpu"]), _fmt(r["wall"]), f"{r['ess_rate']:,.0f}", f"{r['ess_prec']:,.0f}",
            str(r["divergences"]), _fmt(per_cpu_rate), _fmt(per_cpu_prec),
            _fmt(per_cpu_rate / (reference["ess_rate"] / reference["cpu"])) if reference else "n/a",
            _fmt(per_cpu_prec / (reference["ess_prec"] / reference["cpu"])) if reference else "n/a",
        ])  # fmt: skip
    _table(["run", "CPU s", "wall s", "min ESS log-rates", "min ESS precisions", "div", "ESS/CPU-s rates",
            "ESS/CPU-s prec.", "x Stan rates", "x Stan prec."], rows)
    print("target: at least 10 x Stan per core on the log-rates and the precisions (same prior); load average "
          f"{_load()}", flush=True)


# --------------------------------------------------------------------------------------------------
# Part 2: national scale


class _RssSampler:
    """Peak resident set size of this process (psutil, sampled every half second in a thread)."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


def _group_sizes(table: Any) -> Any:
    """Sensitive cells per (origin group, destination group), and each group's distinct origins/destinations."""
    sensitive = table[table["count"].between(1, 9)]
    keys = ["origin_group", "destination_group"]
    return sensitive.groupby(keys).agg(
        cells=("count", "size"),
        origins=("origin", "nunique"),
        destinations=("destination", "nunique"),
        max_count=("count", "max"),
    )


def _describe_table(table: Any, title: str) -> Any:
    import numpy as np

    sizes = _group_sizes(table)
    counties = len(set(table["origin"]) | set(table["destination"]))
    states = len(set(table["origin_group"]) | set(table["destination_group"]))
    pairs = table.groupby(["origin_group", "destination_group"]).ngroups
    cells = sizes["cells"].to_numpy()
    q = np.percentile(cells, [10, 25, 50, 75, 90, 99])
    bins = [1, 2, 11, 101, 1001, 10**9]
    hist = [int(((cells >= lo) & (cells < hi)).sum()) for lo, hi in zip(bins[:-1], bins[1:], strict=True)]
    print(
        f"{title}: {states} states, {counties:,} counties, {len(table):,} listed county pairs, {pairs:,} listed "
        f"state pairs, {int(cells.sum()):,} sensitive cells (counts 1..9) in {len(cells):,} groups"
    )
    print(
        f"  cells per group: min {cells.min()}, p10 {q[0]:.0f}, p25 {q[1]:.0f}, median {q[2]:.0f}, p75 {q[3]:.0f}, "
        f"p90 {q[4]:.0f}, p99 {q[5]:.0f}, max {cells.max()}, mean {cells.mean():.0f}; groups with 1 / 2-10 / "
        f"11-100 / 101-1000 / >1000 cells: {' / '.join(map(str, hist))}"
    )
    return sizes


def _shape_keys(sizes: Any) -> set[int]:
    from bayessdc.models.flows import padded_size

    return {padded_size(int(o) + int(d)) for o, d in zip(sizes["origins"], sizes["destinations"], strict=True)}


def part_national(args: argparse.Namespace) -> None:
    import dataclasses

    import pandas as pd

    import bayessdc as bsd
    from bayessdc.models.flows import (
        COMPILED_MODELS,
        FLOW_SAMPLER_SETTINGS,
        describe_priors,
        named_priors,
        simulate_flow_table,
    )
    from bayessdc.synthesis.runner import GroupResult

    _rule(f"Part 2: national-scale run ({args.states} states)")
    start = time.perf_counter()
    table = simulate_flow_table(args.states, args.counties_per_state, scale=args.scale, seed=args.seed)
    print(
        f"simulate_flow_table(n_states={args.states}, counties_per_state={args.counties_per_state}, "
        f"scale={args.scale}, seed={args.seed}) in {time.perf_counter() - start:.1f} s"
    )
    sizes = _describe_table(table, "realised table")
    workers = args.workers or os.cpu_count() or 1
    print(
        f"bsd.synthesize(table, bsd.Flows()): sampler backend {args.backend!r} ('auto': the compiled NUTS of "
        f"bayessdc.models.nuts), {FLOW_SAMPLER_SETTINGS.chains} x ({FLOW_SAMPLER_SETTINGS.tune:,} + "
        f"{FLOW_SAMPLER_SETTINGS.draws:,}), m = 5, {workers} workers; precision prior: "
        f"{describe_priors(named_priors(args.phi_prior))[:60]}..."
    )
    print(f"  (local dask cluster of threads: COMPILED_MODELS is shared in-process); load average: {_load()}")
    base = Path(tempfile.mkdtemp(prefix="bayessdc-bench-flows-", dir=args.tmpdir))
    out = base / "out"
    print(f"  output folder: {out}", flush=True)
    misses, compile_before = COMPILED_MODELS.misses, COMPILED_MODELS.compile_seconds
    rss_self_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    load_start = os.getloadavg()
    wall_start, clock_start = time.perf_counter(), time.time()
    release, failure = None, None
    with _RssSampler() as rss:
        try:
            release = bsd.synthesize(
                table,
                bsd.Flows(
                    workers=workers,
                    priors=named_priors(args.phi_prior),
                    settings=dataclasses.replace(FLOW_SAMPLER_SETTINGS, backend=args.backend),
                    scheduler=args.scheduler,
                    # the no-knowledge intruder's m refits per pair left out: the figures are the release's own
                    # pipeline, like for like with the earlier runs (it would add about m times the fits)
                    no_knowledge=False,
                ),
                m=5,
                seed=args.seed,
                out=out,
                allow_unconverged=not args.strict,
                progress=not args.quiet,
            )
        except (bsd.ConvergenceError, bsd.DisclosureRefused) as err:  # timed all the same, read from the store
            failure = err
    wall = time.perf_counter() - wall_start
    load_end = os.getloadavg()
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    risk = None
    if release is not None:  # the measures' figures, and the k-hat counts of the diagnostics
        table = release.measure_table().set_index(["measure", "subset"])["pooled"]
        risk = {"R_all": table.get(("intruder_correct", "all items")),
                "R_unq": table.get(("intruder_correct", "unique items")),
                "khat_over_0_7": release.diagnostics["importance_sampling"]["cells_over_threshold"]}  # fmt: skip
    # Each group's gate verdict comes from the Release (from the group runner's store when the gate stopped the
    # run and there is no Release). The per-group timings (fit, risk, attempts) are not in the Release: they
    # are read from the group runner's store through its own loader; a group was stored when its marker was.
    convergence = release.diagnostics.summary["groups"] if release is not None else {}
    store = out / "private" / "groups"
    records = []
    last_finished = clock_start
    for marker in sorted(store.glob("*.json")):
        name = marker.name[: -len(".json")]
        stored = GroupResult.load(store, name)
        summary, conv = stored.summary, convergence.get(name, stored.convergence)
        last_finished = max(last_finished, marker.stat().st_mtime)
        records.append(
            {
                "name": name,
                "fit": summary.get("fit_seconds", 0.0),
                "assess": summary.get("assess_seconds", 0.0),
                "sampling": summary.get("sampling_seconds") or 0.0,
                "attempts": summary.get("fit_attempts", 1),
                "passed": bool(conv.get("passed")),
                **{f"stage_{k}": v for k, v in summary.get("stage_seconds", {}).items()},
            }
        )
    groups = pd.DataFrame(records)
    sizes = sizes.copy()
    sizes["name"] = ["".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{o}__{d}") for o, d in sizes.index]
    groups = groups.merge(sizes.reset_index(drop=True), on="name", how="left")
    runner_wall = last_finished - clock_start
    compiled = COMPILED_MODELS.misses - misses
    compile_seconds = COMPILED_MODELS.compile_seconds - compile_before
    converged = int(groups["passed"].sum())
    extended = int((groups["attempts"] > 1).sum())
    fit_total, assess_total = float(groups["fit"].sum()), float(groups["assess"].sum())
    busy = fit_total + assess_total

    _rule(f"Part 2 results, {args.states} states (figures taken under load: 2 cores shared with other engineers)")
    rows = [
        ["total wall time of bsd.synthesize", f"{wall:,.1f} s ({wall / 60:.1f} min)"],
        ["  groups phase (start to last group stored)", f"{runner_wall:,.1f} s"],
        ["  assembly and writing after the groups", f"{wall - runner_wall:,.1f} s"],
        ["fitting, summed over groups (fit_seconds)", f"{fit_total:,.1f} s"],
        ["  of which sampling (last attempt, sampling_seconds)", f"{groups['sampling'].sum():,.1f} s"],
        ["  of which compiling (COMPILED_MODELS)", f"{compile_seconds:,.1f} s in {compiled} compiled models"],
        ["risk, summed over groups (assess_seconds)", f"{assess_total:,.1f} s"],
        ["risk step, wall (sum / workers)", f"{assess_total / workers:,.1f} s"],
        ["  per-group mean (assess_seconds)", f"{assess_total / max(len(groups), 1):,.3f} s"],
        ["groups converged / extended / not converged", f"{converged} / {extended} / {len(groups) - converged}"],
        ["  fit attempts per group (max)", str(int(groups["attempts"].max()))],
        ["R_all", _fmt(risk["R_all"], 4) if risk else "n/a (run stopped at the convergence gate)"],
        ["R_unq", _fmt(risk.get("R_unq"), 4) if risk and risk.get("R_unq") is not None else "n/a"],
        ["cells with k-hat > 0.7", str(risk["khat_over_0_7"]) if risk else "n/a"],
        ["peak RSS during the run (psutil, sampled every 0.5 s)", f"{rss.peak / 2**20:,.0f} MiB"],
        ["ru_maxrss self (process high-water mark) / children", f"{rss_self:,.0f} / {rss_children:,.0f} MiB"],
        ["  ru_maxrss self before the run", f"{rss_self_before / 1024:,.0f} MiB"],
        ["load average at start / end", f"{load_start[0]:.2f} / {load_end[0]:.2f} (1 min)"],
    ]
    _table(["figure", "value"], rows)
    if failure is not None:
        where = "convergence gate" if isinstance(failure, bsd.ConvergenceError) else "disclosure policy"
        print(f"bsd.synthesize stopped at the {where}: {failure}")
    print(
        "peak memory: the psutil figure is the resident set of this process during bsd.synthesize (dask workers are "
        "threads of this process); ru_maxrss is the process's high-water mark since it started (includes part 1 "
        "when --part all)"
    )
    by_size = []
    bins = [(1, 1), (2, 10), (11, 100), (101, 1000), (1001, 10**9)]
    for lo, hi in bins:
        sel = groups[(groups["cells"] >= lo) & (groups["cells"] <= hi)]
        if len(sel):
            by_size.append(
                [
                    f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}",
                    str(len(sel)),
                    _fmt(sel["fit"].mean(), 2),
                    _fmt(sel["fit"].max(), 1),
                    _fmt(sel["fit"].sum(), 0),
                    _fmt(sel["assess"].mean(), 3),
                    str(int((sel["attempts"] > 1).sum())),
                    str(int((~sel["passed"]).sum())),
                ]
            )
    print("\nper-group figures by size (seconds; fit includes compiles, waits for the compile lock, extensions):")
    _table(["cells", "groups", "fit mean", "fit max", "fit sum", "risk mean", "extended", "not conv."], by_size)
    stages = [c for c in groups.columns if c.startswith("stage_")]
    if stages:
        print("\nwhere the time goes (seconds summed over groups, in the workers; then the steps after the groups):")
        stage_rows = [[c[len("stage_"):], _fmt(groups[c].sum(), 1), _fmt(groups[c].sum() / workers, 1)] for c in stages]
        stage_rows.append(["after the groups: assembly, utility, report, writing", "", _fmt(wall - runner_wall, 1)])
        stage_rows.append(["whole run (wall)", "", _fmt(wall, 1)])
        _table(["stage", "sum over groups", "wall (sum / workers)"], stage_rows)
    slow = groups.sort_values("fit", ascending=False).head(5)
    print(
        "slowest groups: "
        + "; ".join(
            f"{r.name} ({int(r.cells)} cells, {r.fit:.1f} s, {int(r.attempts)} attempt(s))" for r in slow.itertuples()
        )
    )
    at_national = (args.states, args.counties_per_state, args.scale) == tuple(
        NATIONAL[k] for k in ("states", "counties_per_state", "scale")
    )
    if not at_national:
        _extrapolate(args, table, groups, wall, runner_wall, busy, compile_seconds, compiled, workers)
    else:
        ok = wall <= TARGET_TOTAL_SECONDS and converged == len(groups)
        print(
            f"\ntargets: whole run < {TARGET_TOTAL_SECONDS / 60:.0f} min with every group converged: "
            f"{'MET' if ok else 'NOT MET'}; risk step < {TARGET_RISK_SECONDS / 60:.0f} min: "
            f"{'MET' if assess_total / workers <= TARGET_RISK_SECONDS else 'NOT MET'}"
        )
    print(f"load average at end of part 2: {_load()}", flush=True)


def _extrapolate(
    args: argparse.Namespace,
    table: Any,
    groups: Any,
    wall: float,
    runner_wall: float,
    busy: float,
    compile_seconds: float,
    compiled: int,
    workers: int,
) -> None:
    """Predict the national run from this smaller one (clearly an extrapolation, not a measurement)."""
    import numpy as np

    from bayessdc.models.flows import simulate_flow_table

    _rule(f"EXTRAPOLATION to {NATIONAL['states']} states (not measured)")
    # The target is always the national table of the defaults, whatever the sizes of the measured run.
    national = simulate_flow_table(
        NATIONAL["states"], NATIONAL["counties_per_state"], scale=NATIONAL["scale"], seed=args.seed
    )
    nat = _describe_table(national, "national table (simulated, not fitted)")
    nat_cells = nat["cells"].to_numpy()
    cells = groups["cells"].to_numpy()
    # Per-group cost model from this run: mean fit (compile removed) and risk seconds per size bin, the bins
    # beyond the measured range scaled by cells from the largest measured bin.
    edges = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 10**9])
    fit_free = groups["fit"].to_numpy() * max(0.0, 1 - compile_seconds / max(groups["fit"].sum(), 1e-9))
    assess = groups["assess"].to_numpy()
    which = np.searchsorted(edges, cells, side="right") - 1
    nat_which = np.searchsorted(edges, nat_cells, side="right") - 1
    fit_pred = assess_pred = 0.0
    for b in np.unique(nat_which):
        here = nat_cells[nat_which == b]
        if (which == b).any():
            per_cell_fit = fit_free[which == b].sum() / cells[which == b].sum()
            per_cell_assess = assess[which == b].sum() / cells[which == b].sum()
            mean_fit = fit_free[which == b].mean()
            mean_assess = assess[which == b].mean()
            fit_pred += mean_fit * len(here) if b < 6 else per_cell_fit * here.sum()
            assess_pred += mean_assess * len(here) if b < 6 else per_cell_assess * here.sum()
        else:  # no measured group of this size: scale by cells from the nearest measured bin
            near = which[np.argmin(np.abs(which - b))]
            fit_pred += fit_free[which == near].sum() / cells[which == near].sum() * here.sum()
            assess_pred += assess[which == near].sum() / cells[which == near].sum() * here.sum()
    shapes_here, shapes_nat = _shape_keys(groups.set_index("name")), _shape_keys(nat)
    per_compile = compile_seconds / max(compiled, 1)
    compile_pred = per_compile * len(shapes_nat)
    efficiency = runner_wall / max(busy, 1e-9)  # wall seconds of the groups phase per summed task second
    groups_phase = (fit_pred + compile_pred + assess_pred) * efficiency
    after = (wall - runner_wall) * len(national) / max(len(table), 1)
    total = groups_phase + after
    risk_wall = assess_pred / workers
    naive_groups = wall * len(nat) / len(groups)
    naive_cells = wall * nat_cells.sum() / max(cells.sum(), 1)
    rows = [
        ["naive: this wall time x groups ratio", f"{naive_groups:,.0f} s ({naive_groups / 60:.0f} min)"],
        ["naive: this wall time x sensitive-cells ratio", f"{naive_cells:,.0f} s ({naive_cells / 60:.0f} min)"],
        ["per-size model: fitting (summed, compile removed)", f"{fit_pred:,.0f} s"],
        [
            "per-size model: compiling",
            f"{compile_pred:,.0f} s ({len(shapes_nat)} padded shapes, {len(shapes_here)} here, "
            f"{per_compile:.1f} s each)",
        ],
        ["per-size model: risk (summed)", f"{assess_pred:,.0f} s"],
        ["groups phase (sum x measured wall/busy ratio " + f"{efficiency:.2f})", f"{groups_phase:,.0f} s"],
        ["assembly and writing (scaled by table rows)", f"{after:,.0f} s"],
        ["EXTRAPOLATED national wall time", f"{total:,.0f} s ({total / 60:.0f} min)"],
        ["EXTRAPOLATED risk step (sum / workers)", f"{risk_wall:,.0f} s ({risk_wall / 60:.1f} min)"],
    ]
    _table(["extrapolated figure", "value"], rows)
    share = {
        "sampling and extensions": fit_pred,
        "compiling": compile_pred,
        "risk / PSIS": assess_pred,
        "assembly and writing": after / max(efficiency, 1e-9),
    }
    limit = max(share, key=share.get)
    print(
        "shares of the extrapolated work: "
        + ", ".join(f"{k} {100 * v / max(sum(share.values()), 1e-9):.0f}%" for k, v in share.items())
        + f"; the limit is {limit}"
    )
    smallest = int(cells.min())
    below = int((nat_cells < smallest).sum())
    ones = int((nat["max_count"] == 1).sum())
    print(
        f"caveats: {below} national groups are smaller than the smallest measured group ({smallest} cells) and were "
        f"scaled by cells, which misses their fixed cost; {ones} national groups have every count equal to 1 (y = 0 "
        "at the truncation bound), whose log lambda is barely identified: such groups with few origins or "
        "destinations can fail the gate and be refitted with 4x and 16x the draws (not modelled here)"
    )
    print(
        f"targets (extrapolated): whole run < {TARGET_TOTAL_SECONDS / 60:.0f} min: "
        f"{'likely met' if total <= TARGET_TOTAL_SECONDS else 'NOT met'}; risk step < "
        f"{TARGET_RISK_SECONDS / 60:.0f} min: {'likely met' if risk_wall <= TARGET_RISK_SECONDS else 'NOT met'}"
    )


# --------------------------------------------------------------------------------------------------
# Part 3: the precision prior


def _airport_groups(lower: int, upper: int) -> list[Any] | None:
    """The state pairs of the bundled airport table (``notebooks/data``), as the notebook builds them."""
    import pandas as pd

    from bayessdc.models.flows import split_groups, validate_flows

    folder = Path(__file__).resolve().parents[1] / "notebooks" / "data"
    if not (folder / "airport_od_counts_2001.csv").exists():
        return None
    flows = pd.read_csv(folder / "airport_od_counts_2001.csv")
    states = pd.read_csv(folder / "airports_states.csv", keep_default_na=False, na_values=[""])
    state_of = states.set_index("iata")["state"]
    flows["origin_group"] = flows["origin"].map(state_of)
    flows["destination_group"] = flows["destination"].map(state_of)
    flows = flows.dropna(subset=["origin_group", "destination_group"]).reset_index(drop=True)
    return split_groups(validate_flows(flows), lower=lower, upper=upper)[0]


def part_priors(args: argparse.Namespace) -> None:
    """Every state pair of the airport table and of a national-like simulation, fitted once (no refit) with the
    default settings under each precision prior: how many pass the gate, and why the others do not."""
    import numpy as np

    from bayessdc.models.flows import (
        FlowSynthesizer,
        describe_priors,
        named_priors,
        simulate_flow_table,
        split_groups,
        validate_flows,
    )
    from bayessdc.models.sampling import check_convergence

    _rule("Part 3: the precision prior (every pair fitted once at the default settings, no refit)")
    datasets = {}
    airports = _airport_groups(1, 9)
    if airports is None:
        print("airport table not found (notebooks/data): skipped")
    else:
        datasets["airports 2001 (bundled)"] = airports
    table = simulate_flow_table(args.prior_states, args.counties_per_state, scale=args.scale, seed=args.seed)
    datasets[f"simulated, {args.prior_states} states"] = split_groups(validate_flows(table))[0]
    rows = []
    for label, groups in datasets.items():
        for prior in ("weakly-informative", "paper"):
            synthesizer = FlowSynthesizer(priors=named_priors(prior))
            start = time.perf_counter()
            failed, divergent, floor_failed, r_hats = 0, 0, 0, []
            for group in groups:
                idata = synthesizer.fit(group, seed=args.seed)
                monitored = synthesizer.convergence_quantities(idata, group)
                report = check_convergence(idata, var_names=[], derived=monitored)
                r_hats.append(report.max_r_hat)
                if not report.passed:
                    failed += 1
                    floor_failed += int(not group.y.any())
                divergent += int(report.divergences > 0)
            seconds = time.perf_counter() - start
            rows.append([label, describe_priors(named_priors(prior)).split(" (shape")[0], str(len(groups)),
                         str(len(groups) - failed), str(failed), str(floor_failed), str(divergent),
                         _fmt(float(np.max(r_hats)), 3), _fmt(seconds, 0)])
            print(f"  {label}, {prior}: {len(groups) - failed} of {len(groups)} passed ({seconds:.0f} s)", flush=True)
    _table(["data", "prior", "pairs", "passed", "failed", "failed, all at bound", "with divergences",
            "max r_hat", "seconds"], rows)


def part_gate(args: argparse.Namespace) -> None:
    """Every state pair of a national-like simulation fitted and gated through the group runner, under the gate
    policy before and after issue 21's step 2: before, a pair that fails is refitted (4x the draws and twice the
    warm-up for r_hat or ESS, target_accept halfway to 1 for divergences); after, pairs with every count at the
    lower bound start at target_accept 0.95 and the first extension for r_hat or ESS continues the chains. Same
    pairs, seeds and cores, one after the other in this run; no synthesis or risk."""
    import dataclasses
    import tempfile

    from bayessdc.models.flows import FlowSynthesizer, simulate_flow_table, split_groups, validate_flows
    from bayessdc.models.sampling import ConvergenceCriteria
    from bayessdc.synthesis.runner import GroupTask

    class _Refit(FlowSynthesizer):
        """The policy before: no continuation (the runner refits)."""

        continue_fit = None

    _rule(f"Part 4: the gate policy, before and after ({args.prior_states} simulated states, every pair, 2 cores)")
    table = simulate_flow_table(args.prior_states, args.counties_per_state, scale=args.scale, seed=args.seed)
    groups = split_groups(validate_flows(table))[0]
    floor = sum(not g.y.any() for g in groups)
    cells = sum(g.n_cells for g in groups)
    print(f"{len(groups)} pairs, {cells:,} sensitive cells, {floor} with every count at the bound")
    FlowSynthesizer().fit(groups[0], seed=0)  # compile the sampler outside the timings
    shorter = dataclasses.replace(FlowSynthesizer().settings, draws=args.gate_draws)
    policies = {
        "before: refits only": _Refit(lower_bound_acceptance_factor=1),
        "after: bound pairs at 0.95, chains continued": FlowSynthesizer(),
        f"after, {args.gate_draws} kept draws per chain": FlowSynthesizer(settings=shorter),
    }
    rows = []
    for label, synthesizer in policies.items():
        synthesizer = dataclasses.replace(synthesizer, settings=dataclasses.replace(synthesizer.settings, cores=2))
        with tempfile.TemporaryDirectory() as folder:
            task = GroupTask(synthesizer, Path(folder), m=1, seed=args.seed, criteria=ConvergenceCriteria())
            start = time.perf_counter()
            results = [task(g.name, g) for g in groups]
            seconds = time.perf_counter() - start
        attempts = [r.summary["fit_attempts"] for r in results]
        draws = sum(r.summary["draws_per_chain"] for r in results)
        rows.append([label, _fmt(seconds, 1), str(sum(a > 1 for a in attempts)), str(sum(attempts) - len(attempts)),
                     str(sum(not r.converged for r in results)), f"{draws / len(results):,.0f}"])  # fmt: skip
        print(f"  {label}: {seconds:.1f} s, load {_load()}", flush=True)
    _table(["policy", "fit and gate (s)", "pairs with more sampling", "extra attempts", "not converged",
            "mean kept draws per chain"], rows)  # fmt: skip


# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--part", choices=["pair", "stan", "national", "priors", "gate", "all"], default="all")
    parser.add_argument("--seed", type=int, default=0)
    pair = parser.add_argument_group("part 1: one state pair")
    pair.add_argument("--origins", type=int, default=60)
    pair.add_argument("--destinations", type=int, default=70)
    pair.add_argument("--cells", type=int, default=1009)
    pair.add_argument("--draws", type=int, default=1000)
    pair.add_argument("--tune", type=int, default=1000)
    pair.add_argument("--chains", type=int, default=4)
    pair.add_argument("--cores", type=int, default=2, help="cores for the chains (default 2)")
    pair.add_argument(
        "--setups",
        default="",
        help="comma-separated substrings of set-up labels to run (default: all), e.g. 'nutpie low-rank,pymc,unpadded'",
    )
    nat = parser.add_argument_group("part 2: national scale")
    nat.add_argument("--states", type=int, default=NATIONAL["states"], help="states (default 51: 2,601 pairs)")
    nat.add_argument(
        "--counties-per-state",
        type=float,
        default=NATIONAL["counties_per_state"],
        help="mean counties per state (default 59: ~3,000)",
    )
    nat.add_argument(
        "--scale", type=float, default=NATIONAL["scale"], help="migration level (default: ~300,000 cells at 51)"
    )
    nat.add_argument("--workers", type=int, default=None, help="groups at once (default: cores)")
    nat.add_argument("--strict", action="store_true", help="stop at the convergence gate (default: allow_unconverged)")
    nat.add_argument("--quiet", action="store_true", help="no per-group progress lines on stderr")
    nat.add_argument("--tmpdir", default=None, help="parent of the temporary output folder")
    nat.add_argument(
        "--phi-prior", default="weakly-informative", help="precision prior: weakly-informative, paper or SHAPE,RATE"
    )
    nat.add_argument(
        "--backend", default="auto", help="auto (the compiled NUTS), or nutpie / pymc (the PyMC model: before)"
    )
    nat.add_argument("--prior-states", type=int, default=8, help="states of the simulations of parts 3, 4 (default 8)")
    nat.add_argument("--gate-draws", type=int, default=500, help="kept draws per chain of part 4's third policy")
    nat.add_argument("--scheduler", default=None, help="address of a running dask scheduler (default: local threads)")
    args = parser.parse_args(argv)

    print("bayessdc flow benchmark (bench/flows.py): figures taken under load on a shared machine")
    print(
        f"  {time.strftime('%Y-%m-%d %H:%M:%S')}, python {sys.version.split()[0]}, {os.cpu_count()} cores shared "
        "with other engineers"
    )
    print(
        f"  OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; load average at start: {_load()}",
        flush=True,
    )
    start = time.perf_counter()
    if args.part in ("pair", "all"):
        part_pair(args)
    if args.part in ("stan", "all"):
        part_stan(args)
    if args.part in ("national", "all"):
        part_national(args)
    if args.part in ("priors", "all"):
        part_priors(args)
    if args.part in ("gate", "all"):
        part_gate(args)
    print(f"\nbenchmark finished in {time.perf_counter() - start:.0f} s; load average at end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
