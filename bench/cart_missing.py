"""Below the public API: CART with missing values, codes, spikes and smoothing, measured on ``CartSynthesizer``.

Fits ``CartSynthesizer`` directly (without the pipeline's report) and measures with
``bayessdc.risk.copies`` the share of synthetic records that are exact copies of a real record and the
replicated uniques, with and without ``smoothing="density"`` (the same seed; the columns drawn after a smoothed
one see its smoothed values, so their draws differ too), beside the share of original records that have a
duplicate in the original (``copied_reference``: what a sample that never saw the data would copy), and the
missingness, code and spike rates per column in the original and the release (mean over the m datasets).

Two files:

* the bundled ACS-like example (``simulate_acs_persons`` with ``simulate_acs_work``): hours missing by design
  (not employed), income with the code -8 ("refused") and a spike at 0, and marital status missing at random;
* the real 1994 CPS extract (UCI Adult, ``../shared/data/c1_adult_cps1994.csv``, a random subsample): workclass
  and occupation missing ("?" in the UCI files), hours per week, and capital gain with spikes at 0 (92% of
  records) and at the top code 99999.

    .venv/bin/python bench/cart_missing.py [--n 10000] [--m 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bayessdc.models.cart import CartSynthesizer, simulate_acs_persons, simulate_acs_work  # noqa: E402
from bayessdc.risk.copies import copied_records, copied_reference, replicated_uniques  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"

ACS = {
    "keep": ["age", "sex", "relationship"],
    "synthesize": ["employed", "hours", "education", "marital", "income"],
    "missing_codes": {"income": [-8]},
    "spikes": {"income": [0]},
}
CPS = {
    "keep": ["age", "sex", "race", "relationship"],
    "synthesize": ["education", "marital_status", "workclass", "occupation", "hours_per_week", "capital_gain"],
    "missing_codes": {},
    "spikes": {"capital_gain": [0, 99999]},
}


def _acs(n: int, seed: int) -> pd.DataFrame:
    persons = simulate_acs_work(simulate_acs_persons(n, seed=seed), seed=seed)
    rng = np.random.default_rng([seed, 2])
    persons.loc[rng.random(n) < 0.08, "marital"] = None  # missing at random
    return persons


def _cps(n: int, seed: int) -> pd.DataFrame:
    data = pd.read_csv(DATA, usecols=[*CPS["keep"], *CPS["synthesize"]])
    return data.sample(n=min(n, len(data)), random_state=seed).reset_index(drop=True)


def _rates(frame: pd.DataFrame, design: dict) -> dict[str, float]:
    """Missing share of every column with missing values, and the share of each declared code and spike."""
    rates = {f"{c} missing": float(frame[c].isna().mean()) for c in frame.columns if c != "synthetic"}
    for kind in ("missing_codes", "spikes"):
        for column, values in design[kind].items():
            for value in values:
                rates[f"{column} = {value}"] = float((frame[column] == value).mean())
    return rates


def _measure(name: str, data: pd.DataFrame, design: dict, m: int, seed: int) -> None:
    columns = [c for c in data.columns if c in design["keep"] or c in design["synthesize"]]
    print(f"\n{name}: {len(data):,} records, m = {m}; keep {', '.join(design['keep'])}; synthesize "
          f"{', '.join(design['synthesize'])}; original records with a duplicate in the original: "
          f"{copied_reference(data, columns):.2%}")  # fmt: skip
    releases = {}
    for smoothing in (None, "density"):
        start = time.perf_counter()
        synthesizer = CartSynthesizer(
            design["synthesize"], design["keep"], missing_codes=design["missing_codes"], spikes=design["spikes"],
            smoothing=smoothing,
        ).fit(data, seed=seed)  # fmt: skip
        synthetic = synthesizer.synthesize_datasets(m)
        seconds = time.perf_counter() - start
        releases[smoothing] = synthetic
        copies = copied_records(data, synthetic, columns)
        uniques = replicated_uniques(data, synthetic, columns)
        numeric = [c for c in design["synthesize"] if pd.api.types.is_numeric_dtype(data[c])]
        donors = {c: float(np.isin(synthetic[c].dropna(), data[c].dropna().unique()).mean()) for c in numeric}
        print(f"  smoothing={smoothing!s:8} {seconds:5.1f} s: exact copies of a real record "
              f"{copies['share'].mean():.2%} of synthetic records; replicated uniques "
              f"{uniques['replicated'].mean():.1f} of {uniques['original_uniques'].iloc[0]} original uniques "
              f"({uniques['share'].mean():.2%}), unique in both {uniques['replicated_unique_in_both'].mean():.1f}")
        print("    synthetic numeric values equal to an observed value: "
              + ", ".join(f"{c} {share:.1%}" for c, share in donors.items()))  # fmt: skip
    original = _rates(data[columns], design)
    release = pd.DataFrame([_rates(f, design) for _, f in releases[None].groupby("synthetic")]).mean()
    smoothed = pd.DataFrame([_rates(f, design) for _, f in releases["density"].groupby("synthetic")]).mean()
    print(f"    {'rate':32} {'original':>9} {'release':>9} {'smoothed':>9}")
    for key, value in original.items():
        if value > 0 or release[key] > 0:
            print(f"    {key:32} {value:9.2%} {release[key]:9.2%} {smoothed[key]:9.2%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000, help="records of each file (a subsample of the CPS)")
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _measure("ACS-like example", _acs(args.n, args.seed), ACS, args.m, args.seed)
    if not DATA.exists():
        print(f"bench/cart_missing.py: the CPS data are not at {DATA.resolve()}", file=sys.stderr)
        return 2
    _measure("CPS 1994 (UCI Adult)", _cps(args.n, args.seed), CPS, args.m, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
