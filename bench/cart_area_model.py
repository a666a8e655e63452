"""The area synthesized before the within-area trees, on a real file: the VLSS 1997 individuals by commune.

Two releases of the same persons, m = 5, seed 1, in one invocation: one CART per commune with every person kept in
their commune (``strata="commune"``), and the same with the commune synthesized first (``area_model="dpmpm"``, the
DPMPM at its defaults, given sex and the age band; insurance synthesized with the commune). Education, illness and
marital status are drawn by the trees; sex and the decile band of (log) age are kept. Both are judged by the default
policy as drawn (their replicated uniques removed). Printed per release: the default policy's verdict, records copied
(whole file, and its cross-fitted range), tau of each synthesized column by commune, how far each commune's number of
records moved (median and largest absolute difference from the real count over communes and datasets), wall time.

    .venv/bin/python bench/cart_area_model.py [--m 5] [--communes N]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

import bayessdc as bsd  # noqa: E402

VLSS = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "d2_vietnam_vlss1997_individuals.csv"
SYNTHESIZE = ["educ", "illness", "married"]
KEEP = ["sex", "age_band"]


def _counts(release: bsd.Release) -> tuple[float, int]:
    """Median and largest |drawn - real| number of records of a commune, over communes and datasets, as drawn (before
    the replicated uniques are removed); 0 where the communes are kept."""
    counts = release.private_tables.get("area_counts.parquet")
    if counts is None:
        return 0.0, 0
    moved = (counts["drawn"] - counts["records"]).abs()
    return float(moved.median()), int(moved.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--communes", type=int, default=None, help="the persons of the first N communes only")
    args = parser.parse_args()
    logging.getLogger("bayessdc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if not VLSS.exists():
        sys.exit(f"needs {VLSS}")
    data = pd.read_csv(VLSS)[["commune", "insurance", "sex", "age", *SYNTHESIZE]]
    if args.communes:
        data = data[data["commune"].isin(sorted(data["commune"].unique())[: args.communes])].reset_index(drop=True)
    data["commune"] = data["commune"].astype(str)
    data["insurance"] = data["insurance"].map({0: "no", 1: "yes"})
    data["age_band"] = pd.qcut(data["age"], 10, labels=False, duplicates="drop").astype(str)
    tables = [f"{c},commune" for c in ["insurance", *SYNTHESIZE]]
    print(f"VLSS 1997: {len(data):,} persons in {data['commune'].nunique()} communes; m = {args.m}")
    releases = {
        "commune kept (strata)": (bsd.CART(tables=tables, bootstrap=200, strata="commune"), ["insurance", *SYNTHESIZE]),
        "commune synthesized (area_model dpmpm)": (
            bsd.CART(tables=tables, bootstrap=200, strata="commune", area_model="dpmpm", area_columns=["insurance"],
                     area_given=["sex", "age_band"]), SYNTHESIZE),
    }  # fmt: skip
    for label, (recipe, synthesize) in releases.items():
        start = time.perf_counter()
        try:
            release = bsd.synthesize(data, recipe, synthesize=synthesize, keep=KEEP, m=args.m, seed=1, progress=False)
        except bsd.DisclosureRefused as refusal:
            print(f"{label}: refused by the default policy: {refusal}")
            continue
        seconds = time.perf_counter() - start
        copied = release.measured["copied_records"]
        summary = copied.summary().set_index("subset").loc["all"]
        tau = release.measured["table_tau"].summary().set_index("subset")["pooled"]
        median, largest = _counts(release)
        verdict = "met" if release.policy.passed else "FAILED"
        limit = copied.reference("all", "unlearned_range")
        print(f"{label}: policy {verdict} under {release.policy.setting or 'its own settings'}; records copied "
              f"{summary['pooled']:.4f} (unlearned range {limit:.4f}); commune counts moved: median {median:g}, "
              f"largest {largest}; {seconds:.0f} s")  # fmt: skip
        for table, value in tau.items():
            print(f"  tau {table}: {value:.3f}")
        if "release_gate" in release.diagnostics.summary:
            gate = release.diagnostics.summary["release_gate"]
            print(f"  area model's release gate: passed {gate['passed']} with {gate['chains']} chains")


if __name__ == "__main__":
    main()
