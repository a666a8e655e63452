"""Persons within households: the NDPMPM of Hu, Reiter & Wang (2018) beside this project's household CART.

Below the public API: ``bayessdc.models.households.rule_violations`` (the count of households breaking each rule).

Issue 51 asks which of the two to synthesize households with, and why, with figures. Both run here on the same
simulated persons (``bsd.examples.households``), in one invocation:

* **NDPMPM**: the nested Dirichlet process mixture of products of multinomials with structural zeros, through the
  authors' R package NestedCategBayesImpute 1.2.1 (CRAN, GPL >= 3; peer software, nothing of it in bayessdc),
  driven by ``bench/households_reference.R``. Its structural zeros are compiled in (the package's ACS rules); the
  R script rebuilds it, once, into a private R library with the rules of
  :func:`bayessdc.models.households.household_rules` instead, as the package's documentation says to. Every
  variable is categorical: area, tenure and household size per household (the reference person moved to the
  household level, as the package's example does); relationship, sex, age, education and employment per person.
  Age is in the categories 0-15, 16-17, 18-24, 25-44, 45-64, 65+ (18 a boundary, so that "an adult" is a set of
  categories), or with ``--age-coding years`` in single years as in the paper (101 categories). A rule is a
  structural zero where it is broken whatever the ages within the categories are. The package cannot take
  households of one person (its documentation: the minimum household size is 2): those are synthesized by a flat
  DPMPM (NPBayesImputeCat 0.5, ``../shared/reference``), truncated to adult ages, with the same MCMC length. The
  NDPMPM synthesizes every variable, the area too; it keeps the number of households of each size (a property of
  its sampler: it draws n_h households of each size h). Its settings are the package example's (FF = 20, SS = 15,
  a = b = 0.25, blocksize 10,000) and, by default, the chain length the example gives for real use (nrun 10,000,
  burn-in 5,000, thin 5; the m datasets spaced evenly after the burn-in), run serially (``--parallel`` for the
  package's RcppParallel mode, which leaks memory here: see the R script).
* **CART**: ``bsd.CART(households="household", relationship="relationship", rules=bsd.examples.household_rules(),
  min_leaf=10)``, synthesizing tenure, sex, age, education and employment and keeping the area (each area keeps
  its number of households; sizes are drawn).

Printed for both: wall time (fit, synthesis, in all; the NDPMPM draws its datasets inside its MCMC, so its fit and
synthesis are one figure, with the seconds per iteration and the peak memory of R), the number of synthetic
datasets, the share of synthetic households breaking each rule (on categorical ages the two 16-year rules cannot
be decided: their share is given as a range, from the households that break it whatever the ages within the
categories to those that may, beside the share of the original's households that may), and
tau = 1 - L1/(2n) of the tables of households by size, by size x area, and of persons by relationship x sex x age
category (n the original's households or persons; the mean over datasets and its range), each beside the tau of
200 bootstrap replicates of the original's households, resampled whole (mean and 2.5-97.5% range).

    .venv/bin/python bench/households_reference.py [--households 1000] [--areas 4] [--iterations 10000] [--m 5]
        [--age-coding categories|years] [--ndpmpm-source DIR|TAR.GZ]

About 10 minutes at the defaults on 2 cores (0.05-0.06 s per NDPMPM iteration on 1,000 households; CART seconds).

It needs R (``r-base-dev``, ``r-cran-rcpp``, ``r-cran-rcppparallel``, ``r-cran-coda``, ``r-cran-dplyr`` and those
of ``../shared/reference/README.md``) and, the first time, the package's CRAN source (``--ndpmpm-source``, a
folder or ``NestedCategBayesImpute_1.2.1.tar.gz``, or ``BAYESSDC_NDPMPM_SOURCE``); the R library is
``BAYESSDC_RLIB`` (by default ``rlib`` beside the repository). Without them the NDPMPM is skipped, saying why.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bayessdc as bsd  # noqa: E402
from bayessdc.models.households import rule_violations  # noqa: E402

HERE = Path(__file__).resolve().parent
R_SCRIPT = HERE / "households_reference.R"
SHARED = HERE.parent.parent / "shared" / "reference"
SYNTHESIZE = ["tenure", "sex", "age", "education", "employed"]

#: The age categories (label, youngest, oldest): 18 a boundary (adults), as the rules need.
AGE_CATEGORIES = [("0-15", 0, 15), ("16-17", 16, 17), ("18-24", 18, 24), ("25-44", 25, 44), ("45-64", 45, 64),
                  ("65+", 65, 120)]  # fmt: skip
ADULT, GAP = 18, 16
#: The members' relationship codes of the package's input (the reference person is at the household level).
RELATE = {"spouse": 1, "child": 2, "parent": 3, "non-relative": 4}
CODES = {
    "sex": ["female", "male"],
    "education": ["none yet", "primary", "secondary", "tertiary"],
    "employed": ["no", "yes"],
    "tenure": ["own", "rent"],
}
RULES = ["one reference person", "at most one spouse", "adult reference person", "adult spouse",
         "children younger by 16", "parents older by 16"]  # fmt: skip
GAP_RULES = RULES[4:]


def age_category(age: pd.Series) -> pd.Series:
    """The label of each age's category."""
    bins = [lo for _, lo, _ in AGE_CATEGORIES][1:]
    labels = np.array([label for label, _, _ in AGE_CATEGORIES])
    return pd.Series(labels[np.searchsorted(bins, age.to_numpy(), side="right")], index=age.index)


class Coding:
    """The ages as the NDPMPM sees them: ``categories`` (:data:`AGE_CATEGORIES`) or single ``years`` 0..100."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "categories":
            self.lo = [lo for _, lo, _ in AGE_CATEGORIES]
            self.hi = [hi for _, _, hi in AGE_CATEGORIES]
        else:
            self.lo = self.hi = list(range(101))

    def code(self, age: pd.Series) -> np.ndarray:
        """The age codes 1, 2, ..."""
        if self.kind == "categories":
            return np.searchsorted(self.lo[1:], age.to_numpy(), side="right") + 1
        return np.minimum(age.to_numpy(), 100) + 1

    def bounds(self, code: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """The youngest and oldest age of each code."""
        index = code.to_numpy(int) - 1
        return np.asarray(self.lo)[index], np.asarray(self.hi)[index]

    def adult_codes(self) -> list[int]:
        return [i + 1 for i, hi in enumerate(self.hi) if hi >= ADULT]


# ---------------------------------------------------------------------------------------------------------------
# the data in the package's form


def ndpmpm_input(persons: pd.DataFrame, coding: Coding) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The members (reference person aside) of the households of 2 or more in the package's input form, the
    one-person households, and the areas (their codes' labels)."""
    areas = sorted(persons["area"].unique())
    p = persons.copy()
    for column, levels in CODES.items():
        p[column] = p[column].map({v: i + 1 for i, v in enumerate(levels)})
    p["area"] = p["area"].map({a: i + 1 for i, a in enumerate(areas)})
    p["age"] = coding.code(p["age"])
    size = p.groupby("household")["household"].transform("size")
    heads = p[p["relationship"] == "reference person"].set_index("household")
    nested = p[size >= 2]
    members = nested[nested["relationship"] != "reference person"].copy()
    head = heads.loc[members["household"]]
    members["Hhindex"] = pd.factorize(members["household"])[0] + 1
    members["pernum"] = members.groupby("Hhindex").cumcount() + 1
    members["relate"] = members["relationship"].map(RELATE)
    for column in ("sex", "education", "employed", "age"):
        members[f"head{column}"] = head[column].to_numpy()
    members["householdsize"] = members.groupby("Hhindex")["Hhindex"].transform("size")
    members = members[["Hhindex", "pernum", "sex", "education", "employed", "age", "relate", "tenure", "headsex",
                       "headeducation", "heademployed", "headage", "area", "householdsize"]]  # fmt: skip
    singles = p[size == 1][["area", "tenure", "sex", "age", "education", "employed"]]
    return members, singles, areas


def from_ndpmpm(synthetic: pd.DataFrame, coding: Coding, areas: list[str]) -> pd.DataFrame:
    """The R script's synthetic persons with this project's labels; ``age`` a representative age of the code (its
    youngest: the rules on adults are decided by it, 18 being a boundary), ``age category`` its category."""
    out = synthetic.copy()
    for column, levels in CODES.items():
        out[column] = np.asarray(levels)[out[column].to_numpy(int) - 1]
    out["area"] = np.asarray(areas)[out["area"].to_numpy(int) - 1]
    names = np.array(["reference person", *RELATE])
    out["relationship"] = names[out["relate"].to_numpy(int)]
    out["age_lo"], out["age_hi"] = coding.bounds(out["age"])
    out["age"] = out["age_lo"]
    out["age category"] = age_category(out["age"])
    out["household"] = out["synthetic"].astype(str) + ":" + out["household"].astype(str)
    return out.drop(columns="relate")


# ---------------------------------------------------------------------------------------------------------------
# the reference's R library


def r_library() -> Path:
    return Path(os.environ.get("BAYESSDC_RLIB", HERE.parent.parent / "rlib")).resolve()


def ensure_ndpmpm(coding: Coding, source: str | None) -> tuple[Path | None, str, float]:
    """The private R library holding NestedCategBayesImpute with the households' structural zeros for ``coding``
    (built once), the reason it is missing, and the seconds a build took."""
    if shutil.which("Rscript") is None:
        return None, "Rscript is not installed", 0.0
    lib = r_library() / f"ndpmpm-households-{coding.kind}"
    stamp = f"age_lo={','.join(map(str, coding.lo))} age_hi={','.join(map(str, coding.hi))} adult={ADULT} gap={GAP}"
    stamp_file = lib / "bayessdc-households-rules.txt"
    ready = (lib / "NestedCategBayesImpute" / "DESCRIPTION").exists() and (lib / "NPBayesImputeCat").exists()
    if ready and stamp_file.exists() and stamp_file.read_text() == stamp:
        return lib, "", 0.0
    source = source or os.environ.get("BAYESSDC_NDPMPM_SOURCE")
    if not source or not Path(source).exists():
        return None, ("NestedCategBayesImpute with these rules is not built and no source was given "
                      "(--ndpmpm-source or BAYESSDC_NDPMPM_SOURCE: the CRAN source, a folder or its .tar.gz)"), 0.0
    npbayes = SHARED / "NPBayesImputeCat_0.5.tar.gz"
    if not npbayes.exists():
        return None, f"{npbayes} (the flat DPMPM of the one-person households) is missing", 0.0
    command = ["Rscript", str(R_SCRIPT), "install", f"src={source}", f"lib={lib}", *stamp.split(" "),
               f"npbayes={npbayes}"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None, "building NestedCategBayesImpute failed:\n" + done.stderr[-3000:], 0.0
    stamp_file.write_text(stamp)
    return lib, "", time.perf_counter() - start


def run_ndpmpm(persons: pd.DataFrame, lib: Path, coding: Coding, args: argparse.Namespace) -> dict:
    """The R script's run: its synthetic persons, per-iteration figures and timings."""
    members, singles, areas = ndpmpm_input(persons, coding)
    with tempfile.TemporaryDirectory(prefix="ndpmpm") as folder:
        work = Path(folder)
        members.to_csv(work / "members.csv", index=False)
        singles.to_csv(work / "singles.csv", index=False)
        command = ["Rscript", str(R_SCRIPT), "run", f"lib={lib}", f"members={work / 'members.csv'}",
                   f"singles={work / 'singles.csv'}", f"out={work / 'synthetic.csv'}",
                   f"iterations={work / 'iterations.csv'}", f"log={work / 'mcmc.log'}", f"nrun={args.iterations}",
                   f"burn={args.burn}", f"thin={args.thin}", f"m={args.m}", f"seed={args.seed + 1}",
                   f"adult_codes={','.join(map(str, coding.adult_codes()))}", f"parallel={int(args.parallel)}",
                   f"threads={args.threads}"]  # fmt: skip
        start = time.perf_counter()
        with open(work / "stdout.txt", "w") as stdout, open(work / "stderr.txt", "w") as stderr:
            process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
            _, status, usage = os.wait4(process.pid, 0)  # the R process's own peak memory
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            log = (work / "mcmc.log").read_text()[-2000:] if (work / "mcmc.log").exists() else ""
            raise RuntimeError(f"the NDPMPM run failed:\n{(work / 'stderr.txt').read_text()[-3000:]}\n{log}")
        stdout_text = (work / "stdout.txt").read_text()
        figures = dict(line.split("=", 1) for line in stdout_text.splitlines() if "=" in line)
        synthetic = from_ndpmpm(pd.read_csv(work / "synthetic.csv"), coding, areas)
        iterations = pd.read_csv(work / "iterations.csv")
    return {"synthetic": synthetic, "iterations": iterations, "figures": figures, "seconds": seconds,
            "members": len(members), "singles": len(singles), "peak_mb": usage.ru_maxrss / 1024}  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# the figures


class Tables:
    """The original's tables (households by size, by size x area; persons by relationship x sex x age category),
    tau of a synthetic dataset's against them, and of bootstrap replicates of its households drawn whole."""

    NAMES = ["households by size", "households by size x area", "persons by relationship x sex x age category"]

    def __init__(self, persons: pd.DataFrame):
        households = self.households(persons)
        self.n_households = len(households)
        self.cells: list[pd.Index] = []
        self.per_household: list[np.ndarray] = []  # households x cells: each household's count in each cell
        for name in self.NAMES:
            keys = self.keys(name, persons, households)
            cells = pd.Index(sorted(set(keys)))
            column = cells.get_indexer(keys)
            if name.startswith("persons"):
                row = households.index.get_indexer(persons["household"])
            else:
                row = np.arange(len(households))
            matrix = np.zeros((len(households), len(cells)))
            np.add.at(matrix, (row, column), 1.0)
            self.cells.append(cells)
            self.per_household.append(matrix)
        self.original = [m.sum(axis=0) for m in self.per_household]

    @staticmethod
    def households(persons: pd.DataFrame) -> pd.DataFrame:
        grouped = persons.groupby("household", sort=False)
        return pd.DataFrame({"size": grouped.size(), "area": grouped["area"].first()})

    @staticmethod
    def keys(name: str, persons: pd.DataFrame, households: pd.DataFrame) -> list[str]:
        if name == "households by size":
            return households["size"].astype(str).tolist()
        if name == "households by size x area":
            return (households["size"].astype(str) + " x " + households["area"].astype(str)).tolist()
        category = persons["age category"] if "age category" in persons else age_category(persons["age"])
        return (persons["relationship"].astype(str) + " x " + persons["sex"].astype(str) + " x "
                + category.astype(str)).tolist()  # fmt: skip

    def tau(self, persons: pd.DataFrame) -> list[float]:
        """tau of each table of one synthetic dataset (a cell the original lacks counts in L1 too)."""
        households = self.households(persons)
        out = []
        for name, cells, base in zip(self.NAMES, self.cells, self.original, strict=True):
            counts = pd.Series(self.keys(name, persons, households)).value_counts()
            inside = counts.reindex(cells, fill_value=0).to_numpy(float)
            outside = counts[~counts.index.isin(cells)].sum()
            out.append(1.0 - (np.abs(inside - base).sum() + outside) / (2.0 * base.sum()))
        return out

    def bootstrap(self, replicates: int, seed: int) -> np.ndarray:
        """tau of each table (columns) for each bootstrap replicate (rows) of the households."""
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(self.n_households, np.full(self.n_households, 1.0 / self.n_households),
                                  size=replicates)  # fmt: skip
        return np.column_stack([1.0 - np.abs(weights @ m - base).sum(axis=1) / (2.0 * base.sum())
                                for m, base in zip(self.per_household, self.original, strict=True)])  # fmt: skip


def broken_shares(synthetic: pd.DataFrame, categorical: bool) -> dict[str, tuple[float, float]]:
    """Per rule, the share of the synthetic households (all datasets) breaking it, as (certainly, possibly): the
    same figure twice where ages are single years or the rule is decided on the categories."""
    total = synthetic.groupby(["synthetic", "household"]).ngroups
    counts = dict.fromkeys(RULES, 0)
    for _, dataset in synthetic.groupby("synthetic"):
        for rule, n in rule_violations(dataset).items():
            counts[rule] += n
    out = {rule: (n / total, n / total) for rule, n in counts.items()}
    if categorical:
        for rule in GAP_RULES:
            out[rule] = tuple(gap_rule_broken(synthetic, rule, certainly) / total for certainly in (True, False))
    return out


def gap_rule_broken(synthetic: pd.DataFrame, rule: str, certainly: bool) -> int:
    """Households breaking a 16-year rule whatever the ages within their categories (``certainly``) or for some."""
    rel, by = synthetic["relationship"], [synthetic["synthetic"], synthetic["household"]]
    lo, hi = synthetic["age_lo"], synthetic["age_hi"]
    is_ref = rel == "reference person"
    ref_lo = lo.where(is_ref).groupby(by).transform("max")
    ref_hi = hi.where(is_ref).groupby(by).transform("max")
    if rule == "children younger by 16":  # broken where age > reference age - 16
        broken = (lo > ref_hi - GAP) if certainly else (hi > ref_lo - GAP)
        mask = (rel == "child") & broken
    else:  # parents older by 16: broken where age < reference age + 16
        broken = (hi < ref_lo + GAP) if certainly else (lo < ref_hi + GAP)
        mask = (rel == "parent") & broken
    return int(mask.groupby(by).any().sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, default=1000)
    parser.add_argument("--areas", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="the simulation's seed (the NDPMPM's is seed + 1)")
    parser.add_argument("--iterations", type=int, default=10000, help="NDPMPM MCMC iterations (the length the "
                        "package's example gives for real use: nrun = 10000, burn = 5000, thin = 5)")  # fmt: skip
    parser.add_argument("--burn", type=int, default=None, help="burn-in (default: half the iterations)")
    parser.add_argument("--thin", type=int, default=5)
    parser.add_argument("--m", type=int, default=5, help="synthetic datasets of each method")
    parser.add_argument("--age-coding", choices=["categories", "years"], default="categories")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--parallel", action="store_true", help="the package's RcppParallel mode (its example's "
                        "Parallel = TRUE; off by default: here it leaks memory and slows down iteration by iteration)")
    parser.add_argument("--threads", type=int, default=2, help="RcppParallel threads with --parallel")
    parser.add_argument("--ndpmpm-source", default=None)
    parser.add_argument("--skip-cart", action="store_true")
    args = parser.parse_args(argv)
    args.burn = args.iterations // 2 if args.burn is None else args.burn
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    persons = bsd.examples.households(args.households, args.areas, seed=args.seed)[0]
    sizes = {int(k): int(v) for k, v in persons.groupby("household").size().value_counts().sort_index().items()}
    print(f"data: bsd.examples.households({args.households}, {args.areas}, seed={args.seed}): {len(persons):,} "
          f"persons, households by size {sizes}")  # fmt: skip
    tables = Tables(persons)
    boot = tables.bootstrap(args.bootstrap, seed=args.seed)
    results: dict[str, dict] = {}

    coding = Coding(args.age_coding)
    lib, missing, build_seconds = ensure_ndpmpm(coding, args.ndpmpm_source)
    if lib is None:
        print(f"NDPMPM skipped: {missing}")
    else:
        ndpmpm = run_ndpmpm(persons, lib, coding, args)
        it = ndpmpm["iterations"]
        f = ndpmpm["figures"]
        results["NDPMPM"] = {"synthetic": ndpmpm["synthetic"], "categorical": coding.kind == "categories"}
        built = f", built in {build_seconds:.0f} s" if build_seconds else ""
        mode = f"Parallel = TRUE, {args.threads} threads" if args.parallel else "serial (Parallel = FALSE)"
        print(f"\nNDPMPM (NestedCategBayesImpute 1.2.1, household rules compiled in{built}): {ndpmpm['members']} "
              f"members of {args.households - ndpmpm['singles']} households of 2+ "
              f"(reference persons at the household level), age coded in {coding.kind} ({len(coding.lo)} codes); "
              f"FF = 20, SS = 15, a = b = 0.25, blocksize 10000, nrun {args.iterations}, burn {args.burn}, thin "
              f"{args.thin}, synthetic datasets at iterations {f['synindex']}, "
              f"{mode}")  # fmt: skip
        print(f"  MCMC with synthesis {float(f['ndpmpm_seconds']):.1f} s: {it['seconds'].mean():.3f} s per "
              f"iteration (median {it['seconds'].median():.3f}, slowest {it['seconds'].max():.3f}); "
              f"households per iteration incl. the sampled impossible ones: mean {it['households_sampled'].mean():,.0f}"
              f" (first 100 {it['households_sampled'].head(100).mean():,.0f}, last 100 "
              f"{it['households_sampled'].tail(100).mean():,.0f}); occupied household classes after burn-in "
              f"{f['F_occupied']}, most individual classes {f['S_occupied_max']}")  # fmt: skip
        print(f"  one-person households ({ndpmpm['singles']}): flat DPMPM (NPBayesImputeCat 0.5, K = 40, truncated "
              f"to adults) {float(f['singles_seconds']):.1f} s; Rscript in all {ndpmpm['seconds']:.1f} s, "
              f"peak memory of R {ndpmpm['peak_mb']:,.0f} MB")  # fmt: skip
    if not args.skip_cart:
        recipe = bsd.CART(households="household", relationship="relationship", rules=bsd.examples.household_rules(),
                          min_leaf=10)  # fmt: skip
        start = time.perf_counter()
        release = bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, keep=["area"], m=args.m, seed=1,
                                 policy=bsd.Policy(name="none", criteria=()), progress=False)  # fmt: skip
        seconds = time.perf_counter() - start
        results["CART"] = {"synthetic": release.synthetic, "categorical": False}
        print(f"\nCART (households as units, min_leaf 10, rules enforced, area kept): fit "
              f"{release.facts['fit_seconds']:.3f} s, synthesis {release.facts['synthesis_seconds']:.3f} s, "
              f"bsd.synthesize in all (with its measures) {seconds:.1f} s wall")  # fmt: skip

    if results.get("NDPMPM", {}).get("categorical"):
        original = persons.assign(synthetic=1, age_lo=0, age_hi=0)
        original["age_lo"], original["age_hi"] = coding.bounds(pd.Series(coding.code(persons["age"])))
        shares = broken_shares(original, categorical=True)
        print("\noriginal households that may break a 16-year rule as far as age categories tell (none does): "
              + ", ".join(f"{rule} {shares[rule][1]:.4f}" for rule in GAP_RULES))  # fmt: skip
    for name, result in results.items():
        synthetic = result["synthetic"]
        datasets = synthetic["synthetic"].nunique()
        n_households = synthetic.groupby(["synthetic", "household"]).ngroups
        print(f"\n{name}: {datasets} synthetic datasets, {n_households / datasets:,.0f} households and "
              f"{len(synthetic) / datasets:,.0f} persons per dataset (original {args.households:,} and "
              f"{len(persons):,})")  # fmt: skip
        print("  share of synthetic households breaking each rule:")
        for rule, (certain, possible) in broken_shares(synthetic, result["categorical"]).items():
            shown = f"{certain:.4f}" if certain == possible else (f"{certain:.4f} to {possible:.4f} (not decidable "
                                                                  "on age categories: certainly to possibly)")
            print(f"    {rule}: {shown}")
        taus = np.array([tables.tau(d) for _, d in synthetic.groupby("synthetic")])
        print("  tau = 1 - L1/(2n): synthetic mean [min, max] | bootstrap of households mean [2.5%, 97.5%]:")
        for j, table in enumerate(Tables.NAMES):
            b = boot[:, j]
            print(f"    {table} ({len(tables.cells[j])} cells): {taus[:, j].mean():.4f} [{taus[:, j].min():.4f}, "
                  f"{taus[:, j].max():.4f}] | {b.mean():.4f} [{np.quantile(b, 0.025):.4f}, "
                  f"{np.quantile(b, 0.975):.4f}]")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
