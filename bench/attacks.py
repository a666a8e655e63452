"""The attacks against a control set on 30,000 records and 10 columns, m = 5, beside anonymeter's own run.

Below the public API: builds the attack measures' input (``bayessdc.measures.MeasureInput`` with a control set)
for synthetic data made here rather than by a synthesizer, and calls the functions of ``bayessdc.risk.attacks``
for the predicates and targets the measures draw and for the singling-out figure in anonymeter's form.

Data: the UCI Adult extract (``../shared/data/c1_adult_cps1994.csv``, "?" read as missing), 10 columns (age and
hours per week numeric, 8 categorical), shuffled with the seed: 30,000 training records and 6,000 control
records. The synthetic datasets come from a stand-in for a synthesizer that memorises: each synthetic record is a
training record drawn at random whose values are each kept with probability ``--keep`` (0.8) and otherwise
replaced by the value of another random training record, m = 5 datasets of 30,000 records.

Ours: the five attack measures (singling out, linkability, inference with each column a secret, distance to
the closest record and distance ratio) at their defaults, 500 attacks; wall time and peak memory (target: under
60 s on 2 cores). Anonymeter 1.1 (Giomi et al. 2023) runs in its own virtual environment, made by this script
(``python -m venv`` and ``pip install anonymeter``; skipped with a message where it cannot be installed), on the
same records, columns, split, secrets and attack counts, and on the same random draws: its singling-out evaluator
judges our predicates (its query generation replaced by ours; its counts on the training and control records,
its control size factor and its risk are its own), its linkability and inference evaluators attack our targets
(the training and control records our measures drew). Two independent draws of 500 attacks would put a figure
outside the other's 95% interval about one time in six by chance alone (their difference has twice the
variance); ``--anonymeter-draws`` lets anonymeter draw its own predicates and targets all the same.

Each of our figures is shown with anonymeter's 95% interval and each of anonymeter's with ours, per dataset and
pooled (both tools' successes and attacks summed over the datasets, judged by ``attack_rates``, whose formulas
are checked on anonymeter's own per-dataset counts). Singling out is shown twice: as our measure states it (the
rates of the predicates made, the control count scaled by the model fitted to the predicates' control counts),
which differs from anonymeter's by design, and in anonymeter's form (``compatibility="anonymeter"``: the rates
over the predicates asked for, the control factor ``(n_control + 1) / (n_training + 1)``), which must agree. The
per-dataset lines below give the success rates and the control size factors: ours, anonymeter's form,
anonymeter 1.1's, and anonymeter's fit given the successes (its counting fixed).

    .venv/bin/python bench/attacks.py [--m 5] [--seed 0] [--keep 0.5] [--no-anonymeter] [--anonymeter-draws]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bayessdc.measures import AttackSettings, MeasureInput, compute_measures  # noqa: E402
from bayessdc.measures.attacks import attack_plan  # noqa: E402
from bayessdc.risk.attacks import COUNT_COLUMNS, attack_rates, inference, linkability, singling_out  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"
COLUMNS = ["age", "workclass", "education", "marital_status", "occupation", "relationship", "race", "sex",
           "hours_per_week", "native_country"]  # fmt: skip
ATTACKS = ["singling_out", "linkability", "inference", "distance_to_closest_record", "distance_ratio"]

# Runs in anonymeter's environment: reads the job, runs each evaluator per dataset, writes the counts and risks.
# With shared draws, the singling-out evaluator is given our predicates (its query generation replaced; the rest
# is its own: the counts on the training and control records, its control size factor, its risk) and the
# linkability and inference evaluators our targets (the training and control records attacked, all of them).
ANONYMETER_JOB = textwrap.dedent("""
    import functools, json, operator, sys, time, warnings
    import numpy as np, pandas as pd, polars as pl
    import anonymeter.evaluators
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
    from anonymeter.evaluators import singling_out_evaluator as so

    warnings.filterwarnings("ignore")
    job = json.load(open(sys.argv[1]))
    read = lambda name: pd.read_csv(f"{job['folder']}/{name}.csv")
    training, control = read("training"), read("control")
    np.random.seed(job["seed"])
    shared = job["shared"]
    GENERATE = so._generate_singling_out_queries
    OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le,
           ">=": operator.ge}
    out = []

    def expression(predicate):
        parts = []
        for column, op, value in predicate:
            if value is None:
                parts.append(pl.col(column).is_null() if op == "==" else pl.col(column).is_not_null())
            else:
                parts.append(OPS[op](pl.col(column), value))
        return functools.reduce(operator.and_, parts)

    def counted_factor(e, queries):
        # anonymeter's own fit (10 sizes x 5 subsamples, its curve_fit from its start) given the successes
        sizes, successes = [], []
        for n_rows in np.linspace(min(1000, len(e._control)), len(e._control), 10).astype(int):
            for _ in range(5):
                counts = so._evaluate_queries(df=e._control.sample(n_rows, with_replacement=False), queries=queries)
                successes.append(sum(1 for c in counts if c == 1))
                sizes.append(n_rows)
        model = so._fit_model(sizes=np.array(sizes), successes=np.array(successes))
        return float(model(len(e._ori)) / model(len(e._control)))

    def row(attack, subset, dataset, e, seconds, **extra):
        risk, results = e.risk(), e.results()
        out.append({"attack": attack, "subset": subset, "dataset": dataset, "risk": risk.value,
                    "lower": risk.ci[0], "upper": risk.ci[1], "seconds": seconds,
                    "training": results.attack_rate.value, "control": results.control_rate.value,
                    "attacks": results.n_attacks_ori, "successes": float(results.n_success),
                    "control_attacks": results.n_attacks_control, "control_successes": float(results.n_control),
                    "baseline_attacks": results.n_attacks_baseline, "baseline_successes": float(results.n_baseline),
                    **extra})

    for dataset in range(1, job["m"] + 1):
        synthetic = read(f"synthetic_{dataset}")
        for mode in ("univariate", "multivariate"):
            start = time.perf_counter()
            e = SinglingOutEvaluator(training, synthetic, n_attacks=job["n_attacks"], n_cols=job["n_cols"],
                                     control=control, seed=job["seed"] + dataset)
            given = [expression(p) for p in job["predicates"][mode][str(dataset)]] if shared else None
            made = []

            def generate(given=given, made=made, **kwargs):
                made.extend(given if given is not None else GENERATE(**kwargs))
                return list(made)

            so._generate_singling_out_queries = generate
            e.evaluate(mode=mode)
            seconds = time.perf_counter() - start
            raw = len(so._evaluate_queries_and_return_successful(df=e._control, queries=made))
            row("singling_out", mode, dataset, e, seconds, control_raw=raw,
                correction=float(e._n_control) / raw if raw else float("nan"),
                counted_correction=counted_factor(e, made), predicates=len(made),
                training_records=len(e._ori), control_records=len(e._control))
        split = tuple(job["split"])
        start = time.perf_counter()
        if shared:
            t, c = job["targets"]["linkability"][str(dataset)]
            e = LinkabilityEvaluator(training.iloc[t], synthetic, aux_cols=split, n_attacks=len(t),
                                     n_neighbors=job["n_neighbors"], control=control.iloc[c])
        else:
            e = LinkabilityEvaluator(training, synthetic, aux_cols=split, n_attacks=job["n_attacks"],
                                     n_neighbors=job["n_neighbors"], control=control)
        e.evaluate(n_jobs=-1)
        row("linkability", " | ".join("+".join(s) for s in split), dataset, e, time.perf_counter() - start)
        for secret in job["secrets"]:
            start = time.perf_counter()
            aux = [c for c in job["columns"] if c != secret]
            regression = secret in job["numeric"]
            if shared:
                t, c = job["targets"]["inference"][str(dataset)]
                e = InferenceEvaluator(training.iloc[t], synthetic, aux_cols=aux, secret=secret, n_attacks=len(t),
                                       regression=regression, control=control.iloc[c])
            else:
                e = InferenceEvaluator(training, synthetic, aux_cols=aux, secret=secret, n_attacks=job["n_attacks"],
                                       regression=regression, control=control)
            row("inference", secret, dataset, e.evaluate(n_jobs=-1), time.perf_counter() - start)
        print(f"    anonymeter: dataset {dataset} done", flush=True)
    json.dump(out, open(job["out"], "w"))
""")


def load(n: int, control: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = pd.read_csv(DATA, na_values="?")[COLUMNS]
    frame = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return frame.iloc[:n].reset_index(drop=True), frame.iloc[n : n + control].reset_index(drop=True)


def memorising(training: pd.DataFrame, m: int, keep: float, seed: int) -> pd.DataFrame:
    """m datasets of training records whose values are each kept with probability ``keep``, else replaced by
    another random training record's."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 9001]))
    n = len(training)
    frames = []
    for k in range(m):
        out = training.iloc[rng.integers(n, size=n)].reset_index(drop=True)
        for column in COLUMNS:
            replace = rng.random(n) >= keep
            values = out[column].to_numpy(copy=True)
            values[replace] = training[column].to_numpy()[rng.integers(n, size=int(replace.sum()))]
            out[column] = values
        frames.append(out.assign(synthetic=k + 1))
    return pd.concat(frames, ignore_index=True)


def ours(data: MeasureInput) -> tuple[dict, dict[str, float], float, float]:
    """Every attack measure, timed one by one; the total wall time and the peak traced memory (MiB)."""
    tracemalloc.start()
    seconds, measured = {}, {}
    for name in ATTACKS:
        start = time.perf_counter()
        measured.update(compute_measures(data, [name]))
        seconds[name] = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return measured, seconds, sum(seconds.values()), peak / 2**20


def anonymeter_env(path: Path) -> Path | None:
    """The anonymeter environment's python, made when absent (``None`` with a message when it cannot be)."""
    python = path / "bin" / "python"
    check = [str(python), "-c", "import anonymeter"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"  making anonymeter's environment in {path} (python -m venv; pip install anonymeter) ...", flush=True)
    steps = [[sys.executable, "-m", "venv", str(path)], [str(python), "-m", "pip", "install", "-q", "anonymeter>=1,<2"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  anonymeter skipped: {' '.join(step[:4])} failed:\n{textwrap.indent(done.stderr[-1500:], '    ')}")
            return None
    return python if subprocess.run(check, capture_output=True).returncode == 0 else None


def run_anonymeter(python: Path, training, control, synthetic, plan: dict, seed: int) -> tuple[pd.DataFrame, float]:
    with tempfile.TemporaryDirectory() as folder:
        training.to_csv(f"{folder}/training.csv", index=False)
        control.to_csv(f"{folder}/control.csv", index=False)
        for dataset, frame in synthetic.groupby("synthetic"):
            frame.drop(columns="synthetic").to_csv(f"{folder}/synthetic_{dataset}.csv", index=False)
        job = {"folder": folder, "out": f"{folder}/out.json", "seed": seed, **plan}
        Path(f"{folder}/job.json").write_text(json.dumps(job))
        Path(f"{folder}/job.py").write_text(ANONYMETER_JOB)
        start = time.perf_counter()
        subprocess.run([str(python), f"{folder}/job.py", f"{folder}/job.json"], check=True)
        seconds = time.perf_counter() - start
        return pd.DataFrame(json.loads(Path(job["out"]).read_text())), seconds


def shared_draws(data: MeasureInput) -> tuple[dict, dict, pd.DataFrame]:
    """Our predicates (per mode and dataset) and targets (per attack and dataset), as the measures draw them, and
    the singling-out figures in anonymeter's form (``compatibility="anonymeter"``: the same predicates)."""
    plan = attack_plan(data)
    s = plan.settings
    predicates, compatible = {}, []
    for mode in ("univariate", "multivariate"):
        table = singling_out(data.original, data.synthetic, data.holdout, plan.auxiliary, within=plan.singling_out,
                             mode=mode, n_attacks=s.n_attacks, n_cols=s.n_cols, seed=data.seed,
                             compatibility="anonymeter")  # fmt: skip
        predicates[mode] = {str(k): v for k, v in table.attrs["predicates"].items()}
        compatible.append(table.assign(subset=mode))
    link = linkability(data.original, data.synthetic, data.holdout, plan.split, n_attacks=s.n_attacks,
                       n_neighbors=s.n_neighbors, seed=data.seed)
    infer = inference(data.original, data.synthetic, data.holdout, plan.secrets, plan.auxiliary,
                      n_attacks=s.n_attacks, tolerance=s.tolerance, seed=data.seed)
    targets = {"linkability": {str(k): v for k, v in link.attrs["targets"].items()},
               "inference": {str(k): v for k, v in infer.attrs["targets"].items()}}
    return predicates, targets, pd.concat(compatible, ignore_index=True)


def our_rows(measured: dict, compatible: pd.DataFrame) -> pd.DataFrame:
    """Our risk per (attack, subset, dataset) with its interval; singling out also in anonymeter's form."""
    rows = []
    tables = [(a, measured[a].details) for a in ("singling_out", "linkability", "inference")]
    for attack, details in [*tables, ("singling_out (anonymeter's form)", compatible)]:
        for _, r in details.iterrows():
            rows.append({"attack": attack, "subset": r["subset"], "dataset": int(r["dataset"]), "risk": r["risk"],
                         "lower": r["risk_lower"], "upper": r["risk_upper"], "training": r["training"],
                         "control": r["control"], "correction": r.get("control_correction", np.nan),
                         "predicates": r.get("predicates", np.nan)})  # fmt: skip
    return pd.DataFrame(rows)


def pooled_anonymeter(theirs: pd.DataFrame) -> pd.DataFrame:
    """Anonymeter's figures with a row ``dataset`` 0: its counts summed over the datasets and judged by
    ``attack_rates`` (as ours are pooled); its own per-dataset risks are checked against ``attack_rates`` of its
    counts, our formulas."""
    rows, gap = [], 0.0
    for (attack, subset), group in theirs.groupby(["attack", "subset"], sort=False):
        table = attack_rates(group[list(COUNT_COLUMNS)])
        per = table[table["dataset"] != 0].set_index("dataset")
        mine = group.set_index("dataset")
        gap = max(gap, float(np.nanmax(np.abs(per[["risk", "risk_lower", "risk_upper"]].to_numpy(float)
                                              - mine[["risk", "lower", "upper"]].to_numpy(float)))))  # fmt: skip
        p = table[table["dataset"] == 0].iloc[0]
        rows.append({"attack": attack, "subset": subset, "dataset": 0, "risk": p["risk"], "lower": p["risk_lower"],
                     "upper": p["risk_upper"], "training": p["training"], "control": p["control"]})  # fmt: skip
    print(f"  our formulas on anonymeter's counts give its risks and intervals to {gap:.1e}")
    return pd.concat([theirs, pd.DataFrame(rows)], ignore_index=True)


def compare(mine: pd.DataFrame, theirs: pd.DataFrame) -> pd.DataFrame:
    theirs = pooled_anonymeter(theirs)
    form = theirs[theirs["attack"] == "singling_out"].assign(attack="singling_out (anonymeter's form)")
    theirs = pd.concat([theirs, form], ignore_index=True)
    both = mine.merge(theirs, on=["attack", "subset", "dataset"], suffixes=("", "_anonymeter"))
    both["ours in theirs"] = (both["risk"] >= both["lower_anonymeter"] - 1e-9) & (
        both["risk"] <= both["upper_anonymeter"] + 1e-9)  # fmt: skip
    both["theirs in ours"] = (both["risk_anonymeter"] >= both["lower"] - 1e-9) & (
        both["risk_anonymeter"] <= both["upper"] + 1e-9)  # fmt: skip
    print("\n  risk per dataset (0: the m datasets pooled, successes and attacks summed, for both tools)")
    print(f"  {'attack':32s} {'subset':30s} {'d':>2s} {'ours':>6s} {'95% interval':>15s}   {'anonymeter':>10s} "
          f"{'95% interval':>15s}  ours in theirs / theirs in ours")  # fmt: skip
    for _, r in both.iterrows():
        print(f"  {r['attack']:32s} {str(r['subset'])[:30]:30s} {r['dataset']:2d} {r['risk']:6.3f} "
              f"[{r['lower']:5.3f}, {r['upper']:5.3f}]   {r['risk_anonymeter']:10.3f} "
              f"[{r['lower_anonymeter']:5.3f}, {r['upper_anonymeter']:5.3f}]  "
              f"{'yes' if r['ours in theirs'] else 'NO':>3s} / {'yes' if r['theirs in ours'] else 'NO'}")
    print("\n  singling out per dataset: predicates (ours / anonymeter's), training and control success rates "
          "(ours, ours in anonymeter's form / anonymeter's) and the control size factors")
    mine_rates = mine.set_index(["attack", "subset", "dataset"])
    for _, r in theirs[(theirs["attack"] == "singling_out") & (theirs["dataset"] > 0)].iterrows():
        o = mine_rates.loc[("singling_out", r["subset"], r["dataset"])]
        c = mine_rates.loc[("singling_out (anonymeter's form)", r["subset"], r["dataset"])]
        print(f"  {r['subset']:13s} {r['dataset']:2d}  predicates {o['predicates']:3.0f} / {r['predicates']:3.0f}  "
              f"training {o['training']:.3f}, {c['training']:.3f} / {r['training']:.3f}   control {o['control']:.3f}, "
              f"{c['control']:.3f} / {r['control']:.3f}   factor: ours {o['correction']:.3f}, anonymeter's form "
              f"{c['correction']:.4f}, anonymeter 1.1 {r['correction']:.4f}, its fit given the successes "
              f"{r['counted_correction']:.4f}")  # fmt: skip
    agree = both["ours in theirs"] & both["theirs in ours"]
    for attack, group in both.assign(agree=agree).groupby("attack", sort=False):
        print(f"  {attack}: {int(group['agree'].sum())} of {len(group)} figures each inside the other's interval")
    return both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30_000, help="training records")
    parser.add_argument("--control", type=int, default=6_000, help="control records")
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--keep", type=float, default=0.8, help="probability a synthetic value is its record's own")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-anonymeter", action="store_true")
    parser.add_argument("--anonymeter-draws", action="store_true",
                        help="anonymeter draws its own predicates and targets (not ours)")
    parser.add_argument("--anonymeter-env", type=Path, default=Path(tempfile.gettempdir()) / "anonymeter-env")
    args = parser.parse_args()

    training, control = load(args.n, args.control, args.seed)
    synthetic = memorising(training, args.m, args.keep, args.seed)
    print(f"Adult: {len(training):,} training and {len(control):,} control records, {len(COLUMNS)} columns; "
          f"m = {args.m} synthetic datasets of {args.n:,} records (each value its record's own with probability "
          f"{args.keep}); {os.cpu_count()} cores, BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    data = MeasureInput(synthetic, training, released=COLUMNS, holdout=control, seed=args.seed)
    measured, seconds, total, peak = ours(data)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    defaults = AttackSettings()
    print(f"\nbayessdc's attack measures (defaults: {defaults.n_attacks} attacks, {defaults.n_neighbors} neighbours, "
          f"{defaults.n_cols} columns per predicate):")  # fmt: skip
    for name in ATTACKS:
        print(f"  {name:28s} {seconds[name]:6.2f} s")
    print(f"  total {total:.2f} s wall (target 60 s); peak traced memory {peak:.0f} MiB; "
          f"process peak RSS {rss:.0f} MiB")
    for name in ATTACKS:
        summary = measured[name].summary()
        for _, r in summary.iterrows():
            refs = measured[name].references.set_index(["subset", "reference"])
            main = refs.loc[(r["subset"], "pooled_risk")] if "pooled_risk" in measured[name].reference_names() else \
                refs.loc[(r["subset"], "holdout")]  # fmt: skip
            label = "pooled risk" if "pooled_risk" in measured[name].reference_names() else "holdout"
            print(f"  {name:28s} {str(r['subset'])[:30]:30s} mean {r['pooled']:.3f} worst {r['worst']:.3f}; "
                  f"{label} {main['value']:.3f} [{main['lower']:.3f}, {main['upper']:.3f}]")
    if args.no_anonymeter:
        return
    python = anonymeter_env(args.anonymeter_env)
    if python is None:
        return
    predicates, targets, compatible = shared_draws(data)
    numeric = [c for c in COLUMNS if pd.api.types.is_numeric_dtype(training[c])]
    plan = attack_plan(data)
    job = {"m": args.m, "n_attacks": 500, "n_cols": 3, "n_neighbors": plan.settings.n_neighbors, "columns": COLUMNS,
           "secrets": plan.secrets, "numeric": numeric, "split": [list(s) for s in plan.split],
           "shared": not args.anonymeter_draws, "predicates": predicates, "targets": targets}  # fmt: skip
    draws = "its own predicates and targets" if args.anonymeter_draws else "our predicates and targets"
    print(f"\nanonymeter ({python}), the same inputs, {draws}:", flush=True)
    theirs, their_seconds = run_anonymeter(python, training, control, synthetic, job, args.seed)
    by_attack = theirs.groupby("attack")["seconds"].sum()
    print("  " + ", ".join(f"{a} {s:.1f} s" for a, s in by_attack.items()) + f"; total {their_seconds:.1f} s wall")
    compare(our_rows(measured, compatible), theirs)


if __name__ == "__main__":
    main()
