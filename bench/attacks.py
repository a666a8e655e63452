"""The attacks against a control set on 30,000 records and 10 columns, m = 5, beside anonymeter's own run.

Below the public API: builds the attack measures' input (``bayessdc.measures.MeasureInput`` with a control set)
for synthetic data made here rather than by a synthesizer, and recomputes the singling-out rates with
anonymeter's denominator (``bayessdc.risk.attacks.attack_rates``) to compare like with like.

Data: the UCI Adult extract (``../shared/data/c1_adult_cps1994.csv``, "?" read as missing), 10 columns (age and
hours per week numeric, 8 categorical), shuffled with the seed: 30,000 training records and 6,000 control
records. The synthetic datasets come from a stand-in for a synthesizer that memorises: each synthetic record is a
training record drawn at random whose values are each kept with probability ``--keep`` (0.8) and otherwise
replaced by the value of another random training record, m = 5 datasets of 30,000 records.

Ours: the five attack measures (singling out, linkability, inference with each column a secret, distance to
the closest record and distance ratio) at their defaults, 500 attacks; wall time and peak memory (target: under
60 s on 2 cores). Anonymeter 1.1 (Giomi et al. 2023) runs in its own virtual environment, made by this script
(``python -m venv`` and ``pip install anonymeter``; skipped with a message where it cannot be installed), on the
same records, columns, split, secrets and attack counts, its singling out seeded as ours (its other draws take
numpy's global seed). Each of our figures is shown with anonymeter's 95% interval and each of anonymeter's with
ours. Singling out is shown twice: as our measure states it (the rates of the predicates made) and over
anonymeter's denominator (the predicates asked for), which is anonymeter's figure; its training and control
success rates are printed apart, because the control set (6,000 records) is smaller than the training set and
each tool scales its control count to the training size by the same model fitted differently
(``bayessdc.risk.attacks.control_size_correction``; anonymeter's ``curve_fit`` starts from a scale of one
success).

    .venv/bin/python bench/attacks.py [--m 5] [--seed 0] [--keep 0.5] [--no-anonymeter]
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

from bayessdc.measures import MeasureInput, compute_measures  # noqa: E402
from bayessdc.risk.attacks import attack_rates  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"
COLUMNS = ["age", "workclass", "education", "marital_status", "occupation", "relationship", "race", "sex",
           "hours_per_week", "native_country"]  # fmt: skip
ATTACKS = ["singling_out", "linkability", "inference", "distance_to_closest_record", "distance_ratio"]

# Runs in anonymeter's environment: reads the job, runs each evaluator per dataset, writes the results.
ANONYMETER_JOB = textwrap.dedent('''
    import json, sys, time, warnings
    import numpy as np, pandas as pd
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    warnings.filterwarnings("ignore")
    job = json.load(open(sys.argv[1]))
    read = lambda name: pd.read_csv(f"{job['folder']}/{name}.csv")
    training, control = read("training"), read("control")
    np.random.seed(job["seed"])
    out = []

    def row(attack, subset, dataset, evaluator, seconds):
        risk = evaluator.risk()
        results = evaluator.results()
        out.append({"attack": attack, "subset": subset, "dataset": dataset, "risk": risk.value,
                    "lower": risk.ci[0], "upper": risk.ci[1], "seconds": seconds,
                    "training": results.attack_rate.value, "control": results.control_rate.value})

    for dataset in range(1, job["m"] + 1):
        synthetic = read(f"synthetic_{dataset}")
        for mode in ("univariate", "multivariate"):
            start = time.perf_counter()
            e = SinglingOutEvaluator(training, synthetic, n_attacks=job["n_attacks"], n_cols=job["n_cols"],
                                     control=control, seed=job["seed"] + dataset).evaluate(mode=mode)
            row("singling_out", mode, dataset, e, time.perf_counter() - start)
        start = time.perf_counter()
        e = LinkabilityEvaluator(training, synthetic, aux_cols=tuple(job["split"]), n_attacks=job["n_attacks"],
                                 n_neighbors=job["n_neighbors"], control=control).evaluate(n_jobs=-1)
        row("linkability", " | ".join("+".join(s) for s in job["split"]), dataset, e, time.perf_counter() - start)
        for secret in job["secrets"]:
            start = time.perf_counter()
            aux = [c for c in job["columns"] if c != secret]
            e = InferenceEvaluator(training, synthetic, aux_cols=aux, secret=secret, n_attacks=job["n_attacks"],
                                   regression=secret in job["numeric"], control=control).evaluate(n_jobs=-1)
            row("inference", secret, dataset, e, time.perf_counter() - start)
        print(f"    anonymeter: dataset {dataset} done", flush=True)
    json.dump(out, open(job["out"], "w"))
''')


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


def our_rows(measured: dict, n_attacks: int) -> pd.DataFrame:
    """Our risk per (attack, subset, dataset) with its interval, and singling out over anonymeter's denominator."""
    rows = []
    for attack in ("singling_out", "linkability", "inference"):
        details = measured[attack].details
        for _, r in details.iterrows():
            rows.append({"attack": attack, "subset": r["subset"], "dataset": int(r["dataset"]), "risk": r["risk"],
                         "lower": r["risk_lower"], "upper": r["risk_upper"], "training": r["training"],
                         "control": r["control"], "correction": r.get("control_correction", np.nan)})  # fmt: skip
        if attack == "singling_out":  # the same counts over the predicates asked for
            counts = details[details["dataset"] != 0].copy()
            counts[["attacks", "control_attacks"]] = n_attacks
            for subset, group in counts.groupby("subset", sort=False):
                table = attack_rates(group.drop(columns="subset")[["dataset", "attacks", "successes", "control_attacks",
                                                                   "control_successes", "baseline_attacks",
                                                                   "baseline_successes"]])  # fmt: skip
                for _, r in table.iterrows():
                    rows.append({"attack": "singling_out (over asked)", "subset": subset, "dataset": int(r["dataset"]),
                                 "risk": r["risk"], "lower": r["risk_lower"], "upper": r["risk_upper"]})  # fmt: skip
    return pd.DataFrame(rows)


def pooled_anonymeter(theirs: pd.DataFrame) -> pd.DataFrame:
    """Anonymeter has no pooled figure: the mean of its m risks, the interval of the mean of its intervals."""
    pooled = theirs.groupby(["attack", "subset"], sort=False)[["risk", "lower", "upper"]].mean().reset_index()
    return pd.concat([theirs, pooled.assign(dataset=0)], ignore_index=True)


def compare(mine: pd.DataFrame, theirs: pd.DataFrame) -> None:
    theirs = pooled_anonymeter(theirs)
    theirs = pd.concat([theirs, theirs[theirs["attack"] == "singling_out"].assign(attack="singling_out (over asked)")])
    both = mine.merge(theirs, on=["attack", "subset", "dataset"], suffixes=("", "_anonymeter"))
    both["ours in theirs"] = (both["risk"] >= both["lower_anonymeter"] - 1e-9) & (
        both["risk"] <= both["upper_anonymeter"] + 1e-9)  # fmt: skip
    both["theirs in ours"] = (both["risk_anonymeter"] >= both["lower"] - 1e-9) & (
        both["risk_anonymeter"] <= both["upper"] + 1e-9)  # fmt: skip
    print("\n  risk per dataset (0: the m datasets pooled; anonymeter's pooled row is the mean of its m runs)")
    print(f"  {'attack':26s} {'subset':36s} {'d':>2s} {'ours':>6s} {'95% interval':>15s}   {'anonymeter':>10s} "
          f"{'95% interval':>15s}  ours in theirs / theirs in ours")  # fmt: skip
    for _, r in both.iterrows():
        print(f"  {r['attack']:26s} {str(r['subset'])[:36]:36s} {r['dataset']:2d} {r['risk']:6.3f} "
              f"[{r['lower']:5.3f}, {r['upper']:5.3f}]   {r['risk_anonymeter']:10.3f} "
              f"[{r['lower_anonymeter']:5.3f}, {r['upper_anonymeter']:5.3f}]  "
              f"{'yes' if r['ours in theirs'] else 'NO':>3s} / {'yes' if r['theirs in ours'] else 'NO'}")
    print("\n  singling out, the success rates the risk is made of (Wilson estimates), ours / anonymeter's; "
          "anonymeter's control rate is its count scaled to the training set's size by its fitted model")
    mine_rates = mine.set_index(["attack", "subset", "dataset"])
    for _, r in theirs[(theirs["attack"] == "singling_out") & (theirs["dataset"] > 0)].iterrows():
        o = mine_rates.loc[("singling_out", r["subset"], r["dataset"])]
        print(f"  {r['subset']:13s} {r['dataset']:2d}  training {o['training']:.3f} / {r['training']:.3f}   "
              f"control {o['control']:.3f} / {r['control']:.3f}   (our control size factor {o['correction']:.2f})")
    agree = both["ours in theirs"] & both["theirs in ours"]
    for attack, group in both.assign(agree=agree).groupby("attack", sort=False):
        print(f"  {attack}: {int(group['agree'].sum())} of {len(group)} figures each inside the other's interval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30_000, help="training records")
    parser.add_argument("--control", type=int, default=6_000, help="control records")
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--keep", type=float, default=0.8, help="probability a synthetic value is its record's own")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-anonymeter", action="store_true")
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
    print("\nbayessdc's attack measures (defaults: 500 attacks, 1 neighbour, 3 columns per predicate):")
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
    numeric = [c for c in COLUMNS if pd.api.types.is_numeric_dtype(training[c])]
    linked = measured["linkability"].subsets()[0].split(" | ")
    plan = {"m": args.m, "n_attacks": 500, "n_cols": 3, "n_neighbors": 1, "columns": COLUMNS, "secrets": COLUMNS,
            "numeric": numeric, "split": [s.split("+") for s in linked]}  # fmt: skip
    print(f"\nanonymeter ({python}), the same inputs:", flush=True)
    theirs, their_seconds = run_anonymeter(python, training, control, synthetic, plan, args.seed)
    by_attack = theirs.groupby("attack")["seconds"].sum()
    print("  " + ", ".join(f"{a} {s:.1f} s" for a, s in by_attack.items()) + f"; total {their_seconds:.1f} s wall")
    compare(our_rows(measured, 500), theirs)


if __name__ == "__main__":
    main()
