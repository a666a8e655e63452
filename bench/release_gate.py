"""Benchmark of the release gate of the Dirichlet-process synthesizers (issue 19): verdict and wall time.

Below the public API: ``--reference`` codes the records with ``bayessdc.models.categorical`` to time
NPBayesImputeCat on exactly the records the run fitted.

Usage::

    python bench/release_gate.py                       # every part below, one after another
    python bench/release_gate.py --parts dpmpm-6208 dpmpm-vlss
    python bench/release_gate.py --parts dp-areal-ce   # the long one (target: under 30 minutes)

Parts (each through ``bsd.synthesize`` with the synthesizer's defaults: the release gate decides):

``dpmpm-6208``       DPMPM on ``simulate_ce_like(n=6208, seed=1)``, county synthesized: target under 5 minutes
``dpmpm-1m``         the same at n = 1,000,000: target under 5 minutes
``dpmpm-vlss``       DPMPM on the real VLSS 1997 individuals (``../shared/data``), commune synthesized
``dp-areal-ce``      DP-areal on the CE-like data (40 patterns x 133 counties, K = 50): target under 10 minutes
                     (issue 47), zero divergences; ``--sampler nuts`` for NUTS, ``--sampler gibbs nuts`` for both
                     in one invocation (a table of the two at the end)

Each prints the release gate's verdict, its largest ratio of between-chain standard error to tolerance (and
which figure), the parameter gate's verdict (a diagnostic), the seconds of the whole run (fit, gate, m = 20
datasets, risk with the default 100 inherent repetitions, utility), peak memory of the process and the load
average. Each part runs in its own process, so that its peak memory is its own.

Latest run (2026-12-02, session 45, one invocation for the three DPMPM parts, ``BAYESSDC_RLIB=<rlib> python
bench/release_gate.py --reference --parts dpmpm-6208 dpmpm-1m dpmpm-vlss``, seed 1, alone on the machine; the gate's
datasets of the 1,000,000 records drawn and measured as counts per cell, the parameter gate's pattern conditionals by
matmul). Ratio: NPBayesImputeCat's seconds for the same chains and iterations on 2 cores, against this run's sampling
(and its whole run: gate, datasets, risk, utility). dp-areal-ce is session 44's run (its path is unchanged):

================  ========  ========================================  =======  ======  =========  ===============
part              verdict   largest SE / tolerance (figure)           chains   wall    peak mem   x NPBayesImputeCat
================  ========  ========================================  =======  ======  =========  ===============
dpmpm-6208        passed    0.867 (false_match_rate[gender+county])   8        22 s    1.14 GB    1.9 (0.8)
dpmpm-1m          passed    0.675 (expected_match_risk[g+a+county])   8 -> 32  319 s   4.93 GB    53.8 (30.7)
dpmpm-vlss        passed    0.603 (table_deviation[three-way])        8        54 s    1.95 GB    3.7 (1.4)
dp-areal-ce       FAILED    0.449 (expected_match_risk[g+a+county])   4        974 s   1.18 GB    (no reference)
================  ========  ========================================  =======  ======  =========  ===============

dp-areal-ce under the Gibbs sampler, the DP-areal's default since issue 47 (2026-12-04, ``python bench/release_gate.py
--parts dp-areal-ce``, seed 1, alone on the machine, 4 chains in threads): passed, largest SE / tolerance 0.936
(pmse_ratio), 4 chains, 0 divergences, 79.8 s, peak memory 540 MB; the parameter gate (a diagnostic) failed with
max r_hat 2.14 (an expected log rate: the chains sit in different configurations of the mixture, on which the
released figures agree). The row above is NUTS's; ``--sampler nuts`` run right after the Gibbs run (2026-12-04, the
same seed, alone): refused, 89 divergent transitions (the stopping rule stops: more chains do not remove them),
largest SE / tolerance 0.363, 1,266.7 s, peak memory 1.41 GB.

The machine was slower this session than the last: the DPMPM sampled 2.28 ms per iteration and core at 1,000,000
records (2.07 in session 44), and dpmpm-6208, whose path this session did not change, took 22 s (16 s before).
dpmpm-1m alone, earlier the same day (``--parts dpmpm-1m``, the gate's counts in batches of 20 datasets): 286.4 s, the
same 32 chains (forecast 23 after 8, 24 added); in an invocation of all four parts (batches of 7), 319.4 s. So the
5-minute target was met once (286 s) and missed in both invocations with the other parts (319 s). Of a
1,000,000-record run, the sampling is about 182 s at this machine's speed; the gate's 1,600 datasets about 25 + 16 ms
each (one core) as counts per cell, against 46 + 30 ms as records.
dp-areal-ce with no component centred (2026-12-02, the same settings, ``leading_components`` 0): 2 divergences, max
r_hat 1.29, 204 leapfrog steps per draw, 2,155 s: refused as well, and slower.

Session 44's run (one invocation of all four parts, the datasets measured from their codes): dpmpm-6208 16 s, dpmpm-1m
312 s, dpmpm-vlss 49 s, dp-areal-ce 974 s, the same verdicts, chains and largest ratios.

The same run before (session 43, the gate's datasets as data frames, one after another, the pMSE by scikit-learn's
L-BFGS): dpmpm-6208 50 s, dpmpm-1m 820 s, dpmpm-vlss 138 s, dp-areal-ce 940 s; the verdicts, chains and largest
ratios the same. dpmpm-1m: the stopping rule forecast 22 chains after 8 and added 24 (x1.5); 160,000 iterations are
about 165 s of sampling (2.07 ms per iteration and core), the gate's 1,600 datasets of 1,000,000 records most of the
rest, then the policy's second draw (pattern conditioning, after full conditioning failed 3 of 5 criteria); the
part alone again after ``long_frame`` (the released datasets' table built column by column): 320.6 s, the same
chains and figures. The 5-minute target is missed by 12-21 s.
dp-areal-ce: the figures were precise enough (0.449) but the chains had 7 divergent transitions at target_accept 0.9,
so the gate refused and the stopping rule added no chain ("more chains do not remove divergences"). The run of
2026-11-24 below, with PyMC's packed Cholesky factor of ``Sigma_phi`` and the same settings, had none (three runs):
the scale-free covariance (``models/dp_areal/lkj.py``), which removed the demo table's funnel, is not yet free of
divergences on this table at 0.9 with 10 centred components.

Runs of 2026-11-24 (``python bench/release_gate.py --parts ...``, seed 1, each part alone on the machine
unless said; load average at the end of each part):

================  ========  ========================================  ======  =========  ======  ========
part              verdict   largest SE / tolerance (figure)           chains  r_hat      wall    peak mem
================  ========  ========================================  ======  =========  ======  ========
dpmpm-6208        passed    0.90 (table_deviation[one-way])           8       1.295      64 s    1.15 GB
dpmpm-1m          FAILED    1.76 (attribute_disclosures), 25 needed   8       1.716      200 s   3.6 GB
dpmpm-vlss        FAILED    1.60 (pmse), 21 needed                    8       1.49       199 s   2.2 GB
... --chains 24   passed    0.82 (pmse)                               24      1.406      595 s   5.6 GB
dp-areal-ce       passed    0.68 (expected_match_risk[gender+county]) 4       1.233      975 s   1.0 GB
================  ========  ========================================  ======  =========  ======  ========

(load 1.0-1.8; dp-areal-ce with ``--draws 500 --tune 500``, 0 divergences: 1,977 s in an earlier run beside
other work at load 3.0-3.3, same figures.)

Since the named random streams and the stopping rule (2026-11-27, ``--parts dpmpm-vlss --seed S``, alone on the
machine): dpmpm-vlss passes at the default 8 chains for seeds 1, 2 and 3 (largest SE / tolerance 0.61
table_deviation[one-way], 0.77 pmse_ratio, 0.81 table_deviation[three-way]; 104-107 s, 2.2 GB; the default
disclosure policy met, 5 of 5, under full conditioning), so the stopping rule adds no chain there. Where the
gate does fail on precision the pipeline adds the chains it forecasts (``stopping_rule`` in the printed JSON):
the same VLSS run with a stricter ``ReleaseGatePolicy(utility_tolerance=0.06)`` failed at 8 chains on
table_deviation[one-way], forecast 9, added 6 (x1.5) and passed at 14 chains; 203 s, 4.5 GB.

The r_hat column is the parameter gate's (a diagnostic), which fails everywhere: the regimes. Where the release
gate fails, the chains' disagreement reaches the released figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("dpmpm-6208", "dpmpm-1m", "dpmpm-vlss", "dp-areal-ce")
VLSS = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "d2_vietnam_vlss1997_individuals.csv"
CE_KNOWN = [["gender", "county"], ["gender", "age", "county"]]


def _vlss_frame():
    import pandas as pd

    if not VLSS.exists():
        raise SystemExit(f"dpmpm-vlss needs {VLSS.resolve()} (../shared/data beside the repository; see its README)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import dpmpm as bench_dpmpm  # the coding of notebooks/dpmpm_ce.ipynb

    frame = bench_dpmpm.vlss_frame()
    assert isinstance(frame, pd.DataFrame)
    return frame


def reference_figures(frame, roles: dict, release_or_error, seconds: float, cores: int = 2) -> dict:
    """NPBayesImputeCat 0.5 timed on the same coded records, scaled to the chains and iterations this run sampled.

    The reference runs one chain per process; given the run's ``cores``, it would run that many chains at once, so
    the seconds it needs for the run's chains are ``chains x iterations x (its seconds per iteration) / cores``.
    It is timed over a few iterations after 5 untimed ones (40 at 1,000,000 records, 1,000 below 40,000), as
    ``bench/dpmpm.py --reference`` times it. Two ratios: against this run's sampling wall time, and against its whole
    wall time (gate, datasets, risk and utility included, for which the reference is given nothing).
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import reference_dpmpm as ref

    from bayessdc.models.categorical import prepare_categorical

    missing = ref.reference_unavailable()
    if missing:
        return {"reference": f"not run: {missing}"}
    posteriors = release_or_error.diagnostics.posteriors
    fits = list(posteriors.values()) if hasattr(posteriors, "values") else [posteriors]
    iterations = sum(int(f.posterior.sizes["chain"]) * int(f.attrs["iterations_per_chain"]) for f in fits)
    sampling = sum(float(f.attrs["sampling_seconds"]) for f in fits)
    data = prepare_categorical(frame, roles["synthesize"], roles["keep"])
    timed = 40 if data.n_records > 40_000 else 1000
    run = ref.run_reference(data.codes, data.variables, data.n_levels, timed, warmup=5)
    per_iteration = run.seconds / run.iterations
    reference_seconds = per_iteration * iterations / cores
    return {
        "reference_seconds_per_1000_iterations": round(1000 * per_iteration, 2),
        "bayessdc_sampling_seconds_per_1000_iterations_per_core": round(1000 * sampling * cores / iterations, 3),
        "iterations_sampled": iterations,
        "reference_seconds_same_iterations": round(reference_seconds, 1),
        "ratio_to_reference_sampling": round(reference_seconds / sampling, 1),
        "ratio_to_reference_whole_run": round(reference_seconds / seconds, 1),
    }


def run_part(
    part: str, seed: int, draws: int = 1000, tune: int = 1000, chains: int | None = None, reference: bool = False,
    sampler: str = "gibbs",
) -> dict:
    """One part in this process: the run, its verdict and figures (and NPBayesImputeCat's, with ``reference``)."""
    import bayessdc as bsd

    if part.startswith("dpmpm"):
        if part == "dpmpm-vlss":
            frame = _vlss_frame()
            roles = {"synthesize": ["commune"], "keep": ["sex", "age_group", "education", "insurance"]}
            known = [["sex", "commune"], ["sex", "age_group", "commune"]]
        else:
            frame = bsd.examples.ce_like(n=6208 if part == "dpmpm-6208" else 1_000_000, seed=1)
            roles = {"synthesize": ["county"], "keep": ["gender", "income", "age"]}
            known = CE_KNOWN
        recipe = bsd.DPMPM(known=known, risk_records=0)
        if chains is not None:
            recipe.settings = bsd.GibbsSettings(chains=chains)
    else:
        frame = bsd.examples.ce_like(n=6208, seed=1)
        roles = {"synthesize": ["county"], "keep": ["gender", "income", "age"]}
        recipe = bsd.DPAreal(K=50, known=CE_KNOWN)  # the Gibbs sampler at its defaults
        if sampler == "nuts":
            recipe.settings = bsd.SamplerSettings(draws=draws, tune=tune, chains=4, target_accept=0.9)
    start = time.perf_counter()
    try:
        release = bsd.synthesize(frame, recipe, **roles, m=20, seed=seed, progress=True)
    except bsd.ConvergenceError as err:
        release = err
    summary = release.diagnostics.summary
    seconds = time.perf_counter() - start
    gate = summary["release_gate"]
    judged = {k: f for k, f in gate["figures"].items() if f.get("tolerance")}
    worst = max(judged, key=lambda k: judged[k]["between_chain_se"] / judged[k]["tolerance"])
    figures = {
        "part": part,
        "records": len(frame),
        "release_gate": "passed" if gate["passed"] else "FAILED",
        "chains": gate["chains"],
        "stopping_rule": {k: gate.get("stopping_rule", {}).get(k) for k in ("started_with", "rounds", "stopped")},
        "datasets_per_chain": gate["datasets_per_chain"],
        "largest_se_over_tolerance": round(judged[worst]["between_chain_se"] / judged[worst]["tolerance"], 3),
        "figure": worst,
        "chains_needed": gate.get("chains_needed"),
        "divergences": gate.get("divergences"),
        "parameter_gate": "passed" if summary["parameter_gate"]["passed"] else "failed",
        "max_r_hat": round(summary["max_r_hat"], 3),
        "seconds": round(seconds, 1),
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if reference and part.startswith("dpmpm"):
        figures.update(reference_figures(frame, roles, release, seconds))
        figures["load_average_after_reference"] = [round(x, 2) for x in os.getloadavg()]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sampler", nargs="+", choices=("gibbs", "nuts"), default=["gibbs"],
                        help="dp-areal-ce: the Gibbs sampler at the recipe's defaults (default), NUTS, or both one "
                        "after the other in this invocation (--sampler gibbs nuts)")
    parser.add_argument("--draws", type=int, default=1000, help="dp-areal-ce: NUTS draws per chain (default 1000)")
    parser.add_argument("--tune", type=int, default=1000, help="dp-areal-ce: NUTS warm-up per chain (default 1000)")
    parser.add_argument("--chains", type=int, default=None, help="DPMPM parts: chains (default: the recipe's, 8)")
    parser.add_argument("--reference", action="store_true",
                        help="DPMPM parts: time NPBayesImputeCat 0.5 on the same records (R, $BAYESSDC_RLIB)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a part in a child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_part(args.one, args.seed, args.draws, args.tune, args.chains, args.reference,
                                  args.sampler[0])), flush=True)
        return
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    runs = [(part, s) for part in args.parts for s in (args.sampler if part == "dp-areal-ce" else ["gibbs"])]
    results = []
    for part, sampler in runs:
        label = part if part != "dp-areal-ce" or len(args.sampler) == 1 else f"{part} ({sampler})"
        print(f"--- {label} (load average {os.getloadavg()[0]:.2f})", flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--one", part, "--seed", str(args.seed), "--draws", str(args.draws),
             "--tune", str(args.tune), "--sampler", sampler]
            + (["--chains", str(args.chains)] if args.chains else [])
            + (["--reference"] if args.reference else []),
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        progress = [line for line in done.stderr.splitlines() if ": " in line and "Warning" not in line]
        print("\n".join(progress[-12:]), flush=True)
        if done.returncode != 0 or not lines:
            print(done.stderr[-2000:], flush=True)
            continue
        figures = json.loads(lines[-1])
        results.append((label, figures))
        print(json.dumps(figures, indent=1), flush=True)
    if len(results) > 1:  # the parts side by side, as measured in this invocation
        widths = {"chains": 6, "divergences": 11, "SE/tol": 7, "seconds": 8, "peak MB": 8}
        print(f"\n{'part':<24} {'verdict':<8} " + " ".join(f"{h:>{w}}" for h, w in widths.items()))
        for label, f in results:
            print(f"{label:<24} {f['release_gate']:<8} {f['chains']:>6} {str(f['divergences']):>11} "
                  f"{f['largest_se_over_tolerance']:>7} {f['seconds']:>8} {f['peak_memory_mb']:>8}")


if __name__ == "__main__":
    main()
