"""CART on many columns and many records, fully and partially synthetic, beside python-synthpop's CART.

Two tables, m = 5 synthetic datasets each, fully synthetic (every column synthesized) and partially synthetic
(a few columns kept):

* the 1994 CPS extract (UCI Adult, ``../shared/data/c1_adult_cps1994.csv``): 48,842 records, all 15 columns
  (the file's ``split`` marker left out), missing values included (workclass, occupation, native country);
  partially synthetic keeps age, sex, race and relationship;
* a simulated table of 100 columns and 100,000 records (:func:`simulate_wide`): about 60% categorical columns
  (2 to 30 levels) and 40% numeric ones (whole numbers, amounts with a spike at 0, reals), each depending on
  up to three earlier columns as in a Bayesian network, a tenth of the columns with 5% missing values;
  partially synthetic keeps its first 10 columns.

Each run is a child process reading the table from a Parquet file, so its peak memory is its own (the peak
resident set of the child and of anything it started, from ``wait4``, interpreter and imports included). Its
wall time counts from the data in memory to the m datasets in memory:

* **ours**: ``bsd.synthesize(frame, bsd.CART(...), m=5)``, the public API, timed whole, fit, m datasets,
  the measures and the disclosure policy included (utility tables: the first kept column by three synthesized
  ones, 200 bootstrap replicates; the default tables of a 100-column run would be 900 two-way tables); the
  import of ``bsd.CART`` and ``bsd.synthesize`` is not timed, as python-synthpop's import is not (it takes
  about 2 s, PyMC's import included, and was timed until 2026-11-28);
  ``fit + draw`` is the trees and the m datasets alone (the release's ``fit_seconds`` and
  ``synthesis_seconds``). The trees and the m datasets fan out over the cores through the part runner;
* **python-synthpop** (PyPI ``python-synthpop``, pinned below, in its own virtual environment, created at the
  first run): its ``CARTMethod`` fitted once and its ``sample`` called m times (it draws one dataset per call;
  refitting for each would cost it m fits). It has no visit sequence: every column's tree has every other
  column as predictor, and ``sample`` predicts each column from resampled *real* records rather than from the
  synthetic values drawn before it, so it is not a sequential synthesizer. It takes no missing values in its
  CART: the same table is given with categorical missing values as a level ``"NA"`` and numeric ones as a code
  below the column's minimum (its own ``MissingDataHandler`` imputes instead; imputing is not synthesizing
  missingness). Categorical columns are integer codes (its ``DataProcessor`` fails on columns of 10 or more
  levels with scikit-learn >= 1.4: ``OneHotEncoder(sparse=...)``). Partially synthetic: trees for the
  synthesized columns only (the same scikit-learn calls as its ``fit``), predicted from the real records.

    .venv/bin/python bench/cart_many_columns.py [--n 100000] [--p 100] [--m 5] [--seed 0] [--skip-synthpop]

Measured on 2026-11-28 on the 2-core machine while other sessions ran (one-minute load average beside each
figure, the bench's own threads included), with the compiled tree builder (``models/cart/fast_tree.py``); ours
wall (fit + draw) against python-synthpop's wall, ratio of its wall to ours:

* ``--n 20000``: CPS fully synthetic 3.0 s (1.4 s) against 10.8 s, 3.6x (load 1.5 to 2.3); partially 3.5 s (1.7 s)
  against 10.6 s, 3.0x (2.3 to 3.0); the 100-column table fully 24.7 s (20.1 s) against 130.8 s, 5.3x (3.0 to
  6.3); partially 20.6 s (16.4 s) against 133.8 s, 6.5x (6.3 to 6.8). A run ten minutes earlier at a load of 6.8
  to 7.4: CPS 3.3x and 1.9x, the 100-column table 6.4x and 6.0x; a run 40 minutes later, during another session's
  test run: CPS 3.5x and 5.3x, the 100-column table 1.3x (ours 75.7 s at a load of 6 to 9, python-synthpop's
  100.4 s at 4 to 6) and 6.1x;
* ``--skip-synthpop --skip-cps`` (100,000 records): fully 124.1 s (112.0 s), peak 1,953 MiB (load 5.8 to 6.5);
  partially 98.4 s (87.2 s), peak 2,133 MiB (5.3 to 5.8).

With scikit-learn's trees (2026-11-27, nothing else running): CPS 1.3x and 1.2x, the 100-column table 2.8x and
2.6x at 20,000 records, 288 s and 282 s at 100,000. The CPS file stays below 5x: half of our run is the release's
measures, which python-synthpop does not compute (README, "CART on many columns and many records").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"
CPS_KEEP = ["age", "sex", "race", "relationship"]
WIDE_KEEP = 10
SYNTHPOP = "python-synthpop==0.1.2"
SYNTHPOP_ENV = Path(tempfile.gettempdir()) / "bayessdc-bench-synthpop-env"


def simulate_wide(n: int, p: int, seed: int) -> pd.DataFrame:
    """A table of ``p`` mixed columns with Bayesian-network dependence and missing values (see the module doc).

    Parameters
    ----------
    n, p
        Records and columns.
    seed
        Seed of the table.

    Returns
    -------
    pandas.DataFrame
        Columns ``v000`` ... in the order of the network (each depends only on earlier ones).
    """
    rng = np.random.default_rng(seed)
    values: list[np.ndarray] = []
    levels: list[int] = []  # 0 for a numeric column
    for j in range(p):
        parents = rng.choice(j, size=min(j, int(rng.integers(1, 4))), replace=False) if j else []
        if rng.random() < 0.6:
            k = int(rng.choice([2, 3, 4, 5, 8, 12, 30], p=[0.25, 0.2, 0.15, 0.15, 0.1, 0.1, 0.05]))
            logits = np.tile(rng.normal(0, 1, k), (n, 1))
            for q in parents:
                if levels[q]:
                    logits += rng.normal(0, 1.2, (levels[q], k))[values[q]]
                else:
                    logits += _standard(values[q])[:, None] * rng.normal(0, 1, k)
            values.append(np.argmax(logits + rng.gumbel(size=(n, k)), axis=1))
            levels.append(k)
            continue
        mean = np.zeros(n)
        for q in parents:
            mean += rng.normal(0, 1, levels[q])[values[q]] if levels[q] else rng.normal(0, 0.7) * _standard(values[q])
        x = mean + rng.normal(0, 1, n)
        style = int(rng.integers(0, 3))
        if style == 0:
            x = np.round(20 + 5 * x)
        elif style == 1:
            x = np.round(np.exp(8 + 0.5 * x), 2)
            x[rng.random(n) < 0.3] = 0.0
        values.append(x)
        levels.append(0)
    frame = pd.DataFrame(
        {
            f"v{j:03d}": (np.array([f"l{i}" for i in range(k)], dtype=object)[v] if k else v)
            for j, (v, k) in enumerate(zip(values, levels, strict=True))
        }
    )
    for j in rng.choice(p, size=max(1, p // 10), replace=False):
        frame.loc[rng.random(n) < 0.05, frame.columns[j]] = None
    return frame


def _standard(x: np.ndarray) -> np.ndarray:
    return np.nan_to_num((x - np.nanmean(x)) / np.nanstd(x))


# -- the child processes --------------------------------------------------------------------------------------


def run_ours(path: Path, synthesize: list[str], keep: list[str], m: int, seed: int) -> dict[str, float]:
    """Our run (in the child): ``bsd.synthesize`` on the table at ``path``; its times."""
    import bayessdc as bsd

    frame = pd.read_parquet(path)
    tables = [f"{keep[0] if keep else synthesize[0]},{c}" for c in synthesize[1:4]]
    cart, synthesize_release = bsd.CART, bsd.synthesize  # imported before the clock, as python-synthpop's CARTMethod
    start = time.perf_counter()
    recipe = cart(tables=tables, bootstrap=200)
    release = synthesize_release(frame, recipe, synthesize=synthesize, keep=keep, m=m, seed=seed, progress=False)
    wall = time.perf_counter() - start
    assert len(release.synthetic) == m * len(frame)
    facts = release.facts
    return {"wall": wall, "fit": facts["fit_seconds"], "draw": facts["synthesis_seconds"]}


def run_synthpop(path: Path, synthesize: list[str], m: int, seed: int) -> dict[str, float]:
    """python-synthpop's run (in the child, in its own environment): its CART fitted once, m samples."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
    from synthpop import CARTMethod

    frame = pd.read_parquet(path)
    start = time.perf_counter()
    metadata, coded = {}, {}
    for column in frame.columns:
        series = frame[column]
        if pd.api.types.is_numeric_dtype(series):
            metadata[column] = "numerical"
            below = float(series.min()) - 1.0
            coded[column] = series.fillna(below).to_numpy(dtype=float)  # a missing-value code
        else:
            metadata[column] = "categorical"
            coded[column] = pd.Categorical(series.fillna("NA")).codes.astype(np.int64)
    data = pd.DataFrame(coded)
    model = CARTMethod(metadata, smoothing=False, proper=False, minibucket=5, random_state=seed)
    if len(synthesize) == len(frame.columns):
        model.fit(data)
        for _ in range(m):
            model.sample(len(data))
    else:  # its fit, for the synthesized columns only; predicted from the real records
        model._train_data = data
        for column in synthesize:
            x, y = data.drop(columns=[column]).to_numpy(), data[column].to_numpy()
            kind = DecisionTreeClassifier if metadata[column] == "categorical" else DecisionTreeRegressor
            tree = kind(min_samples_leaf=5, random_state=seed).fit(x, y)
            model.models[column] = tree
            leaves = pd.DataFrame({"leaf": tree.apply(x), "y": y})
            model.leaf_values[column] = leaves.groupby("leaf")["y"].apply(lambda a: a.values).to_dict()
        model.fitted = True
        for _ in range(m):
            model.predict(data)
    return {"wall": time.perf_counter() - start}


def _child(python: str, mode: str, path: Path, synthesize: list[str], keep: list[str], m: int, seed: int) -> dict:
    """Run this file in a child process; its figures with the peak resident memory of its process tree (MiB)."""
    spec = json.dumps({"mode": mode, "path": str(path), "synthesize": synthesize, "keep": keep, "m": m, "seed": seed})
    out = path.with_suffix(f".{mode}.json")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    child = subprocess.Popen([python, __file__, "--child", spec, "--child-out", str(out)], env=env)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"the {mode} run failed (exit status {child.returncode})")
    figures = json.loads(out.read_text())
    figures["peak_mib"] = usage.ru_maxrss / 1024
    return figures


def _synthpop_python(given: str | None) -> str:
    if given:
        return given
    python = SYNTHPOP_ENV / "bin" / "python"
    if not python.exists():
        print(f"creating {SYNTHPOP_ENV} with {SYNTHPOP} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(SYNTHPOP_ENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SYNTHPOP, "pyarrow"], check=True)
    return str(python)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="records of the simulated table")
    parser.add_argument("--p", type=int, default=100, help="columns of the simulated table")
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-synthpop", action="store_true")
    parser.add_argument("--skip-cps", action="store_true")
    parser.add_argument("--synthpop-python", help="a Python with python-synthpop (default: one made for the bench)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        path = Path(spec["path"])
        if spec["mode"] == "ours":
            figures = run_ours(path, spec["synthesize"], spec["keep"], spec["m"], spec["seed"])
        else:
            figures = run_synthpop(path, spec["synthesize"], spec["m"], spec["seed"])
        Path(args.child_out).write_text(json.dumps(figures))
        return 0

    synthpop = None if args.skip_synthpop else _synthpop_python(args.synthpop_python)
    tables = []
    if not args.skip_cps:
        if not DATA.exists():
            print(f"bench/cart_many_columns.py: the CPS data are not at {DATA.resolve()}", file=sys.stderr)
            return 2
        cps = pd.read_csv(DATA).drop(columns=["split"])
        tables.append(("CPS 1994", cps, CPS_KEEP))
    wide = simulate_wide(args.n, args.p, args.seed)
    tables.append((f"simulated {args.p} columns", wide, list(wide.columns[:WIDE_KEEP])))
    print(f"CART, m = {args.m}, {os.cpu_count()} cores; wall time from the data in memory to the m datasets; "
          "peak resident memory of the run's process tree; ratio: python-synthpop's time over ours")  # fmt: skip
    header = f"{'table':24} {'kind':8} {'records':>8} {'cols':>4} {'ours wall':>10} {'fit+draw':>9} {'peak':>9}"
    print(header + f" {'synthpop':>10} {'peak':>9} {'ratio':>6} {'ratio fit+draw':>14}")
    with tempfile.TemporaryDirectory() as folder:
        for name, frame, keep in tables:
            path = Path(folder) / f"{name.replace(' ', '_')}.parquet"
            frame.to_parquet(path)
            for kind, kept in (("full", []), ("partial", keep)):
                synthesize = [c for c in frame.columns if c not in kept]
                ours = _child(sys.executable, "ours", path, synthesize, kept, args.m, args.seed)
                row = (f"{name:24} {kind:8} {len(frame):8,} {frame.shape[1]:4} {ours['wall']:9.1f}s "
                       f"{ours['fit'] + ours['draw']:8.1f}s {ours['peak_mib']:6.0f} MiB")  # fmt: skip
                if synthpop is not None:
                    theirs = _child(synthpop, "synthpop", path, synthesize, kept, args.m, args.seed)
                    ratio, bare = theirs["wall"] / ours["wall"], theirs["wall"] / (ours["fit"] + ours["draw"])
                    row += f" {theirs['wall']:9.1f}s {theirs['peak_mib']:6.0f} MiB {ratio:5.1f}x {bare:13.1f}x"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
