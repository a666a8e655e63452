"""Below the public API: coverage of weighted estimates from CART releases of an informative survey sample.

A simulation study of ``bsd.synthesize(..., weights=)``'s two kinds of release, run on ``CartSynthesizer`` (the
pipeline's trees, without its measures and report, so that a replication takes a fraction of a second) and on
the generic weighted estimators of ``bayessdc.synthesis.survey`` with the combining rules of
``bayessdc.synthesis.combining``.

The population (fixed, N = 40,000): the ACS-like persons (``simulate_acs_persons``: age, sex, ...) in two areas,
area 1 (20% of persons) with longer hours and higher incomes; ``employed``; ``hours`` (weekly, missing by design
for those not employed); ``log_income``. The area is not released: the design is informative, and only the
weights carry it. Each replication draws a stratified simple random sample: n/2 persons from each area (area 1
oversampled 4 times), design weights N_h / n_h times a nonresponse-like factor U(0.9, 1.1). Estimands:

* the weighted mean of ``hours`` over the employed (a domain mean; the unweighted mean is biased upwards);
* the slope on ``age`` of the weighted least squares regression ``log_income ~ age + employed`` (the
  employment indicator as 0/1).

Releases, m datasets each:

* *partially synthetic*: ``age``, ``sex`` and the weight kept, ``employed``, ``hours`` and ``log_income``
  synthesized (Reiter's 2003 rules, ``kind="partial"``);
* *fully synthetic*: nothing kept; the weight synthesized first, then ``age``, ``sex``, ``employed``, ``hours``,
  ``log_income``, combined by the release's rules (``kind_of_release([], "cart")``: ``"simple"``, Raab, Nowok &
  Dibben's 2016 simple synthesis as synthpop computes it, proper: ``T_s = u_bar (1 + 2/m)`` at ``n_syn = n``)
  and, on the same datasets, the same not proper (``u_bar (1 + 1/m)``), Raghunathan, Reiter & Rubin's 2003
  rules (``kind="full"``, with Reiter's 2002 adjustment when ``T_f <= 0``) and the partially synthetic rules.

Each dataset is analysed as the sample would be (weighted estimate, linearization variance) and the m results
combined. Coverage of the combined 95% interval is counted against two targets: the population value ``Q`` (what
the combining rules are built to cover, Reiter 2003) and the original sample's own weighted estimate ``q_obs``
(what the release is asked to reproduce; the interval, which also carries the sample's own variance, covers it
more often than 95%). Beside them: the original sample's interval's coverage of ``Q`` (the design-based variance's
own check), the same sample analysed without its weights (how informative the design is), and the mean of each
estimate minus ``Q``, its standard deviation over the replications against the mean ``sqrt(T)`` (a rule's
variance is right when they agree), and the mean ratio ``b_m / u_bar`` (about 1 for a synthesizer that is not
proper, ``1 + n_syn / n = 2`` for a proper one). Monte Carlo standard errors ``sqrt(p (1 - p) / R)``.

    .venv/bin/python bench/weighted_coverage.py [--replications 200] [--n 800] [--m 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bayessdc.models.cart import CartSynthesizer, simulate_acs_persons  # noqa: E402
from bayessdc.synthesis import streams  # noqa: E402
from bayessdc.synthesis.combining import combine  # noqa: E402
from bayessdc.synthesis.survey import weighted_mean, weighted_regression  # noqa: E402

POPULATION = 40_000
AREA_SHARE = 0.2
RELEASES = {
    "partial": {"keep": ["age", "sex", "wt"], "synthesize": ["employed", "hours", "log_income"]},
    "full": {"keep": [], "synthesize": ["wt", "age", "sex", "employed", "hours", "log_income"]},
}
#: The rules applied to the fully synthetic datasets: synthpop's simple synthesis (proper, the release's rules,
#: and not proper), Raghunathan, Reiter & Rubin's, and the partially synthetic ones.
FULL_RULES = ("simple", "simple-improper", "full", "partial")


def population(seed: int) -> pd.DataFrame:
    """The fixed population: ACS-like persons aged 18 and over with an unreleased area and the work columns."""
    persons = simulate_acs_persons(int(POPULATION * 1.4), seed=seed)
    persons = persons[persons["age"] >= 18].head(POPULATION).reset_index(drop=True)
    rng = np.random.default_rng([seed, 7])
    n, age = len(persons), persons["age"].to_numpy(dtype=float)
    area = (rng.random(n) < AREA_SHARE).astype(int)
    employed = rng.random(n) < np.where(age <= 65, 0.55 + 0.2 * area, 0.15)
    hours = np.where(employed, np.round(rng.normal(34 + 8 * area - 0.05 * (age - 40), 8).clip(1, 80)), np.nan)
    log_income = 9.4 + 0.6 * employed + 0.5 * area + 0.012 * np.minimum(age, 60) + rng.normal(0, 0.6, n)
    return persons[["age", "sex"]].assign(area=area, employed=np.where(employed, "yes", "no"), hours=hours,
                                          log_income=np.round(log_income, 3))  # fmt: skip


def sample(frame: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A stratified simple random sample, n/2 per area, with design weights times U(0.9, 1.1)."""
    parts = []
    for _, stratum in frame.groupby("area"):
        drawn = stratum.iloc[rng.choice(len(stratum), n // 2, replace=False)]
        parts.append(drawn.assign(wt=len(stratum) / (n // 2) * rng.uniform(0.9, 1.1, n // 2)))
    return pd.concat(parts, ignore_index=True).drop(columns="area")


def estimates(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The two weighted estimates and their linearization variances."""
    mean, mean_variance = weighted_mean(frame["hours"], frame["wt"])
    design = frame.assign(employed=(frame["employed"] == "yes").astype(float))
    coefficients, variances = weighted_regression(design, "log_income", ["age", "employed"], "wt")
    return np.array([mean, coefficients["age"]]), np.array([mean_variance, variances["age"]])


def truth(frame: pd.DataFrame) -> np.ndarray:
    """The population values: the mean of hours over the employed and the census regression's slope on age."""
    design = frame.assign(employed=(frame["employed"] == "yes").astype(float), wt=1.0)
    coefficients, _ = weighted_regression(design, "log_income", ["age", "employed"], "wt")
    return np.array([frame["hours"].mean(), coefficients["age"]])


def replicate(frame: pd.DataFrame, n: int, m: int, seed: int, r: int) -> list[dict[str, object]]:
    """One replication: a sample, its estimates, and the combined estimates of both releases."""
    data = sample(frame, n, streams.rng(seed, "weighted-coverage-sample", r))
    q_obs, u_obs = estimates(data)
    rows = [{"release": "original", "rules": "-", "estimand": k, "q_obs": q_obs[k], "estimate": q_obs[k],
             "variance": u_obs[k], "df": n - 1} for k in range(2)]  # fmt: skip
    q_flat, u_flat = estimates(data.assign(wt=1.0))  # the sample unweighted: what ignoring the design gives
    rows += [{"release": "unweighted", "rules": "-", "estimand": k, "q_obs": q_obs[k], "estimate": q_flat[k],
              "variance": u_flat[k], "df": n - 1} for k in range(2)]  # fmt: skip
    for kind, roles in RELEASES.items():
        synthesizer = CartSynthesizer(roles["synthesize"], roles["keep"])
        synthesizer.fit(data[[*roles["keep"], *roles["synthesize"]]], streams.integer_seed(seed, "cart", r))
        synthetic = synthesizer.synthesize_datasets(m)
        per_dataset = [estimates(dataset) for _, dataset in synthetic.groupby("synthetic")]
        q = pd.DataFrame([e for e, _ in per_dataset])
        u = pd.DataFrame([v for _, v in per_dataset])
        for rules in FULL_RULES if kind == "full" else ("partial",):
            kind_of_rules, proper = rules.split("-")[0], not rules.endswith("-improper")
            table = combine(q, u, kind_of_rules, n_syn=n, n=n, proper=proper)
            for k in range(2):
                rows.append({"release": kind, "rules": rules, "estimand": k, "q_obs": q_obs[k],
                             "estimate": table["estimate"].iloc[k], "variance": table["total_variance"].iloc[k],
                             "df": table["df"].iloc[k], "b_over_u": table["between_variance"].iloc[k]
                             / table["within_variance"].iloc[k]})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--n", type=int, default=800, help="sample size (n/2 per area)")
    parser.add_argument("--m", type=int, default=5, help="synthetic datasets per release")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from scipy import stats

    start = time.perf_counter()
    frame = population(args.seed)
    true = truth(frame)
    rows = []
    for r in range(args.replications):
        rows.extend({**row, "replication": r} for row in replicate(frame, args.n, args.m, args.seed, r))
    table = pd.DataFrame(rows)
    table["truth"] = true[table["estimand"].to_numpy()]
    half = stats.t.ppf(0.975, table["df"].astype(float)) * np.sqrt(table["variance"].clip(lower=0))
    table["covers_Q"] = (table["estimate"] - table["truth"]).abs() <= half
    table["covers_q_obs"] = (table["estimate"] - table["q_obs"]).abs() <= half
    table["bias"] = table["estimate"] - table["truth"]
    replications = args.replications
    names = ["weighted mean of hours (employed)", "WLS slope of log_income on age"]
    print(f"bench/weighted_coverage.py: population {len(frame):,}, area 1 oversampled 4x, n = {args.n}, m = {args.m}, "
          f"{replications} replications, seed {args.seed}")  # fmt: skip
    print(f"  population values: mean hours {true[0]:.4f}, slope on age {true[1]:.6f}; 'unweighted': the original "
          "sample analysed without its weights (the design is informative)")  # fmt: skip
    for k, name in enumerate(names):
        print(f"\n  {name}")
        print(f"    {'release':9} {'rules':15} {'covers Q':>16} {'covers q_obs':>16} {'mean(est - Q)':>14} "
              f"{'sd(est - Q)':>11} {'mean sqrt(T)':>12} {'mean b/u':>8}")  # fmt: skip
        for (release, rules), group in table[table["estimand"] == k].groupby(["release", "rules"], sort=False):
            cells = []
            for column in ("covers_Q", "covers_q_obs"):
                p = group[column].mean()
                cells.append(f"{p:7.3f} ± {np.sqrt(p * (1 - p) / replications):.3f}")
            ratio = group["b_over_u"].mean()
            print(f"    {release:9} {rules:15} {cells[0]:>16} {cells[1]:>16} {group['bias'].mean():14.5f} "
                  f"{group['bias'].std():11.5f} {np.sqrt(group['variance'].clip(lower=0)).mean():12.5f} "
                  f"{'-' if np.isnan(ratio) else f'{ratio:.3f}':>8}")  # fmt: skip
    print(f"\n  wall time {time.perf_counter() - start:.1f} s (one core)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
