"""Records a CART release copies against a release that never saw them, by leaf size: the measured default.

For each ``min_leaf`` the public pipeline (``bsd.synthesize`` with the default disclosure policy) releases or
refuses two files, and the figures the policy judged are printed: the share of released rows equal to a
confidential record (after the replicated uniques are removed) and its threshold, the upper end of the range one
dataset of the cross-fitted release that never saw the records shows (``unlearned_range``, 40 folds); the share of
rows removed as replicated uniques and its threshold; the setting released under, and the
wall time. The two files:

* the bundled ACS-like example of ``bayessdc demo`` (3,000 records; age, sex and relationship kept; enrolled,
  grade, education and marital synthesized under the example's rules; m = 20);
* the Adult file (48,842 records of the 1994 CPS; sex, race and age kept; education, marital status, work class
  and hours per week synthesized; m = 5), read from ``../shared/data/c1_adult_cps1994.csv``.

The default ``min_leaf`` of :class:`bayessdc.CART` is the smallest leaf size at which both are released.

    .venv/bin/python bench/cart_copies.py [--min-leaf 5,10,20,50] [--only acs|adult]
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

import bayessdc as bsd  # noqa: E402

ADULT = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"


def _cases(only: str | None) -> list[tuple[str, object, dict, int]]:
    cases = []
    if only in (None, "acs"):
        acs = bsd.examples.acs_persons(3000, seed=0)
        roles = {"synthesize": ["enrolled", "grade", "education", "marital"], "keep": ["age", "sex", "relationship"]}
        cases.append(("acs", acs, {"rules": bsd.examples.acs_rules(), "roles": roles}, 20))
    if only in (None, "adult"):
        if not ADULT.exists():
            print(f"skipping Adult: {ADULT} not found", file=sys.stderr)
        else:
            adult = bsd.read_table(ADULT)
            roles = {"synthesize": ["education", "marital_status", "workclass", "hours_per_week"],
                     "keep": ["sex", "race", "age"]}  # fmt: skip
            cases.append(("adult", adult, {"rules": [], "roles": roles}, 5))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-leaf", default="5,10,20,50")
    parser.add_argument("--only", choices=("acs", "adult"), default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("bayessdc").setLevel(logging.ERROR)
    print(f"{'data':<6} {'min_leaf':>8} {'verdict':<9} {'copied':>8} {'range':>8} "
          f"{'removed':>8} {'rm range':>8} {'EMR':>8} {'EMR max':>8} {'discl':>8} {'disc max':>8} "
          f"{'setting':<16} {'seconds':>7}")  # fmt: skip
    for name, data, spec, m in _cases(args.only):
        for min_leaf in [int(x) for x in args.min_leaf.split(",")]:
            start = time.perf_counter()
            recipe = bsd.CART(rules=spec["rules"], min_leaf=min_leaf, bootstrap=100)
            try:
                release = bsd.synthesize(data, recipe, m=m, seed=0, progress=False, **spec["roles"])
                verdict = release.policy
            except bsd.DisclosureRefused as refusal:
                verdict = refusal.verdict
            seconds = time.perf_counter() - start
            rows = {j.criterion.measure: j for j in verdict.judgements}
            copied, removed = rows["copied_records"], rows["removed_records"]
            # Hu & Savitsky's expected match risk and exact attribute disclosures: the lower end of the Welch
            # interval (what the policy judges) against the inherent maximum
            emr, disclosed = rows["expected_match_risk"], rows["attribute_disclosures"]
            print(f"{name:<6} {min_leaf:>8} {'released' if verdict.passed else 'REFUSED':<9} {copied.figure:>8.4f} "
                  f"{copied.threshold:>8.4f} {removed.figure:>8.4f} {removed.threshold:>8.4f} "
                  f"{emr.figure:>8.1f} {emr.threshold:>8.1f} {disclosed.figure:>8.1f} {disclosed.threshold:>8.1f} "
                  f"{verdict.setting_text():<16} {seconds:>7.1f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
