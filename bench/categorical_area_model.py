"""The area synthesized before the within-area DPMPMs, on a real file: the VLSS 1997 individuals by commune.

Two releases of the same persons, m = 5, seed 1, in one invocation: one DPMPM per commune (or pool of small communes)
with every person kept in their commune (``strata="commune"``), and the same with the commune synthesized first
(``area_model="dpmpm"``, the DPMPM at its defaults, given sex and the age band; insurance synthesized with the
commune). Education, illness and marital status are synthesized by the within-area DPMPMs (their defaults but
``--draws``); sex and the decile band of age are kept. Both are judged by the default policy. Printed per release:
the verdict, Hu & Savitsky's expected match risk (pooled, against the inherent maximum), the records copied per
commune at their worst, the pMSE ratio, how far each commune's number of records moved (median and largest absolute
difference from the real count over communes and datasets), the release gate's chains, and wall time.

    .venv/bin/python bench/categorical_area_model.py [--m 5] [--communes 20] [--draws 1000]
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
    """Median and largest |drawn - real| number of records of a commune, over communes and datasets, as drawn; 0
    where the communes are kept."""
    counts = release.private_tables.get("area_counts.parquet")
    if counts is None:
        return 0.0, 0
    moved = (counts["drawn"] - counts["records"]).abs()
    return float(moved.median()), int(moved.max())


def _row(release: bsd.Release, measure: str, subset: str | None = None) -> pd.Series:
    summary = release.measured[measure].summary()
    return summary.iloc[0] if subset is None else summary.set_index("subset").loc[subset]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--communes", type=int, default=20, help="the persons of the first N communes (0: all)")
    parser.add_argument("--draws", type=int, default=1000, help="Gibbs iterations kept per chain of every DPMPM")
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
    data = data.drop(columns="age")
    settings = bsd.GibbsSettings(draws=args.draws, burn=args.draws // 2, thin=2)
    print(f"VLSS 1997: {len(data):,} persons in {data['commune'].nunique()} communes; m = {args.m}; every DPMPM "
          f"{settings.chains} chains of {settings.draws} draws (burn {settings.burn}, thin {settings.thin})")
    releases = {
        "commune kept (strata)": (bsd.DPMPM(settings=settings, strata="commune"), [*KEEP, "insurance"]),
        "commune synthesized (area_model dpmpm)": (
            bsd.DPMPM(settings=settings, strata="commune", area_model=bsd.DPMPM(settings=settings),
                      area_columns=["insurance"], area_given=KEEP), KEEP),
    }  # fmt: skip
    for label, (recipe, keep) in releases.items():
        start = time.perf_counter()
        try:
            release = bsd.synthesize(data, recipe, synthesize=SYNTHESIZE, keep=keep, m=args.m, seed=1, progress=False)
        except bsd.DisclosureRefused as refusal:
            print(f"{label}: refused by the default policy: {refusal}")
            continue
        except bsd.ConvergenceError as refusal:
            print(f"{label}: refused by the release gate: {refusal}")
            continue
        seconds = time.perf_counter() - start
        risk = _row(release, "expected_match_risk")
        maximum = release.measured["expected_match_risk"].reference(risk["subset"], "inherent_max")
        copied = release.measured["stratum_copied_records"].summary()
        worst = copied.loc[copied["pooled"].idxmax()]
        pmse = _row(release, "pmse_ratio")
        median, largest = _counts(release)
        verdict = "met" if release.policy.passed else "FAILED"
        gate = release.diagnostics.summary.get("release_gate", {})
        print(f"{label}: policy {verdict}; expected match risk {risk['pooled']:.1f} (inherent maximum {maximum:.1f}); "
              f"records copied per commune at most {worst['pooled']:.3f} ({worst['subset']}); pMSE ratio "
              f"{pmse['pooled']:.2f}; commune counts moved: median {median:g}, largest {largest}; release gate "
              f"{gate.get('chains', '?')} chains; {seconds:.0f} s")  # fmt: skip
        failed = [j for j in release.policy.judgements if not j.passed]
        for judgement in failed:
            print(f"  failed: {judgement.sentence()}")


if __name__ == "__main__":
    main()
