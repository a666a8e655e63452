"""Persons within households on a real file, area by area: the VLSS 1997 individuals in their households, by commune.

The file is the World Bank's Vietnam Living Standards Survey 1997 (27,765 persons in 194 communes;
``../shared/data/d2_vietnam_vlss1997_individuals.csv``). It carries no household id or relationship: the household is
the persons of one commune sharing the household's (log) expenditure ``lnhhexp`` (5,741 households of 1 to 19
persons, whose sizes match VietNamH's ``hhsize`` for 10 to 19), and the reference person is taken to be the oldest
member (the first listed among equals), the others ``member``. Household expenditure is synthesized as a household
column, then sex, age, marital status, education, insurance and illness of every member, within households and
commune by commune (``strata="commune"``, small communes pooled), m = 5, seed 1, under the default disclosure policy.
Printed: wall time, peak memory, the verdict, tau of the tables of households (by size, by size and commune), tau of
the analyst's tables, and the household risk figures beside their references. One invocation.

    .venv/bin/python bench/households_vlss.py [--m 5]
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

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bayessdc as bsd  # noqa: E402

VLSS = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "d2_vietnam_vlss1997_individuals.csv"
SYNTHESIZE = ["lnhhexp", "sex", "age", "married", "educ", "insurance", "illness"]


def households_of(data: pd.DataFrame) -> pd.DataFrame:
    """The persons with a household id (commune, expenditure) and a relationship (the oldest the reference)."""
    out = data.copy()
    out["household"] = out["commune"].astype(str) + ":" + out["lnhhexp"].round(6).astype(str)
    oldest = out.sort_values(["household", "age"], ascending=[True, False], kind="stable")
    out["relationship"] = np.where(out.index.isin(oldest.drop_duplicates("household").index), "reference person",
                                   "member")  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    persons = households_of(pd.read_csv(VLSS))
    sizes = persons.groupby("household").size()
    print(f"VLSS 1997: {len(persons):,} persons in {len(sizes):,} households (sizes {sizes.min()} to {sizes.max()}), "
          f"{persons['commune'].nunique()} communes")  # fmt: skip
    recipe = bsd.CART(households="household", relationship="relationship", strata="commune", min_leaf=10,
                      bootstrap=500, categorical=["married", "educ", "insurance", "illness"])  # fmt: skip
    start = time.perf_counter()
    try:
        release = bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, m=args.m, seed=1, progress=False)
    except bsd.DisclosureRefused as refused:
        print(f"refused after {time.perf_counter() - start:.1f} s: {refused}")
        return 1
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"released in {seconds:.1f} s (setting {release.policy.setting_text()}), peak {peak:,.0f} MB; "
          f"policy {'met' if release.policy.passed else 'FAILED'}")  # fmt: skip
    details = release.measured["household_table_tau"].details
    for row in details.itertuples():
        print(f"  {row.table}: tau {row.tau:.4f} (bootstrap 95% {row.bootstrap_lower:.4f} to "
              f"{row.bootstrap_upper:.4f}), {row.cells} cells")  # fmt: skip
    taus = release.measured["table_tau"].summary().set_index("subset")["pooled"]
    print("  tau of the analyst's tables: " + ", ".join(f"{k} {v:.4f}" for k, v in taus.items()))
    for name in ("household_uniques_reappearing", "household_attribute_inference", "copied_records"):
        result = release.measured[name]
        refs = result.references.query("subset == 'all'")
        shown = ", ".join(f"{r.reference} {r.value:.4f}" for r in refs.itertuples())
        print(f"  {name}: {result.summary().set_index('subset').loc['all', 'pooled']:.4f}; {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
