"""The reference DPMPM, NPBayesImputeCat 0.5 (R), run from Python beside this project's sampler.

Below the public API: the library's sampler and figures are computed on the same data and draws as the reference's.

NPBayesImputeCat (Wang, Hu, Reiter et al.; GPL >= 3) is the only packaged DPMPM and the sampler behind the
seed paper's synthesis: a blocked Gibbs sampler in C++ (K = 40, alpha ~ Gamma(a_alpha, b_alpha)). Nothing of it
is part of bayessdc or copied into it: this module writes the coded records to a temporary CSV, runs a short
R script through ``Rscript`` and reads the chain back from CSV files. It needs R and the package installed in an
R library outside the repository (``../shared/reference/README.md``)::

    apt-get install -y --no-install-recommends r-base-core r-base-dev r-cran-rcpp r-cran-rlang \
        r-cran-reshape2 r-cran-ggplot2 r-cran-dplyr r-cran-bayesplot
    mkdir -p ../rlib && R CMD INSTALL -l ../rlib ../shared/reference/NPBayesImputeCat_0.5.tar.gz

The R library is read from the environment variable ``BAYESSDC_RLIB``, by default ``rlib`` beside the
repository (``../rlib`` from the repository's root, ``/work/rlib`` on the development machine). When ``Rscript``
is missing or the package cannot be loaded, :func:`reference_unavailable` says so and :func:`run_reference`
raises :class:`ReferenceUnavailable` with the same sentence.

Names: in NPBayesImputeCat ``nu`` holds the component weights (this project's ``pi``) and ``psi`` the level
probabilities of every variable in every component (this project's ``theta_<variable>``), an array (L, K, J)
padded with NA beyond each variable's number of levels. ``k_star`` is the number of components holding at least
one record. The records are passed as factors whose levels are this project's codes ``0 .. d_j - 1`` in order,
so ``psi[l, k, j]`` is ``theta_<variable j>[k, l]`` without any reordering.

:func:`reference_posterior` turns the kept draws into a posterior in the layout of
:meth:`bayessdc.models.dpmpm.DPMPMSynthesizer.fit`, and :func:`reference_release` draws m partially synthetic
datasets from it with this project's own posterior-predictive code (``conditioning="full"`` by default, which is
also what NPBayesImputeCat's own ``DPMPM_nozeros_syn`` does: it synthesizes from the latent classes of the
chain, drawn given all of a record's values).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "RLIB_ENV",
    "SKIP_MESSAGE",
    "ReferenceRun",
    "ReferenceUnavailable",
    "default_rlib",
    "reference_posterior",
    "reference_release",
    "reference_unavailable",
    "release_comparison",
    "release_differences",
    "release_sentence",
    "chain_halves",
    "run_reference",
]

#: Environment variable naming the R library that holds NPBayesImputeCat.
RLIB_ENV = "BAYESSDC_RLIB"

SKIP_MESSAGE = "skipped: R or NPBayesImputeCat not installed (see ../shared/reference/README.md)"


class ReferenceUnavailable(RuntimeError):
    """R (``Rscript``) or NPBayesImputeCat cannot be used on this machine."""


def default_rlib() -> Path:
    """The R library: ``$BAYESSDC_RLIB``, else ``rlib`` beside the repository (outside it)."""
    given = os.environ.get(RLIB_ENV)
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[2] / "rlib"


#: The R side: one chain, k_star and alpha traced at every iteration, (nu, psi) kept every ``keep_every``
#: iterations from ``keep_from`` on. Timing (``proc.time``) covers the traced iterations only.
R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
work <- args[1]
cfg <- read.csv(file.path(work, "config.csv"), stringsAsFactors = FALSE)
.libPaths(c(cfg$rlib, .libPaths()))
if (!suppressWarnings(suppressPackageStartupMessages(requireNamespace("NPBayesImputeCat", quietly = TRUE)))) {
  cat("NPBAYESIMPUTECAT_MISSING\n")
  quit(status = 3)
}
suppressPackageStartupMessages(library(NPBayesImputeCat))
if (cfg$check_only) quit(status = 0)
codes <- read.csv(file.path(work, "codes.csv"))
levels <- as.integer(strsplit(as.character(cfg$levels), ";")[[1]])
X <- as.data.frame(lapply(seq_along(codes), function(j) factor(codes[[j]], levels = 0:(levels[j] - 1))))
names(X) <- names(codes)
m <- CreateModel(X, NULL, cfg$K, 0, cfg$a_alpha, cfg$b_alpha, seed = cfg$seed)
invisible(capture.output(m$Run(0, max(cfg$warmup, 1), 1, TRUE)))  # initialisation, and untimed warm-up
m$SetTrace(c("k_star", "alpha"), cfg$iterations)
K <- cfg$K
L <- max(levels)
J <- length(levels)
offsets <- c(0, cumsum(levels))
kept_at <- integer(0)
if (cfg$keep_every > 0) kept_at <- seq(cfg$keep_from + cfg$keep_every, cfg$iterations, by = cfg$keep_every)
nu <- matrix(NA_real_, length(kept_at), K)
psi <- matrix(NA_real_, length(kept_at), K * sum(levels))
z <- matrix(NA_integer_, length(kept_at), if (cfg$keep_z) nrow(X) else 0)
done <- 0
seconds <- 0
stops <- sort(unique(c(kept_at, cfg$iterations)))
for (s in seq_along(stops)) {
  start <- proc.time()[["elapsed"]]
  m$Run(0, stops[s] - done, 1, TRUE)
  seconds <- seconds + proc.time()[["elapsed"]] - start
  done <- stops[s]
  i <- match(done, kept_at)
  if (!is.na(i)) {
    p <- m$Parameters(c("nu", "psi", if (cfg$keep_z) "z"))
    if (cfg$keep_z) z[i, ] <- p$z
    nu[i, ] <- p$nu
    a <- array(p$psi, dim = c(L, K, J))
    for (j in seq_len(J)) {  # component-major within each variable: theta_j[k, l] at k * d_j + l
      psi[i, K * offsets[j] + seq_len(K * levels[j])] <- as.vector(a[seq_len(levels[j]), , j])
    }
  }
}
tr <- m$GetTrace()
write.csv(data.frame(k_star = tr$k_star, alpha = tr$alpha), file.path(work, "trace.csv"), row.names = FALSE)
write.csv(data.frame(iteration = kept_at), file.path(work, "kept.csv"), row.names = FALSE)
write.table(nu, file.path(work, "nu.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
write.table(psi, file.path(work, "psi.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
if (cfg$keep_z) write.table(z, file.path(work, "z.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
writeLines(format(seconds, digits = 10), file.path(work, "seconds.txt"))
"""


def _run_script(config: dict, work: Path, timeout: float | None) -> subprocess.CompletedProcess:
    rscript = shutil.which("Rscript")
    if rscript is None:
        raise ReferenceUnavailable(SKIP_MESSAGE)
    (work / "run.R").write_text(R_SCRIPT)
    pd.DataFrame([config]).to_csv(work / "config.csv", index=False)
    done = subprocess.run(
        [rscript, "--vanilla", str(work / "run.R"), str(work)], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode == 3 or "NPBAYESIMPUTECAT_MISSING" in done.stdout:
        raise ReferenceUnavailable(SKIP_MESSAGE)
    if done.returncode != 0:
        raise RuntimeError(f"Rscript failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def reference_unavailable(rlib: str | os.PathLike | None = None) -> str | None:
    """``None`` when Rscript and NPBayesImputeCat are usable, else the sentence to print (a skip, not an error)."""
    with tempfile.TemporaryDirectory(prefix="bayessdc-reference-") as tmp:
        config = {"rlib": str(rlib or default_rlib()), "check_only": True}
        try:
            _run_script(config, Path(tmp), timeout=120)
        except ReferenceUnavailable as err:
            return str(err)
    return None


@dataclass
class ReferenceRun:
    """One chain of NPBayesImputeCat.

    Attributes
    ----------
    k_star, alpha
        Occupied components and alpha at every traced iteration (after the untimed warm-up).
    kept_iterations
        The traced iterations (1-based) at which ``nu`` and ``psi`` were kept.
    nu
        Component weights at those iterations, (draw, K): this project's ``pi``.
    psi
        Per variable, the level probabilities of every component, (draw, K, levels): ``theta_<variable>``.
    z
        The latent class (0 .. K - 1) of every record at those iterations, (draw, n), when asked for.
    variables, n_levels
        The variables in the order of ``psi``, and their numbers of levels (codes ``0 .. d - 1``).
    seconds
        Wall time of the traced iterations inside R (initialisation, warm-up and input excluded).
    wall_seconds
        The whole ``Rscript`` call, R start-up and CSV input and output included.
    """

    k_star: np.ndarray
    alpha: np.ndarray
    kept_iterations: np.ndarray
    nu: np.ndarray
    psi: dict[str, np.ndarray]
    z: np.ndarray | None
    variables: tuple[str, ...]
    n_levels: tuple[int, ...]
    seconds: float
    wall_seconds: float

    @property
    def iterations(self) -> int:
        return len(self.alpha)

    @property
    def seconds_per_1000_iterations(self) -> float:
        return 1000 * self.seconds / self.iterations


def run_reference(
    codes: np.ndarray,
    variables: tuple[str, ...] | list[str],
    n_levels: tuple[int, ...] | list[int] | np.ndarray,
    iterations: int,
    *,
    keep_every: int = 0,
    keep_from: int = 0,
    keep_z: bool = False,
    warmup: int = 1,
    K: int = 40,
    a_alpha: float = 0.25,
    b_alpha: float = 0.25,
    seed: int = 7,
    rlib: str | os.PathLike | None = None,
    timeout: float | None = None,
) -> ReferenceRun:
    """Run one chain of NPBayesImputeCat on coded records and read it back.

    Parameters
    ----------
    codes
        (n, p) level codes ``0 .. d_j - 1`` (e.g. ``CategoricalData.codes``).
    variables, n_levels
        Column names and numbers of levels, in the order of ``codes``' columns.
    iterations
        Traced iterations (k_star and alpha at each).
    keep_every, keep_from
        Keep ``nu`` and ``psi`` at traced iterations ``keep_from + keep_every``, ``keep_from + 2 keep_every``, ...
        (0: none).
    keep_z
        Also keep the latent class of every record at those iterations (``ReferenceRun.z``).
    warmup
        Untimed, untraced iterations run first (at least 1; the package initialises in the first call).
    K, a_alpha, b_alpha, seed
        The model's truncation, Gamma prior of alpha (shape, rate) and the package's seed.
    rlib
        The R library holding NPBayesImputeCat (default :func:`default_rlib`).
    timeout
        Seconds before the R process is stopped.

    Raises
    ------
    ReferenceUnavailable
        Rscript missing or the package not loadable.
    """
    codes = np.asarray(codes, dtype=np.int64)
    variables = tuple(variables)
    n_levels = tuple(int(d) for d in n_levels)
    if codes.ndim != 2 or codes.shape[1] != len(variables) or len(n_levels) != len(variables):
        raise ValueError("codes must be (n, p) with one name and one number of levels per column")
    if codes.min() < 0 or (codes >= np.array(n_levels)).any():
        raise ValueError("codes must lie in 0 .. n_levels - 1")
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    config = {
        "rlib": str(rlib or default_rlib()),
        "check_only": False,
        "levels": ";".join(map(str, n_levels)),
        "K": int(K),
        "a_alpha": float(a_alpha),
        "b_alpha": float(b_alpha),
        "seed": int(seed),
        "warmup": int(warmup),
        "iterations": int(iterations),
        "keep_every": int(keep_every),
        "keep_from": int(keep_from),
        "keep_z": bool(keep_z),
    }
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bayessdc-reference-") as tmp:
        work = Path(tmp)
        pd.DataFrame(codes, columns=list(variables)).to_csv(work / "codes.csv", index=False)
        _run_script(config, work, timeout)
        trace = pd.read_csv(work / "trace.csv")
        kept = pd.read_csv(work / "kept.csv")["iteration"].to_numpy()
        if len(kept):
            nu = np.loadtxt(work / "nu.csv", delimiter=",", ndmin=2)
            flat = np.loadtxt(work / "psi.csv", delimiter=",", ndmin=2)
            z = np.loadtxt(work / "z.csv", delimiter=",", ndmin=2, dtype=np.int64) if keep_z else None
        else:
            nu, flat, z = np.zeros((0, K)), np.zeros((0, K * sum(n_levels))), None
        seconds = float((work / "seconds.txt").read_text())
    offsets = np.concatenate([[0], np.cumsum(n_levels)]) * K
    psi = {v: flat[:, offsets[j] : offsets[j + 1]].reshape(len(kept), K, n_levels[j]) for j, v in enumerate(variables)}
    return ReferenceRun(
        k_star=trace["k_star"].to_numpy().astype(np.int64),
        alpha=trace["alpha"].to_numpy(),
        kept_iterations=kept,
        nu=nu,
        psi=psi,
        z=z,
        variables=variables,
        n_levels=n_levels,
        seconds=seconds,
        wall_seconds=time.perf_counter() - start,
    )


def reference_posterior(run: ReferenceRun, data):
    """The reference's kept draws as InferenceData in the layout of ``DPMPMSynthesizer.fit`` (one chain).

    ``pi`` from ``nu``, ``theta_<variable>`` from ``psi`` (levels as ``data.levels``), ``alpha`` and ``occupied``
    at the kept iterations, ``marginal_<variable>`` for the synthesized variables.
    """
    import arviz as az
    import xarray as xr

    from bayessdc.models.dpmpm import level_dim

    if tuple(run.variables) != tuple(data.variables) or tuple(run.n_levels) != tuple(int(d) for d in data.n_levels):
        raise ValueError("the reference run was fitted to other variables or levels than data")
    draws = len(run.kept_iterations)
    if draws == 0:
        raise ValueError("the reference run kept no (nu, psi) draws: pass keep_every > 0")
    K = run.nu.shape[1]
    at = run.kept_iterations - 1
    coords = {"chain": [0], "draw": np.arange(draws), "component": np.arange(K)}
    variables = {
        "alpha": (("chain", "draw"), run.alpha[at][None]),
        "pi": (("chain", "draw", "component"), run.nu[None]),
        "occupied": (("chain", "draw"), run.k_star[at][None]),
    }
    for v in data.variables:
        dim = level_dim(v)
        coords[dim] = data.levels[v]
        variables[f"theta_{v}"] = (("chain", "draw", "component", dim), run.psi[v][None])
        if v in data.synthesize:
            variables[f"marginal_{v}"] = (("chain", "draw", dim), np.einsum("dk,dkl->dl", run.nu, run.psi[v])[None])
    idata = az.InferenceData(posterior=xr.Dataset(variables, coords=coords))
    idata.attrs.update({"sampler": "NPBayesImputeCat 0.5 (blocked Gibbs, C++)", "sampling_seconds": run.seconds})
    return idata


def reference_release(run: ReferenceRun, data, m: int, seed: int, conditioning: str = "full") -> pd.DataFrame:
    """m partially synthetic datasets from the reference's posterior, drawn by this project's synthesizer.

    Every dataset uses one kept draw (spaced as ``bayessdc.synthesis.datasets.draw_synthetic`` spaces them); the
    kept variables are never changed. Returns the stacked labels with a first column ``synthetic`` = 1..m.
    """
    from bayessdc.models.dpmpm import DPMPMSynthesizer
    from bayessdc.synthesis.datasets import draw_synthetic

    synth = DPMPMSynthesizer(K=run.nu.shape[1], conditioning=conditioning)
    joint = draw_synthetic(synth, reference_posterior(run, data), data, m, np.random.default_rng(seed))
    return synth.release_frame(data, joint)


def chain_halves(values: np.ndarray, quantiles=(0.05, 0.5, 0.95)) -> dict[str, list[float]]:
    """Quantiles of one chain's trace in its first and its second half (a stuck or drifting chain shows)."""
    values = np.asarray(values, dtype=float).ravel()
    half = len(values) // 2
    return {
        "first half": [float(q) for q in np.quantile(values[:half], quantiles)],
        "second half": [float(q) for q in np.quantile(values[half:], quantiles)],
    }


def release_comparison(
    original: pd.DataFrame,
    releases: dict[str, pd.DataFrame],
    synthesize: list[str],
    keep: list[str],
    known_sets: list[list[str]],
    *,
    repetitions: int,
    seed: int,
) -> pd.DataFrame:
    """The release figures of several sets of m synthetic datasets, side by side with the inherent bounds.

    With this project's generic measures only (:mod:`bayessdc.measures`: the identification figures, the exact
    attribute disclosures and the table deviations, each release measured alike): per knowledge set the expected
    match risk and the true and false match rates, the exact attribute disclosures, and the sums of absolute
    deviations of the one-, two- and three-way tables. One row per figure; columns ``inherent min``, one per
    release (mean over its m datasets), ``inherent max`` (NaN for the table deviations, which have no inherent
    scenario), and ``sd <release>``, the standard deviation of the figure over that release's m datasets.
    """
    from bayessdc.measures import MeasureInput, compute_measures

    names = ["expected_match_risk", "true_match_rate", "false_match_rate", "attribute_disclosures", "table_deviation"]
    rows: dict[str, dict[str, float]] = {}
    for name, synthetic in releases.items():
        data = MeasureInput(synthetic, original, released=keep + synthesize, synthesized=synthesize, kept=keep,
                            known_sets=known_sets, partially_synthetic=True, repetitions=repetitions, seed=seed)
        measured = compute_measures(data, names)
        for measure in names:
            result = measured[measure]
            for _, summary in result.summary().iterrows():
                subset = summary["subset"]
                label = (f"table deviations, {subset}" if measure == "table_deviation" else
                         "exact attribute disclosures" if measure == "attribute_disclosures" else
                         f"{measure} [{subset}]")  # fmt: skip
                row = rows.setdefault(label, {"inherent min": np.nan, "inherent max": np.nan})
                for scenario in ("min", "max"):
                    value = result.reference(subset, f"inherent_{scenario}")
                    if value is not None:
                        row[f"inherent {scenario}"] = value
                values = result.values.loc[result.values["subset"] == subset, "value"].to_numpy(dtype=float)
                row[name] = float(summary["pooled"])
                row[f"sd {name}"] = float(np.nanstd(values, ddof=1))
    names = list(releases)
    columns = ["inherent min", *names, "inherent max", *[f"sd {n}" for n in names]]
    return pd.DataFrame.from_dict(rows, orient="index")[columns]


def release_differences(table: pd.DataFrame, reference: str, ours: str) -> pd.DataFrame:
    """Per figure of :func:`release_comparison`: ``reference - ours``, in pooled per-dataset standard deviations
    (``sqrt((sd_ref^2 + sd_ours^2) / 2)``) and as a share of the inherent min-max range (NaN without one)."""
    sd = np.sqrt((table[f"sd {reference}"] ** 2 + table[f"sd {ours}"] ** 2) / 2)
    diff = table[reference] - table[ours]
    span = (table["inherent max"] - table["inherent min"]).abs()
    return pd.DataFrame(
        {
            "difference": diff,
            "in sd": diff / sd.where(sd > 0),
            "in inherent range": diff / span.where(span > 0),
        }
    )


def release_sentence(table: pd.DataFrame, reference: str, ours: str, m: int, largest: int = 3) -> str:
    """What an agency using ``reference`` would have released instead of ``ours``: the ``largest`` differences.

    The differences are in pooled per-dataset standard deviations and in shares of the inherent range; a
    difference of two means over m datasets each has a standard error of ``sqrt(2 / m)`` of those sd.
    """
    diffs = release_differences(table, reference, ours)
    diffs = diffs[np.isfinite(diffs["in sd"])]
    order = diffs["in sd"].abs().sort_values(ascending=False).index[:largest]
    parts = []
    for figure in order:
        row = diffs.loc[figure]
        text = f"{figure} {table.loc[figure, reference]:.4g} instead of {table.loc[figure, ours]:.4g} "
        text += f"({row['in sd']:+.2f} sd"
        if np.isfinite(row["in inherent range"]):
            text += f", {100 * row['in inherent range']:+.0f}% of the inherent range"
        parts.append(text + ")")
    worst = float(diffs["in sd"].abs().max())
    return (
        f"An agency using {reference} would have released figures within {worst:.2f} per-dataset sd of {ours}'s "
        f"(a difference of two means over m = {m} has a standard error of {np.sqrt(2 / m):.2f} sd); the largest: "
        + "; ".join(parts)
        + "."
    )
