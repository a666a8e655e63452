"""Synthesis area by area on a real file: the VLSS 1997 individuals by commune, one CART per commune against one
CART for the whole country with the commune as a predictor, in one invocation.

The file is the World Bank's Vietnam Living Standards Survey 1997 (27,765 persons in 194 communes of 51 to 206
persons; ``../shared/data/d2_vietnam_vlss1997_individuals.csv``). Sex and (log) age are kept with the commune;
education, insurance, illness and marital status are synthesized under the default disclosure policy, m = 5, seed 1.
Both releases have their replicated uniques removed and are judged by the default policy, as drawn (no other
setting tried): records copied in the whole file and, for the release by commune, in every commune against its
cross-fitted release with the Bonferroni range. They are measured by tau of the tables of each synthesized column
by commune, the tables an analyst of small areas reads. Printed: wall time, peak
memory of the process, the policy's verdict, records copied (whole file, and the worst communes), and tau.

Below the public API: ``bayessdc.policy.judge``, to take the default policy's verdict on a release drawn under a
policy that only removes the replicated uniques (so that a refused release is measured too).

    .venv/bin/python bench/cart_strata.py [--m 5] [--rows N]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

import bayessdc as bsd  # noqa: E402

VLSS = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "d2_vietnam_vlss1997_individuals.csv"
SYNTHESIZE = ["educ", "insurance", "illness", "married"]
KEEP = ["sex", "age"]


def _run(data: pd.DataFrame, recipe: bsd.CART, m: int) -> tuple[bsd.Release, float]:
    """The release with its replicated uniques removed (the one criterion that changes what is released), judged
    here by nothing else: the default policy's verdict is then taken on it (:func:`_verdict`)."""
    removal = bsd.Policy(name="removal only", criteria=(
        bsd.Criterion("replicated_uniques", subset="unique in both", statistic="worst", at_most=0),))  # fmt: skip
    start = time.perf_counter()
    release = bsd.synthesize(data, recipe, synthesize=SYNTHESIZE, keep=["commune", *KEEP], m=m, seed=1,
                             policy=removal, progress=False)  # fmt: skip
    return release, time.perf_counter() - start


def _verdict(release: bsd.Release) -> tuple[str, list[str]]:
    """The default policy's verdict on ``release`` (under its own settings, no other tried) and what fails."""
    from bayessdc.policy import judge

    verdict = judge(bsd.default_policy(), release.measured, "cart")
    failed = [f"{j.criterion.measure} [{j.subset}] {j.figure:.4g} > {j.threshold:.4g}" for j in verdict.failed()]
    return ("met" if verdict.passed else f"FAILED {len(failed)}"), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--rows", type=int, default=None, help="the first N rows only (a quick look)")
    args = parser.parse_args()
    logging.getLogger("bayessdc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if not VLSS.exists():
        sys.exit(f"needs {VLSS}")
    data = pd.read_csv(VLSS)[["commune", *KEEP, *SYNTHESIZE]]
    if args.rows:
        data = data.iloc[: args.rows]
    data["commune"] = data["commune"].astype(str)
    tables = [f"{c},commune" for c in SYNTHESIZE]
    print(f"VLSS 1997: {len(data):,} persons in {data['commune'].nunique()} communes; m = {args.m}")
    rows = []
    for label, recipe in (
        ("one model, commune a predictor", bsd.CART(tables=tables, bootstrap=200)),
        ("one model per commune (strata)", bsd.CART(tables=tables, bootstrap=200, strata="commune")),
    ):
        release, seconds = _run(data, recipe, args.m)
        risk = release.measure_table("risk").set_index(["measure", "subset"])
        utility = release.measure_table("utility").set_index(["measure", "subset"])
        copied = risk.loc[("copied_records", "all")]
        verdict, failed = _verdict(release)
        row = {"release": label, "seconds": round(seconds, 1), "default policy": verdict,
               "copied": round(copied["pooled"], 4), "copied unlearned range": round(copied["unlearned_range"], 4)}
        for line in failed:
            print(f"  {label}: fails {line}")
        for c in SYNTHESIZE:
            tau = utility.loc[("table_tau", f"{c} x commune")]
            row[f"tau {c} x commune"] = f"{tau['pooled']:.4f} (bootstrap {tau['bootstrap']:.4f})"
        rows.append(row)
        if "stratum_copied_records" in release.measured:
            per = release.measured["stratum_copied_records"].summary().set_index("subset")
            refs = release.measured["stratum_copied_records"].references.set_index(["subset", "reference"])["value"]
            per["range"] = [refs.get((s, "unlearned_range"), float("nan")) for s in per.index]
            per["margin"] = per["range"] - per["pooled"]
            print(f"  {label}: the 5 communes nearest their range (of {len(per)}):")
            print(per.sort_values("margin")[["pooled", "range"]].head(5).round(4).to_string())
    print(pd.DataFrame(rows).set_index("release").T.to_string())
    print(f"peak memory of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
